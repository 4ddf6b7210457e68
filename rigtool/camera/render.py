"""Ray-cast images of textured planes (printed tags, a ChArUco board) seen by a camera.

The simulated videos and calibration views of the tests and benchmarks come from here.
Every pixel is the mean of ``supersample**2`` rays through sub-pixel points (the sensor
integrates light over the pixel's area), each ray undistorted exactly (the camera's
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


def subsample_pattern(supersample: int, n_times: int, /) -> tuple[np.ndarray, np.ndarray]:
    """Sub-pixel offsets ``[S*S, 2]`` (px, in ``(-0.5, 0.5)``) and the exposure instant
    ``[S*S]`` (an index ``0 .. n_times - 1``) of each sub-pixel ray.

    The instants are spread over the pixel by a fixed shuffle so every instant samples the
    whole pixel area (stratified in space and in time).
    """
    s = int(supersample)
    grid = (np.arange(s) + 0.5) / s - 0.5
    du, dv = np.meshgrid(grid, grid)
    offsets = np.stack([du.ravel(), dv.ravel()], axis=1)
    order = np.random.default_rng(12345).permutation(s * s)
    times = (order * n_times) // (s * s)
    return offsets, times


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
            ) -> tuple[np.ndarray, np.ndarray]:
    """Intensity and coverage mask of the plane at local points (texture or paper)."""
    w, h = plane.size_m
    th, tw = plane.texture.shape
    col = np.floor((x_m + 0.5 * w) * (tw / w)).astype(np.int64)
    row = np.floor((0.5 * h - y_m) * (th / h)).astype(np.int64)
    inside = (col >= 0) & (col < tw) & (row >= 0) & (row < th)
    value = np.full(x_m.shape, plane.margin_value, dtype=np.float32)
    value[inside] = plane.texture[row[inside], col[inside]]
    covered = ((np.abs(x_m) <= 0.5 * w + plane.margin_m)
               & (np.abs(y_m) <= 0.5 * h + plane.margin_m))
    return value, covered


def draw_plane(image: np.ndarray, rays: PixelRays, plane: TexturedPlane, rot_cam: np.ndarray,
               trans_cam_m: np.ndarray, *, supersample: int = 4) -> None:
    """Composite one plane over ``image`` (float ``[H, W]``, in place).

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
    offsets, times = subsample_pattern(supersample, rot_cam.shape[0])
    n_sub = offsets.shape[0]
    normal = rot_cam[:, :, 2][times]                     # [K, 3] plane normal per sub-ray
    centre = trans_cam_m[times]                          # [K, 3]
    rot_t = np.swapaxes(rot_cam, 1, 2)[times]            # [K, 3, 3] camera -> plane axes
    offset_plane = np.einsum("kn,kn->k", normal, centre)  # n . c
    rows_per_chunk = max(1, _CHUNK_RAYS // max(1, n_sub * (u1 - u0)))
    for r0 in range(v0, v1, rows_per_chunk):
        r1 = min(v1, r0 + rows_per_chunk)
        base = rays.xy[r0:r1, u0:u1].astype(np.float64)        # [h, w, 2]
        ddu = rays.d_du[r0:r1, u0:u1].astype(np.float64)
        ddv = rays.d_dv[r0:r1, u0:u1].astype(np.float64)
        ray_x = (base[None, ..., 0] + offsets[:, 0, None, None] * ddu[None, ..., 0]
                 + offsets[:, 1, None, None] * ddv[None, ..., 0])   # [K, h, w]
        ray_y = (base[None, ..., 1] + offsets[:, 0, None, None] * ddu[None, ..., 1]
                 + offsets[:, 1, None, None] * ddv[None, ..., 1])
        denom = (normal[:, 0, None, None] * ray_x + normal[:, 1, None, None] * ray_y
                 + normal[:, 2, None, None])
        with np.errstate(divide="ignore", invalid="ignore"):
            depth = offset_plane[:, None, None] / denom
        facing = denom < 0 if not plane.double_sided else np.ones_like(denom, bool)
        ok = np.isfinite(depth) & (depth > 0) & facing
        px = depth * ray_x - centre[:, 0, None, None]
        py = depth * ray_y - centre[:, 1, None, None]
        pz = depth - centre[:, 2, None, None]
        local_x = rot_t[:, 0, 0, None, None] * px + rot_t[:, 0, 1, None, None] * py \
            + rot_t[:, 0, 2, None, None] * pz
        local_y = rot_t[:, 1, 0, None, None] * px + rot_t[:, 1, 1, None, None] * py \
            + rot_t[:, 1, 2, None, None] * pz
        value, covered = _lookup(plane, np.where(ok, local_x, 1e9), np.where(ok, local_y, 1e9))
        covered &= ok
        n_cov = covered.sum(axis=0)
        if not n_cov.any():
            continue
        old = image[r0:r1, u0:u1]
        total = np.where(covered, value, 0.0).sum(axis=0)
        image[r0:r1, u0:u1] = (total + (n_sub - n_cov) * old) / n_sub


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
                 *, background: float = 0.45, supersample: int = 4) -> np.ndarray:
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
