"""Benchmark: multi-posture Phi_s fit for a 15-segment human (generic anthropometry).

Segments (de Leva 1996 mass fractions of a 75 kg adult; lengths and radii of gyration
rounded generic values): pelvis (base, on the platform), torso, head, and per side upper
arm, forearm, hand, thigh, shank, foot. Spherical joints at generic joint centres.

Steps: (1) greedy posture design from a neutral posture with the advice module (one segment
turned +-45/+-90 deg about an axis of its parent per candidate) until Phi_s (8*15+1 = 121
entries) has full rank and condition number <= 100; (2) simulate the overall properties of
those postures (COM noise 0.1 mm, inertia noise 0.2 % of the largest principal moment per
entry), fit, and report the fit time and the paper 002 Table 5 error figures.

Run: ``python3 benchmarks/subset_human.py`` (prints figures; no files written). BLAS is
pinned to one thread (see below); set OPENBLAS_NUM_THREADS to override.
"""

from __future__ import annotations

import os
import time

# The matrices here are small (a few hundred rows): BLAS threads cost more than they give,
# and on a shared machine oversubscription slows the fit ~10x. Pin to one thread unless told.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.identify.subset.advice import plan_postures
from rigtool.identify.subset.fit import PostureOverall, fit_subset, whitener
from rigtool.inertia import InertialParams
from rigtool.tree import (Link, Tree, composite_params, minimal_parameters, phi_b_vector,
                          phi_s_from_phi_b, phi_s_names)

BODY_MASS = 75.0
COM_STD_M = 1e-4
INERTIA_REL = 2e-3


def _seg(frac, com, k):
    m = frac * BODY_MASS
    return InertialParams.from_com(m, np.array(com, float), np.diag(m * np.asarray(k) ** 2))


def human_tree() -> Tree:
    """15 segments; every non-base link frame at its proximal joint, z along the segment."""
    links = [Link("pelvis", "platform", None, _seg(0.1117, [0, 0, 0.05], [0.09, 0.08, 0.10])),
             Link("torso", "pelvis", np.array([0, 0, 0.10]), _seg(0.3229, [0, 0, 0.22],
                                                                   [0.14, 0.12, 0.10])),
             Link("head", "torso", np.array([0, 0, 0.45]), _seg(0.0694, [0.01, 0, 0.12],
                                                                 [0.07, 0.07, 0.06]))]
    for side, y in (("r", -1.0), ("l", 1.0)):
        links += [
            Link(f"{side}_upperarm", "torso", np.array([0, 0.18 * y, 0.38]),
                 _seg(0.0271, [0, 0, -0.13], [0.08, 0.08, 0.03])),
            Link(f"{side}_forearm", f"{side}_upperarm", np.array([0, 0, -0.28]),
                 _seg(0.0162, [0, 0, -0.12], [0.075, 0.075, 0.03])),
            Link(f"{side}_hand", f"{side}_forearm", np.array([0, 0, -0.27]),
                 _seg(0.0061, [0, 0, -0.07], [0.05, 0.045, 0.025])),
            Link(f"{side}_thigh", "pelvis", np.array([0, 0.09 * y, 0.0]),
                 _seg(0.1416, [0, 0, -0.18], [0.13, 0.13, 0.06])),
            Link(f"{side}_shank", f"{side}_thigh", np.array([0, 0, -0.42]),
                 _seg(0.0433, [0, 0, -0.19], [0.11, 0.11, 0.04])),
            Link(f"{side}_foot", f"{side}_shank", np.array([0, 0, -0.43]),
                 _seg(0.0137, [0.06, 0, -0.04], [0.05, 0.045, 0.02]))]
    return Tree(tuple(links))


def observe(tree, rotations, rng, name):
    whole = composite_params(tree, rotations)
    i_com = whole.inertia_com
    sig = INERTIA_REL * np.linalg.eigvalsh(i_com)[-1]
    n = rng.normal(size=6) * sig
    d = np.array([[n[0], n[5], n[4]], [n[5], n[1], n[3]], [n[4], n[3], n[2]]])
    return PostureOverall(name, whole.com + rng.normal(size=3) * COM_STD_M,
                          np.full(3, COM_STD_M), i_com + d, sig, rotations)


def main() -> None:
    tree = human_tree()
    m0 = sum(l.params.mass for l in tree.links)
    neutral = {n: np.eye(3) for n in tree.names[1:]}
    w = whitener(np.diag(np.r_[np.full(3, (m0 * COM_STD_M) ** 2), np.full(6, 0.01 ** 2)]))
    t0 = time.perf_counter()
    added, history = plan_postures(tree, [neutral], w, max_condition=100.0, max_postures=80)
    t_plan = time.perf_counter() - t0
    sets = [neutral] + [c.rotations for c in added]
    rank, cond = history[-1]
    print(f"15-segment human: {len(tree.links)} links, {8 * len(tree.links) + 1} Phi_s entries, "
          f"M0 = {m0:.1f} kg")
    print(f"greedy design: {len(sets)} postures (neutral + {len(added)} advised) to rank "
          f"{rank}, condition {cond:.1f}; planning took {t_plan:.2f} s")
    first_full = next(i for i, (r, _) in enumerate(history) if r == 8 * len(tree.links) + 1)
    print(f"  full rank first reached with {first_full + 2} postures "
          f"(condition {history[first_full][1]:.3g})")
    truth = phi_s_from_phi_b(phi_b_vector(minimal_parameters(tree)))
    names = phi_s_names(tree)
    ms = np.array([".MS_" in n for n in names])
    i_m = np.linalg.eigvalsh(composite_params(tree, neutral).inertia_origin)[-1]
    times, e_ms, e_j, z2 = [], [], [], []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        ps = [observe(tree, r, rng, f"p{k}") for k, r in enumerate(sets)]
        t0 = time.perf_counter()
        res = fit_subset(tree, ps, m0, advise=False)
        times.append(time.perf_counter() - t0)
        e = res.values - truth
        e_ms.append(np.abs(e[ms]).max() / m0)
        e_j.append(np.abs(e[~ms]).max() / i_m)
        z2.append(np.mean((e / res.std) ** 2))
    print(f"fit time (fit_subset incl. the Phi_B QR cross-check): median "
          f"{np.median(times) * 1e3:.1f} ms, max {np.max(times) * 1e3:.1f} ms (goal < 1000 ms)")
    print(f"rank {res.rank}, condition number {res.condition_number:.1f}, "
          f"Phi_B QR rank {res.base_check['phi_b_rank']} (agree: {res.base_check['agree']})")
    print(f"noise: COM {COM_STD_M * 1e3:.1f} mm, inertia {INERTIA_REL * 100:.1f} % of max "
          f"principal moment; 20 seeds")
    print(f"E_MS/M0 median {np.median(e_ms):.2e} m (max {np.max(e_ms):.2e}); "
          f"E_J/I_m median {np.median(e_j) * 100:.3f} % (max {np.max(e_j) * 100:.3f} %); "
          f"mean squared normalised error {np.mean(z2):.2f}")


if __name__ == "__main__":
    main()
