"""OptiTrack Motive CSV export (format versions 1.21 to 1.23): read markers and rigid bodies.

Layout (1.23)::

    Format Version,1.23,Take Name,T1,...,Export Frame Rate,120,...,Length Units,Millimeters,...
                                                       <- empty line
    ,Type,Rigid Body,...,Rigid Body Marker,...,Marker,Marker,Marker
    ,Name,plate,...,plate:Marker1,...,rig:P1,rig:P1,rig:P1
    ,ID,1,...
    ,,Rotation,...,Position,Position,Position,Marker Quality,Position,Position,Position
    Frame,Time (Seconds),X,Y,Z,W,...,X,Y,Z,,X,Y,Z
    0,0.000000,...                                     <- data; empty cells where missing

Motive 1.21 writes the same rows without the Type/Name/ID labels and a plain ``Time``
column; unlabelled rows are recognised by their content. Header-row cells line up with the
data columns.

Markers are the Position X/Y/Z columns of Type ``Marker`` (labelled or ``Unlabeled N``) and
``Rigid Body Marker`` (a rigid-body marker constraint whose name repeats a ``Marker`` name is
kept in ``extras["rigid_body_markers"]`` instead, in metres). Rigid-body poses go to
``extras["rigid_bodies"] = {name: {"quaternion_xyzw": [T, 4], "position_m": [T, 3]}}``
(``"euler_deg"`` and ``"rotation_type"`` instead of the quaternion for Euler exports).
Time comes from the frame numbers and the export frame rate.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np

from rigtool.errors import FormatError, InputError
from rigtool.mocap._common import check_unique, make_marker_data, units_factor
from rigtool.mocap._textblock import (LineReader, block_end, check_frames, format_rows,
                                      head_text, is_blank, load_text_bytes, parse_block)
from rigtool.mocap.markerdata import MarkerData

_FMT = "motive-csv"
_MARKER_TYPES = ("marker", "rigid body marker")
_TYPES = {"marker", "rigid body", "rigid body marker", "skeleton", "bone", "bone marker",
          "skeleton marker", "trained markerset", "trained markerset marker", "force plate",
          "device"}
_PROPERTIES = {"rotation", "position", "mean marker error", "marker quality",
               "error per marker", "mean error", "marker error", "size"}
_UNITS = {"mm": "Millimeters", "millimeters": "Millimeters", "cm": "Centimeters",
          "centimeters": "Centimeters", "m": "Meters", "meters": "Meters"}
_DECIMALS = {"Millimeters": 6, "Centimeters": 7, "Meters": 9}


def sniff(head: bytes) -> bool:
    """A Motive CSV starts with ``Format Version,<number>``."""
    lines = head_text(head, 2)
    if not lines:
        return False
    cells = [c.strip().strip('"') for c in lines[0].split(",")]
    if len(cells) < 2 or cells[0] != "Format Version":
        return False
    try:
        float(cells[1])
    except ValueError:
        return False
    return True


def _metadata(text: str, *, path: Path) -> dict[str, str]:
    cells = [c.strip().strip('"') for c in text.split(",")]
    if not cells or cells[0] != "Format Version":
        raise FormatError("expected the Motive header line 'Format Version,1.23,...'",
                          path=path, line=1, found=text[:40])
    meta: dict[str, str] = {}
    for key, value in zip(cells[0::2], cells[1::2]):
        if key and key not in meta:
            meta[key] = value
    return meta


def _rate(meta: dict[str, str], *, path: Path) -> float:
    for key in ("Export Frame Rate", "Capture Frame Rate"):
        if key in meta:
            try:
                rate = float(meta[key])
            except ValueError:
                raise FormatError("expected a number for the frame rate", path=path, line=1,
                                  field=key, found=meta[key]) from None
            if not (np.isfinite(rate) and rate > 0):
                raise FormatError("expected a positive frame rate", path=path, line=1,
                                  field=key, found=meta[key])
            return rate
    raise FormatError("the header states no frame rate; expected 'Export Frame Rate,<Hz>' "
                      "on line 1", path=path, line=1)


def _classify(rows: list[tuple[int, list[str]]], *, path: Path) -> dict[str, tuple[int, list[str]]]:
    """Map header rows to 'type', 'name', 'id', 'property' by label or, unlabelled, content."""
    out: dict[str, tuple[int, list[str]]] = {}
    pending: list[tuple[int, list[str]]] = []
    for line, cells in rows:
        label = cells[1].strip().lower() if len(cells) > 1 else ""
        values = {c.strip().lower() for c in cells[2:] if c.strip()}
        if label in ("type", "name", "id"):
            kind = label
        elif values and values <= _PROPERTIES:
            kind = "property"
        elif values and values <= _TYPES:
            kind = "type"
        else:
            pending.append((line, cells))
            continue
        if kind in out:
            raise FormatError(f"two '{kind}' header rows", path=path, line=line)
        out[kind] = (line, cells)
    for line, cells in pending:  # unlabelled rows in Motive's order: name, then ID
        kind = next((k for k in ("name", "id") if k not in out), None)
        if kind is None:
            raise FormatError("unexpected header row; expected Type, Name, ID and property "
                              "rows above the 'Frame,Time' row", path=path, line=line)
        out[kind] = (line, cells)
    if "name" not in out:
        raise FormatError("no Name row above the 'Frame,Time' row", path=path,
                          line=rows[-1][0] + 1 if rows else None)
    return out


def read(path: Path, *, units: str | None = None) -> MarkerData:
    """Read a Motive CSV export (markers; rigid-body poses into ``extras``).

    Parameters
    ----------
    path : Path
        The export.
    units : str, optional
        Length units when the header has no ``Length Units`` entry.

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
    meta = _metadata(reader.next() or "", path=path)
    rate = _rate(meta, path=path)
    factor, units_text = units_factor(meta.get("Length Units") or None, user_units=units,
                                      path=path, line=1)
    rotation_type = meta.get("Rotation Type", "Quaternion")

    header_rows: list[tuple[int, list[str]]] = []
    comp: list[str] | None = None
    while comp is None:
        text = reader.next()
        if text is None:
            raise FormatError("the file ends before the 'Frame,Time (Seconds),X,Y,Z,...' row",
                              path=path, line=reader.line + 1)
        cells = text.split(",")
        if is_blank(cells):
            if header_rows:
                raise FormatError("empty line inside the column headers", path=path,
                                  line=reader.line)
            continue
        if cells[0].strip().strip('"').lower() == "frame":
            comp = [c.strip().strip('"') for c in cells]
            break
        if cells[0].strip() or len(header_rows) >= 6:
            raise FormatError("expected the column header rows (Type, Name, ID, property) "
                              "then 'Frame,Time (Seconds),X,Y,Z,...'", path=path,
                              line=reader.line, found=text[:40])
        header_rows.append((reader.line, [c.strip().strip('"') for c in cells]))
    comp_line = reader.line
    if len(comp) < 2 or not comp[1].lower().startswith("time"):
        raise FormatError("expected 'Time (Seconds)' in the second column", path=path,
                          line=comp_line, found=comp[1] if len(comp) > 1 else None)
    kinds = _classify(header_rows, path=path)
    name_line, name_row = kinds["name"]

    def cell(kind: str, j: int) -> str:
        row = kinds.get(kind, (0, []))[1]
        return row[j] if j < len(row) else ""

    width = max([len(comp)] + [len(r) for _, r in header_rows])
    names_rb = {cell("name", j) for j in range(2, width)
                if cell("property", j).lower() == "rotation"}
    markers: dict[str, dict[str, int]] = {}
    constraints: dict[str, dict[str, int]] = {}
    bodies: dict[str, dict[str, dict[str, int]]] = {}
    for j in range(2, width):
        name = cell("name", j)
        axis = comp[j].upper() if j < len(comp) else ""
        prop = cell("property", j).lower() or ("position" if axis else "")
        if not name and not axis:
            continue
        if not name:
            raise FormatError("a data column without a name in the Name row", path=path,
                              line=name_line, field=f"column {j + 1}")
        kind = cell("type", j).lower() or ("rigid body" if name in names_rb else "marker")
        if kind == "rigid body" and prop in ("rotation", "position") and axis:
            group = bodies.setdefault(name, {}).setdefault(prop, {})
        elif kind in _MARKER_TYPES and prop == "position" and axis in ("X", "Y", "Z"):
            group = (markers if kind == "marker" else constraints).setdefault(name, {})
        else:
            continue  # quality/error columns, skeletons, devices: not ours
        if axis in group:
            raise FormatError(f"two '{axis}' columns for '{name}' ({prop}); duplicated "
                              "name", path=path, line=name_line, found=name)
        group[axis] = j

    names = list(markers)
    if not names:
        raise FormatError("no marker columns (Type 'Marker' with Position X/Y/Z)", path=path,
                          line=name_line)
    check_unique(names, path=path, line=name_line)
    cols = [0, 1]  # the time column is parsed only to refuse text in it
    col_names = ["Frame", comp[1]]
    for name, group in list(markers.items()) + list(constraints.items()):
        for axis in "XYZ":
            if axis not in group:
                raise FormatError(f"marker '{name}' has no {axis} column", path=path,
                                  line=comp_line)
            cols.append(group[axis])
            col_names.append(f"{name} {axis}")
    rb_layout: list[tuple[str, str, list[str]]] = []
    for name, props in bodies.items():
        for prop, group in props.items():
            axes = sorted(group, key="XYZW".index) if set(group) <= set("XYZW") else None
            if axes is None or (prop == "position" and axes != ["X", "Y", "Z"]):
                raise FormatError(f"rigid body '{name}' has unexpected {prop} columns "
                                  f"{','.join(group)}", path=path, line=comp_line)
            rb_layout.append((name, prop, axes))
            cols += [group[a] for a in axes]
            col_names += [f"{name} {prop} {a}" for a in axes]

    start = reader.pos
    first_line = reader.line + 1
    end = block_end(raw, start, ",")
    min_width = max(cols) + 1
    table = parse_block(raw, start, end, first_line=first_line, cols=cols,
                        min_width=min_width, max_width=max(width, min_width), path=path,
                        col_names=col_names)
    if table.shape[0] == 0:
        raise FormatError("no frames of data under the column headers", path=path,
                          line=first_line)
    if end < len(raw) and raw[end:].strip(b", \t\r\n"):
        raise FormatError("data after an empty line; expected the data rows to run to the "
                          "end of the file", path=path, line=raw.count(b"\n", 0, end) + 1)
    frames = check_frames(table[:, 0], path=path, first_line=first_line)
    n_m = len(markers)
    xyz = table[:, 2:2 + 3 * n_m]
    extras: dict = {}
    k = 2 + 3 * n_m
    if constraints:
        extras["rigid_body_markers"] = {}
        for name in constraints:
            extras["rigid_body_markers"][name] = table[:, k:k + 3] * factor
            k += 3
    if rb_layout:
        extras["rigid_bodies"] = {}
        for name, prop, axes in rb_layout:
            values = table[:, k:k + len(axes)]
            k += len(axes)
            entry = extras["rigid_bodies"].setdefault(name, {})
            if prop == "position":
                entry["position_m"] = values * factor
            elif axes == ["X", "Y", "Z", "W"]:
                entry["quaternion_xyzw"] = values
            else:
                entry["euler_deg"] = values
                entry["rotation_type"] = rotation_type
    return make_marker_data(frames=frames, time_s=None, rate_hz=rate, names=names, xyz=xyz,
                            factor=factor, units=units_text, fmt=_FMT, path=path,
                            extras=extras)


def write(data: MarkerData, path: Path, *, units: str = "mm") -> None:
    """Write ``data`` in Motive's 1.23 CSV layout (markers, and rigid bodies from extras).

    ``data.extras["rigid_bodies"]`` (as :func:`read` returns it, quaternions) is written as
    Rigid Body columns before the markers. Units: mm, cm or m (Motive has no inches).
    """
    key = units.strip().lower()
    if key not in _UNITS:
        raise InputError("Motive writes Millimeters, Centimeters or Meters; expected mm, cm "
                         "or m", field="units", found=units)
    long_units = _UNITS[key]
    scale = {"Millimeters": 1e3, "Centimeters": 1e2, "Meters": 1.0}[long_units]
    t_n = data.n_frames
    frames = data.first_frame + np.rint(data.time_s * data.rate_hz).astype(np.int64)
    time_s = frames / data.rate_hz  # Motive's time counts from frame 0 of the take
    types, names, ids, props, axes = [], [], [], [], []
    blocks: list[np.ndarray] = []
    bodies = data.extras.get("rigid_bodies", {}) or {}
    bodies = {name: entry for name, entry in bodies.items()
              if "quaternion_xyzw" in entry and "position_m" in entry}  # Euler poses: not written
    for b, (name, entry) in enumerate(bodies.items(), start=1):
        quat = np.asarray(entry["quaternion_xyzw"], float).reshape(t_n, 4)
        pos = np.asarray(entry["position_m"], float).reshape(t_n, 3) * scale
        types += ["Rigid Body"] * 7
        names += [name] * 7
        ids += [str(b)] * 7
        props += ["Rotation"] * 4 + ["Position"] * 3
        axes += ["X", "Y", "Z", "W", "X", "Y", "Z"]
        blocks += [quat, pos]
    for m, name in enumerate(data.names, start=1):
        types += ["Marker"] * 3
        names += [name] * 3
        ids += [f"{1000 + m}"] * 3
        props += ["Position"] * 3
        axes += ["X", "Y", "Z"]
    blocks.append(data.xyz_m.reshape(t_n, -1) * scale)
    values = np.hstack(blocks)
    stamp = datetime(2024, 1, 1, 12, 0, 0).strftime("%Y-%m-%d %I.%M.%S.000 %p")
    rate = f"{data.rate_hz:.6f}"
    meta = ["Format Version", "1.23", "Take Name", Path(path).stem, "Take Notes", "",
            "Capture Frame Rate", rate, "Export Frame Rate", rate, "Capture Start Time", stamp,
            "Capture Start Frame", str(int(frames[0]) if t_n else 0),
            "Total Frames in Take", str(t_n), "Total Exported Frames", str(t_n),
            "Rotation Type", "Quaternion", "Length Units", long_units,
            "Coordinate Space", "Global"]
    head = [",".join(meta), "",
            ",Type," + ",".join(types), ",Name," + ",".join(names), ",ID," + ",".join(ids),
            ",," + ",".join(props), "Frame,Time (Seconds)," + ",".join(axes)]
    body = format_rows([frames, time_s], ["%d", "%.6f"], values,
                       f"%.{_DECIMALS[long_units]}f", ",")
    text = "\n".join(head) + "\n" + body
    Path(path).write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
