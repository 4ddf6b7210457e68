"""One description of the measured object as a multibody model, shared by the model writers.

The MJCF (:mod:`rigtool.report.export_mjcf`), OpenSim (:mod:`rigtool.report.export_osim`) and
URDF (:mod:`rigtool.report.export_urdf`) writers all read a :class:`ModelDescription`: links
in tree order (base first) with their inertials, one joint per non-base link, how the base is
mounted, gravity, and where every number came from. It is built from a report.json
(:func:`model_from_report`), so a results directory can be re-exported without re-running
the fits, or directly (tests, robots).

Conventions
-----------
- SI units (kg, m, kg m^2, rad); inertia tensors in tensor form (``I_xy = -∫ x y dm``).
- Link frames as in :mod:`rigtool.tree`: a non-base link's origin is its joint centre.
- A joint's frame sits in the parent at ``position_parent_m`` with axes ``rotation_parent``
  (joint-frame axes -> parent axes). At the joint's zero position the child's link frame is
  the joint frame; rigtool's spherical joints have ``rotation_parent`` = identity (the zero
  posture puts every link's axes along its parent's).
- ``axis`` (revolute, prismatic): a unit vector in the joint frame (= child frame at zero).
- Per link: ``mass_kg``, ``com_m`` (link frame) and ``inertia_com`` (about the COM, link
  axes): what every target format wants.
- ``base`` is ``"free"`` (six degrees of freedom) or ``"fixed"`` (welded to the world); the
  base link's frame coincides with the world frame at the zero position, and gravity is given
  in that frame (the rig file's lab gravity).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from rigtool.errors import InputError

#: Joint types the writers know. ``spherical``: 3 rotations about the joint centre;
#: ``revolute``: one rotation about ``axis``; ``prismatic``: one translation along ``axis``;
#: ``fixed``: none.
JOINT_TYPES: tuple[str, ...] = ("spherical", "revolute", "prismatic", "fixed")
BASE_MOUNTS: tuple[str, ...] = ("free", "fixed")

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class ModelJoint:
    """The joint between a link and its parent.

    Attributes
    ----------
    type : str
        One of :data:`JOINT_TYPES`.
    position_parent_m : ndarray (3,)
        Joint centre in the parent's frame, m.
    rotation_parent : ndarray (3, 3)
        Joint-frame axes in the parent's axes (identity for rigtool's spherical joints).
    axis : ndarray (3,) or None
        Unit axis in the joint frame (revolute, prismatic); None otherwise.
    limits : tuple of float or None
        ``(lower, upper)`` in rad (m for prismatic); None: unlimited.
    source : str
        Where the joint centre came from (the manifest, or estimated from a capture).
    """

    type: str
    position_parent_m: np.ndarray
    rotation_parent: np.ndarray = field(default_factory=lambda: np.eye(3))
    axis: np.ndarray | None = None
    limits: tuple[float, float] | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.type not in JOINT_TYPES:
            raise InputError(f"joint type '{self.type}' is not one of {', '.join(JOINT_TYPES)}",
                             field="joint")
        if self.type in ("revolute", "prismatic"):
            if self.axis is None or not np.isclose(np.linalg.norm(self.axis), 1.0, atol=1e-12):
                raise InputError(f"a {self.type} joint needs a unit axis", field="axis",
                                 found=self.axis)


@dataclass(frozen=True)
class ModelLink:
    """One body of the model.

    Attributes
    ----------
    name : str
        Name in the model files (letters, digits, ``_ . -``; see :func:`safe_names`).
    label : str
        The link's name in the manifest (may differ from ``name``).
    parent : str or None
        Parent link's ``name`` (None for the base link).
    joint : ModelJoint or None
        Joint to the parent (None for the base link).
    mass_kg : float
    com_m : ndarray (3,)
        Centre of mass in the link frame, m.
    inertia_com : ndarray (3, 3)
        Inertia about the COM in link axes, kg m^2.
    source : str
        One line: which quantities were measured and which came from the prior.
    """

    name: str
    label: str
    parent: str | None
    joint: ModelJoint | None
    mass_kg: float
    com_m: np.ndarray
    inertia_com: np.ndarray
    source: str = ""


@dataclass(frozen=True)
class ModelDescription:
    """The measured object as a tree of rigid bodies.

    Attributes
    ----------
    name : str
        Model name (the session's).
    links : tuple of ModelLink
        Tree order: the base first, every parent before its children.
    base : str
        ``"free"`` or ``"fixed"`` (:data:`BASE_MOUNTS`).
    gravity_m_s2 : ndarray (3,)
        Gravity in the world frame, m/s^2.
    provenance : list of str
        Lines for the files' header comment: rigtool version, inputs and their sha256, what
        was measured and what came from the prior.
    """

    name: str
    links: tuple[ModelLink, ...]
    base: str = "free"
    gravity_m_s2: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.80665]))
    provenance: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.base not in BASE_MOUNTS:
            raise InputError(f"the model's base must be one of {', '.join(BASE_MOUNTS)}",
                             field="base", found=self.base)
        if not self.links or self.links[0].parent is not None:
            raise InputError("a model needs its base link first (no parent)", field="links")
        seen: set[str] = set()
        for link in self.links:
            if link.name in seen:
                raise InputError(f"link name '{link.name}' is used twice", field="links")
            if link.parent is not None and link.parent not in seen:
                raise InputError(f"parent '{link.parent}' of '{link.name}' must come before "
                                 "it", field="links")
            if (link.parent is None) != (link.joint is None):
                raise InputError(f"link '{link.name}': a joint exactly when it has a parent",
                                 field="links")
            seen.add(link.name)

    def children(self, name: str) -> list[ModelLink]:
        """Direct children of link ``name``, in tree order."""
        return [l for l in self.links if l.parent == name]

    def with_base(self, base: str) -> "ModelDescription":
        """The same model mounted ``"free"`` or ``"fixed"``."""
        return ModelDescription(self.name, self.links, base, self.gravity_m_s2, self.provenance)


def safe_names(labels: list[str], *, reserved: tuple[str, ...] = ("world", "ground")
               ) -> dict[str, str]:
    """Model-file names for link labels: characters other than letters, digits, ``_ . -``
    become ``_`` (OpenSim component paths and URDF/MJCF references stay unambiguous),
    a leading digit gets a ``_`` prefix, and clashes (with each other or with the formats'
    ``reserved`` names of the world) get a numeric suffix."""
    out: dict[str, str] = {}
    used: set[str] = set(reserved)
    for label in labels:
        base = _SAFE.sub("_", label) or "link"
        if base[0].isdigit():
            base = "_" + base
        name, k = base, 2
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        out[label] = name
    return out


def equivalent_ellipsoid(mass_kg: float, inertia_com: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Semi-axes and orientation of the uniform solid ellipsoid of the same inertia.

    A uniform ellipsoid of semi-axes ``a, b, c`` has principal moments ``m (b^2 + c^2) / 5``,
    ``m (a^2 + c^2) / 5``, ``m (a^2 + b^2) / 5``; inverted: ``a^2 = 5 (I_2 + I_3 - I_1) /
    (2 m)`` and its cyclic permutations. A body on the triangle inequality's edge (a flat
    plate) gets a semi-axis of 0, kept at 1e-4 of the largest so viewers draw it.

    Returns
    -------
    semi_axes_m : ndarray (3,)
    rotation : ndarray (3, 3)
        Principal axes as columns (link axes), a proper rotation.
    """
    moments, rotation = np.linalg.eigh(np.asarray(inertia_com, float))
    if np.linalg.det(rotation) < 0:
        rotation[:, 2] *= -1
    sq = 2.5 / mass_kg * (moments.sum() - 2 * moments)
    semi = np.sqrt(np.clip(sq, 0.0, None))
    semi = np.maximum(semi, 1e-4 * max(semi.max(), 1e-6))
    return semi, rotation


def quaternion_wxyz(rotation: np.ndarray) -> np.ndarray:
    """Unit quaternion ``[w, x, y, z]`` of a rotation matrix (scipy's, reordered)."""
    from scipy.spatial.transform import Rotation
    x, y, z, w = Rotation.from_matrix(rotation).as_quat()
    return np.array([w, x, y, z])


_SOURCE_WORDS = {"measured": "measured", "prior": "from the prior",
                 "both": "measured and prior"}


def source_line(seg: dict) -> str:
    """``mass: measured; COM: measured and prior; inertia: mixed (...)`` from the segment's
    source flags (rigtool.identify.segments.fit), and its prior."""
    src = seg.get("source", {})

    def word(flags) -> str:
        flat = set(np.ravel(flags).tolist()) if flags is not None else set()
        if not flat:
            return "?"
        if len(flat) == 1:
            return _SOURCE_WORDS.get(next(iter(flat)), str(next(iter(flat))))
        return "mixed (" + ", ".join(_SOURCE_WORDS.get(f, f) for f in sorted(flat)) + ")"

    line = (f"mass: {word(src.get('mass'))}; COM: {word(src.get('com'))}; inertia: "
            f"{word(src.get('inertia_com'))}")
    if seg.get("prior"):
        line += f"; prior: {seg['prior']}"
    return line


def model_from_report(doc: dict, *, base: str = "free") -> ModelDescription:
    """The model of a report.json: the tree of ``summary.links``, the inertials of
    ``segments.links``, gravity from ``rig.gravity``.

    Parameters
    ----------
    doc : dict
        A report.json's content with a ``segments`` block.
    base : str
        ``"free"`` or ``"fixed"``.

    Returns
    -------
    ModelDescription

    Raises
    ------
    InputError
        When the report holds no per-link parameters (``segments`` not run).
    """
    if "segments" not in doc:
        raise InputError("the report holds no per-link parameters (the segments stage did "
                         "not run), so there is no model to export", field="segments")
    tree = doc["summary"]["links"]
    segs = doc["segments"]["links"]
    names = safe_names([l["name"] for l in tree])
    estimated = doc.get("joint_centres", {})
    links = []
    for l in tree:
        seg = segs[l["name"]]
        joint = None
        if l["parent"] != "platform":
            how = ("estimated from the relative-motion capture (" + estimated[l["name"]]
                   .get("method", "") + ")" if l["name"] in estimated else "from the manifest")
            joint = ModelJoint(l.get("joint", "spherical"), np.asarray(l["joint_center"], float),
                               source=f"joint centre {how}")
        links.append(ModelLink(names[l["name"]], l["name"],
                               None if l["parent"] == "platform" else names[l["parent"]],
                               joint, float(seg["mass"]), np.asarray(seg["com"], float),
                               np.asarray(seg["inertia_com"], float), source_line(seg)))
    gravity = doc.get("rig", {}).get("gravity") or [0.0, 0.0, -9.80665]
    prov = [f"written by rigtool {doc.get('rigtool_version', '?')} from the results of session "
            f"'{doc.get('session', '?')}'",
            "per link: mass (kg), COM in the link frame (m), inertia about the COM in link axes "
            "(kg m^2), identified from the platform's free vibration (minimal parameters) and "
            "split between links with a prior where the measurement is silent; each link says "
            "which quantities were measured, which came from the prior and which from both",
            "link frames: origin at the joint centre (the base link: its marker frame); joints "
            "at the joint centres in the parent's frame",
            "inputs (sha256):"] + [f"  {i['path']}  {i['sha256']}" for i in doc.get("inputs", [])]
    return ModelDescription(str(doc.get("session", "rigtool")), tuple(links), base,
                            np.asarray(gravity, float), tuple(prov))


__all__ = ["JOINT_TYPES", "BASE_MOUNTS", "ModelJoint", "ModelLink", "ModelDescription",
           "safe_names", "equivalent_ellipsoid", "quaternion_wxyz", "model_from_report",
           "source_line"]
