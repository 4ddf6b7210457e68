"""A run's worker processes and how many fits share them: light enough to import first,
so that ``rigtool run`` starts the fork server (and its imports, on a spare core) before it
imports the fitting code itself."""

from __future__ import annotations

import tomllib
from pathlib import Path

from rigtool.process_pool import LazyPool, usable_cpus

PARALLEL_POSTURES = 4   # from this many output-error postures on, fit them in processes
#: cores one output-error posture fit keeps busy (XLA's threads and the engine's column
#: threads: 4.7 s of CPU in 2.6 s wall for a whole-body posture), so one process per this
#: many cores. Measured on 2 cores, the 19 postures of the whole-body session: 49 s one after
#: another in one process, 154 s in two processes (start-up ~15 s, then each fit ~3x slower:
#: the processes' thread pools fight over the cores)
CORES_PER_FIT = 2


#: what a run's workers import once, in the fork server (rigtool.process_pool), to draw the
#: report's figures (their arguments are plain arrays: rigtool.report.figure_inputs)
FIGURES_PRELOAD = ("rigtool.report.figures", "matplotlib.pyplot")
#: and, when they fit postures too, the fits and the types their results are made of (2.8 s
#: of CPU on this 2-core machine, against 0.6 s for the figures alone: spent on the core the
#: run's own imports and first fits need, so only when the workers will fit)
FITS_PRELOAD = ("rigtool.pipeline.session",) + FIGURES_PRELOAD


def posture_processes(n_postures: int, method: str, workers: int | None = None) -> int:
    """How many processes fit a run's ``n_postures`` postures (1: one after another in the
    run's own process). ``workers``: a given number (default: from the cores). Worker
    processes pay from about :data:`PARALLEL_POSTURES` output-error postures on (each starts
    in ~3-4 s: interpreter, JAX, the engine's stored traces; a posture of 15-25 s is fitted
    in ~2-3 s in a process that has them loaded), and only with the cores to run them."""
    if workers is None:
        many = n_postures >= PARALLEL_POSTURES and method == "output-error"
        workers = min(n_postures, usable_cpus() // CORES_PER_FIT) if many else 1
    return max(1, min(workers, n_postures))


def fits_in_workers(session_path: str | Path, method: str, workers: int | None = None) -> bool:
    """Whether a run of the manifest ``session_path`` fits its postures in worker processes
    (:func:`posture_processes` above 1), its ``[[postures]]`` counted from the TOML alone,
    before the fitting code is imported. A manifest that cannot be read counts none: the
    run's checks report its error (and a wrong guess only costs time: a worker imports
    what its job needs)."""
    try:
        with open(session_path, "rb") as fh:
            postures = tomllib.load(fh).get("postures")
    except (OSError, ValueError):        # unreadable, not UTF-8, not TOML
        postures = None
    n = len(postures) if isinstance(postures, list) else 0
    return posture_processes(n, method, workers) > 1


def run_pool(workers: int | None = None, *, fits: bool = True) -> LazyPool:
    """A run's worker processes (started on first use): posture fits in them keep to their
    share of the cores (``RIGTOOL_ENGINE_THREADS``), the report's figures use every worker.
    ``workers``: at most this many (default: every usable CPU). ``fits``: whether they will
    fit postures (:func:`posture_processes` above 1); if not, the fork server imports only
    the drawing code."""
    return LazyPool(workers, {"RIGTOOL_ENGINE_THREADS": str(CORES_PER_FIT)},
                    preload=FITS_PRELOAD if fits else FIGURES_PRELOAD)


__all__ = ["PARALLEL_POSTURES", "CORES_PER_FIT", "FIGURES_PRELOAD", "FITS_PRELOAD",
           "posture_processes", "fits_in_workers", "run_pool"]
