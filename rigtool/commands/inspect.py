"""``rigtool inspect CAPTURE [--json] [--units U]``: what a capture file holds.

Prints the format, frame rate, frame count and duration, the first frame number (as the file
numbers it), the units as written in the file, the markers in file order and, per marker, the
frames without a position (count, number of gaps, longest gap). ``--json`` prints one JSON
object with the keys (``format``, ``rate_hz``, ``n_frames``, ``first_frame``,
``units``, ``markers``, ``missing``) plus ``duration_s``, ``source``, ``sha256`` and ``notes``:
what the reader had to reconcile to read the file (a C3D header and parameters that disagree,
a frame range that wraps, Vicon sections or columns skipped), printed as ``note:`` lines in
the table. A note is not an error: the file was read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from rigtool.config import sha256_of
from rigtool.mocap import MarkerData, read_capture

HELP = "format, rate, units, markers and gaps of a motion-capture file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rigtool inspect``."""
    parser.add_argument("capture", type=Path, help="capture file (any supported export)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--units", default=None,
                        help="length units (mm, cm, m, in) for a file that does not state them")


def gap_summary(data: MarkerData) -> dict[str, dict[str, int]]:
    """Per marker: missing frames, number of gaps (runs of missing frames), longest gap.

    Vectorised over frames: the edges of the runs come from ``diff`` of the padded mask.
    """
    missing = np.isnan(data.xyz_m).any(axis=2)  # [T, N]
    pad = np.zeros((1, missing.shape[1]), bool)
    edges = np.diff(np.vstack([pad, missing, pad]).astype(np.int8), axis=0)  # +1 start, -1 end
    out = {}
    for j, name in enumerate(data.names):
        starts = np.flatnonzero(edges[:, j] == 1)
        ends = np.flatnonzero(edges[:, j] == -1)
        lengths = ends - starts
        out[name] = {"missing": int(missing[:, j].sum()), "gaps": int(lengths.size),
                     "longest": int(lengths.max()) if lengths.size else 0}
    return out


def summary(data: MarkerData, path: Path) -> dict:
    """The JSON object of ``rigtool inspect --json``."""
    return {"format": data.format, "rate_hz": data.rate_hz, "n_frames": data.n_frames,
            "first_frame": data.first_frame, "units": data.units,
            "markers": list(data.names), "missing": data.missing_counts(),
            "duration_s": data.n_frames / data.rate_hz, "source": str(path),
            "sha256": sha256_of(path), "notes": list(data.notes)}


def _table(data: MarkerData, path: Path) -> str:
    s = summary(data, path)
    gaps = gap_summary(data)
    with_gaps = sum(1 for g in gaps.values() if g["missing"])
    lines = [f"{path}: {s['format']}, {s['rate_hz']:g} Hz, {s['n_frames']} frames "
             f"({s['duration_s']:.3f} s), first frame {s['first_frame']}, units {s['units']}",
             f"{len(data.names)} markers, {with_gaps} with missing frames"]
    width = max([len("marker")] + [len(n) for n in data.names])
    lines.append(f"  {'marker':<{width}}  {'missing':>7}  {'gaps':>4}  {'longest gap':>11}")
    for name, g in gaps.items():
        longest = f"{g['longest']} fr" if g["gaps"] else "-"
        lines.append(f"  {name:<{width}}  {g['missing']:>7}  {g['gaps']:>4}  {longest:>11}")
    outputs = data.extras.get("model_outputs", {}).get("names", [])
    if outputs:
        lines.append(f"({len(outputs)} model outputs stored as points are not markers: "
                     f"{', '.join(outputs[:8])}{' ...' if len(outputs) > 8 else ''})")
    lines += [f"note: {note}" for note in data.notes]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Read the capture and print its summary."""
    data = read_capture(args.capture, units=args.units)
    if args.json:
        print(json.dumps(summary(data, args.capture)))
    else:
        print(_table(data, args.capture))
    return 0
