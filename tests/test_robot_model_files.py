"""A robot's bodies as MuJoCo and OpenSim models: the joint-space mass matrix of the MJCF
model, in MuJoCo, equals pinocchio's of the URDF (the same bodies, the same inertials) at
random joint angles; OpenSim reads every body's mass and COM back."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from rigtool.report.export_mjcf import mjcf_text
from rigtool.report.export_osim import osim_text
from rigtool.robot.model_files import robot_model_description
from rigtool.robot.urdf_model import load_robot_model
from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf

mujoco = pytest.importorskip("mujoco")
pin = pytest.importorskip("pinocchio")


def _robot(name):
    _, base, fixed = EXAMPLE_ROBOTS[name]
    return load_robot_model(example_robot_urdf(name), base, fixed)


def _mujoco_mass_matrix(m, qpos):
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    out = np.zeros((m.nv, m.nv))
    try:
        mujoco.mj_fullM(m, d, out)                  # MuJoCo >= 4
    except TypeError:
        mujoco.mj_fullM(m, out, d.qM)               # MuJoCo 3
    return out


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_mjcf_mass_matrix_equals_pinocchio(name):
    robot = _robot(name)
    params = [b.prior for b in robot.bodies]
    model = robot_model_description(robot, params, name=name, base="fixed")
    m = mujoco.MjModel.from_xml_string(mjcf_text(model, geometry=False))
    assert m.nv == len(robot.moving_joints)
    rng = np.random.default_rng(0)
    lo, hi = robot.limits()
    for _ in range(3):
        q = rng.uniform(np.maximum(lo, -3.0), np.minimum(hi, 3.0))
        q_pin = robot.configuration(q)
        m_pin = pin.crba(robot.pin_model, robot.pin_model.createData(), q_pin)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        m_mj = _mujoco_mass_matrix(m, q)
        assert np.allclose(m_mj, m_pin, rtol=0, atol=1e-9 * np.abs(m_pin).max())
    for i, body in enumerate(robot.bodies):
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, model.links[i].name)
        assert m.body_mass[bid] == pytest.approx(body.prior.mass, rel=1e-12)


def test_osim_reads_every_body():
    opensim = pytest.importorskip("opensim")
    robot = _robot("panda")
    model = robot_model_description(robot, [b.prior for b in robot.bodies], name="panda")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "panda.osim"
        path.write_text(osim_text(model, geometry=False))
        osim = opensim.Model(str(path))
        osim.initSystem()
        bodies = {osim.getBodySet().get(i).getName(): osim.getBodySet().get(i)
                  for i in range(osim.getBodySet().getSize())}
        for link, body in zip(model.links, robot.bodies):
            b = bodies[link.name]
            assert b.getMass() == pytest.approx(body.prior.mass, rel=1e-12)
            com = b.getMassCenter()
            assert np.allclose([com.get(k) for k in range(3)], link.com_m, atol=1e-12)
        assert osim.getJointSet().getSize() == len(robot.bodies)
