"""Measure reading a 10-minute 120 Hz Vicon CSV with 40 markers (72000 rows x 122 columns).

Run: python3 tests/data/bench_vicon_read.py [DIR]   (writes the file in DIR, default a temp dir)
Prints the write time, the file size and the best of three read times.
"""

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rigtool.mocap import vicon
from rigtool.mocap.markerdata import MarkerData


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    rng = np.random.default_rng(0)
    t_n, n = 72000, 40
    xyz = rng.normal(0.0, 0.5, (t_n, n, 3))
    xyz[rng.random((t_n, n)) < 0.01] = np.nan
    data = MarkerData(time_s=np.arange(t_n) / 120.0, names=tuple(f"rig:M{i}" for i in range(n)),
                      xyz_m=xyz, rate_hz=120.0, first_frame=1)
    path = out / "big_vicon.csv"
    t0 = time.perf_counter()
    vicon.write(data, path)
    print(f"write {time.perf_counter() - t0:.2f} s, {path.stat().st_size / 1e6:.1f} MB")
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        back = vicon.read(path)
        best = min(best, time.perf_counter() - t0)
    err = np.nanmax(np.abs(back.xyz_m - xyz))
    print(f"read best of 3: {best:.3f} s; max error {err:.2e} m; "
          f"same gaps: {np.array_equal(np.isnan(back.xyz_m), np.isnan(xyz))}")


if __name__ == "__main__":
    main()
