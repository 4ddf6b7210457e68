"""The session manifest's ``[robot]`` section (SPEC "A robot described by its URDF").

::

    [robot]
    urdf = "panda_description/urdf/panda.urdf"   # relative to the manifest
    base_link = "panda_link0"
    fixed_joints = { panda_finger_joint1 = 0.02 }  # rad, or m for prismatic joints
    [robot.markers]                               # URDF link frames, m
    panda_link0 = { B1 = [...], B2 = [...], B3 = [...] }
    [[postures]]
    joint_angles = "posture01.joints.csv"         # one per posture

The URDF is read here as XML only (names checked: base link, held joints, marker links);
pinocchio builds the kinematic model in the pipeline (rigtool.robot.urdf_model). The
section stands in for ``[[links]]``: the object the posture stage sees is the base link
with its markers (:meth:`RobotSpec.links_tables`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rigtool.config.schema import closest_key
from rigtool.config.toml_fields import _markers
from rigtool.errors import ConfigError
from rigtool.validate import as_float, as_str, require


@dataclass(frozen=True)
class RobotSpec:
    """The ``[robot]`` section as read.

    Attributes
    ----------
    urdf : Path
    base_link : str
    fixed_joints : dict
        Joint -> held value (rad or m).
    markers : dict
        URDF link -> {marker: coordinates in the link frame, m}.
    joint_angles : dict
        Posture name -> its joint-angle CSV.
    relative_joint_angles : Path or None
        The ``[relative_motion]`` capture's joint-angle CSV.
    """

    urdf: Path
    base_link: str
    fixed_joints: dict[str, float]
    markers: dict[str, dict[str, np.ndarray]]
    joint_angles: dict[str, Path] = field(default_factory=dict)
    relative_joint_angles: Path | None = None

    def links_tables(self) -> list[dict]:
        """The ``[[links]]`` equivalent the posture stage reads: the base link, bolted to
        the platform, with its markers (the rest of the robot moves rigidly with it in a
        locked posture)."""
        return [{"name": self.base_link, "parent": "platform",
                 "markers": {k: list(map(float, v))
                             for k, v in self.markers[self.base_link].items()}}]


def unknown_key(table: dict, allowed, *, field: str, path: Path) -> None:
    """Raise for the first key of ``table`` not in ``allowed`` (names the URDF defines:
    joints, links), naming the closest valid one."""
    for key in table:
        if key not in allowed:
            raise ConfigError(f"unknown key (expected one of {', '.join(allowed)})"
                              + _hint(str(key), allowed),
                              path=path, field=f"{field}.{key}" if field else str(key))


def robot_section(raw: dict, path: Path) -> RobotSpec:
    """Read and check ``[robot]`` and the postures' ``joint_angles`` of a manifest.

    Parameters
    ----------
    raw : dict
        The parsed manifest.
    path : Path
        The manifest (relative paths resolve against its folder; errors name it).

    Raises
    ------
    ConfigError
        Naming the manifest and field (or the URDF when it is missing or not a URDF).
    """
    from rigtool.robot.urdf_model import parse_urdf_xml

    rt = raw["robot"]
    if not isinstance(rt, dict):
        raise ConfigError("expected a [robot] table", path=path, field="robot", found=rt)
    if "links" in raw:
        raise ConfigError("give either [robot] (a URDF) or [[links]], not both", path=path,
                          field="links")
    # the [robot] table's own keys are checked by the manifest's schema (load_session)
    urdf = path.parent / as_str(require(rt, "urdf", field="robot", path=path),
                                field="robot.urdf", path=path)
    _, links, joints = parse_urdf_xml(urdf)
    base = as_str(require(rt, "base_link", field="robot", path=path), field="robot.base_link",
                  path=path)
    if base not in links:
        raise ConfigError(f"'{base}' is not a link of {urdf.name}" + _hint(base, links),
                          path=path, field="robot.base_link")
    fixed = {}
    ft = rt.get("fixed_joints", {})
    if not isinstance(ft, dict):
        raise ConfigError("expected a table of joint name -> held value (rad, or m)",
                          path=path, field="robot.fixed_joints", found=ft)
    for name, value in ft.items():
        f = f"robot.fixed_joints.{name}"
        if name not in joints:
            raise ConfigError(f"'{name}' is not a joint of {urdf.name}" + _hint(name, joints),
                              path=path, field=f)
        fixed[name] = as_float(value, field=f, path=path)
        j = joints[name]
        if j.lower is not None and not (j.lower - 1e-9 <= fixed[name] <= j.upper + 1e-9):
            raise ConfigError(f"outside the joint's limits [{j.lower:g}, {j.upper:g}]",
                              path=path, field=f, found=value)
    mt = require(rt, "markers", field="robot", path=path)
    if not isinstance(mt, dict) or not mt:
        raise ConfigError("expected [robot.markers] with a table of markers per URDF link",
                          path=path, field="robot.markers", found=mt)
    markers = {}
    for link, table in mt.items():
        if link not in links:
            raise ConfigError(f"'{link}' is not a link of {urdf.name}" + _hint(link, links),
                              path=path, field=f"robot.markers.{link}")
        markers[link] = _markers(table, field=f"robot.markers.{link}", path=path)
    if len(markers.get(base, {})) < 3:
        raise ConfigError(f"the base link '{base}' needs at least 3 markers", path=path,
                          field=f"robot.markers.{base}")
    seen: dict[str, str] = {}
    for link, table in markers.items():
        for m in table:
            if m in seen:
                raise ConfigError(f"marker '{m}' is given on '{seen[m]}' and '{link}'",
                                  path=path, field=f"robot.markers.{link}.{m}")
            seen[m] = link
    angles = {}
    for i, pt in enumerate(raw.get("postures", [])):
        f = f"postures[{i}]"
        name = pt.get("name", f"posture{i + 1}")
        angles[str(name)] = path.parent / as_str(
            require(pt, "joint_angles", field=f, path=path), field=f"{f}.joint_angles",
            path=path)
    rel = None
    if isinstance(raw.get("relative_motion"), dict) and "joint_angles" in raw["relative_motion"]:
        rel = path.parent / as_str(raw["relative_motion"]["joint_angles"],
                                   field="relative_motion.joint_angles", path=path)
    return RobotSpec(urdf, base, fixed, markers, angles, rel)


def _hint(name: str, choices) -> str:
    near = closest_key(name, list(choices))
    return f"; did you mean '{near}'?" if near else ""


__all__ = ["RobotSpec", "robot_section", "unknown_key"]
