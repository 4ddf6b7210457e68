"""One locked posture of a session: read its capture, fit the object's overall properties
(equation error, then by default the output-error refinement), and keep what the report
needs around the fit (rotations of the links, the base link's pose on the platform, marker
noise and each marker's scatter on its body, time series for the figures).

Conventions: base-link frame for the object's properties (SPEC "Overall properties"),
rotations ``0R_j`` map link axes to base axes; SI units, marker figures in mm where named.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.calibration_uncertainty import calibration_std_from_rigfile
from rigtool.camera.covariance_file import check_covers, read_marker_covariance, side_file_of
from rigtool.config import FilterSettings, RigFile, Session
from rigtool.errors import ConfigError, InputError
from rigtool.identify.common.output_error import base_pose_covariance
from rigtool.identify.common.platform_motion import (CaptureMotion, capture_motion,
                                                     marker_sigma_from_residual, relative_pose,
                                                     with_noise_probes)
from rigtool.identify.posture.equation_error import PostureResult, fit_posture
from rigtool.identify.posture.output_error import OutputErrorResult, refine_posture
from rigtool.identify.common.output_error import window_frames
from rigtool.identify.posture.breathing import BreathInput, breath_in_base_frame
from rigtool.identify.posture.support import with_support_probes
from rigtool.identify.posture.tissue_fit import (OTHER_TISSUE_FRACTION, OtherTissue,
                                                 TissueNotFound, fit_with_tissue,
                                                 hold_unseen_tissue, tissue_evidence)
from rigtool.identify.segments.priors import priors_from_specs
from rigtool.identify.posture.force_scale import carry_scale_uncertainty
from rigtool.inertia import PI9_TO_SUBSET_ORDER, InertialParams, transform_params
from rigtool.kinematics.breath_motion import measure_breath
from rigtool.kinematics.support_motion import (SupportMotion, locked_body_trajectory,
                                              measure_support)
from rigtool.identify.subset.fit import PostureOverall
from rigtool.engine.whiten import MarkerCovariance
from rigtool.kinematics.living_signs import (apparent_mass_by_band, base_on_platform,
                                             residual_rhythm,
                                             follows_support, marker_rhythm)
from rigtool.kinematics.length_scale import scale_note, to_layout_scale
from rigtool.kinematics.marker_scatter import marker_scatter_mm
from rigtool.kinematics.pose import BodyTrajectory, body_trajectory
from rigtool.kinematics.rotation_mean import (mean_covariance, mean_rotation, rms_angle,
                                              wander_excess)
from rigtool.mocap import MarkerData, read_capture
from rigtool.rig import spring_wrench
from rigtool.pipeline.lab_frames import posture_lab_frame_warning
from rigtool.pipeline.methods import check_method
from rigtool.protocol import rig_modes_hz
from rigtool.tree import Tree


@dataclass
class PostureOutcome:
    """One posture: the fit and what was measured around it."""

    result: PostureResult
    rotations: dict[str, np.ndarray]            # 0R_j, link -> base axes
    rotation_spread_deg: dict[str, float]        # RMS wobble of each joint during the capture
    base_rotation_platform: np.ndarray
    base_position_platform: np.ndarray
    marker_rms_m: dict[str, float]               # rigid-fit residual per body
    warnings: list[str] = field(default_factory=list)   # from the reported fit
    traces: "MotionTraces | None" = None          # time series for the report's figures
    equation_error: PostureResult | None = None  # the equation-error fit (start of the refinement)
    refinement: OutputErrorResult | None = None  # the output-error fit, when run
    base_wobble_deg: float = 0.0                 # RMS motion of the base link on the platform
    marker_noise_mm: float = float("nan")        # per coordinate, from the rigid fits (median
                                                 # over the bodies; no dynamic model involved)
    marker_scatter_mm: dict[str, dict[str, float]] = field(default_factory=dict)
                                                 # body -> marker -> RMS scatter about its place
    notes: list[str] = field(default_factory=list)   # about the capture (filter band), not
                                                     # problems of the estimate
    rotation_cov: dict[str, np.ndarray] = field(default_factory=dict)
                                                 # link -> covariance of 0R_j's error (rad^2)
    marker_noise_body_mm: dict[str, float] = field(default_factory=dict)
                                                 # body -> marker noise its rigid fit implies
    living_signs: dict = field(default_factory=dict)
                                                 # what a living body leaves in the capture
                                                 # (living_signs(); the report's checks)
    soft_tissue: dict = field(default_factory=dict)
                                                 # the tissue element, when the posture was
                                                 # fitted with one: tissue_model()
    breathing: dict = field(default_factory=dict)
                                                 # the breath's model when the manifest names
                                                 # breathing markers (breathing_model())
    support: dict = field(default_factory=dict)
                                                 # the locked body's motion on the platform
                                                 # when measured through
                                                 # (support_motion_model())
    base_pose_wander_cov: np.ndarray | None = None
                                                 # what the base link's markers wandering
                                                 # add to its mean pose's covariance [dt,
                                                 # delta] (m^2, rad^2; None: white frames),
                                                 # carried into the result
    shared_errors: dict[str, np.ndarray] = field(default_factory=dict)
                                                 # errors the posture shares with the others
                                                 # (the tissue its element cannot follow, or
                                                 # the tissue not seen but not ruled out):
                                                 # PostureOverall.shared_errors
    unseen_tissue: dict = field(default_factory=dict)
                                                 # the tissue held in the standard errors of
                                                 # a soft body fitted rigid
                                                 # (UnseenTissue.summary())
    tissue_evidence: dict = field(default_factory=dict)
                                                 # the element fitted at 6 Hz to judge whether
                                                 # the body carries tissue (tissue_evidence();
                                                 # ``overruled`` when the postures together
                                                 # decided otherwise)
    held_errors: dict[str, np.ndarray] = field(default_factory=dict)
                                                 # shifts of [h, J0] at one standard
                                                 # deviation held in this posture's own
                                                 # standard errors (the tissue it may carry,
                                                 # when the postures disagreed) and left out
                                                 # of what the subset fit takes
                                                 # (posture_overall)
    se_scale: float = 1.0                        # the Birge ratio its standard errors were
                                                 # scaled by when the postures scattered
                                                 # beyond them (scale_standard_errors)

    @property
    def method(self) -> str:
        """What produced ``result``: ``"output-error"`` when refined, else
        ``"equation-error"``."""
        return "equation-error" if self.refinement is None else "output-error"


@dataclass
class MotionTraces:
    """Time series of one capture for the report (paper 002 Fig. 5 and marker residuals).

    Attributes
    ----------
    time_s : ndarray (T,)
    displacement_m : ndarray (T, 3)
        Filtered platform origin position minus its mean, lab axes.
    rotation_rad : ndarray (T, 3)
        Filtered platform rotation about its mean pose (rotation vector, lab axes).
    accel_lab : ndarray (T, 3)
        Filtered platform origin acceleration, m/s^2.
    alpha_body : ndarray (T, 3)
        Filtered platform angular acceleration, platform axes, rad/s^2.
    marker_residual_m : dict[str, ndarray (T,)]
        Per body, the RMS distance of its markers from the fitted rigid cluster per frame.
    valid : ndarray of bool (T,)
        Frames used by the fit.
    """

    time_s: np.ndarray
    displacement_m: np.ndarray
    rotation_rad: np.ndarray
    accel_lab: np.ndarray
    alpha_body: np.ndarray
    marker_residual_m: dict[str, np.ndarray]
    valid: np.ndarray


def motion_traces(cap: CaptureMotion, trajs: dict[str, BodyTrajectory]) -> MotionTraces:
    """Figure-ready traces of a capture's filtered platform motion and marker residuals."""
    ok = cap.valid & np.isfinite(cap.position).all(axis=1)
    disp = cap.position - np.nanmean(cap.position[ok], axis=0)
    rot = np.full_like(cap.position, np.nan)
    if ok.sum() > 0:
        mean = Rotation.from_matrix(cap.rotation[ok]).mean()
        rot[ok] = (Rotation.from_matrix(cap.rotation[ok]) * mean.inv()).as_rotvec()
    return MotionTraces(cap.time_s, disp, rot, cap.accel_lab, cap.omega_dot_body,
                        {k: t.residual_rms_m for k, t in trajs.items()}, cap.valid)



def _mean_rotation(rot: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """``(mean, RMS spread in degrees, covariance of the mean)`` of per-frame rotations
    ``[T, 3, 3]``. The covariance (3x3, rad^2) is of ``delta`` in ``R = mean exp([delta x])``:
    the frames' scatter over their number while the frames are independent (white marker
    noise), from block means when they are not (markers wandering on the skin, a joint's
    slow wobble: :func:`rigtool.kinematics.rotation_mean.mean_covariance`); the subset fit
    carries it into Phi_s (the report's "Postures held still" check judges the wobble)."""
    mean, delta = mean_rotation(rot)
    return mean, float(np.rad2deg(rms_angle(delta))), mean_covariance(delta)


def _child_rotations(tree: Tree, trajs: dict[str, BodyTrajectory], path: Path
                     ) -> tuple[dict[str, np.ndarray], dict[str, float],
                                dict[str, np.ndarray]]:
    """Every non-base link's mean rotation ``0R_j`` over the frames where it and the base
    link are seen, its RMS spread (degrees) and the covariance of the mean (see
    :func:`_mean_rotation`)."""
    base = tree.links[0].name
    rb = trajs[base]
    rotations, spread, cov = {}, {}, {}
    for link in tree.links[1:]:
        tj = trajs[link.name]
        ok = rb.valid & tj.valid
        if ok.sum() < 3:
            raise InputError(f"link '{link.name}' and the base link are seen together in "
                             f"{int(ok.sum())} frames; expected the whole posture in view",
                             path=path)
        rel = np.swapaxes(rb.rotation[ok], -1, -2) @ tj.rotation[ok]
        rotations[link.name], spread[link.name], cov[link.name] = _mean_rotation(rel)
    return rotations, spread, cov


def _calibration_std(rigfile: RigFile) -> dict | None:
    """The calibrated rig's uncertainty for the output-error fits (None for a rig file
    without ``[calibration.std]``, or a stand-in without a raw document)."""
    return calibration_std_from_rigfile(getattr(rigfile, "raw", {}), rigfile.rig,
                                        path=getattr(rigfile, "path", None))


def _attached_markers(tree: Tree, markers: dict[str, dict[str, np.ndarray]]) -> dict:
    """``refine_posture`` keywords that put a locked object's markers in the fit: the base
    link's (with their base-link coordinates) and every other link's (by name)."""
    base = tree.links[0].name
    others = [n for link in tree.links[1:] for n in markers[link.name]]
    return {"base_markers": dict(markers[base]), "object_markers": others}


def marker_covariance_of(setting: str | Path, capture: Path, data: MarkerData,
                         names: list[str]) -> tuple[MarkerCovariance | None, Path | None]:
    """The markers' noise covariance for the output-error fit, as the manifest's
    ``marker_covariance`` says: ``"auto"`` the side file ``rigtool track`` wrote next to the
    capture (``NAME.residuals.csv``) when there is one, ``"none"``, or a path. Checked to
    cover every marker of the fit (``names``) where it is seen."""
    if setting == "none":
        return None, None
    path = side_file_of(capture) if setting == "auto" else Path(setting)
    if not path.exists():
        if setting == "auto":
            return None, None
        raise InputError("the marker covariance file named by the manifest does not exist",
                         path=path)
    cov = read_marker_covariance(path, n_frames=data.n_frames)
    check_covers(cov, data, names, path)
    return cov, path


def fit_one_posture(session: Session, rigfile: RigFile, tree: Tree,
                    markers: dict[str, dict[str, np.ndarray]], capture: Path, *,
                    name: str, window, units, total_mass_kg: float,
                    settings: FilterSettings, spring_model: str = "exact",
                    weighting: str = "noise", compensate: bool = True,
                    data: MarkerData | None = None,
                    method: str = "equation-error",
                    object_markers_in_fit: bool = True,
                    marker_covariance: str | Path = "none", standard_errors: str = "auto",
                    cluster_frames: int = 1, tissue_seen: bool | None = None,
                    hold_tissue: bool = False) -> PostureOutcome:
    """Read one locked-posture capture and fit the object's overall properties.

    ``method="output-error"`` refines the equation-error fit by simulating the platform and
    fitting its raw markers (:func:`rigtool.identify.posture.output_error.refine_posture`); with
    ``object_markers_in_fit`` (default) the object's markers join that fit as markers rigidly
    attached to the platform, and the base link's pose on the platform is estimated in it.
    ``marker_covariance`` (``"none"``, ``"auto"`` or a path, see :func:`marker_covariance_of`):
    the markers' noise covariance that output-error fit whitens its rows by (a camera's
    capture); the equation-error fit does not use it. ``standard_errors``, ``cluster_frames``:
    that fit's standard-error model (:func:`refine_posture`). ``tissue_seen`` (with
    ``soft_tissue = "auto"``): the session's verdict on the tissue when it overrules this
    posture's own evidence (the postures' evidence together, :func:`rigtool.identify.posture
    .tissue_fit.joint_tissue_evidence`); None: this posture's evidence decides.
    ``hold_tissue``: a person's posture fitted rigid holds the tissue it may carry, as far as
    the posture cannot rule it out, in its standard errors (as on a soft back; the session
    asks for it when its postures disagree with one tree of rigid links).
    """
    check_method(method)
    rig = rigfile.rig
    data = read_capture(capture, units=units) if data is None else data
    plat_markers = rig.platform.markers_platform
    # a capture read at another motion-capture length scale than the rig file's: brought to
    # the rig's lengths (its springs' stretch multiplies a length scale some 15-fold)
    data, length = to_layout_scale(data, plat_markers, capture)
    cap = capture_motion(data, plat_markers, settings, name=name, window=window)
    if compensate:
        cap = with_noise_probes(cap, plat_markers, settings)
    plat_traj = body_trajectory(data, plat_markers)
    trajs = {l.name: body_trajectory(data, markers[l.name]) for l in tree.links}
    base = tree.links[0].name
    r_pb, t_pb, wobble = relative_pose(plat_traj, trajs[base], cap.valid)
    *_, pose_cov, pose_cov_independent = base_pose_covariance(
        plat_traj.rotation, plat_traj.position_m, trajs[base].rotation,
        trajs[base].position_m, cap.valid)
    # skin markers wandering: their mean over the capture is off the bone by what the
    # wander's mean covariance says, and every fit below carries that into its result
    pose_wander = wander_excess(pose_cov, pose_cov_independent)
    pose_wander = pose_wander if np.any(pose_wander) else None
    # a base link or a joint that moves during the capture is judged by the report
    # (rigtool.report.checks), once for every posture
    rotations, spread, rotation_cov = _child_rotations(tree, trajs, capture)
    breath, breath_note = None, {}
    if session.breathing_markers:
        breath, breath_note = measured_breath(data, markers, session.breathing_markers, window)
    on_platform = base_on_platform(plat_traj.rotation, plat_traj.position_m,
                                   trajs[base].rotation, trajs[base].position_m,
                                   plat_traj.valid & trajs[base].valid, rig.gravity_lab,
                                   float(data.rate_hz))
    support = None
    # the marker noise is the platform's rigid markers' (the capture's own estimate)
    if session.support != "rigid" and (session.support == "measured" or follows_support(
            on_platform, cap.marker_sigma_m, len(markers[base]), len(plat_markers))):
        frames = window_frames(data, window, "a free-vibration capture")
        body, body_markers = locked_body_trajectory(data, trajs, base, frames)
        support = with_support_probes(
            measure_support(plat_traj, body, r_pb, t_pb, data.time_s, frames=frames), cap,
            body, body_markers, settings, base_rotation_platform=r_pb,
            base_position_platform=t_pb, frames=frames)

        def support_measured(noisy: MarkerData) -> SupportMotion:
            """The support's measurement from a noisy copy of the capture (the same markers'
            places on the body)."""
            return measure_support(body_trajectory(noisy, plat_markers),
                                   body_trajectory(noisy, body_markers), r_pb, t_pb,
                                   data.time_s, frames=frames)
    if support is not None and weighting == "dual-metric":
        weighting = "noise"           # the dual metric takes no internal motion (its check says)
    res = fit_posture(rig, rig.platform.params, cap, base_rotation_platform=r_pb,
                      base_position_platform=t_pb, total_mass_kg=total_mass_kg,
                      spring_model=spring_model, weighting=weighting, fit_mass=True,
                      base_pose_wander_cov=pose_wander,
                      **({"breath": breath} if breath is not None else {}),
                      **({"support": support} if support is not None else {}))
    tissue, tissue_note, evidence, unseen = None, None, None, None
    if session.soft_tissue != "rigid" and session.robot is None:
        fits = _TissueFits(rig, cap, res, r_pb, t_pb, dict(
            base_rotation_platform=r_pb, base_position_platform=t_pb,
            total_mass_kg=total_mass_kg, spring_model=spring_model,
            # the dual metric takes no internal motion (its fit would say so per posture)
            weighting="noise" if weighting == "dual-metric" else weighting, fit_mass=True,
            base_pose_wander_cov=pose_wander,
            **({"breath": breath} if breath is not None else {}),
            **({"support": support} if support is not None else {})))

        def links_tissue() -> tuple[OtherTissue, ...]:
            return other_tissue_of_links(
                tree, session, total_mass_kg, markers,
                {l.name: relative_pose(plat_traj, trajs[l.name], cap.valid)[:2]
                 for l in tree.links})
        if session.soft_tissue == "auto":
            evidence = fits.evidence(total_mass_kg)
            if tissue_seen is not None and tissue_seen != evidence["seen"]:
                evidence = {**evidence, "seen": tissue_seen, "overruled": True}
        if session.soft_tissue == "measured" or evidence["seen"]:
            try:
                tissue = fits.profile(links_tissue())
                res = tissue.result
            except TissueNotFound as exc:
                tissue_note = f"soft tissue: {exc}; the body was fitted rigid"
        elif support is not None or hold_tissue:
            # a body riding on its own soft back is a soft body: its tissue, which shows in
            # the same upper modes of the rig as the support's measured motion, is not seen
            # but not ruled out, and what this posture cannot resolve of it is held in its
            # standard errors; so is it when the postures together say the body is not rigid
            unseen = fits.hold(links_tissue())
            res = unseen.result
    equation_error, refinement, diverged = res, None, None
    # with the body riding on a support, or carrying its tissue, the equation-error fit,
    # which follows its measured motion (the tissue: through its model), is the result (the
    # output-error engine holds a rigid body fixed on the platform; the report says so)
    if method == "output-error" and support is None and tissue is None:
        fit_names = list(plat_markers) + [n for l in tree.links for n in markers[l.name]]
        cov, _ = marker_covariance_of(marker_covariance, capture, data, fit_names)
        try:
            refinement = refine_posture(rig, rig.platform.params, data,
                                        base_rotation_platform=r_pb, base_position_platform=t_pb,
                                        total_mass_kg=total_mass_kg, start=res, window=window,
                                        name=name, markers_platform=plat_markers,
                                        calibration_std=_calibration_std(rigfile),
                                        base_pose_cov=pose_cov, base_pose_wander_cov=pose_wander,
                                        marker_covariance=cov,
                                        standard_errors=standard_errors,
                                        cluster_frames=cluster_frames,
                                        **(_attached_markers(tree, markers)
                                           if object_markers_in_fit else {}),
                                        **({"breath": breath} if breath is not None else {}))
        except FloatingPointError as exc:
            # a simulation that leaves the model (the start, or a step, outside where the
            # integrator holds) ends the refinement, not the run: the equation-error
            # estimate, which simulates nothing, is the result, and the report says so
            refinement = None
            diverged = (f"{name}: the output-error fit failed ({exc}); the equation-error "
                        "estimate is the result")
        if refinement is not None:
            res = refinement.as_posture_result()
            if unseen is not None:
                # the refinement fits the same rigid body: the tissue the equation-error fit
                # held, which no rigid model follows, joins its covariance as it joined that
                # fit's (the same shifts of [h, J0] per link and frequency)
                res = hold_shared_errors(res, unseen.shared)
        if refinement is not None and refinement.base_pose_fitted:
            r_pb, t_pb = refinement.base_rotation_platform, refinement.base_position_platform_m
    bodies = {"platform": plat_traj, **trajs}
    rms = {k: float(np.sqrt(np.nanmean(t.residual_rms_m ** 2))) for k, t in bodies.items()}
    body_noise = {k: marker_sigma_from_residual(t.residual_rms_m, len(t.marker_names))
                  for k, t in bodies.items()}
    # The marker noise is the platform's: its markers are screwed to a rigid plate, while a
    # person's sit on skin that slides and vibrates (a noise estimate from them absorbs that
    # motion and hides it). The object's bodies only stand in when the platform gives none.
    noise = [v for v in body_noise.values() if np.isfinite(v)]
    if np.isfinite(body_noise["platform"]):
        noise = [body_noise["platform"]]
    scatter = {k: dict(zip(t.marker_names,
                           marker_scatter_mm(t, data.select(list(t.marker_names))).tolist()))
               for k, t in bodies.items()}
    warnings = list(res.warnings) if refinement is None else list(refinement.warnings)
    warnings += [diverged] if diverged else []
    other_lab = posture_lab_frame_warning(rigfile.raw, capture)
    warnings += [f"{name}: {other_lab}"] if other_lab else []
    signs = living_signs(rig, data, plat_traj, trajs, tree, res.com, res.mass, r_pb, t_pb,
                         on_platform, support, marker_sigma_m=cap.marker_sigma_m,
                         support_of=None if support is None else support_measured)
    if refinement is not None and refinement.platform_markers is not None:
        signs["residual_rhythm"] = fit_residual_rhythm(rig, refinement, r_pb, t_pb)
    breathing = (breathing_model(breath_note, res.breath, r_pb, t_pb)
                 if session.breathing_markers else {})
    support_model = support_motion_model(support) if support is not None else {}
    return PostureOutcome(res, rotations, spread, r_pb, t_pb, rms, warnings,
                          motion_traces(cap, bodies), equation_error, refinement,
                          base_wobble_deg=float(np.rad2deg(wobble)),
                          marker_noise_mm=1e3 * float(np.median(noise)) if noise else np.nan,
                          marker_scatter_mm=scatter,
                          notes=(list(cap.warnings) + ([tissue_note] if tissue_note else [])
                                 + ([scale_note(length)] if length else [])),
                          rotation_cov=rotation_cov,
                          marker_noise_body_mm={k: 1e3 * float(v) for k, v in
                                                body_noise.items()},
                          living_signs=signs, breathing=breathing, support=support_model,
                          soft_tissue=(tissue_model(tissue, r_pb, t_pb, total_mass_kg)
                                       if tissue else {}),
                          base_pose_wander_cov=pose_wander,
                          shared_errors=(dict(tissue.other_shared) if tissue else
                                         dict(unseen.shared) if unseen and support else {}),
                          held_errors=(dict(unseen.shared) if unseen and not support
                                       else {}),
                          unseen_tissue=unseen.summary() if unseen else {},
                          tissue_evidence=dict(evidence) if evidence else {})


class _TissueFits:
    """A posture's fits with a wobbling-tissue element (rigtool.identify.posture.tissue_fit):
    the evidence for it at one frequency, and the frequency's profile. Both share the
    posture's rows but the tissue's, and the rig's highest mode with this body on it."""

    def __init__(self, rig, cap, rigid, r_pb: np.ndarray, t_pb: np.ndarray, kwargs: dict):
        load = InertialParams(transform_params(rigid.params.pi, r_pb, t_pb))
        # the fit's consistent estimate may sit on the set's boundary: the modes need a body
        modes_hz = rig_modes_hz(rig, rig.platform.params, load.inside_consistent_set())
        cache: dict = {}
        self.fit = lambda **kw: fit_posture(rig, rig.platform.params, cap,
                                            **{**kwargs, "rows_cache": cache, **kw})
        self.rigid = rigid
        self.where = dict(start_point_platform_m=r_pb @ rigid.com + t_pb,
                          rate_hz=float(1.0 / np.median(np.diff(cap.time_s))),
                          top_mode_hz=float(np.max(modes_hz)))

    def evidence(self, body_mass_kg: float) -> dict:
        """:func:`rigtool.identify.posture.tissue_fit.tissue_evidence`."""
        return tissue_evidence(self.fit, body_mass_kg=body_mass_kg, **self.where)

    def profile(self, other_tissue: tuple[OtherTissue, ...] = ()):
        """:func:`rigtool.identify.posture.tissue_fit.fit_with_tissue`."""
        return fit_with_tissue(self.fit, self.rigid, other_tissue=other_tissue, **self.where)

    def hold(self, tissue: tuple[OtherTissue, ...]):
        """:func:`rigtool.identify.posture.tissue_fit.hold_unseen_tissue`."""
        return hold_unseen_tissue(self.fit, tissue=tissue, **self.where)


def other_tissue_of_links(tree: Tree, session: Session, total_mass_kg: float,
                          markers: dict[str, dict[str, np.ndarray]],
                          link_poses_platform: dict[str, tuple[np.ndarray, np.ndarray]]
                          ) -> tuple[OtherTissue, ...]:
    """The tissue each link may carry beside a posture's fitted element (or unseen): at the
    link's COM (its prior's; without priors, its markers' centroid) in the posture, of
    standard deviation :data:`~rigtool.identify.posture.tissue_fit.OTHER_TISSUE_FRACTION` of
    its mass (its prior's; without priors, the body's mass shared equally, which the report
    says: ``mass_std_from``).

    ``link_poses_platform``: per link its mean ``(R, t)`` on the platform (link axes to
    platform axes, its origin in the platform frame, m)."""
    try:
        priors = priors_from_specs(tree, session.priors, body_mass_kg=total_mass_kg,
                                   sex=session.subject_sex)
        where = {n: (p.mass_kg, p.com_m) for n, p in priors.items()}
        from_prior = True
    except ConfigError:        # a link without a prior: the priors are the segments stage's
        share = total_mass_kg / len(tree.links)
        where = {l.name: (share, np.mean(list(markers[l.name].values()), axis=0))
                 for l in tree.links}
        from_prior = False     # the report says so (mass_std_from)
    out = []
    for link in tree.links:
        mass, com = where[link.name]
        r, t = link_poses_platform[link.name]
        out.append(OtherTissue(link.name, r @ np.asarray(com, float) + t,
                               OTHER_TISSUE_FRACTION * float(mass), from_prior))
    return tuple(out)


def tissue_model(tissue, r_pb: np.ndarray, t_pb: np.ndarray, body_mass_kg: float) -> dict:
    """The report's account of the tissue element: what it is, what was fitted (its point
    also in the base-link frame), whether it is held at the most one element may hold, and
    what the posture's numbers are."""
    point_base = r_pb.T @ (tissue.point_platform_m - t_pb)
    return {"model": "one wobbling-tissue element",
            "at_mass_limit": tissue.at_mass_limit(body_mass_kg),
            "about": "the posture's COM and inertia are the body's mean mass distribution "
                     "(its soft tissue at rest): the fit adds a tissue mass on a damped "
                     "spring (frequency profiled in the rig's band, damping ratio held), "
                     "whose apparent mass grows from the rig's pendulum modes to its "
                     "rocking modes",
            "point_base_m": [float(v) for v in point_base], **tissue.summary()}


def measured_breath(data: MarkerData, markers: dict[str, dict[str, np.ndarray]],
                    breathing_markers: dict[str, dict[str, np.ndarray]], window
                    ) -> tuple[BreathInput | None, dict]:
    """The breath the manifest's breathing markers measure over the fitted window
    (rigtool.kinematics.breath_motion), as the posture fits take it, and what the report
    says of it (None and the reason when no breath stands above the marker noise)."""
    frames = window_frames(data, window, "a free-vibration capture")
    motion = measure_breath(data, markers, breathing_markers, frames=frames)
    if motion is None:
        names = ", ".join(n for m in breathing_markers.values() for n in m)
        return None, {"model": "rigid",
                      "reason": f"the breathing markers ({names}) do not move on their link "
                                "above the marker noise: no breath to model"}
    return BreathInput(motion.at, motion.n_components, motion.summary(),
                       noise_probes=motion.noise_probes), {}


def support_motion_model(support: SupportMotion) -> dict:
    """The report's account of the support's model: the locked body's measured motion on the
    platform, which the posture fits took as the body's own."""
    return {"model": "measured motion on the platform",
            "about": "the locked body rides on a compliant support (the soft tissue of the "
                     "back, a mattress): its markers (every link's: the joints are locked) "
                     "measure its small rigid motion on the platform, and the fits move the "
                     "body's wrench with it; the posture's numbers are the body's at its mean "
                     "place",
            **support.summary()}


def breathing_model(note: dict, fitted: dict | None, r_pb: np.ndarray,
                    t_pb: np.ndarray) -> dict:
    """The report's account of the breath's model: what was measured, what was fitted
    (``G``, ``K`` in the base-link frame with standard errors) and what the posture's
    numbers are (its mean mass distribution)."""
    if fitted is None:
        return dict(note) or {"model": "rigid"}
    k = int(fitted["k"])
    return {"model": "measured internal wrench",
            "what": "the posture's COM and inertia are its mean mass distribution over the "
                    "capture; the breath moves the first moment by G u(t) and the inertia "
                    "about the base-link origin by D u(t) (u: the breath coordinates the "
                    "breathing markers measure, m) and adds the internal momentum K u'(t)",
            "measurement": fitted["summary"],
            **breath_in_base_frame(fitted["beta"], fitted["cov"], k, r_pb, t_pb)}


#: frequency bands the apparent mass is measured in: the pendulum modes, and the modes above
#: breathing's harmonics (a 20/min breath carries little above 1.5 Hz)
APPARENT_MASS_BANDS_HZ = [(0.15, 1.0), (1.6, 8.0)]


#: noisy copies of a capture the apparent masses are measured on again for their spread
BAND_NOISE_PROBES = 4


def living_signs(rig, data: MarkerData, plat_traj: BodyTrajectory,
                 trajs: dict[str, BodyTrajectory], tree: Tree, com_base_m: np.ndarray,
                 object_mass_kg: float, r_pb: np.ndarray, t_pb: np.ndarray,
                 on_platform: dict, support: SupportMotion | None = None, *,
                 marker_sigma_m: float = float("nan"),
                 support_of: Callable[[MarkerData], SupportMotion] | None = None) -> dict:
    """Breathing rhythm of each object marker, the base link's motion on the platform
    (``on_platform``, :func:`~rigtool.kinematics.living_signs.base_on_platform`) and the
    apparent mass band by band (:mod:`rigtool.kinematics.living_signs`). With the body's
    measured motion on its support, the object's COM follows it: the band masses then show
    what the support does not explain.

    ``marker_sigma_m`` (the capture's marker noise) and ``support_of`` (the support's
    measurement from a capture, when it is measured through) give each band mass the spread
    the markers' noise gives it: the bands are measured again on :data:`BAND_NOISE_PROBES`
    copies of the capture with fresh white noise of that level added to its markers, and the
    RMS change (``std_probes_kg``) joins the band's residual standard error. The residual's
    alone misses what the noise does through the regressor (errors in variables: the upper
    band's acceleration is twice differentiated), most of all through a measured support's
    rotation, whose noise a 0.3 m lever turns into the body's acceleration: on the test bed, a
    body on a soft back with 0.1 mm markers spread its upper band by 1.1-3.4 kg over the
    noisy copies, against a residual standard error of 0.8-1.3 kg.
    """
    rate = float(data.rate_hz)
    rhythm = {}
    for link in tree.links:
        t = trajs[link.name]
        xyz = data.select(list(t.marker_names))
        rhythm[link.name] = dict(zip(t.marker_names, marker_rhythm(
            t.rotation, t.position_m, t.valid, xyz, rate)))
    bands = _apparent_masses(rig, plat_traj, com_base_m, object_mass_kg, r_pb, t_pb, rate,
                             support)
    if bands and np.isfinite(marker_sigma_m) and marker_sigma_m > 0:
        spread = _band_spread(rig, data, bands, com_base_m, object_mass_kg, r_pb, t_pb,
                              marker_sigma_m, support_of)
        for b, s in zip(bands, spread):
            b["std_residual_kg"] = b["std_kg"]
            b["std_probes_kg"] = float(s)
            b["std_kg"] = float(np.hypot(b["std_kg"], s))
    return {"rhythm": rhythm, "base_on_platform": on_platform, "apparent_mass": bands,
            "rate_hz": rate}


def _apparent_masses(rig, plat_traj: BodyTrajectory, com_base_m: np.ndarray,
                     object_mass_kg: float, r_pb: np.ndarray, t_pb: np.ndarray, rate: float,
                     support: SupportMotion | None) -> list[dict]:
    """The object's apparent mass in :data:`APPARENT_MASS_BANDS_HZ` from the platform's
    pose (and the body's measured motion on it), empty without a calibrated platform."""
    plat = rig.platform.params
    if plat is None or not np.all(np.isfinite(com_base_m)) or not np.isfinite(object_mass_kg):
        return []
    rot = np.where(plat_traj.valid[:, None, None], plat_traj.rotation, np.eye(3))
    pos = np.where(plat_traj.valid[:, None], plat_traj.position_m, 0.0)
    com_obj_platform = r_pb @ np.asarray(com_base_m, float) + t_pb
    total = plat.mass + object_mass_kg
    com_platform = (plat.mass * plat.com + object_mass_kg * com_obj_platform) / total
    com_platform = np.broadcast_to(com_platform, pos.shape)
    if support is not None:
        u = np.nan_to_num(support.u_frames)
        com_platform = com_platform + object_mass_kg / total * (
            u[:, :3] + np.cross(u[:, 3:], com_obj_platform))
    com_lab = pos + np.einsum("tij,tj->ti", rot, com_platform)
    force = spring_wrench(rig, rot, pos)[..., :3]
    # the platform's small rotation about its mean (lab): each band fits its own first
    # moment, so the fitted COM (which a rigid fit moves to fit every mode) stays out
    r_mean = mean_rotation(rot[plat_traj.valid])[0]
    tilt = Rotation.from_matrix(rot @ r_mean.T).as_rotvec()
    bands = apparent_mass_by_band(force, com_lab, plat_traj.valid, rig.gravity_lab, rate,
                                  APPARENT_MASS_BANDS_HZ, tilt_rad=tilt)
    for b in bands:
        b["object_mass_kg"] = b["mass_kg"] - plat.mass
    return bands


def _band_spread(rig, data: MarkerData, bands: list[dict], com_base_m: np.ndarray,
                 object_mass_kg: float, r_pb: np.ndarray, t_pb: np.ndarray,
                 marker_sigma_m: float,
                 support_of: Callable[[MarkerData], SupportMotion] | None) -> np.ndarray:
    """Per band, the RMS change of the object's apparent mass over copies of the capture with
    fresh white noise of ``marker_sigma_m`` on every marker (seeded: a run repeats)."""
    rng = np.random.default_rng(0)
    plat_markers = rig.platform.markers_platform
    base = np.array([b["object_mass_kg"] for b in bands], float)
    changes = []
    for _ in range(BAND_NOISE_PROBES):
        noisy = replace(data, xyz_m=data.xyz_m + rng.normal(0.0, marker_sigma_m,
                                                            data.xyz_m.shape))
        plat_k = body_trajectory(noisy, plat_markers)
        support_k = support_of(noisy) if support_of is not None else None
        again = _apparent_masses(rig, plat_k, com_base_m, object_mass_kg, r_pb, t_pb,
                                 float(data.rate_hz), support_k)
        changes.append([b["object_mass_kg"] for b in again] - base)
    changes = np.asarray(changes, float)
    with np.errstate(invalid="ignore"):
        return np.sqrt(np.nanmean(changes ** 2, axis=0))


def fit_residual_rhythm(rig, refinement: OutputErrorResult, r_pb: np.ndarray,
                        t_pb: np.ndarray) -> dict:
    """The breathing rhythm in an output-error posture fit's platform-marker residual
    (:func:`rigtool.kinematics.living_signs.residual_rhythm`), judged against the rig's modes
    with the fitted body on it."""
    pm = refinement.platform_markers
    load = InertialParams(transform_params(refinement.params.pi, r_pb, t_pb))
    modes_hz = rig_modes_hz(rig, rig.platform.params, load.inside_consistent_set())
    rate = float(1.0 / np.median(np.diff(pm.time_s)))
    return residual_rhythm(1e3 * (pm.measured_m - pm.simulated_m), rate, modes_hz)


def hold_shared_errors(result: PostureResult, shared: dict[str, np.ndarray]) -> PostureResult:
    """``result`` with errors it shares with other postures in its covariances: each a shift
    of ``[h, J0]`` (the subset's order) at one standard deviation, added as its outer product
    (:func:`rigtool.identify.posture.force_scale.carry_scale_uncertainty`, one shift at a
    time)."""
    for shift_subset in shared.values():
        shift_pi = np.empty(9)
        shift_pi[PI9_TO_SUBSET_ORDER] = np.asarray(shift_subset, float)
        result, _ = carry_scale_uncertainty(result, shift_pi, 1.0)
    return result


def scale_standard_errors(p: PostureOutcome, factor: float) -> None:
    """Scale a posture's standard errors (and its covariances, by ``factor ** 2``) by the
    Birge ratio of the Phi_s fit (``SubsetResult.se_scale``): the postures together scattered
    beyond their standard errors by that much, and each is taken to have understated its
    own alike. The estimate is unchanged; ``p.se_scale`` records the factor."""
    res = p.result
    f2 = factor * factor
    p.result = replace(res, com_std=res.com_std * factor,
                       inertia_com_std=res.inertia_com_std * factor,
                       params_cov=res.params_cov * f2, props_cov=res.props_cov * f2,
                       covariance9=None if res.covariance9 is None else res.covariance9 * f2)
    p.se_scale = float(factor)


def posture_overall(p: PostureOutcome) -> PostureOverall:
    """What the subset fit needs of one posture (with the posture fit's covariance, less the
    errors held in the posture's own standard errors alone: ``held_errors``)."""
    r = p.result
    cov9 = r.covariance9
    if cov9 is not None and p.held_errors:
        # the postures' common tissue is not the subset fit's to estimate from their
        # disagreement (it would take a model's shifts for the data's); their scatter scales
        # Phi_s's standard errors instead (the Birge ratio)
        held = np.array(list(p.held_errors.values()), float)
        cov9 = cov9 - held.T @ held
    return PostureOverall(r.name, r.com, r.com_std, r.inertia_com, r.inertia_com_std,
                          p.rotations, covariance9=cov9,
                          rotation_cov=p.rotation_cov or None,
                          shared_errors=p.shared_errors or None)


__all__ = ["PostureOutcome", "MotionTraces", "motion_traces", "fit_one_posture",
           "posture_overall", "living_signs"]
