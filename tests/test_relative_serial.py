"""The relative-motion refinement's marker-noise covariance when the residual is correlated
over frames (a heartbeat's recoil, markers sliding on the skin).

The per-frame scores are checked against a direct sum; the covariance on a linear model
with first-order autoregressive errors, whose estimate's spread over draws is the truth;
white errors keep ``s2 (J^T J)^-1`` to the bit.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from scipy.signal import lfilter

from rigtool.identify.relative.fit_common import marker_noise_covariance, refinement_scores
from rigtool.identify.relative.streamed_rows import RowAccumulator, frame_scores


def test_frame_scores_are_each_frames_sum_streamed_or_held():
    rng = np.random.default_rng(1)
    mask = rng.random((60, 5)) > 0.2                       # frames x markers, gaps
    rows = int(mask.sum()) * 3
    jac, r = rng.normal(size=(rows, 4)), rng.normal(size=rows)
    frame = np.repeat(np.nonzero(mask)[0], 3)
    direct = np.zeros((60, 4))
    for k in range(rows):                       # the reference, row by row
        direct[frame[k]] += jac[k] * r[k]
    held = refinement_scores(jac, r, mask)
    assert np.allclose(held, direct[:held.shape[0]]) and not held[held.shape[0]:].any()
    acc = RowAccumulator(4, 0)
    for lo in range(0, rows, 37):               # chunks that cut frames apart
        acc.add(r[lo:lo + 37], jac[lo:lo + 37], frame[lo:lo + 37])
    streamed = acc.result()[1].frame_scores
    assert np.allclose(streamed, direct[:streamed.shape[0]])
    first, part = frame_scores(r[:7], jac[:7], frame[:7])
    assert first == frame[0]


def _linear_fit(rng, t, design, a: float):
    """Least squares of ``y = design theta + e`` (e: AR(1) with coefficient ``a``, unit
    variance): the estimate's error, and the marker-noise covariance the refinement
    reports (one row a frame)."""
    e = lfilter([1.0], [1.0, -a], rng.normal(size=t)) * np.sqrt(1 - a * a)
    theta = np.linalg.lstsq(design, e, rcond=None)[0]
    r = e - design @ theta
    info_inv = np.linalg.inv(design.T @ design)
    s2 = float(r @ r) / (t - design.shape[1])
    prob = SimpleNamespace(prior_rows=None, fit_params=True, n_theta=design.shape[1])
    scores = design * r[:, None]
    cov, kind = marker_noise_covariance(prob, info_inv, s2, scores, t, 100.0)
    return theta, cov, kind, s2 * info_inv


def test_correlated_residuals_take_the_serial_covariance_and_cover():
    """AR(1) errors with a 0.2 s correlation (coefficient 0.95 at 100 Hz) against a slow
    design: the independent frames' variances are about 30x too small; the serial ones
    cover 2 standard errors in 88-99 % of 300 draws (Newey-West's own scatter and its
    window's bias, about 10 %, widen the band from 95 %)."""
    rng = np.random.default_rng(7)
    t = 2000
    time = np.arange(t) / 100.0
    design = np.column_stack([np.sin(2 * np.pi * 0.4 * time), np.cos(2 * np.pi * 1.3 * time),
                              np.ones(t)])
    z_serial, z_white = [], []
    for _ in range(300):
        theta, cov, kind, white = _linear_fit(rng, t, design, 0.95)
        assert kind["kind"] == "serial" and kind["window_frames"] == 50
        z_serial.append(theta / np.sqrt(np.diag(cov)))
        z_white.append(theta / np.sqrt(np.diag(white)))
    within = np.mean(np.abs(z_serial) <= 2)
    assert 0.88 <= within <= 0.99, within
    assert np.mean(np.abs(z_white) <= 2) < 0.5


def test_white_residuals_keep_the_independent_covariance():
    rng = np.random.default_rng(8)
    t = 2000
    design = rng.normal(size=(t, 3))
    for _ in range(50):
        _, cov, kind, white = _linear_fit(rng, t, design, 0.0)
        assert kind["kind"] == "independent" and kind["serial_inflation"] < 2.0
        assert np.array_equal(cov, white)
