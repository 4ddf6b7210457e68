"""Posture fits of bodies near the physical-consistency boundary: coverage of the standard errors.

A flat body (a plate: one principal second moment near zero, the triangle inequality nearly
met with equality) sits next to the boundary of the consistent set that the posture fit's
log-Cholesky unknowns cannot cross. Over noise draws, each plate thickness's capture is fitted
(rigtool's simulator, the demo rig, 0.1 mm marker noise, 6 s at 100 Hz, a start 1 mm and 10-20
g m^2 off) and the benchmark prints, per thickness: the true smallest second moment, the share of
draws whose estimate lies on the boundary, the error over the standard error of the second moment
along the true flat axis (median |z|, worst), and the share of all nine inertia entries and of
the flat axis's second moment within 2 standard errors.

Run: ``python3 benchmarks/posture_boundary.py [--draws 10] [--thickness 0.002 0.02 0.05]``.
``PYTHONPATH=OLD_CHECKOUT`` runs another version of rigtool on the same draws.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.identify.posture.equation_error import PostureResult
from rigtool.identify.posture.output_error import refine_posture
from rigtool.inertia import InertialParams
from rigtool.sim.dynamics import FixedBody, System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import box_inertia, demo_rig

MASS_KG = 45.0
PLATE_M = (0.5, 0.6)
RATE_HZ = 100.0
DURATION_S = 6.0
R_BASE = Rotation.from_euler("zyx", [10, 5, -3], degrees=True).as_matrix()
P_BASE = np.array([0.05, -0.02, 0.04])
COM_M = np.array([0.03, -0.02, 0.30])
OFFSET = np.array([0.012, -0.01, 0.008, 0.03, -0.025, 0.03])
VELOCITY = np.array([0.02, 0.02, -0.01, 0.05, -0.05, 0.05])


def _start(com: np.ndarray, inertia_com: np.ndarray) -> PostureResult:
    """A stand-in for the equation-error start (only its COM and inertia are read)."""
    params = InertialParams.from_com(MASS_KG, com, inertia_com)
    z3, z9 = np.zeros(3), np.zeros((3, 3))
    return PostureResult("plate", MASS_KG, com, z3, inertia_com, z9, params, np.eye(9),
                         np.eye(12), params, {}, np.zeros((1, 6)), np.zeros((1, 6)),
                         np.zeros(1), "exact", "noise", [])


def run(thickness_m: float, draws: int) -> dict:
    """The figures of one plate thickness over ``draws`` noise draws."""
    inertia = box_inertia(MASS_KG, (*PLATE_M, thickness_m))
    body = InertialParams.from_com(MASS_KG, COM_M, inertia)
    rig, platform = demo_rig(spring_damping_n_s_m=6.0)
    system = System(rig=rig, platform_params=platform,
                    fixed=(FixedBody("plate", body, R_BASE, P_BASE),))
    traj = simulate(system, DURATION_S, RATE_HZ, platform_offset=OFFSET,
                    platform_velocity=VELOCITY)
    sigma = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    ev, vec = np.linalg.eigh(sigma)
    n = vec[:, 0]
    a = 0.5 * np.eye(3).ravel() - np.outer(n, n).ravel()     # n^T Sigma n in I's entries
    z_flat, within_all, on_boundary, seconds = [], [], 0, 0.0
    for seed in range(draws):
        data = synthesize_markers(traj, [MarkerSet("platform", rig.platform.markers_platform)],
                                  noise_sigma_m=1e-4, rng=np.random.default_rng(seed),
                                  rate_hz=RATE_HZ)
        start = _start(COM_M + 1e-3, inertia + np.diag([0.01, -0.01, 0.005]))
        t0 = time.perf_counter()
        res = refine_posture(rig, platform, data, base_rotation_platform=R_BASE,
                             base_position_platform=P_BASE, total_mass_kg=MASS_KG, start=start)
        seconds += time.perf_counter() - t0
        est = 0.5 * np.trace(res.inertia_com) * np.eye(3) - res.inertia_com
        ev_est = np.linalg.eigvalsh(est)
        on_boundary += int(ev_est[0] < 1e-5 * ev_est[-1])
        se_flat = float(np.sqrt(a @ res.props_cov[3:, 3:] @ a))
        z_flat.append((n @ est @ n - ev[0]) / se_flat)
        z_i = (res.inertia_com - inertia) / res.inertia_com_std
        within_all.extend(np.abs(z_i[np.triu_indices(3)]) <= 2.0)
    z_flat = np.abs(np.array(z_flat))
    return {"thickness_mm": thickness_m * 1e3, "sigma_min_gm2": ev[0] * 1e3,
            "on_boundary": on_boundary / draws, "median_z": float(np.median(z_flat)),
            "worst_z": float(z_flat.max()), "flat_within_2": float(np.mean(z_flat <= 2.0)),
            "inertia_within_2": float(np.mean(within_all)), "s_per_fit": seconds / draws}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--thickness", type=float, nargs="+", default=[0.002, 0.02, 0.05],
                    help="plate thicknesses, m")
    args = ap.parse_args()
    print(f"{'plate mm':>8} {'Sigma_min g m^2':>15} {'on boundary':>11} {'|z| flat median':>15} "
          f"{'worst':>7} {'flat <= 2 SE':>12} {'inertia <= 2 SE':>15} {'s/fit':>6}")
    for t in args.thickness:
        r = run(t, args.draws)
        print(f"{r['thickness_mm']:8.1f} {r['sigma_min_gm2']:15.3f} {r['on_boundary']:11.0%} "
              f"{r['median_z']:15.2f} {r['worst_z']:7.1f} {r['flat_within_2']:12.0%} "
              f"{r['inertia_within_2']:15.0%} {r['s_per_fit']:6.1f}")


if __name__ == "__main__":
    main()
