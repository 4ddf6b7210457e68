"""Vicon Nexus CSV export: read the Trajectories section, write a Nexus-like file.

Layout (one or more sections, each ended by an empty line)::

    Trajectories                       <- section title (may be padded with commas)
    100                                <- frame rate, Hz ("100" or "100,")
    ,,rig:P1,,,rig:P2,,,               <- marker names over the X of each X/Y/Z triple
    Frame,Sub Frame,X,Y,Z,X,Y,Z        <- components
    ,,mm,mm,mm,mm,mm,mm                <- units of each column
    500,0,12.5,,,...                   <- data; empty cells where a marker is missing

Only the Trajectories section holds markers. The others (Devices, Joints, Model Outputs,
Segments, Events, ...) have their own columns (device channels, RX/RY/RZ/TX/TY/TZ,
``Magnitude( X )`` ...), come in any order and are skipped, even when one holds an empty line
of its own. Inside Trajectories a marker's columns start with X, Y, Z; the derived columns
Nexus can add after them (velocities X', accelerations X'', ``Magnitude( X )``) are skipped,
as is a name over derived columns only; both are reported in ``MarkerData.notes``. The
``Trajectory Count`` column Nexus can end the section with (component ``Count``, no units, the
number of trajectories it saw in each frame) is skipped too; its counts are checked against
the markers present in each frame and the note says whether they agree. Frame
numbers may start anywhere (trimmed exports); ``first_frame`` keeps the first one and time
runs from 0 at that frame. Units come from the units row (per column); ``units`` is used only
when that row is empty.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from rigtool.errors import FormatError, InputError
from rigtool.mocap._common import check_unique, make_marker_data, units_factor
from rigtool.mocap._textblock import (LineReader, block_end, check_frames, fmt_number,
                                      format_rows, head_text, is_blank, load_text_bytes,
                                      parse_block)
from rigtool.mocap.markerdata import LENGTH_UNITS_TO_M, MarkerData

#: Block titles Nexus writes; a file starting with one of them is a Vicon CSV.
BLOCK_TITLES = ("Trajectories", "Devices", "Model Outputs", "Joints", "Segments", "Events",
                "Global Variables", "Subject Parameters")

_FMT = "vicon-csv"


def _title(cells: list[str]) -> str | None:
    """The block title if ``cells`` is a title line (one text cell, the rest empty)."""
    if cells and cells[0].strip() and not any(c.strip() for c in cells[1:]):
        return cells[0].strip()
    return None


def _rate(cells: list[str]) -> float | None:
    if cells and cells[0].strip() and not any(c.strip() for c in cells[1:]):
        try:
            return float(cells[0])
        except ValueError:
            return None
    return None


def sniff(head: bytes) -> bool:
    """A Vicon CSV starts with a known block title, then (but for Events) a rate line."""
    lines = [ln for ln in head_text(head, 20)]
    lines = [ln for ln in lines if ln.strip(", \t")]
    if len(lines) < 2 or "\t" in lines[0]:
        return False
    title = _title(lines[0].split(","))
    if title not in BLOCK_TITLES:
        return False
    return title == "Events" or _rate(lines[1].split(",")) is not None


#: Columns Nexus may add after a marker's X, Y, Z: velocities (X'), accelerations (X''),
#: magnitudes (``Magnitude( X )``, ``|X'|``).
_DERIVED = re.compile(r"^(?:[XYZ]'+|magnitude\s*\(.*\)|\|.*\|)$", re.IGNORECASE)


def _is_derived(component: str) -> bool:
    return bool(_DERIVED.match(component.strip()))


#: Name and component of the per-frame trajectory count column.
_COUNT_NAME, _COUNT_COMPONENT = "trajectory count", "count"


def _is_count(name: str, group: list[str]) -> bool:
    """True for the ``Trajectory Count`` name over a lone ``Count`` component."""
    return (name.strip().lower() == _COUNT_NAME and bool(group)
            and group[0].lower() == _COUNT_COMPONENT and not any(group[1:]))


def _count_note(counts: np.ndarray, present: np.ndarray, frames: np.ndarray, *, path: Path,
                first_line: int) -> str:
    """The note on the skipped ``Trajectory Count`` column: does it match the markers present?

    ``counts`` per frame (NaN where the cell is empty), ``present`` the markers with a
    position in that frame. A count that is not a whole number >= 0 is a FormatError naming
    the line.
    """
    given = np.isfinite(counts)
    bad = given & ((counts < 0) | (counts != np.round(counts)))
    if bad.any():
        i = int(np.argmax(bad))
        raise FormatError("expected a whole number of trajectories (>= 0)", path=path,
                          line=first_line + i, field="Trajectory Count", found=float(counts[i]))
    head = ("Trajectories: skipped the 'Trajectory Count' column (trajectories seen per "
            "frame)")
    n_given = int(given.sum())
    if n_given == 0:
        return f"{head}; it is empty in every frame"
    empty = (f"; {len(counts) - n_given} frames have no count"
             if n_given < len(counts) else "")
    more = given & (counts > present)
    fewer = given & (counts < present)
    if not (more.any() or fewer.any()):
        return f"{head}; it matches the markers present in all {n_given} frames{empty}"
    i = int(np.argmax(more | fewer))
    return (f"{head}; it disagrees with the markers present in {int((more | fewer).sum())} of "
            f"{n_given} frames (count above in {int(more.sum())}, below in "
            f"{int(fewer.sum())}), first at frame {int(frames[i])}: count {int(counts[i])}, "
            f"markers present {int(present[i])}{empty}")


def _skip_block(reader: LineReader) -> None:
    reader.jump(block_end(reader.raw, reader.pos, ","))


def read(path: Path, *, units: str | None = None) -> MarkerData:
    """Read the Trajectories block of a Vicon Nexus CSV export.

    Parameters
    ----------
    path : Path
        The export.
    units : str, optional
        Length units to assume when the units row is empty (the file's own units win).

    Returns
    -------
    MarkerData
        Positions in metres, NaN where a marker is missing.

    Raises
    ------
    FormatError
        Naming the file and line when the file is not a well-formed export.
    """
    path = Path(path)
    raw = load_text_bytes(path)
    reader = LineReader(raw, path)
    seen: list[str] = []
    while True:
        text = reader.next()
        if text is None:
            found = f" (it has: {', '.join(seen)})" if seen else ""
            raise FormatError(f"no 'Trajectories' block; a Vicon Nexus CSV export of marker "
                              f"trajectories was expected{found}", path=path)
        cells = text.split(",")
        if is_blank(cells):
            continue
        title = _title(cells)
        if title is None or _rate(cells) is not None:
            if not seen:
                raise FormatError("expected a block title line such as 'Trajectories'",
                                  path=path, line=reader.line, found=text[:40])
            _skip_block(reader)  # more of the section being skipped, after an empty line
            continue
        if title == "Trajectories":
            data = _read_trajectories(reader, path, units)
            if seen:
                notes = (f"read the Trajectories section; skipped {', '.join(seen)}",)
                data = replace(data, notes=notes + data.notes)
            return data
        seen.append(title)
        _skip_block(reader)


def _header_line(reader: LineReader, what: str) -> list[str]:
    text = reader.next()
    if text is None:
        raise FormatError(f"the file ends inside the Trajectories header; expected {what}",
                          path=reader.path, line=reader.line + 1)
    cells = text.split(",")
    if is_blank(cells):
        raise FormatError(f"the Trajectories block ends early; expected {what}",
                          path=reader.path, line=reader.line)
    return cells


def _read_trajectories(reader: LineReader, path: Path, user_units: str | None) -> MarkerData:
    rate_cells = _header_line(reader, "the frame rate (Hz) under the title")
    rate = _rate(rate_cells)
    if rate is None or not (np.isfinite(rate) and rate > 0):
        raise FormatError("expected the frame rate (Hz, a positive number) on the line after "
                          "'Trajectories'", path=path, line=reader.line,
                          found=",".join(rate_cells).strip(", "))
    name_cells = _header_line(reader, "the marker-name row")
    name_line = reader.line
    comp_cells = _header_line(reader, "the 'Frame,Sub Frame,X,Y,Z,...' row")
    comp_line = reader.line
    head = [c.strip().lower() for c in comp_cells[:2]]
    if not head or head[0] not in ("frame", "field #"):
        raise FormatError("expected the component row 'Frame,Sub Frame,X,Y,Z,...'",
                          path=path, line=comp_line, found=",".join(comp_cells)[:40])
    units_cells = _header_line(reader, "the units row ',,mm,mm,mm,...'")
    units_line = reader.line

    names: list[str] = []
    xcols: list[int] = []
    derived: list[str] = []  # skipped columns, for the note
    count_col: int | None = None  # the Trajectory Count column, checked then skipped
    starts = [j for j, cell in enumerate(name_cells) if cell.strip()]
    for k, j in enumerate(starts):
        cell = name_cells[j]
        if j == 0 or (j == 1 and len(head) > 1 and head[1] == "sub frame"):
            raise FormatError("a marker name over the Frame columns", path=path,
                              line=name_line, found=cell.strip())
        stop = starts[k + 1] if k + 1 < len(starts) else max(len(comp_cells), j + 3)
        group = [c.strip() for c in comp_cells[j:stop]]
        if [c.upper() for c in group[:3]] == ["X", "Y", "Z"]:
            names.append(cell.strip())
            xcols.append(j)
            derived += [c for c in group[3:] if c]  # X', Magnitude( X ), ... after the triple
        elif group and all(_is_derived(c) for c in group if c) and any(group):
            derived.append(f"{cell.strip()} ({', '.join(c for c in group if c)})")
        elif _is_count(cell, group):
            if count_col is not None:
                raise FormatError("a second 'Trajectory Count' column", path=path,
                                  line=name_line, field=f"column {j + 1}")
            count_col = j
        else:
            raise FormatError(f"expected X,Y,Z components under marker '{cell.strip()}'",
                              path=path, line=comp_line, field=f"column {j + 1}",
                              found=",".join(comp_cells[j:j + 3]))
    if not names:
        raise FormatError("no marker names in the Trajectories block", path=path,
                          line=name_line)
    check_unique(names, path=path, line=name_line)

    xyz_cols = [j + k for j in xcols for k in range(3)]
    unit_of = [units_cells[c].strip() if c < len(units_cells) else "" for c in xyz_cols]
    given = sorted({u for u in unit_of if u})
    if given and any(not u for u in unit_of):
        raise FormatError("units row has empty cells under some markers", path=path,
                          line=units_line)
    factors = np.ones(len(xyz_cols))
    if given:
        for u in given:
            if u.lower() not in LENGTH_UNITS_TO_M:
                raise FormatError("unknown length units; expected mm, cm, m or in", path=path,
                                  line=units_line, found=u)
        factors = np.array([LENGTH_UNITS_TO_M[u.lower()] for u in unit_of])
        file_units = unit_of[0]
        factor, units_text = factors[0], file_units
    else:
        factor, units_text = units_factor(None, user_units=user_units, path=path,
                                          line=units_line)

    # Sub Frame is parsed only to refuse text in it.
    lead = ["Frame", "Sub Frame"] if len(head) > 1 and head[1] == "sub frame" else ["Frame"]
    cols = list(range(len(lead))) + xyz_cols + ([] if count_col is None else [count_col])
    widths = [len(c) for c in (rate_cells, name_cells, comp_cells, units_cells)]
    min_width = max(cols) + 1
    max_width = max(widths + [min_width])
    start = reader.pos
    end = block_end(reader.raw, start, ",")
    first_line = reader.line + 1
    col_names = lead + [f"{n} {a}" for n in names for a in "XYZ"] + ["Trajectory Count"]
    table = parse_block(reader.raw, start, end, first_line=first_line, cols=cols,
                        min_width=min_width, max_width=max_width, path=path,
                        col_names=col_names)
    if table.shape[0] == 0:
        raise FormatError("the Trajectories block has no data rows", path=path,
                          line=first_line)
    frames = check_frames(table[:, 0], path=path, first_line=first_line)
    xyz = table[:, len(lead):len(lead) + len(xyz_cols)]
    if np.any(factors != factor):
        xyz = xyz * (factors / factor)  # per-column units relative to the first
    notes = ()
    if derived:
        shown = ", ".join(dict.fromkeys(derived))
        notes = (f"Trajectories: skipped {len(derived)} columns that are not marker "
                 f"positions ({shown[:200]}{' ...' if len(shown) > 200 else ''})",)
    if count_col is not None:
        present = np.isfinite(xyz.reshape(len(frames), len(names), 3)).all(axis=2).sum(axis=1)
        notes += (_count_note(table[:, -1], present, frames, path=path,
                              first_line=first_line),)
    return make_marker_data(frames=frames, time_s=None, rate_hz=rate, names=names, xyz=xyz,
                            factor=float(factor), units=units_text, fmt=_FMT, path=path,
                            notes=notes)


_DECIMALS = {"mm": 6, "millimeters": 6, "cm": 7, "centimeters": 7, "m": 9, "meters": 9,
             "in": 8, "inches": 8}


def write(data: MarkerData, path: Path, *, units: str = "mm") -> None:
    """Write ``data`` as a Nexus-like CSV: one Trajectories block, CRLF line ends.

    Positions are written in ``units`` with 1e-9 m resolution, empty cells where missing;
    frames are numbered from ``data.first_frame``.
    """
    key = units.strip().lower()
    if key not in LENGTH_UNITS_TO_M:
        raise InputError("unknown length units; expected mm, cm, m or in", field="units",
                         found=units)
    factor = LENGTH_UNITS_TO_M[key]
    n = len(data.names)
    frames = data.first_frame + np.rint(data.time_s * data.rate_hz).astype(np.int64)
    values = data.xyz_m.reshape(data.n_frames, 3 * n) / factor
    head = [
        "Trajectories",
        fmt_number(data.rate_hz),
        ",," + ",".join(f"{name},," for name in data.names) + ",",  # one field longer, as Nexus
        "Frame,Sub Frame," + ",".join(["X,Y,Z"] * n),
        ",," + ",".join([f"{units},{units},{units}"] * n),
    ]
    body = format_rows([frames, np.zeros(data.n_frames, dtype=np.int64)], ["%d", "%d"],
                       values, f"%.{_DECIMALS[key]}f", ",")
    text = "\n".join(head) + "\n" + body + "\n"
    Path(path).write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
