"""Monte Carlo of the locked-posture fit.

Simulates the paper-002 scenario once (rig calibration captures and the three Table 2
postures), calibrates the rig from one noisy set of calibration captures exactly as
`rigtool calibrate` does, then for every noise seed (sigma = 0.1 mm) re-synthesises the posture
markers and fits each posture with every spring model / row weighting / bias treatment.
Prints per configuration: worst mean COM error and spread (mm), inertia error (% of the
posture's largest principal moment), and the share of entries whose truth lies within +-2
reported standard errors.

    python3 benchmarks/posture.py [--seeds 20] [--configs exact/noise,exact/plain,...]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _simulated import calibrated_session, simulate_bundle

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("exact/noise", "exact/plain", "exact/dual-metric", "linear/noise",
           "exact/noise/uncompensated")


def main() -> None:
    from rigtool.pipeline.session import fit_one_posture
    from rigtool.sim.markers import synthesize_markers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios/two_link_paper002.toml")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    args = ap.parse_args()
    configs = args.configs.split(",")

    sim = simulate_bundle(args.scenario, "rigtool-posture-bench-")
    print(f"simulated and wrote {args.scenario.name} in {sim.seconds:.1f} s")
    sc, trajs = sim.scenario, sim.trajectories
    cal = calibrated_session(sim)
    session, rig_cal, truth, markers = cal.session, cal.rig_calibrated, cal.truth, cal.markers
    t_post = {p["name"]: p for p in truth["postures"]}
    from rigtool.sim.session_writer import capture_jobs
    jobs = {j.name: j for j in capture_jobs(sc) if j.kind == "posture"}
    print(f"rig calibrated (platform mass error "
          f"{rig_cal.rig.platform.params.mass - sc.platform_params.mass:+.4f} kg); "
          f"{len(jobs)} postures, {args.seeds} seeds, sigma 0.1 mm")

    stats = {c: {"com": [], "com_z": [], "inertia": [], "inertia_z": [], "time": []}
             for c in configs}
    for seed in range(args.seeds):
        rng = np.random.default_rng(5000 + seed)
        for ref in session.postures:
            jb = jobs[ref.name]
            data = synthesize_markers(trajs[ref.name], jb.marker_sets, noise_sigma_m=1e-4,
                                      rng=rng, rate_hz=jb.settings.rate_hz)
            tp = t_post[ref.name]
            i_max = np.linalg.eigvalsh(np.array(tp["inertia_com"]))[-1]
            for c in configs:
                parts = c.split("/")
                t1 = time.perf_counter()
                out = fit_one_posture(session, rig_cal, session.tree, markers, ref.capture,
                                      name=ref.name, window=ref.window, units=ref.units,
                                      total_mass_kg=truth["total_mass"],
                                      settings=session.filter, spring_model=parts[0],
                                      weighting=parts[1], compensate=len(parts) == 2,
                                      data=data)
                r = out.result
                st = stats[c]
                st["time"].append(time.perf_counter() - t1)
                e_c = r.com - np.array(tp["com"])
                e_i = (r.inertia_com - np.array(tp["inertia_com"])) / i_max
                st["com"].append(e_c)
                st["com_z"].append(np.abs(e_c) <= 2 * r.com_std)
                st["inertia"].append(e_i[np.triu_indices(3)])
                st["inertia_z"].append((np.abs(r.inertia_com - np.array(tp["inertia_com"]))
                                        <= 2 * r.inertia_com_std)[np.triu_indices(3)])
        print(f"  seed {seed} done", flush=True)

    print(f"\n{'configuration':28s} {'COM |mean| mm':>13s} {'COM max mm':>10s} "
          f"{'I |mean| %':>10s} {'I max %':>8s} {'cover COM':>9s} {'cover I':>8s} {'fit s':>6s}")
    for c in configs:
        st = stats[c]
        com = 1e3 * np.array(st["com"])
        ine = 100 * np.array(st["inertia"])
        print(f"{c:28s} {np.abs(com.mean(0)).max():13.3f} {np.abs(com).max():10.3f} "
              f"{np.abs(ine.mean(0)).max():10.3f} {np.abs(ine).max():8.3f} "
              f"{100 * np.mean(st['com_z']):8.0f}% {100 * np.mean(st['inertia_z']):7.0f}% "
              f"{np.median(st['time']):6.2f}")
    print("(COM and inertia errors over all postures and seeds; inertia in % of each "
          "posture's largest principal moment; cover = truth within +-2 reported std)")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
