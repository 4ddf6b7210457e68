"""The HAC (Newey-West) sandwich of rigtool.lsq against its definition, written out as a
double sum over frame pairs; the sensitivity of a solution to a column added to its data
against refits."""

import numpy as np
import pytest

from rigtool.lsq import hac_from_scores, sensitivity, solve_wls


def _meat_by_definition(scores, block, max_lag):
    """``sum_t sum_u w(t - u) s_t s_u^T``, ``w`` the Bartlett weights ``1 - |t - u| / (L + 1)``
    for pairs at most ``L`` frames apart in the same block, 0 otherwise."""
    t = np.arange(len(scores))
    lag = np.abs(t[:, None] - t[None, :])
    w = np.where((lag <= max_lag) & (block[:, None] == block[None, :]),
                 1.0 - lag / (max_lag + 1.0), 0.0)
    return scores.T @ w @ scores


@pytest.mark.parametrize("sizes, labels, max_lag", [
    ([400], [0], 30),                    # one capture
    ([120, 250, 90], [3, 1, 2], 40),     # stacked captures, one run each
    ([60, 80, 50], [0, 1, 0], 25),       # a block in two runs (the per-lag products)
    ([50], [0], 80),                     # a window longer than the block
    ([200, 100], [0, 1], 0),             # no lags: the plain sandwich
])
def test_hac_meat_equals_its_definition(sizes, labels, max_lag):
    rng = np.random.default_rng(7)
    # serially correlated scores, as filtered equation-error rows give them
    scores = np.cumsum(rng.standard_normal((sum(sizes), 4)), axis=0)
    block = np.repeat(labels, sizes)
    bread_inv = np.linalg.inv(np.cov(rng.standard_normal((4, 50))) + np.eye(4))
    expected = bread_inv @ _meat_by_definition(scores, block, max_lag) @ bread_inv
    got = hac_from_scores(scores, block, max_lag, bread_inv)
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_scaled_pinv_keeps_the_digits_that_the_units_spread_costs():
    """A normal matrix ``D A D`` whose unknowns span six decades of scale (A well
    conditioned, D from 1e-3 to 1e3: condition number ~1e13) is inverted to ~1e-13 of its
    scaled inverse, ``D^-1 A^-1 D^-1`` (the calibration's normal matrix is of this kind);
    an empty column stays out of the inverse."""
    from rigtool.lsq import scaled_pinv
    rng = np.random.default_rng(3)
    n = 12
    q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    a = q @ np.diag(np.linspace(1.0, 10.0, n)) @ q.T
    d = np.logspace(-3, 3, n)
    normal = a * np.outer(d, d)
    inv = scaled_pinv(normal)
    assert np.allclose(inv * np.outer(d, d), np.linalg.inv(a), rtol=0, atol=1e-12)
    padded = np.zeros((n + 1, n + 1))
    padded[:n, :n] = normal
    inv_p = scaled_pinv(padded)
    assert np.all(inv_p[n] == 0) and np.all(inv_p[:, n] == 0)
    assert np.allclose(inv_p[:n, :n] * np.outer(d, d), np.linalg.inv(a), rtol=0, atol=1e-12)


def test_sensitivity_is_what_an_added_column_moves_the_solution_by():
    """The solution moves linearly in ``b``: refitting with ``c`` times a column added to the
    data moves it by ``c`` times that column's sensitivity, with row weights and with a
    direction the data leave unidentified (a repeated column, which both leave out)."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(200, 6, 4))
    a[..., 3] = a[..., 2]                        # one unidentified direction
    b = rng.normal(size=(200, 6))
    cols = rng.normal(size=(200, 6, 2))
    weights = np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0])
    sens = sensitivity(a, cols, row_weights=weights)
    base = solve_wls(a, b, row_weights=weights).x
    for k, c in enumerate((0.7, -2.0)):
        moved = solve_wls(a, b + c * cols[..., k], row_weights=weights).x
        np.testing.assert_allclose(moved - base, c * sens[:, k], atol=1e-12)
