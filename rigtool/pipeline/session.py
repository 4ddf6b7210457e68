"""The session job: manifest -> per-posture overall properties -> subset Phi_s.

Stages, each feeding the next (data flows one way):

1. the manifest and its calibrated rig (rigtool.config), the object's weighed mass;
2. link marker coordinates (from the manifest, or built from a static capture);
3. per locked posture: platform motion (filtered both sides, noise probes), the base link's
   pose on the platform, every child's rotation ``0R_j`` (averaged over the capture), and
   the object's COM and inertia (rigtool.identify.posture.equation_error);
4. the subset Phi_s from all postures (rigtool.identify.subset.fit);
5. the relative-motion capture: the remaining J_yy terms, the full minimal set Phi_B
   (rigtool.identify.relative.equation_error, then by default its output-error refinement,
   rigtool.identify.relative.output_error); joint centres the manifest leaves out come from
   the same capture first (rigtool.kinematics.joint_centre);
6. per-link parameters from Phi_B completed by the manifest's priors
   (rigtool.identify.segments.fit).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.config import FilterSettings, RigFile, Session, load_rig, load_session
from rigtool.devices.scale import resolve_total_mass
from rigtool.errors import ConfigError, IdentifiabilityError, InputError
from rigtool.calibration_uncertainty import calibration_std_from_rigfile
from rigtool.identify.common.output_error import base_pose_covariance
from rigtool.identify.posture.output_error import OutputErrorResult, refine_posture
from rigtool.pipeline.inputs import session_inputs
from rigtool.pipeline.preflight import check_session
from rigtool.identify.relative.output_error import (REACHED_NOISE_FACTOR, RelativeRefinement,
                                                   refine_relative)
from rigtool.identify.posture.equation_error import PostureResult, fit_posture
from rigtool.identify.common.platform_motion import (CaptureMotion, capture_motion, relative_pose,
                                              with_noise_probes)
from rigtool.identify.relative.equation_error import RelativeResult, resolve_relative
from rigtool.identify.segments.fit import SegmentsResult, estimate_segments, priors_from_specs
from rigtool.identify.subset.fit import PostureOverall, SubsetResult, fit_subset
from rigtool.kinematics.joint_centre import score_joint_centre
from rigtool.kinematics.pose import BodyTrajectory, body_trajectory, markers_from_static
from rigtool.mocap import MarkerData, read_capture
from rigtool.pipeline.methods import check_method
from rigtool.tree import Tree

Progress = Callable[[str], None]


@dataclass
class PostureOutcome:
    """One posture: the fit and what was measured around it."""

    result: PostureResult
    rotations: dict[str, np.ndarray]            # 0R_j, link -> base axes
    rotation_spread_deg: dict[str, float]        # RMS wobble of each joint during the capture
    base_rotation_platform: np.ndarray
    base_position_platform: np.ndarray
    marker_rms_m: dict[str, float]               # rigid-fit residual per body
    warnings: list[str] = field(default_factory=list)
    traces: "MotionTraces | None" = None          # time series for the report's figures
    equation_error: PostureResult | None = None  # the equation-error fit (start of the refinement)
    refinement: OutputErrorResult | None = None  # the output-error fit, when run

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


@dataclass
class SessionOutcome:
    """Everything the session job produced (the report is written from this)."""

    session: Session
    rigfile: RigFile
    total_mass_kg: float
    link_markers: dict[str, dict[str, np.ndarray]]
    inputs: list[dict]
    postures: list[PostureOutcome]
    subset: SubsetResult | None
    warnings: list[str]
    tree: Tree | None = None                     # the tree used (joint centres filled in)
    joint_centres: dict = field(default_factory=dict)   # link -> JointCentreEstimate
    relative: RelativeResult | None = None       # the relative-motion stage, full Phi_B
    relative_refinement: RelativeRefinement | None = None   # its output-error refinement
    segments: SegmentsResult | None = None       # per-link parameters (Phi_B + priors)
    notes: list[str] = field(default_factory=list)      # stages skipped and why


def _noop(message: str) -> None:
    return None


def link_markers(session: Session, tree: Tree) -> dict[str, dict[str, np.ndarray]]:
    """Marker coordinates of every link in its own frame (manifest, or static capture)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for i, link in enumerate(tree.links):
        spec = session.frames.get(link.name)
        if spec is None:
            out[link.name] = dict(link.markers_link)
            continue
        raw_links = session.raw.get("links", [])
        frame_t = raw_links[i].get("frame", {}) if i < len(raw_links) else {}
        names = list(link.markers_link) or list(frame_t.get("markers", []))
        if not names:
            names = sorted({*([spec.origin] if isinstance(spec.origin, str) else spec.origin),
                            *spec.x_axis, spec.xy_plane} - {"joint_center"})
        data = read_capture(spec.static_capture)
        origin = spec.origin
        if origin == "joint_center" and link.joint_center_parent is None:
            # Provisional origin at the markers' midpoint; estimate_joint_centres moves it to
            # the centre found from the relative motion.
            origin = names
        elif origin == "joint_center":
            jc = link.joint_center_parent
            parent = link.parent
            if parent not in out:
                raise ConfigError("origin = \"joint_center\" needs the parent's markers",
                                  path=session.path, field=f"links[{i}].frame.origin")
            ptraj = body_trajectory(data, out[parent])
            ok = ptraj.valid
            if not ok.any():
                raise InputError(f"the parent '{parent}' is not seen in the static capture",
                                 path=spec.static_capture)
            r = Rotation.from_matrix(ptraj.rotation[ok]).mean().as_matrix()
            origin = r @ jc + ptraj.position_m[ok].mean(axis=0)
        out[link.name] = markers_from_static(data, origin=origin, x_axis=spec.x_axis,
                                             xy_plane=spec.xy_plane, names=names)
        if len(out[link.name]) < 3:
            raise ConfigError("a link frame from a static capture needs at least 3 markers",
                              path=session.path, field=f"links[{i}].frame")
    return out


def estimate_joint_centres(session: Session, tree: Tree,
                           markers: dict[str, dict[str, np.ndarray]],
                           data: MarkerData | None) -> tuple[Tree, dict, dict]:
    """Fill the joint centres the manifest leaves out from the relative-motion capture (SCoRE).

    A link without ``joint_center`` has its marker coordinates in a provisional frame with the
    link's axes; the centre found in that frame becomes the link's origin (its markers are
    shifted), and the centre in the parent's frame becomes ``joint_center``.

    Returns
    -------
    tree : Tree
        With every joint centre set.
    markers : dict
        Link marker coordinates in the (possibly moved) link frames.
    estimates : dict[str, JointCentreEstimate]
        Per link whose centre was estimated.
    """
    missing = [i for i, l in enumerate(tree.links) if i > 0 and l.joint_center_parent is None]
    if not missing:
        return tree, markers, {}
    names = ", ".join(tree.links[i].name for i in missing)
    if data is None:
        raise ConfigError(f"no joint_center for {names} and no [relative_motion] capture to "
                          "estimate it from; give joint_center (parent frame, m) or add a "
                          "capture where the link swings", path=session.path,
                          field=f"links[{missing[0]}].joint_center")
    window = session.relative_motion.window
    frames = None
    if window is not None:
        frames = (data.time_s >= window[0]) & (data.time_s <= window[1])
    links = list(tree.links)
    markers = dict(markers)
    estimates = {}
    for i in missing:
        link = links[i]
        ptraj = body_trajectory(data, markers[link.parent])
        ctraj = body_trajectory(data, markers[link.name])
        try:
            est = score_joint_centre(ptraj, ctraj, frames=frames,
                                     block_frames=max(1, int(round(data.rate_hz / 2))))
        except IdentifiabilityError as exc:
            raise IdentifiabilityError(f"joint centre of '{link.name}': {exc.message}",
                                       path=session.relative_motion.capture) from None
        estimates[link.name] = est
        markers[link.name] = {k: v - est.centre_child_m for k, v in markers[link.name].items()}
        links[i] = replace(link, joint_center_parent=est.centre_parent_m,
                           markers_link=markers[link.name])
    return Tree(tuple(links)), markers, estimates


def _mean_rotation(rot: np.ndarray) -> tuple[np.ndarray, float]:
    r = Rotation.from_matrix(rot)
    mean = r.mean()
    spread = float(np.sqrt(np.mean((mean.inv() * r).magnitude() ** 2)))
    return mean.as_matrix(), float(np.rad2deg(spread))


def _child_rotations(tree: Tree, trajs: dict[str, BodyTrajectory], path: Path
                     ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    base = tree.links[0].name
    rb = trajs[base]
    rotations, spread = {}, {}
    for link in tree.links[1:]:
        tj = trajs[link.name]
        ok = rb.valid & tj.valid
        if ok.sum() < 3:
            raise InputError(f"link '{link.name}' and the base link are seen together in "
                             f"{int(ok.sum())} frames; expected the whole posture in view",
                             path=path)
        rel = np.swapaxes(rb.rotation[ok], -1, -2) @ tj.rotation[ok]
        rotations[link.name], spread[link.name] = _mean_rotation(rel)
    return rotations, spread


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


def fit_one_posture(session: Session, rigfile: RigFile, tree: Tree,
                    markers: dict[str, dict[str, np.ndarray]], capture: Path, *,
                    name: str, window, units, total_mass_kg: float,
                    settings: FilterSettings, spring_model: str = "exact",
                    weighting: str = "noise", compensate: bool = True,
                    data: MarkerData | None = None,
                    method: str = "equation-error",
                    object_markers_in_fit: bool = True) -> PostureOutcome:
    """Read one locked-posture capture and fit the object's overall properties.

    ``method="output-error"`` refines the equation-error fit by simulating the platform and
    fitting its raw markers (:func:`rigtool.identify.posture.output_error.refine_posture`); with
    ``object_markers_in_fit`` (default) the object's markers join that fit as markers rigidly
    attached to the platform, and the base link's pose on the platform is estimated in it.
    """
    check_method(method)
    rig = rigfile.rig
    data = read_capture(capture, units=units) if data is None else data
    plat_markers = rig.platform.markers_platform
    cap = capture_motion(data, plat_markers, settings, name=name, window=window)
    if compensate:
        cap = with_noise_probes(cap, plat_markers, settings)
    plat_traj = body_trajectory(data, plat_markers)
    trajs = {l.name: body_trajectory(data, markers[l.name]) for l in tree.links}
    base = tree.links[0].name
    r_pb, t_pb, wobble = relative_pose(plat_traj, trajs[base], cap.valid)
    warnings = []
    if np.rad2deg(wobble) > 0.5:
        warnings.append(f"{name}: the base link moves on the platform by "
                        f"{np.rad2deg(wobble):.2f} deg RMS; it should be fixed to it")
    rotations, spread = _child_rotations(tree, trajs, capture)
    for link, deg in spread.items():
        if deg > 0.5:
            warnings.append(f"{name}: joint of '{link}' moves by {deg:.2f} deg RMS; a locked "
                            "posture is assumed")
    res = fit_posture(rig, rig.platform.params, cap, base_rotation_platform=r_pb,
                      base_position_platform=t_pb, total_mass_kg=total_mass_kg,
                      spring_model=spring_model, weighting=weighting, fit_mass=True)
    equation_error, refinement = res, None
    if method == "output-error":
        *_, pose_cov = base_pose_covariance(plat_traj.rotation, plat_traj.position_m,
                                            trajs[base].rotation, trajs[base].position_m,
                                            cap.valid)
        refinement = refine_posture(rig, rig.platform.params, data,
                                    base_rotation_platform=r_pb, base_position_platform=t_pb,
                                    total_mass_kg=total_mass_kg, start=res, window=window,
                                    name=name, markers_platform=plat_markers,
                                    calibration_std=_calibration_std(rigfile),
                                    base_pose_cov=pose_cov,
                                    **(_attached_markers(tree, markers)
                                       if object_markers_in_fit else {}))
        res = refinement.as_posture_result()
        if refinement.base_pose_fitted:
            r_pb, t_pb = refinement.base_rotation_platform, refinement.base_position_platform_m
    rms = {"platform": float(np.sqrt(np.nanmean(plat_traj.residual_rms_m ** 2)))}
    rms.update({k: float(np.sqrt(np.nanmean(t.residual_rms_m ** 2))) for k, t in trajs.items()})
    return PostureOutcome(res, rotations, spread, r_pb, t_pb, rms,
                          warnings + list(cap.warnings) + list(res.warnings),
                          motion_traces(cap, {"platform": plat_traj, **trajs}),
                          equation_error, refinement)


def posture_overall(p: PostureOutcome) -> PostureOverall:
    """What the subset fit needs of one posture (with the posture fit's covariance)."""
    r = p.result
    return PostureOverall(r.name, r.com, r.com_std, r.inertia_com, r.inertia_com_std,
                          p.rotations, covariance9=r.covariance9)


def _posture_job(args) -> PostureOutcome:
    session, rigfile, tree, markers, ref, kwargs = args
    return fit_one_posture(session, rigfile, tree, markers, ref.capture, name=ref.name,
                           window=ref.window, units=ref.units, **kwargs)


def _fit_postures(session: Session, rigfile: RigFile, tree: Tree, markers: dict, kwargs: dict,
                  progress: Progress, workers: int | None) -> list[PostureOutcome]:
    """Fit every posture; independent captures run in parallel processes when it pays
    (the output-error refinement takes seconds per posture; the equation-error fit does not)."""
    refs = list(session.postures)
    jobs = [(session, rigfile, tree, markers, ref, kwargs) for ref in refs]
    if workers is None:
        workers = min(len(refs), os.cpu_count() or 1) if kwargs["method"] == "output-error" else 1
    if workers <= 1 or len(refs) == 1:
        out = []
        for i, job in enumerate(jobs):
            progress(f"posture {i + 1}/{len(refs)}: {refs[i].name}")
            out.append(_posture_job(job))
        return out
    progress(f"postures: {len(refs)} fits in {workers} processes")
    # "spawn", not "fork": forking a process whose BLAS or solver threads hold a lock can
    # deadlock the child (seen under pytest); a fresh interpreter per worker costs ~1 s.
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(_posture_job, job) for job in jobs]
        out = []
        for ref, fut in zip(refs, futures):
            out.append(fut.result())          # a RigtoolError in a worker re-raises here
            progress(f"posture {ref.name} done")
        return out


def run_session(session_path: str | Path, *, spring_model: str = "exact",
                weighting: str = "dual-metric", compensate: bool = True,
                method: str = "output-error", workers: int | None = None,
                progress: Progress | None = None, preflight: bool = True,
                rig: str | Path | None = None) -> SessionOutcome:
    """Run every stage of a session (see module docstring).

    ``workers``: processes for the posture fits (default: one per posture up to the CPU
    count with the output-error method, else 1). ``preflight`` (default) checks every file
    the manifest names before any fit (rigtool.pipeline.preflight); off when the caller has
    just done so. ``rig``: a rig file used instead of the manifest's.
    """
    progress = progress or _noop
    session = (check_session(session_path, rig=rig) if preflight
               else load_session(session_path, rig=rig))
    rigfile = load_rig(session.rig_path)
    rigfile.require_calibrated()
    total_mass = resolve_total_mass(session)
    tree = session.tree
    markers = link_markers(session, tree)
    inputs = session_inputs(session)
    relative_data = None
    if session.relative_motion is not None:
        ref = session.relative_motion
        relative_data = read_capture(ref.capture, units=ref.units)
    tree, markers, joint_centres = estimate_joint_centres(session, tree, markers, relative_data)
    if joint_centres:
        progress("joint centres estimated from the relative motion: "
                 + ", ".join(joint_centres))
    if not session.postures:
        raise ConfigError("the manifest lists no [[postures]]; add at least one locked-posture "
                          "capture", path=session.path, field="postures")
    kwargs = dict(total_mass_kg=total_mass, settings=session.filter,
                  spring_model=spring_model, weighting=weighting, compensate=compensate,
                  method=method)
    outcomes = _fit_postures(session, rigfile, tree, markers, kwargs, progress, workers)
    warnings = [w for o in outcomes for w in o.warnings]
    subset = None
    if len(tree.links) > 1:
        progress("subset of the minimal parameters")
        subset = fit_subset(tree, [posture_overall(o) for o in outcomes], total_mass)
        if not subset.identified:
            raise IdentifiabilityError(
                "the postures cannot identify Phi_s: " + "; ".join(subset.unidentifiable)
                + (f". {subset.advice}" if getattr(subset, "advice", None) else ""),
                path=session.path)
    relative, refinement = None, None
    if session.relative_motion is not None and subset is not None:
        progress("relative motion: the remaining J_yy terms")
        relative = resolve_relative(tree, rigfile.rig, rigfile.rig.platform.params,
                                    relative_data, markers, subset, total_mass, session.filter,
                                    session.relative_motion.window)
        warnings += [f"relative motion: {w}" for w in relative.warnings]
        if method == "output-error":
            progress("relative motion: output-error refinement")
            refinement = refine_relative(
                tree, rigfile.rig, rigfile.rig.platform.params, relative_data, markers,
                start=relative, phi_s=subset.values, phi_s_cov=subset.covariance,
                total_mass_kg=total_mass, window=session.relative_motion.window,
                calibration_std=_calibration_std(rigfile))
            if refinement.reached_noise():
                relative = refinement.as_relative_result()
                warnings += [f"relative motion (output error): {w}"
                             for w in refinement.warnings]
            else:
                # a refinement that does not fit the data never replaces the estimate
                warnings.append(refinement_rejected(refinement))
    segments, notes = None, []
    if relative is not None:
        segments, note = _segments(session, tree, relative, total_mass)
        notes += [note] if note else []
    elif len(tree.links) > 1:
        notes.append("the full minimal set Phi_B and segment parameters need a "
                     "[relative_motion] capture" if session.relative_motion is None else
                     "relative motion not run")
    return SessionOutcome(session, rigfile, total_mass, markers, inputs, outcomes, subset,
                          warnings, tree, joint_centres, relative, segments=segments,
                          notes=notes, relative_refinement=refinement)


def refinement_rejected(ref: RelativeRefinement) -> str:
    """Why an output-error refinement was not used (the equation-error estimate is)."""
    return (f"relative motion: the output-error refinement left {ref.marker_sigma_mm:.3f} mm "
            f"RMS marker residuals against {ref.noise_mm:.3f} mm marker noise (rigid fits), "
            f"more than {REACHED_NOISE_FACTOR:g}x: its model does not describe this capture "
            "(a limb moved by muscles rather than swinging freely, a joint that is not "
            "spherical, a marker that slides), so the equation-error estimate is reported")


def _segments(session: Session, tree: Tree, relative: RelativeResult, total_mass: float
              ) -> tuple[SegmentsResult | None, str | None]:
    """Per-link parameters from Phi_B and the manifest's priors (or why they were skipped)."""
    try:
        priors = priors_from_specs(tree, session.priors, body_mass_kg=total_mass,
                                   sex=session.subject_sex)
    except ConfigError as exc:
        if session.priors:
            raise ConfigError(exc.message, path=session.path, field=exc.field,
                              found=exc.found) from None
        return None, ("segment parameters not estimated: no link has a prior (give each link "
                      "segment = \"...\" for a human, or [links.prior] CAD values for a robot)")
    return estimate_segments(tree, relative.values, relative.covariance, total_mass,
                             priors), None
