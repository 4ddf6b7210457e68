"""The output-error fits' Levenberg-Marquardt solver (rigtool.engine.lm) against scipy's
least_squares on a nonlinear curve fit, and its stopping rules."""

import numpy as np
import pytest
from scipy.optimize import least_squares

from rigtool.engine.lm import Normal, _remaining_below, levenberg_marquardt

# a damped oscillation: amplitude, decay, frequency, phase, offset
TRUE = np.array([1.5, 0.4, 2.3, 0.3, 0.05])
T = np.linspace(0.0, 6.0, 400)


def _model(x: np.ndarray) -> np.ndarray:
    a, d, w, p, c = x
    return a * np.exp(-d * T) * np.cos(w * T + p) + c


def _jacobian(x: np.ndarray) -> np.ndarray:
    a, d, w, p, _ = x
    e, arg = np.exp(-d * T), w * T + p
    return np.stack([e * np.cos(arg), -a * T * e * np.cos(arg), -a * T * e * np.sin(arg),
                     -a * e * np.sin(arg), np.ones_like(T)], axis=1)


@pytest.fixture()
def problem():
    y = _model(TRUE) + np.random.default_rng(3).normal(0.0, 0.01, T.size)
    calls = {"normal": 0, "cost": 0}

    def residual(x):
        return _model(x) - y

    def normal_at(x):
        calls["normal"] += 1
        r, j = residual(x), _jacobian(x)
        return Normal(float(r @ r), j.T @ j, j.T @ r)

    def cost_at(x):
        calls["cost"] += 1
        r = residual(x)
        return float(r @ r)

    return residual, normal_at, cost_at, calls


def test_reaches_scipys_optimum(problem):
    residual, normal_at, cost_at, calls = problem
    x0 = TRUE * np.array([1.2, 0.7, 1.04, 0.5, 0.0]) + np.array([0, 0, 0, 0, 0.02])
    ref = least_squares(residual, x0, jac=lambda x: _jacobian(x), xtol=1e-15, ftol=1e-15,
                        gtol=1e-15, method="lm")
    sol = levenberg_marquardt(normal_at, cost_at, x0, ftol=1e-10)
    # the optimum's standard errors, from the residual variance and J^T J
    r = ref.fun
    cov = (r @ r / (T.size - 5)) * np.linalg.inv(ref.jac.T @ ref.jac)
    # ftol 1e-10 of a cost of ~400 sigma^2 leaves at most ~4e-8 sigma^2: 2e-4 standard errors
    assert np.all(np.abs(sol.x - ref.x) < 1e-3 * np.sqrt(np.diag(cov)))
    assert cost_at(sol.x) <= ref.cost * 2 * (1 + 1e-9)
    assert sol.n_normal == calls["normal"]


def test_warm_start_stops_without_confirming_normal(problem):
    """From near the optimum at Gauss-Newton's damping, the decreases contract fast, and the
    solver stops after the step whose decrease leaves less than ftol, without the normal
    equations at the new point (they would only confirm it)."""
    residual, normal_at, cost_at, calls = problem
    ref = least_squares(residual, TRUE, jac=lambda x: _jacobian(x), xtol=1e-15, ftol=1e-15,
                        gtol=1e-15, method="lm")
    x0 = ref.x + 1e-3 * np.array([1.0, -1.0, 0.5, 1.0, -0.5])
    sol = levenberg_marquardt(normal_at, cost_at, x0, ftol=1e-8, lam0=1e-9)
    # two accepted steps, the normal equations at the start and after the first only (the
    # second step's decrease, 6e-8 of the cost, is above ftol: the extrapolation stopped it)
    assert (sol.n_normal, sol.n_cost) == (2, 2)
    confirm = normal_at(sol.x)
    d = np.sqrt(np.diag(confirm.jtj))
    step = -np.linalg.solve(confirm.jtj / np.outer(d, d), confirm.jtr / d) / d
    left = -(2.0 * step @ confirm.jtr + step @ confirm.jtj @ step)
    assert left < 1e-8 * confirm.cost


def test_remaining_below():
    # contracting decreases with a good quadratic model: stop
    assert _remaining_below(1e-8, 1.0001e-8, 1e-4, 1e-6)
    # contraction too slow to extrapolate
    assert not _remaining_below(1e-8, 1e-8, 2e-8, 1.0)
    # the step missed its model's prediction by more than the tolerance
    assert not _remaining_below(1e-8, 5e-6, 1e-4, 1e-6)
    # no earlier Gauss-Newton step
    assert not _remaining_below(1e-8, 1e-8, None, 1.0)
    # the geometric tail above the tolerance
    assert not _remaining_below(1e-3, 1e-3, 4.1e-3, 1e-6)
