"""The mean of a set of rotations and each one's deviation from it.

One place for what the pipeline does wherever a body held still is averaged over its
frames (a link's rotation in a locked posture, the base link on the platform): SciPy's
chordal L2 mean, and each frame's rotation as ``R_t = R_mean exp([delta_t x])``. The spread,
and the covariance of the mean, follow from ``delta``: for white marker noise the frames'
scatter over their number; for markers that wander on the skin (slowly, over seconds)
that is too small by the frames the wander spans, and the covariance of the mean is taken
from block means instead (:func:`mean_covariance`).
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


#: blocks of consecutive frames whose means carry a slow wander (40 blocks of 0.5 s in a
#: 20 s capture at 100 Hz)
MEAN_BLOCKS = 40
#: the wander's covariance is taken (instead of the frames as independent) when its trace
#: exceeds the independent frames' by this factor: for white noise the ratio stays under 2
#: but in about one draw in 10^4 (tests/test_rotation_mean.py), so a rigid body's frames
#: keep the white-noise covariance
SERIAL_FACTOR = 3.0


def wander_covariance(samples: np.ndarray, n_blocks: int = MEAN_BLOCKS,
                      serial_factor: float = SERIAL_FACTOR) -> np.ndarray | None:
    """Covariance of the mean of ``samples [T, d]`` (frames in time order) when they wander,
    None while they are independent.

    The ``n_blocks`` block means are taken as a first-order autoregression: their covariance
    ``S`` over ``n_blocks``, times ``(1 + rho) / (1 - rho)`` with ``rho`` their lag-one
    correlation (pooled over the coordinates), and at most ``S`` itself (the mean of a
    stationary wander varies no more than the wander). The frames wander when its trace
    exceeds ``serial_factor`` times the independent frames' (white marker noise never gets
    there). A wander slower than the capture is still underestimated (``rho`` from a few
    dozen blocks is biased low); its sign is the Postures held still check's to give.

    Parameters
    ----------
    samples : ndarray [T, d]
    n_blocks : int
    serial_factor : float

    Returns
    -------
    ndarray [d, d] or None
        None also when ``T`` is too short for two frames a block.
    """
    x = np.asarray(samples, float)
    t, d = x.shape
    per = t // n_blocks
    if t <= 3 or per < 2:
        return None
    white = np.atleast_2d(np.cov(x.T)) / t
    means = x[:per * n_blocks].reshape(n_blocks, per, d).mean(axis=1)
    centred = means - means.mean(axis=0)
    power = float(np.sum(centred ** 2))
    rho = float(np.sum(centred[1:] * centred[:-1]) / power) if power > 0 else 0.0
    rho = min(max(rho, 0.0), 0.99)
    spread = np.atleast_2d(np.cov(means.T))
    wander = spread * min((1 + rho) / ((1 - rho) * n_blocks), 1.0)
    return wander if np.trace(wander) > serial_factor * np.trace(white) else None


def mean_covariance(samples: np.ndarray, n_blocks: int = MEAN_BLOCKS,
                    serial_factor: float = SERIAL_FACTOR) -> np.ndarray:
    """Covariance of the mean of ``samples [T, d]`` (frames in time order): the frames'
    covariance over ``T`` while they are independent (white marker noise), the wander's
    (:func:`wander_covariance`, whose parameters these are) when they wander (a marker
    sliding on the skin over seconds); ``[d, d]``, NaN when ``T <= 3``."""
    x = np.asarray(samples, float)
    t, d = x.shape
    if t <= 3:
        return np.full((d, d), np.nan)
    wander = wander_covariance(x, n_blocks, serial_factor)
    return np.atleast_2d(np.cov(x.T)) / t if wander is None else wander


def wander_excess(cov: np.ndarray, white: np.ndarray) -> np.ndarray:
    """The part of ``cov`` beyond ``white`` (both ``[d, d]``), clipped to be positive
    semi-definite: what a wander adds to the independent frames' covariance of a mean."""
    e = 0.5 * ((cov - white) + (cov - white).T)
    vals, vecs = np.linalg.eigh(e)
    return (vecs * np.clip(vals, 0.0, None)) @ vecs.T


__all__ = ["mean_rotation", "rms_angle", "mean_covariance", "wander_covariance",
           "wander_excess", "MEAN_BLOCKS", "SERIAL_FACTOR"]
