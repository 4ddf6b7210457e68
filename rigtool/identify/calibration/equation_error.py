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
(HAC sandwich, rigtool.lsq). Row weights: 1/sigma per wrench component, from a
first unweighted pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.errors import IdentifiabilityError
from rigtool.identify.common.consistency import consistency_constraints, solve_triangle
from rigtool.lsq import (compensated_triangle, noise_moments, reduce_to_triangle,
                         solve_compensated, solve_wls)
from rigtool.identify.common.propagate import propagate
from rigtool.identify.common.platform_motion import CaptureMotion, equation_rows, row_names
from rigtool.inertia import InertialParams, regressor_body
from rigtool.rig import Rig, spring_wrench_regressor

def _body_rows(rot: np.ndarray, cols_lab: np.ndarray) -> np.ndarray:
    """Lab-component wrench columns ``[T, 6, K]`` to platform components."""
    rt = np.swapaxes(rot, -1, -2)
    return np.concatenate([rt @ cols_lab[:, :3], rt @ cols_lab[:, 3:]], axis=1)


def _sym6_basis() -> np.ndarray:
    """21 symmetric 6x6 basis matrices ``[21, 6, 6]`` (upper triangle, row-major)."""
    out = []
    for i in range(6):
        for j in range(i, 6):
            e = np.zeros((6, 6))
            e[i, j] = e[j, i] = 1.0
            out.append(e)
    return np.array(out)


def pose_deviation(rotation: np.ndarray, position_m: np.ndarray, reference: tuple) -> np.ndarray:
    """``q [T, 6]``: translation (lab, m) and rotation vector (lab, rad) from a reference pose."""
    r_ref, p_ref = reference
    rel = np.einsum("tij,kj->tik", rotation, r_ref)
    ok = np.all(np.isfinite(rel), axis=(1, 2))
    rv = np.full(position_m.shape, np.nan)
    rv[ok] = Rotation.from_matrix(rel[ok]).as_rotvec()
    return np.concatenate([position_m - p_ref, rv], axis=1)


def equation_terms(rig: Rig, cap: CaptureMotion, *,
                   stiffness_reference: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(Y [T, r, 10], W [T, r, 3S (+21)])`` of one capture (rows: :func:`equation_rows`).

    ``Y`` comes from the filtered kinematics; the elastic spring columns from the raw pose,
    passed through the same filter; the damping columns from the filtered velocities. With
    ``stiffness_reference`` (a pose), 21 more columns model a residual symmetric 6x6
    stiffness ``w = -K q`` (lab components, q from that pose) for effects the axial springs
    lack (lateral spring stiffness, cable bending): :func:`residual_stiffness_terms`.
    """
    rt = np.swapaxes(cap.rotation, -1, -2)
    a_minus_g = np.einsum("tij,tj->ti", rt, cap.accel_lab - rig.gravity_lab)
    y = regressor_body(a_minus_g, cap.omega_body, cap.omega_dot_body)
    n_spr = len(rig.springs)
    w_el = spring_wrench_regressor(rig, cap.rotation_raw, cap.position_raw)[..., : 2 * n_spr]
    cols = [cap.filt(_body_rows(cap.rotation_raw, w_el))]
    w_damp = spring_wrench_regressor(rig, cap.rotation, cap.position, cap.velocity_lab,
                                     cap.omega_lab)[..., 2 * n_spr:]
    cols.append(_body_rows(cap.rotation, w_damp))
    w = equation_rows(rig, cap.rotation, np.concatenate(cols, axis=2))
    if stiffness_reference is not None:
        w = np.concatenate([w, residual_stiffness_terms(rig, cap, stiffness_reference)],
                           axis=2)
    return equation_rows(rig, cap.rotation, y), w


def residual_stiffness_terms(rig: Rig, cap: CaptureMotion, reference: tuple) -> np.ndarray:
    """The 21 residual-stiffness columns ``[T, r, 21]`` that :func:`equation_terms` appends
    to ``W`` with a ``stiffness_reference`` (each column is filtered and turned to rows on
    its own, so the others need not be formed again)."""
    q = pose_deviation(cap.rotation_raw, cap.position_raw, reference)
    w_k = -np.einsum("kij,tj->tik", _sym6_basis(), q)            # [T, 6, 21], lab, about p
    return equation_rows(rig, cap.rotation, cap.filt(_body_rows(cap.rotation_raw, w_k)))


def parameter_names(rig: Rig, *, residual_stiffness: bool = False) -> list[str]:
    """Names of the unknowns ``x`` in order."""
    from rigtool.inertia import PARAM_NAMES
    names = [f"platform.{n}" for n in PARAM_NAMES]
    for kind in ("stiffness", "k_free_length", "damping"):
        names += [f"{s.name}.{kind}" for s in rig.springs]
    if residual_stiffness:
        dofs = ("x", "y", "z", "rx", "ry", "rz")
        names += [f"K_residual.{dofs[i]}{dofs[j]}" for i in range(6) for j in range(i, 6)]
    return names


@dataclass(frozen=True)
class HoldoutCheck:
    """A reference body identified as an unknown, against its known values."""

    capture: str
    mass_error_kg: float
    com_error_m: float
    inertia_error_rel: float          # max |error| / largest principal moment
    identified: InertialParams        # in the platform frame
    known: InertialParams
    com_std_m: np.ndarray | None = None           # standard errors of the identified COM
    inertia_std_rel: float = float("nan")         # max std of inertia_com / largest moment
    inertia_com_std: np.ndarray | None = None     # standard errors of inertia_com, kg m^2
    signature: object | None = None               # what the fit says beyond its errors
                                                  # (verdict.HoldoutSignature)


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
    residual_stiffness: np.ndarray | None = None       # 6x6, N/m, N, N m/rad (lab axes)
    residual_stiffness_std: np.ndarray | None = None
    stiffness_reference: tuple | None = None


def _rows_of(cap: CaptureMotion, y: np.ndarray, w: np.ndarray):
    ok = cap.valid & np.all(np.isfinite(y), axis=(1, 2)) & np.all(np.isfinite(w), axis=(1, 2))
    return np.concatenate([y, -w], axis=2), -(y @ cap.load.pi), ok


def _capture_rows(rig: Rig, cap: CaptureMotion, reference: tuple | None) -> list:
    """The rows ``(A [T, r, P], b [T, r], ok [T])`` of one capture: the design without the
    residual stiffness, and with ``reference`` a second one with it (its 21 columns
    appended: :func:`residual_stiffness_terms`)."""
    y, w = equation_terms(rig, cap)
    designs = [_rows_of(cap, y, w)]
    if reference is not None:
        w_k = np.concatenate([w, residual_stiffness_terms(rig, cap, reference)], axis=2)
        designs.append(_rows_of(cap, y, w_k))
    return designs


def _probe_noise(rows: list, valid: np.ndarray, n_fit: int):
    """Noise samples ``(dA [K, M, R, P], db [K, M, R], n_fit)`` from the rows of a capture's
    probes (``rows``: :func:`_rows_of` of each)."""
    ok = valid.copy()
    for _, _, o in rows:
        ok &= o
    if ok.sum() < 10:
        return None
    a0, b0, _ = rows[0]
    da = np.stack([a[ok] - a0[ok] for a, _, _ in rows[1:]])
    db = np.stack([bb[ok] - b0[ok] for _, bb, _ in rows[1:]])
    return da, db, n_fit


def _stack(rig: Rig, captures: list[CaptureMotion], reference: tuple | None) -> list:
    """The stacked designs ``(A, b, block, probes)`` of ``captures``: without the residual
    stiffness, and with ``reference`` a second one with it. Every capture's and every noise
    probe's terms are formed once for both."""
    n_designs = 1 if reference is None else 2
    parts = [([], [], [], []) for _ in range(n_designs)]
    for i, cap in enumerate(captures):
        rows = _capture_rows(rig, cap, reference)
        probe_rows = [_capture_rows(rig, pr, reference) for pr in cap.noise_probes]
        for d, (a_all, b_all, blk, probes) in enumerate(parts):
            a, b, ok = rows[d]
            a_all.append(a[ok])
            b_all.append(b[ok])
            blk.append(np.full(int(ok.sum()), i))
            if probe_rows:
                pr = _probe_noise([r[d] for r in probe_rows], cap.valid, int(ok.sum()))
                if pr is not None:
                    probes.append(pr)
    out = []
    for a_all, b_all, blk, probes in parts:
        if probes and len(probes) < len(captures):
            probes = []                 # all or nothing: a partial correction would bias
        out.append((np.concatenate(a_all), np.concatenate(b_all), np.concatenate(blk),
                    probes))
    return out


def _explain_rank(names: list[str], a: np.ndarray) -> str:
    """Name the parameters in the weakest direction of the design."""
    flat = a.reshape(-1, a.shape[-1])
    scale = np.linalg.norm(flat, axis=0)
    scale[scale == 0] = 1.0
    _, s, vt = np.linalg.svd(flat / scale, full_matrices=False)
    weak = vt[-1]
    idx = np.argsort(-np.abs(weak))[:4]
    return ", ".join(names[i] for i in idx if abs(weak[i]) > 0.1)


def _weighted_fit(a, b, blk, lag, rcond, names, probes):
    first = solve_wls(a, b, block=blk, rcond=rcond)
    if first.rank < a.shape[2]:
        raise IdentifiabilityError(
            f"the calibration captures determine only {first.rank} of {a.shape[2]} unknowns; "
            f"weakly determined: {_explain_rank(names, a)}. Add captures with reference "
            "bodies at other mounts (offset along x and y, and heavier) and excite all six "
            "platform motions")
    sigma = np.sqrt(np.mean(first.residual ** 2, axis=0))
    weights = 1.0 / np.where(sigma > 0, sigma, 1.0)
    if probes:
        aa, ab = noise_moments(probes, weights)
        fit = solve_compensated(a, b, aa, ab, row_weights=weights, block=blk, max_lag=lag,
                                rcond=rcond)
        if fit.rank == a.shape[2]:
            return fit, weights
    return solve_wls(a, b, row_weights=weights, block=blk, max_lag=lag, rcond=rcond), weights


def calibrate_motion(rig: Rig, captures: list[CaptureMotion], *, consistent: bool = True,
                     residual_stiffness: bool = False, rcond: float = 1e-9) -> CalibrationResult:
    """Calibrate springs and platform from prepared captures (see module docstring).

    Parameters
    ----------
    rig : Rig
        Geometry (anchors, attachments, gravity, locked DOFs); spring values are ignored.
    captures : list of CaptureMotion
        Prepared captures with their known loads (platform frame); ``holdout`` ones are
        left out of the fit and identified afterwards as a check.
    consistent : bool
        Enforce a physically consistent platform (pseudo-inertia LMI), k > 0 and c >= 0.
    residual_stiffness : bool
        Add a symmetric 6x6 residual stiffness (lab axes, about the platform origin, from
        the first capture's mean pose) for effects the axial springs lack.

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
    lag = max(c.correlation_frames for c in fit_caps)
    c0 = fit_caps[0]
    ok0 = c0.valid & np.all(np.isfinite(c0.position_raw), axis=1)
    reference = (Rotation.from_matrix(c0.rotation_raw[ok0]).mean().as_matrix(),
                 c0.position_raw[ok0].mean(axis=0))
    warnings: list[str] = [w for c in captures for w in c.warnings]

    (a, b, blk, probes), (a_k, b_k, blk_k, probes_k) = _stack(rig, fit_caps, reference)
    base_names = parameter_names(rig)
    fit, weights = _weighted_fit(a, b, blk, lag, rcond, base_names, probes)
    # Does the data show an effect the axial-spring model lacks? Fit the residual stiffness
    # and look at its significance and at how much of the residual it explains.
    fit_k, weights_k = _weighted_fit(a_k, b_k, blk_k, lag, rcond,
                                     parameter_names(rig, residual_stiffness=True), probes_k)
    n_base = a.shape[2]
    z = np.abs(fit_k.x[n_base:]) / np.where(fit_k.std[n_base:] > 0, fit_k.std[n_base:], 1.0)
    rms0 = np.sqrt(np.mean(fit.residual ** 2, axis=0))
    rms1 = np.sqrt(np.mean(fit_k.residual ** 2, axis=0))
    gain = 1.0 - rms1 / np.where(rms0 > 0, rms0, 1.0)
    if not residual_stiffness and z.max() > 5.0 and gain.max() > 0.05:
        rows = row_names(rig)
        j = int(np.argmax(gain))
        warnings.append(
            f"the residuals show an effect the axial-spring model lacks (e.g. lateral spring "
            f"stiffness): a residual 6x6 stiffness is significant (max {z.max():.0f} standard "
            f"errors) and removes {100 * gain[j]:.0f}% of the {rows[j]} residual; rerun with "
            "--residual-stiffness")
    if residual_stiffness:
        a, b, blk, fit, weights, probes = a_k, b_k, blk_k, fit_k, weights_k, probes_k
    names = parameter_names(rig, residual_stiffness=residual_stiffness)
    x = fit.x.copy()
    n_spr = len(rig.springs)
    if consistent:
        if probes:
            rq, zz = compensated_triangle(a, b, *noise_moments(probes, weights), weights)
        else:
            rq, zz, _ = reduce_to_triangle(a, b, weights)
        scale = np.where(np.abs(x) > 0, np.abs(x), 1.0)

        def constraints(xv):
            return consistency_constraints(xv[:10]) + [xv[10:10 + n_spr] >= 0,
                                                       xv[10 + 2 * n_spr:10 + 3 * n_spr] >= 0]

        if not (InertialParams(x[:10]).is_physically_consistent()
                and np.all(x[10:10 + n_spr] > 0)
                and np.all(x[10 + 2 * n_spr:10 + 3 * n_spr] >= 0)):
            x = solve_triangle(rq, zz, constraints_for=constraints, x0=x, scale=scale)
            diff = np.abs(x - fit.x) / np.where(fit.std > 0, fit.std, 1.0)
            if np.any(diff > 2.0):
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

    _, pcov = propagate(platform_props, x[:10], cov[:10, :10])
    pstd = np.sqrt(np.clip(np.diag(pcov), 0, None))
    resid = b - np.einsum("trp,p->tr", a, x)
    rms = {name: float(np.sqrt(np.mean(resid[:, j] ** 2)))
           for j, name in enumerate(row_names(rig))}
    k_res = k_res_std = None
    if residual_stiffness:
        basis = _sym6_basis()
        k_res = np.einsum("k,kij->ij", x[n_base:], basis)
        k_res_std = np.einsum("k,kij->ij", np.sqrt(np.diag(cov)[n_base:]), basis)
    cal = CalibrationResult(
        stiffness=k, stiffness_std=k_std, free_length=kl0 / k, free_length_std=l0_std,
        damping=x[10 + 2 * n_spr:10 + 3 * n_spr],
        damping_std=np.sqrt(np.diag(cov)[10 + 2 * n_spr:10 + 3 * n_spr]),
        platform=InertialParams(x[:10]), platform_mass_std=float(pstd[0]),
        platform_com_std=pstd[1:4], platform_inertia_std=pstd[4:].reshape(3, 3),
        unconstrained=fit.x, x=x, cov=cov, names=names, residual_rms=rms,
        rank=fit.rank, condition_number=fit.condition_number, holdout=[],
        warnings=warnings, n_frames=int(a.shape[0]), residual_stiffness=k_res,
        residual_stiffness_std=k_res_std,
        stiffness_reference=reference if residual_stiffness else None)
    cal.holdout.extend(_holdout_check(rig, c, cal, weights) for c in captures if c.holdout)
    return cal


def _holdout_check(rig: Rig, cap: CaptureMotion, cal: CalibrationResult,
                   weights: np.ndarray) -> HoldoutCheck:
    """Identify the held-out load with the calibrated rig, as a user would identify an
    object: its mass known (weighed), its first moment and inertia (platform frame) unknown.
    The mass error comes from a second fit with the mass free."""
    def rows(c):
        y, w = equation_terms(rig, c, stiffness_reference=cal.stiffness_reference)
        ok = c.valid & np.all(np.isfinite(y), axis=(1, 2)) & np.all(np.isfinite(w), axis=(1, 2))
        return y, (w @ cal.x[10:]) - (y @ cal.x[:10]), ok

    known = cap.load
    y, rhs, ok = rows(cap)
    probes = []
    if cap.noise_probes:
        pr = [rows(p) for p in cap.noise_probes]
        ok_p = ok.copy()
        for _, _, o in pr:
            ok_p &= o
        dy = np.stack([p[0][ok_p] - pr[0][0][ok_p] for p in pr[1:]])
        dr = np.stack([p[1][ok_p] - pr[0][1][ok_p] for p in pr[1:]])
        probes = [(dy, dr, int(ok.sum()))]

    def solve(a, b, pr_list, n_par):
        if pr_list:
            f = solve_compensated(a, b, *noise_moments(pr_list, weights), row_weights=weights,
                                  max_lag=cap.correlation_frames)
            if f.rank == n_par:
                return f
        return solve_wls(a, b, row_weights=weights, max_lag=cap.correlation_frames)

    fit10 = solve(y[ok], rhs[ok], probes, 10)
    b9 = rhs[ok] - y[ok][:, :, 0] * known.mass
    pr9 = [(dy[..., 1:], dr - dy[..., 0] * known.mass, n) for dy, dr, n in probes]
    fit = solve(y[ok][:, :, 1:], b9, pr9, 9)
    x = np.concatenate([[known.mass], fit.x])
    ident = InertialParams(x)
    i_max = float(np.linalg.eigvalsh(known.inertia_com)[-1])

    def props(v):
        p = InertialParams(np.concatenate([[known.mass], v]))
        return np.concatenate([p.com, p.inertia_com.ravel()])

    _, pcov = propagate(props, fit.x, fit.cov)
    pstd = np.sqrt(np.clip(np.diag(pcov), 0, None))
    return HoldoutCheck(
        capture=cap.name, mass_error_kg=float(fit10.x[0] - known.mass),
        com_error_m=float(np.linalg.norm(ident.com - known.com)),
        inertia_error_rel=float(np.abs(ident.inertia_com - known.inertia_com).max() / i_max),
        identified=ident, known=known, com_std_m=pstd[:3],
        inertia_std_rel=float(pstd[3:].max() / i_max), inertia_com_std=pstd[3:].reshape(3, 3))
