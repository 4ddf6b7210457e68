"""What a posture's output-error fit returns (rigtool.identify.posture.output_error):
:class:`OutputErrorResult`, with its drop-in :class:`PostureResult` for the subset stage and
the report, and the platform's markers measured against simulated at the estimate
(:class:`PlatformMarkerFit`, for the report's figure).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from rigtool.engine.markers import predicted_markers
from rigtool.identify.posture.boundary import Boundary
from rigtool.identify.posture.equation_error import PostureResult
from rigtool.identify.posture.vibration_mass import VibrationMass
from rigtool.inertia import InertialParams


@dataclass(frozen=True)
class PlatformMarkerFit:
    """The platform's markers over the fitted window: ``measured_m`` (NaN where unseen) and
    ``simulated_m`` ``[T, K, 3]`` (lab, m) at the estimate, ``names [K]``, ``time_s [T]``."""

    names: tuple[str, ...]
    time_s: np.ndarray
    measured_m: np.ndarray
    simulated_m: np.ndarray


@dataclass(frozen=True)
class OutputErrorResult:
    """Output-error estimate of one posture (conventions of :class:`PostureResult`).

    ``com``/``inertia_com`` are in the base-link frame; ``covariance9`` is the covariance of
    ``[h (3), I about the base-link origin: xx yy zz yz zx xy]`` as the subset stage expects.
    """

    name: str
    mass: float
    com: np.ndarray
    com_std: np.ndarray
    inertia_com: np.ndarray
    inertia_com_std: np.ndarray
    params: InertialParams
    params_cov: np.ndarray                  # 9x9 of pi[1:]
    props_cov: np.ndarray                   # 12x12 of [com, inertia_com]
    covariance9: np.ndarray
    initial_state: dict[str, np.ndarray]    # position_m, rotation, velocity_lab, omega_lab
    residual_rms_mm: float
    marker_sigma_mm: float                  # residual std with the fit's dof removed (mm)
    n_residuals: int
    iterations: int
    elapsed_s: float
    horizons_s: tuple[float, ...]
    nuisance: dict[str, float]
    start: PostureResult
    time_s: np.ndarray                      # frames of the window
    residual_rms_frame_mm: np.ndarray       # RMS marker residual per frame (NaN: none seen)
    stages: tuple = ()                      # (horizon s, nfev, njev) per least-squares stage
    com_std_noise: np.ndarray | None = None           # marker noise only (no calibration)
    inertia_com_std_noise: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)
    method: str = "output-error"
    base_rotation_platform: np.ndarray | None = None  # the base link's pose used (platform frame)
    base_position_platform_m: np.ndarray | None = None
    base_pose_fitted: bool = False                    # estimated in the fit (base_markers)
    attached_markers: tuple[str, ...] = ()            # object markers in the fit
    attached_scatter_mm: tuple[float, ...] = ()       # their RMS scatter about their place
    left_out_markers: tuple[tuple[str, float], ...] = ()   # object markers not still on the
                                                      # platform: (name, RMS scatter mm)
    mass_from_vibration: VibrationMass | None = None  # the scale check (mass freed, 1 step)
    platform_markers: "PlatformMarkerFit | None" = None    # measured vs simulated (figures)
    noise_model: str = "isotropic"                    # or "covariance" (rows whitened)
    noise_source: str = ""                            # where the covariance came from
    noise_scale: float = float("nan")                 # whitened residual std (1: the
                                                      # covariance is right); NaN isotropic
    # the marker noise's standard errors: "independent", "serial" or "frame" (the sandwich:
    # its clusters, frames per cluster, its SEs' relative std (the largest of the object's
    # unknowns) and the per-frame scores' autocorrelation from lag 0)
    standard_errors: str = "independent"
    se_clusters: int = 0
    se_cluster_frames: int = 0
    se_rel_precision: float = float("nan")
    se_score_autocorrelation: np.ndarray | None = None
    # "serial" (or "auto" judging it): the serial-correlation-robust variances over the
    # independent frames' (mean over the object's; NaN when not computed)
    se_serial_inflation: float = float("nan")
    breath: dict | None = None                        # the breath's model (as the start's)
    # the breath's measurement noise, carried by its probes: their number and its share of
    # the COM's and inertia's standard errors (base-link frame); None without a breath
    breath_input: dict | None = None
    # the body on the physical-consistency boundary (a flat body as the capture sees it):
    # its flat axis and the one-sided bound the data put on it; None inside
    boundary: "Boundary | None" = None

    def as_posture_result(self) -> PostureResult:
        """The start's :class:`PostureResult` with this fit's numbers (a drop-in for the
        subset stage and the report); ``weighting`` reads ``"output-error"``."""
        return replace(self.start, com=self.com, com_std=self.com_std,
                       inertia_com=self.inertia_com, inertia_com_std=self.inertia_com_std,
                       params=self.params, params_cov=self.params_cov,
                       props_cov=self.props_cov, covariance9=self.covariance9,
                       weighting="output-error",
                       breath=self.start.breath if self.breath is None else self.breath,
                       residual_rms={**self.start.residual_rms,
                                     "marker_mm": self.residual_rms_mm},
                       mass_from_vibration=(None if self.mass_from_vibration is None else
                                            (self.mass_from_vibration.value_kg,
                                             self.mass_from_vibration.std_kg)),
                       warnings=list(self.start.warnings) + list(self.warnings))


def platform_marker_fit(prob, states: np.ndarray | None, names: list[str],
                        time_s: np.ndarray) -> PlatformMarkerFit | None:
    """The platform's markers measured and simulated at the estimate (for the report);
    ``prob`` the fit's rigtool.identify.posture.problem.PostureProblem."""
    if states is None:
        return None
    k_n = len(names)
    t_n = states.shape[0]
    seen = prob.mask[:t_n, :k_n]
    measured = np.where(seen[..., None], prob.measured[:t_n, :k_n], np.nan)
    return PlatformMarkerFit(tuple(names), np.asarray(time_s[:t_n], float), measured,
                             predicted_markers(states, prob.markers_body[:k_n]))


__all__ = ["OutputErrorResult", "PlatformMarkerFit", "platform_marker_fit"]
