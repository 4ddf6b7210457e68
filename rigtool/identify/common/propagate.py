"""First-order (delta-method) propagation of a covariance through a smooth function."""

from __future__ import annotations

from typing import Callable

import numpy as np


def jacobian_fd(fun: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                rel_step: float = 1e-6) -> np.ndarray:
    """Central-difference Jacobian of ``fun`` at ``x`` (steps scaled to each |x_i|)."""
    x = np.asarray(x, float)
    f0 = np.atleast_1d(fun(x))
    jac = np.zeros((f0.size, x.size))
    for i in range(x.size):
        h = rel_step * max(abs(x[i]), 1e-3)
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        jac[:, i] = (np.atleast_1d(fun(xp)) - np.atleast_1d(fun(xm))).ravel() / (2 * h)
    return jac


def propagate(fun: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
              cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fun(x), J cov J^T)`` with ``J`` the Jacobian of ``fun`` at ``x``."""
    jac = jacobian_fd(fun, x)
    return np.atleast_1d(fun(x)).ravel(), jac @ cov @ jac.T
