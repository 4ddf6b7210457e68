"""Which lab frame each capture was tracked in, and whether a session's captures share the
calibration's.

``rigtool track`` records the lab frame it used in ``NAME.track.json`` beside the capture.
A rig calibrated from tracked captures with its lab frame fitted (``rigtool calibrate
--lab-frame``) holds in that lab frame only: a posture tracked in another one (its board
measured again) carries the difference into its COM, so :func:`posture_lab_frame_warning`
says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rigtool.camera.side_files import summary_file_of

#: a lab frame counts as the same within this turn (rad) and shift (m)
SAME_TURN_RAD, SAME_SHIFT_M = 1e-7, 1e-7


def track_lab_frame(capture: str | Path) -> dict | None:
    """The ``lab_frame`` entry of the ``rigtool track`` side file beside ``capture``
    (``NAME.track.json``), or None for a capture without one (optical mocap). ``from``
    names the track that set the frame: that side file itself unless its track reused
    another's (``rigtool track --lab-frame``)."""
    side = summary_file_of(capture)
    try:
        lab = json.loads(side.read_text(encoding="utf-8")).get("lab_frame")
    except (OSError, ValueError, AttributeError):
        return None
    return {"from": str(side), **lab} if isinstance(lab, dict) else None


def frame_difference(a: dict, b: dict) -> tuple[float, float]:
    """``(turn rad, shift m)`` between two lab-board frames of one camera; ``(inf, inf)`` when
    either is the camera's own frame or malformed."""
    try:
        if a.get("frame") != "body" or b.get("frame") != "body":
            return (0.0, 0.0) if a.get("frame") == b.get("frame") else (np.inf, np.inf)
        ra, ta = np.asarray(a["rotation_cam_lab"], float), np.asarray(
            a["translation_cam_lab_m"], float)
        rb, tb = np.asarray(b["rotation_cam_lab"], float), np.asarray(
            b["translation_cam_lab_m"], float)
        cos = np.clip((np.trace(ra.T @ rb) - 1) / 2, -1.0, 1.0)
        # the lab origins' difference, in the first lab's axes
        return float(np.arccos(cos)), float(np.linalg.norm(ra.T @ (tb - ta)))
    except (KeyError, TypeError, ValueError):
        return np.inf, np.inf


def lab_frame_spread(frames: list[dict]) -> tuple[float, float]:
    """Largest :func:`frame_difference` of the frames from the first (0 when they share one,
    e.g. tracked with ``--lab-frame``)."""
    diffs = [frame_difference(frames[0], f) for f in frames[1:]]
    return (max((d[0] for d in diffs), default=0.0), max((d[1] for d in diffs), default=0.0))


def calibration_camera_frame(rig_raw: dict) -> dict | None:
    """The lab frame a rig's calibration captures were tracked in, as ``rigtool calibrate``
    records it (``[calibration.lab_frame.camera_lab_frame]``), or None."""
    cal = rig_raw.get("calibration") if isinstance(rig_raw, dict) else None
    lab = cal.get("lab_frame") if isinstance(cal, dict) else None
    cam = lab.get("camera_lab_frame") if isinstance(lab, dict) else None
    return cam if isinstance(cam, dict) else None


def posture_lab_frame_warning(rig_raw: dict, capture: str | Path) -> str | None:
    """A warning when ``capture`` was tracked in another lab frame than the one the rig was
    calibrated in (None when they agree, or either is not a camera's)."""
    cal = calibration_camera_frame(rig_raw)
    lab = track_lab_frame(capture)
    if cal is None or lab is None:
        return None
    turn, shift = frame_difference(cal, lab)
    if turn <= SAME_TURN_RAD and shift <= SAME_SHIFT_M:
        return None
    what = ("another kind of lab frame" if not np.isfinite(turn) else
            f"a lab frame {np.degrees(turn):.5f} deg and {1e3 * shift:.4f} mm from")
    return (f"{Path(capture).name} was tracked in {what} the one the rig was calibrated in; "
            "its COM carries the difference (0.001 deg moves it by about 0.01-0.06 mm): track "
            f"it with `rigtool track --lab-frame {cal.get('from', 'CALIBRATION.track.json')}`")


__all__ = ["SAME_TURN_RAD", "SAME_SHIFT_M", "track_lab_frame", "frame_difference",
           "lab_frame_spread", "calibration_camera_frame", "posture_lab_frame_warning"]
