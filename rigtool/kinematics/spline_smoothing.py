"""The smoothing of a cubic smoothing spline: generalised cross-validation and the
discrepancy principle, for several series on the same abscissae at once.

scipy's ``make_smoothing_spline`` fits the spline that minimises
``sum (y_i - f(x_i))^2 + lam * int f''^2``; with ``lam=None`` it chooses ``lam`` by
generalised cross-validation but does not return it, its criterion is evaluated by a Python
loop over the samples (~35 ms a value at 1 500 samples), and its bounded scalar search on
``lam`` in (0, n), linear, misses the small values a densely sampled smooth motion needs
(seen: a nearly straight line through a 40 deg limb motion). Written here, because no
library gives the choice itself vectorised: the same criterion in Reinsch's form (Green &
Silverman 1994, ch. 2),

    (R + lam Q^T Q) gamma = Q^T y,      y - f(x) = lam Q gamma,
    tr(I - A) = lam tr((R + lam Q^T Q)^-1 Q^T Q),
    GCV(lam) = n |y - f(x)|^2 / tr(I - A)^2,

(``Q`` the n x (n-2) second divided differences, ``R`` tridiagonal), the banded systems by
LAPACK and the central bands of the inverse by Hutchinson & de Hoog's (1985) backward
recursion, vectorised over every series and trial value; the minimum is found on a grid in
``log10(lam)`` and refined by golden-section search. The ``lam`` returned is scipy's (the
same objective), so ``make_smoothing_spline(x, y, lam=lam)`` draws the spline.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve_banded, cholesky_banded

#: the search range of log10(lam) (time in s; wide enough for 50-1000 Hz frames)
LOG_LAM_RANGE = (-16.0, 6.0)
#: grid step in log10(lam) before the golden-section refinement
_GRID_STEP = 0.5
#: final width of the golden-section bracket in log10(lam)
_LOG_LAM_TOL = 1e-4
_GOLD = (np.sqrt(5.0) - 1.0) / 2.0


class _Reinsch:
    """The banded matrices of Reinsch's form for abscissae ``x [n]`` (strictly increasing)."""

    def __init__(self, x: np.ndarray):
        x = np.asarray(x, float)
        h = np.diff(x)
        if x.size < 5 or np.any(h <= 0):
            raise ValueError("a smoothing spline needs at least 5 strictly increasing abscissae")
        self.n = x.size
        # column j of Q (j = 0 .. n-3): rows j, j+1, j+2
        self.q0, self.q2 = 1.0 / h[:-1], 1.0 / h[1:]
        self.q1 = -(self.q0 + self.q2)
        # R: diagonal and first super-diagonal
        self.r0 = (h[:-1] + h[1:]) / 3.0
        self.r1 = h[1:-1] / 6.0
        # Q^T Q: diagonal, first and second super-diagonals
        self.g0 = self.q0 ** 2 + self.q1 ** 2 + self.q2 ** 2
        self.g1 = self.q1[:-1] * self.q0[1:] + self.q2[:-1] * self.q1[1:]
        self.g2 = self.q2[:-2] * self.q0[2:]

    def qt(self, y: np.ndarray) -> np.ndarray:
        """``Q^T y`` for ``y [n, S]``."""
        return (self.q0[:, None] * y[:-2] + self.q1[:, None] * y[1:-1]
                + self.q2[:, None] * y[2:])

    def q(self, g: np.ndarray) -> np.ndarray:
        """``Q gamma`` for ``gamma [n-2, S]``."""
        out = np.zeros((self.n, g.shape[1]))
        out[:-2] += self.q0[:, None] * g
        out[1:-1] += self.q1[:, None] * g
        out[2:] += self.q2[:, None] * g
        return out

    def factors(self, lam: float) -> np.ndarray:
        """Upper Cholesky factor of ``R + lam Q^T Q`` in LAPACK's banded storage ``[3, n-2]``."""
        m = self.n - 2
        ab = np.zeros((3, m))
        ab[2] = self.r0 + lam * self.g0
        ab[1, 1:] = self.r1 + lam * self.g1
        ab[0, 2:] = lam * self.g2
        return cholesky_banded(ab, lower=False)

    def residuals(self, y: np.ndarray, lams: np.ndarray) -> tuple[np.ndarray, list]:
        """``y - f(x)`` ``[n, S]`` of each series ``y[:, s]`` smoothed with ``lams[s]``, and
        the factors."""
        qty = self.qt(y)
        facs = [self.factors(float(lam)) for lam in lams]
        gam = np.stack([cho_solve_banded((c, False), qty[:, s]) for s, c in enumerate(facs)],
                       axis=1)
        return self.q(gam) * lams[None, :], facs

    def trace_residual_operator(self, lams: np.ndarray, facs: list) -> np.ndarray:
        """``tr(I - A)`` per value: ``lam tr(S Q^T Q)`` with the three central bands of
        ``S = (R + lam Q^T Q)^-1`` from its Cholesky factor ``U`` (``S = U^-1 U^-T``), by
        the backward recursion ``U_ii S_ij = delta_ij / U_ii - U_i,i+1 S_i+1,j - U_i,i+2
        S_i+2,j`` for j = i+2, i+1, i, vectorised over the values."""
        m = self.n - 2
        u = np.stack(facs, axis=-1)                    # [3, m, L]
        u0, u1, u2 = u[2], np.zeros_like(u[2]), np.zeros_like(u[2])
        u1[:-1], u2[:-2] = u[1, 1:], u[0, 2:]          # U_i,i+1 and U_i,i+2 on row i
        s0 = np.zeros((m + 2, len(lams)))              # S_ii (two rows of zeros past the end)
        s1 = np.zeros((m + 2, len(lams)))              # S_i,i+1
        s2 = np.zeros((m + 2, len(lams)))              # S_i,i+2
        # a Python loop over the samples: each row needs the next two (a sequential
        # recursion: no array form), so it runs once for every series and value at once
        for i in range(m - 1, -1, -1):
            a, b, c = u0[i], u1[i], u2[i]
            s2[i] = -(b * s1[i + 1] + c * s0[i + 2]) / a
            s1[i] = -(b * s0[i + 1] + c * s1[i + 1]) / a
            s0[i] = (1.0 / a - b * s1[i] - c * s2[i]) / a
        tr = (self.g0 @ s0[:m] + 2.0 * (self.g1 @ s1[:m - 1]) + 2.0 * (self.g2 @ s2[:m - 2]))
        return lams * tr

    def gcv(self, y: np.ndarray, lams: np.ndarray) -> np.ndarray:
        """GCV of each series ``y[:, s]`` at ``lams[s]``."""
        res, facs = self.residuals(y, lams)
        tr = self.trace_residual_operator(lams, facs)
        return self.n * np.sum(res ** 2, axis=0) / tr ** 2


def gcv_lambda(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The smoothing ``lam`` that minimises generalised cross-validation, per series.

    Parameters
    ----------
    x : ndarray [n]
        Strictly increasing abscissae (s), n >= 5.
    y : ndarray [n] or [n, S]
        The series.

    Returns
    -------
    ndarray [S] (or a float for 1-D ``y``)
        ``lam`` in scipy's ``make_smoothing_spline`` convention.
    """
    y2 = np.asarray(y, float).reshape(len(x), -1)
    rf = _Reinsch(x)
    s_n = y2.shape[1]
    grid = np.arange(LOG_LAM_RANGE[0], LOG_LAM_RANGE[1] + 1e-9, _GRID_STEP)
    # every series at every grid value in one pass
    lanes_y = np.repeat(y2, grid.size, axis=1)
    lanes_l = np.tile(10.0 ** grid, s_n)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = rf.gcv(lanes_y, lanes_l).reshape(s_n, grid.size)
    v = np.where(np.isfinite(v), v, np.inf)
    best = np.argmin(v, axis=1)
    lo = grid[np.clip(best - 1, 0, grid.size - 1)]
    hi = grid[np.clip(best + 1, 0, grid.size - 1)]
    # golden-section search in log10(lam), every series in lockstep
    a, b = lo.copy(), hi.copy()
    c, d = b - _GOLD * (b - a), a + _GOLD * (b - a)
    fc, fd = rf.gcv(y2, 10.0 ** c), rf.gcv(y2, 10.0 ** d)
    while np.max(b - a) > _LOG_LAM_TOL:
        left = fc < fd                                  # the minimum is in [a, d]
        b = np.where(left, d, b)
        a = np.where(left, a, c)
        new = np.where(left, b - _GOLD * (b - a), a + _GOLD * (b - a))
        fn = rf.gcv(y2, 10.0 ** new)
        c, d, fc, fd = (np.where(left, new, d), np.where(left, c, new),
                        np.where(left, fn, fd), np.where(left, fc, fn))
    lam = 10.0 ** (0.5 * (a + b))
    return lam if np.ndim(y) > 1 else float(lam[0])


def smoothing_residuals(x: np.ndarray, y: np.ndarray, lams: np.ndarray) -> np.ndarray:
    """``y - f(x)`` ``[n, S]`` of each series ``y[:, s]`` smoothed with ``lams[s]`` (what
    ``make_smoothing_spline(x, y[:, s], lam=lams[s])`` leaves, without drawing the spline).
    """
    y2 = np.asarray(y, float).reshape(len(x), -1)
    lam = np.broadcast_to(np.asarray(lams, float), (y2.shape[1],))
    return _Reinsch(x).residuals(y2, lam)[0]


def discrepancy_lambda(x: np.ndarray, y: np.ndarray, residual_norm: np.ndarray) -> np.ndarray:
    """The smoothing whose residual norm ``|y - f(x)|`` equals ``residual_norm``, per series
    (the discrepancy principle: the norm grows monotonically with ``lam``; bisection on
    ``log10(lam)`` over :data:`LOG_LAM_RANGE`).

    Parameters
    ----------
    x : ndarray [n]
    y : ndarray [n] or [n, S]
    residual_norm : float or ndarray [S]

    Returns
    -------
    ndarray [S] (or a float for 1-D ``y``)
    """
    y2 = np.asarray(y, float).reshape(len(x), -1)
    target = np.broadcast_to(np.asarray(residual_norm, float), (y2.shape[1],))
    rf = _Reinsch(x)
    lo = np.full(y2.shape[1], LOG_LAM_RANGE[0])
    hi = np.full(y2.shape[1], LOG_LAM_RANGE[1])
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        below = np.linalg.norm(rf.residuals(y2, 10.0 ** mid)[0], axis=0) < target
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    lam = 10.0 ** (0.5 * (lo + hi))
    return lam if np.ndim(y) > 1 else float(lam[0])


__all__ = ["gcv_lambda", "discrepancy_lambda", "smoothing_residuals", "LOG_LAM_RANGE"]
