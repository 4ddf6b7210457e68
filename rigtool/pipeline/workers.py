"""A run's worker processes and how many fits share them: light enough to import first,
so that ``rigtool run`` starts the fork server (and its imports, on a spare core) before it
imports the fitting code itself."""

from __future__ import annotations

from rigtool.process_pool import LazyPool

PARALLEL_POSTURES = 4   # from this many output-error postures on, fit them in processes
#: cores one output-error posture fit keeps busy (XLA's threads and the engine's column
#: threads: 4.7 s of CPU in 2.6 s wall for a whole-body posture), so one process per this
#: many cores. Measured on 2 cores, the 19 postures of the whole-body session: 49 s one after
#: another in one process, 154 s in two processes (start-up ~15 s, then each fit ~3x slower:
#: the processes' thread pools fight over the cores)
CORES_PER_FIT = 2


#: what a run's workers import once, in the fork server (rigtool.process_pool): the fits,
#: the types their results are made of, and the report's drawing code
WORKER_PRELOAD = ("rigtool.pipeline.session", "rigtool.report.figures",
                  "rigtool.identify.relative.equation_error", "matplotlib.pyplot")


def run_pool(workers: int | None = None) -> LazyPool:
    """A run's worker processes (started on first use): posture fits in them keep to their
    share of the cores (``RIGTOOL_ENGINE_THREADS``), the report's figures use every worker.
    ``workers``: at most this many (default: every usable CPU)."""
    return LazyPool(workers, {"RIGTOOL_ENGINE_THREADS": str(CORES_PER_FIT)},
                    preload=WORKER_PRELOAD)


__all__ = ["PARALLEL_POSTURES", "CORES_PER_FIT", "WORKER_PRELOAD", "run_pool"]
