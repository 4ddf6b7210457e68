"""Reading an OpenSim 4 model file (.osim): its bodies, joints and markers.

Read with xml.etree, not the ``opensim`` package: OpenSim's Python bindings are a large
binary that is not a rigtool dependency (it ships for a few Python versions only), the
model writers in rigtool.report already write .osim with xml.etree, and the personalised
model is the user's own file edited in place (rigtool.osim.personalise), which needs the
XML itself. The tests check what this reader finds against ``opensim.Model``.

What is read (OpenSim 4 document, ``<OpenSimDocument Version="4xxxx">``):

- ``<BodySet>``: per ``<Body>`` its ``<mass>``, ``<mass_center>`` (body frame) and
  ``<inertia>`` ``[Ixx Iyy Izz Ixy Ixz Iyz]`` about the mass centre in body axes;
- ``<JointSet>``: per joint its type, parent and child frames (a body, ground, or a
  ``PhysicalOffsetFrame`` with ``<translation>`` and ``<orientation>``, body-fixed x-y-z
  angles, on one), and a ``CustomJoint``'s ``<SpatialTransform>``: which of its axes turn
  and which translate, and by a constant or with a coordinate;
- ``<MarkerSet>``: per ``<Marker>`` its frame and ``<location>``.

Frames are resolved to their body (or ground) with the fixed transform from the frame to
the body: ``x_body = R x_frame + p``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.errors import InputError

#: the name OpenSim gives the model's ground frame
GROUND = "ground"

#: document versions read: OpenSim 4's (3.x files differ: OpenSim upgrades them on load)
_FIRST_VERSION = 40000


@dataclass(frozen=True)
class FrameRef:
    """A frame fixed on a body: ``body`` (or :data:`GROUND`) and the frame's pose in it
    (``x_body = rotation @ x_frame + position``)."""

    body: str
    rotation: np.ndarray
    position: np.ndarray


@dataclass(frozen=True)
class OsimBody:
    """One ``<Body>``: mass (kg), mass centre (body frame, m), inertia about it (body axes,
    kg m^2, a 3x3 tensor)."""

    name: str
    mass: float
    mass_center: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True)
class TransformAxis:
    """One axis of a ``CustomJoint``'s ``SpatialTransform``.

    ``rotation``: a rotation axis (else a translation); ``coordinates``: the coordinates it
    follows; ``function``: its function's element name (``Constant``, ``LinearFunction``,
    ...); ``constant``: the value when the function is a ``Constant``.
    """

    name: str
    rotation: bool
    axis: np.ndarray
    coordinates: tuple[str, ...]
    function: str
    constant: float | None

    @property
    def moves(self) -> bool:
        """True when the axis follows a coordinate (its value changes as the joint moves)."""
        return bool(self.coordinates) and self.function != "Constant"


@dataclass(frozen=True)
class OsimJoint:
    """One joint: its element name (``BallJoint``, ``CustomJoint``, ...), its parent and
    child frames, and a CustomJoint's transform axes (empty for the other types)."""

    name: str
    type: str
    parent: FrameRef
    child: FrameRef
    axes: tuple[TransformAxis, ...] = ()


@dataclass(frozen=True)
class OsimMarker:
    """One ``<Marker>``: its body and its place in the body frame (m)."""

    name: str
    body: str
    location: np.ndarray


@dataclass(frozen=True)
class OsimModel:
    """What rigtool reads of a .osim file."""

    path: Path
    name: str
    bodies: dict[str, OsimBody]
    joints: tuple[OsimJoint, ...]
    markers: tuple[OsimMarker, ...] = field(default_factory=tuple)


def orientation_matrix(angles: np.ndarray) -> np.ndarray:
    """OpenSim's ``orientation`` (body-fixed x-y-z angles, rad) as a rotation matrix
    ``Rx Ry Rz`` (the inverse of rigtool.report.export_osim.euler_xyz)."""
    return Rotation.from_euler("XYZ", np.asarray(angles, float)).as_matrix()


def _floats(el: ET.Element | None, n: int, *, path: Path, what: str) -> np.ndarray:
    if el is None or el.text is None:
        raise InputError(f"{what}: expected {n} numbers, found none", path=path)
    try:
        out = np.array([float(t) for t in el.text.split()])
    except ValueError:
        raise InputError(f"{what}: expected {n} numbers", path=path,
                         found=el.text.strip()) from None
    if out.shape != (n,) or not np.all(np.isfinite(out)):
        raise InputError(f"{what}: expected {n} finite numbers", path=path,
                         found=el.text.strip())
    return out


def inertia_tensor(vec6: np.ndarray) -> np.ndarray:
    """The 3x3 tensor of OpenSim's ``[Ixx Iyy Izz Ixy Ixz Iyz]``."""
    xx, yy, zz, xy, xz, yz = np.asarray(vec6, float)
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def _last(path_text: str) -> str:
    """The component a socket path names: its last element (``/bodyset/femur_r``,
    ``../femur_r_offset``, ``femur_r`` -> the name)."""
    return path_text.strip().rstrip("/").split("/")[-1]


class _Frames:
    """Resolves socket paths to (body, pose in the body) through offset frames."""

    def __init__(self, root: ET.Element, bodies: set[str], path: Path) -> None:
        self.path = path
        self.bodies = bodies
        self.offsets: dict[str, ET.Element] = {}
        for el in root.iter("PhysicalOffsetFrame"):
            self.offsets.setdefault(el.get("name", ""), el)

    def resolve(self, ref: str, *, local: dict[str, ET.Element], what: str,
                depth: int = 0) -> FrameRef:
        name = _last(ref)
        if name == GROUND or name in self.bodies and name not in local:
            return FrameRef(name, np.eye(3), np.zeros(3))
        el = local.get(name, self.offsets.get(name))
        if el is None or depth > 20:
            raise InputError(f"{what}: frame '{ref.strip()}' is not a body, ground or an "
                             "offset frame of the model", path=self.path)
        parent = el.findtext("socket_parent")
        if parent is None:
            raise InputError(f"{what}: offset frame '{name}' names no socket_parent",
                             path=self.path)
        base = self.resolve(parent, local={}, what=what, depth=depth + 1)
        rot = orientation_matrix(_floats(el.find("orientation"), 3, path=self.path,
                                         what=f"{what}: frame '{name}' orientation")
                                 if el.find("orientation") is not None else np.zeros(3))
        pos = (_floats(el.find("translation"), 3, path=self.path,
                       what=f"{what}: frame '{name}' translation")
               if el.find("translation") is not None else np.zeros(3))
        return FrameRef(base.body, base.rotation @ rot, base.position + base.rotation @ pos)


def _axes(joint: ET.Element, *, path: Path, what: str) -> tuple[TransformAxis, ...]:
    st = joint.find("SpatialTransform")
    if st is None:
        return ()
    out = []
    for ta in st.findall("TransformAxis"):
        name = ta.get("name", "")
        coords = tuple((ta.findtext("coordinates") or "").split())
        func = next((c for c in ta if c.tag not in ("coordinates", "axis")), None)
        if func is not None and func.tag == "function":     # older spelling: <function><X/>
            func = next(iter(func), None)
        kind = "Constant" if func is None else func.tag
        const = None
        if kind == "Constant":
            text = func.findtext("value") if func is not None else None
            const = float(text) if text is not None else 0.0
        out.append(TransformAxis(name, name.startswith("rotation"),
                                 _floats(ta.find("axis"), 3, path=path,
                                         what=f"{what}: {name} axis"),
                                 coords, kind, const))
    return tuple(out)


def read_osim(path: str | Path) -> OsimModel:
    """Read an OpenSim 4 model file.

    Parameters
    ----------
    path : str or Path
        The .osim file.

    Returns
    -------
    OsimModel

    Raises
    ------
    InputError
        The file is missing, not XML, not an OpenSim 4 model, or a body, joint or marker
        is malformed (the message names the file and the element).
    """
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        raise InputError("the OpenSim model file does not exist", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the OpenSim model: {exc.strerror}", path=path) from None
    except ET.ParseError as exc:
        raise InputError(f"not an XML file ({exc})", path=path) from None
    if root.tag != "OpenSimDocument" or root.find("Model") is None:
        raise InputError("not an OpenSim model (expected <OpenSimDocument><Model>)", path=path)
    try:
        version = int(root.get("Version", "0"))
    except ValueError:
        version = 0
    if version < _FIRST_VERSION:
        raise InputError(f"an OpenSim document of version {root.get('Version')}; rigtool reads "
                         "OpenSim 4 models (open and save it in OpenSim 4, or "
                         "opensim.Model(path).print(new_path))", path=path)
    model = root.find("Model")
    bodies = {}
    for b in model.findall("./BodySet/objects/Body"):
        name = b.get("name", "")
        what = f"body '{name}'"
        mass_text = b.findtext("mass")
        try:
            mass = float(mass_text)
        except (TypeError, ValueError):
            raise InputError(f"{what}: expected a mass", path=path, found=mass_text) from None
        com = (_floats(b.find("mass_center"), 3, path=path, what=f"{what} mass_center")
               if b.find("mass_center") is not None else np.zeros(3))
        inertia = (inertia_tensor(_floats(b.find("inertia"), 6, path=path,
                                          what=f"{what} inertia"))
                   if b.find("inertia") is not None else np.zeros((3, 3)))
        bodies[name] = OsimBody(name, mass, com, inertia)
    if not bodies:
        raise InputError("the model has no bodies (<BodySet><objects><Body>)", path=path)
    frames = _Frames(model, set(bodies), path)
    joints = []
    for j in model.findall("./JointSet/objects/*"):
        name = j.get("name", "")
        what = f"joint '{name}' ({j.tag})"
        local = {f.get("name", ""): f for f in j.findall("./frames/PhysicalOffsetFrame")}
        sockets = [j.findtext(s) for s in ("socket_parent_frame", "socket_child_frame")]
        if None in sockets:
            raise InputError(f"{what}: expected socket_parent_frame and socket_child_frame",
                             path=path)
        parent = frames.resolve(sockets[0], local=local, what=what)
        child = frames.resolve(sockets[1], local=local, what=what)
        joints.append(OsimJoint(name, j.tag, parent, child, _axes(j, path=path, what=what)))
    markers = []
    for m in model.findall("./MarkerSet/objects/Marker"):
        name = m.get("name", "")
        what = f"marker '{name}'"
        frame = frames.resolve(m.findtext("socket_parent_frame") or "", local={}, what=what)
        loc = _floats(m.find("location"), 3, path=path, what=f"{what} location")
        markers.append(OsimMarker(name, frame.body, frame.rotation @ loc + frame.position))
    return OsimModel(path, model.get("name", path.stem), bodies, tuple(joints), tuple(markers))


__all__ = ["GROUND", "FrameRef", "OsimBody", "TransformAxis", "OsimJoint", "OsimMarker",
           "OsimModel", "orientation_matrix", "inertia_tensor", "read_osim"]
