"""C3D motion-capture files: read (ezc3d, with the pure-python ``c3d`` package as fallback), write.

Conventions
-----------
- Returns :class:`MarkerData`: time first, ``xyz_m[T, N, 3]`` in metres, NaN where a marker is
  missing (a negative residual word, or non-finite coordinates).
- Only *markers* are returned. Model outputs that C3D stores as points (the labels listed in
  ``POINT:ANGLES``, ``FORCES``, ``MOMENTS``, ``POWERS``, ``SCALARS``, ``REACTIONS`` and in any
  group that ``POINT:TYPE_GROUPS`` names, except the marker group) go to
  ``extras["model_outputs"]`` as ``{"names": [...], "values": [T, K, 3]}`` in the file's own
  units (they are angles, forces, ... not lengths).
- ``first_frame`` is the frame number as the file numbers it: ``TRIAL:ACTUAL_START_FIELD``
  (two 16-bit words, low first) when present, else the header's first frame (1-based on disk;
  ezc3d reports it 0-based, hence the +1).
- Labels come from ``POINT:LABELS`` followed by ``LABELS2``, ``LABELS3``...; only the first
  ``POINT:USED`` are points. Points the labels do not name are called ``*<number>`` (1-based).

Why a structural check before ezc3d: ezc3d 1.7 segfaults or loops forever on some malformed
parameter sections (a description length or a dimension count pointing past its record) and
allocates whatever frame count a corrupt header claims. :func:`_check_structure` walks the
header and parameter section with bounds checks first, so a corrupt file becomes a
:class:`FormatError` instead of a crash. ezc3d cannot read big-endian (SGI/MIPS, processor 86)
files at all; those, and anything ezc3d rejects, are read with the ``c3d`` package.
"""

from __future__ import annotations

import os
import struct
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rigtool.errors import FormatError, InputError
from rigtool.mocap._common import make_marker_data, units_factor
from rigtool.mocap.markerdata import MarkerData, length_factor

__all__ = ["sniff", "read", "write"]

#: Processor byte in the parameter section -> name.
PROCESSORS: dict[int, str] = {84: "intel", 85: "dec", 86: "sgi-mips"}

#: POINT parameters whose labels are model outputs, not markers.
MODEL_OUTPUT_GROUPS: tuple[str, ...] = ("ANGLES", "FORCES", "MOMENTS", "POWERS", "SCALARS",
                                        "REACTIONS")

_PARAM_TYPES = {-1: 1, 1: 1, 2: 2, 4: 4}  # C3D parameter type -> bytes per element
_HEAD_BYTES = 2 * 255 * 512  # header + parameter section never reach past this
_MAX_DIMS = 7


def sniff(head: bytes) -> bool:
    """True when ``head`` starts like a C3D file (byte 2 is 0x50, a parameter block >= 2)."""
    return len(head) >= 2 and head[1] == 0x50 and head[0] >= 2


# ---------------------------------------------------------------------------------------------
# Structural check (pure python, bounded: never trusts a count before checking it fits)


@dataclass(frozen=True)
class _Layout:
    processor: int
    n_points: int
    n_frames: int
    float_storage: bool
    ezc3d_safe: bool  # header and parameters agree the way ezc3d 1.7 needs to read safely


def _decode_float(raw: bytes, processor: int) -> float:
    if processor == 86:
        return struct.unpack(">f", raw)[0]
    if processor == 85:  # DEC F: 16-bit words swapped, exponent bias 2 higher than IEEE
        return struct.unpack("<f", raw[2:4] + raw[0:2])[0] / 4.0
    return struct.unpack("<f", raw)[0]


def _check_structure(raw: bytes, path: Path, size: int | None = None) -> _Layout:
    """Walk header and parameter section with bounds checks; FormatError on anything corrupt.

    ``raw`` holds at least the file's first :data:`_HEAD_BYTES` (all of it when shorter),
    which covers the largest possible header plus parameter section; ``size`` is the file's
    length in bytes (default ``len(raw)``).
    """
    size = len(raw) if size is None else size

    def bad(what: str, found: object = None) -> FormatError:
        return FormatError(f"corrupt C3D file: {what}", path=path, found=found)

    if size < 512:
        raise FormatError(f"truncated C3D file: {size} bytes, expected at least a "
                          "512-byte header", path=path)
    if raw[1] != 0x50 or raw[0] < 2:
        raise FormatError("not a C3D file (expected byte 2 to be 0x50 and byte 1 to point at "
                          "the parameter block)", path=path)
    pstart = (raw[0] - 1) * 512
    if pstart + 4 > size:
        raise FormatError("truncated C3D file: the header points at a parameter block past "
                          "the end of the file", path=path, found=raw[0])
    n_blocks, processor = raw[pstart + 2], raw[pstart + 3]
    if processor not in PROCESSORS:
        raise bad("unknown processor type; expected 84 (Intel), 85 (DEC) or 86 (SGI/MIPS)",
                  processor)
    if n_blocks == 0:
        raise bad("the parameter section claims 0 blocks")
    pend = pstart + 512 * n_blocks
    if pend > size:
        raise FormatError(f"truncated C3D file: the parameter section needs {pend} bytes, "
                          f"the file has {size}", path=path)
    endian = ">" if processor == 86 else "<"
    i16, u16 = endian + "h", endian + "H"
    params: dict[tuple[int, str], tuple[int, list[int], bytes]] = {}
    groups: dict[int, str] = {}
    odd_param = False  # ezc3d reads description lengths as signed bytes (>= 128 hangs it)
    pos = pstart + 4
    while pos + 2 <= pend:
        nchars, gid = struct.unpack("bb", raw[pos:pos + 2])
        if nchars == 0 or gid == 0:
            break
        name_end = pos + 2 + abs(nchars)
        if name_end + 2 > pend:
            raise bad("a parameter name runs past the parameter section")
        name = raw[pos + 2:name_end]
        if not all(32 < c < 127 for c in name):
            raise bad("a parameter or group name holds non-printable bytes", name)
        offset = struct.unpack(i16, raw[name_end:name_end + 2])[0]
        body = name_end + 2
        rec_end = pend if offset == 0 else name_end + offset
        if offset < 0 or rec_end > pend or (offset != 0 and offset < 3):
            raise bad(f"parameter record '{name.decode()}' has an impossible length", offset)
        if gid < 0:  # group: description length, description
            if body + 1 + raw[body] > rec_end:
                raise bad(f"group '{name.decode()}' description runs past its record")
            odd_param |= raw[body] >= 128
            groups[-gid] = name.decode().upper()
        else:
            if body + 2 > rec_end:
                raise bad(f"parameter '{name.decode()}' record is too short")
            ptype, ndims = struct.unpack("bB", raw[body:body + 2])
            if ptype not in _PARAM_TYPES or ndims > _MAX_DIMS:
                raise bad(f"parameter '{name.decode()}' has an unknown type or too many "
                          "dimensions", (ptype, ndims))
            dims = list(raw[body + 2:body + 2 + ndims])
            data_start = body + 2 + ndims
            data_end = data_start + int(np.prod(dims, dtype=np.int64)) * _PARAM_TYPES[ptype]
            if data_end + 1 > rec_end or data_end + 1 + raw[data_end] > rec_end:
                raise bad(f"parameter '{name.decode()}' data or description runs past its "
                          "record")
            odd_param |= raw[data_end] >= 128 or (ptype == -1 and ndims == 0)  # both upset ezc3d
            params[(gid, name.decode().upper())] = (ptype, dims, raw[data_start:data_end])
        if offset == 0:
            break
        pos = rec_end
    by_name = {(groups.get(g, "?"), n): v for (g, n), v in params.items()}
    if any(g not in groups for g, _ in params):
        raise bad("a parameter belongs to a group that is not defined")
    if "POINT" not in groups.values():
        raise FormatError("C3D file without a POINT group; expected marker data", path=path)

    def number(name: str, default: float | None, group: str = "POINT") -> float | None:
        if (group, name) not in by_name:
            return default
        ptype, _, data = by_name[(group, name)]
        if ptype == 4 and len(data) >= 4:
            return _decode_float(data[:4], processor)
        if ptype == 2 and len(data) >= 2:
            return float(struct.unpack(u16, data[:2])[0])
        if ptype == 1 and len(data) >= 1:
            return float(data[0])
        raise bad(f"{group}:{name} has no value")

    h_points, h_analog, h_first, h_last = struct.unpack(endian + "HHHH", raw[2:10])
    h_scale = _decode_float(raw[12:16], processor)
    h_data_block, h_per_frame = struct.unpack(endian + "HH", raw[16:20])
    used = int(number("USED", h_points))
    scale = number("SCALE", h_scale)
    number("RATE", None)  # must be numeric when present
    float_storage = bool(scale < 0) if np.isfinite(scale) else True
    n_frames = max(h_last - h_first + 1, 0)
    frames_param = number("FRAMES", None)
    if frames_param is not None and h_last == 65535:  # header overflowed; trust the parameter
        n_frames = max(n_frames, int(frames_param))
    data_block = int(number("DATA_START", h_data_block) or h_data_block)
    # Conservative: float words when either the header or POINT:SCALE says float.
    word = 4 if (float_storage or not h_scale >= 0) else 2
    frame_bytes = (4 * max(used, h_points) + h_analog) * word
    data_start = (data_block - 1) * 512
    if data_block < 2 or data_start < pend and used > 0 and n_frames > 0:
        raise bad("the data section starts inside the header or parameter section",
                  data_block)
    need = data_start + n_frames * frame_bytes
    if need > size:
        raise FormatError(f"truncated C3D file: {n_frames} frames of {used} points need "
                          f"{need} bytes, the file has {size}", path=path)
    analog_used = int(number("USED", 0, "ANALOG") or 0)
    ezc3d_safe = (not odd_param and raw[pstart] == 1 and h_points == used
                  and analog_used * h_per_frame == h_analog
                  and (h_per_frame > 0 or h_analog == 0)
                  and int(number("DATA_START", h_data_block) or 0) == h_data_block
                  and (frames_param is None or int(frames_param) == n_frames
                       or h_last == 65535)
                  and not number("USED", 0, "ROTATION"))
    return _Layout(processor=processor, n_points=used, n_frames=n_frames,
                   float_storage=float_storage, ezc3d_safe=ezc3d_safe)


# ---------------------------------------------------------------------------------------------
# Library back ends: each returns parameters as {GROUP: {NAME: value}}, header first frame
# (1-based, as on disk), header rate, points [T, USED, 3] (file units) and a valid mask [T, USED].


def _read_ezc3d(path: Path):
    import ezc3d  # deferred: the C++ extension is only needed here

    c = ezc3d.c3d(str(path))
    params = {g: {k: v["value"] for k, v in grp.items() if k != "__METADATA__"}
              for g, grp in c["parameters"].items()}
    pts = np.asarray(c["data"]["points"], float)  # [4, N, T]
    res = np.asarray(c["data"]["meta_points"]["residuals"], float)  # [1, N, T]
    xyz = np.transpose(pts[:3], (2, 1, 0))
    valid = np.ones(xyz.shape[:2], bool) if res.size == 0 else (res[0].T >= 0)
    hdr = c["header"]["points"]
    return params, int(hdr["first_frame"]) + 1, float(hdr["frame_rate"]), xyz, valid


def _c3dpkg_value(param, processor: int):
    """One ``c3d``-package parameter as ezc3d would give it (strings -> list of str).

    Numbers are decoded from the raw bytes (file order = Fortran order) because the package's
    typed accessors refuse scalars and assert on odd shapes.
    """
    raw = bytes(param.bytes)
    if param.bytes_per_element == -1:
        width = param.dimensions[0] if param.dimensions else len(raw)
        if len(param.dimensions) <= 1 or width == 0:
            return [raw.decode("latin-1").rstrip()]
        return [raw[k:k + width].decode("latin-1").rstrip() for k in range(0, len(raw), width)]
    if param.bytes_per_element == 4:
        words = np.frombuffer(raw[: len(raw) // 4 * 4], np.uint8).reshape(-1, 4)
        if processor == 85:  # DEC F -> IEEE: swap 16-bit words, divide by 4 (exponent bias)
            return np.frombuffer(words[:, [2, 3, 0, 1]].tobytes(), "<f4").astype(float) / 4.0
        return np.frombuffer(words.tobytes(), ">f4" if processor == 86 else "<f4").astype(float)
    if param.bytes_per_element == 2:
        return np.frombuffer(raw[: len(raw) // 2 * 2], ">i2" if processor == 86 else "<i2"
                             ).astype(int)
    return np.frombuffer(raw, np.int8).astype(int)


def _read_c3dpkg(path: Path, layout: _Layout):
    import c3d  # deferred: only needed for big-endian files and ezc3d failures

    with open(path, "rb") as fh, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the package warns about benign metadata quirks
        reader = c3d.Reader(fh)
        params = {}
        for gname, group in reader.group_items():
            if isinstance(gname, str):
                params[gname.upper()] = {p.upper(): _c3dpkg_value(v, layout.processor)
                                         for p, v in group.param_items()}
        frames = [pts[:, :4] for _, pts, _ in reader.read_frames(copy=True)]
        first = int(reader.header.first_frame)
        rate = float(reader.header.frame_rate)
    if len(frames) < layout.n_frames:
        raise FormatError(f"truncated C3D file: {layout.n_frames} frames announced, "
                          f"{len(frames)} present", path=path)
    data = np.asarray(frames, float).reshape(len(frames), -1, 4)
    return params, first, rate, data[..., :3], data[..., 3] >= 0


# ---------------------------------------------------------------------------------------------


def _strings(params: dict, group: str, name: str) -> list[str]:
    value = params.get(group, {}).get(name)
    if value is None:
        return []
    if isinstance(value, str):
        return [value.strip()]
    return [str(v).strip() for v in np.asarray(value, dtype=object).ravel(order="F")]


def _number(params: dict, group: str, name: str) -> float | None:
    value = params.get(group, {}).get(name)
    if value is None or isinstance(value, list) and value and isinstance(value[0], str):
        return None
    arr = np.asarray(value, float).ravel()
    return float(arr[0]) if arr.size else None


def _all_labels(params: dict) -> list[str]:
    labels = _strings(params, "POINT", "LABELS")
    k = 2
    while f"LABELS{k}" in params.get("POINT", {}):
        labels += _strings(params, "POINT", f"LABELS{k}")
        k += 1
    return labels


def _model_output_labels(params: dict) -> set[str]:
    groups = set(MODEL_OUTPUT_GROUPS)
    # TYPE_GROUPS pairs a type with the POINT parameter listing its labels (e.g. "Angle",
    # "ANGLES"); every named parameter except the marker list holds model outputs.
    for entry in _strings(params, "POINT", "TYPE_GROUPS"):
        key = entry.upper()
        if key in params.get("POINT", {}) and key not in ("MARKERS", "LABELS", "USED"):
            groups.add(key)
    out: set[str] = set()
    for g in groups:
        out.update(s for s in _strings(params, "POINT", g) if s)
    return out


def _marker_units(params: dict, labels: list[str], is_marker: np.ndarray, path: Path) -> str | None:
    units = [u for u in _strings(params, "POINT", "UNITS")]
    if not units or not any(units):
        return None
    if len(units) == 1:
        return units[0] or None
    # One unit per point (some exporters): markers must agree on one length unit.
    per_marker = {units[i] for i in np.flatnonzero(is_marker) if i < len(units) and units[i]}
    if len(per_marker) > 1:
        raise FormatError("markers stored in different length units; expected one",
                          path=path, field="POINT:UNITS", found=sorted(per_marker))
    return per_marker.pop() if per_marker else units[0]


def read(path: Path, *, units: str | None = None) -> MarkerData:
    """Read the markers of a C3D file.

    Parameters
    ----------
    path : Path
        The C3D file (Intel, DEC or SGI/MIPS processor; integer or float storage).
    units : str, optional
        Length units to assume when the file's ``POINT:UNITS`` is missing or empty.

    Returns
    -------
    MarkerData
        Markers only (model outputs in ``extras["model_outputs"]``), metres, NaN = missing.
        ``extras["c3d"]`` records processor, storage, scale and the library that read it.

    Raises
    ------
    FormatError
        For an empty, truncated or corrupt file, a file without markers or with units that
        are not a length; the message names the file and what was expected.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_HEAD_BYTES)
        size = path.stat().st_size
    except OSError as exc:
        raise FormatError(f"cannot read the file ({exc.strerror})", path=path) from None
    if not raw:
        raise FormatError("the file is empty; expected a C3D file", path=path)
    layout = _check_structure(raw, path, size)
    if layout.n_points == 0:
        raise FormatError("the C3D file holds no points (POINT:USED = 0); expected markers",
                          path=path, field="POINT:USED")
    if layout.n_frames == 0:
        raise FormatError("the C3D file holds no frames of data", path=path)
    backend, ez_error = "ezc3d", None
    result = None
    if layout.processor != 86 and layout.ezc3d_safe:  # ezc3d 1.7 reads Intel and DEC only
        try:
            result = _read_ezc3d(path)
        except Exception as exc:  # noqa: BLE001 - ezc3d raises RuntimeError, IndexError, ...
            ez_error = f"{type(exc).__name__}: {exc}"
    if result is None:
        backend = "c3d"
        try:
            result = _read_c3dpkg(path, layout)
        except FormatError:
            raise
        except Exception as exc:  # noqa: BLE001 - the c3d package asserts and raises freely
            detail = f"ezc3d: {ez_error}; c3d: " if ez_error else ""
            raise FormatError(f"corrupt C3D file that no reader accepts ({detail}"
                              f"{type(exc).__name__}: {exc})", path=path) from None
    params, header_first, header_rate, xyz, valid = result
    try:
        return _assemble(path, params, header_first, header_rate, xyz, valid, units=units,
                         backend=backend, layout=layout)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        # A parameter of an unexpected type (e.g. a text ACTUAL_START_FIELD) in a file whose
        # structure is otherwise sound.
        raise FormatError(f"corrupt C3D parameters ({type(exc).__name__}: {exc})",
                          path=path) from None


def _assemble(path: Path, params: dict, header_first: int, header_rate: float,
              xyz: np.ndarray, valid: np.ndarray, *, units: str | None, backend: str,
              layout: _Layout) -> MarkerData:
    n_used = xyz.shape[1]
    labels = _all_labels(params)[:n_used]
    labels = [lab if lab else f"*{i + 1}" for i, lab in enumerate(labels)]
    labels += [f"*{i + 1}" for i in range(len(labels), n_used)]
    outputs = _model_output_labels(params)
    is_marker = np.array([lab not in outputs for lab in labels], bool)
    if not is_marker.any():
        raise FormatError("the C3D file holds only model outputs (angles, forces, ...), no "
                          "markers", path=path, field="POINT:LABELS")
    rate = _number(params, "POINT", "RATE") or header_rate
    if not (np.isfinite(rate) and rate > 0):
        raise FormatError("expected a positive frame rate", path=path, field="POINT:RATE",
                          found=rate)
    file_units = _marker_units(params, labels, is_marker, path)
    factor, units_used = units_factor(file_units, user_units=units, path=path)
    start = params.get("TRIAL", {}).get("ACTUAL_START_FIELD")
    first = header_first
    if start is not None and np.size(start) >= 2:
        lo, hi = (int(w) & 0xFFFF for w in np.asarray(start).ravel()[:2])
        first = lo + 65536 * hi
    xyz = np.where((valid & np.isfinite(xyz).all(axis=2))[..., None], xyz, np.nan)
    frames = first + np.arange(xyz.shape[0], dtype=float)
    extras = {"c3d": {"processor": PROCESSORS[layout.processor],
                      "storage": "float" if layout.float_storage else "integer",
                      "scale": _number(params, "POINT", "SCALE"), "reader": backend}}
    if not is_marker.all():
        extras["model_outputs"] = {"names": [l for l, m in zip(labels, is_marker) if not m],
                                   "values": xyz[:, ~is_marker, :]}
    return make_marker_data(frames=frames, time_s=None, rate_hz=rate,
                            names=[l for l, m in zip(labels, is_marker) if m],
                            xyz=xyz[:, is_marker, :], factor=factor, units=units_used,
                            fmt="c3d", path=path, extras=extras)


def write(data: MarkerData, path: Path, *, units: str = "mm") -> None:
    """Write ``data`` as a float, Intel-processor C3D file (through ezc3d).

    Parameters
    ----------
    data : MarkerData
        Markers to write; NaN positions are written as missing (residual -1).
    path : Path
        Output file (any extension; written atomically through a temporary file).
    units : str
        Length units of the file (``POINT:UNITS``): mm, cm, m or in.
    """
    import ezc3d

    path = Path(path)
    try:
        factor = length_factor(units, field="units")
    except InputError as exc:
        raise InputError(exc.message, path=path, field="units", found=units) from None
    xyz = np.asarray(data.xyz_m, float) / factor  # [T, N, 3] in file units
    missing = ~np.isfinite(xyz).all(axis=2)
    c = ezc3d.c3d()
    c["parameters"]["POINT"]["RATE"]["value"] = [float(data.rate_hz)]
    c["parameters"]["POINT"]["LABELS"]["value"] = list(data.names)
    c["parameters"]["POINT"]["UNITS"]["value"] = [units]
    pts = np.ones((4, len(data.names), data.n_frames))
    pts[:3] = np.transpose(np.where(missing[..., None], np.nan, xyz), (2, 1, 0))
    c["data"]["points"] = pts
    c["data"]["meta_points"]["residuals"] = np.where(missing.T, -1.0, 0.0)[None]
    first = int(data.first_frame)
    c["header"]["points"]["first_frame"] = min(max(first, 1), 65535) - 1
    if first > 65535 or first < 1:
        # Two 16-bit integer words, low first (the wrapper's add_parameter would store floats).
        param = ezc3d.ezc3d.Parameter("ACTUAL_START_FIELD", "first frame number")
        param.set(ezc3d.ezc3d.VecInt([first & 0xFFFF, (first >> 16) & 0xFFFF]), [2])
        c["parameters"].add_parameter("TRIAL", param)
    path.parent.mkdir(parents=True, exist_ok=True)
    # ezc3d appends ".c3d" to any other name: write a temporary .c3d, then move it in place.
    fd, tmp = tempfile.mkstemp(suffix=".c3d", dir=path.parent)
    os.close(fd)
    try:
        c.write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
