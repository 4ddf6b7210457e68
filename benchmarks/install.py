"""The install's size and time: a fresh virtual environment, rigtool's core installed into it
from this checkout, then each extra on top; prints seconds and MB for each step and the
largest installed packages. Then the bundled demo's first calibrate and run in that
environment (nothing compiled yet: an empty JAX cache, numba's in the new site-packages)
against the same commands run again (warm).

    python3 benchmarks/install.py [--venv DIR] [--extras camera batch robot] [--keep]
                                  [--no-demo]

Needs the package index (or a local mirror pip is configured for). The times include
downloading; the sizes are the environment's on disk (``du``), pip and setuptools included.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def size_mb(path: Path) -> float:
    """Disk use of a directory tree, MB (1e6 bytes), as ``du`` counts it."""
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) * 1024 / 1e6


def largest(site: Path, n: int = 8) -> list[tuple[str, float]]:
    """The ``n`` largest top-level entries of a site-packages folder, MB."""
    sizes = [(p.name, size_mb(p)) for p in site.iterdir()]
    return sorted(sizes, key=lambda kv: -kv[1])[:n]


def pip_install(venv: Path, target: str) -> float:
    """Seconds to ``pip install target`` into ``venv``."""
    start = time.perf_counter()
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", target], check=True)
    return time.perf_counter() - start


def demo_seconds(venv: Path, work: Path, env: dict, out: str) -> tuple[float, float]:
    """Seconds of ``rigtool calibrate`` and ``rigtool run`` (into ``out``) on the bundled
    demo in ``work`` (a copy of its inputs), with the environment's own rigtool."""
    exe = str(venv / "bin" / "rigtool")
    times = []
    for cmd in ([exe, "calibrate", "calibration/paper-rig.toml", "--force"],
                [exe, "run", "captures/two-link/session.toml", "-o", out]):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=work, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times[0], times[1]


def first_and_warm(venv: Path) -> None:
    """The demo's first calibrate and run (nothing compiled) against the same again."""
    work = Path(tempfile.mkdtemp(prefix="rigtool-demo-"))
    shutil.copytree(ROOT / "calibration", work / "calibration")
    shutil.copytree(ROOT / "captures" / "two-link", work / "captures" / "two-link",
                    ignore=shutil.ignore_patterns("results"))
    env = {**os.environ, "RIGTOOL_JAX_CACHE": str(work / "jax-cache")}
    env.pop("PYTHONPATH", None)
    first = demo_seconds(venv, work, env, "results-first")
    warm = demo_seconds(venv, work, env, "results-warm")
    print(f"demo, first: calibrate {first[0]:.0f} s + run {first[1]:.0f} s; warm: "
          f"{warm[0]:.0f} s + {warm[1]:.0f} s; first/warm {sum(first) / sum(warm):.2f}x")
    shutil.rmtree(work)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=Path, default=None, help="where (default: a temporary folder)")
    ap.add_argument("--extras", nargs="*", default=["camera", "batch", "robot"])
    ap.add_argument("--keep", action="store_true", help="keep the environment")
    ap.add_argument("--no-demo", action="store_true",
                    help="skip the demo's first and warm runs")
    args = ap.parse_args()
    venv = args.venv or Path(tempfile.mkdtemp(prefix="rigtool-venv-")) / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    base = size_mb(venv)
    print(f"empty venv: {base:.0f} MB")
    seconds = pip_install(venv, str(ROOT))
    total = size_mb(venv)
    print(f"core: {seconds:.0f} s, {total:.0f} MB ({total - base:.0f} MB over the empty venv)")
    site = next((venv / "lib").glob("python3*/site-packages"))
    for name, mb in largest(site):
        print(f"  {name:<40} {mb:6.0f} MB")
    if not args.no_demo:
        first_and_warm(venv)
    for extra in args.extras:
        seconds = pip_install(venv, f"{ROOT}[{extra}]")
        now = size_mb(venv)
        print(f"+[{extra}]: {seconds:.0f} s, +{now - total:.0f} MB, {now:.0f} MB in all")
        total = now
    if not args.keep and args.venv is None:
        shutil.rmtree(venv.parent)


if __name__ == "__main__":
    main()
