"""The files ``rigtool track`` writes: the capture CSV and the residuals/covariance CSV,
chunk by chunk, then ``OUT.track.json`` and ``OUT.markers.toml`` (layouts: see
:mod:`rigtool.camera.track`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from rigtool import __version__
from rigtool.camera.side_files import markers_file_of, residuals_file_of, summary_file_of
from rigtool.camera.tags import TagLayout
from rigtool.config import sha256_of
from rigtool.errors import InputError
from rigtool.mocap._textblock import format_rows
from rigtool.tomlwrite import dumps

#: Frames written per block when the residuals file is finished.
BLOCK_FRAMES = 256
#: Covariance components written per marker (SPEC's order of six components).
COV_NAMES = ("xx", "yy", "zz", "yz", "zx", "xy")


def output_paths(out: str | Path) -> list[Path]:
    """The capture and its side files: ``OUT.csv``, ``OUT.residuals.csv``,
    ``OUT.track.json``, ``OUT.markers.toml``."""
    return [Path(out), residuals_file_of(out), summary_file_of(out), markers_file_of(out)]


class CaptureWriters:
    """The capture CSV and the residuals CSV, written chunk by chunk into partial files that
    are renamed at the end (no half-written output after an error)."""

    def __init__(self, out: Path, bodies: list[str], marker_names: list[str]) -> None:
        self.out = out
        self.side = residuals_file_of(out)
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
        "n_frames": result.n_frames, "n_frames_decoded": result.n_decoded,
        "notes": list(result.notes), "image_noise_px": result.sigma_px,
        "lab_frame": result.lab_frame,
        "bodies": {b: {"seen_fraction": result.seen_fraction[b],
                       "residual_sigma_px": result.rms_px[b],
                       "corner_std_depth_m": result.depth_std_m[b],
                       "corner_std_lateral_m": result.lateral_std_m[b]}
                   for b in result.seen_fraction},
        "capture": out.name, "residuals": out.stem + ".residuals.csv",
        "covariance_order": list(COV_NAMES),
    }
    js = summary_file_of(out)
    js.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    markers = {b: {"markers": {m: [round(float(v), 9) for v in xyz]
                               for m, xyz in layout.body_markers(b).items()}}
               for b in layout.moving_bodies}
    mt = markers_file_of(out)
    mt.write_text(dumps(markers, header=f"markers of {out.name} in each body's frame (m), from "
                        f"{layout.source}; paste them into the rig file ([platform]) or the "
                        "session manifest ([[links]])"), encoding="utf-8")
    return [js, mt]


def read_lab_frame(track_json: str | Path, *, camera_file: Path | None = None) -> dict:
    """The lab frame an earlier ``rigtool track`` set from the lab board (its
    ``OUT.track.json``), to film a session's captures in one lab frame.

    Parameters
    ----------
    track_json : path
        The side file of a track of the same set-up (camera and lab board unmoved).
    camera_file : Path, optional
        This track's camera file: it must be the one the earlier track used (same sha256).

    Returns
    -------
    dict
        That track's ``lab_frame`` entry, with ``from`` (the file) and its ``sha256``.

    Raises
    ------
    InputError
        An unreadable file, one without a lab board's frame, or another camera's.
    """
    path = Path(track_json)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read this track side file ({exc})", path=path) from None
    lab = doc.get("lab_frame") if isinstance(doc, dict) else None
    if not isinstance(lab, dict) or lab.get("frame") != "body":
        raise InputError("expected the OUT.track.json of a track whose lab frame was set by a "
                         "lab board (tags.toml: lab = \"<board>\"); this one has "
                         f"{'none' if not isinstance(lab, dict) else lab.get('frame')!r}",
                         path=path, field="lab_frame")
    try:
        rot = np.asarray(lab["rotation_cam_lab"], float).reshape(3, 3)
        trans = np.asarray(lab["translation_cam_lab_m"], float).reshape(3)
    except (KeyError, TypeError, ValueError):
        raise InputError("expected rotation_cam_lab (3x3) and translation_cam_lab_m (3)",
                         path=path, field="lab_frame") from None
    if not (np.all(np.isfinite(rot)) and np.allclose(rot @ rot.T, np.eye(3), atol=1e-9)
            and np.all(np.isfinite(trans))):
        raise InputError("rotation_cam_lab is not a rotation matrix", path=path,
                         field="lab_frame")
    if camera_file is not None:
        inputs = doc.get("inputs")
        used = [i.get("sha256") for i in (inputs if isinstance(inputs, list) else [])
                if isinstance(i, dict) and Path(str(i.get("path", ""))).suffix == ".toml"]
        if used and sha256_of(camera_file) not in used:
            raise InputError(f"that track used another camera file than {camera_file}; a lab "
                             "frame carries over only with the same camera calibration",
                             path=path, field="inputs")
    return {**lab, "from": str(path), "sha256": sha256_of(path)}
