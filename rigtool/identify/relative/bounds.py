"""The minimal set's structure in the relative-motion stage: ``Phi_B = G Phi_s + H u`` with
``u`` the moving links' ``J_yy`` (paper 002 eq. 15-16), and the physical bounds on ``u``.

A physically consistent link needs ``[[Sigma_j, MS_j], [MS_j^T, M_j]] >> 0`` with the
second-moment matrix ``Sigma_j = tr(J_j)/2 1 - J_j`` and the subtree mass ``M_j``; ``M_j``
is ``M0`` for the base and at most ``M0`` for the others, so ``M0`` gives a necessary
condition for every link (stronger than paper 002 eq. 19, which asks for positive diagonal
entries only). Since ``J_j = D_j + J_yy,j 1``, ``Sigma_j = Sigma(D_j) + J_yy,j / 2 1`` and the
LMI is a lower bound on each link's ``J_yy`` (:func:`link_lower_bounds`, an SDP solved in
closed form; the tests check it against cvxpy). With the sum fixed, every unknown's feasible
interval follows (:func:`feasible_intervals`); an estimate outside it is projected back by a
small QP (:func:`_constrained`), and the joint fit keeps every link inside the LMIs
(:func:`_consistency_lmis`).
"""

from __future__ import annotations

import numpy as np

from rigtool.tree import j_matrix


def describe_interval(lower: float, upper: float, *, digits: int = 4) -> str:
    """A feasible J_yy interval for people to read: ``[lo, hi]``, or, when the lower bound
    lies above the upper one, that it is empty and why (no set of physically consistent
    links has this Phi_s and mass; the estimate is then not bounded)."""
    if lower > upper:
        return (f"empty (lower bound {lower:.{digits}f} above upper {upper:.{digits}f}: no "
                "physically consistent links have this Phi_s and mass)")
    return f"[{lower:.{digits}f}, {upper:.{digits}f}]"


def phi_b_affine(n_links: int) -> tuple[np.ndarray, np.ndarray]:
    """``(G, H)`` with ``Phi_B = G Phi_s + H u``; ``u`` = ``J_yy`` of links 1..n-1.

    ``G`` is ``[9n, 8n+1]``, ``H`` is ``[9n, n-1]``; the base link's ``J_yy`` is
    ``sum.J_yy - sum(u)``.
    """
    g = np.zeros((9 * n_links, 8 * n_links + 1))
    h = np.zeros((9 * n_links, max(n_links - 1, 0)))
    s_col = 8 * n_links
    for j in range(n_links):
        rb, rs = 9 * j, 8 * j
        for k in range(3):                      # MS
            g[rb + k, rs + k] = 1.0
        g[rb + 3, rs + 3] = 1.0                 # J_xx = (J_xx - J_yy) + J_yy
        g[rb + 5, rs + 4] = 1.0                 # J_zz = (J_zz - J_yy) + J_yy
        for k in range(3):                      # yz, zx, xy
            g[rb + 6 + k, rs + 5 + k] = 1.0
        for row in (3, 4, 5):                   # + J_yy of this link
            if j == 0:
                g[rb + row, s_col] = 1.0
                h[rb + row, :] = -1.0
            else:
                h[rb + row, j - 1] = 1.0
    return g, h


def link_lower_bounds(phi_s: np.ndarray, n_links: int, total_mass_kg: float, *,
                      psd_only: bool = False) -> np.ndarray:
    """Smallest ``J_yy`` of each link for which a physically consistent link exists.

    With ``J = D + v 1`` (``D`` from Phi_s, ``v = J_yy``) and ``Sigma = tr(J)/2 1 - J``:
    ``[[Sigma, MS], [MS^T, M0]] >> 0`` iff ``Sigma(D) + v/2 1 - MS MS^T / M0 >> 0`` (Schur
    complement), i.e. ``v >= -2 lambda_min(Sigma(D) - MS MS^T / M0)``. ``psd_only`` asks
    only ``J >> 0`` (``v >= -lambda_min(D)``). Closed form of a one-variable SDP (the tests
    compare it with cvxpy).
    """
    per = np.asarray(phi_s, float)[:8 * n_links].reshape(n_links, 8)
    out = np.zeros(n_links)
    for j in range(n_links):
        ms, (dxx, dzz, yz, zx, xy) = per[j, :3], per[j, 3:]
        d = j_matrix(np.array([dxx, 0.0, dzz, yz, zx, xy]))
        if psd_only:
            out[j] = -np.linalg.eigvalsh(d)[0]
        else:
            sig = 0.5 * np.trace(d) * np.eye(3) - d - np.outer(ms, ms) / total_mass_kg
            out[j] = -2.0 * np.linalg.eigvalsh(sig)[0]
    return out


def feasible_intervals(lower: np.ndarray, sum_jyy: float) -> np.ndarray:
    """``[n-1, 2]`` interval of each moving link's ``J_yy`` given every link's lower bound
    and the fixed sum (the base takes what is left); rows with lo > hi mean no solution."""
    lo_mov = lower[1:]
    hi = sum_jyy - lower[0] - (lo_mov.sum() - lo_mov)
    return np.stack([lo_mov, hi], axis=1)


def _phi_s_matrix(n_links: int) -> np.ndarray:
    """``[8n+1, 9n]`` matrix of the linear map :func:`rigtool.tree.phi_s_from_phi_b`."""
    from rigtool.tree import phi_s_from_phi_b
    return np.stack([phi_s_from_phi_b(e) for e in np.eye(9 * n_links)], axis=1)


def _consistency_lmis(phi_b, n_links: int, total_mass_kg: float) -> list:
    """cvxpy constraints ``[[tr(J)/2 1 - J, MS], [MS^T, M0]] >> 0`` for every link."""
    import cvxpy as cp
    cons = []
    for j in range(n_links):
        v = phi_b[9 * j:9 * j + 9]
        ms = v[:3]
        jm = cp.bmat([[v[3], v[8], v[7]], [v[8], v[4], v[6]], [v[7], v[6], v[5]]])
        sig = 0.5 * cp.trace(jm) * np.eye(3) - jm
        block = cp.bmat([[sig, cp.reshape(ms, (3, 1), order="F")],
                         [cp.reshape(ms, (1, 3), order="F"), np.array([[total_mass_kg]])]])
        cons.append(0.5 * (block + block.T) >> 0)
    return cons


def _inside(u: np.ndarray, lower: np.ndarray, total: float) -> bool:
    return bool(np.all(u >= lower[1:]) and total - u.sum() >= lower[0])


def _constrained(u_ls: np.ndarray, normal: np.ndarray, lower: np.ndarray,
                 total: float) -> np.ndarray:
    """``argmin (u - u_ls)^T N (u - u_ls)`` over the consistent set (a small QP, cvxpy)."""
    import cvxpy as cp
    from rigtool.identify.common.consistency import solve_problem
    scale = np.maximum(np.abs(u_ls), 1e-6)
    y = cp.Variable(len(u_ls))
    uu = cp.multiply(scale, y)
    nn = normal * np.outer(scale, scale)
    nn = 0.5 * (nn + nn.T)
    chol = np.linalg.cholesky(nn / np.abs(nn).max())
    obj = cp.sum_squares(chol.T @ (y - u_ls / scale))
    solve_problem(cp.Problem(cp.Minimize(obj), [uu >= lower[1:], cp.sum(uu) <= total - lower[0]]),
                  y, "consistent J_yy")
    return np.asarray(scale * y.value, float)


__all__ = ["describe_interval", "phi_b_affine", "link_lower_bounds", "feasible_intervals",
           "_phi_s_matrix", "_consistency_lmis", "_inside", "_constrained"]
