"""A robot's inputs judged before any fit. A CAD prior that is not physically consistent:
projected onto the consistent set when the URDF is read, with a note listing its links;
`rigtool run` on such a Panda (example-robot-data, six links' inertials breaking the
triangle inequality) simulated on the demo rig exits 0. Encoders written in degrees: the
preflight refuses them, naming the file and the column."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from rigtool.cli import main
from rigtool.inertia import InertialParams
from rigtool.robot.urdf_model import PRIOR_FLOOR_REL, load_robot_model, project_inertial
from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf
from rigtool.sim.robot_session import write_robot_study

ROOT = Path(__file__).resolve().parents[1]
BROKEN = [f"panda_link{k}" for k in range(1, 7)]


def break_triangle(urdf_in: Path, urdf_out: Path, links: list[str]) -> None:
    """``urdf_in`` with each of ``links``' largest diagonal inertia entry made three times
    the sum of the other two (a body no mass distribution has)."""
    tree = ET.parse(urdf_in)
    for link in tree.getroot().findall("link"):
        if link.get("name") not in links:
            continue
        ie = link.find("inertial/inertia")
        d = {k: float(ie.get(k)) for k in ("ixx", "iyy", "izz")}
        big = max(d, key=d.get)
        ie.set(big, f"{3.0 * sum(v for k, v in d.items() if k != big):.9g}")
    tree.write(urdf_out)


def test_projection_keeps_mass_and_com_and_is_the_nearest():
    """Principal moments (0.01, 0.02, 0.05) break I1 + I2 >= I3: the second moments about
    the COM are (0.03, 0.02, -0.01); the nearest positive semidefinite ones with the
    floor keep the first two and raise the third to 0.01 x 0.03."""
    rot = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
    i_c = rot @ np.diag([0.01, 0.02, 0.05]) @ rot.T
    ip = InertialParams.from_com(2.0, np.array([0.1, -0.02, 0.03]), i_c)
    assert not ip.is_physically_consistent()
    out = project_inertial(ip)
    assert out.mass == 2.0 and out.com == pytest.approx(ip.com, abs=1e-15)
    assert out.is_physically_consistent()
    s = np.array([0.03, 0.02, PRIOR_FLOOR_REL * 0.03])       # Sigma_c's eigenvalues after
    moments = np.sort([s[1] + s[2], s[0] + s[2], s[0] + s[1]])
    assert np.linalg.eigvalsh(out.inertia_com) == pytest.approx(moments, rel=1e-12)
    # the principal axes are kept
    assert np.abs(rot.T @ out.inertia_com @ rot - np.diag(np.diag(rot.T @ out.inertia_com
                                                                   @ rot))).max() < 1e-14
    # a consistent block is left as it is
    assert project_inertial(InertialParams.from_com(1.0, np.zeros(3),
                                                    np.diag([0.01, 0.02, 0.025]))) is None


def test_model_lists_the_projected_links(tmp_path):
    _, base, fixed = EXAMPLE_ROBOTS["panda"]
    bad = tmp_path / "panda_bad.urdf"
    break_triangle(example_robot_urdf("panda"), bad, BROKEN)
    model = load_robot_model(bad, base, fixed)
    assert [p.link for p in model.projected] == BROKEN
    good = load_robot_model(example_robot_urdf("panda"), base, fixed)
    for b, g in zip(model.bodies, good.bodies):
        assert b.prior.is_physically_consistent()
        assert b.prior.mass == pytest.approx(g.prior.mass, rel=1e-12)
        assert b.prior.com == pytest.approx(g.prior.com, abs=1e-12)
    # pinocchio's merged model carries the projected inertias too
    pin_pi = np.stack([np.asarray(model.pin_model.inertias[j].toDynamicParameters())
                       for j in range(model.n_bodies)])
    assert pin_pi[:, 0] == pytest.approx([b.prior.mass for b in model.bodies], rel=1e-12)
    note = model.projection_note()
    assert all(name in note for name in BROKEN) and "6 links" in note


@pytest.mark.slow
def test_run_with_an_inconsistent_prior_exits_0_and_says_so(tmp_path):
    """Before: every posture fitted, then exit 2 "field 'fixed.robot': inertial parameters
    must be physically consistent" (the motion advice simulated the prior)."""
    _, base, fixed = EXAMPLE_ROBOTS["panda"]
    session = write_robot_study(ROOT / "scenarios" / "demo.toml", tmp_path,
                                example_robot_urdf("panda"), base, fixed, session="panda",
                                n_postures=3, seed=3, duration_s=8.0)
    prior = session.parent / "robot.prior.urdf"
    break_triangle(prior, prior, BROKEN)
    out = tmp_path / "results"
    assert main(["run", str(session), "-o", str(out), "--method", "equation-error"]) == 0
    rep = json.loads((out / "report.json").read_text())
    assert [p["link"] for p in rep["robot"]["prior_projected"]] == BROKEN
    note = [n for n in rep["notes"] if "not physically consistent" in n]
    assert len(note) == 1 and all(f"'{name}'" in note[0] for name in BROKEN)
    written = load_robot_model(out / "robot.urdf", base, fixed)
    for name, ip in written.link_inertials.items():
        assert ip.is_physically_consistent(tol=1e-9), name


def _to_degrees(path: Path, joints: list[str]) -> None:
    """The file's ``joints`` columns converted to degrees."""
    lines = path.read_text().splitlines()
    head = lines[0].split(",")
    ks = [head.index(j) for j in joints]
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        for k in ks:
            cells[k] = f"{np.rad2deg(float(cells[k])):.7f}"
        out.append(",".join(cells))
    path.write_text("\n".join(out) + "\n")


@pytest.mark.slow
def test_encoders_in_degrees_are_refused_before_any_fit(tmp_path, capsys):
    """Posture 2's encoders written in degrees: exit 2 from the preflight, naming the
    file and a column, "degrees?"; the same file in rad passes the preflight. A column
    whose degrees still lie within its limits read as rad cannot be judged by them and is
    not flagged."""
    from rigtool.config import load_session
    from rigtool.pipeline.preflight import check_session
    from rigtool.robot.joint_angles import degree_columns, read_joint_angles

    _, base, fixed = EXAMPLE_ROBOTS["panda"]
    session = write_robot_study(ROOT / "scenarios" / "demo.toml", tmp_path,
                                example_robot_urdf("panda"), base, fixed, session="panda",
                                n_postures=2, seed=4, duration_s=3.0)
    check_session(session)                                # rad: passes
    path = session.parent / "posture02.joints.csv"
    model = load_robot_model(session.parent / "robot.prior.urdf", base, fixed)
    ja = read_joint_angles(path, model.moving_joints)
    lo, hi = model.limits()
    rad = {j: (l, h) for j, l, h in zip(model.moving_joints, lo, hi)}
    _to_degrees(path, model.moving_joints)
    deg = read_joint_angles(path, model.moving_joints)
    flagged = [j for j, _ in degree_columns(deg, rad)]
    # exactly the columns whose degrees leave the limits (by more than the slack)
    expect = [j for j in model.moving_joints
              if not np.all((np.rad2deg(ja.column(j)) >= rad[j][0] - 0.01)
                            & (np.rad2deg(ja.column(j)) <= rad[j][1] + 0.01))]
    assert flagged == expect and len(expect) >= 3
    assert degree_columns(ja, rad) == []
    capsys.readouterr()
    t0 = time.perf_counter()
    assert main(["run", str(session), "-o", str(tmp_path / "res")]) == 2
    assert time.perf_counter() - t0 < 30.0
    err = capsys.readouterr().err
    assert "posture02.joints.csv" in err and "degrees?" in err
    assert f"field '{expect[0]}'" in err
    assert "Traceback" not in err
    assert not (tmp_path / "res" / "report.json").exists()
    # prepare_robot refuses the file too (a run without the preflight)
    from rigtool.errors import InputError
    from rigtool.pipeline.robot_stage import prepare_robot
    with pytest.raises(InputError, match="degrees"):
        prepare_robot(load_session(session))
