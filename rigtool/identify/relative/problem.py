"""The relative-motion output-error problem on the engine: unknowns -> engine inputs (with
exact Jacobians), residual rows and their exact Jacobian.

Unknowns ``x = [theta (Phi_B, or the moving links' J_yy), joint damping, base pose (6, when
fitted: dt, rotation vector about the marker-fitted pose), state]`` with the state
``[p, phi_0..phi_{n-1}, v, omega_0..omega_{n-1}]`` (rotation vectors about each body's
reference rotation). The map to the engine's inputs (rigtool.engine.tree: every body's
parameters, joint centres, joint damping, springs, marker coordinates, initial state) is
rigtool.identify.relative.input_map, with its exact Jacobian: with respect to ``x`` for the
fit, to Phi_s for its propagation (``jyy`` mode) and to the calibration for its.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.engine import tree as et
from rigtool.identify.relative.fit_common import PriorRowsFit
from rigtool.identify.relative.input_map import MapConstants, input_map, input_map_jacobian
from rigtool.identify.relative.streamed_rows import RowAccumulator, StreamedRows
from rigtool.rig import Rig


@dataclass
class RelativeProblem(PriorRowsFit):
    """Residuals and exact Jacobian of the swing's fit (see the module docstring)."""

    rig: Rig
    platform_pi: np.ndarray
    parents: list[int]
    joint_centres: np.ndarray
    r_pb: np.ndarray
    t_pb: np.ndarray
    mass_kg: float
    body_of_marker: np.ndarray              # [K]
    markers_body: np.ndarray                # [K, 3] (base markers in the base-link frame)
    on_base: np.ndarray                     # [K] marker of the base link
    measured: np.ndarray                    # [T, K, 3] (0 where masked)
    mask: np.ndarray                        # [T, K]
    dt: float
    substeps: int
    rot_ref: np.ndarray                     # [n, 3, 3] reference rotations at frame 0
    free: str
    n_damp: int
    phi_s: np.ndarray                       # Phi_s (jyy mode: fixed; phi_b mode: the prior)
    theta_fixed: np.ndarray                 # [theta, damping, base] when not fitted
    fit_base: bool = True                   # base pose on the platform among the unknowns
    prior_rows: np.ndarray | None = None    # [8n+1, 9n] sigma C_s^-1/2 S (phi_b mode)
    prior_rhs: np.ndarray | None = None     # sigma C_s^-1/2 Phi_s
    n_frames: int = 0
    fit_params: bool = True
    cache: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.model = et.TreeModel.of(self.rig, self.parents, self.body_of_marker)
        self._consts = self.map_constants()

    @property
    def n(self) -> int:
        return len(self.parents)

    @property
    def n_params(self) -> int:
        return self.n_theta + self.n_damp + (6 if self.fit_base else 0)

    def split(self, x: np.ndarray):
        i = 0
        params = self.theta_fixed
        if self.fit_params:
            i = self.n_params
            params = x[:i]
        k = self.n_theta + self.n_damp
        return params[:self.n_theta], params[self.n_theta:k], x[i:], params[k:k + 6]

    # ---------------------------------------------------------------- the map
    def map_constants(self) -> MapConstants:
        """What the input map holds fixed (rigtool.identify.relative.input_map)."""
        return MapConstants(tuple(self.parents), self.n_theta, self.n_damp, self.fit_base,
                            self.free, np.asarray(self.r_pb, float),
                            np.asarray(self.t_pb, float),
                            np.asarray(self.joint_centres, float),
                            np.asarray(self.markers_body, float),
                            np.asarray(self.on_base, bool), np.asarray(self.rot_ref, float),
                            float(self.mass_kg), len(self.rig.springs))

    # ---------------------------------------------------------------- evaluation
    def _full(self, x: np.ndarray) -> np.ndarray:
        return x if self.fit_params else np.concatenate([self.theta_fixed, x])

    def _simulate(self, full, tangent_theta=None, tangent_y0=None, phi_s=None, calib=None):
        theta_e, y0 = input_map(self._consts, full, self.phi_s if phi_s is None else phi_s,
                                self.calib_vector(calib))
        return et.simulate(self.model, theta_e, y0, self.n_frames,
                           self.dt, substeps=self.substeps, tangent_theta=tangent_theta,
                           tangent_y0=tangent_y0)

    def _rows(self, mks: np.ndarray, d_mks: np.ndarray | None):
        t_n = mks.shape[0]
        m = self.mask[:t_n]
        r = 1e3 * (mks - self.measured[:t_n])[m].ravel()
        jac = None if d_mks is None else 1e3 * d_mks[m].reshape(-1, d_mks.shape[-1])
        return r, jac

    def directions(self, x: np.ndarray):
        """Jacobians of the map at ``x``: ``(dtheta/dx, dy0/dx, dtheta/dPhi_s, dy0/dPhi_s,
        dtheta/dcal, dy0/dcal)`` (``x`` the full unknown vector)."""
        return input_map_jacobian(self._consts, x, self.phi_s, self.calib_vector())

    def _marker_rows(self, full: np.ndarray, columns: slice = slice(None)):
        """Marker rows and their Jacobian along the unknowns ``columns`` of ``full`` (all of
        the unknowns)."""
        d_th, d_y, *_ = self.directions(full)
        _, mks, d_mks = self._simulate(full, d_th[:, columns], d_y[:, columns])
        return self._rows(mks, d_mks)

    def _marker_stream(self, full: np.ndarray, d_theta: np.ndarray, d_y0: np.ndarray,
                       stride: int) -> tuple[np.ndarray, StreamedRows]:
        """Marker rows and their Jacobian's normal equations along ``(d_theta, d_y0)``,
        accumulated chunk by chunk over the frames as the engine integrates them (memory of
        one chunk), with the rows of every ``stride``-th frame held (0: none;
        rigtool.identify.relative.streamed_rows)."""
        n_c = d_theta.shape[1]
        acc = RowAccumulator(n_c, stride)

        def consume(k0, _states, mks, d_mks):
            m = self.mask[k0:k0 + mks.shape[0]]
            r = 1e3 * (mks - self.measured[k0:k0 + mks.shape[0]])[m].ravel()
            acc.add(r, 1e3 * d_mks[m].reshape(-1, n_c), np.repeat(k0 + np.nonzero(m)[0], 3))

        theta_e, y0 = input_map(self._consts, full, self.phi_s, self.calib_vector())
        et.simulate(self.model, theta_e, y0, self.n_frames, self.dt,
                    substeps=self.substeps, tangent_theta=d_theta, tangent_y0=d_y0,
                    consume=consume)
        return acc.result()

    def _marker_stream_along(self, full: np.ndarray, columns: slice, stride: int):
        """:meth:`_marker_stream` along the unknowns ``columns`` of ``full``."""
        d_th, d_y, *_ = self.directions(full)
        return self._marker_stream(full, d_th[:, columns], d_y[:, columns], stride)

    def cross_gram(self, x: np.ndarray, need_s: bool, members: list
                   ) -> tuple[np.ndarray, int]:
        """``([J | A_s | A_cal]^T [J | A_s | A_cal], width of A_s)`` over the marker rows,
        streamed: ``J`` the unknowns' Jacobian, ``A_s`` the rows' derivative along Phi_s
        (when ``need_s``), ``A_cal`` their change per calibration member (the covariance's
        products ``J^T A`` without holding either)."""
        full = self._full(x)
        d_th, d_y, d_th_s, d_y_s, d_th_c, d_y_c = self.directions(full)
        cols = self.free_columns
        ths, ys = [d_th[:, cols]], [d_y[:, cols]]
        if need_s:
            ths.append(d_th_s)
            ys.append(d_y_s)
        if members:
            delta = self.member_deltas(members)
            ths.append(d_th_c @ delta)
            ys.append(d_y_c @ delta)
        gram = self._marker_stream(full, np.hstack(ths), np.hstack(ys), 0)[1].jtj
        return gram, d_th_s.shape[1] if need_s else 0

    def _marker_residual(self, full: np.ndarray) -> np.ndarray:
        """Marker rows alone (one simulation without sensitivities)."""
        _, mks, _ = self._simulate(full)
        return self._rows(mks, None)[0]

    def marker_jacobian(self, x: np.ndarray, d_theta: np.ndarray, d_y0: np.ndarray
                        ) -> np.ndarray:
        """``[M, C]``: the marker rows' derivative along given input directions (for Phi_s
        and calibration propagation)."""
        _, mks, d_mks = self._simulate(self._full(x), d_theta, d_y0)
        return self._rows(mks, d_mks)[1]

    def phi_s_jacobian(self, x: np.ndarray) -> np.ndarray:
        """``[M, 8n+1]``: marker rows' derivative with respect to Phi_s (``jyy`` mode)."""
        _, _, d_th, d_y, _, _ = self.directions(self._full(x))
        return self.marker_jacobian(x, d_th, d_y)

    def calibration_jacobian(self, x: np.ndarray, members: list) -> np.ndarray | None:
        """``[M, C]``: marker rows' change per calibration member (exact first order along
        ``member - nominal``)."""
        if not members:
            return None
        *_, d_th, d_y = self.directions(self._full(x))
        delta = self.member_deltas(members)
        return self.marker_jacobian(x, d_th @ delta, d_y @ delta)


__all__ = ["RelativeProblem"]
