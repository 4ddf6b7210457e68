"""Tags -> body poses, frame after frame: detection, sub-pixel corners, one pose per body.

:class:`FrameTracker` remembers the last frames (where each tag was, each body's pose) so
that most frames need no full detection; :func:`lab_frame_from_video` fixes the lab frame
from a body of tags that does not move. Conventions: see :mod:`rigtool.camera`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.camera import aruco
from rigtool.camera.model import CameraModel
from rigtool.camera.pnp import PoseFit, body_pose
from rigtool.camera.tags import TagLayout
from rigtool.camera.video import VideoFrames
from rigtool.errors import InputError


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
        raise InputError(no_tags_message(last, tracker.layout, used, frames.path,
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


def no_tags_message(gray: np.ndarray | None, layout: TagLayout, n_frames: int,
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
