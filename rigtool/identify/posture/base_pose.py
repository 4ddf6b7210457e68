"""How the base link's pose on the platform moves a posture's result in the base-link frame.

A posture fit determines the object in the platform frame; the base link's pose carries it
into the base-link frame the report uses. An error in that pose (skin markers whose mean
over the capture is off the bone) moves the reported parameters at a fixed platform-frame
body, by :func:`base_pose_jacobian`.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.inertia import transform_params

#: central-difference step of the pose (m and rad): the map is smooth and its second
#: derivative is the body's size, so the error is about 1e-14 of the parameters
POSE_STEP = 1e-6


def base_pose_jacobian(pi_base: np.ndarray, rotation: np.ndarray,
                       position_m: np.ndarray) -> np.ndarray:
    """``d pi_base[1:] / d [dt (3), delta (3)]`` (9x6) at a fixed platform-frame body.

    The pose is ``R = rotation exp([delta x])``, ``t = position_m + dt``; the body
    ``pi_platform = transform_params(pi_base, rotation, position_m)`` is held and
    carried back by the perturbed pose.

    Parameters
    ----------
    pi_base : ndarray (10,)
        The body's inertial parameters in the base-link frame.
    rotation, position_m : ndarray
        The base link's pose on the platform (base axes -> platform axes; origin).

    Returns
    -------
    ndarray (9, 6)
    """
    pi_platform = transform_params(np.asarray(pi_base, float), rotation, position_m)

    def carried(v: np.ndarray) -> np.ndarray:
        rot = rotation @ Rotation.from_rotvec(v[3:]).as_matrix()
        pos = position_m + v[:3]
        # the inverse transform: platform -> base is (R^T, -R^T t)
        return transform_params(pi_platform, rot.T, -rot.T @ pos)[1:]

    out = np.empty((9, 6))
    for k in range(6):                              # six columns, not frames
        e = np.zeros(6)
        e[k] = POSE_STEP
        out[:, k] = (carried(e) - carried(-e)) / (2 * POSE_STEP)
    return out


def pose_added_covariance(pi_base: np.ndarray, rotation: np.ndarray, position_m: np.ndarray,
                          pose_cov: np.ndarray) -> np.ndarray:
    """``G Sigma G^T`` (9x9): what a pose covariance ``[dt, delta]`` adds to that of
    ``pi_base[1:]`` (:func:`base_pose_jacobian`)."""
    g = base_pose_jacobian(pi_base, rotation, position_m)
    return g @ np.asarray(pose_cov, float) @ g.T


__all__ = ["base_pose_jacobian", "pose_added_covariance", "POSE_STEP"]
