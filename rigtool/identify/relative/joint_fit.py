"""The relative-motion stage's joint method: Phi_B from the locked postures' Phi_s (with its
covariance) and the swing's eq. 16 rows together, generalised least squares of both sets of
equations, optionally kept inside the per-link pseudo-inertia LMIs. Called by
rigtool.identify.relative.equation_error.resolve_relative with ``method="joint"``.
"""

from __future__ import annotations

import numpy as np

from rigtool.identify.relative.bounds import _consistency_lmis, _phi_s_matrix
from rigtool.lsq import noise_moments, solve_compensated, solve_wls
from rigtool.tree import Tree, j_matrix


def joint_fit(tree: Tree, a_full: np.ndarray, b: np.ndarray, weights, lag: int, probes,
               phi_s: np.ndarray, cov_s: np.ndarray, total_mass_kg: float, consistent: bool,
               n_fit: int):
    """Phi_B from the postures (Phi_s, covariance ``C_s``) and eq. 16 together.

    Eq. 16 alone gives ``x_r`` with HAC covariance ``C_r`` (possibly singular: directions
    the swing does not excite carry no information); the joint estimate minimises
    ``(S phi - phi_s)^T C_s^-1 (S phi - phi_s) + (phi - x_r)^T C_r^+ (phi - x_r)`` (``S`` the
    Phi_B -> Phi_s map), i.e. generalised least squares of both sets of equations, each with
    its own honest covariance (serial correlation and errors in variables included). With
    ``consistent`` the minimiser is kept inside the per-link pseudo-inertia LMIs (cvxpy).
    Returns ``(phi_b, cov, moved)`` or a warning string when it cannot run.
    """
    n = len(tree.links)
    sd = np.sqrt(np.clip(np.diag(cov_s), 0, None))
    if not np.all(np.isfinite(cov_s)) or np.any(sd <= 0):
        return "joint fit needs Phi_s with a covariance; the two-step estimate is reported"
    if probes is not None:
        aa, ab = noise_moments([(probes[0], probes[1], n_fit)], weights)
        fit_r = solve_compensated(a_full, b, aa, ab, row_weights=weights, max_lag=lag)
    else:
        fit_r = solve_wls(a_full, b, row_weights=weights, max_lag=lag)
    # information of the relative-motion fit: pseudo-inverse of its covariance, in a scaled
    # basis so kg m and kg m^2 entries compare (numpy's pinv: the directions the motion does
    # not excite have zero variance and carry no information)
    smat = _phi_s_matrix(n)
    d_s = 1.0 / sd
    info_s = smat.T @ (np.linalg.inv(d_s[:, None] * cov_s * d_s[None, :]) * np.outer(d_s, d_s)) @ smat
    sc = np.sqrt(np.clip(np.diag(fit_r.cov), 0, None))
    sc = np.where(sc > 0, sc, 1.0)
    info_r = np.linalg.pinv(fit_r.cov / np.outer(sc, sc), rcond=1e-10, hermitian=True)
    info_r /= np.outer(sc, sc)
    info = info_s + info_r
    rhs = smat.T @ np.linalg.solve(cov_s, phi_s) + info_r @ fit_r.x
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        return "joint fit: singular information matrix; the two-step estimate is reported"
    x = cov @ rhs
    moved = False
    if consistent:
        import cvxpy as cp
        from rigtool.identify.common.consistency import solve_problem
        try:
            per = x.reshape(n, 9)
            ok_all = True
            for j in range(n):
                jm = j_matrix(per[j, 3:])
                sig = 0.5 * np.trace(jm) * np.eye(3) - jm - np.outer(per[j, :3], per[j, :3]) \
                    / total_mass_kg
                ok_all &= bool(np.linalg.eigvalsh(sig)[0] >= 0)
            if not ok_all:
                scale = np.where(np.abs(x) > 0, np.abs(x), 1.0)
                y = cp.Variable(x.size)
                xv = cp.multiply(scale, y)
                l_chol = np.linalg.cholesky(0.5 * (info + info.T) * np.outer(scale, scale))
                nrm = np.abs(l_chol).max()
                obj = cp.sum_squares((l_chol.T / nrm) @ (y - x / scale))
                solve_problem(cp.Problem(cp.Minimize(obj),
                                         _consistency_lmis(xv, n, total_mass_kg)),
                              y, "consistent joint fit")
                x = np.asarray(scale * y.value, float)
                moved = True
        except np.linalg.LinAlgError:
            pass
    return x, cov, moved


__all__ = ["joint_fit"]
