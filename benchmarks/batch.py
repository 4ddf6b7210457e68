"""``rigtool batch`` on a local Dask cluster: scaling, identity, resume.

A study of N sessions (default 8) is simulated: the demo's two-link object on the paper-002
rig, short captures (``--duration`` s at 100 Hz, three postures and a swing), each session
with its own noise seed; the rig file holds the simulator's true calibration. Then:

1. **Single sessions**: every session run alone, one after the other, in one child process
   (``run_to_directory`` as ``rigtool run`` calls it, one process per session as inside a
   batch worker, BLAS on one thread as Dask's nanny sets it; the pipeline imported before the
   clock starts). Their sum is the serial work.
2. **Batch**: ``rigtool batch`` (a subprocess, the whole command: cluster start, worker
   start-up, summary) on ``--workers`` local workers. Goal: wall time within 1.15x of
   (sum of single-session times) / workers.
3. **Identity**: each batch report.json against the single run's, every number compared
   (timing fields left out).
4. **Kill midway, rerun**: a fresh batch is killed (SIGKILL to its whole process group:
   the command, the scheduler, the nannies and workers) once ``--kill-after`` sessions are
   published; the rerun must run exactly the sessions without results and skip the others.

Wall times on a shared machine measure the neighbours too: the load average is printed
with the figures, and so is the CPU time of each step (``getrusage`` of the child processes,
the Dask scheduler, nannies and workers included): batch CPU / serial CPU is what the wall
ratio would be on a quiet machine with the sessions perfectly balanced over the workers, and
batch CPU - serial CPU is the batch's own cost (cluster and worker start-up, each worker's
first JAX compilation or cache load, the summary). Figures are printed and written to
``benchmarks/results/batch.json``.

The default session is the bundled demo's size (15 s captures at 100 Hz); real sessions
(minutes of CPU each) amortise the batch's fixed cost further.

With ``--pinned`` the single sessions are timed a second time pinned to one CPU: alone, a
session uses more than one core (XLA integrates the next chunk while NumPy accumulates the
last), which workers that share the cores cannot, so (sum of single times)/workers is below
what any batch can reach; the pinned sum is the work a batch has to share out.

    python3 benchmarks/batch.py [--sessions 8] [--workers 2] [--duration 15]
                                [--method output-error|equation-error] [--kill-after 3]
                                [--pinned]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMING_KEYS = {"time_s", "elapsed_s"}
SCENARIO = """
[scenario]
name = "batch-benchmark"
extends = "{demo}"

[capture]
rate_hz = 100.0
duration_s = {duration}

[[calibration_captures]]
name = "empty"
load = []

[relative_motion]
name = "swing"
posture = "posture1"
release = {{ link1 = [0.03, 0.26, 0.0] }}
joint_damping = 0.05
duration_s = {duration}
window = [0.5, {window_end}]
"""


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"                     # as Dask's nanny sets them for its workers
    env["RIGTOOL_ENGINE_THREADS"] = "1"    # as rigtool.batch.cluster sets it for its workers
    return env


def _children_cpu_s() -> float:
    """CPU seconds of every finished (waited-for) descendant process so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _rigtool(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rigtool.cli", *args], env=_env(),
                          capture_output=True, text=True, **kw)


def make_study(root: Path, n: int, duration_s: float) -> list[Path]:
    """N sessions s01..sNN of the short scenario, seeds 1..N, one shared calibrated rig."""
    scenario = root / "scenario.toml"
    scenario.write_text(SCENARIO.format(demo=ROOT / "scenarios" / "demo.toml",
                                        duration=duration_s, window_end=duration_s - 0.5))
    manifests = []
    for i in range(1, n + 1):
        sim = root / f"sim{i}"
        r = _rigtool("simulate", str(scenario), "-o", str(sim), "--seed", str(i))
        assert r.returncode == 0, r.stderr
        if i == 1:
            shutil.copytree(sim / "calibration", root / "calibration")
        dst = root / "captures" / f"s{i:02d}"
        shutil.copytree(sim / "captures" / "two-link", dst)
        shutil.rmtree(sim)
        manifests.append(dst / "session.toml")
    cal = root / "calibration"
    code = ("from rigtool.sim.true_calibration import write_true_calibration as w; "
            f"w({str(cal / 'paper-rig.toml')!r}, {str(cal / 'paper-rig.truth.json')!r}, "
            f"{str(cal / 'paper-rig.calibrated.toml')!r})")
    subprocess.run([sys.executable, "-c", code], env=_env(), check=True)
    return manifests


def child_serial(manifests: list[str], out: str, method: str, pin: bool = False) -> None:
    """(child) Every session alone, one after the other; prints {manifest: seconds}. ``pin``:
    on one CPU (``sched_setaffinity``), as a worker has it when the workers fill the cores."""
    if pin:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    from rigtool.pipeline import session as _warm  # noqa: F401 - imports before the clock
    from rigtool.report import writer as _w  # noqa: F401
    from rigtool.pipeline.run_job import RunOptions, run_to_directory

    times = {}
    for m in manifests:
        t0 = time.perf_counter()
        run_to_directory(Path(m), Path(out) / Path(m).parent.name,
                         options=RunOptions(method=method), workers=1)
        times[m] = time.perf_counter() - t0
        print(f"  single {Path(m).parent.name}: {times[m]:.1f} s", file=sys.stderr, flush=True)
    print(json.dumps(times))


def _diffs(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in set(a) | set(b) if k not in TIMING_KEYS
                for d in _diffs(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diffs(x, y, f"{path}[{i}]")]
    if a == b:
        return []
    rel = (abs(a - b) / max(abs(a), abs(b))
           if isinstance(a, float) and isinstance(b, float) else float("inf"))
    return [(path, a, b, rel)]


def _batch(manifests, results, args, extra=()) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    r = _rigtool("batch", *map(str, manifests), "-o", str(results), "--workers",
                 str(args.workers), "--method", args.method, *extra)
    return time.perf_counter() - t0, r


def _worker_run_times(results: Path, keys: list[str]) -> dict[str, float]:
    """Each session's run time inside its batch worker (batch.json)."""
    return {k: json.loads((results / k / "batch.json").read_text())["run_s"] for k in keys}


def kill_midway(manifests, results: Path, args) -> dict:
    """Start a batch, SIGKILL its process group after ``kill_after`` published sessions,
    rerun; which sessions did the rerun run?"""
    cmd = [sys.executable, "-m", "rigtool.cli", "batch", *map(str, manifests), "-o",
           str(results), "--workers", str(args.workers), "--method", args.method]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    keys = [Path(m).parent.name for m in manifests]
    t0 = time.perf_counter()
    while proc.poll() is None:
        done = [k for k in keys if (results / k / "batch.json").is_file()]
        if len(done) >= args.kill_after:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = time.perf_counter() - t0
    time.sleep(1.0)
    finished = sorted(k for k in keys if (results / k / "batch.json").is_file())
    leftovers = sorted(p.name for p in results.glob(".*") if ".tmp-" in p.name)
    t1 = time.perf_counter()
    rerun = _batch(manifests, results, args)[1]
    rerun_s = time.perf_counter() - t1
    import pandas as pd
    table = pd.read_csv(results / "summary.csv").drop_duplicates("session")
    ran = sorted(table[table.status == "done"].session)
    skipped = sorted(table[table.status == "skipped"].session)
    return {"killed_after_s": round(killed_at, 1), "finished_before_kill": finished,
            "temporary_folders_left": leftovers, "rerun_exit_status": rerun.returncode,
            "rerun_s": round(rerun_s, 1), "rerun_ran": ran, "rerun_skipped": skipped,
            "rerun_line": rerun.stdout.splitlines()[0] if rerun.stdout else rerun.stderr,
            "only_what_was_left": ran == sorted(set(keys) - set(finished))
            and skipped == finished}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--duration", type=float, default=15.0, help="capture length, s")
    ap.add_argument("--method", default="output-error",
                    choices=("output-error", "equation-error"))
    ap.add_argument("--kill-after", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the temporary study folder")
    ap.add_argument("--child-serial", nargs="+", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-pin", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--pinned", action="store_true",
                    help="also time the single sessions pinned to one CPU: a session alone "
                         "uses more than one core (XLA computes the next chunk while NumPy "
                         "accumulates the last), which a worker sharing the cores cannot")
    args = ap.parse_args()
    if args.child_serial:
        child_serial(args.child_serial, args.child_out, args.method, args.child_pin)
        return

    root = Path(tempfile.mkdtemp(prefix="rigtool-batch-bench-"))
    print(f"study in {root}: {args.sessions} sessions, {args.duration:g} s captures, "
          f"{args.method}, {args.workers} workers; load average {os.getloadavg()}")
    manifests = make_study(root, args.sessions, args.duration)
    load_before = os.getloadavg()

    cpu0 = _children_cpu_s()
    single = subprocess.run([sys.executable, __file__, "--method", args.method,
                             "--child-serial", *map(str, manifests), "--child-out",
                             str(root / "single")], env=_env(), capture_output=True,
                            text=True)
    assert single.returncode == 0, single.stderr
    times = json.loads(single.stdout.splitlines()[-1])
    serial_s = sum(times.values())
    cpu_single = _children_cpu_s()
    pinned = None
    if args.pinned:
        one = subprocess.run([sys.executable, __file__, "--method", args.method,
                              "--child-serial", *map(str, manifests), "--child-out",
                              str(root / "single-pinned"), "--child-pin"], env=_env(),
                             capture_output=True, text=True)
        assert one.returncode == 0, one.stderr
        pinned = json.loads(one.stdout.splitlines()[-1])
    cpu1 = _children_cpu_s()
    batch_s, r = _batch(manifests, root / "batch", args)
    assert r.returncode == 0, r.stdout + r.stderr
    cpu2 = _children_cpu_s()
    serial_cpu, batch_cpu = cpu_single - cpu0, cpu2 - cpu1
    in_worker = _worker_run_times(root / "batch", [Path(m).parent.name for m in manifests])
    ideal_s = serial_s / args.workers
    ratio = batch_s / ideal_s

    worst, exact = 0.0, 0
    for m in manifests:
        key = Path(m).parent.name
        a = json.loads((root / "batch" / key / "report.json").read_text())
        b = json.loads((root / "single" / key / "report.json").read_text())
        d = _diffs(a, b)
        exact += not d
        worst = max([worst] + [x[3] for x in d])

    kill = kill_midway(manifests, root / "killed", args)
    load = os.getloadavg()
    figures = {
        "sessions": args.sessions, "workers": args.workers, "method": args.method,
        "capture_s": args.duration, "single_session_s": {Path(k).parent.name: round(v, 2)
                                                         for k, v in times.items()},
        "sum_single_s": round(serial_s, 1), "ideal_s": round(ideal_s, 1),
        "batch_wall_s": round(batch_s, 1), "ratio_to_ideal": round(ratio, 3),
        "goal_ratio": 1.15, "serial_cpu_s": round(serial_cpu, 1),
        "batch_cpu_s": round(batch_cpu, 1), "cpu_ratio": round(batch_cpu / serial_cpu, 3),
        "session_s_in_batch_worker": {k: round(v, 2) for k, v in in_worker.items()},
        "load_average_before": load_before, "reports_identical": exact,
        "reports_worst_relative_difference": worst, "kill_midway": kill,
        "load_average_after": load, "cpu_count": os.cpu_count()}
    print(f"single sessions (serial, one process): sum {serial_s:.1f} s "
          f"({', '.join(f'{v:.1f}' for v in times.values())})")
    print(f"batch on {args.workers} workers: {batch_s:.1f} s wall; ideal (sum/{args.workers}) "
          f"{ideal_s:.1f} s; ratio {ratio:.3f} (goal <= 1.15: "
          f"{'met' if ratio <= 1.15 else 'NOT met'})")
    if pinned:
        pinned_s = sum(pinned.values())
        figures.update(single_session_pinned_s={Path(k).parent.name: round(v, 2)
                                                 for k, v in pinned.items()},
                       sum_single_pinned_s=round(pinned_s, 1),
                       ratio_to_pinned_ideal=round(batch_s / (pinned_s / args.workers), 3))
        print(f"single sessions pinned to one CPU: sum {pinned_s:.1f} s; batch / "
              f"(sum/{args.workers}) = {batch_s / (pinned_s / args.workers):.3f}")
    print(f"CPU: serial {serial_cpu:.1f} s, batch {batch_cpu:.1f} s (ratio "
          f"{batch_cpu / serial_cpu:.3f}: the wall ratio on a quiet machine with the sessions "
          f"balanced; the batch's own cost {batch_cpu - serial_cpu:.1f} s CPU)")
    print(f"sessions inside the batch workers: sum {sum(in_worker.values()):.1f} s "
          f"({', '.join(f'{v:.1f}' for v in in_worker.values())})")
    print(f"reports: {exact}/{len(manifests)} identical to the single run in every number; "
          f"largest relative difference elsewhere {worst:.2g}")
    print(f"kill midway: killed after {kill['killed_after_s']} s with "
          f"{len(kill['finished_before_kill'])} sessions published "
          f"({', '.join(kill['finished_before_kill'])}), temporary folders left "
          f"{kill['temporary_folders_left'] or 'none'}; rerun ({kill['rerun_s']} s): "
          f"{kill['rerun_line']}; ran {kill['rerun_ran']}; only what was left: "
          f"{kill['only_what_was_left']}")
    print(f"load average after: {load}")
    out = ROOT / "benchmarks" / "results" / "batch.json"
    out.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"figures written to {out}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
