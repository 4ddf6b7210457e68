"""What the simulator takes and what it returns.

A :class:`System` is the rig (springs, gravity, locked DOFs), the platform's inertia, the
rigid loads bolted to it (:class:`FixedBody`) and the object's link tree at a posture; a
:class:`Trajectory` is the sampled motion of every body. Conventions (frames, units, the
posture's ``0R_j``) are those of :mod:`rigtool.sim.dynamics`, which re-exports all three.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.inertia import InertialParams
from rigtool.rig import Rig
from rigtool.sim.living import Living
from rigtool.sim.servo import JointServo
from rigtool.tree import Tree

__all__ = ["FixedBody", "System", "Trajectory"]


@dataclass(frozen=True)
class FixedBody:
    """A rigid load bolted to the platform (a reference body, a weight, a fixture).

    Attributes
    ----------
    name : str
    params : InertialParams
        About the body's own frame origin, in its own axes.
    rotation_platform : ndarray (3, 3)
        Body axes -> platform axes.
    position_platform_m : ndarray (3,)
        Body frame origin in the platform frame, m.
    """

    name: str
    params: InertialParams
    rotation_platform: np.ndarray = field(default_factory=lambda: np.eye(3))
    position_platform_m: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass(frozen=True)
class System:
    """Everything the simulator needs: the rig, the platform's inertia and the load.

    Attributes
    ----------
    rig : Rig
        Springs (stiffness, free length, damping), gravity, locked DOFs.
    platform_params : InertialParams
        Platform about its frame origin, platform axes.
    fixed : tuple of FixedBody
        Rigid loads on the platform.
    tree : Tree or None
        The object; ``links[0]`` is the base link; every link needs ``params``.
    base_rotation_platform, base_position_platform_m : ndarray
        Base-link axes -> platform axes, and base-link origin in the platform frame (m).
    posture : dict
        ``0R_j`` per non-base link (link axes -> base-link axes); missing = identity.
    free_joints : bool
        False: the tree is one locked composite body; True: non-base links swing.
    joint_damping : float or dict
        Viscous damping of each spherical joint, N m s/rad (a dict by link name; missing = 0).
    joint_servo : dict
        Link name -> :class:`rigtool.sim.servo.JointServo`: that link's joint is driven (a
        muscle-like servo tracking a reference about the posture) instead of swinging
        freely (free joints only).
    living : Living or None
        The living effects on the object (:mod:`rigtool.sim.living`); None: a rigid object.
    living_seed : int
        Seed of the living effects' random draws (breath-to-breath variability).
    """

    rig: Rig
    platform_params: InertialParams
    fixed: tuple[FixedBody, ...] = ()
    tree: Tree | None = None
    base_rotation_platform: np.ndarray = field(default_factory=lambda: np.eye(3))
    base_position_platform_m: np.ndarray = field(default_factory=lambda: np.zeros(3))
    posture: dict[str, np.ndarray] = field(default_factory=dict)
    free_joints: bool = False
    joint_damping: float | dict[str, float] = 0.0
    joint_servo: dict[str, JointServo] = field(default_factory=dict)
    living: Living | None = None
    living_seed: int = 0


@dataclass(frozen=True)
class Trajectory:
    """Sampled motion of every body (keys: ``"platform"``, fixed-body names, link names).

    All dicts map a body name to an array with time first; rotations are body axes -> lab,
    positions/velocities/accelerations are of the body's frame origin, lab components.
    """

    time_s: np.ndarray
    rotation: dict[str, np.ndarray]
    position_m: dict[str, np.ndarray]
    velocity_lab: dict[str, np.ndarray]
    omega_lab: dict[str, np.ndarray]
    accel_lab: dict[str, np.ndarray] = field(default_factory=dict)
    alpha_lab: dict[str, np.ndarray] = field(default_factory=dict)
    internal: dict[str, dict] = field(default_factory=dict)
    """Living systems: per internal mass (breathing, blood, wobbling tissue) its ``mass``,
    carrier ``link``, mean/rest position ``rest_link`` (link frame) and its lab
    ``position_m``/``velocity_lab`` ``[T, 3]``; ``"pads"``: the support pads' deflection."""
