"""A video of tagged bodies -> a capture: the tag corners' lab positions, frame by frame.

Per frame: tags found by cv2.aruco, their corners refined to sub-pixel
(:func:`rigtool.camera.aruco.refine_corners`), each body's pose fitted to all its visible
corners (:func:`rigtool.camera.pnp.body_pose`, started from the body's previous pose), and
every corner of every tag of the body placed in the lab from that pose. Frames stream
through in chunks: memory does not grow with the video's length.

Outputs (``OUT`` the capture's path without its suffix):

- ``OUT.csv``: the plain CSV of :mod:`rigtool.mocap.plaincsv` (``time`` from the frame
  number and the video's rate; ``<body>:tag<id>_<corner>_x|y|z`` in metres, lab frame;
  empty where the body was not seen).
- ``OUT.residuals.csv``: per frame and body, the RMS reprojection residual (px) and the
  corners used; per marker the six components of its position covariance (m^2, lab frame,
  order xx, yy, zz, yz, zx, xy) at the image noise measured over the whole video.
- ``OUT.track.json``: inputs with their sha256, rate, frames, the pooled image noise,
  per body the frames seen and the median standard deviation of its corners along the
  camera's depth and across it, the lab frame.
- ``OUT.markers.toml``: per body, its markers' coordinates in the body frame, to paste into
  the rig file (platform) or the session manifest (links).

Conventions: see :mod:`rigtool.camera`.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool import __version__
from rigtool.camera import aruco
from rigtool.camera.model import CameraModel
from rigtool.camera.pnp import PoseFit, body_pose, corner_covariance_unit, fit_pose
from rigtool.camera.tags import TagLayout
from rigtool.config import sha256_of
from rigtool.errors import InputError
from rigtool.mocap._textblock import format_rows
from rigtool.tomlwrite import dumps

#: Frames processed between two writes.
CHUNK_FRAMES = 256
#: Covariance components written per marker (SPEC's order of six components).
COV_NAMES = ("xx", "yy", "zz", "yz", "zx", "xy")
_COV_INDEX = ((0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1))


@dataclass
class TrackResult:
    """What :func:`track_video` measured (also written to ``OUT.track.json``)."""

    n_frames: int
    rate_hz: float
    sigma_px: float
    seen_fraction: dict[str, float]
    rms_px: dict[str, float]
    depth_std_m: dict[str, float]
    lateral_std_m: dict[str, float]
    lab_frame: dict
    files: list[Path] = field(default_factory=list)
    time_s: float = 0.0


class VideoFrames:
    """Grayscale frames of a video file, one at a time (``cv2.VideoCapture``).

    When the decoder can hand out its luma plane directly (8-bit gray or YUV video: no
    conversion to BGR and back, several times faster on raw or MJPEG video), that plane
    is used, after checking on the first frame that it equals the converted image's gray.

    Raises
    ------
    InputError
        When the file is missing or OpenCV cannot decode a first frame from it.
    """

    def __init__(self, path: Path) -> None:
        import cv2

        self.path = Path(path)
        if not self.path.is_file():
            raise InputError("video file not found" if not self.path.exists()
                             else "expected a video file, found a directory", path=self.path)
        converted = self._open(convert=True)
        ok, first = converted.read()
        if not ok or first is None:
            converted.release()
            raise InputError("cannot read a frame: not a video OpenCV can decode (expected a "
                             "video file such as .avi, .mkv or .mp4)", path=self.path)
        gray = cv2.cvtColor(first, cv2.COLOR_BGR2GRAY) if first.ndim == 3 else first
        self.height, self.width = gray.shape[:2]
        self.rate_hz = float(converted.get(cv2.CAP_PROP_FPS) or 0.0)
        self.n_frames_hint = int(converted.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        self._cap, self._raw = converted, False
        raw_cap = self._open(convert=False)
        ok, raw = raw_cap.read()
        plane = self._luma(raw) if ok and raw is not None else None
        if plane is not None and np.abs(plane.astype(np.int16) - gray).max() <= 3:
            converted.release()
            self._cap, self._raw = raw_cap, True
            gray = plane
        else:
            raw_cap.release()
        self._pending = gray

    def _open(self, *, convert: bool):
        import cv2

        cap = cv2.VideoCapture(str(self.path))
        if not convert:
            cap.set(cv2.CAP_PROP_CONVERT_RGB, 0)
        return cap

    def _luma(self, raw: np.ndarray) -> np.ndarray | None:
        """The luma plane of an unconverted frame, or None when it is not one."""
        if raw.ndim == 2 and raw.shape[1] == self.width and raw.shape[0] >= self.height:
            return raw[:self.height]             # gray, or planar YUV whose Y comes first
        return None

    def read(self) -> np.ndarray | None:
        """The next frame as ``uint8 [H, W]``, or None at the end."""
        import cv2

        if self._pending is not None:
            frame, self._pending = self._pending, None
            return frame
        ok, frame = self._cap.read()
        if not ok or frame is None:
            return None
        if self._raw:
            return self._luma(frame)
        return cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) if frame.ndim == 3 else frame

    def close(self) -> None:
        """Release the decoder."""
        self._cap.release()


@dataclass
class _BodyModel:
    name: str
    object_pts: dict[int, np.ndarray]     # tag id -> [4, 3] body frame
    markers_body: np.ndarray              # [K, 3] all corners, marker order
    marker_names: list[str]


class FrameTracker:
    """Tags -> body poses in one frame at a time, remembering each body's last pose.

    A full detection (cv2.aruco over the whole frame) runs on the first frame, every
    ``detect_every`` frames and after any tracked tag was lost; in between, each tag seen
    in the last frame is found again by refining its corners from where its last two
    frames put them (constant velocity), which is several times faster than detecting.
    A tag that does not converge there, or whose corners do not fit its body's pose, is
    dropped and the next frame detects again. ``detect_every=1`` detects in every frame.
    """

    def __init__(self, camera: CameraModel, layout: TagLayout, *,
                 threshold_window_px: int | None = 15, detect_every: int = 30) -> None:
        self.camera = camera
        self.layout = layout
        self.detector = aruco.make_detector(layout.dictionary(),
                                            threshold_window_px=threshold_window_px)
        self.detect_every = max(1, int(detect_every))
        self.bodies = {}
        for body in layout.bodies:
            tags = layout.tags_of(body)
            markers = layout.body_markers(body)
            self.bodies[body] = _BodyModel(body, {t.id: t.corners_body() for t in tags},
                                           np.array(list(markers.values())),
                                           list(markers))
        self._owner = {t.id: t.body for t in layout.tags}
        self.reset()

    def reset(self) -> None:
        """Forget the previous frames (before a jump in the video)."""
        self._last: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._tracked: dict[int, np.ndarray] = {}      # tag id -> corners in the last frame
        self._previous: dict[int, np.ndarray] = {}     # ... and in the frame before
        self._since_detect = 0
        self._lost = True

    def _detect(self, gray: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids, raw = aruco.detect(self.detector, gray)
        keep = np.array([i in self._owner for i in ids], dtype=bool)
        return ids[keep], raw[keep]

    def corners(self, gray: np.ndarray) -> dict[str, dict[int, np.ndarray]]:
        """Per body, the refined corners ``[4, 2]`` of each of its tags found in ``gray``."""
        detect = (self._lost or not self._tracked
                  or self._since_detect + 1 >= self.detect_every)
        if detect:
            ids, start = self._detect(gray)
            self._since_detect = 0
        else:
            ids = np.array(sorted(self._tracked), dtype=np.int64)
            start = np.array([2.0 * self._tracked[i] - self._previous.get(i, self._tracked[i])
                              for i in ids])
            self._since_detect += 1
        refined, ok = aruco.refine_corners(gray, start, self.camera)
        self._lost = not detect and not ok.all()
        out: dict[str, dict[int, np.ndarray]] = {}
        tracked = {}
        for tag_id, corners, good in zip(ids, refined, ok):
            if good:
                out.setdefault(self._owner[int(tag_id)], {})[int(tag_id)] = corners
                tracked[int(tag_id)] = corners
        self._previous = {i: self._tracked[i] for i in tracked if i in self._tracked}
        self._tracked = tracked
        return out

    def poses(self, gray: np.ndarray) -> dict[str, PoseFit]:
        """Per body seen in ``gray``, its pose fit."""
        found = self.corners(gray)
        fits = {}
        for body, image_pts in found.items():
            model = self.bodies[body]
            fit = body_pose(model.object_pts, image_pts, self.camera,
                            guess=self._last.get(body))
            dropped = set(image_pts) - set(fit.tag_ids if fit is not None else ())
            if dropped:                         # a tag that does not fit: detect next frame
                self._lost = True
                for i in dropped:
                    self._tracked.pop(i, None)
            if fit is not None:
                fits[body] = fit
                self._last[body] = (fit.rvec, fit.tvec)
            else:
                self._last.pop(body, None)
        for body in list(self._last):
            if body not in fits:
                del self._last[body]
        return fits


def lab_frame_from_video(frames: VideoFrames, tracker: FrameTracker, *, n_frames: int
                         ) -> tuple[np.ndarray, np.ndarray, dict]:
    """The lab body's pose in the camera frame (``X_cam = R x_lab + t``) from the first
    ``n_frames`` frames: each corner's pixels averaged over the frames that saw it (the body
    does not move), then one pose fit to the averages.

    Raises
    ------
    InputError
        When none of the lab body's tags is found in those frames.
    """
    body = tracker.layout.lab_body
    sums: dict[int, np.ndarray] = {}
    counts: dict[int, int] = {}
    used, any_tag, last = 0, False, None
    for _ in range(n_frames):
        gray = frames.read()
        if gray is None:
            break
        used, last = used + 1, gray
        found = tracker.corners(gray)
        any_tag |= bool(found)
        for tag_id, corners in found.get(body, {}).items():
            sums[tag_id] = sums.get(tag_id, 0.0) + corners
            counts[tag_id] = counts.get(tag_id, 0) + 1
    if not any_tag:
        raise InputError(_no_tags_message(last, tracker.layout, used, frames.path,
                                          lab=True), path=tracker.layout.source)
    if not sums:
        ids = ", ".join(str(t.id) for t in tracker.layout.tags_of(body))
        raise InputError(f"the lab body '{body}' (tags {ids}) is not seen in the first {used} "
                         f"frames of {frames.path}; the lab frame cannot be set (check that "
                         "its tags are in view, or set lab = \"camera\")",
                         path=tracker.layout.source, field="lab")
    means = {i: sums[i] / counts[i] for i in sums}
    fit = body_pose(tracker.bodies[body].object_pts, means, tracker.camera,
                    max_tag_rms_px=2.0)
    if fit is None:
        raise InputError(f"the lab body '{body}': its tags seen in {frames.path} do not fit "
                         "one rigid board (check their positions in tags.toml)",
                         path=tracker.layout.source, field="lab")
    rot = Rotation.from_rotvec(fit.rvec).as_matrix()
    info = {"frame": "body", "body": body, "frames_averaged": used,
            "tags": sorted(int(i) for i in means), "rms_px": fit.rms_px,
            "rotation_cam_lab": rot.tolist(), "translation_cam_lab_m": fit.tvec.tolist()}
    return rot, fit.tvec, info


def output_paths(out: str | Path) -> list[Path]:
    """The capture and its side files: ``OUT.csv``, ``OUT.residuals.csv``,
    ``OUT.track.json``, ``OUT.markers.toml``."""
    out = Path(out)
    return [out] + [out.with_name(out.stem + s)
                    for s in (".residuals.csv", ".track.json", ".markers.toml")]


class _Writers:
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
            for r0 in range(0, self.n_rows, CHUNK_FRAMES):
                block = np.array(table[r0:r0 + CHUNK_FRAMES])
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


def _place_chunk(fits: list[dict[str, PoseFit]], tracker: FrameTracker, bodies: list[str],
                 lab_rot: np.ndarray, lab_trans: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Markers' lab positions ``[F, M, 3]``, unit covariances ``[F, M, 6]``, body stats
    ``[F, B, 2]`` (rms px, corners) and per body ``[F, 2]`` (depth, lateral) unit variances
    of its corners, vectorised over the chunk's frames."""
    n_f = len(fits)
    xyz, cov6, depth_lat = [], [], {}
    stats = np.full((n_f, len(bodies), 2), np.nan)
    for b, body in enumerate(bodies):
        model = tracker.bodies[body]
        k = len(model.marker_names)
        seen = np.array([body in f for f in fits], dtype=bool)
        pos = np.full((n_f, k, 3), np.nan)
        cov = np.full((n_f, k, 6), np.nan)
        dl = np.full((n_f, 2), np.nan)
        if seen.any():
            chosen = [f[body] for f in fits if body in f]
            rvec = np.array([c.rvec for c in chosen])
            tvec = np.array([c.tvec for c in chosen])
            jtj = np.array([c.jtj for c in chosen])
            rot = Rotation.from_rotvec(rvec).as_matrix()
            cam = np.einsum("fij,kj->fki", rot, model.markers_body) + tvec[:, None, :]
            # lab = R_cl^T (cam - t_cl); the covariance turns with the same rotation
            pos[seen] = (cam - lab_trans) @ lab_rot
            c_cam = corner_covariance_unit(rvec, jtj, model.markers_body, rot)
            c_lab = np.einsum("ai,fkab,bj->fkij", lab_rot, c_cam, lab_rot)
            cov[seen] = np.stack([c_lab[..., i, j] for i, j in _COV_INDEX], axis=-1)
            ray = cam / np.linalg.norm(cam, axis=-1, keepdims=True)
            along = np.einsum("fki,fkij,fkj->fk", ray, c_cam, ray)
            total = np.trace(c_cam, axis1=-2, axis2=-1)
            dl[seen] = np.stack([along.mean(axis=1), 0.5 * (total - along).mean(axis=1)], 1)
            stats[seen, b, 0] = [c.rms_px for c in chosen]
            stats[seen, b, 1] = [c.n_points for c in chosen]
        xyz.append(pos)
        cov6.append(cov)
        depth_lat[body] = dl
    return np.concatenate(xyz, axis=1), np.concatenate(cov6, axis=1), stats, depth_lat


def track_video(video: str | Path, camera: CameraModel, layout: TagLayout, out: str | Path, *,
                camera_file: Path | None = None, rate_hz: float | None = None,
                detect_every: int = 30, lab_frames_s: float = 2.0, progress: Callable[[str], None] | None = None
                ) -> TrackResult:
    """Track every tagged body of ``layout`` through ``video`` and write the capture.

    Parameters
    ----------
    video : path
        Any video OpenCV decodes.
    camera : CameraModel
        Its image size must be the video's.
    layout : TagLayout
    out : path
        The capture CSV to write (the side files go next to it).
    camera_file : Path, optional
        Where ``camera`` came from (named in messages and recorded with its sha256).
    rate_hz : float, optional
        Frame rate when the video's own is missing or wrong (a high-speed camera's file
        often states a playback rate).
    detect_every : int
        Full tag detection every this many frames (see :class:`FrameTracker`).
    lab_frames_s : float
        Length of the start of the video over which the lab body's pose is averaged, s.
    progress : callable, optional
        Called with a status line about every 2 s.

    Returns
    -------
    TrackResult

    Raises
    ------
    InputError
        An unreadable video, a frame size the camera was not calibrated for, no rate, no
        tag of ``layout`` in the first seconds of the video (the message lists the tags
        that other dictionaries find there, when any), the lab body not seen.
    """
    start = time.perf_counter()
    video, out = Path(video), Path(out)
    frames = VideoFrames(video)
    camera.check_frame_size(frames.width, frames.height, source=video, camera_file=camera_file)
    rate = float(rate_hz) if rate_hz else frames.rate_hz
    if not (np.isfinite(rate) and rate > 0):
        frames.close()
        raise InputError("the video does not state its frame rate; give it with --rate-hz",
                         path=video)
    tracker = FrameTracker(camera, layout, detect_every=detect_every)
    bodies = layout.moving_bodies
    lab_rot, lab_trans = np.eye(3), np.zeros(3)
    lab_info: dict = {"frame": "camera"}
    if layout.lab_body is not None:
        lab_rot, lab_trans, lab_info = lab_frame_from_video(
            frames, tracker, n_frames=max(1, int(round(lab_frames_s * rate))))
        frames.close()
        frames = VideoFrames(video)
        tracker.reset()
    marker_names = [f"{b}:{m}" for b in bodies for m in tracker.bodies[b].marker_names]
    writers = _Writers(out, bodies, marker_names)
    n_seen = {b: 0 for b in bodies}
    ssr = {b: 0.0 for b in bodies}
    dof = {b: 0 for b in bodies}
    depth_vals: dict[str, list[np.ndarray]] = {b: [] for b in bodies}
    k, first_seen = 0, None
    check_until = max(1, int(round(2.0 * rate)))
    last_report = start
    try:
        while True:
            chunk: list[dict[str, PoseFit]] = []
            while len(chunk) < CHUNK_FRAMES:
                gray = frames.read()
                if gray is None:
                    break
                fits = tracker.poses(gray)
                fits = {b: f for b, f in fits.items() if b in n_seen}
                if fits and first_seen is None:
                    first_seen = k + len(chunk)
                if first_seen is None and k + len(chunk) + 1 >= check_until:
                    raise InputError(_no_tags_message(gray, layout, k + len(chunk) + 1, video),
                                     path=layout.source)
                chunk.append(fits)
            if not chunk:
                break
            time_s = (k + np.arange(len(chunk))) / rate
            xyz, cov, stats, dl = _place_chunk(chunk, tracker, bodies, lab_rot, lab_trans)
            writers.write_chunk(time_s, xyz, cov, stats)
            for f in chunk:
                for b, fit in f.items():
                    n_seen[b] += 1
                    ssr[b] += fit.ssr_px2
                    dof[b] += 2 * fit.n_points - 6
            for b in bodies:
                good = np.isfinite(dl[b][:, 0])
                depth_vals[b].append(dl[b][good][:: max(1, good.sum() // 32)])
            k += len(chunk)
            now = time.perf_counter()
            if progress is not None and now - last_report > 2.0:
                last_report = now
                total = f"/{frames.n_frames_hint}" if frames.n_frames_hint else ""
                progress(f"tracking {video.name}: frame {k}{total} "
                         f"({k / (now - start):.0f} frames/s)")
        if first_seen is None:
            raise InputError(_no_tags_message(None, layout, k, video), path=layout.source)
        total_dof = sum(dof.values())
        sigma_px = (float(np.sqrt(sum(ssr.values()) / total_dof)) if total_dof > 0
                    else float("nan"))
        files = writers.finish(sigma_px)
    except BaseException:
        writers.abort()
        raise
    finally:
        frames.close()
    result = TrackResult(n_frames=k, rate_hz=rate, sigma_px=sigma_px,
                         seen_fraction={b: n_seen[b] / max(k, 1) for b in bodies},
                         rms_px={b: float(np.sqrt(ssr[b] / dof[b])) if dof[b] else float("nan")
                                 for b in bodies}, depth_std_m={}, lateral_std_m={}, lab_frame=lab_info)
    for b in bodies:
        vals = np.concatenate(depth_vals[b]) if depth_vals[b] else np.zeros((0, 2))
        med = np.median(vals, axis=0) if len(vals) else np.full(2, np.nan)
        result.depth_std_m[b] = float(np.sqrt(med[0]) * sigma_px)
        result.lateral_std_m[b] = float(np.sqrt(med[1]) * sigma_px)
    result.files = files + _write_summaries(out, result, video, camera_file, layout, tracker)
    result.time_s = time.perf_counter() - start
    return result


def _no_tags_message(gray: np.ndarray | None, layout: TagLayout, n_frames: int,
                     video: Path, *, lab: bool = False) -> str:
    ids = ", ".join(str(t.id) for t in layout.tags if lab or t.body != layout.lab_body)
    text = (f"none of the tracked tags ({layout.dictionary_name}, ids {ids}) is found in the "
            f"first {n_frames} frames of {video}")
    if gray is not None:
        others = []
        for name in aruco.dictionary_names():
            if name == layout.dictionary_name:
                continue
            found, _ = aruco.detect(aruco.make_detector(aruco.get_dictionary(name)), gray)
            if len(found):
                others.append(f"{name} ids {', '.join(str(i) for i in sorted(set(found))[:8])}")
        if others:
            text += "; the last frame holds tags of other dictionaries: " + "; ".join(others[:3])
            text += " (is tags.toml's dictionary the one you printed?)"
    return text + "; expected the tags listed in tags.toml to be in view"


def _write_summaries(out: Path, result: TrackResult, video: Path, camera_file: Path | None,
                     layout: TagLayout, tracker: FrameTracker) -> list[Path]:
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
