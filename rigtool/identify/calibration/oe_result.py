"""The output-error calibration's result: the refined rig, its standard errors and full
covariance (the lab frame's too, when fitted), and the forms later fits take it in."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.calibration_uncertainty import calibration_members
from rigtool.identify.common.propagate import propagate
from rigtool.identify.posture.problem import object_to_z, z_to_params
from rigtool.inertia import InertialParams
from rigtool.rig import Rig


@dataclass(frozen=True)
class CalibrationRefinement:
    """Refined rig; standard errors from the Gauss-Newton covariance (marker noise)."""

    rig: Rig                                   # springs and platform params refined
    platform: InertialParams
    stiffness_std: np.ndarray
    free_length_std: np.ndarray
    damping_std: np.ndarray
    platform_mass_std: float
    platform_com_std: np.ndarray
    platform_inertia_std: np.ndarray           # of the inertia about the COM, 3x3
    covariance: np.ndarray                     # [k, L0, c, m, com, Sigma_c log-Cholesky]
    initial_states: dict[str, np.ndarray]      # capture -> [p, rotvec about ref, v, omega]
    residual_rms_mm: dict[str, float]
    marker_sigma_mm: float
    iterations: int
    elapsed_s: float
    warnings: list[str] = field(default_factory=list)
    frame: np.ndarray | None = None            # measured <- rig [rotvec rad, t m], if fitted
    frame_covariance: np.ndarray | None = None  # its 6x6 (not in ``covariance``)
    frame_cross: np.ndarray | None = None      # covariance of ``covariance``'s entries with it
    standard_errors: str = "independent"        # or "frame": clustered by frame

    def physical_covariance(self) -> np.ndarray:
        """Covariance of the calibration in physical parameters, in the order of
        rigtool.calibration_uncertainty.parameter_names (springs' stiffness, free
        length, damping; platform mass, COM, inertia about the COM), by the delta method from
        the fit's log-Cholesky parameters."""
        n_spr = len(self.rig.springs)

        def physical(s: np.ndarray) -> np.ndarray:
            p = InertialParams(_platform_pi(s[3 * n_spr:]))
            ic = p.inertia_com
            return np.concatenate([s[:3 * n_spr], [p.mass], p.com,
                                   ic[np.triu_indices(3)]])

        _, cov = propagate(physical, self._shared(), self.covariance)
        if self.frame is not None:
            # the frame's entries (perturbations about the fitted frame: see
            # rigtool.calibration_uncertainty) are carried through unchanged
            n = self.covariance.shape[0]
            joint = np.block([[self.covariance, self.frame_cross],
                              [self.frame_cross.T, self.frame_covariance]])
            _, cov = propagate(lambda v: np.concatenate([physical(v[:n]), v[n:]]),
                               np.concatenate([self._shared(), np.zeros(6)]), joint)
        return 0.5 * (cov + cov.T)

    def _shared(self) -> np.ndarray:
        return np.concatenate([self.rig.stiffness, self.rig.free_length, self.rig.damping,
                               _platform_z(self.platform)])

    def as_calibration_std(self) -> dict:
        """Uncertainty in the form ``refine_posture(calibration_std=...)`` takes.

        Besides the standard errors, ``"members"`` holds one perturbed calibration per
        principal axis of the full covariance (``x + sqrt(lambda_j) v_j``, physical
        parameters), so the posture fit propagates the calibration's correlations too
        (stiffness and free length are strongly correlated; their standard errors alone
        overstate the effect). A rig file written by ``rigtool calibrate`` stores the same
        covariance (``[calibration.covariance]``) and gives the same members.
        """
        members = calibration_members(self.rig, self.platform, self.physical_covariance())
        return {"stiffness": self.stiffness_std, "free_length": self.free_length_std,
                "damping": self.damping_std, "platform_mass": self.platform_mass_std,
                "platform_com": self.platform_com_std,
                "platform_inertia_com": self.platform_inertia_std, "members": members}


def _platform_z(platform: InertialParams, floor: float = 1e-6) -> np.ndarray:
    return np.concatenate([[platform.mass], object_to_z(platform.com, platform.inertia_com,
                                                        floor=floor)])


def _platform_pi(zp: np.ndarray) -> np.ndarray:
    return z_to_params(zp[1:], zp[0])


__all__ = ["CalibrationRefinement"]
