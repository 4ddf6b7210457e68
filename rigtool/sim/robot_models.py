"""Published robot URDFs for simulation and tests: the ones the ``example-robot-data``
package installs (Franka Panda 7-axis, Universal Robots UR5 6-axis, ...), found through the
package's installed file list (its files live under ``cmeel.prefix/share``, not in an
importable module)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from rigtool.errors import InputError
from rigtool.extras import MissingExtraError

#: name -> (URDF path inside the package's robots folder, base link, held joints)
EXAMPLE_ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", "panda_link0",
              {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "base_link", {}),
}


def example_robot_urdf(name: str) -> Path:
    """Path of an ``example-robot-data`` URDF (``"panda"``, ``"ur5"``).

    Raises
    ------
    InputError
        The package is not installed, or has no such robot.
    """
    if name not in EXAMPLE_ROBOTS:
        raise InputError(f"unknown example robot '{name}' (known: {', '.join(EXAMPLE_ROBOTS)})")
    rel = EXAMPLE_ROBOTS[name][0]
    try:
        files = metadata.files("example-robot-data") or []
    except metadata.PackageNotFoundError:
        raise MissingExtraError("the published robots (Panda, UR5) need example-robot-data, "
                                "which is not installed: pip install 'rigtool[robot]'") from None
    for f in files:
        if str(f).endswith("robots/" + rel):
            return Path(f.locate()).resolve()
    raise InputError(f"example-robot-data has no {rel}")


__all__ = ["EXAMPLE_ROBOTS", "example_robot_urdf"]
