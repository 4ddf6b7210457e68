"""The declared schema of every file a user writes: which tables and keys each may hold.

One :class:`Table` per file (:data:`SESSION`, :data:`RIG`, :data:`POSTURES`, :data:`CAMERA`,
:data:`TAGS`) names every key with its kind, a one-line meaning and its default. The loaders
(``rigtool.config.session_file`` and the others) call :func:`check_keys` before they read any
value, so a misspelt or unknown key is an error naming the file, the table, the key and the
closest valid key, never a result computed without it. The reference pages of the
documentation are generated from the same declarations (:func:`reference_markdown`), so the
documentation and the checks cannot drift apart.

Written here rather than as JSON Schema validated by ``jsonschema``: that library's message
for an unknown key ("Additional properties are not allowed") names neither the closest valid
key nor the table as the user wrote it (``postures[2].window``), and the values' own checks
(shapes, physically possible inertia tensors, paths) need the physics the loaders hold. The
declarations are exported as JSON Schema (:func:`json_schema`) for editors that validate
TOML as the user types (Taplo, Even Better TOML).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

from rigtool.errors import ConfigError

#: the choices of the manifest's model keys, declared once: the reader
#: (rigtool.config.session_file) checks a value against these same tuples
#: how the posture fits treat the base link's motion on the platform ([session] support)
SUPPORT_MODELS = ("auto", "measured", "rigid")
#: the body's wobbling soft tissue ([session] soft_tissue)
SOFT_TISSUE_MODELS = ("auto", "measured", "rigid")
#: the posture fit's standard-error models (rigtool.identify.posture.cluster_covariance):
#: "independent": ``s^2 H^-1``; "frame": the sandwich clustered by frames; "serial": robust
#: to the residual's correlation over frames; "auto": "frame" when the markers' covariance
#: comes from a camera's pose fits, else "serial" when the residual shows that correlation,
#: else "independent"
POSTURE_STANDARD_ERRORS = ("auto", "independent", "frame", "serial")
#: the relative-motion capture's models ([relative_motion] motion)
RELATIVE_MOTION_MODELS = ("auto", "passive", "active")

#: the kinds of value a key may hold, as the reference pages name them
KINDS = ("string", "number", "integer", "boolean", "array", "table", "tables", "map", "record",
         "any")


@dataclass(frozen=True)
class Key:
    """One key of a table.

    Parameters
    ----------
    name : str
        The key as written in the file.
    kind : str
        One of :data:`KINDS`: ``"table"`` holds a :class:`Table` (``[name]``), ``"tables"``
        an array of them (``[[name]]``), ``"map"`` a table of user-chosen names (marker
        names, joint names) whose values are all of ``value_kind``; ``"record"`` is a table
        written by rigtool whose inner keys it checks itself; ``"any"`` takes values of
        more than one kind (the loader checks which).
    doc : str
        What the key means, with its units.
    required : bool
        Whether the key must be present.
    default : str, optional
        The default as the reference shows it (text; None when there is none).
    choices : tuple of str
        The values a string key accepts (empty: any).
    table : Table, optional
        The inner table of a ``"table"`` or ``"tables"`` key.
    value_kind : str
        The kind of each value of a ``"map"``.
    """

    name: str
    kind: str
    doc: str
    required: bool = False
    default: str | None = None
    choices: tuple[str, ...] = ()
    table: "Table | None" = None
    value_kind: str = "array"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r} of key {self.name!r}")
        if (self.kind in ("table", "tables")) != (self.table is not None):
            raise ValueError(f"key {self.name!r}: a table or tables key needs its Table")


@dataclass(frozen=True)
class Table:
    """A table's declared keys (and what the table is for)."""

    doc: str
    keys: tuple[Key, ...] = field(default_factory=tuple)

    def names(self) -> list[str]:
        """The key names in declaration order."""
        return [k.name for k in self.keys]

    def key(self, name: str) -> Key | None:
        """The declared key ``name``, or None."""
        return next((k for k in self.keys if k.name == name), None)


def closest_key(name: str, valid: list[str]) -> str | None:
    """The valid key most like ``name`` (difflib's ratio >= 0.6), or None."""
    lowered = {v.lower(): v for v in valid}
    hit = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[hit[0]] if hit else None


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def check_keys(raw: dict, schema: Table, *, path: str | PathLike | None,
               what: str = "file") -> None:
    """Raise :class:`ConfigError` at the first key that ``schema`` does not declare.

    Parameters
    ----------
    raw : dict
        The parsed TOML document (or a table of it).
    schema : Table
        Its declaration.
    path : path-like, optional
        The file, named in the message.
    what : str
        What the document is ("session manifest", "rig file", ...), for the message.

    Raises
    ------
    ConfigError
        Naming the file, the table and the key (``postures[1].windw``), the closest valid
        key ("did you mean 'window'?") and the keys the table accepts. A declared table
        that holds something else than a table is an error too (``filter = 3``).
    """
    _check_table(raw, schema, prefix="", path=path, what=what)


def _check_table(raw: Any, schema: Table, *, prefix: str, path, what: str) -> None:
    if not isinstance(raw, dict):
        raise ConfigError("expected a table", path=path, field=prefix or None, found=raw)
    valid = schema.names()
    for name, value in raw.items():
        key = schema.key(name)
        if key is None:
            where = f"table [{prefix}]" if prefix else f"the {what}'s top level"
            guess = closest_key(name, valid)
            hint = f"did you mean '{guess}'? " if guess else ""
            raise ConfigError(f"unknown key '{name}' in {where}; {hint}expected one of: "
                              f"{', '.join(valid)}", path=path, field=_join(prefix, name))
        here = _join(prefix, name)
        if key.kind == "table":
            _check_table(value, key.table, prefix=here, path=path, what=what)
        elif key.kind == "tables":
            if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
                raise ConfigError(f"expected [[{here}]] tables", path=path, field=here,
                                  found=value)
            for i, item in enumerate(value):
                _check_table(item, key.table, prefix=f"{here}[{i}]", path=path, what=what)
        elif key.kind in ("map", "record") and not isinstance(value, dict):
            raise ConfigError("expected a table", path=path, field=here, found=value)


# --------------------------------------------------------------------------- shared pieces

_WINDOW = Key("window", "array", "[start, end] of the capture to fit, s; an end within one "
              "frame period after the capture's last frame means its end", default="the whole "
              "capture")
_UNITS = Key("units", "string", "length unit of the capture's coordinates when the file does "
             "not say", choices=("mm", "cm", "m", "in"), default="from the file")
_MARKERS = Key("markers", "map", "marker name -> [x, y, z] in this body's frame, m",
               value_kind="array")
_INERTIAL = (
    Key("mass", "number", "mass, kg"),
    Key("com", "array", "centre of mass [x, y, z] in the body frame, m"),
    Key("inertia_com", "array", "3x3 inertia tensor about the centre of mass, body axes, "
        "kg m^2"),
)

# --------------------------------------------------------------------------- session manifest

_FRAME = Table("a link frame built from a static capture instead of marker coordinates", (
    Key("static_capture", "string", "the static capture (path relative to the manifest)",
        required=True),
    Key("origin", "any", '"joint_center", a marker name, or a list of markers (their '
        "midpoint)", required=True),
    Key("x_axis", "array", "[from_marker, to_marker]: the x axis", required=True),
    Key("xy_plane", "string", "a marker in the x-y plane (y towards it)", required=True),
    Key("markers", "array", "the markers of this link (names); default: those the frame "
        "names"),
))

_PRIOR = Table("CAD values of a link's parameters and their uncertainties (the prior where "
               "the measurement is silent)", _INERTIAL + (
    Key("mass_std", "number", "standard uncertainty of the mass, kg"),
    Key("com_std", "number", "standard uncertainty of each COM coordinate, m"),
    Key("inertia_rel_std", "number", "relative standard uncertainty of the inertia tensor"),
))

#: a link's place in the tree (the manifest's [[links]] and a postures file's)
_TREE_KEYS = (
    Key("name", "string", "the link's name", required=True),
    Key("parent", "string", '"platform" for the base link, else the parent link\'s name',
        required=True),
    Key("joint", "string", "the joint to the parent", choices=("spherical",),
        default="spherical"),
)

_LINK = Table("one link of the object's tree", _TREE_KEYS + (
    Key("joint_center", "array", "the joint centre in the parent's frame, m",
        default="estimated from the relative-motion capture"),
    _MARKERS,
    Key("breathing_markers", "array", "markers of this link that move with the breath (chest "
        "and abdominal wall; names from its markers): left out of the link's rigid pose, "
        "their motion on the link is the measured breath the posture fits take into account",
        default="none"),
    Key("frame", "table", "the link frame from a static capture", table=_FRAME),
    Key("segment", "string", "de Leva's (1996) segment whose table is the prior (e.g. "
        '"trunk", "upper_arm")'),
    Key("segment_start", "array", "the segment's proximal end in the link frame, m"),
    Key("segment_end", "array", "the segment's distal end in the link frame, m"),
    Key("prior", "table", "CAD values as the prior", table=_PRIOR),
))

_SUBJECT = Table("who lies on the rig", (
    Key("sex", "string", "selects de Leva's table", choices=("male", "female")),
))

_SESSION_T = Table("the session's name, rig and mass", (
    Key("name", "string", "the session's name", default="the manifest's folder name"),
    Key("rig", "string", "the calibrated rig file (path relative to the manifest)",
        required=True),
    Key("total_mass", "number", "the object's weighed mass, kg (or total_mass_from)"),
    Key("total_mass_from", "string", "a weigh.json written by `rigtool weigh`"),
    Key("total_mass_std", "number", "the scale's standard uncertainty, kg"),
    Key("subject", "table", "the subject (human segment priors)", table=_SUBJECT),
    Key("support", "string", "the base link's motion on the platform (a body on the soft "
        "tissue of its back): measured through by its markers when it is seen riding on "
        "it (auto), always (measured) or never (rigid)",
        choices=SUPPORT_MODELS, default="auto"),
    Key("soft_tissue", "string", "the body's wobbling soft tissue: one tissue element "
        "(mass, place, frequency) identified in every posture fit, whose numbers are then "
        "the body's mean mass distribution, when an element fitted at 6 Hz holds a mass "
        "of 3 standard errors and 2 % of the body in any posture (auto), always (measured) "
        "or never (rigid); a robot session takes auto (which sees no tissue) or rigid",
        choices=SOFT_TISSUE_MODELS, default="auto"),
))

_FILTER = Table("the zero-phase filter before differentiation (Homma and Yamaura's defaults)", (
    Key("method", "string", "forward-backward FIR or Butterworth",
        choices=("fir", "butterworth"), default="fir"),
    Key("order", "integer", "filter order", default="50 (fir), 4 (butterworth)"),
    Key("passband_hz", "number", "end of the pass band, Hz", default="5.0"),
    Key("stopband_hz", "number", "start of the stop band, Hz", default="10.0"),
))

_POSTURE = Table("one locked posture: the platform's free vibration with the joints still", (
    Key("name", "string", "the posture's name", default="posture<N>"),
    Key("capture", "string", "the capture (path relative to the manifest)", required=True),
    _WINDOW,
    _UNITS,
    Key("marker_covariance", "string", '"auto" (the side file `rigtool track` writes), '
        '"none" (isotropic), or a path', default="auto"),
    Key("standard_errors", "string", "the output-error fit's standard errors",
        choices=POSTURE_STANDARD_ERRORS, default="auto"),
    Key("cluster_frames", "integer", 'consecutive frames per cluster of "frame" standard '
        'errors (with "auto", when it takes them); an error beside "independent" or "serial"',
        default="1"),
    Key("joint_angles", "string", "a robot's joint-angle CSV for this capture (time_s and one "
        "column per moving URDF joint, rad or m; path relative to the manifest)"),
))

_RELATIVE = Table("a capture with links moving while the platform vibrates", (
    Key("capture", "string", "the capture (path relative to the manifest)", required=True),
    _WINDOW,
    _UNITS,
    Key("motion", "string", '"passive" (links swing freely), "active" (their measured motion '
        'is prescribed) or "auto"', choices=RELATIVE_MOTION_MODELS, default="auto"),
    Key("joint_angles", "string", "a robot's joint-angle CSV while its motors drive the joints"),
))

_ROBOT = Table("a robot described by its URDF (instead of [[links]])", (
    Key("urdf", "string", "the URDF (path relative to the manifest)", required=True),
    Key("base_link", "string", "the URDF link bolted to the platform", required=True),
    Key("fixed_joints", "map", "URDF joint -> value held for the whole session (rad, or m "
        "for prismatic): merged into its parent", value_kind="number"),
    Key("markers", "map", "URDF link -> its markers {name = [x, y, z]} in the link frame, m; "
        "the base link needs 3 or more", value_kind="table"),
))

_RIG_CHECK = Table("a check of the rig on the day: a short capture of reference bodies from "
                   "the rig file before the session, compared with the calibration", (
    Key("capture", "string", "the capture (path relative to the manifest)", required=True),
    Key("load", "array", "the rig file's reference bodies on the platform (names)",
        required=True),
    _WINDOW,
    _UNITS,
))

_OPENSIM = Table("a person described by an OpenSim model (instead of [[links]]): its bodies "
                 "and joints are the links, its MarkerSet their markers, its bodies' mass "
                 "properties the prior; `rigtool run` writes it back with the measured ones "
                 "(personalised.osim)", (
    Key("model", "string", "the OpenSim 4 model, .osim (path relative to the manifest); its "
        "joints: WeldJoint (fused), BallJoint, GimbalJoint, PinJoint, UniversalJoint, "
        "CustomJoint that only turns (the rotation joints taken as spherical); any joint to "
        "ground", required=True),
    Key("mass_rel_std", "number", "the prior's relative standard uncertainty of each body's "
        "mass", default="0.2"),
    Key("com_std", "number", "the prior's standard uncertainty of each COM coordinate, m",
        default="0.02"),
    Key("inertia_rel_std", "number", "the prior's relative standard uncertainty of each "
        "inertia tensor", default="0.3"),
))

#: the session manifest (SPEC "The session manifest")
SESSION = Table("the session manifest (captures/SESSION/session.toml)", (
    Key("session", "table", "the session", required=True, table=_SESSION_T),
    Key("filter", "table", "filter settings", table=_FILTER),
    Key("links", "tables", "the object's links, base link first (required unless [robot] "
        "or [opensim])", table=_LINK),
    Key("robot", "table", "a robot from its URDF (instead of [[links]])", table=_ROBOT),
    Key("opensim", "table", "a person from an OpenSim model (instead of [[links]])",
        table=_OPENSIM),
    Key("postures", "tables", "the locked postures", table=_POSTURE),
    Key("relative_motion", "table", "the relative-motion capture", table=_RELATIVE),
    Key("rig_checks", "tables", "reference-body captures of the day: whether the rig is "
        "still the one calibrated, and its force scale", table=_RIG_CHECK),
))

# --------------------------------------------------------------------------- rig file

_RIG_T = Table("the rig's name, gravity and locked degrees of freedom", (
    Key("name", "string", "the rig's name", default="the file's stem"),
    Key("gravity", "array", "gravity in the lab frame, m/s^2", default="[0, 0, -9.80665]"),
    Key("locked_dofs", "array", "platform degrees of freedom held by guides (names from "
        "x, y, z, rx, ry, rz)", default="[]"),
))

_PLATFORM = Table("the platform: its markers and (once calibrated) its inertial parameters",
                  (Key("markers", "map", "marker name -> [x, y, z] in the platform frame, m",
                       required=True),) + tuple(
                      Key(k.name, k.kind, k.doc + " (written by `rigtool calibrate`)")
                      for k in _INERTIAL))

_SPRING = Table("one spring: anchored in the lab, attached to the platform", (
    Key("name", "string", "the spring's name", default="S<N>"),
    Key("anchor", "array", "the fixed end in the lab frame, m", required=True),
    Key("attachment", "array", "the platform end in the platform frame, m", required=True),
    Key("stiffness", "number", "axial stiffness, N/m (written by `rigtool calibrate`)"),
    Key("free_length", "number", "unloaded length, m (written by `rigtool calibrate`)"),
    Key("damping", "number", "axial damping, N s/m", default="0"),
))

_MOUNT = Table("a reference body's fixed mounting pose", (
    Key("position", "array", "the body's origin in the platform frame, m", required=True),
    Key("rotation", "array", "3x3 rotation from body axes to platform axes", required=True),
))

_REFERENCE = Table("a body of known inertia that calibrates the rig", (
    Key("name", "string", "the body's name", required=True),
) + tuple(Key(k.name, k.kind, k.doc, required=True) for k in _INERTIAL) + (
    Key("markers", "map", "marker name -> [x, y, z] in the body's frame, m"),
    Key("mount", "table", "a fixed mounting pose instead of markers", table=_MOUNT),
))

_CALIBRATION_CAPTURE = Table("one capture of the platform with a known load", (
    Key("capture", "string", "the capture (path relative to the rig file)", required=True),
    Key("load", "array", "names of the reference bodies on the platform", default="[]"),
    _WINDOW,
    _UNITS,
    Key("holdout", "boolean", "identify this load as unknown and report its error",
        default="false"),
))

#: the rig file (SPEC "The rig file"), as written by a user or completed by calibrate
RIG = Table("the rig file (calibration/NAME.toml)", (
    Key("rig", "table", "the rig", required=True, table=_RIG_T),
    Key("platform", "table", "the platform", required=True, table=_PLATFORM),
    Key("springs", "tables", "the springs", required=True, table=_SPRING),
    Key("reference_bodies", "tables", "reference bodies of known inertia", table=_REFERENCE),
    Key("calibration_captures", "tables", "the calibration captures",
        table=_CALIBRATION_CAPTURE),
    Key("calibration", "record", "what `rigtool calibrate` measured (standard errors, "
        "covariance, lab frame, held-out errors); written by rigtool, not by hand"),
))

# --------------------------------------------------------------------------- postures file

_OVERALL_LINK = Table("one link of the tree", _TREE_KEYS + (
    Key("joint_center", "array", "the joint centre in the parent's frame, m (required "
        "for every link but the base)"),
))

#: a posture's overall properties, as a postures file gives them (a tree's or a robot's)
_OVERALL = (
    Key("name", "string", "the posture's name", default="posture<N>"),
    Key("com", "array", "centre of mass, m", required=True),
    Key("inertia_com", "array", "3x3 inertia tensor about the centre of mass, kg m^2",
        required=True),
    Key("com_std", "any", "standard errors of the COM, m (one number or three)"),
    Key("inertia_com_std", "any", "standard error of the inertia about the COM, kg m^2 (one "
        "number or a 3x3; report.json's name, so a posture of report.json can be copied)"),
    Key("inertia_std", "any", "the same as inertia_com_std (give one of the two)"),
)

_OVERALL_POSTURE = Table("one posture's overall properties, in the base link's frame",
                         _OVERALL + (
    Key("rotations", "map", "link name -> 3x3 rotation of the link in the base frame",
        value_kind="array"),
))

#: the postures file of ``rigtool subset`` (overall properties measured elsewhere)
POSTURES = Table("overall properties measured elsewhere (postures.toml)", (
    Key("total_mass", "number", "the object's mass, kg", required=True),
    Key("links", "tables", "the tree", required=True, table=_OVERALL_LINK),
    Key("postures", "tables", "the postures", required=True, table=_OVERALL_POSTURE),
))

# --------------------------------------------------------------------------- camera files

_CAMERA_T = Table("the camera's intrinsics (OpenCV's model)", (
    Key("matrix", "array", "[[fx, s, cx], [0, fy, cy], [0, 0, 1]], pixels", required=True),
    Key("distortion", "array", "4, 5, 8, 12 or 14 coefficients in OpenCV's order",
        required=True),
    Key("image_size", "array", "[width, height], pixels", required=True),
))

#: camera.toml (written by `rigtool camera calibrate`, or by hand)
CAMERA = Table("a camera's intrinsics (camera.toml)", (
    Key("camera", "table", "the intrinsics", required=True, table=_CAMERA_T),
    Key("calibration", "record", "what the intrinsic calibration measured; written by rigtool"),
))

_TAG = Table("one printed fiducial tag", (
    Key("id", "integer", "the tag's id in the dictionary", required=True),
    Key("body", "string", "the body it is glued to (platform, a link, or the lab body)",
        required=True),
    Key("edge_m", "number", "the printed black square's edge, m", required=True),
    Key("position", "array", "the tag's centre in the body frame, m", required=True),
    Key("rotation", "array", "3x3 rotation of the tag in the body frame", default="identity"),
    Key("euler_deg", "array", "the same as x-y-z Euler angles, degrees (instead of "
        "rotation)"),
))

#: tags.toml (the fiducial tags on the rig and the object)
TAGS = Table("the fiducial tags of a camera capture (tags.toml)", (
    Key("dictionary", "string", "OpenCV's ArUco/AprilTag dictionary (e.g. \"DICT_4X4_50\")",
        required=True),
    Key("lab", "string", '"camera", or the body that is fixed in the lab', default="camera"),
    Key("tags", "tables", "the tags", required=True, table=_TAG),
))

_ROBOT_POSTURES_ROBOT = Table("the robot of a postures file", (
    Key("urdf", "string", "the URDF (path relative to the postures file)", required=True),
    Key("base_link", "string", "the URDF link the postures' frame is attached to",
        required=True),
    Key("fixed_joints", "map", "URDF joint -> value held (rad, or m for prismatic)",
        value_kind="number"),
))

_ROBOT_POSTURE = Table("one posture's overall properties, in the base link's frame",
                       _OVERALL + (
    Key("joint_angles", "map", "URDF joint -> angle (rad, or m for prismatic) in this "
        "posture", required=True, value_kind="number"),
))

#: a robot's postures file of ``rigtool subset`` (base parameters from overall properties)
ROBOT_POSTURES = Table("a robot's overall properties measured elsewhere (postures.toml with "
                       "a [robot] table)", (
    Key("total_mass", "number", "the robot's mass, kg", required=True),
    Key("total_mass_std", "number", "the scale's standard uncertainty, kg"),
    Key("robot", "table", "the robot", required=True, table=_ROBOT_POSTURES_ROBOT),
    Key("postures", "tables", "the postures", required=True, table=_ROBOT_POSTURE),
))

#: every declared file: its name in the documentation -> its schema
FILES: dict[str, Table] = {"session manifest": SESSION, "rig file": RIG,
                           "postures file": POSTURES,
                           "robot postures file": ROBOT_POSTURES, "camera file": CAMERA,
                           "tags file": TAGS}


# --------------------------------------------------------------------------- exports

def every_key(schema: Table, prefix: str = "") -> list[tuple[str, Key]]:
    """Every declared key with its dotted path (``postures[].window``), depth first."""
    out = []
    for key in schema.keys:
        here = _join(prefix, key.name)
        out.append((here, key))
        if key.table is not None:
            inner = f"{here}[]" if key.kind == "tables" else here
            out.extend(every_key(key.table, inner))
    return out


_JSON_TYPES = {"string": "string", "number": "number", "integer": "integer",
               "boolean": "boolean", "array": "array", "map": "object", "record": "object",
               "any": None}


def json_schema(schema: Table, title: str | None = None) -> dict:
    """The declaration as a JSON Schema (draft 2020-12) document, for TOML-aware editors."""

    def table(t: Table) -> dict:
        props = {}
        for key in t.keys:
            if key.kind == "table":
                prop = table(key.table)
            elif key.kind == "tables":
                prop = {"type": "array", "items": table(key.table)}
            else:
                prop = {} if _JSON_TYPES[key.kind] is None else {"type": _JSON_TYPES[key.kind]}
            prop["description"] = key.doc
            if key.choices:
                prop["enum"] = list(key.choices)
            props[key.name] = prop
        out = {"type": "object", "description": t.doc, "properties": props,
               "additionalProperties": False}
        required = [k.name for k in t.keys if k.required]
        if required:
            out["required"] = required
        return out

    doc = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    if title:
        doc["title"] = title
    doc.update(table(schema))
    return doc


def _key_rows(t: Table, *, with_default: bool = True) -> list[str]:
    head = "| key | kind | required | default | meaning |" if with_default else \
        "| key | kind | required | meaning |"
    rows = [head, "|---|---|---|---|---|" if with_default else "|---|---|---|---|"]
    for k in t.keys:
        kind = k.kind + (f" of {k.value_kind}" if k.kind == "map" else "")
        meaning = k.doc + (" (one of: " + ", ".join(f"`{c}`" for c in k.choices) + ")"
                           if k.choices else "")
        cells = [f"`{k.name}`", kind, "yes" if k.required else ""]
        if with_default:
            cells.append(k.default or "")
        cells.append(meaning.replace("|", "/"))
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def reference_markdown(name: str, schema: Table) -> str:
    """A Markdown reference page of one file: each table with its keys, kinds, defaults.

    Headings name each table as TOML writes it (``[[links]]``, ``[links.prior]``).
    """
    lines = [f"# The {name}", "", schema.doc[0].upper() + schema.doc[1:] + ".", "",
             "## Top level", "",
             *_key_rows(schema, with_default=any(k.default for k in schema.keys)), ""]

    def nested(key: Key, dotted: str) -> None:
        heading = f"[[{dotted}]]" if key.kind == "tables" else f"[{dotted}]"
        t = key.table
        lines.extend([f"## `{heading}`", "", t.doc[0].upper() + t.doc[1:] + ".", "",
                      *_key_rows(t), ""])
        for k in t.keys:
            if k.table is not None:
                nested(k, f"{dotted}.{k.name}")

    for key in schema.keys:
        if key.table is not None:
            nested(key, key.name)
    return "\n".join(lines)


__all__ = ["KINDS", "Key", "Table", "closest_key", "check_keys", "SESSION", "RIG", "POSTURES",
           "ROBOT_POSTURES", "CAMERA", "TAGS", "FILES", "every_key", "json_schema", "reference_markdown"]
