"""The wrench a moving robot exerts on what it is bolted to, linear in its standard
parameters (pinocchio's joint-torque regressor of a floating-base model, its base rows).

When the motors move the joints while the platform vibrates, the platform feels the robot's
base wrench. With the base's motion (the platform's, measured) and the joints' motion (the
encoders') known, that wrench is ``Y(q, v, a) pi``: the first six rows of the inverse-dynamics
regressor of the robot on a free-flyer root (pinocchio ``computeJointTorqueRegressor``; the
joint-torque rows are not measured). Its columns are the same ``10 n`` standard parameters
as the locked postures' (rigtool order per body, :mod:`rigtool.robot.urdf_model`).

Conventions: the free flyer sits at the base link's frame; its velocity ``v = [v_o, omega]``
and (spatial) acceleration ``a = [dv_o/dt - omega x v_o, domega/dt]`` are in base-link axes
(pinocchio's local convention, ``v_o`` the velocity of the base origin); gravity is given in
base-link axes. The wrench ``[f, n]`` is the one the support exerts on the robot, about the
base-link origin, base-link axes.
"""

from __future__ import annotations

import math

import numpy as np

from rigtool.robot.urdf_model import RobotModel, from_pinocchio_order


def floating_model(robot: RobotModel):
    """The robot's pinocchio model on a free-flyer root placed at the base link (held joints
    locked as in ``robot``); its joints 2.. are ``robot``'s bodies 1.., its root body is
    body 0."""
    import pinocchio as pin

    fixed = robot.pin_model                                  # universe = body 0
    ff = pin.Model()
    ff.gravity = pin.Motion.Zero()          # gravity enters through the base acceleration
    root = ff.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base_free_flyer")
    base_inv = robot.base_placement.inverse()
    # body 0 in base-link coordinates
    ff.appendBodyToJoint(root, base_inv.act(fixed.inertias[0]), pin.SE3.Identity())
    ids = {0: root}
    for j in range(1, fixed.njoints):
        parent = ids[fixed.parents[j]]
        placement = fixed.jointPlacements[j]
        if fixed.parents[j] == 0:
            placement = base_inv * placement
        ids[j] = ff.addJoint(parent, fixed.joints[j], placement, fixed.names[j])
        ff.appendBodyToJoint(ids[j], fixed.inertias[j], pin.SE3.Identity())
    return ff


def base_wrench_regressor(robot: RobotModel, model, q_joints: np.ndarray,
                          qd_joints: np.ndarray, qdd_joints: np.ndarray,
                          v_base: np.ndarray, a_base: np.ndarray,
                          gravity_base: np.ndarray) -> np.ndarray:
    """``Y [T, 6, 10 n]``: the support's wrench on the robot (base-link origin and axes) is
    ``Y @ pi`` for every frame (see module docstring).

    Parameters
    ----------
    robot : RobotModel
    model : pinocchio.Model
        :func:`floating_model` of ``robot``.
    q_joints, qd_joints, qdd_joints : ndarray (T, k)
        The moving joints' values, rates and accelerations (rad, rad/s, rad/s^2; m for
        prismatic joints).
    v_base, a_base : ndarray (T, 6)
        The base's spatial velocity and acceleration (linear first), base-link axes.
    gravity_base : ndarray (T, 3)
        Gravity in base-link axes, m/s^2.
    """
    import pinocchio as pin

    data = model.createData()
    t = q_joints.shape[0]
    n = robot.n_bodies
    out = np.zeros((t, 6, 10 * n))
    q = pin.neutral(model)
    v = np.zeros(model.nv)
    a = np.zeros(model.nv)
    idx_q = [model.idx_qs[j] for j in range(2, model.njoints)]
    idx_v = [model.idx_vs[j] for j in range(2, model.njoints)]
    nqs = [model.nqs[j] for j in range(2, model.njoints)]
    for k in range(t):
        for i, (iq, iv, nq) in enumerate(zip(idx_q, idx_v, nqs)):
            if nq == 1:
                q[iq] = q_joints[k, i]
            else:
                q[iq:iq + 2] = [math.cos(q_joints[k, i]), math.sin(q_joints[k, i])]
            v[iv] = qd_joints[k, i]
            a[iv] = qdd_joints[k, i]
        v[:6] = v_base[k]
        # gravity enters as an upward acceleration of the base (the free flyer's world is
        # the base's own, at rest): a_base - g
        a[:3] = a_base[k, :3] - gravity_base[k]
        a[3:6] = a_base[k, 3:]
        y = pin.computeJointTorqueRegressor(model, data, q, v, a)
        out[k] = from_pinocchio_order(y[:6].reshape(6, n, 10)).reshape(6, 10 * n)
    return out


__all__ = ["floating_model", "base_wrench_regressor"]
