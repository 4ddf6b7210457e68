"""Benchmark: a robot from its URDF measured in locked postures, end to end.

For each robot (example-robot-data's Franka Panda, 7 axes, 17.45 kg; Universal Robots UR5,
6 axes, 20.99 kg) a study is simulated on the demo rig (rigtool.sim.robot_session: each
locked posture a rigid object with the composite inertia, integrated by rigtool's
simulator; 0.1 mm marker noise; encoders with 2e-5 rad noise) with the URDF given to
rigtool as a CAD prior perturbed from the truth (masses +-15 %, COMs +-1 cm, principal
moments +-25 %, uniform). ``rigtool run`` (the true calibration, the default output-error
posture fits) then gives the base parameters and robot.urdf. Printed:

- per posture: the COM error (mm) and the largest inertia-entry error (% of the largest
  principal moment of that posture's inertia);
- per identifiable base parameter (named by its leading standard parameter): the error of
  the estimate and of the CAD prior against the truth, in units by kind (mass terms: % of
  the total mass; first moments: mm x total mass, i.e. error / M in mm; inertia terms: % of
  the largest principal moment over the postures), and the error over the standard error;
- the coverage of +-2 standard errors, the RMS of error / std, and the same for robot.urdf
  (the per-link physically consistent fit) against the base parameters.

With ``--motion SECONDS`` the study also has a capture of the joints moved by the motors
along the trajectory rigtool advises (rigtool.robot.motion_advice; simulated by
rigtool.sim.robot_motion; ``[relative_motion]`` with the encoders' file), whose rows join
the postures' (rigtool.robot.motion_fit): one more combination per revolute joint. The
platform's excursion during that capture is printed.

With ``--seeds N`` the coverage and the largest errors are pooled over seeds.

Run: ``python3 benchmarks/robot.py [--robots panda,ur5] [--postures 9] [--seed 0]
[--seeds 1] [--duration 15] [--rate 100] [--motion 14] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from rigtool.cli import main as cli
from rigtool.robot.base_parameters import parameter_names
from rigtool.robot.urdf_model import load_robot_model
from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf
from rigtool.sim.robot_session import write_robot_study

ROOT = Path(__file__).resolve().parents[1]


def _combination(expr: dict, names: list[str]) -> np.ndarray:
    c = np.zeros(len(names))
    for k, v in expr.items():
        c[names.index(k)] = v
    return c


def _kind(name: str) -> str:
    lead = name.split(" ")[0].split("_")[0]
    return "mass" if lead == "m" else "first" if lead.startswith("M") else "inertia"


def one_robot(name: str, n_postures: int, seed: int, duration: float, folder: Path,
              motion_s: float | None = None, rate_hz: float | None = None) -> dict:
    _, base, fixed = EXAMPLE_ROBOTS[name]
    t0 = time.perf_counter()
    session = write_robot_study(ROOT / "scenarios" / "demo.toml", folder,
                                example_robot_urdf(name), base, fixed, session=name,
                                n_postures=n_postures, seed=seed, duration_s=duration,
                                motion_s=motion_s, rate_hz=rate_hz)
    t_sim = time.perf_counter() - t0
    out = folder / "results"
    t0 = time.perf_counter()
    code = cli(["run", str(session), "-o", str(out)])
    t_run = time.perf_counter() - t0
    assert code == 0, f"rigtool run exited {code}"
    rep = json.loads((out / "report.json").read_text())
    truth = json.loads((session.parent / "truth.json").read_text())
    m_total = truth["total_mass"]
    print(f"\n== {name}: {len(truth['bodies'])} bodies, {m_total:.3f} kg, {n_postures} "
          f"postures, seed {seed} (simulated in {t_sim:.0f} s, rigtool run {t_run:.0f} s)")
    if motion_s is not None:
        _print_sway(session.parent, rep)
    print("per posture: COM error (mm), inertia error (% of the largest principal moment)")
    lam_max, com_err, inertia_err = 0.0, [], []
    for pt, pr in zip(truth["postures"], rep["postures"]):
        ic_t = np.array(pt["inertia_com"])
        lam = np.linalg.eigvalsh(ic_t)[-1]
        lam_max = max(lam_max, lam)
        e_c = 1e3 * np.linalg.norm(np.array(pr["com"]) - np.array(pt["com"]))
        e_i = 100 * np.abs(np.array(pr["inertia_com"]) - ic_t).max() / lam
        com_err.append(e_c)
        inertia_err.append(e_i)
        print(f"  {pt['name']}: COM {e_c:.3f} mm, inertia {e_i:.3f} %")
    bp = rep["robot"]["base_parameters"]
    names = parameter_names(truth["bodies"])
    pi_true = np.array(truth["params"])
    pi_prior = np.array(truth["prior_params"])
    model = load_robot_model(out / "robot.urdf", truth["base_link"], truth["fixed_joints"])
    pi_urdf = model.prior_vector()
    unit = {"mass": (100.0 / m_total, "% M"), "first": (1e3 / m_total, "mm M"),
            "inertia": (100.0 / lam_max, "% Imax")}
    print(f"base parameters: rank {bp['rank']} of {bp['n_parameters']}, reduced chi^2 "
          f"{bp['reduced_chi2']:.3g}" + (f" (locked postures alone: rank "
                                         f"{rep['robot']['locked_postures_rank']}; with the "
                                         f"joints' motion, {motion_s:g} s)"
                                         if rep["robot"].get("with_motion") else ""))
    print(f"  {'base parameter':28s} {'unit':>6s} {'error':>9s} {'prior':>9s} {'err/std':>8s}")
    z, z_urdf, worst = [], [], {"mass": [0, 0], "first": [0, 0], "inertia": [0, 0]}
    for label, expr, v, s in zip(bp["names"], bp["expressions"], bp["values"], bp["std"]):
        c = _combination(expr, names)
        kind = _kind(label)
        k, u = unit[kind]
        err, err_prior = v - c @ pi_true, c @ pi_prior - c @ pi_true
        z.append(err / s)
        z_urdf.append((c @ pi_urdf - v) / s)
        worst[kind][0] = max(worst[kind][0], abs(err * k))
        worst[kind][1] = max(worst[kind][1], abs(err_prior * k))
        lead = label.split(" ")[0] + (" +..." if len(expr) > 1 else "")
        print(f"  {lead:28s} {u:>6s} {err * k:9.4f} {err_prior * k:9.4f} {err / s:8.2f}")
    z, z_urdf = np.array(z), np.array(z_urdf)
    cover = float(np.mean(np.abs(z) <= 2.0))
    print(f"largest errors (estimate / CAD prior): mass {worst['mass'][0]:.4f} / "
          f"{worst['mass'][1]:.4f} % M, first moments {worst['first'][0]:.4f} / "
          f"{worst['first'][1]:.4f} mm M, inertia {worst['inertia'][0]:.4f} / "
          f"{worst['inertia'][1]:.4f} % Imax")
    print(f"coverage of +-2 std: {100 * cover:.0f} % ({int(np.sum(np.abs(z) <= 2))} of "
          f"{z.size}); RMS of error/std {np.sqrt(np.mean(z ** 2)):.2f}")
    print(f"robot.urdf (physically consistent, closest to the prior) reproduces the base "
          f"parameters within {np.abs(z_urdf).max():.2f} std "
          f"(RMS {np.sqrt(np.mean(z_urdf ** 2)):.2f})")
    adv = rep["robot"].get("advice")
    if adv:
        print(f"advice: {adv['text']}")
    return {"robot": name, "rank": bp["rank"], "z": z, "worst": worst,
            "com_mm": max(com_err), "inertia_pct": max(inertia_err),
            "urdf_z": float(np.abs(z_urdf).max()), "run_s": t_run}


def _print_sway(folder: Path, rep: dict) -> None:
    """The platform's excursion during the motion capture (the platform frame's origin and
    its rotation from the first frame), the motion's frequencies and the rig's modes."""
    from rigtool.kinematics.pose import body_trajectory
    from rigtool.mocap import read_capture

    manifest = (folder / "session.toml").read_text()
    capture = next(line.split('"')[1] for line in manifest.splitlines()
                   if line.startswith("capture") and "motion" in line)
    from rigtool.config import load_rig

    rig = load_rig(next((folder.parents[1] / "calibration").glob("*.calibrated.toml"))).rig
    data = read_capture(folder / capture)
    traj = body_trajectory(data, rig.platform.markers_platform)
    p = traj.position_m[traj.valid]
    r = traj.rotation[traj.valid]
    angle = np.degrees(np.arccos(np.clip((np.einsum("tij,ij->t", r, r[0]) - 1) / 2, -1, 1)))
    motion = json.loads((folder / "truth.json").read_text())["motion"]
    print(f"motion capture: platform excursion {1e3 * np.ptp(p, axis=0).max():.1f} mm, "
          f"rotation up to {angle.max():.2f} deg (joint sines at "
          f"{', '.join(f'{f:.2f}' for f in motion['frequencies_hz'])} Hz, rig modes "
          f"{', '.join(f'{f:.2f}' for f in motion['rig_modes_hz'])} Hz)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default="panda,ur5")
    ap.add_argument("--postures", type=int, default=9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=1, help="seeds from --seed on; the "
                    "coverage and the largest errors are pooled over them")
    ap.add_argument("--rate", type=float, default=None, help="frame rate, Hz (default: "
                    "the demo scenario's 100)")
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--keep", type=Path, default=None, help="keep the studies here")
    ap.add_argument("--motion", type=float, default=None, metavar="SECONDS",
                    help="also a capture of the joints moved by the motors (multi-sine about "
                         "the first posture) this long, as [relative_motion]")
    args = ap.parse_args()
    for name in args.robots.split(","):
        runs = []
        for seed in range(args.seed, args.seed + args.seeds):
            if args.keep is not None:
                runs.append(one_robot(name, args.postures, seed, args.duration,
                                      args.keep / f"{name}-{seed}", args.motion, args.rate))
            else:
                with tempfile.TemporaryDirectory() as tmp:
                    runs.append(one_robot(name, args.postures, seed, args.duration, Path(tmp),
                                          args.motion, args.rate))
        if len(runs) > 1:
            z = np.concatenate([r["z"] for r in runs])
            worst = {k: max(r["worst"][k][0] for r in runs) for k in runs[0]["worst"]}
            prior = {k: max(r["worst"][k][1] for r in runs) for k in runs[0]["worst"]}
            print(f"\n== {name}, seeds {args.seed}-{args.seed + args.seeds - 1} pooled: "
                  f"coverage of +-2 std {100 * np.mean(np.abs(z) <= 2):.1f} % "
                  f"({int(np.sum(np.abs(z) <= 2))} of {z.size}), RMS error/std "
                  f"{np.sqrt(np.mean(z ** 2)):.2f}; largest errors (estimate / CAD prior): "
                  f"mass {worst['mass']:.4f} / {prior['mass']:.3f} % M, first moments "
                  f"{worst['first']:.4f} / {prior['first']:.3f} mm M, inertia "
                  f"{worst['inertia']:.4f} / {prior['inertia']:.3f} % Imax; posture COM "
                  f"{max(r['com_mm'] for r in runs):.3f} mm, inertia "
                  f"{max(r['inertia_pct'] for r in runs):.3f} %; robot.urdf within "
                  f"{max(r['urdf_z'] for r in runs):.2f} std; rigtool run "
                  f"{min(r['run_s'] for r in runs):.0f}-{max(r['run_s'] for r in runs):.0f} s")


if __name__ == "__main__":
    main()
