"""The output-error posture fit's stages: Levenberg-Marquardt on the streamed normal equations
(:func:`solve_stage`), the stage that adds the locked object's own markers, rigidly
attached to the platform, to a converged platform-marker fit (:func:`fit_attached`), and the
last step that takes the integrator's bias out (:func:`polish_stage`).

Split from rigtool.identify.posture.output_error, which runs the stages and reports.
"""

from __future__ import annotations

import numpy as np

from rigtool.engine.lm import WARM_LAMBDA, levenberg_marquardt
from rigtool.engine.whiten import MarkerCovariance, whitening_factors
from rigtool.identify.posture.attached_markers import (attached_positions,
                                                       platform_frame_positions, pose_columns)
from rigtool.identify.common.output_error import (gauss_newton_polish, integrator_offset,
                                                  unpolished_warning)
from rigtool.identify.posture.problem import PostureProblem
from rigtool.mocap import MarkerData


def attach_markers(prob: PostureProblem, x: np.ndarray, data: MarkerData, idx: np.ndarray,
                   mk_platform: np.ndarray, base_markers: dict[str, np.ndarray],
                   object_markers: list[str], ftol: float, label: str,
                   warnings: list[str], covariance: MarkerCovariance | None = None) -> dict:
    """Add the object's markers to a converged platform-marker fit on the current horizon and
    fit again there with their positions on the platform eliminated (variable projection:
    every simulated trajectory places them at their maximum-likelihood positions, so the
    reduced problem's Gauss-Newton converges to the joint maximum-likelihood estimate).
    Leaves ``prob`` projecting, so that longer horizons go on with the markers;
    :func:`place_attached` ends it. With ``covariance`` (and ``prob.whiten`` set for the
    platform's markers) the object's markers are whitened by theirs, and a marker counts as
    still when its scatter is within twice what its covariance, scaled by the fit's noise
    scale, predicts.

    Returns a dict for :func:`place_attached`: ``x``, the markers kept (``names``, base-link
    markers first, ``n_base``), ``left_out``, ``nfev`` and ``stages``.
    """
    names = list(base_markers) + [n for n in object_markers if n not in base_markers]
    xyz = data.select(names)[idx]
    seen = np.all(np.isfinite(xyz), axis=2)
    w_att = None
    if covariance is not None:
        cov = covariance.select([data.names[data.index(n)] for n in names], idx,
                                data.n_frames)
        w_att = whitening_factors(cov, seen)
    n_plat = len(mk_platform)
    n_t = prob.n_frames
    # a rigidly attached marker scatters by its noise; the noise level is the platform fit's
    sigma_mm = float(np.sqrt(prob.cost(x) / (3 * prob.mask[:n_t, :n_plat].sum())))
    out = {"all_names": names, "xyz": np.where(seen[..., None], xyz, 0.0), "seen": seen,
           "w_att": w_att, "cov": None if covariance is None else cov, "sigma_mm": sigma_mm,
           "mk_platform": mk_platform, "base_markers": base_markers, "n_base_given":
           len(base_markers), "nfev": 0, "stages": [], "left_out": [], "x": x}
    rot, pos = prob.trajectory(x)
    _, scatter = platform_frame_positions(rot, pos, out["xyz"][:n_t], seen[:n_t])
    keep = _still(out, scatter, n_t)
    _drop(out, keep, scatter, label, warnings, n_t * prob.dt)
    _set_markers(prob, out)
    if out["names"]:
        _solve(prob, out, ftol)
    return out


def place_attached(prob: PostureProblem, att: dict, ftol: float, label: str,
                   warnings: list[str]) -> dict:
    """End the fit with attached markers on the current (whole) horizon: check that every
    marker kept is still on the platform over it (a marker judged on a shorter horizon may
    move later; those that do are left out and the fit is repeated without them), place the
    markers at their maximum-likelihood positions, stop projecting. Adds to ``att``: ``x``,
    ``rotation_lab``, ``scatter_mm``, ``base_rotation``, ``base_position_m`` and
    ``pose_cols``."""
    n_t = prob.n_frames
    if att["names"]:
        rot, pos = prob.trajectory(att["x"])
        kept = att["kept"]
        _, scatter = platform_frame_positions(rot, pos, att["xyz"][:n_t, kept],
                                              att["seen"][:n_t, kept])
        still = np.zeros(len(att["all_names"]), bool)
        still[kept] = _still(att, scatter, n_t, kept)
        if not np.array_equal(still, att["keep"]):
            scatter_all = np.full(len(att["all_names"]), np.nan)
            scatter_all[kept] = scatter
            _drop(att, still, scatter_all, label, warnings, n_t * prob.dt)
            _set_markers(prob, att)
            if att["names"]:
                _solve(prob, att, ftol)
    x = att["x"]
    rot, pos = prob.trajectory(x)
    if not att["names"]:
        prob.project, prob.cache = False, {}
        att.update(rotation_lab=rot, pose_cols=None, base_rotation=None,
                   base_position_m=None, scatter_mm=np.zeros(0))
        return att
    kept, defs = att["kept"], att["defs"]
    w_att = None if att["w_att"] is None else att["w_att"][:n_t, kept]
    placed = attached_positions(rot, pos, att["xyz"][:n_t, kept], att["seen"][:n_t, kept],
                                defs, w_att)
    prob.markers_body = np.vstack([att["mk_platform"], placed.positions_m])
    prob.project, prob.cache = False, {}
    att.update(rotation_lab=rot, scatter_mm=placed.scatter_mm,
               base_rotation=placed.base_rotation, base_position_m=placed.base_position_m,
               pose_cols=None if not att["n_base"] else pose_columns(defs,
                                                                     placed.base_rotation))
    return att


def fit_attached(prob: PostureProblem, x: np.ndarray, data: MarkerData, idx: np.ndarray,
                 mk_platform: np.ndarray, base_markers: dict[str, np.ndarray],
                 object_markers: list[str], ftol: float, label: str,
                 warnings: list[str], covariance: MarkerCovariance | None = None) -> dict:
    """:func:`attach_markers` then :func:`place_attached` on the current horizon."""
    att = attach_markers(prob, x, data, idx, mk_platform, base_markers, object_markers, ftol,
                         label, warnings, covariance)
    return place_attached(prob, att, ftol, label, warnings)


def _still(att: dict, scatter_mm: np.ndarray, n_t: int,
           columns: np.ndarray | None = None) -> np.ndarray:
    """Which markers (``columns`` of the attached set, default all) are still on the platform
    over the first ``n_t`` frames: RMS scatter about their place within twice the noise's
    (isotropic: ``sqrt(3) sigma``; with covariances: ``sigma sqrt(mean tr C)``, ``sigma``
    the noise scale) and seen in 20 frames or more."""
    cols = np.arange(len(att["all_names"])) if columns is None else np.asarray(columns)
    seen = att["seen"][:n_t, cols]
    n_seen = seen.sum(0)
    if att["cov"] is None:
        limit = np.full(cols.size, 2.0 * np.sqrt(3.0) * att["sigma_mm"])
        att["limit_text"] = f"{limit[0]:.3f} mm" if cols.size else ""
    else:
        tr = np.trace(att["cov"][:n_t, cols], axis1=-2, axis2=-1)
        tr_mm2 = 1e6 * np.where(seen, tr, 0.0).sum(0)
        limit = 2.0 * att["sigma_mm"] * np.sqrt(tr_mm2 / np.maximum(n_seen, 1))
        att["limit_text"] = "twice its covariance's prediction"
    return (scatter_mm <= limit) & (n_seen >= 20)


def _drop(att: dict, keep: np.ndarray, scatter_mm: np.ndarray, label: str,
          warnings: list[str], horizon_s: float) -> None:
    """Keep the markers ``keep`` (a mask over ``all_names``) and warn of those newly left out
    (``scatter_mm`` over ``all_names``: their RMS scatter about their place); fewer than 3
    base-link markers cannot carry the base pose, so then none of them is kept."""
    names, n_base = att["all_names"], att["n_base_given"]
    keep = keep.copy()
    before = att.get("keep", np.ones(len(names), bool))
    dropped = [(names[j], float(scatter_mm[j])) for j in np.flatnonzero(before & ~keep)]
    if dropped:
        att["left_out"] = att["left_out"] + dropped
        warnings.append(f"{label}: object markers left out of the output-error fit, not still "
                        f"on the platform over the first {horizon_s:g} s (RMS scatter over "
                        f"{att['limit_text']}, or seen in fewer than 20 frames): "
                        + ", ".join(f"{n} ({v:.3f} mm)" for n, v in dropped))
    if n_base and keep[:n_base].sum() < 3 and before[:n_base].any():
        warnings.append(f"{label}: fewer than 3 base-link markers usable; the base link's pose "
                        "on the platform is taken from the per-frame poses")
        keep[:n_base] = False
    att["keep"] = keep
    att["kept"] = np.flatnonzero(keep)
    att["names"] = [names[j] for j in att["kept"]]
    att["n_base"] = int(keep[:n_base].sum())
    att["defs"] = (np.array([np.asarray(att["base_markers"][names[j]], float)
                             for j in range(n_base) if keep[j]]) if att["n_base"] else None)


def _set_markers(prob: PostureProblem, att: dict) -> None:
    """Put the kept markers into ``prob`` after the platform's, positions eliminated
    (``prob.project``)."""
    n_plat = len(att["mk_platform"])
    kept = att["kept"]
    prob.measured = np.concatenate([prob.measured[:, :n_plat], att["xyz"][:, kept]], axis=1)
    prob.mask = np.concatenate([prob.mask[:, :n_plat], att["seen"][:, kept]], axis=1)
    if att["w_att"] is not None:
        prob.whiten = np.concatenate([prob.whiten[:, :n_plat], att["w_att"][:, kept]], axis=1)
    prob.markers_body = np.vstack([att["mk_platform"], np.zeros((kept.size, 3))])
    prob.attached_xyz, prob.attached_seen = att["xyz"][:, kept], att["seen"][:, kept]
    prob.base_defs = att["defs"]
    prob.project, prob.cache, prob.n_attached = bool(kept.size), {}, int(kept.size)


def _solve(prob: PostureProblem, att: dict, ftol: float) -> None:
    """Fit again with the attached markers on the current horizon (from ``att["x"]``)."""
    sol = solve_stage(prob, att["x"], ftol=ftol)
    att["x"] = sol.x
    att["nfev"] += sol.n_cost + sol.n_normal
    att["stages"].append((prob.n_frames * prob.dt, sol.n_cost, sol.n_normal))


def solve_stage(prob: PostureProblem, x: np.ndarray, *, ftol: float, max_iterations: int = 50,
                warm: bool = True):
    """Levenberg-Marquardt on the streamed normal equations (rigtool.engine.lm); ``warm``: ``x``
    is a converged fit of a nearby problem (a shorter horizon, fewer markers), so the solver
    starts at Gauss-Newton's step (:data:`rigtool.engine.lm.WARM_LAMBDA`)."""
    kw = {"lam0": WARM_LAMBDA} if warm else {}
    return levenberg_marquardt(lambda v: prob.normal(v).lm(), prob.cost, x, ftol=ftol,
                               max_iterations=max_iterations, **kw)


def polish_stage(prob: PostureProblem, x: np.ndarray, final_substeps: int, *, ftol: float,
                 label: str, warnings: list[str]) -> tuple[np.ndarray, int, int] | None:
    """The integrator's bias out of a converged whole-window fit ``x``
    (``refine_posture(final_substeps=...)``): the states of ``final_substeps`` RK4 steps per
    frame at ``x`` become a fixed correction of the problem's own (``prob.state_offset``,
    kept for the standard errors), then one Gauss-Newton step
    (:func:`~rigtool.identify.common.output_error.gauss_newton_polish`). Returns ``(x, cost
    evaluations, normal equations)``; None, with a warning in ``warnings``, when the finer
    model cannot be simulated at ``x`` (``prob`` is then left as it was), and None without
    one when ``final_substeps`` is the problem's own."""
    if final_substeps == prob.substeps:
        return None
    theta, _, y0, _ = prob.inputs(x)
    offset = integrator_offset(
        lambda n: prob.simulate(theta, y0, prob.n_frames, substeps=n)[0],
        prob.substeps, final_substeps, coarse=prob._primal_states(theta, y0))
    polished = None
    if offset is not None:
        prob.state_offset, prob.cache, prob.last_primal = offset, {}, {}
        polished = gauss_newton_polish(lambda v: prob.normal(v).lm(), prob.cost, x,
                                       ftol=ftol)
    if polished is None:
        prob.state_offset, prob.cache, prob.last_primal = None, {}, {}
        warnings.append(unpolished_warning(label, prob.substeps, final_substeps))
    return polished


__all__ = ["fit_attached", "polish_stage", "solve_stage"]
