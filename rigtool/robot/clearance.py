"""How far a robot in a configuration stays above the deck it is bolted to.

The deck is the plane ``z = 0`` of the base link's frame (an arm's URDF puts its base frame
on the mounting face, z up: the Panda's ``panda_link0``, a UR's ``base_link``). A
configuration is clear of the deck when every point that stands for the arm is at least a
margin above it: each link frame's origin, each body's centre of mass (the URDF's), and the
midpoint of each body's frame with its parent's (the links between joints). The base body
and the joints that sit on it are the mount and are left out.

The points stand for the links' volumes only as far as their margin does: a posture
advised with a 5 cm margin keeps the link frames 5 cm up, and a link's shell around them
is the user's to judge (URDF collision meshes are optional and often absent).
"""

from __future__ import annotations

import numpy as np

from rigtool.robot.urdf_model import RobotModel

#: Lowest height above the deck of any point standing for a moving link, m
MIN_DECK_CLEARANCE_M = 0.05


def deck_heights_m(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    """Heights above the deck (m) of the points standing for the moving links (module
    docstring) in configuration ``q`` (moving joints in order)."""
    rot, pos = robot.body_poses(q)
    points = []
    for link, (body, _, p_bl) in robot.link_poses.items():
        if body > 0:
            points.append(rot[body] @ p_bl + pos[body])
    for j, b in enumerate(robot.bodies[1:], start=1):
        if b.prior.mass > 0:
            points.append(rot[j] @ b.prior.com + pos[j])
        if b.parent > 0:
            points.append(0.5 * (pos[j] + pos[b.parent]))
    # a body's frame on the base is where its joint sits on the mount: not a link's point
    mount = [pos[j] for j, b in enumerate(robot.bodies[1:], start=1) if b.parent == 0]
    kept = [p for p in points if not any(np.allclose(p, m, atol=1e-9) for m in mount)]
    return np.array([p[2] for p in kept]) if kept else np.array([np.inf])

def clear_of_deck(robot: RobotModel, q: np.ndarray,
                  min_height_m: float = MIN_DECK_CLEARANCE_M) -> bool:
    """Whether configuration ``q`` keeps every moving link ``min_height_m`` above the deck."""
    return bool(deck_heights_m(robot, q).min() >= min_height_m)


__all__ = ["MIN_DECK_CLEARANCE_M", "deck_heights_m", "clear_of_deck"]
