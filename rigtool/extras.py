"""The optional parts of rigtool and the packages each needs.

``pip install rigtool`` brings what a lab with optical motion capture needs: read captures,
calibrate the rig, measure a person, write the report. The rest comes as extras::

    pip install 'rigtool[camera]'   # rigtool camera, rigtool track: OpenCV
    pip install 'rigtool[batch]'    # rigtool batch: dask.distributed, pyarrow (summary.parquet)
    pip install 'rigtool[robot]'    # robots from URDFs: pinocchio, example-robot-data

Asking for a part whose packages are not installed raises :class:`MissingExtraError`, which
names the extra to install (the command line prints it and exits with status 2).
"""

from __future__ import annotations

import importlib
import importlib.util
from importlib import metadata
from types import ModuleType

from rigtool.errors import RigtoolError

#: extra -> (what it is for, {importable module: distribution to install})
EXTRAS: dict[str, tuple[str, dict[str, str]]] = {
    "camera": ("the camera path (rigtool camera, rigtool track)",
               {"cv2": "opencv-python-headless"}),
    "batch": ("many sessions at once (rigtool batch)",
              {"dask": "dask[distributed]", "distributed": "dask[distributed]",
               "pyarrow": "pyarrow"}),
    "robot": ("robots from their URDFs", {"pinocchio": "pin",
                                          "example_robot_data": "example-robot-data"}),
}


class MissingExtraError(RigtoolError):
    """A part of rigtool was asked for whose optional packages are not installed."""


def _installed(module: str, dist: str) -> bool:
    # the module importable (any distribution of it: opencv-python serves as well), or the
    # distribution installed (example-robot-data has data files and no module)
    if importlib.util.find_spec(module) is not None:
        return True
    try:
        metadata.distribution(dist.split("[")[0])
    except metadata.PackageNotFoundError:
        return False
    return True


def _extra_of(module: str) -> str | None:
    top = module.split(".")[0]
    return next((name for name, (_, mods) in EXTRAS.items() if top in mods), None)


def missing_extra_error(exc: ModuleNotFoundError) -> MissingExtraError | None:
    """The :class:`MissingExtraError` for a failed import of an extra's module (None when the
    module missing is not one of the extras')."""
    name = exc.name or ""
    extra = _extra_of(name)
    if extra is None:
        return None
    what, mods = EXTRAS[extra]
    dist = mods[name.split(".")[0]]
    return MissingExtraError(f"{what} needs {dist}, which is not installed: "
                             f"pip install 'rigtool[{extra}]'")


def require(module: str) -> ModuleType:
    """Import ``module`` (one of an extra's), or raise :class:`MissingExtraError` naming the
    extra to install."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        err = missing_extra_error(exc)
        if err is None:
            raise
        raise err from None


def require_extra(extra: str) -> None:
    """Check that every package of ``extra`` is installed (without importing them), or raise
    :class:`MissingExtraError` naming the first one missing."""
    what, mods = EXTRAS[extra]
    for module, dist in mods.items():
        if not _installed(module, dist):
            raise MissingExtraError(f"{what} needs {dist}, which is not installed: "
                                    f"pip install 'rigtool[{extra}]'")


__all__ = ["EXTRAS", "MissingExtraError", "missing_extra_error", "require", "require_extra"]
