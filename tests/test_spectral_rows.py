"""Frequency-domain rows of an equation with coloured noise: their standard errors match the
spread of the estimates over repeated noise draws, where a fit that treats the frames as
independent is off by a large factor (noise rising as f^4, a slow and a fast regressor)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import butter, sosfiltfilt

from rigtool.identify.common.spectral_rows import spectral_rows, uniform_frames


def _coloured_noise(rng, t, dt, sigma):
    """A platform equation's noise: white position noise through the springs (flat) plus
    the same noise differentiated twice through the mass (rising as f^4; the two cross at
    0.8 Hz, the order of a rig's modes), zero-phase low-passed at 5 Hz; the filter's edge
    transients cut off, as a capture's valid frames leave them out."""
    edge = 200
    x = sigma * rng.standard_normal(t + 2 + 2 * edge)
    acc = np.diff(x, 2) / dt ** 2
    omega = 2 * np.pi * 0.8
    sos = butter(4, 5.0, fs=1 / dt, output="sos")
    return sosfiltfilt(sos, x[1:-1] + acc / omega ** 2)[edge:-edge]


@pytest.mark.slow
def test_standard_errors_match_the_spread_of_estimates():
    rng = np.random.default_rng(0)
    dt, t = 0.01, 1400
    time = np.arange(t) * dt
    # two equations per frame, three parameters: slow (0.3 Hz), fast (3 Hz), constant
    a = np.zeros((t, 2, 3))
    a[:, 0, 0] = np.sin(2 * np.pi * 0.3 * time)
    a[:, 1, 0] = 0.5 * np.cos(2 * np.pi * 0.3 * time)
    a[:, 0, 1] = np.sin(2 * np.pi * 3.0 * time + 0.4)
    a[:, 1, 2] = 1.0
    theta = np.array([2.0, -1.0, 0.5])
    est, se, se_white = [], [], []
    for _ in range(200):
        noise = np.stack([_coloured_noise(rng, t, dt, 1e-3),
                          0.3 * _coloured_noise(rng, t, dt, 1e-3)], axis=1)
        b = a @ theta + noise
        rows = spectral_rows(a, b, dt, 5.0)
        q, r = np.linalg.qr(rows.a)
        x = np.linalg.solve(r, q.T @ rows.b)
        r_inv = np.linalg.inv(r)
        est.append(x)
        se.append(np.sqrt(np.diag(r_inv @ r_inv.T)))
        # the same fit with every frame an independent sample (each equation's RMS)
        sig = np.sqrt(np.mean((b - a @ x) ** 2, axis=0))
        aw = (a / sig[None, :, None]).reshape(-1, 3)
        se_white.append(np.sqrt(np.diag(np.linalg.inv(aw.T @ aw))))
    est, se, se_white = np.array(est), np.array(se), np.array(se_white)
    spread = est.std(axis=0)
    ratio = se.mean(axis=0) / spread
    # 200 draws: the spread is known to about 1/sqrt(400) = 5 %; the smoothed periodogram
    # (9 bins) leaves each weight ~1/3 off, which averages out over the bins: within 20 %
    assert np.all(np.abs(ratio - 1.0) < 0.2), ratio
    assert np.all(np.abs(est.mean(axis=0) - theta) < 3 * spread / np.sqrt(200))
    # independence of frames misjudges the slow parameter by a large factor
    assert se_white.mean(axis=0)[0] / spread[0] > 3.0


def test_lost_frames_are_zero_rows_in_an_even_span():
    valid = np.array([False, True, True, False, True, False])
    assert uniform_frames(valid).tolist() == [1, 2, 3, 4]
    rng = np.random.default_rng(1)
    a = rng.standard_normal((200, 1, 2))
    theta = np.array([1.0, -2.0])
    b = a @ theta + 1e-3 * rng.standard_normal((200, 1))
    a[50:60], b[50:60] = 0.0, 0.0
    rows = spectral_rows(a, b, 0.01, 50.0)
    x = np.linalg.lstsq(rows.a, rows.b, rcond=None)[0]
    assert np.allclose(x, theta, atol=1e-3)
