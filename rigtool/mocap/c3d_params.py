"""C3D parameter section: walk its records with bounds checks, decode values by processor type.

Conventions
-----------
- ``raw`` is the start of the file (at least the header and the parameter section, or all of
  a shorter file); positions are byte offsets from the start of the file.
- The processor type (byte 4 of the parameter section: 84 Intel, 85 DEC, 86 SGI/MIPS) fixes
  how every multi-byte number is stored: 16-bit words little-endian (Intel, DEC) or big-endian
  (SGI/MIPS); floats IEEE little-endian (Intel), IEEE big-endian (SGI/MIPS) or DEC F (DEC).
- Group and parameter names are kept upper-case; names may hold spaces (Qualisys QTM writes
  ``Uncropped Measurement Length``), any printable ASCII is accepted.

Record lengths are reconciled the way tolerant readers read them: a record's length word
(unsigned, from the length word to the next record) is used when it points at a record, the
end marker or the section's end; when it does not, the same word read in the other byte order
(some SGI/MIPS writers wrote little-endian length words), then the record's own content length
are tried; each fallback is reported as a note. Why by hand: ezc3d and the ``c3d`` package
walk the section without these checks (ezc3d hangs or crashes on some corrupt sections, the
``c3d`` package silently drops every parameter after a wrong length word).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rigtool.errors import FormatError

__all__ = ["PROCESSORS", "Param", "ParamSection", "decode_floats", "read_params"]

#: Processor byte in the parameter section -> name.
PROCESSORS: dict[int, str] = {84: "intel", 85: "dec", 86: "sgi-mips"}

_TYPE_BYTES = {-1: 1, 1: 1, 2: 2, 4: 4}  # C3D parameter type -> bytes per element
_MAX_DIMS = 7


def decode_floats(raw: bytes, processor: int) -> np.ndarray:
    """32-bit floats as ``processor`` stores them, as float64 (exact).

    DEC F: the two 16-bit words of an IEEE little-endian float are swapped, the exponent bias
    is 128 with the hidden bit worth 1/2 (value = (1 + m/2^23) 2^(e-129)), and e = 0 is zero.
    Decoded from the bit fields, so exponents 1, 2 and 255 are exact too.
    """
    usable = len(raw) // 4 * 4
    if processor == 86:
        return np.frombuffer(raw, ">f4", count=usable // 4).astype(float)
    if processor != 85:
        return np.frombuffer(raw, "<f4", count=usable // 4).astype(float)
    w = np.frombuffer(raw, "<u4", count=usable // 4)
    bits = (w >> np.uint32(16)) | (w << np.uint32(16))
    exponent = ((bits >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64)
    mantissa = 1.0 + (bits & np.uint32(0x7FFFFF)).astype(float) / 2.0 ** 23
    value = np.ldexp(mantissa, (exponent - 129).astype(np.int32))
    value = np.where(bits >> np.uint32(31) == 1, -value, value)
    return np.where(exponent == 0, 0.0, value)


@dataclass(frozen=True)
class Param:
    """One parameter: type (-1 char, 1 byte, 2 int16, 4 float), dimensions, raw data."""

    type: int
    dims: tuple[int, ...]
    data: bytes
    processor: int

    def numbers(self) -> np.ndarray:
        """Values as float64 in file (Fortran) order; int16 signed, bytes signed."""
        if self.type == 4:
            return decode_floats(self.data, self.processor)
        if self.type == 2:
            order = ">i2" if self.processor == 86 else "<i2"
            return np.frombuffer(self.data, order, count=len(self.data) // 2).astype(float)
        if self.type == 1:
            return np.frombuffer(self.data, np.int8).astype(float)
        raise TypeError("a character parameter has no numbers")

    def count(self) -> float | None:
        """The first value read as a count: int16 unsigned (0..65535), float as stored."""
        if self.type == -1 or not self.data:
            return None
        value = self.numbers()
        if value.size == 0:
            return None
        return float(value[0] % 65536 if self.type == 2 else value[0])

    def words32(self) -> int | None:
        """Two unsigned 16-bit words, least significant first, as one 32-bit number."""
        if self.type == -1:
            return None
        value = self.numbers()
        if value.size < 2 or not np.all(np.isfinite(value[:2])):
            return None
        lo, hi = (int(v) & 0xFFFF for v in value[:2])
        return lo + 65536 * hi

    def value(self):
        """As ezc3d gives it: a list of str for characters, else a float64 array."""
        if self.type != -1:
            return self.numbers()
        width = self.dims[0] if self.dims else len(self.data)
        if len(self.dims) <= 1 or width == 0:
            return [self.data.decode("latin-1").rstrip()]
        return [self.data[k:k + width].decode("latin-1").rstrip()
                for k in range(0, len(self.data), width)]


@dataclass(frozen=True)
class ParamSection:
    """The parameters of one file and what reading them took."""

    processor: int
    start: int  # byte offset of the section (its 4-byte header)
    declared_end: int  # start + 512 * the block count the section header declares
    records_end: int  # byte just after the last record
    params: dict[tuple[str, str], Param]
    groups: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    def get(self, group: str, name: str) -> Param | None:
        """The parameter ``GROUP:NAME`` (upper case), or None."""
        return self.params.get((group, name))

    def as_dict(self) -> dict[str, dict[str, object]]:
        """``{GROUP: {NAME: value}}`` with :meth:`Param.value` values."""
        out: dict[str, dict[str, object]] = {g: {} for g in self.groups}
        for (g, n), p in self.params.items():
            out.setdefault(g, {})[n] = p.value()
        return out


def _name_ok(name: bytes) -> bool:
    return bool(name.strip()) and all(32 <= c < 127 for c in name)


def read_params(raw: bytes, path: Path, size: int) -> ParamSection:
    """Walk the parameter section of a C3D file; FormatError naming the file on anything corrupt.

    Parameters
    ----------
    raw : bytes
        The file's first bytes (header and whole parameter section, or the whole file).
    path : Path
        For messages.
    size : int
        The file's length in bytes.
    """
    def bad(what: str, found: object = None) -> FormatError:
        return FormatError(f"corrupt C3D file: {what}", path=path, found=found)

    pstart = (raw[0] - 1) * 512
    if pstart < 512 or pstart + 4 > size:
        raise FormatError("truncated C3D file: the header points at a parameter block past "
                          "the end of the file", path=path, found=raw[0])
    n_blocks, processor = raw[pstart + 2], raw[pstart + 3]
    if processor not in PROCESSORS:
        raise bad("unknown processor type; expected 84 (Intel), 85 (DEC) or 86 (SGI/MIPS)",
                  processor)
    if n_blocks == 0:
        raise bad("the parameter section claims 0 blocks")
    declared_end = pstart + 512 * n_blocks
    end = min(declared_end, size, len(raw))  # records may not run past this
    u16 = ">H" if processor == 86 else "<H"
    swapped = "<H" if processor == 86 else ">H"

    def past_end(what: str) -> FormatError:
        if declared_end > size:
            return FormatError(f"truncated C3D file: the parameter section needs "
                               f"{declared_end} bytes, the file has {size}", path=path)
        return bad(what)

    def record_at(pos: int) -> int:
        """2: a record starts at ``pos``; 1: the end marker or the section's end; 0: neither."""
        if pos + 2 > end:
            return int(pos == end)
        nchars, gid = struct.unpack("bb", raw[pos:pos + 2])
        if nchars == 0 or gid == 0:
            return 1
        stop = pos + 2 + abs(nchars)
        return 2 * int(stop + 2 <= end and _name_ok(raw[pos + 2:stop]))

    params: dict[tuple[int, str], Param] = {}
    groups: dict[int, str] = {}
    notes: list[str] = []
    pos = pstart + 4
    while pos + 2 <= end:
        nchars, gid = struct.unpack("bb", raw[pos:pos + 2])
        if nchars == 0 or gid == 0:
            break
        name_end = pos + 2 + abs(nchars)
        if name_end + 2 > end:
            raise past_end("a parameter name runs past the parameter section")
        name_b = raw[pos + 2:name_end]
        if not _name_ok(name_b):
            raise bad("a parameter or group name holds non-printable bytes", name_b)
        name = name_b.decode("ascii").upper()
        body = name_end + 2
        # The record's content, bounded by the section: its natural end.
        if gid < 0:
            if body + 1 > end or body + 1 + raw[body] > end:
                raise past_end(f"group '{name}' description runs past the parameter section")
            natural = body + 1 + raw[body]
            groups[-gid] = name
        else:
            if body + 2 > end:
                raise past_end(f"parameter '{name}' record runs past the parameter section")
            ptype, ndims = struct.unpack("bB", raw[body:body + 2])
            if ptype not in _TYPE_BYTES or ndims > _MAX_DIMS:
                raise bad(f"parameter '{name}' has an unknown type or too many dimensions",
                          (ptype, ndims))
            dims = tuple(raw[body + 2:body + 2 + ndims])
            data_start = body + 2 + ndims
            data_end = data_start + int(np.prod(dims, dtype=np.int64)) * _TYPE_BYTES[ptype]
            if data_end + 1 > end or data_end + 1 + raw[data_end] > end:
                raise past_end(f"parameter '{name}' data or description runs past the "
                               "parameter section")
            natural = data_end + 1 + raw[data_end]
            params[(gid, name)] = Param(ptype, dims, raw[data_start:data_end], processor)
        offset = struct.unpack(u16, raw[name_end:name_end + 2])[0]
        if offset == 0:  # the last record
            pos = natural
            break
        nxt = _next_record(raw, name_end, natural, offset, swapped, record_at, end)
        if nxt is None:
            raise bad(f"parameter record '{name}' has an impossible length", offset)
        if nxt[1] and nxt[1] not in notes:
            notes.append(nxt[1])
        pos = nxt[0]
    orphans = sorted({n for g, n in params if g not in groups})
    if orphans:
        notes.append(f"parameters of an undefined group ignored: {', '.join(orphans)}")
    by_name = {(groups[g], n): p for (g, n), p in params.items() if g in groups}
    if "POINT" not in groups.values():
        raise FormatError("C3D file without a POINT group; expected marker data", path=path)
    return ParamSection(processor=processor, start=pstart, declared_end=declared_end,
                        records_end=min(max(pos, pstart + 4), end), params=by_name,
                        groups=tuple(dict.fromkeys(groups.values())), notes=tuple(notes))


def _next_record(raw: bytes, name_end: int, natural: int, offset: int, swapped: str,
                 record_at, end: int) -> tuple[int, str | None] | None:
    """Where the next record starts (and a note when the length word was not usable).

    Candidates, in order of trust: the length word, the same word in the other byte order,
    the record's content length. The first that lands on a record wins; failing that, the
    first that lands on the end marker or the section's end; failing that, the length word if
    it stays in the section (the next record's own check then says what is wrong there).
    """
    other = struct.unpack(swapped, raw[name_end:name_end + 2])[0]
    candidates = [
        (name_end + offset, None),
        (name_end + other, "parameter record lengths are stored in the other byte order than "
                           "the processor type says; read them that way"),
        (natural, f"a parameter record length word ({offset}) does not point at the next "
                  "record; used the record's content length"),
    ]
    for wanted in (2, 1):
        for pos, note in candidates:
            if pos >= natural and record_at(pos) == wanted:
                return pos, note
    if natural <= name_end + offset <= end:  # in the section: what lies there is reported next
        return name_end + offset, None
    return None
