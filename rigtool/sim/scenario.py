"""Scenario files: reading and validating one into the truth of a synthetic study.

A scenario (TOML, documented in ``scenarios/README.md``) holds everything the simulator
needs and everything a user would not know: true spring stiffness, free lengths, platform
and link inertias. :func:`load_scenario` validates it (every error a :class:`ConfigError`
naming the file and field) and returns plain dataclasses; ``session_writer`` turns them
into the files a user would have (rig file, manifest, captures) plus the truth.

This module reads the file (with ``scenario.extends``), the rig, the reference bodies and
the calibration captures, and checks marker names across bodies. The pieces live beside it
and are re-exported here: the dataclasses in :mod:`rigtool.sim.scenario_types`, the field
readers (rotations, markers, capture settings) in :mod:`rigtool.sim.scenario_fields`, the
object, its postures and the relative motion in :mod:`rigtool.sim.scenario_object`.

Conventions: SI units (lengths m, angles rad unless a key says ``_deg``); rotations map
body axes to the parent's axes; a posture's ``0R_j`` maps link j axes to base-link axes;
``offset``/``velocity`` are ``[x, y, z, rx, ry, rz]`` (m, rad as a rotation vector / m/s,
rad/s, lab axes) applied to the static equilibrium.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from rigtool.config import read_toml, rig_gravity_and_locks
from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams
from rigtool.rig import Platform, Rig, Spring
from rigtool.sim.scenario_fields import (_markers, _params, _rotation, _settings, _subject,
                                         orthonormalise)
from rigtool.sim.scenario_living import read_living
from rigtool.sim.scenario_object import _object, _posture_rotations, _relative
from rigtool.sim.scenario_types import (EXTENSIONS, CalibrationPlan, CaptureSettings,
                                        ObjectSpec, Placement, PosturePlan,
                                        ReferenceBodySpec, RelativePlan, Scenario)
from rigtool.tree import Tree
from rigtool.validate import as_array, as_float, as_str, require

__all__ = ["load_scenario", "orthonormalise", "EXTENSIONS", "CaptureSettings",
           "ReferenceBodySpec", "Placement", "CalibrationPlan", "PosturePlan", "RelativePlan",
           "ObjectSpec", "Scenario"]


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file (see ``scenarios/README.md``).

    Parameters
    ----------
    path : str or Path
        The scenario's TOML file; ``scenario.extends`` names another file (relative to
        this one) whose tables it takes where it gives none.

    Returns
    -------
    Scenario
        The true rig, platform, reference bodies, object and every capture's plan.

    Raises
    ------
    ConfigError
        Any missing, malformed or inconsistent entry, naming the file and field.
    """
    path = Path(path)
    raw = _read_with_extends(path)
    _drop_tables(raw, path=path)
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

    living = read_living(raw.get("living"), None if obj is None else obj.tree, path=path)
    if living is not None:
        if living.support is not None and relative is not None:
            raise ConfigError("a compliant support is simulated with the joints locked only: "
                              "leave out the relative-motion capture (in [scenario], "
                              "drop = [\"relative_motion\"])", path=path, field="living.support")
        obj = _with_wall_markers(obj, living)
    _check_marker_names(rig, platform_subject, bodies, obj, path=path)
    return Scenario(path, name, seed, rig, InertialParams.from_com(pm, pc, pi), platform_subject,
                    bodies, tuple(calibration), obj, tuple(postures), relative, living)


def _drop_tables(raw: dict, *, path: Path) -> None:
    """``[scenario] drop = ["relative_motion", ...]``: top-level tables an extending file
    leaves out of what it inherits."""
    drop = raw.get("scenario", {}).pop("drop", [])
    allowed = ("relative_motion", "postures", "calibration_captures", "living")
    if not (isinstance(drop, list) and all(isinstance(d, str) and d in allowed for d in drop)):
        raise ConfigError(f"expected a list of tables among {', '.join(allowed)}", path=path,
                          field="scenario.drop", found=drop)
    for d in drop:
        raw.pop(d, None)


def _with_wall_markers(obj: ObjectSpec, living) -> ObjectSpec:
    """The breathing link gets its chest/abdominal wall markers (at their mean positions)."""
    b = living.breathing
    if b is None or not b.wall_markers:
        return obj
    link_name = b.link or obj.tree.links[0].name
    links = []
    for link in obj.tree.links:
        if link.name == link_name:
            markers = dict(link.markers_link)
            markers.update({k: np.asarray(w.position_link, float)
                            for k, w in b.wall_markers.items()})
            link = replace(link, markers_link=markers)
        links.append(link)
    return replace(obj, tree=Tree(tuple(links)))


def _read_with_extends(path: Path, _seen: tuple[Path, ...] = ()) -> dict:
    """Read a scenario; ``scenario.extends = "other.toml"`` takes every top-level table the
    file does not define from the other one (``[scenario]``, ``[capture]``,
    ``[capture.artefacts]`` and ``[living]`` are merged key by key, this file winning)."""
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
    if "living" in base or "living" in raw:         # effects add up, key by key
        merged["living"] = {**base.get("living", {}), **raw.get("living", {})}
        for key, value in raw.get("living", {}).items():
            below = base.get("living", {}).get(key)
            if isinstance(value, dict) and isinstance(below, dict):
                merged["living"][key] = {**below, **value}
    arts = {**base.get("capture", {}).get("artefacts", {}),
            **raw.get("capture", {}).get("artefacts", {})}
    if arts:
        merged["capture"]["artefacts"] = arts
    merged["scenario"].pop("extends", None)
    if "name" not in raw.get("scenario", {}):
        merged["scenario"]["name"] = path.stem
    return merged


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
