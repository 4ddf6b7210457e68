"""Each local batch worker on its own share of the CPUs (a Dask worker preload).

Measured (benchmarks/batch.py, 2 workers on 2 cores): a session alone, free to use both
cores, spends 1.3-1.7x more CPU than the same session pinned to one core and is no faster
than it (XLA's and the BLAS's helper threads mostly wait); two such sessions side by side
each take about twice their pinned time, so the batch ran at 1.5-2x (sum of pinned
times)/workers. Pinned, every worker runs like the pinned single session.

:func:`dask_setup` is Dask's preload hook (``LocalCluster(preload=[__name__])``): it runs
in the worker process at start-up, before any task, so the threads JAX and NumPy start
later inherit the affinity. The CPUs this process may use are split into equal contiguous
shares, one per worker by the worker's index (a LocalCluster names its workers 0, 1, ...);
with more workers than CPUs, or a worker that is not numbered, nothing is pinned. Linux
only (``os.sched_setaffinity``); elsewhere a no-op.
"""

from __future__ import annotations

import os

#: number of workers in the local cluster (set by rigtool.batch.cluster for the workers)
WORKERS_ENV = "RIGTOOL_BATCH_WORKERS"


def cpu_share(index: int, n_workers: int, cpus: list[int]) -> set[int] | None:
    """CPUs of worker ``index`` of ``n_workers`` (equal contiguous shares of ``cpus``), or
    None when there are fewer CPUs than workers or the index is out of range."""
    if n_workers <= 0 or not 0 <= index < n_workers or len(cpus) < n_workers:
        return None
    share = len(cpus) // n_workers
    return set(sorted(cpus)[index * share:(index + 1) * share])


def pin_process(cpus: set[int]) -> None:
    """Every thread of this process onto ``cpus`` (threads started later inherit it)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, PermissionError):   # a thread that just ended
            pass


def dask_setup(worker) -> None:
    """Dask preload hook: pin this worker to its share of the CPUs."""
    if not hasattr(os, "sched_setaffinity"):
        return
    try:
        index = int(worker.name)
        n_workers = int(os.environ.get(WORKERS_ENV, "0"))
    except (TypeError, ValueError):
        return
    cpus = cpu_share(index, n_workers, sorted(os.sched_getaffinity(0)))
    if cpus:
        pin_process(cpus)


__all__ = ["WORKERS_ENV", "cpu_share", "pin_process", "dask_setup"]
