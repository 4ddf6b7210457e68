"""``rigtool batch SESSIONS... [-o RESULTS]``: many sessions on dask.distributed.

Every session runs as ``rigtool run`` does, as independent Dask tasks, on a local cluster of
processes (``--workers N``) or an existing scheduler (``--scheduler ADDRESS``). A session
that fails does not stop the others; sessions whose results are up to date are skipped
unless ``--force``; the summary goes to RESULTS (summary.csv, summary.parquet, index.html).

Exit status: 2 when any session failed on bad input, else 1 when any failed on an internal
error, else 3 when any gave a partial result (written, but not everything identified), else 0.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rigtool.batch.plan import DEFAULT_RESULTS
from rigtool.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_PARTIAL
from rigtool.extras import require_extra
from rigtool.pipeline.run_job import add_fit_arguments

HELP = "many sessions as rigtool run does, on a local Dask cluster or a scheduler"



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sessions", nargs="+", metavar="SESSIONS",
                   help="session manifests, their folders, or glob patterns "
                        "(captures/*/session.toml; quote ** patterns)")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="RESULTS",
                   help=f"results folder: RESULTS/SESSION/ per session, the summary at the "
                        f"top (default: {DEFAULT_RESULTS}/, or {DEFAULT_RESULTS}-NEW/ with "
                        "--rig NEW.toml)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="an existing dask.distributed scheduler (tcp://host:8786; start one "
                        "with `dask scheduler` and workers with `dask worker ADDRESS`); "
                        "default: a local cluster for this batch")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes of the local cluster (default: the CPU count)")
    p.add_argument("--force", action="store_true",
                   help="rerun sessions whose results are already up to date")
    add_fit_arguments(p)


def _check_arguments(args: argparse.Namespace) -> None:
    from rigtool.errors import InputError
    if args.workers is not None and args.scheduler:
        raise InputError("--workers sizes the local cluster; with --scheduler, start as many "
                         "`dask worker ADDRESS` processes as wanted", field="--workers")
    if args.workers is not None and args.workers < 1:
        raise InputError("expected a whole number >= 1", field="--workers", found=args.workers)
    if args.rig is not None and not args.rig.is_file():
        raise InputError("rig file not found (given with --rig)", path=args.rig)


def _progress_bar(total: int):
    """``on_record`` for run_jobs: a bar line per finished session on a terminal, and every
    failure on stderr at once (a broken session is known within seconds)."""
    from rigtool.progress import progress_printer
    progress, done = progress_printer(), [0]

    def on_record(rec) -> None:
        done[0] += 1
        filled = round(20 * done[0] / total)
        took = f" in {rec.run_s:.1f} s" if rec.run_s is not None else ""
        progress(f"[{'#' * filled}{'.' * (20 - filled)}] {done[0]}/{total} "
                 f"{rec.key}: {rec.status}{took}")
        if rec.exit_status not in (EXIT_OK, EXIT_PARTIAL):
            kind = "error" if rec.exit_status == EXIT_BAD_INPUT else "internal error"
            print(f"rigtool batch: {rec.key}: {kind}: {rec.message}", file=sys.stderr,
                  flush=True)

    return progress, on_record


def run(args: argparse.Namespace) -> int:
    from rigtool.batch.lock import results_lock
    from rigtool.batch.plan import (default_results, expand_sessions, plan_batch,
                                    remove_leftovers)
    from rigtool.batch.summary import write_summary
    from rigtool.batch.tasks import batch_exit_status
    from rigtool.pipeline.run_job import check_results_dir, options_from_args

    _check_arguments(args)
    require_extra("batch")          # dask.distributed and pyarrow, before anything runs
    manifests = expand_sessions(args.sessions)
    results = (args.output or default_results(args.rig)).absolute()
    for m in manifests:
        check_results_dir(m, results)
    with results_lock(results):
        remove_leftovers(results)
        plan = plan_batch(manifests, results, options=options_from_args(args), rig=args.rig,
                          force=args.force)
        records = {r.key: r for r in plan.skipped + plan.refused}
        for r in plan.refused:
            print(f"rigtool batch: {r.key}: error: {r.message}", file=sys.stderr)
        print(f"{len(manifests)} session{'s' * (len(manifests) != 1)}: {len(plan.jobs)} to "
              f"run, {len(plan.skipped)} up to date (skipped), {len(plan.refused)} refused",
              flush=True)
        if plan.jobs:
            from rigtool.batch.cluster import dask_client, run_jobs
            workers = args.workers or os.cpu_count() or 1
            progress, on_record = _progress_bar(len(plan.jobs))
            with dask_client(scheduler=args.scheduler, workers=workers) as client:
                progress(f"running {len(plan.jobs)} on "
                         + (f"the scheduler {args.scheduler}" if args.scheduler
                            else f"a local cluster of {workers} worker processes"))
                for rec in run_jobs(client, plan.jobs, on_record=on_record):
                    records[rec.key] = rec
        ordered = [records[k] for k in plan.keys]
        written = write_summary(ordered, results)
    width = max(len(k) for k in plan.keys)
    for r in ordered:
        took = f"{r.run_s:8.1f} s" if r.run_s is not None else " " * 10
        first = r.message.splitlines()[0] if r.message else ""
        print(f"  {r.key:<{width}}  {r.status:<14} {took}  {first}")
    print(f"summary: {written[0]}, {written[1].name}, {written[2].name}")
    return batch_exit_status(ordered)
