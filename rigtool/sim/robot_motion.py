"""The rig's platform carrying a robot whose motors drive its joints along prescribed
trajectories (the encoders' record), simulated with pinocchio.

The system is one pinocchio model: a free-flyer root at the platform frame carrying the
platform's inertia, the robot's base body bolted at its placement, then the robot's moving
joints. The joints follow ``q(t)`` exactly (the motors' servo is stiff); the platform's six
accelerations solve the root rows of the equations of motion::

    M_bb a_b = tau_springs - h_b(q, v) - M_bj qdd

with ``M`` (``crba``) and ``h`` (``nonLinearEffects``: Coriolis, centrifugal and gravity
terms) from pinocchio, and the springs' wrench from rigtool's rig model
(:func:`rigtool.rig.spring_wrench`, lab components about the platform origin, turned to the
platform's axes). Fixed-step RK4 on the platform's pose (``pinocchio.integrate`` on SE(3))
and twist, from the static equilibrium of the robot locked at ``q(0)`` plus the capture's
offset and velocity (as :func:`rigtool.sim.dynamics.simulate` starts).

Checked against rigtool's own simulator: joints held still, the platform's trajectory is
the locked composite's (``tests/test_robot_motion.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.inertia import InertialParams
from rigtool.rig import Rig, spring_wrench
from rigtool.robot.urdf_model import RobotModel

JointTrajectory = Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass
class MotionTrajectory:
    """A simulated capture: per frame the platform's pose (lab), the base link's, and the
    joints'. ``rotation``/``position_m`` are keyed by body (``"platform"``, the base link)
    as :func:`rigtool.sim.markers.synthesize_markers` reads them."""

    time_s: np.ndarray
    rotation: dict[str, np.ndarray]
    position_m: dict[str, np.ndarray]
    q: np.ndarray


def _pin_inertia(params: InertialParams):
    import pinocchio as pin
    m = params.mass
    return pin.Inertia(m, params.com, params.inertia_com)


def platform_robot_model(robot: RobotModel, platform: InertialParams,
                         base_rotation_platform: np.ndarray,
                         base_position_platform_m: np.ndarray, gravity_lab: np.ndarray,
                         robot_params: np.ndarray | None = None):
    """The pinocchio model of the platform and the robot (see module docstring);
    ``robot_params``: the bodies' standard parameters (default the URDF's)."""
    import pinocchio as pin

    from rigtool.robot.urdf_model import to_pinocchio_order

    fixed = robot.pin_model
    per = (robot.prior_vector() if robot_params is None else np.asarray(robot_params)
           ).reshape(-1, 10)
    model = pin.Model()
    model.gravity = pin.Motion(np.concatenate([gravity_lab, np.zeros(3)]))
    root = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "platform")
    model.appendBodyToJoint(root, _pin_inertia(platform), pin.SE3.Identity())
    p_m_b = pin.SE3(np.asarray(base_rotation_platform, float),
                    np.asarray(base_position_platform_m, float))
    p_m_root = p_m_b * robot.base_placement.inverse()       # platform <- URDF root
    inertia = [pin.Inertia.FromDynamicParameters(to_pinocchio_order(per[j]))
               for j in range(robot.n_bodies)]
    # body 0's parameters are in the URDF root's frame (robot.pin_model's universe)
    model.appendBodyToJoint(root, inertia[0], p_m_root)
    ids = {0: root}
    for j in range(1, fixed.njoints):
        placement = fixed.jointPlacements[j]
        if fixed.parents[j] == 0:
            placement = p_m_root * placement
        ids[j] = model.addJoint(ids[fixed.parents[j]], fixed.joints[j], placement,
                                fixed.names[j])
        model.appendBodyToJoint(ids[j], inertia[j], pin.SE3.Identity())
    return model


def simulate_robot_motion(rig: Rig, platform: InertialParams, robot: RobotModel,
                          base_rotation_platform: np.ndarray,
                          base_position_platform_m: np.ndarray, joints: JointTrajectory,
                          duration_s: float, rate_hz: float, *,
                          platform_offset=np.zeros(6), platform_velocity=np.zeros(6),
                          robot_params: np.ndarray | None = None,
                          substeps: int = 2) -> MotionTrajectory:
    """Simulate the platform with the robot's joints on ``joints(t) -> (q, qd, qdd)``.

    Parameters
    ----------
    rig : Rig
        Springs with their true stiffness, free length and damping.
    platform : InertialParams
        The platform's parameters about its frame origin.
    robot : RobotModel
    base_rotation_platform, base_position_platform_m : ndarray
        The base link's frame in the platform frame.
    joints : callable
        ``t -> (q, qd, qdd)`` of the moving joints (``robot.moving_joints`` order).
    duration_s, rate_hz : float
        The capture's length and frame rate (``substeps`` RK4 steps per frame).
    platform_offset, platform_velocity : ndarray (6,)
        Initial ``[dp, rotation vector]`` from equilibrium, and ``[v, omega]`` (lab).
    robot_params : ndarray, optional
        The true bodies' parameters (default the URDF's).
    """
    import pinocchio as pin

    from rigtool.sim.equilibrium import static_equilibrium
    from rigtool.sim.system import System
    from rigtool.tree import Link, Tree

    pi = robot.prior_vector() if robot_params is None else np.asarray(robot_params, float)
    model = platform_robot_model(robot, platform, base_rotation_platform,
                                 base_position_platform_m, rig.gravity_lab, pi)
    data = model.createData()
    q0, _, _ = joints(0.0)
    # start: the static equilibrium of the robot locked at q(0), as rigtool's simulator
    composite = robot.composite(pi, q0)
    system = System(rig, platform, tree=Tree((Link(robot.base_link, "platform", None,
                                                    composite, {}),)),
                    base_rotation_platform=np.asarray(base_rotation_platform, float),
                    base_position_platform_m=np.asarray(base_position_platform_m, float),
                    posture={})
    r_eq, p_eq = static_equilibrium(system)
    off = np.asarray(platform_offset, float)
    vel = np.asarray(platform_velocity, float)
    r0 = Rotation.from_rotvec(off[3:]).as_matrix() @ r_eq
    p0 = p_eq + off[:3]
    idx = [(model.idx_qs[j], model.idx_vs[j], model.nqs[j]) for j in range(2, model.njoints)]

    def config(x_pose: np.ndarray, qj: np.ndarray) -> np.ndarray:
        q = np.zeros(model.nq)
        q[:7] = x_pose
        for i, (iq, _, nq) in enumerate(idx):
            if nq == 1:
                q[iq] = qj[i]
            else:
                q[iq:iq + 2] = [math.cos(qj[i]), math.sin(qj[i])]
        return q

    def accel(x_pose, v_b, t):
        qj, qdj, qddj = joints(t)
        q = config(x_pose, qj)
        v = np.zeros(model.nv)
        v[:6] = v_b
        qdd = np.zeros(model.nv)
        for i, (_, iv, _) in enumerate(idx):
            v[iv] = qdj[i]
            qdd[iv] = qddj[i]
        m = pin.crba(model, data, q)
        m = np.triu(m) + np.triu(m, 1).T
        h = pin.nonLinearEffects(model, data, q, v)
        rot = Rotation.from_quat(x_pose[3:7]).as_matrix()    # pinocchio's order: x y z w
        v_lab = rot @ v_b[:3]
        w_lab = rot @ v_b[3:]
        w = spring_wrench(rig, rot, x_pose[:3], v_lab, w_lab)
        tau = np.concatenate([rot.T @ w[:3], rot.T @ w[3:]])
        rhs = tau - h[:6] - m[:6, 6:] @ qdd[6:]
        return np.linalg.solve(m[:6, :6], rhs)

    # the free flyer's configuration and local twist
    ff = pin.Model()
    ff.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "p")
    x = np.concatenate([p0, Rotation.from_matrix(r0).as_quat()])
    v_b = np.concatenate([r0.T @ vel[:3], r0.T @ vel[3:]])
    n_frames = int(round(duration_s * rate_hz))
    dt = 1.0 / (rate_hz * substeps)
    times = np.arange(n_frames) / rate_hz
    rot_out = np.zeros((n_frames, 3, 3))
    pos_out = np.zeros((n_frames, 3))
    q_out = np.zeros((n_frames, len(robot.moving_joints)))
    t = 0.0
    for k in range(n_frames):
        rot_out[k] = Rotation.from_quat(x[3:7]).as_matrix()
        pos_out[k] = x[:3]
        q_out[k] = joints(t)[0]
        if k == n_frames - 1:
            break
        for _ in range(substeps):
            a1 = accel(x, v_b, t)
            x2 = pin.integrate(ff, x, 0.5 * dt * v_b)
            v2 = v_b + 0.5 * dt * a1
            a2 = accel(x2, v2, t + 0.5 * dt)
            x3 = pin.integrate(ff, x, 0.5 * dt * v2)
            v3 = v_b + 0.5 * dt * a2
            a3 = accel(x3, v3, t + 0.5 * dt)
            x4 = pin.integrate(ff, x, dt * v3)
            v4 = v_b + dt * a3
            a4 = accel(x4, v4, t + dt)
            x = pin.integrate(ff, x, dt / 6.0 * (v_b + 2 * v2 + 2 * v3 + v4))
            v_b = v_b + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
            t += dt
    r_pb = np.asarray(base_rotation_platform, float)
    t_pb = np.asarray(base_position_platform_m, float)
    return MotionTrajectory(times, {"platform": rot_out, robot.base_link: rot_out @ r_pb},
                            {"platform": pos_out,
                             robot.base_link: pos_out + rot_out @ t_pb}, q_out)


__all__ = ["MotionTrajectory", "platform_robot_model", "simulate_robot_motion"]
