"""The base parameters of a robot (any tree of rigid bodies) from locked postures.

Model
-----
In a locked posture the robot is one rigid object. Its ten standard parameters in the base
link's frame (mass, first moment ``h``, inertia about the base origin ``J0``) are the sum of
the bodies' parameters moved into that frame by the posture's forward kinematics::

    pi_0 = sum_j T(R_j, p_j) pi_j          (T: the pseudo-inertia congruence, linear)

so ``pi_0 = K(q) pi`` with ``pi`` the ``10 n`` stacked standard parameters. Each posture
measures ``y = [h, J0 xx, yy, zz, yz, zx, xy]`` (the posture stage's COM and inertia,
rigtool.identify.subset.regressor.posture_target) with a covariance; the weighed total mass
gives one more row, ``sum_j m_j``. Stacked over postures this is a linear system whose
null space the structure of the robot implies: the base parameters are what is left.

Identifiability is decided on the structural regressor (rows scaled unit-free as the
subset stage does: first moments by ``1/(M r)``, inertias by ``1/(M r^2)``, mass by
``1/M``; columns equilibrated), never on the postures' precisions. The rank comes from
the singular values; the base parameters are chosen as robot identification tools name
them (Gautier's numerical grouping; FIGAROH, pinocchio): walking the standard parameters in
order (the base body first), a column joins the independent set when it is not a
combination of the columns before it; each later (dependent) parameter is regrouped into
the independent ones, e.g. ``m_link3 + m_link4 + ...`` or ``MX_link2 + 0.3 m_link3``.

The estimate is the weighted least-squares fit of the independent columns (rows whitened
with each posture's covariance), with its covariance ``(A_w^T A_w)^-1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from rigtool.inertia import inertia_vector, pseudo_inertia
from rigtool.identify.subset.regressor import (PostureOverall, posture_covariance,
                                               posture_target, reference_radius, whitener)

#: Per-body parameter names (rigtool order ``m, h, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz``):
#: first moments ``MX = m c_x`` ..., inertia tensor entries about the body origin (``XY`` is
#: the tensor's entry, ``-∫ x y dm``, as in pinocchio's and rigtool's ``I_xy``).
PARAM_PREFIXES = ("m", "MX", "MY", "MZ", "XX", "XY", "XZ", "YY", "YZ", "ZZ")
#: rigtool order of the overall 10 -> the posture target's ``[h, J0 xx yy zz yz zx xy]``
_Y_FROM_PI = np.array([1, 2, 3, 4, 7, 9, 8, 6, 5])
#: Relative singular value below which a direction counts as null (exact kinematics: the
#: structural null space is exact to rounding, ~1e-14; 1e-8 leaves a wide margin)
DEFAULT_RTOL = 1e-8


def parameter_names(bodies: list[str]) -> list[str]:
    """``["m_link0", "MX_link0", ..., "ZZ_linkN"]``."""
    return [f"{p}_{b}" for b in bodies for p in PARAM_PREFIXES]


_BASIS = pseudo_inertia(np.eye(10))                  # [10, 4, 4]


def transform_matrices(rotations: np.ndarray, positions_m: np.ndarray) -> np.ndarray:
    """``T [..., 10, 10]`` with ``transform_params(pi, R, p) == T @ pi`` for poses
    ``R [..., 3, 3]``, ``p [..., 3]``: the pseudo-inertia congruence ``T4 J T4^T`` applied
    to the ten unit parameter vectors at once (the map is linear)."""
    rot = np.asarray(rotations, float)
    pos = np.asarray(positions_m, float)
    t4 = np.zeros(rot.shape[:-2] + (4, 4))
    t4[..., :3, :3] = rot
    t4[..., :3, 3] = pos
    t4[..., 3, 3] = 1.0
    j = np.einsum("...ab,kbc,...dc->...kad", t4, _BASIS, t4)       # [..., 10(k), 4, 4]
    sigma = j[..., :3, :3]
    inertia = np.trace(sigma, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - sigma
    out = np.concatenate([j[..., 3, 3][..., None], j[..., :3, 3],
                          inertia_vector(inertia)], axis=-1)        # [..., 10(k), 10]
    return np.swapaxes(out, -1, -2)


def transform_matrix(rotation: np.ndarray, translation_m: np.ndarray) -> np.ndarray:
    """``T`` (10 x 10) with ``transform_params(pi, R, p) == T @ pi``."""
    return transform_matrices(rotation, translation_m)


def overall_regressor(rotations: np.ndarray, positions_m: np.ndarray) -> np.ndarray:
    """``K`` (10 x 10 n): the whole robot's ``pi_0`` in the base frame from the stacked
    bodies' parameters, for one posture's body poses ``R [n, 3, 3]``, ``p [n, 3]``."""
    t = transform_matrices(rotations, positions_m)                  # [n, 10, 10]
    return np.concatenate(list(t), axis=1)


@dataclass
class RobotBaseResult:
    """Base parameters from locked postures.

    Attributes
    ----------
    names : list of str
        Base-parameter names (their groupings, e.g. ``"MX_link2 + 0.3 m_link3"``).
    expressions : list of dict
        Each as ``{standard parameter: coefficient}``.
    values, std : ndarray (rank,)
    covariance : ndarray (rank, rank)
    rank : int
    n_parameters : int
        ``10 n``.
    parameter_names : list of str
    combination : ndarray (rank, 10 n)
        ``values ~ combination @ pi``.
    null_space : ndarray (10 n - rank, 10 n)
        Orthonormal directions of ``pi`` the postures cannot see (structural units).
    unidentifiable : list of dict
        Per dependent parameter: its name and the direction of ``pi`` (moving it by one while
        the independent parameters compensate) that leaves every posture unchanged.
    singular_values : ndarray
        Of the structural regressor, relative to the largest.
    reduced_chi2 : float
    """

    names: list[str]
    expressions: list[dict[str, float]]
    values: np.ndarray
    std: np.ndarray
    covariance: np.ndarray
    rank: int
    n_parameters: int
    parameter_names: list[str]
    combination: np.ndarray
    null_space: np.ndarray
    unidentifiable: list[dict]
    singular_values: np.ndarray
    reduced_chi2: float = float("nan")
    n_postures: int = 0
    residual_rms: dict[str, float] = field(default_factory=dict)
    independent: np.ndarray | None = None     # the standard parameter carrying each one

    def base_values_of(self, pi: np.ndarray) -> np.ndarray:
        """The base parameters of a full standard-parameter vector."""
        return self.combination @ np.asarray(pi, float)

    def table(self) -> str:
        """A printable table: value and standard error of every base parameter."""
        lines = [f"base parameters: rank {self.rank} of {self.n_parameters} standard "
                 f"parameters, {self.n_postures} postures, reduced chi^2 "
                 f"{self.reduced_chi2:.3g}",
                 f"{'value':>14} {'std':>10}  combination"]
        for n, v, s in zip(self.names, self.values, self.std):
            lines.append(f"{v:14.6g} {s:10.3g}  {n}")
        lines.append(f"{len(self.unidentifiable)} directions not seen by locked postures "
                     "(fixed by the prior): " + ", ".join(u["parameter"]
                                                          for u in self.unidentifiable))
        return "\n".join(lines)

    def to_json(self) -> dict:
        """report.json's ``robot.base_parameters`` block."""
        def num(x):
            x = float(x)
            return x if math.isfinite(x) else None
        return {"names": list(self.names), "expressions": self.expressions,
                "values": [num(v) for v in self.values], "std": [num(v) for v in self.std],
                "covariance": [[num(v) for v in row] for row in self.covariance],
                "rank": int(self.rank), "n_parameters": int(self.n_parameters),
                "n_postures": int(self.n_postures), "reduced_chi2": num(self.reduced_chi2),
                "singular_values": [num(v) for v in self.singular_values],
                "residual_rms": {k: num(v) for k, v in self.residual_rms.items()}}


def greedy_independent(w: np.ndarray, rank: int, rtol: float = 1e-7) -> np.ndarray:
    """Column indices of ``w`` chosen in order: a column is kept when its part orthogonal to
    the kept ones is above ``rtol`` of its own norm (columns equilibrated first). Stops at
    ``rank`` columns."""
    scale = np.linalg.norm(w, axis=0)
    ws = w / np.where(scale > 0, scale, 1.0)
    basis = np.zeros((w.shape[0], 0))
    keep = []
    for k in range(w.shape[1]):
        if scale[k] == 0:
            continue
        c = ws[:, k]
        resid = c - basis @ (basis.T @ c)
        resid = resid - basis @ (basis.T @ resid)        # re-orthogonalise once
        if np.linalg.norm(resid) > rtol:
            basis = np.column_stack([basis, resid / np.linalg.norm(resid)])
            keep.append(k)
            if len(keep) == rank:
                break
    return np.array(keep, int)


def structural_rows(k_list: list[np.ndarray], total_mass_kg: float, radius_m: float
                    ) -> np.ndarray:
    """The stacked, unit-free structural regressor: per posture its 9 rows ``[h, J0]``, then
    one mass row."""
    rows = [np.diag(np.concatenate([np.full(3, 1.0 / (total_mass_kg * radius_m)),
                                    np.full(6, 1.0 / (total_mass_kg * radius_m ** 2))]))
            @ k[_Y_FROM_PI] for k in k_list]
    rows.append(k_list[0][:1] / total_mass_kg)
    return np.vstack(rows)


def identifiable_structure(k_list: list[np.ndarray], names: list[str], total_mass_kg: float,
                           radius_m: float, *, rtol: float = DEFAULT_RTOL,
                           extra_structural: np.ndarray | None = None):
    """``(independent, beta, null_space, singular_values)`` of the postures' regressors
    ``K`` (see module docstring): ``pi_base = pi[ind] + beta @ pi[dep]``.
    ``extra_structural``: more unit-free rows (another experiment's, e.g. the robot's base
    wrench while its joints move, rigtool.robot.motion_fit)."""
    w = structural_rows(k_list, total_mass_kg, radius_m)
    if extra_structural is not None:
        w = np.vstack([w, extra_structural])
    if w.shape[0] > w.shape[1]:
        # W = Q R: R has W's column norms, singular values, right singular vectors and
        # column dependencies, in a square matrix (a motion capture has thousands of rows)
        w = scipy.linalg.qr(w, mode="r")[0][:w.shape[1]]
    scale = np.linalg.norm(w, axis=0)
    scale[scale == 0] = 1.0
    _, s, vt = np.linalg.svd(w / scale, full_matrices=True)
    rank = int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0
    ind = greedy_independent(w, rank)
    if ind.size != rank:                            # numerically borderline: pivoted QR
        _, _, perm = scipy.linalg.qr(w / scale, mode="economic", pivoting=True)
        ind = np.sort(perm[:rank])
    dep = np.setdiff1d(np.arange(w.shape[1]), ind)
    beta = np.linalg.lstsq(w[:, ind], w[:, dep], rcond=None)[0] if rank else \
        np.zeros((0, dep.size))
    big = np.abs(beta).max() if beta.size else 0.0
    beta[np.abs(beta) < 1e-9 * max(big, 1.0)] = 0.0
    null = vt[rank:] / scale[None, :]
    null /= np.linalg.norm(null, axis=1, keepdims=True)
    return ind, dep, beta, null, s / s[0]


def _grouping(ind_name: str, coeffs: np.ndarray, dep_names: list[str]) -> tuple[str, dict]:
    text, expr = ind_name, {ind_name: 1.0}
    for c, n in zip(coeffs, dep_names):
        if c == 0.0:
            continue
        expr[n] = float(c)
        mag = f"{abs(c):.4g}"
        text += f" {'+' if c >= 0 else '-'} {'' if mag == '1' else mag + ' '}{n}"
    return text, expr


def fit_base_parameters(rotations: list[np.ndarray], positions_m: list[np.ndarray],
                        postures: list[PostureOverall], bodies: list[str],
                        total_mass_kg: float, *, total_mass_std_kg: float | None = None,
                        rtol: float = DEFAULT_RTOL, extra: tuple | None = None
                        ) -> RobotBaseResult:
    """The base parameters and their standard errors from locked postures.

    Parameters
    ----------
    rotations, positions_m : list of ndarray
        Per posture the bodies' poses in the base frame (``[n, 3, 3]``, ``[n, 3]``;
        :meth:`rigtool.robot.urdf_model.RobotModel.body_poses`).
    postures : list of PostureOverall
        Per posture the measured COM and inertia (base frame) and their covariance.
    bodies : list of str
        Body names (their own URDF links).
    total_mass_kg : float
        The weighed mass (the mass row's value).
    total_mass_std_kg : float, optional
        The scale's standard uncertainty (default ``1e-4`` of the mass).
    rtol : float
        Relative singular value of a null direction.
    extra : tuple, optional
        ``(structural, a_whitened, b_whitened, label)``: rows of another experiment on the
        same parameters, unit-free for the structure and whitened for the estimate.

    Returns
    -------
    RobotBaseResult
    """
    k_list = [overall_regressor(r, p) for r, p in zip(rotations, positions_m)]
    names = parameter_names(bodies)
    radius = reference_radius(postures, total_mass_kg)
    ind, dep, beta, null, sv = identifiable_structure(
        k_list, names, total_mass_kg, radius, rtol=rtol,
        extra_structural=None if extra is None else extra[0])
    rank = ind.size
    # the whitened system in the independent columns
    a_rows, b_rows, labels = [], [], []
    for k, p in zip(k_list, postures):
        cov, _ = posture_covariance(p, total_mass_kg, radius)
        w = whitener(cov)
        a_rows.append(w @ k[_Y_FROM_PI])
        b_rows.append(w @ posture_target(p, total_mass_kg))
        labels.append(p.name)
    mass_std = total_mass_std_kg if total_mass_std_kg else 1e-4 * total_mass_kg
    a_rows.append(k_list[0][:1] / mass_std)
    b_rows.append(np.array([total_mass_kg / mass_std]))
    if extra is not None:
        a_rows.append(extra[1])
        b_rows.append(extra[2])
    a_w, b_w = np.vstack(a_rows), np.concatenate(b_rows)
    a_ind = a_w[:, ind]
    q, r = np.linalg.qr(a_ind)
    values = scipy.linalg.solve_triangular(r, q.T @ b_w)
    r_inv = scipy.linalg.solve_triangular(r, np.eye(rank))
    cov = r_inv @ r_inv.T
    resid = b_w - a_ind @ values
    dof = b_w.size - rank
    chi2 = float(resid @ resid / dof) if dof > 0 else float("nan")
    rms = {lab: float(np.sqrt(np.mean(resid[9 * i:9 * i + 9] ** 2)))
           for i, lab in enumerate(labels)}
    if extra is not None:
        n_extra = extra[2].size
        rms[extra[3]] = float(np.sqrt(np.mean(resid[-n_extra:] ** 2)))
    combination = np.zeros((rank, len(names)))
    combination[np.arange(rank), ind] = 1.0
    if dep.size:
        combination[:, dep] = beta
    dep_names = [names[d] for d in dep]
    group_names, exprs = [], []
    for i, col in enumerate(ind):
        text, expr = _grouping(names[col], beta[i] if dep.size else np.zeros(0), dep_names)
        group_names.append(text)
        exprs.append(expr)
    unident = []
    for c, d in enumerate(dep):
        direction = {names[d]: 1.0}
        for i, col in enumerate(ind):
            if beta[i, c] != 0.0:
                direction[names[col]] = -float(beta[i, c])
        unident.append({"parameter": names[d], "direction": direction})
    return RobotBaseResult(group_names, exprs, values, np.sqrt(np.diag(cov)), cov, rank,
                           len(names), names, combination, null, unident, sv, chi2,
                           len(postures), rms, ind)


__all__ = ["PARAM_PREFIXES", "DEFAULT_RTOL", "parameter_names", "transform_matrix",
           "overall_regressor", "RobotBaseResult", "greedy_independent", "structural_rows",
           "identifiable_structure", "fit_base_parameters"]
