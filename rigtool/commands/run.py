"""``rigtool run SESSION.toml [-o RESULTS]``: the whole pipeline of a session."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rigtool.errors import EXIT_OK, EXIT_PARTIAL
from rigtool.pipeline.run_job import add_fit_arguments
from rigtool.progress import progress_printer

HELP = "the whole pipeline: postures, subset, report (report.json, .md, .html, figures, CSV)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", type=Path, help="session manifest (TOML)")
    p.add_argument("-o", "--output", type=Path, default=None,
                   help="results directory (default: results/ next to the manifest)")
    add_fit_arguments(p)


def run(args: argparse.Namespace) -> int:
    from rigtool.pipeline.workers import fits_in_workers, run_pool

    with run_pool(fits=fits_in_workers(args.session, args.method)) as pool:
        # the fork server imports the workers' code (fits, figures) on a spare core while
        # this process imports its own and checks the session
        pool.prestart()
        from rigtool.pipeline.preflight import check_session
        from rigtool.pipeline.run_job import (check_results_dir, default_results_dir,
                                              options_from_args, run_to_directory)

        # every file named, checked in seconds, before the fitting code is even imported
        check_session(args.session, rig=args.rig)
        out_dir = args.output or default_results_dir(args.session)
        check_results_dir(args.session, out_dir)
        outcome, written = run_to_directory(args.session, out_dir,
                                            options=options_from_args(args), rig=args.rig,
                                            progress=progress_printer(), preflight=False,
                                            pool=pool)
    doc = json.loads((out_dir / "report.json").read_text(encoding="utf-8"))
    print(summary_text(doc))
    for note in doc.get("notes", []):
        print(f"note: {note}")
    for w in doc["warnings"]:
        print(f"warning: {w}")
    for line in doc.get("not_identified", []):
        print(f"not identified: {line}")
    print(f"wrote {len(written)} files to {out_dir} (open report.html)")
    if doc.get("status") == "partial":
        print("partial result: the captures could not identify everything (see "
              "'not identified' above and in the report)")
        return EXIT_PARTIAL
    return EXIT_OK


def summary_text(doc: dict) -> str:
    """The report's summary for the terminal: the object, its segments (or the whole object
    per posture), Phi_s and the relative-motion terms, and one line per check."""
    from rigtool.identify.relative.bounds import describe_interval
    from rigtool.report.content_summary import source_words
    s = doc["summary"]
    lines = [s["object"]]
    for seg in s["segments"]:
        moments, moments_std = seg["principal_moments"], seg.get("principal_moments_std")
        lines.append(f"  {seg['link']}: {seg['mass']:.3f} ± {seg['mass_std']:.3f} kg, COM ["
                     + ", ".join(f"{1e3 * v:.1f}" for v in seg["com"]) + "] ± ["
                     + ", ".join(f"{1e3 * v:.1f}" for v in seg["com_std"]) + "] mm, principal "
                     "moments [" + ", ".join(f"{v:.4f}" for v in moments) + "]"
                     + ("" if moments_std is None else
                        " ± [" + ", ".join(f"{v:.4f}" for v in moments_std) + "]")
                     + f" kg m^2 ({source_words(seg['source'])})")
    for p in doc["postures"]:
        lines.append(f"  {p['name']}: COM [" + ", ".join(f"{1e3 * v:.2f}" for v in p["com"])
                     + f"] mm (± {1e3 * max(p['com_std']):.2g} at most), I_com diag ["
                     + ", ".join(f"{p['inertia_com'][k][k]:.4f}" for k in range(3))
                     + f"] kg m^2 ({p['method']})")
    if "subset" in doc:
        sub = doc["subset"]
        lines.append(f"  subset Phi_s: {len(sub['names'])} parameters, rank {sub['rank']}, "
                     f"condition number {sub['condition_number']:.3g}")
    if "relative_motion" in doc:
        rel = doc["relative_motion"]
        lines.append(f"  relative motion ({rel['method']}): " + ", ".join(
            f"{k} = {v:.5f} ± {rel['std'][k]:.2g} kg m^2 (feasible interval "
            f"{describe_interval(*rel['bounds'][k])})" for k, v in rel["resolved"].items()))
    marks = {"ok": "ok     ", "caution": "CAUTION", "problem": "PROBLEM",
             "not checked": "-      "}
    lines.append("checks:")
    lines += [f"  {marks[c['level']]} {c['title']}" for c in doc["checks"]]
    return "\n".join(lines)
