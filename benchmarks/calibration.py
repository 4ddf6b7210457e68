"""Monte Carlo of the rig calibration on simulated captures.

Simulates the calibration captures of a scenario once (noise-free dynamics), then for each
noise seed synthesises the markers (sigma = 0.1 mm), prepares and calibrates exactly as
`rigtool calibrate` does (``--method output-error``, the default: the equation-error fit, its
output-error refinement and the held-out bodies identified with the refined rig; or
``--method equation-error``), and prints per quantity: mean error, spread (std over seeds),
the mean reported standard error, and how often the truth lies within +-2 reported standard
errors. The held-out reference body is scored the same way (COM and inertia entries).

    python3 benchmarks/calibration.py [--seeds 20] [--scenario scenarios/two_link_paper002.toml]
                                      [--method output-error|equation-error] [--no-compensation]

A long run can be split over processes: ``--seed0 10 --seeds 10 --save part2.pkl`` runs seeds
10-19 and keeps the per-seed figures; ``--combine part1.pkl part2.pkl`` prints the table of all.
"""

from __future__ import annotations

import argparse
import os
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np

from rigtool.config import FilterSettings, load_rig
from rigtool.identify.calibration.equation_error import calibrate_motion
from rigtool.pipeline.calibration import prepare_capture, refine_with_holdouts
from rigtool.pipeline.methods import FIT_METHODS
from rigtool.sim.markers import synthesize_markers
from rigtool.sim.scenario import load_scenario
from rigtool.sim.session_writer import capture_jobs, rig_file_dict, simulate_job
from rigtool.tomlwrite import dumps

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios/two_link_paper002.toml")
    ap.add_argument("--sigma-mm", type=float, default=0.1)
    ap.add_argument("--no-compensation", action="store_true")
    ap.add_argument("--method", choices=FIT_METHODS, default="output-error")
    ap.add_argument("--seed0", type=int, default=0, help="first seed")
    ap.add_argument("--save", type=Path, help="keep the per-seed figures in this file")
    ap.add_argument("--combine", type=Path, nargs="+", help="print the table of saved runs")
    args = ap.parse_args()
    if args.combine:
        parts = [pickle.loads(f.read_bytes()) for f in args.combine]
        rows = {k: [v for part in parts for v in part["rows"][k]] for k in parts[0]["rows"]}
        summary(rows, [h for part in parts for h in part["holdouts"]],
                [t for part in parts for t in part["times"]], parts[0]["method"])
        return

    sc = load_scenario(args.scenario)
    jobs = [j for j in capture_jobs(sc) if j.kind == "calibration"]
    with tempfile.TemporaryDirectory() as tmp:
        rig_path = Path(tmp) / "calibration" / f"{sc.rig.name}.toml"
        rig_path.parent.mkdir(parents=True)
        rig_path.write_text(dumps(rig_file_dict(sc)))
        rigfile = load_rig(rig_path)
    t0 = time.perf_counter()
    trajs = [simulate_job(sc, j) for j in jobs]
    t_sim = time.perf_counter() - t0
    print(f"scenario {args.scenario.name}: {len(jobs)} calibration captures simulated in "
          f"{t_sim:.1f} s; sigma {args.sigma_mm} mm; compensation "
          f"{'off' if args.no_compensation else 'on'}; method {args.method}")

    true_k = np.array([s.stiffness for s in sc.rig.springs])
    true_l0 = np.array([s.free_length for s in sc.rig.springs])
    plat = sc.platform_params
    i_max = float(np.linalg.eigvalsh(plat.inertia_com)[-1])
    rows: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    times, holdouts, calibrations = [], [], []
    settings = FilterSettings()
    for seed in range(args.seed0, args.seed0 + args.seeds):
        rng = np.random.default_rng(1000 + seed)
        caps, datas = [], []
        for i, (job, traj, c) in enumerate(zip(jobs, trajs, rigfile.captures)):
            data = synthesize_markers(traj, job.marker_sets, noise_sigma_m=args.sigma_mm * 1e-3,
                                      rng=rng, rate_hz=job.settings.rate_hz)
            data = type(data)(**{**data.__dict__, "source": c.capture})
            datas.append(data)
            caps.append(prepare_capture(rigfile, c, data, settings,
                                        compensate=not args.no_compensation, seed=seed * 100 + i))
        t1 = time.perf_counter()
        res = calibrate_motion(rigfile.rig, caps)
        if args.method == "output-error":
            res, ref = refine_with_holdouts(rigfile, caps, datas, res)
            calibrations.append({"seed": seed, "rig": ref.rig,
                                 "covariance": ref.physical_covariance()})
        times.append(time.perf_counter() - t1)
        rows.setdefault("stiffness [% of k]", []).append(
            (100 * (res.stiffness - true_k) / true_k, 100 * res.stiffness_std / true_k))
        rows.setdefault("free length [mm]", []).append(
            (1e3 * (res.free_length - true_l0), 1e3 * res.free_length_std))
        rows.setdefault("platform mass [% of m]", []).append(
            (np.array([100 * (res.platform.mass - plat.mass) / plat.mass]),
             np.array([100 * res.platform_mass_std / plat.mass])))
        rows.setdefault("platform COM [mm]", []).append(
            (1e3 * (res.platform.com - plat.com), 1e3 * res.platform_com_std))
        iu = np.triu_indices(3)
        rows.setdefault("platform inertia [% of I_max]", []).append(
            (100 * (res.platform.inertia_com - plat.inertia_com)[iu] / i_max,
             100 * res.platform_inertia_std[iu] / i_max))
        holdouts += [(h.mass_error_kg, h.com_error_m, h.inertia_error_rel) for h in res.holdout]
        for h in res.holdout:
            h_max = float(np.linalg.eigvalsh(h.known.inertia_com)[-1])
            rows.setdefault("held-out COM [mm]", []).append(
                (1e3 * (h.identified.com - h.known.com), 1e3 * h.com_std_m))
            rows.setdefault("held-out inertia [% of its I_max]", []).append(
                (100 * (h.identified.inertia_com - h.known.inertia_com)[iu] / h_max,
                 100 * h.inertia_com_std[iu] / h_max))
        print(f"  seed {seed:2d}: fit {times[-1]:.1f} s, mass err "
              f"{res.platform.mass - plat.mass:+.4f} kg, worst k err "
              f"{np.max(np.abs(res.stiffness - true_k) / true_k) * 100:.3f}%", flush=True)

    if args.save:
        # the calibrated rigs too: a posture benchmark can pair each with fresh posture noise
        args.save.write_bytes(pickle.dumps({"rows": rows, "holdouts": holdouts, "times": times,
                                            "method": args.method,
                                            "calibrations": calibrations}))
    summary(rows, holdouts, times, args.method)


def summary(rows: dict, holdouts: list, times: list, method: str) -> None:
    """Print the per-quantity table over all seeds."""
    print(f"\n{len(times)} seeds")
    print(f"\n{'quantity':32s} {'max|mean err|':>14s} {'max spread':>11s} "
          f"{'mean std':>9s} {'max|err|':>9s} {'coverage 2sd':>12s}")
    for name, vals in rows.items():
        err = np.array([v[0] for v in vals])
        sd = np.array([v[1] for v in vals])
        cover = np.mean(np.abs(err) <= 2 * sd)
        print(f"{name:32s} {np.max(np.abs(err.mean(0))):14.4f} {np.max(err.std(0)):11.4f} "
              f"{np.mean(sd):9.4f} {np.max(np.abs(err)):9.4f} {100 * cover:11.0f}%")
    if holdouts:
        h = np.array(holdouts)
        print(f"held-out body: |mass err| max {np.max(np.abs(h[:, 0])):.4f} kg, COM err max "
              f"{1e3 * np.max(h[:, 1]):.2f} mm, inertia err mean {100 * h[:, 2].mean():.2f}% "
              f"max {100 * h[:, 2].max():.2f}% of its largest principal moment")
    print(f"calibration fit time ({method}, held-out checks included): median "
          f"{np.median(times):.1f} s (plus capture preparation)")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
