"""The model files (MuJoCo MJCF, OpenSim .osim, URDF) loaded in the real consumers.

Each file is read by its own library (``mujoco.MjModel``, ``opensim.Model``,
``pinocchio.buildModelFromUrdf``, urdfdom's ``check_urdf``), never by the writers' code, and
compared with the model description it was written from: every body's mass, COM and inertia
about the COM (relative 1e-9), the tree (parents, joint types, joint positions, the base's
mount) and the link frames' poses. Two physical checks follow: MuJoCo integrates the free
model (RK4) and conserves energy and angular momentum to the integrator's own error, and
the three consumers' joint-space mass matrices at the zero posture agree.

Models: a 15-link body tree (pelvis base, spine, head, arms, legs) with spherical joints and
known inertials, the same tree with revolute, prismatic and fixed joints mixed in, and the
bundled demo's results (captures/two-link) against its report.json and manifest.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.cli import main
from rigtool.report.export_mjcf import mjcf_text
from rigtool.report.export_osim import osim_text
from rigtool.report.export_urdf import urdf_text
from rigtool.report.model_description import (ModelDescription, ModelJoint, ModelLink,
                                              equivalent_ellipsoid, model_from_report)

REL = 1e-9          # the acceptance tolerance: files hold exact decimals of the doubles

# ---------------------------------------------------------------------------- the models

# (name, parent, joint position in the parent's frame [m], mass [kg]): a lying person's
# segments in the proportions of an adult (base: pelvis).
_BODY = [("pelvis", None, None, 11.0), ("abdomen", "pelvis", (0.0, 0.0, 0.11), 2.5),
         ("thorax", "abdomen", (0.0, 0.0, 0.12), 13.0),
         ("head", "thorax", (0.0, 0.0, 0.30), 5.5),
         ("upper_arm_r", "thorax", (0.0, -0.19, 0.24), 2.1),
         ("forearm_r", "upper_arm_r", (0.0, 0.0, -0.28), 1.3),
         ("hand_r", "forearm_r", (0.0, 0.0, -0.26), 0.5),
         ("upper_arm_l", "thorax", (0.0, 0.19, 0.24), 2.1),
         ("forearm_l", "upper_arm_l", (0.0, 0.0, -0.28), 1.3),
         ("hand_l", "forearm_l", (0.0, 0.0, -0.26), 0.5),
         ("thigh_r", "pelvis", (0.0, -0.09, -0.07), 10.0),
         ("shank_r", "thigh_r", (0.0, 0.0, -0.42), 3.3),
         ("foot_r", "shank_r", (0.0, 0.0, -0.43), 1.0),
         ("thigh_l", "pelvis", (0.0, 0.09, -0.07), 10.0),
         ("shank_l", "thigh_l", (0.0, 0.0, -0.42), 3.3)]


def _inertial(rng, mass):
    """A physically consistent body: a uniform ellipsoid turned arbitrarily, COM offset."""
    semi = rng.uniform(0.03, 0.2, size=3)
    moments = mass / 5 * np.array([semi[1] ** 2 + semi[2] ** 2, semi[0] ** 2 + semi[2] ** 2,
                                   semi[0] ** 2 + semi[1] ** 2])
    rot = Rotation.random(random_state=rng).as_matrix()
    return rng.normal(size=3) * 0.08, rot @ np.diag(moments) @ rot.T


def body_model(types=("spherical",), base="free", seed=7) -> ModelDescription:
    """The 15-link tree; joint k (k >= 1) of type ``types[k % len(types)]``; non-spherical
    joints get an arbitrary joint-frame orientation and axis."""
    rng = np.random.default_rng(seed)
    links = []
    for k, (name, parent, pos, mass) in enumerate(_BODY):
        com, inertia = _inertial(rng, mass)
        joint = None
        if parent is not None:
            kind = types[k % len(types)]
            rot = np.eye(3) if kind == "spherical" else Rotation.random(
                random_state=rng).as_matrix()
            axis = None
            if kind in ("revolute", "prismatic"):
                axis = rng.normal(size=3)
                axis /= np.linalg.norm(axis)
            limits = (-1.2, 2.1) if kind == "revolute" and k % 2 else None
            joint = ModelJoint(kind, np.array(pos) + rng.normal(size=3) * 0.01, rot, axis,
                               limits, source="test")
        links.append(ModelLink(name, name, parent, joint, mass, com, inertia, "test"))
    return ModelDescription("body", tuple(links), base, np.array([0.0, 0.0, -9.80665]),
                            ("a test model",))


MIXED = ("spherical", "revolute", "prismatic", "fixed")


def world_poses(model: ModelDescription) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each link frame's (rotation, origin) in the world at the zero position."""
    out = {}
    for link in model.links:
        if link.parent is None:
            out[link.name] = (np.eye(3), np.zeros(3))
            continue
        r_p, p_p = out[link.parent]
        out[link.name] = (r_p @ link.joint.rotation_parent,
                          p_p + r_p @ link.joint.position_parent_m)
    return out


def _close(a, b, rel=REL):
    """``|a - b| <= rel |b|`` in the Frobenius / Euclidean norm (b may have zero entries)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.linalg.norm(a - b) <= rel * max(np.linalg.norm(b), 1e-300)


def _same_inertial(mass, com, inertia, link):
    assert _close(mass, link.mass_kg), (link.name, mass, link.mass_kg)
    assert _close(com, link.com_m), (link.name, com, link.com_m)
    assert _close(inertia, link.inertia_com), (link.name, inertia, link.inertia_com)


# ---------------------------------------------------------------------------- MuJoCo

def _mujoco():
    return pytest.importorskip("mujoco", reason="MuJoCo not installed (pip install mujoco)")


def _mj_inertia(mujoco, m, body_id):
    """Inertia about the COM in body axes from MuJoCo's principal form (iquat, inertia)."""
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, m.body_iquat[body_id])
    rot = rot.reshape(3, 3)
    return rot @ np.diag(m.body_inertia[body_id]) @ rot.T


def _mj_rot(mujoco, quat):
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, np.asarray(quat, float))
    return rot.reshape(3, 3)


@pytest.mark.parametrize("types,base", [(("spherical",), "free"), (MIXED, "free"),
                                        (MIXED, "fixed")])
def test_mjcf_loads_with_the_inertials_and_tree(types, base):
    mujoco = _mujoco()
    model = body_model(types, base)
    m = mujoco.MjModel.from_xml_string(mjcf_text(model))
    assert m.nbody == len(model.links) + 1                       # + the world body
    kinds = {"spherical": mujoco.mjtJoint.mjJNT_BALL, "revolute": mujoco.mjtJoint.mjJNT_HINGE,
             "prismatic": mujoco.mjtJoint.mjJNT_SLIDE}
    for link in model.links:
        b = m.body(link.name)
        _same_inertial(b.mass[0], b.ipos, _mj_inertia(mujoco, m, b.id), link)
        joints = [j for j in range(m.njnt) if m.jnt_bodyid[j] == b.id]
        if link.parent is None:
            assert m.body_parentid[b.id] == 0
            if base == "free":
                assert [m.jnt_type[j] for j in joints] == [mujoco.mjtJoint.mjJNT_FREE]
            else:
                assert joints == [] and m.body_weldid[b.id] == 0      # welded to the world
            continue
        assert m.body_parentid[b.id] == m.body(link.parent).id
        assert np.allclose(b.pos, link.joint.position_parent_m, rtol=0, atol=1e-15)
        assert np.allclose(_mj_rot(mujoco, b.quat), link.joint.rotation_parent, atol=1e-12)
        if link.joint.type == "fixed":
            assert joints == []
            continue
        (j,) = joints
        assert m.jnt_type[j] == kinds[link.joint.type]
        assert np.allclose(m.jnt_pos[j], 0.0)                   # at the joint centre
        if link.joint.type != "spherical":
            assert np.allclose(m.jnt_axis[j], link.joint.axis, atol=1e-12)
            lim = link.joint.limits
            assert bool(m.jnt_limited[j]) == (lim is not None)
            if lim is not None:
                assert np.allclose(m.jnt_range[j], lim)
    # the link frames' poses at the zero position
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    for name, (rot, origin) in world_poses(model).items():
        assert np.allclose(d.xpos[m.body(name).id], origin, atol=1e-12)
        assert np.allclose(d.xmat[m.body(name).id].reshape(3, 3), rot, atol=1e-12)


def test_mjcf_viewing_ellipsoids_have_the_bodies_inertia():
    """An ellipsoid geom of the body's mass and MuJoCo's own solid-ellipsoid inertia (a
    second model, inertia from geoms) reproduces the identified inertia about the COM."""
    mujoco = _mujoco()
    model = body_model()
    text = mjcf_text(model).replace('inertiafromgeom="false"', 'inertiafromgeom="true"')
    for link in model.links:                   # drop <inertial>, give the geom the mass
        text = text.replace(f'name="{link.name}_ellipsoid" ',
                            f'name="{link.name}_ellipsoid" mass="{link.mass_kg!r}" ')
    import re
    text = re.sub(r"<inertial [^>]*/>", "", text)
    m = mujoco.MjModel.from_xml_string(text)
    for link in model.links:
        b = m.body(link.name)
        _same_inertial(b.mass[0], b.ipos, _mj_inertia(mujoco, m, b.id), link)
    assert "<geom" not in mjcf_text(model, geometry=False)


def _rk4_run(mujoco, m, qvel0, t_end, h):
    """Energy and angular momentum (about the whole body's COM, world) at start and end."""
    m.opt.timestep = h
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    d = mujoco.MjData(m)
    d.qvel[:] = qvel0

    def state():
        mujoco.mj_forward(m, d)
        mujoco.mj_energyPos(m, d)
        mujoco.mj_energyVel(m, d)
        mujoco.mj_subtreeVel(m, d)
        return d.energy.sum(), d.subtree_angmom[1].copy(), d.qpos.copy()

    e0, l0, _ = state()
    for _ in range(int(round(t_end / h))):
        mujoco.mj_step(m, d)
    e1, l1, q1 = state()
    return e0, e1, l0, l1, q1


@pytest.mark.parametrize("gravity", [False, True])
def test_mujoco_free_motion_conserves_energy(gravity):
    """RK4 on the free 15-link body (no damping, armature, contact or limits): energy and the
    angular momentum about the COM (gravity acts at the COM) stay constant to the integrator's
    error, so the inertias make a valid mechanical system.

    Tolerance from RK4's order: its global error over a time ``T`` is ``C (omega h)^4 omega
    T`` with ``omega`` the fastest angular rate and ``C`` of order one (or below: 1/72 (omega
    h) for a harmonic oscillator's energy), so the relative drift must stay below
    ``(omega h)^4 omega T`` (1.8e-7 here: omega = 9 rad/s, h = 1 ms, T = 3 s; measured
    1.2e-10), and halving the step must shrink it by 2^4 = 16 (asserted as at least 8: a
    model error, as opposed to truncation, would not shrink with h). Round-off, ``N``
    steps of 1e-16 relative, is far below both (3e-13)."""
    mujoco = _mujoco()
    m = mujoco.MjModel.from_xml_string(mjcf_text(body_model()))
    if not gravity:
        m.opt.gravity[:] = 0.0
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    assert np.all(m.dof_damping == 0) and np.all(m.dof_armature == 0)
    assert not np.any(m.jnt_limited)
    rng = np.random.default_rng(3)
    qvel0 = rng.normal(size=m.nv) * 2.0            # rad/s and m/s
    d = mujoco.MjData(m)
    d.qvel[:] = qvel0
    mujoco.mj_forward(m, d)
    omega = np.abs(d.cvel[1:, :3]).max()           # bodies' angular rates (world), rad/s
    t_end = 3.0
    drift_e, drift_l = {}, {}
    for h in (2e-3, 1e-3):
        e0, e1, l0, l1, q1 = _rk4_run(mujoco, m, qvel0, t_end, h)
        assert np.all(np.isfinite(q1))
        drift_e[h] = abs(e1 - e0) / abs(e0)
        drift_l[h] = np.linalg.norm(l1 - l0) / np.linalg.norm(l0)
    bound = (omega * 1e-3) ** 4 * omega * t_end
    for drift in (drift_e, drift_l):
        assert drift[1e-3] <= bound, (drift, bound)
        assert drift[1e-3] <= drift[2e-3] / 8, drift                # RK4's h^4


# ---------------------------------------------------------------------------- OpenSim

def _opensim():
    opensim = pytest.importorskip("opensim", reason="OpenSim's Python bindings not "
                                  "installed (pip install opensim)")
    opensim.Logger.removeFileSink()           # no opensim.log in the working directory
    return opensim


def _osim_load(opensim, text, tmp_path):
    path = tmp_path / "model.osim"
    path.write_text(text, encoding="utf-8")
    model = opensim.Model(str(path))
    state = model.initSystem()
    return model, state


def _vec3(v):
    return np.array([v.get(0), v.get(1), v.get(2)])


def _osim_pose(opensim, frame, state):
    t = frame.getTransformInGround(state)
    r = t.R()
    rot = np.array([[r.get(i, j) for j in range(3)] for i in range(3)])
    return rot, _vec3(t.p())


@pytest.mark.parametrize("types,base", [(("spherical",), "free"), (MIXED, "fixed")])
def test_osim_loads_with_the_inertials_and_tree(types, base, tmp_path):
    opensim = _opensim()
    model = body_model(types, base)
    om, state = _osim_load(opensim, osim_text(model), tmp_path)
    assert om.getNumBodies() == len(model.links) and om.getNumJoints() == len(model.links)
    kinds = {"spherical": "BallJoint", "revolute": "PinJoint", "prismatic": "SliderJoint",
             "fixed": "WeldJoint"}
    dofs = {"BallJoint": 3, "PinJoint": 1, "SliderJoint": 1, "WeldJoint": 0, "FreeJoint": 6}
    poses = world_poses(model)
    for link in model.links:
        body = om.getBodySet().get(link.name)
        inertia = body.getInertia()
        mo, pr = _vec3(inertia.getMoments()), _vec3(inertia.getProducts())   # xy, xz, yz
        tensor = np.array([[mo[0], pr[0], pr[1]], [pr[0], mo[1], pr[2]],
                           [pr[1], pr[2], mo[2]]])
        _same_inertial(body.getMass(), _vec3(body.getMassCenter()), tensor, link)
        rot, origin = _osim_pose(opensim, body, state)
        assert np.allclose(rot, poses[link.name][0], atol=1e-12)
        assert np.allclose(origin, poses[link.name][1], atol=1e-12)
        joint_name = f"{link.name}_to_ground" if link.parent is None else f"{link.name}_joint"
        joint = om.getJointSet().get(joint_name)
        kind = ({"free": "FreeJoint", "fixed": "WeldJoint"}[base] if link.parent is None
                else kinds[link.joint.type])
        assert joint.getConcreteClassName() == kind
        assert joint.numCoordinates() == dofs[kind]
        parent = joint.getParentFrame().findBaseFrame().getName()
        assert parent == ("ground" if link.parent is None else link.parent)
        assert joint.getChildFrame().findBaseFrame().getName() == link.name
        if link.parent is not None:
            offset = _vec3(joint.getParentFrame().findTransformInBaseFrame().p())
            assert np.allclose(offset, link.joint.position_parent_m, rtol=0, atol=1e-15)


def test_osim_pin_and_slider_move_along_the_joint_axis(tmp_path):
    """Turning a PinJoint's coordinate turns the child about the model's axis (in the joint
    frame); a SliderJoint's shifts it along its axis: OpenSim's z and x axes were aligned."""
    opensim = _opensim()
    model = body_model(MIXED, "fixed")
    om, state = _osim_load(opensim, osim_text(model), tmp_path)
    poses = world_poses(model)
    for link in model.links:
        if link.joint is None or link.joint.type not in ("revolute", "prismatic"):
            continue
        coord = om.getJointSet().get(f"{link.name}_joint").get_coordinates(0)
        value = 0.7 if link.joint.type == "revolute" else 0.05
        coord.setValue(state, value)
        om.realizePosition(state)
        rot, origin = _osim_pose(opensim, om.getBodySet().get(link.name), state)
        rot0, origin0 = poses[link.name]
        if link.joint.type == "revolute":
            turn = Rotation.from_rotvec(value * link.joint.axis).as_matrix()
            assert np.allclose(rot, rot0 @ turn, atol=1e-12)
            assert np.allclose(origin, origin0, atol=1e-12)
        else:
            assert np.allclose(rot, rot0, atol=1e-12)
            assert np.allclose(origin, origin0 + rot0 @ (value * link.joint.axis), atol=1e-12)
        coord.setValue(state, 0.0)


# ---------------------------------------------------------------------------- URDF

def _pinocchio():
    return pytest.importorskip("pinocchio", reason="pinocchio not installed (pip install pin)")


def _pin_composites(model: ModelDescription, pm, pin):
    """Expected inertia per pinocchio joint: the links whose BODY frame hangs on it,
    moved into the joint frame (parallel axis written out here, not pinocchio's)."""
    expected = {}
    for link in model.links:
        frame = pm.frames[pm.getFrameId(link.name, pin.FrameType.BODY)]
        rot = frame.placement.rotation
        p = frame.placement.translation
        c = p + rot @ link.com_m                           # COM in the joint frame
        i_com = rot @ link.inertia_com @ rot.T
        m0, h0, i0 = expected.get(frame.parentJoint, (0.0, np.zeros(3), np.zeros((3, 3))))
        # about the joint origin: I_o = I_c + m (|c|^2 E - c c^T)
        i_o = i_com + link.mass_kg * (c @ c * np.eye(3) - np.outer(c, c))
        expected[frame.parentJoint] = (m0 + link.mass_kg, h0 + link.mass_kg * c, i0 + i_o)
    return expected


@pytest.mark.parametrize("types,base", [(("spherical",), "free"), (MIXED, "free"),
                                        (MIXED, "fixed")])
def test_urdf_loads_in_pinocchio_with_the_inertials_and_tree(types, base, tmp_path):
    pin = _pinocchio()
    model = body_model(types, base)
    path = tmp_path / "model.urdf"
    path.write_text(urdf_text(model), encoding="utf-8")
    pm = pin.buildModelFromUrdf(str(path))
    # joints: the base's, then per link 3 (spherical), 1 (revolute, prismatic), 0 (fixed)
    names = list(pm.names)
    for link in model.links:
        if link.parent is None:
            if base == "free":
                assert pm.joints[pm.getJointId(f"{link.name}_to_world")].shortname() == \
                    "JointModelFreeFlyer"
            continue
        j = link.joint
        if j.type == "spherical":
            ids = [pm.getJointId(f"{link.name}_joint_{a}") for a in "xyz"]
            assert [pm.joints[i].shortname() for i in ids] == [
                "JointModelRUBX", "JointModelRUBY", "JointModelRUBZ"]
            assert pm.parents[ids[1]] == ids[0] and pm.parents[ids[2]] == ids[1]
            first = ids[0]
        elif j.type == "fixed":
            assert f"{link.name}_joint" not in names
            continue
        else:
            first = pm.getJointId(f"{link.name}_joint")
            short = pm.joints[first].shortname()
            if j.type == "revolute":
                assert short == ("JointModelRevoluteUnboundedUnaligned" if j.limits is None
                                 else "JointModelRevoluteUnaligned")
            else:
                assert short == "JointModelPrismaticUnaligned"
            assert np.allclose(pm.joints[first].extract().axis, j.axis, atol=1e-12)
            if j.limits is not None:
                k = pm.joints[first].idx_q
                assert np.allclose([pm.lowerPositionLimit[k], pm.upperPositionLimit[k]],
                                   j.limits)
        # the parent: the joint carrying the parent link's BODY frame
        parent_frame = pm.frames[pm.getFrameId(link.parent, pin.FrameType.BODY)]
        assert pm.parents[first] == parent_frame.parentJoint
    # inertias: per link through its BODY frame, per joint against the composite
    expected = _pin_composites(model, pm, pin)
    for jid, (mass, h, i_o) in expected.items():
        inertia = pm.inertias[jid]
        assert _close(inertia.mass, mass)
        assert _close(inertia.lever, h / mass)
        i_about_origin = inertia.inertia + mass * (inertia.lever @ inertia.lever * np.eye(3)
                                                   - np.outer(inertia.lever, inertia.lever))
        assert _close(i_about_origin, i_o)
    for link in model.links:          # a link alone on its joint: its own inertial exactly
        frame = pm.frames[pm.getFrameId(link.name, pin.FrameType.BODY)]
        alone = [l for l in model.links if pm.frames[pm.getFrameId(
            l.name, pin.FrameType.BODY)].parentJoint == frame.parentJoint]
        if alone == [link] and np.allclose(frame.placement.homogeneous, np.eye(4)):
            inertia = pm.inertias[frame.parentJoint]
            _same_inertial(inertia.mass, inertia.lever, inertia.inertia, link)
    # the link frames at the zero (neutral) position
    data = pm.createData()
    pin.framesForwardKinematics(pm, data, pin.neutral(pm))
    for name, (rot, origin) in world_poses(model).items():
        placement = data.oMf[pm.getFrameId(name, pin.FrameType.BODY)]
        assert np.allclose(placement.rotation, rot, atol=1e-12)
        assert np.allclose(placement.translation, origin, atol=1e-12)
    # computeTotalMass leaves out the universe's inertia, which holds what is welded to it
    assert _close(pin.computeTotalMass(pm) + pm.inertias[0].mass,
                  sum(l.mass_kg for l in model.links))


def test_urdf_ball_chain_turns_as_intrinsic_xyz(tmp_path):
    """The three joints of a spherical joint turn the child by ``Rx(a) Ry(b) Rz(c)`` about
    the joint centre (pinocchio's kinematics)."""
    pin = _pinocchio()
    model = body_model(("spherical",), "fixed")
    path = tmp_path / "model.urdf"
    path.write_text(urdf_text(model), encoding="utf-8")
    pm = pin.buildModelFromUrdf(str(path))
    q = pin.neutral(pm)
    angles = (0.3, -0.5, 1.1)
    for a, angle in zip("xyz", angles):
        k = pm.joints[pm.getJointId(f"forearm_l_joint_{a}")].idx_q
        q[k], q[k + 1] = np.cos(angle), np.sin(angle)         # unbounded joints: cos, sin
    data = pm.createData()
    pin.framesForwardKinematics(pm, data, q)
    rot0, origin0 = world_poses(model)["forearm_l"]
    placement = data.oMf[pm.getFrameId("forearm_l", pin.FrameType.BODY)]
    assert np.allclose(placement.rotation,
                       rot0 @ Rotation.from_euler("XYZ", angles).as_matrix(), atol=1e-12)
    assert np.allclose(placement.translation, origin0, atol=1e-12)


def test_urdf_passes_check_urdf_and_loads_in_mujoco(tmp_path):
    """urdfdom's own checker parses the file (massless intermediate links included), and
    MuJoCo's URDF import loads it with the same per-link inertials and free base."""
    mujoco = _mujoco()
    model = body_model(MIXED, "free")
    path = tmp_path / "model.urdf"
    path.write_text(urdf_text(model), encoding="utf-8")
    checker = shutil.which("check_urdf")
    if checker is None:
        warnings.warn("urdfdom's check_urdf not on PATH: urdfdom checked through pinocchio "
                      "only")
    else:
        res = subprocess.run([checker, str(path)], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and "Successfully Parsed XML" in res.stdout, res.stderr
    m = mujoco.MjModel.from_xml_path(str(path))
    for link in model.links:
        b = m.body(link.name)
        _same_inertial(b.mass[0], b.ipos, _mj_inertia(mujoco, m, b.id), link)
    assert m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    assert m.body("forearm_l__ball_x").mass[0] < 1e-6            # MuJoCo's bound only


def test_urdf_tiny_mass_option_gives_the_chain_links_mass(tmp_path):
    pin = _pinocchio()
    model = body_model()
    path = tmp_path / "model.urdf"
    path.write_text(urdf_text(model, massless_mass_kg=1e-6), encoding="utf-8")
    pm = pin.buildModelFromUrdf(str(path))
    assert pm.inertias[pm.getJointId("head_joint_x")].mass == pytest.approx(1e-6, rel=1e-12)


# ---------------------------------------------------------------------------- all three

@pytest.mark.parametrize("base", ["fixed", "free"])
def test_mass_matrices_agree_across_consumers(base, tmp_path):
    """At the zero position the joint-space mass matrix of the MJCF (MuJoCo), of the URDF
    (pinocchio; each ball as three revolutes, whose rates at zero are the angular velocity in
    the child frame, as MuJoCo's ball dofs are) and of the .osim (Simbody) agree: the same
    bodies on the same tree, computed by three libraries. At the zero position the free
    base's dofs mean the same in all three too (linear and angular velocity, world = base
    axes). Each dof is keyed (link, "t" or "r", axis)."""
    mujoco, pin, opensim = _mujoco(), _pinocchio(), _opensim()
    model = body_model(("spherical",), base)
    m = mujoco.MjModel.from_xml_string(mjcf_text(model))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    m_mj = np.zeros((m.nv, m.nv))
    try:
        mujoco.mj_fullM(m, d, m_mj)                 # MuJoCo >= 4
    except TypeError:
        mujoco.mj_fullM(m, m_mj, d.qM)              # MuJoCo 3
    keys_mj = []
    for j in range(m.njnt):
        body = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, m.jnt_bodyid[j])
        kinds = "tttrrr" if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE else "rrr"
        keys_mj += [(body, kind, k % 3) for k, kind in enumerate(kinds)]
    scale = np.abs(m_mj).max()

    path = tmp_path / "model.urdf"
    path.write_text(urdf_text(model), encoding="utf-8")
    pm = pin.buildModelFromUrdf(str(path))
    m_pin = pin.crba(pm, pm.createData(), pin.neutral(pm))
    m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
    keys_pin = []
    for jid in range(1, pm.njoints):
        name = pm.names[jid]
        if name.endswith("_to_world"):                # the free-flyer: v then omega, local
            keys_pin += [(name[:-len("_to_world")], kind, k % 3)
                         for k, kind in enumerate("tttrrr")]
        else:
            keys_pin.append((name[:-len("_joint_x")], "r", "xyz".index(name[-1])))
    perm = [keys_pin.index(key) for key in keys_mj]
    assert sorted(keys_pin) == sorted(keys_mj)
    assert np.abs(m_pin[np.ix_(perm, perm)] - m_mj).max() <= 1e-12 * scale

    om, state = _osim_load(opensim, osim_text(model), tmp_path)
    mat = opensim.Matrix()
    om.getMatterSubsystem().calcM(state, mat)
    m_os = np.array([[mat.get(i, j) for j in range(mat.ncol())] for i in range(mat.nrow())])
    # each coordinate's slot in Simbody's u: set its speed alone and see which u moves
    keys_os = [None] * m_os.shape[0]
    coords = om.getCoordinateSet()
    for k in range(coords.getSize()):
        coord = coords.get(k)
        coord.setSpeedValue(state, 1.0)
        u = np.array([state.getU().get(i) for i in range(state.getNU())])
        coord.setSpeedValue(state, 0.0)
        (slot,) = np.flatnonzero(u)
        name = coord.getName()                       # <joint>_rx ... <joint>_tz
        keys_os[slot] = (coord.getJoint().getChildFrame().findBaseFrame().getName(),
                         name[-2], "xyz".index(name[-1]))
    perm = [keys_os.index(key) for key in keys_mj]
    assert np.abs(m_os[np.ix_(perm, perm)] - m_mj).max() <= 1e-12 * scale


# ---------------------------------------------------------------------------- the demo

@pytest.fixture(scope="module")
def demo(demo_run):
    return demo_run


def test_demo_model_files_match_the_report_and_manifest(demo, tmp_path):
    """The bundled demo's model files in their consumers: each body's mass, COM and inertia
    about the COM are the report's (report.json ``segments``) within 1e-9, the tree is the
    manifest's (parents, spherical joints at its joint centres), the base is free."""
    mujoco, pin, opensim = _mujoco(), _pinocchio(), _opensim()
    tmp, out = demo
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    manifest = tomllib.loads((tmp / "captures" / "two-link" / "session.toml").read_text())
    segs = doc["segments"]["links"]
    assert [f["file"] for f in doc["model_files"]["files"]] == [
        "model_mujoco.xml", "model.osim", "model.urdf"]
    assert doc["model_files"]["base"] == "free"
    for f in doc["model_files"]["files"]:
        text = (out / f["file"]).read_text(encoding="utf-8")
        assert f"rigtool {doc['rigtool_version']}" in text
        assert all(i["sha256"] in text for i in doc["inputs"])
        for name, seg in segs.items():              # what was measured, per link
            flag = {"both": "measured and prior", "prior": "from the prior"}.get(
                seg["source"]["mass"], seg["source"]["mass"])
            assert f"link {name}: mass: {flag}; COM: " in text

    def check(name, mass, com, inertia):
        s = segs[name]
        assert _close(mass, s["mass"]) and _close(com, s["com"])
        assert _close(inertia, s["inertia_com"])

    m = mujoco.MjModel.from_xml_path(str(out / "model_mujoco.xml"))
    o_model, state = _osim_load(opensim, (out / "model.osim").read_text(), tmp_path)
    pm = pin.buildModelFromUrdf(str(out / "model.urdf"))
    assert pm.joints[1].shortname() == "JointModelFreeFlyer"
    assert m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    assert o_model.getJointSet().get(0).getConcreteClassName() == "FreeJoint"
    for spec in manifest["links"]:
        name = spec["name"]
        b = m.body(name)
        check(name, b.mass[0], b.ipos, _mj_inertia(mujoco, m, b.id))
        body = o_model.getBodySet().get(name)
        inertia = body.getInertia()
        mo, pr = _vec3(inertia.getMoments()), _vec3(inertia.getProducts())
        check(name, body.getMass(), _vec3(body.getMassCenter()),
              np.array([[mo[0], pr[0], pr[1]], [pr[0], mo[1], pr[2]], [pr[1], pr[2], mo[2]]]))
        frame = pm.frames[pm.getFrameId(name, pin.FrameType.BODY)]
        inertia = pm.inertias[frame.parentJoint]
        check(name, inertia.mass, inertia.lever, inertia.inertia)
        if spec["parent"] == "platform":
            continue
        # the tree: parent, joint type and joint centre as the manifest gives them
        assert spec.get("joint", "spherical") == "spherical"
        centre = np.array(spec["joint_center"], float)
        assert m.body_parentid[b.id] == m.body(spec["parent"]).id
        assert m.jnt_type[m.body_jntadr[b.id]] == mujoco.mjtJoint.mjJNT_BALL
        assert np.array_equal(b.pos, centre)
        joint = o_model.getJointSet().get(f"{name}_joint")
        assert joint.getConcreteClassName() == "BallJoint"
        assert joint.getParentFrame().findBaseFrame().getName() == spec["parent"]
        assert np.array_equal(_vec3(joint.getParentFrame().findTransformInBaseFrame().p()),
                              centre)
        jx = pm.getJointId(f"{name}_joint_x")
        parent_joint = pm.frames[pm.getFrameId(spec["parent"], pin.FrameType.BODY)].parentJoint
        assert pm.parents[jx] == parent_joint
        assert np.array_equal(pm.jointPlacements[jx].translation, centre)
    html = (out / "report.html").read_text(encoding="utf-8")
    for f in ("model_mujoco.xml", "model.osim", "model.urdf"):
        assert f'<a href="{f}">' in html
    assert "[`model.urdf`](model.urdf)" in (out / "report.md").read_text(encoding="utf-8")


def test_export_command_rewrites_the_models_with_a_fixed_base(demo, tmp_path, capsys):
    mujoco = _mujoco()
    _, out = demo
    assert main(["export", str(out), "-o", str(tmp_path), "--model-base", "fixed",
                 "--no-model-geometry"]) == 0
    m = mujoco.MjModel.from_xml_path(str(tmp_path / "model_mujoco.xml"))
    assert m.njnt == 1 and m.jnt_type[0] == mujoco.mjtJoint.mjJNT_BALL and m.ngeom == 0
    assert "mounted fixed" in (tmp_path / "model.osim").read_text()
    assert "wrote" in capsys.readouterr().out
    doc = json.loads((out / "report.json").read_text())
    model = model_from_report(doc, base="fixed")
    assert [l.name for l in model.links] == ["link0", "link1"]


def test_export_command_asks_for_force_before_replacing_model_files(demo, tmp_path, capsys):
    _, out = demo
    assert main(["export", str(out), "-o", str(tmp_path)]) == 0
    before = (tmp_path / "model_mujoco.xml").read_text()
    capsys.readouterr()
    # the run's own model files, and those just written: refused without --force
    for target in (["-o", str(tmp_path)], ["-o", str(out)]):
        assert main(["export", str(out), *target, "--model-base", "fixed"]) == 2
        err = capsys.readouterr().err
        assert "--force" in err and "model_mujoco.xml" in err and "Traceback" not in err
    assert (tmp_path / "model_mujoco.xml").read_text() == before
    assert main(["export", str(out), "-o", str(tmp_path), "--model-base", "fixed",
                 "--force"]) == 0
    assert (tmp_path / "model_mujoco.xml").read_text() != before


def test_export_command_refuses_a_folder_without_report(tmp_path, capsys):
    assert main(["export", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "report.json" in err and "Traceback" not in err


def test_export_command_refuses_an_output_that_is_not_a_directory(tmp_path, capsys):
    (tmp_path / "report.json").write_text(json.dumps({"summary": {"links": []}}))
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    for target in (a_file, a_file / "models"):
        assert main(["export", str(tmp_path), "-o", str(target)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and str(target) in err
    assert a_file.read_text() == "mine\n"


def test_model_from_report_without_segments_says_why():
    from rigtool.errors import InputError
    with pytest.raises(InputError, match="segments stage did not run"):
        model_from_report({"summary": {"links": []}})


def test_equivalent_ellipsoid_reproduces_the_principal_moments():
    rng = np.random.default_rng(5)
    _, inertia = _inertial(rng, 3.0)
    semi, rot = equivalent_ellipsoid(3.0, inertia)
    a2 = semi ** 2
    moments = 3.0 / 5 * np.array([a2[1] + a2[2], a2[0] + a2[2], a2[0] + a2[1]])
    assert np.allclose(rot @ np.diag(moments) @ rot.T, inertia, rtol=1e-12, atol=1e-15)
    assert np.isclose(np.linalg.det(rot), 1.0)
