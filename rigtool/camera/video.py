"""Frames of a video file, one at a time, as 8-bit grayscale (``cv2.VideoCapture``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.errors import InputError


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
