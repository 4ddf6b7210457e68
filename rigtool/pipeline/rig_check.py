"""A check of the rig on the day: reference bodies captured before the session, identified with
the calibrated rig, against their known values.

The calibration holds the day it was made. Between it and the session the springs may have
warmed (steel's stiffness -2.4e-4 per kelvin), the cameras may have been calibrated again (a
length scale), hooks may have seated. A short capture of reference bodies the rig file
describes (``[[rig_checks]]`` in the manifest) tells: each is identified as a calibration's
held-out body is (rigtool.pipeline.calibration.identify_holdout: mass known, COM and inertia
fitted by output error with the calibration's uncertainty), and

- its largest COM or inertia error in standard errors says whether the rig is still the one
  calibrated (:data:`~rigtool.identify.calibration.verdict.HOLDOUT_Z_LIMIT`), with the likely
  cause from the fit's signature when it is not;
- its mass from vibration against the body's known mass measures the springs' force scale
  on the day (rigtool.identify.posture.force_scale), which joins the postures' own (the
  weighed mass's) in the session's scale: what the check measures is applied.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from rigtool.calibration_uncertainty import calibration_std_from_rigfile
from rigtool.config import CalibrationCapture, FilterSettings, RigFile, Session
from rigtool.errors import ConfigError
from rigtool.identify.calibration.equation_error import HoldoutCheck
from rigtool.identify.posture.force_scale import posture_scale
from rigtool.kinematics.length_scale import to_layout_scale
from rigtool.identify.common.platform_motion import CaptureMotion
from rigtool.mocap import MarkerData, read_capture
from rigtool.pipeline.calibration import identify_holdout, prepare_capture


@dataclass(frozen=True)
class DayCheck:
    """One reference-body capture of the day.

    Attributes
    ----------
    name : str
        The capture's file name.
    load : tuple of str
        The rig file's reference bodies on the platform.
    holdout : HoldoutCheck
        Its identification against the known values (with its signature).
    scale : dict or None
        Its force scale (:func:`~rigtool.identify.posture.force_scale.posture_scale`).
    capture : CaptureMotion
        The capture prepared (platform motion, its known load), kept to identify it again.
    data : MarkerData
        The capture's markers at the rig's length scale (the output-error fit's data).
    window : tuple of float or None
        The capture's analysis window, s.

    The session's inputs (path and sha256) list the capture (rigtool.pipeline.inputs).
    """

    name: str
    load: tuple[str, ...]
    holdout: HoldoutCheck
    scale: dict | None
    capture: CaptureMotion
    data: MarkerData
    window: tuple[float, float] | None
    #: the session's force scale the rig was scaled by before ``holdout`` was identified
    #: (None: the calibrated rig as it is); ``scale`` stays what the check measured against
    #: the calibration
    applied_scale: float | None = None

    def to_json(self) -> dict:
        """The check's figures for report.json."""
        sig = self.holdout.signature
        out = {"capture": self.name, "load": list(self.load),
               "judged_with_force_scale": self.applied_scale,
               "com_error_mm": 1e3 * self.holdout.com_error_m,
               "inertia_error_rel": self.holdout.inertia_error_rel,
               "max_error_z": None if sig is None else sig.max_error_z,
               "holds": None if sig is None else not sig.failed}
        if self.scale is not None:
            out["force_scale"] = {"delta": self.scale["delta"],
                                  "std": float(np.hypot(self.scale["std_noise"],
                                                        self.scale["std_calibration"]))}
        if sig is not None and sig.failed:
            out["likely_cause"] = sig.likely_cause()
        return out


def check_rig_on_the_day(session: Session, rigfile: RigFile, settings: FilterSettings, *,
                         progress: Callable[[str], None] | None = None) -> list[DayCheck]:
    """Every ``[[rig_checks]]`` capture of ``session`` identified with ``rigfile``'s calibrated
    rig (:class:`DayCheck` each; empty without checks).

    Raises
    ------
    ConfigError
        The rig file is not calibrated, or a check names a body it does not describe.
    """
    if not session.rig_checks:
        return []
    rig = rigfile.rig
    if not rigfile.calibrated or rig.platform.params is None:
        raise ConfigError("a rig check needs the calibrated rig file (`rigtool calibrate` "
                          "writes it)", path=session.path, field="rig_checks")
    known = set(rigfile.reference_bodies)
    cal_std = calibration_std_from_rigfile(rigfile.raw, rig, path=rigfile.path)
    out = []
    for i, ref in enumerate(session.rig_checks):
        missing = [n for n in ref.load if n not in known]
        if missing:
            raise ConfigError(f"names {', '.join(missing)}, which the rig file "
                              f"{rigfile.path.name} does not describe (its reference bodies: "
                              f"{', '.join(sorted(known)) or 'none'})", path=session.path,
                              field=f"rig_checks[{i}].load", found=list(ref.load))
        if progress:
            progress(f"rig check {i + 1}/{len(session.rig_checks)}: {ref.capture.name}")
        data, _ = to_layout_scale(read_capture(ref.capture, units=ref.units),
                                  rig.platform.markers_platform, ref.capture)
        entry = CalibrationCapture(ref.capture, ref.load, ref.window, ref.units, holdout=True)
        cap = prepare_capture(rigfile, entry, data, settings, seed=1000 + i)
        check, scale = _identify(rigfile, cap, data, ref.window, cal_std)
        out.append(DayCheck(ref.capture.name, ref.load, check, scale, cap, data, ref.window))
    return out


def _identify(rigfile: RigFile, cap: CaptureMotion, data: MarkerData,
              window: tuple[float, float] | None, cal_std: dict | None
              ) -> tuple[HoldoutCheck, dict | None]:
    """One prepared check capture identified with ``rigfile``'s calibrated rig: its
    :class:`HoldoutCheck` and its force scale (None when the vibration gave no mass)."""
    rig = rigfile.rig
    # the calibration captures' stretch is not in the calibrated file: the cause of a
    # scale is then named without comparing the stretches
    check, oe = identify_holdout(rig, rig.platform.params, cap, data, window, cal_std,
                                 (float("nan"), float("nan")))
    vm = oe.mass_from_vibration
    scale = (None if vm is None else
             posture_scale(vm.value_kg, vm.std_noise_kg, vm.std_calibration_kg,
                           cap.load.mass, rig.platform.params.mass))
    return check, scale


def judged_with_scale(checks: list[DayCheck], rigfile: RigFile,
                      scale: float) -> list[DayCheck]:
    """The checks identified again, from their prepared captures, with ``rigfile``'s rig
    already scaled by the session's force ``scale`` (what the report's numbers use): whether
    the rig holds once the scale is applied; each check's own measured scale is kept."""
    if not checks:
        return []
    cal_std = calibration_std_from_rigfile(rigfile.raw, rigfile.rig, path=rigfile.path)
    return [replace(c, holdout=_identify(rigfile, c.capture, c.data, c.window, cal_std)[0],
                    applied_scale=float(scale)) for c in checks]


__all__ = ["DayCheck", "check_rig_on_the_day", "judged_with_scale"]
