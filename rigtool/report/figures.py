"""Which figures a report has, their files (PNG, next to report.json), captions and the
section each belongs to; drawing is done by rigtool.report.plots_*.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataclasses import dataclass
from pathlib import Path

from rigtool.report.plots_fit import (motion_figure, output_error_figure, relative_figure,
                                      residual_figure, wrench_figure)
from rigtool.report.plots_inertia import ellipsoid_figure
from rigtool.report.plots_subset import identifiability_figure, subset_values_figure

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.session import SessionOutcome


@dataclass(frozen=True)
class Figure:
    """A written figure: ``file`` (name next to report.json), ``caption``, ``section`` (the
    id of the report section it illustrates)."""

    file: str
    caption: str
    section: str


def write_figures(out: SessionOutcome, doc: dict, out_dir: Path) -> list[Figure]:
    """Draw every figure of the session into ``out_dir``; returns them in report order."""
    figs: list[Figure] = []
    n_post = len(out.postures)
    ellipsoid_figure(doc, out.link_markers, out_dir / "inertia_ellipsoids.png")
    what = ("each link's segment as its inertia ellipsoid (uniform solid ellipsoid with the "
            "segment's mass and principal moments, centred on its COM)"
            if doc.get("segments") else "the whole object as its inertia ellipsoid")
    figs.append(Figure("inertia_ellipsoids.png",
                       f"The object in each of its {n_post} postures, base-link frame (m): "
                       f"{what}; link frames at the joint centres (x red, y green, z blue), "
                       "markers as dots.", "segments" if doc.get("segments") else "postures"))
    if any(p.refinement is not None and p.refinement.platform_markers is not None
           for p in out.postures):
        output_error_figure(out.postures, out_dir / "output_error_fit.png")
        figs.append(Figure("output_error_fit.png",
                           "Output-error fit per posture: the platform marker coordinate that "
                           "moves most, measured (dots) and simulated by the fitted rig "
                           "(line), mm about its mean; below, their difference against the "
                           "±2σ band of the marker noise (rigid fits): a fit that describes "
                           "the capture stays in the band all along.", "postures"))
    traced = [p for p in out.postures if p.traces is not None]
    if traced:
        residual_figure(traced, out_dir / "marker_residuals.png")
        figs.append(Figure("marker_residuals.png",
                           "Rigid-cluster fit residual of every body per frame (RMS distance "
                           "of its markers from their fitted places, mm): the marker noise, "
                           "or a marker that moves on its body.", "postures"))
    for p in out.postures:
        name = p.result.name
        if p.traces is not None:
            motion_figure(p, out_dir / f"posture_{name}_motion.png")
            figs.append(Figure(f"posture_{name}_motion.png",
                               f"{name}: filtered platform motion (paper 002 Fig. 5).",
                               "postures"))
        wrench_figure(p, out_dir / f"posture_{name}_wrench.png")
        figs.append(Figure(f"posture_{name}_wrench.png",
                           f"{name}: equation-error fit (the output-error fit's start): spring "
                           "and gravity wrench from the filtered motion against the model, "
                           "platform axes.", "postures"))
    if "subset" in doc:
        identifiability_figure(doc["subset"], out_dir / "subset_identifiability.png")
        figs.append(Figure("subset_identifiability.png",
                           "Identifiability of Φ_s: singular values of the postures' regressor "
                           "(unit-free rows, equilibrated columns), each direction named by "
                           "its largest parameters; a direction under the dashed tolerance "
                           "would be one the postures cannot determine.", "subset"))
        subset_values_figure(doc["subset"], out_dir / "subset.png")
        figs.append(Figure("subset.png", "Φ_s with ±2 standard-error bars.", "subset"))
    if out.relative is not None:
        relative_figure(out, out_dir / "relative_motion.png")
        figs.append(Figure("relative_motion.png",
                           "Relative motion: both sides of eq. 16 over the capture (paper 002 "
                           "Fig. 6) with the reported Φ_B.", "relative"))
    return figs


__all__ = ["Figure", "write_figures"]
