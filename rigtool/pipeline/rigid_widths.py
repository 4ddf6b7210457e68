"""The rigid engine's compiled tangent widths a command's fits will call, so that a thread
can load them (rigtool.engine.rigid.load_executables) while the command reads its captures.
A width named here that no fit calls costs that thread's time; one left out is loaded on
the fit's path when it gets there (0.2-0.3 s). Either way the results are the same."""

from __future__ import annotations

from rigtool.engine.rigid import padded_width

STATE_COLUMNS = 12                   # a platform's initial state: pose and velocity
POSTURE_COLUMNS = 9 + STATE_COLUMNS  # a posture fit: the object's 9 parameters, the state


def calibration_unknowns(n_springs: int) -> int:
    """The calibration's shared unknowns: the platform's 10 inertial parameters and each
    spring's stiffness, free length and damping."""
    return 10 + 3 * n_springs


def posture_covariance_columns(n_springs: int) -> int:
    """A posture's covariance columns: its fit's, one per principal axis of the calibration's
    covariance (its members) and the object's mass."""
    return POSTURE_COLUMNS + calibration_unknowns(n_springs) + 1


def calibration_widths(n_springs: int) -> tuple[int, ...]:
    """What ``rigtool calibrate`` calls, in its order: each capture's initial state, the
    refinement over the captures, a hold-out capture's posture fit and its covariance."""
    columns = (STATE_COLUMNS, calibration_unknowns(n_springs) + STATE_COLUMNS,
               POSTURE_COLUMNS, posture_covariance_columns(n_springs))
    return tuple(dict.fromkeys(padded_width(p) for p in columns))


__all__ = ["STATE_COLUMNS", "POSTURE_COLUMNS", "calibration_unknowns",
           "posture_covariance_columns", "calibration_widths"]
