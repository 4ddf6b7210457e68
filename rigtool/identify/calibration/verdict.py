"""Whether a calibration holds: its held-out reference bodies against their known values, and
the likely cause when they do not.

A held-out body is identified as a posture is (mass known), with the calibrated rig and its
standard errors. Its largest error in standard errors (``max_error_z``) over the COM and the
six inertia entries tells whether the rig's model holds; over :data:`HOLDOUT_Z_LIMIT` it does
not, and ``rigtool calibrate`` says so and exits with
:data:`rigtool.errors.EXIT_MODEL_FAILED` (the calibrated file is written all the same).

The cause is read from the held-out fit's signature:

- its mass from vibration (:class:`~rigtool.identify.posture.vibration_mass.VibrationMass`)
  off the known mass beyond its standard errors is a force scale, ``delta = -(m_v - m) /
  (m_p + m)``: the springs give this body another force per displacement than the fitted
  captures' bodies. With its springs stretched outside the fitted captures' range, a
  stiffness that changes with the stretch (progressive springs, hooks seating); within it,
  captures from different days (temperature: steel's stiffness -2.4e-4 per kelvin; a
  motion-capture system calibrated again between them), or the rig file's anchors off;
- its mass right and its COM or inertia wrong is motion the rigid suspension's model lacks:
  springs with mass (their weight hangs on the platform, their string modes shake it), an
  anchor frame that gives, or the reference body's values in the rig file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: a held-out body off by more than this many standard errors fails the calibration (45
#: Gaussian errors over 5 captures' nine numbers exceed it with probability 0.3 %)
HOLDOUT_Z_LIMIT = 4.0

#: a held-out body's force scale this many standard errors off 1 is read as one
SCALE_Z = 3.0


@dataclass(frozen=True)
class HoldoutSignature:
    """What a held-out fit says beyond its errors.

    Attributes
    ----------
    capture : str
    max_error_z : float
        Its largest COM or inertia error in standard errors.
    force_scale : float
        ``delta`` its mass from vibration reads (NaN when not measured).
    force_scale_std : float
    stretch_mm : float
        Its springs' mean stretch ``L - L0`` at rest, mm.
    fitted_stretch_mm : tuple of float
        The fitted captures' smallest and largest mean stretch, mm.
    """

    capture: str
    max_error_z: float
    force_scale: float = float("nan")
    force_scale_std: float = float("nan")
    stretch_mm: float = float("nan")
    fitted_stretch_mm: tuple[float, float] = (float("nan"), float("nan"))

    @property
    def failed(self) -> bool:
        """Off by more than :data:`HOLDOUT_Z_LIMIT` standard errors."""
        return bool(np.isfinite(self.max_error_z) and self.max_error_z > HOLDOUT_Z_LIMIT)

    @property
    def scale_z(self) -> float:
        """The force scale in its standard errors (NaN when not measured)."""
        if not (np.isfinite(self.force_scale) and self.force_scale_std > 0):
            return float("nan")
        return abs(self.force_scale) / self.force_scale_std

    def likely_cause(self) -> str:
        """The likely cause, one sentence, from the fit's signature (module docstring)."""
        if np.isfinite(self.scale_z) and self.scale_z > SCALE_Z:
            lo, hi = self.fitted_stretch_mm
            scale = (f"its springs give {100 * self.force_scale:+.3f} ± "
                     f"{100 * self.force_scale_std:.3f} % of the force per displacement the "
                     "fitted captures' do")
            if not (np.isfinite(lo) and np.isfinite(hi)):
                return (f"{scale} (the calibration captures' stretch not known here): a "
                        "stiffness that changes with the stretch (progressive springs) if "
                        "this load stretches them otherwise, else a temperature change "
                        "(steel -0.024 % per kelvin) or the cameras calibrated again")
            if np.isfinite(self.stretch_mm) and not lo - 0.5 <= self.stretch_mm <= hi + 0.5:
                return (f"{scale}, at a stretch ({self.stretch_mm:.1f} mm) outside theirs "
                        f"({lo:.1f}-{hi:.1f} mm): a stiffness that changes with the stretch "
                        "(progressive springs); calibrate with reference loads spanning the "
                        "subject's")
            return (f"{scale}, within their stretch ({lo:.1f}-{hi:.1f} mm): captures from "
                    "different days (a temperature change, steel -0.024 % per kelvin; the "
                    "cameras calibrated again between them), or the rig file's anchors off "
                    "where the springs hang")
        return ("its mass from vibration is right, its COM or inertia is not: motion the "
                "rigid suspension's model lacks (springs with mass: their string modes and "
                "their weight; an anchor frame that gives), or the reference body's values in "
                "the rig file")


def max_error_z(identified_com: np.ndarray, known_com: np.ndarray,
                identified_inertia: np.ndarray, known_inertia: np.ndarray,
                com_std: np.ndarray, inertia_std: np.ndarray) -> float:
    """The largest error in standard errors over the COM (3) and the six inertia entries
    (upper triangle of the inertia about the COM); NaN without standard errors."""
    iu = np.triu_indices(3)
    err = np.concatenate([np.asarray(identified_com, float) - known_com,
                          (np.asarray(identified_inertia, float) - known_inertia)[iu]])
    std = np.concatenate([np.asarray(com_std, float), np.asarray(inertia_std, float)[iu]])
    z = np.abs(err) / np.where(std > 0, std, np.nan)
    return float(np.nanmax(z)) if np.any(np.isfinite(z)) else float("nan")


__all__ = ["HOLDOUT_Z_LIMIT", "SCALE_Z", "HoldoutSignature", "max_error_z"]
