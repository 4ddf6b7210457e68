"""Where each decoded frame of a video belongs in time: frame numbers from the container's
timestamps, the frames lost or repeated on the way, and whether what is left is a capture.

A frame's number is its timestamp times the container's nominal rate, rounded
(:meth:`FrameTimeline.place`); the capture's row of that frame is written at that number
divided by the capture's rate. A frame that cannot be decoded leaves its number unused (an
empty row, NaN, at its own time), never a later frame moved into its place. What was lost
becomes notes (:meth:`FrameTimeline.notes`); a video that lost more than the analysis can
work around is refused (:meth:`FrameTimeline.check_usable`).

The refusal rule follows what the analysis does with a gap: ``fill_gaps`` interpolates
gaps up to :data:`MAX_BRIDGED_GAP_S` (the pipeline's ``max_gap_s``); a longer gap splits
the record, and the zero-phase filter then loses its edge transient (the default filter's
``order`` frames, :class:`rigtool.config.session_file.FilterSettings`) on both sides of it.
When the frames left outside gaps and those edges are fewer than :data:`MIN_USABLE_FRACTION`
of the frames the video spans, more of the vibration is gap than record, and the video is
refused rather than turned into a capture the fits would mostly ignore.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rigtool.config.session_file import FilterSettings
from rigtool.errors import InputError

#: Longest gap the analysis interpolates, s (``fill_gaps``' ``max_gap_s`` as the pipeline
#: calls it): a shorter run of lost frames costs only itself.
MAX_BRIDGED_GAP_S = 0.1
#: Least fraction of the frames a video spans that must stay usable (decoded, and outside
#: the filter's edges next to a gap longer than MAX_BRIDGED_GAP_S).
MIN_USABLE_FRACTION = 0.5
#: A timestamp further than this (in frame periods) from the nominal rate's grid is noted.
OFF_GRID_FRAMES = 0.25


@dataclass
class Gap:
    """A run of frame numbers no decoded frame filled: ``first`` .. ``last`` inclusive."""

    first: int
    last: int

    @property
    def n_frames(self) -> int:
        return self.last - self.first + 1


@dataclass
class FrameTimeline:
    """Frame numbers of a video's decoded frames, in decoding order, and what went missing.

    Parameters
    ----------
    video : Path
        Named in notes and messages.
    container_rate_hz : float
        The container's nominal frame rate: frame number = timestamp x this rate.
    rate_hz : float
        The capture's rate (the container's, or the true rate of a high-speed camera whose
        file states a playback rate): a row's time is its frame number / this rate.
    expected_frames : int
        The frame count the container states (0: unknown).
    """

    video: Path
    container_rate_hz: float
    rate_hz: float
    expected_frames: int = 0
    gaps: list[Gap] = field(default_factory=list)
    repeats: list[int] = field(default_factory=list)
    n_decoded: int = 0
    last: int = -1
    worst_off_grid: float = 0.0
    counted: bool = False

    def place(self, stamp_s: float | None) -> int | None:
        """The frame number of the next decoded frame, from its timestamp (s, from the
        container's start); None for a frame whose number was already used (a repeat: the
        caller drops it). ``stamp_s`` None: the container has no timestamps, frames are
        counted."""
        if stamp_s is None:
            self.counted = True
            k = self.last + 1
        else:
            exact = float(stamp_s) * self.container_rate_hz
            k = int(np.floor(exact + 0.5))
            self.worst_off_grid = max(self.worst_off_grid, abs(exact - k))
        if k <= self.last:
            self.repeats.append(k)
            return None
        if self.expected_frames and k > 2 * self.expected_frames + 10 * self.container_rate_hz:
            raise InputError(f"a frame decoded after frame {self.last} carries the timestamp "
                             f"{k / self.container_rate_hz:.3f} s, far past the "
                             f"{self.expected_frames} frames the container states; expected "
                             "timestamps within the video (a damaged container?)",
                             path=self.video)
        if k > self.last + 1:
            self.gaps.append(Gap(self.last + 1, k - 1))
        self.last = k
        self.n_decoded += 1
        return k

    @property
    def n_rows(self) -> int:
        """Rows of the capture: every frame number from 0 to the last decoded one."""
        return self.last + 1

    def time_of(self, frame: int) -> float:
        """Time of frame number ``frame`` in the capture, s."""
        return frame / self.rate_hz

    def _span(self, gap: Gap) -> str:
        return (f"frames {gap.first}-{gap.last} ({self.time_of(gap.first):.3f}-"
                f"{self.time_of(gap.last):.3f} s, {gap.n_frames} frames)"
                if gap.n_frames > 1 else
                f"frame {gap.first} ({self.time_of(gap.first):.3f} s)")

    def _bridged(self, gap: Gap) -> bool:
        return gap.n_frames / self.rate_hz <= MAX_BRIDGED_GAP_S + 1e-9

    def usable_frames(self) -> int:
        """Decoded frames outside the default filter's edges next to every gap the analysis
        cannot interpolate."""
        edge = FilterSettings().order
        unusable = np.zeros(self.n_rows, dtype=bool)
        for g in self.gaps:
            unusable[g.first:g.last + 1] = True
            if not self._bridged(g):
                unusable[max(0, g.first - edge):g.last + 1 + edge] = True
        return int((~unusable).sum())

    def notes(self, concealed: list[int] | tuple = ()) -> list[str]:
        """What the capture's reader should know: lost stretches with their times, repeated
        frames, a video shorter than its container says, timestamps off the grid.

        ``concealed``: frame numbers the decoder patched from earlier pictures (dropped)."""
        expected_frames = self.expected_frames
        out = []
        if len(concealed):
            shown = ", ".join(str(k) for k in list(concealed)[:8])
            more = f" and {len(concealed) - 8} more" if len(concealed) > 8 else ""
            out.append(f"{self.video.name}: frame(s) {shown}{more} came out of the decoder "
                       "damaged (patched with pieces of earlier pictures, or noise) and were "
                       "dropped with the frames lost")
        for g in self.gaps:
            how = ("the analysis interpolates it" if self._bridged(g) else
                   f"longer than the {MAX_BRIDGED_GAP_S:g} s the analysis interpolates: the "
                   "capture's motion is filtered on either side of it separately")
            out.append(f"{self.video.name}: {self._span(g)} could not be decoded; their rows "
                       f"are empty at their own times ({how})")
        if self.repeats:
            shown = ", ".join(str(k) for k in self.repeats[:8])
            more = f" and {len(self.repeats) - 8} more" if len(self.repeats) > 8 else ""
            out.append(f"{self.video.name}: {len(self.repeats)} frame(s) repeat the timestamp "
                       f"of an earlier one (frame numbers {shown}{more}); the first of each "
                       "was kept")
        if expected_frames > self.n_rows:
            out.append(f"{self.video.name}: the video ends after frame {self.last} "
                       f"({self.time_of(self.last):.3f} s) though its container states "
                       f"{expected_frames} frames ({self.time_of(expected_frames):.3f} s): "
                       f"cut short, the capture is the {self.n_rows} frames there are")
        if self.worst_off_grid > OFF_GRID_FRAMES:
            out.append(f"{self.video.name}: frame timestamps stray up to "
                       f"{self.worst_off_grid / self.container_rate_hz * 1e3:.1f} ms from the "
                       f"{self.container_rate_hz:g} Hz grid the container states; rows are "
                       "written at the grid's times (a variable-rate video?)")
        if self.counted:
            out.append(f"{self.video.name}: the container gives no frame timestamps; frames "
                       "were numbered in decoding order (a lost frame would go unnoticed)")
        return out

    def check_usable(self) -> None:
        """Refuse a video whose gaps leave less than :data:`MIN_USABLE_FRACTION` usable.

        Raises
        ------
        InputError
            Naming the video, its largest lost stretches and what was expected.
        """
        if not self.gaps or self.n_rows == 0:
            return
        usable = self.usable_frames()
        if usable >= MIN_USABLE_FRACTION * self.n_rows:
            return
        lost = sum(g.n_frames for g in self.gaps)
        worst = sorted(self.gaps, key=lambda g: -g.n_frames)[:3]
        where = "; ".join(self._span(g) for g in sorted(worst, key=lambda g: g.first))
        more = f" (and {len(self.gaps) - 3} shorter gaps)" if len(self.gaps) > 3 else ""
        raise InputError(
            f"{lost} of the {self.n_rows} frames the video spans "
            f"(0-{self.time_of(self.last):.3f} s) could not be decoded: {where}{more}; with "
            f"the filter's {FilterSettings().order}-frame edges beside every gap longer than "
            f"{MAX_BRIDGED_GAP_S:g} s, {usable} frames ({usable / self.n_rows:.0%}) are left "
            f"to the analysis; expected at least {MIN_USABLE_FRACTION:.0%} of the record "
            "(re-export or re-copy the video from the camera's original)", path=self.video)
