"""The mean of a set of rotations and each one's deviation from it.

One place for what the pipeline does wherever a body held still is averaged over its
frames (a link's rotation in a locked posture, the base link on the platform): SciPy's
chordal L2 mean, and each frame's rotation as ``R_t = R_mean exp([delta_t x])``. The spread,
and the covariance of the mean for white marker noise, follow from ``delta``.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation


def mean_rotation(rotations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean [3, 3], delta [T, 3])`` of rotations ``[T, 3, 3]``: the chordal L2 mean and
    each rotation's vector about it (``R_t = mean exp([delta_t x])``, rad)."""
    r = Rotation.from_matrix(rotations)
    mean = r.mean()
    return mean.as_matrix(), (mean.inv() * r).as_rotvec()


def rms_angle(delta: np.ndarray) -> float:
    """RMS angle (rad) of rotation vectors ``[T, 3]``."""
    return float(np.sqrt(np.mean(np.sum(np.asarray(delta) ** 2, axis=1))))


__all__ = ["mean_rotation", "rms_angle"]
