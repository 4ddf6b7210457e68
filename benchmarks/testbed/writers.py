"""What a lab writes: Vicon Nexus CSV or C3D captures (mm), the rig file and the session
manifest as a user writes them (TOML), and ``truth.json`` (the form rigtool's report compares
with).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_vicon_csv(path: Path, rate_hz: float, names: list[str],
                    markers_lab_m: np.ndarray) -> None:
    """A Vicon Nexus CSV export of the Trajectories block: frames from 1, Sub Frame 0, mm with
    six decimals, an empty cell where a marker is missing (NaN), CRLF line ends."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n, k, _ = markers_lab_m.shape
    head = ["Trajectories", f"{rate_hz:g}",
            ",," + ",".join(f"{m},," for m in names),
            "Frame,Sub Frame" + ",X,Y,Z" * k,
            ",," + ",".join(["mm"] * (3 * k))]
    mm = markers_lab_m.reshape(n, 3 * k) * 1000.0
    cells = np.char.mod("%.6f", mm)
    cells[~np.isfinite(mm)] = ""
    frames = np.arange(1, n + 1).astype(str)
    rows = [f"{frames[i]},0," + ",".join(cells[i]) for i in range(n)]
    path.write_bytes(("\r\n".join(head + rows) + "\r\n").encode("ascii"))


def write_c3d(path: Path, rate_hz: float, names: list[str], markers_lab_m: np.ndarray) -> None:
    """A C3D file (``path`` ending ``.c3d``) as a Vicon or Qualisys system exports it, written
    by ezc3d (float frames, Intel processor): ``POINT:UNITS`` mm, ``POINT:RATE``, the labels,
    and each point's residual word: 0.3 mm (a camera fit's RMS) where seen, -1 where missing
    (NaN). The first frame is 1.

    Written with ezc3d, not with rigtool's own C3D writer: rigtool's reader then meets a file
    another implementation wrote, as it does in a lab."""
    import ezc3d

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n, k, _ = markers_lab_m.shape
    mm = np.asarray(markers_lab_m, float) * 1000.0
    missing = ~np.isfinite(mm).all(axis=2)                       # (n, k)
    c = ezc3d.c3d()
    c["parameters"]["POINT"]["RATE"]["value"] = [float(rate_hz)]
    c["parameters"]["POINT"]["LABELS"]["value"] = list(names)
    c["parameters"]["POINT"]["UNITS"]["value"] = ["mm"]
    pts = np.ones((4, k, n))
    pts[:3] = np.transpose(np.where(missing[..., None], 0.0, mm), (2, 1, 0))
    c["data"]["points"] = pts
    c["data"]["meta_points"]["residuals"] = np.where(missing, -1.0, 0.3).T[None]
    c.write(str(path))


def write_markers(stem: Path, fmt: str, rate_hz: float, names: list[str],
                  markers_lab_m: np.ndarray) -> str:
    """The capture ``stem`` + ``.csv`` (Vicon Nexus CSV) or ``.c3d`` as ``fmt`` says; returns
    the file's name."""
    stem = Path(stem)
    if fmt == "csv":
        path = stem.with_name(stem.name + ".csv")
        write_vicon_csv(path, rate_hz, names, markers_lab_m)
    elif fmt == "c3d":
        path = stem.with_name(stem.name + ".c3d")
        write_c3d(path, rate_hz, names, markers_lab_m)
    else:
        raise ValueError(f"capture format {fmt!r}: expected 'csv' or 'c3d'")
    return path.name


def toml_value(v) -> str:
    """A TOML literal of a number, string, bool, list / array or dict (inline table)."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, np.ndarray):
        v = v.tolist()
    return "[" + ", ".join(toml_value(x) for x in v) + "]"


def toml_table(header: str, items: dict) -> str:
    """One ``[header]`` or ``[[header]]`` table (header given with its brackets)."""
    lines = [header] + [f"{k} = {toml_value(v)}" for k, v in items.items() if v is not None]
    return "\n".join(lines) + "\n"


def write_json(path: Path, doc: dict) -> None:
    """JSON with numpy arrays as lists."""
    def conv(o):
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, (np.floating, np.integer)):
            return o.item()
        raise TypeError(type(o))
    Path(path).write_text(json.dumps(doc, indent=1, default=conv), encoding="utf-8")


def read_vicon_csv(path: Path) -> tuple[float, list[str], np.ndarray]:
    """(rate, marker names, positions in m (n, k, 3)) of a Trajectories-only Vicon CSV in mm
    (as :func:`write_vicon_csv` and rigtool simulate write it); empty cells are NaN."""
    lines = Path(path).read_text().splitlines()
    rate = float(lines[1].split(",")[0])
    names = [c for c in lines[2].split(",")[2:] if c]
    rows = [ln.split(",") for ln in lines[5:] if ln.strip()]
    vals = np.array([[float(c) if c else np.nan for c in r[2:2 + 3 * len(names)]]
                     for r in rows])
    return rate, names, vals.reshape(len(rows), len(names), 3) / 1000.0
