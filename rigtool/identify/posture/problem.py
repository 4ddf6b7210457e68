"""The locked-posture output-error problem on the engine.

Unknowns ``x = [z (9) if the object is fitted] + state (12) + [damping scale]``: the object's
COM and the log-Cholesky factor of its COM-centred second moment (every value a physically
consistent body), the platform's state at the window's first frame (position, rotation vector
about the marker-fitted pose, velocity, angular velocity) and optionally one scale on every
spring's damping. :class:`PostureProblem` maps them to the engine's inputs with their exact
Jacobians (rigtool.engine.params) and evaluates the cost and the normal equations chunk by
chunk over the frames (rigtool.engine.rigid's ``consume``), so memory does not grow with the
capture's length. The object's other markers, rigidly attached to the platform at unknown
places, are eliminated by variable projection (rigtool.identify.posture.attached_markers).
With ``whiten`` (per marker and frame, rigtool.engine.whiten) every row is whitened by its
marker's noise covariance (maximum likelihood for anisotropic noise, a camera's); without it
the rows are the residuals in mm, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from rigtool.engine.capture import RigidCapture
from rigtool.engine.lm import Normal
from rigtool.engine.markers import marker_rows
from rigtool.engine.params import body_params, initial_state
from rigtool.engine.rigid import STATE, RigidModel, simulate, theta_of
from rigtool.engine.lab_frame import framed_rows
from rigtool.engine.whiten import whiten_rows
from rigtool.identify.posture.cluster_covariance import frame_sums, position_scores
from rigtool.identify.posture.attached_markers import (joint_information, nuisance_products,
                                               placed_positions, pose_columns,
                                               position_information, position_products)
from rigtool.rig import Rig

_TRIL = np.tril_indices(3)
_DIAG6 = np.flatnonzero(_TRIL[0] == _TRIL[1])
#: A trial step above this log of a Cholesky diagonal (second moments of e^600 kg m^2) is
#: refused as an infinite cost before it is simulated: the search along a direction the
#: log-Cholesky map makes flat (a body next to the consistency boundary) would otherwise
#: overflow ``exp`` on the way to being refused.
LOG_DIAGONAL_LIMIT = 300.0


def object_to_z(com_m: np.ndarray, inertia_com: np.ndarray, *,
                floor: float = 1e-6) -> np.ndarray:
    """``[c (3), log-Cholesky of Sigma_c (6)]`` from a COM and an inertia about it.

    A start that is not physically consistent is moved to the nearest consistent one
    (eigenvalues of ``Sigma_c`` clipped to ``floor`` times the largest). A start that is
    consistent but next to singular sits where the log-Cholesky parameters have almost no
    gradient along that axis; a fit's start may raise ``floor`` to keep off it (the
    calibration's platform start: rigtool.identify.calibration.output_error).
    """
    i_c = 0.5 * (np.asarray(inertia_com, float) + np.asarray(inertia_com, float).T)
    sigma = 0.5 * np.trace(i_c) * np.eye(3) - i_c
    ev, vec = np.linalg.eigh(sigma)
    ev = np.maximum(ev, floor * max(ev[-1], 1e-12))
    chol = np.linalg.cholesky((vec * ev) @ vec.T)
    low = chol[_TRIL].copy()
    diag = _TRIL[0] == _TRIL[1]
    low[diag] = np.log(low[diag])
    return np.concatenate([np.asarray(com_m, float), low])


def z_to_params(z: np.ndarray, mass_kg: float) -> np.ndarray:
    """Standard parameters ``pi [10]`` (about the base-link origin) of ``z [9]``."""
    com = z[:3]
    low = np.zeros((3, 3))
    vals = z[3:9].copy()
    diag = _TRIL[0] == _TRIL[1]
    vals[diag] = np.exp(vals[diag])
    low[_TRIL] = vals
    sigma = low @ low.T
    i_o = (np.trace(sigma) * np.eye(3) - sigma
           + mass_kg * (com @ com * np.eye(3) - np.outer(com, com)))
    return np.array([mass_kg, *(mass_kg * com), i_o[0, 0], i_o[0, 1], i_o[0, 2], i_o[1, 1],
                     i_o[1, 2], i_o[2, 2]])


@dataclass
class PostureProblem:
    """One capture's posture fit on the engine: its cost, its normal equations streamed over
    the frames (:meth:`normal`, what the fit uses) and, for small problems, the whole exact
    Jacobian (:meth:`jacobian`, what the Cramer-Rao bound uses).

    Unknowns ``x = [z_obj (9) if fit_object] + state (12) + [damping scale]``; the engine's
    inputs are ``theta = [platform + tmat pi(z_obj), k, k L0, scale c]`` and ``y0`` of the
    state about ``rot_ref``, each with its exact Jacobian (rigtool.engine.params), so the
    Jacobian of the marker rows is exact (forward-mode through the integrator).
    """

    rig: Rig
    platform_pi: np.ndarray
    tmat: np.ndarray
    mass_kg: float
    markers_body: np.ndarray                # [K, 3]
    measured: np.ndarray                    # [T, K, 3] m, window frames
    mask: np.ndarray                        # [T, K] marker seen and used
    dt: float
    rot_ref: np.ndarray
    substeps: int
    z_obj: np.ndarray                       # fixed object unknowns when not fitted
    nuisance: str
    n_frames: int = 0                       # current horizon
    fit_object: bool = True
    cache: dict = field(default_factory=dict)
    #: the last cost evaluation's simulated states, by (frames, theta, y0) bytes
    last_primal: dict = field(default_factory=dict)
    # markers attached to the platform at unknown places (the last E of markers_body): when
    # ``project`` is on, each trajectory places them at their maximum-likelihood positions
    # (variable projection) and the normal equations are reduced by their columns (the
    # Schur complement: the joint maximum-likelihood estimate's stationary point); off,
    # markers_body holds them
    attached_xyz: np.ndarray | None = None  # [T, E, 3] m (0 where unseen)
    attached_seen: np.ndarray | None = None  # [T, E]
    base_defs: np.ndarray | None = None     # [n_b, 3] base-link coordinates of the first n_b
    project: bool = False
    n_attached: int = 0                     # attached markers at the end of markers_body
    # whitening factors L^-1 (1/mm) of each marker's noise covariance [T, K, 3, 3] (zero
    # where unseen); None: isotropic noise, rows in mm
    whiten: np.ndarray | None = None
    # a fixed correction of the simulated states [T, 18] (the integrator's error at the
    # converged estimate, rigtool.identify.common.output_error.integrator_offset); whoever
    # sets it clears ``cache`` and ``last_primal``
    state_offset: np.ndarray | None = None
    # the measured breath (rigtool.identify.posture.breathing): ``breath_at(t) -> (u, u',
    # u'')`` with ``t`` in the capture's time, the window's first frame at ``t0_s``; its
    # unknowns ``beta`` (12k) come last in ``x`` and are held at ``beta0`` with the object
    breath_at: object | None = None
    n_breath: int = 0
    t0_s: float = 0.0
    beta0: np.ndarray | None = None
    # the object's columns with respect to its standard parameters ``pi[1:]`` (fit frame, the
    # mass held) instead of ``z``: the coordinates of the covariance and of the step off the
    # consistency boundary, where the log-Cholesky map's Jacobian vanishes and ``z``'s
    # columns with it (whoever sets it resets it)
    physical_columns: bool = False
    _inputs_cache: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.model = RigidModel.of(self.rig)

    @property
    def n_beta(self) -> int:
        """Unknowns of the breath's model (``G``, ``K``, ``D``; 0 without a breath)."""
        return 12 * self.n_breath if self.breath_at is not None else 0

    def _full(self, x: np.ndarray) -> np.ndarray:
        """``x`` with the held object (and breath) in: every unknown the engine takes."""
        if self.fit_object:
            return x
        parts = [self.z_obj, x] + ([self.beta0] if self.n_beta else [])
        return np.concatenate(parts)

    def beta(self, x: np.ndarray) -> np.ndarray:
        """The breath's unknowns at ``x`` (empty without a breath)."""
        if not self.n_beta:
            return np.zeros(0)
        return x[x.size - self.n_beta:] if self.fit_object else self.beta0

    def breath_inputs(self, substeps: int) -> np.ndarray:
        """The engine's breath input on the whole window for ``substeps`` (cached)."""
        from rigtool.engine.internal import input_grid
        key = (substeps, self.measured.shape[0])
        if key not in self._inputs_cache:
            self._inputs_cache[key] = input_grid(self.breath_at, self.t0_s,
                                                 self.measured.shape[0], self.dt, substeps)
        return self._inputs_cache[key]

    def simulate(self, theta: np.ndarray, y0: np.ndarray, n_frames: int, *,
                 substeps: int | None = None, **kw):
        """The engine's simulation of this problem (the rigid one, or with the breath's
        prescribed input): ``rigtool.engine.rigid.simulate``'s arguments and returns."""
        substeps = self.substeps if substeps is None else substeps
        if not self.n_beta:
            return simulate(self.model, theta, y0, n_frames, self.dt, substeps=substeps, **kw)
        from rigtool.engine.internal import simulate as simulate_internal
        return simulate_internal(self.model, theta, y0, n_frames, self.dt, substeps=substeps,
                                 inputs=self.breath_inputs(substeps), **kw)

    def split(self, x: np.ndarray):
        i = 0
        z_obj = self.z_obj
        if self.fit_object:
            z_obj, i = x[:9], 9
        state = x[i:i + 12]
        scale = x[i + 12] if self.nuisance == "damping-scale" else 1.0
        return z_obj, state, scale

    def inputs(self, x: np.ndarray, calib: tuple | None = None):
        """``(theta, d theta/dx, y0, d y0/dx)`` at ``x``; ``calib = (platform_pi, k, L0,
        c)`` replaces the rig's calibration."""
        z_obj, st, scale = self.split(x)
        plat, k, l0, c = (self.platform_pi, self.rig.stiffness, self.rig.free_length,
                          self.rig.damping) if calib is None else calib
        pi_obj, dpi_dz, _ = body_params(z_obj, self.mass_kg)
        theta = theta_of(plat + self.tmat @ pi_obj, k, l0, scale * np.asarray(c, float))
        n_rigid = theta.size
        if self.n_beta:
            theta = np.concatenate([theta, self.beta(x)])
        n = x.size
        d_theta = np.zeros((theta.size, n))
        i = 0
        if self.fit_object:
            d_theta[:10, :9] = self.tmat[:, 1:] if self.physical_columns else self.tmat @ dpi_dz
            i = 9
        y0, dy0_ds = initial_state(st, self.rot_ref)
        d_y0 = np.zeros((STATE, n))
        d_y0[:, i:i + 12] = dy0_ds
        if self.nuisance == "damping-scale":
            s_n = len(self.rig.springs)
            d_theta[10 + 2 * s_n:n_rigid, i + 12] = c
        if self.n_beta and self.fit_object:
            d_theta[n_rigid:, n - self.n_beta:] = np.eye(self.n_beta)
        return theta, d_theta, y0, d_y0

    def capture(self) -> RigidCapture:
        return RigidCapture(self.model, self.measured, self.mask, self.dt, self.substeps,
                            self.n_frames, whiten=self.whiten, offset=self.state_offset,
                            simulator=self.simulate if self.n_beta else None)

    def _placed(self, states: np.ndarray) -> np.ndarray:
        """Markers ``[K, 3]`` with the attached ones at their best places on ``states``."""
        t_n = states.shape[0]
        rot = states[:, 3:12].reshape(t_n, 1, 3, 3)
        body = self.markers_body.copy()
        e_n = self.attached_xyz.shape[1]
        w_att = None if self.whiten is None else self.whiten[:t_n, -e_n:]
        body[-e_n:] = placed_positions(rot, states[:, None, 0:3], self.attached_xyz[:t_n],
                                       self.attached_seen[:t_n], self.base_defs, w_att)[0]
        return body

    def _eval(self, x: np.ndarray):
        key = (self.n_frames, self.project, self.markers_body.shape[0], x.tobytes())
        if key not in self.cache:
            # the object's columns are always carried (one compiled width serves every stage)
            # and dropped when the object is held
            full = self._full(x)
            fit_object, self.fit_object = self.fit_object, True
            try:
                theta, d_theta, y0, d_y0 = self.inputs(full)
            finally:
                self.fit_object = fit_object
            out = self.capture().rows(theta, y0, self.markers_body, tangent_theta=d_theta,
                                      tangent_y0=d_y0)
            if not fit_object and out.jac is not None:
                out.jac = out.jac[:, 9:9 + x.size]
            self.cache = {key: out}
        return self.cache[key]

    def states(self, x: np.ndarray, calib: tuple | None = None) -> np.ndarray:
        """Simulated platform states ``[T, 18]`` at ``x`` (a calibration ``calib`` as in
        :meth:`inputs`)."""
        theta, _, y0, _ = self.inputs(x, calib)
        return self._primal_states(theta, y0)

    def states_with_breaths(self, x: np.ndarray, breaths: list) -> np.ndarray:
        """Simulated platform states ``[T, 18, B]`` at ``x`` on the current horizon with
        other measurements of the breath, each an ``at(t)`` as :attr:`breath_at` (a breath's
        noise probes), integrated together."""
        from rigtool.engine.internal import input_grid, simulate_inputs
        theta, _, y0, _ = self.inputs(x)
        grids = np.stack([input_grid(at, self.t0_s, self.n_frames, self.dt, self.substeps)
                          for at in breaths])
        states = simulate_inputs(self.model, theta, y0, self.n_frames, self.dt,
                                 inputs=grids, substeps=self.substeps,
                                 offset=self.state_offset)
        return np.moveaxis(states, 0, 2)

    def _primal_key(self, theta: np.ndarray, y0: np.ndarray) -> tuple:
        """Everything a primal simulation on the current horizon depends on that changes."""
        return (self.n_frames, theta.tobytes(), y0.tobytes())

    def _primal_states(self, theta: np.ndarray, y0: np.ndarray) -> np.ndarray:
        """Simulated states ``[T, 18]`` of these inputs on the current horizon: the last cost
        evaluation's when it simulated the same inputs."""
        hit = self.last_primal.get(self._primal_key(theta, y0))
        if hit is not None:
            return hit
        return self.simulate(theta, y0, self.n_frames, offset=self.state_offset)[0]

    def trajectory(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The platform's simulated rotation ``[T, 3, 3]`` and position ``[T, 3]`` at ``x``
        on the current horizon (the last evaluation's when it was at ``x``)."""
        key = (self.n_frames, self.project, self.markers_body.shape[0], x.tobytes())
        out = self.cache.get(key)
        st = out.states if out is not None and out.ok else self.states(x)
        return st[:, 3:12].reshape(-1, 3, 3), st[:, :3]

    # ------------------------------------------------------------ streaming (bounded memory)
    def _nuisance(self, states: np.ndarray):
        """``(n_base, pose_cols)`` of the attached markers at ``states`` (placed)."""
        n_b = 0 if self.base_defs is None else len(self.base_defs)
        if not n_b:
            return 0, None
        e_n = self.n_attached
        body = self._placed(states) if self.project else self.markers_body
        _, r_b = _cluster_pose(body[-e_n:][:n_b], self.base_defs)
        return n_b, pose_columns(self.base_defs, r_b)

    def cost(self, x: np.ndarray) -> float:
        """``r^T r`` (mm^2) at ``x`` from one primal simulation (inf where the motion leaves
        the model, or where a trial step takes the object's log-Cholesky diagonal above
        :data:`LOG_DIAGONAL_LIMIT`)."""
        full = self._full(x)
        if full[3:9][_DIAG6].max() > LOG_DIAGONAL_LIMIT:
            return np.inf
        fit_object, self.fit_object = self.fit_object, True
        try:
            theta, _, y0, _ = self.inputs(full)
        finally:
            self.fit_object = fit_object
        out = self.capture().rows(theta, y0, self.markers_body,
                                  markers_of_states=self._placed if self.project else None)
        if out.ok:
            # an accepted trial point's normal equations (and the markers' placement after a
            # stage) follow at the same inputs
            self.last_primal = {self._primal_key(theta, y0): out.states}
        return float(out.r @ out.r) if out.ok else np.inf

    def normal(self, x: np.ndarray, *, extra_theta: np.ndarray | None = None,
               scores: bool = False, frame_columns: bool = False,
               extra_states: np.ndarray | None = None) -> "PostureNormal":
        """Cost and normal equations at ``x`` on the current horizon, accumulated chunk by
        chunk (nothing of size frames x unknowns is kept, but for ``scores``; nothing of size
        frames x markers x unknowns ever). With attached markers their
        products with the Jacobian are accumulated too; with ``project`` the normal
        equations are reduced by them (the Schur complement of the joint problem: what
        Kaufman's projected Jacobian gives). ``extra_theta [n_theta, C]``: more directions
        (calibration members), carried as extra columns. ``scores``: keep each frame's
        score ``J_t^T r_t`` (``[T, n]``) and the attached markers' (``[T, E, 3]``) for a
        cluster-robust covariance (rigtool.identify.posture.cluster_covariance).
        ``frame_columns``: six more columns last, the rows' change when the whole rig moves
        by ``x -> exp([r]x) x + t`` (a calibrated lab frame's uncertainty,
        rigtool.engine.lab_frame); closed form on the predicted markers.
        ``extra_states [T, 18, P]``: more columns after ``extra_theta``'s, each the rows'
        change (first order) when the simulated states change by that much (a breath's
        noise probes, :meth:`states_with_breaths`)."""
        full = self._full(x)
        fit_object, self.fit_object = self.fit_object, True
        try:
            theta, d_theta, y0, d_y0 = self.inputs(full)
        finally:
            self.fit_object = fit_object
        keep = np.arange(d_theta.shape[1]) if fit_object else np.arange(9, 9 + x.size)
        if extra_theta is not None:
            keep = np.concatenate([keep, d_theta.shape[1] + np.arange(extra_theta.shape[1])])
            d_theta = np.hstack([d_theta, extra_theta])
            d_y0 = np.hstack([d_y0, np.zeros((STATE, extra_theta.shape[1]))])
        if extra_states is not None:
            keep = np.concatenate([keep, d_theta.shape[1] + np.arange(extra_states.shape[2])])
        body = self.markers_body
        if self.project:
            # the markers are placed from the whole horizon's motion before any row is formed
            body = self._placed(self._primal_states(theta, y0))
        n_c = keep.size + (6 if frame_columns else 0)
        e_n = self.n_attached
        k_n = self.mask.shape[1]
        att = np.arange(k_n - e_n, k_n)
        acc = {"jtj": np.zeros((n_c, n_c)), "jtr": np.zeros(n_c), "cost": 0.0,
               "prods": np.zeros((e_n, 3, n_c)), "prods_r": np.zeros((e_n, 3)),
               "ss": np.zeros(self.n_frames), "cost_mm": 0.0, "info_k": np.zeros((e_n, 3, 3))}
        if scores:
            acc["scores"] = np.zeros((self.n_frames, n_c))
            acc["scores_att"] = np.zeros((self.n_frames, e_n, 3))

        def consume(k0, st, tan):
            m = st.shape[0]
            mask_c = self.mask[k0:k0 + m]
            if extra_states is not None:
                tan = np.concatenate([tan, extra_states[k0:k0 + m]], axis=2)
            r, jac = marker_rows(st, tan, body, self.measured[k0:k0 + m], mask_c)
            jac = jac[:, keep]
            if frame_columns:
                meas = self.measured[k0:k0 + m][mask_c].ravel()
                jac = np.hstack([jac, framed_rows(r, None, meas, np.zeros(6),
                                                  frame_columns=True)[1]])
            res = np.zeros(mask_c.shape + (3,))
            res[mask_c] = r.reshape(-1, 3)
            acc["ss"][k0:k0 + m] = (res ** 2).sum((1, 2))
            w_c = None
            if self.whiten is not None:
                acc["cost_mm"] += float(r @ r)
                w_c = self.whiten[k0:k0 + m]
                r, jac = whiten_rows(w_c[mask_c], r, jac)
            acc["jtj"] += jac.T @ jac
            acc["jtr"] += jac.T @ r
            acc["cost"] += float(r @ r)
            if scores:
                acc["scores"][k0:k0 + m] = frame_sums(jac * r[:, None], mask_c)
                if e_n:
                    acc["scores_att"][k0:k0 + m] = position_scores(
                        r, mask_c, st[:, 3:12].reshape(m, 3, 3), att, w_c)
            if e_n:
                rot_c = st[:, 3:12].reshape(m, 3, 3)
                acc["prods"] += position_products(jac, mask_c, rot_c, att, w_c)
                acc["prods_r"] += position_products(r[:, None], mask_c, rot_c, att,
                                                    w_c)[..., 0]
                if w_c is not None:
                    acc["info_k"] += position_information(mask_c, rot_c, att, w_c)

        try:
            states, _ = self.simulate(theta, y0, self.n_frames, tangent_theta=d_theta,
                                      tangent_y0=d_y0, consume=consume,
                                      offset=self.state_offset)
        except (FloatingPointError, np.linalg.LinAlgError):
            return PostureNormal(np.inf, np.eye(n_c), np.zeros(n_c), np.eye(n_c),
                                  np.zeros(n_c), None, None, None, None, 0)
        n_seen = self.mask[:self.n_frames][:, att].sum(0) if e_n else None
        if e_n and self.whiten is not None:
            n_seen = acc["info_k"]              # each marker's information, [E, 3, 3]
        jtj, jtr = acc["jtj"], acc["jtr"]
        jtj_red, jtr_red = jtj, jtr
        if e_n:
            n_base, pose_cols = self._nuisance(states)
            info = joint_information(jtj, acc["prods"], n_seen, n_base, pose_cols)
            g_nuis = nuisance_products(acc["prods_r"][..., None], n_base, pose_cols)[:, 0]
            if self.project:
                x_n = info[:n_c, n_c:]
                nn = info[n_c:, n_c:]
                jtj_red = jtj - x_n @ np.linalg.solve(nn, x_n.T)
                jtr_red = jtr - x_n @ np.linalg.solve(nn, g_nuis)
        return PostureNormal(acc["cost"], jtj_red, jtr_red, jtj, jtr, acc["prods"],
                              n_seen, acc["ss"], states,
                              int(self.mask[:self.n_frames].sum()) * 3,
                              acc["cost"] if self.whiten is None else acc["cost_mm"],
                              acc.get("scores"), acc.get("scores_att"))

    def residual(self, x: np.ndarray) -> np.ndarray:
        return self._eval(x).r

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        out = self._eval(x)
        return out.jac if out.jac is not None else np.zeros((out.r.size, x.size))


def _cluster_pose(placed_base: np.ndarray, defs: np.ndarray):
    """``(t, R)``: the rigid map of the base-link coordinates ``defs`` onto their placed
    positions (exact: the places are that map's image)."""
    c_d, c_p = defs.mean(0), placed_base.mean(0)
    u, _, vt = np.linalg.svd((placed_base - c_p).T @ (defs - c_d))
    rot = u @ np.diag([1.0, 1.0, np.linalg.det(u @ vt)]) @ vt
    return c_p - rot @ c_d, rot


@dataclass(frozen=True)
class PostureNormal:
    """One streaming evaluation of the posture fit: the cost (mm^2), the normal equations
    the solver uses (``jtj``/``jtr``: reduced by the attached markers' places under variable
    projection), the raw ones, the attached markers' products with the Jacobian (``[E, 3,
    n]``), their frames seen (with whitening: their information ``[E, 3, 3]``), the squared
    residual per frame (mm^2, not whitened), the simulated states, the cost in mm^2 (the
    cost itself when the rows are not whitened) and, when asked for, each frame's score of
    the unknowns ``[T, n]`` and of the attached markers' positions ``[T, E, 3]``."""

    cost: float
    jtj: np.ndarray
    jtr: np.ndarray
    jtj_raw: np.ndarray
    jtr_raw: np.ndarray
    prods: np.ndarray | None
    n_seen: np.ndarray | None
    ss_frame: np.ndarray | None
    states: np.ndarray | None
    n_rows: int
    cost_mm2: float = float("nan")
    scores: np.ndarray | None = None
    scores_att: np.ndarray | None = None

    def lm(self) -> Normal:
        return Normal(self.cost, self.jtj, self.jtr)


def fold_frame_columns(ne: PostureNormal, n_x: int, n_members: int,
                       frame_move: np.ndarray) -> PostureNormal:
    """``ne`` of columns ``[x (n_x), members, mass, frame (6)]`` (``normal(extra_theta=...,
    frame_columns=True)``) with each member's column completed by its lab-frame move and the
    frame columns dropped: member ``j`` becomes ``J_theta_j + J_frame frame_move[:, j]``.
    The map is linear in the columns, so every product transforms by it."""
    n_c = ne.jtj_raw.shape[0]
    keep = n_c - frame_move.shape[0]
    t = np.zeros((n_c, keep))
    t[:keep, :keep] = np.eye(keep)
    t[keep:, n_x:n_x + n_members] = frame_move
    prods = None if ne.prods is None else ne.prods @ t
    scores = None if ne.scores is None else ne.scores @ t
    return replace(ne, jtj=t.T @ ne.jtj @ t, jtr=t.T @ ne.jtr, jtj_raw=t.T @ ne.jtj_raw @ t,
                   jtr_raw=t.T @ ne.jtr_raw, prods=prods, scores=scores)


__all__ = ["PostureProblem", "PostureNormal", "fold_frame_columns", "object_to_z", "z_to_params"]
