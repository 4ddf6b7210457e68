"""The SPEC "postures.toml" form for a robot: overall properties measured elsewhere, with
the robot's URDF and each posture's joint values instead of ``[[links]]`` and rotations.

::

    total_mass = 17.452
    total_mass_std = 0.002          # optional, kg
    [robot]
    urdf = "panda.urdf"             # relative to this file
    base_link = "panda_link0"
    fixed_joints = { panda_finger_joint1 = 0.02, panda_finger_joint2 = 0.02 }
    [[postures]]
    name = "p1"
    com = [x, y, z]                 # m, base-link frame
    inertia_com = [[...], [...], [...]]
    com_std = 1e-4                  # optional (m; 3 numbers or one)
    inertia_std = 1e-4              # optional (kg m^2; one number or 3x3)
    joint_angles = { panda_joint1 = 0.1, ... }   # rad (m for prismatic), every moving joint
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rigtool.config import read_toml
from rigtool.config.schema import ROBOT_POSTURES, check_keys, closest_key
from rigtool.config.robot_section import unknown_key
from rigtool.errors import ConfigError
from rigtool.identify.subset.postures_file import overall_fields
from rigtool.identify.subset.regressor import PostureOverall
from rigtool.robot.urdf_model import RobotModel, load_robot_model
from rigtool.validate import as_float, as_str, require



@dataclass(frozen=True)
class RobotPosturesFile:
    """A parsed robot postures.toml."""

    path: Path
    total_mass_kg: float
    total_mass_std_kg: float | None
    robot: RobotModel
    postures: list[PostureOverall]
    angles: list[dict[str, float]]


def is_robot_postures(raw: dict) -> bool:
    """True for the robot form (a ``[robot]`` table, or a key that is a misspelling of it:
    the robot form's check then names it)."""
    return isinstance(raw, dict) and any(
        closest_key(str(k), ["robot"]) == "robot" for k in raw)


def load_robot_postures(path: str | Path) -> RobotPosturesFile:
    """Parse and validate a robot postures.toml (errors name the file and field)."""
    path = Path(path)
    raw = read_toml(path)
    check_keys(raw, ROBOT_POSTURES, path=path, what="postures file")
    mass = as_float(require(raw, "total_mass", field="total_mass", path=path),
                    field="total_mass", path=path, positive=True)
    mass_std = (as_float(raw["total_mass_std"], field="total_mass_std", path=path,
                         positive=True) if "total_mass_std" in raw else None)
    rt = raw["robot"]
    if not isinstance(rt, dict):
        raise ConfigError("expected a [robot] table", path=path, field="robot", found=rt)
    urdf = path.parent / as_str(require(rt, "urdf", field="robot", path=path),
                                field="robot.urdf", path=path)
    base = as_str(require(rt, "base_link", field="robot", path=path), field="robot.base_link",
                  path=path)
    fixed = rt.get("fixed_joints", {})
    if not isinstance(fixed, dict):
        raise ConfigError("expected a table of joint name -> held value", path=path,
                          field="robot.fixed_joints", found=fixed)
    fixed = {k: as_float(v, field=f"robot.fixed_joints.{k}", path=path)
             for k, v in fixed.items()}
    robot = load_robot_model(urdf, base, fixed)
    pts = raw.get("postures")
    if not isinstance(pts, list) or not pts or not all(isinstance(t, dict) for t in pts):
        raise ConfigError("expected at least one [[postures]] table", path=path,
                          field="postures")
    postures, angles, seen = [], [], set()
    for i, t in enumerate(pts):
        f = f"postures[{i}]"
        name, com, com_std, inertia, i_std = overall_fields(t, i, seen, path=path)
        ja = require(t, "joint_angles", field=f, path=path)
        if not isinstance(ja, dict):
            raise ConfigError("expected a table of joint name -> value (rad, or m)", path=path,
                              field=f"{f}.joint_angles", found=ja)
        unknown_key(ja, robot.moving_joints, field=f"{f}.joint_angles", path=path)
        q = {}
        lo, hi = robot.limits()
        for k, joint in enumerate(robot.moving_joints):
            fj = f"{f}.joint_angles.{joint}"
            q[joint] = as_float(require(ja, joint, field=f"{f}.joint_angles", path=path),
                                field=fj, path=path)
            body = robot.bodies[k + 1]
            if body.lower is not None and not (body.lower - 1e-6 <= q[joint]
                                               <= body.upper + 1e-6):
                raise ConfigError(f"outside the joint's limits [{body.lower:g}, "
                                  f"{body.upper:g}]", path=path, field=fj, found=q[joint])
        postures.append(PostureOverall(name, com, com_std, inertia, i_std, {}))
        angles.append(q)
    return RobotPosturesFile(path, mass, mass_std, robot, postures, angles)


__all__ = ["RobotPosturesFile", "is_robot_postures", "load_robot_postures"]
