"""``rigtool run SESSION.toml [-o RESULTS]``: the whole pipeline of a session."""

from __future__ import annotations

import argparse
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
    from rigtool.identify.relative.equation_error import describe_interval
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
    for p in outcome.postures:
        r = p.result
        print(f"{r.name}: COM [{', '.join(f'{1e3 * v:.2f}' for v in r.com)}] mm "
              f"(+- {1e3 * max(r.com_std):.2g}), I_com diag "
              f"[{', '.join(f'{r.inertia_com[k, k]:.4f}' for k in range(3))}] kg m^2")
    if outcome.subset is not None:
        s = outcome.subset
        print(f"subset Phi_s: {len(s.names)} parameters, rank {s.rank}, condition number "
              f"{s.condition_number:.3g}")
    if outcome.relative is not None:
        rel = outcome.relative
        print(f"relative motion ({rel.method}): " + ", ".join(
            f"{k} = {v:.5f} +- {rel.std[k]:.2g} kg m^2 (feasible interval "
            f"{describe_interval(*rel.bounds[k])})" for k, v in rel.resolved.items()))
    for note in outcome.notes:
        print(f"note: {note}")
    for w in outcome.warnings:
        print(f"warning: {w}")
    print(f"wrote {len(written)} files to {out_dir}")
    return 0
