"""Overall inertial properties of one locked posture from its free vibration (paper 002 §2.1).

With the joints locked the object is one rigid body fixed to the platform. Per frame, in
platform components about the platform origin (see rigtool.identify.calibrate)::

    Y(a - g, w, w_dot) (pi_platform + T pi_object) = w_springs

``T`` is the (linear) map from the object's parameters in its base-link frame to the
platform frame (the base link's pose on the platform, from its markers). The platform and
springs are known from calibration, the object's mass is weighed, so the unknowns are the
object's first moment and inertia about the base-link origin: 9 numbers.

Spring models: ``"exact"`` (default) evaluates every spring from the measured geometry;
``"linear"`` is paper 002's stiffness-matrix model, ``w = w(q_mean) - K (q - q_mean)`` with
``K`` the elastic + geometric stiffness at the capture's mean pose (rigtool.rig).

Row weighting: ``"noise"`` (default; 1/sigma per wrench component from a first pass),
``"plain"`` (unweighted: N and N m mixed as they come).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.identify.calibrate import CaptureMotion, WRENCH_ROWS
from rigtool.identify.consistency import consistency_constraints, solve_triangle
from rigtool.identify.lsq import reduce_to_triangle, solve_wls
from rigtool.identify.propagate import propagate
from rigtool.inertia import InertialParams, regressor_body, transform_params
from rigtool.rig import Rig, linearised_stiffness, spring_wrench

SPRING_MODELS = ("exact", "linear")
WEIGHTINGS = ("noise", "plain")


def transform_matrix(rotation: np.ndarray, translation_m: np.ndarray) -> np.ndarray:
    """10x10 ``T`` with ``transform_params(pi, R, p) == T @ pi`` (the map is linear)."""
    return np.stack([transform_params(e, rotation, translation_m) for e in np.eye(10)], axis=1)


def spring_wrench_body(rig: Rig, cap: CaptureMotion, *, model: str = "exact") -> np.ndarray:
    """Total spring wrench ``[T, 6]`` in platform components about its origin, filtered like
    the kinematics (both sides of the equation see the same filter)."""
    if model == "exact":
        w_lab = spring_wrench(rig, cap.rotation_raw, cap.position_raw)
        rot = cap.rotation_raw
    elif model == "linear":
        ok = np.all(np.isfinite(cap.position_raw), axis=1)
        r_mean = Rotation.from_matrix(cap.rotation_raw[ok]).mean().as_matrix()
        p_mean = cap.position_raw[ok].mean(axis=0)
        w0 = spring_wrench(rig, r_mean, p_mean)
        k = linearised_stiffness(rig, r_mean, p_mean).total
        dtheta = Rotation.from_matrix(np.einsum("tij,kj->tik", cap.rotation_raw, r_mean)).as_rotvec()
        dq = np.concatenate([cap.position_raw - p_mean, dtheta], axis=1)
        w_lab = w0 - dq @ k.T
        rot = np.broadcast_to(r_mean, cap.rotation_raw.shape)
    else:
        raise ValueError(f"spring model must be one of {SPRING_MODELS}")
    rt = np.swapaxes(rot, -1, -2)
    w_body = np.concatenate([np.einsum("tij,tj->ti", rt, w_lab[:, :3]),
                             np.einsum("tij,tj->ti", rt, w_lab[:, 3:])], axis=1)
    w_body = cap.filt(w_body)
    if rig.damping.any():
        n_spr = len(rig.springs)
        cols = spring_wrench_regressor_damping(rig, cap)
        w_body = w_body + cols @ rig.damping
    return w_body


def spring_wrench_regressor_damping(rig: Rig, cap: CaptureMotion) -> np.ndarray:
    """Damping columns ``[T, 6, S]`` (platform components) from the filtered motion."""
    from rigtool.rig import spring_wrench_regressor
    n_spr = len(rig.springs)
    w = spring_wrench_regressor(rig, cap.rotation, cap.position, cap.velocity_lab,
                                cap.omega_lab)[..., 2 * n_spr:]
    rt = np.swapaxes(cap.rotation, -1, -2)
    return np.concatenate([rt @ w[:, :3], rt @ w[:, 3:]], axis=1)


@dataclass(frozen=True)
class PostureResult:
    """Whole-object properties of one posture, in the base-link frame."""

    name: str
    mass: float
    com: np.ndarray
    com_std: np.ndarray
    inertia_com: np.ndarray
    inertia_com_std: np.ndarray
    params: InertialParams                # about the base-link origin (consistent fit)
    params_cov: np.ndarray                # 9x9 covariance of pi[1:]
    unconstrained: InertialParams
    residual_rms: dict[str, float]
    measured_wrench: np.ndarray           # [T, 6] spring wrench (platform comps)
    fitted_wrench: np.ndarray             # [T, 6] model
    time_s: np.ndarray
    spring_model: str
    weighting: str
    warnings: list[str]

    def plot(self, ax=None):
        """Measured against fitted wrench per component (six stacked axes); returns the axes."""
        import matplotlib.pyplot as plt
        if ax is None:
            _, ax = plt.subplots(6, 1, sharex=True, figsize=(8, 9))
        for j, a in enumerate(np.atleast_1d(ax)):
            a.plot(self.time_s, self.measured_wrench[:, j], lw=1.0, label="springs (measured)")
            a.plot(self.time_s, self.fitted_wrench[:, j], lw=0.8, ls="--", label="model (fit)")
            a.set_ylabel(f"{WRENCH_ROWS[j]} [{'N' if j < 3 else 'N m'}]")
        np.atleast_1d(ax)[0].legend(loc="upper right", fontsize=7)
        np.atleast_1d(ax)[-1].set_xlabel("time [s]")
        return ax


def fit_posture(rig: Rig, platform: InertialParams, cap: CaptureMotion, *,
                base_rotation_platform: np.ndarray, base_position_platform: np.ndarray,
                total_mass_kg: float, spring_model: str = "exact", weighting: str = "noise",
                consistent: bool = True) -> PostureResult:
    """Fit the object's first moment and inertia (mass known) from one locked posture."""
    if spring_model not in SPRING_MODELS:
        raise ValueError(f"spring_model must be one of {SPRING_MODELS}")
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}")
    rt = np.swapaxes(cap.rotation, -1, -2)
    a_minus_g = np.einsum("tij,tj->ti", rt, cap.accel_lab - rig.gravity_lab)
    y = regressor_body(a_minus_g, cap.omega_body, cap.omega_dot_body)
    w = spring_wrench_body(rig, cap, model=spring_model)
    tmat = transform_matrix(base_rotation_platform, base_position_platform)
    a_full = y @ tmat                                        # [T, 6, 10] in object params
    rhs = w - y @ platform.pi - a_full[:, :, 0] * total_mass_kg
    ok = cap.valid & np.all(np.isfinite(a_full), axis=(1, 2)) & np.all(np.isfinite(rhs), axis=1)
    a = a_full[ok][:, :, 1:]
    b = rhs[ok]
    first = solve_wls(a, b)
    weights = None
    if weighting == "noise":
        sigma = np.sqrt(np.mean(first.residual ** 2, axis=0))
        weights = 1.0 / np.where(sigma > 0, sigma, 1.0)
    fit = solve_wls(a, b, row_weights=weights, max_lag=cap.correlation_frames)
    x = fit.x
    warnings: list[str] = []
    unconstrained = InertialParams(np.concatenate([[total_mass_kg], fit.x]))
    if consistent and not unconstrained.is_physically_consistent():
        rq, z, _ = reduce_to_triangle(a, b, weights)
        scale = np.where(np.abs(x) > 0, np.abs(x), 1.0)
        import cvxpy as cp

        def constraints(xv):
            return consistency_constraints(cp.hstack([np.array([total_mass_kg]), xv]))

        x = solve_triangle(rq, z, constraints_for=constraints, x0=x, scale=scale)
        if np.any(np.abs(x - fit.x) > 2 * fit.std):
            warnings.append("the physically consistent estimate differs from the unconstrained "
                            "one by more than 2 standard errors")
    params = InertialParams(np.concatenate([[total_mass_kg], x]))

    def props(v):
        p = InertialParams(np.concatenate([[total_mass_kg], v]))
        return np.concatenate([p.com, p.inertia_com.ravel()])

    _, pcov = propagate(props, x, fit.cov)
    pstd = np.sqrt(np.clip(np.diag(pcov), 0, None))
    fitted = np.einsum("trp,p->tr", a_full, np.concatenate([[total_mass_kg], x])) + y @ platform.pi
    resid = (w - fitted)[ok]
    rms = {"force": float(np.sqrt(np.mean(resid[:, :3] ** 2))),
           "torque": float(np.sqrt(np.mean(resid[:, 3:] ** 2)))}
    return PostureResult(cap.name, total_mass_kg, params.com, pstd[:3], params.inertia_com,
                         pstd[3:].reshape(3, 3), params, fit.cov, unconstrained, rms, w, fitted,
                         cap.time_s, spring_model, weighting, warnings)
