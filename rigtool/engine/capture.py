"""One capture of a rigid assembly as the output-error fits see it: simulate from an initial
state, predict the markers, return residual rows and their exact Jacobian.

The fits (posture, calibration) only say how their unknowns enter the engine's inputs
(``d theta / d x``, ``d y0 / d x``); everything else, the integration, the sensitivities and
the marker model, is here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.engine.markers import marker_rows
from rigtool.engine.rigid import RigidModel, simulate
from rigtool.engine.whiten import whiten_rows


@dataclass
class CaptureRows:
    """Residual rows of one capture (mm), their Jacobian along the given directions and the
    simulated states (``[T, 18]``) they came from; ``ok`` is False when the simulation left
    the model (then ``r`` is 1e6 everywhere and ``jac`` zero, which a trust-region solver
    rejects)."""

    r: np.ndarray
    jac: np.ndarray | None
    states: np.ndarray | None
    ok: bool = True


@dataclass
class RigidCapture:
    """A capture of the platform (with its locked load) for output-error fitting.

    ``measured_m [T, K, 3]`` (0 where unseen) and ``mask [T, K]`` (seen and used) over the
    analysis window; ``n_frames`` is the current horizon (the first frames fitted);
    ``whiten [T, K, 3, 3]``, when given, the markers' whitening factors (1/mm,
    rigtool.engine.whiten): the rows are then ``L^-1 r`` (maximum likelihood for that
    covariance) instead of ``r`` in mm; ``offset [T, 18]``, when given, a fixed correction
    added to the simulated states (``rigid.simulate(offset=...)``).
    """

    model: RigidModel
    measured_m: np.ndarray
    mask: np.ndarray
    dt: float
    substeps: int = 1
    n_frames: int = 0
    extra: dict = field(default_factory=dict)
    whiten: np.ndarray | None = None
    offset: np.ndarray | None = None
    #: ``simulator(theta, y0, n_frames, substeps=, tangent_theta=, tangent_y0=, offset=)``
    #: instead of the rigid engine's (a load with a prescribed internal motion)
    simulator: object | None = None

    def n_rows(self) -> int:
        """Residual rows on the current horizon."""
        return int(self.mask[:self.n_frames].sum()) * 3

    def rows(self, theta: np.ndarray, y0: np.ndarray, markers_body: np.ndarray, *,
             tangent_theta: np.ndarray | None = None, tangent_y0: np.ndarray | None = None,
             markers_of_states=None) -> CaptureRows:
        """Simulate and compare with the markers.

        ``markers_of_states(states) -> [K, 3]``, when given, places the markers from the
        simulated trajectory (variable projection of markers at unknown places); their
        columns are then handled by the caller.
        """
        try:
            if self.simulator is not None:
                states, tangents = self.simulator(theta, y0, self.n_frames,
                                                  substeps=self.substeps,
                                                  tangent_theta=tangent_theta,
                                                  tangent_y0=tangent_y0, offset=self.offset)
            else:
                states, tangents = simulate(self.model, theta, y0, self.n_frames, self.dt,
                                            substeps=self.substeps,
                                            tangent_theta=tangent_theta,
                                            tangent_y0=tangent_y0, offset=self.offset)
        except (FloatingPointError, np.linalg.LinAlgError):
            p = 0 if tangent_theta is None and tangent_y0 is None else \
                (tangent_theta if tangent_theta is not None else tangent_y0).shape[1]
            n = self.n_rows()
            return CaptureRows(np.full(n, 1e6), np.zeros((n, p)) if p else None, None, False)
        body = markers_body if markers_of_states is None else markers_of_states(states)
        r, jac = marker_rows(states, tangents, body, self.measured_m, self.mask)
        if self.whiten is not None:
            t_n = states.shape[0]
            r, jac = whiten_rows(self.whiten[:t_n][self.mask[:t_n]], r, jac)
        if not np.all(np.isfinite(r)):
            n = r.size
            return CaptureRows(np.full(n, 1e6), None if jac is None else np.zeros_like(jac),
                               None, False)
        return CaptureRows(r, jac, states)


__all__ = ["RigidCapture", "CaptureRows"]
