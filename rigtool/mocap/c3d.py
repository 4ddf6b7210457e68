"""C3D motion-capture files: read (header, parameters and frames decoded here), write (ezc3d).

Conventions
-----------
- Returns :class:`MarkerData`: time first, ``xyz_m[T, N, 3]`` in metres, NaN where a marker is
  missing (a negative residual word, or non-finite coordinates).
- Only *markers* are returned. Model outputs that C3D stores as points (the labels listed in
  ``POINT:ANGLES``, ``FORCES``, ``MOMENTS``, ``POWERS``, ``SCALARS``, ``REACTIONS`` and in any
  group that ``POINT:TYPE_GROUPS`` names, except the marker group) go to
  ``extras["model_outputs"]`` as ``{"names": [...], "values": [T, K, 3]}`` in the file's own
  units (they are angles, forces, ... not lengths).
- ``first_frame``, the frame count and the start of the data are reconciled across the
  header and the parameters as :mod:`rigtool.mocap.c3d_layout` describes (a recording
  stopped early, every declared count past data that end with a whole frame, is read up to
  that frame); what had to be reconciled is in ``MarkerData.notes``.
- Labels come from ``POINT:LABELS`` followed by ``LABELS2``, ``LABELS3``...; only the first
  ``POINT:USED`` are points. Points the labels do not name are called ``*<number>`` (1-based).

Why the frames are decoded here and not by ezc3d or the ``c3d`` package (both are used in the
tests as independent references): a valid file must be read whatever processor type wrote
it and however its header and parameters disagree, and neither library does both. ezc3d 1.7
refuses SGI/MIPS files and a float POINT:FRAMES, hangs on a description length >= 128 and
segfaults on some corrupt sections; the ``c3d`` package returns the zero padding of the last
data block as frames, no frames at all for a header frame range that wraps past 65535, and
fails on a parameter section that declares more blocks than the file holds. The header and
parameter walk are bounds-checked (:mod:`rigtool.mocap.c3d_params`), so a corrupt file is a
:class:`FormatError`, and the frames are one vectorised ``numpy.frombuffer`` (a 72 000-frame
file of 40 markers in well under a second).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from rigtool.errors import FormatError, InputError
from rigtool.mocap._common import make_marker_data, units_factor
from rigtool.mocap.c3d_layout import HEAD_BYTES, Layout, read_layout
from rigtool.mocap.c3d_params import PROCESSORS, decode_floats
from rigtool.mocap.markerdata import MarkerData, length_factor

__all__ = ["sniff", "read", "write"]

#: POINT parameters whose labels are model outputs, not markers.
MODEL_OUTPUT_GROUPS: tuple[str, ...] = ("ANGLES", "FORCES", "MOMENTS", "POWERS", "SCALARS",
                                        "REACTIONS")


def sniff(head: bytes) -> bool:
    """True when ``head`` starts like a C3D file (byte 2 is 0x50, a parameter block >= 2)."""
    return len(head) >= 2 and head[1] == 0x50 and head[0] >= 2


def _read_points(path: Path, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Points ``[T, USED, 3]`` in file units and their valid mask ``[T, USED]``."""
    n, used, frame_bytes = layout.n_frames, layout.n_points, layout.frame_bytes
    try:
        with open(path, "rb") as fh:
            fh.seek(layout.data_offset)
            buf = fh.read(n * frame_bytes)
    except OSError as exc:
        raise FormatError(f"cannot read the file ({exc.strerror})", path=path) from None
    if len(buf) < n * frame_bytes:  # the file shrank since its size was taken
        raise FormatError(f"truncated C3D file: {n} frames of {used} points need "
                          f"{layout.data_offset + n * frame_bytes} bytes", path=path)
    word = 4 if layout.float_storage else 2
    point_bytes = 16 * used if layout.float_storage else 8 * used
    if point_bytes != frame_bytes:  # drop the analog samples that follow each frame's points
        buf = np.frombuffer(buf, np.uint8).reshape(n, frame_bytes)[:, :point_bytes].tobytes()
    if word == 4:
        values = decode_floats(buf, layout.processor).reshape(n, used, 4)
        xyz = values[..., :3]
    else:
        order = ">i2" if layout.processor == 86 else "<i2"
        values = np.frombuffer(buf, order).reshape(n, used, 4)
        xyz = values[..., :3] * layout.point_scale
    return xyz, values[..., 3] >= 0


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
        ``extras["c3d"]`` records processor, storage and scale; ``notes`` what had to be
        reconciled (header and parameters that disagree, a frame range that wraps).

    Raises
    ------
    FormatError
        For an empty, truncated or corrupt file, a file without markers or with units that
        are not a length; the message names the file and what was expected.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(HEAD_BYTES)
        size = path.stat().st_size
    except OSError as exc:
        raise FormatError(f"cannot read the file ({exc.strerror})", path=path) from None
    if not raw:
        raise FormatError("the file is empty; expected a C3D file", path=path)
    layout = read_layout(raw, path, size)
    if layout.n_points == 0:
        raise FormatError("the C3D file holds no points (POINT:USED = 0); expected markers",
                          path=path, field="POINT:USED")
    if layout.n_frames == 0:
        raise FormatError("the C3D file holds no frames of data", path=path)
    xyz, valid = _read_points(path, layout)
    try:
        return _assemble(path, layout, xyz, valid, units=units)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        # A parameter of an unexpected type (e.g. text labels stored as numbers) in a file
        # whose structure is otherwise sound.
        raise FormatError(f"corrupt C3D parameters ({type(exc).__name__}: {exc})",
                          path=path) from None


def _assemble(path: Path, layout: Layout, xyz: np.ndarray, valid: np.ndarray, *,
              units: str | None) -> MarkerData:
    params = layout.params.as_dict()
    n_used = xyz.shape[1]
    labels = _all_labels(params)[:n_used]
    labels = [lab if lab else f"*{i + 1}" for i, lab in enumerate(labels)]
    labels += [f"*{i + 1}" for i in range(len(labels), n_used)]
    outputs = _model_output_labels(params)
    is_marker = np.array([lab not in outputs for lab in labels], bool)
    if not is_marker.any():
        raise FormatError("the C3D file holds only model outputs (angles, forces, ...), no "
                          "markers", path=path, field="POINT:LABELS")
    rate = _number(params, "POINT", "RATE") or layout.header_rate
    if not (np.isfinite(rate) and rate > 0):
        raise FormatError("expected a positive frame rate", path=path, field="POINT:RATE",
                          found=rate)
    file_units = _marker_units(params, labels, is_marker, path)
    factor, units_used = units_factor(file_units, user_units=units, path=path)
    xyz = np.where((valid & np.isfinite(xyz).all(axis=2))[..., None], xyz, np.nan)
    frames = layout.first_frame + np.arange(xyz.shape[0], dtype=float)
    extras = {"c3d": {"processor": PROCESSORS[layout.processor],
                      "storage": "float" if layout.float_storage else "integer",
                      "scale": layout.point_scale, "reader": "rigtool"}}
    if not is_marker.all():
        extras["model_outputs"] = {"names": [l for l, m in zip(labels, is_marker) if not m],
                                   "values": xyz[:, ~is_marker, :]}
    return make_marker_data(frames=frames, time_s=None, rate_hz=rate,
                            names=[l for l, m in zip(labels, is_marker) if m],
                            xyz=xyz[:, is_marker, :], factor=factor, units=units_used,
                            fmt="c3d", path=path, extras=extras, notes=layout.notes)


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
    last = first + data.n_frames - 1
    if first > 65535 or first < 1 or last > 65535:
        # Past 16 bits (ezc3d then writes POINT:FRAMES 65535 and the header's last frame
        # 65535): the frame range in TRIAL, as the C3D manual says; two 16-bit integer words
        # each, low first (the wrapper's add_parameter would store floats).
        for name, number in (("ACTUAL_START_FIELD", first), ("ACTUAL_END_FIELD", last)):
            param = ezc3d.ezc3d.Parameter(name, f"{name.split('_')[1].lower()} frame number")
            param.set(ezc3d.ezc3d.VecInt([number & 0xFFFF, (number >> 16) & 0xFFFF]), [2])
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
