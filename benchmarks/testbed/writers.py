"""What a lab writes: Vicon Nexus CSV captures (mm), the rig file and the session manifest
as a user writes them (TOML), and ``truth.json`` (the form rigtool's report compares with).
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
