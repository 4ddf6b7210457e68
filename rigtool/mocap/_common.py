"""Helpers shared by the capture readers: decoding, numeric cells, validation.

Every failure here is a :class:`FormatError` that names the file and the line (1-based) or
field, so readers never let a ``ValueError``/``UnicodeDecodeError``/``IndexError`` escape.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.errors import FormatError
from rigtool.mocap.markerdata import LENGTH_UNITS_TO_M, MarkerData, length_factor


def read_lines(path: Path) -> list[str]:
    """The file's lines (BOM stripped, CRLF/LF/CR all accepted, line ends removed).

    Raises FormatError for binary content (NUL bytes) or undecodable text.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read the file ({exc.strerror})", path=path) from None
    if b"\x00" in raw:
        raise FormatError("binary content in a text export (NUL bytes); the file is corrupt "
                          "or not a text capture", path=path)
    for enc in ("utf-8-sig", "cp1252"):
        try:
            text = raw.decode(enc)
            break
        except UnicodeDecodeError as exc:
            bad = exc
    else:  # pragma: no cover - cp1252 only fails on a handful of bytes
        line = raw[: bad.start].count(b"\n") + 1
        raise FormatError("text that is neither UTF-8 nor Windows-1252", path=path, line=line)
    return text.splitlines()


def parse_number(cell: str, *, path: Path, line: int, field: str | None = None) -> float:
    """A float from one cell; empty cells are NaN; text raises naming file, line and column."""
    cell = cell.strip()
    if cell == "":
        return float("nan")
    try:
        value = float(cell)
    except ValueError:
        raise FormatError("expected a number", path=path, line=line, field=field,
                          found=cell) from None
    return value


def parse_numeric_rows(rows: list[list[str]], *, first_line: int, n_cols: int, path: Path,
                       col_names: list[str] | None = None, allow_short: bool = True) -> np.ndarray:
    """Parse a block of data rows to a float array ``[len(rows), n_cols]`` (empty -> NaN).

    Rows longer than ``n_cols`` must have only empty extra cells; shorter rows are padded
    with NaN when ``allow_short`` (exporters drop trailing empty cells), else rejected.
    ``first_line`` is the 1-based file line of ``rows[0]``.
    """
    out = np.full((len(rows), n_cols), np.nan)
    for i, row in enumerate(rows):
        line = first_line + i
        if len(row) > n_cols and any(c.strip() for c in row[n_cols:]):
            raise FormatError(f"ragged row: {len(row)} fields where {n_cols} were expected",
                              path=path, line=line)
        if len(row) < n_cols and not allow_short:
            raise FormatError(f"ragged row: {len(row)} fields where {n_cols} were expected",
                              path=path, line=line)
        for j, cell in enumerate(row[:n_cols]):
            if cell.strip():
                try:
                    out[i, j] = float(cell)
                except ValueError:
                    name = col_names[j] if col_names and j < len(col_names) else f"column {j + 1}"
                    raise FormatError("expected a number", path=path, line=line, field=name,
                                      found=cell.strip()) from None
    if not np.all(np.isfinite(out) | np.isnan(out)):
        bad = np.argwhere(np.isinf(out))[0]
        raise FormatError("expected a finite number", path=path, line=first_line + int(bad[0]))
    return out


def check_unique(names: list[str], *, path: Path, line: int | None = None) -> None:
    """Refuse duplicated marker names (they would be ambiguous downstream)."""
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise FormatError(f"duplicated marker name '{n}'", path=path, line=line)
        seen.add(n)


def units_factor(units: str | None, *, user_units: str | None, path: Path,
                 line: int | None = None) -> tuple[float, str]:
    """Factor to metres and the units string recorded: the file's units, else the user's.

    A file that states no units and no user units is refused with the fix in the message.
    """
    if units:
        if units.strip().lower() not in LENGTH_UNITS_TO_M:
            raise FormatError("unknown length units; expected mm, cm, m or in", path=path,
                              line=line, found=units)
        return length_factor(units, path=path), units
    if user_units:
        return length_factor(user_units, path=path, field="units"), user_units
    raise FormatError("the file does not state its length units; say them next to the "
                      "capture (units = \"mm\") or pass --units", path=path)


def make_marker_data(*, frames: np.ndarray | None, time_s: np.ndarray | None, rate_hz: float,
                     names: list[str], xyz: np.ndarray, factor: float, units: str, fmt: str,
                     path: Path, extras: dict | None = None,
                     notes: tuple[str, ...] | list[str] = ()) -> MarkerData:
    """Validate and assemble a :class:`MarkerData` (positions scaled to metres).

    ``time_s`` (if the file has it) is shifted to start at 0; otherwise time comes from
    ``frames`` (or the row index) and ``rate_hz``. ``notes`` say what the reader reconciled.
    """
    if not (np.isfinite(rate_hz) and rate_hz > 0):
        raise FormatError("expected a positive frame rate", path=path, field="rate",
                          found=rate_hz)
    n_frames = xyz.shape[0]
    if n_frames == 0:
        raise FormatError("no frames of data", path=path)
    if not names:
        raise FormatError("no markers in the file", path=path)
    check_unique(names, path=path)
    first_frame = int(frames[0]) if frames is not None and np.isfinite(frames[0]) else 1
    if time_s is None:
        if frames is not None and np.all(np.isfinite(frames)):
            time_s = (frames - frames[0]) / rate_hz
        else:
            time_s = np.arange(n_frames) / rate_hz
    else:
        time_s = np.asarray(time_s, float) - float(time_s[0])
    if not np.all(np.isfinite(time_s)) or np.any(np.diff(time_s) <= 0):
        raise FormatError("frame numbers or times must increase from row to row", path=path)
    xyz_m = np.asarray(xyz, float).reshape(n_frames, len(names), 3) * factor
    return MarkerData(time_s=time_s, names=tuple(names), xyz_m=xyz_m, rate_hz=float(rate_hz),
                      first_frame=first_frame, units=units, format=fmt, source=path,
                      extras=extras or {}, notes=tuple(notes))
