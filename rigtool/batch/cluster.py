"""The Dask side of a batch (parent process): a client, the tasks, their progress.

Without a scheduler address a :class:`distributed.LocalCluster` of worker *processes* is
started (one thread each: a session's fits are single-threaded Python and NumPy, so
processes, not threads, run sessions side by side) and stopped at the end. Dask's nanny
starts each worker as a fresh interpreter (``spawn``), so nothing of the parent (and never a
half-initialised JAX runtime) is inherited by a fork. With an address, the batch is a client
of an existing scheduler (``dask scheduler`` / ``dask worker ADDRESS``, or any deployment
that exposes one); its workers must import the same rigtool and see the same paths.

Per session two tasks are submitted: the preflight check (high priority: every broken
session is reported within seconds of the start) and the run, which depends on it.
"""

from __future__ import annotations

import logging
import sys
import uuid
from contextlib import contextmanager
from typing import Callable, Iterator

from rigtool.errors import InputError
from rigtool.batch.worker_cpus import WORKERS_ENV
from rigtool.batch.tasks import (INTERNAL, SessionJob, SessionRecord, preflight_task, run_task,
                                 worker_rigtool_version, worker_slow_settings)
from rigtool import __version__

#: seconds to wait for a scheduler to answer
CONNECT_TIMEOUT_S = 20

#: Dask settings of the local cluster's workers (benchmarks/batch_worker.py; RESULTS.md, "Many
#: sessions"). One demo-sized session pinned to one CPU took, warm, 28.4 s in a plain process,
#: 33.9 s in a worker with Dask's defaults and 29.3 s with these (first run in the process:
#: 31.6, 43.2 and 36.7 s):
#:
#: - the worker's statistical profiler samples the running task's Python stack every 10 ms
#:   on the worker's event-loop thread, taking the GIL from a session that is mostly Python
#:   and small NumPy calls (most of all while JAX traces the engine: deep stacks);
#: - the nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (to hand freed memory back
#:   to the system), which turns off glibc's adaptive mmap threshold: every array above
#:   128 KiB is then mapped and unmapped afresh (4-12 %, within the machine's scatter). Left
#:   out so that a worker runs a session under the same allocator as ``rigtool run``.
#:
#: ``None`` unsets a variable of the nanny's ``pre-spawn-environ``.
WORKER_CONFIG = {"distributed.worker.profile.enabled": False,
                 "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


@contextmanager
def dask_client(*, scheduler: str | None, workers: int) -> Iterator[object]:
    """A ``distributed.Client``: of ``scheduler`` when given, else of a local cluster of
    ``workers`` single-threaded processes (closed on exit)."""
    import dask
    from distributed import Client, LocalCluster   # before dask.config.set: its defaults

    if scheduler:
        try:
            client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"no Dask scheduler answers at this address ({exc}); start one "
                             "with `dask scheduler` and workers with `dask worker ADDRESS`",
                             field="--scheduler", found=scheduler) from None
        try:
            check_workers(client)
            yield client
        finally:
            client.close()
        return
    # sessions side by side fill the cores: each worker on its own share of the CPUs
    # (rigtool.batch.worker_cpus: measured 1.5-2x faster than letting them share), its
    # engine integrating its sensitivity columns on one thread (rigtool.engine.columns),
    # and without two of Dask's defaults that slow a session (WORKER_CONFIG)
    with dask.config.set(WORKER_CONFIG), \
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                         dashboard_address=None, silence_logs=logging.ERROR,
                         preload=["rigtool.batch.worker_cpus"],
                         env={"RIGTOOL_ENGINE_THREADS": "1",
                              WORKERS_ENV: str(workers)}) as cluster, \
            Client(cluster) as client:
        yield client


def check_workers(client) -> None:
    """Every connected worker runs this rigtool version (else an InputError naming them).

    Workers that join later are not checked; a worker without rigtool fails its sessions
    with an internal error naming the missing module."""
    try:
        versions = client.run(worker_rigtool_version)
    except Exception as exc:  # noqa: BLE001 - a worker could not even import rigtool
        raise InputError(f"a Dask worker cannot run rigtool ({type(exc).__name__}: {exc}); "
                         "install this rigtool in the workers' environment",
                         field="--scheduler") from None
    wrong = {w: v for w, v in versions.items() if v != __version__}
    if wrong:
        raise InputError(f"Dask workers run another rigtool version than this one "
                         f"({__version__}): " + ", ".join(f"{w} has {v}"
                                                          for w, v in wrong.items()),
                         field="--scheduler")
    slow = {w: s for w, s in client.run(worker_slow_settings).items() if s}
    if slow:
        settings = sorted({x for s in slow.values() for x in s})
        print(f"rigtool batch: note: {len(slow)} of {len(versions)} workers run with "
              f"{' and '.join(settings)}, which slow each session by about 20 %; the "
              "documentation's how-to guide 'Many sessions on a cluster' shows the Dask settings rigtool's "
              "own workers use",
              file=sys.stderr)


def run_jobs(client, jobs: list[SessionJob],
             on_record: Callable[[SessionRecord], None] | None = None) -> list[SessionRecord]:
    """Submit every job (preflight, then run) and collect a record per job, in job order.

    ``on_record(record)`` is called as each session finishes (progress display). A task
    that Dask itself could not complete (its worker died three times: ``KilledWorker``)
    becomes an internal error of that session.
    """
    from distributed import as_completed

    batch_id = uuid.uuid4().hex[:8]           # keys never clash with another batch's
    checks = [client.submit(preflight_task, job, key=f"rigtool-preflight-{job.key}-{batch_id}",
                            priority=10, pure=False) for job in jobs]
    runs = [client.submit(run_task, job, check, key=f"rigtool-run-{job.key}-{batch_id}",
                          priority=0, pure=False) for job, check in zip(jobs, checks)]
    job_of = {fut.key: job for fut, job in zip(runs, jobs)}
    records: dict[str, SessionRecord] = {}
    try:
        for fut in as_completed(runs):
            job = job_of[fut.key]
            try:
                record = fut.result()
            except Exception as exc:  # noqa: BLE001 - the worker, not the session, failed
                record = SessionRecord(job.key, str(job.manifest), str(job.out_dir), INTERNAL,
                                       f"the Dask task failed: {type(exc).__name__}: {exc}")
            records[job.key] = record
            if on_record is not None:
                on_record(record)
    finally:
        client.cancel(checks + runs)          # nothing left running when interrupted
    return [records[job.key] for job in jobs]


__all__ = ["dask_client", "check_workers", "run_jobs", "CONNECT_TIMEOUT_S", "WORKER_CONFIG"]
