"""A robot from its URDF: reading (pinocchio and the XML agree), forward kinematics checked
against a chain of URDF transforms written out here, the [robot] manifest section, the
joint-angle files and their errors."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pinocchio")

from rigtool.config import load_session
from rigtool.errors import ConfigError, InputError
from rigtool.inertia import InertialParams
from rigtool.robot.joint_angles import posture_angles, read_joint_angles
from rigtool.robot.urdf_model import (body_inertias_pinocchio, load_robot_model,
                                      parse_urdf_xml, rpy_matrix)
from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf


def _robot(name):
    rel, base, fixed = EXAMPLE_ROBOTS[name]
    return load_robot_model(example_robot_urdf(name), base, fixed)


@pytest.fixture(scope="module")
def panda():
    return _robot("panda")


def _chain_pose(path, base, link, q: dict, held: dict):
    """A link's pose in the base frame by composing the URDF's joint transforms directly
    (origin, then the joint's motion about/along its axis): no pinocchio."""
    from scipy.spatial.transform import Rotation
    _, _, joints = parse_urdf_xml(path)
    by_child = {j.child: j for j in joints.values()}

    def to_root(name):
        r, p = np.eye(3), np.zeros(3)
        while name in by_child:
            j = by_child[name]
            r_o, p_o = rpy_matrix(j.origin_rpy), j.origin_xyz
            value = q.get(j.name, held.get(j.name, 0.0))
            r_m, p_m = np.eye(3), np.zeros(3)
            if j.type in ("revolute", "continuous"):
                r_m = Rotation.from_rotvec(value * j.axis).as_matrix()
            elif j.type == "prismatic":
                p_m = value * j.axis
            # x_parent = R_o (R_m x + p_m) + p_o
            r, p = r_o @ r_m @ r, r_o @ (r_m @ p + p_m) + p_o
            name = j.parent
        return r, p

    r_b, p_b = to_root(base)
    r_l, p_l = to_root(link)
    return r_b.T @ r_l, r_b.T @ (p_l - p_b)


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_bodies_and_prior_match_pinocchio(name):
    robot = _robot(name)
    # the XML inertials summed per body == pinocchio's own merge of the URDF
    own = np.stack([b.prior.pi for b in robot.bodies])
    assert np.allclose(own, body_inertias_pinocchio(robot), atol=1e-12)
    total = sum(ip.mass for ip in robot.link_inertials.values())
    assert sum(b.prior.mass for b in robot.bodies) == pytest.approx(total, rel=1e-12)


def test_panda_structure(panda):
    assert panda.n_bodies == 8 and len(panda.moving_joints) == 7
    assert sum(b.prior.mass for b in panda.bodies) == pytest.approx(17.452, abs=1e-3)
    last = panda.bodies[-1]
    # the hand and the held fingers are merged into link 7 and kept as "attached"
    assert {"panda_hand", "panda_leftfinger", "panda_rightfinger"} <= set(last.links)
    assert last.attached.mass == pytest.approx(0.73 + 0.03)
    assert panda.bodies[4].upper == pytest.approx(-0.0698)


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_forward_kinematics_against_urdf_chain(name):
    robot = _robot(name)
    path = example_robot_urdf(name)
    rng = np.random.default_rng(3)
    lo, hi = robot.limits()
    for _ in range(3):
        q = dict(zip(robot.moving_joints, rng.uniform(lo, hi)))
        for link in list(robot.link_poses)[::2]:
            r, p = robot.link_pose(link, q)
            r_ref, p_ref = _chain_pose(path, robot.base_link, link, q, robot.fixed_joints)
            assert np.allclose(r, r_ref, atol=1e-12) and np.allclose(p, p_ref, atol=1e-12)


def test_urdf_errors_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_robot_model(tmp_path / "none.urdf", "base")
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'></robot>")
    with pytest.raises(ConfigError, match="bad.urdf.*not valid XML"):
        load_robot_model(bad, "a")
    fl = tmp_path / "float.urdf"
    fl.write_text("<robot name='x'><link name='a'/><link name='b'/><joint name='j' "
                  "type='floating'><parent link='a'/><child link='b'/></joint></robot>")
    with pytest.raises(ConfigError, match="type 'floating'"):
        load_robot_model(fl, "a")
    path = example_robot_urdf("panda")
    with pytest.raises(ConfigError, match="did you mean 'panda_link0'"):
        load_robot_model(path, "panda_link00")
    with pytest.raises(ConfigError, match="mimics"):
        load_robot_model(path, "panda_link0", {"panda_finger_joint1": 0.02})
    with pytest.raises(ConfigError, match="outside its limits"):
        load_robot_model(path, "panda_link0", {"panda_finger_joint1": 0.1,
                                               "panda_finger_joint2": 0.02})


def _manifest(tmp_path, robot_extra="", posture_extra='joint_angles = "p1.joints.csv"'):
    urdf = example_robot_urdf("panda")
    text = f"""
[session]
name = "panda"
rig = "rig.toml"
total_mass = 17.452

[robot]
urdf = "{urdf}"
base_link = "panda_link0"
fixed_joints = {{ panda_finger_joint1 = 0.02, panda_finger_joint2 = 0.02 }}
{robot_extra}
[robot.markers]
panda_link0 = {{ B1 = [-0.021, -0.058, 0.144], B2 = [-0.114, 0.054, 0.063], B3 = [0.013, 0.081, 0.080] }}

[[postures]]
name = "p1"
capture = "p1.csv"
{posture_extra}
"""
    path = tmp_path / "session.toml"
    path.write_text(text)
    return path


def test_robot_section_read(tmp_path):
    s = load_session(_manifest(tmp_path))
    assert s.robot is not None and s.robot.base_link == "panda_link0"
    assert s.robot.fixed_joints["panda_finger_joint1"] == 0.02
    assert s.robot.joint_angles["p1"] == tmp_path / "p1.joints.csv"
    # the posture stage sees the base link with its markers
    assert s.tree.names == ["panda_link0"] and len(s.tree.links[0].markers_link) == 3


def test_robot_section_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"robot.base_lnk.*did you mean 'base_link'"):
        load_session(_manifest(tmp_path, robot_extra='base_lnk = "x"'))
    with pytest.raises(ConfigError, match=r"postures\[0\].*joint_angles"):
        load_session(_manifest(tmp_path, posture_extra=""))
    path = _manifest(tmp_path)
    path.write_text(path.read_text().replace(str(example_robot_urdf("panda")),
                                             str(tmp_path / "missing.urdf")))
    with pytest.raises(ConfigError, match="missing.urdf.*does not exist"):
        load_session(path)
    path = _manifest(tmp_path)
    path.write_text(path.read_text().replace("panda_finger_joint1 = 0.02,",
                                             "panda_finger_jont1 = 0.02,"))
    with pytest.raises(ConfigError, match="did you mean 'panda_finger_joint1'"):
        load_session(path)


def test_a_robot_session_refuses_measured_soft_tissue(tmp_path):
    """A robot's links are rigid: a tissue model asked for would be left out, so it is an
    error naming the key, never a silent rigid fit."""
    path = _manifest(tmp_path)
    path.write_text(path.read_text().replace('total_mass = 17.452',
                                             'total_mass = 17.452\nsoft_tissue = "measured"'))
    with pytest.raises(ConfigError, match=r"session.soft_tissue.*robot session"):
        load_session(path)
    path.write_text(path.read_text().replace('"measured"', '"rigid"'))
    assert load_session(path).soft_tissue == "rigid"


def test_joint_angle_file(tmp_path, panda):
    moving = panda.moving_joints
    rng = np.random.default_rng(0)
    q = rng.uniform(*panda.limits())
    t = np.arange(0, 5, 0.01)
    noise = 1e-5
    vals = q + noise * rng.standard_normal((t.size, 7))
    path = tmp_path / "p.joints.csv"
    lines = ["frame,time_s," + ",".join(moving) + ",panda_finger_joint1"]
    lines += [f"{i},{ti}," + ",".join(f"{v:.9f}" for v in row) + ",0.02"
              for i, (ti, row) in enumerate(zip(t, vals))]
    path.write_text("\n".join(lines) + "\n")
    ja = read_joint_angles(path, moving, held=["panda_finger_joint1"])
    pa = posture_angles(ja)
    assert not pa.warnings
    got = np.array([pa.values[j] for j in moving])
    assert np.all(np.abs(got - q) < 5 * noise / np.sqrt(t.size) * 1.26 + 1e-9)
    assert np.allclose([pa.noise[j] for j in moving], noise, rtol=0.2)
    # a joint drifting by 1 mrad during the posture is reported
    vals[:, 2] += np.linspace(0, 1e-3, t.size)
    lines = ["time_s," + ",".join(moving)]
    lines += [f"{ti}," + ",".join(f"{v:.9f}" for v in row) for ti, row in zip(t, vals)]
    path.write_text("\n".join(lines) + "\n")
    pa = posture_angles(read_joint_angles(path, moving), name="p")
    assert len(pa.warnings) == 1 and "panda_joint3" in pa.warnings[0]


def test_joint_angle_errors(tmp_path, panda):
    moving = panda.moving_joints
    path = tmp_path / "j.csv"
    head = "time_s," + ",".join(moving)
    path.write_text(head.replace("panda_joint7", "panda_joint77") + "\n0," + "0," * 6 + "0\n")
    with pytest.raises(InputError, match=r"j.csv, line 1, field 'panda_joint77'.*did you mean"):
        read_joint_angles(path, moving)
    path.write_text(head + "\n0," + "0," * 6 + "0\n0.1,0,0,abc,0,0,0,0\n")
    with pytest.raises(InputError, match=r"j.csv, line 3, field 'panda_joint3': expected a "
                                         r"number"):
        read_joint_angles(path, moving)
    path.write_text(",".join(moving) + "\n" + "0," * 6 + "0\n")
    with pytest.raises(InputError, match="time_s"):
        read_joint_angles(path, moving)
    path.write_text("time_s," + ",".join(moving[:-1]) + "\n0," + "0," * 5 + "0\n")
    with pytest.raises(InputError, match="panda_joint7"):
        read_joint_angles(path, moving)


SMALL_URDF = """<?xml version="1.0"?>
<!-- a base, a turntable on a continuous joint, a slider on a prismatic joint, a tool fixed
     to the slider (its inertial kept), and a bracket with no inertial -->
<robot name="small">
  <link name="base">
    <inertial><origin xyz="0 0 0.05"/><mass value="2.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.02"/></inertial>
  </link>
  <link name="table">
    <inertial><origin xyz="0.02 0 0.03" rpy="0 0 0.3"/><mass value="1.5"/>
      <inertia ixx="0.004" ixy="0.0005" ixz="0" iyy="0.006" iyz="0" izz="0.008"/></inertial>
  </link>
  <link name="slider">
    <inertial><origin xyz="0 0 0.1"/><mass value="0.8"/>
      <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.001"/></inertial>
  </link>
  <link name="tool">
    <inertial><origin xyz="0 0.01 0.02"/><mass value="0.3"/>
      <inertia ixx="0.0002" ixy="0" ixz="0" iyy="0.0002" iyz="0" izz="0.0001"/></inertial>
  </link>
  <link name="bracket"/>
  <joint name="turn" type="continuous">
    <parent link="base"/><child link="table"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="table"/><child link="slider"/>
    <origin xyz="0.1 0 0.05" rpy="0.2 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-0.05" upper="0.15" effort="10" velocity="1"/>
  </joint>
  <joint name="tool_mount" type="fixed">
    <parent link="slider"/><child link="tool"/><origin xyz="0 0 0.2"/>
  </joint>
  <joint name="bracket_mount" type="fixed">
    <parent link="table"/><child link="bracket"/><origin xyz="0 0.05 0"/>
  </joint>
</robot>
"""


def test_continuous_prismatic_and_fixed_joints(tmp_path):
    from rigtool.robot.outputs import write_robot_urdf
    path = tmp_path / "small.urdf"
    path.write_text(SMALL_URDF)
    robot = load_robot_model(path, "base")
    assert robot.names == ["base", "table", "slider"]
    assert [b.joint_type for b in robot.bodies[1:]] == ["continuous", "prismatic"]
    assert robot.bodies[2].links == ("slider", "tool")
    assert robot.bodies[1].lower is None and robot.bodies[2].upper == pytest.approx(0.15)
    assert np.allclose(np.stack([b.prior.pi for b in robot.bodies]),
                       body_inertias_pinocchio(robot), atol=1e-12)
    for q in ([0.4, 0.1], [-2.5, -0.03], [3.0, 0.0]):
        qd = dict(zip(robot.moving_joints, q))
        for link in ("table", "slider", "tool", "bracket"):
            r, p = robot.link_pose(link, qd)
            r_ref, p_ref = _chain_pose(path, "base", link, qd, {})
            assert np.allclose(r, r_ref, atol=1e-12) and np.allclose(p, p_ref, atol=1e-12)
    # the bracket has no inertial: writing the table's block leaves it without one; the
    # tool keeps its own
    own = [InertialParams(b.prior.pi - b.attached.pi) for b in robot.bodies]
    out = write_robot_urdf(robot, own, tmp_path / "robot.urdf")
    back = load_robot_model(out, "base")
    assert np.allclose(back.prior_vector(), robot.prior_vector(), atol=1e-9)
    assert "<!-- a base, a turntable" in out.read_text()
    assert '<link name="bracket"/>' in out.read_text()
