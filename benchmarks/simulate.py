"""Benchmark: a 30 s capture of the demo 4-link object with free joints, 120 Hz output.

Prints wall time, CPU time, the number of right-hand-side evaluations and the relative
energy drift (peak-to-peak change of the mechanical energy over the excitation energy).

    python3 benchmarks/simulate.py [--duration 30] [--rate 120] [--rtol 1e-10] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.sim import _fastrhs
from rigtool.sim.dynamics import System, mechanical_energy, simulate
from rigtool.sim.rigs import demo_rig, demo_tree


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=120.0)
    parser.add_argument("--rtol", type=float, default=1e-10)
    parser.add_argument("--profile", action="store_true", help="print the top RHS costs")
    args = parser.parse_args()

    rig, platform = demo_rig()
    system = System(rig, platform, tree=demo_tree(), free_joints=True)
    calls = [0]
    original = _fastrhs.FastRHS.__call__

    def counted(self, t, y):
        calls[0] += 1
        return original(self, t, y)

    _fastrhs.FastRHS.__call__ = counted
    kwargs = dict(platform_offset=np.array([0.01, -0.01, 0.015, 0.02, -0.01, 0.03]),
                  link_rotation={"upper": Rotation.from_euler("x", 0.4).as_matrix(),
                                 "side": Rotation.from_euler("y", -0.3).as_matrix()},
                  link_omega={"lower": np.array([0.5, 0.0, 1.0])}, rtol=args.rtol)
    profiler = cProfile.Profile() if args.profile else None
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    traj = simulate(system, args.duration, args.rate, **kwargs)
    if profiler:
        profiler.disable()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    _fastrhs.FastRHS.__call__ = original

    energy = mechanical_energy(system, traj)
    rest = mechanical_energy(system, simulate(system, 1.0, 1.0))[0]
    drift = np.ptp(energy) / (energy[0] - rest)
    print(f"samples            {len(traj.time_s)} ({args.duration:g} s at {args.rate:g} Hz)")
    print(f"wall time          {wall:.2f} s   (goal < 5 s)")
    print(f"cpu time           {cpu:.2f} s")
    print(f"rhs evaluations    {calls[0]}  ({1e6 * cpu / max(calls[0], 1):.0f} us each, cpu)")
    print(f"energy drift       {drift:.2e} (relative to {energy[0] - rest:.3f} J excitation)")
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
