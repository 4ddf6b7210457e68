"""Figures of the fits over time: the output-error fit (a platform marker measured against
simulated, and its residual against the marker-noise band), the rigid-cluster residuals,
each posture's filtered motion (paper 002 Fig. 5) and equation-error wrench fit, and both
sides of eq. 16 over the relative-motion capture (Fig. 6).

Each function draws into a new matplotlib figure (Agg backend), saves it to ``path`` and
closes it; none calls ``show()``. Units: time in s, marker positions and residuals in mm.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.report.figure_inputs import MarkerFitPanel, MotionPanel, ResidualPanel, WrenchPanel
from rigtool.report.png import pyplot, save_png


def output_error_figure(panels: list[MarkerFitPanel], path: Path) -> None:
    """Per posture: one platform marker coordinate measured (dots) and simulated (line), and
    below it their difference with the ±2 sigma marker-noise band."""
    plt = pyplot()
    fig, axes = plt.subplots(2 * len(panels), 1, figsize=(8, 2.6 * len(panels) + 0.6),
                             squeeze=False, gridspec_kw={"height_ratios": [2, 1] * len(panels)})
    for i, fit in enumerate(panels):
        t, meas, sim = fit.time_s, fit.measured_mm, fit.simulated_mm
        mean = np.nanmean(meas)
        axis = "xyz"[fit.axis]
        ax, axr = axes[2 * i, 0], axes[2 * i + 1, 0]
        ax.plot(t, sim - mean, lw=0.9, color="tab:blue", label="simulated (fit)", zorder=2)
        ax.plot(t, meas - mean, ".", ms=1.5, color="0.2", label="measured", zorder=3)
        ax.set_ylabel(f"{fit.marker} {axis}\n[mm]", fontsize=8)
        ax.set_title(f"{fit.posture}: platform marker {fit.marker}, lab {axis}, about its "
                     f"mean; residual RMS {fit.residual_rms_mm:.3f} mm over all fitted "
                     "markers", fontsize=8, loc="left")
        ax.legend(fontsize=7, loc="upper right", ncol=2)
        sigma = fit.noise_mm
        axr.fill_between(t, -2 * sigma, 2 * sigma, color="tab:green", alpha=0.2, lw=0,
                         label=f"±2σ marker noise ({sigma:.3f} mm)")
        axr.plot(t, meas - sim, lw=0.5, color="0.2", label="measured − simulated")
        lim = max(4 * sigma, float(np.nanmax(np.abs(meas - sim))) if np.any(
            np.isfinite(meas - sim)) else 4 * sigma)
        axr.set_ylim(-1.1 * lim, 1.9 * lim)                     # room for the legend
        axr.set_ylabel("residual\n[mm]", fontsize=8)
        axr.legend(fontsize=6.5, loc="upper right", ncol=2, framealpha=0.9)
        for a_ in (ax, axr):
            a_.grid(alpha=0.3)
            a_.tick_params(labelsize=7)
    axes[-1, 0].set_xlabel("time [s]")
    fig.tight_layout()
    save_png(fig, path, dpi=90)


def wrench_figure(panel: WrenchPanel, path: Path) -> None:
    """The equation-error fit of one posture: spring + gravity wrench, measured vs model."""
    plt = pyplot()
    fig, ax = plt.subplots(6, 1, sharex=True, figsize=(8, 9))
    for j, a in enumerate(ax):
        a.plot(panel.time_s, panel.measured[:, j], lw=1.0, label="springs (measured)")
        a.plot(panel.time_s, panel.fitted[:, j], lw=0.8, ls="--", label="model (fit)")
        a.set_ylabel(f"{panel.rows[j]} [{'N' if j < 3 else 'N m'}]")
    ax[0].legend(loc="upper right", fontsize=7)
    ax[-1].set_xlabel("time [s]")
    fig.suptitle(f"{panel.posture}: spring + gravity wrench, measured vs fitted "
                 "(platform axes, about its origin)", fontsize=9)
    fig.tight_layout()
    save_png(fig, path, dpi=90)


def motion_figure(panel: MotionPanel, path: Path) -> None:
    """Filtered platform motion of one posture capture (like paper 002 Fig. 5)."""
    plt = pyplot()
    fig, axes = plt.subplots(4, 1, sharex=True, figsize=(8, 7.5))
    panels = [(1e3 * panel.displacement_m, "displacement [mm]"),
              (np.rad2deg(panel.rotation_rad), "rotation [deg]"),
              (panel.accel_lab, "acceleration [m/s²]"),
              (panel.alpha_body, "angular accel. [rad/s²]\n(platform axes)")]
    for ax, (y, label) in zip(axes, panels):
        for k, c in enumerate("xyz"):
            ax.plot(panel.time_s, y[:, k], lw=0.7, label=c)
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].legend(ncol=3, fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(f"{panel.posture}: filtered platform motion (lab axes unless noted)",
                 fontsize=9)
    fig.tight_layout()
    save_png(fig, path, dpi=80)


def residual_figure(panels: list[ResidualPanel], path: Path) -> None:
    """Per-frame rigid-cluster fit residual of every body in every posture capture."""
    plt = pyplot()
    fig, axes = plt.subplots(len(panels), 1, sharex=True, squeeze=False,
                             figsize=(8, 1.8 * len(panels) + 0.8))
    for ax, panel in zip(axes[:, 0], panels):
        for body, res in panel.residual_m.items():
            ax.plot(panel.time_s, 1e3 * res, lw=0.6, label=body)
        ax.set_ylabel(f"{panel.posture}\nRMS [mm]", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right", ncol=4)
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle("Marker fit residuals (RMS distance of each body's markers from its fitted "
                 "rigid cluster)", fontsize=9)
    fig.tight_layout()
    save_png(fig, path, dpi=80)


def plot_relative(result, ax=None):
    """Paper 002 Fig. 6: eq. 16's left side (springs minus the known mass terms, solid)
    and right side (``Y_B1 Phi_B`` with the identified Phi_B, dotted) per wrench component.

    ``result``: a rigtool.identify.relative.equation_error.RelativeResult (its ``figure``
    data). Returns the matplotlib Figure.
    """
    return draw_relative(result.figure, ax)


def draw_relative(data: dict, ax=None):
    """:func:`plot_relative` from a RelativeResult's ``figure`` data (``time_s``, ``lhs``,
    ``rhs`` ``[T, R]``, ``rows``); returns the matplotlib Figure."""
    plt = pyplot()
    rows = data["rows"]
    if ax is None:
        f, ax = plt.subplots(len(rows), 1, sharex=True, figsize=(8, 1.5 * len(rows) + 1))
    else:
        f = np.atleast_1d(ax)[0].figure
    axes = np.atleast_1d(ax)
    for k, a in enumerate(axes):
        a.plot(data["time_s"], data["lhs"][:, k], lw=1.0, label="left side (springs)")
        a.plot(data["time_s"], data["rhs"][:, k], lw=1.0, ls=":", label="right side (Phi_B)")
        a.set_ylabel(f"{rows[k]} [{'N' if rows[k].startswith('f') else 'N m'}]")
    axes[0].legend(loc="upper right", fontsize=7)
    axes[0].set_title("Relative motion: both sides of eq. 16")
    axes[-1].set_xlabel("time [s]")
    f.tight_layout()
    return f


def relative_figure(data: dict, path: Path) -> None:
    """Both sides of eq. 16 over time (paper 002 Fig. 6), from a RelativeResult's
    ``figure`` data."""
    fig = draw_relative(data)
    save_png(fig, path, dpi=80)


__all__ = ["output_error_figure", "wrench_figure", "motion_figure", "residual_figure",
           "relative_figure", "plot_relative", "draw_relative"]
