"""A robot's identified links as a model description, for the MuJoCo and OpenSim files.

The robot's own URDF comes back as ``robot.urdf`` (only its ``<inertial>`` blocks replaced,
:mod:`rigtool.robot.outputs`); MuJoCo and OpenSim get complete models of the same bodies
from :class:`rigtool.report.model_description.ModelDescription`: one body per moving joint
(the links a held joint merges into it), joints where the URDF puts them (pinocchio's joint
placements of the reduced model), revolute joints as hinges/PinJoints, prismatic ones as
slides/SliderJoints, continuous ones as revolute joints without limits.
"""

from __future__ import annotations

import numpy as np

from rigtool.inertia import InertialParams
from rigtool.report.model_description import ModelDescription, ModelJoint, ModelLink, safe_names
from rigtool.robot.urdf_model import RobotModel


def robot_model_description(robot: RobotModel, params: list[InertialParams], *,
                            name: str, base: str = "free",
                            gravity_m_s2: np.ndarray | None = None,
                            provenance: tuple[str, ...] = (),
                            prior_parameters: list[str] | None = None) -> ModelDescription:
    """The model of a robot with per-body inertial parameters.

    Parameters
    ----------
    robot : RobotModel
        The URDF as prepared for identification (bodies, the reduced pinocchio model).
    params : list of InertialParams
        Per body (``robot.bodies`` order): the whole body's parameters about its own frame
        (the joint frame), its axes.
    name : str
        The model's name.
    base : str
        ``"free"`` or ``"fixed"``.
    gravity_m_s2 : ndarray (3,), optional
        Gravity in the world frame.
    provenance : tuple of str
        Header lines (version, inputs).
    prior_parameters : list of str, optional
        The standard parameters (``{kind}_{body}``, rigtool.robot.base_parameters) the
        captures leave to the URDF's CAD values; a body with any is said so.

    Returns
    -------
    ModelDescription
    """
    names = safe_names([b.name for b in robot.bodies])
    placements = robot.pin_model.jointPlacements
    prior = list(prior_parameters or [])
    links = []
    for j, (body, p) in enumerate(zip(robot.bodies, params)):
        joint = None
        if body.parent >= 0:
            kind = "prismatic" if body.joint_type == "prismatic" else "revolute"
            limits = (None if body.joint_type == "continuous" or body.lower is None
                      or body.upper is None else (float(body.lower), float(body.upper)))
            axis = np.asarray(body.axis, float)
            joint = ModelJoint(kind, np.array(placements[j].translation, float),
                               np.array(placements[j].rotation, float),
                               axis / np.linalg.norm(axis), limits,
                               source=f"URDF joint '{body.joint}'")
        mass = float(p.mass)
        com = p.com if mass > 0 else np.zeros(3)
        inertia = p.inertia_com if mass > 0 else p.inertia_origin
        merged = f" (with {', '.join(body.links[1:])})" if len(body.links) > 1 else ""
        silent = any(k.split("_", 1)[1] == body.name for k in prior)
        source = ("identified; the URDF's CAD values where the captures are silent"
                  if silent else "identified") + merged
        links.append(ModelLink(names[body.name], body.name,
                               None if body.parent < 0 else names[robot.bodies[body.parent].name],
                               joint, mass, np.asarray(com, float),
                               0.5 * (inertia + inertia.T), source))
    return ModelDescription(name, tuple(links), base,
                            np.array([0.0, 0.0, -9.80665]) if gravity_m_s2 is None
                            else np.asarray(gravity_m_s2, float), tuple(provenance))


__all__ = ["robot_model_description"]
