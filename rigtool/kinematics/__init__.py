"""rigtool.kinematics: marker clusters -> pose -> zero-phase filtered motion.

- :mod:`rigtool.kinematics.pose`: SVD (Kabsch) pose per frame, outlier markers dropped;
  the rigid fit itself in :mod:`rigtool.kinematics.rigid_fit`, body-frame marker
  coordinates from a static capture in :mod:`rigtool.kinematics.static_frame`.
- :mod:`rigtool.kinematics.filtering`: zero-phase FIR/Butterworth filter, gap filling,
  finite-difference derivatives (plain arrays, time first).
- :mod:`rigtool.kinematics.motion`: :class:`Motion` (pose, velocities, accelerations, the one
  place that knows body vs lab angular velocity) from a :class:`BodyTrajectory`.
- :mod:`rigtool.kinematics.rotation_mean`: the mean of a still body's rotations over its
  frames and each frame's deviation from it (spread, covariance of the mean).
"""

from rigtool.kinematics.filtering import ZeroPhaseFilter, derivative, design_fir, fill_gaps
from rigtool.kinematics.motion import Motion, motion_from_pose
from rigtool.kinematics.pose import BodyTrajectory, body_trajectory, fit_pose
from rigtool.kinematics.static_frame import markers_from_static

__all__ = ["BodyTrajectory", "fit_pose", "body_trajectory", "markers_from_static",
           "ZeroPhaseFilter", "design_fir", "derivative", "fill_gaps", "Motion",
           "motion_from_pose"]
