"""The rig and the subject as plain data, and their MuJoCo model (MJCF).

Frames: the lab frame is the motion-capture frame (z up); the platform frame is the rig
file's; each link's frame is the session manifest's (a moving link's origin at its joint
centre). Inertia tensors are about the COM in tensor form (I_xy = -sum x y m).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from benchmarks.testbed import rigphysics


@dataclass
class Spring:
    """An axial spring: anchor (lab, m), attachment (platform, m), k (N/m), L0 (m), c (N s/m)."""

    name: str
    anchor_lab_m: np.ndarray
    attachment_platform_m: np.ndarray
    stiffness_n_m: float
    free_length_m: float
    damping_n_s_m: float


@dataclass
class Body:
    """A rigid body's inertial parameters (its frame) and its markers (its frame, m)."""

    name: str
    mass_kg: float
    com_m: np.ndarray
    inertia_com_kg_m2: np.ndarray
    markers_m: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class Rig:
    """The platform (a free body) and its springs; gravity in the lab frame."""

    name: str
    platform: Body
    springs: list[Spring]
    gravity_lab_m_s2: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.80665]))


@dataclass
class Link:
    """One link of the subject's tree.

    ``joint`` is ``"fixed"`` for the base (parent ``"platform"``), else ``"spherical"``,
    ``"revolute"`` or ``"prismatic"`` (axis in the link frame). ``joint_center_parent_m`` is
    the link's origin in its parent's frame.
    """

    body: Body
    parent: str
    joint: str = "spherical"
    joint_center_parent_m: np.ndarray = field(default_factory=lambda: np.zeros(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    prior: dict | None = None


@dataclass
class Subject:
    """A tree of links; the base link's frame placed on the platform by ``base_*``."""

    name: str
    links: list[Link]
    base_position_platform_m: np.ndarray
    base_rotation_platform: np.ndarray = field(default_factory=lambda: np.eye(3))

    def link(self, name: str) -> Link:
        """The link named ``name``."""
        for lk in self.links:
            if lk.body.name == name:
                return lk
        raise KeyError(name)

    @property
    def total_mass_kg(self) -> float:
        """The subject's mass."""
        return float(sum(lk.body.mass_kg for lk in self.links))


def _fmt(v) -> str:
    return " ".join(f"{float(x):.17g}" for x in np.ravel(v))


def _quat(rot: np.ndarray) -> str:
    x, y, z, w = Rotation.from_matrix(np.asarray(rot, float)).as_quat()
    return _fmt([w, x, y, z])


def _inertial(b: Body) -> str:
    inertia = np.asarray(b.inertia_com_kg_m2, float)
    full = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]]
    return (f'<inertial pos="{_fmt(b.com_m)}" mass="{b.mass_kg:.17g}" '
            f'fullinertia="{_fmt(full)}"/>')


def _sites(prefix: str, b: Body) -> str:
    return "".join(f'<site name="{prefix}:{m}" pos="{_fmt(p)}"/>' for m, p in b.markers_m.items())


def _internal_body(k: int, im: dict, subject_name: str) -> str:
    """The MJCF body of the ``k``-th internal mass (see :func:`mjcf`): a point mass (the
    truth splits it off its link as one) on its joints, a wall's marker sites with it."""
    kind = im.get("kind", "breath")
    if kind == "wobble":
        joints = "".join(f'<joint name="internal{k}:{ax}" type="slide" axis="{e}" '
                         f'stiffness="{im["stiffness"]:.17g}" damping="{im["damping"]:.17g}"/>'
                         for ax, e in zip("xyz", ("1 0 0", "0 1 0", "0 0 1")))
    else:
        joints = f'<joint name="internal{k}" type="slide" axis="{_fmt(im["axis"])}"/>'
    inertia = "1e-6 1e-6 1e-6" if kind == "breath" else "1e-9 1e-9 1e-9"
    attrs, sites = "", ""
    if kind == "wall":
        attrs = ' gravcomp="1"'
        p0 = np.asarray(im["point"], float)
        sites = "".join(f'<site name="{subject_name}:{m}" pos="{_fmt(np.asarray(p) - p0)}"/>'
                        for m, p in im["sites"].items())
    return (f'<body name="internal{k}" pos="{_fmt(im["point"])}"{attrs}>{joints}'
            f'<inertial pos="0 0 0" mass="{im["mass"]:.17g}" diaginertia="{inertia}"/>'
            f'{sites}</body>')


def mjcf(rig: Rig, *, loads: list[tuple[Body, np.ndarray, np.ndarray]] = (),
         subject: Subject | None = None, rotations: dict[str, np.ndarray] | None = None,
         released: dict[str, float] | None = None, timestep_s: float = 1e-3,
         integrator: str = "RK4", spring_damping: bool = True,
         internal: list[dict] | None = None, back: dict | None = None,
         physics: rigphysics.RigPhysics | None = None) -> str:
    """The MJCF of the rig carrying ``loads`` (body, position, rotation in the platform
    frame; welded) and/or ``subject`` in a posture.

    ``rotations`` gives each moving link's rotation relative to its parent's frame (the
    identity where absent). A link named in ``released`` turns on its joint with that joint
    damping (N m s/rad, or N s/m for a slide); every other link is welded to its parent at
    its posture (a body without a joint: MuJoCo's weld is exact, no stiff penalty).

    ``internal``: masses inside links (``link``, ``mass``, ``point`` their mean place in the
    link frame), each of a ``kind``:

    - ``"breath"`` (the default): on a slide joint along ``axis`` driven along a prescribed
      path by a position actuator (servo ``kp``, ``kv``): breathing's abdominal contents;
    - ``"wobble"``: on three slide joints along the link's axes (``internal{k}:x``, ``:y``,
      ``:z``) with ``stiffness`` (N/m) and ``damping`` (N s/m), no actuator: wobbling
      soft tissue;
    - ``"wall"``: a light body on a slide joint along ``axis`` driven like ``"breath"``,
      carrying the marker sites ``sites`` (name -> place in the link frame at the wall's
      mean place): the chest and abdominal wall's markers. Its weight is compensated
      (MuJoCo's ``gravcomp``) so its servo holds it on its path without a static lag.

    ``back``: the base link on a compliant mount (a person's back on the deck): three slide
    and three hinge joints along the platform's axes (``stiffness``: 6 values, N/m then
    N m/rad; ``damping`` likewise; hinges through ``pivot``, base link frame), their
    springs' rest set by the caller so the statics sit at the welded place.

    ``physics``: the rig's imperfections (:mod:`benchmarks.testbed.rigphysics`; the ideal
    rig when absent). Its bodies (frame, spring beads) follow the platform in the tree, so
    the platform's free joint stays the first joint.
    """
    physics = physics or rigphysics.RigPhysics()
    internal = internal or []
    rotations = rotations or {}
    released = released or {}
    g = _fmt(rig.gravity_lab_m_s2)
    plat = rig.platform
    parts = [f'<mujoco model="testbed"><compiler angle="radian" autolimits="true"/>'
             f'<option timestep="{timestep_s:.17g}" integrator="{integrator}" gravity="{g}">'
             f'<flag contact="disable" energy="enable"/></option>']
    if physics.progressive:
        parts.append('<size nuser_actuator="2"/>')
    parts.append("<worldbody>")
    if physics.frame_mass_kg <= 0:
        for s in rig.springs:
            parts.append(f'<site name="anchor:{s.name}" pos="{_fmt(s.anchor_lab_m)}"/>')
    parts.append(f'<body name="platform" pos="0 0 0"><freejoint name="platform"/>'
                 f'{_inertial(plat)}{_sites("rig", plat)}')
    for s in rig.springs:
        parts.append(f'<site name="attach:{s.name}" pos="{_fmt(s.attachment_platform_m)}"/>')
        if physics.segments > 1:
            parts.append(rigphysics.spring_end(physics, s.name, s.attachment_platform_m))
    for body, pos, rot in loads:
        parts.append(f'<body name="load:{body.name}" pos="{_fmt(pos)}" quat="{_quat(rot)}">'
                     f'{_inertial(body)}{_sites(body.name, body)}</body>')
    if subject is not None:
        children: dict[str, list[Link]] = {}
        for lk in subject.links:
            children.setdefault(lk.parent, []).append(lk)

        def emit(lk: Link, pos, rot) -> None:
            name = lk.body.name
            parts.append(f'<body name="{name}" pos="{_fmt(pos)}" quat="{_quat(rot)}">')
            if back is not None and lk.parent == "platform":
                r_t = np.asarray(rot, float).T           # platform axes in the link frame
                for i, ax in enumerate("xyz"):
                    parts.append(f'<joint name="back:{ax}" type="slide" axis="{_fmt(r_t[:, i])}" '
                                 f'stiffness="{back["stiffness"][i]:.17g}" '
                                 f'damping="{back["damping"][i]:.17g}"/>')
                for i, ax in enumerate("xyz"):
                    parts.append(f'<joint name="back:r{ax}" type="hinge" '
                                 f'pos="{_fmt(back["pivot"])}" axis="{_fmt(r_t[:, i])}" '
                                 f'stiffness="{back["stiffness"][3 + i]:.17g}" '
                                 f'damping="{back["damping"][3 + i]:.17g}"/>')
            if name in released:
                kind = {"spherical": "ball", "revolute": "hinge", "prismatic": "slide"}[lk.joint]
                axis = "" if kind == "ball" else f' axis="{_fmt(lk.axis)}"'
                parts.append(f'<joint name="{name}" type="{kind}"{axis} '
                             f'damping="{released[name]:.17g}"/>')
            parts.append(_inertial(lk.body) + _sites(subject.name, lk.body))
            for k, im in enumerate(internal):
                if im["link"] == name:
                    parts.append(_internal_body(k, im, subject.name))
            for ch in children.get(name, []):
                emit(ch, ch.joint_center_parent_m, rotations.get(ch.body.name, np.eye(3)))
            parts.append("</body>")

        for base in children["platform"]:
            emit(base, subject.base_position_platform_m, subject.base_rotation_platform)
    parts.append("</body>")
    if physics.frame_mass_kg > 0:
        parts.append(rigphysics.frame_body(physics, {s.name: s.anchor_lab_m
                                                     for s in rig.springs}))
    if physics.segments > 1:
        start = np.array([0.0, 0.0, 1.2])           # equilibrium()'s starting pose
        for s in rig.springs:
            parts.append(rigphysics.bead_bodies(physics, s.name, s.anchor_lab_m,
                                                start + s.attachment_platform_m))
    parts.append("</worldbody><tendon>")
    rig_acts = []
    for s in rig.springs:
        c = s.damping_n_s_m if spring_damping else 0.0
        tendons, acts = rigphysics.spring_tendons(physics, s.name, s.stiffness_n_m,
                                                  s.free_length_m, c)
        parts.append(tendons)
        rig_acts.append(acts)
    parts.append("</tendon>")
    driven = [(k, im) for k, im in enumerate(internal) if "path" in im]
    if driven or any(rig_acts):
        parts.append("<actuator>" + "".join(
            f'<position joint="internal{k}" kp="{im["kp"]:.17g}" kv="{im["kv"]:.17g}"/>'
            for k, im in driven) + "".join(rig_acts) + "</actuator>")
    parts.append("</mujoco>")
    return "".join(parts)
