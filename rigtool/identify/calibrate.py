"""Calibrating the rig: spring stiffness, free length, damping and platform inertia.

The suspension is the force sensor. For every frame of every calibration capture the whole
rigid assembly on the springs (platform + known reference bodies) obeys Newton-Euler about
the platform origin, in platform components (see rigtool.inertia.regressor_body)::

    Y(a - g, w, w_dot) (pi_platform + pi_load) = W(pose, velocity) theta,
    theta = [k_1..k_S, (k L0)_1..(k L0)_S, c_1..c_S]

which is linear in the unknowns ``x = [pi_platform (10), theta (3S)]``; the known reference
bodies fix the scale (without them the equations are homogeneous). Statics (the mean
balance under each load) and dynamics (the free vibration) sit in the same rows.

Filtering both sides: ``Y`` is built from zero-phase filtered kinematics, and the spring
columns of ``W`` are computed from the *unfiltered* pose and then passed through the very
same filter. A linear time-invariant filter commutes with the (nearly linear) equation, so
whatever the filter does near its band edge it does to both sides: a light platform whose
modes approach the passband is still fitted without bias (the warning in the result only
says that the motion lies where the filter distorts).

Noise model for standard errors: residuals are zero-mean, independent between captures,
stationary within one, with any correlation confined to the filter's impulse-response length
(HAC sandwich, rigtool.identify.lsq). Row weights: 1/sigma per wrench component, from a
first unweighted pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rigtool.errors import IdentifiabilityError
from rigtool.identify.consistency import consistency_constraints, solve_triangle
from rigtool.identify.lsq import LsqResult, reduce_to_triangle, solve_wls
from rigtool.identify.propagate import propagate
from rigtool.inertia import InertialParams, regressor_body
from rigtool.rig import Rig, spring_wrench_regressor

WRENCH_ROWS: tuple[str, ...] = ("f_x", "f_y", "f_z", "n_x", "n_y", "n_z")


@dataclass(frozen=True)
class CaptureMotion:
    """Platform motion of one capture, ready for the equations.

    ``*_raw`` is the marker-fitted pose before filtering (short gaps interpolated); the rest
    is filtered (lab components unless named ``_body``). ``filt`` applies the same zero-phase
    filter (time axis first) that produced the filtered kinematics.
    """

    name: str
    path: Path | None
    time_s: np.ndarray
    rotation_raw: np.ndarray
    position_raw: np.ndarray
    rotation: np.ndarray
    position: np.ndarray
    velocity_lab: np.ndarray
    accel_lab: np.ndarray
    omega_lab: np.ndarray
    omega_body: np.ndarray
    omega_dot_body: np.ndarray
    valid: np.ndarray
    filt: Callable[[np.ndarray], np.ndarray]
    correlation_frames: int
    load: InertialParams = field(default_factory=lambda: InertialParams(np.zeros(10)))
    holdout: bool = False


def equation_terms(rig: Rig, cap: CaptureMotion) -> tuple[np.ndarray, np.ndarray]:
    """``(Y [T, 6, 10], W [T, 6, 3S])`` of one capture, platform components."""
    rt = np.swapaxes(cap.rotation, -1, -2)
    a_minus_g = np.einsum("tij,tj->ti", rt, cap.accel_lab - rig.gravity_lab)
    y = regressor_body(a_minus_g, cap.omega_body, cap.omega_dot_body)
    n_spr = len(rig.springs)
    w_raw = spring_wrench_regressor(rig, cap.rotation_raw, cap.position_raw)[..., : 2 * n_spr]
    rt_raw = np.swapaxes(cap.rotation_raw, -1, -2)
    w_raw = np.concatenate([rt_raw @ w_raw[:, :3], rt_raw @ w_raw[:, 3:]], axis=1)
    w_elastic = cap.filt(w_raw)
    w_damp = spring_wrench_regressor(rig, cap.rotation, cap.position, cap.velocity_lab,
                                     cap.omega_lab)[..., 2 * n_spr:]
    w_damp = np.concatenate([rt @ w_damp[:, :3], rt @ w_damp[:, 3:]], axis=1)
    return y, np.concatenate([w_elastic, w_damp], axis=2)


def parameter_names(rig: Rig) -> list[str]:
    """Names of the unknowns ``x`` in order."""
    from rigtool.inertia import PARAM_NAMES
    names = [f"platform.{n}" for n in PARAM_NAMES]
    for kind in ("stiffness", "k_free_length", "damping"):
        names += [f"{s.name}.{kind}" for s in rig.springs]
    return names


@dataclass(frozen=True)
class HoldoutCheck:
    """A reference body identified as an unknown, against its known values."""

    capture: str
    mass_error_kg: float
    com_error_m: float
    inertia_error_rel: float          # max |error| / largest principal moment
    identified: InertialParams        # in the platform frame


@dataclass(frozen=True)
class CalibrationResult:
    """Calibrated springs and platform with standard errors and fit quality."""

    stiffness: np.ndarray
    stiffness_std: np.ndarray
    free_length: np.ndarray
    free_length_std: np.ndarray
    damping: np.ndarray
    damping_std: np.ndarray
    platform: InertialParams
    platform_mass_std: float
    platform_com_std: np.ndarray
    platform_inertia_std: np.ndarray
    unconstrained: np.ndarray
    x: np.ndarray
    cov: np.ndarray
    names: list[str]
    residual_rms: dict[str, float]
    rank: int
    condition_number: float
    holdout: list[HoldoutCheck]
    warnings: list[str]
    n_frames: int


def _stack(rig: Rig, captures: list[CaptureMotion]):
    a_all, b_all, blk = [], [], []
    for i, cap in enumerate(captures):
        y, w = equation_terms(rig, cap)
        ok = cap.valid & np.all(np.isfinite(y), axis=(1, 2)) & np.all(np.isfinite(w), axis=(1, 2))
        a_all.append(np.concatenate([y, -w], axis=2)[ok])
        b_all.append(-(y @ cap.load.pi)[ok])
        blk.append(np.full(int(ok.sum()), i))
    return np.concatenate(a_all), np.concatenate(b_all), np.concatenate(blk)


def _explain_rank(rig: Rig, fit: LsqResult, a: np.ndarray) -> str:
    """Name the parameters in the weakest direction of the design."""
    names = parameter_names(rig)
    flat = a.reshape(-1, a.shape[-1])
    scale = np.linalg.norm(flat, axis=0)
    scale[scale == 0] = 1.0
    _, s, vt = np.linalg.svd(flat / scale, full_matrices=False)
    weak = vt[-1]
    idx = np.argsort(-np.abs(weak))[:4]
    return ", ".join(names[i] for i in idx if abs(weak[i]) > 0.1)


def calibrate_motion(rig: Rig, captures: list[CaptureMotion], *, consistent: bool = True,
                     rcond: float = 1e-9) -> CalibrationResult:
    """Calibrate springs and platform from prepared captures (see module docstring).

    Raises
    ------
    IdentifiabilityError
        When the captures cannot determine every unknown (no known load, or too little
        variety): the message names the parameters and the capture to add.
    """
    fit_caps = [c for c in captures if not c.holdout]
    if not fit_caps:
        raise IdentifiabilityError("every calibration capture is marked holdout; at least one "
                                   "must be used for the fit")
    if not any(c.load.mass > 0 for c in fit_caps):
        raise IdentifiabilityError("no calibration capture carries a reference body of known "
                                   "inertia: the equations are homogeneous and cannot fix the "
                                   "scale of stiffness and platform inertia; add a capture with "
                                   "a reference body on the platform")
    a, b, blk = _stack(rig, fit_caps)
    n_par = a.shape[2]
    lag = max(c.correlation_frames for c in fit_caps)
    first = solve_wls(a, b, block=blk, rcond=rcond)
    if first.rank < n_par:
        raise IdentifiabilityError(
            f"the calibration captures determine only {first.rank} of {n_par} unknowns; "
            f"weakly determined: {_explain_rank(rig, first, a)}. Add captures with reference "
            "bodies at other mounts (offset along x and y, and heavier) and excite all six "
            "platform motions")
    sigma = np.sqrt(np.mean(first.residual ** 2, axis=0))
    weights = 1.0 / np.where(sigma > 0, sigma, 1.0)
    fit = solve_wls(a, b, row_weights=weights, block=blk, max_lag=lag, rcond=rcond)
    x = fit.x.copy()
    n_spr = len(rig.springs)
    warnings: list[str] = []
    if consistent:
        rq, z, _ = reduce_to_triangle(a, b, weights)
        scale = np.where(np.abs(x) > 0, np.abs(x), 1.0)

        def constraints(xv):
            return consistency_constraints(xv[:10]) + [xv[10:10 + n_spr] >= 0,
                                                       xv[10 + 2 * n_spr:] >= 0]

        if not (InertialParams(x[:10]).is_physically_consistent()
                and np.all(x[10:10 + n_spr] > 0) and np.all(x[10 + 2 * n_spr:] >= 0)):
            x = solve_triangle(rq, z, constraints_for=constraints, x0=x, scale=scale)
            diff = np.abs(x - fit.x) / np.where(fit.std > 0, fit.std, 1.0)
            if np.any(diff > 2.0):
                names = parameter_names(rig)
                worst = names[int(np.argmax(diff))]
                warnings.append(f"the physically consistent fit differs from the unconstrained "
                                f"one by more than 2 standard errors (most in {worst}); the data "
                                "may be biased (filter, unmodelled effects)")
    cov = fit.cov
    k = x[10:10 + n_spr]
    kl0 = x[10 + n_spr:10 + 2 * n_spr]
    k_std = np.sqrt(np.diag(cov)[10:10 + n_spr])
    l0_std = np.zeros(n_spr)
    for i in range(n_spr):
        idx = [10 + i, 10 + n_spr + i]
        _, c = propagate(lambda v: np.array([v[1] / v[0]]), x[idx], cov[np.ix_(idx, idx)])
        l0_std[i] = float(np.sqrt(c[0, 0]))

    def platform_props(v):
        p = InertialParams(v)
        return np.concatenate([[p.mass], p.com, p.inertia_com.ravel()])

    props, pcov = propagate(platform_props, x[:10], cov[:10, :10])
    pstd = np.sqrt(np.clip(np.diag(pcov), 0, None))
    resid = b - np.einsum("trp,p->tr", a, x)
    rms = {name: float(np.sqrt(np.mean(resid[:, j] ** 2))) for j, name in enumerate(WRENCH_ROWS)}
    result_platform = InertialParams(x[:10])
    holdouts = [_holdout_check(rig, c, x, weights) for c in captures if c.holdout]
    return CalibrationResult(
        stiffness=k, stiffness_std=k_std, free_length=kl0 / k, free_length_std=l0_std,
        damping=x[10 + 2 * n_spr:], damping_std=np.sqrt(np.diag(cov)[10 + 2 * n_spr:]),
        platform=result_platform, platform_mass_std=float(pstd[0]),
        platform_com_std=pstd[1:4], platform_inertia_std=pstd[4:].reshape(3, 3),
        unconstrained=fit.x, x=x, cov=cov, names=parameter_names(rig), residual_rms=rms,
        rank=fit.rank, condition_number=fit.condition_number, holdout=holdouts,
        warnings=warnings, n_frames=int(a.shape[0]))


def _holdout_check(rig: Rig, cap: CaptureMotion, x: np.ndarray,
                   weights: np.ndarray) -> HoldoutCheck:
    """Identify the held-out load (10 parameters, platform frame) with the calibrated rig."""
    y, w = equation_terms(rig, cap)
    ok = cap.valid & np.all(np.isfinite(y), axis=(1, 2)) & np.all(np.isfinite(w), axis=(1, 2))
    rhs = (w @ x[10:])[ok] - (y @ x[:10])[ok]
    fit = solve_wls(y[ok], rhs, row_weights=weights)
    ident = InertialParams(fit.x)
    known = cap.load
    i_max = float(np.linalg.eigvalsh(known.inertia_com)[-1])
    return HoldoutCheck(
        capture=cap.name, mass_error_kg=ident.mass - known.mass,
        com_error_m=float(np.linalg.norm(ident.com - known.com)),
        inertia_error_rel=float(np.abs(ident.inertia_com - known.inertia_com).max() / i_max),
        identified=ident)
