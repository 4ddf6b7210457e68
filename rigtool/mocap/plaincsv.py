"""Plain CSV of marker trajectories: ``time,<m>_x,<m>_y,<m>_z,...`` (what ``convert`` writes).

Layout::

    time,rig:P1_x,rig:P1_y,rig:P1_z,P2_x,P2_y,P2_z
    0.000000000,0.012000000,...,,,          <- empty cells where a marker is missing

``time`` is in seconds (shifted to start at 0 on read); the frame rate is 1 / the median
time step. The file states no units: :func:`read` takes positions in metres unless the
caller says otherwise (``units="mm"``); :func:`write` always writes metres, time from 0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.errors import FormatError
from rigtool.mocap._common import check_unique, make_marker_data
from rigtool.mocap._textblock import (LineReader, block_end, format_rows, head_text,
                                      is_blank, load_text_bytes, parse_block)
from rigtool.mocap.markerdata import MarkerData, length_factor

_FMT = "plain-csv"
_TIME_NAMES = ("time", "time_s", "time (s)", "t")


def _parse_header(cells: list[str]) -> list[str] | None:
    """Marker names of a plain header, or None when the cells do not form one."""
    cells = [c.strip().strip('"') for c in cells]
    while cells and not cells[-1]:
        cells.pop()
    if len(cells) < 4 or (len(cells) - 1) % 3 or cells[0].lower() not in _TIME_NAMES:
        return None
    names = []
    for j in range(1, len(cells), 3):
        triple = cells[j:j + 3]
        stems = {c[:-2] for c in triple}
        if len(stems) != 1 or [c[-2:].lower() for c in triple] != ["_x", "_y", "_z"]:
            return None
        stem = stems.pop()
        if not stem:
            return None
        names.append(stem)
    return names


def sniff(head: bytes) -> bool:
    """A plain CSV's first line is ``time`` then ``<m>_x,<m>_y,<m>_z`` triples."""
    for line in head_text(head, 20):
        if line.strip(", \t"):
            return _parse_header(line.split(",")) is not None
    return False


def read(path: Path, *, units: str | None = None) -> MarkerData:
    """Read a plain marker CSV.

    Parameters
    ----------
    path : Path
        The file.
    units : str, optional
        Length units of the positions; the file states none, so metres when not given.

    Returns
    -------
    MarkerData
        Positions in metres, NaN where a marker is missing.

    Raises
    ------
    FormatError
        Naming the file and line when the file is not a well-formed plain CSV.
    """
    path = Path(path)
    raw = load_text_bytes(path)
    reader = LineReader(raw, path)
    text = reader.next()
    while text is not None and is_blank(text.split(",")):
        text = reader.next()
    if text is None:
        raise FormatError("the file is empty; expected a header 'time,<marker>_x,...'",
                          path=path)
    header_cells = text.split(",")
    names = _parse_header(header_cells)
    if names is None:
        raise FormatError("expected a header 'time,<marker>_x,<marker>_y,<marker>_z,...'",
                          path=path, line=reader.line, found=text[:40])
    check_unique(names, path=path, line=reader.line)
    units_text = units if units else "m"
    factor = length_factor(units_text, path=path)
    start, first_line = reader.pos, reader.line + 1
    end = block_end(raw, start, ",")
    n_cols = 1 + 3 * len(names)
    table = parse_block(raw, start, end, first_line=first_line, cols=list(range(n_cols)),
                        min_width=n_cols, max_width=max(n_cols, len(header_cells)),
                        path=path, col_names=["time"] + [f"{n}_{a}" for n in names
                                                         for a in "xyz"])
    if end < len(raw) and raw[end:].strip(b", \t\r\n"):
        raise FormatError("data after an empty line; expected the data rows to run to the "
                          "end of the file", path=path, line=raw.count(b"\n", 0, end) + 1)
    if table.shape[0] < 2:
        raise FormatError("need at least two rows of data to know the frame rate",
                          path=path, line=first_line + table.shape[0])
    time_s = table[:, 0]
    bad = ~np.isfinite(time_s)
    if bad.any():
        raise FormatError("expected a time (s)", path=path,
                          line=first_line + int(np.argmax(bad)), field="time")
    step = np.diff(time_s)
    if (step <= 0).any():
        i = int(np.argmax(step <= 0)) + 1
        raise FormatError("time must increase from row to row", path=path,
                          line=first_line + i, field="time", found=float(time_s[i]))
    median = float(np.median(step))
    # Uniform sampling (the usual case): the mean step over the whole file averages out the
    # rounding of the written times; with dropped rows the median step is the robust choice.
    uniform = float(np.ptp(step)) <= 0.01 * median
    rate = (len(time_s) - 1) / float(time_s[-1] - time_s[0]) if uniform else 1.0 / median
    return make_marker_data(frames=None, time_s=time_s, rate_hz=rate, names=names,
                            xyz=table[:, 1:], factor=factor, units=units_text, fmt=_FMT,
                            path=path)


def write(data: MarkerData, path: Path, *, units: str = "mm") -> None:
    """Write ``data`` as a plain CSV in metres, time from 0 (``units`` is ignored).

    Time and positions carry 9 decimals (1 ns, 1 nm); missing markers are empty cells.
    """
    del units  # a plain CSV is always in metres (it has nowhere to say otherwise)
    header = "time," + ",".join(f"{m}_{a}" for m in data.names for a in "xyz")
    time_s = data.time_s - (data.time_s[0] if data.n_frames else 0.0)
    body = format_rows([time_s], ["%.9f"], data.xyz_m.reshape(data.n_frames, -1), "%.9f",
                       ",")
    Path(path).write_bytes((header + "\n" + body).encode("utf-8"))
