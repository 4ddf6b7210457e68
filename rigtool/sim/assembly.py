"""A :class:`~rigtool.sim.system.System` checked and turned into the equations' bodies.

:func:`_assemble` validates the system (springs, locked DOFs, names, physically consistent
inertia) and lumps everything rigidly attached to the platform into dynamic body 0; with
free joints every non-base link becomes a dynamic body of its own on a spherical joint. It
returns the :class:`rigtool.sim._model.Model` and, for each physical body, which dynamic
body carries it and where. :func:`lumped_params` is the locked system as one body.
Conventions are those of :mod:`rigtool.sim.dynamics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams, inertia_vector, transform_params
from rigtool.rig import DOF_NAMES
from rigtool.sim import _model
from rigtool.sim.servo import Drive
from rigtool.sim.system import System

__all__ = ["lumped_params"]


@dataclass(frozen=True)
class _Output:
    """A physical body: which dynamic body carries it and its frame in that body's frame."""

    name: str
    body: int
    rotation: np.ndarray
    position: np.ndarray
    params: InertialParams


def _posture(system: System) -> dict[str, np.ndarray]:
    tree = system.tree
    out = {}
    for link in tree.links[1:]:
        r = system.posture.get(link.name, np.eye(3))
        out[link.name] = np.asarray(r, float)
    unknown = set(system.posture) - set(out)
    if unknown:
        raise ConfigError("posture names a link that is not a non-base link of the tree",
                          field="posture", found=sorted(unknown))
    return out


def _joint_damping(system: System, name: str) -> float:
    jd = system.joint_damping
    if isinstance(jd, dict):
        return float(jd.get(name, 0.0))
    return float(jd)


def _check(system: System) -> None:
    rig = system.rig
    if not rig.springs:
        raise ConfigError("the rig needs at least one spring", field="springs")
    for i, s in enumerate(rig.springs):
        for attr in ("stiffness", "free_length", "damping"):
            val = getattr(s, attr)
            if not np.isfinite(val) or val < 0:
                raise ConfigError(f"spring '{s.name}' needs a finite, non-negative {attr}",
                                  field=f"springs[{i}].{attr}", found=val)
    bad = set(rig.locked_dofs) - set(DOF_NAMES)
    if bad:
        raise ConfigError(f"locked_dofs may only contain {', '.join(DOF_NAMES)}",
                          field="locked_dofs", found=sorted(bad))
    names = ["platform"] + [f.name for f in system.fixed]
    if system.tree is not None:
        names += system.tree.names
        for i, link in enumerate(system.tree.links):
            if link.params is None:
                raise ConfigError(f"link '{link.name}' needs inertial parameters to be "
                                  "simulated", field=f"links[{i}].params")
    bodies = [("platform_params", system.platform_params)]
    bodies += [(f"fixed.{f.name}", f.params) for f in system.fixed]
    if system.tree is not None:
        bodies += [(f"links.{l.name}.params", l.params) for l in system.tree.links]
    for where, params in bodies:
        if not (params.mass > 0 and params.is_physically_consistent(tol=1e-12)):
            raise ConfigError("inertial parameters must be physically consistent (mass > 0, "
                              "pseudo-inertia positive semidefinite)", field=where,
                              found=np.round(params.pi, 6).tolist())
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError("every body (platform, fixed bodies, links) needs its own name",
                          field="name", found=sorted(dup))


def _assemble(system: System, *, free_joints: bool | None = None):
    """Dynamic bodies (``_model.Model``) and the physical bodies they carry."""
    _check(system)
    free_joints = system.free_joints if free_joints is None else free_joints
    rig = system.rig
    lumped = system.platform_params.pi.astype(float).copy()
    outputs = [_Output("platform", 0, np.eye(3), np.zeros(3), system.platform_params)]
    for fb in system.fixed:
        rot = np.asarray(fb.rotation_platform, float)
        pos = np.asarray(fb.position_platform_m, float)
        lumped += transform_params(fb.params.pi, rot, pos)
        outputs.append(_Output(fb.name, 0, rot, pos, fb.params))
    moving: list[tuple[str, InertialParams, int, np.ndarray, float]] = []
    if system.tree is not None:
        tree = system.tree
        base_r = np.asarray(system.base_rotation_platform, float)
        base_p = np.asarray(system.base_position_platform_m, float)
        posture = _posture(system)
        org, rot = tree.origins_and_rotations(posture)
        parents = tree.parent_index()
        dyn_index = {tree.links[0].name: 0}
        for i, link in enumerate(tree.links):
            if i == 0 or not free_joints:
                r_pl, p_pl = base_r @ rot[i], base_r @ org[i] + base_p
                lumped += transform_params(link.params.pi, r_pl, p_pl)
                outputs.append(_Output(link.name, 0, r_pl, p_pl, link.params))
                continue
            par = parents[i]
            centre = tree.joint_center(i)
            if par == 0:
                centre = base_r @ centre + base_p      # in the platform (body 0) frame
            dyn_index[link.name] = len(moving) + 1
            moving.append((link.name, link.params, dyn_index[tree.links[par].name], centre,
                           _joint_damping(system, link.name)))
            outputs.append(_Output(link.name, dyn_index[link.name], np.eye(3), np.zeros(3),
                                   link.params))
    drives = _drives(system, dyn_index if system.tree is not None and free_joints else {})
    params = [InertialParams(lumped)] + [m[1] for m in moving]
    n_nu = 6 + 3 * len(moving)
    free = np.concatenate([rig.free_dof_rows(), np.arange(6, n_nu)]).astype(int)
    model = _model.Model(
        mass=np.array([p.mass for p in params]),
        first_moment_body=np.stack([p.first_moment for p in params]),
        inertia_body=np.stack([p.inertia_origin for p in params]),
        parent=(-1,) + tuple(m[2] for m in moving),
        joint_parent=np.stack([np.zeros(3)] + [np.asarray(m[3], float) for m in moving]),
        joint_damping=np.array([0.0] + [m[4] for m in moving]),
        anchor_lab=np.stack([np.asarray(s.anchor_lab, float) for s in rig.springs]),
        attachment_platform=np.stack([np.asarray(s.attachment_platform, float)
                                      for s in rig.springs]),
        stiffness=rig.stiffness.astype(float),
        free_length=rig.free_length.astype(float),
        spring_damping=rig.damping.astype(float),
        gravity_lab=np.asarray(rig.gravity_lab, float),
        free=free,
        drives=drives,
    )
    return model, outputs


def _drives(system: System, dyn_index: dict[str, int]) -> tuple[Drive, ...]:
    """The driven joints as dynamic-body pairs (none when the joints are locked)."""
    if not system.joint_servo or not dyn_index:
        return ()
    tree = system.tree
    posture = _posture(system)
    unknown = set(system.joint_servo) - set(posture)
    if unknown:
        raise ConfigError("joint_servo names a link that is not a non-base link of the tree",
                          field="joint_servo", found=sorted(unknown))
    base = tree.links[0].name
    out = []
    for name, servo in system.joint_servo.items():
        parent = tree.links[tree.index(name)].parent
        rest_parent = np.eye(3) if parent == base else posture[parent]
        frame = np.asarray(system.base_rotation_platform, float) if parent == base \
            else np.eye(3)
        out.append(Drive(dyn_index[name], dyn_index[parent], frame,
                         rest_parent.T @ posture[name], servo))
    return tuple(out)


def lumped_params(system: System) -> InertialParams:
    """Everything on the springs as one body (joints locked at the posture), platform frame.

    Parameters
    ----------
    system : System

    Returns
    -------
    InertialParams
        Platform, fixed bodies and the locked tree about the platform origin, platform axes.

    Raises
    ------
    ConfigError
        When the system is invalid (see :func:`_check`).
    """
    model, _ = _assemble(system, free_joints=False)
    return InertialParams(np.concatenate([[model.mass[0]], model.first_moment_body[0],
                                          inertia_vector(model.inertia_body[0])]))
