"""The report's detail sections, after the summary: postures, joint centres, Phi_s, the
relative motion and Phi_B, the segments in full, the comparison with a truth file, notes and
inputs; each with its figures.

Built from report.json (``doc``) and the figures written (rigtool.report.figures). Units in
the column headers: COM in mm, inertia in kg m^2, MS in kg m, errors against a truth in SI
units.
"""

from __future__ import annotations

import numpy as np

from rigtool.identify.relative.bounds import describe_interval
from rigtool.identify.relative.oe_result import floor_words
from rigtool.report.blocks import Bullets, Col, Fig, FileLinks, Para, Section, Sub, Table

_SIX = ((0, 0, "xx"), (1, 1, "yy"), (2, 2, "zz"), (1, 2, "yz"), (2, 0, "zx"), (0, 1, "xy"))


def _noise_model(nm: dict | None, se: dict | None = None) -> str:
    """The output-error fit's marker noise model, and its standard errors when clustered,
    in a few words."""
    text = ("isotropic" if not nm or nm.get("kind") == "isotropic" else
            f"covariance of {nm.get('file', '?')} (noise scale {nm.get('noise_scale', 0):.2f})")
    if se and se.get("kind") == "frame":
        text += (f"; standard errors clustered by {se.get('cluster_frames', 1)} frame(s), "
                 f"{se.get('clusters', 0)} clusters")
    elif se and se.get("kind") == "serial":
        text += (f"; standard errors robust to the residual's correlation over "
                 f"{se.get('window_frames', 0)} frames ({se.get('inflation', 0):.1f}x the "
                 "independent frames' variances)")
    return text


def _floor(oe: dict) -> str:
    """The floor a relative-motion refinement's residual was judged against, in words."""
    return floor_words(oe.get("floor_mm", oe["noise_mm"]), oe["noise_mm"])


def _num(v, fmt: str = ".5f") -> str:
    return "–" if v is None else format(v, fmt)


def _figs(figures, section: str) -> list:
    return [Fig(f.file, f.caption) for f in figures if f.section == section]


def postures_section(doc: dict, figures) -> Section:
    cols = ([Col("posture", numeric=False)] + [Col(f"COM {a}", "mm") for a in "xyz"]
            + [Col(f"I_{lab}", "kg m²") for *_, lab in _SIX]
            + [Col("force RMS", "N"), Col("torque RMS", "N m")])
    rows = []
    for p in doc["postures"]:
        c, cs, i, s = p["com"], p["com_std"], p["inertia_com"], p["inertia_com_std"]
        rows.append([p["name"]] + [f"{1e3 * c[k]:.2f} ± {1e3 * cs[k]:.2f}" for k in range(3)]
                    + [f"{i[a][b]:.4f} ± {s[a][b]:.4f}" for a, b, _ in _SIX]
                    + [f"{p['residual_rms']['force']:.3g}", f"{p['residual_rms']['torque']:.3g}"])
    methods = sorted({p["method"] for p in doc["postures"]})
    if methods == ["output-error"]:
        note = ("Inertia about the COM, ± one standard error. Output-error fit: the rig "
                "model's simulated platform motion fitted to the raw markers (maximum "
                "likelihood), started from the equation-error fit; standard errors from the "
                "Gauss-Newton covariance, including the calibration's. Force and torque RMS: "
                "the equation-error start's wrench residual.")
    else:
        note = ("Inertia about the COM, ± one standard error (equation-error fit, "
                "errors-in-variables bias removed, HAC covariance).")
    blocks: list = [Table(cols, rows, note)]
    oe_rows = []
    for p in doc["postures"]:
        if "output_error" not in p:
            continue
        oe, ee = p["output_error"], p["equation_error"]
        mv = p.get("mass_from_vibration", {})
        oe_rows.append([p["name"], f"{oe['marker_sigma_mm']:.4f}",
                        _num(p.get("marker_noise_mm"), ".4f"), str(oe["iterations"]),
                        f"{oe['time_s']:.1f}",
                        _num(mv.get("value"), ".3f") + (f" ± {mv['std']:.3f}" if mv.get("std")
                                                         is not None else ""),
                        ", ".join(f"{1e3 * v:.2f}" for v in ee["com"]),
                        _noise_model(oe.get("noise_model"), oe.get("standard_errors"))])
    if oe_rows:
        blocks.append(Table(
            [Col("posture", numeric=False), Col("marker residual", "mm"),
             Col("marker noise", "mm"), Col("iterations"), Col("time", "s"),
             Col("mass from vibration", "kg"), Col("equation-error COM", "mm"),
             Col("marker noise model", numeric=False)], oe_rows,
            "Output-error fit per posture: residual standard deviation of the fitted markers "
            "against the marker noise of the rigid fits; the object's mass the vibration "
            "gives (mass freed at the estimate, marker noise and calibration in its standard "
            "error); the equation-error start's COM for comparison; the marker noise the fit "
            "assumed: isotropic, or each marker's covariance from a camera's side file "
            "(rows whitened; noise scale 1 when that covariance is the right size)."))
    return Section("postures", "Postures (base-link frame)", blocks + _figs(figures, "postures"))


def joint_centres_section(doc: dict) -> Section | None:
    if "joint_centres" not in doc:
        return None
    rows = []
    for name, e in doc["joint_centres"].items():
        c, sd = e["joint_center"], e["std"]
        rows.append([name] + [f"{1e3 * c[k]:.2f} ± {1e3 * sd[k]:.2f}" for k in range(3)]
                    + [f"{1e3 * e['residual_rms_m']:.3f}",
                       ", ".join(f"{v:.0f}" for v in e["rotation_range_deg"])])
    cols = ([Col("link", numeric=False)] + [Col(a, "mm") for a in "xyz"]
            + [Col("residual RMS", "mm"), Col("rotation range", "deg")])
    return Section("joint-centres", "Joint centres estimated from the relative motion (SCoRE)",
                   [Table(cols, rows, "In the parent link's frame, ± one standard error; the "
                          "link's frame origin was moved to the centre.")])


def _unit(name: str) -> str:
    return "kg m" if ".MS_" in name else "kg m²"


def subset_section(doc: dict, figures) -> Section | None:
    if "subset" not in doc:
        return None
    sub = doc["subset"]
    rows = [[n, _num(v), _num(s), _unit(n)] for n, v, s in
            zip(sub["names"], sub["values"], sub["std"])]
    cols = [Col("parameter", numeric=False), Col("value"), Col("std"),
            Col("unit", numeric=False)]
    lead = Para(f"Rank {sub['rank']} of {len(sub['names'])}, condition number "
                f"{sub['condition_number']:.3g}, reduced chi-square "
                f"{_num(sub.get('reduced_chi2'), '.3g')} ({sub['weights']} weights), "
                f"{sub['n_postures']} postures.")
    return Section("subset", "Subset Φ_s of the minimal parameters",
                   [lead, Table(cols, rows)] + _figs(figures, "subset"))


def relative_section(doc: dict, figures) -> Section | None:
    if "relative_motion" not in doc:
        return None
    rel = doc["relative_motion"]
    rows = []
    for n, v in rel["resolved"].items():
        lo, hi = rel["bounds"][n]
        rows.append([n, f"{v:.5f}", f"{rel['std'][n]:.5f}", describe_interval(lo, hi, digits=5),
                     "yes" if n in rel["on_bound"] else "no"])
    cols = [Col("parameter", numeric=False), Col("estimate", "kg m²"), Col("std", "kg m²"),
            Col("feasible interval", "kg m²"), Col("on a bound", numeric=False)]
    blocks: list = [Table(cols, rows),
                    Para(f"Residual RMS of eq. 16: force {rel['residual_rms']['force']:.3g} N, "
                         f"torque {rel['residual_rms']['torque']:.3g} N m "
                         f"({rel['weighting']} weighting, "
                         f"{'bias-compensated' if rel['compensated'] else 'uncompensated'}).")]
    oe = rel.get("output_error")
    if oe is not None and oe.get("used") and not oe["joint_damping"]:
        blocks.append(Para(
            "Refined by output error with the links' motion prescribed (moved by muscles or "
            "motors: their measured motion relative to the platform, smoothed by a spline on "
            "SO(3), drives the simulated platform, fitted to the platform's and the base's "
            f"markers; unknowns: {'all of Φ_B' if oe['free'] == 'phi_b' else 'the J_yy terms'}"
            ", base pose, initial state): marker residual RMS "
            + ", ".join(f"{k} {v:.3f} mm" for k, v in oe["residual_rms_mm"].items())
            + f" against {_floor(oe)} (the moving links' markers "
            f"made the input: theirs is a check); {oe['iterations']} iterations, "
            f"{oe['elapsed_s']:.0f} s. The table above and Φ_B below are the refined values; "
            "report.json keeps the equation-error ones."))
    elif oe is not None and oe.get("used"):
        damp = ", ".join(f"{k} {v:.3g} N m s/rad" for k, v in oe["joint_damping"].items())
        blocks.append(Para(
            "Refined by output error (the swing simulated from its initial state and fitted "
            "to the raw markers; unknowns: "
            f"{'all of Φ_B' if oe['free'] == 'phi_b' else 'the J_yy terms'}, joint damping, "
            "initial state): marker residual RMS "
            + ", ".join(f"{k} {v:.3f} mm" for k, v in oe["residual_rms_mm"].items())
            + f" against {_floor(oe)}; joint damping {damp}; "
            f"{oe['iterations']} iterations, {oe['elapsed_s']:.0f} s. The table above and "
            "Φ_B below are the refined values; report.json keeps the equation-error ones."))
    elif oe is not None:
        blocks.append(Para(f"Output-error refinement not used: {oe['reason']}."))
    if "model" in rel:
        blocks.append(Para(f"Relative-motion model: {rel['model']['reason']}."))
    b = rel["phi_b"]
    blocks += [Sub("Minimal inertial parameters Φ_B (link frames, at the joint)"),
               Table([Col("parameter", numeric=False), Col("value"), Col("std"),
                      Col("unit", numeric=False)],
                     [[n, f"{v:.5f}", f"{sd:.5f}", _unit(n)]
                      for n, v, sd in zip(b["names"], b["values"], b["std"])])]
    return Section("relative", "Relative motion and the full minimal set Φ_B",
                   blocks + _figs(figures, "relative"))


def segments_section(doc: dict, figures) -> Section | None:
    if "segments" not in doc:
        return None
    cols = ([Col("link", numeric=False), Col("mass", "kg")]
            + [Col(f"COM {a}", "mm") for a in "xyz"]
            + [Col(f"I_{lab}", "kg m²") for *_, lab in _SIX]
            + [Col("prior", numeric=False)])
    rows = []
    for name, ls in doc["segments"]["links"].items():
        c, cs, i, s = ls["com"], ls["com_std"], ls["inertia_com"], ls["inertia_com_std"]
        rows.append([name, f"{ls['mass']:.3f} ± {ls['mass_std']:.3f}"]
                    + [f"{1e3 * c[k]:.1f} ± {1e3 * cs[k]:.1f}" for k in range(3)]
                    + [f"{i[a][b]:.4f} ± {s[a][b]:.4f}" for a, b, _ in _SIX] + [ls["prior"]])
    return Section("segments", "Segment parameters (each link's own, link frame, inertia "
                   "about the COM)",
                   [Table(cols, rows, "± one posterior standard error; segments.csv has the "
                          "source flag of every entry (measured, both, prior).")]
                   + _figs(figures, "segments"))


def models_section(doc: dict) -> Section | None:
    """The model files written next to the report (links), how the base is mounted."""
    mf = doc.get("model_files")
    if not mf:
        return None
    base = ("free (six degrees of freedom)" if mf["base"] == "free" else
            "fixed to the world")
    return Section("models", "Model files", [
        Para("The measured object as complete models: one body per link with its estimated "
             "mass, COM and inertia about the COM (link frame), spherical joints at the joint "
             f"centres, the base link {base}"
             + ("; an ellipsoid of equivalent inertia per body for viewing" if mf["geometry"]
                else "") + ". Each file's header names the rigtool version, the inputs' "
             "sha256 and, per link, what was measured and what came from the prior. "
             "`rigtool export` writes them again from report.json (e.g. with "
             "`--model-base fixed`)."),
        FileLinks([(f["file"], f"{f['format']} (loads with {f['loads_with']})")
                   for f in mf["files"]])])


def opensim_section(doc: dict) -> Section | None:
    """The personalised OpenSim model: per body what was written and where it came from."""
    om = doc.get("opensim")
    if not om:
        return None
    cols = [Col("body", numeric=False), Col("link", numeric=False), Col("model mass", "kg"),
            Col("mass", "kg"), Col("COM moved", "mm"), Col("written", numeric=False),
            Col("sources", numeric=False)]
    rows = []
    for b in om["bodies"]:
        moved = 1e3 * float(np.linalg.norm(np.subtract(b["mass_center"],
                                                        b["model"]["mass_center"])))
        rows.append([b["body"], b["link"], f"{b['model']['mass']:.4g}", f"{b['mass']:.4g}",
                     f"{moved:.1f}", b["written"], b["source"].split("; prior:")[0]])
    return Section("opensim", "Personalised OpenSim model", [
        Para(f"`{om['file']}` is `{om['model']}` with each body's mass, mass_center and "
             "inertia replaced by the measured ones (every other element as in the input); a "
             "comment per body says what was measured and what came from the prior, the "
             "input model's values. report.json's opensim block has every number."),
        FileLinks([(om["file"], "OpenSim 4 model (loads with opensim.Model)")]),
        Table(cols, rows, "sources: per quantity of the body's link, from the vibration "
              "(measured), the input model (prior) or both.")])


def truth_section(doc: dict) -> Section | None:
    tc = doc.get("truth_comparison")
    if not tc:
        return None
    cols = [Col("compared", numeric=False), Col("unit", numeric=False), Col("entries"),
            Col("RMS error"), Col("largest |error|"), Col("at", numeric=False),
            Col("largest |error| / std")]
    rows = [[t["group"], t["unit"].replace("^2", "²"), str(t["entries"]), f"{t['rms_error']:.3g}",
             f"{t['max_abs_error']:.3g}", t["at"], _num(t["max_abs_z"], ".2f")]
            for t in tc["summary"]]
    return Section("truth", f"Against the truth ({tc['file']})", [
        Para(f"`{tc['file']}` sits next to the session manifest: every estimate minus its true "
             "value, in SI units (m, kg, kg m, kg m², N/m, N s/m), and in the report's own "
             "standard errors. report.json's truth_comparison.entries lists every entry."),
        Table(cols, rows)])


def partial_section(doc: dict) -> list[Section]:
    """What the captures could not identify (a partial result), first in the report."""
    if doc.get("status") != "partial":
        return []
    blocks: list = [Para("A partial result: everything measured is in this report, but the "
                         "captures could not identify everything. `rigtool run` exited with "
                         "status 3."), Bullets(list(doc["not_identified"]))]
    combos = (doc.get("subset") or {}).get("identified_combinations") or []
    if combos:
        blocks.append(Para("What the postures do determine (report.json: "
                           "subset.identified_combinations):"))
        blocks.append(Table([Col("combination", numeric=False), Col("value"), Col("std")],
                            [[c["name"], _num(c["value"], ".6g"), _num(c["std"], ".3g")]
                             for c in combos]))
    return [Section("partial", "Not identified", blocks)]


def closing_sections(doc: dict) -> list[Section]:
    out = []
    if doc.get("notes") or doc["stages_not_run"]:
        blocks: list = []
        if doc.get("notes"):
            blocks.append(Bullets(list(doc["notes"])))
        if doc["stages_not_run"]:
            blocks.append(Para("Stages without results in this report: "
                               + ", ".join(doc["stages_not_run"]) + "."))
        out.append(Section("notes", "Notes", blocks))
    out.append(Section("inputs", "Inputs", [Bullets(
        [f"`{i['path']}` sha256 `{i['sha256']}`" for i in doc["inputs"]])]))
    return out


__all__ = ["postures_section", "joint_centres_section", "subset_section", "relative_section",
           "segments_section", "models_section", "opensim_section", "truth_section",
           "partial_section", "closing_sections"]
