"""The relative refinements' shared fit machinery (rigtool.identify.relative.fit_common) on a
toy problem: the residual cache and the growing-horizon schedule."""

import numpy as np

from rigtool.identify.relative.fit_common import PriorRowsFit, fit_growing_horizon

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
