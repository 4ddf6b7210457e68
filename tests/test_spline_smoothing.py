"""The smoothing spline's cross-validation and discrepancy choices against dense formulas
and scipy (rigtool.kinematics.spline_smoothing)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import make_smoothing_spline

from rigtool.kinematics.relative_spline import fit_relative_rotation, fit_relative_rotations
from rigtool.kinematics.spline_smoothing import (_LOG_LAM_TOL, _Reinsch, discrepancy_lambda,
                                                 gcv_lambda, smoothing_residuals)
from rigtool.kinematics.motion import exp_rotation


def _dense_hat(x: np.ndarray, lam: float) -> np.ndarray:
    """The smoother matrix ``A = (I + lam Q R^-1 Q^T)^-1`` formed densely."""
    n, h = x.size, np.diff(x)
    q = np.zeros((n, n - 2))
    for j in range(n - 2):
        q[j, j], q[j + 1, j], q[j + 2, j] = 1 / h[j], -1 / h[j] - 1 / h[j + 1], 1 / h[j + 1]
    r = np.diag((h[:-1] + h[1:]) / 3) + np.diag(h[1:-1] / 6, 1) + np.diag(h[1:-1] / 6, -1)
    return np.linalg.inv(np.eye(n) + lam * q @ np.linalg.solve(r, q.T))


def _series(n: int, seed: int):
    """Frames at 100 Hz with a few dropped (uneven steps where a marker was lost)."""
    rng = np.random.default_rng(seed)
    keep = np.ones(n + n // 10, bool)
    keep[rng.choice(np.arange(1, keep.size - 1), n // 10, replace=False)] = False
    x = np.arange(keep.size)[keep] / 100.0
    return x, np.sin(2.0 * x) + 0.3 * np.cos(5.0 * x) + rng.normal(0.0, 0.05, n)


def test_residuals_and_trace_equal_the_dense_smoother_and_scipys_spline():
    x, y = _series(60, 1)
    rf = _Reinsch(x)
    for lam in (1e-7, 1e-4, 1e-2, 1.0):
        a = _dense_hat(x, lam)
        res, facs = rf.residuals(y[:, None], np.array([lam]))
        # the dense inverse's own round-off: cond(I + lam Q R^-1 Q^T) ~ lam / h^3 ~ 1e6
        np.testing.assert_allclose(res[:, 0], y - a @ y, atol=1e-8)
        # scipy's lam is the same lam
        np.testing.assert_allclose(res[:, 0], y - make_smoothing_spline(x, y, lam=lam)(x),
                                   atol=1e-9)
        np.testing.assert_allclose(rf.trace_residual_operator(np.array([lam]), facs)[0],
                                   x.size - np.trace(a), rtol=1e-9)


@pytest.mark.slow
def test_cross_validation_finds_the_dense_criterions_minimum():
    x, y = _series(80, 2)
    grid = np.linspace(-8.0, 1.0, 2001)
    gcv = []
    for lg in grid:
        a = _dense_hat(x, 10.0 ** lg)
        gcv.append(x.size * np.sum((y - a @ y) ** 2) / (x.size - np.trace(a)) ** 2)
    best = grid[int(np.argmin(gcv))]
    lam = gcv_lambda(x, y)
    assert abs(np.log10(lam) - best) < 2 * (grid[1] - grid[0])


def test_several_series_at_once_equal_one_at_a_time():
    x, y1 = _series(200, 3)
    _, y2 = _series(200, 4)
    both = gcv_lambda(x, np.stack([y1, y2], 1))
    # a series searched alongside another may take more golden-section steps: the same
    # minimum to the search's tolerance in log10(lam)
    np.testing.assert_allclose(both, [gcv_lambda(x, y1), gcv_lambda(x, y2)],
                               rtol=10.0 ** _LOG_LAM_TOL - 1.0)


def test_the_discrepancy_choice_leaves_the_asked_residual():
    x, y = _series(300, 5)
    for target in (0.5, 0.8, 2.0):
        lam = discrepancy_lambda(x, y, target)
        assert abs(np.linalg.norm(smoothing_residuals(x, y, lam)) / target - 1.0) < 1e-6


@pytest.mark.slow
def test_links_fitted_together_equal_links_fitted_alone():
    rng = np.random.default_rng(6)
    t = np.arange(600) / 100.0
    rots = []
    for f in (0.4, 0.9, 1.4):
        rv = np.stack([0.5 * np.sin(2 * np.pi * f * t + p) for p in (0.0, 1.0, 2.0)], 1)
        rots.append(exp_rotation(rv + rng.normal(0.0, 1e-3, rv.shape)))
    together = fit_relative_rotations(t, rots)
    for rot, spl in zip(rots, together):
        alone = fit_relative_rotation(t, rot)
        np.testing.assert_allclose(spl.lam, alone.lam, rtol=10.0 ** _LOG_LAM_TOL - 1.0)
        np.testing.assert_allclose(spl.rotvec(t), alone.rotvec(t), atol=1e-6)
        # the same smoothing again (the noise probes' refit) draws the same curve
        again = fit_relative_rotations(t, [rot, rot], [spl.lam, spl.lam])
        for a in again:
            np.testing.assert_allclose(a.rotvec(t, 2), spl.rotvec(t, 2), atol=1e-8)
