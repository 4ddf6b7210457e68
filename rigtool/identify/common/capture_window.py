"""A manifest's analysis window against the capture it names.

People write "to the end of this 12 s capture" as ``window = [1.0, 12.0]``, although a
1440-frame capture at 120 Hz ends at 11.9917 s: an end (or a start) within one frame period
of the capture's last (first) frame means that frame, and the run says so in a note. A
window really outside the capture, or holding too few frames to fit, is an error.
"""

from __future__ import annotations

import numpy as np

#: frames a fitted window needs at the least (as window_frames in this package)
MIN_WINDOW_FRAMES = 20

#: rounding allowed on top of one frame period (times written with few digits)
_ROUNDING = 1e-6


def window_problem(window: tuple[float, float] | None, time_s: np.ndarray,
                   rate_hz: float) -> str | None:
    """Why ``window`` (s) cannot be fitted on a capture with frames at ``time_s``, or None.

    Parameters
    ----------
    window : (start, end) in s, or None (the whole capture)
    time_s : (n,) array
        The capture's frame times, s.
    rate_hz : float
        Its frame rate, Hz.

    Returns
    -------
    str or None
        The problem, as a sentence naming the window and the capture's span.
    """
    if window is None:
        return None
    t0, t1 = float(time_s[0]), float(time_s[-1])
    span = f"({t0:g} .. {t1:g} s)"
    if window[0] >= t1 or window[1] <= t0:
        return f"the window [{window[0]:g}, {window[1]:g}] s lies outside the capture {span}"
    slack = (1.0 + _ROUNDING) / rate_hz
    if window[1] > t1 + slack or window[0] < t0 - slack:
        return (f"the window [{window[0]:g}, {window[1]:g}] s is longer than the capture "
                f"{span} by more than one frame period; shorten it to the capture")
    n = int(np.count_nonzero((time_s >= window[0]) & (time_s <= window[1])))
    if n < MIN_WINDOW_FRAMES:
        return (f"the window [{window[0]:g}, {window[1]:g}] s holds {n} frames; expected at "
                f"least {MIN_WINDOW_FRAMES}")
    return None


def window_note(window: tuple[float, float] | None, time_s: np.ndarray,
                rate_hz: float) -> str | None:
    """A note when ``window`` reaches past the capture's first or last frame by up to one
    frame period (it then means that frame), else None."""
    if window is None or window_problem(window, time_s, rate_hz) is not None:
        return None
    t0, t1 = float(time_s[0]), float(time_s[-1])
    said = []
    if window[0] < t0:
        said.append(f"starts {window[0]:g} s, before the first frame ({t0:.6g} s)")
    if window[1] > t1:
        said.append(f"ends {window[1]:g} s, after the last frame ({t1:.6g} s at "
                    f"{rate_hz:g} Hz)")
    if not said:
        return None
    return (f"the window [{window[0]:g}, {window[1]:g}] s " + " and ".join(said)
            + ": within one frame period, so it is taken to mean the capture's "
            + ("start and end" if len(said) == 2 else "start" if window[0] < t0 else "end"))


__all__ = ["MIN_WINDOW_FRAMES", "window_problem", "window_note"]
