"""Reading a 10-minute capture: 72 000 frames of 40 markers in every file layout.

For each layout the same positions (uniform in +-1.5 m, 1 % of samples missing) are written,
read with ``read_capture`` three times, and the best CPU time (``time.process_time``, one BLAS
thread) is printed with the largest position error against the written values:

- Vicon Nexus CSV, the Trajectories section alone, and behind a Model Outputs section with
  ``Magnitude( X )`` columns (read and skipped);
- C3D float written by rigtool (Intel, through ezc3d), and C3D files from the test-side
  writer (``tests/_c3d_builder.py``): DEC int16, SGI/MIPS big-endian float, the latter with
  little-endian record lengths; past 65535 frames all announce POINT:FRAMES 65535 and the
  range in TRIAL:ACTUAL_START/END_FIELD, as rigtool's writer does.

ezc3d and the ``c3d`` package read the Intel file too, for comparison (their time to points in
memory; not used by rigtool's reader).

    python3 benchmarks/mocap_read.py [--frames 72000] [--markers 40]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the test-side C3D writer

from _c3d_builder import DEC, MIPS, build_c3d  # noqa: E402

from rigtool.mocap import MarkerData, read_capture, write_capture  # noqa: E402


def _best_cpu_s(fn, repeats: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def _model_outputs_section(n_frames: int) -> str:
    rows = "\n".join(f"{k + 1},0,1.0,2.0,3.0,3.7,0.5" for k in range(n_frames))
    return ("Model Outputs\n100\n,,Sub:LGroundReactionForce,,,,Sub:LHipPower\n"
            "Frame,Sub Frame,X,Y,Z,Magnitude( X ),Magnitude( X )\n,,N,N,N,N,W\n"
            f"{rows}\n\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=72000)
    parser.add_argument("--markers", type=int, default=40)
    args = parser.parse_args()
    n, m = args.frames, args.markers
    rng = np.random.default_rng(0)
    xyz_m = rng.uniform(-1.5, 1.5, size=(n, m, 3))
    xyz_m[rng.random((n, m)) < 0.01] = np.nan
    names = tuple(f"Sub:M{k + 1}" for k in range(m))
    data = MarkerData(time_s=np.arange(n) / 120.0, names=names, xyz_m=xyz_m, rate_hz=120.0)
    xyz_mm = xyz_m * 1e3
    labels = list(names)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = {}
        files["Vicon CSV, Trajectories only"] = tmp / "v.csv"
        write_capture(data, files["Vicon CSV, Trajectories only"], format="vicon-csv")
        five = tmp / "v5.csv"
        five.write_bytes(_model_outputs_section(n).encode()
                         + files["Vicon CSV, Trajectories only"].read_bytes())
        files["Vicon CSV, Model Outputs + Trajectories"] = five
        files["C3D Intel float (rigtool writer)"] = tmp / "i.c3d"
        write_capture(data, files["C3D Intel float (rigtool writer)"], format="c3d")
        # Past 65535 frames: POINT:FRAMES 65535 and the frame range in TRIAL (C3D manual).
        long = dict(frames_param=65535, header_last=65535, extra={"TRIAL": {
            "ACTUAL_START_FIELD": np.array([1, 0]),
            "ACTUAL_END_FIELD": np.array([n & 0xFFFF, n >> 16])}}) if n > 65535 else {}
        builds = {"C3D DEC int16 (scale 0.1 mm)": dict(proc=DEC, scale=0.1, **long),
                  "C3D SGI/MIPS big-endian float": dict(proc=MIPS, **long),
                  "C3D SGI/MIPS, little-endian record lengths": dict(
                      proc=MIPS, swapped_lengths=True, **long)}
        for title, kw in builds.items():
            files[title] = tmp / f"{len(files)}.c3d"
            files[title].write_bytes(build_c3d(xyz_mm, labels, rate=120.0, **kw))

        print(f"{n} frames x {m} markers; best of 3, CPU seconds\n")
        print("| file | MiB | read s | frames | max error mm |")
        print("|---|---|---|---|---|")
        for title, path in files.items():
            cpu, d = _best_cpu_s(lambda p=path: read_capture(p))
            err = np.nanmax(np.abs(d.xyz_m - xyz_m)) * 1e3
            print(f"| {title} | {path.stat().st_size / 2**20:.1f} | {cpu:.2f} | {d.n_frames} | "
                  f"{err:.2g} |")

        intel = str(files["C3D Intel float (rigtool writer)"])
        import c3d
        import ezc3d

        def c3dpkg():
            with open(intel, "rb") as fh, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return [p for _, p, _ in c3d.Reader(fh).read_frames(copy=True)]

        print("\nSame Intel file, other readers (points in memory):\n")
        print("| reader | s |")
        print("|---|---|")
        print(f"| ezc3d {ezc3d.__version__ if hasattr(ezc3d, '__version__') else ''} | "
              f"{_best_cpu_s(lambda: ezc3d.c3d(intel)['data']['points'], 1)[0]:.2f} |")
        print(f"| c3d package | {_best_cpu_s(c3dpkg, 1)[0]:.2f} |")


if __name__ == "__main__":
    main()
