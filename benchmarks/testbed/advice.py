"""The joints' motion a lab drives while the platform vibrates: the one rigtool advises.

A lab asks rigtool which motion to capture (``report.json``'s ``robot.motion_advice``, or
``motion_advice.csv``) from what it has: the URDF it was given (the CAD prior), its calibrated
rig file and the locked postures. This module asks rigtool's advice
(:func:`rigtool.robot.motion_advice.advise_motion`) the same question and returns the sines it
names; the test bed then drives MuJoCo's actuators along them with its own evaluation. It is
the test bed's one call into rigtool, and it is planning, not physics: nothing simulated
depends on it but the targets the servos follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class AdvisedMotion:
    """Per joint (``joints``, URDF names) a sum of sines about ``center`` (rad), faded in
    from rest over ``ramp_s`` by a smoothstep; ``text`` is rigtool's own words."""

    joints: list[str]
    center: np.ndarray
    frequencies_hz: np.ndarray
    amplitudes: np.ndarray
    phases_rad: np.ndarray
    ramp_s: float
    text: str

    def offset(self, t: float) -> np.ndarray:
        """Each joint's angle less its centre at time ``t`` (s from the start)."""
        s = min(max(t / self.ramp_s, 0.0), 1.0)
        w = s * s * (3.0 - 2.0 * s)
        arg = 2 * np.pi * self.frequencies_hz[None, :] * t + self.phases_rad
        return w * np.sum(self.amplitudes * np.sin(arg), axis=1)

    def to_json(self) -> dict:
        """As truth.json keeps it."""
        return {"joints": self.joints, "center": self.center.tolist(),
                "frequencies_hz": self.frequencies_hz.tolist(),
                "amplitudes": self.amplitudes.tolist(), "phases_rad": self.phases_rad.tolist(),
                "ramp_s": self.ramp_s, "text": self.text}


def advised_motion(urdf: Path, base_link: str, calibrated_rig: Path,
                   postures: list[dict[str, float]], *, seed: int = 0) -> AdvisedMotion:
    """rigtool's advice for the session's motion capture: about the locked posture with the
    most room to its limits, clear of the rig's modes with the arm (its URDF's inertials) on
    the calibrated rig, the arm's base at the platform's origin.

    Raises
    ------
    ValueError
        rigtool advises no motion (no frequencies clear of the modes, or none that keeps
        the arm clear of the deck).
    """
    from rigtool.config import FilterSettings, load_rig
    from rigtool.robot.motion_advice import advise_motion, motion_center, rig_with_robot
    from rigtool.robot.urdf_model import load_robot_model

    model = load_robot_model(urdf, base_link)
    rig = load_rig(calibrated_rig).rig
    qs = [np.array([q[j] for j in model.moving_joints]) for q in postures]
    center = motion_center(model, qs)
    lin = rig_with_robot(rig, rig.platform.params, model, center, np.eye(3), np.zeros(3))
    adv = advise_motion(model, center, lin, passband_hz=FilterSettings().passband_hz,
                        seed=seed).to_json()
    return AdvisedMotion(list(adv["joints"]), np.asarray(adv["center"], float),
                         np.asarray(adv["frequencies_hz"], float),
                         np.asarray(adv["amplitudes"], float),
                         np.asarray(adv["phases_rad"], float), float(adv["ramp_s"]),
                         adv.get("text") or "")
