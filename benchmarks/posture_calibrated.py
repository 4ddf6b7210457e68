"""Posture fits with the calibration's uncertainty, end to end: does the reported standard error
cover the truth when the rig itself was calibrated from noisy captures?

A single calibrated rig cannot answer this: its calibration error is one fixed draw shared by
every posture seed, so coverage over posture seeds says little about the calibration term.
Here every seed pairs a *fresh* calibration (from ``benchmarks/calibration.py --save``: each
of its seeds calibrated the rig by output error from newly noisy calibration captures, and
kept the refined rig and its full covariance) with fresh posture noise. Each posture is then
fitted exactly as ``rigtool run`` does (``fit_one_posture``, output error by default), with
the calibration covariance written into the rig document the way ``rigtool calibrate``
writes it, and scored against the simulator's truth.

    python3 benchmarks/calibration.py --seeds 10 --save /tmp/calA.pkl
    python3 benchmarks/calibration.py --seeds 10 --seed0 10 --save /tmp/calB.pkl
    python3 benchmarks/posture_calibrated.py /tmp/calA.pkl /tmp/calB.pkl
"""

from __future__ import annotations

import argparse
import os
import pickle
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from _simulated import draw_markers, fit_simulated_posture, simulate_object

from rigtool.config import FilterSettings
from rigtool.calibration_uncertainty import covariance_table
from rigtool.pipeline.methods import FIT_METHODS

ROOT = Path(__file__).resolve().parents[1]


def rig_document(rig, covariance: np.ndarray) -> dict:
    """The ``[calibration]`` part of a calibrated rig file (std and covariance) for ``rig``."""
    names = [s.name for s in rig.springs]
    sd = np.sqrt(np.clip(np.diag(covariance), 0, None))
    n = len(names)
    ic = np.zeros((3, 3))
    ic[np.triu_indices(3)] = sd[3 * n + 4:]
    ic = ic + np.triu(ic, 1).T
    std = {"platform": {"mass": sd[3 * n], "com": list(sd[3 * n + 1:3 * n + 4]),
                        "inertia_com": ic.tolist()},
           "springs": {nm: {"stiffness": sd[i], "free_length": sd[n + i],
                            "damping": sd[2 * n + i]} for i, nm in enumerate(names)}}
    return {"calibration": {"std": std, "covariance": covariance_table(names, covariance)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("saved", type=Path, nargs="+", help="files of calibration.py --save")
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios/two_link_paper002.toml")
    ap.add_argument("--method", choices=FIT_METHODS, default="output-error")
    args = ap.parse_args()
    cals = [c for f in args.saved for c in pickle.loads(f.read_bytes())["calibrations"]]
    p = simulate_object(args.scenario, kinds=("posture",))
    jobs = p.postures
    print(f"{len(cals)} calibrations x {len(jobs)} postures of {args.scenario.name} "
          f"(simulated in {p.sim_s:.0f} s), {args.method}", flush=True)
    com_err, com_sd, i_err, i_sd, times = [], [], [], [], []
    iu = np.triu_indices(3)
    for cal in cals:
        rigfile = SimpleNamespace(rig=cal["rig"], raw=rig_document(cal["rig"],
                                                                   cal["covariance"]))
        rng = np.random.default_rng(9000 + cal["seed"])
        for j in jobs:
            com_t, i_t, i_max = p.truth[j.name]
            data = draw_markers(p, j, rng)
            t1 = time.perf_counter()
            out = fit_simulated_posture(p, j, data, FilterSettings(), rigfile=rigfile,
                                        method=args.method, weighting="dual-metric")
            times.append(time.perf_counter() - t1)
            r = out.result
            com_err.append(1e3 * (r.com - com_t))
            com_sd.append(1e3 * r.com_std)
            i_err.append(100 * (r.inertia_com - i_t)[iu] / i_max)
            i_sd.append(100 * r.inertia_com_std[iu] / i_max)
        print(f"  calibration seed {cal['seed']:2d}: worst COM error "
              f"{np.abs(com_err[-len(jobs):]).max():.4f} mm, worst inertia error "
              f"{np.abs(i_err[-len(jobs):]).max():.4f} %", flush=True)
    ce, cs, ie, is_ = (np.array(v) for v in (com_err, com_sd, i_err, i_sd))
    z = np.concatenate([np.abs(ce) / cs, np.abs(ie) / is_], axis=1)
    print("\n| quantity | max mean error | RMS error | mean std | cover +-2 std |")
    print("|---|---|---|---|---|")
    print(f"| COM (mm) | {np.abs(ce.mean(0)).max():.4f} | {np.sqrt((ce ** 2).mean(0)).max():.4f}"
          f" | {cs.mean():.4f} | {100 * np.mean(np.abs(ce) <= 2 * cs):.1f} % |")
    print(f"| inertia (% of I_max) | {np.abs(ie.mean(0)).max():.4f} | "
          f"{np.sqrt((ie ** 2).mean(0)).max():.4f} | {is_.mean():.4f} | "
          f"{100 * np.mean(np.abs(ie) <= 2 * is_):.1f} % |")
    print(f"all {z.size} entries: coverage of +-2 std {100 * np.mean(z <= 2):.1f} %, "
          f"RMS of error/std {np.sqrt(np.mean(z ** 2)):.2f}; median fit time "
          f"{np.median(times):.1f} s per posture")


if __name__ == "__main__":
    main()
