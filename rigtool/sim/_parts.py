"""The living parts the equations of motion take (private to the simulator).

A rigid system (:class:`rigtool.sim._model.Model`, its *dynamic bodies*) grows by
composition with parts:

- :class:`CarriedMass`: a point mass moving on a prescribed path ``s(t)`` in a carrier's
  frame (breathing, the heartbeat's blood). It adds ``m`` at ``s(t)`` to the carrier's
  inertial parameters and the relative-motion force ``-m (2 w x R s' + R s'')`` at it: an
  internal force, since its reaction moves the mass.
- *Satellites* with states of their own, coupled to the bodies only by forces (their mass
  matrix is block diagonal with the bodies'): :class:`PointSatellite` (a wobbling mass,
  state ``[x, v]``) and :class:`RigidSatellite` (the object floating on pads, state
  ``[x, q, v, w]``, Newton-Euler about its origin).
- :class:`Pad`: a linear spring-damper between a point of a carrier (a dynamic body or a
  rigid satellite) and a point of a satellite, diagonal in the carrier's axes, with a
  constant preload (the weight the tissue carries at rest). The force ``F`` on the
  satellite and ``-F`` on the carrier act at the same point, so the pair is internal (no net
  force or moment); the potential ``1/2 e^T K e - f0^T e`` depends only on the relative
  pose ``e``, so without damping energy is conserved.

Carriers are numbered bodies first (``0 .. B-1``), then satellites (``B ..``).
Conventions: lab frame, SI units, ``x_lab = R x_body + o``; every wrench is
``[force; moment about the carrier's origin]``, lab components.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.sim._model import quat_to_matrix, quat_rate


@dataclass(frozen=True)
class CarriedMass:
    """A point mass on a prescribed path ``path(t) -> (s, s', s'')`` in its carrier's frame."""

    name: str
    carrier: int
    mass: float
    path: object


@dataclass(frozen=True)
class PointSatellite:
    """A point mass with its own state ``[x (3), v (3)]`` (lab)."""

    name: str
    mass: float


@dataclass(frozen=True)
class RigidSatellite:
    """A rigid body with its own state ``[x (3), q (4, scalar last), v (3), w (3)]`` (lab).

    ``mass``, ``first_moment`` and ``inertia_origin`` are about its frame origin, its axes.
    """

    name: str
    mass: float
    first_moment: np.ndarray
    inertia_origin: np.ndarray


@dataclass(frozen=True)
class Pad:
    """A damped spring from ``carrier`` (point ``a``, its frame) to ``satellite`` (point ``c``,
    its frame; zero for a point satellite); stiffness/damping/preload in carrier axes."""

    carrier: int
    a: np.ndarray
    satellite: int
    c: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    preload: np.ndarray


def _point_params(mass: float, s: np.ndarray):
    """First moment and inertia about the origin of a point mass at ``s`` (carrier frame)."""
    return mass * s, mass * ((s @ s) * np.eye(3) - np.outer(s, s))


class LivingTerms:
    """The parts of one system, evaluated inside the integrator's right-hand side."""

    def __init__(self, n_bodies: int, carried: tuple[CarriedMass, ...],
                 satellites: tuple, pads: tuple[Pad, ...], gravity_lab: np.ndarray) -> None:
        self.n_bodies = n_bodies
        self.carried = carried
        self.satellites = satellites
        self.pads = pads
        self.gravity = np.asarray(gravity_lab, float)
        offsets, k = [], 0
        for sat in satellites:
            offsets.append(k)
            k += 6 if isinstance(sat, PointSatellite) else 13
        self.offsets = offsets
        self.n_extra = k

    # -- states -------------------------------------------------------------------------
    def satellite_pose(self, y_extra: np.ndarray, j: int):
        """``R, o, v, w`` of satellite ``j`` (identity and zero spin for a point)."""
        k = self.offsets[j]
        if isinstance(self.satellites[j], PointSatellite):
            return np.eye(3), y_extra[k:k + 3], y_extra[k + 3:k + 6], np.zeros(3)
        q = y_extra[k + 3:k + 7]
        return (quat_to_matrix(q), y_extra[k:k + 3], y_extra[k + 7:k + 10],
                y_extra[k + 10:k + 13])

    def evaluate_paths(self, t: float):
        """``(s, s', s'')`` of every carried mass at time ``t`` (carrier frames)."""
        return [cm.path(t) for cm in self.carried]

    def body_params(self, paths, first_moment: np.ndarray, inertia: np.ndarray,
                    mass: np.ndarray):
        """The dynamic bodies' ``h`` ``[B, 3, 1]``, ``I`` ``[B, 3, 3]`` and mass ``[B]`` with
        the carried masses at their current positions (copies; inputs untouched)."""
        h, i_o, m = first_moment.copy(), inertia.copy(), mass.copy()
        for cm, (s, _, _) in zip(self.carried, paths):
            if cm.carrier < self.n_bodies:
                dh, di = _point_params(cm.mass, s)
                h[cm.carrier, :, 0] += dh
                i_o[cm.carrier] += di
                m[cm.carrier] += cm.mass
        return h, i_o, m

    # -- forces -------------------------------------------------------------------------
    def forces(self, t: float, y_extra: np.ndarray, rot: np.ndarray, origin: np.ndarray,
               vel: np.ndarray, omega: np.ndarray, paths=None):
        """Extra wrench on each dynamic body ``[B, 6]`` (lab, about its origin) and the
        satellites' state derivative ``[n_extra]``.

        ``rot, origin, vel, omega``: the dynamic bodies' poses and velocities (lab).
        """
        if paths is None:
            paths = self.evaluate_paths(t)
        nb = self.n_bodies
        poses = [(rot[b], origin[b], vel[b], omega[b]) for b in range(nb)]
        poses += [self.satellite_pose(y_extra, j) for j in range(len(self.satellites))]
        wrench = np.zeros((len(poses), 6))
        for cm, (s, sd, sdd) in zip(self.carried, paths):
            r_c, _, _, w_c = poses[cm.carrier]
            r = r_c @ s
            f = -cm.mass * (2.0 * np.cross(w_c, r_c @ sd) + r_c @ sdd)
            wrench[cm.carrier, :3] += f
            wrench[cm.carrier, 3:] += np.cross(r, f)
        for pad in self.pads:
            f_sat, x_s = self.pad_force(pad, poses[pad.carrier], poses[pad.satellite])
            r_a, o_a = poses[pad.carrier][:2]
            o_s = poses[pad.satellite][1]
            wrench[pad.carrier, :3] -= f_sat
            wrench[pad.carrier, 3:] -= np.cross(x_s - o_a, f_sat)
            wrench[pad.satellite, :3] += f_sat
            wrench[pad.satellite, 3:] += np.cross(x_s - o_s, f_sat)
        extra_dot = np.empty(self.n_extra)
        for j, sat in enumerate(self.satellites):
            k = self.offsets[j]
            r_s, o_s, v_s, w_s = poses[nb + j]
            w_ext = wrench[nb + j]
            if isinstance(sat, PointSatellite):
                extra_dot[k:k + 3] = v_s
                extra_dot[k + 3:k + 6] = w_ext[:3] / sat.mass + self.gravity
                continue
            mass, h_b, i_b = sat.mass, sat.first_moment.copy(), sat.inertia_origin.copy()
            for cm, (s, _, _) in zip(self.carried, paths):
                if cm.carrier == nb + j:
                    dh, di = _point_params(cm.mass, s)
                    mass, h_b, i_b = mass + cm.mass, h_b + dh, i_b + di
            h = r_s @ h_b
            inertia = r_s @ i_b @ r_s.T
            sh = np.array([[0, -h[2], h[1]], [h[2], 0, -h[0]], [-h[1], h[0], 0]])
            lam = np.block([[mass * np.eye(3), -sh], [sh, inertia]])
            g = self.gravity
            rhs = np.concatenate([mass * g - np.cross(w_s, np.cross(w_s, h)) + w_ext[:3],
                                  np.cross(h, g) - np.cross(w_s, inertia @ w_s) + w_ext[3:]])
            acc = np.linalg.solve(lam, rhs)
            q = y_extra[k + 3:k + 7]
            extra_dot[k:k + 3] = v_s
            extra_dot[k + 3:k + 7] = quat_rate(q, w_s)
            extra_dot[k + 7:k + 13] = acc
        return wrench[:nb], extra_dot

    @staticmethod
    def pad_force(pad: Pad, carrier_pose, satellite_pose):
        """Force on the satellite (lab) and the lab point where the pair acts."""
        r_a, o_a, v_a, w_a = carrier_pose
        r_s, o_s, v_s, w_s = satellite_pose
        lever = r_s @ pad.c
        x_s = o_s + lever
        d = x_s - o_a
        e = r_a.T @ d - pad.a
        e_dot = r_a.T @ (v_s + np.cross(w_s, lever) - v_a - np.cross(w_a, d))
        return r_a @ (pad.preload - pad.stiffness * e - pad.damping * e_dot), x_s

    @staticmethod
    def pad_strain(pad: Pad, carrier_pose, satellite_pose) -> np.ndarray:
        """The pad's deflection ``e`` (carrier axes, m)."""
        r_a, o_a = carrier_pose[:2]
        r_s, o_s = satellite_pose[:2]
        return r_a.T @ (o_s + r_s @ pad.c - o_a) - pad.a


__all__ = ["CarriedMass", "PointSatellite", "RigidSatellite", "Pad", "LivingTerms"]
