"""The active relative-motion problem: the platform simulated with the links' measured motion
as a prescribed input (rigtool.engine.prescribed), fitted to the platform's and the base
link's markers; residual rows and their exact Jacobian.

Unknowns ``x = [theta (Phi_B, or the moving links' J_yy), base pose (6, when fitted: dt,
rotation vector about the marker-fitted pose), state (12: p, rotation vector, v, omega of the
platform)]``. The map to the engine's inputs (bodies' parameters, chain offsets, springs, the
markers' platform-frame coordinates, initial state) is rigtool.identify.relative.input_map's
active map, with its exact Jacobian (complex step) with respect to ``x``, Phi_s (``jyy``
mode) and the calibration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.engine import prescribed as ep
from rigtool.engine.rigid import RigidModel
from rigtool.identify.relative.fit_common import PriorRowsFit
from rigtool.identify.relative.input_map import (ActiveMapConstants, active_map,
                                                 active_map_jacobian)
from rigtool.identify.relative.streamed_rows import RowAccumulator
from rigtool.rig import Rig

#: frames per chunk of marker rows when the Jacobian is streamed
STREAM_FRAMES = 128


@dataclass
class ActiveProblem(PriorRowsFit):
    """Residuals and exact Jacobian of the active fit (see the module docstring)."""

    rig: Rig
    platform_pi: np.ndarray
    roots: list[int]                        # per moving link: its chain's child of the base
    joint_centres: np.ndarray               # [n, 3]
    r_pb: np.ndarray
    t_pb: np.ndarray
    mass_kg: float
    markers_body: np.ndarray                # [K, 3]: platform markers, then base markers
    on_base: np.ndarray                     # [K]
    measured: np.ndarray                    # [T, K, 3] (0 where masked)
    mask: np.ndarray                        # [T, K]
    u_grid: np.ndarray                      # [2 substeps (T - 1) + 1, L, 24]
    dt: float
    substeps: int
    rot_ref: np.ndarray                     # platform rotation at frame 0 (reference)
    free: str
    phi_s: np.ndarray
    theta_fixed: np.ndarray                 # [theta, base] when not fitted
    fit_base: bool = True
    prior_rows: np.ndarray | None = None
    prior_rhs: np.ndarray | None = None
    n_frames: int = 0
    fit_params: bool = True
    cache: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.model = RigidModel.of(self.rig)
        self._consts = self.map_constants()

    @property
    def n(self) -> int:
        return len(self.joint_centres)

    @property
    def n_params(self) -> int:
        return self.n_theta + (6 if self.fit_base else 0)

    def split(self, x: np.ndarray):
        """``(theta, state, base)`` of an unknown vector (the held values when not fitted)."""
        params = x[:self.n_params] if self.fit_params else self.theta_fixed
        st = x[self.n_params:] if self.fit_params else x
        return params[:self.n_theta], st, params[self.n_theta:]

    # ---------------------------------------------------------------- the map
    def map_constants(self) -> ActiveMapConstants:
        """What the input map holds fixed (rigtool.identify.relative.input_map)."""
        return ActiveMapConstants(self.n, self.n_theta, self.fit_base, self.free,
                                  np.asarray(self.r_pb, float), np.asarray(self.t_pb, float),
                                  np.asarray(self.joint_centres, float), tuple(self.roots),
                                  np.asarray(self.markers_body, float),
                                  np.asarray(self.on_base, bool),
                                  np.asarray(self.rot_ref, float), float(self.mass_kg),
                                  len(self.rig.springs))

    # ---------------------------------------------------------------- evaluation
    def _full(self, x: np.ndarray) -> np.ndarray:
        return x if self.fit_params else np.concatenate([self.theta_fixed, x])

    def _inputs(self, full, phi_s=None, calib=None):
        return active_map(self._consts, full, self.phi_s if phi_s is None else phi_s,
                          self.calib_vector(calib))

    def simulate(self, full: np.ndarray, u_grid: np.ndarray | None = None,
                 n_frames: int | None = None):
        """Platform states ``[T, 18]`` and the markers' platform-frame coordinates."""
        theta_e, y0, mk = self._inputs(full)
        nf = self.n_frames if n_frames is None else n_frames
        u = self.u_grid if u_grid is None else u_grid
        states, _ = ep.simulate(self.model, theta_e, y0, u[:2 * self.substeps * (nf - 1) + 1],
                                self.dt, substeps=self.substeps)
        return states, mk

    def rows(self, states: np.ndarray, mk: np.ndarray, tangents=None, d_mk=None,
             k0: int = 0):
        """Marker rows (mm) and, with tangents, their Jacobian ``[M, P]`` (``states`` the
        frames from ``k0`` on)."""
        t_n = states.shape[0]
        m = self.mask[k0:k0 + t_n]
        rot = states[:, 3:12].reshape(t_n, 3, 3)
        pred = np.einsum("tij,kj->tki", rot, mk) + states[:, None, 0:3]
        r = 1e3 * (pred - self.measured[k0:k0 + t_n])[m].ravel()
        if tangents is None:
            return r, None
        p_n = tangents.shape[2]
        t_idx, k_idx = np.nonzero(m)
        d_rot = tangents[t_idx, 3:12, :].reshape(-1, 3, 3, p_n)
        jac = (np.einsum("nijp,nj->nip", d_rot, mk[k_idx]) + tangents[t_idx, 0:3, :]
               + np.einsum("nij,njp->nip", rot[t_idx], d_mk[k_idx]))
        return r, 1e3 * jac.reshape(-1, p_n)

    def _directions(self, full: np.ndarray, wrt: int):
        return active_map_jacobian(self._consts, full, self.phi_s, self.calib_vector(), wrt)

    def _rows_along(self, full: np.ndarray, d_th, d_y, d_mk):
        theta_e, y0, mk = self._inputs(full)
        states, tan = ep.simulate(self.model, theta_e, y0,
                                  self.u_grid[:2 * self.substeps * (self.n_frames - 1) + 1],
                                  self.dt, substeps=self.substeps, tangent_theta=d_th,
                                  tangent_y0=d_y)
        return self.rows(states, mk, tan, d_mk)

    def _marker_rows(self, full: np.ndarray, columns: slice = slice(None)):
        """Marker rows and their Jacobian along the unknowns ``columns`` of ``full`` (all of
        the unknowns)."""
        d_th, d_y, d_mk = self._directions(full, 0)
        return self._rows_along(full, d_th[:, columns], d_y[:, columns], d_mk[..., columns])

    def _stream_along(self, full: np.ndarray, d_th, d_y, d_mk, stride: int,
                      data: np.ndarray | None = None) -> RowAccumulator:
        """The rows' normal equations along the directions, summed over chunks of
        :data:`STREAM_FRAMES` frames (the platform's state tangents, 18 per frame, are held;
        the marker rows' Jacobian never is), every ``stride``-th frame's rows held."""
        theta_e, y0, mk = self._inputs(full)
        states, tan = ep.simulate(self.model, theta_e, y0,
                                  self.u_grid[:2 * self.substeps * (self.n_frames - 1) + 1],
                                  self.dt, substeps=self.substeps, tangent_theta=d_th,
                                  tangent_y0=d_y)
        acc = RowAccumulator(d_th.shape[1], stride, data)
        for k0 in range(0, states.shape[0], STREAM_FRAMES):
            k1 = min(k0 + STREAM_FRAMES, states.shape[0])
            r, jac = self.rows(states[k0:k1], mk, tan[k0:k1], d_mk, k0)
            acc.add(r, jac, np.repeat(k0 + np.nonzero(self.mask[k0:k1])[0], 3))
        return acc

    def _marker_stream_along(self, full: np.ndarray, columns: slice, stride: int):
        """Rows and :class:`StreamedRows` along the unknowns ``columns`` of ``full``."""
        d_th, d_y, d_mk = self._directions(full, 0)
        return self._stream_along(full, d_th[:, columns], d_y[:, columns],
                                  d_mk[..., columns], stride).result()

    def _unknown_directions(self, full: np.ndarray):
        d_th, d_y, d_mk = self._directions(full, 0)
        cols = self.free_columns
        return d_th[:, cols], d_y[:, cols], d_mk[..., cols]

    def cross_gram(self, x: np.ndarray, need_s: bool, members: list,
                   data: np.ndarray | None = None) -> tuple:
        """``([J | A_s | A_cal]^T [J | A_s | A_cal], width of A_s)`` over the marker rows,
        streamed (rigtool.identify.relative.streamed_rows.marker_cross_products), and with
        ``data [M, q]`` also ``[J | A_s | A_cal]^T data`` from the same run."""
        full = self._full(x)
        parts = [self._unknown_directions(full)]
        n_s = 0
        if need_s:
            parts.append(self._directions(full, 1))
            n_s = parts[-1][0].shape[1]
        if members:
            d_th, d_y, d_mk = self._directions(full, 2)
            delta = self.member_deltas(members)
            parts.append((d_th @ delta, d_y @ delta, np.einsum("kic,cm->kim", d_mk, delta)))
        d_th, d_y, d_mk = (np.concatenate([p[i] for p in parts], axis=-1) for i in range(3))
        acc = self._stream_along(full, d_th, d_y, d_mk, 0, data)
        return (acc.gram, n_s) if data is None else (acc.gram, n_s, acc.jt_data)

    def _marker_residual(self, full: np.ndarray) -> np.ndarray:
        """Marker rows alone (one simulation without sensitivities)."""
        return self.rows(*self.simulate(full))[0]

    def phi_s_jacobian(self, x: np.ndarray) -> np.ndarray:
        """``[M, 8n+1]``: the marker rows' derivative with respect to Phi_s."""
        full = self._full(x)
        return self._rows_along(full, *self._directions(full, 1))[1]

    def calibration_jacobian(self, x: np.ndarray, members: list) -> np.ndarray | None:
        """``[M, C]``: the marker rows' change per calibration member (first order)."""
        if not members:
            return None
        full = self._full(x)
        d_th, d_y, d_mk = self._directions(full, 2)
        delta = self.member_deltas(members)
        return self._rows_along(full, d_th @ delta, d_y @ delta,
                                np.einsum("kic,cm->kim", d_mk, delta))[1]


__all__ = ["ActiveProblem"]
