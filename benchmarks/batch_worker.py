"""What a Dask worker costs one session: the same session pinned to one CPU in a
plain process and as a task of a local cluster's worker, with Dask's defaults and with the
settings rigtool's local cluster uses (``rigtool.batch.cluster.WORKER_CONFIG``).

Each mode runs in a fresh child process and runs the session ``--repeat`` times in a row (the
first also loads the engine from the compile cache); wall and CPU seconds of every run are
printed. Modes:

- ``plain``: ``run_to_directory`` in the child, pinned to CPU 0;
- ``plain-malloc-trim``: the same with ``MALLOC_TRIM_THRESHOLD_=65536``, as Dask's nanny
  starts its workers;
- ``dask-defaults``: a task on worker 0 of a two-worker local cluster pinned as rigtool's
  (``rigtool.batch.worker_cpus``), with Dask's default worker settings;
- ``dask-rigtool``: the same with ``WORKER_CONFIG`` (no statistical profiler, no malloc trim).

    python3 benchmarks/batch_worker.py SESSION.toml [--modes plain,dask-defaults,...]
                                                    [--repeat 3]

A session manifest of ``benchmarks/batch.py --keep``'s study is the size measured in
benchmarks/RESULTS.md ("Many sessions").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = ("plain", "plain-malloc-trim", "dask-defaults", "dask-rigtool")


def _one_run(manifest: str, out: str) -> tuple[float, float]:
    """(wall s, CPU s of this process) of one ``rigtool run`` of ``manifest``."""
    from rigtool.pipeline.run_job import RunOptions, run_to_directory
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    run_to_directory(Path(manifest), Path(out), options=RunOptions(method="output-error"),
                     workers=1)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (time.perf_counter() - t0,
            (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime))


def _child(manifest: str, mode: str, repeat: int) -> list[tuple[float, float]]:
    out = Path(tempfile.mkdtemp(prefix="rigtool-batch-worker-"))
    if mode.startswith("plain"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        from rigtool.pipeline import session  # noqa: F401 - imports before the clock
        return [_one_run(manifest, str(out / f"run{i}")) for i in range(repeat)]
    from rigtool.batch import cluster
    if mode == "dask-defaults":
        cluster.WORKER_CONFIG = {}            # this child only: Dask's own worker settings
    with cluster.dask_client(scheduler=None, workers=2) as client:
        first = [a for a, w in client.scheduler_info()["workers"].items()
                 if str(w["name"]) == "0"]
        return [client.submit(_one_run, manifest, str(out / f"run{i}"), workers=first,
                              pure=False).result() for i in range(repeat)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.manifest, args.child, args.repeat)))
        return
    root = Path(__file__).resolve().parents[1]
    for mode in args.modes.split(","):
        if mode not in MODES:
            sys.exit(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        env = dict(os.environ, RIGTOOL_ENGINE_THREADS="1", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("MALLOC_TRIM_THRESHOLD_", None)
        if mode == "plain-malloc-trim":
            env["MALLOC_TRIM_THRESHOLD_"] = "65536"
        r = subprocess.run([sys.executable, __file__, args.manifest, "--child", mode,
                            "--repeat", str(args.repeat)], env=env, capture_output=True,
                           text=True)
        if r.returncode:
            sys.exit(r.stderr[-3000:])
        runs = json.loads(r.stdout.splitlines()[-1])
        print(f"{mode:<18} wall / CPU s per run: "
              + ", ".join(f"{w:.1f} / {c:.1f}" for w, c in runs), flush=True)


if __name__ == "__main__":
    main()
