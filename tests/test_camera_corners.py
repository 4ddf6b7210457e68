"""The tag corners' constant error: refine_corners on a rendered tag whose edges lie along
the pixel grid, where interpolating the image (the previous method) erred by the same
amount in every frame (benchmarks/corner_bias.py)."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.camera import aruco
from rigtool.camera.demo import demo_camera
from rigtool.camera.render import PixelRays, finish_frame, render_frame
from rigtool.camera.simvideo import VideoSettings, tag_plane
from rigtool.camera.tags import Tag, square_corners

N_DRAWS = 100


def test_corners_have_no_constant_error_beyond_their_noise():
    """A 6 cm tag 0.42 m from a 320x256 camera (49 px across, the demo's lens distortion,
    blur and noise), turned 0 deg in its plane and placed so its edges sit at a sub-pixel
    phase of 0.75 px, where the bicubic-profile method's mean error was 0.019 px RMS
    (0.022 px at worst) over its 8 coordinates.

    The bound comes from the noise: with no constant error, each coordinate's mean over
    ``N_DRAWS`` noise draws is normal with standard deviation ``s / sqrt(N_DRAWS)`` (``s``:
    the measured frame-to-frame scatter), so the sum of the 8 squared means over that
    variance is chi-square with 8 degrees of freedom, below 32 with probability 0.9999: the
    RMS of the means is below 2 ``s / sqrt(N_DRAWS)`` (about 0.0045 px here). The frame is
    rendered with 32 x 32 rays per pixel so that the renderer's own sampling (about 0.002 px
    at this setting) stays below that."""
    cam = demo_camera(320, 256)
    settings = VideoSettings()
    plane = tag_plane(aruco.get_dictionary("DICT_4X4_50"),
                      Tag(7, "t", 0.06, np.eye(3), np.zeros(3)), settings)
    rot = Rotation.from_euler("x", 180.0, degrees=True).as_matrix()   # facing the camera
    ray = cam.normalized_rays(np.array([150.75, 120.75]))
    pos = 0.42 * np.array([ray[0], ray[1], 1.0])
    image = render_frame(PixelRays(cam), [(plane, rot[None], pos[None])],
                         background=settings.background, supersample=32)
    truth = cam.project(square_corners(0.06) @ rot.T + pos)[None]      # [1, 4, 2]
    rng = np.random.default_rng(3)
    errors = []
    for _ in range(N_DRAWS):
        gray = finish_frame(image, rng)                    # the demo's blur and noise, 8-bit
        start = truth + rng.uniform(-0.3, 0.3, truth.shape)
        corners, ok = aruco.refine_corners(gray, start, cam)
        assert ok.all()
        errors.append(corners - truth)
    errors = np.array(errors)[:, 0]                                     # [N, 4, 2]
    mean = errors.mean(axis=0)
    scatter = np.sqrt(((errors - mean) ** 2).sum() / (mean.size * (N_DRAWS - 1)))
    assert 0.005 < scatter < 0.05, scatter               # the demo's noise, as measured
    bound = 2.0 * scatter / np.sqrt(N_DRAWS)
    assert np.sqrt(np.mean(mean ** 2)) < bound, (mean, bound)
