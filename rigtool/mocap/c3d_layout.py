"""C3D header and the data section's layout: where the frames start, how many, how wide.

Conventions
-----------
- Block numbers are 1-based 512-byte blocks, as the C3D manual numbers them; byte offsets are
  0-based. Header words are read in the byte order of the processor type (see
  :mod:`rigtool.mocap.c3d_params`); the header's first two bytes never depend on it.
- A frame holds ``POINT:USED`` points of 4 words (x, y, z, residual/camera word) and then the
  analog samples; words are 4-byte floats when ``POINT:SCALE`` < 0, else int16.

How each number is reconciled (C3D manual, "The C3D frame count" and "Notes for programmers";
ezc3d and the ``c3d`` package agree on the parts they implement):

- frame count: ``POINT:FRAMES`` when present and not 65535 (ezc3d also trusts it over the
  header); at 65535 or when absent, ``TRIAL:ACTUAL_END_FIELD - ACTUAL_START_FIELD + 1``, else
  ``POINT:LONG_FRAMES``, else the header's first/last frame words (16-bit: a range whose last
  frame is below its first wrapped past 65535). The count must fit in the file; when it does
  not but another of these counts does, that one is used (an Optotrak header saying 1149
  frames over a file of 29). When none fits, the whole frames present are read if the data
  end exactly with one (a recording stopped early: the NDI Optotrak header and POINT:FRAMES
  both say 1149, the file holds 29); data that stop inside a frame are a truncated file.
  Every disagreement becomes a note.
- data start: header word 9 (both libraries read the data from there), else
  ``POINT:DATA_START``; a start inside the parameter section's records is corrupt, a start
  inside blocks the section declares but leaves empty is accepted with a note.
- points and analog samples per frame: ``POINT:USED`` (else header word 2);
  ``ANALOG:USED`` times header word 10 (samples per frame; ANALOG:RATE / POINT:RATE when the
  word is 0), else header word 3.
- first frame number: ``TRIAL:ACTUAL_START_FIELD`` (two 16-bit words, low first), else the
  header's first frame (0, which some writers put, read as 1).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rigtool.errors import FormatError
from rigtool.mocap.c3d_params import ParamSection, decode_floats, read_params

__all__ = ["HEAD_BYTES", "Layout", "read_layout"]

#: The header and the largest parameter section (255 blocks) never reach past this.
HEAD_BYTES = 2 * 255 * 512 + 512


@dataclass(frozen=True)
class Layout:
    """Everything needed to read the frames, and what had to be reconciled to know it."""

    params: ParamSection
    n_points: int
    n_frames: int
    first_frame: int
    data_offset: int  # byte offset of the first frame
    frame_bytes: int
    float_storage: bool
    point_scale: float
    header_rate: float
    notes: tuple[str, ...]

    @property
    def processor(self) -> int:
        """84 Intel, 85 DEC, 86 SGI/MIPS."""
        return self.params.processor


@dataclass(frozen=True)
class _Header:
    points: int
    analog: int
    first: int
    last: int
    scale: float
    data_block: int
    analog_per_frame: int
    rate: float


def _read_header(raw: bytes, processor: int) -> _Header:
    order = ">" if processor == 86 else "<"
    points, analog, first, last = struct.unpack(order + "HHHH", raw[2:10])
    data_block, per_frame = struct.unpack(order + "HH", raw[16:20])
    scale, rate = decode_floats(raw[12:16] + raw[20:24], processor)
    return _Header(points, analog, first, last, float(scale), data_block, per_frame,
                   float(rate))


def read_layout(raw: bytes, path: Path, size: int) -> Layout:
    """Header and parameter section of a C3D file -> :class:`Layout`; FormatError if corrupt.

    ``raw`` holds at least the file's first :data:`HEAD_BYTES` (all of it when shorter);
    ``size`` is the file's length in bytes.
    """
    if size < 512:
        raise FormatError(f"truncated C3D file: {size} bytes, expected at least a "
                          "512-byte header", path=path)
    if raw[1] != 0x50 or raw[0] < 2:
        raise FormatError("not a C3D file (expected byte 2 to be 0x50 and byte 1 to point at "
                          "the parameter block)", path=path)
    section = read_params(raw, path, size)
    head = _read_header(raw, section.processor)
    notes = list(section.notes)

    def number(group: str, name: str, default: float | None, *,
               signed: bool = False) -> float | None:
        """The parameter's first value; int16 read unsigned (a count) unless ``signed``."""
        param = section.get(group, name)
        if param is None:
            return default
        value = param.count()
        if value is not None and signed and param.type != -1:
            value = float(param.numbers()[0])
        if value is None or not np.isfinite(value):
            raise FormatError(f"corrupt C3D file: {group}:{name} has no value", path=path)
        return value

    def whole(group: str, name: str, default: float | None) -> int | None:
        value = number(group, name, default)
        if value is not None and (value < 0 or value != int(value)):
            raise FormatError(f"corrupt C3D file: {group}:{name} is not a count", path=path,
                              found=value)
        return None if value is None else int(value)

    used = whole("POINT", "USED", head.points)
    if used != head.points:
        notes.append(f"header says {head.points} points, POINT:USED {used}: used {used}")
    scale = number("POINT", "SCALE", head.scale, signed=True)
    number("POINT", "RATE", None, signed=True)  # must be numeric when present
    float_storage = bool(scale < 0) if np.isfinite(scale) else True
    if np.isfinite(head.scale) and (head.scale < 0) != float_storage:
        notes.append(f"header scale {head.scale:g} and POINT:SCALE {scale:g} disagree on the "
                     f"storage: used POINT:SCALE ({'float' if float_storage else 'int16'})")
    word = 4 if float_storage else 2
    analog_used = whole("ANALOG", "USED", None)
    per_frame = head.analog_per_frame
    if analog_used and not per_frame:  # header word 10 left 0: from the rates, as ezc3d does
        analog_rate = number("ANALOG", "RATE", None, signed=True)
        point_rate = number("POINT", "RATE", None, signed=True) or head.rate
        ratio = analog_rate / point_rate if analog_rate and point_rate else 0.0
        per_frame = int(round(ratio)) if np.isfinite(ratio) and 0 < ratio < 65536 else 0
    analog_words = head.analog if analog_used is None else analog_used * per_frame
    if analog_words != head.analog:
        notes.append(f"header says {head.analog} analog samples per frame, ANALOG:USED x "
                     f"samples per frame gives {analog_words}: used {analog_words}")
    frame_bytes = (4 * used + analog_words) * word

    data_offset = _data_offset(section, head, number("POINT", "DATA_START", None), size,
                               path, notes)
    room = (size - data_offset) // frame_bytes if frame_bytes else 0
    n_frames = _frame_count(section, head, room, used, frame_bytes, data_offset, size, path,
                            notes)
    start = section.get("TRIAL", "ACTUAL_START_FIELD")
    first = start.words32() if start is not None else None
    if first is None:
        first = head.first if head.first else 1
    return Layout(params=section, n_points=used, n_frames=n_frames, first_frame=first,
                  data_offset=data_offset, frame_bytes=frame_bytes,
                  float_storage=float_storage, point_scale=float(scale),
                  header_rate=head.rate, notes=tuple(notes))


def _data_offset(section: ParamSection, head: _Header, param_block: float | None, size: int,
                 path: Path, notes: list[str]) -> int:
    """Byte offset of the data: header word 9, else POINT:DATA_START (see module doc)."""
    records_block = -(-section.records_end // 512) + 1  # first block after the records

    def usable(block: float | None) -> bool:
        return block is not None and block >= max(records_block, 2) and (block - 1) * 512 <= size

    chosen = None
    if usable(head.data_block):
        chosen = head.data_block
        if param_block is not None and int(param_block) != chosen:
            notes.append(f"header says the data start at block {chosen}, POINT:DATA_START "
                         f"{int(param_block)}: used {chosen}")
    elif usable(param_block):
        chosen = int(param_block)
        notes.append(f"header says the data start at block {head.data_block}, inside the "
                     f"parameters; POINT:DATA_START {chosen}: used {chosen}")
    if chosen is None:
        # The file ends before the data: cut short when its parameter section is, or when the
        # start it states is credible (header and POINT:DATA_START agree, or it is the block
        # right after the declared section); else the start words themselves are corrupt.
        if section.declared_end > size:
            raise FormatError(f"truncated C3D file: the parameter section needs "
                              f"{section.declared_end} bytes, the file has {size}", path=path)
        block = head.data_block
        if block >= max(records_block, 2) and (
                block == section.declared_end // 512 + 1
                or (param_block is not None and int(param_block) == block)):
            raise FormatError(f"truncated C3D file: the data start at block {block} (byte "
                              f"{(block - 1) * 512}), the file has {size} bytes", path=path)
        raise FormatError("corrupt C3D file: the data section starts inside the header or "
                          "parameter section", path=path, found=head.data_block)
    if chosen < section.declared_end // 512 + 1:  # inside the blocks the section declares
        declared = (section.declared_end - section.start) // 512
        notes.append(f"the parameter section declares {declared} blocks but its records end "
                     f"in block {records_block - 1}; the data start at block {chosen}")
    return (chosen - 1) * 512


def _frame_count(section: ParamSection, head: _Header, room: int, used: int,
                 frame_bytes: int, data_offset: int, size: int, path: Path,
                 notes: list[str]) -> int:
    """The number of frames (see module doc); ``room`` is how many whole frames fit."""
    header_n = (head.last - head.first) % 65536 + 1
    header_text = f"header says {header_n} frames ({head.first}..{head.last}" + (
        ", wrapped past 65535)" if head.last < head.first else ")")
    frames = section.get("POINT", "FRAMES")
    frames_n = frames.count() if frames is not None else None
    trial_n = None
    start, end = section.get("TRIAL", "ACTUAL_START_FIELD"), section.get("TRIAL",
                                                                         "ACTUAL_END_FIELD")
    if start is not None and end is not None:
        lo, hi = start.words32(), end.words32()
        trial_n = hi - lo + 1 if lo is not None and hi is not None and hi >= lo else None
    long_param = section.get("POINT", "LONG_FRAMES")
    long_n = long_param.count() if long_param is not None else None
    raw_counts = {"header": header_n, "frames": frames_n, "trial": trial_n, "long": long_n}
    labels = {"header": header_text, "frames": "POINT:FRAMES {}",
              "trial": "TRIAL:ACTUAL_START/END_FIELD {}", "long": "POINT:LONG_FRAMES {}"}
    named = {k: (labels[k].format(int(n)), int(n)) for k, n in raw_counts.items()
             if n is not None and np.isfinite(n) and n >= 1 and n == int(n)}
    # The manual's order: FRAMES unless it is the 65535 overflow mark, TRIAL, LONG_FRAMES,
    # FRAMES = 65535 itself, the header. A count the file cannot hold gives way to the next
    # one it can (the header as the last resort, as the c3d package reads it).
    overflow = "frames" in named and named["frames"][1] == 65535
    order = (["trial", "long", "frames"] if overflow else ["frames", "trial", "long"]) + [
        "header"]
    ranked = [named[k] for k in order if k in named]
    sources = [named[k] for k in ("header", "frames", "trial", "long") if k in named]
    if used == 0 or frame_bytes == 0:
        return ranked[0][1] if ranked else 0
    fits = [s for s in ranked if s[1] <= room]
    if not fits:
        return _whole_frames_present(ranked[0][1], sources, room, used, frame_bytes,
                                     data_offset, size, path, notes)
    n = fits[0][1]
    # 65535 in POINT:FRAMES or as the header's last frame marks a count past 16 bits: not a
    # disagreement when the count used is larger.
    capped = [(t, c) for t, c in sources if not (n > c and (
        t == "POINT:FRAMES 65535" or (t == header_text and head.last == 65535)))]
    if overflow and n == 65535 and room > n + 512 // frame_bytes and not (
            "trial" in named or "long" in named):
        notes.append(f"POINT:FRAMES says 65535, the mark of a count past 16 bits, but neither "
                     f"TRIAL:ACTUAL_END_FIELD nor POINT:LONG_FRAMES says how many; the file "
                     f"has room for {room}: used 65535")
    elif any(count != n for _, count in capped) or head.last < head.first:
        data_blocks = -(-(size - data_offset) // 512)
        held = (f"file holds {n}" if -(-n * frame_bytes // 512) == data_blocks
                else f"file has room for {room}")
        said = ", ".join(t for t, _ in sources)
        notes.append(f"{said}, {held}: used {n}")
    return n


def _whole_frames_present(declared: int, sources: list[tuple[str, int]], room: int, used: int,
                          frame_bytes: int, data_offset: int, size: int, path: Path,
                          notes: list[str]) -> int:
    """Every declared count exceeds the data: the whole frames present, if the data end on one.

    A recording stopped early (NDI Optotrak writes the planned frame range in the header and
    POINT:FRAMES before it records) ends with the last byte of its last frame: those frames
    are read, with a note. Data that stop inside a frame are refused, block padding included:
    zeros up to a 512-byte boundary cannot be told from a frame cut there (file systems and
    interrupted copies cut at 512-byte multiples too).
    """
    rest = size - data_offset - room * frame_bytes
    if room >= 1 and rest == 0:
        said = ", ".join(t for t, _ in sources)
        notes.append(f"{said}, but the data end after {room} whole frames (declared "
                     f"{declared}, present {room}): read the {room} present")
        return room
    where = ("the data section is empty" if room == 0 and rest == 0 else
             f"the data stop inside a frame: {room} whole frames of {frame_bytes} bytes, then "
             f"{rest} bytes")
    raise FormatError(f"truncated C3D file: {declared} frames of {used} points need "
                      f"{data_offset + declared * frame_bytes} bytes, the file has {size}; "
                      f"{where}", path=path)
