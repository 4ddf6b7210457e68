"""The suspended platform: axial springs, gravity, locked DOFs.

Conventions
-----------
- Lab frame = motion-capture frame; platform pose ``x_lab = R @ x_platform + p``.
- A spring joins a fixed ``anchor_lab`` to ``attachment_platform`` (platform frame). With
  ``d = a - A`` (attachment minus anchor, lab), ``L = |d|``, ``u = d / L``, its force on the
  platform, applied at the attachment point, is::

      f = -(k (L - L0) + c dL/dt) u = -k d + (k L0) u - c (u . v_a) u

  which is linear in ``(k, k L0, c)``: :func:`spring_wrench_regressor` gives those columns.
- Wrenches are in lab components about the platform-frame origin ``p`` (``[f; n]``, N, N m).

One spring model serves the simulator, the calibration and every identification stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.inertia import InertialParams

#: Names of the six platform DOFs that a guide may lock, in wrench-row order.
DOF_NAMES: tuple[str, ...] = ("x", "y", "z", "rx", "ry", "rz")


@dataclass(frozen=True)
class Spring:
    """One axial spring.

    Attributes
    ----------
    name : str
    anchor_lab : ndarray (3,)
        Fixed end, lab frame, m.
    attachment_platform : ndarray (3,)
        Moving end, platform frame, m.
    stiffness : float
        N/m (NaN when not yet calibrated).
    free_length : float
        m (NaN when not yet calibrated).
    damping : float
        N s/m along the spring.
    """

    name: str
    anchor_lab: np.ndarray
    attachment_platform: np.ndarray
    stiffness: float = float("nan")
    free_length: float = float("nan")
    damping: float = 0.0


@dataclass(frozen=True)
class Platform:
    """The rigid platform: its markers and (once calibrated) its inertial parameters.

    ``params`` is about the platform-frame origin (standard parameters, see inertia.py).
    """

    markers_platform: dict[str, np.ndarray]
    params: InertialParams | None = None


@dataclass(frozen=True)
class Rig:
    """Platform, springs, gravity (lab, m/s^2) and locked DOFs (subset of DOF_NAMES)."""

    name: str
    platform: Platform
    springs: tuple[Spring, ...]
    gravity_lab: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.80665]))
    locked_dofs: tuple[str, ...] = ()

    @property
    def stiffness(self) -> np.ndarray:
        """Stiffness of every spring, N/m."""
        return np.array([s.stiffness for s in self.springs])

    @property
    def free_length(self) -> np.ndarray:
        """Free length of every spring, m."""
        return np.array([s.free_length for s in self.springs])

    @property
    def damping(self) -> np.ndarray:
        """Damping of every spring, N s/m."""
        return np.array([s.damping for s in self.springs])

    def free_dof_rows(self) -> np.ndarray:
        """Indices (0..5) of the wrench rows of DOFs that are not locked."""
        return np.array([i for i, n in enumerate(DOF_NAMES) if n not in self.locked_dofs], int)


def _spring_geometry(rig: Rig, rotation: np.ndarray, position_m: np.ndarray,
                     velocity_m_s: np.ndarray | None, omega_lab: np.ndarray | None):
    """Per frame and spring: lever r (lab, from p), d = a - A, L, u, dL/dt."""
    att = np.stack([s.attachment_platform for s in rig.springs])     # [S, 3]
    anc = np.stack([s.anchor_lab for s in rig.springs])               # [S, 3]
    r = np.einsum("...ij,sj->...si", rotation, att)                   # [..., S, 3]
    d = position_m[..., None, :] + r - anc                            # [..., S, 3]
    length = np.linalg.norm(d, axis=-1)                               # [..., S]
    u = d / length[..., None]
    if velocity_m_s is None or omega_lab is None:
        rate = np.zeros_like(length)
    else:
        v_att = velocity_m_s[..., None, :] + np.cross(omega_lab[..., None, :], r)
        rate = np.einsum("...si,...si->...s", u, v_att)
    return r, d, length, u, rate


def spring_wrench_regressor(rig: Rig, rotation: np.ndarray, position_m: np.ndarray,
                            velocity_m_s: np.ndarray | None = None,
                            omega_lab: np.ndarray | None = None) -> np.ndarray:
    """Columns ``W [..., 6, 3S]`` with spring wrench ``= W @ theta``.

    ``theta = [k_1..k_S, (k L0)_1..(k L0)_S, c_1..c_S]``. Wrench in lab components about
    the platform origin. Pose arrays: ``rotation [..., 3, 3]``, ``position_m [..., 3]``;
    velocities (lab) may be omitted for the static part (the damping columns are then 0).
    """
    r, d, _, u, rate = _spring_geometry(rig, rotation, position_m, velocity_m_s, omega_lab)
    n_spr = len(rig.springs)
    forces = np.concatenate([-d, u, -rate[..., None] * u], axis=-2)  # [..., 3S, 3]
    levers = np.concatenate([r, r, r], axis=-2)
    moments = np.cross(levers, forces)
    w = np.concatenate([forces, moments], axis=-1)                   # [..., 3S, 6]
    assert w.shape[-2] == 3 * n_spr
    return np.swapaxes(w, -1, -2)


def spring_wrench(rig: Rig, rotation: np.ndarray, position_m: np.ndarray,
                  velocity_m_s: np.ndarray | None = None,
                  omega_lab: np.ndarray | None = None) -> np.ndarray:
    """Total spring wrench ``[..., 6]`` on the platform (lab components, about ``p``)."""
    k = rig.stiffness
    theta = np.concatenate([k, k * rig.free_length, rig.damping])
    return spring_wrench_regressor(rig, rotation, position_m, velocity_m_s, omega_lab) @ theta


def spring_lengths(rig: Rig, rotation: np.ndarray, position_m: np.ndarray) -> np.ndarray:
    """Current length of every spring ``[..., S]``, m."""
    return _spring_geometry(rig, rotation, position_m, None, None)[2]


# --------------------------------------------------------------------------- linearisation
#
# Small displacement of the platform from a pose: q = [dp (lab, m), dtheta (rotation vector,
# lab, rad)], so a platform point moves by da = dp + dtheta x r = dp - [r x] dtheta. The
# wrench (spring + gravity, about the moving platform origin, lab components) changes by
# dw = -K q. Derived by hand (no library linearises a spring suspension):
#   spring i, tension T = k (L - L0), f = -T u:  df = -Ks da,  Ks = k u u^T + (T/L)(1 - u u^T)
#   dn = r x df + dr x f = -[r x] Ks G q + [f x][r x] dtheta,  G = [1, -[r x]]
#   gravity F = M g at lever s = R c:  dn_g = [F x][s x] dtheta
# K splits into an elastic part (k u u^T), a geometric part (preload T/L and the lever-arm
# terms [f x][r x]) and a gravity part; at an equilibrium their sum is symmetric.

def _skew3(v: np.ndarray) -> np.ndarray:
    from rigtool.inertia import skew
    return skew(v)


@dataclass(frozen=True)
class Stiffness:
    """6x6 stiffness of the suspension at a pose (lab components, about the platform origin).

    ``total = elastic + geometric + gravity``; rows/cols ordered x, y, z, rx, ry, rz.
    """

    elastic: np.ndarray
    geometric: np.ndarray
    gravity: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """Sum of the three parts, N/m, N, N m/rad."""
        return self.elastic + self.geometric + self.gravity


def linearised_stiffness(rig: Rig, rotation: np.ndarray, position_m: np.ndarray,
                         load: InertialParams | None = None) -> Stiffness:
    """Stiffness matrix of springs and gravity at a platform pose.

    Parameters
    ----------
    rig : Rig
        Calibrated springs (stiffness, free length) and gravity.
    rotation, position_m : ndarray
        Platform pose (3x3, and 3 in m).
    load : InertialParams, optional
        Everything that hangs on the springs (platform + load) in the platform frame,
        for the gravity part; omit for springs only.
    """
    r, d, length, u, _ = _spring_geometry(rig, rotation, position_m, None, None)
    elastic = np.zeros((6, 6))
    geometric = np.zeros((6, 6))
    for i, spring in enumerate(rig.springs):
        ui, li, ri = u[i], length[i], r[i]
        tension = spring.stiffness * (li - spring.free_length)
        k_el = spring.stiffness * np.outer(ui, ui)
        k_geo = tension / li * (np.eye(3) - np.outer(ui, ui))
        sr = _skew3(ri)
        f = -tension * ui
        for part, ks in ((elastic, k_el), (geometric, k_geo)):
            g = np.hstack([np.eye(3), -sr])               # da = G q
            part[:3] += ks @ g
            part[3:] += sr @ ks @ g
        geometric[3:, 3:] -= _skew3(f) @ sr
    gravity = np.zeros((6, 6))
    if load is not None:
        force = load.mass * np.asarray(rig.gravity_lab, float)
        s = rotation @ load.com
        gravity[3:, 3:] = -_skew3(force) @ _skew3(s)
    return Stiffness(elastic, geometric, gravity)


def mass_matrix_lab(params: InertialParams, rotation: np.ndarray) -> np.ndarray:
    """6x6 spatial inertia about the platform origin, lab components (for q = [dp, dtheta])."""
    m = params.mass
    s = rotation @ params.com
    inertia = rotation @ params.inertia_origin @ rotation.T
    ss = _skew3(s)
    out = np.zeros((6, 6))
    out[:3, :3] = m * np.eye(3)
    out[:3, 3:] = -m * ss
    out[3:, :3] = m * ss
    out[3:, 3:] = inertia
    return out


def gravity_wrench(rig: Rig, rotation: np.ndarray, params: InertialParams) -> np.ndarray:
    """Gravity wrench on ``params`` (platform frame) about the platform origin, lab components."""
    force = params.mass * np.asarray(rig.gravity_lab, float)
    return np.concatenate([force, np.cross(rotation @ params.com, force)])


def free_stiffness_mass(rig: Rig, rotation: np.ndarray, position_m: np.ndarray,
                        params: InertialParams) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The small-vibration ``K`` (symmetrised) and ``M`` about a pose over the free DOFs,
    and those DOFs' rows (locked DOFs removed)."""
    free = rig.free_dof_rows()
    k = linearised_stiffness(rig, rotation, position_m, params).total
    k = 0.5 * (k + k.T)[np.ix_(free, free)]
    m = mass_matrix_lab(params, rotation)[np.ix_(free, free)]
    return k, m, free


def modes(rig: Rig, rotation: np.ndarray, position_m: np.ndarray,
          params: InertialParams) -> tuple[np.ndarray, np.ndarray]:
    """Undamped small-vibration modes about a pose: frequencies (Hz, ascending) and shapes.

    Solves ``K phi = w^2 M phi`` (scipy.linalg.eigh on the symmetrised stiffness,
    :func:`free_stiffness_mass`); locked DOFs are removed. Shapes are columns in the free
    DOFs' order.
    """
    from scipy.linalg import eigh

    k, m, _ = free_stiffness_mass(rig, rotation, position_m, params)
    w2, shapes = eigh(k, m)
    return np.sqrt(np.clip(w2, 0.0, None)) / (2 * np.pi), shapes
