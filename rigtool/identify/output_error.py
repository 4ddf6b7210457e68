"""Output-error (maximum-likelihood) refinement of a locked posture's inertial properties.

The equation-error fit (rigtool.identify.overall) filters the markers and differentiates
them twice, so noise enters its regressors (errors in variables) and the filter shapes the
modes. Here nothing is filtered or differentiated: the rig model (calibrated springs with
their damping, calibrated platform, the object's weighed mass) is *simulated* from an
initial state, the platform's markers are predicted (``x = R m + p``) and the sum of squared
marker residuals is minimised (``scipy.optimize.least_squares``). With white Gaussian marker
noise this is the maximum-likelihood estimate, and the Gauss-Newton covariance scaled by the
residual variance is its standard error.

Unknowns (21, plus optional nuisance):

- the object's COM ``c`` (base-link frame, 3) and the log-Cholesky factor of its COM-centred
  second moment ``Sigma_c = L L^T`` (6; ``I_c = tr(Sigma_c) 1 - Sigma_c``). Every value of
  these is a physically consistent body (pseudo-inertia positive definite), so the
  simulation never sees an impossible body and no projection is needed;
- the platform's state at the first frame of the window: position, a rotation vector
  relative to the marker-fitted pose, velocity, angular velocity (12, lab);
- optionally one damping scale multiplying every spring's calibrated damping
  (``nuisance="damping-scale"``), for a capture whose decay the calibration misses.

The object's own markers (``base_markers``, ``object_markers``): in a locked posture they
move with the platform, so after the platform-marker fit has converged they join it, their
places on the platform eliminated by variable projection (rigtool.identify.attached_markers)
and the base link's pose on the platform estimated with them (it carries the platform-frame
estimate into the base-link frame, and its uncertainty, a few micrometres, is as large as the
COM's). Measured on the paper-002 session (sigma 0.1 mm, 5 seeds x 3 postures): the errors
sit at the Cramer-Rao bound of that joint problem (RMS ratio 0.6-1.3 per parameter,
benchmarks/crb.py) and the reported standard errors match them; the platform-marker fit alone
is 2x over it on c_z, at about half the time.

Single shooting, with a growing horizon: one simulation from the initial state over the
whole window (the model is deterministic and smooth, and the data are free vibration, so a
single trajectory tracks the capture to the marker noise when the model is right; multiple
shooting would add 12 unknowns per segment and give up the phase information that a long
record carries). A start whose frequencies are off by a fraction of a percent drifts by a
sizeable phase over 25 s, so the fit first matches the initial state on a short horizon and
then lengthens the horizon geometrically, refitting everything, up to the full window.

Evidence for single shooting (paper-002 scenario, 25 s at 120 Hz, sigma 0.1 mm): the marker
residual RMS at the optimum is 0.1003 mm with the true rig and 0.1011 mm with the
equation-error calibration, flat along the capture; a damping-scale nuisance moved the cost
by 3e-5 and the estimate by < 0.1 standard error, so it is off by default.

Jacobian: exact, by forward-mode differentiation through the compiled integrator
(rigtool.engine), computed with the residual and cached. With the object's markers in the fit
their places are eliminated by variable projection and the Jacobian projected off their
columns (Kaufman's form: the same stationary point as the joint problem).

Uncertainty: the Gauss-Newton covariance ``s^2 (J^T J)^-1`` (marker noise, white: right as
it is), plus, when given, the calibration's uncertainty (first-order sensitivity of the
estimate to each calibrated number, or to each principal axis of a full calibration
covariance) and the uncertainty of the base link's pose on the platform (which carries the
platform-frame estimate into the base-link frame). Calibration errors are common to every
capture and dominate once the marker noise is averaged out by the long record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.engine.capture import RigidCapture
from rigtool.engine.lm import Normal, levenberg_marquardt
from rigtool.engine.markers import marker_rows
from rigtool.engine.params import body_params, initial_state
from rigtool.engine.rigid import STATE, RigidModel, simulate, theta_of
from rigtool.errors import ConfigError, InputError
from rigtool.identify.attached_markers import (attached_positions, joint_information,
                                               nuisance_products, placed_positions,
                                               platform_frame_positions, pose_columns,
                                               position_products)
from rigtool.identify.calibration_covariance import (_calibration_table, calibration_members,
                                                     covariance_from_raw)
from rigtool.identify.overall import PostureResult, transform_matrix
from rigtool.identify.propagate import propagate
from rigtool.inertia import InertialParams
from rigtool.kinematics.pose import fit_pose
from rigtool.mocap import MarkerData
from rigtool.rig import Rig

NUISANCE = ("none", "damping-scale")
_TRIL = np.tril_indices(3)
_PERM9 = [0, 1, 2, 3, 6, 8, 7, 5, 4]          # pi[1:] -> [h, J0 xx yy zz yz zx xy]


# --------------------------------------------------------------------------- parameterisation

def object_to_z(com_m: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """``[c (3), log-Cholesky of Sigma_c (6)]`` from a COM and an inertia about it.

    A start that is not physically consistent is moved to the nearest consistent one
    (eigenvalues of ``Sigma_c`` clipped to 1e-6 of the largest).
    """
    i_c = 0.5 * (np.asarray(inertia_com, float) + np.asarray(inertia_com, float).T)
    sigma = 0.5 * np.trace(i_c) * np.eye(3) - i_c
    ev, vec = np.linalg.eigh(sigma)
    ev = np.maximum(ev, 1e-6 * max(ev[-1], 1e-12))
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


# --------------------------------------------------------------------------- result

@dataclass(frozen=True)
class OutputErrorResult:
    """Output-error estimate of one posture (conventions of :class:`PostureResult`).

    ``com``/``inertia_com`` are in the base-link frame; ``covariance9`` is the covariance of
    ``[h (3), I about the base-link origin: xx yy zz yz zx xy]`` as the subset stage expects.
    """

    name: str
    mass: float
    com: np.ndarray
    com_std: np.ndarray
    inertia_com: np.ndarray
    inertia_com_std: np.ndarray
    params: InertialParams
    params_cov: np.ndarray                  # 9x9 of pi[1:]
    props_cov: np.ndarray                   # 12x12 of [com, inertia_com]
    covariance9: np.ndarray
    initial_state: dict[str, np.ndarray]    # position_m, rotation, velocity_lab, omega_lab
    residual_rms_mm: float
    marker_sigma_mm: float                  # residual std with the fit's dof removed
    n_residuals: int
    iterations: int
    elapsed_s: float
    horizons_s: tuple[float, ...]
    nuisance: dict[str, float]
    start: PostureResult
    time_s: np.ndarray                      # frames of the window
    residual_rms_frame_mm: np.ndarray       # RMS marker residual per frame (NaN: none seen)
    stages: tuple = ()                      # (horizon s, nfev, njev) per least-squares stage
    com_std_noise: np.ndarray | None = None           # marker noise only (no calibration)
    inertia_com_std_noise: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)
    method: str = "output-error"
    base_rotation_platform: np.ndarray | None = None  # the base link's pose used (platform frame)
    base_position_platform_m: np.ndarray | None = None
    base_pose_fitted: bool = False                    # estimated in the fit (base_markers)
    attached_markers: tuple[str, ...] = ()            # object markers in the fit
    attached_scatter_mm: tuple[float, ...] = ()       # their RMS scatter about their place

    def as_posture_result(self) -> PostureResult:
        """The start's :class:`PostureResult` with this fit's numbers (a drop-in for the
        subset stage and the report); ``weighting`` reads ``"output-error"``."""
        return replace(self.start, com=self.com, com_std=self.com_std,
                       inertia_com=self.inertia_com, inertia_com_std=self.inertia_com_std,
                       params=self.params, params_cov=self.params_cov,
                       props_cov=self.props_cov, covariance9=self.covariance9,
                       weighting="output-error",
                       residual_rms={**self.start.residual_rms,
                                     "marker_mm": self.residual_rms_mm},
                       warnings=list(self.start.warnings) + list(self.warnings))


# --------------------------------------------------------------------------- the problem

@dataclass
class _Problem:
    """Residuals and exact Jacobian of one capture's posture fit (rigtool.engine).

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
    # markers attached to the platform at unknown places (the last E of markers_body): when
    # ``project`` is on, each trajectory places them at their maximum-likelihood positions
    # (variable projection) and the Jacobian is projected off their columns (Kaufman's
    # form, whose stationary point is the joint maximum-likelihood estimate's); off,
    # markers_body holds them
    attached_xyz: np.ndarray | None = None  # [T, E, 3] m (0 where unseen)
    attached_seen: np.ndarray | None = None  # [T, E]
    base_defs: np.ndarray | None = None     # [n_b, 3] base-link coordinates of the first n_b
    project: bool = False
    n_attached: int = 0                     # attached markers at the end of markers_body

    def __post_init__(self) -> None:
        self.model = RigidModel.of(self.rig)

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
        n = x.size
        d_theta = np.zeros((theta.size, n))
        i = 0
        if self.fit_object:
            d_theta[:10, :9] = self.tmat @ dpi_dz
            i = 9
        y0, dy0_ds = initial_state(st, self.rot_ref)
        d_y0 = np.zeros((STATE, n))
        d_y0[:, i:i + 12] = dy0_ds
        if self.nuisance == "damping-scale":
            s_n = len(self.rig.springs)
            d_theta[10 + 2 * s_n:, i + 12] = c
        return theta, d_theta, y0, d_y0

    def capture(self) -> RigidCapture:
        return RigidCapture(self.model, self.measured, self.mask, self.dt, self.substeps,
                            self.n_frames)

    def _placed(self, states: np.ndarray) -> np.ndarray:
        """Markers ``[K, 3]`` with the attached ones at their best places on ``states``."""
        t_n = states.shape[0]
        rot = states[:, 3:12].reshape(t_n, 1, 3, 3)
        body = self.markers_body.copy()
        e_n = self.attached_xyz.shape[1]
        body[-e_n:] = placed_positions(rot, states[:, None, 0:3], self.attached_xyz[:t_n],
                                       self.attached_seen[:t_n], self.base_defs)[0]
        return body

    def _eval(self, x: np.ndarray):
        key = (self.n_frames, self.project, self.markers_body.shape[0], x.tobytes())
        if key not in self.cache:
            # the object's columns are always carried (one compiled width serves every stage)
            # and dropped when the object is held
            full = x if self.fit_object else np.concatenate([self.z_obj, x])
            fit_object, self.fit_object = self.fit_object, True
            try:
                theta, d_theta, y0, d_y0 = self.inputs(full)
            finally:
                self.fit_object = fit_object
            out = self.capture().rows(theta, y0, self.markers_body, tangent_theta=d_theta,
                                      tangent_y0=d_y0,
                                      markers_of_states=self._placed if self.project else None)
            if not fit_object and out.jac is not None:
                out.jac = out.jac[:, 9:]
            if self.project and out.ok:
                out.jac = self._project_attached(out.jac, out.states)
            self.cache = {key: out}
        return self.cache[key]

    def _project_attached(self, jac: np.ndarray, states: np.ndarray) -> np.ndarray:
        """Kaufman's variable-projection Jacobian: ``(1 - A (A^T A)^-1 A^T) J`` with ``A``
        the columns of the attached markers' places (``1e3 R_t`` per free marker, times
        the pose columns for the base cluster)."""
        t_n = states.shape[0]
        mask = self.mask[:t_n]
        rot = states[:, 3:12].reshape(t_n, 3, 3)
        k_n, e_n = mask.shape[1], self.attached_xyz.shape[1]
        att = np.arange(k_n - e_n, k_n)
        full = np.zeros((t_n, k_n, 3, jac.shape[1]))
        full[mask] = jac.reshape(-1, 3, jac.shape[1])
        prods = position_products(jac, mask, rot, att)          # [E, 3, n] = A_e^T J
        n_seen = mask[:, att].sum(0)
        n_b = 0 if self.base_defs is None else len(self.base_defs)
        coef = prods / (1e6 * np.maximum(n_seen, 1))[:, None, None]   # free markers
        if n_b:
            body = self._placed(states)[att[:n_b]]
            _, r_b = _cluster_pose(body, self.base_defs)
            cols = pose_columns(self.base_defs, r_b)                  # [n_b, 3, 6]
            info_pp = 1e6 * np.einsum("k,kip,kiq->pq", n_seen[:n_b], cols, cols)
            pose = np.linalg.solve(info_pp, np.einsum("kin,kip->pn", prods[:n_b], cols))
            coef[:n_b] = np.einsum("kip,pn->kin", cols, pose)
        full[:, att] -= 1e3 * np.einsum("tij,kjn->tkin", rot, coef)
        return full[mask].reshape(-1, jac.shape[1])

    def states(self, x: np.ndarray, calib: tuple | None = None) -> np.ndarray:
        """Simulated platform states ``[T, 18]`` at ``x`` (a calibration ``calib`` as in
        :meth:`inputs`)."""
        theta, _, y0, _ = self.inputs(x, calib)
        return simulate(self.model, theta, y0, self.n_frames, self.dt,
                        substeps=self.substeps)[0]

    def trajectory(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The platform's simulated rotation ``[T, 3, 3]`` and position ``[T, 3]`` at ``x``
        on the current horizon (the last evaluation's when it was at ``x``)."""
        key = (self.n_frames, self.project, self.markers_body.shape[0], x.tobytes())
        out = self.cache.get(key)
        st = out.states if out is not None and out.ok else self.states(x)
        return st[:, 3:12].reshape(-1, 3, 3), st[:, :3]

    def calibration_jacobian(self, x: np.ndarray, members: list) -> np.ndarray | None:
        """``[M, C]``: change of the residual rows at ``x`` per calibration member, i.e.
        along ``theta(member) - theta(nominal)`` (exact first order; members as
        :func:`_calibration_members`), or None without members."""
        if not members:
            return None
        theta, _, y0, _ = self.inputs(x)
        dirs = np.stack([self.inputs(x, m[2])[0] - theta for m in members], axis=1)
        out = self.capture().rows(theta, y0, self.markers_body, tangent_theta=dirs,
                                  tangent_y0=np.zeros((STATE, dirs.shape[1])))
        return out.jac

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
        the model)."""
        full = x if self.fit_object else np.concatenate([self.z_obj, x])
        fit_object, self.fit_object = self.fit_object, True
        try:
            theta, _, y0, _ = self.inputs(full)
        finally:
            self.fit_object = fit_object
        out = self.capture().rows(theta, y0, self.markers_body,
                                  markers_of_states=self._placed if self.project else None)
        return float(out.r @ out.r) if out.ok else np.inf

    def normal(self, x: np.ndarray, *, extra_theta: np.ndarray | None = None
               ) -> "_PostureNormal":
        """Cost and normal equations at ``x`` on the current horizon, accumulated chunk by
        chunk (nothing of size frames x unknowns is kept). With attached markers their
        products with the Jacobian are accumulated too; with ``project`` the normal
        equations are reduced by them (the Schur complement of the joint problem: what
        Kaufman's projected Jacobian gives). ``extra_theta [n_theta, C]``: more directions
        (calibration members), carried as extra columns."""
        full = x if self.fit_object else np.concatenate([self.z_obj, x])
        fit_object, self.fit_object = self.fit_object, True
        try:
            theta, d_theta, y0, d_y0 = self.inputs(full)
        finally:
            self.fit_object = fit_object
        keep = np.arange(d_theta.shape[1]) if fit_object else np.arange(9, d_theta.shape[1])
        if extra_theta is not None:
            keep = np.concatenate([keep, d_theta.shape[1] + np.arange(extra_theta.shape[1])])
            d_theta = np.hstack([d_theta, extra_theta])
            d_y0 = np.hstack([d_y0, np.zeros((STATE, extra_theta.shape[1]))])
        body = self.markers_body
        if self.project:
            states0, _ = simulate(self.model, theta, y0, self.n_frames, self.dt,
                                  substeps=self.substeps)
            body = self._placed(states0)
        n_c = keep.size
        e_n = self.n_attached
        k_n = self.mask.shape[1]
        att = np.arange(k_n - e_n, k_n)
        acc = {"jtj": np.zeros((n_c, n_c)), "jtr": np.zeros(n_c), "cost": 0.0,
               "prods": np.zeros((e_n, 3, n_c)), "prods_r": np.zeros((e_n, 3)),
               "ss": np.zeros(self.n_frames)}

        def consume(k0, st, tan):
            m = st.shape[0]
            mask_c = self.mask[k0:k0 + m]
            r, jac = marker_rows(st, tan, body, self.measured[k0:k0 + m], mask_c)
            jac = jac[:, keep]
            acc["jtj"] += jac.T @ jac
            acc["jtr"] += jac.T @ r
            acc["cost"] += float(r @ r)
            res = np.zeros(mask_c.shape + (3,))
            res[mask_c] = r.reshape(-1, 3)
            acc["ss"][k0:k0 + m] = (res ** 2).sum((1, 2))
            if e_n:
                rot_c = st[:, 3:12].reshape(m, 3, 3)
                acc["prods"] += position_products(jac, mask_c, rot_c, att)
                acc["prods_r"] += position_products(r[:, None], mask_c, rot_c, att)[..., 0]

        try:
            states, _ = simulate(self.model, theta, y0, self.n_frames, self.dt,
                                 substeps=self.substeps, tangent_theta=d_theta,
                                 tangent_y0=d_y0, consume=consume)
        except (FloatingPointError, np.linalg.LinAlgError):
            return _PostureNormal(np.inf, np.eye(n_c), np.zeros(n_c), np.eye(n_c),
                                  np.zeros(n_c), None, None, None, None, 0)
        n_seen = self.mask[:self.n_frames][:, att].sum(0) if e_n else None
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
        return _PostureNormal(acc["cost"], jtj_red, jtr_red, jtj, jtr, acc["prods"],
                              n_seen, acc["ss"], states,
                              int(self.mask[:self.n_frames].sum()) * 3)

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
class _PostureNormal:
    """One streaming evaluation of the posture fit: the cost (mm^2), the normal equations
    the solver uses (``jtj``/``jtr``: reduced by the attached markers' places under variable
    projection), the raw ones, the attached markers' products with the Jacobian (``[E, 3,
    n]``), their frames seen, the squared residual per frame and the simulated states."""

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

    def lm(self) -> Normal:
        return Normal(self.cost, self.jtj, self.jtr)


def calibration_std_from_rigfile(raw: dict, rig: Rig, *, path=None
                                 ) -> dict[str, np.ndarray] | None:
    """Uncertainty of the calibrated rig as written by ``rigtool calibrate``, or None.

    Standard errors from ``[calibration.std]`` of the rig file's raw TOML; when the file also
    has ``[calibration.covariance]`` (output-error calibration), ``"members"``: the
    calibration perturbed along the covariance's principal axes, so the posture fit
    propagates its correlations (rigtool.identify.calibration_covariance).
    """
    cov = covariance_from_raw(raw, rig, path=path)     # checked even when std is incomplete
    std = _calibration_table(raw, path).get("std")
    if not std:
        return None
    if not isinstance(std, dict):
        raise ConfigError("expected a table of standard errors", path=path,
                          field="calibration.std")
    springs = std.get("springs", {})
    names = [sp.name for sp in rig.springs]
    try:
        out = {"stiffness": np.array([springs[n]["stiffness"] for n in names], float),
               "free_length": np.array([springs[n]["free_length"] for n in names], float),
               "damping": np.array([springs[n]["damping"] for n in names], float),
               "platform_mass": float(std["platform"]["mass"]),
               "platform_com": np.asarray(std["platform"]["com"], float),
               "platform_inertia_com": np.asarray(std["platform"]["inertia_com"], float)}
    except (KeyError, TypeError):
        return None
    if cov is not None:
        out["members"] = calibration_members(rig, rig.platform.params, cov)
    return out


def _calibration_members(rig: Rig, platform: InertialParams, cal_std: dict):
    """One perturbed calibration per principal axis: ``(label, step, (platform_pi, k, L0,
    c))`` (:func:`rigtool.identify.calibration_covariance.calibration_members`).

    With a full covariance the members are given (``cal_std["members"]``). With standard
    errors alone (a rig file without ``[calibration.covariance]``) the covariance is taken
    diagonal: each calibrated number is stepped alone by its standard error (the maps are
    smooth; the sensitivity is the slope over that step), the calibration's own correlations
    being unknown.
    """
    if cal_std.get("members"):
        return list(cal_std["members"])
    sd = np.concatenate([cal_std["stiffness"], cal_std["free_length"], cal_std["damping"],
                         [cal_std["platform_mass"]], cal_std["platform_com"],
                         np.asarray(cal_std["platform_inertia_com"])[np.triu_indices(3)]])
    sd = np.where(np.asarray(sd, float) > 0, sd, 0.0)          # NaN or 0: not stepped
    return calibration_members(rig, platform, np.diag(sd ** 2))


def calibration_rows_jacobian(rows_of, x: np.ndarray, rig: Rig, platform: InertialParams,
                              calibration_std: dict | None) -> np.ndarray | None:
    """``[M, C]``: change of the marker residual rows at ``x`` when the calibration moves by
    one step along each of its ``C`` members (:func:`_calibration_members`), or None without
    a calibration uncertainty. ``rows_of(xs, calib) -> [B, M]`` simulates ``xs`` with a
    calibration ``(platform_pi, k, L0, c)`` per member. The estimate's sensitivity is then
    ``-(J^T J)^-1 J^T`` times this, one column per standard step."""
    if calibration_std is None:
        return None
    members = _calibration_members(rig, platform, calibration_std)
    if not members:
        return None
    calib = [(platform.pi.astype(float), rig.stiffness, rig.free_length, rig.damping)]
    calib += [m[2] for m in members]
    rows = rows_of(np.repeat(x[None], len(calib), 0), calib)
    return (rows[1:] - rows[0]).T


def base_pose_covariance(platform_rotation: np.ndarray, platform_position_m: np.ndarray,
                         base_rotation: np.ndarray, base_position_m: np.ndarray,
                         valid: np.ndarray | None = None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean pose of the base link on the platform and the 6x6 covariance of that mean.

    From per-frame marker-fitted poses (``[T, 3, 3]``, ``[T, 3]``, lab; NaN where unseen):
    ``R_pb = R_p^T R_b``, ``t_pb = R_p^T (p_b - p_p)``, averaged (as
    rigtool.identify.platform_motion.relative_pose). The covariance is of ``[t_pb (3),
    delta (3)]`` with ``R_pb = R_mean exp([delta x])``: the per-frame scatter over the number
    of frames (marker noise is white, so frames are independent). On a 25 s capture at 120 Hz
    it is a few micrometres, as large as the output-error COM standard error, so it belongs
    in the reported uncertainty (``refine_posture(base_pose_cov=...)``).
    """
    ok = (np.all(np.isfinite(platform_position_m), axis=1)
          & np.all(np.isfinite(base_position_m), axis=1))
    if valid is not None:
        ok &= valid
    if ok.sum() < 3:
        raise InputError("the base link and the platform are seen together in fewer than 3 "
                         "frames")
    rt = np.swapaxes(platform_rotation[ok], -1, -2)
    r_pb = rt @ base_rotation[ok]
    t_pb = np.einsum("tij,tj->ti", rt, base_position_m[ok] - platform_position_m[ok])
    mean = Rotation.from_matrix(r_pb).mean()
    delta = (mean.inv() * Rotation.from_matrix(r_pb)).as_rotvec()
    dev = np.concatenate([t_pb - t_pb.mean(0), delta], axis=1)
    cov = np.cov(dev.T) / ok.sum()
    return mean.as_matrix(), t_pb.mean(0), cov


def object_in_base_frame(v: np.ndarray, base_rotation: np.ndarray, base_position_m: np.ndarray,
                         tmat_fit: np.ndarray, mass_kg: float) -> np.ndarray:
    """The object's ``pi`` (10) in the base-link frame from ``v = [z (9), dt (3), delta (3)]``.

    ``z`` is the fit's object parameterisation in the frame that ``tmat_fit`` carries to the
    platform frame (:func:`z_to_params`); the base link's pose on the platform is ``R =
    R_b exp([delta x])``, ``t = t_b + dt`` about ``(base_rotation, base_position_m)``. Its
    derivative at ``dt = delta = 0`` carries the covariance of ``[z, pose]`` to the reported
    body."""
    rot = base_rotation @ Rotation.from_rotvec(v[12:15]).as_matrix()
    tinv = np.linalg.inv(transform_matrix(rot, base_position_m + v[9:12]))
    return tinv @ (tmat_fit @ z_to_params(v[:9], mass_kg))


def window_frames(data: MarkerData, window: tuple[float, float] | None, what: str,
                  min_frames: int = 20) -> np.ndarray:
    """Consecutive frame indices of ``data`` from the first to the last inside ``window``
    (s; the whole capture when None). InputError naming the file and ``window`` when fewer
    than ``min_frames``: ``what`` says which capture was expected (e.g. "a relative-motion
    capture")."""
    sel = np.ones(data.n_frames, bool)
    if window is not None:
        sel = (data.time_s >= window[0]) & (data.time_s <= window[1])
    idx = np.flatnonzero(sel)
    if idx.size < min_frames:
        raise InputError(f"the window holds {idx.size} frames; expected {what} of at least "
                         f"{min_frames} frames", path=data.source, field="window")
    return np.arange(idx[0], idx[-1] + 1)


def _start_state(pose_rot: np.ndarray, pose_pos: np.ndarray, valid: np.ndarray, dt: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(rot_ref, state [12])`` at frame 0 from a quadratic fit of the first ~0.15 s of
    marker-fitted poses (position and rotation vector about the first good pose)."""
    good = np.flatnonzero(valid[: max(8, int(round(0.15 / dt)))])
    if good.size < 4:
        good = np.flatnonzero(valid)[:8]
    if good.size < 4:
        raise InputError("fewer than 4 frames with a platform pose at the start of the window")
    rot_ref = pose_rot[good[0]]
    t = good * dt
    phi = (Rotation.from_matrix(pose_rot[good]) * Rotation.from_matrix(rot_ref).inv()).as_rotvec()
    design = np.stack([np.ones_like(t), t, t * t], axis=1)
    cp_, *_ = np.linalg.lstsq(design, pose_pos[good], rcond=None)
    cr, *_ = np.linalg.lstsq(design, phi, rcond=None)
    return rot_ref, np.concatenate([cp_[0], cr[0], cp_[1], cr[1]])


def refine_posture(rig: Rig, platform: InertialParams, data: MarkerData, *,
                   base_rotation_platform: np.ndarray, base_position_platform: np.ndarray,
                   total_mass_kg: float, start: PostureResult,
                   window: tuple[float, float] | None = None,
                   markers_platform: dict[str, np.ndarray] | None = None,
                   nuisance: str = "none", substeps: int = 1,
                   first_horizon_s: float = 2.0, horizon_factor: float = 4.0,
                   calibration_std: dict[str, np.ndarray] | None = None,
                   base_pose_cov: np.ndarray | None = None, ftol: float = 1e-8,
                   base_markers: dict[str, np.ndarray] | None = None,
                   object_markers: list[str] | tuple[str, ...] = (),
                   name: str | None = None) -> OutputErrorResult:
    """Refine a posture's COM and inertia by fitting the simulated platform motion to the
    raw platform markers (maximum likelihood for white marker noise).

    Parameters
    ----------
    rig : Rig
        Calibrated rig (springs: stiffness, free length, damping; gravity; locked DOFs).
    platform : InertialParams
        Calibrated platform, platform frame about its origin.
    data : MarkerData
        The posture capture (raw markers; gaps as NaN are masked).
    base_rotation_platform, base_position_platform : ndarray
        The base link's pose on the platform (as for :func:`fit_posture`).
    total_mass_kg : float
        The object's weighed mass (held fixed).
    start : PostureResult
        The equation-error fit of the same capture (starting point).
    window : (float, float), optional
        Time span fitted, s; default the whole capture.
    markers_platform : dict, optional
        Platform markers (name -> platform-frame xyz); default the rig's.
    nuisance : {"none", "damping-scale"}
        Extra unknown: one scale on every spring's damping.
    substeps : int
        RK4 steps per frame. Measured on the paper-002 rig (120 Hz, modes up to 3.8 Hz, 25 s):
        1 step tracks the reference simulator to 4 um (fit bias <= 0.0001 mm, 0.006 %), 2
        steps to 0.2 um at twice the cost.
    first_horizon_s, horizon_factor : float
        Growing-horizon schedule of the single-shooting fit.
    ftol : float
        Relative change of the cost that ends each stage (1e-8: far below what moves the
        estimate by a fraction of its standard error).
    calibration_std : dict, optional
        Standard errors of the calibrated rig (:func:`calibration_std_from_rigfile`). When
        given, their effect on the estimate (first order: ``dx/dkappa = -(J^T J)^-1 J^T
        J_kappa``, one extra batched simulation) is added to the reported covariance;
        calibration errors are the same for every capture, so without this the standard
        errors describe the marker noise only.
    base_pose_cov : ndarray (6, 6), optional
        Covariance of the base link's pose on the platform ``[t (3), delta (3)]``,
        ``R = R_base exp([delta x])`` (:func:`base_pose_covariance`). The fit determines the
        object in the platform frame; the base pose carries it to the base-link frame, and
        its uncertainty is added to the reported covariance. Not used with ``base_markers``.
    base_markers : dict, optional
        The base link's markers (name -> base-link-frame xyz, m). Given, they join the fit as
        markers rigidly attached to the platform and the base link's pose on the platform
        becomes an unknown (6) of the fit, estimated jointly with the dynamics instead of
        from per-frame poses (``base_rotation_platform``/``base_position_platform`` are then
        only the start).
    object_markers : sequence of str
        Other markers of the locked object (names in ``data``), each rigidly attached to the
        platform at an unknown place (3 unknowns each): they add to the platform's motion.
        Markers that are not still on the platform (scatter about their mean position over
        twice the marker noise, per coordinate) are left out with a warning.
    name : str, optional
        Defaults to ``start.name``.

    Returns
    -------
    OutputErrorResult
    """
    t_start = time.perf_counter()
    if nuisance not in NUISANCE:
        raise ValueError(f"nuisance must be one of {NUISANCE}")
    markers_platform = rig.platform.markers_platform if markers_platform is None \
        else markers_platform
    names = list(markers_platform)
    mk = np.array([np.asarray(markers_platform[n], float) for n in names])
    xyz = data.select(names)
    idx = window_frames(data, window, "a free-vibration capture")
    xyz = xyz[idx]
    traj = fit_pose(xyz, mk, marker_names=tuple(names), time_s=data.time_s[idx])
    mask = traj.used & np.all(np.isfinite(xyz), axis=2)
    dt = 1.0 / data.rate_hz
    rot_ref, state0 = _start_state(traj.rotation, traj.position_m, traj.valid, dt)
    z_obj = object_to_z(start.com, start.inertia_com)
    prob = _Problem(rig, platform.pi.astype(float),
                    transform_matrix(base_rotation_platform, base_position_platform),
                    float(total_mass_kg), mk, np.where(mask[..., None], xyz, 0.0), mask, dt,
                    rot_ref, substeps, z_obj, nuisance)
    n_total = len(idx)
    extra = [1.0] if nuisance == "damping-scale" else []
    # 1) the initial state on a short horizon, object held at the start
    prob.fit_object = False
    prob.n_frames = min(n_total, max(20, int(round(first_horizon_s / dt))))
    x = np.concatenate([state0, extra])
    sol = _solve(prob, x, ftol=1e-10)
    iterations = sol.n_cost + sol.n_normal
    # 2) everything, on a growing horizon
    prob.fit_object = True
    x = np.concatenate([z_obj, sol.x])
    horizons = []
    stage_log = [(prob.n_frames * dt, sol.n_cost, sol.n_normal)]
    while True:
        prob.n_frames = next_horizon(prob.n_frames, n_total, horizon_factor, dt)
        horizons.append(prob.n_frames * dt)
        sol = _solve(prob, x, ftol=ftol)
        iterations += sol.n_cost + sol.n_normal
        stage_log.append((prob.n_frames * dt, sol.n_cost, sol.n_normal))
        x = sol.x
        if prob.n_frames >= n_total:
            break
    label = name or start.name
    warnings: list[str] = []
    att = None
    if base_markers or object_markers:
        att = _fit_attached(prob, x, data, idx, mk, dict(base_markers or {}),
                            list(object_markers), ftol, label, warnings)
        x = att["x"]
        iterations += att["nfev"]
        stage_log += att["stages"]
    mask = prob.mask
    n_x = x.size
    members = ([] if calibration_std is None
               else _calibration_members(rig, platform, calibration_std))
    extra_dirs = None
    if members:
        theta_nom = prob.inputs(x)[0]
        extra_dirs = np.stack([prob.inputs(x, m[2])[0] - theta_nom for m in members], axis=1)
    ne = prob.normal(x, extra_theta=extra_dirs)
    jtj = ne.jtj_raw[:n_x, :n_x]
    jtj_cal = ne.jtj_raw[:n_x, n_x:] if members else None          # J^T J_cal
    if att is not None and prob.n_attached:
        info = joint_information(jtj, ne.prods[:, :, :n_x], ne.n_seen, att["n_base"],
                                 att["pose_cols"])
        cross_cal = None if jtj_cal is None else np.vstack([
            jtj_cal, nuisance_products(ne.prods[:, :, n_x:], att["n_base"], att["pose_cols"])])
    else:
        info, cross_cal = jtj, jtj_cal
    n_res, n_par = ne.n_rows, info.shape[0]
    dof = max(n_res - n_par, 1)
    s2 = ne.cost / dof
    info_inv = np.linalg.pinv(info)
    cov_noise = s2 * info_inv                     # mm^2 / (mm per unit)^2: units of x
    cov_all = cov_noise.copy()
    if cross_cal is not None:
        sens = -info_inv @ cross_cal
        cov_all = cov_all + sens @ sens.T
    # the object in the base-link frame: the fitted (platform-frame) body carried by the
    # base link's pose, R = R_b exp([delta x]), t = t_b + dt, about its estimate
    if att is not None and att["n_base"]:
        r_b, t_b = att["base_rotation"], att["base_position_m"]
        pose_idx = np.arange(n_x, n_x + 6)
    else:
        r_b = np.asarray(base_rotation_platform, float)
        t_b = np.asarray(base_position_platform, float)
        pose_idx = None

    def in_base(v):
        return object_in_base_frame(v, r_b, t_b, prob.tmat, total_mass_kg)

    def pose_block(cov):
        """Covariance of ``[z (9), pose (6)]``."""
        out = np.zeros((15, 15))
        zi = np.arange(9)
        if pose_idx is not None:
            sel = np.concatenate([zi, pose_idx])
            return cov[np.ix_(sel, sel)]
        out[:9, :9] = cov[np.ix_(zi, zi)]
        if base_pose_cov is not None:
            out[9:, 9:] = np.asarray(base_pose_cov, float)
        return out

    v_hat = np.concatenate([x[:9], np.zeros(6)])
    pi_hat = in_base(v_hat)
    g = _jac(lambda v: in_base(v)[1:], v_hat, step=1e-7)
    cov9 = g @ pose_block(cov_all) @ g.T
    cov9_noise = g @ pose_block(cov_noise) @ g.T
    params = InertialParams(pi_hat)

    def props(v):
        p = InertialParams(np.concatenate([[total_mass_kg], v]))
        return np.concatenate([p.com, p.inertia_com.ravel()])

    _, pcov = propagate(props, pi_hat[1:], cov9)
    pstd = np.sqrt(np.clip(np.diag(pcov), 0, None))
    _, pcov_noise = propagate(props, pi_hat[1:], cov9_noise)
    pstd_noise = np.sqrt(np.clip(np.diag(pcov_noise), 0, None))
    _, st, scale = prob.split(x)
    rot0 = Rotation.from_rotvec(st[3:6]).as_matrix() @ rot_ref
    per_frame = np.full(n_total, np.nan)
    seen = mask.sum(1)
    per_frame[seen > 0] = np.sqrt(ne.ss_frame[seen > 0] / (3 * seen[seen > 0]))
    rms = float(np.sqrt(ne.cost / n_res))
    sigma = float(np.sqrt(s2))
    # a model that tracks the data leaves white residuals: compare the first and last tenth
    tenth = max(1, n_total // 10)
    early, late = np.nanmean(per_frame[:tenth] ** 2), np.nanmean(per_frame[-tenth:] ** 2)
    if (np.isfinite(early) and np.isfinite(late) and max(early, late) > 2.0 * min(early, late)
            and max(early, late) > 1.5 * s2):
        warnings.append(f"{name or start.name}: marker residuals grow or shrink along the "
                        f"capture (RMS {np.sqrt(early):.3f} mm early, {np.sqrt(late):.3f} mm "
                        "late): the simulated motion drifts from the data (rig model?)")
    return OutputErrorResult(
        name=name or start.name, mass=float(total_mass_kg), com=params.com, com_std=pstd[:3],
        inertia_com=params.inertia_com, inertia_com_std=pstd[3:].reshape(3, 3), params=params,
        params_cov=cov9, props_cov=pcov, covariance9=cov9[np.ix_(_PERM9, _PERM9)],
        initial_state={"position_m": st[:3].copy(), "rotation": rot0,
                       "velocity_lab": st[6:9].copy(), "omega_lab": st[9:12].copy(),
                       "time_s": float(data.time_s[idx[0]])},
        residual_rms_mm=rms, marker_sigma_mm=sigma, n_residuals=int(n_res),
        iterations=int(iterations), elapsed_s=time.perf_counter() - t_start,
        horizons_s=tuple(horizons), stages=tuple(stage_log),
        com_std_noise=pstd_noise[:3], inertia_com_std_noise=pstd_noise[3:].reshape(3, 3),
        nuisance={"damping_scale": float(scale)} if nuisance == "damping-scale" else {},
        start=start, time_s=data.time_s[idx], residual_rms_frame_mm=per_frame,
        warnings=warnings, base_rotation_platform=r_b, base_position_platform_m=t_b,
        base_pose_fitted=pose_idx is not None,
        attached_markers=() if att is None else tuple(att["names"]),
        attached_scatter_mm=() if att is None else tuple(float(v) for v in att["scatter_mm"]),
)


def _fit_attached(prob: _Problem, x: np.ndarray, data: MarkerData, idx: np.ndarray,
                  mk_platform: np.ndarray, base_markers: dict[str, np.ndarray],
                  object_markers: list[str], ftol: float, label: str,
                  warnings: list[str]) -> dict:
    """Add the object's markers to a converged platform-marker fit and fit again with their
    positions on the platform eliminated (variable projection: every simulated member places
    them at their maximum-likelihood positions on its own trajectory, so the finite-difference
    Jacobian is that of the reduced problem and Gauss-Newton converges to the joint
    maximum-likelihood estimate). Leaves ``prob`` with the positions held at the estimate's
    (for the information matrix, rigtool.identify.attached_markers.joint_information).

    Returns ``x``, the markers kept (``names``, base-link markers first, ``n_base``), the
    base pose (``base_rotation``, ``base_position_m``, ``pose_cols``), the platform's fitted
    rotation per frame (``rotation_lab``), ``scatter_mm``, ``nfev`` and ``stages``.
    """
    names = list(base_markers) + [n for n in object_markers if n not in base_markers]
    n_base = len(base_markers)
    xyz = data.select(names)[idx]
    seen = np.all(np.isfinite(xyz), axis=2)
    sigma_mm = float(np.sqrt(prob.cost(x) / (3 * prob.mask[:prob.n_frames].sum())))
    rot, pos = prob.trajectory(x)
    _, scatter = platform_frame_positions(rot, pos, xyz, seen)
    # a rigidly attached marker scatters by its noise: sqrt(3) sigma in 3-D
    limit = 2.0 * np.sqrt(3.0) * sigma_mm
    keep = (scatter <= limit) & (seen.sum(0) >= 20)
    dropped = [f"{n} ({v:.3f} mm)" for n, v, k in zip(names, scatter, keep) if not k]
    if dropped:
        warnings.append(f"{label}: object markers left out of the output-error fit, not still "
                        f"on the platform (RMS scatter over {limit:.3f} mm, or seen in fewer "
                        f"than 20 frames): {', '.join(dropped)}")
    base_kept = keep[:n_base].copy()
    if n_base and base_kept.sum() < 3:
        warnings.append(f"{label}: fewer than 3 base-link markers usable; the base link's pose "
                        "on the platform is taken from the per-frame poses")
        keep[:n_base] = False
        base_kept[:] = False
    names = [n for n, k in zip(names, keep) if k]
    xyz, seen = xyz[:, keep], seen[:, keep]
    n_base = int(base_kept.sum())
    defs = (np.array([np.asarray(base_markers[n], float)
                      for n, k in zip(base_markers, base_kept) if k]) if n_base else None)
    out = {"names": names, "n_base": n_base, "nfev": 0, "stages": []}
    if not names:
        out.update(x=x, rotation_lab=rot, pose_cols=None, base_rotation=None,
                   base_position_m=None, scatter_mm=np.zeros(0))
        return out
    n_plat = len(mk_platform)
    xyz0 = np.where(seen[..., None], xyz, 0.0)
    prob.measured = np.concatenate([prob.measured[:, :n_plat], xyz0], axis=1)
    prob.mask = np.concatenate([prob.mask[:, :n_plat], seen], axis=1)
    prob.markers_body = np.vstack([mk_platform, np.zeros((len(names), 3))])
    prob.attached_xyz, prob.attached_seen, prob.base_defs = xyz0, seen, defs
    prob.project, prob.cache, prob.n_attached = True, {}, len(names)
    sol = _solve(prob, x, ftol=ftol)
    x = sol.x
    out["nfev"] = sol.n_cost + sol.n_normal
    out["stages"].append((prob.n_frames * prob.dt, sol.n_cost, sol.n_normal))
    rot, pos = prob.trajectory(x)
    placed = attached_positions(rot, pos, xyz0, seen, defs)
    prob.markers_body = np.vstack([mk_platform, placed.positions_m])
    prob.project, prob.cache = False, {}
    out.update(x=x, rotation_lab=rot, scatter_mm=placed.scatter_mm,
               base_rotation=placed.base_rotation, base_position_m=placed.base_position_m,
               pose_cols=None if not n_base else pose_columns(defs, placed.base_rotation))
    return out


def next_horizon(n_frames: int, n_total: int, factor: float, dt: float,
                 settled_s: float = 30.0) -> int:
    """The next horizon of the growing-horizon schedule: ``factor`` times longer, or the whole
    window once the current horizon is at least ``settled_s`` long and the next would cover
    more than half of it (a fit over 30 s fixes the frequencies to far better than a phase
    error could build up over any capture; the intermediate stage would only cost time)."""
    nxt = int(round(n_frames * factor))
    if n_frames * dt >= settled_s and nxt > n_total / 2:
        nxt = n_total
    return min(n_total, nxt)


def _solve(prob: _Problem, x: np.ndarray, *, ftol: float, max_iterations: int = 50):
    """Levenberg-Marquardt on the streamed normal equations (rigtool.engine.lm)."""
    return levenberg_marquardt(lambda v: prob.normal(v).lm(), prob.cost, x, ftol=ftol,
                               max_iterations=max_iterations)


def _jac(fun, x: np.ndarray, step: float = 1e-7) -> np.ndarray:
    """Central differences of a cheap analytic map (the parameterisation)."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = step
        cols.append((fun(x + e) - fun(x - e)) / (2 * step))
    return np.stack(cols, axis=1)


__all__ = ["OutputErrorResult", "refine_posture", "next_horizon", "calibration_std_from_rigfile",
           "base_pose_covariance", "object_to_z", "object_in_base_frame",
           "z_to_params", "NUISANCE"]
