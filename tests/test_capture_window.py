"""A window's end within one frame period of the capture's end means the end."""

import numpy as np
import pytest

from rigtool.identify.common.capture_window import window_note, window_problem

# 1440 frames at 120 Hz: 0 .. 11.9917 s
TIME_S = np.arange(1440) / 120.0


@pytest.mark.parametrize("window", [(1.0, 12.0), (0.0, 11.9917), (1.0, 11.0)])
def test_windows_people_write_are_accepted(window):
    assert window_problem(window, TIME_S, 120.0) is None


def test_the_note_says_what_the_end_was_taken_as():
    note = window_note((1.0, 12.0), TIME_S, 120.0)
    assert "after the last frame (11.9917 s at 120 Hz)" in note and note.endswith("end")
    assert window_note((1.0, 11.0), TIME_S, 120.0) is None
    assert window_note(None, TIME_S, 120.0) is None


@pytest.mark.parametrize("window,words", [
    ((1.0, 12.01), "by more than one frame period"),       # 1.0 + 1.2 periods past the end
    ((-0.05, 5.0), "by more than one frame period"),
    ((12.5, 13.0), "outside the capture"),
    ((1.0, 1.1), "holds 13 frames"),
])
def test_windows_outside_the_capture_stay_errors(window, words):
    problem = window_problem(window, TIME_S, 120.0)
    assert problem is not None and words in problem
    assert window_note(window, TIME_S, 120.0) is None
