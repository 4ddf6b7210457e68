"""A pool of worker processes started on first use and shared by one run's stages (the
posture fits, then the report's figures), so its workers' start-up is paid once.

Workers are forked from a fork server (the "forkserver" start method, where the platform has
it; "spawn" elsewhere), never from this process: forking a process whose BLAS, solver or XLA
threads hold a lock can deadlock the child (seen under pytest), while the server is a fresh
single-threaded interpreter. The server imports the pool's ``preload`` modules once; each
worker forked from it has them at no cost (a spawned worker took ~3-4 s to import numpy,
JAX and matplotlib). :meth:`LazyPool.prestart` launches the server early, so its imports run
on a spare core while this process works.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import forkserver


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
    preload : sequence of str, optional
        Modules the fork server imports before forking workers (what the jobs and their
        arguments need). The fork server is one per process: the first pool to start it
        sets its preload.
    """

    def __init__(self, max_workers: int | None = None,
                 environment: dict[str, str] | None = None, preload: Sequence[str] = ()):
        self.max_workers = usable_cpus() if max_workers is None else int(max_workers)
        self.environment = dict(environment or {})
        self.preload = tuple(preload)
        self._pool: ProcessPoolExecutor | None = None
        self._prestarted = False

    @property
    def allowed(self) -> bool:
        """Whether worker processes may be started at all."""
        return self.max_workers > 1 and not multiprocessing.current_process().daemon

    @property
    def started(self) -> bool:
        """Whether the workers are running (their start-up already paid)."""
        return self._pool is not None

    @property
    def warm(self) -> bool:
        """Whether a job can start in a worker at little cost: the workers run, or the fork
        server was launched by :meth:`prestart` (its imports done or under way)."""
        return self._pool is not None or self._prestarted

    def _context(self):
        if "forkserver" not in multiprocessing.get_all_start_methods():
            return multiprocessing.get_context("spawn")
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(self.preload))
        return ctx

    def prestart(self) -> None:
        """Launch the fork server now (it imports :attr:`preload` in the background; no
        worker starts yet). Nothing happens where workers are not :attr:`allowed` or the
        platform has no fork server."""
        if not self.allowed or self._prestarted:
            return
        if self._context().get_start_method() == "forkserver":
            forkserver.ensure_running()
            self._prestarted = True

    def executor(self) -> ProcessPoolExecutor | None:
        """The pool, started now if it is not yet; None when not :attr:`allowed`."""
        if not self.allowed:
            return None
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.max_workers, mp_context=self._context(),
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
