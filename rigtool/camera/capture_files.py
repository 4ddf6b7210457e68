"""The files ``rigtool track`` writes: the capture CSV and the residuals/covariance CSV,
chunk by chunk, then ``OUT.track.json`` and ``OUT.markers.toml`` (layouts: see
:mod:`rigtool.camera.track`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from rigtool import __version__
from rigtool.camera.tags import TagLayout
from rigtool.config import sha256_of
from rigtool.mocap._textblock import format_rows
from rigtool.tomlwrite import dumps

#: Frames written per block when the residuals file is finished.
BLOCK_FRAMES = 256
#: Covariance components written per marker (SPEC's order of six components).
COV_NAMES = ("xx", "yy", "zz", "yz", "zx", "xy")


def output_paths(out: str | Path) -> list[Path]:
    """The capture and its side files: ``OUT.csv``, ``OUT.residuals.csv``,
    ``OUT.track.json``, ``OUT.markers.toml``."""
    out = Path(out)
    return [out] + [out.with_name(out.stem + s)
                    for s in (".residuals.csv", ".track.json", ".markers.toml")]


class CaptureWriters:
    """The capture CSV and the residuals CSV, written chunk by chunk into partial files that
    are renamed at the end (no half-written output after an error)."""

    def __init__(self, out: Path, bodies: list[str], marker_names: list[str]) -> None:
        self.out = out
        self.side = out.with_name(out.stem + ".residuals.csv")
        self.cov_tmp = out.with_name(out.stem + ".cov.partial")
        self.parts = [out.with_name(out.name + ".partial"),
                      self.side.with_name(self.side.name + ".partial")]
        self._csv = open(self.parts[0], "w", encoding="utf-8", newline="\n")
        self._csv.write("time," + ",".join(f"{m}_{a}" for m in marker_names for a in "xyz")
                        + "\n")
        self._cov = open(self.cov_tmp, "wb")
        self.bodies, self.marker_names = bodies, marker_names
        self.n_rows = 0

    def write_chunk(self, time_s: np.ndarray, xyz_m: np.ndarray, cov_unit: np.ndarray,
                    body_stats: np.ndarray) -> None:
        """``xyz_m [F, M, 3]``, ``cov_unit [F, M, 6]`` (per px^2), ``body_stats [F, B, 2]``."""
        self._csv.write(format_rows([time_s], ["%.9f"], xyz_m.reshape(len(time_s), -1),
                                    "%.9f", ","))
        np.concatenate([time_s[:, None], body_stats.reshape(len(time_s), -1),
                        cov_unit.reshape(len(time_s), -1)], axis=1).astype(np.float64).tofile(
            self._cov)
        self.n_rows += len(time_s)

    def finish(self, sigma_px: float) -> list[Path]:
        """Write the residuals file at the pooled image noise and put the files in place."""
        self._csv.close()
        self._cov.close()
        n_b, n_m = len(self.bodies), len(self.marker_names)
        width = 1 + 2 * n_b + 6 * n_m
        table = np.memmap(self.cov_tmp, dtype=np.float64, mode="r",
                          shape=(self.n_rows, width)) if self.n_rows else np.zeros((0, width))
        header = ["time"] + [f"{b}_{s}" for b in self.bodies for s in ("rms_px", "corners")] \
            + [f"{m}_c{c}" for m in self.marker_names for c in COV_NAMES]
        with open(self.parts[1], "w", encoding="utf-8", newline="\n") as fh:
            fh.write(",".join(header) + "\n")
            for r0 in range(0, self.n_rows, BLOCK_FRAMES):
                block = np.array(table[r0:r0 + BLOCK_FRAMES])
                stats = block[:, 1:1 + 2 * n_b]
                cov = block[:, 1 + 2 * n_b:] * sigma_px ** 2
                fh.write(format_rows([block[:, 0]], ["%.9f"],
                                     np.concatenate([stats, cov], axis=1), "%.6g", ","))
        del table
        os.replace(self.parts[0], self.out)
        os.replace(self.parts[1], self.side)
        self.cov_tmp.unlink(missing_ok=True)
        return [self.out, self.side]

    def abort(self) -> None:
        """Remove the partial files."""
        for fh in (self._csv, self._cov):
            fh.close()
        for p in self.parts + [self.cov_tmp]:
            p.unlink(missing_ok=True)


def write_summaries(out: Path, result, video: Path, camera_file: Path | None,
                    layout: TagLayout) -> list[Path]:
    inputs = [{"path": str(video), "sha256": sha256_of(video)}]
    for p in (camera_file, layout.source):
        if p is not None:
            inputs.append({"path": str(p), "sha256": sha256_of(p)})
    summary = {
        "rigtool_version": __version__, "inputs": inputs, "rate_hz": result.rate_hz,
        "n_frames": result.n_frames, "image_noise_px": result.sigma_px,
        "lab_frame": result.lab_frame,
        "bodies": {b: {"seen_fraction": result.seen_fraction[b],
                       "residual_sigma_px": result.rms_px[b],
                       "corner_std_depth_m": result.depth_std_m[b],
                       "corner_std_lateral_m": result.lateral_std_m[b]}
                   for b in result.seen_fraction},
        "capture": out.name, "residuals": out.stem + ".residuals.csv",
        "covariance_order": list(COV_NAMES),
    }
    js = out.with_name(out.stem + ".track.json")
    js.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    markers = {b: {"markers": {m: [round(float(v), 9) for v in xyz]
                               for m, xyz in layout.body_markers(b).items()}}
               for b in layout.moving_bodies}
    mt = out.with_name(out.stem + ".markers.toml")
    mt.write_text(dumps(markers, header=f"markers of {out.name} in each body's frame (m), from "
                        f"{layout.source}; paste them into the rig file ([platform]) or the "
                        "session manifest ([[links]])"), encoding="utf-8")
    return [js, mt]
