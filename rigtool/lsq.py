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
    return hac_from_scores(np.einsum("trp,tr->tp", a_w, e_w), block, max_lag, bread_inv)


def hac_from_scores(scores: np.ndarray, block: np.ndarray, max_lag: int,
                    bread_inv: np.ndarray) -> np.ndarray:
    """Newey-West sandwich from per-frame scores ``[T, P]`` (Bartlett kernel, lags counted
    only within a block).

    The meat ``sum_t sum_u w(t - u) s_t s_u^T`` (``w`` the Bartlett weights, zero across
    blocks) is ``S^T (W S)``: where every block is one run of frames, ``W S`` is one
    convolution per block along the frames (``T P L`` operations, against ``T P^2 L`` for a
    product per lag: the calibration's 5600 frames x 43 parameters at 100 lags took 0.3 s
    that way). A block split over several runs keeps the product per lag.
    """
    block = np.asarray(block)
    if max_lag <= 0:
        return bread_inv @ (scores.T @ scores) @ bread_inv
    edges = np.flatnonzero(block[1:] != block[:-1]) + 1
    starts, stops = np.r_[0, edges], np.r_[edges, block.size]
    if np.unique(block[starts]).size == starts.size:
        from scipy.ndimage import convolve1d   # here: this module otherwise needs only numpy
        lags = np.arange(-max_lag, max_lag + 1)
        kernel = 1.0 - np.abs(lags) / (max_lag + 1.0)
        meat = np.zeros((scores.shape[1], scores.shape[1]))
        for a, b in zip(starts, stops):
            seg = scores[a:b]
            meat += seg.T @ convolve1d(seg, kernel, axis=0, mode="constant", cval=0.0)
        meat = 0.5 * (meat + meat.T)           # symmetric up to round-off
        return bread_inv @ meat @ bread_inv
    meat = scores.T @ scores
    for lag in range(1, max_lag + 1):
        same = block[lag:] == block[:-lag]
        if not np.any(same):
            break
        g = scores[lag:][same].T @ scores[:-lag][same]
        meat += (1.0 - lag / (max_lag + 1.0)) * (g + g.T)
    return bread_inv @ meat @ bread_inv


def _weighted(a: np.ndarray, b: np.ndarray, row_weights: np.ndarray | None):
    """``(w, a_w, b_w, flat)``: rows scaled by their kind's weight (``b`` ``[T, R]`` or
    ``[T, R, K]``); ``flat`` is ``a_w`` as a ``[T*R, P]`` matrix."""
    t, r, p = a.shape
    w = np.ones(r) if row_weights is None else np.asarray(row_weights, float)
    a_w = a * w[None, :, None]
    b_w = b * w.reshape((1, r) + (1,) * (b.ndim - 2))
    return w, a_w, b_w, a_w.reshape(t * r, p)


def _column_scale(flat: np.ndarray) -> np.ndarray:
    """Column norms (1 for empty columns): equilibrates the normal equations."""
    scale = np.linalg.norm(flat, axis=0)
    scale[scale == 0] = 1.0
    return scale


def _scaled_svd(flat: np.ndarray, rcond: float):
    """``(u, s, s_inv, vt, scale)``: the SVD of ``flat`` with its columns equilibrated
    (:func:`_column_scale`), and the inverse singular values with those under ``rcond`` of
    the largest (unidentified directions) set to zero. ``x = (vt.T * s_inv) @ (u.T @ b) /
    scale`` is the least-squares solution for a right-hand side ``b``."""
    scale = _column_scale(flat)
    u, s, vt = np.linalg.svd(flat / scale, full_matrices=False)
    s_inv = np.where(s > rcond * s[0], 1.0 / s, 0.0)
    return u, s, s_inv, vt, scale


def scaled_pinv(normal: np.ndarray) -> np.ndarray:
    """Pseudo-inverse of a symmetric positive semi-definite normal matrix ``J^T J``, taken
    after scaling its rows and columns to a unit diagonal (Jacobi) and scaled back.

    The same inverse as ``np.linalg.pinv`` where the matrix is regular, without the digits
    its unknowns' units cost: the calibration's normal matrix (stiffness in N/m beside
    lengths in m and inertia in kg m^2) has a condition number of 1.3e12, 2.8e3 once scaled,
    and its plain pseudo-inverse carried about 4 good digits (round-off-sized changes of the
    rows moved the covariance by 1e-5 relative). An empty column (zero diagonal) is left
    unscaled.
    """
    d = np.sqrt(np.clip(np.diag(normal), 0.0, None))
    d[d == 0] = 1.0
    inv = np.linalg.pinv(normal / np.outer(d, d), hermitian=True)
    return inv / np.outer(d, d)


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
    t = a.shape[0]
    block = np.zeros(t, int) if block is None else np.asarray(block)
    w, a_w, b_w, flat = _weighted(a, b, row_weights)
    u, s, s_inv, vt, scale = _scaled_svd(flat, rcond)
    rank = int(np.sum(s > rcond * s[0]))
    x = (vt.T * s_inv) @ (u.T @ b_w.reshape(-1)) / scale
    e_w = b_w - np.einsum("trp,p->tr", a_w, x)
    bread_inv = ((vt.T * s_inv ** 2) @ vt) / np.outer(scale, scale)
    cov = hac_covariance(a_w, e_w, block, max_lag, bread_inv)
    cond = float(s[0] / s[rank - 1]) if rank else float("inf")
    return LsqResult(x, cov, e_w / w[None, :], s, rank, cond)


def sensitivity(a: np.ndarray, columns: np.ndarray, *,
                row_weights: np.ndarray | None = None, rcond: float = 1e-10) -> np.ndarray:
    """What the least-squares solution of ``a x = b`` moves by per unit of each column of
    ``columns`` added to ``b``: ``[P, K]``, the regression of each column on ``a`` with the
    weights and rank tolerance of :func:`solve_wls` (so the same unidentified directions are
    left out).

    A term the model leaves out (a "consider" parameter ``c`` of variance ``s^2`` entering
    the data as ``columns c``) biases the solution by ``sensitivity @ c``; its share of the
    solution's covariance is ``S diag(s^2) S^T``.

    Parameters
    ----------
    a : ndarray [T, R, P]
    columns : ndarray [T, R, K]
    row_weights : ndarray [R], optional
    """
    t, r, k = columns.shape
    _, _, cols_w, flat = _weighted(a, columns, row_weights)
    u, _, s_inv, vt, scale = _scaled_svd(flat, rcond)
    return ((vt.T * s_inv) @ (u.T @ cols_w.reshape(t * r, k))) / scale[:, None]


def reduce_to_triangle(a: np.ndarray, b: np.ndarray, row_weights: np.ndarray | None = None):
    """``(Rq, z, c)`` with ``||W(a x - b)||^2 = ||Rq x - z||^2 + c``: the problem squeezed to
    P rows (a QR factorisation), so a convex solver works on a P x P problem."""
    _, _, b_w, flat = _weighted(a, b, row_weights)
    rhs = b_w.reshape(-1)
    q, rq = np.linalg.qr(flat)
    z = q.T @ rhs
    return rq, z, float(rhs @ rhs - z @ z)


def noise_moments(probes: list[tuple[np.ndarray, np.ndarray, float]],
                  row_weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Expected noise moments ``(E[dA^T W^2 dA], E[dA^T W^2 db])`` summed over the fitted rows.

    ``probes``: per capture ``(dA [K, M, R, P], db [K, M, R], n_rows_factor)``, ``K`` noise
    samples over ``M`` frames; the mean per frame is scaled by ``n_rows_factor`` (frames of
    that capture in the fit).
    """
    p = probes[0][0].shape[-1]
    aa, ab = np.zeros((p, p)), np.zeros(p)
    for da, db, n_fit in probes:
        r = da.shape[2]
        w = np.ones(r) if row_weights is None else np.asarray(row_weights, float)
        daw = (da * w[None, None, :, None]).reshape(-1, p)
        dbw = (db * w[None, None, :]).reshape(-1)
        per_frame = 1.0 / (da.shape[0] * da.shape[1])
        aa += n_fit * per_frame * (daw.T @ daw)
        ab += n_fit * per_frame * (daw.T @ dbw)
    return aa, ab


def solve_compensated(a: np.ndarray, b: np.ndarray, noise_aa: np.ndarray, noise_ab: np.ndarray,
                      *, row_weights: np.ndarray | None = None, block: np.ndarray | None = None,
                      max_lag: int = 0, rcond: float = 1e-10) -> LsqResult:
    """Bias-compensated least squares for errors in the regressor.

    With ``A = A0 + dA`` and ``b = b0 + db`` (noise ``dA``, ``db`` from the same measurement),
    ``E[A^T A] = A0^T A0 + E[dA^T dA]`` and ``E[A^T b] = A0^T b0 + E[dA^T db]``, so

        x = (A^T W A - E[dA^T W dA])^-1 (A^T W b - E[dA^T W db])

    is consistent where ordinary least squares is attenuated (Söderström's bias-compensated
    LS). ``noise_aa``/``noise_ab`` come from :func:`noise_moments` with the same weights.
    Covariance: HAC sandwich with the compensated normal matrix as bread and the corrected
    per-frame scores (mean zero at the solution).
    """
    t = a.shape[0]
    block = np.zeros(t, int) if block is None else np.asarray(block)
    w, a_w, b_w, flat = _weighted(a, b, row_weights)
    scale = _column_scale(flat)
    normal = (flat.T @ flat - noise_aa) / np.outer(scale, scale)
    rhs = (flat.T @ b_w.reshape(-1) - noise_ab) / scale
    evals, evecs = np.linalg.eigh(normal)
    top = evals[-1]
    keep = evals > rcond ** 2 * top
    rank = int(keep.sum())
    inv = (evecs[:, keep] / evals[keep]) @ evecs[:, keep].T
    x = (inv @ rhs) / scale
    e_w = b_w - np.einsum("trp,p->tr", a_w, x)
    bread_inv = inv / np.outer(scale, scale)
    scores = np.einsum("trp,tr->tp", a_w, e_w) + (noise_aa @ x - noise_ab)[None, :] / t
    cov = hac_from_scores(scores, block, max_lag, bread_inv)
    sv = np.sqrt(np.clip(evals[::-1], 0.0, None))
    cond = float(sv[0] / sv[rank - 1]) if rank else float("inf")
    return LsqResult(x, cov, e_w / w[None, :], sv, rank, cond)


def compensated_triangle(a: np.ndarray, b: np.ndarray, noise_aa: np.ndarray,
                         noise_ab: np.ndarray, row_weights: np.ndarray | None = None):
    """``(Rq, z)`` with ``x^T N x - 2 r^T x = ||Rq x - z||^2 + const`` for the compensated
    normal equations (``N = L L^T``, ``Rq = L^T``, ``z = L^-1 r``), for the convex solver."""
    _, _, b_w, flat = _weighted(a, b, row_weights)
    normal = flat.T @ flat - noise_aa
    rhs = flat.T @ b_w.reshape(-1) - noise_ab
    chol = np.linalg.cholesky(0.5 * (normal + normal.T))
    return chol.T, np.linalg.solve(chol, rhs)
