"""A session's own force scale: the springs' force per measured displacement on the day,
measured by the weighed mass and applied to every posture.

With the object's mass weighed and held, a posture fit turns any error in the springs'
force scale into an error of its first moment and inertia many times larger (the demo: a
0.12 % stiffness scale moves its postures by 0.22 mm and 0.64 % of inertia,
benchmarks/real_rig.py). The force scale can change between the calibration and the session:
steel's shear modulus falls by about 2.4e-4 per kelvin (a 5 K warmer day: ``k`` -0.12 %), a
recalibrated motion-capture system reads every length ``lambda`` times (the static stretch
``L - L0`` then by ``(lambda - 1) L / (L - L0)``, a force scale some 15x the length scale
on 1 m springs stretched 60 mm; the platform's markers measure it in each capture and
rigtool.kinematics.length_scale takes it out first), and springs whose stiffness depends on
the load are seen at the subject's stretch, not the reference bodies'.

The weighed mass is an independent measure of that scale: the mass a posture's vibration
gives, the springs' force over the platform's motion (``mass_from_vibration``, first order
about the weighed mass), differs from the weighed one by ``-delta (m_p + m)`` when the
springs are ``1 + delta`` times as stiff as calibrated (the platform's mass ``m_p`` is
held too). Each posture measures ``delta``; the postures' figures together
(:func:`session_force_scale`) are the session's, and when they differ from 1 by more than
:data:`APPLY_AT_SE` standard errors the rig's stiffnesses are scaled by it
(:func:`scaled_rig`), every posture fitted again, and the scale's standard error carried
into each posture's covariance as an error the postures share
(:func:`carry_scale_uncertainty`), and from them into Phi_s and the segments. A scale
consistent with 1 leaves the calibration's springs and every number as they were.

Why one scale is identifiable from the posture captures alone once the mass is weighed: at
rest the springs carry the platform's and the object's weight, ``(1 + delta) sum_i f_i =
(m_p + m) g``, so the static stretch fixes ``delta`` to the precision of the mean spring
force (the frames average the marker noise out; the object's first moment moves the
torques, not the vertical force); the vibration fixes it again, the bouncing modes'
``omega^2`` being ``(1 + delta) k / (m_p + m)``. Without the weighed mass neither would: a
scale on every force is a scale on every inertial parameter but the platform's. The two
do not see a motion-capture scale alike (the static stretch reads it some 15-fold, the
frequencies not at all), so a camera scale is taken out only as far as the statics
dominate the fit; and what the weighed mass's own error reads as is a scale too (``delta``
moves by the weighing error's fraction of the hanging mass), so the scale cannot be
better than the weighing. One scale cannot take out a stiffness that changes along the
stretch within a posture, or springs with mass (their string modes): those are the
calibration's to find.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rigtool.identify.common.propagate import jacobian_fd
from rigtool.inertia import PI9_TO_SUBSET_ORDER, com_and_inertia
from rigtool.rig import Rig

#: the session's scale is applied when it differs from 1 by more than this many of its
#: standard errors (two-sided p = 0.003 when it is 1: the calibrated springs hold)
APPLY_AT_SE = 3.0

#: steel's (music wire's) shear modulus per kelvin, relative: a helical spring's stiffness
#: goes with it (G d^4 / 8 D^3 n; the coil's expansion, 1.2e-5 /K, moves it 20x less)
SHEAR_MODULUS_PER_K = -2.4e-4

#: the key under which the scale's shared error joins each posture's ``shared_errors``
SHARED_KEY = "force scale"


def posture_scale(vibration_kg: float, std_noise_kg: float, std_calibration_kg: float,
                  weighed_kg: float, platform_kg: float) -> dict:
    """One posture's force scale ``delta`` from its mass from vibration.

    Parameters
    ----------
    vibration_kg, std_noise_kg, std_calibration_kg : float
        The posture's mass from vibration and its standard error's two parts (marker noise;
        the calibration's uncertainty, which every posture shares).
    weighed_kg, platform_kg : float
        The weighed mass and the calibrated platform's mass.

    Returns
    -------
    dict
        ``delta``, ``std_noise``, ``std_calibration`` (relative).
    """
    hanging = float(weighed_kg + platform_kg)
    return {"delta": -(float(vibration_kg) - float(weighed_kg)) / hanging,
            "std_noise": float(std_noise_kg) / hanging,
            "std_calibration": float(std_calibration_kg) / hanging}


def session_force_scale(scales: list[dict], names: list[str]) -> dict:
    """The postures' force scales together: the inverse-variance mean of their ``delta``
    (over the noise's share, which is theirs alone), its standard error (that share's,
    and the calibration's, which the postures share and no number of them reduces), the
    postures' reduced chi-square about it, and whether it is applied
    (:data:`APPLY_AT_SE`).

    Parameters
    ----------
    scales : list of dict
        :func:`posture_scale` per posture.
    names : list of str
        The postures' names.

    Returns
    -------
    dict
        ``scale`` (1 + delta), ``delta``, ``std``, ``std_noise``, ``std_calibration``,
        ``chi2_reduced``, ``applied``, ``postures`` (per posture: name, delta, std), and
        ``kelvin_equivalent``: the temperature change that would move a steel spring's
        stiffness as much.
    """
    d = np.array([s["delta"] for s in scales], float)
    sn = np.array([s["std_noise"] for s in scales], float)
    sc = np.array([s["std_calibration"] for s in scales], float)
    w = 1.0 / np.where(sn > 0, sn, np.inf) ** 2
    if not np.any(w > 0):
        w = np.ones_like(d)
    mean = float(np.sum(w * d) / np.sum(w))
    std_noise = float(np.sqrt(1.0 / np.sum(w))) if np.all(sn > 0) else 0.0
    std_cal = float(np.mean(sc)) if len(sc) else 0.0
    std = float(np.hypot(std_noise, std_cal))
    chi2 = (float(np.sum(w * (d - mean) ** 2) / (len(d) - 1))
            if len(d) > 1 and np.all(sn > 0) else float("nan"))
    return {"scale": 1.0 + mean, "delta": mean, "std": std, "std_noise": std_noise,
            "std_calibration": std_cal, "chi2_reduced": chi2,
            "applied": bool(std > 0 and abs(mean) > APPLY_AT_SE * std),
            "kelvin_equivalent": mean / SHEAR_MODULUS_PER_K,
            "postures": [{"posture": n, "delta": float(s["delta"]),
                          "std": float(np.hypot(s["std_noise"], s["std_calibration"]))}
                         for n, s in zip(names, scales)]}


def scaled_rig(rig: Rig, scale: float) -> Rig:
    """The rig with every spring's stiffness times ``scale`` (free lengths and damping as
    calibrated: a scale of the force per displacement)."""
    return replace(rig, springs=tuple(replace(s, stiffness=s.stiffness * scale)
                                      for s in rig.springs))


def scale_moved(before, after) -> dict:
    """How far applying the scale moved a posture: its COM (mm) and inertia about the COM
    (relative, Frobenius norms)."""
    return {"com_mm": 1e3 * float(np.linalg.norm(after.com - before.com)),
            "inertia_rel": float(np.linalg.norm(after.inertia_com - before.inertia_com)
                                 / np.linalg.norm(before.inertia_com))}


def carry_scale_uncertainty(result, shift: np.ndarray, std: float):
    """A posture result with the session scale's standard error in its covariances.

    Parameters
    ----------
    result : rigtool.identify.posture.equation_error.PostureResult
    shift : ndarray (9,)
        The posture's first moment and inertia about the base-link origin (``pi[1:]``)
        per unit ``delta``: its fit with the scaled rig less its fit with the calibrated
        one, over ``delta`` (the fits' own sensitivity, first order).
    std : float
        The session scale's standard error (relative).

    Returns
    -------
    result : PostureResult
        ``params_cov``, ``props_cov``, ``covariance9`` and the standard errors with
        ``std**2 shift shift^T`` (and its image in the COM and inertia) added.
    shared : ndarray (9,)
        The shift at one standard error in the subset's order (``[h, J0]``): the same
        scale moves every posture, so the postures share it
        (``PostureOverall.shared_errors``).
    """
    g = np.asarray(shift, float) * float(std)
    x = np.asarray(result.params.pi[1:], float)
    jac = jacobian_fd(lambda v: com_and_inertia(v, result.mass), x)
    gp = jac @ g
    props_cov = result.props_cov + np.outer(gp, gp)
    pstd = np.sqrt(np.clip(np.diag(props_cov), 0, None))
    g9 = g[PI9_TO_SUBSET_ORDER]
    cov9 = None if result.covariance9 is None else result.covariance9 + np.outer(g9, g9)
    out = replace(result, params_cov=result.params_cov + np.outer(g, g), props_cov=props_cov,
                  com_std=pstd[:3], inertia_com_std=pstd[3:].reshape(3, 3), covariance9=cov9)
    return out, g9


__all__ = ["APPLY_AT_SE", "SHEAR_MODULUS_PER_K", "SHARED_KEY", "posture_scale",
           "session_force_scale", "scaled_rig", "scale_moved", "carry_scale_uncertainty"]
