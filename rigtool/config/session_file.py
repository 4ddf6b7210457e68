"""The session manifest (docs/reference/files/session-manifest.md): the object's tree of links and
their markers, the locked postures, the relative-motion capture, priors, filter settings;
:func:`load_session` validates every field and resolves capture paths relative to the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rigtool.config.schema import (POSTURE_STANDARD_ERRORS, RELATIVE_MOTION_MODELS,
                                   SESSION, SOFT_TISSUE_MODELS, SUPPORT_MODELS, check_keys)
from rigtool.config.opensim_section import OpenSimSpec, opensim_section
from rigtool.config.robot_section import RobotSpec, robot_section
from rigtool.config.toml_fields import _markers, _units, _window, read_toml
from rigtool.errors import ConfigError
from rigtool.tree import Link, Tree
from rigtool.validate import as_array, as_float, as_str, as_symmetric_inertia, require


@dataclass(frozen=True)
class FilterSettings:
    """Zero-phase filter settings of a session (paper 002 defaults)."""

    method: str = "fir"
    order: int = 50
    passband_hz: float = 5.0
    stopband_hz: float = 10.0


@dataclass(frozen=True)
class LinkFrameSpec:
    """A link frame built from a static capture (``[links.frame]``)."""

    static_capture: Path
    origin: str | list[str]
    x_axis: tuple[str, str]
    xy_plane: str


@dataclass(frozen=True)
class CaptureRef:
    """A posture or relative-motion capture named by the manifest."""

    name: str
    capture: Path
    window: tuple[float, float] | None = None
    units: str | None = None
    #: relative motion only: "auto" (the passive swing model when it fits the markers to
    #: their noise, else the active one), "passive" (links swing freely) or "active" (links
    #: moved by muscles: their measured motion is a prescribed input)
    motion: str = "auto"
    #: postures only: the markers' noise covariance for the output-error fit: "auto" (the
    #: side file ``rigtool track`` writes next to the capture, NAME.residuals.csv, when it
    #: exists), "none" (isotropic noise), or a path (that file)
    marker_covariance: str | Path = "auto"
    #: postures only: the output-error fit's standard errors (marker noise): "auto" (the
    #: frame-clustered sandwich when the marker covariance is a ``rigtool track`` side file,
    #: whose corners of one body share a pose per frame; else "independent"),
    #: "independent" (Gauss-Newton, every marker's error independent) or "frame"
    #: (cluster-robust, clusters of ``cluster_frames`` consecutive frames)
    standard_errors: str = "auto"
    cluster_frames: int = 1


@dataclass(frozen=True)
class LinkPriorSpec:
    """What the manifest says a link's parameters should be near (segment prior).

    Either a human segment of de Leva's (1996) table (``segment``, with the segment's
    endpoints in the link frame) or CAD values (``mass_kg``, ``com_m``, ``inertia_com``) with
    their uncertainties. Missing uncertainties are None (the prior's own defaults apply).
    """

    segment: str | None = None
    segment_start_m: np.ndarray | None = None
    segment_end_m: np.ndarray | None = None
    mass_kg: float | None = None
    com_m: np.ndarray | None = None
    inertia_com: np.ndarray | None = None
    mass_std: float | None = None
    com_std: float | None = None
    inertia_rel_std: float | None = None
    #: where CAD-like values come from, as the report names the prior (None: the manifest's
    #: [links.prior])
    source: str | None = None


def _link_prior(lt: dict, *, field: str, path: Path) -> LinkPriorSpec | None:
    """The link's ``segment``/``segment_start``/``segment_end`` keys and ``[links.prior]``."""
    seg = None
    if "segment" in lt:
        seg = as_str(lt["segment"], field=f"{field}.segment", path=path)
    start = (as_array(lt["segment_start"], (3,), field=f"{field}.segment_start", path=path)
             if "segment_start" in lt else None)
    end = (as_array(lt["segment_end"], (3,), field=f"{field}.segment_end", path=path)
           if "segment_end" in lt else None)
    pt = lt.get("prior")
    if pt is None:
        if seg is None and start is None and end is None:
            return None
        return LinkPriorSpec(seg, start, end)
    f = f"{field}.prior"
    if not isinstance(pt, dict):
        raise ConfigError("expected a table with mass, com and inertia_com (CAD values)",
                          path=path, field=f, found=pt)
    if seg is not None:
        raise ConfigError("give either segment (anthropometric table) or [links.prior] (CAD "
                          "values), not both", path=path, field=f)
    for key in ("mass", "com", "inertia_com"):
        require(pt, key, field=f, path=path)

    def opt(key: str) -> float | None:
        return (as_float(pt[key], field=f"{f}.{key}", path=path, positive=True)
                if key in pt else None)

    return LinkPriorSpec(
        None, start, end,
        as_float(pt["mass"], field=f"{f}.mass", path=path, positive=True),
        as_array(pt["com"], (3,), field=f"{f}.com", path=path),
        as_symmetric_inertia(pt["inertia_com"], field=f"{f}.inertia_com", path=path),
        opt("mass_std"), opt("com_std"), opt("inertia_rel_std"))


@dataclass(frozen=True)
class Session:
    """The session manifest as read."""

    path: Path
    name: str
    rig_path: Path
    total_mass_kg: float | None
    total_mass_from: Path | None
    filter: FilterSettings
    tree: Tree
    frames: dict[str, LinkFrameSpec]
    postures: tuple[CaptureRef, ...]
    relative_motion: CaptureRef | None
    raw: dict
    priors: dict[str, LinkPriorSpec] = field(default_factory=dict)
    subject_sex: str | None = None
    total_mass_std_kg: float | None = None      # the scale's standard uncertainty, kg
    robot: "RobotSpec | None" = None            # [robot]: a URDF instead of [[links]]
    #: link -> its breathing markers {name: xyz at the breath's mean, link frame, m}; they
    #: are not among the tree's (rigid) markers of the link
    breathing_markers: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    #: the locked body's support on the deck: "auto" (measured through when the base link
    #: is seen riding on it), "measured" (always) or "rigid" (never)
    support: str = "auto"
    #: the body's wobbling soft tissue: "auto" (measured through in every posture when an
    #: element fitted at 6 Hz holds a mass in any posture: rigtool.identify.posture
    #: .tissue_fit.tissue_evidence), "measured" (always: one tissue element in every
    #: posture fit) or "rigid" (never)
    soft_tissue: str = "auto"
    #: [opensim]: an OpenSim model instead of [[links]] (rigtool.config.opensim_section)
    opensim: "OpenSimSpec | None" = None
    #: reference-body captures of the day ([[rig_checks]]): each a capture of bodies the
    #: rig file describes, identified with the calibrated rig before the postures
    rig_checks: tuple[RigCheckRef, ...] = ()


@dataclass(frozen=True)
class RigCheckRef:
    """A check of the rig on the day (``[[rig_checks]]``): a capture of the rig file's
    reference bodies ``load`` on the platform."""

    capture: Path
    load: tuple[str, ...]
    window: tuple[float, float] | None = None
    units: str | None = None


def load_session(path: str | Path, *, rig: str | Path | None = None) -> Session:
    """Read and validate a session manifest (docs/reference/files/session-manifest.md).

    ``rig``: a rig file used instead of the one the manifest names (``--rig`` of ``rigtool
    run`` and ``rigtool batch``: rerun against a recalibrated rig without editing manifests).
    """
    path = Path(path)
    raw = read_toml(path)
    check_keys(raw, SESSION, path=path, what="session manifest")
    s = require(raw, "session", field="session", path=path)
    name = as_str(s.get("name", path.parent.name), field="session.name", path=path)
    if rig is not None:
        rig_path = Path(rig)
    else:
        rig_path = path.parent / as_str(require(s, "rig", field="session", path=path),
                                        field="session.rig", path=path)
    mass = s.get("total_mass")
    mass_from = s.get("total_mass_from")
    if (mass is None) == (mass_from is None):
        raise ConfigError("give exactly one of total_mass (kg) or total_mass_from (a weigh.json)",
                          path=path, field="session")
    total_mass = None if mass is None else as_float(mass, field="session.total_mass", path=path,
                                                    positive=True)
    mass_path = None if mass_from is None else path.parent / as_str(
        mass_from, field="session.total_mass_from", path=path)
    mass_std = s.get("total_mass_std")
    if mass_std is not None:
        mass_std = as_float(mass_std, field="session.total_mass_std", path=path, positive=True)
    support = as_str(s.get("support", "auto"), field="session.support", path=path,
                     choices=SUPPORT_MODELS)
    soft_tissue = as_str(s.get("soft_tissue", "auto"), field="session.soft_tissue", path=path,
                         choices=SOFT_TISSUE_MODELS)

    ft = raw.get("filter", {})
    method = as_str(ft.get("method", "fir"), field="filter.method", path=path,
                    choices=("fir", "butterworth"))
    order = ft.get("order", 50 if method == "fir" else 4)
    if isinstance(order, bool) or not isinstance(order, int) or order < 1:
        raise ConfigError("expected a positive whole number", path=path, field="filter.order",
                          found=order)
    filt = FilterSettings(method, order,
                          as_float(ft.get("passband_hz", 5.0), field="filter.passband_hz",
                                   path=path, positive=True),
                          as_float(ft.get("stopband_hz", 10.0), field="filter.stopband_hz",
                                   path=path, positive=True))
    if filt.stopband_hz <= filt.passband_hz:
        raise ConfigError("stopband_hz must be above passband_hz", path=path,
                          field="filter.stopband_hz", found=filt.stopband_hz)

    robot = robot_section(raw, path) if "robot" in raw else None
    if robot is not None and soft_tissue == "measured":
        # a robot's links are rigid: the tissue model would be silently left out
        raise ConfigError('soft_tissue = "measured" models a living body\'s wobbling tissue; '
                          'a robot session takes "auto" or "rigid"', path=path,
                          field="session.soft_tissue", found=soft_tissue)
    opensim = opensim_section(raw, path) if "opensim" in raw else None
    if robot is not None:
        links_t = robot.links_tables()
    elif opensim is not None:
        links_t = opensim.links_tables()
    else:
        links_t = raw.get("links")
    if not isinstance(links_t, list) or not links_t:
        raise ConfigError("expected at least one [[links]] table", path=path, field="links")
    links, frames, priors, breathing = [], {}, {}, {}
    for i, lt in enumerate(links_t):
        f = f"links[{i}]"
        lname = as_str(require(lt, "name", field=f, path=path), field=f"{f}.name", path=path)
        parent = as_str(require(lt, "parent", field=f, path=path), field=f"{f}.parent",
                        path=path)
        jc = None
        if parent != "platform":
            as_str(lt.get("joint", "spherical"), field=f"{f}.joint", path=path,
                   choices=("spherical",))
            if "joint_center" in lt:
                jc = as_array(lt["joint_center"], (3,), field=f"{f}.joint_center", path=path)
        mk = {}
        if "markers" in lt:
            mk = _markers(lt["markers"], field=f"{f}.markers", path=path)
        if "breathing_markers" in lt:
            moving = _breathing_markers(lt["breathing_markers"], mk, field=f"{f}.breathing_markers",
                                        path=path)
            breathing[lname] = {n: mk.pop(n) for n in moving}
        if "frame" in lt:
            fr = lt["frame"]
            xa = fr.get("x_axis")
            if not (isinstance(xa, list) and len(xa) == 2 and all(isinstance(x, str) for x in xa)):
                raise ConfigError("expected [from_marker, to_marker]", path=path,
                                  field=f"{f}.frame.x_axis", found=xa)
            origin = fr.get("origin")
            if not (isinstance(origin, str) or (isinstance(origin, list) and origin
                                                and all(isinstance(o, str) for o in origin))):
                raise ConfigError("expected \"joint_center\", a marker name or a list of markers",
                                  path=path, field=f"{f}.frame.origin", found=origin)
            frames[lname] = LinkFrameSpec(
                path.parent / as_str(require(fr, "static_capture", field=f"{f}.frame", path=path),
                                     field=f"{f}.frame.static_capture", path=path),
                origin, (xa[0], xa[1]),
                as_str(require(fr, "xy_plane", field=f"{f}.frame", path=path),
                       field=f"{f}.frame.xy_plane", path=path))
        elif len(mk) < 3:
            raise ConfigError("a link needs at least 3 markers (or a [links.frame] built from a "
                              "static capture)", path=path, field=f"{f}.markers")
        links.append(Link(lname, parent, jc, None, mk))
        prior = _link_prior(lt, field=f, path=path)
        if prior is not None:
            priors[lname] = prior
    tree = Tree(tuple(links))
    if opensim is not None:
        priors = {k: replace(v, source=opensim.prior_source(k)) for k, v in priors.items()}
    sex = None
    if "subject" in s:
        subj = s["subject"]
        if not isinstance(subj, dict):
            raise ConfigError("expected a table such as { sex = \"female\" }", path=path,
                              field="session.subject", found=subj)
        if "sex" in subj:
            sex = as_str(subj["sex"], field="session.subject.sex", path=path,
                         choices=("male", "female"))

    postures = []
    for i, pt in enumerate(raw.get("postures", [])):
        f = f"postures[{i}]"
        if "cluster_frames" in pt and pt.get("standard_errors", "auto") in ("independent",
                                                                           "serial"):
            # clusters are the "frame" standard errors' alone (auto takes them for a
            # camera's captures): given beside another kind they would be ignored
            raise ConfigError('cluster_frames sets the clusters of "frame" standard errors; '
                              f'this posture asks for "{pt["standard_errors"]}" (leave '
                              'cluster_frames out, or use "frame" or "auto")', path=path,
                              field=f"{f}.cluster_frames", found=pt["cluster_frames"])
        postures.append(CaptureRef(
            as_str(pt.get("name", f"posture{i + 1}"), field=f"{f}.name", path=path),
            path.parent / as_str(require(pt, "capture", field=f, path=path),
                                 field=f"{f}.capture", path=path),
            _window(pt.get("window"), field=f"{f}.window", path=path), _units(pt, field=f,
                                                                              path=path),
            marker_covariance=_marker_covariance(pt.get("marker_covariance", "auto"),
                                                 field=f"{f}.marker_covariance", path=path),
            standard_errors=as_str(pt.get("standard_errors", "auto"),
                                   field=f"{f}.standard_errors", path=path,
                                   choices=POSTURE_STANDARD_ERRORS),
            cluster_frames=_cluster_frames(pt.get("cluster_frames", 1),
                                           field=f"{f}.cluster_frames", path=path)))
    rel = None
    if "relative_motion" in raw:
        rt = raw["relative_motion"]
        rel = CaptureRef("relative_motion",
                         path.parent / as_str(require(rt, "capture", field="relative_motion",
                                                      path=path),
                                              field="relative_motion.capture", path=path),
                         _window(rt.get("window"), field="relative_motion.window", path=path),
                         _units(rt, field="relative_motion", path=path),
                         _motion_model(rt.get("motion", "auto"), path=path))
    checks = []
    for i, rc in enumerate(raw.get("rig_checks", [])):
        f = f"rig_checks[{i}]"
        load = require(rc, "load", field=f, path=path)
        if not (isinstance(load, list) and load and all(isinstance(v, str) for v in load)):
            raise ConfigError('expected a list of the rig file\'s reference bodies such as '
                              '["block-a"]', path=path, field=f"{f}.load", found=load)
        checks.append(RigCheckRef(
            path.parent / as_str(require(rc, "capture", field=f, path=path),
                                 field=f"{f}.capture", path=path),
            tuple(load), _window(rc.get("window"), field=f"{f}.window", path=path),
            _units(rc, field=f, path=path)))
    return Session(path, name, rig_path, total_mass, mass_path, filt, tree, frames,
                   tuple(postures), rel, raw, priors, sex, mass_std, robot, breathing,
                   support, soft_tissue, opensim=opensim, rig_checks=tuple(checks))


def _breathing_markers(value, markers: dict, *, field: str, path: Path) -> list[str]:
    """The names of ``breathing_markers``: a non-empty list of distinct names from the link's
    ``markers`` (whose coordinates place them at the breath's mean)."""
    if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
        raise ConfigError('expected a list of marker names such as ["CH1", "AB1"]', path=path,
                          field=field, found=value)
    missing = [v for v in value if v not in markers]
    if missing:
        raise ConfigError(f"{', '.join(missing)} not among this link's markers (markers: "
                          f"{', '.join(markers)})", path=path, field=field, found=value)
    if len(set(value)) != len(value):
        raise ConfigError("a marker named twice", path=path, field=field, found=value)
    if len(markers) - len(value) < 3:
        raise ConfigError("a link needs at least 3 markers besides its breathing markers (they "
                          "give the link's pose the breath is measured in)", path=path,
                          field=field, found=value)
    return list(value)


def _marker_covariance(value, *, field: str, path: Path) -> str | Path:
    """``"auto"``, ``"none"`` or the path (relative to the manifest) of a covariance file."""
    text = as_str(value, field=field, path=path)
    if text in ("auto", "none"):
        return text
    if not text.strip():
        raise ConfigError('expected "auto", "none" or the path of a marker covariance file '
                          "(the .residuals.csv `rigtool track` writes)", path=path, field=field,
                          found=value)
    return path.parent / text


def _cluster_frames(value, *, field: str, path: Path) -> int:
    """Consecutive frames per cluster of the sandwich standard errors: an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError("expected a whole number of frames >= 1 (consecutive frames whose "
                          "marker errors may be correlated)", path=path, field=field,
                          found=value)
    return value


def _motion_model(value, *, path: Path) -> str:
    model = as_str(value, field="relative_motion.motion", path=path)
    if model not in RELATIVE_MOTION_MODELS:
        raise ConfigError(f"expected one of {', '.join(RELATIVE_MOTION_MODELS)}", path=path,
                          field="relative_motion.motion", found=model)
    return model


__all__ = ["FilterSettings", "LinkFrameSpec", "CaptureRef", "RELATIVE_MOTION_MODELS",
           "POSTURE_STANDARD_ERRORS", "LinkPriorSpec", "Session", "load_session"]
