"""The install's size and time: a fresh virtual environment, rigtool's core installed into it
from this checkout, then each extra on top; prints seconds and MB for each step and the
largest installed packages.

    python3 benchmarks/install.py [--venv DIR] [--extras camera batch robot] [--keep]

Needs the package index (or a local mirror pip is configured for). The times include
downloading; the sizes are the environment's on disk (``du``), pip and setuptools included.
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=Path, default=None, help="where (default: a temporary folder)")
    ap.add_argument("--extras", nargs="*", default=["camera", "batch", "robot"])
    ap.add_argument("--keep", action="store_true", help="keep the environment")
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
    for extra in args.extras:
        seconds = pip_install(venv, f"{ROOT}[{extra}]")
        now = size_mb(venv)
        print(f"+[{extra}]: {seconds:.0f} s, +{now - total:.0f} MB, {now:.0f} MB in all")
        total = now
    if not args.keep and args.venv is None:
        shutil.rmtree(venv.parent)


if __name__ == "__main__":
    main()
