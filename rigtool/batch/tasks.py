"""What a Dask worker runs for one session: preflight, run, atomic write.

Both tasks catch what a session can raise and return a :class:`SessionRecord` instead: a
:class:`~rigtool.errors.RigtoolError` (bad input: exit status meaning 2, the message
``rigtool run`` prints) or any other exception (internal error: 1, with its traceback). One
session's failure therefore never reaches the other sessions nor the batch itself.

Results are written into a hidden temporary folder next to the final one and renamed into
place when complete, so ``RESULTS/KEY`` either holds a whole session's results (and its
``batch.json``) or does not exist: a batch killed midway leaves no half-written session, and
the next run redoes exactly the sessions without one.

The pipeline is imported inside the tasks (workers only): importing this module is light.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
import traceback
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from rigtool import __version__
from rigtool.errors import (EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_PARTIAL,
                            RigtoolError)
from rigtool.pipeline.run_job import RunOptions

#: statuses of a session in a batch, with the exit status each means
DONE, SKIPPED, BAD_INPUT, INTERNAL = "done", "skipped", "bad input", "internal error"
#: results written, but the captures could not identify everything (rigtool.errors)
PARTIAL = "partial"
EXIT_STATUS = {DONE: EXIT_OK, SKIPPED: EXIT_OK, BAD_INPUT: EXIT_BAD_INPUT,
               INTERNAL: EXIT_INTERNAL, PARTIAL: EXIT_PARTIAL}

#: the file next to a session's results that says which batch job wrote them
BATCH_RECORD = "batch.json"


@dataclass(frozen=True)
class SessionJob:
    """One session of a batch (paths absolute: workers may run in other folders).

    Attributes
    ----------
    key : str
        The session's name in the batch (its results folder under RESULTS).
    manifest : Path
        The session manifest.
    out_dir : Path
        ``RESULTS/KEY``.
    rig : Path or None
        ``--rig``: a rig file used instead of the manifest's.
    options : RunOptions
        The fit options (as ``rigtool run`` takes them).
    """

    key: str
    manifest: Path
    out_dir: Path
    rig: Path | None
    options: RunOptions


@dataclass
class SessionRecord:
    """A session's outcome in a batch (one line of the summary).

    ``status`` is one of ``done``, ``skipped`` (results already up to date), ``partial``
    (exit status 3: results written, but the captures could not identify everything;
    ``message`` says what), ``bad input`` (exit status 2: the session's inputs are at fault;
    ``message`` is what ``rigtool run`` says) and ``internal error`` (1; ``detail`` holds
    the traceback). Times in seconds.
    """

    key: str
    manifest: str
    out_dir: str
    status: str
    message: str = ""
    preflight_s: float | None = None
    run_s: float | None = None
    worker: str = ""
    finished: str = ""
    detail: str = ""

    @property
    def exit_status(self) -> int:
        """0 (done, skipped), 3 (partial), 2 (bad input) or 1 (internal error)."""
        return EXIT_STATUS[self.status]

    def to_json(self) -> dict:
        """The record as written to ``batch.json``."""
        return asdict(self)


def batch_exit_status(records: list[SessionRecord]) -> int:
    """The batch's exit status: 2 when any session had bad input, else 1 when any had an
    internal error, else 3 when any gave a partial result, else 0."""
    codes = {r.exit_status for r in records}
    for code in (EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_PARTIAL):
        if code in codes:
            return code
    return EXIT_OK


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _failure(job: SessionJob, exc: BaseException, **times) -> SessionRecord:
    if isinstance(exc, RigtoolError):
        return SessionRecord(job.key, str(job.manifest), str(job.out_dir), BAD_INPUT,
                             str(exc), worker=_worker_name(), finished=_now(), **times)
    return SessionRecord(job.key, str(job.manifest), str(job.out_dir), INTERNAL,
                         f"{type(exc).__name__}: {exc}", worker=_worker_name(),
                         finished=_now(), detail="".join(traceback.format_exception(exc)),
                         **times)


def preflight_task(job: SessionJob) -> SessionRecord | float:
    """Check every input of the session (seconds, no fit). The seconds it took when all is
    well; else the failed session's record (its
    :class:`~rigtool.pipeline.preflight.PreflightError`, exit status meaning 2)."""
    t0 = time.perf_counter()
    try:
        from rigtool.pipeline.preflight import check_session
        check_session(job.manifest, rig=job.rig)
    except Exception as exc:  # noqa: BLE001 - every failure becomes the session's record
        return _failure(job, exc, preflight_s=time.perf_counter() - t0)
    return time.perf_counter() - t0


def publish_directory(tmp_dir: Path, final_dir: Path) -> None:
    """Move a complete results folder into place (an older one is replaced).

    Two renames on one file system: the old folder aside, the new one in; a crash between
    them leaves no ``final_dir``, which the next batch run treats as not done.
    """
    old = None
    if final_dir.exists():
        old = final_dir.with_name(f".{final_dir.name}.old-{uuid.uuid4().hex[:8]}")
        final_dir.rename(old)
    tmp_dir.rename(final_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def run_task(job: SessionJob, checked: SessionRecord | float) -> SessionRecord:
    """Run one session as ``rigtool run`` does and publish its results atomically.

    ``checked`` is :func:`preflight_task`'s answer: a failed preflight is passed on
    unchanged (the session is not run).
    """
    if isinstance(checked, SessionRecord):
        return checked
    preflight_s = float(checked)
    t0 = time.perf_counter()
    tmp = job.out_dir.with_name(f".{job.key}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        from rigtool.pipeline.run_job import run_to_directory
        tmp.parent.mkdir(parents=True, exist_ok=True)
        # one process per session: a Dask worker is daemonic and may not start its own
        outcome, _ = run_to_directory(job.manifest, tmp, options=job.options, rig=job.rig,
                                      workers=1, preflight=False)
        record = SessionRecord(job.key, str(job.manifest), str(job.out_dir),
                               PARTIAL if outcome.partial else DONE,
                               "; ".join(outcome.not_identified[:2]),
                               preflight_s=preflight_s, run_s=time.perf_counter() - t0,
                               worker=_worker_name(), finished=_now())
        doc = {"rigtool_version": __version__, **record.to_json(),
               "rig": str(Path(outcome.session.rig_path).absolute()),
               "rig_override": None if job.rig is None else str(job.rig),
               "options": job.options.as_dict()}
        (tmp / BATCH_RECORD).write_text(json.dumps(doc, indent=1) + "\n")
        publish_directory(tmp, job.out_dir)
        return record
    except Exception as exc:  # noqa: BLE001 - every failure becomes the session's record
        return _failure(job, exc, preflight_s=preflight_s, run_s=time.perf_counter() - t0)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def worker_slow_settings(dask_worker) -> list[str]:
    """The Dask settings this worker runs with that slow a session (rigtool.batch.cluster.
    WORKER_CONFIG measures them): empty when there are none. ``dask_worker`` is the worker
    (``Client.run`` passes it)."""
    found = []
    if "profile" in dask_worker.periodic_callbacks:     # the statistical profiler is running
        found.append("the statistical profiler")
    if os.environ.get("MALLOC_TRIM_THRESHOLD_"):
        found.append("MALLOC_TRIM_THRESHOLD_")
    return found


def worker_rigtool_version() -> str:
    """rigtool's version on a worker (checked before a batch is submitted to a scheduler)."""
    return __version__


__all__ = ["SessionJob", "SessionRecord", "batch_exit_status", "preflight_task", "run_task",
           "publish_directory", "worker_rigtool_version", "worker_slow_settings", "DONE",
           "SKIPPED", "BAD_INPUT", "INTERNAL", "EXIT_STATUS", "BATCH_RECORD"]
