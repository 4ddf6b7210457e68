"""What each time-series figure draws, taken out of a run's outcomes: plain arrays and
names, in types defined here, so that a worker process drawing them imports numpy and
matplotlib only.

Why: a run draws its figures in worker processes (rigtool.report.figures). Handing them
the outcomes themselves made each worker import every class an outcome is built of, and
so the fitting code behind them (JAX, numba, cvxpy: 2.8 s of CPU in the fork server on
a 2-core machine, beside the fits it slowed); the figures need 0.6 s of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.posture import PostureOutcome


@dataclass(frozen=True)
class MarkerFitPanel:
    """One posture's output-error fit, shown by the platform marker coordinate that moves
    most: ``measured_mm`` (NaN where unseen) and ``simulated_mm`` ``[T]`` (lab, mm) over
    ``time_s``; ``marker`` and ``axis`` (0-2, lab) name it; ``residual_rms_mm`` is the
    fit's residual over all its markers, ``noise_mm`` the marker noise (per coordinate)
    the residual band is drawn at."""

    posture: str
    marker: str
    axis: int
    time_s: np.ndarray
    measured_mm: np.ndarray
    simulated_mm: np.ndarray
    residual_rms_mm: float
    noise_mm: float


@dataclass(frozen=True)
class MotionPanel:
    """One posture capture's filtered platform motion (paper 002 Fig. 5), ``[T, 3]`` each:
    ``displacement_m`` and ``rotation_rad`` (about the mean pose) and ``accel_lab`` (m/s^2)
    in lab axes, ``alpha_body`` (rad/s^2) in platform axes; NaN outside ``valid``."""

    posture: str
    time_s: np.ndarray
    displacement_m: np.ndarray
    rotation_rad: np.ndarray
    accel_lab: np.ndarray
    alpha_body: np.ndarray


@dataclass(frozen=True)
class ResidualPanel:
    """One posture capture's rigid-cluster fit residual per body and frame:
    ``residual_m`` body -> ``[T]`` RMS distance of its markers from their fitted places."""

    posture: str
    time_s: np.ndarray
    residual_m: dict[str, np.ndarray]


@dataclass(frozen=True)
class WrenchPanel:
    """One posture's equation-error fit: the spring and gravity wrench from the filtered
    motion (``measured [T, 6]``) against the model's (``fitted [T, 6]``), platform axes
    about its origin (N, N m)."""

    posture: str
    time_s: np.ndarray
    measured: np.ndarray
    fitted: np.ndarray
    rows: tuple[str, ...]               # the components' names (f_x ... n_z)


def _moving_coordinate(measured_m: np.ndarray) -> tuple[int, int]:
    """``(marker, axis)`` of the coordinate of ``measured_m [T, K, 3]`` that moves most (its
    motion is what the fit follows; the clearest to show)."""
    spread = np.nanstd(measured_m, axis=0)                      # [K, 3]
    spread = np.where(np.isfinite(spread), spread, -1.0)
    k, a = np.unravel_index(int(np.argmax(spread)), spread.shape)
    return int(k), int(a)


def marker_fit_panel(p: PostureOutcome) -> MarkerFitPanel | None:
    """The output-error fit of posture ``p`` (None when it has none with platform
    markers)."""
    if p.refinement is None or p.refinement.platform_markers is None:
        return None
    fit = p.refinement.platform_markers
    k, a = _moving_coordinate(fit.measured_m)
    sigma = float(p.marker_noise_mm if np.isfinite(p.marker_noise_mm)
                  else p.refinement.marker_sigma_mm)
    return MarkerFitPanel(p.result.name, fit.names[k], a, np.asarray(fit.time_s),
                          1e3 * fit.measured_m[:, k, a], 1e3 * fit.simulated_m[:, k, a],
                          float(p.refinement.marker_sigma_mm), sigma)


def motion_panel(p: PostureOutcome) -> MotionPanel | None:
    """The filtered platform motion of posture ``p`` (None without traces)."""
    tr = p.traces
    if tr is None:
        return None
    valid = np.asarray(tr.valid, bool)[:, None]
    return MotionPanel(p.result.name, tr.time_s,
                       *(np.where(valid, y, np.nan) for y in (
                           tr.displacement_m, tr.rotation_rad, tr.accel_lab, tr.alpha_body)))


def residual_panel(p: PostureOutcome) -> ResidualPanel | None:
    """The rigid-cluster residuals of posture ``p`` (None without traces)."""
    if p.traces is None:
        return None
    return ResidualPanel(p.result.name, p.traces.time_s, dict(p.traces.marker_residual_m))


def wrench_panel(p: PostureOutcome) -> WrenchPanel:
    """The equation-error wrench fit of posture ``p`` (the refinement's start when refined,
    else the reported fit)."""
    from rigtool.identify.common.platform_motion import WRENCH_ROWS   # the caller's, loaded
    res = p.equation_error if p.equation_error is not None else p.result
    return WrenchPanel(p.result.name, res.time_s, res.measured_wrench, res.fitted_wrench,
                       tuple(WRENCH_ROWS))


def relative_panel(relative) -> dict:
    """Both sides of eq. 16 of a RelativeResult (rigtool.identify.relative.equation_error,
    the reported one): its ``figure`` data's ``time_s``, ``lhs``, ``rhs`` ``[T, R]`` and
    ``rows``, already plain arrays and names."""
    return {k: relative.figure[k] for k in ("time_s", "lhs", "rhs", "rows")}


__all__ = ["MarkerFitPanel", "MotionPanel", "ResidualPanel", "WrenchPanel",
           "marker_fit_panel", "motion_panel", "residual_panel", "wrench_panel",
           "relative_panel"]
