"""Checks of the captures themselves: does the model follow the markers to their noise, do the
markers stay on their bodies, was each posture held still, does the vibration weigh what the
scale weighed.

Every check judges the estimate the report gives (the output-error fit when it ran, else the
equation-error one), against a tolerance built from every uncertainty that enters it, and
says it once for all the captures it concerns (rigtool.report.check_types).

Units: marker figures in mm (per coordinate), angles in degrees, masses in kg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rigtool.identify.relative.oe_result import floor_words
from rigtool.identify.relative.output_error import REACHED_NOISE_FACTOR
from rigtool.kinematics.marker_scatter import moving_markers
from rigtool.report.check_types import Check, listing

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.session import SessionOutcome

#: a posture whose joint or base link moves more than this (RMS, deg) was not held
LOCK_LIMIT_DEG = 0.5
#: coverage factor of the mass check's tolerance (standard uncertainties combined)
MASS_COVERAGE = 3.0


def drift(per_frame_mm: np.ndarray) -> tuple[float, float]:
    """RMS marker residual (mm) over the first and the last tenth of a fitted window."""
    per = np.asarray(per_frame_mm, float)
    tenth = max(1, per.size // 10)
    with np.errstate(invalid="ignore"):
        early = float(np.sqrt(np.nanmean(per[:tenth] ** 2))) if per.size else np.nan
        late = float(np.sqrt(np.nanmean(per[-tenth:] ** 2))) if per.size else np.nan
    return early, late


def _drifts(early: float, late: float, sigma_mm: float) -> bool:
    """The fitted simulation drifts from the data (as the fits themselves judge it)."""
    if not (np.isfinite(early) and np.isfinite(late)):
        return False
    hi, lo = max(early, late), min(early, late)
    return hi ** 2 > 2.0 * lo ** 2 and hi ** 2 > 1.5 * sigma_mm ** 2


def _calibration_items(rig_raw: dict) -> list[dict]:
    """The calibration captures' output-error residual against their marker noise."""
    cal = rig_raw.get("calibration", {}) or {}
    oe = cal.get("output_error", {}) or {}
    resid = oe.get("marker_residual_rms_mm", {}) or {}
    sigmas = cal.get("marker_sigma_m", []) or []
    names = [str(c.get("capture", "")).replace("\\", "/").rsplit("/", 1)[-1]
             for c in rig_raw.get("calibration_captures", [])]
    noise = {n: 1e3 * float(s) for n, s in zip(names, sigmas)}
    items = []
    for name, value in resid.items():
        nz = noise.get(name, 1e3 * float(np.median(sigmas)) if sigmas else np.nan)
        items.append({"capture": name, "stage": "calibration", "residual_mm": float(value),
                      "noise_mm": nz, "ratio": float(value) / nz if nz else np.nan})
    return items


def marker_residual_check(out: SessionOutcome) -> Check:
    """Output-error marker residual against the marker noise, every capture."""
    items = _calibration_items(getattr(out.rigfile, "raw", {}) or {})
    for p in out.postures:
        oe = p.refinement
        if oe is None:
            items.append({"capture": p.result.name, "stage": "posture", "residual_mm": None,
                          "noise_mm": p.marker_noise_mm, "ratio": None,
                          "method": "equation-error"})
            continue
        early, late = drift(oe.residual_rms_frame_mm)
        items.append({"capture": p.result.name, "stage": "posture",
                      "residual_mm": oe.marker_sigma_mm, "noise_mm": p.marker_noise_mm,
                      "ratio": oe.marker_sigma_mm / p.marker_noise_mm,
                      "early_mm": early, "late_mm": late,
                      "drifts": _drifts(early, late, oe.marker_sigma_mm)})
    ref = getattr(out, "relative_refinement", None)
    choice = getattr(out, "relative_model", None)
    if ref is None and choice is not None and choice.tried:
        # no model reached the noise: the last one tried stands for them (the reason says all)
        t = choice.tried[-1]
        floor = t.get("floor_mm", t["noise_mm"])
        items.append({"capture": f"relative motion ({t['model']} model)",
                      "stage": "relative motion", "residual_mm": t["residual_mm"],
                      "noise_mm": t["noise_mm"], "floor_mm": floor,
                      "ratio": t["residual_mm"] / floor, "used": False,
                      "early_mm": float("nan"), "late_mm": float("nan"),
                      "drifts": False,
                      "start_agreement": (t.get("start_agreement") if t["reached_noise"]
                                          else None)})
    if ref is not None:
        early, late = drift(ref.residual_rms_frame_mm)
        items.append({"capture": "relative motion" + (
                          f" ({choice.used} model)" if choice is not None else ""),
                      "stage": "relative motion",
                      "residual_mm": ref.marker_sigma_mm, "noise_mm": ref.noise_mm,
                      "floor_mm": ref.floor_mm, "ratio": ref.marker_sigma_mm / ref.floor_mm,
                      "used": ref.reached_noise(),
                      "early_mm": early, "late_mm": late,
                      "drifts": _drifts(early, late, ref.marker_sigma_mm)})
    judged = [i for i in items if i.get("ratio") is not None and np.isfinite(i["ratio"])]
    title = "Marker residual against marker noise"
    if not judged:
        return Check("marker_residual", title, "not checked",
                     "no output-error fit ran (equation-error method): there is no simulated "
                     "marker to compare with the measured ones", items=items)
    high = [i for i in judged
            if i["ratio"] > REACHED_NOISE_FACTOR and i["stage"] != "relative motion"]
    drifting = [i for i in judged if i.get("drifts") and i["stage"] != "relative motion"]
    rel = [i for i in judged if i["stage"] == "relative motion"]
    lo, hi = min(i["ratio"] for i in judged), max(i["ratio"] for i in judged)
    noise = [i["noise_mm"] for i in judged if np.isfinite(i["noise_mm"])]
    stages = [i["stage"] for i in judged]
    label = {"posture": "postures"}
    which = ", ".join(f"{label.get(st, st)} {stages.count(st)}" for st in dict.fromkeys(stages))
    finding = (f"residual/noise {lo:.2f} to {hi:.2f} over {len(judged)} captures ({which}; "
               f"marker noise {min(noise):.3f} to {max(noise):.3f} mm)" if noise else "")
    unjudged = [i["capture"] for i in items if i.get("method") == "equation-error"]
    if unjudged:
        finding += (f"; {listing(unjudged)} fitted by equation error, not judged (no simulated "
                    "markers)")
    findings, meanings, actions, level = [], [], [], "ok"
    bad = high + [i for i in drifting if i not in high]
    if bad:
        level = "problem"
        parts = [f"{i['capture']} {i['residual_mm']:.3f} mm against {i['noise_mm']:.3f} mm "
                 f"noise ({i['ratio']:.1f}x"
                 + (f"; {i['early_mm']:.3f} mm early, {i['late_mm']:.3f} mm late" if i.get(
                     "drifts") else "") + ")" for i in bad]
        findings.append("the simulated rig does not follow " + listing(parts))
        meanings.append(
            "The model (the calibrated rig, the weighed mass, an object locked on the platform) "
            "does not describe " + ("these captures" if len(bad) > 1 else "this capture")
            + ": its numbers carry a model error that their standard errors do not hold"
            + (" (the calibration itself is affected: every number of this report)."
               if any(i["stage"] == "calibration" for i in bad) else "."))
        actions.append(
            "Look at the output-error fit figure for where the residual grows; check that the "
            "rig was not changed or moved since its calibration (recalibrate if it was), the "
            "mass check below, and that nothing moved on the platform during the capture.")
    if rel and not rel[0]["used"] and rel[0].get("start_agreement"):
        r, agreement = rel[0], rel[0]["start_agreement"]
        level = "problem" if level == "problem" else "caution"
        findings.append("the relative-motion refinement reached its noise "
                        f"({r['residual_mm']:.3f} mm against "
                        f"{floor_words(r['floor_mm'], r['noise_mm'])}) but its "
                        "Phi_B disagrees with the equation-error estimate (chi-square "
                        f"{agreement['chi2']:.0f} on {agreement['dof']}) and is not used")
        meanings.append(
            "Its residual holds a disturbance that its model takes for marker noise: a force "
            "on the platform that neither the passive nor the active model has (a heartbeat's "
            "recoil, 1-2 N at the heart rate; a tremor), which moves the refinement by more "
            "than its standard errors say. The relative-motion numbers are the equation-error "
            "ones, whose standard errors hold the residual's correlation over frames.")
        if not bad:
            actions.append("Nothing to redo for this report.")
    elif rel and not rel[0]["used"]:
        r = rel[0]
        level = "problem" if level == "problem" else "caution"
        findings.append(f"the relative-motion refinement left {r['residual_mm']:.3f} mm against "
                        f"{floor_words(r['floor_mm'], r['noise_mm'])} ({r['ratio']:.1f}x, over "
                        f"{REACHED_NOISE_FACTOR:g}x) and is not used")
        tried = [t["model"] for t in choice.tried] if choice is not None else ["passive"]
        active_tried = "active" in tried
        breath = (getattr(out, "relative_breath", None) or {}).get("measurement")
        if breath:
            meanings.append(
                "The body breathed during the movement (its breathing markers measure "
                f"{max(breath['component_rms_mm']):.1f} mm RMS along the breath) and the "
                "refinements do not model a breath (the posture fits do): its moving first "
                "moment alone leaves such a residual; the relative-motion numbers are the "
                "equation-error ones, with their standard errors.")
        elif active_tried:
            meanings.append(
                "Neither the passive model (free swings about spherical joints) nor the active "
                "one (each moving link's measured motion prescribed) describes that capture to "
                "its noise: a joint that is not spherical, a marker sliding on its link, a "
                "link whose markers fix its rotation poorly (nearly in a line), or the problems "
                "above; the relative-motion numbers are the equation-error ones, with their "
                "standard errors.")
        else:
            meanings.append(
                "The swing's model (a passive swing about spherical joints, on this rig and "
                "mass) does not describe that capture (a limb moved by muscles, a joint that "
                "is not spherical, a sliding marker, or the problems above); the "
                "relative-motion numbers are the equation-error ones, with their standard "
                "errors.")
        if not bad and breath:
            actions.append("Nothing to redo for this report; for the refinement, record the "
                           "movement holding the breath at the end of a quiet exhale (the "
                           "breathing markers measure where it is held, and the movement's "
                           "fits are carried to the postures' breath by it).")
        elif not bad:
            actions.append("Nothing to redo for this report; for the refinement, "
                           + ("check each moving link's markers (at least three, not in a "
                              "line, fixed to the segment)." if active_tried
                              else "record a passive swing."))
    soft = [i for i in rel if np.isfinite(i["floor_mm"]) and np.isfinite(i["noise_mm"])
            and i["floor_mm"] > REACHED_NOISE_FACTOR * i["noise_mm"]]
    if soft:
        r = soft[0]
        level = "problem" if level == "problem" else "caution"
        findings.append(f"the relative-motion capture's marker sets scatter "
                        f"{r['floor_mm']:.3f} mm in their rigid fits, "
                        f"{r['floor_mm'] / r['noise_mm']:.1f}x the platform's markers' "
                        f"{r['noise_mm']:.3f} mm noise")
        meanings.append(
            "The body's markers do not keep their places on their links during the movement "
            "(markers on skin, or a soft cluster): no model can follow them closer, so the "
            "refinement is judged against that scatter instead of the noise. Its standard "
            "errors hold that motion where it is correlated over frames (report.json's "
            "relative_motion.output_error.standard_errors; the active model's input probes "
            "are drawn from the markers' own residual); a slide that leaves the markers "
            "off their places for the whole capture is beyond any of them.")
        actions.append("Put the clusters on bony landmarks (rigid plates strapped where the "
                       "skin moves least) and record the movement again.")
    if level == "ok":
        return Check("marker_residual", title, "ok", finding, items=items)
    return Check("marker_residual", title, level, "; ".join(findings),
                 " ".join(meanings), " ".join(actions), items)


def markers_still_check(out: SessionOutcome) -> Check:
    """Every marker keeps its place on its body (platform and links) in every posture."""
    title = "Markers still on their bodies"
    found: dict[tuple[str, str], list[tuple[str, float, float]]] = {}
    items = []
    for p in out.postures:
        for body, scatter in p.marker_scatter_mm.items():
            for name, value in moving_markers(scatter, p.marker_noise_mm):
                found.setdefault((body, name), []).append((p.result.name, value,
                                                           p.marker_noise_mm))
                items.append({"posture": p.result.name, "body": body, "marker": name,
                              "scatter_mm": value, "noise_mm": p.marker_noise_mm})
    if not any(p.marker_scatter_mm for p in out.postures):
        return Check("markers_still", title, "not checked", "no marker scatter recorded")
    if not found:
        worst_ratio = max((v / p.marker_noise_mm for p in out.postures
                           for s in p.marker_scatter_mm.values() for v in s.values()
                           if np.isfinite(v) and p.marker_noise_mm > 0), default=np.nan)
        return Check("markers_still", title, "ok",
                     f"every marker keeps its place on its body (largest scatter "
                     f"{worst_ratio:.1f}x the marker noise; a still marker stays below "
                     f"{np.sqrt(3):.1f}x)", items=items)
    parts = []
    for (body, name), hits in found.items():
        postures = [h[0] for h in hits]
        parts.append(f"{name} on {body} ({max(h[1] for h in hits):.2f} mm RMS scatter "
                     f"against {hits[0][2]:.3f} mm noise, in {listing(postures)})")
    bodies = sorted({b for b, _ in found})
    return Check(
        "markers_still", title, "problem",
        "moving on its body: " + listing(parts),
        f"A marker that slides, is knocked or sits on moving skin distorts the fitted pose of "
        f"{listing(bodies)}: the link's rotation in those postures (which the subset fit "
        "uses) is biased" + (", and so is the platform's motion, hence every posture number"
                             if "platform" in bodies else "")
        + ". The output-error fit leaves such a marker out of its own fit.",
        "Fix the marker (or take it out of the manifest's markers for that link) and run "
        "again.", items)


def postures_held_check(out: SessionOutcome) -> Check:
    """Each locked posture was held: no joint and no base link moving during its capture."""
    title = "Postures held still"
    moving_bodies = {(i["posture"], i["body"]) for i in
                     markers_still_check(out).items}
    items, parts = [], []
    explained = []
    for p in out.postures:
        name = p.result.name
        moved = {"base link on the platform": p.base_wobble_deg} if \
            p.base_wobble_deg > LOCK_LIMIT_DEG else {}
        moved.update({f"joint of {k}": v for k, v in p.rotation_spread_deg.items()
                      if v > LOCK_LIMIT_DEG})
        base = out.tree.links[0].name if out.tree is not None else ""
        for what, deg in moved.items():
            # the pose of a body with a moving marker moves with it: not the posture's fault
            pair = {what.removeprefix("joint of "), base} if what.startswith("joint") \
                else {"platform", base}
            if any((name, b) in moving_bodies for b in pair):
                explained.append(f"{what} in {name}")
                continue
            items.append({"posture": name, "what": what, "rms_deg": deg})
            parts.append(f"{what} {deg:.2f} deg RMS in {name}")
        left = [n for n, _ in (p.refinement.left_out_markers if p.refinement else ())]
        if left:
            items.append({"posture": name, "what": "object markers not still on the platform",
                          "markers": left})
    worst_deg = max([p.base_wobble_deg for p in out.postures]
                    + [v for p in out.postures for v in p.rotation_spread_deg.values()],
                    default=0.0)
    if not parts:
        text = (f"every joint and the base link stay within {worst_deg:.2f} deg RMS (limit "
                f"{LOCK_LIMIT_DEG} deg)")
        if explained:
            text += "; " + listing(explained) + " move with a moving marker (see above)"
        return Check("postures_held", title, "ok", text, items=items)
    return Check(
        "postures_held", title, "problem",
        "moved during a locked capture: " + listing(parts),
        "The posture's COM and inertia average over that motion, and the subset fit uses the "
        "mean rotation: those postures' numbers and Phi_s are off by an amount the standard "
        "errors do not hold.",
        "Hold the posture (lock the joint, strap the limb, fix the base link to the platform) "
        "and record it again, or leave that posture out of the manifest.", items)


def mass_check(out: SessionOutcome) -> Check:
    """The vibration's mass against the scale's, with the uncertainty of both."""
    title = "Mass: vibration against scale"
    weighed = float(out.total_mass_kg)
    scale_std = float(getattr(out, "total_mass_std_kg", np.nan))
    if not np.isfinite(scale_std):
        scale_std = 0.0
    items = []
    for p in out.postures:
        oe = p.refinement
        if oe is not None and oe.mass_from_vibration is not None:
            vm = oe.mass_from_vibration
            value, std, method = vm.value_kg, vm.std_kg, "output-error"
            cal = vm.std_calibration_kg
        elif p.equation_error is not None and p.equation_error.mass_from_vibration is not None:
            value, std = p.equation_error.mass_from_vibration
            method, cal = "equation-error", None
        else:
            continue
        tol = MASS_COVERAGE * float(np.hypot(std, scale_std))
        items.append({"posture": p.result.name, "vibration_kg": value, "std_kg": std,
                      "std_calibration_kg": cal, "method": method, "weighed_kg": weighed,
                      "weighed_std_kg": scale_std, "difference_kg": value - weighed,
                      "tolerance_kg": tol, "within": abs(value - weighed) <= tol})
    if not items:
        return Check("mass", title, "not checked", "no posture estimated the mass")
    lo = f"{min(i['vibration_kg'] for i in items):.3f}"
    hi = f"{max(i['vibration_kg'] for i in items):.3f}"
    spread = lo if lo == hi else f"{lo} to {hi}"
    std = max(i["std_kg"] for i in items)
    tol = max(i["tolerance_kg"] for i in items)
    n = len(items)
    src = getattr(out, "total_mass_std_source", "")
    base = (f"vibration {spread} ± {std:.3f} kg ({items[0]['method']}, {n} posture"
            f"{'s' if n > 1 else ''}), scale {weighed:.3f} ± {scale_std:.3f} kg"
            + (f" ({src})" if src else ""))
    if items[0]["method"] == "equation-error":
        base += "; the equation-error figure leaves out the calibration's uncertainty"
    bad = [i for i in items if not i["within"]]
    scale = getattr(out, "force_scale", None)
    if scale is not None and scale.get("applied"):
        soft = any((getattr(p, "unseen_tissue", None) or {}).get("held_because")
                   for p in out.postures)
        return scale_applied_check(title, base, scale, items, body_not_rigid=soft)
    if not bad:
        return Check("mass", title, "ok", f"{base}: within the {tol:.3f} kg tolerance "
                     f"({MASS_COVERAGE:g} combined standard uncertainties)"
                     # a scale as calibrated is said in report.json's force_scale only:
                     # this finding stands in the report's first screen
                     + (f"; {scale_finding(scale)}"
                        if scale is not None and scale.get("not_applied_because") else ""),
                     items=items)
    diff = np.mean([i["difference_kg"] for i in bad])
    return Check(
        "mass", title, "problem",
        f"{base}: {abs(diff):.3f} kg ({100 * abs(diff) / weighed:.2f} %) apart in "
        f"{listing([i['posture'] for i in bad])}, beyond the {tol:.3f} kg tolerance "
        f"({MASS_COVERAGE:g} combined standard uncertainties)",
        "Either the weighed mass is not the mass on the platform (another object, clothes or "
        "straps, a scale off zero, a typing error) or the rig's calibration no longer holds "
        "(springs changed or replaced): every COM and inertia in this report assumes the "
        "weighed mass.",
        "Weigh the object again as it lies on the platform (rigtool weigh) or correct "
        "session.total_mass; if the scale is right, recalibrate the rig.", items)


def scale_finding(scale: dict) -> str:
    """The springs' force scale on the day, said in a clause: its value against 1 in
    standard errors and, when it is applied, what it may come from."""
    d, sd = 100 * scale["delta"], 100 * scale["std"]
    z = scale["delta"] / scale["std"] if scale["std"] > 0 else float("inf")
    text = f"the springs' force scale on the day {d:+.4f} ± {sd:.4f} %"
    if scale.get("not_applied_because"):
        return text + (f" ({abs(z):.1f} standard errors from the calibration's), not "
                       f"applied: {scale['not_applied_because']}")
    if not scale.get("applied"):
        # kept short: on a rig that holds its calibration this clause is in every report's
        # first screen
        return text + ", as calibrated"
    return text + f" ({abs(z):.1f} standard errors from the calibration's)"


def scale_applied_check(title: str, base: str, scale: dict, items: list[dict], *,
                        body_not_rigid: bool = False) -> Check:
    """The mass check when the session's force scale was applied: the first fits'
    vibration mass stood off the weighed one by more than the scale's standard errors
    allow, and the postures were fitted again with the springs scaled.
    ``body_not_rigid``: the postures, fitted with the scale, still disagreed with one tree of
    rigid links (the Soft tissue check), so part of the scale may be the body's."""
    after = scale.get("after") or {}
    moved = [q.get("moved") for q in scale["postures"] if q.get("moved")]
    worst_mm = max((m["com_mm"] for m in moved), default=float("nan"))
    worst_rel = max((m["inertia_rel"] for m in moved), default=float("nan"))
    finding = (f"{scale_finding(scale)}: applied, every posture fitted again with the "
               f"calibrated stiffnesses times {scale['scale']:.5f}, which moved their COM "
               f"by up to {worst_mm:.3f} mm and their inertia by up to {100 * worst_rel:.2f} %"
               + (f"; refitted, {after['delta'] * 100:+.4f} ± {after['std'] * 100:.4f} % "
                  "remains" if after else "") + f" ({base})")
    kelvin = scale["kelvin_equivalent"]
    meaning = (
        "The springs gave a different force per measured displacement than at their "
        f"calibration. A steel spring's stiffness falls about 0.024 % per kelvin: this much "
        f"is a day {abs(kelvin):.1f} K {'warmer' if kelvin > 0 else 'colder'} than the "
        "calibration's. A motion-capture system calibrated again reads every length at a "
        "slightly different scale, which the springs' static stretch multiplies some 15-fold "
        "(the platform's markers measure it in each capture, and a scale over 0.01 % is "
        "taken out before this one: the notes say so); springs whose stiffness grows with "
        "the load read differently under the subject than under the reference bodies; and a "
        "weighing error reads as a scale of its fraction of the hanging mass. The "
        "numbers in this report are those of the scaled rig, its standard error carried into "
        "every posture, Phi_s and the segments."
        + (" The postures, fitted with the scale, still disagree with one tree of rigid "
           "links (the Soft tissue check): part of this scale may be the body's own, tissue "
           "stiffer than the rig's highest mode adding apparent mass in its upper modes as "
           "stiffer springs would; a reference body captured before the session "
           "([[rig_checks]]) tells the two apart." if body_not_rigid else ""))
    action = ("Note the rig's temperature and whether the cameras were calibrated again since "
              "the rig's calibration; check the weighed mass (rigtool weigh). If the scale "
              "recurs or grows, calibrate the rig again with a reference load near the "
              "subject's weight.")
    return Check("mass", title, "caution", finding, meaning, action, items=items)


def capture_checks(out: SessionOutcome) -> list[Check]:
    """The capture-level checks, in report order."""
    return [marker_residual_check(out), markers_still_check(out), postures_held_check(out),
            mass_check(out)]


__all__ = ["capture_checks", "marker_residual_check", "markers_still_check",
           "postures_held_check", "mass_check", "drift"]
