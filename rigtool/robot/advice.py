"""Which locked posture to add next, within the joints' limits.

Candidates are configurations the robot can take: drawn uniformly inside every moving
joint's URDF limits, 5 % of the range away from each end (a posture at a hard stop is
not asked for), with every link clear of the deck (rigtool.robot.clearance). For each candidate the structural regressor of the measured postures plus
that one is evaluated (rigtool.robot.base_parameters.structural_rows):

- when the measured postures do not yet reach the rank that locked postures of this robot
  can reach (estimated from many random candidates), the candidate that adds the most
  identifiable combinations is proposed;
- otherwise the candidate that most shrinks the worst-determined base parameter's standard
  error (structural units: the relative change of ``sqrt(diag((W^T W)^-1))``) is.

The figure is a property of the kinematics only; the postures' actual precisions scale it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.robot.base_parameters import (RobotBaseResult, structural_rows,
                                           transform_matrices)
from rigtool.robot.clearance import clear_of_deck
from rigtool.robot.urdf_model import RobotModel

#: Fraction of each joint's range kept away from its limits.
LIMIT_MARGIN = 0.05


@dataclass(frozen=True)
class PostureAdvice:
    """A proposed posture.

    Attributes
    ----------
    joint_values : dict
        Joint -> value (rad or m), inside the limits.
    rank_now, rank_with, rank_reachable : int
    worst_parameter : str
        The base parameter whose standard error shrinks most (rank already reached).
    std_ratio : float
        Its standard error with the posture over without (structural units).
    text : str
    """

    joint_values: dict[str, float]
    rank_now: int
    rank_with: int
    rank_reachable: int
    worst_parameter: str
    std_ratio: float
    text: str


def candidate_postures(robot: RobotModel, n: int, *, seed: int = 0,
                       max_draws: int = 50) -> np.ndarray:
    """``[n, k]`` configurations drawn uniformly inside the limits (:data:`LIMIT_MARGIN`
    from the ends) that keep every link clear of the deck
    (:func:`rigtool.robot.clearance.clear_of_deck`)."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.limits()
    span = hi - lo
    kept: list[np.ndarray] = []
    for _ in range(max_draws):
        draw = rng.uniform(lo + LIMIT_MARGIN * span, hi - LIMIT_MARGIN * span,
                           size=(n, lo.size))
        kept += [q for q in draw if clear_of_deck(robot, q)]
        if len(kept) >= n:
            return np.array(kept[:n])
    if not kept:
        raise ValueError(f"no configuration of '{robot.path.name}' inside its joint limits "
                         "keeps every link clear of the deck")
    return np.array(kept)


def _regressors(robot: RobotModel, qs: np.ndarray) -> list[np.ndarray]:
    out = []
    for q in qs:
        rot, pos = robot.body_poses(q)
        out.append(np.concatenate(list(transform_matrices(rot, pos)), axis=1))
    return out


def _rank(w: np.ndarray, scale: np.ndarray, rtol: float = 1e-8) -> int:
    s = np.linalg.svd(w / scale, compute_uv=False)
    return int(np.sum(s > rtol * s[0]))


def advise_posture(robot: RobotModel, measured_q: list[np.ndarray], base: RobotBaseResult,
                   total_mass_kg: float, radius_m: float, *, n_candidates: int = 200,
                   seed: int = 0) -> PostureAdvice:
    """The posture to add (see module docstring).

    Parameters
    ----------
    robot : RobotModel
    measured_q : list of ndarray
        The measured postures' joint values (moving joints, in order).
    base : RobotBaseResult
        Their base parameters (for the names).
    total_mass_kg, radius_m : float
        The structural row scales (as the base-parameter fit used them).
    n_candidates : int
    seed : int
        Of the candidate draw (deterministic advice).
    """
    cand = candidate_postures(robot, n_candidates, seed=seed)
    k_meas = _regressors(robot, measured_q)
    k_cand = _regressors(robot, cand)
    w_now = structural_rows(k_meas, total_mass_kg, radius_m)
    scale = np.linalg.norm(structural_rows(k_meas + k_cand, total_mass_kg, radius_m), axis=0)
    scale[scale == 0] = 1.0
    rank_now = _rank(w_now, scale)
    reachable = _rank(structural_rows(k_meas + k_cand, total_mass_kg, radius_m), scale)
    names = robot.moving_joints
    if rank_now < reachable:
        ranks = [_rank(np.vstack([w_now, structural_rows([k], total_mass_kg, radius_m)[:-1]]),
                       scale) for k in k_cand]
        best = int(np.argmax(ranks))
        q = dict(zip(names, cand[best].tolist()))
        text = (f"add a locked posture at {_fmt_q(robot, cand[best])}: it makes "
                f"{ranks[best] - rank_now} more combinations identifiable (rank {rank_now} -> "
                f"{ranks[best]}; locked postures of this robot reach {reachable})")
        return PostureAdvice(q, rank_now, ranks[best], reachable, "", float("nan"), text)
    # rank reached: shrink the worst-determined base parameter. In the base coordinates
    # (the independent columns) the information is F = A^T A; a candidate's rows A_c update
    # its inverse by Woodbury's identity (a 9 x 9 solve per candidate).
    ind = base.independent
    a_now = (w_now / scale)[:, ind]
    cov = np.linalg.inv(a_now.T @ a_now)
    # least determined: the largest standard error in column-equilibrated coordinates
    # (unit-free, comparable across masses and inertias)
    s_now = np.sqrt(np.diag(cov))
    worst = int(np.argmax(s_now))
    best, best_ratio = 0, np.inf
    for i, k in enumerate(k_cand):
        rows = (structural_rows([k], total_mass_kg, radius_m)[:-1] / scale)[:, ind]
        g = cov @ rows.T                                           # [r, 9]
        middle = np.linalg.solve(np.eye(rows.shape[0]) + rows @ g, g[worst])
        var = cov[worst, worst] - g[worst] @ middle
        ratio = float(np.sqrt(max(var, 0.0)) / s_now[worst])
        if ratio < best_ratio:
            best, best_ratio = i, ratio
    q = dict(zip(names, cand[best].tolist()))
    text = (f"the postures reach every combination locked postures can (rank {rank_now}); "
            f"to determine '{base.names[worst].split(' ')[0]}' (the least determined) better, "
            f"add a locked posture at {_fmt_q(robot, cand[best])}: its standard error would "
            f"become {best_ratio:.2f} times what it is")
    return PostureAdvice(q, rank_now, rank_now, reachable, base.names[worst],
                         float(best_ratio), text)


def _fmt_q(robot: RobotModel, q: np.ndarray) -> str:
    parts = []
    for body, v in zip(robot.bodies[1:], q):
        parts.append(f"{body.joint} = {np.rad2deg(v):.0f} deg" if body.joint_type != "prismatic"
                     else f"{body.joint} = {v * 1e3:.0f} mm")
    return ", ".join(parts)


__all__ = ["LIMIT_MARGIN", "PostureAdvice", "advise_posture", "candidate_postures"]
