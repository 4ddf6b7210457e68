"""Wall time of the README's demo: ``rigtool calibrate`` then ``rigtool run`` on copies of
the bundled calibration/ and captures/ folders, as a user runs them (a new process each).

    python3 benchmarks/demo_time.py --rounds 6
    python3 benchmarks/demo_time.py --rounds 6 --old /path/to/an/older/checkout
    python3 benchmarks/demo_time.py --rounds 2 --cold [--old ...]

With ``--old``, each round runs the older checkout (``PYTHONPATH`` set to it) and then this
one, back to back, so both see the same load on the machine; the figures to compare are the
medians. One untimed round first warms the caches (JAX's and numba's compiled code; a
checkout whose engine sources differ exports its own traces then). With ``--cold`` there is
no warm-up and every round starts from empty JAX and numba caches (``RIGTOOL_JAX_CACHE`` and
``NUMBA_CACHE_DIR`` pointed at new folders), as on a new machine. This checkout is imported
from its own folder (``PYTHONPATH``), so the script times the code beside it. Python writes
its bytecode caches as it does by default (``PYTHONDONTWRITEBYTECODE`` is dropped for the
commands), so after the warm-up round no command compiles rigtool's sources.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (("calibrate", ["calibrate", "calibration/paper-rig.toml", "--force"]),
            ("run", ["run", "captures/two-link/session.toml"]))


def _timed(args: list[str], cwd: Path, pythonpath: str, caches: Path | None = None) -> float:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    # as on a user's machine, Python keeps the bytecode it compiles (__pycache__); a sandbox
    # that sets PYTHONDONTWRITEBYTECODE would make every command compile rigtool's ~200
    # modules again (~0.3 s per process, and the run starts three)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if caches is not None:
        env["RIGTOOL_JAX_CACHE"] = str(caches / "jax")
        env["NUMBA_CACHE_DIR"] = str(caches / "numba")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rigtool.cli", *args], cwd=cwd, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--old", type=Path, help="an older checkout to time beside this one")
    ap.add_argument("--cold", action="store_true",
                    help="empty compilation caches every round (a new machine's first run)")
    args = ap.parse_args()
    variants = ([("old", str(args.old.resolve()))] if args.old else []) + [("new", str(ROOT))]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for folder in ("calibration", "captures"):
            shutil.copytree(ROOT / folder, work / folder,
                            ignore=shutil.ignore_patterns("results", "*.calibrated.toml"))
        for _, path in ([] if args.cold else variants):   # warm-up, untimed
            for _, cmd in COMMANDS:
                _timed(cmd, work, path)
        times = {(v, c): [] for v, _ in variants for c, _ in COMMANDS}
        for r in range(args.rounds):
            row = []
            for v, path in variants:
                caches = Path(tempfile.mkdtemp(dir=tmp, prefix=f"caches-{v}-")) if args.cold else None
                for c, cmd in COMMANDS:
                    times[(v, c)].append(_timed(cmd, work, path, caches))
                    row.append(f"{v} {c} {times[(v, c)][-1]:5.2f}")
            print(f"round {r + 1}: " + ", ".join(row), flush=True)
    for v, _ in variants:
        med = {c: statistics.median(times[(v, c)]) for c, _ in COMMANDS}
        print(f"{v}: median calibrate {med['calibrate']:.2f} s + run {med['run']:.2f} s = "
              f"{med['calibrate'] + med['run']:.2f} s "
              f"(fastest round {min(a + b for a, b in zip(times[(v, 'calibrate')], times[(v, 'run')])):.2f} s)")


if __name__ == "__main__":
    main()
