"""A robot session's own stages (SPEC "A robot described by its URDF").

Before the posture fits (:func:`prepare_robot`, so a bad URDF or joint-angle file stops the
run before any fit): the URDF read with pinocchio, held joints merged, a URDF inertial that
is not physically consistent projected onto the consistent set (a note lists the links,
rigtool.robot.urdf_model.project_inertial), every posture's joint-angle file read and its
configuration taken (the median over the posture's window).

After them (:func:`fit_robot`): each posture is a rigid object whose COM and inertia the
posture stage measured in the base link's frame (its markers define the frame); the bodies'
poses from forward kinematics make these linear in the bodies' standard parameters:
the base parameters with their standard errors (rigtool.robot.base_parameters), the
posture to add within the joint limits (rigtool.robot.advice), and the per-link physically
consistent parameters closest to the URDF prior (rigtool.robot.consistent). A rank
deficiency the structure implies is a result: reported, never an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.config import Session
from rigtool.errors import ConfigError, InputError
from rigtool.identify.subset.regressor import reference_radius
from rigtool.robot.advice import PostureAdvice, advise_posture
from rigtool.robot.base_parameters import RobotBaseResult, fit_base_parameters
from rigtool.robot.consistent import ConsistentResult, fit_consistent
from rigtool.robot.motion_advice import MotionAdvice
from rigtool.robot.joint_angles import (JointAngles, PostureAngles, degree_columns,
                                        posture_angles, read_joint_angles)
from rigtool.robot.urdf_model import RobotModel, load_robot_model


@dataclass
class RobotInputs:
    """The robot and its postures' configurations, read before any fit."""

    model: RobotModel
    angles: list[PostureAngles]
    warnings: list[str] = field(default_factory=list)
    motion_angles: JointAngles | None = None      # the [relative_motion] encoders
    notes: list[str] = field(default_factory=list)


@dataclass
class RobotOutcome:
    """What the robot stages produced (report.json's ``robot`` block, robot.urdf,
    base_parameters.csv)."""

    inputs: RobotInputs
    base: RobotBaseResult
    consistent: ConsistentResult | None
    advice: PostureAdvice | None
    locked: RobotBaseResult | None = None        # the locked postures' own, when ``base``
                                                 # also has the motion capture's rows
    motion_advice: MotionAdvice | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    marker_checks: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        """report.json's ``robot`` block."""
        model = self.inputs.model
        out = {
            "urdf": str(model.path), "base_link": model.base_link,
            "fixed_joints": dict(model.fixed_joints),
            "bodies": [{"name": b.name, "joint": b.joint, "joint_type": b.joint_type,
                        "links": list(b.links)} for b in model.bodies],
            "postures": [{"joint_angles": pa.values,
                          "joint_spread": pa.spread} for pa in self.inputs.angles],
            "base_parameters": self.base.to_json(),
            "locked_postures_rank": (self.base if self.locked is None else self.locked).rank,
            "with_motion": self.locked is not None,
            "unidentifiable": self.base.unidentifiable,
            "advice": None if self.advice is None else {
                "text": self.advice.text, "joint_values": self.advice.joint_values,
                "rank_now": self.advice.rank_now, "rank_with": self.advice.rank_with,
                "rank_reachable": self.advice.rank_reachable},
            "motion_advice": (None if self.motion_advice is None
                              else self.motion_advice.to_json()),
            "marker_checks": self.marker_checks,
            "prior_projected": [p.to_json() for p in model.projected],
            "warnings": list(self.warnings), "notes": list(self.notes)}
        if self.consistent is not None:
            out["links"] = self.consistent.to_json(model.names)
        return out


def prepare_robot(session: Session, motion_time_s: np.ndarray | None = None) -> RobotInputs:
    """Read the URDF and every posture's joint angles (errors name the file); with
    ``motion_time_s`` (the ``[relative_motion]`` capture's frame times), its encoders must
    overlap that capture."""
    spec = session.robot
    try:
        model = load_robot_model(spec.urdf, spec.base_link, spec.fixed_joints)
    except ConfigError as exc:
        if exc.path is None:
            raise ConfigError(exc.message, path=spec.urdf) from None
        raise
    angles, warnings = [], []
    revolute = revolute_limits(model)
    note = model.projection_note()
    notes = [note] if note else []
    for ref in session.postures:
        path = spec.joint_angles[ref.name]
        ja = read_joint_angles(path, model.moving_joints, held=list(model.fixed_joints))
        _refuse_degrees(ja, revolute)
        pa = posture_angles(ja, ref.window, name=ref.name)
        lo, hi = model.limits()
        for (joint, v), low, high in zip(pa.values.items(), lo, hi):
            if not (low - 1e-3 <= v <= high + 1e-3):
                warnings.append(f"{ref.name}: joint '{joint}' at {v:.4g}, outside its URDF "
                                f"limits [{low:.4g}, {high:.4g}]")
        angles.append(pa)
        warnings += pa.warnings
    motion = None
    if session.relative_motion is not None:
        if spec.relative_joint_angles is None:
            raise ConfigError("a robot's [relative_motion] needs joint_angles (the encoders' "
                              "file of the motion)", path=session.path,
                              field="relative_motion.joint_angles")
        motion = read_joint_angles(spec.relative_joint_angles, model.moving_joints,
                                   held=list(model.fixed_joints))
        _refuse_degrees(motion, revolute)
        if motion_time_s is not None and (motion.time_s[-1] < motion_time_s[0]
                                          or motion.time_s[0] > motion_time_s[-1]):
            raise ConfigError(
                f"relative_motion: the encoders' times ({motion.time_s[0]:.3f}-"
                f"{motion.time_s[-1]:.3f} s) cover no frame of the capture "
                f"({motion_time_s[0]:.3f}-{motion_time_s[-1]:.3f} s); expected the joint "
                "angles on the capture's clock", path=motion.path, field="time_s")
    return RobotInputs(model, angles, warnings, motion, notes)


def revolute_limits(model: RobotModel) -> dict[str, tuple[float, float]]:
    """Revolute joint -> its URDF limits (rad): what an encoder's unit is judged by."""
    return {b.joint: (b.lower, b.upper) for b in model.bodies[1:]
            if b.joint_type == "revolute" and b.lower is not None}


def _refuse_degrees(ja: JointAngles, limits: dict[str, tuple[float, float]]) -> None:
    """An :class:`~rigtool.errors.InputError` naming the file and the first column that
    fits its limits only as degrees."""
    bad = degree_columns(ja, limits)
    if bad:
        raise InputError(bad[0][1], path=ja.path, field=bad[0][0])


#: A marker on a moving link further than this from where the encoders and the URDF put
#: it (median over a posture's frames, after the marker noise) is reported, m
MARKER_CHECK_TOL_M = 0.003


def link_marker_checks(session: Session, inputs: RobotInputs) -> tuple[list[dict], list[str]]:
    """Markers the manifest puts on links other than the base: per posture and marker, the
    distance (m) between where the capture sees it (in the base link's frame, from the base
    link's markers; the median over the posture's frames) and where forward kinematics of
    the encoders' angles puts it.
    A distance above :data:`MARKER_CHECK_TOL_M` is a warning (a joint reading, the URDF's
    kinematics or the marker's coordinates are off)."""
    from rigtool.kinematics.pose import body_trajectory
    from rigtool.mocap import read_capture

    spec, model = session.robot, inputs.model
    others = {k: v for k, v in spec.markers.items() if k != spec.base_link}
    if not others:
        return [], []
    checks, warnings = [], []
    for ref, pa in zip(session.postures, inputs.angles):
        data = read_capture(ref.capture, units=ref.units)
        base = body_trajectory(data, spec.markers[spec.base_link])
        ok = base.valid
        if ref.window is not None:
            ok = ok & (data.time_s >= ref.window[0]) & (data.time_s <= ref.window[1])
        q = np.array([pa.values[j] for j in model.moving_joints])
        entry = {"posture": ref.name, "distance_m": {}}
        for link, markers in others.items():
            r_l, p_l = model.link_pose(link, q)
            for name, c in markers.items():
                x_lab = data.marker(name)[ok]
                seen = np.isfinite(x_lab).all(axis=1)
                if not seen.any():
                    continue
                rb, pb = base.rotation[ok][seen], base.position_m[ok][seen]
                x_base = np.einsum("tji,tj->ti", rb, x_lab[seen] - pb)
                # the marker's place on the locked robot: its per-frame base-frame positions'
                # median (each frame's carries the base pose's noise times the lever arm)
                d = float(np.linalg.norm(np.median(x_base, axis=0) - (r_l @ c + p_l)))
                entry["distance_m"][f"{link}.{name}"] = d
                if d > MARKER_CHECK_TOL_M:
                    warnings.append(f"{ref.name}: marker '{name}' on '{link}' is {1e3 * d:.1f} "
                                    "mm from where the joint angles and the URDF put it")
        checks.append(entry)
    return checks, warnings


def fit_robot(inputs: RobotInputs, overall: list, total_mass_kg: float,
              total_mass_std_kg: float | None = None, *, consistent: bool = True,
              advice: bool = True, motion: dict | None = None,
              rig: dict | None = None) -> RobotOutcome:
    """Base parameters, advice and per-link parameters from the postures' overall
    properties (``overall``: :class:`~rigtool.identify.subset.regressor.PostureOverall` per
    posture, in the manifest's order). ``motion``: the keywords of
    :func:`rigtool.robot.motion_fit.motion_rows` but the robot and the encoders (a
    ``[relative_motion]`` capture): its rows join the postures'. ``rig``: ``rig``,
    ``platform``, ``r_pb``, ``t_pb`` (the base link in the platform frame) and
    ``passband_hz``, for the motion advice (rigtool.robot.motion_advice)."""
    model = inputs.model
    qs = [np.array([pa.values[j] for j in model.moving_joints]) for pa in inputs.angles]
    poses = [model.body_poses(q) for q in qs]
    mass_std = total_mass_std_kg if total_mass_std_kg and np.isfinite(total_mass_std_kg) \
        else None
    base = fit_base_parameters([r for r, _ in poses], [p for _, p in poses], overall,
                               model.names, total_mass_kg, total_mass_std_kg=mass_std)
    notes = list(inputs.notes) + [f"locked postures identify {base.rank} combinations of the "
             f"{base.n_parameters} standard parameters; {base.n_parameters - base.rank} "
             "directions are taken from the URDF prior"]
    adv = None
    if advice:
        try:
            adv = advise_posture(model, qs, base, total_mass_kg,
                                 reference_radius(overall, total_mass_kg))
        except ValueError as exc:
            # no configuration within the limits keeps the arm clear of the deck (a base
            # frame not on the mounting face, z up): the results stand without advice
            notes.append(f"no posture advised: {exc}")
        if adv is not None and adv.rank_now < adv.rank_reachable:
            notes.append(f"locked postures of this robot can identify {adv.rank_reachable} "
                         f"combinations; these {len(qs)} reach {adv.rank_now}, and until the "
                         "rank is reached the combinations' groupings depend on the postures "
                         "chosen (see the advice)")
    motion_adv = None
    if advice and rig is not None:
        motion_adv = _motion_advice(model, qs, poses, rig, total_mass_kg,
                                    reference_radius(overall, total_mass_kg), notes)
    locked = None
    if motion is not None and inputs.motion_angles is not None:
        from rigtool.robot.motion_fit import motion_extra, motion_rows
        rows = motion_rows(model, angles=inputs.motion_angles, **motion)
        extra = motion_extra(rows, total_mass_kg, reference_radius(overall, total_mass_kg))
        locked = base
        base = fit_base_parameters([r for r, _ in poses], [p for _, p in poses], overall,
                                   model.names, total_mass_kg, total_mass_std_kg=mass_std,
                                   extra=extra)
        if rows.clock is not None and rows.clock.note():
            notes.append(rows.clock.note())
        notes.append(f"the joints' motion ({int(rows.used.sum())} frames) identifies "
                     f"{base.rank - locked.rank} more combinations: {base.rank} in all")
    fit, failed = None, []
    if consistent:
        try:
            fit = fit_consistent(model, base, total_mass_kg=total_mass_kg)
        except RuntimeError as exc:
            # the solver found no per-link set: the base parameters, which the captures
            # determine, are still the result (no robot.urdf, no model files), and say so
            failed = [f"per-link parameters not written: {exc}"]
    warnings = list(inputs.warnings) + failed + ([] if fit is None else fit.warnings)
    return RobotOutcome(inputs, base, fit, adv, locked=locked, motion_advice=motion_adv,
                        warnings=warnings, notes=notes)


def _motion_advice(model: RobotModel, qs: list[np.ndarray], poses: list, rig: dict,
                   total_mass_kg: float, radius_m: float, notes: list[str]
                   ) -> MotionAdvice | None:
    """The joints' motion to capture (rigtool.robot.motion_advice), or None with a note
    when the rig's modes leave no clear frequencies."""
    from rigtool.robot.base_parameters import overall_regressor, structural_rows
    from rigtool.robot.motion_advice import (advise_motion, motion_center, motion_rank,
                                             rig_with_robot)

    center = motion_center(model, qs)
    lin = rig_with_robot(rig["rig"], rig["platform"], model, center, rig["r_pb"],
                         rig["t_pb"])
    try:
        adv = advise_motion(model, center, lin, passband_hz=rig["passband_hz"])
    except ValueError as exc:
        notes.append(f"no joint motion advised: {exc}")
        return None
    locked = structural_rows([overall_regressor(r, p) for r, p in poses], total_mass_kg,
                             radius_m)
    return motion_rank(model, adv, locked, total_mass_kg, radius_m)


__all__ = ["RobotInputs", "RobotOutcome", "prepare_robot", "fit_robot", "revolute_limits",
           "link_marker_checks", "MARKER_CHECK_TOL_M"]
