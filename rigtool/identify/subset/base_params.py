"""Base parameters of a linear identification model by QR with column pivoting.

The numerical view of identifiability (paper 001, after Gautier): for a regressor ``W``
(rows: equations stacked over samples; columns: parameters) the QR factorisation with
column pivoting ``W P = Q R`` orders the columns so that the first ``r`` are independent
(``|R_ii| > rtol |R_00|``) and the remaining ones are linear combinations of them::

    W[:, dep] = W[:, ind] @ beta        (beta = R11^-1 R12)

so ``W x = W[:, ind] @ (x[ind] + beta @ x[dep])``: the *base parameters* are
``x_base = x[ind] + beta @ x[dep]``, the only combinations the data can determine.
This serves any linear model: the multi-posture equations of a spherical-joint tree, or
a revolute robot's torque regressor.

Columns are equilibrated (scaled to unit norm) before pivoting so the choice does not
depend on units; ``beta`` is returned in the original units. Plain array maths only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg


@dataclass(frozen=True)
class BaseParameters:
    """Which parameters a regressor determines, and how the others group into them.

    Attributes
    ----------
    rank : int
        Number of base parameters.
    independent, dependent : ndarray of int
        Column indices; ``independent[k]`` carries base parameter ``k``.
    beta : ndarray, shape (rank, n_dependent)
        ``x_base = x[independent] + beta @ x[dependent]`` (original units).
    names : list of str
        Names of the original parameters.
    diag_r : ndarray
        ``|R_ii|`` of the equilibrated, pivoted factorisation (relative to the first).
    rtol : float
        Relative tolerance that decided the rank.
    """

    rank: int
    independent: np.ndarray
    dependent: np.ndarray
    beta: np.ndarray
    names: list[str]
    diag_r: np.ndarray
    rtol: float

    def base_values(self, x: np.ndarray) -> np.ndarray:
        """Base-parameter values ``x[ind] + beta @ x[dep]`` of a full parameter vector."""
        x = np.asarray(x, float)
        return x[self.independent] + self.beta @ x[self.dependent]

    def groupings(self, *, rel_tol: float = 1e-9, digits: int = 4) -> list[str]:
        """Readable base parameters, e.g. ``"ZZ1 + 0.25 m2"`` (coefficients below ``rel_tol``
        times the largest in the row are left out)."""
        out = []
        for k, i in enumerate(self.independent):
            row = self.beta[k] if self.beta.size else np.zeros(0)
            big = np.max(np.abs(row)) if row.size else 0.0
            text = self.names[i]
            for c, j in zip(row, self.dependent):
                if big > 0 and abs(c) > rel_tol * max(big, 1.0):
                    text += f" {'+' if c >= 0 else '-'} {abs(c):.{digits}g} {self.names[j]}"
            out.append(text)
        return out

    @property
    def unidentifiable(self) -> list[str]:
        """Parameters that appear in no base parameter (their column is null)."""
        if not self.beta.size:
            return [self.names[j] for j in self.dependent]
        return [self.names[j] for c, j in zip(self.beta.T, self.dependent)
                if not np.any(np.abs(c) > 0)]


def base_parameters(regressor: np.ndarray, names: list[str] | None = None, *,
                    rtol: float = 1e-6) -> BaseParameters:
    """Base parameters of ``regressor`` (``[rows, P]``) by QR with column pivoting.

    Parameters
    ----------
    regressor : ndarray, shape (rows, P)
        Stacked (weighted) regressor; rows are equations, columns parameters.
    names : list of str, optional
        Parameter names (default ``p0, p1, ...``).
    rtol : float
        A pivot ``|R_ii|`` below ``rtol * |R_00|`` counts as zero (the column depends on the
        earlier ones). Rounded data make theoretically dependent columns merely nearly
        dependent; choose ``rtol`` above that rounding level.

    Returns
    -------
    BaseParameters
    """
    w = np.asarray(regressor, float)
    p = w.shape[1]
    names = list(names) if names is not None else [f"p{k}" for k in range(p)]
    if len(names) != p:
        raise ValueError(f"{len(names)} names for {p} columns")
    scale = np.linalg.norm(w, axis=0)
    scale[scale == 0] = 1.0
    _, r, perm = scipy.linalg.qr(w / scale, mode="economic", pivoting=True)
    d = np.abs(np.diag(r))
    rank = int(np.sum(d > rtol * d[0])) if d.size and d[0] > 0 else 0
    ind, dep = perm[:rank], perm[rank:]
    if rank:
        beta_s = scipy.linalg.solve_triangular(r[:rank, :rank], r[:rank, rank:])
    else:
        beta_s = np.zeros((0, dep.size))
    beta = beta_s * scale[dep][None, :] / scale[ind][:, None]
    diag = np.zeros(p)
    diag[:d.size] = d / d[0] if d.size and d[0] > 0 else d
    return BaseParameters(rank, ind, dep, beta, names, diag, rtol)


def row_space_residual(regressor: np.ndarray, functionals: np.ndarray, *,
                       rtol: float = 1e-6) -> np.ndarray:
    """Relative distance of each row of ``functionals`` (``[K, P]``) from the row space of
    ``regressor``: 0 means the combination ``functionals[k] @ x`` is identifiable.

    Both are column-equilibrated with the regressor's column norms first, so the measure is
    unit-free.
    """
    w = np.asarray(regressor, float)
    f = np.atleast_2d(np.asarray(functionals, float))
    scale = np.linalg.norm(w, axis=0)
    scale[scale == 0] = 1.0
    _, s, vt = np.linalg.svd(w / scale, full_matrices=False)
    r = int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0
    u = f / scale                            # the functional in scaled coordinates
    proj = u @ vt[:r].T @ vt[:r]
    norm = np.linalg.norm(u, axis=1)
    return np.linalg.norm(u - proj, axis=1) / np.where(norm > 0, norm, 1.0)
