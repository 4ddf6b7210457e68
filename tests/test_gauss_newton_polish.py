"""The output-error fits' last step (rigtool.identify.common.output_error.gauss_newton_polish):
on a linear least-squares problem one Gauss-Newton step lands on the solution numpy's lstsq
gives; a rejected trial falls back to Levenberg-Marquardt; a model that cannot be evaluated
at the start gives None (the caller keeps its converged fit)."""

import numpy as np

from rigtool.engine.lm import Normal
from rigtool.identify.common.output_error import (final_substeps_of, gauss_newton_polish,
                                                  integrator_offset)

RNG = np.random.default_rng(7)
A = RNG.normal(size=(40, 5)) * np.array([1.0, 10.0, 0.1, 3.0, 1e3])   # badly scaled columns
B = RNG.normal(size=40)
X_LS = np.linalg.lstsq(A, B, rcond=None)[0]


def _normal(x):
    r = A @ x - B
    return Normal(float(r @ r), A.T @ A, A.T @ r)


def _cost(x):
    r = A @ x - B
    return float(r @ r)


def test_one_step_reaches_the_least_squares_solution():
    x, n_cost, n_normal = gauss_newton_polish(_normal, _cost, X_LS + 0.01, ftol=1e-12)
    np.testing.assert_allclose(x, X_LS, rtol=1e-9, atol=1e-12)
    assert (n_cost, n_normal) == (1, 1)


def test_rejected_trial_falls_back_to_levenberg_marquardt():
    calls = []

    def cost_first_diverges(x):
        calls.append(1)
        return np.inf if len(calls) == 1 else _cost(x)

    x, n_cost, n_normal = gauss_newton_polish(_normal, cost_first_diverges, X_LS + 0.01,
                                              ftol=1e-12)
    assert n_cost >= 2 and n_normal >= 1
    assert _cost(x) <= _cost(X_LS + 0.01)
    np.testing.assert_allclose(x, X_LS, rtol=1e-6, atol=1e-9)


def test_model_that_cannot_be_simulated_gives_none():
    def diverged(x):
        return Normal(np.inf, np.eye(x.size), np.zeros(x.size))

    assert gauss_newton_polish(diverged, _cost, X_LS, ftol=1e-12) is None


def test_final_substeps_default_is_half_the_step():
    assert final_substeps_of(1, None) == 2 and final_substeps_of(3, None) == 6
    assert final_substeps_of(1, 1) == 1


def test_integrator_offset_is_the_finer_minus_the_coarse_states():
    states = {1: np.arange(6.0).reshape(3, 2), 2: np.arange(6.0).reshape(3, 2) + 0.5}
    np.testing.assert_array_equal(integrator_offset(states.__getitem__, 1, 2),
                                  np.full((3, 2), 0.5))
    # the coarse states the caller has are used, not simulated again
    np.testing.assert_array_equal(
        integrator_offset(states.__getitem__, 1, 2, coarse=np.zeros((3, 2))), states[2])


def test_integrator_offset_is_none_when_the_finer_model_diverges():
    def diverges(substeps):
        if substeps == 2:
            raise FloatingPointError("the simulated motion diverged")
        return np.zeros((3, 2))

    assert integrator_offset(diverges, 1, 2) is None
    assert integrator_offset(lambda n: np.full((3, 2), np.nan if n == 2 else 0.0), 1, 2) is None
