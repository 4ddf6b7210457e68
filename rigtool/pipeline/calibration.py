"""The calibration job: rig file + calibration captures -> calibrated rig file.

Reads every capture named by the rig file, poses the platform (and any reference body that
carries markers) per frame, prepares the filtered motion (rigtool.identify.common.platform_motion),
places each capture's known load in the platform frame, fits (rigtool.identify.calibration.equation_error),
and writes a new rig file with the calibrated values and a ``[calibration]`` table.
"""

from __future__ import annotations

import copy
import datetime as _dt
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from rigtool import __version__
from rigtool.config import FilterSettings, RigFile, sha256_of
from rigtool.background import load_in_background
from rigtool.engine.rigid import RigidModel, load_executables
from rigtool.identify.common.output_error import final_substeps_of
from rigtool.errors import ConfigError, InputError
from rigtool.identify.calibration.equation_error import CalibrationResult, HoldoutCheck, calibrate_motion
from rigtool.calibration_uncertainty import covariance_table
from rigtool.identify.posture.output_error import OutputErrorResult, refine_posture
from rigtool.identify.calibration.output_error import (CalibrationRefinement, OECapture,
                                                       refine_calibration)
from rigtool.identify.posture.equation_error import fit_posture
from rigtool.identify.common.platform_motion import (CaptureMotion, capture_motion, relative_pose,
                                             with_noise_probes)
from rigtool.inertia import InertialParams, transform_params
from rigtool.kinematics.pose import body_trajectory
from rigtool.kinematics.length_scale import scale_note, to_layout_scale
from rigtool.mocap import MarkerData, read_capture
from rigtool.pipeline.lab_frames import (SAME_SHIFT_M, SAME_TURN_RAD, lab_frame_spread,
                                         track_lab_frame)
from rigtool.pipeline.methods import LAB_FRAME_CHOICES, check_method
from rigtool.pipeline.rigid_widths import calibration_widths
from rigtool.identify.calibration.verdict import HoldoutSignature, max_error_z
from rigtool.identify.posture.force_scale import posture_scale
from rigtool.rig import Rig, spring_lengths


@dataclass(frozen=True)
class CalibrationJob:
    """What a calibration produced: the fit, the prepared captures and the inputs read.

    With the output-error method, ``result`` holds the refined numbers (springs, platform,
    their standard errors and the hold-out checks redone with the refined rig) and
    ``equation_error`` the equation-error fit it started from.
    """

    result: CalibrationResult
    captures: list[CaptureMotion]
    inputs: list[dict]
    equation_error: CalibrationResult | None = None
    refinement: CalibrationRefinement | None = None
    lab_frame: dict | None = None        # the lab frame the captures were tracked in

    @property
    def method(self) -> str:
        """``"output-error"`` when the refinement ran, else ``"equation-error"``."""
        return "equation-error" if self.refinement is None else "output-error"


def _load_in_platform(rigfile: RigFile, names: tuple[str, ...], data, platform_traj,
                      path: Path) -> InertialParams:
    """Sum of the named reference bodies' parameters in the platform frame."""
    total = np.zeros(10)
    for name in names:
        body = rigfile.reference_bodies[name]
        if body.markers_body:
            traj = body_trajectory(data, body.markers_body)
            try:
                rot, pos, spread = relative_pose(platform_traj, traj)
            except InputError:
                raise InputError(f"reference body '{name}' is not seen together with the "
                                 "platform (expected its markers "
                                 f"{', '.join(body.markers_body)} in the capture)",
                                 path=path) from None
            if spread > np.deg2rad(2.0):
                raise InputError(f"reference body '{name}' moves relative to the platform by "
                                 f"{np.rad2deg(spread):.1f} deg RMS; expected it bolted down",
                                 path=path)
        else:
            rot, pos = body.mount_rotation, body.mount_position
        total += transform_params(body.params.pi, rot, pos)
    return InertialParams(total)


def prepare_captures(rigfile: RigFile, settings: FilterSettings, *, compensate: bool = True,
                     progress: Callable[[str], None] | None = None
                     ) -> tuple[list[CaptureMotion], list[dict], list[MarkerData]]:
    """Read and prepare every calibration capture of ``rigfile``.

    Returns the prepared captures, the inputs' paths and sha256, and the raw marker data
    (the output-error refinement fits it; read once).
    """
    if not rigfile.captures:
        raise ConfigError("the rig file lists no [[calibration_captures]]; add the empty "
                          "platform and reference-body captures", path=rigfile.path,
                          field="calibration_captures")
    caps, inputs, datas = [], [], []
    for i, c in enumerate(rigfile.captures):
        if progress:
            progress(f"calibration capture {i + 1}/{len(rigfile.captures)}: {c.capture.name}")
        data, length = to_layout_scale(read_capture(c.capture, units=c.units),
                                       rigfile.rig.platform.markers_platform, c.capture)
        inputs.append({"path": os.path.relpath(c.capture, rigfile.path.parent),
                       "sha256": sha256_of(c.capture)})
        if length is not None:       # read at another length scale: brought to the rig's
            inputs[-1]["length_scale"] = float(f"{length['length_scale']:.8g}")
            if progress is not None:
                progress(f"{inputs[-1]['path']}: {scale_note(length)}")
        caps.append(prepare_capture(rigfile, c, data, settings, compensate=compensate, seed=i))
        datas.append(data)
    return caps, inputs, datas


def prepare_capture(rigfile: RigFile, c, data, settings: FilterSettings, *,
                    compensate: bool = True, seed: int = 0) -> CaptureMotion:
    """One calibration capture (already read) -> platform motion with its known load."""
    markers = rigfile.rig.platform.markers_platform
    platform_traj = body_trajectory(data, markers)
    load = _load_in_platform(rigfile, c.load, data, platform_traj, c.capture)
    cap = capture_motion(data, markers, settings, name=c.capture.name, window=c.window,
                         load=load, holdout=c.holdout)
    if compensate:
        cap = with_noise_probes(cap, markers, settings, seed=seed)
    return cap


def _load_calibration_code(model: RigidModel) -> None:
    """What :func:`run_calibration` loads in the background: the refinement's rigid chunks,
    then the primal one with two RK4 steps per frame whose states correct the refinement's
    and the hold-out captures' posture fits at their end (their final_substeps)."""
    load_executables(model, widths=calibration_widths(model.n_springs))
    load_executables(model, widths=(), substeps=final_substeps_of(1, None))


def run_calibration(rigfile: RigFile, *, settings: FilterSettings = FilterSettings(),
                    consistent: bool = True, residual_stiffness: bool = False,
                    compensate: bool = True, method: str = "output-error",
                    lab_frame: str = "auto",
                    progress: Callable[[str], None] | None = None) -> CalibrationJob:
    """Calibrate the rig of ``rigfile`` from its calibration captures.

    ``compensate`` (default) removes the errors-in-variables bias of the equation-error fit
    with noise probes (rigtool.identify.common.platform_motion.with_noise_probes). ``method``
    ``"output-error"`` (default) refines that fit by simulating every capture and fitting the
    raw platform markers (rigtool.identify.calibration.output_error). ``lab_frame`` (one of
    :data:`rigtool.pipeline.methods.LAB_FRAME_CHOICES`): whether that refinement fits the
    measured lab frame against the rig file's too (rigtool.engine.lab_frame); "auto" does
    for captures from ``rigtool track`` (a camera's lab frame comes from a board on the
    floor).
    """
    check_method(method)
    if lab_frame not in LAB_FRAME_CHOICES:
        raise InputError(f"expected one of {', '.join(LAB_FRAME_CHOICES)}", field="--lab-frame",
                         found=lab_frame)
    # the lab frame each capture was tracked in (named by the track that set it)
    tracked = [f for f in (track_lab_frame(c.capture) for c in rigfile.captures)
               if f is not None]
    fit_frame = lab_frame == "fit" or (lab_frame == "auto" and bool(tracked))
    if fit_frame and method != "output-error":
        if lab_frame == "fit":
            raise InputError("the lab frame is fitted by the output-error refinement; use "
                             "--method output-error", field="--lab-frame", found=lab_frame)
        fit_frame = False
    if method == "output-error":
        # the refinement's compiled chunks load on the spare core while the captures are
        # read, filtered and fitted by equation error
        load_in_background(_load_calibration_code, RigidModel.of(rigfile.rig),
                           name="load_rigid_executables")
    caps, inputs, datas = prepare_captures(rigfile, settings, compensate=compensate,
                                           progress=progress)
    if progress:
        progress("fitting springs and platform")
    result = calibrate_motion(rigfile.rig, caps, consistent=consistent,
                              residual_stiffness=residual_stiffness)
    if method == "equation-error":
        return CalibrationJob(result, caps, inputs)
    if progress:
        progress("output-error refinement over the calibration captures")
    # tracked corners: one pose per body and frame places them, so their errors are
    # correlated within a frame and the standard errors are clustered by frame
    refined, refinement = refine_with_holdouts(
        rigfile, caps, datas, result, fit_frame=fit_frame,
        standard_errors="frame" if tracked else "independent")
    turn, shift = lab_frame_spread(tracked) if tracked else (0.0, 0.0)
    if fit_frame and (turn > SAME_TURN_RAD or shift > SAME_SHIFT_M):
        refined = replace(refined, warnings=list(refined.warnings) + [
            f"the captures were tracked in lab frames up to {np.degrees(turn):.5f} deg and "
            f"{1e3 * shift:.4f} mm apart (each video set its own from the floor board); one "
            "lab frame is fitted for all: track them with `rigtool track --lab-frame "
            "FIRST.track.json` so that they share one, and the postures too"])
    return CalibrationJob(refined, caps, inputs, result, refinement,
                          lab_frame=tracked[0] if tracked and fit_frame else None)


def _rig_with(rig: Rig, res: CalibrationResult) -> Rig:
    """``rig`` with the springs and platform parameters of a calibration result."""
    springs = tuple(replace(sp, stiffness=float(res.stiffness[j]),
                            free_length=float(res.free_length[j]),
                            damping=float(max(res.damping[j], 0.0)))
                    for j, sp in enumerate(rig.springs))
    return replace(rig, springs=springs, platform=replace(rig.platform, params=res.platform))


def mean_stretch_mm(rig: Rig, cap: CaptureMotion) -> float:
    """The springs' mean stretch ``L - L0`` over a capture's valid frames and the springs,
    mm (the load they carry)."""
    ok = cap.valid & np.all(np.isfinite(cap.position), axis=1)
    if not ok.any():
        return float("nan")
    lengths = spring_lengths(rig, cap.rotation[ok], cap.position[ok])
    return 1e3 * float(np.mean(lengths - rig.free_length))


def refine_with_holdouts(rigfile: RigFile, caps: list[CaptureMotion], datas: list[MarkerData],
                         ee: CalibrationResult, *, fit_frame: bool = False,
                         standard_errors: str = "independent"
                         ) -> tuple[CalibrationResult, CalibrationRefinement]:
    """Output-error refinement of ``ee`` and the hold-out checks redone with its rig.

    ``caps`` and ``datas`` are the prepared captures and their raw markers, one per entry of
    ``rigfile.captures`` (hold-outs included), as :func:`prepare_captures` returns them.

    The hold-out bodies are identified as unknowns (mass known) exactly as a posture is:
    equation-error fit, then its output-error refinement. ``fit_frame``: fit the measured
    lab frame too (:func:`refine_calibration`); the rig returned is then in that frame.
    ``standard_errors``: the refinement's covariance ("independent" or "frame").
    """
    oe_caps = [OECapture(cap.name, data, cap.load, c.window)
               for c, cap, data in zip(rigfile.captures, caps, datas) if not c.holdout]
    start = _rig_with(rigfile.rig, ee)
    ref = refine_calibration(start, ee.platform, oe_caps, fit_frame=fit_frame,
                             standard_errors=standard_errors)
    rig = replace(ref.rig, platform=replace(ref.rig.platform, params=ref.platform))
    cal_std = ref.as_calibration_std()
    checks = []
    fitted_stretch = [mean_stretch_mm(rig, cap) for c, cap in zip(rigfile.captures, caps)
                      if not c.holdout] or [np.nan]
    for c, cap, data in zip(rigfile.captures, caps, datas):
        if c.holdout:
            checks.append(identify_holdout(rig, ref.platform, cap, data, c.window, cal_std,
                                           (min(fitted_stretch), max(fitted_stretch)))[0])
    refined = replace(
        ee, stiffness=ref.rig.stiffness, stiffness_std=ref.stiffness_std,
        free_length=ref.rig.free_length, free_length_std=ref.free_length_std,
        damping=ref.rig.damping, damping_std=ref.damping_std, platform=ref.platform,
        platform_mass_std=ref.platform_mass_std, platform_com_std=ref.platform_com_std,
        platform_inertia_std=ref.platform_inertia_std, holdout=checks,
        warnings=list(ee.warnings) + list(ref.warnings))
    return refined, ref


def identify_holdout(rig, platform: InertialParams, cap: CaptureMotion, data: MarkerData,
                     window: tuple[float, float] | None, cal_std: dict | None,
                     fitted_stretch_mm: tuple[float, float]
                     ) -> tuple[HoldoutCheck, OutputErrorResult]:
    """A reference body's capture identified as a posture is (its mass known: the
    equation-error fit, then its output-error refinement) with the calibrated ``rig`` and
    ``platform``, against its known values: the :class:`HoldoutCheck` with its
    :class:`HoldoutSignature` (``fitted_stretch_mm``: the calibration captures' smallest and
    largest mean stretch, NaN when unknown), and the refinement."""
    known = cap.load
    post = fit_posture(rig, platform, cap, base_rotation_platform=np.eye(3),
                       base_position_platform=np.zeros(3), total_mass_kg=known.mass,
                       weighting="dual-metric" if not rig.locked_dofs else "noise")
    oe = refine_posture(rig, platform, data,
                        base_rotation_platform=np.eye(3), base_position_platform=np.zeros(3),
                        total_mass_kg=known.mass, start=post, window=window,
                        name=cap.name, calibration_std=cal_std)
    i_max = float(np.linalg.eigvalsh(known.inertia_com)[-1])
    vm = oe.mass_from_vibration
    scale = (posture_scale(vm.value_kg, vm.std_noise_kg, vm.std_calibration_kg,
                           known.mass, platform.mass) if vm is not None else None)
    signature = HoldoutSignature(
        cap.name, max_error_z(oe.com, known.com, oe.inertia_com, known.inertia_com,
                              oe.com_std, oe.inertia_com_std),
        force_scale=np.nan if scale is None else scale["delta"],
        force_scale_std=(np.nan if scale is None
                         else float(np.hypot(scale["std_noise"], scale["std_calibration"]))),
        stretch_mm=mean_stretch_mm(rig, cap), fitted_stretch_mm=fitted_stretch_mm)
    check = HoldoutCheck(
        capture=cap.name, mass_error_kg=0.0,
        com_error_m=float(np.linalg.norm(oe.com - known.com)),
        inertia_error_rel=float(np.abs(oe.inertia_com - known.inertia_com).max() / i_max),
        identified=oe.params, known=known, com_std_m=oe.com_std,
        inertia_std_rel=float(oe.inertia_com_std.max() / i_max),
        inertia_com_std=oe.inertia_com_std, signature=signature)
    return check, oe


def _matrix(a: np.ndarray, digits: int = 9) -> list:
    return [[float(f"{v:.{digits}g}") for v in row] for row in np.asarray(a)]


def _vector(a: np.ndarray, digits: int = 9) -> list:
    return [float(f"{v:.{digits}g}") for v in np.asarray(a)]


def calibrated_rig_document(rigfile: RigFile, job: CalibrationJob, out_path: Path,
                            settings: FilterSettings) -> dict:
    """The rig file's table with calibrated values and a ``[calibration]`` table.

    Capture paths are rewritten relative to ``out_path`` so the new file works where it is.
    """
    res = job.result
    doc = copy.deepcopy(rigfile.raw)
    plat = doc.setdefault("platform", {})
    plat["mass"] = float(f"{res.platform.mass:.9g}")
    plat["com"] = _vector(res.platform.com)
    plat["inertia_com"] = _matrix(res.platform.inertia_com)
    for i, s in enumerate(doc["springs"]):
        s["stiffness"] = float(f"{res.stiffness[i]:.9g}")
        s["free_length"] = float(f"{res.free_length[i]:.9g}")
        s["damping"] = float(f"{max(res.damping[i], 0.0):.6g}")
    frame = job.refinement.frame if job.refinement is not None else None
    if frame is not None:
        # the rig moved into the measured lab frame (rigtool.engine.lab_frame)
        for s, sp in zip(doc["springs"], job.refinement.rig.springs):
            s["anchor"] = _vector(sp.anchor_lab)
        doc.setdefault("rig", {})["gravity"] = _vector(job.refinement.rig.gravity_lab)
    for c, cap in zip(doc.get("calibration_captures", []), rigfile.captures):
        c["capture"] = os.path.relpath(cap.capture, out_path.parent).replace(os.sep, "/")
    spring_names = [s.name for s in rigfile.rig.springs]
    cal = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "rigtool_version": __version__,
        "source": os.path.relpath(rigfile.path, out_path.parent).replace(os.sep, "/"),
        "source_sha256": sha256_of(rigfile.path),
        "inputs": job.inputs,
        "filter": {"method": settings.method, "order": settings.order,
                   "passband_hz": settings.passband_hz, "stopband_hz": settings.stopband_hz},
        "method": job.method,
        "noise_model": ("white Gaussian marker noise (sigma estimated per capture from the "
                        "rigid-fit residuals); equation-error residuals zero-mean, independent "
                        "between captures, correlated within one over the filter length "
                        "(Newey-West HAC sandwich); rows weighted by 1/RMS residual per wrench "
                        "component; errors-in-variables bias removed by noise probes "
                        "(bias-compensated least squares)"
                        + ("; then output error: every capture simulated from its own "
                           "initial state, raw platform markers fitted (maximum likelihood for "
                           "white marker noise), "
                           + ("standard errors clustered by frame (tracked corners: one pose "
                              "per body and frame places them)"
                              if job.refinement is not None
                              and job.refinement.standard_errors == "frame"
                              else "Gauss-Newton standard errors")
                           + ("; the measured lab frame fitted against the rig file's"
                              if job.refinement is not None and job.refinement.frame is not None
                              else "")
                           if job.method == "output-error" else "")),
        "marker_sigma_m": [float(f"{c.marker_sigma_m:.4g}") for c in job.captures],
        "n_frames": res.n_frames,
        "rank": res.rank,
        "condition_number": float(f"{res.condition_number:.6g}"),
        "residual_rms": {k: float(f"{v:.6g}") for k, v in res.residual_rms.items()},
        "std": {
            "platform": {"mass": float(f"{res.platform_mass_std:.4g}"),
                         "com": _vector(res.platform_com_std, 4),
                         "inertia_com": _matrix(res.platform_inertia_std, 4)},
            "springs": {n: {"stiffness": float(f"{res.stiffness_std[i]:.4g}"),
                            "free_length": float(f"{res.free_length_std[i]:.4g}"),
                            "damping": float(f"{res.damping_std[i]:.4g}")}
                        for i, n in enumerate(spring_names)},
        },
        "warnings": list(res.warnings),
    }
    if job.refinement is not None:
        oe = job.refinement
        cal["output_error"] = {
            "marker_residual_rms_mm": {k: float(f"{v:.4g}")
                                       for k, v in oe.residual_rms_mm.items()},
            "marker_sigma_mm": float(f"{oe.marker_sigma_mm:.4g}"),
            "iterations": oe.iterations, "time_s": float(f"{oe.elapsed_s:.3g}"),
            "standard_errors": oe.standard_errors}
        cal["covariance"] = covariance_table(spring_names, oe.physical_covariance())
        if oe.frame is not None:
            sd = np.sqrt(np.clip(np.diag(oe.frame_covariance), 0, None))
            cal["lab_frame"] = {
                "fitted": True,
                "meaning": "the measured lab frame against the source rig file's: x_measured "
                           "= R x_rig + t; the anchors and gravity above are in the measured "
                           "frame",
                "rotation_vector_deg": _vector(np.degrees(frame[:3]), 6),
                "rotation_std_deg": _vector(np.degrees(sd[:3]), 3),
                "translation_mm": _vector(1e3 * frame[3:], 6),
                "translation_std_mm": _vector(1e3 * sd[3:], 3)}
            if job.lab_frame is not None and job.lab_frame.get("frame") == "body":
                cal["lab_frame"]["camera_lab_frame"] = {
                    k: job.lab_frame[k] for k in ("rotation_cam_lab", "translation_cam_lab_m",
                                                  "from", "body") if k in job.lab_frame}
    if res.residual_stiffness is not None:
        cal["residual_stiffness"] = _matrix(res.residual_stiffness, 6)
        cal["residual_stiffness_std"] = _matrix(res.residual_stiffness_std, 4)
        cal["residual_stiffness_reference"] = {
            "rotation": _matrix(res.stiffness_reference[0]),
            "position": _vector(res.stiffness_reference[1])}
    if res.holdout:
        cal["holdout"] = [_holdout_entry(h) for h in res.holdout]
    doc["calibration"] = cal
    return doc


def _holdout_entry(h) -> dict:
    """One ``[[calibration.holdout]]`` table: the errors, their standard errors and the
    largest error in standard errors over the COM and the six inertia entries
    (``max_error_z``; what the report judges)."""
    out = {"capture": h.capture, "mass_error_kg": float(f"{h.mass_error_kg:.4g}"),
           "com_error_m": float(f"{h.com_error_m:.4g}"),
           "inertia_error_rel": float(f"{h.inertia_error_rel:.4g}")}
    if h.com_std_m is None or h.inertia_com_std is None:
        return out
    iu = np.triu_indices(3)
    err = np.concatenate([h.identified.com - h.known.com,
                          (h.identified.inertia_com - h.known.inertia_com)[iu]])
    std = np.concatenate([np.asarray(h.com_std_m, float),
                          np.asarray(h.inertia_com_std, float)[iu]])
    z = np.abs(err) / np.where(std > 0, std, np.nan)
    out["com_std_m"] = _vector(h.com_std_m, 4)
    if np.isfinite(h.inertia_std_rel):
        out["inertia_std_rel"] = float(f"{h.inertia_std_rel:.4g}")
    if np.any(np.isfinite(z)):
        out["max_error_z"] = float(f"{np.nanmax(z):.4g}")
    sig = getattr(h, "signature", None)
    if sig is not None:
        if np.isfinite(sig.force_scale):
            out["force_scale"] = float(f"{sig.force_scale:.4g}")
            out["force_scale_std"] = float(f"{sig.force_scale_std:.4g}")
        if np.isfinite(sig.stretch_mm):
            out["stretch_mm"] = float(f"{sig.stretch_mm:.4g}")
        if sig.failed:
            out["likely_cause"] = sig.likely_cause()
    return out


def default_output(rig_path: Path) -> Path:
    """``NAME.calibrated.toml`` next to ``NAME.toml``."""
    stem = rig_path.name[:-5] if rig_path.name.endswith(".toml") else rig_path.name
    return rig_path.with_name(f"{stem}.calibrated.toml")
