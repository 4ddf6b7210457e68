"""A serial arm's URDF read into the test bed's link tree, by the URDF specification alone.

A *body* is a link whose parent joint turns (revolute or continuous) with every link
attached to it by fixed joints, in that link's frame; the base body is the base link and
what is fixed to it. Joints the lab holds (a gripper's prismatic fingers, a joint that mimics
one) are written as fixed joints at their held position, as a lab edits the URDF it hands
over. Links above the base link (a ``world`` link) must carry no mass.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from benchmarks.testbed.model import Body, Link, Subject

TURNING = ("revolute", "continuous")


def origin(el: ET.Element | None) -> tuple[np.ndarray, np.ndarray]:
    """(xyz, rotation) of an element's ``<origin>`` (URDF rpy: fixed axes x, y, z)."""
    o = el.find("origin") if el is not None else None
    xyz = np.array([float(x) for x in (o.get("xyz", "0 0 0") if o is not None
                                       else "0 0 0").split()])
    rpy = [float(x) for x in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
    return xyz, Rotation.from_euler("xyz", rpy).as_matrix()


def link_inertials(root: ET.Element) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
    """(mass, COM, inertia about the COM) in each link's frame, of its ``<inertial>``."""
    out = {}
    for lk in root.findall("link"):
        i = lk.find("inertial")
        if i is None:
            continue
        xyz, rot = origin(i)
        a = {k: float(v) for k, v in i.find("inertia").attrib.items()}
        t = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]],
                      [a["ixz"], a["iyz"], a["izz"]]])
        out[lk.get("name")] = (float(i.find("mass").get("value")), xyz, rot @ t @ rot.T)
    return out


def hold_joints(tree: ET.ElementTree, held: dict[str, float]) -> ET.ElementTree:
    """A copy of ``tree`` with each joint in ``held`` made fixed at its value (m along a
    prismatic axis, rad about a revolute one): its origin moved by the held motion."""
    tree = copy.deepcopy(tree)
    for j in tree.getroot().findall("joint"):
        if j.get("name") not in held:
            continue
        v = held[j.get("name")]
        xyz, rot = origin(j)
        axis = np.array([float(x) for x in j.find("axis").get("xyz").split()])
        axis /= np.linalg.norm(axis)
        if j.get("type") == "prismatic":
            xyz = xyz + rot @ axis * v
        else:
            rot = rot @ Rotation.from_rotvec(axis * v).as_matrix()
        o = j.find("origin")
        if o is None:
            o = ET.SubElement(j, "origin")
        o.set("xyz", " ".join(f"{x:.12g}" for x in xyz))
        o.set("rpy", " ".join(f"{x:.12g}" for x in Rotation.from_matrix(rot).as_euler("xyz")))
        j.set("type", "fixed")
        for tag in ("axis", "limit", "mimic", "dynamics", "safety_controller", "calibration"):
            for el in j.findall(tag):
                j.remove(el)
    return tree


@dataclass
class Arm:
    """An arm as the test bed's tree.

    ``subject``: one link per body (the base body first, parents before children);
    ``joints``: per moving body its joint (``name``, ``type``, ``axis`` in the body frame,
    ``lower``, ``upper`` (+-pi for a continuous joint), ``velocity``, ``origin_rotation``
    in the parent body's frame); ``members``: per body its links' poses (rotation,
    position) in the body frame; ``urdf``: the URDF as handed over (held joints fixed).
    """

    subject: Subject
    joints: dict[str, dict]
    members: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]
    urdf: ET.ElementTree
    base_link: str
    held: dict[str, float]


def read_arm(tree: ET.ElementTree, base_link: str, held: dict[str, float] | None = None,
             name: str = "robot") -> Arm:
    """Read an arm's URDF (``tree``) from ``base_link``; ``held`` joints fixed first."""
    held = dict(held or {})
    tree = hold_joints(tree, held)
    root = tree.getroot()
    inertial = link_inertials(root)
    children: dict[str, list[ET.Element]] = {}
    for j in root.findall("joint"):
        children.setdefault(j.find("parent").get("link"), []).append(j)
    body_of = {base_link: base_link}
    pose = {base_link: (np.eye(3), np.zeros(3))}       # link in its body's frame
    order, joints = [base_link], {}
    parent_body = {}
    queue = [base_link]
    while queue:
        ln = queue.pop(0)
        for j in children.get(ln, []):
            child, kind = j.find("child").get("link"), j.get("type")
            xyz, rot = origin(j)
            r_pl, p_pl = pose[ln]
            if kind == "fixed":
                body_of[child] = body_of[ln]
                pose[child] = (r_pl @ rot, p_pl + r_pl @ xyz)
            elif kind in TURNING:
                body_of[child] = child
                pose[child] = (np.eye(3), np.zeros(3))
                axis = np.array([float(x) for x in j.find("axis").get("xyz").split()])
                lim = j.find("limit")
                lo = float(lim.get("lower", -np.pi)) if kind == "revolute" else -np.pi
                hi = float(lim.get("upper", np.pi)) if kind == "revolute" else np.pi
                joints[child] = {"name": j.get("name"), "type": kind,
                                 "axis": axis / np.linalg.norm(axis), "lower": lo, "upper": hi,
                                 "velocity": float(lim.get("velocity", "inf"))
                                 if lim is not None else np.inf,
                                 "origin_rotation": r_pl @ rot,
                                 "center_parent": p_pl + r_pl @ xyz}
                parent_body[child] = body_of[ln]
                order.append(child)
            else:
                raise ValueError(f"joint '{j.get('name')}' is {kind}: hold it")
            queue.append(child)
    above = [ln for ln, (m, _, _) in inertial.items() if ln not in body_of and m > 0]
    if above:
        raise ValueError(f"links {above} carry mass but are not below {base_link}")
    members = {b: {} for b in order}
    for ln, b in body_of.items():
        members[b][ln] = pose[ln]
    links = []
    for b in order:
        m_tot, h, i_o = 0.0, np.zeros(3), np.zeros((3, 3))
        for ln, (r, p) in members[b].items():
            if ln not in inertial:
                continue
            m, c, ic = inertial[ln]
            cb = p + r @ c
            m_tot += m
            h += m * cb
            i_o += r @ ic @ r.T + m * (cb @ cb * np.eye(3) - np.outer(cb, cb))
        com = h / m_tot if m_tot > 0 else np.zeros(3)
        i_c = i_o - m_tot * (com @ com * np.eye(3) - np.outer(com, com))
        body = Body(b, m_tot, com, 0.5 * (i_c + i_c.T), {})
        if b == base_link:
            links.append(Link(body, "platform", "fixed"))
        else:
            links.append(Link(body, parent_body[b], "revolute", joints[b]["center_parent"],
                              joints[b]["axis"]))
    return Arm(Subject(name, links, np.zeros(3)), joints, members, tree, base_link, held)


def body_inertials(path: Path, base_link: str) -> dict[str, tuple]:
    """(mass, COM, inertia about the COM) per body of the URDF at ``path`` (its fixed
    children merged into the moving link): the bodies rigtool's base parameters name."""
    arm = read_arm(ET.parse(path), base_link)
    return {lk.body.name: (lk.body.mass_kg, lk.body.com_m, lk.body.inertia_com_kg_m2)
            for lk in arm.subject.links}


def rotations(arm: Arm, q: dict[str, float]) -> dict[str, np.ndarray]:
    """Each moving body's rotation in its parent body's frame at joint angles ``q``."""
    return {b: j["origin_rotation"] @ Rotation.from_rotvec(
        j["axis"] * q.get(j["name"], 0.0)).as_matrix() for b, j in arm.joints.items()}
