"""Small realistic rigs and objects for tests, benchmarks and demo scenarios.

The demo rig: a 1.2 m x 0.6 m, 25 kg platform (frame origin at the centre of its top face,
z up) hanging on four springs of about 3 kN/m from anchors about 1.2 m above; with a load of
40-70 kg its six modes lie between about 0.4 and 3 Hz. Slight asymmetries (COM offset,
splayed anchors, unequal stiffnesses) keep the modes distinct and coupled, as on a real rig.
"""

from __future__ import annotations

import numpy as np

from rigtool.inertia import InertialParams
from rigtool.rig import Platform, Rig, Spring
from rigtool.tree import Link, Tree


def box_inertia(mass_kg: float, size_m: tuple[float, float, float]) -> np.ndarray:
    """Inertia about the COM of a uniform box ``(a, b, c)`` along x, y, z, kg m^2."""
    a, b, c = size_m
    return mass_kg / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def demo_rig(*, spring_damping_n_s_m: float = 0.0,
             locked_dofs: tuple[str, ...] = ()) -> tuple[Rig, InertialParams]:
    """The demo rig and its platform's inertial parameters (about the platform origin).

    Parameters
    ----------
    spring_damping_n_s_m : float
        Damping of every spring along its axis, N s/m.
    locked_dofs : tuple of str
        Locked platform DOFs (subset of x, y, z, rx, ry, rz).
    """
    platform_params = InertialParams.from_com(25.0, np.array([0.01, -0.005, -0.02]),
                                              box_inertia(25.0, (1.2, 0.6, 0.04)))
    markers = {"P1": np.array([0.55, 0.25, 0.02]), "P2": np.array([-0.55, 0.25, 0.02]),
               "P3": np.array([-0.55, -0.25, 0.02]), "P4": np.array([0.55, -0.22, 0.02])}
    corners = [(1, 1), (-1, 1), (-1, -1), (1, -1)]
    stiffness = [3000.0, 3200.0, 2900.0, 3100.0]
    springs = tuple(
        Spring(name=f"S{i + 1}",
               anchor_lab=np.array([0.66 * sx + 0.01 * i, 0.36 * sy, 1.25 - 0.01 * i]),
               attachment_platform=np.array([0.55 * sx, 0.25 * sy, 0.03]),
               stiffness=stiffness[i], free_length=0.95, damping=spring_damping_n_s_m)
        for i, (sx, sy) in enumerate(corners))
    rig = Rig(name="demo-rig", platform=Platform(markers, platform_params), springs=springs,
              locked_dofs=tuple(locked_dofs))
    return rig, platform_params


def demo_tree() -> Tree:
    """A 4-link object: a 30 kg frame (base) with a two-link chain and a single link hanging
    on spherical joints. Link frames at the joint centres, links hanging along -z."""
    base = Link("frame", "platform", None,
                InertialParams.from_com(30.0, np.array([0.0, 0.0, 0.25]),
                                        box_inertia(30.0, (0.8, 0.4, 0.5))))
    upper = Link("upper", "frame", np.array([0.30, 0.05, 0.60]),
                 InertialParams.from_com(4.0, np.array([0.01, 0.0, -0.15]),
                                         box_inertia(4.0, (0.08, 0.10, 0.30))))
    lower = Link("lower", "upper", np.array([0.0, 0.0, -0.30]),
                 InertialParams.from_com(3.0, np.array([0.0, 0.01, -0.12]),
                                         box_inertia(3.0, (0.06, 0.07, 0.25))))
    side = Link("side", "frame", np.array([-0.30, -0.05, 0.60]),
                InertialParams.from_com(5.0, np.array([0.0, 0.0, -0.20]),
                                        box_inertia(5.0, (0.10, 0.12, 0.40))))
    return Tree((base, upper, lower, side))
