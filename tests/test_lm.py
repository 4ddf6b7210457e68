"""The output-error fits' Levenberg-Marquardt solver (rigtool.engine.lm) against scipy's
least_squares on a nonlinear curve fit, and its stopping rules."""

import numpy as np
import pytest
from scipy.optimize import least_squares

from rigtool.engine.lm import (Normal, _remaining_below, finite_difference_curvature,
                               levenberg_marquardt)

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


@pytest.mark.parametrize("bound", ["upper_active", "lower_active", "inactive"])
def test_box_bounds_reach_scipys_bounded_optimum(problem, bound):
    """Projected steps: with the decay's bound cutting off the unconstrained optimum the fit
    ends on that bound at scipy's bounded optimum (trust-region reflective), the others
    free; with a bound far away it is the unconstrained optimum."""
    residual, normal_at, cost_at, _ = problem
    lo, hi = np.full(5, -np.inf), np.full(5, np.inf)
    if bound == "upper_active":
        hi[1] = 0.3                                      # the true decay is 0.4
    elif bound == "lower_active":
        lo[1] = 0.5
    else:
        lo[1], hi[1] = 0.0, 5.0
    x0 = np.clip(TRUE * np.array([1.1, 1.0, 1.02, 0.8, 0.0]), lo + 1e-3, hi - 1e-3)
    ref = least_squares(residual, x0, jac=lambda x: _jacobian(x), bounds=(lo, hi),
                        xtol=1e-15, ftol=1e-15, gtol=1e-15, method="trf")
    sol = levenberg_marquardt(normal_at, cost_at, x0, ftol=1e-12, lower=lo, upper=hi)
    assert np.all(sol.x >= lo) and np.all(sol.x <= hi)
    if bound != "inactive":
        assert sol.x[1] == (hi[1] if bound == "upper_active" else lo[1])
    scale = np.abs(ref.x) + 1e-3
    assert np.all(np.abs(sol.x - ref.x) < 1e-5 * scale)
    assert cost_at(sol.x) <= 2 * ref.cost * (1 + 1e-9)


def _rosenbrock_problem():
    """Rosenbrock's curved valley as residuals ``[10 (x2 - x1^2), 1 - x1]`` (minimum 0 at
    (1, 1)), with its exact second directional derivative ``r_vv = [-20 v1^2, 0]``."""
    def residual(x):
        return np.array([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])

    def jac(x):
        return np.array([[-20.0 * x[0], 10.0], [-1.0, 0.0]])

    def normal_at(x):
        r, j = residual(x), jac(x)
        return Normal(float(r @ r), j.T @ j, j.T @ r)

    def cost_at(x):
        r = residual(x)
        return float(r @ r)

    def curvature_at(x, v):
        return jac(x).T @ np.array([-20.0 * v[0] ** 2, 0.0])

    return normal_at, cost_at, curvature_at, residual, jac


def test_finite_difference_curvature_is_the_second_derivative():
    """The finite difference along a step against Rosenbrock's closed-form ``r_vv`` (its
    residuals are quadratic along any line, so the difference is exact but for round-off),
    and against a central second difference of the damped oscillation's residual."""
    _, _, exact, residual, jac = _rosenbrock_problem()
    rng = np.random.default_rng(5)
    for _ in range(5):
        x, v = rng.normal(size=2), rng.normal(size=2)
        assert np.allclose(finite_difference_curvature(residual, jac)(x, v), exact(x, v),
                           rtol=1e-7, atol=1e-9)
    # a residual that is not quadratic: the one-sided difference has an O(h |v|) error, so
    # on a short step (|v| ~ 1e-3 of x) it matches the central second difference over the
    # step itself (error O(|v|^2)) to ~1e-3 (measured 2e-4)
    x, v = TRUE.copy(), 1e-3 * TRUE * np.array([1.0, -1.0, 0.5, 2.0, 1.0])
    r_vv = _model(x + v) - 2 * _model(x) + _model(x - v)
    got = finite_difference_curvature(_model, _jacobian)(x, v)
    want = _jacobian(x).T @ r_vv
    assert np.allclose(got, want, rtol=2e-3, atol=1e-3 * np.abs(want).max())


def test_budget_exhausted_is_not_converged():
    """A fit stopped by ``max_iterations`` says so; one stopped by a rule does not."""
    normal_at, cost_at, _, _, _ = _rosenbrock_problem()
    short = levenberg_marquardt(normal_at, cost_at, np.array([-1.2, 1.0]), max_iterations=3)
    full = levenberg_marquardt(normal_at, cost_at, np.array([-1.2, 1.0]), ftol=1e-14,
                               max_iterations=500)
    assert not short.converged and full.converged


def test_geodesic_acceleration_follows_a_curved_valley():
    """Transtrum and Sethna's geodesic acceleration: from the far side of Rosenbrock's
    banana both variants reach the minimum (1, 1); the accelerated steps bend along the
    valley, so they need fewer normal equations than the straight damped steps."""
    normal_at, cost_at, curvature_at, _, _ = _rosenbrock_problem()
    x0 = np.array([-1.2, 1.0])
    plain = levenberg_marquardt(normal_at, cost_at, x0, ftol=1e-14, max_iterations=500)
    accel = levenberg_marquardt(normal_at, cost_at, x0, ftol=1e-14, max_iterations=500,
                                curvature_at=curvature_at)
    for sol in (plain, accel):
        assert np.allclose(sol.x, [1.0, 1.0], atol=1e-6)
    assert accel.n_normal < plain.n_normal


def test_geodesic_acceleration_keeps_the_optimum(problem):
    """With the second derivative by a finite difference (as the relative-motion fits
    compute it) the accelerated fit ends at scipy's optimum of the damped oscillation."""
    residual, normal_at, cost_at, _ = problem
    x0 = TRUE * np.array([1.2, 0.7, 1.04, 0.5, 0.0]) + np.array([0, 0, 0, 0, 0.02])
    ref = least_squares(residual, x0, jac=lambda x: _jacobian(x), xtol=1e-15, ftol=1e-15,
                        gtol=1e-15, method="lm")

    sol = levenberg_marquardt(normal_at, cost_at, x0, ftol=1e-10,
                              curvature_at=finite_difference_curvature(residual, _jacobian))
    r = ref.fun
    cov = (r @ r / (T.size - 5)) * np.linalg.inv(ref.jac.T @ ref.jac)
    assert np.all(np.abs(sol.x - ref.x) < 1e-3 * np.sqrt(np.diag(cov)))
