"""Equation-error against output-error, per locked posture (issue 10).

Simulates the paper-002 scenario once, calibrates the rig from its noisy calibration captures
exactly as `rigtool calibrate` does, then for every noise seed (sigma = 0.1 mm) re-synthesises
the posture markers, fits each posture by equation error (rigtool.identify.overall, the
default exact/noise configuration) and refines it by output error
(rigtool.identify.output_error.refine_posture). Prints per posture and method: mean COM error
(mm, worst axis; the bias), its spread, mean inertia error (% of the posture's largest
principal moment), coverage of +-2 reported standard errors, and the median fit time.

    python3 benchmarks/output_error.py [--seeds 20] [--rig calibrated|true|both]
                                       [--nuisance none|damping-scale] [--postures posture1,...]

``--rig true`` fits with the simulator's rig and platform (no calibration error): what the
estimators do by themselves. ``calibrated`` is the end-to-end figure.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    from rigtool.config import FilterSettings, load_rig, load_session
    from rigtool.identify.output_error import calibration_std_from_rigfile, refine_posture
    from rigtool.pipeline.calibration import (calibrated_rig_document, default_output,
                                              run_calibration)
    from rigtool.pipeline.session import fit_one_posture, link_markers
    from rigtool.sim.markers import synthesize_markers
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import capture_jobs, simulate_job, system_for, write_bundle
    from rigtool.tomlwrite import dumps

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios/two_link_paper002.toml")
    ap.add_argument("--rig", choices=("calibrated", "true", "both"), default="both")
    ap.add_argument("--nuisance", default="none")
    ap.add_argument("--postures", default="")
    args = ap.parse_args()

    sc = load_scenario(args.scenario)
    trajs: dict[str, object] = {}

    def caching(scn, job):
        trajs[job.name] = simulate_job(scn, job)
        return trajs[job.name]

    tmp = Path(tempfile.mkdtemp(prefix="rigtool-oe-bench-"))
    t0 = time.perf_counter()
    bundle = write_bundle(sc, tmp, simulator=caching)
    print(f"simulated and wrote {args.scenario.name} in {time.perf_counter() - t0:.1f} s")
    rigfile = load_rig(bundle.rig_file if bundle.rig_file.is_absolute() else tmp / bundle.rig_file)
    job = run_calibration(rigfile)
    cal_path = default_output(rigfile.path)
    cal_path.write_text(dumps(calibrated_rig_document(rigfile, job, cal_path, FilterSettings())))
    session_path = (bundle.session_file if bundle.session_file.is_absolute()
                    else tmp / bundle.session_file)
    session = load_session(session_path)
    rig_cal = load_rig(session.rig_path)
    truth = json.loads((session_path.parent / "truth.json").read_text())
    t_post = {p["name"]: p for p in truth["postures"]}
    markers = link_markers(session, session.tree)
    jobs = {j.name: j for j in capture_jobs(sc) if j.kind == "posture"}
    refs = [r for r in session.postures
            if not args.postures or r.name in args.postures.split(",")]
    rigs = {"calibrated": rig_cal}
    if args.rig in ("true", "both"):
        sys_true = system_for(sc, jobs[refs[0].name])
        true_rig = replace(sys_true.rig, platform=replace(rig_cal.rig.platform,
                                                          params=sys_true.platform_params))
        rigs["true"] = replace(rig_cal, rig=true_rig)
    if args.rig == "true":
        del rigs["calibrated"]
    # the calibrated rig's standard errors enter the output-error covariance (the true rig
    # has none); the equation-error fit reports marker-noise errors only
    cal_std = {rn: (calibration_std_from_rigfile(rf.raw, rf.rig) if rn == "calibrated" else None)
               for rn, rf in rigs.items()}
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
                                    calibration_std=cal_std[rn])
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


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
