"""Physically consistent variant of the Phi_s fit (paper 000 LMIs, solved with Clarabel).

Per-link standard parameters ``pi_j`` (10 each, about the link origin, link axes) are the
unknowns; their image ``Phi_s = S M pi`` (``M``: minimal-parameter map of the tree, linear
in pi; ``S``: Phi_B -> Phi_s) must fit the whitened posture equations, subject to
``sum m_j = M0`` and a positive semidefinite pseudo-inertia per link. The postures cannot
split masses or the J_yy between links, so a tiny ridge term (1e-8 of the data term, in
column-scaled units) picks one realisable split; the reported Phi_s does not depend on it
to first order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rigtool.errors import RigtoolError
from rigtool.identify.common.consistency import SOLVER, consistency_constraints
from rigtool.identify.subset.fit import phi_s_selector
from rigtool.inertia import InertialParams
from rigtool.tree import Link, Tree, minimal_parameters, phi_b_vector

if TYPE_CHECKING:                  # cvxpy imported where a convex fit runs (2-3 s)
    import cvxpy as cp


def minimal_map(tree: Tree) -> np.ndarray:
    """``M`` (9n x 10n) with ``Phi_B = M @ concat(pi_j)`` (minimal parameters are linear)."""
    n = len(tree.links)
    cols = []
    for k in range(10 * n):
        e = np.zeros(10 * n)
        e[k] = 1.0
        links = tuple(Link(l.name, l.parent, l.joint_center_parent, InertialParams(e[10 * i:10 * i + 10]))
                      for i, l in enumerate(tree.links))
        cols.append(phi_b_vector(minimal_parameters(Tree(links))))
    return np.stack(cols, axis=1)


def consistent_fit(tree: Tree, result, a_w: np.ndarray, b_w: np.ndarray,
                   total_mass_kg: float, *, ridge: float = 1e-8) -> None:
    """Fill ``result.link_params`` and ``result.consistent_values`` (see module notes)."""
    import cvxpy as cp
    n = len(tree.links)
    g = a_w @ phi_s_selector(n) @ minimal_map(tree)              # whitened rows over pi
    scale = np.linalg.norm(g, axis=0)
    scale[scale == 0] = 1.0
    mass_cols = [10 * i for i in range(n)]
    g_s = g / scale
    # The whitened rows are large (|b_w| ~ 1e6 at 0.05 mm marker noise) and the residual at
    # the optimum is O(1): written as ||g pi - b_w||^2 the solver must cancel 1e6 against 1e6
    # and Clarabel then reports a feasible problem "infeasible" (seen on a two-link session).
    # About the unconstrained least-squares solution y_ls (minimum norm) the residual is
    # g_s d + r_ls, both O(1): the same problem, well scaled.
    y_ls = np.linalg.lstsq(g_s, b_w, rcond=None)[0]
    r_ls = g_s @ y_ls - b_w
    d = cp.Variable(10 * n)
    y = y_ls + d
    pi = cp.multiply(1.0 / scale, y)
    data = cp.sum_squares(g_s @ d + r_ls)
    cons = [cp.sum(cp.hstack([pi[c] for c in mass_cols])) == total_mass_kg]
    for i in range(n):
        cons += consistency_constraints(pi[10 * i:10 * i + 10])
    # data is in units of sigma^2; y in column-scaled units, of order |b_w|: the ridge is
    # normalised so that it weighs ``ridge`` against the data term
    per_y = float(b_w @ b_w) / max(10 * n, 1) or 1.0
    prob = cp.Problem(cp.Minimize(data + ridge * cp.sum_squares(y) / per_y), cons)
    status = _solve(prob)
    if d.value is None:
        raise RigtoolError(f"the physically consistent Phi_s fit found no solution ({status}); "
                           "the unconstrained fit stands: run without --consistent, or check "
                           "the postures' standard errors", field="consistent")
    pv = (y_ls + np.asarray(d.value, float)) / scale
    result.link_params = {l.name: pv[10 * i:10 * i + 10] for i, l in enumerate(tree.links)}
    result.consistent_values = phi_s_selector(n) @ minimal_map(tree) @ pv


def _solve(prob: cp.Problem) -> str:
    """Clarabel (interior point), and SCS (first order) when Clarabel reports no solution on
    a problem that is always feasible (any positive split of the weighed mass is): a failure
    there is numerical. Returns the statuses met."""
    import cvxpy as cp
    statuses = []
    for solver in (SOLVER, "SCS"):
        try:
            prob.solve(solver=solver)
        except cp.SolverError as exc:
            statuses.append(f"{solver}: {exc}")
            continue
        statuses.append(f"{solver}: {prob.status}")
        if prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            break
    return "; ".join(statuses)
