"""Weighted least squares with honest standard errors, and its physically consistent variant.

Equation-error rows from filtered data are serially correlated (the zero-phase filter smears
each noise sample over ~its impulse response), so the textbook covariance ``s^2 (A^T A)^-1``
is far too optimistic. :func:`solve_wls` returns a heteroscedasticity-and-autocorrelation
consistent (HAC, Newey-West / Bartlett kernel) sandwich covariance computed from per-frame
scores; the lag window is the filter's correlation length. statsmodels has this, but it is not
among our dependencies and the computation is a dozen lines of numpy.

Conventions: ``a`` is ``[T, R, P]`` (frames, rows per frame, parameters), ``b`` is ``[T, R]``;
frames are in time order within each independent block (``block`` ids, [T]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LsqResult:
    """Estimate, covariance and fit quality of a (weighted) least-squares problem."""

    x: np.ndarray                 # [P]
    cov: np.ndarray               # [P, P], HAC sandwich
    residual: np.ndarray          # [T, R] unweighted residuals b - a x
    singular_values: np.ndarray   # of the column-scaled weighted design
    rank: int
    condition_number: float

    @property
    def std(self) -> np.ndarray:
        """Standard errors, sqrt(diag(cov))."""
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))


def hac_covariance(a_w: np.ndarray, e_w: np.ndarray, block: np.ndarray, max_lag: int,
                   bread_inv: np.ndarray) -> np.ndarray:
    """Newey-West sandwich ``B^-1 S B^-1`` with per-frame scores ``s_t = a_t^T e_t``."""
    scores = np.einsum("trp,tr->tp", a_w, e_w)               # [T, P]
    meat = scores.T @ scores
    for lag in range(1, max_lag + 1):
        same = block[lag:] == block[:-lag]
        if not np.any(same):
            break
        g = scores[lag:][same].T @ scores[:-lag][same]
        meat += (1.0 - lag / (max_lag + 1.0)) * (g + g.T)
    return bread_inv @ meat @ bread_inv


def solve_wls(a: np.ndarray, b: np.ndarray, *, row_weights: np.ndarray | None = None,
              block: np.ndarray | None = None, max_lag: int = 0,
              rcond: float = 1e-10) -> LsqResult:
    """Weighted least squares ``min sum_t ||w * (a_t x - b_t)||^2`` with HAC covariance.

    Parameters
    ----------
    a : ndarray [T, R, P]
    b : ndarray [T, R]
    row_weights : ndarray [R], optional
        Weight of each row kind (e.g. 1/sigma per wrench component).
    block : ndarray [T], optional
        Block id per frame; correlation is only counted within a block.
    max_lag : int
        Lag window (frames) of the HAC estimator; 0 gives the white-noise sandwich.
    rcond : float
        Relative singular-value tolerance below which a direction counts as unidentified.
    """
    t, r, p = a.shape
    w = np.ones(r) if row_weights is None else np.asarray(row_weights, float)
    block = np.zeros(t, int) if block is None else np.asarray(block)
    a_w = a * w[None, :, None]
    b_w = b * w[None, :]
    flat = a_w.reshape(t * r, p)
    scale = np.linalg.norm(flat, axis=0)
    scale[scale == 0] = 1.0
    u, s, vt = np.linalg.svd(flat / scale, full_matrices=False)
    rank = int(np.sum(s > rcond * s[0]))
    s_inv = np.where(s > rcond * s[0], 1.0 / s, 0.0)
    x = (vt.T * s_inv) @ (u.T @ b_w.reshape(-1)) / scale
    e_w = b_w - np.einsum("trp,p->tr", a_w, x)
    bread_inv = ((vt.T * s_inv ** 2) @ vt) / np.outer(scale, scale)
    cov = hac_covariance(a_w, e_w, block, max_lag, bread_inv)
    cond = float(s[0] / s[rank - 1]) if rank else float("inf")
    return LsqResult(x, cov, e_w / w[None, :], s, rank, cond)


def reduce_to_triangle(a: np.ndarray, b: np.ndarray, row_weights: np.ndarray | None = None):
    """``(Rq, z, c)`` with ``||W(a x - b)||^2 = ||Rq x - z||^2 + c``: the problem squeezed to
    P rows (a QR factorisation), so a convex solver works on a P x P problem."""
    t, r, p = a.shape
    w = np.ones(r) if row_weights is None else np.asarray(row_weights, float)
    flat = (a * w[None, :, None]).reshape(t * r, p)
    rhs = (b * w[None, :]).reshape(-1)
    q, rq = np.linalg.qr(flat)
    z = q.T @ rhs
    return rq, z, float(rhs @ rhs - z @ z)
