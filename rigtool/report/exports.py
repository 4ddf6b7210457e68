"""The model files of a results directory, and per-link inertial blocks (URDF, OpenSim).

:func:`write_models` writes the complete models (MuJoCo MJCF, OpenSim, URDF; one writer module
each: ``export_mjcf``, ``export_osim``, ``export_urdf``, all reading one
:class:`~rigtool.report.model_description.ModelDescription`). The fragment helpers below
(``<inertial>`` blocks, a BodySet) serve a user pasting the numbers into a model of their own.

Conventions
-----------
- Input: per link the standard parameters :class:`rigtool.inertia.InertialParams` about the
  link origin in link axes (rigtool's link frames: origin at the joint centre). Both formats
  want mass, the COM in the link frame and the inertia about the COM in link axes; the
  conversion is :attr:`InertialParams.com` / :attr:`InertialParams.inertia_com`.
- Inertia tensors in tensor form (``I_xy = -∫ x y dm``), as rigtool, URDF and Simbody use.
- URDF (ROS ``urdf`` XML spec): ``<inertial><origin xyz="COM" rpy="0 0 0"/><mass
  value=""/><inertia ixx ixy ixz iyy iyz izz/></inertial>``, the inertia about the COM in
  the axes of ``<origin>`` (here the link axes, rpy zero).
- OpenSim 4 (``OpenSim::Body`` properties): ``<mass>``, ``<mass_center>`` (body frame) and
  ``<inertia>`` as a Vec6 ``[Ixx Iyy Izz Ixy Ixz Iyz]`` "measured about the mass_center and
  not the body origin" (Body.h property comment).
- Numbers are written with Python's shortest round-trip ``repr`` (no precision lost).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Mapping

import numpy as np

from rigtool.inertia import InertialParams


def _num(x: float) -> str:
    return repr(float(x))


def _vec(v) -> str:
    return " ".join(_num(x) for x in np.asarray(v, float).ravel())


def _params_of(links) -> dict[str, InertialParams]:
    """``{name: InertialParams}`` from such a mapping or a ``SegmentsResult``."""
    if hasattr(links, "links") and not isinstance(links, Mapping):
        links = {k: v.params for k, v in links.links.items()}
    out = {}
    for name, p in links.items():
        out[name] = p if isinstance(p, InertialParams) else InertialParams(np.asarray(p, float))
    return out


def urdf_inertial(params: InertialParams) -> ET.Element:
    """One URDF ``<inertial>`` element (COM origin, mass, inertia about the COM)."""
    inertial = ET.Element("inertial")
    ET.SubElement(inertial, "origin", xyz=_vec(params.com), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=_num(params.mass))
    i = params.inertia_com
    ET.SubElement(inertial, "inertia", ixx=_num(i[0, 0]), ixy=_num(i[0, 1]), ixz=_num(i[0, 2]),
                  iyy=_num(i[1, 1]), iyz=_num(i[1, 2]), izz=_num(i[2, 2]))
    return inertial


def urdf_fragment(links, *, robot_name: str = "rigtool") -> str:
    """A ``<robot>`` with one ``<link>`` per link holding only its ``<inertial>`` block.

    Parameters
    ----------
    links : Mapping[str, InertialParams] or SegmentsResult
        Standard parameters about each link origin (link axes).
    robot_name : str
        ``name`` attribute of ``<robot>``.

    Returns
    -------
    str
        XML text; paste each ``<inertial>`` into the matching link of a full URDF.
    """
    robot = ET.Element("robot", name=robot_name)
    robot.append(ET.Comment(" inertial parameters identified by rigtool: COM in the link "
                            "frame, inertia about the COM in link axes (kg, m, kg m^2) "))
    for name, p in _params_of(links).items():
        link = ET.SubElement(robot, "link", name=name)
        link.append(urdf_inertial(p))
    ET.indent(robot)
    return ET.tostring(robot, encoding="unicode") + "\n"


def opensim_bodyset(links) -> str:
    """An OpenSim 4 ``<BodySet>`` fragment: ``<Body>`` with mass, mass_center and inertia.

    Parameters
    ----------
    links : Mapping[str, InertialParams] or SegmentsResult
        Standard parameters about each link origin (link axes = body frame).

    Returns
    -------
    str
        XML text of ``<BodySet name="bodyset"><objects><Body name=...>...``; copy the
        ``<mass>``, ``<mass_center>`` and ``<inertia>`` of each Body into a model.
    """
    bodyset = ET.Element("BodySet", name="bodyset")
    objects = ET.SubElement(bodyset, "objects")
    for name, p in _params_of(links).items():
        body = ET.SubElement(objects, "Body", name=name)
        ET.SubElement(body, "mass").text = _num(p.mass)
        ET.SubElement(body, "mass_center").text = _vec(p.com)
        i = p.inertia_com
        ET.SubElement(body, "inertia").text = _vec([i[0, 0], i[1, 1], i[2, 2], i[0, 1],
                                                    i[0, 2], i[1, 2]])
    ET.SubElement(bodyset, "groups")
    ET.indent(bodyset)
    return ET.tostring(bodyset, encoding="unicode") + "\n"


#: The model files of a results directory: (file, format, how to load it).
MODEL_FILES: tuple[tuple[str, str, str], ...] = (
    ("model_mujoco.xml", "MuJoCo MJCF", "mujoco.MjModel.from_xml_path"),
    ("model.osim", "OpenSim 4 model", "opensim.Model"),
    ("model.urdf", "URDF", "urdfdom, pinocchio.buildModelFromUrdf, MuJoCo"),
)


def write_models(doc: dict, out_dir: str | Path, *, base: str = "free",
                 geometry: bool = True) -> tuple[list[Path], dict]:
    """Write the complete models of a report.json into ``out_dir``: MuJoCo, OpenSim, URDF.

    Parameters
    ----------
    doc : dict
        A report.json's content with a ``segments`` block
        (:func:`rigtool.report.model_description.model_from_report`).
    out_dir : str or Path
        Existing directory (files there of these names are replaced).
    base : str
        ``"free"`` (six degrees of freedom) or ``"fixed"`` (welded to the world).
    geometry : bool
        Add a viewing ellipsoid (a box in URDF) of equivalent inertia per link.

    Returns
    -------
    paths : list[Path]
        The files written, in :data:`MODEL_FILES` order.
    block : dict
        report.json's ``model_files`` block: base, geometry and per file its format.
    """
    from rigtool.report.export_mjcf import write_mjcf
    from rigtool.report.export_osim import write_osim
    from rigtool.report.export_urdf import write_urdf
    from rigtool.report.model_description import model_from_report

    out_dir = Path(out_dir)
    model = model_from_report(doc, base=base)
    writers = (write_mjcf, write_osim, write_urdf)
    paths = [w(model, out_dir / name, geometry=geometry)
             for w, (name, _, _) in zip(writers, MODEL_FILES)]
    block = {"base": base, "geometry": geometry,
             "files": [{"file": name, "format": fmt, "loads_with": how}
                       for name, fmt, how in MODEL_FILES],
             "links": [{"name": l.name, "label": l.label, "parent": l.parent,
                        "joint": None if l.joint is None else l.joint.type} for l in model.links]}
    return paths, block
