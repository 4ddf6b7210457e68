"""Front-end benchmark: read a 10-minute capture, pose 4 bodies, filter and differentiate.

Builds a 10-minute, 120 Hz capture of 40 markers on 4 rigid bodies (synthetic small
oscillations + 0.1 mm noise), writes it as a Vicon Nexus CSV (plain CSV if the Vicon writer
is unavailable), then times reading it back, the SVD pose of the 4 bodies and the zero-phase
filter + derivatives. Prints wall time per stage, total and peak memory.

Run: ``python3 benchmarks/frontend.py [--minutes 10] [--keep DIR]``.
Goal: under 3 s wall and under 1 GiB.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.config import FilterSettings
from rigtool.kinematics import body_trajectory, motion_from_pose
from rigtool.mocap import MarkerData, read_capture, write_capture

RATE_HZ = 120.0
N_BODIES = 4
MARKERS_PER_BODY = 10
SIGMA_M = 1e-4


def synth_capture(minutes: float, seed: int = 0) -> tuple[MarkerData, list[dict]]:
    """Marker data of oscillating rigid bodies and each body's marker coordinates."""
    rng = np.random.default_rng(seed)
    n = int(minutes * 60 * RATE_HZ)
    t = np.arange(n) / RATE_HZ
    names, blocks, bodies = [], [], []
    for b in range(N_BODIES):
        mk = rng.uniform(-0.2, 0.2, (MARKERS_PER_BODY, 3))
        f = rng.uniform(0.5, 2.5, 6)
        amp_rot = rng.uniform(0.005, 0.03, 3)
        amp_pos = rng.uniform(0.002, 0.02, 3)
        rotvec = amp_rot * np.sin(2 * np.pi * f[:3] * t[:, None])
        pos = np.array([0.5 * b, 0.0, 1.0]) + amp_pos * np.sin(2 * np.pi * f[3:] * t[:, None])
        rot = Rotation.from_rotvec(rotvec).as_matrix()
        xyz = np.einsum("tij,kj->tki", rot, mk) + pos[:, None, :]
        blocks.append(xyz)
        mnames = [f"B{b}:M{k}" for k in range(MARKERS_PER_BODY)]
        names += mnames
        bodies.append(dict(zip(mnames, mk)))
    xyz = np.concatenate(blocks, axis=1) + rng.normal(0.0, SIGMA_M, (n, len(names), 3))
    # a few dropouts, as a real capture has
    for _ in range(200):
        i, k = rng.integers(0, n - 20), rng.integers(0, len(names))
        xyz[i:i + rng.integers(1, 10), k] = np.nan
    data = MarkerData(time_s=t, names=tuple(names), xyz_m=xyz, rate_hz=RATE_HZ,
                      format="vicon-csv")
    return data, bodies


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--keep", type=Path, default=None, help="directory for the capture file")
    ap.add_argument("--write-only", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.write_only is not None:  # child process: synthesise and write, print the format
        data, _ = synth_capture(args.minutes)
        try:
            write_capture(data, args.write_only, format="vicon-csv")
            print("vicon-csv")
        except Exception as exc:  # the Vicon writer may be missing: fall back, say so
            print(f"vicon-csv writer unavailable ({type(exc).__name__}: {exc}); "
                  "writing plain CSV", file=sys.stderr)
            write_capture(data, args.write_only, format="plain-csv")
            print("plain-csv")
        return 0

    t0 = time.perf_counter()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="rigtool-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "capture.csv"
    # Synthesis and writing run in a child process, so that this process's peak memory
    # (ru_maxrss) measures only the timed stages.
    child = subprocess.run([sys.executable, __file__, "--minutes", str(args.minutes),
                            "--write-only", str(path)], check=True, capture_output=True,
                           text=True)
    fmt = child.stdout.strip().splitlines()[-1]
    sys.stderr.write(child.stderr)
    _, bodies = synth_capture(1.0 / 60.0)  # same seed: same marker layouts, 1 s of data
    t_setup = time.perf_counter() - t0
    size_mb = path.stat().st_size / 1e6

    stages = {}

    def timed(name, fn):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        stages[name] = (time.perf_counter() - w, time.process_time() - c)
        return out

    cap = timed("read", lambda: read_capture(path))
    trajs = timed("pose (4 bodies)", lambda: [body_trajectory(cap, b) for b in bodies])
    motions = timed("filter + motion", lambda: [
        motion_from_pose(tr, FilterSettings(), rate_hz=cap.rate_hz) for tr in trajs])

    total = sum(w for w, _ in stages.values())
    total_cpu = sum(c for _, c in stages.values())
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(f"capture: {cap.n_frames} frames x {len(cap.names)} markers at {cap.rate_hz:g} Hz, "
          f"format {fmt} ({size_mb:.0f} MB, setup {t_setup:.1f} s, not timed)")
    print(f"  {'stage':<18s} {'wall':>7s}   {'cpu':>7s}")
    for name, (sec, cpu) in stages.items():
        print(f"  {name:<18s} {sec:7.3f} s {cpu:7.3f} s")
    print(f"  {'total':<18s} {total:7.3f} s {total_cpu:7.3f} s   (goal < 3 s wall)")
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(f"  (1-min load average {load} on {len(os.sched_getaffinity(0))} CPUs: "
          "wall times include contention)")
    print(f"  peak memory        {peak_mib:7.0f} MiB (goal < 1024 MiB; ru_maxrss of the timed "
          "process)")
    rms = np.sqrt(np.nanmean(np.concatenate([tr.residual_rms_m for tr in trajs]) ** 2))
    valid = np.mean([m.valid.mean() for m in motions])
    print(f"  pose residual RMS  {rms * 1e3:7.3f} mm; valid frames {100 * valid:.1f} %")
    if args.keep is None:
        path.unlink()
        workdir.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
