"""Qualisys QTM 3D TSV export: read and write.

Layout (tab-separated)::

    NO_OF_FRAMES	1200            <- header: KEY<TAB>value lines, in any order
    NO_OF_CAMERAS	8
    NO_OF_MARKERS	2
    FREQUENCY	120
    NO_OF_ANALOG	0
    ANALOG_FREQUENCY	0
    DESCRIPTION	--
    TIME_STAMP	2024-01-01, 12:00:00.000	0.000
    DATA_INCLUDED	3D
    MARKER_NAMES	P1	P2
    TRAJECTORY_TYPES	Measured	Gap-filled   <- optional (as FILE_VERSION, EVENT lines)
    Frame	Time	P1 X	P1 Y	P1 Z	...  <- optional column header (may add "P1 Type")
    1	0.00000	12.000	...                 <- data; without the column header only xyz

QTM writes millimetres and a missing marker as a ``0.000 0.000 0.000`` triple (read as NaN;
empty cells are NaN too). Time comes from the frame numbers (or the Time column, or the row
index) and ``FREQUENCY``; ``NO_OF_FRAMES`` and ``NO_OF_MARKERS`` must match the data.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from rigtool.errors import FormatError, InputError
from rigtool.mocap._common import check_unique, make_marker_data
from rigtool.mocap._textblock import (LineReader, block_end, check_frames, fmt_number,
                                      format_rows, head_text, is_blank, load_text_bytes,
                                      parse_block)
from rigtool.mocap.markerdata import MarkerData

_FMT = "qualisys-tsv"
_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")
_KNOWN_KEYS = ("NO_OF_FRAMES", "NO_OF_CAMERAS", "NO_OF_MARKERS", "FREQUENCY", "NO_OF_ANALOG",
               "ANALOG_FREQUENCY", "DESCRIPTION", "TIME_STAMP", "DATA_INCLUDED",
               "MARKER_NAMES", "TRAJECTORY_TYPES", "FILE_VERSION", "EVENT")


def sniff(head: bytes) -> bool:
    """A QTM TSV starts with a known ``KEY<TAB>value`` header line."""
    for line in head_text(head, 20):
        if line.strip():
            key = line.split("\t", 1)[0].strip()
            return "\t" in line and key in _KNOWN_KEYS
    return False


def _int_key(meta: dict[str, tuple[int, list[str]]], key: str, *, path: Path) -> int | None:
    if key not in meta:
        return None
    line, values = meta[key]
    text = values[0].strip() if values else ""
    try:
        value = float(text)
    except ValueError:
        raise FormatError("expected a whole number", path=path, line=line, field=key,
                          found=text) from None
    if not (np.isfinite(value) and value >= 0 and value == int(value)):
        raise FormatError("expected a whole number", path=path, line=line, field=key,
                          found=text)
    return int(value)


def read(path: Path, *, units: str | None = None) -> MarkerData:
    """Read a QTM 3D TSV export. QTM always writes mm, so ``units`` is not used.

    Returns
    -------
    MarkerData
        Positions in metres, NaN where a marker is missing (0,0,0 triples or empty cells).

    Raises
    ------
    FormatError
        Naming the file and line (or header key) when the file is not a well-formed export.
    """
    path = Path(path)
    raw = load_text_bytes(path)
    reader = LineReader(raw, path)
    meta: dict[str, tuple[int, list[str]]] = {}
    text: str | None = None
    while True:
        text = reader.peek()
        if text is None:
            break
        cells = text.split("\t")
        if is_blank(cells):
            reader.next()
            continue
        key = cells[0].strip()
        if not _KEY.match(key):
            break
        reader.next()
        meta.setdefault(key, (reader.line, [c.strip() for c in cells[1:]]))
    if "MARKER_NAMES" not in meta:
        raise FormatError("no MARKER_NAMES line in the header; expected a Qualisys 3D TSV "
                          "export", path=path, line=reader.line + 1)
    if "FREQUENCY" not in meta:
        raise FormatError("no FREQUENCY line in the header; the frame rate is needed",
                          path=path, line=reader.line + 1)
    f_line, f_vals = meta["FREQUENCY"]
    try:
        rate = float(f_vals[0]) if f_vals else float("nan")
    except ValueError:
        rate = float("nan")
    if not (np.isfinite(rate) and rate > 0):
        raise FormatError("expected a positive frame rate (Hz)", path=path, line=f_line,
                          field="FREQUENCY", found=f_vals[0] if f_vals else "")
    if "DATA_INCLUDED" in meta:
        d_line, d_vals = meta["DATA_INCLUDED"]
        if not d_vals or d_vals[0].upper() != "3D":
            raise FormatError("expected 3D marker data (DATA_INCLUDED 3D); export the 3D "
                              "data from QTM", path=path, line=d_line, field="DATA_INCLUDED",
                              found=d_vals[0] if d_vals else "")
    n_line, n_vals = meta["MARKER_NAMES"]
    while n_vals and not n_vals[-1]:
        n_vals = n_vals[:-1]
    names = list(n_vals)
    if not names or any(not n for n in names):
        raise FormatError("expected marker names separated by tabs", path=path, line=n_line,
                          field="MARKER_NAMES")
    check_unique(names, path=path, line=n_line)
    n_markers = _int_key(meta, "NO_OF_MARKERS", path=path)
    if n_markers is not None and n_markers != len(names):
        raise FormatError(f"NO_OF_MARKERS says {n_markers} but MARKER_NAMES lists "
                          f"{len(names)} names", path=path, line=meta["NO_OF_MARKERS"][0],
                          field="NO_OF_MARKERS")
    n_frames = _int_key(meta, "NO_OF_FRAMES", path=path)

    frame_col = time_col = None
    if text is not None and not is_blank(text.split("\t")) and _is_column_header(text):
        reader.next()
        head_line = reader.line
        header = [c.strip() for c in text.split("\t")]
        where = {h: j for j, h in reversed(list(enumerate(header))) if h}
        frame_col, time_col = where.get("Frame"), where.get("Time")
        xcols = []
        for name in names:
            for axis in "XYZ":
                if f"{name} {axis}" not in where:
                    raise FormatError(f"no '{name} {axis}' column in the column header",
                                      path=path, line=head_line)
                xcols.append(where[f"{name} {axis}"])
        max_width = len(header) + 1  # QTM may end rows with a tab
    else:
        if text is None:
            raise FormatError("no data after the header", path=path, line=reader.line + 1)
        fields = text.split("\t")
        while fields and not fields[-1].strip():
            fields.pop()
        if len(fields) == 3 * len(names) + 2:
            frame_col, time_col, off = 0, 1, 2
        elif len(fields) == 3 * len(names):
            off = 0
        else:
            raise FormatError(f"expected {3 * len(names)} coordinates per row (3 per marker "
                              f"in MARKER_NAMES), with or without Frame and Time first; found "
                              f"{len(fields)} fields", path=path, line=reader.line + 1)
        xcols = list(range(off, off + 3 * len(names)))
        max_width = len(fields) + 1
    lead = [c for c in (frame_col, time_col) if c is not None]
    cols = lead + xcols
    col_names = (["Frame"] if frame_col is not None else []) + \
        (["Time"] if time_col is not None else []) + [f"{n} {a}" for n in names for a in "XYZ"]
    start, first_line = reader.pos, reader.line + 1
    end = block_end(raw, start, "\t")
    table = parse_block(raw, start, end, first_line=first_line, cols=cols,
                        min_width=max(cols) + 1, max_width=max(max_width, max(cols) + 1),
                        path=path, col_names=col_names, sep="\t")
    if end < len(raw) and raw[end:].strip(b"\t \r\n"):
        raise FormatError("data after an empty line; expected the data rows to run to the "
                          "end of the file", path=path, line=raw.count(b"\n", 0, end) + 1)
    if table.shape[0] == 0:
        raise FormatError("no frames of data after the header", path=path, line=first_line)
    if n_frames is not None and n_frames != table.shape[0]:
        raise FormatError(f"NO_OF_FRAMES says {n_frames} but the file has {table.shape[0]} "
                          "data rows (truncated or edited file?)", path=path,
                          line=meta["NO_OF_FRAMES"][0], field="NO_OF_FRAMES")
    frames = time_s = None
    if frame_col is not None:
        frames = check_frames(table[:, 0], path=path, first_line=first_line)
    elif time_col is not None:
        time_s = table[:, 0]
        bad = ~np.isfinite(time_s)
        if bad.any():
            raise FormatError("expected a time (s)", path=path,
                              line=first_line + int(np.argmax(bad)), field="Time")
    xyz = table[:, len(lead):].reshape(table.shape[0], len(names), 3).copy()
    xyz[(xyz == 0).all(axis=2)] = np.nan  # QTM writes a missing marker as 0,0,0
    return make_marker_data(frames=frames, time_s=time_s, rate_hz=rate, names=names,
                            xyz=xyz.reshape(table.shape[0], -1), factor=1e-3, units="mm",
                            fmt=_FMT, path=path)


def _is_column_header(text: str) -> bool:
    cells = [c.strip() for c in text.split("\t")]
    return bool(cells) and (cells[0] == "Frame" or any(c.endswith(" X") for c in cells))


def write(data: MarkerData, path: Path, *, units: str = "mm") -> None:
    """Write ``data`` as a QTM 3D TSV (full header, Frame/Time columns, mm, CRLF).

    Missing markers are written as ``0.000000`` triples, as QTM does. QTM files are always
    in millimetres; other ``units`` are refused.
    """
    if units.strip().lower() not in ("mm", "millimeters"):
        raise InputError("Qualisys TSV files are always in millimetres; expected units 'mm'",
                         field="units", found=units)
    t_n, n = data.n_frames, len(data.names)
    frames = data.first_frame + np.rint(data.time_s * data.rate_hz).astype(np.int64)
    time_s = (frames - frames[0]) / data.rate_hz if t_n else np.zeros(0)
    values = np.nan_to_num(data.xyz_m.reshape(t_n, 3 * n) * 1e3, nan=0.0)
    head = [
        f"NO_OF_FRAMES\t{t_n}", "NO_OF_CAMERAS\t8", f"NO_OF_MARKERS\t{n}",
        f"FREQUENCY\t{fmt_number(data.rate_hz)}", "NO_OF_ANALOG\t0", "ANALOG_FREQUENCY\t0",
        "DESCRIPTION\t--", "TIME_STAMP\t2024-01-01, 12:00:00.000\t0.00000000",
        "DATA_INCLUDED\t3D", "MARKER_NAMES\t" + "\t".join(data.names),
        "TRAJECTORY_TYPES\t" + "\t".join(["Measured"] * n),
        "Frame\tTime\t" + "\t".join(f"{m} {a}" for m in data.names for a in "XYZ"),
    ]
    body = format_rows([frames, time_s], ["%d", "%.5f"], values, "%.6f", "\t")
    text = "\n".join(head) + "\n" + body
    Path(path).write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
