"""Speed and memory of a whole robot session: ``rigtool run`` on a simulated Franka Panda
study (nine locked postures of 20 s and a 14 s capture of the joints driven along the
advised motion, 120 Hz, 0.1 mm marker noise; tools/make_robot_study.py), as a user runs it
(a new process).

The first run starts from empty JAX and numba caches (``RIGTOOL_JAX_CACHE`` and
``NUMBA_CACHE_DIR`` pointed at a new folder): a new machine's, compiling. The next runs are
warm. Memory is the peak of the SUM of the resident sets of the run's process tree (the
posture fits run in worker processes), read from /proc every 50 ms.

    python3 benchmarks/robot_speed.py [--warm 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tree_rss_kib(pid: int) -> int:
    """Resident set of ``pid`` and its descendants, KiB (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ppid = int(fields[1])
            with open(f"/proc/{entry}/status") as fh:
                kib = next((int(line.split()[1]) for line in fh if line.startswith("VmRSS")),
                           0)
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = kib
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total


def timed_run(manifest: Path, out: Path, caches: Path | None) -> tuple[float, float]:
    """Wall seconds and the process tree's peak resident set (GiB) of one ``rigtool run``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if caches is not None:
        env["RIGTOOL_JAX_CACHE"] = str(caches / "jax")
        env["NUMBA_CACHE_DIR"] = str(caches / "numba")
    peak = [0]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rigtool.cli", "run", str(manifest), "-o",
                             str(out)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_kib(proc.pid))
            time.sleep(0.05)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    watcher.join()
    if proc.returncode != 0:
        raise SystemExit(f"rigtool run exited {proc.returncode}: {err.decode()[-2000:]}")
    return wall, peak[0] / 2 ** 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm", type=int, default=3, help="warm runs after the first")
    ap.add_argument("--keep", type=Path, default=None, help="keep the study here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "study"
        manifest = folder / "captures" / "panda" / "session.toml"
        if not manifest.exists():
            subprocess.run([sys.executable, str(ROOT / "tools" / "make_robot_study.py"),
                            str(folder), "--motion", "14"], check=True,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)),
                           stdout=subprocess.DEVNULL)
        wall, mem = timed_run(manifest, Path(tmp) / "cold", Path(tmp) / "caches")
        print(f"first run (empty compilation caches): {wall:.0f} s, peak {mem:.2f} GiB")
        walls, mems = [], []
        for i in range(args.warm):
            w, m = timed_run(manifest, Path(tmp) / f"warm{i}", None)
            walls.append(w)
            mems.append(m)
        print(f"warm runs ({args.warm}): median {statistics.median(walls):.0f} s "
              f"(min {min(walls):.0f}, max {max(walls):.0f}), peak {max(mems):.2f} GiB "
              f"({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
