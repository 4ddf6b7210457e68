"""Per-link, physically consistent parameters of a robot that reproduce its base
parameters and stay closest to the CAD prior in the directions the data cannot see.

Problem (paper 000: the pseudo-inertia LMI and the log-det divergence as the natural
distance between rigid bodies; Lee, Wensing & Park 2019)
---------------------------------------------------------------------------------------
Variables: the stacked standard parameters ``pi`` (``10 n``). For each body its *own* part
(the body minus the links attached to it whose URDF inertials are kept,
:attr:`rigtool.robot.urdf_model.Body.attached`) must be a physical rigid body::

    J(pi_j - a_j) >> 0                                          (pseudo-inertia LMI)

The data: the base parameters ``b = C pi`` with covariance ``S``; their misfit is
``chi2(pi) = (C pi - b)^T S^-1 (C pi - b)``.

1. ``chi2_min = min chi2`` under the LMIs (0 when the estimate is itself realisable);
2. ``min sum_j D(J_j || J0_j)`` under the LMIs and ``chi2 <= chi2_min + tol``, with
   ``D(J || J0) = -log det J + log det J0 + tr(J0^-1 J) - 4`` the log-det (Bregman)
   divergence to the prior's own pseudo-inertia ``J0_j``; ``tol = 0.01 rank`` keeps the
   base parameters within a tenth of their standard errors on average.

Both problems hold the bodies' masses to the weighed total (``sum_j m_j = M``). Solved
with cvxpy and Clarabel (SCS as fallback), in scaled variables (each body's mass scale and a
length of 0.1 m) so the LMIs are well conditioned.

A fit can fail, and a failed fit is never the result: a solver status other than
``optimal`` (an ``optimal_inaccurate`` solution is judged by the chi-square test alone), or a solution that does not reproduce the base parameters within their
standard errors (its ``chi2`` above the 0.999 quantile of chi-square with ``rank`` degrees
of freedom, the test the true parameters pass 999 times in 1000), is replaced by the last
estimate that holds (:func:`prior_on_combinations`): the prior moved onto the identified
combinations (the smallest change in the scaled variables with ``C pi = b``) when that is
physically consistent, else the prior itself with every body's own part scaled to the
weighed mass. :attr:`ConsistentResult.failure` says what failed and why,
:attr:`ConsistentResult.written` what was written.

The result says which standard parameters the data determine on their own (their unit
vector lies in the row space of ``C``) and which took their value from the prior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rigtool.identify.common.consistency import pseudo_inertia_expr, solve_problem
from rigtool.identify.subset.base_params import row_space_residual
from rigtool.inertia import InertialParams, pseudo_inertia
from rigtool.robot.base_parameters import RobotBaseResult
from rigtool.robot.urdf_model import RobotModel

#: chi^2 allowance above the best realisable fit, per base parameter
CHI2_ALLOWANCE = 0.01
#: length scale of the scaled variables, m
LENGTH_SCALE_M = 0.1


@dataclass
class ConsistentResult:
    """Per-link parameters from the base parameters and the prior.

    Attributes
    ----------
    params : list of InertialParams
        Per body (the merged body, about its frame origin, body axes).
    own : list of InertialParams
        Per body, its own link's part (``params`` minus the attached links' URDF values).
    chi2_min, chi2 : float
        The best realisable misfit of the base parameters, and the returned one.
    max_abs_z : float
        Largest ``|C pi - b| / std`` over the base parameters.
    divergence : list of float
        Per body, the log-det divergence of its own part from the prior's.
    source : dict
        Standard parameter -> ``"data"`` (determined by the postures alone) or ``"prior"``.
    status : str
        The solver's status.
    failure : str or None
        What failed and why (None when the fit held and is the result).
    written : str
        ``"fit"`` (the per-link fit), ``"prior on the combinations"`` or ``"prior"`` (its
        fallbacks, see the module docstring).
    chi2_limit : float
        The chi-square test's bound on ``chi2``.
    """

    params: list[InertialParams]
    own: list[InertialParams]
    chi2_min: float
    chi2: float
    max_abs_z: float
    divergence: list[float]
    source: dict[str, str]
    status: str = ""
    warnings: list[str] = field(default_factory=list)
    failure: str | None = None
    written: str = "fit"
    chi2_limit: float = math.inf

    @property
    def held(self) -> bool:
        """True when the per-link fit held and is the result."""
        return self.failure is None

    @property
    def reproduces(self) -> bool:
        """True when the written parameters reproduce the base parameters within their
        standard errors (the chi-square test)."""
        return bool(self.chi2 <= self.chi2_limit)

    def vector(self) -> np.ndarray:
        """The stacked ``10 n`` parameters."""
        return np.concatenate([p.pi for p in self.params])

    def to_json(self, names: list[str]) -> dict:
        """Per body: mass, COM, inertia about the COM (body axes), of the merged body and of
        its own link."""
        def body(p: InertialParams) -> dict:
            ok = p.mass > 0
            return {"mass": p.mass, "com": (p.com if ok else np.zeros(3)).tolist(),
                    "inertia_com": (p.inertia_com if ok else p.inertia_origin).tolist()}
        return {"links": {n: {"body": body(p), "own_link": body(o)}
                          for n, p, o in zip(names, self.params, self.own)},
                "chi2_min": _num(self.chi2_min), "chi2": _num(self.chi2),
                "max_abs_z": _num(self.max_abs_z),
                "divergence": dict(zip(names, map(_num, self.divergence))),
                "from_prior": [k for k, v in self.source.items() if v == "prior"],
                "status": self.status, "warnings": list(self.warnings),
                "held": self.held, "failure": self.failure, "written": self.written,
                "chi2_limit": _num(self.chi2_limit), "reproduces": self.reproduces,
                "total_mass": float(sum(p.mass for p in self.params))}


def _num(x):
    x = float(x)
    return x if math.isfinite(x) else None


def log_det_divergence(j: np.ndarray, j0: np.ndarray) -> float:
    """``D(J || J0) = -log det J + log det J0 + tr(J0^-1 J) - 4`` (inf when J is singular)."""
    s, ld = np.linalg.slogdet(j)
    s0, ld0 = np.linalg.slogdet(j0)
    if s <= 0 or s0 <= 0:
        return float("inf")
    return float(-ld + ld0 + np.trace(np.linalg.solve(j0, j)) - 4.0)


def _regularised_prior(pi_own: np.ndarray, mass_ref: float) -> np.ndarray:
    """The prior's own pseudo-inertia, made positive definite where it is not: a link the
    URDF gives no (or a degenerate) inertial gains a small sphere of 1e-3 of the mean body
    mass (a positive definite prior is kept as it is: it is the divergence's minimiser)."""
    j0 = pseudo_inertia(pi_own)
    d = np.diag([1 / LENGTH_SCALE_M] * 3 + [1.0]) / np.sqrt(mass_ref)
    if np.linalg.eigvalsh(d @ j0 @ d)[0] > 1e-6:
        return j0
    return j0 + 1e-3 * mass_ref * np.diag([LENGTH_SCALE_M ** 2] * 3 + [1.0])


def source_of_parameters(base: RobotBaseResult, *, rtol: float = 1e-7) -> dict[str, str]:
    """Standard parameter -> ``"data"`` when the base parameters determine it alone (its unit
    vector is in the row space of the combinations), else ``"prior"``."""
    c = base.combination
    resid = row_space_residual(c, np.eye(c.shape[1]), rtol=rtol)
    return {n: ("data" if r < 1e-6 else "prior") for n, r in zip(base.parameter_names, resid)}


#: The chi-square test's tail probability (a solution beyond its quantile does not reproduce
#: the base parameters within their standard errors)
CHI2_TEST_ALPHA = 1e-3
#: solver statuses whose solution is judged on its own misfit: Clarabel's "inaccurate"
#: optimum is often the answer a few digits short; the chi-square test below decides whether
#: it reproduces the base parameters (a status such as infeasible has no solution to judge)
ACCEPTED_STATUSES = ("optimal", "optimal_inaccurate")


def _whitened(base: RobotBaseResult) -> tuple[np.ndarray, np.ndarray]:
    """``(W C, W b)`` with ``W^T W = S^-1`` (eigenvalues floored at 1e-12 of the largest)."""
    cov = 0.5 * (base.covariance + base.covariance.T)
    ev, vec = np.linalg.eigh(cov)
    ev = np.maximum(ev, 1e-12 * ev[-1])
    w = (vec / np.sqrt(ev)).T
    return w @ base.combination, w @ base.values


def _realisable(own: np.ndarray) -> bool:
    """Every own part's pseudo-inertia positive semidefinite (to 1e-9 of its largest
    eigenvalue) and its mass positive or zero."""
    for pj in own:
        lam = np.linalg.eigvalsh(pseudo_inertia(pj))
        if lam[0] < -1e-9 * max(abs(lam[-1]), 1e-300):
            return False
    return True


def prior_on_combinations(robot: RobotModel, base: RobotBaseResult, total_mass_kg: float,
                          scale: np.ndarray) -> tuple[np.ndarray, str]:
    """The last estimate that holds when the per-link fit failed (module docstring).

    Returns
    -------
    pi : ndarray (n, 10)
        The merged bodies' parameters.
    written : str
        ``"prior on the combinations"`` or ``"prior"``.
    """
    prior = np.stack([b.prior.pi for b in robot.bodies])
    attached = np.stack([b.attached.pi for b in robot.bodies])
    c, s2 = base.combination, scale.ravel() ** 2
    # min ||(pi - pi0) / s||^2 subject to C pi = b: pi = pi0 + S^2 C^T (C S^2 C^T)^+ r
    r = base.values - c @ prior.ravel()
    gram = (c * s2) @ c.T
    moved = prior.ravel() + s2 * (c.T @ np.linalg.lstsq(gram, r, rcond=1e-12)[0])
    moved = moved.reshape(prior.shape)
    if _realisable(moved - attached):
        return moved, "prior on the combinations"
    own = prior - attached
    own_mass = own[:, 0].sum()
    k = (total_mass_kg - attached[:, 0].sum()) / own_mass if own_mass > 0 else 1.0
    return own * max(k, 0.0) + attached, "prior"


def fit_consistent(robot: RobotModel, base: RobotBaseResult, *,
                   total_mass_kg: float | None = None,
                   allowance: float = CHI2_ALLOWANCE) -> ConsistentResult:
    """Physically consistent per-link parameters (see module docstring).

    Parameters
    ----------
    robot : RobotModel
        Bodies, their priors and attached parts.
    base : RobotBaseResult
        The base parameters (values, covariance, combinations).
    total_mass_kg : float, optional
        The weighed mass, a constraint of both problems (default: the base parameters'
        total mass).
    allowance : float
        chi^2 allowed above the best realisable fit, per base parameter.

    Returns
    -------
    ConsistentResult
        Never a failed fit: see the module docstring for what replaces it.
    """
    import cvxpy as cp
    from scipy.stats import chi2 as chi2_dist

    n = robot.n_bodies
    prior = np.stack([b.prior.pi for b in robot.bodies])
    attached = np.stack([b.attached.pi for b in robot.bodies])
    own_prior = prior - attached
    if total_mass_kg is not None:
        total_mass = float(total_mass_kg)
    else:
        total_mass = (float(base.values[0]) if base.names[0].startswith("m_")
                      else prior[:, 0].sum())
    mass_ref = total_mass / n
    # scaled variables: pi_j = s_j * y_j
    scale = np.zeros((n, 10))
    for j in range(n):
        m = max(prior[j, 0], 0.05 * mass_ref)
        scale[j] = [m] + [m * LENGTH_SCALE_M] * 3 + [m * LENGTH_SCALE_M ** 2] * 6
    y = cp.Variable(10 * n)
    x = cp.multiply(scale.ravel(), y)
    # whitened misfit of the base parameters
    a, b = _whitened(base)
    misfit = cp.sum_squares(a @ x - b)
    lmis, own_exprs = [cp.sum(x[0::10]) == total_mass], []
    for j in range(n):
        own = x[10 * j:10 * j + 10] - attached[j]
        pj = pseudo_inertia_expr(own)
        pj = 0.5 * (pj + pj.T)
        own_exprs.append(pj)
        lmis.append(pj >> 0)
    y0 = (prior / scale).ravel()
    y.value = y0
    limit = float(chi2_dist.ppf(1.0 - CHI2_TEST_ALPHA, max(base.rank, 1)))
    p1 = cp.Problem(cp.Minimize(misfit), lmis)
    try:
        solve_problem(p1, y, "the base parameters' best physically consistent fit")
    except RuntimeError as exc:
        return _fallback(robot, base, total_mass, scale, a, b, limit, np.inf,
                         str(exc), p1.status)
    if p1.status not in ACCEPTED_STATUSES or y.value is None:
        return _fallback(robot, base, total_mass, scale, a, b, limit, np.inf,
                         "the base parameters' best physically consistent fit ended with "
                         f"solver status {p1.status}", p1.status)
    chi2_min = max(float(p1.value), 0.0)
    solver_notes = [] if p1.status == "optimal" else [
        f"the base parameters' best physically consistent fit ended with solver status "
        f"{p1.status}; its chi-square {chi2_min:.4g} bounds the per-link fit, which is "
        "judged on its own misfit below"]
    if chi2_min > limit:
        return _fallback(robot, base, total_mass, scale, a, b, limit, chi2_min,
                         "no physically consistent robot reproduces the base parameters "
                         f"within their standard errors (the best: chi-square {chi2_min:.4g} "
                         f"over {base.rank} combinations, above its 0.999 quantile "
                         f"{limit:.4g})", p1.status)
    bound = chi2_min + allowance * base.rank
    obj = 0
    j0s = []
    for j in range(n):
        j0 = _regularised_prior(own_prior[j], mass_ref)
        j0s.append(j0)
        # log det and trace in the body's own scale (the divergence is scale-free)
        d = np.diag([1 / (scale[j, 0] ** 0.5 * LENGTH_SCALE_M)] * 3 + [1 / scale[j, 0] ** 0.5])
        pj_s = d @ own_exprs[j] @ d
        j0_s = d @ j0 @ d
        obj = obj - cp.log_det(pj_s) + cp.trace(np.linalg.inv(j0_s) @ pj_s)
    p2 = cp.Problem(cp.Minimize(obj), lmis + [misfit <= bound])
    try:
        solve_problem(p2, y, "the per-link fit closest to the prior")
    except RuntimeError as exc:
        return _fallback(robot, base, total_mass, scale, a, b, limit, chi2_min, str(exc),
                         p2.status)
    pi = np.asarray(scale.ravel() * y.value, float).reshape(n, 10)
    warnings = list(solver_notes)
    # the solver's LMI tolerance: project each own part onto the realisable set
    own = pi - attached
    for j in range(n):
        pj = pseudo_inertia(own[j])
        lam, v = np.linalg.eigh(pj)
        if lam[0] < 0:
            pj = (v * np.maximum(lam, 0)) @ v.T
            own[j] = InertialParams.from_pseudo_inertia(pj).pi
    pi = own + attached
    r = a @ pi.ravel() - b
    chi2 = float(r @ r)
    z = (base.combination @ pi.ravel() - base.values) / base.std
    if p2.status not in ACCEPTED_STATUSES:
        return _fallback(robot, base, total_mass, scale, a, b, limit, chi2_min,
                         f"the per-link fit ended with solver status {p2.status}",
                         p2.status)
    if p2.status != "optimal" and chi2 <= limit:
        warnings.append(
            f"the per-link fit ended with solver status {p2.status}; its solution, moved "
            f"onto the consistent set, reproduces the base parameters (chi-square {chi2:.4g} "
            f"over {base.rank} combinations, within the 0.999 quantile {limit:.4g}) and is "
            "kept")
    if chi2 > limit:
        return _fallback(robot, base, total_mass, scale, a, b, limit, chi2_min,
                         f"the per-link fit misses the base parameters (chi-square {chi2:.4g} "
                         f"over {base.rank} combinations, above its 0.999 quantile "
                         f"{limit:.4g}; largest |misfit|/std {np.max(np.abs(z)):.3g})",
                         p2.status)
    div = [log_det_divergence(pseudo_inertia(own[j]), j0s[j]) for j in range(n)]
    return ConsistentResult([InertialParams(p) for p in pi], [InertialParams(o) for o in own],
                            chi2_min, chi2, float(np.max(np.abs(z))), div,
                            source_of_parameters(base), p2.status, warnings,
                            chi2_limit=limit)


def _fallback(robot: RobotModel, base: RobotBaseResult, total_mass: float,
              scale: np.ndarray, a: np.ndarray, b: np.ndarray, limit: float,
              chi2_min: float, why: str, status: str) -> ConsistentResult:
    """The result when the per-link fit failed: :func:`prior_on_combinations`, with the
    failure said."""
    pi, written = prior_on_combinations(robot, base, total_mass, scale)
    attached = np.stack([bd.attached.pi for bd in robot.bodies])
    own = pi - attached
    r = a @ pi.ravel() - b
    z = (base.combination @ pi.ravel() - base.values) / base.std
    what = ("the URDF prior moved onto the identified combinations" if written != "prior"
            else "the URDF prior, each body's own part scaled to the weighed mass (the prior "
                 "moved onto the identified combinations is not physically consistent)")
    text = f"{why}: robot.urdf holds {what} instead"
    prior_own = np.stack([bd.prior.pi - bd.attached.pi for bd in robot.bodies])
    div = [log_det_divergence(pseudo_inertia(own[j]), pseudo_inertia(prior_own[j]))
           for j in range(robot.n_bodies)]
    return ConsistentResult([InertialParams(p) for p in pi], [InertialParams(o) for o in own],
                            chi2_min, float(r @ r), float(np.max(np.abs(z))), div,
                            source_of_parameters(base), status, [text], failure=why,
                            written=written, chi2_limit=limit)


__all__ = ["CHI2_ALLOWANCE", "CHI2_TEST_ALPHA", "ConsistentResult", "prior_on_combinations",
           "log_det_divergence", "source_of_parameters", "fit_consistent"]
