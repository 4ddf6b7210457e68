"""The measured object as a URDF robot (ROS ``urdf`` XML; read by urdfdom, pinocchio, MuJoCo).

Format (ROS URDF XML spec): ``<link>`` s with ``<inertial><origin xyz="COM" rpy="0 0 0"/>
<mass/><inertia ixx ixy ixz iyy iyz izz/></inertial>`` (inertia about the COM in link axes)
and ``<joint>`` s whose ``<origin xyz rpy>`` places the child frame in the parent frame
(``rpy``: fixed-axis roll, pitch, yaw, ``R = Rz(yaw) Ry(pitch) Rx(roll)``).

URDF has no spherical joint. One becomes the usual chain of three ``continuous`` joints
(URDF's revolute joint without limits: a ball joint has none, and urdfdom refuses a
``revolute`` joint without ``<limit effort velocity>``) about x, then y, then z of the joint
frame, through two intermediate links ``<link>__ball_x`` and ``<link>__ball_y`` at the joint
centre. Those links are massless: they carry no ``<inertial>``. urdfdom (check_urdf) and
pinocchio (``buildModelFromUrdf``: zero inertia; the chain's last link carries the mass)
accept them. MuJoCo's URDF import (``MjModel.from_xml_path``) refuses a massless moving body
("mass and inertia of moving bodies must be larger than mjMINVAL"), so the file carries
MuJoCo's own ``<mujoco><compiler boundmass boundinertia .../></mujoco>`` extension, which
urdfdom and pinocchio skip: in MuJoCo only, those links get ``MUJOCO_BOUND_MASS_KG`` and
``MUJOCO_BOUND_INERTIA`` (the real links are far above both, so nothing else changes); the
same element keeps fixed-joint links as bodies (``fusestatic="false"``) and the viewing
boxes (``discardvisual="false"``). All three consumers were checked
(tests/test_model_exports.py). Consumers that demand a nonzero mass on every moving link
everywhere (Gazebo's URDF -> SDF conversion lumps inertial-less links away) need a tiny mass
in the file itself: ``massless_mass_kg`` writes one (with the inertia of a 1 mm sphere of
that mass), at the cost of that mass added to the model.

Revolute joints with limits are ``revolute`` (effort and velocity unknown: 0), without limits
``continuous``; prismatic ones ``prismatic`` (URDF requires limits: unlimited ones get
+-1e3 m); fixed ones ``fixed``. The base hangs from a ``world`` link by a ``floating`` joint
(free; pinocchio makes it a free-flyer, and tools that ignore floating joints such as
robot_state_publisher leave the base where the consumer puts it) or a ``fixed`` joint. The
optional viewing geometry is a box of the same mass and principal moments (URDF has no
ellipsoid): edges ``sqrt(6 (I_2 + I_3 - I_1) / m)`` and permutations, along the principal
axes at the COM.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.errors import InputError
from rigtool.report.model_description import ModelDescription, ModelLink
from rigtool.report.model_xml import header_comments, link_comment, num, to_text, vec

#: Name of the world link the base hangs from (MuJoCo's URDF import takes a link of this
#: name as its world body).
WORLD_LINK = "world"
#: Mass and principal moments MuJoCo gives the massless links of a spherical joint's chain.
MUJOCO_BOUND_MASS_KG = 1e-9
MUJOCO_BOUND_INERTIA = 1e-12
#: Stand-in range of an unlimited prismatic joint (URDF requires limits), m.
PRISMATIC_RANGE_M = 1e3

_NOTE = ("URDF: a spherical joint is three continuous joints about x, y, z of the joint "
         "frame through the massless links <link>__ball_x and <link>__ball_y (urdfdom and "
         "pinocchio accept massless links; MuJoCo refuses them, so the <mujoco> element gives "
         "them a tiny mass in MuJoCo only); <inertial> holds mass, "
         "COM and the inertia about the COM in link axes")
_GEOMETRY_NOTE = "; boxes of the same mass and principal moments are for viewing only"


def rpy(rotation: np.ndarray) -> np.ndarray:
    """URDF ``rpy`` of a rotation: fixed-axis x-y-z angles, ``R = Rz(y) Ry(p) Rx(r)``."""
    return Rotation.from_matrix(rotation).as_euler("xyz")


def equivalent_box(mass_kg: float, inertia_com: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edge lengths (m) and principal axes (columns, a proper rotation) of the uniform box of
    the same mass and principal moments (``I_1 = m (b^2 + c^2) / 12`` and permutations); an
    edge on the triangle inequality's limit is kept at 1e-4 of the longest."""
    moments, rotation = np.linalg.eigh(np.asarray(inertia_com, float))
    if np.linalg.det(rotation) < 0:
        rotation[:, 2] *= -1
    edges = np.sqrt(np.clip(6.0 / mass_kg * (moments.sum() - 2 * moments), 0.0, None))
    return np.maximum(edges, 1e-4 * max(edges.max(), 1e-6)), rotation


def _inertial(el: ET.Element, mass_kg: float, com_m, inertia) -> None:
    inertial = ET.SubElement(el, "inertial")
    ET.SubElement(inertial, "origin", xyz=vec(com_m), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=num(mass_kg))
    i = np.asarray(inertia, float)
    ET.SubElement(inertial, "inertia", ixx=num(i[0, 0]), ixy=num(i[0, 1]), ixz=num(i[0, 2]),
                  iyy=num(i[1, 1]), iyz=num(i[1, 2]), izz=num(i[2, 2]))


def _link(robot: ET.Element, link: ModelLink, geometry: bool) -> None:
    el = ET.SubElement(robot, "link", name=link.name)
    _inertial(el, link.mass_kg, link.com_m, link.inertia_com)
    if geometry:
        edges, rot = equivalent_box(link.mass_kg, link.inertia_com)
        visual = ET.SubElement(el, "visual")
        ET.SubElement(visual, "origin", xyz=vec(link.com_m), rpy=vec(rpy(rot)))
        ET.SubElement(ET.SubElement(visual, "geometry"), "box", size=vec(edges))


def _joint(robot: ET.Element, name: str, kind: str, parent: str, child: str, xyz, rotation,
           axis=None, limits=None) -> None:
    j = ET.SubElement(robot, "joint", name=name, type=kind)
    ET.SubElement(j, "origin", xyz=vec(xyz), rpy=vec(rpy(rotation)))
    ET.SubElement(j, "parent", link=parent)
    ET.SubElement(j, "child", link=child)
    if axis is not None:
        ET.SubElement(j, "axis", xyz=vec(axis))
    if limits is not None:
        ET.SubElement(j, "limit", lower=num(limits[0]), upper=num(limits[1]), effort="0",
                      velocity="0")


def _massless(robot: ET.Element, name: str, mass_kg: float) -> None:
    el = ET.SubElement(robot, "link", name=name)
    if mass_kg > 0:                      # a 1 mm sphere's inertia: 2/5 m r^2
        _inertial(el, mass_kg, np.zeros(3), 0.4 * mass_kg * 1e-6 * np.eye(3))


def urdf_text(model: ModelDescription, *, geometry: bool = True,
              massless_mass_kg: float = 0.0) -> str:
    """The URDF text of ``model``.

    Parameters
    ----------
    model : ModelDescription
    geometry : bool
        Add a box of equivalent inertia per link as its ``<visual>`` (viewing only).
    massless_mass_kg : float
        Mass of the intermediate links of each spherical joint (0: no ``<inertial>``).

    Returns
    -------
    str
        XML text for urdfdom, ``pinocchio.buildModelFromUrdf`` or MuJoCo.
    """
    robot = ET.Element("robot", name=model.name)
    for c in header_comments(model, _NOTE + (_GEOMETRY_NOTE if geometry else "")):
        robot.append(c)
    mujoco = ET.SubElement(robot, "mujoco")
    ET.SubElement(mujoco, "compiler", boundmass=num(MUJOCO_BOUND_MASS_KG),
                  boundinertia=num(MUJOCO_BOUND_INERTIA), fusestatic="false",
                  discardvisual="false")
    if WORLD_LINK in {l.name for l in model.links}:
        raise InputError(f"a link may not be named '{WORLD_LINK}' in a URDF (the world link "
                         "the base hangs from)", field="links", found=WORLD_LINK)
    ET.SubElement(robot, "link", name=WORLD_LINK)
    base = model.links[0]
    _joint(robot, f"{base.name}_to_world", "floating" if model.base == "free" else "fixed",
           WORLD_LINK, base.name, np.zeros(3), np.eye(3))
    for link in model.links:
        robot.append(link_comment(link))
        _link(robot, link, geometry)
        j = link.joint
        if j is None:
            continue
        name = f"{link.name}_joint"
        if j.type == "spherical":
            chain = [link.parent, f"{link.name}__ball_x", f"{link.name}__ball_y", link.name]
            for k, axis in enumerate("xyz"):
                if k < 2:
                    _massless(robot, chain[k + 1], massless_mass_kg)
                _joint(robot, f"{name}_{axis}", "continuous", chain[k], chain[k + 1],
                       j.position_parent_m if k == 0 else np.zeros(3),
                       j.rotation_parent if k == 0 else np.eye(3), np.eye(3)[k])
        elif j.type == "revolute":
            _joint(robot, name, "continuous" if j.limits is None else "revolute", link.parent,
                   link.name, j.position_parent_m, j.rotation_parent, j.axis, j.limits)
        elif j.type == "prismatic":
            _joint(robot, name, "prismatic", link.parent, link.name, j.position_parent_m,
                   j.rotation_parent, j.axis, j.limits or (-PRISMATIC_RANGE_M,
                                                           PRISMATIC_RANGE_M))
        else:
            _joint(robot, name, "fixed", link.parent, link.name, j.position_parent_m,
                   j.rotation_parent)
    return to_text(robot, "<?xml version=\"1.0\"?>")


def write_urdf(model: ModelDescription, path: str | Path, *, geometry: bool = True,
               massless_mass_kg: float = 0.0) -> Path:
    """Write :func:`urdf_text` to ``path``; returns the path."""
    path = Path(path)
    path.write_text(urdf_text(model, geometry=geometry, massless_mass_kg=massless_mass_kg),
                    encoding="utf-8")
    return path


__all__ = ["urdf_text", "write_urdf", "rpy", "equivalent_box", "WORLD_LINK"]
