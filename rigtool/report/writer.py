"""Writing a session's results: report.json, report.md, report.html, figures and CSV tables.

Everything is written into one results directory that never holds inputs; the JSON follows
SPEC.md ("What `rigtool run` writes"), with extra keys where more is known.
"""

from __future__ import annotations

import base64
import csv
import html
import json
from pathlib import Path

import numpy as np

from rigtool import __version__
from rigtool.identify.relative.equation_error import describe_interval
from rigtool.pipeline.session import SessionOutcome


_INERTIA_ENTRIES = ((0, 0, "xx"), (1, 1, "yy"), (2, 2, "zz"), (1, 2, "yz"), (2, 0, "zx"),
                    (0, 1, "xy"))


def _r(x, digits: int = 7):
    """Round floats (nested lists) for the JSON; NaN/inf become None."""
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if isinstance(x, dict):
        return {k: _r(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_r(v, digits) for v in x]
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if not np.isfinite(x) else float(f"{x:.{digits}g}")
    return x


def report_dict(out: SessionOutcome) -> dict:
    """The report.json content."""
    postures = []
    for p in out.postures:
        r = p.result
        entry = {
            "name": r.name, "mass": _r(r.mass), "com": _r(r.com), "com_std": _r(r.com_std, 3),
            "inertia_com": _r(r.inertia_com), "inertia_com_std": _r(r.inertia_com_std, 3),
            "rotations": {k: _r(v) for k, v in p.rotations.items()},
            "residual_rms": {k: _r(v, 4) for k, v in r.residual_rms.items()},
            "spring_model": r.spring_model, "weighting": r.weighting,
            "bias_compensated": r.compensated,
            "base_pose_on_platform": {"rotation": _r(p.base_rotation_platform),
                                      "position": _r(p.base_position_platform)},
            "joint_wobble_deg": {k: _r(v, 3) for k, v in p.rotation_spread_deg.items()},
            "marker_fit_rms_m": {k: _r(v, 3) for k, v in p.marker_rms_m.items()},
            "method": p.method,
            "warnings": list(p.warnings),
        }
        if p.refinement is not None:
            oe, ee = p.refinement, p.equation_error
            entry["output_error"] = {
                "marker_residual_rms_mm": _r(oe.residual_rms_mm, 4),
                "marker_sigma_mm": _r(oe.marker_sigma_mm, 4), "iterations": oe.iterations,
                "time_s": _r(oe.elapsed_s, 3), "horizons_s": _r(list(oe.horizons_s), 4),
                "nuisance": _r(oe.nuisance),
                "base_pose_fitted": oe.base_pose_fitted,
                "object_markers": {n: _r(v, 4) for n, v in zip(oe.attached_markers,
                                                               oe.attached_scatter_mm)}}
            entry["equation_error"] = {"com": _r(ee.com), "com_std": _r(ee.com_std, 3),
                                       "inertia_com": _r(ee.inertia_com),
                                       "inertia_com_std": _r(ee.inertia_com_std, 3),
                                       "weighting": ee.weighting}
        if r.mass_from_vibration is not None:
            entry["mass_from_vibration"] = {"value": _r(r.mass_from_vibration[0]),
                                            "std": _r(r.mass_from_vibration[1], 3)}
        postures.append(entry)
    doc = {
        "rigtool_version": __version__,
        "session": out.session.name,
        "total_mass": _r(out.total_mass_kg),
        "inputs": out.inputs,
        "rig": {"path": str(out.rigfile.path), "name": out.rigfile.rig.name},
        "filter": {"method": out.session.filter.method, "order": out.session.filter.order,
                   "passband_hz": out.session.filter.passband_hz,
                   "stopband_hz": out.session.filter.stopband_hz},
        "postures": postures,
        "warnings": out.warnings,
    }
    if out.joint_centres:
        doc["joint_centres"] = {
            name: {"joint_center": _r(e.centre_parent_m), "std": _r(e.std_parent_m, 3),
                   "frame": "parent link", "method": "SCoRE (relative-motion capture)",
                   "link_origin_moved_by": _r(e.centre_child_m),
                   "residual_rms_m": _r(e.residual_rms_m, 3), "frames": e.frames,
                   "rotation_range_deg": _r(e.rotation_range_deg, 3)}
            for name, e in out.joint_centres.items()}
    if out.subset is not None:
        sub = out.subset.to_json()
        doc["subset"] = sub
    not_run = []
    if out.relative is not None:
        rel = out.relative.to_json()
        mp = rel.pop("minimal_parameters")
        ref = out.relative_refinement
        choice = out.relative_model
        if choice is not None:
            rel["model"] = choice.to_json()
        if ref is None and choice is not None and choice.tried:
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
                "marker_sigma_mm", "noise_mm", "iterations", "elapsed_s", "horizons_s")}}
            rel["output_error"]["phi_b_std_marker_noise_only"] = oe["phi_b"]["std_noise"]
        doc["relative_motion"] = _r(rel)
        doc["minimal_parameters"] = _r(mp)
    else:
        not_run += ["relative_motion", "minimal_parameters"]
    if out.segments is not None:
        doc["segments"] = _r(out.segments.to_json())
    else:
        not_run.append("segments")
    doc["stages_not_run"] = not_run
    doc["notes"] = list(out.notes)
    return doc


def _posture_figure(p, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(6, 1, sharex=True, figsize=(8, 9))
    p.result.plot(ax)
    fig.suptitle(f"{p.result.name}: spring + gravity wrench, measured vs fitted "
                 "(platform axes, about its origin)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _motion_figure(p, path: Path) -> None:
    """Filtered platform motion of one posture capture (like paper 002 Fig. 5)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tr = p.traces
    fig, axes = plt.subplots(4, 1, sharex=True, figsize=(8, 7.5))
    panels = [(1e3 * tr.displacement_m, "displacement [mm]", "xyz"),
              (np.rad2deg(tr.rotation_rad), "rotation [deg]", "xyz"),
              (tr.accel_lab, "acceleration [m/s²]", "xyz"),
              (tr.alpha_body, "angular accel. [rad/s²]\n(platform axes)", "xyz")]
    for ax, (y, label, comps) in zip(axes, panels):
        for k, c in enumerate(comps):
            ax.plot(tr.time_s, np.where(tr.valid, y[:, k], np.nan), lw=0.7, label=c)
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].legend(ncol=3, fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(f"{p.result.name}: filtered platform motion (lab axes unless noted)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _residual_figure(postures, path: Path) -> None:
    """Per-frame rigid-cluster fit residual of every body in every posture capture."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(postures), 1, sharex=True, squeeze=False,
                             figsize=(8, 1.8 * len(postures) + 0.8))
    for ax, p in zip(axes[:, 0], postures):
        for body, res in p.traces.marker_residual_m.items():
            ax.plot(p.traces.time_s, 1e3 * res, lw=0.6, label=body)
        ax.set_ylabel(f"{p.result.name}\nRMS [mm]", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right", ncol=4)
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle("Marker fit residuals (RMS distance of each body's markers from its fitted "
                 "rigid cluster)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _subset_figure(out: SessionOutcome, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    s = out.subset
    vals, std = np.asarray(s.values, float), np.asarray(s.std, float)
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(vals) + 1.2))
    y = np.arange(len(vals))
    ax.errorbar(vals, y, xerr=2 * np.where(np.isfinite(std), std, 0), fmt="o", ms=3, capsize=2)
    ax.set_yticks(y, s.names, fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0, color="0.7", lw=0.5)
    ax.set_xlabel("value (kg m or kg m^2), error bars +-2 standard errors")
    ax.set_title("Subset of the minimal inertial parameters (Phi_s)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _relative_figure(out: SessionOutcome, path: Path) -> None:
    """Both sides of eq. 16 over time (paper 002 Fig. 6)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rigtool.identify.relative.equation_error import plot_relative
    fig = plot_relative(out.relative)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            w.writerow([f"{v:.9g}" if isinstance(v, float) else v for v in row])


def _markdown(doc: dict, figures: list[str]) -> str:
    lines = [f"# rigtool report: {doc['session']}", "",
             f"rigtool {doc['rigtool_version']}; total mass {doc['total_mass']} kg; rig "
             f"{doc['rig']['name']}; filter {doc['filter']['method']} order "
             f"{doc['filter']['order']}, {doc['filter']['passband_hz']}/"
             f"{doc['filter']['stopband_hz']} Hz.", "", "## Postures (base-link frame)", ""]
    lines += ["| posture | COM x [mm] | COM y [mm] | COM z [mm] | I_xx | I_yy | I_zz | I_yz | "
              "I_zx | I_xy | force RMS [N] | torque RMS [N m] |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in doc["postures"]:
        c, cs, i, s = p["com"], p["com_std"], p["inertia_com"], p["inertia_com_std"]
        ent = [(0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1)]
        cells = [f"{1e3 * c[k]:.2f} ± {1e3 * cs[k]:.2f}" for k in range(3)]
        cells += [f"{i[a][b]:.4f} ± {s[a][b]:.4f}" for a, b in ent]
        lines.append(f"| {p['name']} | " + " | ".join(cells)
                     + f" | {p['residual_rms']['force']:.3g} | {p['residual_rms']['torque']:.3g} |")
    lines.append("")
    methods = sorted({p["method"] for p in doc["postures"]})
    if methods == ["output-error"]:
        lines.append("Inertia about the COM in kg m², ± one standard error. Output-error fit: "
                     "the rig model's simulated platform motion fitted to the raw markers "
                     "(maximum likelihood), started from the equation-error fit; standard "
                     "errors from the Gauss-Newton covariance, including the calibration's.")
        lines += ["", "| posture | marker residual RMS [mm] | iterations | time [s] | "
                  "equation-error COM [mm] |", "|---|---|---|---|---|"]
        for p in doc["postures"]:
            oe, ee = p["output_error"], p["equation_error"]
            lines.append(f"| {p['name']} | {oe['marker_residual_rms_mm']:.4f} | "
                         f"{oe['iterations']} | {oe['time_s']:.1f} | "
                         + ", ".join(f"{1e3 * v:.2f}" for v in ee["com"]) + " |")
    else:
        lines.append("Inertia about the COM in kg m², ± one standard error (equation-error "
                     "fit, errors-in-variables bias removed, HAC covariance).")
    if "joint_centres" in doc:
        lines += ["", "## Joint centres estimated from the relative motion (SCoRE)", "",
                  "| link | x [mm] | y [mm] | z [mm] | residual RMS [mm] | rotation range [deg] |",
                  "|---|---|---|---|---|---|"]
        for name, e in doc["joint_centres"].items():
            c, sd = e["joint_center"], e["std"]
            lines.append(f"| {name} | " + " | ".join(f"{1e3 * c[k]:.2f} ± {1e3 * sd[k]:.2f}"
                                                      for k in range(3))
                         + f" | {1e3 * e['residual_rms_m']:.3f} | "
                         + ", ".join(f"{v:.0f}" for v in e["rotation_range_deg"]) + " |")
        lines += ["", "In the parent link's frame, ± one standard error; the link's frame "
                  "origin was moved to the centre."]
    if "subset" in doc:
        sub = doc["subset"]
        lines += ["", "## Subset Φ_s of the minimal parameters", "",
                  f"rank {sub['rank']}, condition number {sub['condition_number']:.3g}", "",
                  "| parameter | value | std |", "|---|---|---|"]
        for n, v, s in zip(sub["names"], sub["values"], sub["std"]):
            lines.append(f"| {n} | {v if v is None else f'{v:.5f}'} | "
                         f"{s if s is None else f'{s:.5f}'} |")
    if "relative_motion" in doc:
        rel = doc["relative_motion"]
        lines += ["", "## Relative motion: the remaining J_yy terms", "",
                  "| parameter | estimate | std | feasible interval | on a bound |",
                  "|---|---|---|---|---|"]
        for n, v in rel["resolved"].items():
            lo, hi = rel["bounds"][n]
            lines.append(f"| {n} | {v:.5f} | {rel['std'][n]:.5f} | "
                         f"{describe_interval(lo, hi, digits=5)} | "
                         f"{'yes' if n in rel['on_bound'] else 'no'} |")
        lines += ["", f"Residual RMS of eq. 16: force {rel['residual_rms']['force']:.3g} N, "
                  f"torque {rel['residual_rms']['torque']:.3g} N m "
                  f"({rel['weighting']} weighting, "
                  f"{'bias-compensated' if rel['compensated'] else 'uncompensated'})."]
        if "output_error" in rel and not rel["output_error"].get("used", True):
            oe = rel["output_error"]
            lines += ["", f"The output-error refinement was tried and **not used**: "
                      f"{oe['reason']}. The table above and Φ_B below are the "
                      "equation-error values."]
        if "model" in rel:
            lines += ["", f"Relative-motion model: {rel['model']['reason']}."]
        elif "output_error" in rel and not rel["output_error"]["joint_damping"]:
            oe = rel["output_error"]
            lines += ["", "Refined by output error with the links' motion prescribed (they "
                      "were moved by muscles or motors: their measured motion relative to "
                      "the platform, smoothed, drives the simulated platform, fitted to the "
                      "platform's and base's markers; unknowns: "
                      f"{'all of Φ_B' if oe['free'] == 'phi_b' else 'the J_yy terms'}, base "
                      "pose, initial state): marker residual RMS "
                      + ", ".join(f"{k} {v:.3f} mm" for k, v in oe["residual_rms_mm"].items())
                      + f"; {oe['iterations']} iterations, {oe['elapsed_s']:.0f} s. The table "
                      "above and Φ_B below are the refined values; report.json keeps the "
                      "equation-error ones."]
        elif "output_error" in rel:
            oe = rel["output_error"]
            damp = ", ".join(f"{k} {v:.3g} N m s/rad" for k, v in oe["joint_damping"].items())
            lines += ["", "Refined by output error (the swing simulated from its initial "
                      f"state and fitted to the raw markers; unknowns: "
                      f"{'all of Φ_B' if oe['free'] == 'phi_b' else 'the J_yy terms'}, "
                      f"joint damping, initial state): marker residual RMS "
                      + ", ".join(f"{k} {v:.3f} mm" for k, v in oe["residual_rms_mm"].items())
                      + f"; joint damping {damp}; {oe['iterations']} iterations, "
                      f"{oe['elapsed_s']:.0f} s. The table above and Φ_B below are the "
                      "refined values; report.json keeps the equation-error ones."]
        lines += ["", "## Minimal inertial parameters Φ_B (link frames, at the joint)", "",
                  "| parameter | value | std |", "|---|---|---|"]
        for n, v, sd in zip(rel["phi_b"]["names"], rel["phi_b"]["values"], rel["phi_b"]["std"]):
            lines.append(f"| {n} | {v:.5f} | {sd:.5f} |")
    if "segments" in doc:
        lines += ["", "## Segment parameters (each link's own mass, COM and inertia about "
                  "its COM, link frame)", "",
                  "| link | mass [kg] | COM x [mm] | COM y [mm] | COM z [mm] | I_xx | I_yy | "
                  "I_zz | prior | mass from |", "|---|---|---|---|---|---|---|---|---|---|"]
        for name, ls in doc["segments"]["links"].items():
            c, cs, i = ls["com"], ls["com_std"], ls["inertia_com"]
            lines.append(f"| {name} | {ls['mass']:.3f} ± {ls['mass_std']:.3f} | "
                         + " | ".join(f"{1e3 * c[k]:.1f} ± {1e3 * cs[k]:.1f}" for k in range(3))
                         + " | " + " | ".join(f"{i[k][k]:.4f}" for k in range(3))
                         + f" | {ls['prior']} | {ls['source']['mass']} |")
        lines += ["", "'measured': the posterior standard error is well below the prior's "
                  "(the measurement fixes it); 'prior': the measurement is silent and the "
                  "number is the prior's; 'both': in between. segments.csv has the flag of "
                  "every entry."]
    if doc.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {w}" for w in doc["notes"]]
    if doc["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in doc["warnings"]]
    if doc["stages_not_run"]:
        lines += ["", "## Not run", "", "Stages without results in this report: "
                  + ", ".join(doc["stages_not_run"]) + " (see Notes)."]
    lines += ["", "## Figures", ""]
    lines += [f"![{f}]({f})" for f in figures]
    lines += ["", "## Inputs", ""] + [f"- `{i['path']}` sha256 `{i['sha256']}`"
                                      for i in doc["inputs"]]
    return "\n".join(lines) + "\n"


def _inline(text: str) -> str:
    """Escaped text with Markdown `code` spans as <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _html(markdown_text: str, out_dir: Path, figures: list[str]) -> str:
    """A self-contained page: the Markdown's tables and text, figures embedded as base64."""
    body = []
    in_table = in_list = False
    for line in markdown_text.splitlines():
        if in_list and not line.startswith("- "):
            body.append("</ul>")
            in_list = False
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if all(set(c) <= {"-"} for c in cells):
                continue
            if not in_table:
                body.append("<table>")
                in_table = True
                body.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cells)
                            + "</tr>")
                continue
            body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
            continue
        if in_table:
            body.append("</table>")
            in_table = False
        if line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("!["):
            name = line[line.index("(") + 1:-1]
            data = base64.b64encode((out_dir / name).read_bytes()).decode()
            body.append(f'<figure><img alt="{html.escape(name)}" '
                        f'src="data:image/png;base64,{data}"><figcaption>'
                        f"{html.escape(name)}</figcaption></figure>")
        elif line.startswith("- "):
            if not in_list:
                body.append("<ul>")
                in_list = True
            body.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            body.append(f"<p>{_inline(line)}</p>")
    if in_table:
        body.append("</table>")
    if in_list:
        body.append("</ul>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
             "padding:2px 6px;text-align:right}img{max-width:100%}")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>rigtool report</title>"
            f"<style>{style}</style></head><body>" + "\n".join(body) + "</body></html>\n")


def write_report(out: SessionOutcome, out_dir: Path) -> list[Path]:
    """Write every report file into ``out_dir``; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    doc = report_dict(out)
    figures = []
    traced = [p for p in out.postures if p.traces is not None]
    if traced:
        _residual_figure(traced, out_dir / "marker_residuals.png")
        figures.append("marker_residuals.png")
    for p in out.postures:
        if p.traces is not None:
            name = f"posture_{p.result.name}_motion.png"
            _motion_figure(p, out_dir / name)
            figures.append(name)
        name = f"posture_{p.result.name}_wrench.png"
        _posture_figure(p, out_dir / name)
        figures.append(name)
    if out.subset is not None:
        _subset_figure(out, out_dir / "subset.png")
        figures.append("subset.png")
        _write_csv(out_dir / "subset.csv", ["name", "value", "std"],
                   [[n, float(v), float(s)] for n, v, s in
                    zip(out.subset.names, out.subset.values, out.subset.std)])
        written.append(out_dir / "subset.csv")
    if out.relative is not None:
        _relative_figure(out, out_dir / "relative_motion.png")
        figures.append("relative_motion.png")
        rel = out.relative
        _write_csv(out_dir / "minimal_parameters.csv", ["name", "value", "std", "unit"],
                   [[n, float(v), float(sd), "kg m" if ".MS_" in n else "kg m^2"]
                    for n, v, sd in zip(rel.names, rel.values, rel.std_phi_b)])
        written.append(out_dir / "minimal_parameters.csv")
    if out.segments is not None:
        seg_rows = []
        for name, ls in out.segments.links.items():
            seg_rows.append([name, "mass", float(ls.mass_kg), float(ls.mass_std), "kg",
                             ls.source["mass"]])
            for k, axis in enumerate("xyz"):
                seg_rows.append([name, f"com_{axis}", float(ls.com_m[k]), float(ls.com_std[k]),
                                 "m", ls.source["com"][k]])
            for a, b, lab in _INERTIA_ENTRIES:
                seg_rows.append([name, f"inertia_com_{lab}", float(ls.inertia_com[a, b]),
                                 float(ls.inertia_com_std[a, b]), "kg m^2",
                                 ls.source["inertia_com"][a][b]])
        _write_csv(out_dir / "segments.csv",
                   ["link", "quantity", "value", "std", "unit", "source"], seg_rows)
        written.append(out_dir / "segments.csv")
        from rigtool.report.exports import write_exports
        written += write_exports(out.segments, out_dir, robot_name=out.session.name)
    rows = []
    for p in out.postures:
        r = p.result
        for k, axis in enumerate("xyz"):
            rows.append([r.name, f"com_{axis}", float(r.com[k]), float(r.com_std[k]), "m"])
        for a, b, lab in _INERTIA_ENTRIES:
            rows.append([r.name, f"inertia_com_{lab}", float(r.inertia_com[a, b]),
                         float(r.inertia_com_std[a, b]), "kg m^2"])
    _write_csv(out_dir / "postures.csv", ["posture", "quantity", "value", "std", "unit"], rows)
    written.append(out_dir / "postures.csv")
    (out_dir / "report.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    md = _markdown(doc, figures)
    (out_dir / "report.md").write_text(md, encoding="utf-8")
    (out_dir / "report.html").write_text(_html(md, out_dir, figures), encoding="utf-8")
    written += [out_dir / "report.json", out_dir / "report.md", out_dir / "report.html"]
    written += [out_dir / f for f in figures]
    return written
