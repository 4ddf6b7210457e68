"""An OpenSim model as rigtool's tree of links: which bodies move, where the joints are, the
markers in each link's frame and the model's mass properties as the prior.

The mapping:

- The body joined to ground (by any joint: FreeJoint, a six-coordinate CustomJoint, a
  WeldJoint) is the base link, fixed to the platform in the locked postures. Its link
  frame is its body frame.
- A ``WeldJoint`` fuses its child into its parent: both move as one link, whose prior is
  their sum and whose markers are both bodies'.
- ``BallJoint``, ``GimbalJoint``, ``PinJoint``, ``UniversalJoint`` and a ``CustomJoint``
  whose ``SpatialTransform`` only turns (its translations constant) join a child link at
  the joint centre, the origin of the joint's child frame. rigtool's tree joints are
  spherical: a joint with fewer rotations is taken as spherical, a superset (the estimate
  stays correct, with more unknowns to resolve), and the run says so per joint.
- A child link's frame has the body's axes and its origin at the joint centre:
  ``x_link = x_body - c`` with ``c`` the child frame's origin in the body.

Any other joint (a SliderJoint, PlanarJoint, EllipsoidJoint, a CustomJoint whose
translation follows a coordinate, a second joint to ground) is refused with an
:class:`~rigtool.errors.InputError` naming the file, the joint and what is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.errors import InputError
from rigtool.inertia import InertialParams
from rigtool.osim.model_file import GROUND, OsimJoint, OsimModel

#: joints taken as spherical (rotations about the child frame's origin)
ROTATION_JOINTS = ("BallJoint", "GimbalJoint", "PinJoint", "UniversalJoint", "CustomJoint")
#: the accepted joints as a message says them
ACCEPTED = ("WeldJoint (its body fused with its parent), BallJoint, GimbalJoint, PinJoint, "
            "UniversalJoint, and CustomJoint whose SpatialTransform only turns (no "
            "translation that follows a coordinate); the joint to ground may be of any type")
#: rotations per joint type (a CustomJoint's are counted from its transform)
_ROTATIONS = {"BallJoint": 3, "GimbalJoint": 3, "PinJoint": 1, "UniversalJoint": 2}


@dataclass(frozen=True)
class BodyPlace:
    """Where a body sits in rigtool's tree: its ``link`` and ``x_link = rotation @ x_body +
    position``."""

    link: str
    rotation: np.ndarray
    position: np.ndarray


@dataclass(frozen=True)
class OsimLink:
    """One link of the tree made from the model.

    Attributes
    ----------
    name, parent : str
        The link is named after its body (the base link's parent is ``"platform"``).
    joint_center : ndarray (3,) or None
        In the parent link's frame, m (None for the base).
    markers : dict
        Marker -> position in the link frame, m.
    prior : InertialParams
        The model's mass properties of the link's bodies, about the link origin.
    bodies : tuple of str
        The model bodies moving as this link (the link's own body first, then those welded
        to it).
    joint : str
        The model joint to the parent (``""`` for the base).
    """

    name: str
    parent: str
    joint_center: np.ndarray | None
    markers: dict[str, np.ndarray]
    prior: InertialParams
    bodies: tuple[str, ...]
    joint: str


@dataclass(frozen=True)
class OsimTree:
    """The links of a model in tree order, where each body sits, and the notes a run
    reports (joints taken as spherical, bodies fused, markers left out)."""

    model: OsimModel
    links: tuple[OsimLink, ...]
    places: dict[str, BodyPlace]
    notes: tuple[str, ...]
    root_joint: str


def _refuse(model: OsimModel, joint: OsimJoint, why: str) -> InputError:
    return InputError(f"joint '{joint.name}' ({joint.type}) {why}; rigtool measures a tree of "
                      f"rotation joints and accepts {ACCEPTED}", path=model.path,
                      field=f"JointSet.{joint.name}")


def _constant_translation(model: OsimModel, joint: OsimJoint) -> np.ndarray:
    """A CustomJoint's fixed translation (in its parent frame), or an error when one of
    its translations follows a coordinate."""
    t = np.zeros(3)
    for ax in joint.axes:
        if ax.rotation:
            continue
        if ax.moves:
            raise _refuse(model, joint, f"translates along {ax.name} with coordinate "
                          f"{', '.join(ax.coordinates)}")
        t += (ax.constant or 0.0) * ax.axis
    return t


def _note(joint: OsimJoint) -> str | None:
    """The run's note for a rotation joint with fewer than three rotations."""
    if joint.type == "CustomJoint":
        n = sum(1 for ax in joint.axes if ax.rotation and ax.moves)
    else:
        n = _ROTATIONS[joint.type]
    if n >= 3:
        return None
    return (f"OpenSim joint '{joint.name}' ({joint.type}, {n} rotation"
            f"{'s' if n != 1 else ''}) taken as spherical: correct, with more unknowns than "
            "the joint has")


def osim_tree(model: OsimModel) -> OsimTree:
    """rigtool's tree of ``model`` (module docstring).

    Raises
    ------
    InputError
        A refused joint, a model not joined to ground by exactly one joint, a body without
        a joint or with two, a link without mass.
    """
    by_child: dict[str, OsimJoint] = {}
    for j in model.joints:
        if j.child.body == GROUND:
            raise _refuse(model, j, "has ground as its child")
        if j.child.body in by_child:
            raise InputError(f"body '{j.child.body}' is the child of joints "
                             f"'{by_child[j.child.body].name}' and '{j.name}' (a closed loop); "
                             "rigtool measures a tree", path=model.path,
                             field=f"JointSet.{j.name}")
        by_child[j.child.body] = j
    roots = [j for j in model.joints if j.parent.body == GROUND]
    if len(roots) != 1:
        names = ", ".join(f"'{j.name}'" for j in roots) or "none"
        raise InputError(f"expected exactly one joint to ground (found {names}): its child is "
                         "the body fixed to the platform", path=model.path, field="JointSet")
    orphans = [b for b in model.bodies if b not in by_child]
    if orphans:
        raise InputError(f"body '{orphans[0]}' has no joint", path=model.path,
                         field=f"BodySet.{orphans[0]}")
    children: dict[str, list[OsimJoint]] = {}
    for j in model.joints:
        children.setdefault(j.parent.body, []).append(j)

    root = roots[0].child.body
    places = {root: BodyPlace(root, np.eye(3), np.zeros(3))}
    order: list[str] = [root]                   # links in tree order
    parents: dict[str, str] = {root: "platform"}
    centres: dict[str, np.ndarray | None] = {root: None}
    bodies_of: dict[str, list[str]] = {root: [root]}
    joint_of: dict[str, str] = {root: ""}
    notes: list[str] = []
    queue = [root]
    while queue:
        body = queue.pop(0)
        for j in children.get(body, []):
            child = j.child.body
            parent_place = places[body]
            if j.type == "WeldJoint":
                # x_parent = R_PF x_F, x_F = x_M, x_child = R_CM x_M + p_CM
                r_pc = j.parent.rotation @ j.child.rotation.T
                p_pc = j.parent.position - r_pc @ j.child.position
                places[child] = BodyPlace(parent_place.link,
                                          parent_place.rotation @ r_pc,
                                          parent_place.rotation @ p_pc + parent_place.position)
                bodies_of[parent_place.link].append(child)
                notes.append(f"OpenSim body '{child}' welded to '{body}' (joint '{j.name}'): "
                             f"measured as one link '{parent_place.link}'")
            elif j.type in ROTATION_JOINTS:
                shift = np.zeros(3)
                if j.type == "CustomJoint":
                    shift = j.parent.rotation @ _constant_translation(model, j)
                centre_body = j.parent.position + shift
                places[child] = BodyPlace(child, np.eye(3), -j.child.position)
                order.append(child)
                parents[child] = parent_place.link
                centres[child] = parent_place.rotation @ centre_body + parent_place.position
                bodies_of[child] = [child]
                joint_of[child] = j.name
                note = _note(j)
                if note:
                    notes.append(note)
            else:
                raise _refuse(model, j, "is not accepted")
            queue.append(child)

    markers: dict[str, dict[str, np.ndarray]] = {name: {} for name in order}
    on_ground = []
    for m in model.markers:
        if m.body == GROUND:
            on_ground.append(m.name)
            continue
        place = places[m.body]
        markers[place.link][m.name] = place.rotation @ m.location + place.position
    if on_ground:
        notes.append(f"OpenSim markers on ground left out: {', '.join(on_ground)}")
    links = []
    for name in order:
        prior = InertialParams(np.zeros(10))
        for b in bodies_of[name]:
            ob = model.bodies[b]
            p = places[b]
            prior = prior + InertialParams.from_com(ob.mass, ob.mass_center,
                                                    ob.inertia).transformed(p.rotation,
                                                                            p.position)
        if not prior.mass > 0:
            raise InputError(f"link '{name}' (bodies {', '.join(bodies_of[name])}) has no mass "
                             "in the model: its prior needs a positive mass", path=model.path,
                             field=f"BodySet.{name}.mass")
        links.append(OsimLink(name, parents[name], centres[name], markers[name], prior,
                              tuple(bodies_of[name]), joint_of[name]))
    return OsimTree(model, tuple(links), places, tuple(notes), roots[0].name)


__all__ = ["ROTATION_JOINTS", "ACCEPTED", "BodyPlace", "OsimLink", "OsimTree", "osim_tree"]
