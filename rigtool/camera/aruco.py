"""Fiducial tags in one image: OpenCV's dictionaries, detection, and sub-pixel corners.

A tag's four outer corners are where two straight edges of its black square meet. OpenCV
finds the tags (``cv2.aruco.ArucoDetector``); :func:`refine_corners` then moves each corner
to the intersection of the two edge lines fitted to sub-pixel edge points along each side
(one per pixel column, from the area under the image across the edge:
:mod:`rigtool.camera.edge_area`), the edges straightened by undistorting the points first.
That is hand-written because ``cv2.cornerSubPix`` is made for the X-shaped corners of a
chessboard: on the L-shaped corner of a blurred square it is pulled towards the square by a
fraction of the blur (0.13 px RMS on the demo camera's tags, ``benchmarks/corner_bias.py``),
while a line fit to a straight edge is not biased by a symmetric blur.

Conventions: see :mod:`rigtool.camera`; corner arrays are ``[n_tags, 4, 2]`` px in
cv2.aruco's corner order.
"""

from __future__ import annotations

import re

import numpy as np

from rigtool.camera.edge_area import EdgeWindow, edge_points
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


def refine_corners(gray: np.ndarray, corners_px: np.ndarray, camera: CameraModel, *,
                   window: EdgeWindow = EdgeWindow(), max_iterations: int = 4
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
    window : EdgeWindow
        Which pixels along each side give its edge points (:mod:`rigtool.camera.edge_area`).
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
    pad = window.window_px + window.level_px + 4.0 + 0.25 * float(sides.max())
    height, width = gray.shape[:2]
    u0, v0 = np.maximum(np.floor(corners.reshape(-1, 2).min(axis=0) - pad), 0).astype(int)
    u1, v1 = np.ceil(corners.reshape(-1, 2).max(axis=0) + pad).astype(int) + 1
    image = gray[v0:min(v1, height), u0:min(u1, width)].astype(np.float32)
    origin = np.array([u0, v0], dtype=np.float64)
    for _ in range(max_iterations):
        points, valid, n_columns = edge_points(image, origin, corners, window)
        side_ok = valid.sum(axis=-1) >= np.maximum(3, n_columns // 2)    # [n, 4]
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
