"""Relative-motion stage: the remaining ``J_yy`` terms and the full minimal set Phi_B
(paper 002 section 2.2, eq. 13-20).

Physics
-------
While the links move relative to the base and the platform vibrates, the Newton-Euler balance
of everything the springs carry, about the platform origin in platform axes, reads per frame::

    Y_p pi_platform + sum_j X_j Y_j pi_j = w_springs

with ``Y_j`` the rigid-body regressor of link j in its own axes about its origin (filtered
motion of that link) and ``X_j`` the wrench transform from link j (axes, origin) to the
platform. With spherical joints each child's origin is its joint centre, which it shares
with its parent: a point mass at that point contributes the same wrench whichever of the two
carries it. Moving every child's subtree mass onto its joint (the parent) therefore changes
nothing, and leaves exactly the minimal parameters (eq. 1-3)::

    pi_base = [M0, MS_0, J_0],   pi_j = [0, MS_j, J_j]   (every non-base link)

so the equation is linear in ``M0`` (weighed) and ``Phi_B`` (eq. 15-16). With ``Phi_s`` from
the locked postures, ``Phi_B = G Phi_s + H u`` where ``u`` are the ``J_yy`` of the moving
links (the base's follows from ``sum.J_yy``), and ``u`` is a small least-squares problem.

The parts: the regression rows from a capture (rigtool.identify.relative.regression), the
map ``Phi_B = G Phi_s + H u`` and the physical bounds on ``u``
(rigtool.identify.relative.bounds); here, the fit itself (:func:`resolve_relative`: two-step
or joint with the postures, errors-in-variables compensated, HAC covariance).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.config import FilterSettings
from rigtool.errors import IdentifiabilityError
from rigtool.lsq import noise_moments, solve_compensated, solve_wls
from rigtool.identify.posture.equation_error import (dual_metric_rows, spatial_inertia_basis,
                                                     transform_matrix)
from rigtool.identify.common.platform_motion import row_names
from rigtool.identify.relative.bounds import (_constrained, _inside, feasible_intervals,
                                              link_lower_bounds, phi_b_affine)
from rigtool.identify.relative.joint_fit import joint_fit
from rigtool.identify.relative.regression import RelativeSystem, relative_system
from rigtool.inertia import InertialParams
from rigtool.mocap import MarkerData
from rigtool.rig import Rig
from rigtool.tree import Tree, j_matrix, overall_from_phi_b, phi_b_names
WEIGHTINGS = ("noise", "plain", "dual-metric")
METHODS = ("two-step", "joint")


# ----------------------------------------------------------------------------------------
# The stage
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RelativeResult:
    """Outcome of the relative-motion stage (see :func:`resolve_relative`).

    ``resolved``/``std``/``bounds``: the moving links' ``J_yy`` (names ``link.J_yy``) with
    standard errors and feasible intervals; ``names``/``values``/``std_phi_b``/
    ``covariance``: the full Phi_B. ``figure`` holds eq. 16's two sides over time
    (``time_s``, ``lhs``, ``rhs`` ``[T, R]``, ``rows``) for :func:`plot_relative`.
    """

    resolved: dict[str, float]
    std: dict[str, float]
    bounds: dict[str, tuple[float, float]]
    names: list[str]
    values: np.ndarray
    std_phi_b: np.ndarray
    covariance: np.ndarray
    minimal_parameters: dict[str, dict]
    residual_rms: dict[str, float]
    on_bound: list[str]
    warnings: list[str]
    figure: dict
    unconstrained: dict[str, float] = field(default_factory=dict)
    compensated: bool = False
    weighting: str = "noise"
    method: str = "two-step"

    def to_json(self) -> dict:
        """Plain-JSON summary (no time series)."""
        return {"resolved": self.resolved, "std": self.std,
                "bounds": {k: list(v) for k, v in self.bounds.items()},
                "phi_b": {"names": self.names, "values": self.values.tolist(),
                          "std": self.std_phi_b.tolist()},
                "minimal_parameters": {k: {"MS": v["MS"].tolist(), "J": v["J"].tolist()}
                                       for k, v in self.minimal_parameters.items()},
                "residual_rms": self.residual_rms, "on_bound": self.on_bound,
                "unconstrained": self.unconstrained, "compensated": self.compensated,
                "weighting": self.weighting, "method": self.method,
                "warnings": self.warnings}


def _noise_probe_rows(tree, rig, platform, system: RelativeSystem, markers, total_mass_kg,
                      settings, window, spring_model, sigma_m: float, n_probes: int, seed: int):
    """``(dA [K, M, R, P], db [K, M, R], ok)`` over frames usable in every probe: the same
    pipeline run on markers rebuilt noise-free and with fresh noise of the capture's level."""
    clean = system.clean_markers
    rng = np.random.default_rng(seed)
    pose = (system.base_rotation_platform, system.base_position_platform)
    systems = []
    for k in range(n_probes + 1):
        xyz = clean.xyz_m if k == 0 else clean.xyz_m + rng.normal(0.0, sigma_m,
                                                                  clean.xyz_m.shape)
        d = MarkerData(time_s=clean.time_s, names=clean.names, xyz_m=xyz,
                       rate_hz=clean.rate_hz, source=clean.source)
        systems.append(relative_system(tree, rig, platform, d, markers, total_mass_kg,
                                       settings, window=window, spring_model=spring_model,
                                       base_pose=pose))
    ok = system.ok.copy()
    for s in systems:
        ok &= s.ok
    da = np.stack([s.a_phi_b[ok] - systems[0].a_phi_b[ok] for s in systems[1:]])
    db = np.stack([s.b[ok] - systems[0].b[ok] for s in systems[1:]])
    return da, db


def dual_metric_factor(tree: Tree, platform: InertialParams, phi_s: np.ndarray,
                       system: RelativeSystem, total_mass_kg: float) -> np.ndarray:
    """``L^T`` (6x6) with ``L L^T = Lambda^-1``: the dual metric of paper 004 for eq. 16's rows.

    ``Lambda`` is the spatial inertia of the vibrating assembly (platform plus the object in
    the capture's mean posture) about the platform origin, platform axes, as the rows are
    written. Weighting a residual wrench ``r`` by ``r^T Lambda^-1 r`` measures it by the
    acceleration it would cause: the fit no longer depends on the units of force and torque
    nor on the reference point. The object's inertia in any posture needs only Phi_s (each
    link's ``J_yy 1`` term is rotation-invariant, so only ``sum.J_yy`` enters), so the metric
    is known before the ``J_yy`` are; it is held fixed (an affine LMI is not needed).
    """
    g_mat, _ = phi_b_affine(len(tree.links))
    rotations = dict(system.link_rotations_base or {})
    obj_base = overall_from_phi_b(tree, rotations, g_mat @ phi_s, total_mass_kg)
    t_base = transform_matrix(system.base_rotation_platform, system.base_position_platform)
    pi = np.asarray(platform.pi, float) + t_base @ obj_base.pi
    return dual_metric_rows(np.einsum("k,kij->ij", pi, spatial_inertia_basis()))


def resolve_relative(tree: Tree, rig: Rig, platform: InertialParams, data: MarkerData,
                     link_markers: dict[str, dict[str, np.ndarray]], subset,
                     total_mass_kg: float, settings: FilterSettings,
                     window: tuple[float, float] | None = None, *,
                     weighting: str = "noise", compensate: bool = True, n_probes: int = 2,
                     spring_model: str = "exact", consistent: bool = True,
                     method: str = "two-step", seed: int = 0) -> RelativeResult:
    """Resolve the moving links' ``J_yy`` from a relative-motion capture (two-step method).

    Parameters
    ----------
    tree : Tree
        The object (joint centres needed).
    rig : Rig
        Calibrated rig.
    platform : InertialParams
        Calibrated platform parameters (platform frame, about its origin).
    data : MarkerData
        The relative-motion capture (platform, base and link markers).
    link_markers : dict
        Link name -> marker name -> coordinates in the link frame, m.
    subset : SubsetResult
        Phi_s from the locked postures (``names``, ``values``, ``covariance``).
    total_mass_kg : float
        Weighed mass ``M0``.
    settings : FilterSettings
        The session's filter.
    window : (t0, t1), optional
        Analysis window, s.
    weighting : {"noise", "plain", "dual-metric"}
        Rows weighted by 1/sigma per wrench component from a first pass, as they come, or
        by the dual metric of paper 004 (:func:`dual_metric_factor`; needs every DOF free,
        else noise weighting is used with a warning).
    compensate : bool
        Bias-compensated least squares from noise probes over all markers (errors in
        variables).
    consistent : bool
        Keep the estimate inside the physically consistent interval (constrained LS).
    method : {"two-step", "joint"}
        ``"two-step"`` (paper 002): Phi_s fixed at the postures' estimate, the ``J_yy`` by
        least squares, Phi_s's covariance propagated. ``"joint"``: every entry of Phi_B from
        the postures' Phi_s (with its covariance) and the relative-motion equations together,
        each weighted by its own covariance (rigtool.identify.relative.joint_fit); the swing then also
        refines Phi_s. Falls back to two-step (with a warning) when Phi_s has no usable
        covariance.

    Returns
    -------
    RelativeResult

    Raises
    ------
    IdentifiabilityError
        If the subset is not fully identified, or the motion does not excite the ``J_yy``.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    n = len(tree.links)
    names_b = phi_b_names(tree)
    phi_s = np.asarray(subset.values, float)
    cov_s = np.asarray(subset.covariance, float)
    if phi_s.shape[0] != 8 * n + 1 or not np.all(np.isfinite(phi_s)):
        raise IdentifiabilityError("the relative-motion stage needs the whole subset Phi_s "
                                   "identified by the locked postures")
    g_mat, h_mat = phi_b_affine(n)
    unknown = [f"{l.name}.J_yy" for l in tree.links[1:]]
    warnings: list[str] = []
    system = relative_system(tree, rig, platform, data, link_markers, total_mass_kg, settings,
                             window=window, spring_model=spring_model)
    warnings += list(system.warnings)
    ok = system.ok
    rows_lt = None                      # dual metric: rows premultiplied by L^T
    if weighting == "dual-metric":
        if rig.locked_dofs:
            warnings.append("dual-metric weighting needs all six DOFs free; used noise "
                            "weighting")
            weighting = "noise"
        else:
            rows_lt = dual_metric_factor(tree, platform, phi_s, system, total_mass_kg)
    a_full = system.a_phi_b[ok]
    b_sys = system.b[ok]
    if rows_lt is not None:
        a_full = np.einsum("ij,tjk->tik", rows_lt, a_full)
        b_sys = b_sys @ rows_lt.T
    a = a_full @ h_mat                                         # [T, R, n-1]
    b = b_sys - a_full @ (g_mat @ phi_s)
    lag = system.correlation_frames
    first = solve_wls(a, b, max_lag=lag)
    weights = None
    if weighting == "noise":
        sig = np.sqrt(np.mean(first.residual ** 2, axis=0))
        weights = 1.0 / np.where(sig > 0, sig, 1.0)
    fit = None
    compensated = False
    probes_full = None
    if compensate:
        sigmas = [v for v in system.marker_sigma_m.values() if np.isfinite(v) and v > 0]
        if sigmas:
            da_full, db_full = _noise_probe_rows(
                tree, rig, platform, system, link_markers, total_mass_kg, settings, window,
                spring_model, float(np.median(sigmas)), n_probes, seed)
            if rows_lt is not None:
                da_full = np.einsum("ij,kmjp->kmip", rows_lt, da_full)
                db_full = db_full @ rows_lt.T
            probes_full = (da_full, db_full)
            da = da_full @ h_mat
            db = db_full - da_full @ (g_mat @ phi_s)
            aa, ab = noise_moments([(da, db, int(ok.sum()))], weights)
            fit = solve_compensated(a, b, aa, ab, row_weights=weights, max_lag=lag)
            compensated = fit.rank == a.shape[2]
            if not compensated:
                fit = None
    if fit is None:
        fit = solve_wls(a, b, row_weights=weights, max_lag=lag)
    if fit.rank < a.shape[2]:
        raise IdentifiabilityError(
            "the relative motion does not excite every moving link's J_yy (rank "
            f"{fit.rank} of {a.shape[2]}); move each link about more than one axis")
    # Phi_s uncertainty: u depends on phi_s through b; du/dphi_s = -(A^T W A)^-1 A^T W A_full G
    wr = np.ones(a.shape[1]) if weights is None else weights
    aw = a * wr[None, :, None]
    afw = a_full * wr[None, :, None]
    normal = np.einsum("trp,trq->pq", aw, aw)
    sens = -np.linalg.solve(normal, np.einsum("trp,trq->pq", aw, afw @ g_mat))
    cov_u = fit.cov + sens @ cov_s @ sens.T
    u_ls = fit.x.copy()
    lower = link_lower_bounds(phi_s, n, total_mass_kg)
    intervals = feasible_intervals(lower, phi_s[-1])
    u = u_ls.copy()
    on_bound: list[str] = []
    if np.any(intervals[:, 0] > intervals[:, 1]):
        warnings.append("Phi_s admits no physically consistent set of links (the J_yy "
                        "intervals are empty); the unconstrained estimate is reported")
    elif consistent and not _inside(u_ls, lower, phi_s[-1]):
        u = _constrained(u_ls, normal, lower, phi_s[-1])
        scale = np.maximum(np.abs(intervals).max(axis=1), 1e-12)
        on_bound = [unknown[k] for k in range(len(u))
                    if min(abs(u[k] - intervals[k, 0]), abs(u[k] - intervals[k, 1]))
                    < 1e-6 * scale[k]]
        if not on_bound:
            on_bound = [f"{tree.links[0].name}.J_yy"]
        warnings.append("the least-squares J_yy lie outside the physically consistent set; "
                        "the estimate was moved onto its boundary ("
                        + ", ".join(on_bound) + ")")
    phi_b = g_mat @ phi_s + h_mat @ u
    jac = np.concatenate([g_mat + h_mat @ sens, h_mat], axis=1)
    # cov of [phi_s, u_noise]: phi_s and the LS noise are independent
    big = np.zeros((jac.shape[1], jac.shape[1]))
    big[:8 * n + 1, :8 * n + 1] = cov_s
    big[8 * n + 1:, 8 * n + 1:] = fit.cov
    cov_b = jac @ big @ jac.T
    std_u = np.sqrt(np.clip(np.diag(cov_u), 0, None))
    if method == "joint":
        joint = joint_fit(tree, a_full, b_sys, weights, lag, probes_full if compensated
                           else None, phi_s, cov_s, total_mass_kg, consistent, int(ok.sum()))
        if isinstance(joint, str):
            warnings.append(joint)
        else:
            phi_b, cov_b, moved = joint
            if moved:
                warnings.append("the joint estimate was moved onto the physically consistent "
                                "set (pseudo-inertia LMI with mass M0 per link)")
            per_b = phi_b.reshape(n, 9)
            u = per_b[1:, 4].copy()
            jyy = np.array([9 * i + 4 for i in range(1, n)])
            std_u = np.sqrt(np.clip(np.diag(cov_b)[jyy], 0, None))
            on_bound = []
    std_b = np.sqrt(np.clip(np.diag(cov_b), 0, None))
    lhs = np.full(system.b.shape, np.nan)
    rhs = np.full(system.b.shape, np.nan)
    lhs[ok] = system.b[ok]
    rhs[ok] = system.a_phi_b[ok] @ phi_b
    resid = (lhs - rhs)[ok]
    rows = row_names(rig)
    rms = _eq16_rms(resid, rows)
    per = phi_b.reshape(n, 9)
    minimal = {l.name: {"MS": per[i, :3].copy(), "J": j_matrix(per[i, 3:])}
               for i, l in enumerate(tree.links)}
    return RelativeResult(
        resolved={k: float(v) for k, v in zip(unknown, u)},
        std={k: float(v) for k, v in zip(unknown, std_u)},
        bounds={k: (float(iv[0]), float(iv[1])) for k, iv in zip(unknown, intervals)},
        names=names_b, values=phi_b, std_phi_b=std_b, covariance=cov_b,
        minimal_parameters=minimal, residual_rms=rms, on_bound=on_bound, warnings=warnings,
        figure={"time_s": system.time_s, "lhs": lhs, "rhs": rhs, "rows": rows,
                "a_phi_b": system.a_phi_b},
        unconstrained={k: float(v) for k, v in zip(unknown, u_ls)}, compensated=compensated,
        weighting=weighting, method=method)


def _eq16_rms(resid: np.ndarray, rows: list[str]) -> dict[str, float]:
    fr = [k for k, r in enumerate(rows) if r.startswith("f")]
    tr = [k for k, r in enumerate(rows) if r.startswith("n")]
    return {"force": float(np.sqrt(np.mean(resid[:, fr] ** 2))) if fr else float("nan"),
            "torque": float(np.sqrt(np.mean(resid[:, tr] ** 2))) if tr else float("nan")}


def eq16_with(figure: dict, phi_b: np.ndarray) -> tuple[dict, dict[str, float]]:
    """Eq. 16's figure data and residual RMS (force, torque) for another ``phi_b`` (e.g. the
    output-error refinement's) on the same capture's rows."""
    lhs = figure["lhs"]
    ok = np.all(np.isfinite(lhs), axis=1)
    rhs = np.full(lhs.shape, np.nan)
    rhs[ok] = figure["a_phi_b"][ok] @ phi_b
    return {**figure, "rhs": rhs}, _eq16_rms((lhs - rhs)[ok], figure["rows"])


__all__ = ["RelativeResult", "resolve_relative", "dual_metric_factor", "eq16_with",
           "METHODS", "WEIGHTINGS"]
