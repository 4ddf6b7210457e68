"""A video of tagged bodies -> a capture: the tag corners' lab positions, frame by frame.

Per frame: tags found by cv2.aruco, their corners refined to sub-pixel
(:func:`rigtool.camera.aruco.refine_corners`), each body's pose fitted to all its visible
corners (:func:`rigtool.camera.pnp.body_pose`, started from the body's previous pose), and
every corner of every tag of the body placed in the lab from that pose. Frames stream
through in chunks: memory does not grow with the video's length.

Outputs (``OUT`` the capture's path without its suffix):

- ``OUT.csv``: the plain CSV of :mod:`rigtool.mocap.plaincsv` (``time``: the frame
  number, from the frame's own timestamp in the container and the container's rate, over
  the capture's rate; ``<body>:tag<id>_<corner>_x|y|z`` in metres, lab frame; empty where
  the body was not seen, and for every frame that could not be decoded: a lost frame
  leaves an empty row at its own time, see :mod:`rigtool.camera.timeline`).
- ``OUT.residuals.csv``: per frame and body, the RMS reprojection residual (px) and the
  corners used; per marker the six components of its position covariance (m^2, lab frame,
  order xx, yy, zz, yz, zx, xy) at the image noise measured over the whole video.
- ``OUT.track.json``: inputs with their sha256, rate, frames (rows, and frames decoded),
  notes (frames lost or repeated, a video shorter than its container says), the pooled
  image noise, per body the frames seen and the median standard deviation of its corners along the
  camera's depth and across it, the lab frame.
- ``OUT.markers.toml``: per body, its markers' coordinates in the body frame, to paste into
  the rig file (platform) or the session manifest (links).

Conventions: see :mod:`rigtool.camera`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.camera.capture_files import (COV_NAMES, CaptureWriters, output_paths,
                                          write_summaries)
from rigtool.camera.model import CameraModel
from rigtool.camera.pnp import PoseFit, corner_covariance_unit
from rigtool.camera.tags import TagLayout
from rigtool.camera.timeline import FrameTimeline
from rigtool.camera.tracker import FrameTracker, lab_frame_from_video, no_tags_message
from rigtool.camera.video import VideoFrames
from rigtool.errors import InputError

__all__ = ["COV_NAMES", "TrackResult", "output_paths", "track_video"]

#: Frames processed between two writes.
CHUNK_FRAMES = 256
_COV_INDEX = ((0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1))


@dataclass
class TrackResult:
    """What :func:`track_video` measured (also written to ``OUT.track.json``).

    ``n_frames`` counts the capture's rows (frame numbers 0 to the last decoded frame's),
    ``n_decoded`` the frames decoded among them, ``notes`` what was lost or repeated
    (:meth:`rigtool.camera.timeline.FrameTimeline.notes`).
    """

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
    n_decoded: int = 0
    notes: list[str] = field(default_factory=list)


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
                detect_every: int = 30, lab_frames_s: float = 2.0,
                lab_frame: dict | None = None, progress: Callable[[str], None] | None = None
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
    lab_frame : dict, optional
        The lab frame of an earlier track of the same set-up (camera and lab board unmoved:
        the ``lab_frame`` entry of its side file, :func:`read_lab_frame`), used instead of
        this video's own. Every capture of a session then shares one lab frame, and a lab
        frame fitted with the rig's calibration (``rigtool calibrate``) holds for all.
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
    if lab_frame is not None:
        lab_rot = np.asarray(lab_frame["rotation_cam_lab"], float)
        lab_trans = np.asarray(lab_frame["translation_cam_lab_m"], float)
        lab_info = dict(lab_frame)
    elif layout.lab_body is not None:
        lab_rot, lab_trans, lab_info = lab_frame_from_video(
            frames, tracker, n_frames=max(1, int(round(lab_frames_s * rate))))
        frames.close()
        frames = VideoFrames(video)
        tracker.reset()
    marker_names = [f"{b}:{m}" for b in bodies for m in tracker.bodies[b].marker_names]
    writers = CaptureWriters(out, bodies, marker_names)
    n_seen = {b: 0 for b in bodies}
    ssr = {b: 0.0 for b in bodies}
    dof = {b: 0 for b in bodies}
    depth_vals: dict[str, list[np.ndarray]] = {b: [] for b in bodies}
    timeline = FrameTimeline(video, frames.rate_hz if frames.rate_hz > 0 else rate, rate,
                             frames.n_frames_hint)
    k, first_seen = 0, None
    check_until = max(1, int(round(2.0 * rate)))
    last_report = start
    chunk: list[dict[str, PoseFit]] = []

    def flush() -> None:
        nonlocal k, chunk
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
        chunk = []

    try:
        while True:
            gray = frames.read()
            if gray is None:
                break
            number = timeline.place(frames.stamp_s)
            if number is None:                  # a repeated frame: its time is taken
                continue
            if number > k + len(chunk):         # frames lost before this one: empty rows
                tracker.reset()
                while k + len(chunk) < number:
                    chunk.append({})
                    if len(chunk) >= CHUNK_FRAMES:
                        flush()
            fits = tracker.poses(gray)
            fits = {b: f for b, f in fits.items() if b in n_seen}
            if fits and first_seen is None:
                first_seen = number
            if first_seen is None and number + 1 >= check_until:
                raise InputError(no_tags_message(gray, layout, number + 1, video),
                                 path=layout.source)
            chunk.append(fits)
            if len(chunk) >= CHUNK_FRAMES:
                flush()
                now = time.perf_counter()
                if progress is not None and now - last_report > 2.0:
                    last_report = now
                    total = f"/{frames.n_frames_hint}" if frames.n_frames_hint else ""
                    progress(f"tracking {video.name}: frame {k}{total} "
                             f"({timeline.n_decoded / (now - start):.0f} frames/s)")
        if chunk:
            flush()
        if first_seen is None:
            raise InputError(no_tags_message(None, layout, k, video), path=layout.source)
        timeline.check_usable()
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
                                 for b in bodies}, depth_std_m={}, lateral_std_m={},
                         lab_frame=lab_info, n_decoded=timeline.n_decoded,
                         notes=timeline.notes(frames.concealed))
    for b in bodies:
        vals = np.concatenate(depth_vals[b]) if depth_vals[b] else np.zeros((0, 2))
        med = np.median(vals, axis=0) if len(vals) else np.full(2, np.nan)
        result.depth_std_m[b] = float(np.sqrt(med[0]) * sigma_px)
        result.lateral_std_m[b] = float(np.sqrt(med[1]) * sigma_px)
    result.files = files + write_summaries(out, result, video, camera_file, layout)
    result.time_s = time.perf_counter() - start
    return result


