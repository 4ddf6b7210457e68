"""Levenberg-Marquardt on normal equations: the output-error fits' solver when the Jacobian
is never held whole.

The engine accumulates ``J^T J`` and ``J^T r`` chunk by chunk over the frames (memory of one
chunk, whatever the capture's length), so the solver works on those: Marquardt's scaling by
the diagonal of ``J^T J``, a trial point judged by its cost alone (the cheap primal
simulation), the normal equations recomputed only at accepted points. scipy's
``least_squares`` needs the whole Jacobian (and its SVD), which is what bounded memory rules
out; this is the few lines of the textbook algorithm that replace it. The relative-motion
fits, which do hold their Jacobian, use it too, with box bounds and geodesic acceleration:
its linear algebra is ``J^T J``, where scipy's exact trust region takes the SVD of the whole
Jacobian at every step (2 s for 10^5 rows by 133 columns, against 0.06 s), and scipy has no
geodesic acceleration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

# A fit continued from a converged shorter horizon (or another nearby optimum) starts here:
# the growing-horizon stages and the stage that adds markers are Gauss-Newton's ground, and
# Marquardt's default damping (1e-3 of the scaled diagonal) holds back the weakly determined
# combinations for several iterations (measured on a 120 s posture capture: 6 normal
# equations per stage at 1e-3, 3 at this value, the same estimate to 1e-8 relative).
WARM_LAMBDA = 1e-9
# Damping at or below which a step is taken as Gauss-Newton's for the convergence test.
CONVERGED_LAMBDA = 1e-6
# Largest ratio of two accepted Gauss-Newton steps' cost decreases for which the remaining
# decrease is extrapolated (a contraction of 4x or better: the steps converge).
EXTRAPOLATE_RATIO = 0.25
# Largest ratio of the geodesic acceleration to the velocity step, scaled norms: Transtrum
# and Sethna's acceptance test 2|a|/|v| <= alpha with their recommended alpha = 0.75.
ACCELERATION_RATIO = 0.375
# Step fraction of the finite difference that gives the residual's second derivative along a
# step (:func:`finite_difference_curvature`; Transtrum and Sethna's value).
GEODESIC_H = 0.1


@dataclass(frozen=True)
class Normal:
    """Normal equations at a point: ``cost = r^T r``, ``jtj = J^T J``, ``jtr = J^T r``."""

    cost: float
    jtj: np.ndarray
    jtr: np.ndarray


@dataclass(frozen=True)
class LMResult:
    """``x``, its cost with the last normal equations computed (at ``x``, or at the point
    before the final, converging step), the evaluation counts (costs, normal equations), and
    whether a stopping rule ended the fit (``converged``; False when ``max_iterations`` ran
    out first, the point then being wherever the budget left it)."""

    x: np.ndarray
    normal: Normal
    n_cost: int
    n_normal: int
    converged: bool = True


def levenberg_marquardt(normal_at: Callable[[np.ndarray], Normal],
                        cost_at: Callable[[np.ndarray], float], x0: np.ndarray, *,
                        ftol: float = 1e-8, max_iterations: int = 50,
                        lam0: float = 1e-3, start: Normal | None = None,
                        lower: np.ndarray | None = None,
                        upper: np.ndarray | None = None,
                        curvature_at: Callable[[np.ndarray, np.ndarray], np.ndarray] | None
                        = None) -> LMResult:
    """Minimise ``r(x)^T r(x)`` from ``x0``.

    Parameters
    ----------
    normal_at : callable
        ``x -> Normal`` (cost and normal equations).
    cost_at : callable
        ``x -> cost`` (``inf`` when the model cannot be evaluated there).
    x0 : ndarray
    ftol : float
        Stop when the cost left to gain is below ``ftol`` times the cost: Gauss-Newton's
        step promises less, an accepted step lowered it by less, or an accepted
        Gauss-Newton step's decrease, against the previous one's and its quadratic model's,
        leaves less (:func:`_remaining_below`).
    max_iterations : int
        Trial steps at most.
    lam0 : float
        Starting damping (relative to the scaled diagonal): the default for a start far from
        the minimum, :data:`WARM_LAMBDA` for one near it.
    start : Normal, optional
        The normal equations at ``x0`` when already known.
    lower, upper : ndarray, optional
        Box bounds (``-inf``/``inf`` where there are none; ``x0`` inside). Projected steps:
        an unknown on a bound that the gradient pushes outward is held for that step, the
        others take the damped step, and the trial point is clipped into the box (the step
        judged is the clipped one).
    curvature_at : callable, optional
        ``(x, v) -> J^T r_vv``, with ``r_vv`` the residual's second derivative along the step
        ``v``. Given it, every step carries the geodesic acceleration of Transtrum and Sethna
        (arXiv:1201.5885): ``v + a / 2`` with ``a`` solving the damped normal equations for
        ``-J^T r_vv``, tried when ``|a| <= ACCELERATION_RATIO |v|`` (scaled norms). It bends
        the step along a curved valley of the cost, where the straight damped step has to
        stay short (the long-horizon fits of a many-link swing crawl otherwise: 10^-3 of
        the cost per Jacobian for tens of Jacobians).
    """
    x = np.asarray(x0, float).copy()
    lo = np.full(x.size, -np.inf) if lower is None else np.asarray(lower, float)
    hi = np.full(x.size, np.inf) if upper is None else np.asarray(upper, float)
    x = np.clip(x, lo, hi)
    cur = normal_at(x) if start is None else start
    n_cost, n_normal = 0, int(start is None)
    lam = lam0
    last_drop = None          # the previous accepted Gauss-Newton step's cost decrease
    for _ in range(max_iterations):
        diag = np.maximum(np.diag(cur.jtj), 1e-30)
        scale = 1.0 / np.sqrt(diag)
        # held: on a bound with the descent direction (-jtr) pointing out of the box
        free = ~(((x <= lo) & (cur.jtr > 0)) | ((x >= hi) & (cur.jtr < 0)))
        sf = scale[free]
        a = cur.jtj[np.ix_(free, free)] * sf[:, None] * sf[None, :] + lam * np.eye(sf.size)
        step = np.zeros(x.size)
        try:
            step[free] = -sf * np.linalg.solve(a, cur.jtr[free] * sf)
        except np.linalg.LinAlgError:
            lam *= 10.0
            continue
        step = np.clip(x + step, lo, hi) - x
        predicted = -(2.0 * step @ cur.jtr + step @ cur.jtj @ step)
        gauss_newton = lam <= CONVERGED_LAMBDA
        if gauss_newton and predicted < ftol * cur.cost:
            # at (nearly) Gauss-Newton's step: when even it promises less than ftol of the
            # cost, x is the minimum to that tolerance; no trial needed (at the minimum a
            # trial only meets round-off, and its rejections would raise lam to 1e10 one
            # primal simulation at a time)
            break
        if curvature_at is not None:
            jt_rvv = curvature_at(x, step)
            n_cost += 1
            accel = np.zeros(x.size)
            accel[free] = -sf * np.linalg.solve(a, jt_rvv[free] * sf)
            if not (np.all(np.isfinite(accel)) and np.linalg.norm(accel / scale)
                    <= ACCELERATION_RATIO * np.linalg.norm(step / scale)):
                lam *= 10.0                # the valley bends too sharply for this step
                if lam > 1e10:
                    break
                continue
            # judged by its cost; the convergence tests keep the velocity step's quadratic
            # prediction (the accelerated step's leaves the quadratic model on purpose)
            step = np.clip(x + step + 0.5 * accel, lo, hi) - x
        trial = x + step
        cost = cost_at(trial)
        n_cost += 1
        if np.isfinite(cost) and cost < cur.cost:
            x = trial
            drop = cur.cost - cost
            if drop < ftol * cur.cost or (gauss_newton and _remaining_below(
                    drop, predicted, last_drop, ftol * cur.cost)):
                # converged: the normal equations at the last point are not needed (the
                # caller evaluates what its covariance needs there)
                cur = Normal(cost, cur.jtj, cur.jtr)
                break
            last_drop = drop if gauss_newton else None
            cur = normal_at(x)
            n_normal += 1
            lam = max(lam / 10.0, 1e-12)
        else:
            lam *= 10.0
            if lam > 1e10:
                break
    else:
        return LMResult(x, cur, n_cost, n_normal, converged=False)
    return LMResult(x, cur, n_cost, n_normal)


def finite_difference_curvature(residual: Callable[[np.ndarray], np.ndarray],
                                jacobian: Callable[[np.ndarray], np.ndarray],
                                h: float = GEODESIC_H
                                ) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``curvature_at`` for :func:`levenberg_marquardt` from a problem that holds its
    Jacobian: ``r_vv = (2 / h) ((r(x + h v) - r(x)) / h - J v)`` (Transtrum and Sethna's
    finite difference along the step, one residual evaluation; exact for a residual
    quadratic along ``v``), returned as ``J^T r_vv``. ``residual`` and ``jacobian`` at ``x``
    are the ones the normal equations used (cache them: they are asked again here)."""
    def curvature_at(x: np.ndarray, v: np.ndarray) -> np.ndarray:
        jac = jacobian(x)
        return jac.T @ second_derivative_along(residual(x), residual(x + h * v), jac @ v, h)

    return curvature_at


def second_derivative_along(r_x: np.ndarray, r_step: np.ndarray, j_v: np.ndarray,
                            h: float = GEODESIC_H) -> np.ndarray:
    """``r_vv = (2 / h) ((r(x + h v) - r(x)) / h - J v)`` from the residuals at ``x`` and at
    ``x + h v`` and the directional derivative ``J v`` (rows in any subset, the same in
    all three)."""
    return (2.0 / h) * ((r_step - r_x) / h - j_v)


def _remaining_below(drop: float, predicted: float, last_drop: float | None,
                     tolerance: float) -> bool:
    """Whether the cost left to gain after an accepted Gauss-Newton step is below
    ``tolerance``, judged without the normal equations at the new point.

    Two estimates of what is left, both required small: the step's own miss (its actual
    decrease ``drop`` against the quadratic model's ``predicted``: an exact model leaves
    nothing), and the geometric tail ``drop r / (1 - r)`` of the decreases converging at the
    ratio ``r = drop / last_drop`` of the last two accepted Gauss-Newton steps (linear
    convergence, the slowest Gauss-Newton shows near a minimum with residuals). Measured on
    a 25 s posture: decreases of 8.7e-4, 6.4e-8 and then 5.7e-16 of the cost, so the third
    normal equations (a quarter of the fit's time) only confirmed what this predicts.
    """
    if last_drop is None or last_drop <= 0.0:
        return False
    ratio = drop / last_drop
    if ratio >= EXTRAPOLATE_RATIO:
        return False
    return max(abs(drop - predicted), drop * ratio / (1.0 - ratio)) < tolerance


__all__ = ["Normal", "LMResult", "levenberg_marquardt", "finite_difference_curvature",
           "second_derivative_along", "WARM_LAMBDA",
           "CONVERGED_LAMBDA"]
