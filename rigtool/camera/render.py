"""Ray-cast images of textured planes (printed tags, a ChArUco board) seen by a camera.

The simulated videos and calibration views of the tests and benchmarks come from here.
Every pixel is the mean of ``supersample**2`` rays through sub-pixel points (the sensor
integrates light over the pixel's area; a lattice of points, moved and turned differently
in each pixel so that sampling errors do not add up along an edge: see
:func:`subsample_pattern`), each ray undistorted exactly (the camera's
distortion is inverted once per camera on the pixel grid), intersected with each plane and
looked up in its texture without interpolation, so edges land where the geometry puts
them to far below the accuracy asked of the tracker. Motion blur: each sub-pixel ray may
see the plane at another instant of the exposure (distributed ray tracing). Optical blur
(a Gaussian), sensor noise (read noise and shot noise) and 8-bit quantisation follow.

Hand-written because OpenCV's ``warpPerspective`` maps one homography with bilinear
interpolation and cannot apply lens distortion or area-integrate a pixel; this module is
a small, vectorised ray caster instead.

Conventions: see :mod:`rigtool.camera`. Intensities are floats in [0, 1] until
:func:`finish_frame` turns them into ``uint8``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from rigtool.camera.model import CameraModel

#: Rays per chunk of a plane's bounding box (bounds the memory of one render step).
_CHUNK_RAYS = 1 << 21


@dataclass(frozen=True)
class TexturedPlane:
    """A flat printed texture, centred on its frame's origin, in the frame's x-y plane.

    Attributes
    ----------
    texture : ndarray (h, w)
        Intensities in [0, 1]; row 0 is the top (``+y``), column 0 the left (``-x``).
    size_m : tuple of float
        Physical width (along x) and height (along y) of the texture, m.
    margin_m : float
        White paper around the texture (a tag's quiet zone), m.
    margin_value : float
        Intensity of that paper.
    double_sided : bool
        False: seen only from its front (``+z``) side, as a print on a body.
    """

    texture: np.ndarray
    size_m: tuple[float, float]
    margin_m: float = 0.0
    margin_value: float = 1.0
    double_sided: bool = False


class PixelRays:
    """Undistorted normalised ray coordinates of every pixel of a camera, and their
    derivatives along ``u`` and ``v`` (for sub-pixel rays by a first-order step).

    Parameters
    ----------
    camera : CameraModel
    """

    def __init__(self, camera: CameraModel) -> None:
        width, height = camera.image_size
        self.camera = camera
        u, v = np.meshgrid(np.arange(-1, width + 1, dtype=np.float64),
                           np.arange(-1, height + 1, dtype=np.float64))
        xy = camera.normalized_rays(np.stack([u, v], axis=-1))  # [H+2, W+2, 2]
        self.xy = xy[1:-1, 1:-1].astype(np.float32)
        self.d_du = (0.5 * (xy[1:-1, 2:] - xy[1:-1, :-2])).astype(np.float32)
        self.d_dv = (0.5 * (xy[2:, 1:-1] - xy[:-2, 1:-1])).astype(np.float32)


@functools.lru_cache(maxsize=None)
def _lattice_generator(n: int) -> int:
    """The generator ``g`` of the rank-1 lattice ``{k (1, g) / n mod 1}`` whose shortest
    vectors are longest (the most even spread of ``n`` points on the unit torus): the longest
    shortest vector, then the longest next one, then the smallest ``g``."""
    if n <= 2:
        return 1
    k = np.arange(1, n)
    best, best_key = 1, None
    for g in range(1, n):
        if np.gcd(g, n) != 1:
            continue
        v = np.stack([k / n, (k * g % n) / n], axis=-1)
        length = np.sort(np.round(np.hypot(*(v - np.round(v)).T), 12))
        key = (length[0], length[length > length[0]][0] if (length > length[0]).any() else 0.0)
        if best_key is None or key > best_key:
            best, best_key = g, key
    return best


#: Sub-pixel patterns a pixel chooses from (a power of 2; fewer for many rays per pixel).
_N_PATTERNS = 1024


def _lattice(n: int, shift: np.ndarray, variant: np.ndarray) -> np.ndarray:
    """The rank-1 lattice of ``n`` points, turned by ``variant`` (``[...]``: bit 0 mirrors
    ``y``, bit 1 swaps ``x`` and ``y``) and moved by ``shift`` (``[..., 2]``) modulo 1, minus
    0.5: ``[..., n, 2]`` in ``[-0.5, 0.5)``."""
    g = _lattice_generator(n)
    k = np.arange(n)
    x, y = k / n, (k * g % n) / n
    variant = np.asarray(variant)[..., None]
    y = np.where(variant & 1, -y, y)
    x, y = np.where(variant & 2, y, x), np.where(variant & 2, x, y)
    pts = np.stack([x, y], axis=-1) + np.asarray(shift, dtype=np.float64)[..., None, :]
    return pts - np.floor(pts) - 0.5


@functools.lru_cache(maxsize=None)
def _pattern_table(n: int) -> np.ndarray:
    """The sub-pixel patterns ``[P, 2, n]`` (x and y offsets, px; read-only) a pixel chooses
    from: the lattice turned by ``p mod 4`` and moved by the ``p``-th point of the R2
    sequence, ``p = 0 .. P - 1``."""
    count = max(64, min(_N_PATTERNS, (1 << 18) // max(1, n)))
    p = np.arange(count)
    g = 1.32471795724474602596                     # the plastic number
    shift = np.mod(0.5 + p[:, None] * np.array([1.0 / g, 1.0 / g ** 2]), 1.0)
    table = np.ascontiguousarray(np.swapaxes(_lattice(n, shift, p % 4), 1, 2))
    table.setflags(write=False)
    return table


def subsample_pattern(supersample: int, n_times: int, /, pattern: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Sub-pixel offsets ``[S*S, ..., 2]`` (px, in ``[-0.5, 0.5)``) and the exposure instant
    ``[S*S]`` (an index ``0 .. n_times - 1``) of each sub-pixel ray.

    The offsets are the ``N = S*S`` points of a rank-1 lattice ``k (1, g) / N`` modulo the
    pixel (``k = 0 .. N - 1``; ``g`` chosen so that its shortest vectors are longest, e.g.
    19 for N = 64, 71 for 256). ``pattern`` (``[...]``, from :func:`pixel_pattern`) selects
    one of ``P`` copies of it (1024 for up to 256 rays), each turned (mirrored in ``y``,
    transposed, both or neither) and moved modulo the pixel by its own shift (a
    Cranley-Patterson rotation; the shifts are the first ``P`` points of the R2 sequence,
    so they cover the pixel evenly). Without ``pattern`` the lattice is moved by half a step,
    ``(1, 1) / 2N``: its projections on either pixel axis are then ``N`` evenly spaced
    values centred on the pixel's centre, and its mean is the centre.

    Why a pattern per pixel: with one pattern for every pixel, the share of the pattern's
    points on one side of a straight edge errs by the same amount in every pixel the edge
    crosses at the same sub-pixel phase, so the errors add up along the edge instead of
    averaging out: with the previous pattern (64 points of the R2 sequence in mirrored
    pairs) each corner of a static tag came out about 0.02 px off at 0 and 30 deg in-plane
    angle, against 0.003-0.004 px with 16 x 16 rays (``benchmarks/corner_bias.py``).
    :func:`draw_plane` gives each pixel a pseudo-random pattern fixed by its position, so
    a pixel's error is independent of its neighbours' and averages out along an edge, with
    the same number of rays. Over the patterns each ray is spread evenly over the pixel, so
    a pixel's coverage and the pattern's mean (the pixel's centre) are right on average
    over the patterns (to the ``N * P`` points' own discrepancy); in one pixel the mean
    is off by less than ``1 / 2N`` px per axis.

    Why a lattice and not the R2 pairs: under a random shift a pattern's error for an edge
    is set by how evenly its points project on the edge's normal. Shifted at random, 64
    lattice points err by 0.014 of a pixel's area RMS over edge directions and 0.006-0.007
    for edges along the pixel rows or columns (0.0045 is the least possible for 64 points),
    the R2 pairs by 0.021 and 0.019 (their projections have three gap sizes, and a shift
    breaks their mirror symmetry). A lattice errs most for edges along its rows (0.033
    near 22 deg from a pixel axis for N = 64); with the four turns mixed no edge direction
    sees more than 0.022, the RMS over directions unchanged.

    Motion blur: ray ``k`` sees exposure instant ``k mod n_times``, so every instant's rays
    are a coarser lattice over the whole pixel (stratified in space and in time), whatever
    the pattern.
    """
    n = int(supersample) ** 2
    times = np.arange(n) % max(1, int(n_times))
    if pattern is None:
        offsets = _lattice(n, np.full(2, 0.5 / n), np.array(0))
    else:
        offsets = np.swapaxes(_pattern_table(n)[np.asarray(pattern)], -1, -2)
    return np.moveaxis(offsets, -2, 0), times


def _hash32(x: np.ndarray) -> np.ndarray:
    """A 32-bit integer hash (C. Wellons's "lowbias32"): well mixed, cheap, vectorised."""
    x = np.asarray(x, dtype=np.uint32)
    shape = x.shape
    x = x.reshape(-1)                      # arrays wrap silently, numpy scalars would warn
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return (x ^ (x >> np.uint32(16))).reshape(shape)


def pixel_pattern(u: np.ndarray, v: np.ndarray, supersample: int) -> np.ndarray:
    """Each pixel's sub-pixel pattern (an index for :func:`subsample_pattern`): pseudo-random,
    uniform and independent from pixel to pixel, fixed by the pixel's column ``u`` and row
    ``v`` (so a render is reproducible and does not depend on which part of the image is
    drawn at once)."""
    count = _pattern_table(int(supersample) ** 2).shape[0]
    h = _hash32(np.asarray(u, dtype=np.uint32)
                ^ _hash32(np.asarray(v, dtype=np.uint32) ^ np.uint32(0x9E3779B9)))
    return (h % np.uint32(count)).astype(np.intp)


def _bounding_box(camera: CameraModel, plane: TexturedPlane, rot: np.ndarray,
                  trans: np.ndarray) -> tuple[int, int, int, int] | None:
    """Pixel box ``(u0, u1, v0, v1)`` (exclusive ends) holding the plane at all instants, or
    None when it is behind the camera or outside the image."""
    half_w = 0.5 * plane.size_m[0] + plane.margin_m
    half_h = 0.5 * plane.size_m[1] + plane.margin_m
    corners = np.array([[-half_w, half_h, 0], [half_w, half_h, 0], [half_w, -half_h, 0],
                        [-half_w, -half_h, 0]])
    pts = np.einsum("tij,kj->tki", rot, corners) + trans[:, None, :]
    if (pts[..., 2] <= 1e-3).any():
        return None
    uv = camera.project(pts).reshape(-1, 2)
    width, height = camera.image_size
    u0, v0 = np.floor(uv.min(axis=0)).astype(int) - 2
    u1, v1 = np.ceil(uv.max(axis=0)).astype(int) + 3
    u0, v0, u1, v1 = max(u0, 0), max(v0, 0), min(u1, width), min(v1, height)
    if u0 >= u1 or v0 >= v1:
        return None
    return int(u0), int(u1), int(v0), int(v1)


def _lookup(plane: TexturedPlane, x_m: np.ndarray, y_m: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intensity, coverage mask and texel index (-1: paper, -2: off the plane) at local
    points of the plane."""
    w, h = plane.size_m
    th, tw = plane.texture.shape
    col = np.floor((x_m + 0.5 * w) * (tw / w)).astype(np.int64)
    row = np.floor((0.5 * h - y_m) * (th / h)).astype(np.int64)
    inside = (col >= 0) & (col < tw) & (row >= 0) & (row < th)
    value = np.full(x_m.shape, plane.margin_value, dtype=np.float32)
    value[inside] = plane.texture[row[inside], col[inside]]
    covered = ((np.abs(x_m) <= 0.5 * w + plane.margin_m)
               & (np.abs(y_m) <= 0.5 * h + plane.margin_m))
    texel = np.where(inside, row * tw + col, np.where(covered, -1, -2))
    return value, covered, texel


class _PlaneRays:
    """Ray-plane intersections of one plane at its exposure instants."""

    def __init__(self, plane: TexturedPlane, rot_cam: np.ndarray, trans_cam_m: np.ndarray):
        self.plane = plane
        self.normal = rot_cam[:, :, 2]                         # [n_t, 3]
        self.centre = trans_cam_m                              # [n_t, 3]
        self.rot_t = np.swapaxes(rot_cam, 1, 2)                # camera -> plane axes
        self.offset = np.einsum("tn,tn->t", self.normal, self.centre)

    def sample(self, ray_x: np.ndarray, ray_y: np.ndarray, instant: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Value, coverage and texel of rays ``(x, y, 1)`` at exposure instants ``instant``
        (indices broadcasting with the rays)."""
        nrm, c, rt = self.normal[instant], self.centre[instant], self.rot_t[instant]
        denom = nrm[..., 0] * ray_x + nrm[..., 1] * ray_y + nrm[..., 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            depth = self.offset[instant] / denom
        ok = np.isfinite(depth) & (depth > 0)
        if not self.plane.double_sided:
            ok &= denom < 0                                    # printed side towards us
        px, py, pz = depth * ray_x - c[..., 0], depth * ray_y - c[..., 1], depth - c[..., 2]
        local_x = rt[..., 0, 0] * px + rt[..., 0, 1] * py + rt[..., 0, 2] * pz
        local_y = rt[..., 1, 0] * px + rt[..., 1, 1] * py + rt[..., 1, 2] * pz
        value, covered, texel = _lookup(self.plane, np.where(ok, local_x, 1e9),
                                        np.where(ok, local_y, 1e9))
        return value, covered & ok, np.where(ok, texel, -2)


def draw_plane(image: np.ndarray, rays: PixelRays, plane: TexturedPlane, rot_cam: np.ndarray,
               trans_cam_m: np.ndarray, *, supersample: int = 8) -> None:
    """Composite one plane over ``image`` (float ``[H, W]``, in place).

    A pixel whose four corners see the same texel (or the same paper, or nothing) at every
    instant is uniform and takes that value from one ray (texels are several pixels wide);
    only the others, along edges, are integrated with ``supersample**2`` rays, each pixel
    with its own sub-pixel pattern (:func:`pixel_pattern`, :func:`subsample_pattern`), so
    that the sampling errors of the pixels along an edge are independent and average out.

    Parameters
    ----------
    image : ndarray (H, W)
        The frame so far (what lies behind the plane).
    rays : PixelRays
        The camera's rays.
    plane : TexturedPlane
    rot_cam, trans_cam_m : ndarray (n_t, 3, 3), (n_t, 3)
        The plane's pose in the camera frame at ``n_t`` instants of the exposure (one
        instant: no motion blur).
    supersample : int
        Sub-pixel rays per pixel along each axis.
    """
    rot_cam = np.asarray(rot_cam, dtype=np.float64).reshape(-1, 3, 3)
    trans_cam_m = np.asarray(trans_cam_m, dtype=np.float64).reshape(-1, 3)
    box = _bounding_box(rays.camera, plane, rot_cam, trans_cam_m)
    if box is None:
        return
    u0, u1, v0, v1 = box
    n_t = rot_cam.shape[0]
    hit = _PlaneRays(plane, rot_cam, trans_cam_m)
    n_sub = int(supersample) ** 2
    table = _pattern_table(n_sub)                                       # [P, 2, K]
    _, times = subsample_pattern(supersample, n_t)
    rows_per_chunk = max(1, _CHUNK_RAYS // max(1, 4 * n_t * (u1 - u0)))
    for r0 in range(v0, v1, rows_per_chunk):
        r1 = min(v1, r0 + rows_per_chunk)
        base = rays.xy[r0:r1, u0:u1].astype(np.float64)             # [h, w, 2]
        ddu = rays.d_du[r0:r1, u0:u1].astype(np.float64)
        ddv = rays.d_dv[r0:r1, u0:u1].astype(np.float64)

        def ray(du, dv, b=base, gu=ddu, gv=ddv):
            return b[..., 0] + du * gu[..., 0] + dv * gv[..., 0], \
                b[..., 1] + du * gu[..., 1] + dv * gv[..., 1]

        # the four corners of every pixel at every instant: [n_t, 4, h, w]
        corner_off = np.array([[-0.5, -0.5], [0.5, -0.5], [-0.5, 0.5], [0.5, 0.5]])
        cx, cy = ray(corner_off[:, 0, None, None], corner_off[:, 1, None, None])
        inst = np.arange(n_t)[:, None, None, None]
        value, covered, texel = hit.sample(cx[None], cy[None], inst)
        first = texel[:1, :1]
        uniform = (texel == first).all(axis=(0, 1))                  # [h, w]
        old = image[r0:r1, u0:u1]
        centre_val = value[0, 0]
        fill = uniform & (first[0, 0] != -2)
        old[fill] = centre_val[fill]
        mixed = np.nonzero(~uniform)
        if mixed[0].size == 0:
            continue
        b_m, gu_m, gv_m = base[mixed], ddu[mixed], ddv[mixed]          # [m, 2]
        pattern = pixel_pattern(mixed[1] + u0, mixed[0] + r0, supersample)
        off = table[pattern]                                            # [m, 2, K]
        ox, oy = off[:, 0], off[:, 1]
        sx = b_m[:, 0, None] + ox * gu_m[:, 0, None] + oy * gv_m[:, 0, None]   # [m, K]
        sy = b_m[:, 1, None] + ox * gu_m[:, 1, None] + oy * gv_m[:, 1, None]
        val_s, cov_s, _ = hit.sample(sx, sy, times[None, :])
        n_cov = cov_s.sum(axis=1)
        total = np.where(cov_s, val_s, 0.0).sum(axis=1)
        old[mixed] = (total + (n_sub - n_cov) * old[mixed]) / n_sub


def finish_frame(image: np.ndarray, rng: np.random.Generator, *, blur_px: float = 0.7,
                 read_noise: float = 2.0 / 255, shot_noise: float = 0.02) -> np.ndarray:
    """Optical blur, sensor noise and 8-bit quantisation of a rendered frame.

    Parameters
    ----------
    image : ndarray (H, W)
        Intensities in [0, 1].
    rng : numpy.random.Generator
    blur_px : float
        Standard deviation of the lens's Gaussian point-spread function, px (0: none).
    read_noise : float
        Standard deviation of the signal-independent noise, in full-scale units.
    shot_noise : float
        Photon noise: the standard deviation is ``shot_noise * sqrt(intensity)``.

    Returns
    -------
    ndarray (H, W) of uint8
    """
    import cv2

    img = np.asarray(image, dtype=np.float32)
    if blur_px > 0:
        img = cv2.GaussianBlur(img, (0, 0), sigmaX=blur_px, sigmaY=blur_px,
                               borderType=cv2.BORDER_REPLICATE)
    sigma = np.sqrt(read_noise ** 2 + shot_noise ** 2 * np.clip(img, 0.0, 1.0))
    noisy = img + sigma * rng.standard_normal(img.shape, dtype=np.float32)
    return np.clip(np.rint(noisy * 255.0), 0, 255).astype(np.uint8)


def render_frame(rays: PixelRays, planes: list[tuple[TexturedPlane, np.ndarray, np.ndarray]],
                 *, background: float = 0.45, supersample: int = 8) -> np.ndarray:
    """The noiseless frame (float ``[H, W]``) of planes posed in the camera frame.

    ``planes`` holds ``(plane, rot_cam [n_t, 3, 3], trans_cam_m [n_t, 3])``; they are drawn
    far to near (painter's order by the depth of their centres), so a near plane hides a
    far one.
    """
    width, height = rays.camera.image_size
    image = np.full((height, width), background, dtype=np.float32)
    order = sorted(range(len(planes)),
                   key=lambda i: -float(np.mean(np.asarray(planes[i][2]).reshape(-1, 3)[:, 2])))
    for i in order:
        plane, rot, trans = planes[i]
        draw_plane(image, rays, plane, rot, trans, supersample=supersample)
    return image
