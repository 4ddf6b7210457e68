"""The SO(3) spline of a moving link when cross-validation fails (the whole body)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.interpolate import make_smoothing_spline
from scipy.spatial.transform import Rotation

from rigtool.kinematics.motion import log_rotation, mean_rotation
from rigtool.kinematics.relative_spline import (GCV_FAILED_FACTOR, fit_relative_rotation,
                                                noise_from_differences)

DATA = Path(__file__).parent / "data" / "relative_rotation_gcv_fails.npz"


def test_noise_from_differences_sees_white_noise_not_the_motion():
    rng = np.random.default_rng(3)
    t = np.arange(2000) / 100.0
    motion = 0.8 * np.sin(2 * np.pi * 0.4 * t) + 0.3 * np.sin(2 * np.pi * 1.6 * t + 1.0)
    for sigma in (1e-4, 1e-3):
        est = noise_from_differences(motion + rng.normal(0.0, sigma, t.size))
        assert abs(est / sigma - 1.0) < 0.1      # 2000 samples: ~3 % scatter
    assert noise_from_differences(motion) < 1e-5


def test_a_failed_cross_validation_is_caught():
    """The head's rotation relative to the platform in the simulated whole-body session
    (1001 frames at 100 Hz, 30-50 deg of motion, ~0.07 deg of pose noise): scipy's
    cross-validation draws a nearly straight line through two of the three components
    (6 and 11 deg RMS left). The fit must leave no more than the noise (within 2x)."""
    d = np.load(DATA)
    t, rot = d["time_s"], Rotation.from_rotvec(d["rotvec"]).as_matrix()
    rv = log_rotation(mean_rotation(rot).T @ rot)
    plain = [np.sqrt(np.mean((make_smoothing_spline(t, rv[:, k])(t) - rv[:, k]) ** 2))
             for k in range(3)]
    noise = [noise_from_differences(rv[:, k]) for k in range(3)]
    assert max(p / n for p, n in zip(plain, noise)) > 10 * GCV_FAILED_FACTOR  # the case
    spl = fit_relative_rotation(t, rot)
    fitted = spl.rotvec(t)
    for k in range(3):
        resid = np.sqrt(np.mean((fitted[:, k] - rv[:, k]) ** 2))
        assert resid < 2.0 * noise[k]
