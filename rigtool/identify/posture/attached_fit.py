"""The output-error posture fit's stages: Levenberg-Marquardt on the streamed normal equations
(:func:`solve_stage`) and the stage that adds the locked object's own markers, rigidly
attached to the platform, to a converged platform-marker fit (:func:`fit_attached`).

Split from rigtool.identify.posture.output_error, which runs the stages and reports.
"""

from __future__ import annotations

import numpy as np

from rigtool.engine.lm import levenberg_marquardt
from rigtool.engine.whiten import MarkerCovariance, whitening_factors
from rigtool.identify.posture.attached_markers import (attached_positions,
                                                       platform_frame_positions, pose_columns)
from rigtool.identify.posture.problem import PostureProblem
from rigtool.mocap import MarkerData


def fit_attached(prob: PostureProblem, x: np.ndarray, data: MarkerData, idx: np.ndarray,
                  mk_platform: np.ndarray, base_markers: dict[str, np.ndarray],
                  object_markers: list[str], ftol: float, label: str,
                  warnings: list[str], covariance: MarkerCovariance | None = None) -> dict:
    """Add the object's markers to a converged platform-marker fit and fit again with their
    positions on the platform eliminated (variable projection: every simulated member places
    them at their maximum-likelihood positions on its own trajectory, so the finite-difference
    Jacobian is that of the reduced problem and Gauss-Newton converges to the joint
    maximum-likelihood estimate). Leaves ``prob`` with the positions held at the estimate's
    (for the information matrix, rigtool.identify.posture.attached_markers.joint_information).
    With ``covariance`` (and ``prob.whiten`` set for the platform's markers) the object's
    markers are whitened by theirs, and a marker counts as still when its scatter is within
    twice what its covariance, scaled by the fit's noise scale, predicts.

    Returns ``x``, the markers kept (``names``, base-link markers first, ``n_base``), the
    base pose (``base_rotation``, ``base_position_m``, ``pose_cols``), the platform's fitted
    rotation per frame (``rotation_lab``), ``scatter_mm``, ``nfev`` and ``stages``.
    """
    names = list(base_markers) + [n for n in object_markers if n not in base_markers]
    n_base = len(base_markers)
    xyz = data.select(names)[idx]
    seen = np.all(np.isfinite(xyz), axis=2)
    sigma_mm = float(np.sqrt(prob.cost(x) / (3 * prob.mask[:prob.n_frames].sum())))
    rot, pos = prob.trajectory(x)
    _, scatter = platform_frame_positions(rot, pos, xyz, seen)
    w_att = None
    if covariance is None:
        # a rigidly attached marker scatters by its noise: sqrt(3) sigma in 3-D
        limit = 2.0 * np.sqrt(3.0) * sigma_mm
        limit_text = f"{limit:.3f} mm"
    else:
        cov = covariance.select([data.names[data.index(n)] for n in names], idx,
                                data.n_frames)
        w_att = whitening_factors(cov, seen)
        # sigma_mm is then the noise scale (1: the covariance is right); a still marker
        # scatters by sqrt(tr C) times it
        tr_mm2 = 1e6 * np.where(seen, np.trace(cov, axis1=-2, axis2=-1), 0.0).sum(0)
        limit = 2.0 * sigma_mm * np.sqrt(tr_mm2 / np.maximum(seen.sum(0), 1))
        limit_text = "twice its covariance's prediction"
    keep = (scatter <= limit) & (seen.sum(0) >= 20)
    left_out = [(n, float(v)) for n, v, k in zip(names, scatter, keep) if not k]
    dropped = [f"{n} ({v:.3f} mm)" for n, v in left_out]
    if dropped:
        warnings.append(f"{label}: object markers left out of the output-error fit, not still "
                        f"on the platform (RMS scatter over {limit_text}, or seen in fewer "
                        f"than 20 frames): {', '.join(dropped)}")
    base_kept = keep[:n_base].copy()
    if n_base and base_kept.sum() < 3:
        warnings.append(f"{label}: fewer than 3 base-link markers usable; the base link's pose "
                        "on the platform is taken from the per-frame poses")
        keep[:n_base] = False
        base_kept[:] = False
    names = [n for n, k in zip(names, keep) if k]
    xyz, seen = xyz[:, keep], seen[:, keep]
    if w_att is not None:
        w_att = w_att[:, keep]
    n_base = int(base_kept.sum())
    defs = (np.array([np.asarray(base_markers[n], float)
                      for n, k in zip(base_markers, base_kept) if k]) if n_base else None)
    out = {"names": names, "n_base": n_base, "nfev": 0, "stages": [],
           "left_out": left_out}
    if not names:
        out.update(x=x, rotation_lab=rot, pose_cols=None, base_rotation=None,
                   base_position_m=None, scatter_mm=np.zeros(0))
        return out
    n_plat = len(mk_platform)
    xyz0 = np.where(seen[..., None], xyz, 0.0)
    prob.measured = np.concatenate([prob.measured[:, :n_plat], xyz0], axis=1)
    prob.mask = np.concatenate([prob.mask[:, :n_plat], seen], axis=1)
    if w_att is not None:
        prob.whiten = np.concatenate([prob.whiten[:, :n_plat], w_att], axis=1)
    prob.markers_body = np.vstack([mk_platform, np.zeros((len(names), 3))])
    prob.attached_xyz, prob.attached_seen, prob.base_defs = xyz0, seen, defs
    prob.project, prob.cache, prob.n_attached = True, {}, len(names)
    sol = solve_stage(prob, x, ftol=ftol)
    x = sol.x
    out["nfev"] = sol.n_cost + sol.n_normal
    out["stages"].append((prob.n_frames * prob.dt, sol.n_cost, sol.n_normal))
    rot, pos = prob.trajectory(x)
    placed = attached_positions(rot, pos, xyz0, seen, defs, w_att)
    prob.markers_body = np.vstack([mk_platform, placed.positions_m])
    prob.project, prob.cache = False, {}
    out.update(x=x, rotation_lab=rot, scatter_mm=placed.scatter_mm,
               base_rotation=placed.base_rotation, base_position_m=placed.base_position_m,
               pose_cols=None if not n_base else pose_columns(defs, placed.base_rotation))
    return out


def solve_stage(prob: PostureProblem, x: np.ndarray, *, ftol: float, max_iterations: int = 50):
    """Levenberg-Marquardt on the streamed normal equations (rigtool.engine.lm)."""
    return levenberg_marquardt(lambda v: prob.normal(v).lm(), prob.cost, x, ftol=ftol,
                               max_iterations=max_iterations)


__all__ = ["fit_attached", "solve_stage"]
