"""Output-error (maximum-likelihood) refinement of a locked posture's inertial properties.

The equation-error fit (rigtool.identify.posture.equation_error) filters the markers and differentiates
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
move with the platform, so once the platform-marker fit has converged on the horizon before
the whole window they join it (and are checked again over the whole window, where a marker
that moved later is left out), their places on the platform eliminated by variable projection (rigtool.identify.posture.attached_markers)
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

Marker noise: isotropic by default (every coordinate alike: the rows are the residuals in
mm, ``s`` their standard deviation). A capture whose markers come with a noise covariance
each (``marker_covariance``: a camera's tag corners, whose depth is seen several times worse
than the image plane) is fitted by maximum likelihood for it: every marker's residual and
Jacobian rows are whitened, ``r -> L^-1 r`` with ``C = L L^T`` (rigtool.engine.whiten), the
object's markers placed by their information, and ``s`` is the noise scale (1 when the
covariance is right; the covariance is trusted in shape, its overall size is measured).
Whitening with ``C = sigma^2 1`` gives the isotropic fit's estimate and standard errors.

Uncertainty: the Gauss-Newton covariance ``s^2 (J^T J)^-1`` (marker noise, white: right as
it is; or, with ``standard_errors="frame"``, the default for a camera's corners, which share
one pose per body and frame, the frame-clustered sandwich of
rigtool.identify.posture.cluster_covariance, right for errors correlated within a frame),
plus, when given, the calibration's uncertainty (first-order sensitivity of the
estimate to each calibrated number, or to each principal axis of a full calibration
covariance) and the uncertainty of the base link's pose on the platform (which carries the
platform-frame estimate into the base-link frame). Calibration errors are common to every
capture and dominate once the marker noise is averaged out by the long record.
"""

from __future__ import annotations

import time
import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.identify.posture.attached_markers import joint_information, nuisance_products
from rigtool.calibration_uncertainty import calibration_members_of
from rigtool.identify.common.output_error import (final_substeps_of, next_horizon,
                                                  start_state, window_frames)
from rigtool.identify.posture.breathing import BreathInput
from rigtool.identify.posture.equation_error import PostureResult, transform_matrix
from rigtool.identify.posture.attached_fit import (attach_markers, place_attached,
                                                   polish_stage, solve_stage)
from rigtool.errors import InputError
from rigtool.identify.posture.cluster_covariance import (SERIAL_GATE, SERIAL_WINDOW_S,
                                                        frame_clustered, frame_serial,
                                                        serial_inflation,
                                                        resolve_standard_errors,
                                                        too_few_clusters)
from rigtool.identify.posture.boundary import boundary_of, boundary_warning, leave_boundary
from rigtool.identify.posture.object_estimate import object_estimate
from rigtool.identify.posture.oe_result import (OutputErrorResult, PlatformMarkerFit,
                                               platform_marker_fit)
from rigtool.identify.posture.problem import PostureProblem, fold_frame_columns, object_to_z
from rigtool.identify.posture.vibration_mass import mass_theta_direction, vibration_mass
from rigtool.engine.params import body_params
from rigtool.inertia import PI9_TO_SUBSET_ORDER, InertialParams
from rigtool.engine.whiten import MarkerCovariance, whitening_factors
from rigtool.kinematics.pose import fit_pose
from rigtool.mocap import MarkerData
from rigtool.rig import Rig

NUISANCE = ("none", "damping-scale")
#: noise probes of a measured breath (its share of the covariance, to sqrt(2 / P) = 0.29 of
#: itself), drawn from a fixed seed: the same standard errors every run
BREATH_PROBES, BREATH_PROBE_SEED = 24, 0


def refine_posture(rig: Rig, platform: InertialParams, data: MarkerData, *,
                   base_rotation_platform: np.ndarray, base_position_platform: np.ndarray,
                   total_mass_kg: float, start: PostureResult,
                   window: tuple[float, float] | None = None,
                   markers_platform: dict[str, np.ndarray] | None = None,
                   nuisance: str = "none", substeps: int = 1,
                   final_substeps: int | None = None,
                   first_horizon_s: float = 2.0, horizon_factor: float = 4.0,
                   calibration_std: dict[str, np.ndarray] | None = None,
                   base_pose_cov: np.ndarray | None = None,
                   base_pose_wander_cov: np.ndarray | None = None, ftol: float = 1e-8,
                   base_markers: dict[str, np.ndarray] | None = None,
                   object_markers: list[str] | tuple[str, ...] = (),
                   marker_covariance: MarkerCovariance | None = None,
                   standard_errors: str = "auto", cluster_frames: int = 1,
                   name: str | None = None,
                   breath: BreathInput | None = None) -> OutputErrorResult:
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
        RK4 steps per frame while the fit converges. Measured on the paper-002 rig (120 Hz,
        modes up to 3.8 Hz, 25 s): 1 step tracks the reference simulator to 4 um (fit bias
        <= 0.0001 mm, 0.006 %), 2 steps to 0.2 um at twice the cost.
    final_substeps : int, optional
        RK4 steps per frame of the model whose output the estimate fits in the end (default
        ``2 * substeps``; ``substeps``: none). RK4's error is a bias, not noise (its phase
        error ``(omega h)^5 / 120`` per step shifts the fitted inertia by about ``(omega
        h)^4 / 60``), and the covariance does not describe it: on the four-link object at
        0.05 mm marker noise 1 step added 20 to the postures' chi^2 (45 numbers; 2 steps:
        0.1) while each entry stayed within its standard error. Halving the step divides it
        by 16 (benchmarks/accuracy.py, "Whitened errors"). The finer model's states at the
        converged fit enter as a fixed correction of the coarse model's
        (:func:`~rigtool.identify.common.output_error.integrator_offset`), and one
        Gauss-Newton step on the whole window follows; it costs two primal simulations and
        one evaluation of the normal equations.
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
    base_pose_wander_cov : ndarray (6, 6), optional
        With ``base_markers``: what their wander on the skin adds to the fitted pose's
        covariance, which takes their frames as independent (``cov - cov_independent`` of
        :func:`base_pose_covariance`, clipped positive: zero for white frames).
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
    marker_covariance : MarkerCovariance, optional
        Each marker's noise covariance (lab, m^2; per frame of ``data`` or constant), for
        every marker the fit uses. Given, the fit is maximum likelihood for it (whitened
        rows) and the standard errors scale with the measured noise scale; default:
        isotropic noise of the size the residuals show.
    standard_errors : {"auto", "independent", "frame", "serial"}
        The marker noise's share of the covariance (the estimate is the same):
        "independent": ``s^2 (J^T W J)^-1``; "frame": the cluster-robust sandwich, clusters
        of ``cluster_frames`` consecutive frames (rigtool.identify.posture.cluster_covariance:
        right when errors are correlated within a cluster, as a camera's corners of one body
        are, and independent between clusters; a warning when the scores say otherwise);
        "serial": the serial-correlation-robust covariance (Newey-West over
        ``SERIAL_WINDOW_S``: right when the residual is correlated over frames, as an
        unmodelled heartbeat's recoil leaves it);
        "auto": "frame" when ``marker_covariance.correlated_in_frame``, else "serial" when
        that exceeds the independent frames' by ``SERIAL_GATE``, else "independent".
    cluster_frames : int
        Frames per cluster with "frame".
    name : str, optional
        Defaults to ``start.name``.
    breath : BreathInput, optional
        The measured breath (rigtool.identify.posture.breathing): the platform is integrated
        with the load's first moment ``h0 + G u(t)`` and internal momentum ``K u'(t)``
        (rigtool.engine.internal), ``G`` and ``K`` unknowns of the fit (started at the
        equation-error fit's, which must have had the same breath); the object's reported
        parameters are its mean mass distribution.

    Returns
    -------
    OutputErrorResult
    """
    t_start = time.perf_counter()
    if nuisance not in NUISANCE:
        raise ValueError(f"nuisance must be one of {NUISANCE}")
    se_model = resolve_standard_errors(standard_errors, marker_covariance is not None and
                                       marker_covariance.correlated_in_frame)
    markers_platform = rig.platform.markers_platform if markers_platform is None \
        else markers_platform
    names = list(markers_platform)
    mk = np.array([np.asarray(markers_platform[n], float) for n in names])
    xyz = data.select(names)
    idx = window_frames(data, window, "a free-vibration capture")
    too_few = too_few_clusters(len(idx), cluster_frames) if se_model == "frame" else None
    if too_few:
        raise InputError(too_few, field="cluster_frames", found=cluster_frames)
    xyz = xyz[idx]
    traj = fit_pose(xyz, mk, marker_names=tuple(names), time_s=data.time_s[idx])
    mask = traj.used & np.all(np.isfinite(xyz), axis=2)
    whiten = None
    if marker_covariance is not None:
        full = [data.names[data.index(n)] for n in names]
        whiten = whitening_factors(marker_covariance.select(full, idx, data.n_frames), mask)
    dt = 1.0 / data.rate_hz
    rot_ref, state0 = start_state(traj.rotation, traj.position_m, traj.valid, dt)
    z_obj = object_to_z(start.com, start.inertia_com)
    prob = PostureProblem(rig, platform.pi.astype(float),
                    transform_matrix(base_rotation_platform, base_position_platform),
                    float(total_mass_kg), mk, np.where(mask[..., None], xyz, 0.0), mask, dt,
                    rot_ref, substeps, z_obj, nuisance, whiten=whiten)
    beta0 = np.zeros(0)
    if breath is not None:
        beta0 = np.asarray(start.breath["beta"], float)
        prob.breath_at, prob.n_breath = breath.at, breath.n_components
        prob.t0_s, prob.beta0 = float(data.time_s[idx[0]]), beta0
    n_total = len(idx)
    extra = [1.0] if nuisance == "damping-scale" else []
    # 1) the initial state on a short horizon, object held at the start
    prob.fit_object = False
    prob.n_frames = min(n_total, max(20, int(round(first_horizon_s / dt))))
    x = np.concatenate([state0, extra])
    sol = solve_stage(prob, x, ftol=1e-10, warm=False)
    iterations = sol.n_cost + sol.n_normal
    # 2) everything, on a growing horizon
    prob.fit_object = True
    x = np.concatenate([z_obj, sol.x, beta0])
    horizons = []
    stage_log = [(prob.n_frames * dt, sol.n_cost, sol.n_normal)]
    label = name or start.name
    warnings: list[str] = []
    att = None

    def attach(x_now):
        # the object's markers join on the horizon just fitted; longer ones go on with them
        nonlocal att, iterations
        att = attach_markers(prob, x_now, data, idx, mk, dict(base_markers or {}),
                             list(object_markers), ftol, label, warnings, marker_covariance)
        iterations += att["nfev"]
        stage_log.extend(att["stages"])
        return att["x"]

    while True:
        n_next = next_horizon(prob.n_frames, n_total, horizon_factor, dt)
        if (base_markers or object_markers) and att is None and n_next >= n_total and horizons:
            # before the whole window, not after it: one whole-window pass instead of two
            # (a 10-minute capture spends its time there)
            x = attach(x)
        prob.n_frames = n_next
        horizons.append(prob.n_frames * dt)
        sol = solve_stage(prob, x, ftol=ftol)
        iterations += sol.n_cost + sol.n_normal
        stage_log.append((prob.n_frames * dt, sol.n_cost, sol.n_normal))
        x = sol.x
        if prob.n_frames >= n_total:
            break
    if (base_markers or object_markers) and att is None:
        x = attach(x)                         # a window too short for an earlier horizon

    def refit(x0):
        nonlocal iterations
        sol = solve_stage(prob, x0, ftol=ftol)
        iterations += sol.n_cost + sol.n_normal
        stage_log.append((prob.n_frames * dt, sol.n_cost, sol.n_normal))
        return sol.x

    x, _ = leave_boundary(prob, x, refit)
    polished = polish_stage(prob, x, final_substeps_of(substeps, final_substeps), ftol=ftol,
                            label=label, warnings=warnings)
    if polished is not None:
        x, n_cost, n_normal = polished
        iterations += n_cost + n_normal
        stage_log.append((prob.n_frames * dt, n_cost, n_normal))
    if att is not None:
        n_stages = len(att["stages"])
        att = place_attached(prob, {**att, "x": x}, ftol, label, warnings)
        x = att["x"]
        stage_log.extend(att["stages"][n_stages:])
        iterations += sum(c + n for _, c, n in att["stages"][n_stages:])
    mask = prob.mask
    n_x = x.size
    members = ([] if calibration_std is None
               else calibration_members_of(rig, platform, calibration_std))
    theta_nom = prob.inputs(x)[0]
    # extra columns: one per calibration member, then the object's mass (the scale check)
    extra_dirs = np.stack([prob.inputs(x, m[2])[0] - theta_nom for m in members]
                          + [mass_theta_direction(x[:9], total_mass_kg, prob.tmat,
                                                  theta_nom.size)], axis=1)
    # a calibrated lab frame's uncertainty: six columns of the rig's rigid move, last; each
    # member's column is its theta direction plus its frame move (F [6, members])
    moves = [m[3] for m in members if m[3] is not None]
    frame_move = np.stack(moves, axis=1) if moves and len(moves) == len(members) else None
    # per-frame scores: for the clustered or serial covariance, and with "auto" to see
    # whether the residual is serially correlated
    judge_serial = standard_errors == "auto" and se_model == "independent"
    breath_probes = _breath_probe_states(prob, x, breath)
    # the object's columns in its standard parameters: the information the data carry, which
    # does not vanish with the log-Cholesky map's Jacobian on the consistency boundary
    prob.physical_columns = True
    try:
        ne = prob.normal(x, extra_theta=extra_dirs,
                         scores=se_model in ("frame", "serial") or judge_serial,
                         frame_columns=frame_move is not None, extra_states=breath_probes)
    finally:
        prob.physical_columns = False
    n_cal, m_col = len(members), n_x + len(members)
    if frame_move is not None:
        ne = fold_frame_columns(ne, n_x, n_cal, frame_move)
    jtj = ne.jtj_raw[:n_x, :n_x]
    jtj_extra = ne.jtj_raw[:n_x, n_x:]                 # J^T [J_cal, j_mass]
    if att is not None and prob.n_attached:
        info = joint_information(jtj, ne.prods[:, :, :n_x], ne.n_seen, att["n_base"],
                                 att["pose_cols"])
        cross_extra = np.vstack([jtj_extra, nuisance_products(ne.prods[:, :, n_x:],
                                                              att["n_base"], att["pose_cols"])])
    else:
        info, cross_extra = jtj, jtj_extra
    cross_cal = cross_extra[:, :n_cal] if members else None
    n_res, n_par = ne.n_rows, info.shape[0]
    dof = max(n_res - n_par, 1)
    s2 = ne.cost / dof
    info_inv = np.linalg.pinv(info)
    grad = np.zeros(n_par)
    grad[:n_x] = ne.jtr_raw[:n_x]           # the attached places sit at their optimum
    mass_check = vibration_mass(total_mass_kg, s2, info, grad, cross_extra[:, n_cal],
                                float(ne.jtj_raw[m_col, m_col]), float(ne.jtr_raw[m_col]),
                                cross_cal, ne.jtj_raw[m_col, n_x:m_col])
    cov_noise = s2 * info_inv                     # mm^2 / (mm per unit)^2: units of x
    # the breath's measurement noise: each probe's Gauss-Newton shift of the estimate
    cov_breath = np.zeros_like(cov_noise)
    if breath_probes is not None:
        shifts = -info_inv @ cross_extra[:, n_cal + 1:n_cal + 1 + breath_probes.shape[2]]
        cov_breath = shifts @ shifts.T / shifts.shape[1]
    robust = acf = None
    inflation = float("nan")
    if se_model == "serial" or judge_serial:
        with_att = att is not None and prob.n_attached
        serial = frame_serial(
            info_inv, ne.scores, ne.scores_att if with_att else None, n_x,
            att["n_base"] if with_att else 0, att["pose_cols"] if with_att else None,
            n_rows=n_res, seen=mask[:n_total].any(1),
            lag_frames=int(round(SERIAL_WINDOW_S * data.rate_hz)))
        # a residual correlated beyond what the breath's noise explains (which correlates
        # it too): the serial-robust covariance holds both and replaces them
        # judged in the fit's own unknowns (COM and log-Cholesky factor), as it was chosen
        inflation = serial_inflation(*_object_in_z(x[:9], total_mass_kg, serial.cov,
                                                   cov_noise + cov_breath), 9)
        if se_model == "serial" or inflation > SERIAL_GATE:
            se_model, robust, cov_noise = "serial", serial, serial.cov
            cov_breath = np.zeros_like(cov_noise)
    if se_model == "frame":
        with_att = att is not None and prob.n_attached
        robust, acf, note = frame_clustered(
            info_inv, ne.scores, ne.scores_att if with_att else None, n_x,
            att["n_base"] if with_att else 0, att["pose_cols"] if with_att else None,
            n_rows=n_res, seen=mask[:n_total].any(1), cluster_frames=cluster_frames)
        cov_noise = robust.cov
        warnings.extend([f"{label}: {note}"] if note else [])
    cov_noise = cov_noise + cov_breath
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

    pi9_fit = body_params(x[:9], total_mass_kg)[0][1:]
    est = object_estimate(pi9_fit, cov_all, cov_noise, r_b, t_b, prob.tmat, total_mass_kg,
                          pose_idx, base_pose_cov, base_pose_wander_cov)
    params, cov9, pcov = est.params, est.cov9, est.props_cov
    boundary = boundary_of(params.inertia_com, pcov)
    if boundary is not None:
        warnings.append(boundary_warning(label, boundary))
    breath_input = None
    if breath_probes is not None:
        share = object_estimate(pi9_fit, cov_breath, cov_breath, r_b, t_b, prob.tmat,
                                total_mass_kg, pose_idx, None).props_std
        breath_input = {"probes": int(breath_probes.shape[2]), "com_std": share[:3],
                        "inertia_com_std": share[3:].reshape(3, 3)}
    pstd, pstd_noise = est.props_std, est.props_std_noise
    _, st, scale = prob.split(x)
    breath_fit = None
    if breath is not None:
        nb = prob.n_beta
        b_idx = np.arange(n_x - nb, n_x)
        breath_fit = {"beta": x[b_idx].copy(), "cov": cov_all[np.ix_(b_idx, b_idx)].copy(),
                      "k": breath.n_components, "summary": breath.summary}
    rot0 = Rotation.from_rotvec(st[3:6]).as_matrix() @ rot_ref
    per_frame = np.full(n_total, np.nan)
    seen = mask.sum(1)
    per_frame[seen > 0] = np.sqrt(ne.ss_frame[seen > 0] / (3 * seen[seen > 0]))
    rms = float(np.sqrt(ne.cost_mm2 / n_res))
    s2_mm = ne.cost_mm2 / dof                     # = s2 unless the rows are whitened
    sigma = float(np.sqrt(s2_mm))
    # a model that tracks the data leaves white residuals: compare the first and last tenth
    tenth = max(1, n_total // 10)
    early, late = np.nanmean(per_frame[:tenth] ** 2), np.nanmean(per_frame[-tenth:] ** 2)
    if (np.isfinite(early) and np.isfinite(late) and max(early, late) > 2.0 * min(early, late)
            and max(early, late) > 1.5 * s2_mm):
        warnings.append(f"{name or start.name}: marker residuals grow or shrink along the "
                        f"capture (RMS {np.sqrt(early):.3f} mm early, {np.sqrt(late):.3f} mm "
                        "late): the simulated motion drifts from the data (rig model?)")
    return OutputErrorResult(
        name=name or start.name, mass=float(total_mass_kg), com=params.com, com_std=pstd[:3],
        inertia_com=params.inertia_com, inertia_com_std=pstd[3:].reshape(3, 3), params=params,
        params_cov=cov9, props_cov=pcov, covariance9=cov9[np.ix_(PI9_TO_SUBSET_ORDER, PI9_TO_SUBSET_ORDER)],
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
        left_out_markers=() if att is None else tuple(att["left_out"]),
        mass_from_vibration=mass_check,
        platform_markers=platform_marker_fit(prob, ne.states, names, data.time_s[idx]),
        noise_model="isotropic" if whiten is None else "covariance",
        noise_source="" if marker_covariance is None else marker_covariance.source,
        noise_scale=float("nan") if whiten is None else float(np.sqrt(s2)),
        standard_errors=se_model, se_clusters=0 if robust is None else robust.n_clusters,
        se_cluster_frames=0 if robust is None else robust.cluster_frames,
        se_score_autocorrelation=None if robust is None else acf,
        se_rel_precision=(float("nan") if robust is None else
                          0.5 * float(robust.variance_rel_std[:9].max())),
        se_serial_inflation=inflation,
        breath=breath_fit, breath_input=breath_input, boundary=boundary,
    )


def _object_in_z(z: np.ndarray, mass_kg: float, *covs: np.ndarray) -> list[np.ndarray]:
    """The object's 9x9 block of each covariance (standard parameters ``pi[1:]``) carried to
    the fit's unknowns ``z`` (``D^-1 C D^-T``, ``D = d pi[1:] / d z``); the blocks as they are
    where ``D`` is singular to working precision (a body on the consistency boundary)."""
    d9 = body_params(z, mass_kg)[1][1:, :]
    blocks = [np.asarray(c, float)[:9, :9] for c in covs]
    try:
        with np.errstate(all="ignore"):
            out = [np.linalg.solve(d9, np.linalg.solve(d9, b).T) for b in blocks]
    except np.linalg.LinAlgError:
        return blocks
    return out if all(np.all(np.isfinite(o)) for o in out) else blocks


def _breath_probe_states(prob: PostureProblem, x: np.ndarray,
                         breath: BreathInput | None) -> np.ndarray | None:
    """The simulated states' change ``[T, 18, P]`` at ``x`` under each of
    :data:`BREATH_PROBES` noise probes of the measured breath (None without a breath or
    its probes): the fit takes the breath as exact, so its measurement noise's share of the
    estimate's covariance is the scatter of the probes' shifts, as the calibration's
    members carry theirs."""
    if breath is None or breath.noise_probes is None:
        return None
    # the measured breath integrated with its probes (the same arithmetic for every one)
    states = prob.states_with_breaths(
        x, [breath.at] + breath.noise_probes(BREATH_PROBES, BREATH_PROBE_SEED))
    return states[:, :, 1:] - states[:, :, :1]


__all__ = ["OutputErrorResult", "PlatformMarkerFit", "refine_posture", "NUISANCE",
           "BREATH_PROBES"]
