"""The object's mass as the free vibration sees it (output error): a check on the scale.

The output-error posture fit (rigtool.identify.posture.output_error) holds the object's mass
at the weighed value. The vibration itself also determines it: with the springs calibrated,
the frequencies and the static sag fix the suspended mass. Freeing the mass at the converged
estimate and taking one Gauss-Newton step from there (the step of Rao's score test) gives the
maximum-likelihood mass of the capture to first order, with every other unknown re-adjusted
(the step solves the augmented normal equations, nuisance places of the attached markers
included). Its standard error holds the marker noise (``s^2`` times the mass's entry of the
inverse augmented information) and the calibration's uncertainty (the same first-order
sensitivity to each calibration member as the posture's own standard errors).

Why one step and not a refit: at a weighed mass within the model's reach the step is the
refit's first iterate from a point where the other unknowns already sit at their optimum,
and the cost is one more column in the final normal equations the fit evaluates anyway.
When the weighed mass is far off (percent level), the posture fit itself no longer reaches
the marker noise and the step is only indicative; the report's residual check says so.

Conventions: residual rows in mm (rigtool.engine.markers), the mass direction in the engine's
``theta`` (its first 10 entries are the assembly's standard parameters, platform frame).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.engine.params import body_params


@dataclass(frozen=True)
class VibrationMass:
    """The object's mass from one posture capture's vibration.

    Attributes
    ----------
    value_kg : float
        Maximum-likelihood mass (first order about the weighed one).
    std_kg : float
        Standard error: marker noise and calibration together.
    std_noise_kg, std_calibration_kg : float
        Its two parts (``std_calibration_kg`` is 0 without a calibration uncertainty).
    """

    value_kg: float
    std_kg: float
    std_noise_kg: float
    std_calibration_kg: float


def mass_theta_direction(z_obj: np.ndarray, mass_kg: float, tmat: np.ndarray,
                         n_theta: int) -> np.ndarray:
    """``d theta / d m [n_theta]``: the engine inputs' change per kg of object mass, with the
    object's COM and COM-centred second moment ``z_obj`` held (``tmat`` maps the object's
    base-link parameters to the platform frame)."""
    _, _, dpi_dm = body_params(np.asarray(z_obj, float), float(mass_kg))
    out = np.zeros(n_theta)
    out[:10] = np.asarray(tmat, float) @ dpi_dm
    return out


def vibration_mass(weighed_kg: float, s2: float, info: np.ndarray, grad: np.ndarray,
                   mass_cross: np.ndarray, mass_info: float, mass_grad: float,
                   cal_cross: np.ndarray | None = None,
                   mass_cal: np.ndarray | None = None) -> VibrationMass:
    """One Gauss-Newton step on the mass from the mass-fixed optimum.

    Parameters
    ----------
    weighed_kg : float
        The mass the fit held.
    s2 : float
        Residual variance (mm^2) of the fit.
    info : ndarray (p, p)
        Information ``J^T J`` of the fitted unknowns (nuisance included).
    grad : ndarray (p,)
        ``J^T r`` of those unknowns at the estimate (about zero at the optimum).
    mass_cross : ndarray (p,)
        ``J^T j_m``: cross products of the unknowns' columns with the mass column.
    mass_info, mass_grad : float
        ``j_m^T j_m`` and ``j_m^T r``.
    cal_cross : ndarray (p, C), optional
        ``J^T J_cal`` of the calibration members (one standard error each).
    mass_cal : ndarray (C,), optional
        ``j_m^T J_cal``.
    """
    p = info.shape[0]
    aug = np.zeros((p + 1, p + 1))
    aug[:p, :p] = info
    aug[:p, p] = aug[p, :p] = mass_cross
    aug[p, p] = mass_info
    aug_inv = np.linalg.pinv(aug)
    step = -aug_inv @ np.concatenate([grad, [mass_grad]])
    var_noise = float(s2 * aug_inv[p, p])
    var_cal = 0.0
    if cal_cross is not None and mass_cal is not None and cal_cross.shape[1]:
        sens = -aug_inv[p] @ np.vstack([cal_cross, mass_cal[None, :]])
        var_cal = float(sens @ sens)
    std_noise = float(np.sqrt(max(var_noise, 0.0)))
    std_cal = float(np.sqrt(var_cal))
    return VibrationMass(float(weighed_kg + step[p]), float(np.hypot(std_noise, std_cal)),
                         std_noise, std_cal)


__all__ = ["VibrationMass", "mass_theta_direction", "vibration_mass"]
