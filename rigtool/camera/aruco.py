"""Fiducial tags in one image: OpenCV's dictionaries, detection, and sub-pixel corners.

A tag's four outer corners are where two straight edges of its black square meet. OpenCV
finds the tags (``cv2.aruco.ArucoDetector``); :func:`refine_corners` then moves each corner
to the intersection of the two edge lines fitted to sub-pixel edge points sampled along
each side (bilinear profiles across the edge, the point where the intensity crosses half
way between the dark square and the white paper), the edges straightened by undistorting
the points first. That is hand-written because ``cv2.cornerSubPix`` is made for the
X-shaped corners of a chessboard: on the L-shaped corner of a blurred square it is pulled
towards the square by a fraction of the blur (see benchmarks/camera.py), while a line fit
to a straight edge is not biased by a symmetric blur.

Conventions: see :mod:`rigtool.camera`; corner arrays are ``[n_tags, 4, 2]`` px in
cv2.aruco's corner order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from rigtool.camera.model import CameraModel


def dictionary_names() -> list[str]:
    """Names of OpenCV's predefined dictionaries (``DICT_4X4_50``, ``DICT_APRILTAG_36h11``...),
    one spelling each (OpenCV also aliases ``36H11`` to ``36h11``)."""
    import cv2

    names = {n for n in dir(cv2.aruco) if n.startswith("DICT_")}
    return sorted(n for n in names
                  if re.sub(r"(\d)H(\d+)$", r"\1h\2", n) == n
                  or re.sub(r"(\d)H(\d+)$", r"\1h\2", n) not in names)


def canonical_name(name: str) -> str | None:
    """The listed spelling of a dictionary named ``DICT_4X4_50``, ``4x4_50``,
    ``apriltag_36h11``... (case-insensitive, ``DICT_`` optional), or None when unknown."""
    key = name.strip().upper()
    key = key if key.startswith("DICT_") else "DICT_" + key
    for listed in dictionary_names():
        if listed.upper() == key:
            return listed
    return None


def get_dictionary(name: str):
    """The ``cv2.aruco.Dictionary`` named ``name`` (see :func:`canonical_name`); KeyError
    when there is no such dictionary."""
    import cv2

    listed = canonical_name(name)
    if listed is None:
        raise KeyError(name)
    return cv2.aruco.getPredefinedDictionary(int(getattr(cv2.aruco, listed)))


def marker_bits(dictionary) -> int:
    """Data bits along one side of a tag of ``dictionary`` (its cells are ``bits + 2``
    across, with the one-cell black border)."""
    return int(dictionary.markerSize)


def make_detector(dictionary, *, threshold_window_px: int | None = 15):
    """An ``ArucoDetector`` whose corners :func:`refine_corners` refines.

    ``threshold_window_px``: one adaptive-threshold window (px, odd) instead of OpenCV's
    three (3, 13, 23), about twice as fast on megapixel frames; a window of about a third
    of a tag's side in pixels finds tags from about 20 px to several hundred px across.
    None keeps OpenCV's defaults. (OpenCV's ArUco3 mode, faster still, missed most
    tags of 40-60 px in 1280x1024 frames in our tests, so it is not used.)
    """
    import cv2

    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_NONE
    if threshold_window_px is not None:
        win = int(threshold_window_px) | 1
        params.adaptiveThreshWinSizeMin = win
        params.adaptiveThreshWinSizeMax = win
        params.adaptiveThreshWinSizeStep = 10
    return cv2.aruco.ArucoDetector(dictionary, params)


def detect(detector, gray: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tags in a grayscale frame: ids ``[n]`` and pixel-level corners ``[n, 4, 2]``."""
    corners, ids, _ = detector.detectMarkers(gray)
    if ids is None or len(ids) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 4, 2))
    return (np.asarray(ids, dtype=np.int64).ravel(),
            np.asarray(corners, dtype=np.float64).reshape(-1, 4, 2))


@dataclass(frozen=True)
class EdgeSampling:
    """How :func:`refine_corners` samples each side of a tag.

    Attributes
    ----------
    n_points : int or None
        Edge points per side; None: about one per pixel of the sampled part of the
        median side (8 to 64), so a larger tag averages more of the image noise.
    span : tuple of float
        The part of the side sampled, as fractions from one corner to the other (the ends
        are left out: near a corner the two edges' blur overlaps).
    half_width_px : float
        Half length of the intensity profile across the edge, px.
    step_px : float
        Sampling step along that profile, px.
    """

    n_points: int | None = None
    span: tuple[float, float] = (0.2, 0.8)
    half_width_px: float = 3.0
    step_px: float = 0.25


INTERPOLATION = 2


def _n_points(corners: np.ndarray, sampling: EdgeSampling) -> int:
    if sampling.n_points is not None:
        return int(sampling.n_points)
    side = float(np.median(np.linalg.norm(np.roll(corners, -1, axis=1) - corners, axis=-1)))
    return int(np.clip(side * (sampling.span[1] - sampling.span[0]), 8, 64))


def _edge_points(image: np.ndarray, origin: np.ndarray, corners: np.ndarray,
                 sampling: EdgeSampling) -> tuple[np.ndarray, np.ndarray]:
    """Sub-pixel edge points ``[n, 4 sides, P, 2]`` px and their validity ``[n, 4, P]``.

    ``image`` is a float32 crop of the frame whose top-left pixel is ``origin`` (u, v).
    Side ``k`` runs from corner ``k`` to corner ``k + 1``. Each point is where the profile
    across the side, smoothed, crosses the mean of its dark and light ends (linear
    interpolation between the two samples around the crossing closest to the middle).
    """
    import cv2

    start = corners                                  # [n, 4, 2]
    end = np.roll(corners, -1, axis=1)
    along = end - start
    length = np.linalg.norm(along, axis=-1, keepdims=True)
    tangent = along / np.maximum(length, 1e-9)
    # outward normal: the corners go clockwise on the image (v down), so the outside of the
    # square is to the left of the direction of travel
    normal = np.stack([tangent[..., 1], -tangent[..., 0]], axis=-1)
    n_points = _n_points(corners, sampling)
    frac = np.linspace(*sampling.span, n_points)
    base = start[:, :, None, :] + frac[None, None, :, None] * along[:, :, None, :]  # [n,4,P,2]
    offs = np.arange(-sampling.half_width_px, sampling.half_width_px + 1e-9, sampling.step_px)
    pts = base[..., None, :] + offs[:, None] * normal[:, :, None, None, :]        # [n,4,P,Q,2]
    shape = pts.shape[:-1]
    flat = (pts - origin).reshape(-1, len(offs), 2).astype(np.float32)   # rows < SHRT_MAX
    prof = cv2.remap(image, flat[..., 0], flat[..., 1], INTERPOLATION,
                     borderMode=cv2.BORDER_REPLICATE).reshape(shape)          # inside -> out
    m = max(1, len(offs) // 6)
    dark = prof[..., :m].mean(axis=-1)
    light = prof[..., -m:].mean(axis=-1)
    valid = (light - dark) > 10.0
    level = 0.5 * (dark + light)
    above = prof >= level[..., None]
    idx = np.argmax(above, axis=-1)       # first sample from the inside at the half level
    valid &= above.any(axis=-1) & (idx > 0)
    idx = np.clip(idx, 1, len(offs) - 1)
    p0 = np.take_along_axis(prof, (idx - 1)[..., None], axis=-1)[..., 0]
    p1 = np.take_along_axis(prof, idx[..., None], axis=-1)[..., 0]
    t = np.clip((level - p0) / np.where(p1 - p0 == 0, 1.0, p1 - p0), 0.0, 1.0)
    crossing = offs[idx - 1] + t * sampling.step_px                       # [n,4,P]
    points = base + crossing[..., None] * normal[:, :, None, :]
    return points, valid


def refine_corners(gray: np.ndarray, corners_px: np.ndarray, camera: CameraModel, *,
                   sampling: EdgeSampling = EdgeSampling(), max_iterations: int = 4
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Sub-pixel corners as intersections of the tags' fitted edge lines.

    Parameters
    ----------
    gray : ndarray (H, W)
        The frame.
    corners_px : ndarray (n, 4, 2)
        Corners to refine (cv2.aruco's order), px.
    camera : CameraModel
        Its distortion straightens the edges before the line fits.
    sampling : EdgeSampling
    max_iterations : int
        Rounds of sampling along the refined sides (the first round starts from the
        given corners); fewer when every corner moved less than 0.02 px in a round.

    Returns
    -------
    corners : ndarray (n, 4, 2)
        Refined corners, px.
    ok : ndarray (n,) of bool
        False where a side had fewer than half its edge points, or the last round still
        moved a corner by 0.05 px or more (not converged: the caller should drop the tag).
    """
    corners = np.asarray(corners_px, dtype=np.float64).reshape(-1, 4, 2).copy()
    n = corners.shape[0]
    ok = np.ones(n, dtype=bool)
    if n == 0:
        return corners, ok
    # one float crop holding every tag with room for the profiles
    sides = np.linalg.norm(np.roll(corners, -1, axis=1) - corners, axis=-1)
    pad = sampling.half_width_px + 4.0 + 0.25 * float(sides.max())
    height, width = gray.shape[:2]
    u0, v0 = np.maximum(np.floor(corners.reshape(-1, 2).min(axis=0) - pad), 0).astype(int)
    u1, v1 = np.ceil(corners.reshape(-1, 2).max(axis=0) + pad).astype(int) + 1
    image = gray[v0:min(v1, height), u0:min(u1, width)].astype(np.float32)
    origin = np.array([u0, v0], dtype=np.float64)
    for _ in range(max_iterations):
        points, valid = _edge_points(image, origin, corners, sampling)
        side_ok = valid.sum(axis=-1) >= max(3, valid.shape[-1] // 2)     # [n, 4]
        ok = side_ok.all(axis=1)
        xy = camera.normalized_rays(points)                                 # [n,4,P,2]
        w = valid.astype(np.float64)
        wsum = np.maximum(w.sum(axis=-1, keepdims=True), 1.0)
        mean = (xy * w[..., None]).sum(axis=2) / wsum                       # [n,4,2]
        d = (xy - mean[:, :, None, :]) * np.sqrt(w)[..., None]
        cov = np.einsum("nspi,nspj->nsij", d, d)
        _, evec = np.linalg.eigh(cov)
        line_normal = evec[..., :, 0]                                       # smallest
        line_c = np.einsum("nsi,nsi->ns", line_normal, mean)
        # corner k is where side k-1 (ending at corner k) meets side k (starting at it)
        n_prev, c_prev = np.roll(line_normal, 1, axis=1), np.roll(line_c, 1, axis=1)
        a = np.stack([n_prev, line_normal], axis=-2)                        # [n,4,2,2]
        b = np.stack([c_prev, line_c], axis=-1)                             # [n,4,2]
        det = np.linalg.det(a)
        good = ok[:, None] & (np.abs(det) > 1e-12)
        safe_a = np.where(good[..., None, None], a, np.eye(2))
        xy_corner = np.linalg.solve(safe_a, b[..., None])[..., 0]
        new = camera.project(np.concatenate([xy_corner, np.ones(xy_corner.shape[:-1] + (1,))],
                                            axis=-1))
        moved = np.linalg.norm(new - corners, axis=-1).max(axis=1)
        side_px = np.linalg.norm(np.roll(corners, -1, axis=1) - corners, axis=-1).min(axis=1)
        take = ok & (moved < np.maximum(3.0, 0.2 * side_px))
        corners[take] = new[take]
        ok = take & (moved < 0.05)       # converged: the last round moved it very little
        if (moved[take] < 0.02).all():
            break
    return corners, ok
