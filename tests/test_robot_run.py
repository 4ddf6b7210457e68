"""`rigtool run` on a simulated robot study: the Franka Panda (example-robot-data) in three
locked postures on the demo rig, its CAD prior perturbed; the report's robot block, the
base parameters against the truth, robot.urdf and base_parameters.csv, and bad inputs."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from rigtool.cli import main
from rigtool.robot.base_parameters import parameter_names
from rigtool.robot.urdf_model import load_robot_model
from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf
from rigtool.sim.robot_session import write_robot_study

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
#: markers on the last link (link frame, m): checks of the encoders and the URDF
LINK7_MARKERS = {"E1": [0.04, 0.0, 0.06], "E2": [-0.03, 0.03, 0.07], "E3": [0.0, -0.04, 0.09]}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("robot")
    _, base, fixed = EXAMPLE_ROBOTS["panda"]
    session = write_robot_study(ROOT / "scenarios" / "demo.toml", tmp,
                                example_robot_urdf("panda"), base, fixed, session="panda",
                                n_postures=3, seed=1, duration_s=8.0,
                                link_markers={"panda_link7": LINK7_MARKERS})
    out = tmp / "results"
    assert main(["run", str(session), "-o", str(out), "--method", "equation-error"]) == 0
    return session, out


def _combination(expr: dict, names: list[str]) -> np.ndarray:
    c = np.zeros(len(names))
    for k, v in expr.items():
        c[names.index(k)] = v
    return c


def test_report_robot_block(study):
    session, out = study
    rep = json.loads((out / "report.json").read_text())
    truth = json.loads((session.parent / "truth.json").read_text())
    robot = rep["robot"]
    bp = robot["base_parameters"]
    # the rank is a result (exit 0): three postures see fewer than locked postures can
    assert bp["n_parameters"] == 80 and 20 <= bp["rank"] < 52
    assert len(robot["unidentifiable"]) == 80 - bp["rank"]
    assert "rank" in robot["advice"]["text"] and robot["advice"]["rank_with"] > bp["rank"]
    # the advised posture is inside the joint limits
    model = load_robot_model(session.parent / "robot.prior.urdf", "panda_link0",
                             EXAMPLE_ROBOTS["panda"][2])
    lo, hi = model.limits()
    q = np.array([robot["advice"]["joint_values"][j] for j in model.moving_joints])
    assert np.all(q >= lo) and np.all(q <= hi)
    # the base parameters against the truth: the equation-error posture fits' standard
    # errors are optimistic by ~1.7 on this rig (output error: 1.08), hence 5 of them
    names = parameter_names(truth["bodies"])
    pi = np.array(truth["params"])
    z = [(v - _combination(e, names) @ pi) / s
         for e, v, s in zip(bp["expressions"], bp["values"], bp["std"])]
    assert np.max(np.abs(z)) < 5.0
    # the markers on link 7 sit where the encoders and the URDF put them (0.1 mm noise)
    for check in robot["marker_checks"]:
        assert len(check["distance_m"]) == 3
        assert max(check["distance_m"].values()) < 0.5e-3
    assert not any("mm from where" in w for w in rep["warnings"])
    paths = [i["path"] for i in rep["inputs"]]
    assert "robot.prior.urdf" in paths and "posture03.joints.csv" in paths
    # the summary counts the robot's bodies (the base link alone is what each posture fits)
    assert rep["summary"]["object"].startswith("panda: a robot of 8 bodies (panda_link0 "
                                               "fixed to the platform, 7 moving joints, 2 held)")
    bounds = next(c for c in rep["checks"] if c["key"] == "bounds")
    assert bounds["level"] == "ok" and "locked postures" in bounds["finding"]


def test_robot_urdf_and_csv(study):
    session, out = study
    rep = json.loads((out / "report.json").read_text())
    bp = rep["robot"]["base_parameters"]
    truth = json.loads((session.parent / "truth.json").read_text())
    model = load_robot_model(out / "robot.urdf", truth["base_link"], truth["fixed_joints"])
    names = parameter_names(truth["bodies"])
    x = model.prior_vector()
    z = [(_combination(e, names) @ x - v) / s
         for e, v, s in zip(bp["expressions"], bp["values"], bp["std"])]
    assert np.max(np.abs(z)) < 1.0
    for b in model.bodies:
        assert b.prior.is_physically_consistent(tol=1e-9)
    rows = list(csv.DictReader(open(out / "base_parameters.csv")))
    assert len(rows) == bp["rank"]
    assert [float(r["value"]) for r in rows] == pytest.approx(bp["values"], rel=1e-6)


def test_a_wrong_encoder_reading_is_seen_by_the_link_markers(study, tmp_path, capsys):
    """Joint 2's file offset by 0.02 rad in posture 1: the markers on link 7 are then
    centimetres from where the angles put them, and the report says so."""
    session, _ = study
    copy = tmp_path / "panda"
    shutil.copytree(session.parent, copy, ignore=shutil.ignore_patterns("results"))
    path = copy / "posture01.joints.csv"
    lines = path.read_text().splitlines()
    head = lines[0].split(",")
    k = head.index("panda_joint2")
    out_lines = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        cells[k] = f"{float(cells[k]) + 0.02:.9f}"
        out_lines.append(",".join(cells))
    path.write_text("\n".join(out_lines) + "\n")
    from rigtool.config import load_session
    from rigtool.pipeline.robot_stage import link_marker_checks, prepare_robot
    manifest = copy / "session.toml"
    s = load_session(manifest)
    checks, warnings = link_marker_checks(s, prepare_robot(s))
    assert len(warnings) == 3 and all(w.startswith("posture01") for w in warnings)
    assert min(checks[0]["distance_m"].values()) > 5e-3


def test_bad_joint_angle_file_is_an_input_error(study, tmp_path, capsys):
    session, _ = study
    copy = tmp_path / "panda"
    shutil.copytree(session.parent, copy, ignore=shutil.ignore_patterns("results"))
    text = (copy / "posture02.joints.csv").read_text().splitlines()
    text[5] = text[5].replace(",", ",x", 3)
    (copy / "posture02.joints.csv").write_text("\n".join(text) + "\n")
    manifest = copy / "session.toml"
    manifest.write_text(manifest.read_text().replace(
        "../../calibration/", str(session.parents[2] / "calibration") + "/"))
    capsys.readouterr()
    assert main(["run", str(manifest), "-o", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert "posture02.joints.csv, line 6" in err


def test_model_files_hold_the_identified_bodies(study):
    """The MuJoCo and OpenSim models of a robot session carry the report's per-body
    parameters (the merged bodies) and one joint per moving URDF joint."""
    mujoco = pytest.importorskip("mujoco")
    _, out = study
    rep = json.loads((out / "report.json").read_text())
    assert [f["file"] for f in rep["model_files"]["files"]] == [
        "model_mujoco.xml", "model.osim", "robot.urdf"]
    m = mujoco.MjModel.from_xml_path(str(out / "model_mujoco.xml"))
    bodies = rep["robot"]["links"]["links"]
    assert m.njnt == 1 + len(bodies) - 1                       # the free base + 7 hinges
    for name, body in bodies.items():
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        # report.json writes 7 significant digits
        assert m.body_mass[bid] == pytest.approx(body["body"]["mass"], rel=1e-6)
