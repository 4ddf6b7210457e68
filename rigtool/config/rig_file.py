"""The rig file (docs/reference/files/rig-file.md): springs, platform, gravity and locked degrees
of freedom, and the calibration captures with their reference bodies; :func:`load_rig`
validates every field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rigtool.config.schema import RIG, check_keys
from rigtool.config.toml_fields import _markers, _optional_params, _units, _window, read_toml
from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams
from rigtool.rig import DOF_NAMES, Platform, Rig, Spring
from rigtool.validate import as_array, as_float, as_str, require


@dataclass(frozen=True)
class ReferenceBody:
    """A body of known inertia used to calibrate; posed by its markers or a fixed mount."""

    name: str
    params: InertialParams                       # about its own frame origin
    markers_body: dict[str, np.ndarray] = field(default_factory=dict)
    mount_rotation: np.ndarray | None = None     # body axes -> platform axes
    mount_position: np.ndarray | None = None     # body origin in platform frame, m


@dataclass(frozen=True)
class CalibrationCapture:
    """One capture of the platform with a known load (possibly none)."""

    capture: Path
    load: tuple[str, ...]
    window: tuple[float, float] | None = None
    units: str | None = None
    holdout: bool = False            # identify the load as unknown, report its error


@dataclass(frozen=True)
class RigFile:
    """The rig file as read: the rig model and what calibration needs."""

    path: Path
    rig: Rig
    reference_bodies: dict[str, ReferenceBody]
    captures: tuple[CalibrationCapture, ...]
    raw: dict
    calibrated: bool

    def require_calibrated(self) -> None:
        """Raise unless every spring and the platform have calibrated values."""
        if not self.calibrated:
            raise ConfigError("the rig is not calibrated (springs need stiffness and "
                              "free_length, the platform mass, com and inertia_com); run "
                              f"`rigtool calibrate {self.path.name}` first and use the file "
                              "it writes", path=self.path)


def rig_gravity_and_locks(rig_t: dict, *, path: Path) -> tuple[np.ndarray, list[str]]:
    """The ``[rig]`` table's ``gravity`` (lab, m/s^2; default -9.80665 along z) and
    ``locked_dofs`` (names from ``DOF_NAMES``), validated (rig files and scenarios)."""
    gravity = as_array(rig_t.get("gravity", [0.0, 0.0, -9.80665]), (3,), field="rig.gravity",
                       path=path)
    locked = rig_t.get("locked_dofs", [])
    if not isinstance(locked, list):
        raise ConfigError("expected a list", path=path, field="rig.locked_dofs", found=locked)
    for d in locked:
        as_str(d, field="rig.locked_dofs", path=path, choices=DOF_NAMES)
    return gravity, locked


def load_rig(path: str | Path) -> RigFile:
    """Read and validate a rig file (docs/reference/files/rig-file.md)."""
    path = Path(path)
    raw = read_toml(path)
    check_keys(raw, RIG, path=path, what="rig file")
    rig_t = require(raw, "rig", field="rig", path=path)
    name = as_str(rig_t.get("name", path.stem), field="rig.name", path=path)
    gravity, locked = rig_gravity_and_locks(rig_t, path=path)

    plat_t = require(raw, "platform", field="platform", path=path)
    markers = _markers(require(plat_t, "markers", field="platform", path=path),
                       field="platform.markers", path=path)
    if len(markers) < 3:
        raise ConfigError("the platform needs at least 3 markers", path=path,
                          field="platform.markers")
    platform = Platform(markers, _optional_params(plat_t, field="platform", path=path))

    springs_t = raw.get("springs")
    if not isinstance(springs_t, list) or not springs_t:
        raise ConfigError("expected at least one [[springs]] table", path=path, field="springs")
    springs = []
    for i, s in enumerate(springs_t):
        f = f"springs[{i}]"
        stiff = s.get("stiffness")
        free = s.get("free_length")
        springs.append(Spring(
            name=as_str(s.get("name", f"S{i + 1}"), field=f"{f}.name", path=path),
            anchor_lab=as_array(require(s, "anchor", field=f, path=path), (3,),
                                field=f"{f}.anchor", path=path),
            attachment_platform=as_array(require(s, "attachment", field=f, path=path), (3,),
                                         field=f"{f}.attachment", path=path),
            stiffness=(float("nan") if stiff is None else
                       as_float(stiff, field=f"{f}.stiffness", path=path, positive=True)),
            free_length=(float("nan") if free is None else
                         as_float(free, field=f"{f}.free_length", path=path, positive=True)),
            damping=as_float(s.get("damping", 0.0), field=f"{f}.damping", path=path,
                             nonnegative=True)))
    names = [s.name for s in springs]
    if len(set(names)) != len(names):
        raise ConfigError("spring names must be unique", path=path, field="springs")

    bodies: dict[str, ReferenceBody] = {}
    for i, b in enumerate(raw.get("reference_bodies", [])):
        f = f"reference_bodies[{i}]"
        bname = as_str(require(b, "name", field=f, path=path), field=f"{f}.name", path=path)
        params = _optional_params(b, field=f, path=path)
        if params is None:
            raise ConfigError("a reference body needs mass, com and inertia_com", path=path,
                              field=f)
        has_m, has_mount = "markers" in b, "mount" in b
        if has_m == has_mount:
            raise ConfigError("give either markers or a fixed mount (not both, not neither)",
                              path=path, field=f)
        if has_m:
            bm = _markers(b["markers"], field=f"{f}.markers", path=path)
            if len(bm) < 3:
                raise ConfigError("a reference body needs at least 3 markers", path=path,
                                  field=f"{f}.markers")
            body = ReferenceBody(bname, params, bm)
        else:
            mount = b["mount"]
            rot = as_array(require(mount, "rotation", field=f"{f}.mount", path=path), (3, 3),
                           field=f"{f}.mount.rotation", path=path)
            if not np.allclose(rot @ rot.T, np.eye(3), atol=1e-6) or np.linalg.det(rot) < 0:
                raise ConfigError("expected a rotation matrix (orthonormal, det +1)", path=path,
                                  field=f"{f}.mount.rotation")
            body = ReferenceBody(bname, params, {}, rot, as_array(
                require(mount, "position", field=f"{f}.mount", path=path), (3,),
                field=f"{f}.mount.position", path=path))
        if bname in bodies:
            raise ConfigError(f"reference body '{bname}' is defined twice", path=path, field=f)
        bodies[bname] = body

    captures = []
    for i, c in enumerate(raw.get("calibration_captures", [])):
        f = f"calibration_captures[{i}]"
        cap = path.parent / as_str(require(c, "capture", field=f, path=path),
                                   field=f"{f}.capture", path=path)
        load = c.get("load", [])
        if not isinstance(load, list):
            raise ConfigError("expected a list of reference-body names", path=path,
                              field=f"{f}.load", found=load)
        for body_name in load:
            if body_name not in bodies:
                raise ConfigError(f"unknown reference body '{body_name}' (defined: "
                                  f"{', '.join(bodies) or 'none'})", path=path, field=f"{f}.load")
        holdout = c.get("holdout", False)
        if not isinstance(holdout, bool):
            raise ConfigError("expected true or false", path=path, field=f"{f}.holdout")
        captures.append(CalibrationCapture(cap, tuple(load), _window(c.get("window"),
                        field=f"{f}.window", path=path), _units(c, field=f, path=path), holdout))

    rig = Rig(name, platform, tuple(springs), gravity, tuple(locked))
    calibrated = (platform.params is not None
                  and bool(np.all(np.isfinite(rig.stiffness)))
                  and bool(np.all(np.isfinite(rig.free_length))))
    if calibrated:
        # checked here, not when a posture fit first needs it minutes later
        from rigtool.calibration_uncertainty import calibration_std_from_rigfile
        calibration_std_from_rigfile(raw, rig, path=path)
    return RigFile(path, rig, bodies, tuple(captures), raw, calibrated)


# --------------------------------------------------------------------------- session


__all__ = ["ReferenceBody", "CalibrationCapture", "RigFile", "rig_gravity_and_locks",
           "load_rig"]
