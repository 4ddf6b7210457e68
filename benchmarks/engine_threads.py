"""Sensitivity columns on one thread against one thread per core (rigtool.engine.columns).

For the tree engine (relative motion, passive model: benchmarks/_engine_model.py's platform
with nb bodies, P = 16 nb + 12 tangent columns) and the prescribed-motion engine (relative
motion, active model: the platform carrying L links whose motion is given), the same
simulation with exact sensitivities is timed with ``RIGTOOL_ENGINE_THREADS=1`` and with the
default (every core this process may use), after one untimed run that compiles or loads the
compiled code. Printed: wall and CPU milliseconds per frame, the speed-up in wall time, and
the largest difference of the sensitivities between the two (relative to their largest
magnitude: the same arithmetic in differently sized compiled loops, so round-off).

    python3 benchmarks/engine_threads.py [--bodies 2,4,8] [--links 1,4] [--frames 480]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from _engine_model import ANCHOR, ATTACH, FPS, GRAVITY, SUBSTEPS, build  # noqa: E402


def _timed(run) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    out = run()
    return time.perf_counter() - w, time.process_time() - c, out


def _compare(run, frames: int, label: str) -> None:
    from rigtool.engine.columns import engine_threads
    res = {}
    for threads in ("1", ""):
        if threads:
            os.environ["RIGTOOL_ENGINE_THREADS"] = threads
        else:
            os.environ.pop("RIGTOOL_ENGINE_THREADS", None)
        run()                                     # compile, or load the compiled code
        res[threads or "all"] = _timed(run)
    n_all = engine_threads()
    (w1, c1, o1), (wn, cn, on) = res["1"], res["all"]
    sens1, sensn = o1[-1], on[-1]
    diff = np.abs(sensn - sens1).max() / np.abs(sens1).max()
    print(f"| {label} | {1e3 * w1 / frames:.3f} / {1e3 * c1 / frames:.3f} | {n_all} | "
          f"{1e3 * wn / frames:.3f} / {1e3 * cn / frames:.3f} | {w1 / wn:.2f} | {diff:.1e} |",
          flush=True)


def tree_case(nb: int, frames: int) -> None:
    from rigtool.engine import tree
    bench = build(nb)
    model = tree.TreeModel(bench.parents, bench.body_of_marker, ANCHOR, ATTACH, GRAVITY,
                           tuple(range(6)))
    rng = np.random.default_rng(nb)
    p = bench.n_dir
    t_th = rng.normal(size=(bench.theta.size, p)) * 1e-3
    t_y = rng.normal(size=(bench.y0.size, p)) * 1e-3

    def run():
        return tree.simulate(model, bench.theta, bench.y0, frames + 1, 1.0 / FPS,
                             substeps=SUBSTEPS, tangent_theta=t_th, tangent_y0=t_y)
    _compare(run, frames, f"tree, nb = {nb}, P = {p}")


def prescribed_case(n_links: int, frames: int) -> None:
    """The platform (25 kg + a 30 kg base) carrying ``n_links`` 3 kg links swinging by
    0.3 rad at 0.7 Hz about their joints (the prescribed input), P = 9 (L + 1) + 19."""
    from rigtool.engine import prescribed, rigid
    from rigtool.inertia import InertialParams
    from _engine_model import DAMP, FREE_LEN, STIFF
    model = rigid.RigidModel(ANCHOR, ATTACH, GRAVITY, tuple(range(6)))
    base = build(2)                  # its platform + torso (55 kg) and its equilibrium height
    pis = [base.pis[0]]
    pis += [InertialParams.from_com(3.0, np.array([0.15, 0.01, 0.0]),
                                    np.diag([0.01, 0.05, 0.05])).pi for _ in range(n_links)]
    theta = np.concatenate([np.concatenate(pis), np.full(3 * n_links, 0.1), STIFF,
                            STIFF * FREE_LEN, DAMP])
    n_u = 2 * SUBSTEPS * frames + 1
    t = np.arange(n_u) / FPS / (2 * SUBSTEPS)
    u = np.zeros((n_u, n_links, prescribed.INPUTS))
    w = 2 * np.pi * 0.7
    for j in range(n_links):
        a = 0.3 * np.sin(w * t + j)
        c, s = np.cos(a), np.sin(a)
        rot = np.zeros((n_u, 3, 3))
        rot[:, 0, 0], rot[:, 0, 2], rot[:, 1, 1], rot[:, 2, 0], rot[:, 2, 2] = c, s, 1, -s, c
        u[:, j, 0:9] = rot.reshape(n_u, 9)
        u[:, j, 10] = 0.3 * w * np.cos(w * t + j)
        u[:, j, 13] = -0.3 * w ** 2 * np.sin(w * t + j)
        u[:, j, 15:18] = [0.2, 0.1 * j, 0.0]
    y0 = np.concatenate([base.y0[:3], np.eye(3).ravel(), [0.01, 0, 0.02], [0.02, 0.03, 0.01]])
    p = 9 * (n_links + 1) + 19
    rng = np.random.default_rng(n_links)
    t_th = rng.normal(size=(theta.size, p)) * 1e-3
    t_y = rng.normal(size=(rigid.STATE, p)) * 1e-3

    def run():
        return prescribed.simulate(model, theta, y0, u, 1.0 / FPS, substeps=SUBSTEPS,
                                   tangent_theta=t_th, tangent_y0=t_y)
    _compare(run, frames, f"prescribed, L = {n_links}, P = {p}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", default="2,4,8")
    ap.add_argument("--links", default="1,4")
    ap.add_argument("--frames", type=int, default=480)
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; {args.frames} frames at {FPS:g} Hz, {SUBSTEPS} RK4 steps "
          "each; ms per frame, wall / CPU\n")
    print("| model | one thread | threads | all threads | speed-up (wall) | sensitivities' "
          "largest difference |")
    print("|---|---|---|---|---|---|")
    for nb in [int(x) for x in args.bodies.split(",") if x]:
        tree_case(nb, args.frames)
    for n in [int(x) for x in args.links.split(",") if x]:
        prescribed_case(n, args.frames)


if __name__ == "__main__":
    main()
