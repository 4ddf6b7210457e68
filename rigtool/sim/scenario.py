"""Scenario files: the true rig, reference bodies, object and captures of a synthetic study.

A scenario (TOML, documented in ``scenarios/README.md``) holds everything the simulator
needs and everything a user would not know: true spring stiffness, free lengths, platform
and link inertias. :func:`load_scenario` validates it (every error a :class:`ConfigError`
naming the file and field) and returns plain dataclasses; ``session_writer`` turns them
into the files a user would have (rig file, manifest, captures) plus the truth.

Conventions: SI units (lengths m, angles rad unless a key says ``_deg``); rotations map
body axes to the parent's axes; a posture's ``0R_j`` maps link j axes to base-link axes;
``offset``/``velocity`` are ``[x, y, z, rx, ry, rz]`` (m, rad as a rotation vector / m/s,
rad/s, lab axes) applied to the static equilibrium.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.config import _link_prior, read_toml, rig_gravity_and_locks
from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams
from rigtool.mocap.markerdata import FORMATS
from rigtool.rig import Platform, Rig, Spring
from rigtool.sim.markers import Artefacts
from rigtool.tree import Link, Tree
from rigtool.validate import as_array, as_float, as_str, as_symmetric_inertia, require

#: File extension written for each capture format.
EXTENSIONS: dict[str, str] = {"vicon-csv": ".csv", "motive-csv": ".csv", "qualisys-tsv": ".tsv",
                              "c3d": ".c3d", "plain-csv": ".csv"}


@dataclass(frozen=True)
class CaptureSettings:
    """How one capture is simulated and written."""

    duration_s: float = 25.0
    rate_hz: float = 120.0
    offset: np.ndarray = field(default_factory=lambda: np.zeros(6))
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(6))
    noise_sigma_m: float = 1e-4
    format: str = "vicon-csv"
    window: tuple[float, float] | None = None
    artefacts: Artefacts = field(default_factory=Artefacts)


@dataclass(frozen=True)
class ReferenceBodySpec:
    """A reference body: true parameters (about its frame origin) and markers or a mount."""

    name: str
    mass: float
    com: np.ndarray
    inertia_com: np.ndarray
    markers: dict[str, np.ndarray]
    subject: str | None
    mount_rotation: np.ndarray | None = None
    mount_position: np.ndarray | None = None

    @property
    def params(self) -> InertialParams:
        """Standard parameters about the body origin."""
        return InertialParams.from_com(self.mass, self.com, self.inertia_com)


@dataclass(frozen=True)
class Placement:
    """A reference body on the platform: body axes -> platform axes, origin in platform frame."""

    body: str
    rotation_platform: np.ndarray
    position_platform_m: np.ndarray


@dataclass(frozen=True)
class CalibrationPlan:
    """One calibration capture: which reference bodies sit where."""

    name: str
    load: tuple[Placement, ...]
    holdout: bool
    settings: CaptureSettings


@dataclass(frozen=True)
class PosturePlan:
    """One locked-posture capture of the object."""

    name: str
    rotations: dict[str, np.ndarray]
    settings: CaptureSettings


@dataclass(frozen=True)
class RelativePlan:
    """The relative-motion capture: links released from a tilt while the platform vibrates."""

    name: str
    posture: str
    rotations: dict[str, np.ndarray]          # the rest posture (equilibrium is computed at it)
    start_rotations: dict[str, np.ndarray]    # 0R_j at release
    released: dict[str, np.ndarray]           # link -> tilt rotation vector (base axes, rad)
    joint_damping: float
    settings: CaptureSettings
    drive: dict = field(default_factory=dict)  # link -> JointServo (voluntary motion)


@dataclass(frozen=True)
class ObjectSpec:
    """The object: a tree of links with true parameters, and where its base sits."""

    session: str
    subject: str | None
    tree: Tree
    base_rotation_platform: np.ndarray
    base_position_platform_m: np.ndarray
    manifest_priors: dict = field(default_factory=dict)   # link -> prior keys for the manifest

    @property
    def total_mass(self) -> float:
        """Sum of the link masses, kg."""
        return float(sum(l.params.mass for l in self.tree.links))


@dataclass(frozen=True)
class Scenario:
    """A validated scenario file."""

    path: Path
    name: str
    seed: int
    rig: Rig                                   # true springs (stiffness, free length, damping)
    platform_params: InertialParams            # true, about the platform origin
    platform_subject: str | None
    reference_bodies: dict[str, ReferenceBodySpec]
    calibration: tuple[CalibrationPlan, ...]
    obj: ObjectSpec | None
    postures: tuple[PosturePlan, ...]
    relative: RelativePlan | None

    def with_format(self, fmt: str) -> "Scenario":
        """The same scenario with every capture written in ``fmt``."""
        def fix(plan):
            return replace(plan, settings=replace(plan.settings, format=fmt))
        return replace(self, calibration=tuple(fix(p) for p in self.calibration),
                       postures=tuple(fix(p) for p in self.postures),
                       relative=None if self.relative is None else fix(self.relative))


# --------------------------------------------------------------------------- helpers

def orthonormalise(matrix: np.ndarray) -> np.ndarray:
    """Nearest rotation matrix (SVD; printed tables round their entries)."""
    u, _, vt = np.linalg.svd(matrix)
    d = np.sign(np.linalg.det(u @ vt))
    return u @ np.diag([1.0, 1.0, d]) @ vt


def _rotation(table: dict, *, field: str, path: Path, default=None) -> np.ndarray | None:
    """A rotation from ``rotation`` (3x3), ``rotation_vector`` (rad) or ``euler_deg``."""
    keys = [k for k in ("rotation", "rotation_vector", "euler_deg") if k in table]
    if not keys:
        return default
    if len(keys) > 1:
        raise ConfigError(f"give one of rotation, rotation_vector or euler_deg (found "
                          f"{', '.join(keys)})", path=path, field=field)
    key = keys[0]
    return _rotation_value(key, table[key], table.get("euler_seq", "xyz"),
                           field=f"{field}.{key}", path=path)


def _rotation_value(kind: str, value, seq: str, *, field: str, path: Path) -> np.ndarray:
    if kind == "rotation":
        mat = as_array(value, (3, 3), field=field, path=path)
        if np.linalg.det(mat) <= 0.5 or not np.allclose(mat @ mat.T, np.eye(3), atol=0.02):
            raise ConfigError("expected a rotation matrix (orthonormal within rounding, "
                              "det +1)", path=path, field=field, found=value)
        return orthonormalise(mat)
    vec = as_array(value, (3,), field=field, path=path)
    if kind == "rotation_vector":
        return Rotation.from_rotvec(vec).as_matrix()
    if not (isinstance(seq, str) and len(seq) == 3 and set(seq.lower()) <= set("xyz")):
        raise ConfigError("expected a scipy Euler sequence such as \"xyz\" (extrinsic) or "
                          "\"XYZ\" (intrinsic)", path=path, field="euler_seq", found=seq)
    return Rotation.from_euler(seq, vec, degrees=True).as_matrix()


def _markers(value, *, field: str, path: Path) -> dict[str, np.ndarray]:
    if not isinstance(value, dict) or len(value) < 3:
        raise ConfigError("expected a table of at least 3 markers: name -> [x, y, z] (m)",
                          path=path, field=field, found=value)
    return {str(k): as_array(v, (3,), field=f"{field}.{k}", path=path) for k, v in value.items()}


def _params(t: dict, *, field: str, path: Path) -> tuple[float, np.ndarray, np.ndarray]:
    mass = as_float(require(t, "mass", field=field, path=path), field=f"{field}.mass",
                    path=path, positive=True)
    com = as_array(require(t, "com", field=field, path=path), (3,), field=f"{field}.com",
                   path=path)
    inertia = as_symmetric_inertia(require(t, "inertia_com", field=field, path=path),
                                   field=f"{field}.inertia_com", path=path)
    return mass, com, inertia


def _int_pair(t: dict, key: str, default, *, field: str, path: Path) -> tuple[int, int]:
    v = t.get(key, list(default))
    if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and x > 0 for x in v)
            and v[0] <= v[1]):
        raise ConfigError("expected [min, max] whole numbers of frames", path=path,
                          field=f"{field}.{key}", found=v)
    return int(v[0]), int(v[1])


def _artefacts(t: dict, base: Artefacts, *, field: str, path: Path) -> Artefacts:
    if not isinstance(t, dict):
        raise ConfigError("expected a table", path=path, field=field, found=t)
    kw = {}
    for key in ("short_gaps", "long_gaps", "dropouts", "swaps", "ghosts", "ghost_replacements"):
        if key in t:
            v = t[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError("expected a whole number >= 0", path=path,
                                  field=f"{field}.{key}", found=v)
            kw[key] = v
    for key in ("short_gap_frames", "long_gap_frames", "swap_frames", "ghost_frames"):
        if key in t:
            kw[key] = _int_pair(t, key, getattr(base, key), field=field, path=path)
    if "ghost_offset_mm" in t:
        kw["ghost_offset_m"] = 1e-3 * as_float(t["ghost_offset_mm"], path=path, positive=True,
                                               field=f"{field}.ghost_offset_mm")
    unknown = set(t) - set(Artefacts.__dataclass_fields__) - {"ghost_offset_mm"}
    if unknown:
        raise ConfigError(f"unknown artefact setting(s): {', '.join(sorted(unknown))}",
                          path=path, field=field)
    return replace(base, **kw)


def _settings(t: dict, base: CaptureSettings, *, field: str, path: Path) -> CaptureSettings:
    kw: dict = {}
    if "duration_s" in t:
        kw["duration_s"] = as_float(t["duration_s"], field=f"{field}.duration_s", path=path,
                                    positive=True)
    if "rate_hz" in t:
        kw["rate_hz"] = as_float(t["rate_hz"], field=f"{field}.rate_hz", path=path,
                                 positive=True)
    for key in ("offset", "velocity"):
        if key in t:
            kw[key] = as_array(t[key], (6,), field=f"{field}.{key}", path=path)
    if "noise_sigma_mm" in t:
        kw["noise_sigma_m"] = 1e-3 * as_float(t["noise_sigma_mm"], nonnegative=True,
                                              field=f"{field}.noise_sigma_mm", path=path)
    if "format" in t:
        kw["format"] = as_str(t["format"], field=f"{field}.format", path=path, choices=FORMATS)
    if "window" in t:
        w = as_array(t["window"], (2,), field=f"{field}.window", path=path)
        if not 0 <= w[0] < w[1]:
            raise ConfigError("expected [start, end] s with 0 <= start < end", path=path,
                              field=f"{field}.window", found=t["window"])
        kw["window"] = (float(w[0]), float(w[1]))
    if "artefacts" in t:
        kw["artefacts"] = _artefacts(t["artefacts"], base.artefacts,
                                     field=f"{field}.artefacts", path=path)
    out = replace(base, **kw)
    if out.window is not None and out.window[1] > out.duration_s + 1e-9:
        raise ConfigError(f"window ends after the capture ({out.duration_s} s)", path=path,
                          field=f"{field}.window", found=list(out.window))
    return out


def _subject(t: dict, default: str | None, *, field: str, path: Path) -> str | None:
    if "subject" not in t:
        return default
    s = as_str(t["subject"], field=f"{field}.subject", path=path)
    return s or None


# --------------------------------------------------------------------------- loader

def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file (see ``scenarios/README.md``)."""
    path = Path(path)
    raw = _read_with_extends(path)
    sc = raw.get("scenario", {})
    name = as_str(sc.get("name", path.stem), field="scenario.name", path=path)
    seed = sc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError("expected a whole number >= 0", path=path, field="scenario.seed",
                          found=seed)
    defaults = _settings(raw.get("capture", {}), CaptureSettings(), field="capture", path=path)

    # rig ------------------------------------------------------------------------
    rig_t = require(raw, "rig", field="rig", path=path)
    gravity, locked = rig_gravity_and_locks(rig_t, path=path)
    plat_t = require(raw, "platform", field="platform", path=path)
    pm, pc, pi = _params(plat_t, field="platform", path=path)
    p_markers = _markers(require(plat_t, "markers", field="platform", path=path),
                         field="platform.markers", path=path)
    springs = []
    springs_t = raw.get("springs")
    if not isinstance(springs_t, list) or not springs_t:
        raise ConfigError("expected at least one [[springs]] table", path=path, field="springs")
    for i, s in enumerate(springs_t):
        f = f"springs[{i}]"
        springs.append(Spring(
            as_str(s.get("name", f"S{i + 1}"), field=f"{f}.name", path=path),
            as_array(require(s, "anchor", field=f, path=path), (3,), field=f"{f}.anchor",
                     path=path),
            as_array(require(s, "attachment", field=f, path=path), (3,),
                     field=f"{f}.attachment", path=path),
            as_float(require(s, "stiffness", field=f, path=path), field=f"{f}.stiffness",
                     path=path, positive=True),
            as_float(require(s, "free_length", field=f, path=path), field=f"{f}.free_length",
                     path=path, positive=True),
            as_float(s.get("damping", 0.0), field=f"{f}.damping", path=path, nonnegative=True)))
    if len({s.name for s in springs}) != len(springs):
        raise ConfigError("spring names must be unique", path=path, field="springs")
    rig = Rig(as_str(rig_t.get("name", name), field="rig.name", path=path),
              Platform(p_markers, None), tuple(springs), gravity, tuple(locked))
    platform_subject = _subject(plat_t, "rig", field="platform", path=path)

    # reference bodies and calibration captures -----------------------------------------
    bodies: dict[str, ReferenceBodySpec] = {}
    for i, b in enumerate(raw.get("reference_bodies", [])):
        f = f"reference_bodies[{i}]"
        bname = as_str(require(b, "name", field=f, path=path), field=f"{f}.name", path=path)
        if bname in bodies:
            raise ConfigError(f"reference body '{bname}' is defined twice", path=path, field=f)
        mass, com, inertia = _params(b, field=f, path=path)
        mount_r = mount_p = None
        markers: dict[str, np.ndarray] = {}
        if "mount" in b:
            mt = b["mount"]
            mount_r = _rotation(mt, field=f"{f}.mount", path=path, default=np.eye(3))
            mount_p = as_array(require(mt, "position", field=f"{f}.mount", path=path), (3,),
                               field=f"{f}.mount.position", path=path)
        elif "markers" in b:
            markers = _markers(b["markers"], field=f"{f}.markers", path=path)
        else:
            raise ConfigError("give markers (posed by motion capture) or a fixed mount",
                              path=path, field=f)
        bodies[bname] = ReferenceBodySpec(bname, mass, com, inertia, markers,
                                          _subject(b, bname, field=f, path=path), mount_r, mount_p)

    calibration = []
    cal_names: set[str] = set()
    for i, c in enumerate(raw.get("calibration_captures", [])):
        f = f"calibration_captures[{i}]"
        cname = as_str(require(c, "name", field=f, path=path), field=f"{f}.name", path=path)
        if cname in cal_names:
            raise ConfigError(f"capture name '{cname}' is used twice", path=path, field=f)
        cal_names.add(cname)
        load_t = c.get("load", [])
        if not isinstance(load_t, list):
            raise ConfigError("expected a list of placements { body = ..., position = [...] }",
                              path=path, field=f"{f}.load", found=load_t)
        placements = []
        for j, pl in enumerate(load_t):
            fj = f"{f}.load[{j}]"
            if isinstance(pl, str):
                pl = {"body": pl}
            bname = as_str(require(pl, "body", field=fj, path=path), field=f"{fj}.body",
                           path=path)
            if bname not in bodies:
                raise ConfigError(f"unknown reference body '{bname}' (defined: "
                                  f"{', '.join(bodies) or 'none'})", path=path, field=f"{fj}.body")
            body = bodies[bname]
            if body.mount_rotation is not None:
                if "position" in pl or _rotation(pl, field=fj, path=path) is not None:
                    raise ConfigError(f"'{bname}' has a fixed mount; give only its name",
                                      path=path, field=fj)
                placements.append(Placement(bname, body.mount_rotation, body.mount_position))
            else:
                placements.append(Placement(
                    bname, _rotation(pl, field=fj, path=path, default=np.eye(3)),
                    as_array(require(pl, "position", field=fj, path=path), (3,),
                             field=f"{fj}.position", path=path)))
        if len({p.body for p in placements}) != len(placements):
            raise ConfigError("a reference body can be on the platform only once per capture",
                              path=path, field=f"{f}.load")
        holdout = c.get("holdout", False)
        if not isinstance(holdout, bool):
            raise ConfigError("expected true or false", path=path, field=f"{f}.holdout")
        calibration.append(CalibrationPlan(cname, tuple(placements), holdout,
                                           _settings(c, defaults, field=f, path=path)))

    # object --------------------------------------------------------------------------
    obj = None
    postures: list[PosturePlan] = []
    relative = None
    if "object" in raw:
        obj = _object(raw["object"], path=path)
        for i, pt in enumerate(raw.get("postures", [])):
            f = f"postures[{i}]"
            pname = as_str(require(pt, "name", field=f, path=path), field=f"{f}.name",
                           path=path)
            postures.append(PosturePlan(pname, _posture_rotations(pt, obj.tree, field=f,
                                                                  path=path),
                                        _settings(pt, defaults, field=f, path=path)))
        if len({p.name for p in postures}) != len(postures):
            raise ConfigError("posture names must be unique", path=path, field="postures")
        if "relative_motion" in raw:
            relative = _relative(raw["relative_motion"], obj.tree, postures, defaults, path=path)

    _check_marker_names(rig, platform_subject, bodies, obj, path=path)
    return Scenario(path, name, seed, rig, InertialParams.from_com(pm, pc, pi), platform_subject,
                    bodies, tuple(calibration), obj, tuple(postures), relative)


def _read_with_extends(path: Path, _seen: tuple[Path, ...] = ()) -> dict:
    """Read a scenario; ``scenario.extends = "other.toml"`` takes every top-level table the
    file does not define from the other one (``[scenario]``, ``[capture]`` and
    ``[capture.artefacts]`` are merged key by key, this file winning)."""
    raw = read_toml(path)
    base_name = raw.get("scenario", {}).get("extends")
    if base_name is None:
        return raw
    base_name = as_str(base_name, field="scenario.extends", path=path)
    base_path = (path.parent / base_name).resolve()
    if base_path in _seen or base_path == path.resolve():
        raise ConfigError("scenario files extend each other in a loop", path=path,
                          field="scenario.extends", found=base_name)
    base = _read_with_extends(base_path, _seen + (path.resolve(),))
    merged = {**base, **raw}
    for key in ("scenario", "capture"):
        merged[key] = {**base.get(key, {}), **raw.get(key, {})}
    arts = {**base.get("capture", {}).get("artefacts", {}),
            **raw.get("capture", {}).get("artefacts", {})}
    if arts:
        merged["capture"]["artefacts"] = arts
    merged["scenario"].pop("extends", None)
    if "name" not in raw.get("scenario", {}):
        merged["scenario"]["name"] = path.stem
    return merged


def _object(t: dict, *, path: Path) -> ObjectSpec:
    session = as_str(t.get("session", "session"), field="object.session", path=path)
    subject = _subject(t, "object", field="object", path=path)
    base_r = _rotation(t.get("base", {}), field="object.base", path=path, default=np.eye(3))
    base_p = as_array(t.get("base", {}).get("position", [0.0, 0.0, 0.0]), (3,),
                      field="object.base.position", path=path)
    links_t = t.get("links")
    if not isinstance(links_t, list) or not links_t:
        raise ConfigError("expected at least one [[object.links]] table", path=path,
                          field="object.links")
    links, priors = [], {}
    for i, lt in enumerate(links_t):
        f = f"object.links[{i}]"
        lname = as_str(require(lt, "name", field=f, path=path), field=f"{f}.name", path=path)
        parent = as_str(require(lt, "parent", field=f, path=path), field=f"{f}.parent",
                        path=path)
        jc = None
        if parent != "platform":
            jc = as_array(require(lt, "joint_center", field=f, path=path), (3,),
                          field=f"{f}.joint_center", path=path)
        mass, com, inertia = _params(lt, field=f, path=path)
        links.append(Link(lname, parent, jc, InertialParams.from_com(mass, com, inertia),
                          _markers(require(lt, "markers", field=f, path=path),
                                   field=f"{f}.markers", path=path)))
        # What the manifest will say the link is near (CAD values or a table segment):
        # validated as the manifest loader does, copied to the manifest as written.
        keys = {k: lt[k] for k in ("segment", "segment_start", "segment_end", "prior")
                if k in lt}
        if keys and _link_prior(keys, field=f, path=path) is not None:
            priors[lname] = keys
    try:
        tree = Tree(tuple(links))
    except ConfigError as exc:
        raise ConfigError(exc.message, path=path, field=f"object.{exc.field}") from None
    return ObjectSpec(session, subject, tree, base_r, base_p, priors)


def _posture_rotations(t: dict, tree: Tree, *, field: str, path: Path) -> dict[str, np.ndarray]:
    """``0R_j`` of every non-base link (identity when not given)."""
    out = {l.name: np.eye(3) for l in tree.links[1:]}
    seq = t.get("euler_seq", "xyz")
    given: set[str] = set()
    for kind, key in (("rotation", "rotations"), ("rotation_vector", "rotation_vectors"),
                      ("euler_deg", "euler_deg")):
        table = t.get(key, {})
        if not isinstance(table, dict):
            raise ConfigError("expected a table: link name -> rotation", path=path,
                              field=f"{field}.{key}", found=table)
        for lname, value in table.items():
            if lname not in out:
                raise ConfigError(f"'{lname}' is not a non-base link of the object (links: "
                                  f"{', '.join(out) or 'none'})", path=path,
                                  field=f"{field}.{key}.{lname}")
            if lname in given:
                raise ConfigError(f"link '{lname}' has two rotations", path=path, field=field)
            given.add(lname)
            out[lname] = _rotation_value(kind, value, seq, field=f"{field}.{key}.{lname}",
                                         path=path)
    return out


def _relative(t: dict, tree: Tree, postures: list[PosturePlan], defaults: CaptureSettings, *,
              path: Path) -> RelativePlan:
    f = "relative_motion"
    pname = t.get("posture")
    if pname is None:
        rest = {l.name: np.eye(3) for l in tree.links[1:]}
        pname = "identity"
    else:
        by_name = {p.name: p for p in postures}
        if pname not in by_name:
            raise ConfigError(f"unknown posture '{pname}' (postures: "
                              f"{', '.join(by_name) or 'none'})", path=path, field=f"{f}.posture")
        rest = by_name[pname].rotations
    drive = _drive(t.get("drive", {}), rest, field=f"{f}.drive", path=path)
    release = t.get("release", {}) if drive else require(t, "release", field=f, path=path)
    if not isinstance(release, dict) or not (release or drive):
        raise ConfigError("expected a table: link name -> tilt rotation vector (rad, base "
                          "axes)", path=path, field=f"{f}.release", found=release)
    tilts = {}
    for lname, vec in release.items():
        if lname not in rest:
            raise ConfigError(f"'{lname}' is not a non-base link", path=path,
                              field=f"{f}.release.{lname}")
        tilts[lname] = as_array(vec, (3,), field=f"{f}.release.{lname}", path=path)
    # A tilt turns the released link and its whole subtree about its joint (base axes).
    start = dict(rest)
    parents = {l.name: l.parent for l in tree.links}
    for lname in tree.names[1:]:
        chain, node = [], lname
        while node in parents and node != tree.links[0].name:
            chain.append(node)
            node = parents[node]
        for anc in chain:      # own tilt first, then each released ancestor's (base axes)
            if anc in tilts:
                start[lname] = Rotation.from_rotvec(tilts[anc]).as_matrix() @ start[lname]
    damping = as_float(t.get("joint_damping", 0.0), field=f"{f}.joint_damping", path=path,
                       nonnegative=True)
    return RelativePlan(as_str(t.get("name", "swing"), field=f"{f}.name", path=path), pname,
                        rest, start, tilts, damping, _settings(t, defaults, field=f, path=path),
                        drive)


def _drive(t, rest: dict, *, field: str, path: Path) -> dict:
    """``[relative_motion.drive.LINK]`` tables: a joint moved by muscles (a servo tracking
    a multi-sine about the rest posture) instead of released to swing."""
    from rigtool.sim.servo import JointServo
    if not isinstance(t, dict):
        raise ConfigError("expected a table: link name -> servo", path=path, field=field,
                          found=t)
    out = {}
    for lname, spec in t.items():
        fl = f"{field}.{lname}"
        if lname not in rest:
            raise ConfigError(f"'{lname}' is not a non-base link", path=path, field=fl)
        if not isinstance(spec, dict):
            raise ConfigError("expected a table (amplitude_deg, frequency_hz, ...)",
                              path=path, field=fl, found=spec)
        freq = np.atleast_1d(np.asarray(require(spec, "frequency_hz", field=fl, path=path),
                                        float))
        k = freq.size
        amp = as_array(require(spec, "amplitude_deg", field=fl, path=path), (k, 3),
                       field=f"{fl}.amplitude_deg", path=path)
        phase = as_array(spec.get("phase_deg", np.zeros((k, 3)).tolist()), (k, 3),
                         field=f"{fl}.phase_deg", path=path)
        if not (np.all(np.isfinite(freq)) and np.all(freq > 0)):
            raise ConfigError("frequencies must be positive", path=path,
                              field=f"{fl}.frequency_hz", found=freq.tolist())
        out[lname] = JointServo(np.deg2rad(amp), freq, np.deg2rad(phase),
                                as_float(spec.get("stiffness_nm_per_rad", 400.0),
                                         field=f"{fl}.stiffness_nm_per_rad", path=path,
                                         nonnegative=True),
                                as_float(spec.get("damping_nms_per_rad", 20.0),
                                         field=f"{fl}.damping_nms_per_rad", path=path,
                                         nonnegative=True))
    return out


def _check_marker_names(rig: Rig, platform_subject, bodies, obj, *, path: Path) -> None:
    """Bare marker names must be unique: manifests match names without the subject prefix."""
    seen: dict[str, str] = {}
    groups = [("platform", rig.platform.markers_platform)]
    groups += [(f"reference body '{b.name}'", b.markers) for b in bodies.values()]
    if obj is not None:
        groups += [(f"link '{l.name}'", l.markers_link) for l in obj.tree.links]
    for owner, markers in groups:
        for m in markers:
            if m in seen:
                raise ConfigError(f"marker name '{m}' is used by {seen[m]} and {owner}; "
                                  "marker names must be unique", path=path, field="markers")
            seen[m] = owner
