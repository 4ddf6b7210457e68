"""The covariance of a held link's mean rotation: white frames, and frames that wander."""

from __future__ import annotations

import numpy as np
import pytest

from rigtool.kinematics.rotation_mean import SERIAL_FACTOR, mean_covariance


def _ar1(rng: np.random.Generator, n: int, frames: float, d: int = 3) -> np.ndarray:
    """A stationary AR(1) wander of unit variance, correlation time ``frames``."""
    a = np.exp(-1.0 / frames)
    e = rng.normal(size=(n, d)) * np.sqrt(1 - a * a)
    x = np.zeros((n, d))
    x[0] = rng.normal(size=d)
    for t in range(1, n):            # a test's generator, not a hot path
        x[t] = a * x[t - 1] + e[t]
    return x


def _mean_variance(n: int, frames: float) -> float:
    """The exact variance of the mean of ``n`` frames of :func:`_ar1`."""
    a = np.exp(-1.0 / frames)
    return ((1 + a) / (1 - a) - 2 * a * (1 - a ** n) / (n * (1 - a) ** 2)) / n


@pytest.mark.slow
def test_white_frames_keep_the_independent_covariance():
    """White noise: the frames' covariance over their number, to the bit, in every draw of
    ten thousand (the gate: the wander's estimate must exceed it threefold)."""
    rng = np.random.default_rng(3)
    for _ in range(10000):
        x = rng.normal(size=(2000, 3)) * 1e-3
        assert np.array_equal(mean_covariance(x), np.cov(x.T) / 2000)
    assert SERIAL_FACTOR == 3.0
    assert np.all(np.isnan(mean_covariance(np.zeros((3, 3)))))


def test_a_wander_counts_for_fewer_frames():
    """A wander correlated over 200 frames (2 s at 100 Hz) in 2000: its mean varies about
    360x more than independent frames' would. Over 200 draws the estimate's median is
    within a factor two of the exact variance (the lag-one correlation of 40 block means is
    biased low), and no draw falls back to the independent frames."""
    rng = np.random.default_rng(5)
    exact = _mean_variance(2000, 200.0)
    assert 340 < exact * 2000 < 380
    ratios = np.array([float(mean_covariance(_ar1(rng, 2000, 200.0, d=1))[0, 0]) / exact
                       for _ in range(200)])
    assert 0.5 < float(np.median(ratios)) < 1.2, np.median(ratios)
    assert ratios.min() > 3.0 / (exact * 2000)
