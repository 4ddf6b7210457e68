"""A posture's estimate on or near the boundary of the physically consistent bodies.

The posture fit's unknowns for the object are its COM and the log-Cholesky factor of its
COM-centred second moment ``Sigma_c = 1/2 tr(I_c) 1 - I_c`` (rigtool.identify.posture.problem):
every value is a consistent body, and a flat body (one principal second moment zero, the
triangle inequality ``I1 + I2 = I3`` met with equality) is its boundary. There the map's
Jacobian vanishes along the flat axis, and two things go wrong with it:

- a fit that reaches the boundary (from a start clipped onto it, or along the way) has no
  gradient left to leave it, although the data may see the body well inside;
- a covariance taken through the map says the flat axis is known exactly.

So the covariance is taken in the standard parameters themselves (the information the data
carry; ``PostureProblem.physical_columns``), and near the boundary one Gauss-Newton step in
those coordinates (:func:`leave_boundary`) tells whether the data ask for a body inside: the fit
then goes on from there. When they ask for a body outside, the estimate is the constrained
maximum-likelihood one, on the boundary, and :func:`boundary_of` reports it as such: the
second moment along the flat axis is zero, bounded above by the data (a one-sided interval).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from rigtool.engine.params import body_params
from rigtool.identify.common.output_error import gauss_newton_step
from rigtool.inertia import com_and_inertia
from rigtool.identify.posture.problem import PostureProblem, object_to_z

#: A body is near the boundary when its smallest principal second moment is below this
#: share of its largest (a tenth of a percent: a 45 kg plate 2 cm thick sits at 0.1 %;
#: the log-Cholesky gradient along that axis is then that share of the others').
NEAR_BOUNDARY = 1e-3
#: A body is on the boundary when its smallest principal second moment is below this share
#: of the largest (object_to_z's floor for a start that was not consistent).
ON_BOUNDARY = 1e-5
#: Gauss-Newton steps off the boundary, each followed by a fit from where it lands.
MAX_STEPS = 2


def second_moment(inertia_com: np.ndarray) -> np.ndarray:
    """``Sigma_c = 1/2 tr(I_c) 1 - I_c`` (kg m^2): the COM-centred second moment of an inertia
    about the COM (positive semi-definite for a physically consistent body)."""
    i_c = 0.5 * (np.asarray(inertia_com, float) + np.asarray(inertia_com, float).T)
    return 0.5 * np.trace(i_c) * np.eye(3) - i_c


def _body_of(pi9: np.ndarray, mass_kg: float) -> tuple[np.ndarray, np.ndarray]:
    """``(COM, inertia about the COM)`` of ``pi[1:]``."""
    v = com_and_inertia(pi9, mass_kg)
    return v[:3], v[3:].reshape(3, 3)


def _sigma_of_z(z: np.ndarray, mass_kg: float) -> np.ndarray:
    return second_moment(_body_of(body_params(z, mass_kg)[0][1:], mass_kg)[1])


def _relative_floor(sigma: np.ndarray) -> float:
    ev = np.linalg.eigvalsh(sigma)
    return float(ev[0] / max(ev[-1], 1e-300))


def leave_boundary(prob: PostureProblem, x: np.ndarray,
                   refit: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, int]:
    """The fit ``x`` moved off the consistency boundary where the data ask for it.

    Parameters
    ----------
    prob : PostureProblem
        The posture problem at the horizon of ``x`` (its object fitted).
    x : ndarray
        A converged fit.
    refit : callable
        ``refit(x0) -> x``: the fit from a start ``x0`` on the same problem.

    Returns
    -------
    x : ndarray
        The fit after at most :data:`MAX_STEPS` Gauss-Newton steps in the standard parameters
        (each kept only when the fit from it lowers the cost), ``x`` itself when its body is
        not near the boundary or the data ask for one outside the consistent set.
    steps : int
        The steps taken and kept.
    """
    kept = 0
    for _ in range(MAX_STEPS):
        if _relative_floor(_sigma_of_z(x[:9], prob.mass_kg)) >= NEAR_BOUNDARY:
            break
        prob.physical_columns = True
        try:
            ne = prob.normal(x)
        finally:
            prob.physical_columns = False
        step = gauss_newton_step(ne.jtj, ne.jtr) if np.isfinite(ne.cost) else None
        if step is None or not np.all(np.isfinite(step)):
            break
        pi9 = body_params(x[:9], prob.mass_kg)[0][1:] + step[:9]
        com, inertia_com = _body_of(pi9, prob.mass_kg)
        if _relative_floor(second_moment(inertia_com)) < NEAR_BOUNDARY:
            break                  # the data ask for a body outside: the constrained optimum
        start = x + step
        start[:9] = object_to_z(com, inertia_com)
        moved = refit(start)
        if not prob.cost(moved) < prob.cost(x):
            break
        x, kept = moved, kept + 1
    return x, kept


@dataclass(frozen=True)
class Boundary:
    """A posture's body on the consistency boundary (base-link frame).

    Attributes
    ----------
    axis : ndarray (3,)
        The flat axis: the principal axis of the smallest second moment.
    second_moment_kgm2 : float
        The estimate's second moment along it (zero to the fit's floor).
    std_kgm2 : float
        Its standard error from the information the data carry.
    upper_kgm2 : float
        The one-sided upper bound (estimate + 2 standard errors): the second moment along
        the axis lies in ``[0, upper]``.
    """

    axis: np.ndarray
    second_moment_kgm2: float
    std_kgm2: float
    upper_kgm2: float


def boundary_of(inertia_com: np.ndarray, props_cov: np.ndarray) -> Boundary | None:
    """The body ``inertia_com`` (about its COM) as a boundary estimate, or None when it lies
    inside the consistent set (``props_cov``: the 12x12 covariance of ``[COM, inertia_com
    row-major]``)."""
    sigma = second_moment(inertia_com)
    ev, vec = np.linalg.eigh(sigma)
    if ev[0] >= ON_BOUNDARY * max(ev[-1], 1e-300):
        return None
    n = vec[:, 0] * (1.0 if vec[np.argmax(np.abs(vec[:, 0])), 0] >= 0 else -1.0)
    # n^T Sigma n = 1/2 tr(I) - n^T I n: linear in the inertia's nine entries
    a = 0.5 * np.eye(3).ravel() - np.outer(n, n).ravel()
    std = float(np.sqrt(max(a @ np.asarray(props_cov, float)[3:, 3:] @ a, 0.0)))
    value = max(float(ev[0]), 0.0)
    return Boundary(n, value, std, value + 2.0 * std)


def boundary_warning(label: str, boundary: Boundary) -> str:
    """The report's sentence for a posture on the boundary."""
    n = boundary.axis
    return (f"{label}: its inertia lies on the physical-consistency boundary (a flat body as "
            f"this capture sees it): the second moment along the axis ({n[0]:+.2f}, "
            f"{n[1]:+.2f}, {n[2]:+.2f}) of the base-link frame is 0, and the data bound it "
            f"only above, by {boundary.upper_kgm2 * 1e3:.3g} g m² (2 standard errors): the "
            "two inertias about the axes across it are one-sided to that amount. A longer "
            "capture, or one that rocks the platform about axes across that axis, sees it")


__all__ = ["Boundary", "boundary_of", "boundary_warning", "leave_boundary", "second_moment",
           "NEAR_BOUNDARY", "ON_BOUNDARY"]
