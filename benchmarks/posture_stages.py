"""Where a posture's output-error fit spends its time: one locked posture of the
two-link paper-002 object (120 Hz, sigma 0.1 mm, as ``benchmarks/speed.py`` simulates it),
fitted ``--repeat`` times in one process as ``rigtool run`` fits it (the object's markers in
the fit), and per fit: its wall time, its growing-horizon stages (horizon s, cost-only
simulations, normal equations) and the wall time of every cost and normal-equation evaluation
grouped by horizon. The first fit also loads the engine (from the compile cache when warm);
a session's later postures run like the later fits.

    python3 benchmarks/posture_stages.py [--seconds 25] [--repeat 3]
"""

from __future__ import annotations

import argparse
import collections
import os
import tempfile
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import speed  # noqa: E402 - benchmarks/speed.py: the capture and the stages, as measured there


def _timed(cls, name: str, log: dict) -> None:
    """Wrap ``cls.name`` to add each call's wall time to ``log[(name, frames, markers,
    covariance columns)]``."""
    inner = getattr(cls, name)

    def wrapper(self, *args, **kwargs):
        t0 = time.perf_counter()
        out = inner(self, *args, **kwargs)
        key = (name, self.n_frames, int(getattr(self, "n_attached", 0)),
               kwargs.get("extra_theta") is not None)
        log[key][0] += 1
        log[key][1] += time.perf_counter() - t0
        return out

    setattr(cls, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=25.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from rigtool.identify.posture.problem import PostureProblem

    log: dict = collections.defaultdict(lambda: [0, 0.0])
    for name in ("normal", "cost"):
        _timed(PostureProblem, name, log)
    with tempfile.TemporaryDirectory() as folder:
        sim = speed.child_simulate_length(args.seconds, folder)
        print(f"{args.seconds:g} s posture, {sim['frames']} frames")
        for k in range(args.repeat):
            log.clear()
            r = speed.child_length(args.seconds, True, str(Path(sim["path"])))
            print(f"fit {k + 1}: {r['stages_wall']['posture OE']:.2f} s wall "
                  f"({r['stages']['posture OE']:.2f} s CPU); stages (horizon s, costs, normal "
                  f"equations): {r['oe_stages']}")
            for (name, frames, markers, cov), (n, t) in sorted(log.items(),
                                                                key=lambda kv: kv[0][1]):
                what = f"{name}{' with covariance columns' if cov else ''}"
                print(f"    {frames:6d} frames, {markers} object markers: {n} x {what:<32} "
                      f"{t:.3f} s")


if __name__ == "__main__":
    main()
