"""Frames of a video file, one at a time, as 8-bit grayscale, each with the container's
timestamp (``cv2.VideoCapture``).

Timestamps: OpenCV's FFmpeg backend reports, after each read, the decoded picture's
presentation time less the stream's start (``CAP_PROP_POS_MSEC``); ``CAP_PROP_POS_FRAMES``
only counts the frames decoded so far, so a frame lost to damage shifts it and it is not
used. When the decoder gives up before the end the container states (a demuxer that meets
garbage stops there), reading resumes past the damage by seeking with the container's
index; the frames re-read that way are checked against the ones decoded before, so a
container that numbers frames by counting them (AVI) and so misplaces them after damage is
refused rather than believed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.errors import InputError

#: Largest mean absolute difference, grey levels, between the same frame decoded twice.
SAME_PICTURE_LEVELS = 0.5
#: Lossless codecs whose decoder hides a damaged slice by copying it from an earlier picture
#: (FFmpeg's FFV1): there a picture is checked for runs of pixels copied that way.
CONCEALING_CODECS = ("FFV1",)
#: Pixels per run compared, every how many rows, and how many earlier pictures a copy may
#: come from (the decoder's frame threads); a copied slice spans many rows.
RUN_PX, RUN_ROW_STEP, RECENT_PICTURES = 32, 4, 16


#: Least contrast, grey levels, of a run compared: an edge or texture, whose mid-grey
#: pixels carry shot noise (a dark, nearly noiseless run could repeat by itself).
RUN_CONTRAST = 16
#: Fraction of a picture's runs found in earlier pictures that marks it as patched (FFV1
#: conceals whole slices, a quarter of the picture or more).
COPIED_FRACTION = 0.05
#: A picture whose adjacent pixels correlate less than this fraction of the last good
#: picture's is noise (FFV1 decoding a frame whose keyframe was lost, after a seek).
NOISE_CORRELATION_RATIO = 0.8


def _neighbour_correlation(gray: np.ndarray) -> float:
    """Correlation of horizontally adjacent pixels (every RUN_ROW_STEP rows): near 1 for a
    picture of a scene, near 0 for the noise a decoder makes of data it cannot decode."""
    rows = gray[::RUN_ROW_STEP].astype(np.float32)
    a, b = rows[:, :-1].ravel(), rows[:, 1:].ravel()
    a, b = a - a.mean(), b - b.mean()
    denom = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum()) / denom if denom > 0 else 1.0


def _run_keys(gray: np.ndarray) -> np.ndarray:
    """A 64-bit key of every run of RUN_PX pixels along a row (every RUN_ROW_STEP rows) of
    contrast at least RUN_CONTRAST. Sensor noise makes two pictures share such a run only
    when one was copied from the other."""
    rows = gray[::RUN_ROW_STEP]
    n = rows.shape[1] // RUN_PX
    runs = np.ascontiguousarray(rows[:, :n * RUN_PX]).reshape(len(rows), n, RUN_PX)
    varying = runs.max(axis=2).astype(np.int16) - runs.min(axis=2) >= RUN_CONTRAST
    words = runs.view(np.uint64)                      # RUN_PX bytes -> RUN_PX / 8 words
    mult = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                     0x27D4EB2F165667C5], dtype=np.uint64)
    with np.errstate(over="ignore"):
        key = np.bitwise_xor.reduce(words * mult[:words.shape[2]], axis=2)
    return key[varying]


class VideoFrames:
    """Grayscale frames of a video file, one at a time (``cv2.VideoCapture``).

    When the decoder can hand out its luma plane directly (8-bit gray or YUV video: no
    conversion to BGR and back, several times faster on raw or MJPEG video), that plane
    is used, after checking on the first frame that it equals the converted image's gray.

    Attributes
    ----------
    stamp_s : float or None
        The container's timestamp of the frame :meth:`read` returned last, s from the
        stream's start; None when the container gives none.
    rate_hz : float
        The container's nominal frame rate (0 when it states none).
    n_frames_hint : int
        The frame count the container states (or estimates from its duration; 0: none).

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
        # OpenCV takes a picture's decode time when its presentation time is 0: with
        # reordered (B-) frames that is slightly negative for the first picture
        first_ms = max(0.0, float(converted.get(cv2.CAP_PROP_POS_MSEC)))
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
        self._pending_ms = first_ms
        self._stamped: bool | None = None      # known after the second frame
        self._first_ms = first_ms
        self._last: tuple[int, np.ndarray] | None = None   # (frame number, picture)
        self._highest = -1                  # the highest frame number decoded so far
        self.stamp_s: float | None = None
        fourcc = int(self._cap.get(cv2.CAP_PROP_FOURCC) or 0)
        codec = "".join(chr((fourcc >> (8 * i)) & 0xFF) for i in range(4))
        self._recent: list[np.ndarray] | None = ([] if codec.upper() in CONCEALING_CODECS
                                                 else None)
        self._smooth: float | None = None   # neighbour correlation of the last picture
        #: Frame numbers whose picture the decoder patched from earlier ones or made noise
        #: of (dropped).
        self.concealed: list[int] = []

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

    def _gray(self, frame: np.ndarray) -> np.ndarray | None:
        import cv2

        if self._raw:
            return self._luma(frame)
        return cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) if frame.ndim == 3 else frame

    def _number(self, stamp_ms: float) -> int:
        return int(np.floor(stamp_ms * 1e-3 * self.rate_hz + 0.5))

    def _grab(self, cap) -> tuple[np.ndarray, float] | None:
        """The next picture of ``cap`` and its timestamp (ms), or None."""
        import cv2

        ok, frame = cap.read()
        if not ok or frame is None:
            return None
        gray = self._gray(frame)
        if gray is None:
            return None
        return gray, float(cap.get(cv2.CAP_PROP_POS_MSEC))

    def read(self) -> np.ndarray | None:
        """The next frame as ``uint8 [H, W]``, or None at the end (its timestamp:
        :attr:`stamp_s`). With a concealing codec, a picture the decoder patched with runs
        of pixels copied from an earlier one, or made noise of (damaged data), is skipped;
        its frame number goes to :attr:`concealed`."""
        while True:
            last = self._last
            gray = self._read_one()
            if gray is None or self._recent is None:
                return gray
            keys = _run_keys(gray)
            copied = 0
            if self._recent:
                pool = np.sort(np.concatenate(self._recent))
                at = np.minimum(np.searchsorted(pool, keys), len(pool) - 1)
                copied = int((pool[at] == keys).sum())
            self._recent = (self._recent + [keys])[-RECENT_PICTURES:]
            smooth = _neighbour_correlation(gray)
            noise = self._smooth is not None and smooth < NOISE_CORRELATION_RATIO * self._smooth
            if copied < max(8, COPIED_FRACTION * len(keys)) and not noise:
                self._smooth = smooth
                return gray
            if self.stamp_s is not None:
                self.concealed.append(self._number(self.stamp_s * 1e3))
            self._last = last               # the picture to check a resumed reading against

    def _read_one(self) -> np.ndarray | None:
        if self._pending is not None:
            gray, stamp_ms = self._pending, self._pending_ms
            self._pending = None
        else:
            got = self._grab(self._cap)
            if got is None:
                got = self._resume()
            if got is None:
                return None
            gray, stamp_ms = got
            if self._stamped is None:       # FFmpeg reports 0 for a frame without a time
                self._stamped = not (stamp_ms <= 0.0 and self._first_ms <= 0.0)
        stamped = self._stamped is not False and self.rate_hz > 0
        self.stamp_s = stamp_ms * 1e-3 if stamped else None
        if stamped:
            self._last = (self._number(stamp_ms), gray)
            self._highest = max(self._highest, self._last[0])
        return gray

    def _resume(self) -> tuple[np.ndarray, float] | None:
        """Frames past a stretch the decoder gave up on, found by seeking beyond it; None
        when the container states no more frames or none can be decoded past it.

        OpenCV's seek puts the reading at the frame asked for (decoding from an earlier
        keyframe), so the first frame that can be reached is searched for: targets
        doubling their distance from the last frame decoded until one is reached, then
        halving the interval back to the earliest that is (no decodable frame skipped)."""
        if (self._stamped is False or self._last is None
                or self.n_frames_hint <= self._highest + 1):
            return None
        self._check_numbering(*self._last)
        floor = self._highest
        targets, step = [], 1
        while floor + step < self.n_frames_hint - 1:
            targets.append(floor + step)
            step *= 2
        targets.append(self.n_frames_hint - 1)
        bad, found = floor, None
        for target in targets:
            found = self._probe(target, floor)
            if found is not None:
                break
            bad = target
        if found is None:
            return None
        good = target
        while good - bad > 1:
            mid = (good + bad) // 2
            earlier = self._probe(mid, floor)
            if earlier is None:
                bad = mid
            else:
                found[0].release()
                found, good = earlier, mid
        cap, got = found
        self._cap.release()
        self._cap = cap
        return got

    def _probe(self, target: int, floor: int):
        """A capture put at frame ``target`` and its first picture numbered past ``floor``
        (with its timestamp, ms), or None when none decodes there."""
        import cv2

        cap = self._open(convert=not self._raw)
        cap.set(cv2.CAP_PROP_POS_FRAMES, target)
        for _ in range(target - floor + 64):
            got = self._grab(cap)
            if got is None:
                break
            if self._number(got[1]) > floor:
                return cap, got
        cap.release()
        return None

    def _check_numbering(self, number: int, picture: np.ndarray) -> None:
        """The frame the container's index puts at ``number`` must be the picture decoding
        in order numbered so; otherwise frames were lost before it and the container's
        timestamps count decoded frames rather than date them."""
        import cv2

        cap = self._open(convert=not self._raw)
        try:
            cap.set(cv2.CAP_PROP_POS_FRAMES, number)
            got = self._grab(cap)
        finally:
            cap.release()
        if got is None or self._number(got[1]) != number:
            return                          # no index to check against: trust the order
        diff = float(np.abs(got[0].astype(np.int16) - picture).mean())
        if diff > SAME_PICTURE_LEVELS:
            t = number / self.rate_hz
            raise InputError(
                f"the decoder stopped at frame {number} ({t:.3f} s) of the "
                f"{self.n_frames_hint} the container states, and the container's index puts "
                f"another picture there (mean difference {diff:.1f} grey levels): frames "
                "before it were lost to damage and this container numbers frames by counting "
                "them, so no later frame's time can be trusted; expected an undamaged video "
                "(re-copy it from the camera's original; a container that stores each frame's "
                "time, such as .mkv, lets a damaged copy be tracked around its gaps)",
                path=self.path)

    def close(self) -> None:
        """Release the decoder."""
        self._cap.release()
