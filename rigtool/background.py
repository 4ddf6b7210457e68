"""Loading compiled code on a thread of its own while a command does other work (the rigid
engine's chunks while calibration reads its captures, the tree kernels while a run fits its
postures): the load is the same either way, only when it happens changes.
"""

from __future__ import annotations

from threading import Thread
from typing import Callable


def load_in_background(load: Callable[..., None], *args, name: str) -> Thread:
    """Start ``load(*args)`` on a daemon thread; returns the thread. A load that fails is
    dropped silently: the fit that follows loads (or compiles) the same code itself and
    reports its own errors, so a warm-up never prints a thread's traceback at a user."""
    def run() -> None:
        try:
            load(*args)
        except Exception:        # noqa: BLE001 - the fit's own call is the one that reports
            pass

    thread = Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


__all__ = ["load_in_background"]
