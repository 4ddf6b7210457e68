"""The relative-motion output-error fit's result (:class:`RelativeRefinement`: Phi_B with its
covariance, the moving links' J_yy, joint damping, residuals and the fit's stages) and the
tests a refinement must pass to be reported (:meth:`RelativeRefinement.reached_noise`,
:meth:`RelativeRefinement.start_agreement`), with :class:`ModelMismatch`, raised when the
passive model cannot follow the capture at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.stats import chi2

from rigtool.identify.relative.equation_error import RelativeResult, eq16_with
from rigtool.tree import j_matrix

#: a refinement whose residual exceeds this multiple of the marker noise has not fitted the
#: data (model error or a start too far off); its estimate is not reported
REACHED_NOISE_FACTOR = 1.5
#: a refinement whose Phi_B is further from its equation-error start than this upper tail
#: probability allows (:meth:`RelativeRefinement.start_agreement`) takes for marker noise
#: what its model lacks; its estimate is not reported ...
AGREEMENT_P = 1e-3
#: ... the test made against this multiple of the two fits' covariances: both are estimates
#: (serial-correlation-robust ones from one capture, which covered 81-92 % of a posture's
#: numbers where its residual is correlated), so only a difference beyond their own
#: uncertainty counts. On the simulator the refinements whose standard errors cover (skin
#: markers, a living whole body: p down to 6e-7 without it) pass with it, and the
#: heartbeat's, 18 standard errors off, does not (p 5e-13 to 4e-6)
AGREEMENT_VARIANCE_MARGIN = 2.0


class ModelMismatch(Exception):
    """The swing model cannot follow the capture: already on the first horizon (initial state
    fitted, parameters at the equation-error start) its residual is ``residual_mm`` against
    ``floor_mm``, the marker sets' own scatter in their rigid fits (raised only when the
    caller asks, ``reject_above``); ``noise_mm`` is the platform's markers' noise."""

    def __init__(self, residual_mm: float, floor_mm: float, horizon_s: float,
                 elapsed_s: float, noise_mm: float = float("nan")) -> None:
        super().__init__(f"the passive model leaves {residual_mm:.3f} mm against "
                         f"{floor_mm:.3f} mm marker scatter on the first {horizon_s:.1f} s")
        self.residual_mm, self.floor_mm = residual_mm, floor_mm
        self.noise_mm = noise_mm if np.isfinite(noise_mm) else floor_mm
        self.horizon_s, self.elapsed_s = horizon_s, elapsed_s


@dataclass(frozen=True)
class RelativeRefinement:
    """Output-error estimate of Phi_B from a relative-motion capture.

    ``phi_b``/``phi_b_cov``/``phi_b_std`` (names ``names``) the full minimal set;
    ``jyy``/``jyy_std``/``bounds`` the moving links' ``J_yy`` (``link.J_yy``);
    ``joint_damping``/``joint_damping_std`` by link name (``"shared"`` when one value);
    ``residual_rms_mm`` per marker set (``platform`` and each link). ``phi_b_std_noise``:
    marker noise only. ``values``/``std_phi_b``/``covariance``/``resolved``/``std`` mirror
    :class:`RelativeResult`; :meth:`as_relative_result` gives a drop-in one.

    ``noise_mm`` is the marker noise of the platform's markers (rigid on the rig: the
    measurement's noise); ``scatter_mm`` the capture's marker sets' own scatter in their
    rigid fits (median over the sets), which a body's markers raise when they sit on skin.
    The residual is judged against ``floor_mm``, the scatter (a marker sliding on its link
    leaves it in any model's residual), and the report says when that floor stands above the
    platform's noise.
    """

    names: list[str]
    phi_b: np.ndarray
    phi_b_cov: np.ndarray
    phi_b_std: np.ndarray
    phi_b_std_noise: np.ndarray
    jyy: dict[str, float]
    jyy_std: dict[str, float]
    bounds: dict[str, tuple[float, float]]
    joint_damping: dict[str, float]
    joint_damping_std: dict[str, float]
    residual_rms_mm: dict[str, float]
    marker_sigma_mm: float
    n_residuals: int
    iterations: int
    elapsed_s: float
    horizons_s: tuple[float, ...]
    stages: tuple
    on_bound: list[str]
    free: str
    start: RelativeResult
    initial_state: dict
    time_s: np.ndarray
    residual_rms_frame_mm: np.ndarray
    warnings: list[str] = field(default_factory=list)
    method: str = "output-error"
    base_pose: tuple | None = None           # (R_pb, t_pb) fitted (or held)
    base_pose_std: np.ndarray | None = None  # [t (3), rotation vector (3)]
    noise_mm: float = float("nan")           # the platform's markers' noise (rigid fit)
    scatter_mm: float = float("nan")         # every fitted marker set's rigid-fit scatter
    standard_errors: dict = field(default_factory=dict)
                                             # the marker noise's covariance model:
                                             # fit_common.marker_noise_covariance

    @property
    def floor_mm(self) -> float:
        """What a right model leaves: the marker sets' own scatter in their rigid fits (the
        platform's noise when that is unknown)."""
        return self.scatter_mm if np.isfinite(self.scatter_mm) else self.noise_mm

    def reached_noise(self, factor: float = REACHED_NOISE_FACTOR) -> bool:
        """The fitted swing tracks the markers to their floor: the residual standard
        deviation within ``factor`` times the marker sets' own scatter (True when that is
        unknown). A refinement that does not is never the reported result."""
        floor = self.floor_mm
        return not np.isfinite(floor) or self.marker_sigma_mm <= factor * floor

    def start_agreement(self) -> dict:
        """How far this fit's Phi_B is from its equation-error start, against both their
        covariances: ``chi2 = d^T (C_oe + C_ee)^+ d`` with ``d`` the difference, of as many
        degrees of freedom as that sum's rank (Hausman's specification test, with the sum
        for the difference's covariance: neither fit is taken as the efficient one). Both
        fits estimate the same Phi_B when both models hold; the output-error fit takes its
        residual for marker noise, so a disturbance its model lacks (a force on the
        platform: a heartbeat's recoil) moves it by more than its covariance says, while
        the equation-error fit's serial-correlation-robust covariance holds it. ``p``: the
        upper tail probability of ``chi2`` over :data:`AGREEMENT_VARIANCE_MARGIN`;
        ``agrees``: ``p`` above :data:`AGREEMENT_P`."""
        d = self.phi_b - self.start.values
        cov = self.phi_b_cov + self.start.covariance
        w, v = np.linalg.eigh(0.5 * (cov + cov.T))
        keep = w > 1e-10 * max(float(w.max()), 1e-300)
        stat = float(np.sum((v[:, keep].T @ d) ** 2 / w[keep]))
        dof = int(keep.sum())
        p = float(chi2.sf(stat / AGREEMENT_VARIANCE_MARGIN, dof)) if dof else 1.0
        return {"chi2": stat, "dof": dof, "p": p, "agrees": bool(p > AGREEMENT_P)}

    @property
    def values(self) -> np.ndarray:
        return self.phi_b

    @property
    def std_phi_b(self) -> np.ndarray:
        return self.phi_b_std

    @property
    def covariance(self) -> np.ndarray:
        return self.phi_b_cov

    @property
    def resolved(self) -> dict[str, float]:
        return self.jyy

    @property
    def std(self) -> dict[str, float]:
        return self.jyy_std

    def as_relative_result(self) -> RelativeResult:
        """The start's :class:`RelativeResult` with this fit's numbers (``method`` reads
        ``"output-error"``; ``unconstrained`` keeps the equation-error ``J_yy``)."""
        n = self.phi_b.size // 9
        per = self.phi_b.reshape(n, 9)
        minimal = {k: {"MS": per[i, :3].copy(), "J": j_matrix(per[i, 3:])}
                   for i, k in enumerate(self.start.minimal_parameters)}
        figure, eq16_rms = self.start.figure, dict(self.start.residual_rms)
        if "a_phi_b" in figure:             # eq. 16 (Fig. 6) redrawn with this Phi_B
            figure, eq16_rms = eq16_with(figure, self.phi_b)
        rms = {**eq16_rms, **{f"marker_mm.{k}": v for k, v in self.residual_rms_mm.items()}}
        return replace(self.start, resolved=dict(self.jyy), std=dict(self.jyy_std),
                       figure=figure,
                       bounds=dict(self.bounds), values=self.phi_b.copy(),
                       std_phi_b=self.phi_b_std.copy(), covariance=self.phi_b_cov.copy(),
                       minimal_parameters=minimal, residual_rms=rms,
                       on_bound=list(self.on_bound),
                       warnings=list(self.start.warnings) + list(self.warnings),
                       unconstrained=dict(self.start.resolved), method=self.method)

    def to_json(self) -> dict:
        """Plain-JSON summary (no time series)."""
        return {"method": self.method, "free": self.free,
                "phi_b": {"names": self.names, "values": self.phi_b.tolist(),
                          "std": self.phi_b_std.tolist(),
                          "std_noise": self.phi_b_std_noise.tolist()},
                "jyy": self.jyy, "jyy_std": self.jyy_std,
                "bounds": {k: list(v) for k, v in self.bounds.items()},
                "joint_damping": self.joint_damping,
                "joint_damping_std": self.joint_damping_std,
                "residual_rms_mm": self.residual_rms_mm,
                "marker_sigma_mm": self.marker_sigma_mm, "noise_mm": self.noise_mm,
                "scatter_mm": self.scatter_mm, "floor_mm": self.floor_mm,
                "reached_noise": self.reached_noise(), "iterations": self.iterations,
                "elapsed_s": self.elapsed_s, "horizons_s": list(self.horizons_s),
                "standard_errors": dict(self.standard_errors),
                "start_agreement": self.start_agreement(),
                "on_bound": self.on_bound, "warnings": self.warnings}


def floor_words(floor_mm: float, noise_mm: float) -> str:
    """The floor a refinement's residual is judged against, for people: the marker noise
    when the marker sets scatter as the platform's do, else both figures."""
    if not (np.isfinite(floor_mm) and np.isfinite(noise_mm)) \
            or floor_mm <= REACHED_NOISE_FACTOR * noise_mm:
        return f"{floor_mm:.3f} mm marker noise"
    return (f"{floor_mm:.3f} mm, the scatter of its markers on their links "
            f"({floor_mm / noise_mm:.1f}x the platform's markers' {noise_mm:.3f} mm noise)")


__all__ = ["RelativeRefinement", "ModelMismatch", "REACHED_NOISE_FACTOR", "AGREEMENT_P",
           "AGREEMENT_VARIANCE_MARGIN", "floor_words"]
