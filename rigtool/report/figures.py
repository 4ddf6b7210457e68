"""Which figures a report has, their files (PNG, next to report.json), captions and the
section each belongs to; drawing is done by rigtool.report.plots_*.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from concurrent.futures import Future
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rigtool.process_pool import LazyPool
from rigtool.report.figure_inputs import (marker_fit_panel, motion_panel, relative_panel,
                                          residual_panel, wrench_panel)
from rigtool.report.plots_fit import (motion_figure, output_error_figure, relative_figure,
                                      residual_figure, wrench_figure)
from rigtool.report.plots_inertia import ellipsoid_figure
from rigtool.report.plots_subset import identifiability_figure, subset_values_figure

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.session import PostureOutcome, SessionOutcome


#: from this many figures on, worker processes are started for them alone
POOL_FIGURES = 24


@dataclass(frozen=True)
class Figure:
    """A written figure: ``file`` (name next to report.json), ``caption``, ``section`` (the
    id of the report section it illustrates)."""

    file: str
    caption: str
    section: str


def posture_figures(postures: Sequence[PostureOutcome]) -> list[tuple[Figure, tuple]]:
    """The figures of the posture fits alone, in report order: ``(figure, (drawing function,
    its arguments but the path))``, the arguments plain arrays
    (rigtool.report.figure_inputs). They need nothing of the later stages, so a run can draw
    them while the relative-motion fit runs (:func:`start_posture_figures`)."""
    out: list[tuple[Figure, tuple]] = []
    fits = [f for f in (marker_fit_panel(p) for p in postures) if f is not None]
    if fits:
        out.append((Figure("output_error_fit.png",
                           "Output-error fit per posture: the platform marker coordinate that "
                           "moves most, measured (dots) and simulated by the fitted rig "
                           "(line), mm about its mean; below, their difference against the "
                           "±2σ band of the marker noise (rigid fits): a fit that describes "
                           "the capture stays in the band all along.", "postures"),
                    (output_error_figure, fits)))
    residuals = [r for r in (residual_panel(p) for p in postures) if r is not None]
    if residuals:
        out.append((Figure("marker_residuals.png",
                           "Rigid-cluster fit residual of every body per frame (RMS distance "
                           "of its markers from their fitted places, mm): the marker noise, "
                           "or a marker that moves on its body.", "postures"),
                    (residual_figure, residuals)))
    for p in postures:
        name = p.result.name
        motion = motion_panel(p)
        if motion is not None:
            out.append((Figure(f"posture_{name}_motion.png",
                               f"{name}: filtered platform motion (as Fig. 5 of Homma "
                               "and Yamaura's free-vibration method).",
                               "postures"), (motion_figure, motion)))
        out.append((Figure(f"posture_{name}_wrench.png",
                           f"{name}: equation-error fit (the output-error fit's start): spring "
                           "and gravity wrench from the filtered motion against the model, "
                           "platform axes.", "postures"), (wrench_figure, wrench_panel(p))))
    return out


def _pngs(calls: list[tuple]) -> list[bytes]:
    """Run drawing calls ``(function, *args)`` into memory, one after the other; their PNGs'
    bytes (a worker's job)."""
    out = []
    for function, *args in calls:
        buffer = io.BytesIO()
        function(*args, buffer)
        out.append(buffer.getvalue())
    return out


@dataclass
class DrawnEarly:
    """Figures being drawn in a worker process before the report is written: ``files``
    (file name -> its place in the job's result), ``job`` (future of the PNGs' bytes) and
    ``postures``, the outcomes they were drawn from (a report of other outcomes draws its
    own)."""

    files: dict[str, int]
    job: Future
    postures: list

    def png(self, file: str) -> bytes:
        """The PNG of ``file`` (waits for the job; a drawing error re-raises here)."""
        return self.job.result()[self.files[file]]

    def cancel(self) -> None:
        """Drop the drawing if it has not started (the run failed)."""
        self.job.cancel()


def start_posture_figures(postures: Sequence[PostureOutcome],
                          pool: LazyPool | None) -> DrawnEarly | None:
    """Start drawing :func:`posture_figures` in ``pool``'s workers, when it is warm (its
    fork server launched at the run's start: a worker starts in milliseconds); None
    otherwise (the report draws them). The bytes come back to the writer, so nothing is
    written before the report is (a run that fails later leaves no results folder)."""
    if pool is None or not pool.warm:
        return None
    executor = pool.executor()
    if executor is None:
        return None
    # one job, drawn in one worker: the other core stays with the fit that runs meanwhile
    # (the relative-motion fit integrates on two threads; the figures spread over every
    # worker slowed it by more than they gained)
    figures = posture_figures(postures)
    job = executor.submit(_pngs, [call for _, call in figures])
    return DrawnEarly({fig.file: i for i, (fig, _) in enumerate(figures)}, job, list(postures))


def write_figures(out: SessionOutcome, doc: dict, out_dir: Path,
                  pool: LazyPool | None = None, early: DrawnEarly | None = None
                  ) -> list[Figure]:
    """Draw every figure of the session into ``out_dir``; returns them in report order.
    ``pool``: worker processes to draw in (see :func:`draw_all`); ``early``: the posture
    figures already under way (:func:`start_posture_figures`), used when they were drawn
    from this outcome's postures."""
    figs: list[Figure] = []
    jobs: list[tuple] = []               # (drawing function, its arguments but the path)
    n_post = len(out.postures)
    jobs.append((ellipsoid_figure, doc, out.link_markers))
    what = ("each link's segment as its inertia ellipsoid (uniform solid ellipsoid with the "
            "segment's mass and principal moments, centred on its COM)"
            if doc.get("segments") else "the whole object as its inertia ellipsoid")
    figs.append(Figure("inertia_ellipsoids.png",
                       f"The object in each of its {n_post} postures, base-link frame (m): "
                       f"{what}; link frames at the joint centres (x red, y green, z blue), "
                       "markers as dots.", "segments" if doc.get("segments") else "postures"))
    for fig, call in posture_figures(out.postures):
        figs.append(fig)
        jobs.append(call)
    if "subset" in doc:
        jobs.append((identifiability_figure, doc["subset"]))
        figs.append(Figure("subset_identifiability.png",
                           "Identifiability of Φ_s: singular values of the postures' regressor "
                           "(unit-free rows, equilibrated columns), each direction named by "
                           "its largest parameters; a direction under the dashed tolerance "
                           "would be one the postures cannot determine.", "subset"))
        jobs.append((subset_values_figure, doc["subset"]))
        figs.append(Figure("subset.png", "Φ_s with ±2 standard-error bars.", "subset"))
    if out.relative is not None:
        jobs.append((relative_figure, relative_panel(out.relative)))
        figs.append(Figure("relative_motion.png",
                           "Relative motion: both sides of the relative-motion equation over "
                           "the capture (as Fig. 6 of Homma and Yamaura's free-vibration "
                           "method) with the reported Φ_B.", "relative"))
    same = (early is not None and len(early.postures) == len(out.postures)
            and all(a is b for a, b in zip(early.postures, out.postures)))
    drawn = early.files if same else {}
    draw_all([(job[0], *job[1:], out_dir / fig.file)
              for job, fig in zip(jobs, figs) if fig.file not in drawn], pool)
    for file in drawn:
        (out_dir / file).write_bytes(early.png(file))
    return figs


def draw_all(calls: list[tuple], pool: LazyPool | None = None) -> None:
    """Run the drawing calls ``(function, *args)``, each writing one PNG.

    matplotlib's rendering holds the GIL, so threads would not overlap: the calls go to
    worker processes when ``pool`` is warm (its fork server launched at the run's start has
    imported the drawing code, so a worker starts in milliseconds; the demo's 12 figures
    take 9-10 s in one process) and there are several, or when there are at least
    :data:`POOL_FIGURES` of them (a cold pool's workers need ~3-4 s each to import what the
    figures' arguments are made of). Otherwise, or when the pool cannot start (a daemonic
    process, one CPU), they are drawn here.
    """
    with nullcontext(pool) if pool is not None else LazyPool() as run_pool:
        executor = (run_pool.executor()
                    if (run_pool.warm and len(calls) > 1) or len(calls) >= POOL_FIGURES
                    else None)
        if executor is not None:
            # report order: the 3-D views, the longest to draw, start first
            for fut in [executor.submit(*c) for c in calls]:
                fut.result()                  # a drawing error re-raises here
            return
    for c in calls:
        c[0](*c[1:])


__all__ = ["Figure", "write_figures", "draw_all", "POOL_FIGURES", "posture_figures",
           "start_posture_figures", "DrawnEarly"]
