"""The measured object as an OpenSim 4 model (.osim XML).

Format (OpenSim 4 API, as ``Model::print`` writes it; checked against ``opensim.Model``):
``<OpenSimDocument Version="40600"><Model>`` with a ``<BodySet>`` (``<Body>``: ``<mass>``,
``<mass_center>`` in the body frame, ``<inertia>`` as ``[Ixx Iyy Izz Ixy Ixz Iyz]`` "measured
about the mass_center and not the body origin") and a ``<JointSet>``. Each joint owns two
``PhysicalOffsetFrame`` s: ``parent_offset`` on the parent at the joint centre and
``child_offset`` on the child at its origin (the joint centre too). The joint type maps:
spherical -> ``BallJoint``; revolute -> ``PinJoint`` (which turns about the common z axis of
its two frames, so both frames are turned to put z on the joint axis); prismatic ->
``SliderJoint`` (along the frames' x axis, likewise turned); fixed -> ``WeldJoint``. The base
hangs from ``/ground`` by a ``FreeJoint`` (free) or a ``WeldJoint`` (fixed). Orientations are
OpenSim's body-fixed x-y-z Euler angles. The viewing ellipsoid sits on a
``PhysicalOffsetFrame`` at the COM along the principal axes, among the body's components.
Written with xml.etree (no OpenSim needed to write; OpenSim reads it).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.report.model_description import ModelDescription, ModelLink, equivalent_ellipsoid
from rigtool.report.model_xml import header_comments, link_comment, num, to_text, vec

#: ``OpenSimDocument`` version written (OpenSim 4.6's; 4.x readers accept it).
DOCUMENT_VERSION = "40600"

_NOTE = ("OpenSim 4: BallJoint for spherical joints (PinJoint revolute, SliderJoint "
         "prismatic, WeldJoint fixed), FreeJoint or WeldJoint from ground to the base; Body "
         "mass, mass_center (body frame) and inertia [Ixx Iyy Izz Ixy Ixz Iyz] about the "
         "mass_center")
_GEOMETRY_NOTE = "; Ellipsoid geometry (same mass and principal moments) for viewing only"

_OSIM_JOINT = {"spherical": "BallJoint", "revolute": "PinJoint", "prismatic": "SliderJoint",
               "fixed": "WeldJoint"}
_COORDS = {"spherical": ("rx", "ry", "rz"), "revolute": ("angle",), "prismatic": ("shift",),
           "fixed": (), "free": ("rx", "ry", "rz", "tx", "ty", "tz")}


def euler_xyz(rotation: np.ndarray) -> np.ndarray:
    """OpenSim's ``orientation``: body-fixed x-y-z angles (rad) with ``R = Rx Ry Rz``."""
    return Rotation.from_matrix(rotation).as_euler("XYZ")


def axis_frame(axis: np.ndarray, column: int) -> np.ndarray:
    """A rotation whose ``column`` (0: x, 2: z) is the unit ``axis``: the identity when the
    axis already is that column, else the smallest turn taking the column onto it."""
    axis = np.asarray(axis, float)
    e = np.eye(3)[column]
    if np.allclose(axis, e, rtol=0, atol=1e-15):
        return np.eye(3)
    rot, _ = Rotation.align_vectors(axis[None, :], e[None, :])
    return rot.as_matrix()


def _offset(parent_path: str, name: str, translation, rotation) -> ET.Element:
    frame = ET.Element("PhysicalOffsetFrame", name=name)
    ET.SubElement(frame, "socket_parent").text = parent_path
    ET.SubElement(frame, "translation").text = vec(translation)
    ET.SubElement(frame, "orientation").text = vec(euler_xyz(rotation))
    return frame


def _joint(kind: str, name: str, coords: tuple[str, ...], parent_path: str, child_path: str,
           translation, rot_parent, rot_child, limits=None) -> ET.Element:
    joint = ET.Element(kind, name=name)
    ET.SubElement(joint, "socket_parent_frame").text = "parent_offset"
    ET.SubElement(joint, "socket_child_frame").text = "child_offset"
    if coords:
        c_el = ET.SubElement(joint, "coordinates")
        for c in coords:
            coordinate = ET.SubElement(c_el, "Coordinate", name=f"{name}_{c}")
            if limits is not None:
                # OpenSim refuses a default value outside the range (a joint whose limits
                # exclude zero, e.g. a Panda's elbow): the value in the range nearest zero
                ET.SubElement(coordinate, "default_value").text = num(
                    min(max(0.0, limits[0]), limits[1]))
                ET.SubElement(coordinate, "range").text = vec(limits)
                ET.SubElement(coordinate, "clamped").text = "true"
    frames = ET.SubElement(joint, "frames")
    frames.append(_offset(parent_path, "parent_offset", translation, rot_parent))
    frames.append(_offset(child_path, "child_offset", np.zeros(3), rot_child))
    return joint


def _link_joint(link: ModelLink, model: ModelDescription) -> ET.Element:
    child = f"/bodyset/{link.name}"
    if link.joint is None:                        # the base on the ground
        kind = "FreeJoint" if model.base == "free" else "WeldJoint"
        return _joint(kind, f"{link.name}_to_ground", _COORDS[model.base] if model.base ==
                      "free" else (), "/ground", child, np.zeros(3), np.eye(3), np.eye(3))
    j = link.joint
    turn = np.eye(3)                               # joint frame -> OpenSim's joint axes
    if j.type == "revolute":
        turn = axis_frame(j.axis, 2)
    elif j.type == "prismatic":
        turn = axis_frame(j.axis, 0)
    return _joint(_OSIM_JOINT[j.type], f"{link.name}_joint", _COORDS[j.type],
                  f"/bodyset/{link.parent}", child, j.position_parent_m,
                  j.rotation_parent @ turn, turn, j.limits)


def _body(link: ModelLink, geometry: bool) -> ET.Element:
    body = ET.Element("Body", name=link.name)
    if geometry:
        semi, rot = equivalent_ellipsoid(link.mass_kg, link.inertia_com)
        comps = ET.SubElement(body, "components")
        frame = ET.SubElement(comps, "PhysicalOffsetFrame", name=f"{link.name}_principal_axes")
        geoms = ET.SubElement(frame, "attached_geometry")
        ell = ET.SubElement(geoms, "Ellipsoid", name=f"{link.name}_ellipsoid")
        ET.SubElement(ell, "socket_frame").text = ".."
        ET.SubElement(ell, "radii").text = vec(semi)
        ET.SubElement(frame, "socket_parent").text = ".."
        ET.SubElement(frame, "translation").text = vec(link.com_m)
        ET.SubElement(frame, "orientation").text = vec(euler_xyz(rot))
    ET.SubElement(body, "mass").text = num(link.mass_kg)
    ET.SubElement(body, "mass_center").text = vec(link.com_m)
    i = link.inertia_com
    ET.SubElement(body, "inertia").text = vec([i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2],
                                               i[1, 2]])
    return body


def osim_text(model: ModelDescription, *, geometry: bool = True) -> str:
    """The .osim text of ``model`` (``opensim.Model(path)`` reads it).

    Parameters
    ----------
    model : ModelDescription
    geometry : bool
        Add an ellipsoid of equivalent inertia per body (viewing only).
    """
    doc = ET.Element("OpenSimDocument", Version=DOCUMENT_VERSION)
    m_el = ET.SubElement(doc, "Model", name=model.name)
    for c in header_comments(model, _NOTE + (_GEOMETRY_NOTE if geometry else "")):
        m_el.append(c)
    ET.SubElement(m_el, "gravity").text = vec(model.gravity_m_s2)
    ET.SubElement(m_el, "credits").text = (model.provenance[0] if model.provenance
                                           else "rigtool")
    ET.SubElement(m_el, "length_units").text = "meters"
    ET.SubElement(m_el, "force_units").text = "N"
    bodyset = ET.SubElement(m_el, "BodySet", name="bodyset")
    bodies = ET.SubElement(bodyset, "objects")
    for link in model.links:
        bodies.append(link_comment(link))
        bodies.append(_body(link, geometry))
    ET.SubElement(bodyset, "groups")
    jointset = ET.SubElement(m_el, "JointSet", name="jointset")
    joints = ET.SubElement(jointset, "objects")
    for link in model.links:
        joints.append(_link_joint(link, model))
    ET.SubElement(jointset, "groups")
    return to_text(doc, "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>")


def write_osim(model: ModelDescription, path: str | Path, *, geometry: bool = True) -> Path:
    """Write :func:`osim_text` to ``path``; returns the path."""
    path = Path(path)
    path.write_text(osim_text(model, geometry=geometry), encoding="utf-8")
    return path


__all__ = ["osim_text", "write_osim", "euler_xyz", "axis_frame", "DOCUMENT_VERSION"]
