"""Filtered rigid-body motion (pose, velocities, accelerations) from a marker-fitted pose.

Conventions
-----------
- Time is the first axis; SI units; pose ``x_lab = R @ x_body + p``.
- ``omega_body`` and ``alpha_body`` are body components (``R^T Rdot = [omega_body]x``);
  ``omega_lab = R omega_body`` and ``alpha_lab = R alpha_body`` (the latter holds because
  ``d/dt (R w) = R w' + omega x (R w)`` and ``omega x omega = 0``).
- ``velocity_lab``/``accel_lab`` are the derivatives of the body origin's lab position.
- Orientation is never filtered as Euler angles. Per segment, ``R(t) = R_ref exp([phi]x)``
  with ``R_ref`` the segment's mean rotation and ``phi`` the rotation vector; ``phi`` is
  filtered like any signal and ``omega_body = J_r(phi) phi_dot`` (right Jacobian of SO(3)).
  For large swings (``|phi|`` beyond 0.8 pi somewhere in a segment, where the rotation vector
  would wrap) the unit quaternion of ``R_ref^T R`` (made sign-continuous) is filtered instead
  and ``omega_body = 2 vec(conj(q) q_dot)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.config import FilterSettings
from rigtool.kinematics.filtering import (ZeroPhaseFilter, derivative, fill_gaps, segments,
                                          short_gaps)
from rigtool.kinematics.pose import BodyTrajectory

#: Largest rotation-vector angle (rad) from the segment mean handled by the phi path.
_PHI_MAX_RAD = 0.8 * np.pi


@dataclass(frozen=True)
class Motion:
    """Zero-phase filtered motion of one body.

    Attributes
    ----------
    time_s : ndarray, shape (T,)
    rotation : ndarray, shape (T, 3, 3)
        Filtered body -> lab rotation (orthonormal).
    position_m : ndarray, shape (T, 3)
        Filtered body-origin position, lab, m.
    velocity_lab, accel_lab : ndarray, shape (T, 3)
        Origin velocity (m/s) and acceleration (m/s^2), lab components.
    omega_lab, omega_body : ndarray, shape (T, 3)
        Angular velocity (rad/s), lab and body components.
    alpha_lab, alpha_body : ndarray, shape (T, 3)
        Angular acceleration (rad/s^2), lab and body components.
    valid : ndarray of bool, shape (T,)
        False where the pose is undefined, inside a long gap, or within the filter's edge
        transient of a segment.
    interpolated : ndarray of bool, shape (T,)
        Frames whose pose was interpolated across a short gap (still ``valid``).
    filter : ZeroPhaseFilter
        The filter used, bound to the segments of this motion: apply it to any other
        ``[T, ...]`` signal (e.g. spring wrenches) to filter it identically.
    """

    time_s: np.ndarray
    rotation: np.ndarray
    position_m: np.ndarray
    velocity_lab: np.ndarray
    accel_lab: np.ndarray
    omega_lab: np.ndarray
    omega_body: np.ndarray
    alpha_lab: np.ndarray
    alpha_body: np.ndarray
    valid: np.ndarray
    interpolated: np.ndarray
    filter: ZeroPhaseFilter

    def accel_body(self, gravity_lab: np.ndarray | None = None) -> np.ndarray:
        """Origin acceleration in body components, ``R^T (a - g)`` (``[T, 3]``, m/s^2).

        With ``gravity_lab`` given this is what an accelerometer at the origin reads.
        """
        a = self.accel_lab if gravity_lab is None else self.accel_lab - np.asarray(gravity_lab)
        return np.einsum("tji,tj->ti", self.rotation, a)

    def velocity_body(self) -> np.ndarray:
        """Origin velocity in body components ``R^T v`` (``[T, 3]``, m/s)."""
        return np.einsum("tji,tj->ti", self.rotation, self.velocity_lab)


def skew_batch(v: np.ndarray) -> np.ndarray:
    """``[T, 3] -> [T, 3, 3]`` cross-product matrices."""
    z = np.zeros(v.shape[0])
    return np.stack([np.stack([z, -v[:, 2], v[:, 1]], -1),
                     np.stack([v[:, 2], z, -v[:, 0]], -1),
                     np.stack([-v[:, 1], v[:, 0], z], -1)], axis=1)


def right_jacobian(phi: np.ndarray) -> np.ndarray:
    """Right Jacobian of SO(3), ``[T, 3] -> [T, 3, 3]``: for ``R = R_ref exp([phi]x)``,
    ``omega_body = J_r(phi) phi_dot``.

    ``J_r = I - (1 - cos t)/t^2 [phi]x + (t - sin t)/t^3 [phi]x^2`` with ``t = |phi|``;
    Taylor series below 1e-4 rad.
    """
    t = np.linalg.norm(phi, axis=1)
    small = t < 1e-4
    ts = np.where(small, 1.0, t)
    a = np.where(small, 0.5 - t ** 2 / 24.0, (1.0 - np.cos(ts)) / ts ** 2)
    b = np.where(small, 1.0 / 6.0 - t ** 2 / 120.0, (ts - np.sin(ts)) / ts ** 3)
    k = skew_batch(phi)
    return np.eye(3) - a[:, None, None] * k + b[:, None, None] * (k @ k)


def _jr_coefficients(phi: np.ndarray):
    t = np.sqrt(np.einsum("ti,ti->t", phi, phi))
    small = t < 1e-4
    ts = np.where(small, 1.0, t)
    a = np.where(small, 0.5 - t ** 2 / 24.0, (1.0 - np.cos(ts)) / ts ** 2)
    b = np.where(small, 1.0 / 6.0 - t ** 2 / 120.0, (ts - np.sin(ts)) / ts ** 3)
    return a, b


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # elementwise: np.cross has a large overhead on [T, 3] arrays
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                     a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)


def right_jacobian_apply(phi: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``J_r(phi) v`` for ``[T, 3]`` arrays without forming the matrices:
    ``v - a phi x v + b phi x (phi x v)`` (coefficients as in :func:`right_jacobian`)."""
    a, b = _jr_coefficients(phi)
    pv = _cross(phi, v)
    return v - a[:, None] * pv + b[:, None] * _cross(phi, pv)


def exp_rotation(phi: np.ndarray) -> np.ndarray:
    """Rotation matrices ``[T, 3, 3]`` of rotation vectors ``[T, 3]`` (Rodrigues:
    ``I + sin(t)/t K + (1 - cos t)/t^2 K^2``, series for small t)."""
    t = np.sqrt(np.einsum("ti,ti->t", phi, phi))
    small = t < 1e-4
    ts = np.where(small, 1.0, t)
    a = np.where(small, 1.0 - t ** 2 / 6.0, np.sin(ts) / ts)
    b = np.where(small, 0.5 - t ** 2 / 24.0, (1.0 - np.cos(ts)) / ts ** 2)
    k = skew_batch(phi)
    # K^2 = phi phi^T - t^2 I
    k2 = phi[:, :, None] * phi[:, None, :] - (t ** 2)[:, None, None] * np.eye(3)
    return np.eye(3) + a[:, None, None] * k + b[:, None, None] * k2


def _left_mul(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``a @ r[t]`` for every t (``a [3, 3]``, ``r [T, 3, 3]``)."""
    return np.matmul(a, r)


def mean_rotation(r: np.ndarray) -> np.ndarray:
    """Chordal L2 mean of rotations ``r [T, 3, 3]``: the arithmetic mean projected onto
    SO(3) (as ``Rotation.mean``, without building a Rotation of T elements)."""
    u, _, vt = np.linalg.svd(r.mean(axis=0))
    d = np.sign(np.linalg.det(u @ vt))
    return u @ np.diag([1.0, 1.0, d if d != 0 else 1.0]) @ vt


def log_rotation(r: np.ndarray) -> np.ndarray:
    """Rotation vectors ``[T, 3]`` of rotation matrices ``[T, 3, 3]``.

    ``phi = theta / sin(theta) * vee(R - R^T) / 2`` with ``theta = atan2(|vee|, (tr R - 1)/2)``:
    accurate (to ~eps / sin(theta)) away from theta = pi; the callers use it only where
    theta <= 0.8 pi and switch to quaternions beyond. Hand-written because scipy's
    ``from_matrix(...).as_rotvec()`` is several times slower on long arrays.
    """
    s = 0.5 * np.stack([r[:, 2, 1] - r[:, 1, 2], r[:, 0, 2] - r[:, 2, 0],
                        r[:, 1, 0] - r[:, 0, 1]], axis=1)
    sn = np.sqrt(np.einsum("ti,ti->t", s, s))
    c = 0.5 * (r[:, 0, 0] + r[:, 1, 1] + r[:, 2, 2] - 1.0)
    theta = np.arctan2(sn, c)
    small = sn < 1e-8
    fac = np.where(small, 1.0 + theta ** 2 / 6.0, theta / np.where(small, 1.0, sn))
    return s * fac[:, None]


def _rotation_path(rot_seg: np.ndarray, ok: np.ndarray, filt: ZeroPhaseFilter,
                   rate_hz: float, max_gap_s: float, a_ref: np.ndarray | None):
    """Filtered rotation, omega_body and alpha_body of one segment (short gaps NaN in
    ``rot_seg`` where ``~ok``)."""
    n = rot_seg.shape[0]
    if a_ref is None:
        a_ref = mean_rotation(rot_seg[ok])
    rel_m = _left_mul(a_ref.T, rot_seg[ok])
    phi_ok = log_rotation(rel_m)
    if np.max(np.linalg.norm(phi_ok, axis=1)) <= _PHI_MAX_RAD:
        phi = np.full((n, 3), np.nan)
        phi[ok] = phi_ok
        phi, _ = fill_gaps(phi, rate_hz=rate_hz, max_gap_s=max_gap_s)
        phi_f = filt.zero_phase(phi)
        phi_dot = derivative(phi_f, rate_hz, 1)
        omega_b = right_jacobian_apply(phi_f, phi_dot)
        r_f = _left_mul(a_ref, exp_rotation(phi_f))
    else:
        q_ok = Rotation.from_matrix(rel_m).as_quat()  # scalar last: (x, y, z, w)
        # Sign continuity: q and -q are the same rotation; flip so neighbours agree.
        flip = np.sign(np.einsum("ti,ti->t", q_ok[1:], q_ok[:-1]))
        flip[flip == 0] = 1.0
        q_ok = q_ok * np.concatenate([[1.0], np.cumprod(flip)])[:, None]
        q = np.full((n, 4), np.nan)
        q[ok] = q_ok
        q, _ = fill_gaps(q, rate_hz=rate_hz, max_gap_s=max_gap_s)
        q = filt.zero_phase(q)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        qd = derivative(q, rate_hz, 1)
        v, w, vd, wd = q[:, :3], q[:, 3:], qd[:, :3], qd[:, 3:]
        omega_b = 2.0 * (w * vd - wd * v - np.cross(v, vd))
        r_f = _left_mul(a_ref, Rotation.from_quat(q).as_matrix())
    alpha_b = derivative(omega_b, rate_hz, 1)
    return r_f, omega_b, alpha_b


def motion_from_pose(traj: BodyTrajectory, settings: FilterSettings, /, *, rate_hz: float,
                     max_gap_s: float = 0.1,
                     reference_rotation: np.ndarray | None = None) -> Motion:
    """Fill short gaps, zero-phase filter and differentiate a marker-fitted pose.

    Parameters
    ----------
    traj : BodyTrajectory
        Unfiltered pose (NaN where undefined).
    settings : FilterSettings
        Filter method, order and band edges.
    rate_hz : float
        Frame rate, Hz.
    max_gap_s : float
        Longest run of undefined poses interpolated (cubic spline); longer runs split the
        record into segments that are filtered and differentiated separately.
    reference_rotation : ndarray, shape (3, 3), optional
        ``R_ref`` of the rotation-vector parametrisation; default each segment's mean.

    Returns
    -------
    Motion
    """
    filt = ZeroPhaseFilter(settings, rate_hz)
    n = traj.n_frames
    ok = np.asarray(traj.valid, dtype=bool).copy()
    fillable = short_gaps(~ok, int(np.floor(max_gap_s * rate_hz + 1e-9)))
    in_seg = ok | fillable
    nan3, nan33 = np.full((n, 3), np.nan), np.full((n, 3, 3), np.nan)
    rot, pos, vel, acc = nan33.copy(), nan3.copy(), nan3.copy(), nan3.copy()
    om_b, al_b = nan3.copy(), nan3.copy()
    filtered = np.zeros(n, dtype=bool)
    r_ref = None if reference_rotation is None else np.asarray(reference_rotation, float)
    for a, b in segments(in_seg):
        if b - a < filt.min_segment_frames:
            continue
        seg_ok = ok[a:b]
        p, _ = fill_gaps(traj.position_m[a:b], rate_hz=rate_hz, max_gap_s=max_gap_s)
        p_f = filt.zero_phase(p)
        pos[a:b] = p_f
        vel[a:b] = derivative(p_f, rate_hz, 1)
        acc[a:b] = derivative(p_f, rate_hz, 2)
        rot[a:b], om_b[a:b], al_b[a:b] = _rotation_path(
            traj.rotation[a:b], seg_ok, filt, rate_hz, max_gap_s, r_ref)
        filtered[a:b] = True
    bound = filt.bound(filtered)
    valid = bound.steady() & np.all(np.isfinite(rot.reshape(n, 9)), axis=1)
    rot_c = np.where(np.isfinite(rot), rot, 0.0)
    return Motion(
        time_s=np.asarray(traj.time_s, dtype=float), rotation=rot, position_m=pos,
        velocity_lab=vel, accel_lab=acc,
        omega_lab=np.einsum("tij,tj->ti", rot_c, om_b) + 0.0 * om_b, omega_body=om_b,
        alpha_lab=np.einsum("tij,tj->ti", rot_c, al_b) + 0.0 * al_b, alpha_body=al_b,
        valid=valid, interpolated=fillable & filtered, filter=bound)


__all__ = ["Motion", "motion_from_pose", "right_jacobian", "right_jacobian_apply",
           "exp_rotation", "log_rotation", "mean_rotation", "skew_batch"]
