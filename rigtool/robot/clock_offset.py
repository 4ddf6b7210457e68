"""A constant offset between the encoders' clock and the capture's, from the motion itself.

The joint-angle file of a motion capture should be on the capture's clock (SPEC). When the
robot's controller logs on its own clock, the two differ by a constant (a trigger that is
late, a log that starts at its own zero); a few frames already spoil the motion's
equations, whose accelerations change sign within a fraction of a second.

The wrench the platform feels from the robot follows the joints. The URDF's inertials
predict it from the encoders alone (inverse dynamics with the platform still, on the
encoders' own time grid; the prior is tens of per cent off, but the wrench's timing is
the joints'), and for a trial offset ``d`` the prediction at ``t + d`` is compared with the
platform's measured wrench ``b(t)`` (springs minus the platform's own inertia and weight,
rigtool.robot.motion_fit), each component's mean taken off: the offset is where the
prediction explains most of ``b`` (the summed ``1 - SSR/SST`` over the six components, every
trial on the same frames), refined in tenths of a frame about the best frame and by a
parabola through the best three. It is taken off when it exceeds half a frame and explains
at least 1 % more of the wrench than none, after a refinement where the full equations fit
best (rigtool.robot.motion_fit: the robot's parameters profiled out, no prior). (A free linear regression on the joints' signals
cannot tell the offset: joints moving along sines of the same frequencies span every shift
of them.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Largest offset searched, s
MAX_OFFSET_S = 1.0
#: An offset is applied when it exceeds this fraction of the frame period ...
APPLY_ABOVE_FRAMES = 0.5
#: ... and explains this much more of the wrench than none (relative): less is within what
#: the prior's own errors shift the best match by (a few ms on a short capture)
APPLY_ABOVE_GAIN = 0.01


@dataclass(frozen=True)
class ClockOffset:
    """``offset_s``: the encoders' clock minus the capture's (subtract it from the encoders'
    times to put them on the capture's clock); ``explained``/``explained_at_zero``: the
    regression's summed R^2 there and at 0."""

    offset_s: float
    explained: float
    explained_at_zero: float

    def significant(self, frame_s: float) -> bool:
        """Whether to take the offset off (:data:`APPLY_ABOVE_FRAMES`,
        :data:`APPLY_ABOVE_GAIN`)."""
        return bool(abs(self.offset_s) > APPLY_ABOVE_FRAMES * frame_s
                    and self.explained > (1.0 + APPLY_ABOVE_GAIN) * self.explained_at_zero)


def parabola_extremum(trials: np.ndarray, values: np.ndarray, step: float, *,
                      maximum: bool) -> float:
    """The best of evenly spaced ``trials`` (``step`` apart; the largest ``values`` with
    ``maximum``, else the smallest), moved to the vertex of the parabola through it and its
    two neighbours when that parabola bends the right way (an end trial's inner neighbour
    stands in for it)."""
    best = np.argmax(values) if maximum else np.argmin(values)
    i = int(np.clip(best, 1, trials.size - 2))
    y0, y1, y2 = values[i - 1:i + 2]
    curv = y0 - 2 * y1 + y2
    offset = float(trials[i])
    if (curv < 0) if maximum else (curv > 0):
        offset += float(0.5 * (y0 - y2) / curv * step)
    return offset


def estimate_clock_offset(time_s: np.ndarray, wrench: np.ndarray, valid: np.ndarray,
                          enc_time_s: np.ndarray, predicted: np.ndarray, *,
                          max_offset_s: float = MAX_OFFSET_S) -> ClockOffset:
    """The encoders' clock offset (module docstring).

    Parameters
    ----------
    time_s : ndarray (T,)
        The capture's frame times.
    wrench : ndarray (T, 6)
        The platform's measured wrench from the robot.
    valid : ndarray (T,)
        Frames where it is measured.
    enc_time_s : ndarray (N,)
        The encoders' times on their own clock.
    predicted : ndarray (N, 6)
        The wrench the prior predicts at those times (same units and axes as ``wrench``).
    max_offset_s : float
    """
    dt = float(np.median(np.diff(time_s)))
    steps = np.arange(-int(round(max_offset_s / dt)), int(round(max_offset_s / dt)) + 1)
    trials = steps * dt
    # frames every trial can use: inside the encoders' span for the largest shifts
    inside = ((time_s - max_offset_s >= enc_time_s[0])
              & (time_s + max_offset_s <= enc_time_s[-1]))
    use = valid & inside & np.all(np.isfinite(wrench), axis=1)
    t, b = time_s[use], wrench[use]
    if t.size < 50:
        return ClockOffset(0.0, float("nan"), float("nan"))
    b = b - b.mean(axis=0)
    total = np.sum(b * b, axis=0)
    total[total == 0] = 1.0

    def score(d: float) -> float:
        # the capture's time t is the encoders' t + d
        p = np.column_stack([np.interp(t + d, enc_time_s, col) for col in predicted.T])
        r = b - (p - p.mean(axis=0))
        return float(np.sum(1.0 - np.sum(r * r, axis=0) / total))

    scores = np.array([score(d) for d in trials])
    best = int(np.argmax(scores))
    # then tenths of a frame about the best frame, and a parabola through the best three
    fine = trials[best] + np.arange(-10, 11) * dt / 10
    fine_scores = np.array([score(d) for d in fine])
    offset = parabola_extremum(fine, fine_scores, dt / 10, maximum=True)
    zero = int(np.flatnonzero(steps == 0)[0])
    return ClockOffset(offset, float(max(fine_scores.max(), scores[best])),
                       float(scores[zero]))


__all__ = ["MAX_OFFSET_S", "APPLY_ABOVE_FRAMES", "APPLY_ABOVE_GAIN", "ClockOffset",
           "estimate_clock_offset", "parabola_extremum"]
