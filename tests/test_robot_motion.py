"""A robot moving its joints on the platform: the base-wrench regressor (pinocchio) against
rigtool's rigid-body regressor when the joints are still, its rank (the Panda: 59, seven
more combinations than locked postures give), and the platform-and-robot simulator
against rigtool's own simulator of the locked composite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from rigtool.inertia import regressor_body
from rigtool.robot.base_parameters import overall_regressor
from rigtool.robot.motion_regressor import base_wrench_regressor, floating_model
from rigtool.robot.urdf_model import load_robot_model
from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def panda():
    return load_robot_model(example_robot_urdf("panda"), *EXAMPLE_ROBOTS["panda"][1:])


def test_still_joints_give_the_rigid_wrench(panda):
    model = floating_model(panda)
    rng = np.random.default_rng(0)
    lo, hi = panda.limits()
    q = rng.uniform(lo, hi, (3, 7))
    vb, ab = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    g = 9.81 * rng.standard_normal((3, 3))
    y = base_wrench_regressor(panda, model, q, 0 * q, 0 * q, vb, ab, g)
    pi = panda.prior_vector() * (1 + 0.1 * rng.standard_normal(80))
    for i in range(3):
        composite = overall_regressor(*panda.body_poses(q[i])) @ pi
        v, w = vb[i, :3], vb[i, 3:]
        # pinocchio's spatial acceleration -> the origin's classical acceleration
        y_rigid = regressor_body(ab[i, :3] + np.cross(w, v) - g[i], w, ab[i, 3:])
        assert np.allclose(y[i] @ pi, y_rigid @ composite, atol=1e-10)


def test_moving_joints_add_one_combination_per_revolute_joint(panda):
    model = floating_model(panda)
    rng = np.random.default_rng(1)
    lo, hi = panda.limits()
    t = 40
    y = base_wrench_regressor(panda, model, rng.uniform(lo, hi, (t, 7)),
                              rng.standard_normal((t, 7)), rng.standard_normal((t, 7)),
                              rng.standard_normal((t, 6)), rng.standard_normal((t, 6)),
                              9.81 * rng.standard_normal((t, 3)))
    w = y.reshape(-1, 80)
    s = np.linalg.svd(w / np.linalg.norm(w, axis=0), compute_uv=False)
    assert int(np.sum(s > 1e-8 * s[0])) == 52 + 7


def test_simulator_with_still_joints_matches_rigtool(panda):
    from rigtool.sim import dynamics as dyn
    from rigtool.sim.robot_motion import simulate_robot_motion
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.system import System
    from rigtool.tree import Link, Tree

    sc = load_scenario(ROOT / "scenarios" / "demo.toml")
    q0 = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.5, 0.3])
    off = np.array([0.01, -0.008, 0.006, 0.02, -0.015, 0.02])
    vel = np.array([0.01, 0.0, -0.01, 0.02, 0.0, 0.01])
    r_pb = np.eye(3)
    t_pb = np.array([0.1, -0.05, 0.0])
    tr = simulate_robot_motion(sc.rig, sc.platform_params, panda, r_pb, t_pb,
                               lambda t: (q0, np.zeros(7), np.zeros(7)), 1.5, 100.0,
                               platform_offset=off, platform_velocity=vel)
    composite = panda.composite(panda.prior_vector(), q0)
    system = System(sc.rig, sc.platform_params,
                    tree=Tree((Link("panda_link0", "platform", None, composite, {}),)),
                    base_rotation_platform=r_pb, base_position_platform_m=t_pb, posture={})
    ref = dyn.simulate(system, 1.5, 100.0, platform_offset=off, platform_velocity=vel)
    # RK4 at 5 ms against rigtool's integrator: micrometres over centimetres of motion
    assert np.abs(ref.position_m["platform"] - tr.position_m["platform"]).max() < 5e-6
    assert np.abs(ref.rotation["platform"] - tr.rotation["platform"]).max() < 1e-5


@pytest.mark.slow
def test_motion_capture_end_to_end(tmp_path, capsys):
    """Three locked postures and a 6 s capture of the joints moving (the Panda, simulated):
    rigtool run identifies 59 combinations (52 + one per revolute joint), each within four
    standard errors of the truth, and robot.urdf reproduces them as well as any physically
    consistent set can: its distance from the estimate (in the estimate's covariance) is no
    more than the truth's, plus the 0.01 per combination the per-link fit may give up."""
    import json

    from rigtool.cli import main
    from rigtool.robot.base_parameters import parameter_names
    from rigtool.sim.robot_session import write_robot_study

    _, base, fixed = EXAMPLE_ROBOTS["panda"]
    session = write_robot_study(ROOT / "scenarios" / "demo.toml", tmp_path,
                                example_robot_urdf("panda"), base, fixed, session="panda",
                                n_postures=3, seed=2, duration_s=8.0, motion_s=6.0)
    out = tmp_path / "results"
    assert main(["run", str(session), "-o", str(out), "--method", "equation-error"]) == 0
    rep = json.loads((out / "report.json").read_text())
    truth = json.loads((session.parent / "truth.json").read_text())
    robot = rep["robot"]
    bp = robot["base_parameters"]
    assert robot["with_motion"] and bp["rank"] == 59 and robot["locked_postures_rank"] < 52
    names = parameter_names(truth["bodies"])
    pi = np.array(truth["params"])
    written = load_robot_model(out / "robot.urdf", base, fixed).prior_vector()
    comb = np.zeros((bp["rank"], len(names)))
    for i, expr in enumerate(bp["expressions"]):
        for k, x in expr.items():
            comb[i, names.index(k)] = x
    values, std = np.array(bp["values"]), np.array(bp["std"])
    assert np.all(np.abs(values - comb @ pi) < 4 * std)
    info = np.linalg.inv(np.array(bp["covariance"]))
    d_truth, d_urdf = comb @ pi - values, comb @ written - values
    assert d_urdf @ info @ d_urdf <= d_truth @ info @ d_truth + 0.01 * bp["rank"] + 1e-6
    # encoders logged on another clock that covers none of the capture: stopped before any
    # posture is fitted, with one message naming their file
    joints = session.parent / "motion.joints.csv"
    lines = joints.read_text().splitlines()
    shifted = [lines[0]] + [",".join([f[0], f"{float(f[1]) + 100.0:.6f}", *f[2:]])
                            for f in (line.split(",") for line in lines[1:])]
    joints.write_text("\n".join(shifted) + "\n")
    capsys.readouterr()
    assert main(["run", str(session), "-o", str(tmp_path / "again")]) == 2
    assert "motion.joints.csv" in capsys.readouterr().err
    assert not (tmp_path / "again" / "report.json").exists()


def test_motion_rows_hold_for_the_true_parameters(panda):
    """Noise-free markers of the Panda moving on the demo rig: with the true parameters the
    motion capture's equations leave a residual of a few 1e-4 of the wrench they balance
    (the filter's passband ripple acting on products of signals); in particular no
    constant force (the zero-phase filter's gain at 0 Hz differs from 1 by a few 1e-4:
    gravity's share goes through it as the springs' wrench does). Encoders on a clock of
    their own are put back on the capture's."""
    from rigtool.config import FilterSettings
    from rigtool.robot.joint_angles import JointAngles
    from rigtool.robot.motion_advice import advise_motion, rig_with_robot
    from rigtool.robot.motion_fit import motion_rows
    from rigtool.sim.markers import MarkerSet, synthesize_markers
    from rigtool.sim.robot_motion import simulate_robot_motion
    from rigtool.sim.robot_session import BASE_MARKERS
    from rigtool.sim.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "demo.toml")
    q0 = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.5, 0.3])
    lin = rig_with_robot(sc.rig, sc.platform_params, panda, q0, np.eye(3),
                                 np.zeros(3))
    joints = advise_motion(panda, q0, lin)
    rate = 120.0
    tr = simulate_robot_motion(sc.rig, sc.platform_params, panda, np.eye(3), np.zeros(3),
                               joints.trajectory(), 6.0, rate,
                               platform_offset=np.array([0.01, 0, 0.005, 0.01, 0.01, 0]))
    sets = [MarkerSet("platform", sc.rig.platform.markers_platform, sc.platform_subject),
            MarkerSet("panda_link0", {k: np.array(v) for k, v in BASE_MARKERS.items()},
                      "robot")]
    data = synthesize_markers(tr, sets, noise_sigma_m=0.0, rng=np.random.default_rng(0),
                              rate_hz=rate)
    angles = JointAngles(Path("motion.joints.csv"), tr.time_s, list(panda.moving_joints),
                         tr.q)
    rows = motion_rows(panda, sc.rig, sc.platform_params, data, angles, FilterSettings(),
                       np.eye(3), np.zeros(3))
    resid = (rows.b - rows.a @ panda.prior_vector())[rows.used]
    signal = (rows.a @ panda.prior_vector())[rows.used]
    weight = 9.80665 * (sc.platform_params.mass + sum(b.prior.mass for b in panda.bodies))
    assert abs(resid[:, 2].mean()) < 2e-5 * weight
    assert np.all(np.sqrt(np.mean(resid ** 2, axis=0))
                  < 2e-3 * np.sqrt(np.mean(signal ** 2, axis=0)) + 1e-3)
    assert rows.clock is not None and not rows.clock.applied
    # the encoders logged on a clock 37 ms ahead: found from the motion to a millisecond
    # (a tenth of a frame) and taken off, and the equations hold as before
    late = JointAngles(angles.path, angles.time_s + 0.037, angles.names, angles.values)
    shifted = motion_rows(panda, sc.rig, sc.platform_params, data, late, FilterSettings(),
                          np.eye(3), np.zeros(3))
    assert shifted.clock.applied and abs(shifted.clock.offset_s - 0.037) < 1e-3
    assert "37 ms ahead of the capture's" in shifted.clock.note()
    # encoders that cover none of the capture: one message naming their file
    from rigtool.errors import ConfigError
    far = JointAngles(angles.path, angles.time_s + 100.0, angles.names, angles.values)
    with pytest.raises(ConfigError, match="cover no frame of the capture") as err:
        motion_rows(panda, sc.rig, sc.platform_params, data, far, FilterSettings(),
                    np.eye(3), np.zeros(3))
    assert "motion.joints.csv" in str(err.value)
    # what a millisecond's error leaves: the signal's rate at the top sine times 1 ms
    resid_late = (shifted.b - shifted.a @ panda.prior_vector())[shifted.used]
    slack = 2 * np.pi * joints.frequencies_hz.max() * 1e-3
    assert np.all(np.sqrt(np.mean(resid_late ** 2, axis=0))
                  < (2e-3 + slack) * np.sqrt(np.mean(signal ** 2, axis=0)) + 1e-3)
