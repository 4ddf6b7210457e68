"""The ``rigtool`` command line: parse, call the pipeline, map errors to exit status.

Exit status: 0 on success, 2 on bad input (a :class:`RigtoolError`: one clear message, no
traceback), 1 on an internal error; a command may return 3 (a partial result) or 4 (a
calibration whose held-out body its model misjudges), rigtool.errors. Each sub-command lives in ``rigtool/commands/NAME.py``
with ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import traceback
from typing import NoReturn

from rigtool import __version__
from rigtool.errors import RigtoolError

#: Sub-commands in the order ``rigtool --help`` lists them.
COMMANDS: tuple[str, ...] = ("inspect", "convert", "camera", "track", "simulate", "calibrate",
                             "weigh", "subset", "run", "batch", "export", "modes")


def _load(name: str):
    module_name = f"rigtool.commands.{name}"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:  # this command is not part of this build
            return None
        raise


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every available sub-command (or just ``only``, so a command
    never depends on the other commands' modules importing)."""
    parser = argparse.ArgumentParser(
        prog="rigtool",
        description="Inertial parameters from free vibration on a spring-suspended platform.")
    parser.add_argument("--version", action="version", version=f"rigtool {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show a traceback for internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name != only:
            continue
        module = _load(name)
        if module is None:
            continue
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser




def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rigtool`` console script; returns the exit status."""
    tokens = sys.argv[1:] if argv is None else list(argv)
    chosen = next((t for t in tokens if not t.startswith("-")), None)
    parser = build_parser(chosen if chosen in COMMANDS else None)
    args = parser.parse_args(tokens)  # argparse itself exits 2 on a usage error
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except RigtoolError as exc:
        print(f"rigtool {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        from rigtool.extras import missing_extra_error

        err = missing_extra_error(exc)
        if err is None:
            return _internal(args, exc)
        print(f"rigtool {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rigtool: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place that reports internal errors
        return _internal(args, exc)


def _internal(args: argparse.Namespace, exc: BaseException) -> int:
    """An internal error: one line (the traceback with ``--debug``), exit status 1."""
    if args.debug:
        traceback.print_exception(exc)
    print(f"rigtool {args.command}: internal error: {type(exc).__name__}: {exc} "
          "(run with --debug for a traceback, and please report it)", file=sys.stderr)
    return 1


#: numba's LLVM optimisation level for rigtool's own processes (unless the user set one).
#: The tree kernels compile once per machine; at level 1 that takes 22 s instead of 33 s,
#: and the compiled kernels run as fast as at numba's default 3 (8 and 16 bodies with 140
#: and 268 tangents: within 2 %, either side; measured 2026-11-26 with
#: benchmarks/tree_tangents.py). The on-disk cache does not depend on the level.
NUMBA_OPT_LEVEL = "1"

#: BLAS threads per rigtool process (unless the user set them). Every product rigtool forms
#: is small (a chunk's Jacobian, thousands of rows by tens of columns), and BLAS's threads
#: then only fight XLA's and the other workers' for the cores: with the default threads, a
#: breathing posture's normal equations took 6.9 s of its 10.9 s of accumulation, 0.16 s on
#: one thread; whole runs got 7-19 % faster (a rigid and a breathing session's postures,
#: the demo; measured 2026-11-28 on this 2-core machine). The benchmarks pin it the same
#: way. Set before anything imports NumPy, and inherited by the worker processes.
BLAS_THREADS = "1"


def console() -> NoReturn:
    """The ``rigtool`` console script: :func:`main`, then the process ends with its status
    without the interpreter's finalisation. numba's optimisation level is set here, before
    anything imports numba, for this process only (:data:`NUMBA_OPT_LEVEL`), and so are
    BLAS's threads (:data:`BLAS_THREADS`); a library caller of :func:`main` keeps its
    own."""
    os.environ.setdefault("NUMBA_OPT", NUMBA_OPT_LEVEL)
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, BLAS_THREADS)
    end_process(main())


def end_process(status: int) -> NoReturn:
    """End this process with ``status``: the ``atexit`` handlers run (logging's flush,
    multiprocessing's children, JAX's clean-up), the standard streams are flushed, then
    ``os._exit``. Why not a plain exit: after a fit, the interpreter's finalisation tears
    down XLA's client, numba's compiled code and every module, one by one: 0.4-0.6 s of
    each demo command (measured, 2026-11-26), for nothing the user sees; every output file
    is written and closed by the time :func:`main` returns. ``atexit._run_exitfuncs`` is
    CPython's (and PyPy's) own call for the handlers; there is no public one."""
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):     # a closed pipe or stream: nothing to flush
                pass
        os._exit(status)


if __name__ == "__main__":
    console()
