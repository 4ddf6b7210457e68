"""Reading and writing motion-capture exports.

``read_capture(path)`` detects the format from the file's content (never the extension
alone) and returns a :class:`MarkerData`; ``write_capture(data, path, format=...)`` writes
any supported format. Each format lives in its own module exposing::

    sniff(head: bytes) -> bool            # does this file look like my format?
    read(path: Path, *, units: str | None = None) -> MarkerData
    write(data: MarkerData, path: Path, *, units: str = "mm") -> None
"""

from __future__ import annotations

import importlib
from os import PathLike
from pathlib import Path

from rigtool.errors import FormatError, InputError
from rigtool.mocap.markerdata import FORMATS, MarkerData

__all__ = ["FORMATS", "MarkerData", "detect_format", "read_capture", "write_capture"]

# Detection order matters: binary C3D first, then the text formats with strong signatures,
# the plain CSV last (it is the most permissive).
_MODULES: dict[str, str] = {
    "c3d": "rigtool.mocap.c3d",
    "vicon-csv": "rigtool.mocap.vicon",
    "motive-csv": "rigtool.mocap.motive",
    "qualisys-tsv": "rigtool.mocap.qualisys",
    "plain-csv": "rigtool.mocap.plaincsv",
}

_SNIFF_BYTES = 65536


def _module(fmt: str):
    if fmt not in _MODULES:
        raise InputError(f"unknown capture format; expected one of {', '.join(FORMATS)}",
                         field="format", found=fmt)
    return importlib.import_module(_MODULES[fmt])


def detect_format(path: str | PathLike) -> str:
    """Name of the capture format of ``path`` (one of :data:`FORMATS`), from its content."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except FileNotFoundError:
        raise InputError("capture file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("expected a capture file, found a directory", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", path=path) from None
    if not head.strip():
        raise FormatError("the file is empty; expected a motion-capture export", path=path)
    for fmt in _MODULES:
        if _module(fmt).sniff(head):
            return fmt
    raise FormatError("not a supported motion-capture export (expected Vicon Nexus CSV, "
                      "OptiTrack Motive CSV, Qualisys TSV, C3D or a plain CSV with "
                      "time,<marker>_x,<marker>_y,<marker>_z columns)", path=path)


def read_capture(path: str | PathLike, *, units: str | None = None) -> MarkerData:
    """Read any supported capture; ``units`` is used only when the file states none."""
    path = Path(path)
    return _module(detect_format(path)).read(path, units=units)


def write_capture(data: MarkerData, path: str | PathLike, *, format: str,
                  units: str = "mm") -> None:
    """Write ``data`` to ``path`` in ``format`` (one of :data:`FORMATS`)."""
    _module(format).write(data, Path(path), units=units)
