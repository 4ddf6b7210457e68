"""The measuring system's lab frame against the rig's, fitted with the calibration.

A rig file gives the springs' anchors and gravity in a lab frame; the markers come in the
frame of the system that measured them. For optical motion capture the two are usually one
(the anchors are measured with the same system), but a camera sets its lab frame from a
board on the floor, and a turn of 0.001 deg or a shift of 0.01 mm between the frames moves
a posture's COM by more than the camera's noise does (benchmarks/RESULTS.md, "The same
posture rendered at 16x16 rays"). No rig parameter absorbs it: calibrating springs and
platform in the measured frame leaves most of it (measured: 0.45 -> 0.17 mm for 0.008 deg).

The cure is to fit the rigid transform ``x_measured = R x_rig + t`` with the calibration:
six unknowns ``[rotvec (rad), t (m)]`` acting on the predicted markers only, so their
Jacobian columns are closed-form (``d(R x)/d rotvec = -[R x]x J_l``, ``d/dt = I``) and the
compiled engine is untouched. The calibrated rig is then the rig moved into the measured
frame (anchors ``R a + t``, gravity ``R g``); a rigid motion of the whole world changes no
dynamics, so every later fit in that frame (postures, relative motion) is exact with it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.kinematics.motion import right_jacobian, skew_batch
from rigtool.rig import Rig

#: unknowns of the frame: rotation vector (rad) and translation (m), measured <- rig
FRAME_NAMES = ("rx", "ry", "rz", "tx", "ty", "tz")


def framed_rows(r_mm: np.ndarray, jac: np.ndarray | None, measured_rows_m: np.ndarray,
                frame: np.ndarray, *, frame_columns: bool = False
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """Residual rows and Jacobian of markers predicted in the rig's frame, moved into the
    measured frame by ``frame = [rotvec, t]``.

    Parameters
    ----------
    r_mm : ndarray (M,)
        ``1e3 (predicted_rig - measured)`` per seen coordinate, three rows per marker.
    jac : ndarray (M, P) or None
        Their Jacobian along the fit's directions (mm per unit), in the rig's frame.
    measured_rows_m : ndarray (M,)
        The measured coordinates of those rows, m.
    frame : ndarray (6,)
    frame_columns : bool
        With ``jac`` None: return the six frame columns alone as the Jacobian.

    Returns
    -------
    r_mm : ndarray (M,)
        ``1e3 (R predicted_rig + t - measured)``.
    jac : ndarray (M, P + 6) or None
        The directions' columns turned by ``R``, then the six frame columns.
    """
    rot = rotation_of(frame)
    pred = (measured_rows_m + 1e-3 * r_mm).reshape(-1, 3) @ rot.T + frame[3:]
    r_out = 1e3 * (pred.ravel() - measured_rows_m)
    if jac is None and not frame_columns:
        return r_out, None
    n = pred.shape[0]
    turned = (np.zeros((3 * n, 0)) if jac is None else
              np.einsum("ij,njp->nip", rot, jac.reshape(n, 3, -1)).reshape(3 * n, -1))
    # the predicted point turned about the origin: d(R x)/d rotvec = -[R x]x J_l(rotvec),
    # with the left Jacobian J_l(v) = J_r(-v)
    left = right_jacobian(-np.asarray(frame[None, :3], float))[0]
    d_rot = -1e3 * (skew_batch(pred - frame[3:]) @ left).reshape(3 * n, 3)
    d_t = 1e3 * np.tile(np.eye(3), (n, 1))
    return r_out, np.hstack([turned, d_rot, d_t])


def rotation_of(frame: np.ndarray) -> np.ndarray:
    """The frame's rotation matrix (measured <- rig)."""
    return Rotation.from_rotvec(np.asarray(frame, float)[:3]).as_matrix()


def rig_in_frame(rig: Rig, frame: np.ndarray) -> Rig:
    """``rig`` moved into the measured frame: anchors ``R a + t``, gravity ``R g`` (the
    platform's own geometry is in its body frame and does not move)."""
    rot = rotation_of(frame)
    springs = tuple(replace(s, anchor_lab=rot @ s.anchor_lab + frame[3:]) for s in rig.springs)
    return replace(rig, springs=springs, gravity_lab=rot @ rig.gravity_lab)


__all__ = ["FRAME_NAMES", "framed_rows", "rotation_of", "rig_in_frame"]
