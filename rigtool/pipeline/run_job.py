"""One session, run and written: what ``rigtool run`` does, shared with ``rigtool batch``.

``rigtool run`` calls :func:`run_to_directory` once; ``rigtool batch`` calls it once per
session inside a Dask worker. Both therefore write the same report for the same session and
options. This module imports the fitting pipeline (and with it JAX) only inside
:func:`run_to_directory`, so a parent process that merely plans work stays light.
"""

from __future__ import annotations

import argparse
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rigtool.errors import InputError
from rigtool.pipeline.methods import FIT_METHODS, add_method_argument

if TYPE_CHECKING:
    from rigtool.process_pool import LazyPool

SPRING_MODELS = ("exact", "linear")
WEIGHTINGS = ("noise", "plain", "dual-metric")


@dataclass(frozen=True)
class RunOptions:
    """The fit options of ``rigtool run`` (the same defaults), and how its model files mount
    the base link (``model_base``: ``"free"`` or ``"fixed"``) and whether they carry viewing
    ellipsoids (``model_geometry``)."""

    spring_model: str = "exact"
    weighting: str = "dual-metric"
    compensate: bool = True
    method: str = FIT_METHODS[0]
    model_base: str = "free"
    model_geometry: bool = True

    def as_dict(self) -> dict:
        """Plain JSON-ready form (recorded next to batch results)."""
        return asdict(self)


def add_fit_arguments(p: argparse.ArgumentParser) -> None:
    """The fit options both ``rigtool run`` and ``rigtool batch`` take."""
    p.add_argument("--spring-model", choices=SPRING_MODELS, default="exact",
                   help="exact: the spring wrench from the measured geometry (default); "
                        "linear: the stiffness-matrix model of Homma and Yamaura's "
                        "free-vibration method")
    p.add_argument("--weighting", choices=WEIGHTINGS, default="dual-metric",
                   help="row weighting of the posture fits: noise: 1/sigma per wrench "
                        "component; plain: none (N and N m as they come); dual-metric "
                        "(default; the most accurate in benchmarks/posture.py): the "
                        "unit-independent dual metric of Yang and Hatton's coordinate-"
                        "independent identification")
    add_method_argument(p, "the posture fits")
    p.add_argument("--no-compensation", action="store_true",
                   help="plain equation error (no errors-in-variables correction)")
    p.add_argument("--rig", type=Path, default=None, metavar="RIG.toml",
                   help="use this (calibrated) rig file instead of the one each manifest "
                        "names, e.g. after recalibrating; the manifests are not edited")
    add_model_arguments(p)


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The model files' options (``rigtool run``, ``batch`` and ``export``)."""
    p.add_argument("--model-base", choices=("free", "fixed"), default="free",
                   help="the model files' base link: free (six degrees of freedom, default) or "
                        "fixed to the world")
    p.add_argument("--no-model-geometry", action="store_true",
                   help="leave the viewing ellipsoids of equivalent inertia out of the model "
                        "files")


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """The :class:`RunOptions` of parsed ``add_fit_arguments`` options."""
    return RunOptions(spring_model=args.spring_model, weighting=args.weighting,
                      compensate=not args.no_compensation, method=args.method,
                      model_base=args.model_base, model_geometry=not args.no_model_geometry)


def default_results_dir(session_path: Path) -> Path:
    """Where ``rigtool run`` writes without ``-o``: ``results/`` next to the manifest."""
    return Path(session_path).parent / "results"


def check_results_dir(session_path: Path, out_dir: Path) -> None:
    """Refuse a results directory that is the session's own folder (raw captures live
    there), with an :class:`~rigtool.errors.InputError`."""
    if Path(out_dir).resolve() == Path(session_path).resolve().parent:
        raise InputError("the results directory must not be the session's own folder (raw "
                         "captures live there); choose another with -o", path=out_dir)


def run_to_directory(session_path: Path, out_dir: Path, *, options: RunOptions,
                     rig: Path | None = None, workers: int | None = None,
                     progress: Callable[[str], None] | None = None,
                     preflight: bool = True, pool: LazyPool | None = None):
    """Run a session's pipeline and write its report into ``out_dir``.

    Parameters
    ----------
    session_path : Path
        The manifest.
    out_dir : Path
        Results directory (created; checked not to be the session's folder).
    options : RunOptions
    rig : Path, optional
        A rig file used instead of the manifest's.
    workers : int, optional
        Processes for the posture fits (see :func:`rigtool.pipeline.session.run_session`);
        1 inside a batch worker, which must not start processes of its own.
    progress : callable, optional
        ``progress(message)`` for long steps.
    preflight : bool
        Check every input first (off when the caller has just done so).
    pool : LazyPool, optional
        The run's worker processes, already prestarted by the caller (``rigtool run`` starts
        them before its own imports); default: started here and stopped at the end.

    Returns
    -------
    outcome : SessionOutcome
    written : list of Path
        The files written.
    """
    from rigtool.pipeline.session import run_session   # imports the fitting code
    from rigtool.pipeline.workers import fits_in_workers, run_pool
    from rigtool.report.figures import start_posture_figures
    from rigtool.report.writer import write_report

    check_results_dir(session_path, out_dir)
    progress = progress or (lambda message: None)
    # one set of worker processes for the posture fits and then the figures
    with (nullcontext(pool) if pool is not None else
          run_pool(workers, fits=fits_in_workers(session_path, options.method, workers))) as pool:
        pool.prestart()             # the workers' imports run on a spare core meanwhile
        early = []                  # the posture figures, drawn while the later stages run

        def postures_fitted(postures):
            early.append(start_posture_figures(postures, pool))

        try:
            outcome = run_session(session_path, spring_model=options.spring_model,
                                  weighting=options.weighting, compensate=options.compensate,
                                  method=options.method, workers=workers, progress=progress,
                                  preflight=preflight, rig=rig, pool=pool,
                                  postures_fitted=postures_fitted)
        except BaseException:
            for drawing in early:
                if drawing is not None:
                    drawing.cancel()
            raise
        progress("writing the report")
        return outcome, write_report(outcome, out_dir, pool=pool,
                                     early=early[0] if early else None,
                                     model_base=options.model_base,
                                     model_geometry=options.model_geometry)


__all__ = ["RunOptions", "add_fit_arguments", "add_model_arguments", "options_from_args",
           "default_results_dir", "check_results_dir", "run_to_directory"]
