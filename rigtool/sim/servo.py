"""Joints driven by muscles: a servo that tracks a smooth reference, for the simulator.

A person lying on the platform lifts and turns a limb: the joint torque is whatever their
muscles make it, not the passive reaction of a free swing. The simulator models that as a
proportional-derivative servo on the joint's rotation relative to its parent link, tracking
a multi-sine reference (a sum of sinusoids per rotation-vector component, parent axes)::

    R_ref(t)   = exp([rho(t) x]) R_rest                       (parent-link axes)
    e          = log(R_rel R_ref^T)                           (rotation vector, parent axes)
    tau_parent = -K_p e - K_d (omega_rel - d rho / dt)        (torque on the child)

and the opposite torque on the parent. The torque is internal to the object: the platform's
equations do not contain it, which is why the relative-motion stage can take the limbs'
measured motion as a prescribed input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation


@dataclass(frozen=True)
class JointServo:
    """A PD servo on one spherical joint tracking a multi-sine reference.

    Attributes
    ----------
    amplitude_rad : ndarray [K, 3]
        Amplitude of each sinusoid per rotation-vector component (parent axes), rad.
    frequency_hz : ndarray [K]
        Frequency of each sinusoid, Hz.
    phase_rad : ndarray [K, 3]
        Phase of each sinusoid per component, rad (``rho_c(t) = sum_k a_kc sin(2 pi f_k t +
        phi_kc) - a_kc sin(phi_kc)``, so ``rho(0) = 0``: the motion starts at the rest
        posture).
    stiffness_nm_per_rad : float
        Proportional gain ``K_p``, N m/rad.
    damping_nms_per_rad : float
        Derivative gain ``K_d``, N m s/rad.
    """

    amplitude_rad: np.ndarray
    frequency_hz: np.ndarray
    phase_rad: np.ndarray
    stiffness_nm_per_rad: float
    damping_nms_per_rad: float

    def reference(self, t_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``rho(t) [..., 3]`` and ``d rho/dt [..., 3]`` (rad, rad/s) at times ``t_s``."""
        t = np.asarray(t_s, float)[..., None, None]                  # [..., 1, 1]
        w = 2.0 * np.pi * self.frequency_hz[:, None]                 # [K, 1]
        arg = w * t + self.phase_rad                                 # [..., K, 3]
        rho = (self.amplitude_rad * (np.sin(arg) - np.sin(self.phase_rad))).sum(-2)
        rho_dot = (self.amplitude_rad * w * np.cos(arg)).sum(-2)
        return rho, rho_dot


@dataclass(frozen=True)
class Drive:
    """One driven joint in the simulator's dynamic bodies.

    ``body``/``parent``: dynamic body indices of the child and of the body that carries its
    parent link; ``parent_frame``: the parent link's axes in that body's axes (the base link's
    pose on the platform when the parent is body 0, else the identity); ``rest``: the rest
    rotation of the child relative to the parent link.
    """

    body: int
    parent: int
    parent_frame: np.ndarray
    rest: np.ndarray
    servo: JointServo


def drive_torques(drives: tuple[Drive, ...], t_s, rotation: np.ndarray,
                  omega_lab: np.ndarray) -> np.ndarray:
    """Servo torque on each driven child, lab ``[..., D, 3]`` (its parent gets the opposite).

    Parameters
    ----------
    drives : tuple of Drive
    t_s : float or ndarray [...]
        Time, s.
    rotation : ndarray [..., B, 3, 3]
        Every dynamic body's axes -> lab.
    omega_lab : ndarray [..., B, 3]
        Every dynamic body's angular velocity, lab.
    """
    out = []
    for d in drives:
        r_par = rotation[..., d.parent, :, :] @ d.parent_frame       # parent link -> lab
        r_par_t = np.swapaxes(r_par, -1, -2)
        r_rel = r_par_t @ rotation[..., d.body, :, :]                # child -> parent link
        rho, rho_dot = d.servo.reference(t_s)
        r_ref = Rotation.from_rotvec(rho.reshape(-1, 3)).as_matrix().reshape(
            rho.shape[:-1] + (3, 3)) @ d.rest
        err = Rotation.from_matrix((r_rel @ np.swapaxes(r_ref, -1, -2)).reshape(-1, 3, 3)
                                   ).as_rotvec().reshape(r_rel.shape[:-2] + (3,))
        w_rel = (r_par_t @ (omega_lab[..., d.body, :] - omega_lab[..., d.parent, :])[..., None]
                 )[..., 0]
        tau = -d.servo.stiffness_nm_per_rad * err - d.servo.damping_nms_per_rad * (
            w_rel - rho_dot)
        out.append((r_par @ tau[..., None])[..., 0])
    return np.stack(out, -2)


def drive_generalized_force(drives: tuple[Drive, ...], t_s, rotation: np.ndarray,
                            omega_lab: np.ndarray, n_nu: int) -> np.ndarray:
    """The servos' generalized force ``[..., N]`` on ``nu = [v_0, omega_0 .. omega_{B-1}]``
    (each body's angular velocity, lab: a torque pair maps onto the two bodies' rows)."""
    tau = drive_torques(drives, t_s, rotation, omega_lab)
    q = np.zeros(tau.shape[:-2] + (n_nu,))
    for k, d in enumerate(drives):
        q[..., 3 + 3 * d.body:6 + 3 * d.body] += tau[..., k, :]
        q[..., 3 + 3 * d.parent:6 + 3 * d.parent] -= tau[..., k, :]
    return q


__all__ = ["JointServo", "Drive", "drive_torques", "drive_generalized_force"]
