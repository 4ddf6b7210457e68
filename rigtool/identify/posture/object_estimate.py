"""The posture output-error fit's object in the base-link frame: the fitted object (its standard
parameters in the fit's frame) carried by the base link's pose on the platform, with the
covariance of both propagated to its inertial parameters and to its COM and inertia about the
COM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.identify.common.output_error import central_jacobian, object_in_base_frame
from rigtool.identify.posture.equation_error import transform_matrix
from rigtool.identify.common.propagate import propagate
from rigtool.inertia import InertialParams, com_and_inertia


@dataclass(frozen=True)
class ObjectEstimate:
    """The object in the base-link frame.

    Attributes
    ----------
    params : InertialParams
        Its inertial parameters (base-link frame, about the base-link origin).
    cov9 : ndarray (9, 9)
        Covariance of ``params.pi[1:]`` (everything: noise, calibration, base pose).
    cov9_noise : ndarray (9, 9)
        The marker noise's share.
    props_cov : ndarray (12, 12)
        Covariance of ``[COM (3), inertia about the COM (3x3, row-major)]``.
    props_std, props_std_noise : ndarray (12,)
        Their standard errors, all and the noise's share.
    """

    params: InertialParams
    cov9: np.ndarray
    cov9_noise: np.ndarray
    props_cov: np.ndarray
    props_std: np.ndarray
    props_std_noise: np.ndarray


def object_estimate(pi9_fit: np.ndarray, cov_all: np.ndarray, cov_noise: np.ndarray,
                    base_rotation: np.ndarray, base_position_m: np.ndarray, tmat: np.ndarray,
                    total_mass_kg: float, pose_idx: np.ndarray | None,
                    base_pose_cov: np.ndarray | None,
                    base_pose_wander_cov: np.ndarray | None = None) -> ObjectEstimate:
    """The fitted object ``z`` (9, platform frame) in the base-link frame.

    Parameters
    ----------
    pi9_fit : ndarray (9,)
        The fitted object's standard parameters ``pi[1:]`` (the frame ``tmat`` carries to
        the platform frame; its mass ``total_mass_kg``).
    cov_all, cov_noise : ndarray
        Covariance of the fit's unknowns (all contributions; the noise's share), the
        object's first nine in the coordinates ``pi9_fit``.
    base_rotation, base_position_m : ndarray
        The base link's pose on the platform, ``R = R_b exp([delta x])``, ``t = t_b + dt``.
    tmat : ndarray
        The platform-to-base transform of the fit's parameters.
    total_mass_kg : float
    pose_idx : ndarray (6,) or None
        Where the base pose's six unknowns sit in the fit's unknowns when the fit
        estimated it (base markers); None: the pose was given, with ``base_pose_cov``.
    base_pose_cov : ndarray (6, 6) or None
        Covariance of the given pose ``[t, delta]`` (None: exact).
    base_pose_wander_cov : ndarray (6, 6) or None
        What the base link's markers wandering on the skin add to a fitted pose's
        covariance (the fit takes their frames as independent; None: nothing).

    Returns
    -------
    ObjectEstimate
    """
    def in_base(v):
        return object_in_base_frame(v, base_rotation, base_position_m, tmat, total_mass_kg)

    def pose_block(cov):
        """Covariance of ``[z (9), pose (6)]``."""
        zi = np.arange(9)
        if pose_idx is not None:
            sel = np.concatenate([zi, pose_idx])
            out = cov[np.ix_(sel, sel)].copy()
            if base_pose_wander_cov is not None:
                out[9:, 9:] += np.asarray(base_pose_wander_cov, float)
            return out
        out = np.zeros((15, 15))
        out[:9, :9] = cov[np.ix_(zi, zi)]
        if base_pose_cov is not None:
            out[9:, 9:] = np.asarray(base_pose_cov, float)
        return out

    v_hat = np.concatenate([pi9_fit, np.zeros(6)])
    pi_hat = in_base(v_hat)
    # linear in the parameters (their block exact), through the pose by central differences
    g_pi = np.linalg.solve(transform_matrix(base_rotation, base_position_m), tmat)[1:, 1:]
    g_pose = central_jacobian(lambda pose: in_base(np.concatenate([pi9_fit, pose]))[1:],
                              np.zeros(6), step=1e-7)
    g = np.hstack([g_pi, g_pose])
    cov9 = g @ pose_block(cov_all) @ g.T
    cov9_noise = g @ pose_block(cov_noise) @ g.T

    def props(v):
        return com_and_inertia(v, total_mass_kg)

    _, pcov = propagate(props, pi_hat[1:], cov9)
    _, pcov_noise = propagate(props, pi_hat[1:], cov9_noise)
    return ObjectEstimate(InertialParams(pi_hat), cov9, cov9_noise, pcov,
                          np.sqrt(np.clip(np.diag(pcov), 0, None)),
                          np.sqrt(np.clip(np.diag(pcov_noise), 0, None)))


__all__ = ["ObjectEstimate", "object_estimate"]
