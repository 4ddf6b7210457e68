"""``rigtool run SESSION.toml [-o RESULTS]``: the whole pipeline of a session."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rigtool.errors import InputError
from rigtool.pipeline.methods import add_method_argument
from rigtool.progress import progress_printer

HELP = "the whole pipeline: postures, subset, report (report.json, .md, .html, figures, CSV)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", type=Path, help="session manifest (TOML)")
    p.add_argument("-o", "--output", type=Path, default=None,
                   help="results directory (default: results/ next to the manifest)")
    p.add_argument("--spring-model", choices=("exact", "linear"), default="exact",
                   help="spring wrench from the measured geometry (default) or paper 002's "
                        "linear stiffness-matrix model")
    p.add_argument("--weighting", choices=("noise", "plain", "dual-metric"),
                   default="dual-metric",
                   help="row weighting of the posture fits: paper 004's unit-independent dual "
                        "metric (default; most accurate in benchmarks/posture.py), 1/sigma per "
                        "wrench component, or none")
    add_method_argument(p, "the posture fits")
    p.add_argument("--no-compensation", action="store_true",
                   help="plain equation error (no errors-in-variables correction)")


def run(args: argparse.Namespace) -> int:
    from rigtool.pipeline.preflight import check_session

    check_session(args.session)      # every file named, checked in seconds, before the fitting
    from rigtool.pipeline.session import run_session     # code is even imported
    from rigtool.report.writer import write_report

    out_dir = args.output or args.session.parent / "results"
    session_dir = args.session.resolve().parent
    if out_dir.resolve() == session_dir:
        raise InputError("the results directory must not be the session's own folder (raw "
                         "captures live there); choose another with -o", path=out_dir)
    progress = progress_printer()
    outcome = run_session(args.session, spring_model=args.spring_model,
                          weighting=args.weighting, compensate=not args.no_compensation,
                          method=args.method, progress=progress, preflight=False)
    progress("writing the report")
    written = write_report(outcome, out_dir)
    doc = json.loads((out_dir / "report.json").read_text(encoding="utf-8"))
    print(summary_text(doc))
    for note in doc.get("notes", []):
        print(f"note: {note}")
    for w in doc["warnings"]:
        print(f"warning: {w}")
    print(f"wrote {len(written)} files to {out_dir} (open report.html)")
    return 0


def summary_text(doc: dict) -> str:
    """The report's summary for the terminal: the object, its segments (or the whole object
    per posture), Phi_s and the relative-motion terms, and one line per check."""
    from rigtool.identify.relative.equation_error import describe_interval
    s = doc["summary"]
    lines = [s["object"]]
    for seg in s["segments"]:
        src = seg["source"]
        lines.append(f"  {seg['link']}: {seg['mass']:.3f} +- {seg['mass_std']:.3f} kg, COM ["
                     + ", ".join(f"{1e3 * v:.1f}" for v in seg["com"]) + "] mm, principal "
                     "moments [" + ", ".join(f"{v:.4f}" for v in seg["principal_moments"])
                     + f"] kg m^2 (mass {src['mass']}, COM {src['com']}, inertia "
                     f"{src['inertia']})")
    for p in doc["postures"]:
        lines.append(f"  {p['name']}: COM [" + ", ".join(f"{1e3 * v:.2f}" for v in p["com"])
                     + f"] mm (+- {1e3 * max(p['com_std']):.2g}), I_com diag ["
                     + ", ".join(f"{p['inertia_com'][k][k]:.4f}" for k in range(3))
                     + f"] kg m^2 ({p['method']})")
    if "subset" in doc:
        sub = doc["subset"]
        lines.append(f"  subset Phi_s: {len(sub['names'])} parameters, rank {sub['rank']}, "
                     f"condition number {sub['condition_number']:.3g}")
    if "relative_motion" in doc:
        rel = doc["relative_motion"]
        lines.append(f"  relative motion ({rel['method']}): " + ", ".join(
            f"{k} = {v:.5f} +- {rel['std'][k]:.2g} kg m^2 (feasible interval "
            f"{describe_interval(*rel['bounds'][k])})" for k, v in rel["resolved"].items()))
    marks = {"ok": "ok     ", "caution": "CAUTION", "problem": "PROBLEM",
             "not checked": "-      "}
    lines.append("checks:")
    lines += [f"  {marks[c['level']]} {c['title']}" for c in doc["checks"]]
    return "\n".join(lines)
