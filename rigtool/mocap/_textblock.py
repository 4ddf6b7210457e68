"""Byte-level helpers for the text capture readers (Vicon, Motive, Qualisys, plain CSV).

Why bytes and not ``_common.read_lines``: a 10-minute 120 Hz export is ~100 MB, and decoding
and splitting it into Python strings costs more than parsing it. The readers walk the few
header lines one by one (:class:`LineReader`), find where the numeric block ends with one
regular-expression scan (:func:`block_end`) and hand the block's bytes to pandas' C parser
(:func:`parse_block`). Only when that fast path refuses the block (text in a cell, ragged
rows, odd bytes) is the block re-read row by row with :func:`_common.parse_numeric_rows`,
whose only job is then to name the exact bad line and column.

Line numbers are 1-based and count ``\\n`` line ends (CRLF and LF alike; a file with CR-only
line ends is converted to LF on load).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from rigtool.errors import FormatError
from rigtool.mocap._common import parse_numeric_rows

_BOM = b"\xef\xbb\xbf"


def load_text_bytes(path: Path) -> bytes:
    """The file's bytes, BOM removed, CR-only line ends turned to LF.

    Raises FormatError when the file cannot be read, is empty or holds NUL bytes.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read the file ({exc.strerror})", path=path) from None
    if raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    if b"\x00" in raw:
        raise FormatError("binary content in a text export (NUL bytes); the file is corrupt "
                          "or not a text capture", path=path)
    if not raw[:65536].strip() and not raw.strip():  # strip() copies: look at the head first
        raise FormatError("the file is empty; expected a motion-capture export", path=path)
    if b"\n" not in raw and b"\r" in raw:
        raw = raw.replace(b"\r", b"\n")
    return raw


def decode_line(data: bytes, *, path: Path, line: int) -> str:
    """One line of text (UTF-8, else Windows-1252), trailing CR removed."""
    data = data.rstrip(b"\r")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        raise FormatError("text that is neither UTF-8 nor Windows-1252", path=path,
                          line=line) from None


def head_text(head: bytes, max_lines: int = 40) -> list[str]:
    """The first lines of a sniffed head, decoded leniently (for ``sniff`` only)."""
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    if b"\n" not in head and b"\r" in head:
        head = head.replace(b"\r", b"\n")
    parts = head.split(b"\n", max_lines)[:max_lines]
    return [p.rstrip(b"\r").decode("utf-8", errors="replace") for p in parts]


def is_blank(cells: list[str]) -> bool:
    """True for a line that holds only separators and white space."""
    return not any(c.strip() for c in cells)


class LineReader:
    """Walk a file's lines from a byte position, keeping the 1-based line number.

    ``next()`` returns the decoded text of the next line (or None at the end of the file);
    afterwards ``line`` is that line's number and ``pos`` the byte offset just after it.
    """

    def __init__(self, raw: bytes, path: Path) -> None:
        self.raw = raw
        self.path = path
        self.pos = 0
        self.line = 0

    def at_end(self) -> bool:
        """No more lines."""
        return self.pos >= len(self.raw)

    def next(self) -> str | None:
        """The next line's text, or None at the end of the file."""
        if self.pos >= len(self.raw):
            return None
        stop = self.raw.find(b"\n", self.pos)
        if stop < 0:
            stop = len(self.raw)
        data = self.raw[self.pos:stop]
        self.pos = stop + 1
        self.line += 1
        return decode_line(data, path=self.path, line=self.line)

    def peek(self) -> str | None:
        """The next line's text without moving (None at the end of the file)."""
        pos, line = self.pos, self.line
        try:
            return self.next()
        finally:
            self.pos, self.line = pos, line

    def jump(self, pos: int) -> None:
        """Move to byte ``pos`` (a line start) and recount the line number."""
        self.pos = min(pos, len(self.raw))
        self.line = self.raw.count(b"\n", 0, self.pos)


_BLANK_RE: dict[str, re.Pattern[bytes]] = {}


def block_end(raw: bytes, pos: int, sep: str) -> int:
    """Byte offset where the block starting at line start ``pos`` ends.

    A block ends at the first blank line (only separators, spaces, tabs) or at the end of
    the file. The returned offset is the start of that blank line (or ``len(raw)``).
    """
    if sep not in _BLANK_RE:
        _BLANK_RE[sep] = re.compile(rb"\n[" + re.escape(sep.encode()) + rb" \t\r]*(?:\n|\Z)")
    first = raw[pos:raw.find(b"\n", pos) if raw.find(b"\n", pos) >= 0 else len(raw)]
    if not first.strip(sep.encode() + b" \t\r"):
        return pos
    m = _BLANK_RE[sep].search(raw, pos)
    return len(raw) if m is None else min(m.start() + 1, len(raw))


def parse_block(raw: bytes, start: int, end: int, *, first_line: int, cols: list[int],
                min_width: int, max_width: int, path: Path, col_names: list[str],
                sep: str = ",") -> np.ndarray:
    """Floats of columns ``cols`` of the data rows in ``raw[start:end]``, ``[rows, len(cols)]``.

    Empty cells are NaN. Every row must have at least ``min_width`` fields; fields beyond
    ``max_width`` must be empty. ``first_line`` is the file line number of the first row.
    Raises FormatError naming the line and column of the first bad cell.
    """
    block = raw[start:end]
    if not block:
        return np.empty((0, len(cols)))
    n_rows = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
    sep_b = sep.encode()
    first = block[:block.find(b"\n")] if b"\n" in block else block
    c0 = first.count(sep_b)
    # Fast path: every row has the first row's width (checked by the total separator count;
    # a longer row would also make the C parser raise), then pandas parses the floats.
    if min_width <= c0 + 1 <= max_width and block.count(sep_b) == n_rows * c0:
        wanted = sorted(set(cols))
        try:
            df = pd.read_csv(io.BytesIO(block), sep=sep, header=None, names=range(c0 + 1),
                             usecols=None if wanted == list(range(c0 + 1)) else wanted,
                             dtype=np.float64, na_values=[""], keep_default_na=False,
                             skip_blank_lines=False, quoting=csv.QUOTE_NONE,
                             encoding="latin-1", engine="c")
            out = df.to_numpy(dtype=float)
            if wanted != list(cols):
                out = out[:, [wanted.index(c) for c in cols]]
            if out.shape[0] == n_rows and not np.isinf(out).any():
                return out
        except Exception:  # noqa: BLE001 - any refusal sends us to the exact slow path
            pass
    return _parse_block_slow(block, first_line=first_line, cols=cols, min_width=min_width,
                             max_width=max_width, path=path, col_names=col_names, sep=sep)


def _parse_block_slow(block: bytes, *, first_line: int, cols: list[int], min_width: int,
                      max_width: int, path: Path, col_names: list[str],
                      sep: str) -> np.ndarray:
    """Row-by-row parse; its job is to name the first bad line (or accept odd but valid rows)."""
    parts = block.split(b"\n")
    if block.endswith(b"\n"):
        parts.pop()
    rows: list[list[str]] = []
    for i, data in enumerate(parts):
        line = first_line + i
        cells = decode_line(data, path=path, line=line).split(sep)
        if len(cells) < min_width:
            raise FormatError(f"ragged row: {len(cells)} fields where {min_width} were "
                              "expected (truncated line?)", path=path, line=line)
        if len(cells) > max_width and any(c.strip() for c in cells[max_width:]):
            raise FormatError(f"ragged row: {len(cells)} fields where at most {max_width} "
                              "were expected", path=path, line=line)
        rows.append([cells[c] for c in cols])
    return parse_numeric_rows(rows, first_line=first_line, n_cols=len(cols), path=path,
                              col_names=col_names, allow_short=False)


def check_frames(frames: np.ndarray, *, path: Path, first_line: int,
                 field: str = "Frame") -> np.ndarray:
    """Frame numbers as int64: present, whole and increasing, else FormatError with the line."""
    bad = ~np.isfinite(frames) | (np.abs(frames) > 2**53) | (frames != np.round(frames))
    if bad.any():
        i = int(np.argmax(bad))
        raise FormatError("expected a whole frame number", path=path, line=first_line + i,
                          field=field, found=None if np.isnan(frames[i]) else float(frames[i]))
    out = frames.astype(np.int64)
    step = np.diff(out)
    if (step <= 0).any():
        i = int(np.argmax(step <= 0)) + 1
        raise FormatError("frame numbers must increase from row to row", path=path,
                          line=first_line + i, field=field, found=int(out[i]))
    return out


def fmt_number(x: float) -> str:
    """A rate or similar header number without spurious decimals (100 -> '100')."""
    return f"{x:.0f}" if float(x).is_integer() else repr(float(x))


def format_rows(lead: list[np.ndarray], lead_fmt: list[str], values: np.ndarray,
                value_fmt: str, sep: str, *, nan_text: str = "") -> str:
    """Data rows as text: leading columns (frame, time) then ``values`` ``[T, K]``.

    NaN values become ``nan_text``. Row-wise ``%`` formatting is used because numpy's
    ``savetxt`` cannot write empty cells for NaN.
    """
    n_rows = values.shape[0]
    fmt = sep.join(lead_fmt + [value_fmt] * values.shape[1])
    table = np.column_stack([np.asarray(c, dtype=object) for c in lead] + [values.astype(object)]) \
        if lead else values.astype(object)
    text = "\n".join(fmt % tuple(row) for row in table) + ("\n" if n_rows else "")
    # '%f' writes NaN as 'nan'; no formatted number contains those letters, so replacing
    # them is safe and far cheaper than testing each cell.
    return text.replace("nan", nan_text)
