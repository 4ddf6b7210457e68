"""The tree engine's tangents: rigtool's numba kernels (``rigtool.engine.tree.
simulate``, rigtool.engine.tree_tangents) against JAX's forward mode through the same
equations (``simulate_jax``), on engine_choice's model (benchmarks/_engine_model.py: the
paper-002 platform carrying nb bodies on spherical joints, 120 Hz, two RK4 steps per
frame, P = 16 nb + 12 tangent directions: every body's inertial parameters, the initial state
and the springs).

Per simulated frame with all P tangents: CPU ms (``time.process_time``, both engines' threads
included) and wall ms, each engine warm (its compilation, cached on disk, done by a first
short run); and their agreement, the largest difference of the marker derivatives over their
largest value.

    python3 benchmarks/tree_tangents.py [--bodies 2,4,8,16] [--frames 240] [--no-jax]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from _engine_model import ANCHOR, ATTACH, FPS, GRAVITY, SUBSTEPS, build  # noqa: E402


def _timed(fn, frames: int):
    fn(3)                                         # warm: compiled (or loaded) once
    t, c = time.perf_counter(), time.process_time()
    out = fn(frames + 1)
    return out, 1e3 * (time.process_time() - c) / frames, 1e3 * (time.perf_counter() - t) / frames


def measure(nb: int, frames: int, with_jax: bool) -> dict:
    from rigtool.engine import tree
    b = build(nb)
    model = tree.TreeModel(b.parents, b.body_of_marker, ANCHOR, ATTACH, GRAVITY, tuple(range(6)))
    p = 16 * nb + 12
    rng = np.random.default_rng(0)
    t_th = np.zeros((b.theta.size, p))
    t_th[np.arange(10 * nb), np.arange(10 * nb)] = 1.0
    t_y = rng.normal(size=(b.y0.size, p)) * 1e-3

    def run(simulate):
        return lambda n: simulate(model, b.theta, b.y0, n, 1.0 / FPS, substeps=SUBSTEPS,
                                  tangent_theta=t_th, tangent_y0=t_y)

    row = {"nb": nb, "P": p}
    out_k, row["kernels_cpu"], row["kernels_wall"] = _timed(run(tree.simulate), frames)
    if with_jax:
        out_j, row["jax_cpu"], row["jax_wall"] = _timed(run(tree.simulate_jax), frames)
        row["agreement"] = float(np.abs(out_k[2] - out_j[2]).max() / np.abs(out_j[2]).max())
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", default="2,4,8,16")
    ap.add_argument("--frames", type=int, default=240)
    ap.add_argument("--no-jax", action="store_true")
    args = ap.parse_args(argv)
    print("| nb | P | kernels CPU ms / frame | kernels wall | JAX CPU ms / frame | JAX wall | "
          "CPU ratio | agreement |")
    print("|---|---|---|---|---|---|---|---|")
    for nb in (int(s) for s in args.bodies.split(",") if s):
        r = measure(nb, args.frames, not args.no_jax)
        jax = (f"{r['jax_cpu']:.2f} | {r['jax_wall']:.2f} | {r['jax_cpu'] / r['kernels_cpu']:.1f}x"
               f" | {r['agreement']:.1e}") if "jax_cpu" in r else "- | - | - | -"
        print(f"| {nb} | {r['P']} | {r['kernels_cpu']:.2f} | {r['kernels_wall']:.2f} | {jax} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
