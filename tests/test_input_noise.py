"""The active model's probes of its input's noise: white for markers fixed to a segment,
surrogates of their own residual for markers that wander on the skin."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.identify.relative.input_noise import (marker_residuals, probe_noise, surrogate,
                                                   wanders)
from rigtool.kinematics.pose import fit_pose

COORDS = np.array([[0.05, 0.0, 0.0], [0.0, 0.06, 0.0], [0.0, 0.0, 0.07], [0.04, 0.04, 0.0]])


def _moving(n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A link swinging (0.5 Hz, 0.3 rad) and moving, its markers' exact lab places."""
    t = np.arange(n) / 100.0
    rot = Rotation.from_rotvec(np.outer(0.3 * np.sin(np.pi * t), [0.2, 1.0, 0.1])).as_matrix()
    pos = np.stack([0.1 * np.sin(np.pi * t), 0.02 * t, 0.5 + 0 * t], axis=1)
    return t, rot, np.einsum("tij,kj->tki", rot, COORDS) + pos[:, None, :]


def test_residuals_are_what_the_rigid_fit_leaves():
    t, _, xyz = _moving()
    rng = np.random.default_rng(0)
    noise = 1e-4 * rng.normal(size=xyz.shape)
    traj = fit_pose(xyz + noise, COORDS, time_s=t)
    res = marker_residuals(traj, xyz + noise, COORDS)
    # the fit takes 6 of the 12 coordinates a frame: the residual keeps half the variance
    assert abs(np.mean(res ** 2) / np.mean(noise ** 2) - 0.5) < 0.05
    assert np.allclose(marker_residuals(fit_pose(xyz, COORDS, time_s=t), xyz, COORDS), 0.0,
                       atol=1e-12)


def test_white_markers_are_probed_white_as_before():
    """Markers fixed to their segment: their residual does not wander, and a probe is the
    same normal draw as before the surrogates (bit for bit)."""
    t, _, xyz = _moving()
    for seed in range(20):
        rng = np.random.default_rng(seed)
        noisy = xyz + 1e-4 * rng.normal(size=xyz.shape)
        res = marker_residuals(fit_pose(noisy, COORDS, time_s=t), noisy, COORDS)
        assert not wanders(res)
    a = probe_noise(np.random.default_rng(3), res, 1e-4, False)
    assert np.array_equal(a, np.random.default_rng(3).normal(0.0, 1e-4, res.shape))


def test_markers_sliding_on_skin_are_probed_by_surrogates_of_their_residual():
    """0.7 mm sines of 4-27 s periods on each marker: the residual wanders; a surrogate
    keeps each series' power spectrum (times the rigid fit's sqrt(12/6)) and is another
    series."""
    t, _, xyz = _moving()
    rng = np.random.default_rng(4)
    f = rng.uniform(0.3, 2.0, (5, 4, 3)) / 8.0
    drift = 0.0007 * np.sqrt(2 / 5) * np.sin(2 * np.pi * f * t[:, None, None, None]
                                             + rng.uniform(0, 6, (5, 4, 3))).sum(1)
    noisy = xyz + drift + 1e-4 * rng.normal(size=xyz.shape)
    res = marker_residuals(fit_pose(noisy, COORDS, time_s=t), noisy, COORDS)
    assert wanders(res)
    sur = surrogate(np.random.default_rng(5), res)
    amp = np.abs(np.fft.rfft(res, axis=0))
    assert np.allclose(np.abs(np.fft.rfft(sur, axis=0)), np.sqrt(2.0) * amp,
                       rtol=1e-9, atol=1e-12 * amp.max())
    assert np.corrcoef(sur.ravel(), res.ravel())[0, 1] < 0.5
    assert np.array_equal(probe_noise(np.random.default_rng(5), res, 1e-4, True), sur)
