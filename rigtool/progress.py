"""Progress lines for long steps: shown on a terminal, silent when output is redirected."""

from __future__ import annotations

import sys
import time
from typing import Callable


def progress_printer(stream=None) -> Callable[[str], None]:
    """A ``progress(message)`` callable: prints ``[elapsed] message`` to stderr when it is a
    terminal, does nothing otherwise (logs and pipes stay clean)."""
    stream = stream if stream is not None else sys.stderr
    if not getattr(stream, "isatty", lambda: False)():
        return lambda message: None
    start = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=stream, flush=True)

    return progress
