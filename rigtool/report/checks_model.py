"""Checks of the identification: how well the postures determine Phi_s, whether an estimate
sits on a physical bound, whether the calibration is recent and passed its held-out test,
whether the segment parameters reproduce Phi_B, and what else the fits said.

See rigtool.report.check_types for the levels. Units: SI; the calibration's age in days.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING
import re

import numpy as np

from rigtool.identify.calibration.verdict import HOLDOUT_Z_LIMIT
from rigtool.identify.relative.bounds import describe_interval
from rigtool.identify.subset.fit import SCALE_P
from rigtool.report.check_types import Check, listing

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.session import SessionOutcome

#: Phi_s is weakly determined when its condition number (column-equilibrated, unit-free
#: rows) exceeds this: its weakest direction is a thousand times worse than its best
CONDITION_LIMIT = 1e3
#: the postures disagree with one tree of rigid links when the subset fit's reduced
#: chi-square (with the postures' own covariances) exceeds this (p < 0.002 for 10 dof)
CHI2_LIMIT = 3.0
#: a calibration older than this (days) may no longer hold (springs creep, rigs are moved)
CALIBRATION_AGE_DAYS = 90
#: a held-out body whose largest error exceeds HOLDOUT_Z_LIMIT standard errors fails its test
#: (rigtool.identify.calibration.verdict, which ``rigtool calibrate`` judges by too)
#: segment parameters that leave a Phi_B entry over this many standard errors disagree
SEGMENTS_Z_LIMIT = 3.0

#: what the fits say in words that a check above judges from numbers (those messages are
#: not repeated as "other messages"); each phrase occurs in the module that writes it
COVERED_PHRASES = (
    "grow or shrink along the capture",              # residual drift: marker_residual
    "left out of the output-error fit",              # markers_still / postures_held
    "fewer than 3 base-link markers usable",          # markers_still
    "did not reach the data",                         # marker_residual (relative motion)
    "no output-error model fits this capture",        # marker_residual (relative motion)
    "the physically consistent interval",             # bounds
    "admits no physically consistent set of links",   # bounds
    "outside the physically consistent set",          # bounds
    "differs from the unconstrained",                 # bounds (equation-error postures)
)
#: messages about the method, not the estimate: shown as notes
NOTE_PHRASES = ("passband edge", "dual-metric weighting needs all six DOFs")


def phi_s_check(out: SessionOutcome) -> Check:
    """Rank, condition and consistency of the subset fit."""
    title = "Phi_s: rank and condition"
    s = out.subset
    if s is None:
        return Check("phi_s", title, "not checked", "one link: there is no subset to identify")
    n = len(s.names)
    item = {"rank": int(s.rank), "n_parameters": n, "condition_number": float(s.condition_number),
            "reduced_chi2": float(s.reduced_chi2), "n_postures": s.n_postures,
            "se_scale": float(s.se_scale)}
    finding = (f"rank {s.rank} of {n} from {s.n_postures} postures, condition number "
               f"{s.condition_number:.3g}, reduced chi-square {s.reduced_chi2:.2f}")
    if s.rank < n:
        return Check("phi_s", title, "problem", finding + ": " + "; ".join(s.unidentifiable),
                     "The postures cannot separate these combinations; their values are not "
                     "reported.", " ".join(s.advice) or "Add a posture that moves the named "
                     "links about other axes.", [item])
    notes, meaning, action = [], [], []
    if s.condition_number > CONDITION_LIMIT and s.singular_vectors is not None:
        weak = s.singular_vectors[s.rank - 1]
        order = np.argsort(-np.abs(weak))[:3]
        named = listing([s.names[i] for i in order])
        notes.append(f"its weakest direction is mostly {named} "
                     f"({s.singular_values[s.rank - 1]:.1e} of the strongest)")
        meaning.append("Phi_s is determined, but loosely along that direction: its standard "
                       "errors there are large, and they say so.")
        action.append(f"Add a posture that rotates the links of {named} about other axes.")
    scaled = s.se_scale > 1.0
    if scaled or (np.isfinite(s.reduced_chi2) and s.reduced_chi2 > CHI2_LIMIT
                  and s.weights == "given"):
        notes.append("the postures disagree with one tree of rigid links ("
                     + (f"beyond their standard errors at p < {SCALE_P:g}" if scaled
                        else f"reduced chi-square over {CHI2_LIMIT:g}") + ")")
        meaning.append("The postures' properties do not fit one set of rigid links beyond "
                       "their standard errors (a posture not held, a marker that slid, a joint "
                       "centre off, a disturbance such as the heartbeat's recoil ringing the "
                       "rig's modes, or a model error shown above): "
                       + (f"Phi_s's standard errors are scaled by {s.se_scale:.2f}, the square "
                          "root of the reduced chi-square (the Birge ratio), to hold that "
                          "scatter, and Phi_B's follow." if scaled
                          else "Phi_s's standard errors are too small."))
        action.append("Resolve the capture checks above; a posture that alone disagrees can "
                      "be left out.")
    notes += list(s.warnings)
    if not notes:
        return Check("phi_s", title, "ok", finding, items=[item])
    return Check("phi_s", title, "caution", finding + "; " + "; ".join(notes),
                 " ".join(meaning) or "The subset fit flagged this.", " ".join(action),
                 [item])


def bounds_check(out: SessionOutcome) -> Check:
    """Estimates held at a physical bound (feasible J_yy interval, pseudo-inertia)."""
    title = "Physical bounds"
    items, problems, cautions = [], [], []
    for p in out.postures:
        if p.refinement is None and any("differs from the unconstrained" in w
                                        for w in p.warnings):
            cautions.append(f"{p.result.name} (consistent fit over 2 standard errors from the "
                            "unconstrained one)")
            items.append({"posture": p.result.name, "consistency_moved": True})
    rel = out.relative
    if rel is not None:
        for name, value in rel.resolved.items():
            lo, hi = rel.bounds[name]
            items.append({"parameter": name, "value": float(value), "lower": float(lo),
                          "upper": float(hi), "on_bound": name in rel.on_bound})
            if lo > hi:
                problems.append(f"{name}: interval {describe_interval(lo, hi)}")
            elif name in rel.on_bound:
                cautions.append(f"{name} = {value:.5g} on its bound of "
                                f"{describe_interval(lo, hi)}")
    robot = getattr(out, "robot", None)
    if rel is None and robot is not None:
        return _robot_bounds(robot, title, items, cautions)
    if rel is None and not items:
        return Check("bounds", title, "not checked", "no relative-motion stage: no J_yy "
                     "interval to hold an estimate", items=items)
    if problems:
        return Check("bounds", title, "problem", listing(problems),
                     "No set of physically consistent links has this Phi_s and mass: Phi_s or "
                     "the weighed mass is off (see the checks above), and the J_yy reported is "
                     "the unconstrained least-squares one.",
                     "Resolve the failing checks above, then run again.", items)
    if cautions:
        return Check("bounds", title, "caution", "held at a bound: " + listing(cautions),
                     "The data alone would put the estimate outside what rigid links with "
                     "positive mass allow; the value reported is the bound, and its standard "
                     "error describes the unconstrained estimate, not the bound.",
                     "A longer or larger swing (relative motion) or another posture narrows "
                     "the estimate; check the marker and hold checks above.", items)
    inside = [f"{i['parameter']} {i['value']:.5g} inside "
              f"{describe_interval(i['lower'], i['upper'])}"
              for i in items if "parameter" in i]
    return Check("bounds", title, "ok", listing(inside) or "no estimate at a bound",
                 items=items)


def calibration_check(out: SessionOutcome, now: _dt.datetime | None = None) -> Check:
    """The calibration's age and its held-out test."""
    title = "Calibration: age and held-out test"
    cal = (getattr(out.rigfile, "raw", {}) or {}).get("calibration", {}) or {}
    if not cal:
        return Check("calibration", title, "not checked",
                     "the rig file has no [calibration] table (not calibrated by rigtool)")
    now = now or _dt.datetime.now(_dt.timezone.utc)
    items, parts, level = [], [], "ok"
    meaning, action = [], []
    age = None
    try:
        date = _dt.datetime.fromisoformat(str(cal.get("date")))
        if date.tzinfo is None:
            date = date.replace(tzinfo=_dt.timezone.utc)
        age = (now - date).total_seconds() / 86400.0
    except (TypeError, ValueError):
        parts.append("no readable calibration date")
    if age is not None:
        parts.append(f"calibrated {max(age, 0):.0f} days ago ({str(cal.get('date'))[:10]}, "
                     f"{cal.get('method', 'method not recorded')})")
        items.append({"age_days": age, "date": str(cal.get("date"))})
        if age > CALIBRATION_AGE_DAYS:
            level = "caution"
            meaning.append(f"A calibration over {CALIBRATION_AGE_DAYS} days old may no longer "
                           "hold (springs creep, rigs are moved).")
            action.append("Record a held-out capture with a known body to confirm it, or "
                          "recalibrate.")
    holdouts = cal.get("holdout", []) or []
    for h in holdouts:
        z = h.get("max_error_z")
        items.append({"capture": h.get("capture"), "com_error_m": h.get("com_error_m"),
                      "inertia_error_rel": h.get("inertia_error_rel"), "max_error_z": z})
        text = (f"held-out {h.get('capture')}: COM error {1e3 * h.get('com_error_m', np.nan):.2f}"
                f" mm, inertia error {100 * h.get('inertia_error_rel', np.nan):.2f} %")
        if z is not None:
            text += f" ({z:.1f} standard errors at most)"
        parts.append(text)
        if z is not None and z > HOLDOUT_Z_LIMIT:
            level = "problem"
            meaning.insert(0, f"The calibrated rig misjudges a body of known inertia by over "
                           f"{HOLDOUT_Z_LIMIT:g} standard errors: its errors are larger than "
                           "its uncertainty says, and every number of this report inherits "
                           "them.")
            action.insert(0, "Check the reference body's values in the rig file and the "
                          "held-out capture, then recalibrate (more captures, more load "
                          "positions).")
            if h.get("likely_cause"):
                meaning.insert(1, f"Likely cause ({h.get('capture')}): {h['likely_cause']}.")
    day = list(getattr(out, "rig_checks", []) or [])
    if day and level == "caution" and age is not None and age > CALIBRATION_AGE_DAYS:
        # checked on the day: its age alone no longer asks for a check
        level, meaning, action = "ok", [], []
    for d in day:
        j = d.to_json()
        items.append({"rig_check": j["capture"], **j})
        judged = ("" if j["judged_with_force_scale"] is None else
                  f" with the session's force scale {j['judged_with_force_scale']:.5f} applied")
        text = (f"on the day, {j['capture']} ({', '.join(j['load'])}){judged}: COM error "
                f"{j['com_error_mm']:.2f} mm, inertia error {100 * j['inertia_error_rel']:.2f} %")
        if j["max_error_z"] is not None:
            text += f" ({j['max_error_z']:.1f} standard errors at most)"
        if "force_scale" in j:
            fs = j["force_scale"]
            text += (f", force scale {100 * fs['delta']:+.3f} ± {100 * fs['std']:.3f} % "
                     "(in the session's)")
        parts.append(text)
        if j["holds"] is False:
            level = "problem"
            meaning.insert(0, f"On the day the calibrated rig misjudges a body of known "
                           f"inertia ({j['capture']}) by over {HOLDOUT_Z_LIMIT:g} standard "
                           "errors: the rig is no longer the one calibrated, and every number "
                           f"of this report inherits it. Likely cause: {j['likely_cause']}.")
            action.insert(0, "Recalibrate the rig (`rigtool calibrate`), with reference "
                          "loads spanning the subject's, before measuring again.")
    if not holdouts:
        parts.append("no held-out capture (add one with holdout = true to test the "
                     "calibration on a known body)")
    if holdouts and all(h.get("max_error_z") is None for h in holdouts):
        parts.append("the held-out errors' standard errors are not in the rig file "
                     "(recalibrate with this rigtool to have them judged)")
    return Check("calibration", title, level, "; ".join(parts), " ".join(meaning),
                 " ".join(action), items)


#: a link mass's source flag (report.json's segments) as the segments check says it
MASS_SOURCE_WORDS = {"measured": "fixed by the vibration alone",
                     "both": "from the vibration and the prior together",
                     "prior": "from the prior alone"}


def _mass_sources(source: dict[str, str]) -> str:
    """Where the link masses came from, in words: ``every link mass from the vibration and
    the prior together``, or per source the links it holds for (``the mass of link1 from
    the prior alone``)."""
    groups = {flag: [name for name, f in source.items() if f == flag]
              for flag in dict.fromkeys(source.values())}
    if len(groups) == 1:
        flag, = groups
        return f"every link mass {MASS_SOURCE_WORDS.get(flag, flag)}"
    return "; ".join(f"the mass{'es' if len(names) > 1 else ''} of {listing(names)} "
                     f"{MASS_SOURCE_WORDS.get(flag, flag)}" for flag, names in groups.items())


def segments_check(out: SessionOutcome) -> Check:
    """The segment parameters reproduce Phi_B (priors agree with the measurement)."""
    title = "Segments reproduce Phi_B"
    seg = out.segments
    if seg is None:
        return Check("segments", title, "not checked", "no segment parameters estimated")
    z = seg.phi_b_residual_z
    item = {"status": seg.status,
            "max_residual_z": None if z is None else float(np.max(np.abs(z)))}
    flags = _mass_sources({name: ls.source["mass"] for name, ls in seg.links.items()})
    if seg.status != "optimal":
        return Check("segments", title, "problem", f"solver status {seg.status}",
                     "The per-link parameters did not converge and are not reliable.",
                     "Check the priors in the manifest ([links.prior] or segment).", [item])
    if z is not None and np.max(np.abs(z)) > SEGMENTS_Z_LIMIT:
        k = int(np.argmax(np.abs(z)))
        return Check("segments", title, "caution",
                     f"{seg.names[k]} is {abs(z[k]):.1f} standard errors from Phi_B ({flags})",
                     "The priors pull the links away from what the vibration measured: the "
                     "segment parameters follow the priors where they disagree.",
                     "Check the priors (segment tables, CAD values) of the named link.", [item])
    text = "Phi_B reproduced" + ("" if z is None else
                                 f" within {np.max(np.abs(z)):.2g} standard errors")
    return Check("segments", title, "ok", f"{text} ({flags})", items=[item])


def _template(text: str) -> str:
    return re.sub(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", "#", text)


_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def _grouped_text(texts: list[str], *, several: bool) -> str:
    """One message said for several captures: each number that differs between them as
    its range (``4.66-4.71``), and a sentence about "this motion" (one capture's) about
    each one's."""
    text = texts[0]
    values = [re.findall(_NUMBER, t) for t in texts]
    if len(texts) > 1 and all(len(v) == len(values[0]) for v in values):
        parts = re.split(_NUMBER, text)
        out = [parts[0]]
        for k, rest in enumerate(parts[1:]):
            column = [v[k] for v in values]
            nums = [float(c) for c in column]
            shown = column[0] if len(set(column)) == 1 else \
                f"{column[int(np.argmin(nums))]}-{column[int(np.argmax(nums))]}"
            out += [shown, rest]
        text = "".join(out)
    if several:
        text = re.sub(r"\bthis motion\b", "each capture's motion", text)
        text = re.sub(r"\bthis capture\b", "each capture", text)
    return text


def _robot_bounds(robot, title: str, items: list, cautions: list) -> Check:
    """A robot's physical bounds: its per-link parameters (each link's pseudo-inertia LMI),
    what the per-link fit held or why it failed, and whether the motion's rows took part."""
    fit = robot.consistent
    motion = robot.locked is not None
    used = ("the locked postures and the joints' motion" if motion
            else "the locked postures")
    if fit is None:
        return Check("bounds", title, "not checked",
                     f"no per-link parameters: the base parameters ({used}) are the result",
                     items=items)
    item = {"per_link_fit_held": fit.held, "written": fit.written,
            "reproduces": fit.reproduces, "with_motion": motion}
    if not fit.held:
        return Check("bounds", title, "caution",
                     f"the per-link fit failed: {fit.failure}",
                     "No physically consistent per-link fit is written: robot.urdf holds "
                     + ("the URDF prior moved onto the identified combinations"
                        if fit.written == "prior on the combinations"
                        else "the URDF prior scaled to the weighed mass") + ".",
                     "Check the posture fits and the base parameters' residuals; a posture "
                     "that disagrees with the others can be left out.", items + [item])
    finding = (f"every link physically consistent (pseudo-inertia LMI), the combinations of "
               f"{used} reproduced within their standard errors")
    if cautions:
        return Check("bounds", title, "caution", finding + "; held at a bound: "
                     + listing(cautions),
                     "A posture's consistent fit sits at the consistency bound.",
                     "Another posture narrows the estimate.", items + [item])
    return Check("bounds", title, "ok", finding, items=items + [item])


def fit_messages(out: SessionOutcome) -> tuple[Check, list[str]]:
    """The fits' own warnings that no check covers, each said once with the captures it
    concerns; and the notes (method remarks). Returns ``(check, notes)``."""
    title = "Other messages from the fits"
    tagged: list[tuple[str, str]] = []
    posture_texts = set()
    for p in out.postures:
        for w in list(p.warnings) + list(getattr(p, "notes", [])):
            posture_texts.add(w)
            tagged.append((p.result.name, w.removeprefix(f"{p.result.name}: ")))
    for w in out.warnings:
        if w not in posture_texts:
            tagged.append(("", w))
    groups: dict[str, list] = {}
    for where, text in tagged:
        if any(ph in text for ph in COVERED_PHRASES):
            continue
        groups.setdefault(_template(text), []).append((where, text))
    warnings, notes = [], []
    for members in groups.values():
        where = list(dict.fromkeys(w for w, _ in members if w))
        text = _grouped_text([t for _, t in members], several=len(where) > 1)
        line = text + (f" ({listing(where)})" if where else "")
        (notes if any(ph in text for ph in NOTE_PHRASES) else warnings).append(line)
    if not warnings:
        return Check("fit_messages", title, "ok", "none"), notes
    return Check("fit_messages", title, "caution", "; ".join(warnings),
                 "The fits flagged these; they are not covered by the checks above.",
                 "Read them against the detail sections below.",
                 [{"message": w} for w in warnings]), notes


def model_checks(out: SessionOutcome, now: _dt.datetime | None = None) -> list[Check]:
    """The identification-level checks, in report order (the fits' other messages last)."""
    return [phi_s_check(out), bounds_check(out), calibration_check(out, now),
            segments_check(out)]


__all__ = ["model_checks", "phi_s_check", "bounds_check", "calibration_check",
           "segments_check", "fit_messages", "COVERED_PHRASES", "NOTE_PHRASES"]
