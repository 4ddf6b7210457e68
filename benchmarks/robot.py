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
(rigtool.sim.robot_motion; ``[relative_motion]`` with the encoders' file), whose rows join
the postures' (rigtool.robot.motion_fit): one more combination per revolute joint.

Run: ``python3 benchmarks/robot.py [--robots panda,ur5] [--postures 9] [--seed 0]
[--duration 15] [--motion 10] [--keep DIR]``.
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
              motion_s: float | None = None) -> dict:
    _, base, fixed = EXAMPLE_ROBOTS[name]
    t0 = time.perf_counter()
    session = write_robot_study(ROOT / "scenarios" / "demo.toml", folder,
                                example_robot_urdf(name), base, fixed, session=name,
                                n_postures=n_postures, seed=seed, duration_s=duration,
                                motion_s=motion_s)
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
    print("per posture: COM error (mm), inertia error (% of the largest principal moment)")
    lam_max = 0.0
    for pt, pr in zip(truth["postures"], rep["postures"]):
        ic_t = np.array(pt["inertia_com"])
        lam = np.linalg.eigvalsh(ic_t)[-1]
        lam_max = max(lam_max, lam)
        e_c = 1e3 * np.linalg.norm(np.array(pr["com"]) - np.array(pt["com"]))
        e_i = 100 * np.abs(np.array(pr["inertia_com"]) - ic_t).max() / lam
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
    return {"robot": name, "rank": bp["rank"], "coverage": cover,
            "rms_z": float(np.sqrt(np.mean(z ** 2)))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default="panda,ur5")
    ap.add_argument("--postures", type=int, default=9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--keep", type=Path, default=None, help="keep the studies here")
    ap.add_argument("--motion", type=float, default=None, metavar="SECONDS",
                    help="also a capture of the joints moved by the motors (multi-sine about "
                         "the first posture) this long, as [relative_motion]")
    args = ap.parse_args()
    for name in args.robots.split(","):
        if args.keep is not None:
            one_robot(name, args.postures, args.seed, args.duration, args.keep / name,
                      args.motion)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                one_robot(name, args.postures, args.seed, args.duration, Path(tmp),
                          args.motion)


if __name__ == "__main__":
    main()
