"""The plain dataclasses a scenario file is read into.

Capture settings, reference bodies and where they sit, the calibration, posture and
relative-motion capture plans, the object, and the :class:`Scenario` that holds them all.
:func:`rigtool.sim.scenario.load_scenario` builds them; conventions (SI units, rotation
directions, ``offset``/``velocity`` layout) are those of :mod:`rigtool.sim.scenario`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rigtool.inertia import InertialParams
from rigtool.rig import Rig
from rigtool.sim.living import Living
from rigtool.sim.markers import Artefacts
from rigtool.tree import Tree

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
    #: an OpenSim model the manifest names instead of [[links]] (copied next to it)
    opensim: Path | None = None

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
    living: Living | None = None               # the object's living effects (None: rigid)

    def with_format(self, fmt: str) -> "Scenario":
        """The same scenario with every capture written in ``fmt``."""
        def fix(plan):
            return replace(plan, settings=replace(plan.settings, format=fmt))
        return replace(self, calibration=tuple(fix(p) for p in self.calibration),
                       postures=tuple(fix(p) for p in self.postures),
                       relative=None if self.relative is None else fix(self.relative))


__all__ = ["EXTENSIONS", "CaptureSettings", "ReferenceBodySpec", "Placement", "CalibrationPlan",
           "PosturePlan", "RelativePlan", "ObjectSpec", "Scenario"]
