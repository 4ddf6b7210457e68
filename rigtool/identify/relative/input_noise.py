"""The noise of a prescribed input's markers, as the active model's probes draw it.

The active relative-motion model takes each moving link's measured motion as its input; its
probes perturb the link's markers by their noise, refit the splines and see how far the
estimate moves (rigtool.identify.relative.active). White noise of the markers' measured
scatter is right for markers fixed to a segment. Markers on skin slide over the bone for
seconds: a slow wander passes the spline that white noise does not, and white probes of the
same scatter under-represent it. When a link's markers wander, each probe is a surrogate of
their own residual about the link's rigid fit (its spectrum kept, its phases drawn anew:
Theiler et al. 1992, Physica D 58:77), scaled up for what the rigid fit absorbed.
"""

from __future__ import annotations

import numpy as np

from rigtool.kinematics.pose import BodyTrajectory
from rigtool.kinematics.rotation_mean import wander_covariance


def marker_residuals(traj: BodyTrajectory, xyz_m: np.ndarray, coords: np.ndarray
                     ) -> np.ndarray:
    """Each marker's residual about the fitted pose, ``[T, K, 3]`` (lab, m; 0 where the
    marker or the pose is missing).

    Parameters
    ----------
    traj : BodyTrajectory
        The link's marker-fitted poses over the frames of ``xyz_m``.
    xyz_m : ndarray [T, K, 3]
        Its markers' measured positions (lab, m).
    coords : ndarray [K, 3]
        Their places on the link (link frame, m).
    """
    pred = np.einsum("tij,kj->tki", traj.rotation, coords) + traj.position_m[:, None, :]
    res = np.asarray(xyz_m, float) - pred
    return np.where(np.isfinite(res), res, 0.0)


def wanders(residual: np.ndarray) -> bool:
    """Whether the residuals ``[T, K, 3]`` wander: the covariance of their mean counts them
    for fewer than independent frames
    (:func:`rigtool.kinematics.rotation_mean.wander_covariance`)."""
    x = residual.reshape(len(residual), -1)
    x = x[:, np.any(x != 0, axis=0)]
    return x.shape[1] > 0 and wander_covariance(x) is not None


def surrogate(rng: np.random.Generator, residual: np.ndarray) -> np.ndarray:
    """A phase-randomised surrogate of ``residual [T, K, 3]`` (each series' power spectrum
    kept, its phases uniform), times ``sqrt(3K / (3K - 6))``: the rigid fit that left the
    residual absorbed six of its ``3K`` coordinates per frame."""
    t, k, _ = residual.shape
    spec = np.fft.rfft(residual, axis=0)
    phase = rng.uniform(0.0, 2.0 * np.pi, spec.shape)
    phase[0] = 0.0                                  # the mean stays real
    if t % 2 == 0:
        phase[-1] = 0.0                             # and the Nyquist term
    out = np.fft.irfft(spec * np.exp(1j * phase), n=t, axis=0)
    return out * np.sqrt(3 * k / max(3 * k - 6, 1))


def probe_noise(rng: np.random.Generator, residual: np.ndarray, sigma_m: float,
                wandering: bool) -> np.ndarray:
    """One probe's perturbation of a link's markers ``[T, K, 3]``: a surrogate of their
    residual (:func:`surrogate`) when it wanders (:func:`wanders`), else white noise of
    ``sigma_m`` per coordinate (NaN: none)."""
    if wandering:
        return surrogate(rng, residual)
    return rng.normal(0.0, sigma_m if np.isfinite(sigma_m) else 0.0, residual.shape)


__all__ = ["marker_residuals", "wanders", "surrogate", "probe_noise"]
