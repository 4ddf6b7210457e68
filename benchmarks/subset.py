"""Benchmark: the subset Phi_s from simulated locked-posture captures, end to end.

For each scenario the locked-posture captures are simulated once (noise-free dynamics); every
seed draws fresh marker noise (the scenario's sigma, 0.1 mm, and its artefacts), fits each
posture as ``rigtool run`` does (rigtool.pipeline.session.fit_one_posture: equation error,
then by default its output-error refinement) with the TRUE rig (the calibration is
benchmarked in benchmarks/calibration.py), and fits Phi_s (rigtool.identify.subset.fit.fit_subset,
weighted by each posture's covariance). Printed per scenario:

- ``E_MS/M0`` (m): the largest first-moment error of Phi_s over its mass ``M0``; ``E_J/Im`` (%):
  the largest inertia-entry error over the largest principal moment of the whole object
  over the postures (paper 002 Table 5's figures, applied to Phi_s);
- the normalised errors ``(estimate - truth) / std`` over every entry: their RMS (near 1
  when the propagated standard errors are right) and the coverage of +-2 std;
- rank and condition number of the stacked, whitened system.

Run: ``python3 benchmarks/subset.py [--seeds 10] [--scenario demo|four|four8|both]
[--posture-method output-error|equation-error]``.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path
from types import SimpleNamespace

import numpy as np
from _simulated import draw_markers, fit_simulated_postures, simulate_object

from rigtool.config import FilterSettings
from rigtool.identify.subset.fit import fit_subset
from rigtool.pipeline.methods import FIT_METHODS
from rigtool.pipeline.session import posture_overall
from rigtool.tree import phi_s_names

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = {"demo": ROOT / "scenarios" / "demo.toml",
             "four": ROOT / "scenarios" / "four_link.toml",
             "four8": ROOT / "scenarios" / "four_link_8postures.toml"}


def one_seed(p: SimpleNamespace, seed: int, method: str, settings: FilterSettings):
    """Fit every posture of one noise draw, then Phi_s; returns (SubsetResult, seconds)."""
    rng = np.random.default_rng(5000 + seed)
    t0 = time.perf_counter()
    data = {j.name: draw_markers(p, j, rng) for j in p.postures}
    outs = fit_simulated_postures(p, data, settings, method=method, weighting="dual-metric")
    t_post = time.perf_counter() - t0
    t0 = time.perf_counter()
    sub = fit_subset(p.tree, [posture_overall(o) for o in outs], p.mass, advise=False)
    return sub, t_post, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--scenario", choices=["demo", "four", "four8", "both"], default="both",
                    help="both: demo and four; four8: the four-link object in 8 postures")
    ap.add_argument("--posture-method", choices=FIT_METHODS, default="output-error")
    args = ap.parse_args()
    settings = FilterSettings()
    for sname in (["demo", "four"] if args.scenario == "both" else [args.scenario]):
        p = simulate_object(SCENARIOS[sname], kinds=("posture",))
        names = phi_s_names(p.tree)
        is_ms = np.array([n.split(".")[-1].startswith("MS") for n in names])
        print(f"\n== {sname}: {len(p.tree.links)} links, {len(p.postures)} postures, "
              f"{len(names)} Phi_s entries, M0 = {p.mass:.3f} kg, Im = {p.i_max:.4f} kg m^2; "
              f"postures by {args.posture_method}, true rig, {args.seeds} seeds "
              f"(simulated in {p.sim_s:.0f} s)", flush=True)
        errs, zs, stats = [], [], []
        for seed in range(args.seeds):
            sub, t_post, t_sub = one_seed(p, seed, args.posture_method, settings)
            err = sub.values - p.phi_s
            errs.append(err)
            zs.append(err / sub.std)
            stats.append((sub.rank, sub.condition_number, t_post, t_sub))
            print(f"  seed {seed:2d}: E_MS/M0 {np.abs(err[is_ms]).max() / p.mass:.2e} m, "
                  f"E_J/Im {100 * np.abs(err[~is_ms]).max() / p.i_max:.4f} %, "
                  f"RMS z {np.sqrt(np.mean(zs[-1] ** 2)):.2f}, postures {t_post:.0f} s",
                  flush=True)
        err, z = np.array(errs), np.array(zs)
        e_ms = np.abs(err[:, is_ms]).max(1) / p.mass
        e_j = 100 * np.abs(err[:, ~is_ms]).max(1) / p.i_max
        rank, cond, t_post, t_sub = np.array(stats).T
        print("\n| scenario | E_MS/M0 median / max (m) | E_J/Im median / max (%) | "
              "|mean err|/M0 max (m) | RMS z | cover +-2 std | rank | cond | posture fits (s) |"
              " subset fit (s) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        print(f"| {sname} | {np.median(e_ms):.2e} / {e_ms.max():.2e} | {np.median(e_j):.4f} / "
              f"{e_j.max():.4f} | {np.abs(err[:, is_ms].mean(0)).max() / p.mass:.1e} | "
              f"{np.sqrt(np.mean(z ** 2)):.2f} | {100 * np.mean(np.abs(z) <= 2):.1f} % | "
              f"{int(rank.min())}/{len(names)} | {np.median(cond):.0f} | "
              f"{np.median(t_post):.0f} | {np.median(t_sub):.3f} |")
        worst = np.argsort(-np.sqrt(np.mean(z ** 2, axis=0)))[:3]
        print("largest RMS z: " + ", ".join(f"{names[i]} {np.sqrt(np.mean(z[:, i] ** 2)):.2f}"
                                            for i in worst))


if __name__ == "__main__":
    main()
