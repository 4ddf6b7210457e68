"""What two sessions side by side cost on this machine, without Dask (the yardstick of
benchmarks/batch.py).

``rigtool batch`` on N local workers cannot beat N copies of ``rigtool run`` started by hand
on N separate CPUs. This measures that floor: one session (a demo-sized two-link session,
output error) run in one process pinned to one CPU, alone; then the same in two processes
at once, pinned to two different CPUs. Each process runs the session ``--repeat`` times and
the first run (loading the compiled engine from the disk cache) is reported apart. The ratio
"side by side / alone" is the machine's own concurrency factor (shared caches, memory
bandwidth, the host's scheduling of the virtual CPUs), which a batch's wall time inherits.

    python3 benchmarks/concurrency.py [--session captures/two-link/session.toml] [--repeat 2]

Needs Linux (``sched_setaffinity``) and two CPUs; the session's rig file must exist (run
``rigtool calibrate calibration/paper-rig.toml`` first for the bundled demo).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(session: str, cpu: int, repeat: int, out: str) -> None:
    """(child) Run ``session`` ``repeat`` times pinned to ``cpu``; print the times as JSON."""
    os.sched_setaffinity(0, {cpu})
    os.environ["RIGTOOL_ENGINE_THREADS"] = "1"
    from rigtool.pipeline.run_job import RunOptions, run_to_directory
    times = []
    for k in range(repeat):
        t0 = time.perf_counter()
        run_to_directory(Path(session), Path(out) / f"cpu{cpu}-{k}",
                         options=RunOptions(method="output-error"), workers=1)
        times.append(time.perf_counter() - t0)
    print(json.dumps(times), flush=True)


def _start(session: str, cpu: int, repeat: int, out: str) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, __file__, "--child", session, str(cpu),
                             str(repeat), out], stdout=subprocess.PIPE, text=True, env=env)


def _times(proc: subprocess.Popen) -> list[float]:
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"a session process failed (exit {proc.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--session", default=str(ROOT / "captures" / "two-link" / "session.toml"))
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("needs two CPUs")
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="rigtool-concurrency-") as out:
        alone = _times(_start(args.session, cpus[0], args.repeat, out))
        pair = [_start(args.session, c, args.repeat, out) for c in cpus[:2]]
        side = [_times(p) for p in pair]
    def warm(t: list[float]) -> list[float]:
        return t[1:] if len(t) > 1 else t

    print(f"alone on CPU {cpus[0]}: " + ", ".join(f"{t:.1f}" for t in alone) + " s "
          "(the first loads the compiled engine)")
    for c, t in zip(cpus[:2], side):
        print(f"side by side, CPU {c}: " + ", ".join(f"{x:.1f}" for x in t) + " s")
    mean_alone = sum(warm(alone)) / len(warm(alone))
    mean_side = sum(sum(warm(t)) for t in side) / sum(len(warm(t)) for t in side)
    best_side = sum(min(warm(t)) for t in side) / len(side)
    print(f"concurrency factor, warm runs: mean {mean_side / mean_alone:.2f} "
          f"(side by side {mean_side:.1f} s, alone {mean_alone:.1f} s), best "
          f"{best_side / min(warm(alone)):.2f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
