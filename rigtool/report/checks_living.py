"""Checks that a living body left its marks in the captures, each naming its cause.

A person is not the rigid body the model assumes. Each check looks for one effect's own
signature in what the posture fits measured (``PostureOutcome.living_signs``, from
:mod:`rigtool.kinematics.living_signs`) and speaks only when it finds it:

- breathing: object markers moving on their link with one narrow rhythm at 6-40/min (and
  its harmonics), the posture residual sharing it;
- soft tissue: the springs see a different mass in the pendulum modes than in the higher
  modes (a wobbling mass's apparent mass ``m (1 + 2 i zeta r)/(1 - r^2 + 2 i zeta r)``);
- a compliant support: the base link's markers moving on the platform in step with the
  platform's acceleration;
- skin markers: a link's markers scattering well above the platform's rigid markers.

Units: mm, Hz, kg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rigtool.kinematics.living_signs import band_fraction, base_pose_noise_m, support_axes
from rigtool.report.check_types import Check, listing

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.session import SessionOutcome

#: a marker moves with the breath when this share of its motion is at one rhythm
RHYTHM_SHARE = 0.5
#: ... and it moves this many times the still-marker scatter (sqrt(3) sigma)
RHYTHM_MOTION = 3.0
#: ... and moves with another such marker (correlation of their motions)
RHYTHM_COHERENCE = 0.8
#: ... on one link, this many times more than the other links' markers move
RHYTHM_LOCAL = 2.0
#: skin: a link's median marker scatter over the platform markers' median scatter
SKIN_RATIO = 2.0
#: soft tissue: the bands' masses differ by this many combined standard errors, and by
#: this fraction of the object's mass
TISSUE_SIGMAS, TISSUE_FRACTION = 3.0, 0.02


def _signs(out: SessionOutcome):
    return [(p, p.living_signs) for p in out.postures if getattr(p, "living_signs", None)]


def breathing_check(out: SessionOutcome) -> Check:
    """Object markers moving with one breathing rhythm (and the residual following it); with
    breathing markers named in the manifest, what their measured breath's model did."""
    check = _with_held_tissue(out, _rhythm_check(out))
    named = [p for p in out.postures if getattr(p, "breathing", None)]
    if not named:
        return check
    modelled = [p for p in named if p.breathing.get("model") == "measured internal wrench"]
    rigid = [p for p in named if p not in modelled]
    parts = []
    if modelled:
        k = sorted({int(p.breathing["measurement"]["components"]) for p in modelled})
        parts.append(f"the breath the breathing markers measure ({'/'.join(map(str, k))} "
                     f"coordinate{'s' if max(k) > 1 else ''}) is in the fits of "
                     f"{listing([p.result.name for p in modelled])}: their COM and inertia "
                     "are the mean mass distribution over each capture")
    if rigid:
        parts.append(f"in {listing([p.result.name for p in rigid])} the breathing markers "
                     "do not move above the marker noise, and the rigid model was fitted")
    finding = "; ".join(parts)
    items = [{"posture": p.result.name, "model": p.breathing.get("model")} for p in named]
    if check.level == "problem":
        return Check(check.key, check.title, check.level, f"{check.finding}; {finding}",
                     check.meaning, check.action, check.items + items)
    return Check("breathing", check.title, "ok", finding[0].upper() + finding[1:], items=items)


def _with_held_tissue(out: SessionOutcome, check: Check) -> Check:
    """A breath named, in a session whose postures disagreed with one tree of rigid links
    and were fitted again holding the tissue a person may carry: the check's meaning says
    what that allowance adds to their standard errors."""
    held = any((getattr(p, "unseen_tissue", None) or {}).get("held_because")
               for p in out.postures)
    if check.level != "problem" or not held:
        return check
    return Check(check.key, check.title, check.level, check.finding,
                 check.meaning + " The postures disagreed with one tree of rigid links, and "
                 + _unseen_tissue_held(out.postures, on_a_soft_back=False),
                 check.action, check.items)


def _rhythm_check(out: SessionOutcome) -> Check:
    """Object markers moving with one breathing rhythm (and the residual following it)."""
    title = "Breathing"
    items, hits = [], {}
    for p, s in _signs(out):
        noise = p.marker_noise_mm
        rhythm = s["rhythm"]
        for link, markers in rhythm.items():
            cand = {k: r for k, r in markers.items()
                    if np.isfinite(r["band_fraction"]) and r["band_fraction"] >= RHYTHM_SHARE
                    and r["rms_mm"] > RHYTHM_MOTION * np.sqrt(3) * noise
                    and r.get("series_mm") is not None}
            if len(cand) < 2:
                continue
            top_name = max(cand, key=lambda k: cand[k]["rms_mm"])
            top = cand[top_name]
            # the breath moves the chest and abdomen, not the limbs: markers elsewhere move
            # far less (skin drifting on every segment moves them all alike)
            elsewhere = [r["rms_mm"] for other, mk in rhythm.items() if other != link
                         for r in mk.values() if np.isfinite(r["rms_mm"])]
            if elsewhere and top["rms_mm"] < RHYTHM_LOCAL * float(np.median(elsewhere)):
                continue
            # ... together: a marker moving alone is not breathing (a moving marker drags
            # its link's fitted pose, so its neighbours move with it: named only when they
            # move at least a third as much)
            mates = [k for k, r in cand.items() if k != top_name and abs(np.corrcoef(
                r["series_mm"], top["series_mm"])[0, 1]) >= RHYTHM_COHERENCE]
            if not mates:
                continue
            resid = _residual_share(p, top["frequency_hz"], s["rate_hz"])
            for name in [top_name] + mates:
                r = cand[name]
                if r["rms_mm"] < 0.3 * top["rms_mm"]:
                    continue
                items.append({"posture": p.result.name, "link": link, "marker": name,
                              "rate_per_min": 60 * r["frequency_hz"], "rms_mm": r["rms_mm"],
                              "share": r["band_fraction"], "residual_share": resid})
                hits.setdefault((link, name), []).append(items[-1])
    if not _signs(out):
        return Check("breathing", title, "not checked", "no posture measured")
    if not hits:
        return _residual_breath_check(out, title, items)
    rates = [i["rate_per_min"] for i in items]
    parts = [f"{name} on {link} ({max(h['rms_mm'] for h in v):.1f} mm)"
             for (link, name), v in hits.items()]
    resid = [i["residual_share"] for i in items if np.isfinite(i["residual_share"])]
    span = (f"{min(rates):.0f}" if round(min(rates)) == round(max(rates))
            else f"{min(rates):.0f}-{max(rates):.0f}")
    finding = (f"{listing(parts)} move on their link at {span}/min "
               f"with {100 * min(i['share'] for i in items):.0f} % or more of their motion at "
               "that rhythm and its harmonics")
    if resid:
        finding += (f"; the posture fit's residual has {100 * max(resid):.0f} % of its "
                    "variance in those bands")
    return Check(
        "breathing", title, "problem", finding,
        "These are chest or abdominal wall markers: they follow the breath, not the link, "
        "and in the fit they move the link's pose; the breath also moves mass inside the "
        "trunk, and its rhythm and harmonics fall near the rig's pendulum modes, which the "
        "rigid model cannot tell from the platform's own vibration: every posture's COM and "
        "inertia carry an error their standard errors do not hold.",
        "Name these markers as the link's breathing_markers in the manifest (the posture "
        "fits then take the measured breath into account; keep markers on bone, sternum, "
        "pelvis, for the link's pose), or record each posture holding the breath at the end "
        "of a quiet exhale, and prefer a rig whose pendulum modes stay clear of the breathing "
        "rate and its first harmonics (rigtool.protocol.check_rig_modes).", items)


def _residual_breath_check(out: SessionOutcome, title: str, items: list[dict]) -> Check:
    """Breathing named from the posture fits' residual when no marker follows the breath:
    the platform markers' residual with most of its variance at one rhythm of 6-40/min and
    its harmonics, away from the rig's modes, well above the markers' noise."""
    found = []
    for p, s in _signs(out):
        r = s.get("residual_rhythm") or {}
        if not r:
            continue
        noise = p.marker_noise_mm / np.sqrt(max(r["n_markers"], 1))
        item = {"posture": p.result.name, "rate_per_min": 60.0 * r["frequency_hz"],
                "share": r["band_fraction"], "residual_mm": r["rms_mm"],
                "clear_of_modes": r["clear_of_modes"], "lab_axis": "xyz"[r["axis"]]}
        items.append(item)
        if (r["band_fraction"] >= RHYTHM_SHARE and r["clear_of_modes"]
                and r["rms_mm"] > RHYTHM_MOTION * noise):
            found.append(item)
    if not found:
        return Check("breathing", title, "ok", "no object marker moves with a breathing "
                     "rhythm (6-40/min), nor does the fits' residual", items=items)
    rates = [i["rate_per_min"] for i in found]
    span = (f"{min(rates):.0f}" if round(min(rates)) == round(max(rates))
            else f"{min(rates):.0f}-{max(rates):.0f}")
    return Check(
        "breathing", title, "problem",
        f"the posture fits' residual moves with a rhythm of {span}/min in "
        f"{listing([i['posture'] for i in found])} ({min(i['residual_mm'] for i in found):.2f}-"
        f"{max(i['residual_mm'] for i in found):.2f} mm along lab "
        f"{listing(sorted({i['lab_axis'] for i in found}))}, "
        f"{100 * min(i['share'] for i in found):.0f} % or more of its variance at that rhythm "
        "and its harmonics, away from the rig's modes); no marker follows the breath",
        "The body breathes: the breath moves mass inside the trunk, and the platform answers "
        "at the breathing rate and its harmonics, which the rigid model cannot follow (a "
        "model error of the rig would leave its residual at the rig's modes instead). Every "
        "posture's COM and inertia carry an error their standard errors do not hold.",
        "Put markers on the chest and the abdominal wall and name them as the trunk's "
        "breathing_markers in the manifest (the posture fits then take the measured breath "
        "into account), or record each posture holding the breath at the end of a quiet "
        "exhale.", found)


def _residual_share(p, f0_hz: float, rate_hz: float) -> float:
    """Share of the output-error residual's variance at ``f0`` and its harmonics."""
    oe = getattr(p, "refinement", None)
    per = getattr(oe, "residual_rms_frame_mm", None) if oe is not None else None
    if per is None or not np.isfinite(f0_hz):
        return float("nan")
    per = np.asarray(per, float)
    return band_fraction(per, rate_hz, f0_hz) if per.size > 64 else float("nan")


def _base_wander_words(out: SessionOutcome) -> str:
    """What the base link's wandering markers leave in its mean place, when they do."""
    sds = [1e3 * np.sqrt(np.max(np.diag(w)[:3])) for p in out.postures
           if (w := getattr(p, "base_pose_wander_cov", None)) is not None]
    if not sds:
        return ""
    return (" The base link's mean place over a capture is off the bone by the mean of its "
            f"markers' wander: up to {max(sds):.2f} mm (one standard deviation) in "
            f"{len(sds)} of {len(out.postures)} postures, which their standard errors "
            "carry.")


def skin_check(out: SessionOutcome) -> Check:
    """A link's markers scattering well above the platform's rigid markers."""
    title = "Skin markers"
    breathing = {(i["link"], i["marker"]) for i in _rhythm_check(out).items if "marker" in i}
    items, parts = [], []
    for p in out.postures:
        scatter = p.marker_scatter_mm
        plat = [v for v in scatter.get("platform", {}).values() if np.isfinite(v)]
        if not plat or out.tree is None:
            continue
        ref = float(np.median(plat))
        for link in out.tree.links:
            vals = [v for k, v in scatter.get(link.name, {}).items()
                    if np.isfinite(v) and (link.name, k) not in breathing]
            if len(vals) < 3 or ref <= 0:
                continue
            med = float(np.median(vals))
            items.append({"posture": p.result.name, "link": link.name, "scatter_mm": med,
                          "platform_scatter_mm": ref, "ratio": med / ref})
            if med / ref >= SKIN_RATIO:
                parts.append(items[-1])
    if not items:
        return Check("skin", title, "not checked", "no marker scatter to compare")
    if not parts:
        return Check("skin", title, "ok", "the links' markers scatter as the platform's rigid "
                     f"markers do (at most {max(i['ratio'] for i in items):.1f}x)", items=items)
    links = sorted({i["link"] for i in parts})
    worst = max(parts, key=lambda i: i["ratio"])
    return Check(
        "skin", title, "caution",
        f"the markers of {listing(links)} scatter {min(i['scatter_mm'] for i in parts):.2f}-"
        f"{max(i['scatter_mm'] for i in parts):.2f} mm RMS about their places, up to "
        f"{worst['ratio']:.1f}x the platform's rigid markers ({worst['platform_scatter_mm']:.2f}"
        " mm)",
        "Markers on skin slide over the bone and follow the soft tissue: the links' fitted "
        "poses (and the joint rotations the subset fit takes) carry that motion. The marker "
        "noise is taken from the platform's markers, so the fit's residual shows it rather "
        "than absorbing it." + _base_wander_words(out),
        "Put the markers on bony landmarks or rigid clusters strapped to the segment; check "
        "the joint rotations' spread in the postures table.", parts)


def support_check(out: SessionOutcome) -> Check:
    """The base link moving on the platform in step with the platform's acceleration; when
    the posture fits measured that motion through, what they did."""
    title = "Support under the body"
    items, found = [], []
    axes = "xyz"
    for p, s in _signs(out):
        b = s["base_on_platform"]
        k_base = len(p.marker_scatter_mm.get(out.tree.links[0].name, {})) if out.tree else 3
        k_plat = len(p.marker_scatter_mm.get("platform", {})) or 3
        pose_noise = 1e3 * base_pose_noise_m(1e-3 * p.marker_noise_mm, k_base, k_plat)
        riding = support_axes(b, 1e-3 * pose_noise)
        for k in range(3):
            item = {"posture": p.result.name, "axis": axes[k], "rms_mm": float(b["rms_mm"][k]),
                    "pose_noise_mm": float(pose_noise), "r2": float(b["r2"][k]),
                    "frequency_hz": float(b["frequency_hz"][k]),
                    "measured_through": bool(getattr(p, "support", None))}
            items.append(item)
            if k in riding:
                found.append(item)
    if not items:
        return Check("support", title, "not checked", "no posture measured")
    because = [p.support["measured_because"] for p in out.postures
               if (getattr(p, "support", None) or {}).get("measured_because")]
    if not found and because:
        return Check(
            "support", title, "caution",
            "the base link rides too little on its support for this check, but "
            + because[0] + ": every posture was fitted again with the body's motion on the "
            "platform measured through (report.json: postures[].support.measured_because)",
            "A firm back shows in the rig's upper modes as an apparent mass of several per "
            "cent of the body, which a tissue element takes for tens of kilograms of tissue "
            "(on the simulator, a back of 15 Hz in shear: 39-40 kg, the COM up to 12 mm off; "
            "measured through, 1.9-3.3 mm). The postures' numbers are the equation-error "
            "fits' that follow the body's measured motion; "
            + ("the tissue element fitted beside it is in the Soft tissue check."
               if any(getattr(p, "soft_tissue", None) for p in out.postures)
               else _unseen_tissue_held(out.postures)),
            "To measure the body fixed on the platform (and refine it by output error), strap "
            "it to a rigid board bolted to the platform.", items)
    if not found:
        return Check("support", title, "ok", "the base link keeps its place on the platform",
                     items=items)
    by_axis = {}
    for i in found:
        by_axis.setdefault(i["axis"], []).append(i)
    parts = [f"along platform {ax} {max(i['rms_mm'] for i in v):.2f} mm RMS, as on a support "
             f"of {np.median([i['frequency_hz'] for i in v]):.1f} Hz"
             for ax, v in sorted(by_axis.items())]
    open_ = [i for i in found if not i["measured_through"]]
    if not open_:
        tissue_fitted = any(getattr(p, "soft_tissue", None) for p in out.postures)
        masked = "" if tissue_fitted or getattr(out, "robot", None) is not None else (
            " A person's wobbling tissue shows in the same upper modes of the rig as the "
            "support's motion, and with that motion measured through no tissue element was "
            "told from it here: " + _unseen_tissue_held(out.postures))
        return Check(
            "support", title, "caution",
            "the base link rides on a compliant support (" + listing(parts) + "): the body's "
            "markers measured its motion on the platform, and the posture fits took it as the "
            "body's own (report.json: postures[].support)",
            "The postures' numbers are the body's at its mean place, from equation-error fits "
            "that follow its measured motion (noise weighting, bias-compensated): the "
            "output-error refinement, which holds the body fixed on the platform, was not run, "
            "so their standard errors are the equation-error fit's and the marker residual is "
            "not checked for these postures." + masked,
            ("Nothing is needed for these numbers. " if not masked else "")
            + "To measure the body fixed on the platform (and refine it by output error), "
            "strap it to a rigid board bolted to the platform.",
            found)
    return Check(
        "support", title, "problem",
        "the base link's markers move on the platform in step with its acceleration: "
        + listing(parts),
        "The body rests on something compliant (the soft tissue of the back, a mattress): on "
        "its own springs it adds an apparent mass that differs from mode to mode, largest in "
        "the rig's modes nearest the support's frequency, which the rigid model trades "
        "against the COM and inertia: every posture number carries that error.",
        "Set support = \"measured\" in the manifest's [session] (the base link's markers then "
        "measure the motion through), strap the body to a rigid board bolted to the platform, "
        "or use a rig whose highest mode stays well below the support's frequency "
        "(rigtool.protocol.check_rig_modes).",
        found)


def _unseen_tissue_held(postures, *, on_a_soft_back: bool = True) -> str:
    """What became of the tissue no element was told from, as the end of a sentence: held
    in the postures' standard errors (with what it adds to them), or in their numbers
    alone. ``on_a_soft_back``: with the simulator's figures for a body on a soft back."""
    held = [p.unseen_tissue for p in postures if getattr(p, "unseen_tissue", None)]
    if not held:
        return ("whatever tissue the body carries is in the posture numbers and not in their "
                "standard errors (on the simulator, a person with every effect of a living "
                "body: COM 0.9-2.3 mm and inertia 0.9-19 % off, 68 % of the entries within 2 "
                "standard errors; holding the breath did not change it).")
    com, inertia = _held_spans(held)
    return (f"in {len(held)} of {len(postures)} postures the tissue each link may carry (a "
            f"quarter of its mass, at {min(held[0]['frequencies_hz']):g}-"
            f"{max(held[0]['frequencies_hz']):g} Hz), as far as the posture could not rule it "
            f"out, is held in their standard errors and not in their numbers, adding up to "
            f"{com} mm to the COM's and {inertia} kg m^2 to the inertia's "
            "(report.json: postures[].unseen_tissue"
            + ("; on the simulator, a "
               "person with every effect of a living body: COM 0.9-2.3 mm and inertia 0.9-19 % "
               "off, every entry of 12 postures within 2 standard errors, 68 % without the "
               "tissue held: a limit of this rig for a person on a soft back)."
               if on_a_soft_back else ")."))


def soft_tissue_check(out: SessionOutcome) -> Check:
    """The springs see a different mass in the pendulum modes than in the higher modes."""
    title = "Soft tissue (apparent mass by mode)"
    items, found = [], []
    for p, s in _signs(out):
        bands = [b for b in s.get("apparent_mass", []) if np.isfinite(b.get("mass_kg", np.nan))]
        if len(bands) < 2:
            continue
        lo, hi = bands[0], bands[-1]
        diff = hi["object_mass_kg"] - lo["object_mass_kg"]
        std = float(np.hypot(lo["std_kg"], hi["std_kg"]))
        item = {"posture": p.result.name, "low_band_hz": lo["band_hz"],
                "high_band_hz": hi["band_hz"], "low_kg": lo["object_mass_kg"],
                "high_kg": hi["object_mass_kg"], "difference_kg": diff, "std_kg": std,
                "weighed_kg": float(out.total_mass_kg)}
        items.append(item)
        # tissue below its frequency adds apparent mass in the upper modes, never takes it
        # away: a lighter upper band is the noise's (errors in variables: the band's
        # acceleration is the most noise-amplified regressor) or the rig's, not tissue
        if diff > TISSUE_SIGMAS * std and diff > TISSUE_FRACTION * out.total_mass_kg:
            found.append(item)
    modelled = {p.result.name: p.soft_tissue for p in out.postures
                if getattr(p, "soft_tissue", None)}
    if modelled:
        return _tissue_measured_through(title, modelled, found, items, out.total_mass_kg)
    if not items:
        return Check("soft_tissue", title, "not checked", "no band had motion to weigh")
    because = [p.unseen_tissue["held_because"] for p in out.postures
               if (getattr(p, "unseen_tissue", None) or {}).get("held_because")]
    if not found and because and breathing_check(out).level == "problem":
        # the breath the Breathing check names makes postures disagree too: that check
        # speaks for the disagreement (and says what the held tissue adds)
        return Check("soft_tissue", title, "ok",
                     "no band's mass tells tissue apart; the postures' disagreement with one "
                     "tree of rigid links is the breath's (the Breathing check)", items=items)
    if not found and because:
        return Check(
            "soft_tissue", title, "caution",
            "no band's mass tells tissue apart, but " + because[0] + ": "
            + _unseen_tissue_held(out.postures, on_a_soft_back=False),
            "Postures that disagree with one tree of rigid links say that something inside "
            "the body moved while the platform vibrated (wobbling tissue, a breath, skin on "
            "the markers), which each posture's rigid fit took for another mass distribution. "
            "Tissue stiffer than the rig's highest mode shows in every posture alike (their "
            "inertia up, their COM moved), which scaling the standard errors by the postures' "
            "scatter cannot hold; the tissue a person may carry is held in them instead. The "
            "numbers are the rigid fits'; the other living checks say whether a breath or the "
            "skin is in the captures too.",
            "For numbers that need no such allowance: a rig whose highest mode stays well "
            "below the tissue's frequencies (`rigtool modes`), relaxed and supported segments, "
            "or the tissue measured through ([session] soft_tissue = \"measured\").", items)
    if not found:
        return Check("soft_tissue", title, "ok", "the springs see one mass in every mode",
                     items=items)
    # a body on a compliant support (measured through or not) shows the support's apparent
    # mass in the same upper modes: the finding names both
    support = support_check(out).level in ("problem", "caution")
    parts = _band_parts(found)
    return Check(
        "soft_tissue", title, "problem",
        "the object's mass the springs see differs from mode to mode: " + listing(parts)
        + f" (scale {out.total_mass_kg:.1f} kg)",
        "Part of the body's mass moves on its own (viscera, muscle and fat on damped springs"
        + (", or on the compliant support above" if support else "")
        + "): its apparent mass m(1 + 2i zeta r)/(1 - r^2 + 2i zeta r) grows in the modes "
        "nearest its frequency. A rigid model fitted to all modes at once trades the COM "
        "against the inertia: the posture numbers carry that error"
        + (", and their standard errors hold the tissue the fit could not rule out "
           "(report.json: postures[].unseen_tissue)."
           if any(getattr(p, "unseen_tissue", None) for p in out.postures) else "."),
        "Prefer a rig whose highest mode is well below the tissue's frequencies (4-10 Hz; "
        "rigtool.protocol.check_rig_modes), and relaxed, supported segments; or measure "
        "the tissue through ([session] soft_tissue = \"measured\").", found)


def _band_parts(found: list[dict]) -> list[str]:
    return [f"{i['low_kg']:.1f} kg in {i['low_band_hz'][0]:g}-{i['low_band_hz'][1]:g} Hz and "
            f"{i['high_kg']:.1f} kg in {i['high_band_hz'][0]:g}-{i['high_band_hz'][1]:g} Hz "
            f"({i['posture']})" for i in found]


def _held_spans(held: list[dict]) -> tuple[str, str]:
    """Over the postures' held tissues (report blocks with ``com_std_m`` and
    ``inertia_com_std``), the span of what each adds to its largest COM standard error (mm)
    and to its largest inertia standard error (kg m^2), as text."""
    com = [1e3 * max(u["com_std_m"]) for u in held]
    inertia = [float(np.max(u["inertia_com_std"])) for u in held]
    return (f"{min(com):.2f}-{max(com):.2f}", f"{min(inertia):.3f}-{max(inertia):.3f}")


def _other_tissue_limit(modelled: dict) -> str:
    """What the other tissue alone gives the postures' COM and inertia standard errors (the
    largest entry of each), as a sentence (empty without it)."""
    held = [o for o in (m.get("other_tissue") for m in modelled.values()) if o]
    if not held:
        return ""
    com, inertia = _held_spans(held)
    return (f" That tissue alone gives the COM a standard error of up to {com} mm and the "
            f"inertia up to {inertia} kg m^2 (the largest entry of each "
            "posture): a limit of this rig for this body, lower on a rig whose highest mode "
            "is further below the tissue's frequencies.")


def _tissue_measured_through(title: str, modelled: dict, found: list[dict], items: list[dict],
                             total_mass_kg: float) -> Check:
    """The caution of a session whose postures were fitted with a tissue element."""
    elements = [f"{m['mass_kg']:.1f} ± {m['mass_std_kg']:.1f} kg at {m['frequency_hz']:.1f} Hz "
                f"({name})" for name, m in modelled.items()]
    finding = ("the body's wobbling tissue was measured through, one element per posture: "
               + listing(elements))
    if found:
        finding += ("; the springs see a different mass from mode to mode: "
                    + listing(_band_parts(found)) + f" (scale {total_mass_kg:.1f} kg)")
    return Check(
        "soft_tissue", title, "caution", finding[0].upper() + finding[1:],
        "The posture numbers are the body's mean mass distribution from the equation-error "
        "fit with the tissue in it. They depend on the tissue's frequency, which the rig's "
        "modes below it tell only roughly: the closer the rig's highest mode comes to the "
        "tissue's frequency, the more (on the simulator, a highest mode at 0.75x the "
        "tissue's left 1-1.5 % in the inertia, at 0.4x under 0.8 %). Their standard "
        "errors carry the frequency's uncertainty as its profile measures it, and the "
        "tissue each link may carry beside the element at a stiffer frequency (a quarter "
        "of its mass), which the one element cannot follow and the data do not "
        "resolve." + _other_tissue_limit(modelled),
        "For the inertia to 1 %, a rig whose highest mode is at most 0.4x the tissue's "
        "frequency (`rigtool modes`), and relaxed, supported segments.",
        [dict(posture=name, **{k: m[k] for k in ("frequency_hz", "mass_kg", "mass_std_kg")})
         for name, m in modelled.items()] + found)


def living_checks(out: SessionOutcome) -> list[Check]:
    """The living body's checks that found something (a green one is not shown). A robot
    does not breathe, carry soft tissue or wear skin: its session gets the support check
    alone (a base that moves on the platform is a loose mount)."""
    if getattr(out, "robot", None) is not None:
        checks = [support_check(out)]
    else:
        checks = [breathing_check(out), soft_tissue_check(out), support_check(out),
                  skin_check(out)]
    return [c for c in checks if c.is_warning]


__all__ = ["living_checks", "breathing_check", "soft_tissue_check", "support_check",
           "skin_check"]
