"""Equation-error against output-error, per locked posture.

Simulates the paper-002 scenario once, calibrates the rig from its noisy calibration captures
exactly as `rigtool calibrate` does, then for every noise seed (sigma = 0.1 mm) re-synthesises
the posture markers, fits each posture by equation error (rigtool.identify.posture.equation_error, the
default exact/noise configuration) and refines it by output error
(rigtool.identify.posture.output_error.refine_posture). Prints per posture and method: mean COM error
(mm, worst axis; the bias), its spread, mean inertia error (% of the posture's largest
principal moment), coverage of +-2 reported standard errors, and the median fit time.

    python3 benchmarks/output_error.py [--seeds 20] [--rig calibrated,refined,true]
                                       [--nuisance none|damping-scale] [--postures posture1,...]
    python3 benchmarks/output_error.py --stage calibration [--seeds 3]

``--stage calibration`` compares the equation-error calibration (rigtool calibrate) with its
output-error refinement (refine_calibration) over the scenario's calibration captures.

Rigs: ``calibrated`` is what ``run_calibration`` (rigtool calibrate's default) writes -- since
the pipeline refines calibration by output error, that is the refined rig with standard
errors only; ``refined`` runs refine_calibration here and passes its full covariance;
``true`` fits with the simulator's rig and platform (no calibration error): what the
estimators do by themselves. ``calibrated`` is the end-to-end figure.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from _simulated import calibrated_session, simulate_bundle

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    from rigtool.identify.posture.output_error import refine_posture
    from rigtool.calibration_uncertainty import calibration_std_from_rigfile
    from rigtool.identify.common.output_error import base_pose_covariance
    from rigtool.kinematics.pose import body_trajectory
    from rigtool.pipeline.session import fit_one_posture
    from rigtool.sim.markers import synthesize_markers
    from rigtool.sim.session_writer import capture_jobs, system_for

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios/two_link_paper002.toml")
    ap.add_argument("--rig", default="calibrated,true",
                    help="comma list of: calibrated (rigtool calibrate), true (the "
                         "simulator's), refined (calibrated, then refine_calibration)")
    ap.add_argument("--nuisance", default="none")
    ap.add_argument("--postures", default="")
    ap.add_argument("--stage", choices=("posture", "calibration"), default="posture")
    args = ap.parse_args()
    if args.stage == "calibration":
        return calibration_benchmark(args)

    sim = simulate_bundle(args.scenario, "rigtool-oe-bench-")
    print(f"simulated and wrote {args.scenario.name} in {sim.seconds:.1f} s")
    sc, trajs, rigfile = sim.scenario, sim.trajectories, sim.rigfile
    cal = calibrated_session(sim)
    job, session, rig_cal, truth, markers = (cal.job, cal.session, cal.rig_calibrated,
                                             cal.truth, cal.markers)
    t_post = {p["name"]: p for p in truth["postures"]}
    jobs = {j.name: j for j in capture_jobs(sc) if j.kind == "posture"}
    refs = [r for r in session.postures
            if not args.postures or r.name in args.postures.split(",")]
    wanted = args.rig.split(",")
    rigs = {"calibrated": rig_cal} if "calibrated" in wanted else {}
    if "true" in wanted:
        sys_true = system_for(sc, jobs[refs[0].name])
        true_rig = replace(sys_true.rig, platform=replace(rig_cal.rig.platform,
                                                          params=sys_true.platform_params))
        rigs["true"] = replace(rig_cal, rig=true_rig)
    refined_std = None
    if "refined" in wanted:
        from rigtool.identify.calibration.output_error import OECapture, refine_calibration
        from rigtool.mocap import read_capture
        oe_caps = [OECapture(c.capture.stem, read_capture(c.capture, units=c.units), cap.load,
                             c.window)
                   for c, cap in zip(rigfile.captures, job.captures) if not c.holdout]
        t1 = time.perf_counter()
        ref_cal = refine_calibration(rig_cal.rig, rig_cal.rig.platform.params, oe_caps)
        print(f"refine_calibration: {time.perf_counter() - t1:.0f} s, platform mass error "
              f"{ref_cal.platform.mass - sc.platform_params.mass:+.5f} kg")
        rigs["refined"] = replace(rig_cal, rig=ref_cal.rig)
        refined_std = ref_cal.as_calibration_std()
    # the calibrated rig's standard errors enter the output-error covariance (the true rig
    # has none); the equation-error fit reports marker-noise errors only
    cal_std = {"calibrated": calibration_std_from_rigfile(rig_cal.raw, rig_cal.rig),
               "true": None, "refined": refined_std}
    print(f"{len(refs)} postures, {args.seeds} seeds, sigma 0.1 mm, rigs: {', '.join(rigs)}, "
          f"output-error nuisance: {args.nuisance}")

    keys = [(rn, ref.name, meth) for rn in rigs for ref in refs for meth in ("EE", "OE")]
    stats = {k: {"com": [], "com_z": [], "inertia": [], "inertia_z": [], "time": [],
                 "rms": [], "z_noise": []} for k in keys}
    for seed in range(args.seeds):
        rng = np.random.default_rng(5000 + seed)
        for ref in refs:
            jb = jobs[ref.name]
            data = synthesize_markers(trajs[ref.name], jb.marker_sets, noise_sigma_m=1e-4,
                                      rng=rng, rate_hz=jb.settings.rate_hz)
            tp = t_post[ref.name]
            com_t, i_t = np.array(tp["com"]), np.array(tp["inertia_com"])
            i_max = np.linalg.eigvalsh(i_t)[-1]
            pt = body_trajectory(data, rig_cal.rig.platform.markers_platform)
            bt = body_trajectory(data, markers[session.tree.links[0].name])
            _, _, pose_cov, _ = base_pose_covariance(pt.rotation, pt.position_m,
                                                     bt.rotation, bt.position_m)
            for rn, rf in rigs.items():
                t1 = time.perf_counter()
                out = fit_one_posture(session, rf, session.tree, markers, ref.capture,
                                      name=ref.name, window=ref.window, units=ref.units,
                                      total_mass_kg=truth["total_mass"],
                                      settings=session.filter, data=data)
                t_ee = time.perf_counter() - t1
                oe = refine_posture(rf.rig, rf.rig.platform.params, data,
                                    base_rotation_platform=out.base_rotation_platform,
                                    base_position_platform=out.base_position_platform,
                                    total_mass_kg=truth["total_mass"], start=out.result,
                                    window=ref.window, nuisance=args.nuisance,
                                    calibration_std=cal_std[rn], base_pose_cov=pose_cov)
                for meth, r, el in (("EE", out.result, t_ee), ("OE", oe, oe.elapsed_s)):
                    st = stats[(rn, ref.name, meth)]
                    st["time"].append(el)
                    st["com"].append(r.com - com_t)
                    st["com_z"].append(np.abs(r.com - com_t) <= 2 * r.com_std)
                    st["inertia"].append(((r.inertia_com - i_t) / i_max)[np.triu_indices(3)])
                    st["inertia_z"].append((np.abs(r.inertia_com - i_t)
                                            <= 2 * r.inertia_com_std)[np.triu_indices(3)])
                    if meth == "OE":
                        st["rms"].append(r.residual_rms_mm)
                        st["z_noise"].append(np.concatenate([
                            np.abs(r.com - com_t) <= 2 * r.com_std_noise,
                            (np.abs(r.inertia_com - i_t)
                             <= 2 * r.inertia_com_std_noise)[np.triu_indices(3)]]))
        print(f"  seed {seed} done", flush=True)

    print(f"\n{'rig':10s} {'posture':9s} {'meth':4s} {'COM |mean| mm':>13s} {'COM rms mm':>10s} "
          f"{'I |mean| %':>10s} {'I rms %':>8s} {'cover COM':>9s} {'cover I':>8s} {'time s':>7s}")
    for k in keys:
        st = stats[k]
        com = 1e3 * np.array(st["com"])
        ine = 100 * np.array(st["inertia"])
        print(f"{k[0]:10s} {k[1]:9s} {k[2]:4s} {np.abs(com.mean(0)).max():13.4f} "
              f"{np.sqrt((com ** 2).mean(0)).max():10.4f} {np.abs(ine.mean(0)).max():10.4f} "
              f"{np.sqrt((ine ** 2).mean(0)).max():8.4f} {100 * np.mean(st['com_z']):8.0f}% "
              f"{100 * np.mean(st['inertia_z']):7.0f}% {np.median(st['time']):7.2f}")
    for rn in rigs:
        for meth in ("EE", "OE"):
            cz = np.concatenate([np.ravel(stats[(rn, r.name, meth)]["com_z"]) for r in refs])
            iz = np.concatenate([np.ravel(stats[(rn, r.name, meth)]["inertia_z"]) for r in refs])
            print(f"{rn:10s} all       {meth:4s} coverage (COM and inertia entries together) "
                  f"{100 * np.mean(np.concatenate([cz, iz])):.1f}%")
    for rn in rigs:
        zn = np.concatenate([np.ravel(stats[(rn, r.name, "OE")]["z_noise"]) for r in refs])
        print(f"{rn:10s} all       OE   coverage with marker-noise standard errors only "
              f"{100 * np.mean(zn):.1f}%")
    rms = [x for k in keys for x in stats[k]["rms"]]
    print(f"output-error marker residual RMS: median {np.median(rms):.4f} mm "
          "(marker noise 0.1 mm)")
    print("(COM |mean|: worst axis of the mean error over seeds, the bias; rms: worst axis; "
          "inertia in % of the posture's largest principal moment, upper triangle; cover = "
          "truth within +-2 reported std)")


def calibration_benchmark(args) -> None:
    """Equation-error calibration against its output-error refinement, per seed."""
    from rigtool.config import FilterSettings
    from rigtool.identify.calibration.equation_error import calibrate_motion
    from rigtool.identify.calibration.output_error import OECapture, refine_calibration
    from rigtool.pipeline.calibration import prepare_capture
    from rigtool.sim.markers import synthesize_markers
    from rigtool.sim.session_writer import capture_jobs

    sim = simulate_bundle(args.scenario, "rigtool-oe-cal-bench-")
    sc, trajs, rigfile = sim.scenario, sim.trajectories, sim.rigfile
    jobs = {j.name: j for j in capture_jobs(sc) if j.kind == "calibration"}
    k_true = np.array([s.stiffness for s in sc.rig.springs])
    plat = sc.platform_params
    i_max = np.linalg.eigvalsh(plat.inertia_com)[-1]
    rows = {"EE": [], "OE": []}
    for seed in range(args.seeds):
        rng = np.random.default_rng(7000 + seed)
        caps, oe_caps = [], []
        for i, c in enumerate(rigfile.captures):
            name = c.capture.stem
            jb = jobs[name]
            data = synthesize_markers(trajs[name], jb.marker_sets, noise_sigma_m=1e-4, rng=rng,
                                      rate_hz=jb.settings.rate_hz)
            cap = prepare_capture(rigfile, c, data, FilterSettings(), seed=i)
            caps.append(cap)
            if not c.holdout:
                oe_caps.append(OECapture(name, data, cap.load, c.window))
        t1 = time.perf_counter()
        ee = calibrate_motion(rigfile.rig, caps)
        t_ee = time.perf_counter() - t1
        start = replace(rigfile.rig, springs=tuple(
            replace(s, stiffness=float(ee.stiffness[j]), free_length=float(ee.free_length[j]),
                    damping=float(ee.damping[j])) for j, s in enumerate(rigfile.rig.springs)))
        oe = refine_calibration(start, ee.platform, oe_caps)
        for meth, k, k_std, p, m_std, i_std, el in (
                ("EE", ee.stiffness, ee.stiffness_std, ee.platform, ee.platform_mass_std,
                 ee.platform_inertia_std, t_ee),
                ("OE", oe.rig.stiffness, oe.stiffness_std, oe.platform, oe.platform_mass_std,
                 oe.platform_inertia_std, oe.elapsed_s)):
            e_i = (p.inertia_com - plat.inertia_com)[np.triu_indices(3)]
            rows[meth].append({
                "k": 100 * (k / k_true - 1), "m": 100 * (p.mass / plat.mass - 1),
                "i": 100 * e_i / i_max, "time": el,
                "z": np.concatenate([np.abs(k - k_true) <= 2 * k_std,
                                     [abs(p.mass - plat.mass) <= 2 * m_std],
                                     np.abs(e_i) <= 2 * i_std[np.triu_indices(3)]])})
        print(f"  seed {seed} done (OE {oe.elapsed_s:.0f} s, {oe.iterations} iterations, "
              f"marker sigma {oe.marker_sigma_mm:.4f} mm)", flush=True)
    print(f"\n{'meth':4s} {'k |mean| %':>10s} {'k max %':>8s} {'m |mean| %':>10s} "
          f"{'I |mean| %':>10s} {'I max %':>8s} {'cover':>6s} {'time s':>7s}")
    for meth, rs in rows.items():
        k = np.array([r["k"] for r in rs])
        m = np.array([r["m"] for r in rs])
        ii = np.array([r["i"] for r in rs])
        print(f"{meth:4s} {np.abs(k.mean(0)).max():10.4f} {np.abs(k).max():8.4f} "
              f"{abs(m.mean()):10.4f} {np.abs(ii.mean(0)).max():10.4f} {np.abs(ii).max():8.4f} "
              f"{100 * np.mean([r['z'] for r in rs]):5.0f}% {np.median([r['time'] for r in rs]):7.1f}")
    print("(stiffness and platform mass in %; inertia in % of the platform's largest principal "
          "moment; cover = truth within +-2 reported std, stiffness, mass and inertia entries)")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
