"""Experiment design for a robot: postures that keep the arm clear of the deck, and a joint
motion within the limits whose frequencies keep clear of the rig's modes and that adds one
combination per revolute joint (the Panda: 52 -> 59)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pinocchio")

from rigtool.robot.advice import candidate_postures
from rigtool.robot.base_parameters import overall_regressor, structural_rows
from rigtool.robot.clearance import MIN_DECK_CLEARANCE_M, clear_of_deck, deck_heights_m
from rigtool.robot.motion_advice import (MODE_MARGIN, MAX_ACCELERATION, VELOCITY_FRACTION,
                                         advise_motion, motion_frequencies, motion_rank,
                                         rig_with_robot)
from rigtool.robot.urdf_model import load_robot_model
from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf

ROOT = Path(__file__).resolve().parents[1]


def _robot(name):
    return load_robot_model(example_robot_urdf(name), *EXAMPLE_ROBOTS[name][1:])


def test_the_deck_is_seen():
    ur5 = _robot("ur5")
    # the UR5 stretched out at its shoulder's height (0.089 m): its wrist hangs 5 mm below
    # the mounting face
    assert not clear_of_deck(ur5, np.zeros(6))
    assert deck_heights_m(ur5, np.zeros(6)).min() < 0.0
    # shoulder lifted 90 deg: the arm stands up
    up = np.array([0.0, -np.pi / 2, 0.0, -np.pi / 2, 0.0, 0.0])
    assert clear_of_deck(ur5, up)
    for name in ("panda", "ur5"):
        robot = _robot(name)
        for q in candidate_postures(robot, 30, seed=1):
            assert deck_heights_m(robot, q).min() >= MIN_DECK_CLEARANCE_M


def test_motion_frequencies_keep_clear_of_the_modes():
    modes = np.array([0.40, 0.46, 1.13, 2.02, 2.64, 3.54])
    f = motion_frequencies(modes, n=3)
    assert f.size == 3 and np.all(np.diff(f) >= 0.1 - 1e-9)
    assert np.all(np.abs(f[:, None] - modes) > MODE_MARGIN * modes)
    assert np.all(np.abs(2 * f[:, None] - modes) > MODE_MARGIN / 3 * modes)
    with pytest.raises(ValueError, match="modes"):
        motion_frequencies(np.arange(0.3, 2.6, 0.1), n=3)


def test_advised_motion_stays_inside_the_limits_and_adds_a_combination_per_joint():
    from rigtool.sim.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "demo.toml")
    panda = _robot("panda")
    center = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.5, 0.3])
    lin = rig_with_robot(sc.rig, sc.platform_params, panda, center, np.eye(3),
                                 np.zeros(3))
    # a 17 kg arm on the demo platform: two pendulum modes near 0.4 Hz, six in all
    assert lin.modes_hz.size == 6 and 0.3 < lin.modes_hz[0] < 0.5
    adv = advise_motion(panda, center, lin, seed=3)
    q, qd, qdd = adv.evaluate(np.linspace(0.0, 30.0, 3001))
    lo, hi = panda.limits()
    assert np.all(q >= lo) and np.all(q <= hi)
    vmax = np.array([panda.pin_model.velocityLimit[panda.pin_model.idx_vs[j]]
                     for j in range(1, 8)])
    assert np.all(np.abs(qd).max(0) <= VELOCITY_FRACTION * vmax + 1e-9)
    assert np.all(np.abs(qdd).max(0) <= MAX_ACCELERATION[0] + 1e-9)
    assert np.all(np.abs(q[0] - center) < 1e-12) and np.all(np.abs(qd[0]) < 1e-12)
    # the locked postures' structure and the motion's
    qs = candidate_postures(panda, 9, seed=4)
    m = sum(b.prior.mass for b in panda.bodies)
    locked = structural_rows([overall_regressor(*panda.body_poses(q)) for q in qs], m, 0.5)
    adv = motion_rank(panda, adv, locked, m, 0.5)
    assert (adv.rank_locked, adv.rank_with) == (52, 59)
    assert "rank 52 -> 59" in adv.text


def test_advice_csv_round_trips(tmp_path):
    from rigtool.sim.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "demo.toml")
    panda = _robot("panda")
    center = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.5, 0.3])
    lin = rig_with_robot(sc.rig, sc.platform_params, panda, center, np.eye(3), np.zeros(3))
    adv = advise_motion(panda, center, lin)
    path = tmp_path / "motion_advice.csv"
    adv.write_csv(path, 5.0, 50.0)
    head = path.read_text().splitlines()[0].split(",")
    assert head[:4] == ["time_s", "panda_joint1", "panda_joint1.velocity",
                        "panda_joint1.acceleration"]
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    assert table.shape == (251, 1 + 3 * 7)
    q, _, _ = adv.evaluate(table[:, 0])
    assert np.allclose(table[:, 1::3], q, atol=1e-8)


@pytest.mark.slow
def test_the_platform_moves_as_the_advice_predicts():
    """rigtool's simulator of the platform with the Panda driven along the advice, from
    rest: the platform's excursion is the forced response the linearised rig predicts
    (bounded to MAX_PLATFORM_EXCURSION) plus the transient the fade-in leaves in the
    undamped-ish modes: between 0.5 and 1.6 times the prediction."""
    from scipy.spatial.transform import Rotation

    from rigtool.robot.motion_advice import MAX_PLATFORM_EXCURSION
    from rigtool.sim.robot_motion import simulate_robot_motion
    from rigtool.sim.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "demo.toml")
    panda = _robot("panda")
    center = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.5, 0.3])
    lin = rig_with_robot(sc.rig, sc.platform_params, panda, center, np.eye(3), np.zeros(3))
    adv = advise_motion(panda, center, lin)
    assert adv.platform_m <= MAX_PLATFORM_EXCURSION[0] + 1e-12
    assert np.rad2deg(adv.platform_rad) <= MAX_PLATFORM_EXCURSION[1] + 1e-9
    tr = simulate_robot_motion(sc.rig, sc.platform_params, panda, np.eye(3), np.zeros(3),
                               adv.trajectory(), 6.0, 100.0)
    p, r = tr.position_m["platform"], tr.rotation["platform"]
    moved = np.linalg.norm(p - p[0], axis=1).max()
    turned = np.linalg.norm(Rotation.from_matrix(r @ r[0].T).as_rotvec(), axis=1).max()
    assert 0.5 * adv.platform_m < moved < 1.6 * adv.platform_m
    assert 0.5 * adv.platform_rad < turned < 1.6 * adv.platform_rad
