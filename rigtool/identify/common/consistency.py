"""Physical consistency as a linear matrix inequality (paper 000, Thm. 3), for cvxpy.

A body's ten standard parameters are physically realisable iff its 4x4 pseudo-inertia
``[[Sigma, h], [h^T, m]]`` (``Sigma = tr(I)/2 * 1 - I``) is positive semidefinite. The
matrix is affine in the parameters, so ``pseudo_inertia_expr(pi) >> eps`` is an LMI that
keeps any least-squares fit convex.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rigtool.inertia import pseudo_inertia

if TYPE_CHECKING:                  # cvxpy imported where a convex fit runs (2-3 s)
    import cvxpy as cp

#: Solver used for every convex fit (SPEC: Clarabel).
SOLVER = "CLARABEL"


def pseudo_inertia_expr(pi: cp.Expression) -> cp.Expression:
    """4x4 pseudo-inertia of a 10-vector cvxpy expression (affine in ``pi``)."""
    basis = [pseudo_inertia(np.eye(10)[k]) for k in range(10)]
    return sum(pi[k] * basis[k] for k in range(10))


def consistency_constraints(pi: cp.Expression, *, margin: float = 0.0) -> list[cp.Constraint]:
    """``[J(pi) >> margin * 1]``: the LMI of paper 000 (margin 0 allows the boundary)."""
    j = pseudo_inertia_expr(pi)
    return [0.5 * (j + j.T) >> margin * np.eye(4)]


def solve_triangle(rq: np.ndarray, z: np.ndarray, *, constraints_for, x0: np.ndarray,
                   scale: np.ndarray) -> np.ndarray:
    """``min ||Rq x - z||^2`` subject to ``constraints_for(x)`` (a callable returning cvxpy
    constraints), solved with Clarabel in scaled variables ``x = scale * y``.

    ``x0`` is the unconstrained solution, returned unchanged when it already satisfies the
    constraints to solver precision (avoids needless solver noise).
    """
    import cvxpy as cp
    y = cp.Variable(rq.shape[1])
    x = cp.multiply(scale, y)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(rq @ x - z)), constraints_for(x))
    solve_problem(problem, y, "convex fit")
    return np.asarray(scale * y.value, float)


def solve_problem(problem: cp.Problem, variable: cp.Variable, what: str) -> None:
    """Solve with Clarabel, falling back to SCS; a failure names ``what`` and the status."""
    import cvxpy as cp
    try:
        problem.solve(solver=SOLVER)
    except cp.SolverError:
        problem.solve(solver="SCS", eps=1e-9)
    if variable.value is None:
        raise RuntimeError(f"{what} failed: {problem.status}")
