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
passed through the same zero-phase filter and differentiated as the pose is; gravity's
share of both bodies' equations comes from the raw pose and encoders through that filter,
as the springs' wrench does. Encoders on a clock of their own are put on the capture's
first (rigtool.robot.clock_offset).

Stacked with the locked postures' rows (rigtool.robot.base_parameters, ``extra``): the
frame-wise equations' noise is coloured (twice-differentiated marker positions, a
zero-phase filter), so they enter as independent frequency-domain rows weighted by a first
fit's residual spectrum (rigtool.identify.common.spectral_rows); unit-free structural rows
(forces over ``M |g|``, moments over ``M |g| r``) decide the rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.config import FilterSettings
from rigtool.errors import ConfigError
from rigtool.identify.common.platform_motion import capture_motion
from rigtool.identify.common.spectral_rows import spectral_rows, uniform_frames
from rigtool.inertia import InertialParams, regressor_body, wrench_transform
from rigtool.kinematics import derivative
from rigtool.mocap import MarkerData
from rigtool.identify.posture.equation_error import spring_wrench_body
from rigtool.rig import Rig
from rigtool.robot.clock_offset import estimate_clock_offset, parabola_extremum
from rigtool.robot.joint_angles import JointAngles
from rigtool.robot.motion_regressor import base_wrench_regressor, floating_model
from rigtool.robot.urdf_model import RobotModel


@dataclass
class MotionRows:
    """The motion capture's equations ``a @ pi = b`` per frame (``a [T, 6, 10 n]``,
    ``b [T, 6]``; platform axes about its origin, N and N m) over an evenly sampled span of
    the capture's frames (``frames``); frames without a valid measurement are zero rows
    (``used`` false)."""

    a: np.ndarray
    b: np.ndarray
    frames: np.ndarray
    time_s: np.ndarray
    used: np.ndarray
    dt_s: float
    passband_hz: float
    clock: "EncoderClock | None" = None


@dataclass(frozen=True)
class EncoderClock:
    """The encoders' clock against the capture's (rigtool.robot.clock_offset): the offset
    found, and whether it was taken off (``ClockOffset.significant``)."""

    offset_s: float
    applied: bool
    explained: float
    explained_at_zero: float

    def note(self) -> str | None:
        """What the report says, when the offset was taken off."""
        if not self.applied:
            return None
        return (f"the encoders' clock runs {abs(self.offset_s) * 1e3:.0f} ms "
                f"{'ahead of' if self.offset_s > 0 else 'behind'} the capture's during the "
                "joints' motion (estimated from the motion: the joints explain "
                f"{self.explained:.2f} of the platform's wrench there, {self.explained_at_zero:.2f} "
                "without the offset); the offset was taken off")


def _clock_offset(cap, side: PlatformSide, robot: RobotModel, angles: JointAngles,
                  r_pb: np.ndarray, t_pb: np.ndarray) -> EncoderClock:
    """The encoders' clock offset from the motion (rigtool.robot.clock_offset): the
    platform's measured wrench from the robot (springs minus its own inertia and weight)
    against the URDF prior's prediction from the encoders."""
    from scipy.ndimage import uniform_filter1d

    from rigtool.inertia import transform_params

    ok = cap.valid
    rt = np.swapaxes(cap.rotation[ok], -1, -2)
    acc_b = np.einsum("tij,tj->ti", rt, cap.accel_lab[ok])
    # the robot's own reaction to the platform's vibration (the locked robot at its mean
    # posture, the prior) is not the joints': taken off with the platform's
    locked = transform_params(robot.composite(robot.prior_vector(),
                                              angles.values.mean(axis=0)).pi, r_pb, t_pb)
    wrench = np.full((cap.time_s.size, 6), np.nan)
    wrench[ok] = (side.b[ok]
                  - regressor_body(acc_b, cap.omega_body[ok], cap.omega_dot_body[ok])
                  @ locked)
    te = angles.time_s
    rate = 1.0 / float(np.median(np.diff(te)))
    # rates and accelerations for the search only: differences smoothed over ~40 ms
    width = max(3, int(round(0.04 * rate)) | 1)
    q = uniform_filter1d(angles.values, width, axis=0, mode="nearest")
    qd = np.gradient(q, te, axis=0)
    qdd = uniform_filter1d(np.gradient(qd, te, axis=0), width, axis=0, mode="nearest")
    still = np.zeros((te.size, 6))
    g_base = np.tile(r_pb.T @ np.nanmean(side.gravity_raw[ok], axis=0), (te.size, 1))
    y = base_wrench_regressor(robot, floating_model(robot), q, qd, qdd, still, still, g_base)
    predicted = np.einsum("ij,tj->ti", wrench_transform(r_pb, t_pb),
                          y @ robot.prior_vector())
    found = estimate_clock_offset(cap.time_s, wrench, ok, te, predicted)
    dt = float(np.median(np.diff(cap.time_s)))
    return EncoderClock(found.offset_s, found.significant(dt), found.explained,
                        found.explained_at_zero)


#: The profiled refinement of an encoders' clock offset: trials about the first estimate,
#: s (the first estimate leaves a few ms: it ignores the robot's coupling with the
#: platform's motion beyond the locked robot's)
REFINE_TRIALS_S = np.arange(-4, 5) * 0.75e-3


def _refine_offset(first: EncoderClock, cap, side: PlatformSide, robot: RobotModel,
                   angles: JointAngles, r_pb: np.ndarray, t_pb: np.ndarray,
                   name: str) -> EncoderClock:
    """The offset that lets the full equations fit best, the robot's parameters profiled
    out (a least-squares fit per trial, each wrench component scaled by its RMS): no
    prior enters, and no coupling is left out. Trials :data:`REFINE_TRIALS_S` about the
    first estimate, a parabola through the best three."""
    trials = first.offset_s + REFINE_TRIALS_S
    costs = []
    for d in trials:
        a, b, _, used, _ = _rows(cap, side, robot, angles, float(d), r_pb, t_pb, name)
        a, b = a[used], b[used]
        scale = np.sqrt(np.mean(b * b, axis=0))
        scale[scale == 0] = 1.0
        aw = (a / scale[None, :, None]).reshape(-1, a.shape[-1])
        bw = (b / scale[None, :]).reshape(-1)
        sol = np.linalg.lstsq(aw, bw, rcond=1e-10)[0]
        costs.append(float(np.sum((bw - aw @ sol) ** 2)))
    offset = parabola_extremum(trials, np.array(costs), trials[1] - trials[0], maximum=False)
    return EncoderClock(offset, True, first.explained, first.explained_at_zero)


def motion_rows(robot: RobotModel, rig: Rig, platform: InertialParams, data: MarkerData,
                angles: JointAngles, settings: FilterSettings, r_pb: np.ndarray,
                t_pb: np.ndarray, *, window: tuple[float, float] | None = None,
                name: str = "relative_motion") -> MotionRows:
    """The equations of a motion capture (see module docstring).

    Parameters
    ----------
    robot, rig, platform
        The robot, the calibrated rig and the platform's parameters.
    data : MarkerData
        The capture (platform markers at least).
    angles : JointAngles
        The encoders, on the capture's clock (a constant offset is found and taken off:
        rigtool.robot.clock_offset, then the offset with which the equations fit best).
    settings : FilterSettings
    r_pb, t_pb : ndarray
        The base link's frame in the platform frame (from the locked postures).
    window : (float, float), optional
    """
    cap = capture_motion(data, rig.platform.markers_platform, settings, name=name,
                         window=window)
    side = _platform_side(cap, rig, platform)
    offset = _clock_offset(cap, side, robot, angles, r_pb, t_pb)
    if offset.applied:
        offset = _refine_offset(offset, cap, side, robot, angles, r_pb, t_pb, name)
    a, b, frames, used, dt = _rows(cap, side, robot, angles,
                                   offset.offset_s if offset.applied else 0.0, r_pb, t_pb,
                                   name)
    return MotionRows(a, b, frames, cap.time_s[frames], used, dt, settings.passband_hz, offset)


@dataclass(frozen=True)
class PlatformSide:
    """What the motion's equations take from the platform alone, every frame of the
    capture: ``b`` (``[T, 6]``: the springs' wrench less the platform's own inertia and
    weight, platform axes about its origin, N and N m; NaN where the pose is not measured)
    and ``gravity_raw`` (``[T, 3]``: gravity in the platform's axes from the raw pose)."""

    b: np.ndarray
    gravity_raw: np.ndarray


def _platform_side(cap, rig: Rig, platform: InertialParams) -> PlatformSide:
    """The platform's side of its equation (module docstring): the springs as the posture
    stage sees them (the elastic part from the raw pose, then filtered like the
    accelerations: a filtered pose is not the pose's filtered wrench); gravity's share from
    the raw pose, then filtered as the springs' wrench is (the filter's gain at 0 Hz is not
    exactly 1: a few 1e-4 of the weight, a constant force the weight's unfiltered term
    would not see)."""
    t = cap.time_s
    raw = np.isfinite(cap.rotation_raw).all(axis=(1, 2))
    g_raw_b = np.full((t.size, 3), np.nan)
    g_raw_b[raw] = np.einsum("tji,j->ti", cap.rotation_raw[raw],
                             np.asarray(rig.gravity_lab, float))
    y_pg = np.full((t.size, 6, 10), np.nan)
    still = np.zeros((int(raw.sum()), 3))
    y_pg[raw] = regressor_body(-g_raw_b[raw], still, still)
    y_pg = cap.filt(y_pg.reshape(t.size, -1)).reshape(y_pg.shape)
    rt = np.swapaxes(cap.rotation, -1, -2)
    acc_b = np.einsum("tij,tj->ti", rt, cap.accel_lab)
    y_p = regressor_body(acc_b, cap.omega_body, cap.omega_dot_body) + y_pg
    return PlatformSide(spring_wrench_body(rig, cap) - y_p @ platform.pi, g_raw_b)


def _rows(cap, side: PlatformSide, robot: RobotModel, angles: JointAngles,
          offset_s: float, r_pb: np.ndarray, t_pb: np.ndarray, name: str):
    """``(a [T, 6, 10 n], b [T, 6], frames, used, dt)`` of the motion's equations with the
    encoders' times less ``offset_s`` (module docstring)."""
    t = cap.time_s
    k = len(robot.moving_joints)
    enc_time = angles.time_s - offset_s
    q_raw = np.stack([np.interp(t, enc_time, angles.values[:, i]) for i in range(k)],
                     axis=1)
    dt = float(np.median(np.diff(t)))
    # filtered, then differentiated by the 7-point stencils, as the platform's pose is
    q = cap.filt(q_raw)
    qd, qdd = derivative(q, 1.0 / dt, 1), derivative(q, 1.0 / dt, 2)
    inside = (t >= enc_time[0]) & (t <= enc_time[-1])
    ok = cap.valid & inside & np.isfinite(q).all(1) & np.isfinite(qdd).all(1)
    frames = uniform_frames(ok)
    used = ok[frames]
    if not used.any():
        raise ConfigError(
            f"{name}: the encoders' times ({angles.time_s[0]:.3f}-{angles.time_s[-1]:.3f} s) "
            f"cover no frame of the capture with the platform measured ({t[0]:.3f}-"
            f"{t[-1]:.3f} s); expected the joint angles on the capture's clock",
            path=angles.path, field="time_s")
    model = floating_model(robot)
    r_bp = r_pb.T
    # the robot's gravity share, from the raw pose and the raw encoders, then filtered as
    # the platform's is (PlatformSide)
    raw = np.isfinite(side.gravity_raw).all(axis=1)
    still_q, still_b = np.zeros((int(raw.sum()), k)), np.zeros((int(raw.sum()), 6))
    y_rg = np.full((t.size, 6, 10 * robot.n_bodies), np.nan)
    y_rg[raw] = base_wrench_regressor(robot, model, q_raw[raw], still_q, still_q, still_b,
                                      still_b, side.gravity_raw[raw] @ r_bp.T)
    y_rg = cap.filt(y_rg.reshape(t.size, -1)).reshape(y_rg.shape)[frames]
    rt = np.swapaxes(cap.rotation[frames], -1, -2)
    omega_b = cap.omega_body[frames]                       # platform axes
    domega_b = cap.omega_dot_body[frames]
    acc_b = np.einsum("tij,tj->ti", rt, cap.accel_lab[frames])
    vel_b = np.einsum("tij,tj->ti", rt, cap.velocity_lab[frames])
    b = side.b[frames].copy()
    # the base link's motion in its own axes (pinocchio's local convention)
    v_o = vel_b + np.cross(omega_b, t_pb)                   # base origin, platform axes
    a_o = acc_b + np.cross(domega_b, t_pb) + np.cross(omega_b, np.cross(omega_b, t_pb))
    w_base = omega_b @ r_bp.T
    v_base = np.concatenate([v_o @ r_bp.T, w_base], axis=1)
    a_lin = a_o @ r_bp.T - np.cross(w_base, v_o @ r_bp.T)
    a_base = np.concatenate([a_lin, domega_b @ r_bp.T], axis=1)
    # the regressor is linear in the base's acceleration: motion's share + gravity's share
    y_r = base_wrench_regressor(robot, model, q[frames], qd[frames], qdd[frames], v_base,
                                a_base, np.zeros((frames.size, 3))) + y_rg
    x = wrench_transform(r_pb, t_pb)
    a = np.einsum("ij,tjk->tik", x, y_r)
    a[~used] = 0.0                                 # lost frames: 0 = 0, evenly sampled
    b[~used] = 0.0
    return a, b, frames, used, dt


def motion_extra(rows: MotionRows, total_mass_kg: float, radius_m: float,
                 gravity: float = 9.80665) -> tuple:
    """``(structural, a_whitened, b_whitened, label)`` for
    :func:`rigtool.robot.base_parameters.fit_base_parameters`: unit-free rows for the rank,
    and the frequency-domain rows weighted by the residual spectrum of a first
    least-squares fit of these rows alone (rigtool.identify.common.spectral_rows) for the
    estimate and its covariance."""
    a = rows.a[rows.used]
    scale = np.array([1.0] * 3 + [1.0 / radius_m] * 3) / (total_mass_kg * gravity)
    structural = (a * scale[None, :, None]).reshape(-1, a.shape[-1])
    spec = spectral_rows(rows.a, rows.b, rows.dt_s, rows.passband_hz)
    return structural, spec.a, spec.b, "relative_motion"


__all__ = ["MotionRows", "motion_rows", "motion_extra"]
