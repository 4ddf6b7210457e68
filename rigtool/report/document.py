"""report.json: everything the session produced, as plain JSON (docs/reference/report-json.md
and docs/spec-additions.md list its keys).

Order of the top-level keys: what the report answers first (``summary``, ``checks``,
``warnings``), then the detail (postures, subset, relative motion, segments), then the truth
comparison when a truth.json sits next to the manifest. SI units throughout.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

import numpy as np

from rigtool import __version__
from rigtool.config import sha256_of
from rigtool.errors import RigtoolError
from rigtool.inertia import principal_moments_std
from rigtool.report.checks import session_checks
from rigtool.report.summary import summary_block
from rigtool.report.truth import find_truth, truth_block

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.session import PostureOutcome, SessionOutcome


def r(x, digits: int = 7):
    """Round floats (nested lists, dicts) for the JSON; NaN/inf become None."""
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if isinstance(x, dict):
        return {k: r(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [r(v, digits) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if not np.isfinite(x) else float(f"{x:.{digits}g}")
    if isinstance(x, np.integer):
        return int(x)
    return x



def _standard_errors(oe, r) -> dict:
    """How a posture's output-error standard errors were formed: ``independent`` (marker
    rows independent, ``s^2 H^-1``) or ``frame`` (clustered by frames, a sandwich: a
    camera's corners share one pose per frame), with the sandwich's clusters and its own
    relative precision; or ``serial`` (robust to the residual's correlation over frames:
    its window and how much it exceeds the independent frames' variances). With a measured
    breath, what its measurement noise adds (``breath_input``)."""
    kind = _standard_errors_kind(oe, r)
    breath = getattr(oe, "breath_input", None)
    if breath:
        kind["breath_input"] = {"probes": int(breath["probes"]),
                                "com_std": r(breath["com_std"], 3),
                                "inertia_com_std": r(breath["inertia_com_std"], 3)}
    return kind


def _standard_errors_kind(oe, r) -> dict:
    """:func:`_standard_errors` without the breath's share."""
    if oe.standard_errors == "serial":
        return {"kind": "serial", "window_frames": int(oe.se_cluster_frames),
                "inflation": r(oe.se_serial_inflation, 3),
                "relative_precision": r(oe.se_rel_precision, 3)}
    if oe.standard_errors != "frame":
        inflation = getattr(oe, "se_serial_inflation", float("nan"))
        return {"kind": "independent",
                **({"serial_inflation": r(inflation, 3)} if np.isfinite(inflation) else {})}
    return {"kind": "frame", "clusters": int(oe.se_clusters),
            "cluster_frames": int(oe.se_cluster_frames),
            "relative_precision": r(oe.se_rel_precision, 3)}

def _principal_std(res) -> dict:
    """``{"principal_moments_std": [3]}`` of a posture's inertia about its COM, first order in
    its full covariance (``props_cov``), or ``{}`` when that covariance is not finite."""
    cov = np.asarray(getattr(res, "props_cov", np.full((12, 12), np.nan)), float)
    if cov.shape != (12, 12) or not np.all(np.isfinite(cov[3:, 3:])):
        return {}
    return {"principal_moments_std": r(principal_moments_std(res.inertia_com, cov[3:, 3:]), 3)}


def _posture_entry(p: PostureOutcome) -> dict:
    res = p.result
    entry = {
        "name": res.name, "mass": r(res.mass), "com": r(res.com), "com_std": r(res.com_std, 3),
        "inertia_com": r(res.inertia_com), "inertia_com_std": r(res.inertia_com_std, 3),
        **_principal_std(res),
        "rotations": {k: r(v) for k, v in p.rotations.items()},
        "residual_rms": {k: r(v, 4) for k, v in res.residual_rms.items()},
        "spring_model": res.spring_model, "weighting": res.weighting,
        "bias_compensated": res.compensated,
        "base_pose_on_platform": {"rotation": r(p.base_rotation_platform),
                                  "position": r(p.base_position_platform)},
        "base_wobble_deg": r(p.base_wobble_deg, 3),
        "joint_wobble_deg": {k: r(v, 3) for k, v in p.rotation_spread_deg.items()},
        "marker_fit_rms_m": {k: r(v, 3) for k, v in p.marker_rms_m.items()},
        "marker_noise_mm": r(p.marker_noise_mm, 4),
        "marker_scatter_mm": r(p.marker_scatter_mm, 3),
        "method": p.method,
        "warnings": list(p.warnings),
    }
    wander = getattr(p, "base_pose_wander_cov", None)
    if wander is not None:
        sd = np.sqrt(np.clip(np.diag(wander), 0.0, None))
        entry["base_pose_wander"] = {"position_std_mm": r(1e3 * sd[:3], 4),
                                     "rotation_std_deg": r(np.rad2deg(sd[3:]), 4)}
    if getattr(p, "breathing", None):
        entry["breathing"] = r(p.breathing, 4)
    if getattr(p, "support", None):
        entry["support"] = r(p.support, 4)
    if getattr(p, "soft_tissue", None):
        entry["soft_tissue"] = r(p.soft_tissue, 5)
    if getattr(p, "unseen_tissue", None):
        entry["unseen_tissue"] = r(p.unseen_tissue, 5)
    if (getattr(p, "tissue_evidence", None) or {}).get("overruled"):
        entry["tissue_evidence"] = r(p.tissue_evidence, 5)
    if getattr(p, "se_scale", 1.0) > 1.0:
        entry["se_scale"] = r(p.se_scale, 4)
    if p.refinement is not None:
        oe, ee = p.refinement, p.equation_error
        entry["output_error"] = {
            "marker_residual_rms_mm": r(oe.residual_rms_mm, 4),
            "marker_sigma_mm": r(oe.marker_sigma_mm, 4), "iterations": oe.iterations,
            "time_s": r(oe.elapsed_s, 3), "horizons_s": r(list(oe.horizons_s), 4),
            "nuisance": r(oe.nuisance), "base_pose_fitted": oe.base_pose_fitted,
            "object_markers": {n: r(v, 4) for n, v in zip(oe.attached_markers,
                                                          oe.attached_scatter_mm)},
            "left_out_markers": {n: r(v, 4) for n, v in oe.left_out_markers},
            "noise_model": ({"kind": "isotropic"} if oe.noise_model == "isotropic" else
                            {"kind": "covariance", "file": oe.noise_source,
                             "noise_scale": r(oe.noise_scale, 4)}),
            "standard_errors": _standard_errors(oe, r)}
        if oe.boundary is not None:
            b = oe.boundary
            entry["output_error"]["consistency_boundary"] = {
                "axis_base": r(b.axis, 4), "second_moment_kgm2": r(b.second_moment_kgm2),
                "std_kgm2": r(b.std_kgm2, 3), "upper_kgm2": r(b.upper_kgm2, 3)}
        entry["equation_error"] = {"com": r(ee.com), "com_std": r(ee.com_std, 3),
                                   "inertia_com": r(ee.inertia_com),
                                   "inertia_com_std": r(ee.inertia_com_std, 3),
                                   "weighting": ee.weighting}
        if ee.mass_from_vibration is not None:
            entry["equation_error"]["mass_from_vibration"] = {
                "value": r(ee.mass_from_vibration[0]), "std": r(ee.mass_from_vibration[1], 3)}
    if p.refinement is not None and p.refinement.mass_from_vibration is not None:
        vm = p.refinement.mass_from_vibration
        entry["mass_from_vibration"] = {"value": r(vm.value_kg), "std": r(vm.std_kg, 3),
                                        "std_marker_noise": r(vm.std_noise_kg, 3),
                                        "std_calibration": r(vm.std_calibration_kg, 3),
                                        "method": "output-error"}
    elif res.mass_from_vibration is not None:
        entry["mass_from_vibration"] = {"value": r(res.mass_from_vibration[0]),
                                        "std": r(res.mass_from_vibration[1], 3),
                                        "method": "equation-error"}
    return entry


def _relative_block(out: SessionOutcome) -> dict:
    rel = out.relative.to_json()
    rel.pop("minimal_parameters")
    ref = out.relative_refinement
    choice = getattr(out, "relative_model", None)
    if choice is not None:
        rel["model"] = choice.to_json()
    if ref is None and choice is not None and choice.tried:
        last = choice.tried[-1]
        rel["output_error"] = {"used": False, "reason": choice.reason,
                               "residual_mm": last["residual_mm"], "noise_mm": last["noise_mm"],
                               "floor_mm": last.get("floor_mm", last["noise_mm"]),
                               **({"start_agreement": last["start_agreement"]}
                                  if "start_agreement" in last else {})}
    elif ref is None and choice is not None:
        # none tried: the postures' scatter said a disturbance is in the captures
        rel["output_error"] = {"used": False, "reason": choice.reason}
    elif ref is not None:
        # the output-error numbers replace the equation-error ones; both are kept
        rel["equation_error"] = {"resolved": dict(ref.start.resolved),
                                 "std": dict(ref.start.std),
                                 "phi_b": {"values": ref.start.values.tolist(),
                                           "std": ref.start.std_phi_b.tolist()}}
        oe = ref.to_json()
        rel["output_error"] = {"used": True, **{k: oe[k] for k in (
            "method", "free", "joint_damping", "joint_damping_std", "residual_rms_mm",
            "marker_sigma_mm", "noise_mm", "floor_mm", "iterations", "elapsed_s",
            "horizons_s", "standard_errors", "start_agreement")}}
        rel["output_error"]["phi_b_std_marker_noise_only"] = oe["phi_b"]["std_noise"]
    breath = getattr(out, "relative_breath", None)
    if breath:
        # measured, not modelled: the equation-error and output-error fits of the movement
        # take the body as breathing nothing, at the capture's mean breath (its level)
        rel["breath"] = {"modelled": False, **breath}
    return r(rel)


def _calibration_block(rigfile) -> dict:
    """The calibrated rig as this report used it, with the standard errors the rig file
    records (the truth comparison reads it)."""
    raw = getattr(rigfile, "raw", {}) or {}
    cal = raw.get("calibration", {}) or {}
    std = cal.get("std", {}) or {}
    rig = rigfile.rig
    out = {"method": cal.get("method"), "date": cal.get("date"),
           "rigtool_version": cal.get("rigtool_version"),
           "springs": {s.name: {"stiffness": r(s.stiffness), "free_length": r(s.free_length),
                                "damping": r(s.damping),
                                "std": (std.get("springs", {}) or {}).get(s.name, {})}
                       for s in rig.springs},
           "holdout": cal.get("holdout", [])}
    if rig.platform.params is not None:
        pp = rig.platform.params
        out["platform"] = {"mass": r(pp.mass), "com": r(pp.com),
                           "inertia_com": r(pp.inertia_com), "std": std.get("platform", {})}
    return out


def tree_links(out: SessionOutcome) -> list[dict]:
    """The links as the fits used them (joint centres filled in)."""
    tree = out.tree if out.tree is not None else out.session.tree
    return [{"name": l.name, "parent": l.parent,
             "joint_center": None if l.joint_center_parent is None else r(
                 l.joint_center_parent, 17), **({} if l.parent == "platform" else
                                            {"joint": "spherical"})} for l in tree.links]


def report_dict(out: SessionOutcome, *, now: _dt.datetime | None = None) -> dict:
    """The report.json content of a :class:`~rigtool.pipeline.session.SessionOutcome`.

    ``now``: the time the calibration's age is measured to (default: now, UTC).
    """
    checks, check_notes = session_checks(out, now=now)
    doc = {
        "rigtool_version": __version__,
        "session": out.session.name,
        "total_mass": r(out.total_mass_kg),
        "total_mass_std": r(getattr(out, "total_mass_std_kg", np.nan), 4),
        "total_mass_std_source": getattr(out, "total_mass_std_source", ""),
        "inputs": list(out.inputs),
        "rig": {"path": str(out.rigfile.path), "name": out.rigfile.rig.name,
                "gravity": r(out.rigfile.rig.gravity_lab, 17),
                "calibration": _calibration_block(out.rigfile)},
        "filter": {"method": out.session.filter.method, "order": out.session.filter.order,
                   "passband_hz": out.session.filter.passband_hz,
                   "stopband_hz": out.session.filter.stopband_hz},
        "summary": {},
        "checks": [r(c.to_json(), 5) for c in checks],
        "warnings": [c.message() for c in checks if c.is_warning],
        "postures": [_posture_entry(p) for p in out.postures],
    }
    if out.joint_centres:
        doc["joint_centres"] = {
            name: {"joint_center": r(e.centre_parent_m), "std": r(e.std_parent_m, 3),
                   "frame": "parent link", "method": "SCoRE (relative-motion capture)",
                   "link_origin_moved_by": r(e.centre_child_m),
                   "residual_rms_m": r(e.residual_rms_m, 3), "frames": e.frames,
                   "rotation_range_deg": r(e.rotation_range_deg, 3)}
            for name, e in out.joint_centres.items()}
    if out.subset is not None:
        doc["subset"] = out.subset.to_json()
    not_run = []
    if out.relative is not None:
        doc["relative_motion"] = _relative_block(out)
        doc["minimal_parameters"] = r(out.relative.to_json()["minimal_parameters"])
    else:
        not_run += ["relative_motion", "minimal_parameters"]
    if out.segments is not None:
        doc["segments"] = r(out.segments.to_json())
        for name, ls in out.segments.links.items():
            # the estimate itself at full precision (17 digits round-trip a double): the
            # model files (rigtool.report.exports) are built from these very numbers
            doc["segments"]["links"][name].update(
                mass=r(ls.mass_kg, 17), com=r(ls.com_m, 17), inertia_com=r(ls.inertia_com, 17))
    else:
        not_run.append("segments")
    if getattr(out, "robot", None) is not None:
        doc["robot"] = r(out.robot.to_json())
    if getattr(out, "rig_checks", None):
        doc["rig_checks"] = r([c.to_json() for c in out.rig_checks])
    if getattr(out, "force_scale", None) is not None:
        # the springs' force scale on the day the weighed mass measured, and whether the
        # postures were fitted again with it (rigtool.identify.posture.force_scale)
        doc["force_scale"] = r(out.force_scale)
    doc["stages_not_run"] = not_run
    # "partial": everything measured is written, but the captures could not identify all
    # (the exit status says so too: rigtool.errors.EXIT_PARTIAL)
    doc["status"] = "partial" if out.not_identified else "complete"
    doc["not_identified"] = list(out.not_identified)
    doc["notes"] = list(out.notes) + check_notes
    truth = find_truth(out.session.path)
    if truth is not None:
        try:
            doc["truth_comparison"] = r(truth_block(doc, truth, sha256_of(truth)), 6)
            doc["inputs"].append({"path": truth.name, "sha256": sha256_of(truth)})
        except RigtoolError as exc:
            doc["notes"].append(f"{truth.name} next to the manifest was not compared: "
                                f"{exc}")
    doc["summary"] = summary_block(doc, tree_links(out), doc["rig"]["calibration"])
    return doc


__all__ = ["report_dict", "r", "tree_links"]
