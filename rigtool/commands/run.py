"""``rigtool run SESSION.toml [-o RESULTS]``: the whole pipeline of a session."""

from __future__ import annotations

import argparse
from pathlib import Path

from rigtool.pipeline.run_job import add_fit_arguments
from rigtool.progress import progress_printer

HELP = "the whole pipeline: postures, subset, report (report.json, .md, .html, figures, CSV)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", type=Path, help="session manifest (TOML)")
    p.add_argument("-o", "--output", type=Path, default=None,
                   help="results directory (default: results/ next to the manifest)")
    add_fit_arguments(p)


def run(args: argparse.Namespace) -> int:
    from rigtool.pipeline.preflight import check_session
    from rigtool.pipeline.run_job import (check_results_dir, default_results_dir,
                                          options_from_args, run_to_directory)

    # every file named, checked in seconds, before the fitting code is even imported
    check_session(args.session, rig=args.rig)
    out_dir = args.output or default_results_dir(args.session)
    check_results_dir(args.session, out_dir)
    from rigtool.identify.relative.equation_error import describe_interval

    outcome, written = run_to_directory(args.session, out_dir, options=options_from_args(args),
                                        rig=args.rig, progress=progress_printer(),
                                        preflight=False)
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
