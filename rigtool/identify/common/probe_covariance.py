"""The covariance of a few probes' shifts of an estimate, shrunk towards its diagonal.

An input's noise share of a fit's covariance is measured by probes: the input drawn again
with fresh noise, the fit's Gauss-Newton shift under each. A dozen probes of an estimate with
a hundred unknowns give a sample covariance of rank twelve: every variance is measured, but
in all other directions of the unknowns the input's share is zero, and a consumer of the
full covariance (the segments stage, which takes combinations of the minimal parameters)
finds them far more certain than they are. Shrinking the sample covariance towards its
diagonal with the intensity the probes themselves support (Schäfer & Strimmer 2005, Stat
Appl Genet Mol Biol 4:32, "target D": the variances kept, each correlation pulled towards
zero by the ratio of the correlations' estimated sampling variance to their square) gives a
full-rank covariance with the same variances.

Why by hand: scikit-learn's Ledoit-Wolf and OAS shrink towards a multiple of the identity
(which would change the variances, whose units differ across unknowns) and are not among
rigtool's dependencies; the target-D estimate is a dozen lines of numpy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["shrunk_covariance"]


def shrunk_covariance(shifts: np.ndarray) -> tuple[np.ndarray, float]:
    """``(cov, intensity)`` of zero-mean probe shifts ``[N, P]``: the sample covariance
    ``shifts^T shifts / N`` with its correlations shrunk towards zero by ``intensity`` (0: the
    sample covariance, 1: its diagonal), estimated from the probes (Schäfer & Strimmer 2005,
    target D, for variables of known zero mean).

    Parameters
    ----------
    shifts : ndarray [N, P]
        Each probe's shift of the P unknowns (their expectation is zero).
    """
    d = np.asarray(shifts, float)
    n = d.shape[0]
    sample = d.T @ d / n
    if n < 2:
        return sample, 0.0
    sd = np.sqrt(np.diag(sample))
    live = sd > 0
    z = np.zeros_like(d)
    z[:, live] = d[:, live] / sd[live]                      # standardised shifts
    w = z[:, :, None] * z[:, None, :]                        # [N, P, P] products
    r = w.mean(axis=0)                                       # sample correlations
    var_r = ((w - r) ** 2).sum(axis=0) / (n * (n - 1))       # their sampling variance
    off = ~np.eye(d.shape[1], dtype=bool)
    denom = float(np.sum(r[off] ** 2))
    intensity = 1.0 if denom <= 0 else float(np.clip(np.sum(var_r[off]) / denom, 0.0, 1.0))
    cov = sample * (1.0 - intensity)
    cov[np.diag_indices_from(cov)] = np.diag(sample)
    return cov, intensity
