"""The measured object as a MuJoCo model (MJCF XML).

Format (MuJoCo XML reference, ``body``/``inertial``/``joint``): one ``<body>`` per link
nested as the tree, at ``pos``/``quat`` of its joint frame in the parent body; ``<inertial
pos="COM" mass="" fullinertia="Ixx Iyy Izz Ixy Ixz Iyz"/>`` with the inertia about the COM in
body axes (MuJoCo diagonalises it on compile). A spherical joint is a ``ball`` joint at the
body origin (the joint centre), a revolute one a ``hinge``, a prismatic one a ``slide``, a
fixed one no joint; the base body carries a ``<freejoint/>`` when it is free and no joint
(welded to the world) when it is fixed. ``inertiafromgeom="false"``: the optional viewing
ellipsoids (equal mass and principal moments, ``contype``/``conaffinity`` 0) never change
the inertia and never touch anything.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from rigtool.report.model_description import (ModelDescription, ModelLink,
                                              equivalent_ellipsoid, quaternion_wxyz)
from rigtool.report.model_xml import header_comments, link_comment, num, to_text, vec

_NOTE = ("MuJoCo MJCF: spherical joints are ball joints at the body origin (the joint "
         "centre); <inertial> holds mass, COM and the inertia about the COM in body axes")
_GEOMETRY_NOTE = ("; ellipsoid geoms (same mass and principal moments, no contacts) are for "
                  "viewing only")


def _joint(link: ModelLink, body: ET.Element) -> None:
    j = link.joint
    name = f"{link.name}_joint"
    if j.type == "spherical":
        ET.SubElement(body, "joint", name=name, type="ball", pos="0 0 0")
    elif j.type in ("revolute", "prismatic"):
        attrs = {"name": name, "type": "hinge" if j.type == "revolute" else "slide",
                 "pos": "0 0 0", "axis": vec(j.axis)}
        if j.limits is not None:
            attrs.update(limited="true", range=vec(j.limits))
        ET.SubElement(body, "joint", **attrs)


def _geometry(link: ModelLink, body: ET.Element) -> None:
    semi, rot = equivalent_ellipsoid(link.mass_kg, link.inertia_com)
    ET.SubElement(body, "geom", name=f"{link.name}_ellipsoid", type="ellipsoid",
                  size=vec(semi), pos=vec(link.com_m), quat=vec(quaternion_wxyz(rot)),
                  contype="0", conaffinity="0", group="1", rgba="0.55 0.65 0.8 0.6")


def mjcf_text(model: ModelDescription, *, geometry: bool = True) -> str:
    """The MJCF text of ``model``.

    Parameters
    ----------
    model : ModelDescription
    geometry : bool
        Add an ellipsoid of equivalent inertia per link (viewing only).

    Returns
    -------
    str
        XML text for ``mujoco.MjModel.from_xml_string`` / ``from_xml_path``.
    """
    root = ET.Element("mujoco", model=model.name)
    for c in header_comments(model, _NOTE + (_GEOMETRY_NOTE if geometry else "")):
        root.append(c)
    ET.SubElement(root, "compiler", angle="radian", inertiafromgeom="false",
                  autolimits="true")
    ET.SubElement(root, "option", gravity=vec(model.gravity_m_s2))
    world = ET.SubElement(root, "worldbody")
    bodies: dict[str, ET.Element] = {}
    for link in model.links:
        parent = world if link.parent is None else bodies[link.parent]
        parent.append(link_comment(link))
        attrs = {"name": link.name}
        if link.joint is not None:
            attrs["pos"] = vec(link.joint.position_parent_m)
            if not np.array_equal(link.joint.rotation_parent, np.eye(3)):
                attrs["quat"] = vec(quaternion_wxyz(link.joint.rotation_parent))
        body = ET.SubElement(parent, "body", **attrs)
        bodies[link.name] = body
        if link.joint is None:
            if model.base == "free":
                ET.SubElement(body, "freejoint", name=f"{link.name}_free")
        else:
            _joint(link, body)
        i = link.inertia_com
        ET.SubElement(body, "inertial", pos=vec(link.com_m), mass=num(link.mass_kg),
                      fullinertia=vec([i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]]))
        if geometry:
            _geometry(link, body)
    return to_text(root, "<?xml version=\"1.0\" encoding=\"utf-8\"?>")


def write_mjcf(model: ModelDescription, path: str | Path, *, geometry: bool = True) -> Path:
    """Write :func:`mjcf_text` to ``path``; returns the path."""
    path = Path(path)
    path.write_text(mjcf_text(model, geometry=geometry), encoding="utf-8")
    return path


__all__ = ["mjcf_text", "write_mjcf"]
