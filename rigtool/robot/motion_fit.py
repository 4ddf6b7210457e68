"""The robot's joints moved by its motors while the platform vibrates: the combinations of
the standard parameters that locked postures cannot see (one per revolute joint on an arm
like the Panda), by equation error with the encoders as the prescribed motion.

Per frame, the platform's Newton-Euler equation in its own axes about its origin::

    Y_p(a - g, omega, domega) pi_platform = w_springs + w_robot

with the platform's parameters and the springs from the calibrated rig, and the robot's
wrench on the platform ``w_robot = -X Y_r(q, qd, qdd, v_base, a_base, g) pi``
(rigtool.robot.motion_regressor; ``X`` moves a wrench from the base link's origin and axes
to the platform's). So ``X Y_r pi = w_springs - Y_p pi_platform`` is linear in the robot's
``10 n`` standard parameters. The platform's motion is the capture's, filtered and
differentiated as every stage does (rigtool.identify.common.platform_motion); the joints'
rates and accelerations are the encoders' angles interpolated to the capture's frames,
differentiated and passed through the same zero-phase filter.

Stacked with the locked postures' rows (rigtool.robot.base_parameters, ``extra``): rows
whitened with each wrench component's residual RMS (a first fit's), unit-free structural
rows (forces over ``M |g|``, moments over ``M |g| r``) for the rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.config import FilterSettings
from rigtool.identify.common.platform_motion import capture_motion
from rigtool.inertia import InertialParams, regressor_body
from rigtool.mocap import MarkerData
from rigtool.identify.posture.equation_error import spring_wrench_body
from rigtool.rig import Rig
from rigtool.robot.joint_angles import JointAngles
from rigtool.robot.motion_regressor import base_wrench_regressor, floating_model
from rigtool.robot.urdf_model import RobotModel


@dataclass
class MotionRows:
    """The motion capture's equations ``a @ pi = b`` (``[rows, 10 n]``, platform axes about
    its origin, N and N m), per frame six rows; ``frames`` the capture's frames used."""

    a: np.ndarray
    b: np.ndarray
    frames: np.ndarray
    time_s: np.ndarray
    #: used frames per independent sample: the filter keeps 2 passband samples per second
    frames_per_sample: float = 1.0


def _wrench_to_platform(r_pb: np.ndarray, t_pb: np.ndarray) -> np.ndarray:
    """``X`` (6 x 6): a wrench about the base-link origin in base axes -> about the platform
    origin in platform axes."""
    from rigtool.inertia import skew
    x = np.zeros((6, 6))
    x[:3, :3] = r_pb
    x[3:, 3:] = r_pb
    x[3:, :3] = skew(t_pb) @ r_pb
    return x


def motion_rows(robot: RobotModel, rig: Rig, platform: InertialParams, data: MarkerData,
                angles: JointAngles, settings: FilterSettings, r_pb: np.ndarray,
                t_pb: np.ndarray, *, window: tuple[float, float] | None = None,
                step: int = 2, name: str = "relative_motion") -> MotionRows:
    """The equations of a motion capture (see module docstring).

    Parameters
    ----------
    robot, rig, platform
        The robot, the calibrated rig and the platform's parameters.
    data : MarkerData
        The capture (platform markers at least).
    angles : JointAngles
        The encoders, on the capture's clock.
    settings : FilterSettings
    r_pb, t_pb : ndarray
        The base link's frame in the platform frame (from the locked postures).
    window : (float, float), optional
    step : int
        Every ``step``-th valid frame is used (neighbouring filtered frames are correlated).
    """
    cap = capture_motion(data, rig.platform.markers_platform, settings, name=name,
                         window=window)
    t = cap.time_s
    k = len(robot.moving_joints)
    q = np.stack([np.interp(t, angles.time_s, angles.values[:, i]) for i in range(k)], axis=1)
    dt = float(np.median(np.diff(t)))
    qd = np.gradient(q, dt, axis=0)
    qdd = np.gradient(qd, dt, axis=0)
    q, qd, qdd = cap.filt(q), cap.filt(qd), cap.filt(qdd)
    inside = (t >= angles.time_s[0]) & (t <= angles.time_s[-1])
    ok = cap.valid & inside & np.isfinite(q).all(1) & np.isfinite(qdd).all(1)
    frames = np.flatnonzero(ok)[::step]
    rt = np.swapaxes(cap.rotation[frames], -1, -2)
    g_lab = np.asarray(rig.gravity_lab, float)
    omega_b = cap.omega_body[frames]                       # platform axes
    domega_b = cap.omega_dot_body[frames]
    acc_b = np.einsum("tij,tj->ti", rt, cap.accel_lab[frames])
    vel_b = np.einsum("tij,tj->ti", rt, cap.velocity_lab[frames])
    g_b = np.einsum("tij,j->ti", rt, g_lab)
    # the platform's own equation: springs and robot against its inertia
    # the springs as the posture stage sees them: the elastic part from the raw pose, then
    # filtered like the accelerations (a filtered pose is not the pose's filtered wrench)
    w_spring = spring_wrench_body(rig, cap)[frames]
    y_p = regressor_body(acc_b - g_b, omega_b, domega_b)
    b = w_spring - y_p @ platform.pi
    # the base link's motion in its own axes (pinocchio's local convention)
    r_bp = r_pb.T
    v_o = vel_b + np.cross(omega_b, t_pb)                   # base origin, platform axes
    a_o = acc_b + np.cross(domega_b, t_pb) + np.cross(omega_b, np.cross(omega_b, t_pb))
    w_base = omega_b @ r_bp.T
    v_base = np.concatenate([v_o @ r_bp.T, w_base], axis=1)
    a_lin = a_o @ r_bp.T - np.cross(w_base, v_o @ r_bp.T)
    a_base = np.concatenate([a_lin, domega_b @ r_bp.T], axis=1)
    y_r = base_wrench_regressor(robot, floating_model(robot), q[frames], qd[frames],
                                qdd[frames], v_base, a_base, g_b @ r_bp.T)
    x = _wrench_to_platform(r_pb, t_pb)
    a = np.einsum("ij,tjk->tik", x, y_r)
    per_sample = max(1.0, 1.0 / (dt * 2.0 * settings.passband_hz * step))
    return MotionRows(a.reshape(-1, a.shape[-1]), b.reshape(-1), frames, t[frames],
                      per_sample)


def motion_extra(rows: MotionRows, total_mass_kg: float, radius_m: float,
                 gravity: float = 9.80665) -> tuple:
    """``(structural, a_whitened, b_whitened, label)`` for
    :func:`rigtool.robot.base_parameters.fit_base_parameters`: each wrench component's rows
    over its residual RMS (of a least-squares fit of these rows alone), inflated by the
    square root of the used frames per independent sample (the zero-phase filter correlates
    neighbouring frames)."""
    a = rows.a.reshape(-1, 6, rows.a.shape[-1])
    b = rows.b.reshape(-1, 6)
    scale = np.array([1.0] * 3 + [1.0 / radius_m] * 3) / (total_mass_kg * gravity)
    structural = (a * scale[None, :, None]).reshape(-1, a.shape[-1])
    # a first fit of these rows alone (least squares in their row space) for the noise
    sol = np.linalg.lstsq(rows.a, rows.b, rcond=1e-10)[0]
    resid = (b - (a @ sol))
    sigma = np.sqrt(np.mean(resid ** 2, axis=0))
    sigma = np.maximum(sigma, 1e-9 * np.abs(b).max())
    # filtered frames are correlated: each row counts for 1 / frames_per_sample of one
    sigma = sigma * np.sqrt(rows.frames_per_sample)
    a_w = (a / sigma[None, :, None]).reshape(-1, a.shape[-1])
    b_w = (b / sigma[None, :]).reshape(-1)
    return structural, a_w, b_w, "relative_motion"


__all__ = ["MotionRows", "motion_rows", "motion_extra"]
