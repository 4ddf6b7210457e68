"""Output-error refinement of Phi_B for links moved by muscles (active relative motion).

The passive model (:mod:`rigtool.identify.relative.output_error`) simulates free, damped
swings; a person lifting a leg drives the joint with torques nobody measures, and that model
cannot follow them. The torques are internal to the object, so the platform's motion depends
only on how the links move relative to it: here each moving link's relative rotation is
taken from its markers (a smoothing spline on SO(3), :mod:`rigtool.kinematics.relative_spline`)
as a prescribed input, only the platform is simulated (:mod:`rigtool.engine.prescribed`), and
Phi_B (with Phi_s as a prior, or the J_yy alone), the base pose and the platform's initial
state are fitted to the platform's and the base link's markers.

Uncertainty: the marker noise of the fitted markers (Gauss-Newton covariance), Phi_s's
(``jyy`` mode) and the calibration's (as the passive fit), plus the prescribed input's own
noise by probes: the moving links' markers are perturbed by their measured noise (its
spectrum when they wander on the skin), the splines refitted, and the estimate's
first-order shift computed; the probes' spread is added.
"""

from __future__ import annotations

import time

import numpy as np

from rigtool.calibration_uncertainty import calibration_members_of
from rigtool.errors import IdentifiabilityError, InputError
from rigtool.identify.common.output_error import start_state, window_frames
from rigtool.identify.common.platform_motion import marker_sigma_from_residual, relative_pose
from rigtool.identify.relative.active_problem import ActiveProblem
from rigtool.identify.relative.equation_error import RelativeResult
from rigtool.identify.relative.fit_common import (checked_phi_s, fit_growing_horizon,
                                                  fit_initial_state,
                                                  marker_noise_covariance, object_start,
                                                  phi_b_covariance, platform_noise_mm,
                                                  refinement_scores,
                                                  unconverged_warning)
from rigtool.identify.common.probe_covariance import shrunk_covariance
from rigtool.identify.relative.input_noise import marker_residuals, probe_noise, wanders
from rigtool.identify.relative.streamed_rows import marker_cross_products
from rigtool.identify.relative.bounds import _phi_s_matrix
from rigtool.identify.relative.oe_result import RelativeRefinement
from rigtool.inertia import InertialParams
from rigtool.kinematics.pose import fit_pose
from rigtool.kinematics.relative_spline import (chain_roots, fit_relative_rotations,
                                                prescribed_inputs)
from rigtool.mocap import MarkerData
from rigtool.rig import Rig
from rigtool.tree import Tree, phi_b_names

METHOD = "output-error (prescribed motion)"
#: frames either side of the window also given to the splines (no end effects inside it), s
SPLINE_MARGIN_S = 0.5


def _names_coords(markers: dict) -> tuple[list[str], np.ndarray]:
    """A marker set's names and their places on its body ``[K, 3]`` (m)."""
    names = list(markers)
    return names, np.array([np.asarray(markers[k], float) for k in names])


def _poses(data: MarkerData, markers: dict, frames: np.ndarray):
    names, coords = _names_coords(markers)
    xyz = data.select(names)[frames]
    return fit_pose(xyz, coords, marker_names=tuple(names), time_s=data.time_s[frames]), xyz, \
        coords


def _link_trajectories(tree: Tree, data: MarkerData, markers: dict, frames: np.ndarray,
                       xyz_noise: dict | None = None) -> dict:
    """Each moving link's marker-fitted poses over ``frames`` (its markers plus
    ``xyz_noise[link]`` when given: the probes)."""
    out = {}
    for link in tree.links[1:]:
        names, coords = _names_coords(markers[link.name])
        xyz = data.select(names)[frames]
        if xyz_noise is not None:
            xyz = xyz + xyz_noise[link.name]
        out[link.name] = fit_pose(xyz, coords, marker_names=tuple(names),
                                  time_s=data.time_s[frames])
    return out


def _relative_rotations(tree: Tree, link_trajs: dict, plat_rot: np.ndarray) -> list:
    """Per moving link, ``R_p^T R_j [T, 3, 3]``: its rotation relative to the platform."""
    return [np.einsum("tji,tjk->tik", plat_rot, link_trajs[link.name].rotation)
            for link in tree.links[1:]]


def _splines(tree: Tree, data: MarkerData, link_trajs: dict, plat_rot: np.ndarray,
             frames: np.ndarray, like: list | None = None):
    """Per link (None for the base) the relative rotation spline over ``frames`` (with
    ``like``: the same smoothing as those splines)."""
    rels = _relative_rotations(tree, link_trajs, plat_rot)
    try:
        return [None] + fit_relative_rotations(
            data.time_s[frames], rels, None if like is None else [s.lam for s in like[1:]])
    except ValueError:
        bad = next((link.name for link, rel in zip(tree.links[1:], rels)
                    if np.all(np.isfinite(rel), axis=(1, 2)).sum() < 5), None)
        if bad is None:
            raise
        raise InputError(f"link '{bad}' is posed in fewer than 5 frames of the "
                         "relative-motion capture", path=data.source) from None


def refine_relative_active(tree: Tree, rig: Rig, platform: InertialParams, data: MarkerData,
                           markers: dict[str, dict[str, np.ndarray]], *,
                           start: RelativeResult, phi_s_cov: np.ndarray,
                           total_mass_kg: float,
                           base_pose: tuple[np.ndarray, np.ndarray] | None = None,
                           window: tuple[float, float] | None = None,
                           calibration_std: dict | None = None, free: str = "phi_b",
                           phi_s: np.ndarray | None = None, substeps: int = 2,
                           fit_base: bool = True, first_horizon_s: float = 2.0,
                           horizon_factor: float = 8.0, ftol: float = 1e-8,
                           max_nfev: int = 30, n_probes: int = 12,
                           seed: int = 0) -> RelativeRefinement:
    """Refine Phi_B on a capture whose links are moved by muscles (see the module docstring).

    Parameters
    ----------
    tree, rig, platform, data, markers, start, phi_s_cov, total_mass_kg, base_pose, window,
    calibration_std, free, phi_s, fit_base, first_horizon_s, ftol, max_nfev
        As :func:`rigtool.identify.relative.output_error.refine_relative`.
    horizon_factor : float
        Growth of the horizon after the first (8: a 16 s capture goes from 2 s to its whole
        window in one step). Only the platform is simulated, and a 2 s fit with the
        parameters free fixes its modal frequencies to ~1e-4 Hz at 0.1 mm noise and mm
        amplitudes (``sqrt(12) sigma / (2 pi A T sqrt(N))``): a phase drift of ~0.01 rad
        over 16 s, far inside Gauss-Newton's reach. Measured on the two-link voluntary
        capture (10 s window, 3 seeds): the same optimum to 1e-6 relative as with 4 (2, 8,
        10 s), in 5.3-5.6 s instead of 7.4-10.6 s.
    substeps : int
        RK4 steps per frame (2: the platform tracks the reference simulator to ~2 um over 4 s
        of a servo-driven leg at 100 Hz; 1 leaves ~20 um).
    n_probes : int
        Perturbed refits of the prescribed input for its share of the uncertainty.
    seed : int
        Seed of the probes' noise.

    Returns
    -------
    RelativeRefinement
        ``method`` ``"output-error (prescribed motion)"``; no joint damping (the joints'
        torques are not modelled); ``residual_rms_mm`` of the platform and base markers
        (fitted) and of each moving link's markers as predicted from the simulated platform
        and the input (a check: those markers made the input).

    Raises
    ------
    InputError
        Too few frames, a link without markers or posed in too few frames.
    IdentifiabilityError
        Phi_s incomplete, or no moving link.
    """
    t_start = time.perf_counter()
    n = len(tree.links)
    if n < 2:
        raise IdentifiabilityError("the relative-motion stage needs at least one moving link")
    phi_s, cov_s, free, chol, warnings = checked_phi_s(n, start.values, phi_s, phi_s_cov,
                                                       free)
    for i, link in enumerate(tree.links):
        if len(markers.get(link.name, {})) < 3:
            raise InputError(f"link '{link.name}' needs at least 3 markers for the "
                             "relative-motion refinement", path=data.source,
                             field=f"links[{i}].markers")
    plat_mk = rig.platform.markers_platform
    base_mk = markers[tree.links[0].name]
    if base_pose is None:
        from rigtool.kinematics.pose import body_trajectory
        r_pb, t_pb, _ = relative_pose(body_trajectory(data, plat_mk),
                                      body_trajectory(data, base_mk))
    else:
        r_pb, t_pb = (np.asarray(v, float) for v in base_pose)
    idx = window_frames(data, window, "a relative-motion capture")
    dt = 1.0 / data.rate_hz
    margin = int(round(SPLINE_MARGIN_S / dt))
    wide = np.arange(max(0, idx[0] - margin), min(data.n_frames, idx[-1] + margin + 1))
    # ---- the platform's and base's markers (fitted); the moving links' (the input)
    plat_traj_w, _, _ = _poses(data, plat_mk, wide)
    link_trajs = _link_trajectories(tree, data, markers, wide)
    splines = _splines(tree, data, link_trajs, plat_traj_w.rotation, wide)
    in_window = idx - wide[0]                       # the window's frames among ``wide``
    sets = [("platform", plat_mk, False), (tree.links[0].name, base_mk, True)]
    mk_body, xyz_all, mask_all, set_of, on_base, sigma = [], [], [], [], [], []
    for label, mk, is_base in sets:
        traj, xyz, coords = _poses(data, mk, idx)
        mk_body.append(coords)
        xyz_all.append(xyz)
        mask_all.append(traj.used & np.all(np.isfinite(xyz), axis=2))
        set_of += [label] * len(coords)
        on_base += [is_base] * len(coords)
        sigma.append(marker_sigma_from_residual(traj.residual_rms_m, len(coords)))
        if label == "platform":
            rot_ref, st0 = start_state(traj.rotation, traj.position_m, traj.valid, dt)
    link_sigma = {}
    for link in tree.links[1:]:
        # the poses are fitted frame by frame: the window's rows of the wider fit
        link_sigma[link.name] = marker_sigma_from_residual(
            link_trajs[link.name].residual_rms_m[in_window], len(markers[link.name]))
        sigma.append(link_sigma[link.name])
    mk_body, xyz = np.concatenate(mk_body), np.concatenate(xyz_all, axis=1)
    mask, set_of = np.concatenate(mask_all, axis=1), np.array(set_of)
    n_total = len(idx)
    grid_t = data.time_s[idx[0]] + np.arange(2 * substeps * (n_total - 1) + 1) * (
        dt / (2 * substeps))
    parents = tree.parent_index()
    centres = np.array([tree.joint_center(i) if i > 0 else np.zeros(3) for i in range(n)])
    u_grid = prescribed_inputs(splines, parents, centres, grid_t)
    # ---- unknowns and their start
    jyy_names = [f"{l.name}.J_yy" for l in tree.links[1:]]
    jyy_idx = np.array([9 * i + 4 for i in range(1, n)])
    obj = object_start(free, n, start.values, phi_s, total_mass_kg)
    theta0, lo_t, hi_t, intervals = obj.theta0, obj.lo, obj.hi, obj.intervals
    prob = ActiveProblem(rig, platform.pi.astype(float), chain_roots(parents), centres, r_pb,
                         t_pb, float(total_mass_kg), mk_body, np.array(on_base),
                         np.where(mask[..., None], xyz, 0.0), mask, u_grid, dt, substeps,
                         rot_ref, free, phi_s,
                         np.concatenate([theta0, np.zeros(6 * fit_base)]), fit_base=fit_base)
    # 1) the platform's initial state on a short horizon, parameters held
    prob.fit_params = False
    prob.n_frames = min(n_total, max(20, int(round(first_horizon_s / dt))))
    st_first, r_first, first_stage = fit_initial_state(prob, st0, max_nfev)
    iterations, stage_log = first_stage[1], [first_stage]
    sigma_mm = 1e3 * float(np.nanmedian(sigma)) if np.any(np.isfinite(sigma)) else float("nan")
    if not (np.isfinite(sigma_mm) and sigma_mm > 0):
        sigma_mm = float(np.sqrt(np.mean(r_first ** 2)))
    sigma_mm = max(sigma_mm, 1e-3)
    if free == "phi_b":
        w_s = np.linalg.solve(chol, np.eye(chol.shape[0]))
        prob.prior_rows = sigma_mm * (w_s @ _phi_s_matrix(n))
        prob.prior_rhs = sigma_mm * (w_s @ phi_s)
    # 2) everything on a growing horizon
    prob.fit_params = True
    x = np.concatenate([prob.theta_fixed, st_first])
    n_rest = 12 + 6 * fit_base
    lo = np.concatenate([lo_t, np.full(n_rest, -np.inf)])
    hi = np.concatenate([hi_t, np.full(n_rest, np.inf)])
    x, its, stages, horizons, converged = fit_growing_horizon(prob, x, lo, hi, n_total,
                                                              horizon_factor, dt, ftol, max_nfev)
    iterations += its
    stage_log += stages
    if not converged:
        warnings.append(unconverged_warning(max_nfev, prob.n_frames * dt))
    # ---- covariance: marker noise, Phi_s (jyy), calibration, the input (probes)
    r, jac = prob.residual(x), prob.jacobian(x)
    n_mark = int(mask.sum()) * 3
    r_m = r[:n_mark]
    s2 = float(r_m @ r_m) / max(n_mark - x.size, 1)
    info_inv = np.linalg.pinv(prob.normal(x).jtj)
    n_theta = prob.n_theta
    theta, st_hat, base_hat = prob.split(x)
    r_pb_hat, t_pb_hat = prob.base_pose(base_hat)
    phi_b = prob.phi_b(theta)
    members = ([] if calibration_std is None
               else calibration_members_of(rig, platform, calibration_std))
    # the input probes' residual changes ride on the cross products' run (streamed)
    changes = _probe_changes(prob, x, n_mark, tree, data, markers, wide,
                             plat_traj_w.rotation, link_sigma, grid_t, parents, centres,
                             n_probes, seed, splines, link_trajs)
    cross_s, cross_cal, jt_changes = marker_cross_products(prob, x, jac, n_mark, members,
                                                           changes)
    cov_in = np.zeros((x.size, x.size))
    shrinkage = float("nan")
    if n_probes >= 2:        # each probe's Gauss-Newton shift of the estimate
        d = np.stack([-info_inv @ c for c in jt_changes.T])
        # a dozen probes of a hundred unknowns: the sample covariance has their rank, so
        # its correlations are shrunk towards zero (the variances kept)
        cov_in, shrinkage = shrunk_covariance(d)
    # a residual correlated over frames beyond what the input's white noise explains (the
    # smoothed input's own noise correlates it too): its serial-robust covariance holds
    # both, and replaces the marker noise's and the probes'
    cov_noise_x, standard_errors = marker_noise_covariance(
        prob, info_inv, s2, refinement_scores(jac, r_m, mask), n_mark, data.rate_hz,
        reference=s2 * info_inv + cov_in)
    if standard_errors["kind"] == "serial":
        cov_in = np.zeros_like(cov_in)
    elif n_probes >= 2:
        standard_errors = {**standard_errors, "input_probes": {
            "count": int(n_probes), "correlation_shrinkage": shrinkage}}
    cov = phi_b_covariance(prob, info_inv, s2, cov_s, cross_s, cross_cal,
                           cov_x_noise=cov_noise_x)
    cov_b, cov_b_noise, cov_x, map_b = cov.cov, cov.cov_noise, cov.cov_x, cov.map_b
    cov_b = cov_b + map_b @ cov_in[:n_theta, :n_theta] @ map_b.T
    std_b = np.sqrt(np.clip(np.diag(cov_b), 0, None))
    std_b_noise = np.sqrt(np.clip(np.diag(cov_b_noise), 0, None))
    # ---- residuals: fitted sets, and each moving link as predicted (a check)
    states, mk = prob.simulate(x)
    res = np.zeros(mask.shape + (3,))
    res[mask] = r_m.reshape(-1, 3)
    rms = {}
    for label in dict.fromkeys(set_of):
        cols = set_of == label
        cnt = mask[:, cols].sum()
        rms[str(label)] = float(np.sqrt((res[:, cols] ** 2).sum() / (3 * cnt))) if cnt \
            else float("nan")
    rms.update(_link_check_rms(tree, data, markers, idx, states, u_grid[::2 * substeps],
                               r_pb_hat, t_pb_hat, centres, parents))
    seen = mask.sum(1)
    per_frame = np.full(n_total, np.nan)
    per_frame[seen > 0] = np.sqrt((res[seen > 0] ** 2).sum((1, 2)) / (3 * seen[seen > 0]))
    if np.sqrt(s2) > 1.5 * sigma_mm:
        warnings.append(f"relative motion (prescribed): the fit leaves {np.sqrt(s2):.3f} mm "
                        f"RMS marker residuals against {sigma_mm:.3f} mm marker scatter "
                        "(rigid fits)")
    on_bound = []
    jyy, jyy_std = phi_b[jyy_idx], std_b[jyy_idx]
    for k, nm in enumerate(jyy_names):
        if free == "jyy" and np.isfinite(lo_t[k]):
            scale = max(abs(intervals[k, 1] - intervals[k, 0]), 1e-12)
            if min(abs(jyy[k] - intervals[k, 0]), abs(jyy[k] - intervals[k, 1])) < 1e-6 * scale:
                on_bound.append(nm)
    init = {"time_s": float(data.time_s[idx[0]]), "position_m": states[0, :3].copy(),
            "rotation": states[0, 3:12].reshape(3, 3).copy(),
            "velocity_lab": states[0, 12:15].copy(), "omega_lab": states[0, 15:18].copy(),
            "links": {}}
    return RelativeRefinement(
        names=phi_b_names(tree), phi_b=phi_b, phi_b_cov=cov_b, phi_b_std=std_b,
        phi_b_std_noise=std_b_noise,
        jyy={k: float(v) for k, v in zip(jyy_names, jyy)},
        jyy_std={k: float(v) for k, v in zip(jyy_names, jyy_std)},
        bounds={k: (float(iv[0]), float(iv[1])) for k, iv in zip(jyy_names, intervals)},
        joint_damping={}, joint_damping_std={}, residual_rms_mm=rms,
        marker_sigma_mm=float(np.sqrt(s2)), n_residuals=int(n_mark),
        iterations=int(iterations), elapsed_s=time.perf_counter() - t_start,
        horizons_s=tuple(horizons), stages=tuple(stage_log), on_bound=on_bound, free=free,
        start=start, initial_state=init, time_s=data.time_s[idx],
        residual_rms_frame_mm=per_frame, warnings=warnings, method=METHOD,
        base_pose=(r_pb_hat, t_pb_hat),
        base_pose_std=(np.sqrt(np.clip(np.diag(cov_x)[n_theta:n_theta + 6], 0, None))
                       if fit_base else np.zeros(6)),
        noise_mm=platform_noise_mm(sigma, sigma_mm), scatter_mm=float(sigma_mm),
        standard_errors=standard_errors)


def _probe_changes(prob: ActiveProblem, x, n_mark: int, tree, data, markers, wide,
                   plat_rot, link_sigma, grid_t, parents, centres, n_probes: int, seed: int,
                   splines: list, link_trajs: dict) -> np.ndarray:
    """The marker rows' change ``[M, n_probes]`` under the prescribed input's noise: the
    links' markers perturbed by their noise (white of their scatter, or a surrogate of
    their own residual when they wander on the skin: rigtool.identify.relative.input_noise),
    the splines refitted with the data's smoothing
    (the fixed-smoothing spline is linear in the data, so the refit's change is the
    spline's response to that noise alone), the platform simulated with each probe's
    input. ``-(J^T J)^-1 J_m^T`` of a column is that probe's shift of the estimate, and
    their scatter the input's share of its covariance. No columns under 2 probes."""
    if n_probes < 2:
        return np.zeros((n_mark, 0))
    rng = np.random.default_rng(seed)
    base_r = prob.residual(x)[:n_mark]
    residual, wandering = {}, {}
    for link in tree.links[1:]:
        names, coords = _names_coords(markers[link.name])
        residual[link.name] = marker_residuals(link_trajs[link.name],
                                               data.select(names)[wide], coords)
        wandering[link.name] = wanders(residual[link.name])
    rels = []
    for _ in range(n_probes):
        noise = {l.name: probe_noise(rng, residual[l.name], link_sigma[l.name],
                                     wandering[l.name]) for l in tree.links[1:]}
        rels += _relative_rotations(tree, _link_trajectories(tree, data, markers, wide, noise),
                                    plat_rot)
    # every probe's splines at once, with the data's smoothing
    n_mov = len(tree.links) - 1
    probe_splines = fit_relative_rotations(data.time_s[wide], rels,
                                           [s.lam for s in splines[1:]] * n_probes)
    changes = []
    for p in range(n_probes):
        spl = [None] + probe_splines[p * n_mov:(p + 1) * n_mov]
        u = prescribed_inputs(spl, parents, centres, grid_t)
        states, mk = prob.simulate(prob._full(x), u_grid=u)
        r_k, _ = prob.rows(states, mk)
        changes.append(r_k - base_r)
    return np.stack(changes, axis=1)


def _link_check_rms(tree, data, markers, idx, states, u_frames, r_pb, t_pb, centres,
                    parents) -> dict[str, float]:
    """RMS (mm) of each moving link's markers against their prediction from the simulated
    platform and the prescribed input (a consistency check, not fitted)."""
    from rigtool.kinematics.relative_spline import chain_roots
    roots = chain_roots(parents)
    t_n = states.shape[0]
    rot_p = states[:, 3:12].reshape(t_n, 3, 3)
    out = {}
    for j, link in enumerate(tree.links[1:], start=1):
        names, coords = _names_coords(markers[link.name])
        u = u_frames[:t_n, j - 1]
        q = u[:, :9].reshape(t_n, 3, 3)
        d = u[:, 15:18] + (r_pb @ centres[roots[j - 1]] + t_pb)
        pred = np.einsum("tij,tjk,mk->tmi", rot_p, q, coords) + (
            np.einsum("tij,tj->ti", rot_p, d) + states[:, :3])[:, None, :]
        meas = data.select(names)[idx][:t_n]
        err = (pred - meas)[np.all(np.isfinite(meas), axis=2)]
        out[link.name] = float(1e3 * np.sqrt(np.mean(err ** 2))) if err.size else float("nan")
    return out


__all__ = ["refine_relative_active", "METHOD"]
