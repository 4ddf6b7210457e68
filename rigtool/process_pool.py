"""A pool of worker processes started on first use and shared by one run's stages (the
posture fits, then the report's figures), so its workers' start-up (a fresh interpreter
importing numpy, JAX and the engine's stored traces: ~3-4 s each) is paid once.

"spawn", not "fork": forking a process whose BLAS, solver or XLA threads hold a lock can
deadlock the child (seen under pytest).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                 # no affinity on this platform
        return os.cpu_count() or 1


def _set_environment(environment: dict[str, str]) -> None:
    """A worker's initializer: its environment variables (module-level: it is pickled)."""
    os.environ.update(environment)


class LazyPool:
    """Worker processes started by the first :meth:`executor` call.

    Parameters
    ----------
    max_workers : int, optional
        Default: :func:`usable_cpus`. With 1, or inside a daemonic process (a Dask worker,
        which may not start children), :meth:`executor` returns None: run in this process.
    environment : dict, optional
        Environment variables set in each worker before its first job (e.g. the engine's
        threads per process, ``RIGTOOL_ENGINE_THREADS``).
    """

    def __init__(self, max_workers: int | None = None,
                 environment: dict[str, str] | None = None):
        self.max_workers = usable_cpus() if max_workers is None else int(max_workers)
        self.environment = dict(environment or {})
        self._pool: ProcessPoolExecutor | None = None

    @property
    def allowed(self) -> bool:
        """Whether worker processes may be started at all."""
        return self.max_workers > 1 and not multiprocessing.current_process().daemon

    @property
    def started(self) -> bool:
        """Whether the workers are running (their start-up already paid)."""
        return self._pool is not None

    def executor(self) -> ProcessPoolExecutor | None:
        """The pool, started now if it is not yet; None when not :attr:`allowed`."""
        if not self.allowed:
            return None
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.max_workers,
                                             mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_set_environment,
                                             initargs=(self.environment,))
        return self._pool

    def shutdown(self) -> None:
        """Stop the workers (waits for running jobs)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> "LazyPool":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


__all__ = ["LazyPool", "usable_cpus"]
