"""Output-error (maximum-likelihood) refinement of the relative-motion stage.

The equation-error stage (rigtool.identify.relative.equation_error) filters the markers of the swing and
differentiates them twice to build paper 002's eq. 16; noise then sits on both sides of the
equation and the filter shapes the motion. Here nothing is filtered: the platform (with the
base link bolted on) on its damped springs and every moving link on its spherical joint are
*simulated* from an initial state (rigtool.engine.tree: articulated-body dynamics with exact
forward-mode sensitivities, written independently of rigtool.sim and tested against it and
against an independent Kane's-method model in the tests), every platform and link
marker is predicted, and the sum
of squared raw-marker residuals is minimised (the initial state alone, then every unknown
on growing horizons) by Levenberg-Marquardt on normal equations with projected box bounds
and geodesic acceleration (rigtool.engine.lm via ``fit_common.solve_bounded``), starting
from the equation-error :class:`RelativeResult`.

Parameters: the motion depends on the object only through ``Phi_B`` and ``M0`` (module
docstring of rigtool.engine.tree: each moving link carries ``[0, MS_j, J_j]``, its subtree mass
sits on its joint). Unknowns:

- ``free="jyy"``: the moving links' ``J_yy`` (``Phi_B = G Phi_s + H u`` of
  rigtool.identify.relative.bounds.phi_b_affine), Phi_s held at the postures' estimate; its
  covariance is propagated into the result to first order (``du/dPhi_s`` from the exact
  sensitivities), as the equation-error two-step method does;
- ``free="phi_b"`` (default; see :func:`refine_relative` for the evidence): every entry of
  Phi_B, with the postures' Phi_s as a prior
  (``sigma_marker C_s^-1/2 (S Phi_B - Phi_s)`` rows appended to the marker residuals, so the
  Gauss-Newton covariance scaled by the marker variance is that of the combined estimate;
  ``sigma_marker`` from the rigid fits' residuals of every marker set, independent of the
  model);
- the joint damping: one per joint (default) or one shared by every joint;
- the base link's pose on the platform (from the base link's markers; optional);
- the capture's initial state: platform position, rotation vector (about the marker-fitted
  pose), velocity and angular velocity; each moving link's rotation vector (about its
  marker-fitted pose, lab axes) and absolute angular velocity.

Single shooting with a growing horizon (as rigtool.identify.posture.output_error): first the initial
state alone on a short horizon, then everything on a horizon lengthened geometrically up to
the window. The swing of a few degrees decays slowly and the model is deterministic and
smooth, so one trajectory tracks a 10 s window to the marker noise when the model is right.

Bounds: each moving link's ``J_yy`` is kept inside its physically consistent interval
(rigtool.identify.relative.bounds.feasible_intervals: pseudo-inertia LMIs given Phi_s and M0) as
box bounds of the solver; an estimate within 1e-6 of a bound is flagged. Joint damping >= 0.
With ``free="phi_b"`` Phi_s moves with the fit, so the fit runs unbounded and the estimate is
checked against the intervals of its own Phi_s; outside, the last stage is rerun with those
bounds (on the four-link swing the postures' intervals as a fixed box held one ``J_yy`` on a
bound that the truth lies beyond, and the fit compensated elsewhere: 0.36 % error).

Measured (benchmarks/relative.py --posture-method output-error --relative-method
output-error, true rig, sigma 0.1 mm): two-link demo, 10 seeds: Phi_B E_MS/M0 median 0.0043
mm (max 0.0080), E_J/Im 0.015 % (max 0.031), coverage of +-2 std 0.944 (equation-error
start: 0.0117 mm, 0.084 %); 53-73 s per refinement with the machine's two cores shared by
~7 processes (18 s alone). Four-link (output-error postures, subset rank tolerance 1e-4),
seeds 0-4: E_MS/M0 0.0014-0.0031 mm, E_J/Im 0.006-0.043 %, coverage 0.94 (equation-error
start: 0.006-0.009 mm, 0.11-0.15 %); 160-280 s per refinement on the shared machine.

Uncertainty: ``s^2 (J^T J)^-1`` (marker noise) plus, to first order, Phi_s's covariance
(``free="jyy"``) and optionally the calibration's (``calibration_std`` as
rigtool.identify.posture.output_error takes it). The base link's pose on the platform is an unknown
(``fit_base``), so its uncertainty is in the Gauss-Newton covariance.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.errors import InputError, IdentifiabilityError
from rigtool.calibration_uncertainty import calibration_members_of
from rigtool.identify.common.output_error import start_state, window_frames
from rigtool.identify.relative.problem import RelativeProblem
from rigtool.identify.relative.fit_common import (checked_phi_s, fit_growing_horizon,
                                                  fit_initial_state, jyy_bounds, object_start,
                                                  marker_noise_covariance,
                                                  phi_b_covariance, platform_noise_mm,
                                                  refinement_scores,
                                                  solve_bounded, unconverged_warning)
from rigtool.identify.relative.streamed_rows import marker_cross_products
from rigtool.identify.common.platform_motion import marker_sigma_from_residual
from rigtool.identify.relative.bounds import (_phi_s_matrix, feasible_intervals,
                                              link_lower_bounds)
from rigtool.identify.relative.equation_error import RelativeResult
from rigtool.identify.relative.oe_result import (REACHED_NOISE_FACTOR, ModelMismatch,
                                                 RelativeRefinement)
from rigtool.inertia import InertialParams
from rigtool.kinematics.pose import fit_pose
from rigtool.mocap import MarkerData
from rigtool.rig import Rig
from rigtool.tree import Tree, phi_b_names, phi_s_from_phi_b

FREE = ("jyy", "phi_b")
DAMPING = ("per-joint", "shared")


# --------------------------------------------------------------------------- the stage

def refine_relative(tree: Tree, rig: Rig, platform: InertialParams, data: MarkerData,
                    markers: dict[str, dict[str, np.ndarray]], *, start: RelativeResult,
                    phi_s_cov: np.ndarray, total_mass_kg: float,
                    base_pose: tuple[np.ndarray, np.ndarray] | None = None,
                    window: tuple[float, float] | None = None,
                    calibration_std: dict | None = None, free: str = "phi_b",
                    damping: str = "per-joint", phi_s: np.ndarray | None = None,
                    damping_start: float = 0.05, substeps: int = 1, fit_base: bool = True,
                    first_horizon_s: float = 0.5, horizon_factor: float = 2.0,
                    ftol: float = 1e-8, max_nfev: int = 30,
                    reject_above: float | None = None) -> RelativeRefinement:
    """Refine Phi_B by fitting the simulated swing (platform on springs, links on damped
    spherical joints) to the raw markers of the relative-motion capture.

    Parameters
    ----------
    tree : Tree
        The object (joint centres needed).
    rig : Rig
        Calibrated rig (springs with damping, gravity, locked DOFs).
    platform : InertialParams
        Calibrated platform, platform frame about its origin.
    data : MarkerData
        The relative-motion capture (raw markers; NaN masked).
    markers : dict
        Link name -> marker name -> link-frame xyz, m (the base link's included).
    start : RelativeResult
        The equation-error stage's result on the same capture (starting point).
    phi_s_cov : ndarray
        Covariance of the postures' Phi_s.
    total_mass_kg : float
        Weighed mass ``M0``.
    base_pose : (R, p), optional
        The base link's pose on the platform; default the mean from the capture (as
        :func:`rigtool.identify.relative.regression.relative_system`).
    window : (t0, t1), optional
        Time span fitted, s; default the whole capture.
    calibration_std : dict, optional
        Standard errors of the calibrated rig (as :func:`refine_posture` takes them); their
        effect is added to the covariance.
    free : {"phi_b", "jyy"}
        Unknowns of the object: all of Phi_B (Phi_s as a prior; default) or the moving
        links' ``J_yy`` (Phi_s fixed, its covariance propagated). Default ``"phi_b"``: with
        Phi_s from output-error postures held fixed, the two-link demo's swing is fitted to
        0.37 mm (platform) and 1.07 mm (moving link) RMS against 0.1 mm marker noise, i.e.
        Phi_s's own errors (~0.1 % of the largest moment) already exceed what the swing
        resolves; with Phi_B free every marker set fits to 0.100 mm. Falls back to ``"jyy"``
        (with a warning) when ``phi_s_cov`` is not a usable covariance.
    damping : {"per-joint", "shared"}
        One viscous damping per joint or one for all.
    phi_s : ndarray, optional
        The postures' Phi_s; default ``phi_s_from_phi_b(start.values)`` (equal to the
        postures' Phi_s for the two-step start).
    damping_start : float
        Starting joint damping, N m s/rad.
    fit_base : bool
        Fit the base link's pose on the platform too (6 unknowns, from the base markers;
        default). Held at ``base_pose`` otherwise: on the demo swing its marker-averaged
        error alone put the moving link's ``MS_x`` 5.5 standard errors off.
    substeps : int
        RK4 steps per frame (1 tracks the reference simulator to a few micrometres over 5 s
        at 100 Hz; 2 to 0.2 um).
    first_horizon_s, horizon_factor, ftol, max_nfev
        Growing-horizon schedule and the solver's stopping rules per stage. The horizon
        starts short and doubles: the start's Phi_B predicts a many-link swing for well
        under a second (15 links, equation-error start: 17 mm RMS over 2 s with the best
        initial state), and each doubling starts inside Gauss-Newton's reach of the next
        optimum. Measured (benchmarks/RESULTS.md, "Speed and memory"): 2 s and 4x ended at 0.103 mm
        against 0.100 mm noise at 15 links after 394 s; 0.5 s and 4x reached the noise at
        15 links but ended at 1.1 mm at 8; 0.5 s and 2x reached it at both (97 s and 38 s).
        On small trees the extra stages cost little: the two-link demo swing 3.9 s, against
        4.3 s with the old schedule and scipy's solver.
    reject_above : float, optional
        Stop with :class:`ModelMismatch` when the first horizon's residual (initial state
        fitted, parameters at the start) exceeds this multiple of the marker noise: a limb
        moved by muscles is told from a free swing in seconds, before the whole fit.

    Returns
    -------
    RelativeRefinement

    Raises
    ------
    InputError
        Too few frames, a link without markers.
    IdentifiabilityError
        Phi_s incomplete.
    """
    t_start = time.perf_counter()
    if free not in FREE:
        raise ValueError(f"free must be one of {FREE}")
    if damping not in DAMPING:
        raise ValueError(f"damping must be one of {DAMPING}")
    n = len(tree.links)
    if n < 2:
        raise IdentifiabilityError("the relative-motion stage needs at least one moving link")
    names_b = phi_b_names(tree)
    phi_s, cov_s, free, chol, warnings = checked_phi_s(n, start.values, phi_s, phi_s_cov,
                                                       free)
    # ---- markers: platform, base (bolted to the platform), moving links
    if base_pose is None:
        from rigtool.identify.common.platform_motion import relative_pose
        from rigtool.kinematics.pose import body_trajectory
        r_pb, t_pb, _ = relative_pose(body_trajectory(data, rig.platform.markers_platform),
                                      body_trajectory(data, markers[tree.links[0].name]))
    else:
        r_pb, t_pb = (np.asarray(v, float) for v in base_pose)
    sets = [("platform", 0, rig.platform.markers_platform, False)]
    for i, link in enumerate(tree.links):
        mk = markers.get(link.name, {})
        if len(mk) < 3:
            raise InputError(f"link '{link.name}' needs at least 3 markers for the "
                             "relative-motion refinement", path=data.source,
                             field=f"links[{i}].markers")
        sets.append((link.name, i, mk, i == 0))
    idx = window_frames(data, window, "a relative-motion capture")
    dt = 1.0 / data.rate_hz
    body_of, mk_body, xyz_all, mask_all, set_of, on_base = [], [], [], [], [], []
    rigid_sigma = []
    rot_ref = np.zeros((n, 3, 3))
    state0 = {}
    for s, (label, body, mk, is_base) in enumerate(sets):
        names = list(mk)
        coords = np.array([np.asarray(mk[k], float) for k in names])
        xyz = data.select(names)[idx]
        traj = fit_pose(xyz, coords, marker_names=tuple(names), time_s=data.time_s[idx])
        mask = traj.used & np.all(np.isfinite(xyz), axis=2)
        rigid_sigma.append(marker_sigma_from_residual(traj.residual_rms_m, len(names)))
        if s == 0 or body > 0:
            rr, st = start_state(traj.rotation, traj.position_m, traj.valid, dt)
            rot_ref[body] = rr
            state0[body] = st
        body_of += [body] * len(names)
        mk_body.append(coords)
        xyz_all.append(xyz)
        mask_all.append(mask)
        set_of += [label] * len(names)
        on_base += [is_base] * len(names)
    body_of = np.array(body_of)
    mk_body = np.concatenate(mk_body)
    xyz = np.concatenate(xyz_all, axis=1)
    mask = np.concatenate(mask_all, axis=1)
    set_of = np.array(set_of)
    # ---- unknowns and their start
    jyy_names = [f"{l.name}.J_yy" for l in tree.links[1:]]
    jyy_idx = np.array([9 * i + 4 for i in range(1, n)])
    n_damp = n - 1 if damping == "per-joint" else 1
    # with Phi_B free, Phi_s moves with it, so the postures' intervals are not the right box:
    # fit unbounded, then check the estimate against its own intervals (below)
    obj = object_start(free, n, start.values, phi_s, total_mass_kg)
    theta0, lo_t, hi_t, intervals = obj.theta0, obj.lo, obj.hi, obj.intervals
    if obj.empty:
        warnings.append("Phi_s admits no physically consistent set of links (the J_yy "
                        "intervals are empty); those J_yy are not bounded")
    damp0 = np.full(n_damp, float(damping_start))
    plat_st = state0[0]
    st0 = np.concatenate([plat_st[:3], plat_st[3:6]]
                         + [state0[b][3:6] for b in range(1, n)]
                         + [plat_st[6:9], plat_st[9:12]]
                         + [state0[b][9:12] for b in range(1, n)])
    # state layout: [p, rv_0..rv_{n-1}, v, w_0..w_{n-1}]
    prob = RelativeProblem(rig, platform.pi.astype(float), tree.parent_index(),
                    np.array([tree.joint_center(i) for i in range(n)]), r_pb, t_pb,
                    float(total_mass_kg), body_of, mk_body, np.array(on_base),
                    np.where(mask[..., None], xyz, 0.0), mask, dt, substeps, rot_ref, free,
                    n_damp, phi_s, np.concatenate([theta0, damp0, np.zeros(6 * fit_base)]),
                    fit_base=fit_base)
    n_total = len(idx)
    # 1) the initial state on a short horizon, parameters held at the start
    prob.fit_params = False
    prob.n_frames = min(n_total, max(20, int(round(first_horizon_s / dt))))
    st_first, r_first, first_stage = fit_initial_state(prob, st0, max_nfev)
    iterations = first_stage[1]
    stage_log = [first_stage]
    # the marker sets' own scatter, the residual's floor and the prior's weight: from the
    # rigid fits of every marker set (no model involved); the short first fit's RMS when
    # those are unusable
    sigma_mm = 1e3 * float(np.nanmedian(rigid_sigma)) if np.any(np.isfinite(rigid_sigma)) \
        else float("nan")
    if not (np.isfinite(sigma_mm) and sigma_mm > 0):
        sigma_mm = float(np.sqrt(np.mean(r_first ** 2)))
    sigma_mm = max(sigma_mm, 1e-3)          # 1 um: no capture is better (simulated noise-free)
    first_rms = float(np.sqrt(np.mean(r_first ** 2)))
    if reject_above is not None and first_rms > reject_above * sigma_mm:
        raise ModelMismatch(first_rms, sigma_mm, prob.n_frames * dt,
                            time.perf_counter() - t_start,
                            noise_mm=platform_noise_mm(rigid_sigma, sigma_mm))
    if free == "phi_b":
        w_s = np.linalg.solve(chol, np.eye(chol.shape[0]))           # C_s^-1/2 (lower)
        prob.prior_rows = sigma_mm * (w_s @ _phi_s_matrix(n))
        prob.prior_rhs = sigma_mm * (w_s @ phi_s)
    # 2) everything on a growing horizon
    prob.fit_params = True
    x = np.concatenate([prob.theta_fixed, st_first])
    n_free = st_first.size + 6 * fit_base
    lo = np.concatenate([lo_t, np.zeros(n_damp), np.full(n_free, -np.inf)])
    hi = np.concatenate([hi_t, np.full(n_damp, np.inf), np.full(n_free, np.inf)])
    x, its, stages, horizons, converged = fit_growing_horizon(prob, x, lo, hi, n_total,
                                                              horizon_factor, dt, ftol, max_nfev)
    iterations += its
    stage_log += stages
    if free == "phi_b":
        # physical consistency of the estimate (J_yy intervals given its own Phi_s and M0);
        # outside: refit with those intervals as bounds, from the clipped estimate
        phi_s_hat = phi_s_from_phi_b(prob.split(x)[0])
        intervals = feasible_intervals(link_lower_bounds(phi_s_hat, n, total_mass_kg),
                                       phi_s_hat[-1])
        lo_t, hi_t = jyy_bounds(free, n, intervals)
        empty = lo_t >= hi_t
        lo_t[empty], hi_t[empty] = -np.inf, np.inf
        th = x[:prob.n_theta]
        if np.any(th < lo_t) or np.any(th > hi_t):
            lo[:prob.n_theta], hi[:prob.n_theta] = lo_t, hi_t
            width = np.where(np.isfinite(hi_t - lo_t), hi_t - lo_t, 1.0)
            x = x.copy()
            x[:prob.n_theta] = np.clip(th, lo_t + 1e-6 * width, hi_t - 1e-6 * width)
            x, nfev, njev, converged = solve_bounded(prob, x, lo, hi, ftol, max_nfev)
            iterations += nfev
            stage_log.append((prob.n_frames * dt, nfev, njev))
    if not converged:
        warnings.append(unconverged_warning(max_nfev, prob.n_frames * dt))
    # ---- covariance
    r, jac = prob.residual(x), prob.jacobian(x)
    n_mark = int(mask.sum()) * 3
    r_m = r[:n_mark]
    dof = max(n_mark - x.size, 1)
    s2 = float(r_m @ r_m) / dof
    info_inv = np.linalg.pinv(prob.normal(x).jtj)
    n_theta = prob.n_theta
    theta, damp_hat, st_hat, base_hat = prob.split(x)
    r_pb_hat, t_pb_hat = prob.base_pose(base_hat)
    phi_b = prob.phi_b(theta)
    members = ([] if calibration_std is None
               else calibration_members_of(rig, platform, calibration_std))
    cov_noise_x, standard_errors = marker_noise_covariance(
        prob, info_inv, s2, refinement_scores(jac, r_m, mask), n_mark, data.rate_hz)
    cov = phi_b_covariance(prob, info_inv, s2, cov_s,
                           *marker_cross_products(prob, x, jac, n_mark, members),
                           cov_x_noise=cov_noise_x)
    cov_b, cov_b_noise, cov_x = cov.cov, cov.cov_noise, cov.cov_x
    std_b = np.sqrt(np.clip(np.diag(cov_b), 0, None))
    std_b_noise = np.sqrt(np.clip(np.diag(cov_b_noise), 0, None))
    std_x = np.sqrt(np.clip(np.diag(cov_x), 0, None))
    jyy = phi_b[jyy_idx]
    jyy_std = std_b[jyy_idx]
    on_bound = []
    for k, nm in enumerate(jyy_names):
        t_k = jyy[k]
        if np.isfinite(lo_t[_jyy_pos(free, k)]):
            scale = max(abs(intervals[k, 1] - intervals[k, 0]), 1e-12)
            if min(abs(t_k - intervals[k, 0]), abs(t_k - intervals[k, 1])) < 1e-6 * scale:
                on_bound.append(nm)
    if on_bound:
        warnings.append("the output-error J_yy sit on the physically consistent interval's "
                        "bound (" + ", ".join(on_bound) + ")")
    damp_names = [l.name for l in tree.links[1:]] if damping == "per-joint" else ["shared"]
    # ---- residuals per marker set and per frame
    res = np.zeros(mask.shape + (3,))
    res[mask] = r_m.reshape(-1, 3)
    rms = {}
    for label in dict.fromkeys(set_of):
        cols = set_of == label
        cnt = mask[:, cols].sum()
        rms[str(label)] = float(np.sqrt((res[:, cols] ** 2).sum() / (3 * cnt))) if cnt else float("nan")
    seen = mask.sum(1)
    per_frame = np.full(n_total, np.nan)
    per_frame[seen > 0] = np.sqrt((res[seen > 0] ** 2).sum((1, 2)) / (3 * seen[seen > 0]))
    if np.isfinite(sigma_mm) and np.sqrt(s2) > 1.5 * sigma_mm:
        warnings.append(f"relative motion: the fitted swing leaves {np.sqrt(s2):.3f} mm RMS "
                        f"marker residuals against {sigma_mm:.3f} mm marker scatter (rigid "
                        "fits): the fit did not reach the data (a start too far off, or a "
                        "model error: reached_noise() is False); do not use its Phi_B")
    tenth = max(1, n_total // 10)
    early, late = np.nanmean(per_frame[:tenth] ** 2), np.nanmean(per_frame[-tenth:] ** 2)
    if (np.isfinite(early) and np.isfinite(late) and max(early, late) > 2.0 * min(early, late)
            and max(early, late) > 1.5 * s2):
        warnings.append(f"relative motion: marker residuals grow or shrink along the capture "
                        f"(RMS {np.sqrt(early):.3f} mm early, {np.sqrt(late):.3f} mm late): "
                        "the simulated swing drifts from the data (rig or joint model?)")
    rv = st_hat[3:3 + 3 * n].reshape(n, 3)
    rot0 = Rotation.from_rotvec(rv).as_matrix() @ rot_ref
    init = {"time_s": float(data.time_s[idx[0]]), "position_m": st_hat[:3].copy(),
            "rotation": rot0[0], "velocity_lab": st_hat[3 + 3 * n:6 + 3 * n].copy(),
            "omega_lab": st_hat[6 + 3 * n:9 + 3 * n].copy(),
            "links": {l.name: {"rotation_lab": rot0[i],
                               "omega_lab": st_hat[6 + 3 * n + 3 * i:9 + 3 * n + 3 * i].copy()}
                      for i, l in enumerate(tree.links) if i > 0}}
    return RelativeRefinement(
        names=names_b, phi_b=phi_b, phi_b_cov=cov_b, phi_b_std=std_b,
        phi_b_std_noise=std_b_noise,
        jyy={k: float(v) for k, v in zip(jyy_names, jyy)},
        jyy_std={k: float(v) for k, v in zip(jyy_names, jyy_std)},
        bounds={k: (float(iv[0]), float(iv[1])) for k, iv in zip(jyy_names, intervals)},
        joint_damping={k: float(v) for k, v in zip(damp_names, damp_hat)},
        joint_damping_std={k: float(v) for k, v in
                           zip(damp_names, std_x[n_theta:n_theta + n_damp])},
        residual_rms_mm=rms, marker_sigma_mm=float(np.sqrt(s2)), n_residuals=int(n_mark),
        iterations=int(iterations), elapsed_s=time.perf_counter() - t_start,
        horizons_s=tuple(horizons), stages=tuple(stage_log), on_bound=on_bound, free=free,
        start=start, initial_state=init, time_s=data.time_s[idx],
        residual_rms_frame_mm=per_frame, warnings=warnings, base_pose=(r_pb_hat, t_pb_hat),
        base_pose_std=(std_x[n_theta + n_damp:n_theta + n_damp + 6].copy() if fit_base
                       else np.zeros(6)), noise_mm=platform_noise_mm(rigid_sigma, sigma_mm),
        scatter_mm=float(sigma_mm), standard_errors=standard_errors)


def _jyy_pos(free: str, k: int) -> int:
    return k if free == "jyy" else 9 * (k + 1) + 4


# re-exported: the result types live in rigtool.identify.relative.oe_result
__all__ = ["RelativeRefinement", "refine_relative", "ModelMismatch", "FREE", "DAMPING",
           "REACHED_NOISE_FACTOR"]
