"""One batch at a time per results folder: ``RESULTS/.batch.lock``.

A batch cleans the temporary folders an interrupted batch left behind and replaces session
folders; two batches writing into one results folder would undo each other's work. The lock
file holds the host name and process id of its batch. A lock whose process is gone (a batch
that was killed) is taken over; one held on another host cannot be checked and is refused
with the way out.
"""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rigtool.errors import InputError

LOCK_NAME = ".batch.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # exists, owned by someone else
        return True
    return True


def _take(lock: Path) -> bool:
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{socket.gethostname()} {os.getpid()}\n")
    return True


@contextmanager
def results_lock(results: Path) -> Iterator[None]:
    """Hold ``results/.batch.lock`` for the duration of the block.

    Raises
    ------
    InputError
        When another running batch holds it.
    """
    results.mkdir(parents=True, exist_ok=True)
    lock = results / LOCK_NAME
    if not _take(lock):
        try:
            host, pid = lock.read_text().split()
            stale = host == socket.gethostname() and not _alive(int(pid))
        except (OSError, ValueError):
            host, pid, stale = "?", "?", True
        if not stale:
            raise InputError(f"another rigtool batch (process {pid} on {host}) is writing "
                             "to this results folder; wait for it, or choose another with "
                             f"-o (if no batch is running, delete {lock})", path=results)
        lock.unlink(missing_ok=True)
        if not _take(lock):
            raise InputError("another rigtool batch took this results folder just now",
                             path=results)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


__all__ = ["results_lock", "LOCK_NAME"]
