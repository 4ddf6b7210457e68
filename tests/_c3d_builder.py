"""A byte-level C3D writer for tests, written from the C3D manual (c3d.org), not from rigtool.

Neither ezc3d nor the ``c3d`` package can write DEC or SGI/MIPS files, integer storage, names
with spaces or inconsistent headers, so the tests build their files here:

- header (block 1) and parameter section as the manual lays them out; every 16-bit word and
  every float little-endian (Intel 84, DEC 85) or big-endian (SGI/MIPS 86);
- floats IEEE, or DEC F (the IEEE bits of 4*v with the two 16-bit words swapped);
- point data float (scale < 0) or int16 (scale > 0), residual word -1 where a point is missing.

Knobs for the variants real exporters write: header first/last frame words (16-bit: a range
past 65535 wraps), POINT:FRAMES and POINT:DATA_START overridden or left out, a parameter
section that declares more blocks than its records fill, a data section that starts late,
parameter names with spaces (pass them in ``extra``), record-length words written in the
wrong byte order (the quirk of some SGI/MIPS writers), a parameter section of a given number of
blocks, and a data section that is not padded to a whole block (the file ends with the last
frame, as NDI Optotrak files do).
"""

from __future__ import annotations

import struct

import numpy as np

INTEL, DEC, MIPS = 84, 85, 86
_OMIT = object()


def f32(v: float, proc: int) -> bytes:
    """One float as the processor stores it."""
    if proc == MIPS:
        return struct.pack(">f", v)
    if proc == DEC:
        le = struct.pack("<f", 4.0 * v)
        return le[2:4] + le[0:2]
    return struct.pack("<f", v)


def i16(v: int, proc: int) -> bytes:
    """One signed 16-bit word."""
    return struct.pack(">h" if proc == MIPS else "<h", v)


def u16(v: int, proc: int) -> bytes:
    """One unsigned 16-bit word (header frame numbers)."""
    return struct.pack(">H" if proc == MIPS else "<H", v & 0xFFFF)


def _param(gid: int, name: str, value, proc: int) -> tuple[bytes, bytes]:
    if isinstance(value, str):  # one string: a 1-D char parameter
        dims, data, typ = [max(len(value), 1)], value.encode().ljust(max(len(value), 1)), -1
    elif isinstance(value, tuple):  # several strings: [width, count]
        width = max([len(s) for s in value] + [1])
        dims, typ = [width, len(value)], -1
        data = b"".join(s.encode().ljust(width) for s in value)
    else:
        arr = np.atleast_1d(np.asarray(value))
        if arr.dtype.kind == "f":
            typ, data = 4, b"".join(f32(float(x), proc) for x in arr.ravel(order="F"))
        else:
            typ, data = 2, b"".join(u16(int(x), proc) for x in arr.ravel(order="F"))  # bits
        dims = [] if np.ndim(value) == 0 else list(arr.shape)
    nm = name.encode()
    return struct.pack("bb", len(nm), gid) + nm, struct.pack("bB", typ, len(dims)) + bytes(
        dims) + data + b"\x00"


def build_c3d(xyz, labels, *, rate=100.0, scale=-1.0, proc=INTEL, first_frame=1, units="mm",
              extra=None, used=None, group_desc=None, header_first=None, header_last=None,
              frames_param=None, data_start_param=None, header_data_start=None,
              spare_param_blocks=0, gap_blocks=0, swapped_lengths=False,
              analog=None, param_blocks=None, pad_data=True) -> bytes:
    """C3D bytes; ``xyz`` [T, N, 3] in file units with NaN = missing (residual -1).

    Parameters
    ----------
    header_first, header_last : int, optional
        Header words 4 and 5 (default ``first_frame`` and ``first_frame + T - 1``, both
        written as 16-bit words, so a range past 65535 wraps).
    frames_param : int, float or ``"omit"``, optional
        POINT:FRAMES (default T; a float is stored as a float parameter).
    data_start_param, header_data_start : int, optional
        POINT:DATA_START and header word 9 (default: the block where the data starts).
    spare_param_blocks : int
        Blocks the parameter header declares beyond those its records fill; the data still
        start right after the records (a parameter block count that overstates the section).
    gap_blocks : int
        Empty blocks between the parameter section and the data.
    swapped_lengths : bool
        Record-length words in the other byte order than the processor's.
    analog : ndarray, optional
        Analog samples ``[T, per_frame, channels]`` stored after each frame's points.
    param_blocks : int, optional
        Blocks of the parameter section, declared and written (its records padded with
        zeros); default the fewest that hold the records.
    pad_data : bool
        Pad the data section with zeros to a whole 512-byte block (default); when False the
        file ends with the last frame's last byte.
    """
    xyz = np.asarray(xyz, float)
    n_t, n_p, _ = xyz.shape
    used = n_p if used is None else used
    point = {"USED": used, "SCALE": float(scale), "RATE": float(rate), "DATA_START": 0,
             "FRAMES": n_t if frames_param is None else frames_param,
             "LABELS": tuple(labels), "DESCRIPTIONS": tuple("" for _ in labels)}
    if frames_param == "omit":
        del point["FRAMES"]
    analog = np.zeros((n_t, 0, 0)) if analog is None else np.asarray(analog, float)
    per_frame, channels = analog.shape[1:]
    per_frame_word = per_frame if channels else 1  # what writers put without analog data
    groups: dict[str, dict] = {"POINT": point, "ANALOG": {"USED": channels,
                                                          "RATE": float(rate * per_frame_word)}}
    if channels:  # the parameters the manual requires with analog data
        groups["ANALOG"].update({"LABELS": tuple(f"CH{k + 1}" for k in range(channels)),
                                 "SCALE": np.ones(channels), "OFFSET": np.zeros(channels, int),
                                 "GEN_SCALE": 1.0, "UNITS": tuple("V" for _ in range(channels))})
    if units is not None:
        groups["POINT"]["UNITS"] = units
    for g, params in (extra or {}).items():
        groups.setdefault(g, {}).update(params)
    length_proc = (INTEL if proc == MIPS else MIPS) if swapped_lengths else proc

    def section(data_start: int) -> bytes:
        groups["POINT"]["DATA_START"] = data_start if data_start_param is None \
            else data_start_param
        recs = []
        for gi, (g, params) in enumerate(groups.items(), start=1):
            desc = (group_desc or {}).get(g, "").encode()
            recs.append((struct.pack("bb", len(g), -gi) + g.encode(), bytes([len(desc)]) + desc))
            recs += [_param(gi, p, v, proc) for p, v in params.items()]
        return b"".join(head + i16(0 if k == len(recs) - 1 else len(body) + 2, length_proc)
                        + body for k, (head, body) in enumerate(recs))

    used_blocks = (4 + len(section(0))) // 512 + 1
    if param_blocks is not None:
        if param_blocks < used_blocks:
            raise ValueError(f"the parameters need {used_blocks} blocks, not {param_blocks}")
        used_blocks = param_blocks
    n_blocks = used_blocks + spare_param_blocks
    data_start = 2 + used_blocks + gap_blocks
    psec = (bytes([1, 0x50, n_blocks, proc]) + section(data_start)).ljust(512 * used_blocks,
                                                                           b"\0")
    psec += b"\0" * 512 * gap_blocks
    first = first_frame if header_first is None else header_first
    last = first_frame + n_t - 1 if header_last is None else header_last
    hds = data_start if header_data_start is None else header_data_start
    header = (bytes([2, 0x50]) + u16(used, proc) + u16(per_frame * channels, proc)
              + u16(first, proc) + u16(last, proc) + u16(0, proc) + f32(scale, proc)
              + u16(hds, proc) + u16(per_frame_word, proc) + f32(rate, proc)).ljust(512, b"\0")
    miss = np.isnan(xyz).any(axis=2)
    if scale < 0:
        vals = np.concatenate([np.nan_to_num(xyz), np.where(miss, -1.0, 1.0)[..., None]], 2)
        vals = np.concatenate([vals.reshape(n_t, -1), analog.reshape(n_t, -1)], 1)
        if proc == DEC:
            words = np.frombuffer((4.0 * vals).astype("<f4").tobytes(), np.uint8).reshape(-1, 4)
            data = words[:, [2, 3, 0, 1]].tobytes()
        else:
            data = vals.astype(">f4" if proc == MIPS else "<f4").tobytes()
    else:
        q = np.rint(np.nan_to_num(xyz) / scale)
        vals = np.concatenate([q, np.where(miss, -1, 1)[..., None]], 2)
        vals = np.concatenate([vals.reshape(n_t, -1), np.rint(analog.reshape(n_t, -1))], 1)
        data = vals.astype(">i2" if proc == MIPS else "<i2").tobytes()
    if pad_data:
        data = data.ljust(-(-len(data) // 512) * 512, b"\0")
    return header + psec + data
