"""Sentences of the report that assert counts, coverage or agreement are computed from the
results: each is checked here against a case where it holds and one where it does not."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rigtool.report.checks_model import bounds_check, fit_messages, segments_check
from rigtool.report.summary import object_line

ROOT = Path(__file__).resolve().parents[1]


def _doc(**kw) -> dict:
    return {"session": "s", "total_mass": 17.452, "postures": [{}] * 9,
            "rig": {"name": "paper-rig"}, **kw}


def test_object_line_counts_a_robots_bodies():
    robot = {"base_link": "panda_link0",
             "fixed_joints": {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02},
             "bodies": [{"name": "panda_link0", "joint": None}]
             + [{"name": f"panda_link{k}", "joint": f"panda_joint{k}"} for k in range(1, 8)],
             "with_motion": True}
    base_only = [{"name": "panda_link0", "parent": "platform"}]
    line = object_line(_doc(robot=robot), base_only)
    assert line.startswith("s: a robot of 8 bodies (panda_link0 fixed to the platform, "
                           "7 moving joints, 2 held)")
    assert "9 locked postures and a capture of the joints' motion" in line
    # a rigid object of one link is what it says
    assert object_line(_doc(), base_only).startswith(
        "s: 1 link (panda_link0 fixed to the platform)")


def _robot(held: bool, with_motion: bool):
    fit = SimpleNamespace(held=held, written="fit" if held else "prior",
                          reproduces=held, failure=None if held else
                          "the per-link fit ended with solver status optimal_inaccurate")
    return SimpleNamespace(consistent=fit, locked=object() if with_motion else None)


def test_physical_bounds_of_a_robot_say_what_was_used_and_held():
    out = SimpleNamespace(postures=[], relative=None, robot=_robot(True, True))
    c = bounds_check(out)
    assert c.level == "ok" and "the joints' motion" in c.finding
    assert "no relative-motion stage" not in c.finding
    c = bounds_check(SimpleNamespace(postures=[], relative=None, robot=_robot(True, False)))
    assert c.level == "ok" and "the joints' motion" not in c.finding
    c = bounds_check(SimpleNamespace(postures=[], relative=None, robot=_robot(False, True)))
    assert c.level == "caution" and "optimal_inaccurate" in c.finding
    assert "URDF prior scaled to the weighed mass" in c.meaning
    # a person without a relative-motion capture: not checked, and why
    c = bounds_check(SimpleNamespace(postures=[], relative=None, robot=None))
    assert c.level == "not checked" and "no relative-motion stage" in c.finding


def _posture(name: str, warnings: list[str]):
    return SimpleNamespace(result=SimpleNamespace(name=name), warnings=warnings, notes=[])


def test_a_note_said_for_several_captures_speaks_of_each():
    text = ("99% of the motion's power lies below {} Hz, close to or above the filter's "
            "passband edge (5 Hz): the filter distorts this motion. Both sides of the "
            "equations are filtered alike")
    out = SimpleNamespace(postures=[_posture("posture01", ["posture01: " + text.format("4.66")]),
                                    _posture("posture03", ["posture03: " + text.format("4.71")])],
                          warnings=[])
    _, notes = fit_messages(out)
    assert len(notes) == 1
    assert "below 4.66-4.71 Hz" in notes[0] and "passband edge (5 Hz)" in notes[0]
    assert "distorts each capture's motion" in notes[0] and "this motion" not in notes[0]
    assert notes[0].endswith("(posture01 and posture03)")
    # one capture: its own numbers and "this motion"
    _, notes = fit_messages(SimpleNamespace(postures=out.postures[:1], warnings=[]))
    assert "below 4.66 Hz" in notes[0] and "distorts this motion" in notes[0]


@pytest.mark.slow
def test_inputs_hold_every_robot_file(tmp_path):
    """The URDF, every posture's encoders and the motion's encoders, each with its sha256."""
    pytest.importorskip("pinocchio")
    from rigtool.config import load_session
    from rigtool.pipeline.inputs import session_inputs
    from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf
    from rigtool.sim.robot_session import write_robot_study

    _, base, fixed = EXAMPLE_ROBOTS["panda"]
    session = write_robot_study(ROOT / "scenarios" / "demo.toml", tmp_path,
                                example_robot_urdf("panda"), base, fixed, session="panda",
                                n_postures=2, seed=7, duration_s=2.0)
    folder = session.parent
    shutil.copy(folder / "posture01.joints.csv", folder / "motion.joints.csv")
    shutil.copy(folder / "posture01.csv", folder / "motion.csv")
    manifest = folder / "session.toml"
    plain = load_session(manifest)
    manifest.write_text(manifest.read_text() + '\n[relative_motion]\ncapture = "motion.csv"'
                        '\njoint_angles = "motion.joints.csv"\n')
    paths = [i["path"] for i in session_inputs(load_session(manifest))]
    assert "motion.joints.csv" in paths and "motion.csv" in paths
    assert "robot.prior.urdf" in paths
    assert {"posture01.joints.csv", "posture02.joints.csv"} <= set(paths)
    # without the motion its files are not listed
    paths = [i["path"] for i in session_inputs(plain)]
    assert "motion.joints.csv" not in paths and "posture02.joints.csv" in paths


def _segments_outcome(sources: dict[str, str], z: list[float]) -> SimpleNamespace:
    links = {name: SimpleNamespace(source={"mass": flag}) for name, flag in sources.items()}
    return SimpleNamespace(segments=SimpleNamespace(
        status="optimal", phi_b_residual_z=np.array(z), links=links,
        names=[f"p{k}" for k in range(len(z))]))


def test_segments_check_says_where_each_link_mass_came_from_in_words():
    same = segments_check(_segments_outcome({"link0": "both", "link1": "both"}, [0.1, -0.2]))
    assert same.level == "ok"
    assert same.finding.endswith("(every link mass from the vibration and the prior together)")
    mixed = segments_check(_segments_outcome(
        {"trunk": "both", "thigh": "prior", "shank": "prior"}, [0.1]))
    assert ("(the mass of trunk from the vibration and the prior together; the masses of "
            "thigh and shank from the prior alone)") in mixed.finding
    assert not re.search(r"\d+ link mass", mixed.finding)
