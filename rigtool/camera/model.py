"""The pinhole camera with lens distortion, and its file ``camera.toml``.

Layout of ``camera.toml`` (written by ``rigtool camera calibrate``, or by hand)::

    [camera]
    image_size = [1280, 1024]            # width, height, px
    matrix = [[fx, 0, cx], [0, fy, cy], [0, 0, 1]]   # px
    distortion = [k1, k2, p1, p2, k3]    # OpenCV's radial-tangential model (4, 5, 8, 12
                                         # or 14 coefficients as OpenCV orders them)

    [calibration]                        # what the calibration measured (optional)
    rms_px = 0.12
    ...

Projection (OpenCV): ``x = X/Z, y = Y/Z``, distorted by ``distortion``, then
``u = fx x' + cx, v = fy y' + cy``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rigtool.config import read_toml
from rigtool.config.schema import CAMERA, check_keys
from rigtool.errors import ConfigError, InputError
from rigtool.tomlwrite import dumps
from rigtool.validate import as_array, require

#: Numbers of distortion coefficients OpenCV accepts.
DISTORTION_LENGTHS = (4, 5, 8, 12, 14)


@dataclass(frozen=True)
class CameraModel:
    """Intrinsics of one camera.

    Attributes
    ----------
    matrix : ndarray (3, 3)
        ``[[fx, 0, cx], [0, fy, cy], [0, 0, 1]]``, px.
    distortion : ndarray (n,)
        OpenCV distortion coefficients (``k1, k2, p1, p2[, k3[, ...]]``).
    image_size : tuple of int
        ``(width, height)``, px.
    calibration : dict
        What the calibration recorded (RMS, per-view errors, inputs); may be empty.
    """

    matrix: np.ndarray
    distortion: np.ndarray
    image_size: tuple[int, int]
    calibration: dict = field(default_factory=dict)

    @property
    def focal_px(self) -> float:
        """Mean focal length ``(fx + fy) / 2``, px."""
        return 0.5 * float(self.matrix[0, 0] + self.matrix[1, 1])

    def project(self, points_cam_m: np.ndarray) -> np.ndarray:
        """Pixel coordinates ``[..., 2]`` of points ``[..., 3]`` given in the camera frame."""
        import cv2

        pts = np.asarray(points_cam_m, dtype=np.float64)
        flat = pts.reshape(-1, 3)
        uv, _ = cv2.projectPoints(flat, np.zeros(3), np.zeros(3), self.matrix,
                                  self.distortion)
        return uv.reshape(pts.shape[:-1] + (2,))

    def normalized_rays(self, pixels_px: np.ndarray) -> np.ndarray:
        """Undistorted normalised coordinates ``(X/Z, Y/Z)`` ``[..., 2]`` of pixels ``[..., 2]``.

        OpenCV's iterative inversion of the distortion (``cv2.undistortPoints`` with a
        termination criterion) run to 1e-12, so the round trip through :meth:`project` is
        exact to far below a pixel.
        """
        import cv2

        pix = np.asarray(pixels_px, dtype=np.float64)
        flat = np.ascontiguousarray(pix.reshape(-1, 1, 2))
        crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)
        out = cv2.undistortPoints(flat, self.matrix, self.distortion, None, None, None, crit)
        return out.reshape(pix.shape)

    def check_frame_size(self, width: int, height: int, *, source: Path | str,
                         camera_file: Path | str | None) -> None:
        """Raise an :class:`InputError` when an image is not of the calibrated size."""
        if (int(width), int(height)) != tuple(self.image_size):
            raise InputError(
                f"the camera was calibrated for {self.image_size[0]}x{self.image_size[1]} "
                f"images but {source} has {width}x{height} frames; calibrate the camera at "
                "the resolution you record with (a scaled or cropped image changes the "
                "intrinsics)", path=camera_file, field="camera.image_size")


def load_camera(path: str | Path) -> CameraModel:
    """Read ``camera.toml``.

    Raises
    ------
    ConfigError
        Naming the file and field when the file is missing, not TOML, or a field is not
        of the expected shape (a 3x3 upper-triangular matrix with positive focal lengths,
        4/5/8/12/14 distortion coefficients, a positive image size).
    """
    path = Path(path)
    data = read_toml(path)
    check_keys(data, CAMERA, path=path, what="camera file")
    cam = require(data, "camera", field="camera", path=path)
    matrix = as_array(require(cam, "matrix", field="camera", path=path), (3, 3),
                      field="camera.matrix", path=path)
    if (matrix[0, 0] <= 0 or matrix[1, 1] <= 0 or matrix[1, 0] or matrix[2, 0] or matrix[2, 1]
            or matrix[2, 2] != 1.0):
        raise ConfigError("expected [[fx, s, cx], [0, fy, cy], [0, 0, 1]] with fx, fy > 0",
                          path=path, field="camera.matrix", found=matrix.tolist())
    dist_raw = require(cam, "distortion", field="camera", path=path)
    n = len(dist_raw) if isinstance(dist_raw, list) else -1
    if n not in DISTORTION_LENGTHS:
        raise ConfigError("expected a list of 4, 5, 8, 12 or 14 distortion coefficients "
                          "(OpenCV's order: k1, k2, p1, p2, k3, ...)", path=path,
                          field="camera.distortion", found=dist_raw)
    dist = as_array(dist_raw, (n,), field="camera.distortion", path=path)
    size = require(cam, "image_size", field="camera", path=path)
    if (not isinstance(size, list) or len(size) != 2
            or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size)):
        raise ConfigError("expected [width, height] in pixels (two whole numbers > 0)",
                          path=path, field="camera.image_size", found=size)
    calib = data.get("calibration", {})
    return CameraModel(matrix, dist, (int(size[0]), int(size[1])),
                       calib if isinstance(calib, dict) else {})


def camera_toml(camera: CameraModel, *, header: str = "") -> str:
    """TOML text of ``camera`` (what :func:`load_camera` reads back exactly)."""
    data = {"camera": {"image_size": list(camera.image_size),
                       "matrix": camera.matrix.tolist(),
                       "distortion": camera.distortion.tolist()}}
    if camera.calibration:
        data["calibration"] = camera.calibration
    return dumps(data, header=header)
