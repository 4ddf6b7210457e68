"""The relative refinements' shared fit machinery (rigtool.identify.relative.fit_common) on a
toy problem: the residual cache and the growing-horizon schedule."""

import numpy as np

from rigtool.identify.relative import fit_common as fc
from rigtool.identify.relative.fit_common import (PriorRowsFit, fit_growing_horizon,
                                                  predicts_whole_window)

T = np.linspace(0.0, 10.0, 1001)


class DampedSine(PriorRowsFit):
    """Markers of a damped oscillation (amplitude, decay, frequency, phase) as a toy
    'simulation' with the protocol's attributes; counts its Jacobian evaluations."""

    def __init__(self, truth):
        self.n, self.free, self.n_params, self.fit_params = 2, "jyy", 0, True
        self.prior_rows, self.prior_rhs, self.cache = None, None, {}
        self.n_frames = 0
        self.mask = np.ones((T.size, 1), bool)
        self.measured = self._model(np.asarray(truth, float), T.size)
        self.jacobians = 0

    @staticmethod
    def _model(x, n):
        a, d, w, p = x
        t = T[:n]
        return a * np.exp(-d * t) * np.cos(w * t + p)

    def _full(self, x):
        return x

    def _marker_residual(self, full):
        return 1e3 * (self._model(full, self.n_frames) - self.measured[:self.n_frames])

    def _marker_rows(self, full, columns=slice(None)):
        self.jacobians += 1
        a, d, w, p = full
        t = T[:self.n_frames]
        e, arg = np.exp(-d * t), w * t + p
        jac = 1e3 * np.stack([e * np.cos(arg), -a * t * e * np.cos(arg),
                              -a * t * e * np.sin(arg), -a * e * np.sin(arg)], axis=1)
        return self._marker_residual(full), jac[:, columns]


def test_jacobian_kept_through_a_trial_residual():
    prob = DampedSine([1.0, 0.1, 2.0, 0.2])
    prob.n_frames = 300
    x, y = np.array([1.0, 0.1, 2.0, 0.2]), np.array([1.1, 0.1, 2.0, 0.2])
    jac = prob.jacobian(x)
    prob.residual(y)                    # a trial point, rejected
    assert prob.jacobian(x) is jac and prob.jacobians == 1
    prob.jacobian(y)
    assert prob.jacobians == 2
    prob.residual(x)                    # a residual is recomputed, not a Jacobian
    assert prob.jacobian(y) is not None and prob.jacobians == 2


def test_growing_horizon_fits_every_stage_up_to_the_window():
    truth = [1.0, 0.1, 2.0, 0.2]
    prob = DampedSine(truth)
    prob.n_frames = 200                                  # 2 s fitted: 8 s, then 10 s
    lo, hi = np.full(4, -np.inf), np.full(4, np.inf)
    x0 = np.array([1.02, 0.102, 2.01, 0.19])
    x, _, stages, horizons, converged = fit_growing_horizon(prob, x0, lo, hi, T.size, 4.0,
                                                            0.01, 1e-10, 100)
    assert horizons == [8.0, 10.01] and len(stages) == 2 and converged
    assert np.allclose(x, truth, rtol=0, atol=1e-8)


def _noisy_sine(truth, sigma_m=1e-3, seed=0):
    prob = DampedSine(truth)
    prob.measured = prob.measured + sigma_m * np.random.default_rng(seed).standard_normal(
        prob.measured.shape)
    return prob


def test_the_whole_window_is_predicted_by_a_good_estimate_only():
    """One simulation over the window tells a stage's estimate that already predicts the
    frames beyond its horizon (the truth: only the noise is left) from one whose frequency
    error becomes a phase error there (0.2 % of the frequency: 0.04 rad after 10 s, about a
    quarter of the noise in the mean square over the window's later frames)."""
    truth = np.array([1.0, 0.1, 2.0, 0.2])
    prob = _noisy_sine(truth)
    prob.n_frames = 200
    assert predicts_whole_window(prob, truth, T.size)
    assert prob.n_frames == 200                            # its horizon is left as it was
    off = truth * np.array([1.0, 1.0, 1.002, 1.0])
    assert not predicts_whole_window(prob, off, T.size)
    assert predicts_whole_window(prob, off, T.size, excess=np.inf)


def test_growing_horizon_goes_to_the_window_once_it_is_predicted():
    """From a 1 s stage the frequency is not yet known well enough to predict 10 s; from the
    2 s stage it is, and the schedule skips 4 and 8 s. It ends where the full schedule does:
    the same least-squares optimum."""
    truth = [1.0, 0.1, 2.0, 0.2]
    lo, hi = np.full(4, -np.inf), np.full(4, np.inf)
    x0 = np.array([1.02, 0.102, 2.01, 0.19])
    ends = {}
    for excess in (fc.WHOLE_WINDOW_EXCESS, -np.inf):
        prob = _noisy_sine(truth)
        prob.n_frames = 50
        x, _, stages, horizons, converged = fit_growing_horizon(
            prob, x0, lo, hi, T.size, 2.0, 0.01, 1e-12, 100, whole_window_excess=excess)
        assert converged
        ends[excess] = (x, horizons)
    (x_jump, h_jump), (x_all, h_all) = ends[fc.WHOLE_WINDOW_EXCESS], ends[-np.inf]
    assert h_all == [1.0, 2.0, 4.0, 8.0, 10.01]
    assert h_jump[-1] == 10.01 and len(h_jump) < len(h_all)
    assert np.allclose(x_jump, x_all, rtol=0, atol=1e-9)


def test_the_jump_to_the_window_starts_at_gauss_newtons_step():
    """The whole window reached by the checked jump starts next to its optimum (its start
    predicts the window as well as its own horizon), so its stage starts undamped
    (rigtool.engine.lm.WARM_LAMBDA): fewer Jacobians than from Marquardt's 1e-3, whose
    damping falls tenfold per accepted step before the convergence test on Gauss-Newton's
    steps can hold; the same optimum as the stage started damped."""
    truth = [1.0, 0.1, 2.0, 0.2]
    lo, hi = np.full(4, -np.inf), np.full(4, np.inf)
    x0 = np.array([1.02, 0.102, 2.01, 0.19])
    prob = _noisy_sine(truth)
    prob.n_frames = 50
    x, _, stages, horizons, converged = fit_growing_horizon(prob, x0, lo, hi, T.size, 2.0,
                                                            0.01, 1e-12, 100)
    assert converged and horizons[-1] == 10.01 and len(horizons) < 5
    assert stages[-1][2] <= 2                             # Jacobians of the window's stage
    # the same stage from the same start, damped at Marquardt's default
    prob.n_frames = int(round(horizons[-2] / 0.01))
    start, _, _, _, _ = fit_growing_horizon(prob, x0, lo, hi, prob.n_frames, 2.0, 0.01,
                                            fc.INTERMEDIATE_FTOL, 100)
    prob.n_frames = T.size
    x_damped, _, njev, _ = fc.solve_bounded(prob, start, lo, hi, 1e-12, 100, lam0=1e-3)
    assert njev > stages[-1][2]
    assert np.allclose(x, x_damped, rtol=0, atol=1e-9)
