"""Several locked postures -> the subset vector Phi_s (paper 002 eq. 5-12).

Conventions
-----------
- Every quantity is in the base link's frame; SI units (kg, m, kg m, kg m^2).
- Per posture the *target* is the 9-vector ``y = [h_x, h_y, h_z, J0_xx, J0_yy, J0_zz,
  J0_yz, J0_zx, J0_xy]``: the first moment ``h = M0 s_t`` (kg m) and the inertia about the
  base-link origin ``J0 = I_com + M0 [s_t x]^T [s_t x]`` (kg m^2), six entries in report.json's
  order.
- ``y`` is linear in the minimal parameters ``Phi_B`` (eq. 5-6, :func:`regressor_phi_b`)
  and, exactly, in the subset ``Phi_s`` (:func:`regressor_phi_s`): writing
  ``J_j = J_yy,j 1 + (J_xx-J_yy) E_xx + (J_zz-J_yy) E_zz + off-diagonal``, the first term
  contributes ``J_yy,j R R^T = J_yy,j 1`` in every posture, so only ``sum.J_yy`` appears.
  Rotations are therefore projected onto the nearest proper rotation (polar decomposition)
  before the Phi_s regressor is built; printed, rounded matrices are a few 1e-4 off.
- Rows are whitened with each posture's covariance of ``y`` (from its COM and inertia
  standard errors, or a full 9x9 ``covariance9``). When a posture gives no standard errors,
  the *unit-free default* is used: ``sigma_h = 1e-3 M0 r`` per first-moment entry and
  ``sigma_J = 1e-3 M0 r^2`` per inertia entry, with ``r = sqrt(lambda_max(I_com)/M0)``
  the largest radius of gyration over the postures (a given one of the two is converted
  with ``r``); the covariance of the estimate is then rescaled by the reduced chi-square.
- The link rotations are measured too. When a posture gives their covariance
  (``PostureOverall.rotation_cov``; ``rigtool run`` does, from each posture's frames), the
  rows' covariance gains ``G C_R G^T`` at a first estimate and the fit is whitened again
  (effective variance; :func:`rotation_row_covariance`). Simulated, 1e-2 rad per axis on
  four two-link postures: chi^2/dof of Phi_s 4.03 without it, 1.03 with it
  (``tests/test_subset.py``).
- Identifiability is decided on the structural regressor (rows scaled unit-free by
  ``M0 r`` and ``M0 r^2``, :func:`structural_whitener`; columns equilibrated), not on the
  whitened one: a singular value below ``rtol`` times the largest is a null direction, never
  solved for. The null set is a property of the rotations; the postures' precisions (which
  differ by orders of magnitude between an equation-error and an output-error fit) must not
  move it. The estimate then uses the whitened rows within the identified subspace.
- Postures that disagree with one tree of rigid links beyond their standard errors (a
  reduced chi-square above 1 at :data:`SCALE_P`) say that those standard errors are too
  small (a disturbance the posture fits do not model, such as the heartbeat's recoil
  ringing the rig's modes): Phi_s's covariance is then scaled by the reduced chi-square
  (Birge 1932, Phys. Rev. 40:207; the Particle Data Group's scale factor), and
  ``se_scale`` says by how much. Postures that agree keep their covariance to the bit.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.stats

from rigtool.identify.subset.base_params import base_parameters, row_space_residual
from rigtool.identify.subset.regressor import (PostureOverall, nearest_rotation,
                                               phi_s_selector, posture_covariance,
                                               posture_target, reference_radius,
                                               regressor_phi_b, regressor_phi_s,
                                               rotation_error, rotation_row_covariance,
                                               six, stacked_system,
                                               structural_whitener, whitener)
from rigtool.tree import Tree, phi_b_names, phi_s_names

#: Rotation matrices further than this from orthonormal (max |R R^T - 1|) are refused.
ROTATION_TOL = 1e-2
#: Default relative singular-value tolerance for a direction to count as identified.
DEFAULT_RTOL = 1e-3
#: Row weightings of :func:`fit_subset`.
WEIGHTINGS = ("auto", "plain")
#: Significance at which the postures' disagreement (their reduced chi-square above 1)
#: scales Phi_s's standard errors by the Birge ratio: the level at which the relative-motion
#: refinement is judged against its start (rigtool.identify.relative.oe_result), so that a
#: consistent set of postures is left alone but for one run in a thousand
SCALE_P = 1e-3
@dataclass
class SubsetResult:
    """Phi_s from several postures, with its uncertainty and identifiability diagnostics.

    ``values``/``std`` are NaN/inf for entries the postures cannot determine (listed in
    ``unidentifiable`` as the combinations that are missing; ``advice`` says which posture
    to add). ``singular_values`` are those of the whitened, column-equilibrated regressor,
    relative to the largest.
    """

    names: list[str]
    values: np.ndarray
    std: np.ndarray
    covariance: np.ndarray
    rank: int
    condition_number: float
    singular_values: np.ndarray
    unidentifiable: list[str]
    advice: list[str]
    residual_rms: dict[str, float]
    reduced_chi2: float = float("nan")
    weights: str = "given"
    n_postures: int = 0
    rtol: float = DEFAULT_RTOL
    base_check: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    link_params: dict | None = None          # consistent variant: per-link standard params
    consistent_values: np.ndarray | None = None  # consistent variant: the Phi_s they give
    se_scale: float = 1.0                    # Birge ratio applied to the standard errors
    singular_vectors: np.ndarray | None = None   # [P, P] rows: the directions (column-
                                                 # equilibrated parameters) of singular_values
    column_scale: np.ndarray | None = None       # [P] the equilibration: z = scale * x
    estimate: np.ndarray | None = None           # [P] the estimate on the identified space
                                                 # (``values`` blanks the undetermined)

    @property
    def identified(self) -> bool:
        """True when every entry of Phi_s is determined."""
        return self.rank == len(self.names)

    def value(self, name: str) -> float:
        """Value of one named entry."""
        return float(self.values[self.names.index(name)])

    def identified_combinations(self, *, rel: float = 1e-6) -> list[dict]:
        """The combinations of Phi_s's entries that the postures do determine.

        One per identified direction, in the form robot-identification tools report base
        parameters: a pivot entry (chosen by QR with column pivoting on the identified row
        space, column-equilibrated) plus multiples of the entries it cannot be told from.
        Each is ``{"name", "expression": {entry: coefficient}, "value", "std"}`` in SI
        units; ``value`` and ``std`` follow from the estimate and its covariance, which are
        unique on the identified space. Empty when the entries' own values are reported
        (full rank) or when the singular directions were not kept.
        """
        if (self.identified or self.singular_vectors is None or self.rank == 0
                or self.column_scale is None or self.estimate is None):
            return []
        scale = self.column_scale
        # identified functions of the equilibrated entries z = scale * x: the rows of
        # v_id; reduced to one pivot each (QR with column pivoting picks the best-
        # conditioned pivots), then written on the entries x in SI units
        v_id = self.singular_vectors[:self.rank]
        _, r, perm = scipy.linalg.qr(v_id, pivoting=True)
        rref = scipy.linalg.solve_triangular(r[:, :self.rank], r)   # [r, P], permuted
        out = []
        for k in range(self.rank):
            pivot = perm[k]
            coef_z = np.zeros(len(self.names))
            coef_z[perm] = rref[k]
            coef = coef_z * scale / scale[pivot]                    # coef[pivot] == 1
            keep = np.abs(coef_z) > rel
            c = np.where(keep, coef, 0.0)
            expr = {self.names[i]: float(f"{coef[i]:.6g}") for i in np.flatnonzero(keep)}
            var = float(c @ self.covariance @ c)
            terms = " ".join(f"{'+' if expr[n] >= 0 else '-'} {abs(expr[n]):.4g} {n}"
                             for n in expr if n != self.names[pivot])
            out.append({"name": f"{self.names[pivot]} {terms}".strip(), "expression": expr,
                        "value": float(c @ self.estimate),
                        "std": float(np.sqrt(var)) if var >= 0 else float("nan")})
        return out

    def to_json(self) -> dict:
        """report.json's ``subset`` block (names, values, std, rank, condition_number) plus extras;
        NaN and infinity become ``null``."""
        def num(x):
            x = float(x)
            return x if math.isfinite(x) else None
        out = {"names": list(self.names), "values": [num(v) for v in self.values],
               "std": [num(v) for v in self.std], "rank": int(self.rank),
               "condition_number": num(self.condition_number),
               "n_parameters": len(self.names), "n_postures": self.n_postures,
               "singular_values": [num(v) for v in self.singular_values],
               "rank_tolerance": self.rtol, "unidentifiable": list(self.unidentifiable),
               "advice": list(self.advice),
               "residual_rms": {k: num(v) for k, v in self.residual_rms.items()},
               "reduced_chi2": num(self.reduced_chi2), "weights": self.weights,
               "se_scale": num(self.se_scale),
               "base_parameter_check": self.base_check, "warnings": list(self.warnings)}
        if self.consistent_values is not None:
            out["consistent_values"] = [num(v) for v in self.consistent_values]
        if not self.identified:
            out["identified_combinations"] = [
                {**c, "value": num(c["value"]), "std": num(c["std"])}
                for c in self.identified_combinations()]
        if self.singular_vectors is not None:
            out["singular_directions"] = [weakest_terms(v, self.names)
                                          for v in self.singular_vectors]
        if self.link_params is not None:
            out["consistent_link_params"] = {
                k: [num(v) for v in np.asarray(p)] for k, p in self.link_params.items()}
        return out

    def dumps(self) -> str:
        """``to_json`` as indented text."""
        return json.dumps(self.to_json(), indent=2)

    def table(self) -> str:
        """Readable table: name, value, standard error, and with the consistent variant the
        Phi_s its physically consistent link parameters give (column ``consistent``)."""
        width = max(len(n) for n in self.names)
        cons = self.consistent_values
        lines = [f"{'parameter':<{width}}  {'value':>12}  {'std':>10}"
                 + ("" if cons is None else f"  {'consistent':>12}")]
        for k, (n, v, s) in enumerate(zip(self.names, self.values, self.std)):
            vs = f"{v:12.5f}" if math.isfinite(v) else f"{'--':>12}"
            ss = f"{s:10.5f}" if math.isfinite(s) else f"{'--':>10}"
            cs = "" if cons is None else (f"  {cons[k]:12.5f}" if math.isfinite(cons[k])
                                          else f"  {'--':>12}")
            lines.append(f"{n:<{width}}  {vs}  {ss}{cs}")
        lines.append(f"rank {self.rank} of {len(self.names)}, condition number "
                     f"{self.condition_number:.4g}, {self.n_postures} postures, "
                     f"reduced chi^2 {self.reduced_chi2:.3g} ({self.weights} weights)")
        if cons is not None:
            shift = np.abs(np.asarray(cons) - self.values) / np.where(self.std > 0, self.std,
                                                                       np.inf)
            moved = np.nanmax(shift) if np.any(np.isfinite(shift)) else float("nan")
            lines.append("consistent: the Phi_s of per-link parameters fitted under the "
                         "physical-consistency constraints (pseudo-inertia positive definite); "
                         + (f"it moves at most {moved:.2g} standard errors from the fit"
                            + (" (the constraints are not active)" if moved < 0.01 else "")
                            if math.isfinite(moved) else "not comparable"))
        return "\n".join(lines)


# ----------------------------------------------------------------------------- the fit

def weakest_terms(direction: np.ndarray, names: list[str], *, rel: float = 0.25,
                  most: int = 4) -> list[list]:
    """The parameters a singular direction (column-equilibrated) is made of: ``[[name,
    coefficient], ...]``, largest first, those above ``rel`` of the largest, at most
    ``most``; the coefficients of a unit vector (so they read as shares)."""
    v = np.asarray(direction, float)
    order = np.argsort(-np.abs(v))
    big = abs(v[order[0]]) if v.size else 0.0
    sign = 1.0 if v[order[0]] >= 0 else -1.0          # the largest term positive
    return [[names[i], round(float(sign * v[i]), 3)] for i in order[:most]
            if abs(v[i]) >= rel * big]


def null_combinations(null_scaled: np.ndarray, scale: np.ndarray, names: list[str],
                      *, rel: float = 0.05) -> list[tuple[list[str], np.ndarray]]:
    """Sparse basis of the null space: each direction has one pivot parameter (coefficient
    1 in column-scaled units) and the others it cannot be told from. Returns
    ``[(names, coefficients), ...]`` with coefficients in scaled units."""
    if null_scaled.shape[1] == 0:
        return []
    nt = null_scaled.T                                  # [q, P]
    _, r, perm = scipy.linalg.qr(nt, pivoting=True)
    q = nt.shape[0]
    basis = scipy.linalg.solve_triangular(r[:q, :q], r[:q, :]) # rref in permuted columns
    out = []
    for k in range(q):
        row = np.zeros(nt.shape[1])
        row[perm] = basis[k]
        big = np.abs(row).max()
        idx = [i for i in np.argsort(-np.abs(row)) if abs(row[i]) > rel * big]
        out.append(([names[i] for i in idx], row[idx]))
    return out


def describe_null(combo: tuple[list[str], np.ndarray]) -> str:
    """One sentence naming a combination the postures cannot determine."""
    names, coef = combo
    if len(names) == 1:
        return f"{names[0]} is not determined by these postures"
    terms = " ".join(f"{'+' if c >= 0 else '-'} {abs(c):.2f} {n}" for n, c in zip(names, coef))
    listed = ", ".join(names[:-1]) + f" and {names[-1]}"
    return f"{listed} are not separated (null direction {terms.lstrip('+ ')}, column-scaled)"


def fit_subset(tree: Tree, postures: list[PostureOverall], total_mass_kg: float, *,
               rtol: float = DEFAULT_RTOL, weighting: str = "auto", advise: bool = True,
               consistent: bool = False) -> SubsetResult:
    """Identify Phi_s from the overall properties of several locked postures.

    Parameters
    ----------
    tree : Tree
        Links with joint centres (parent frame, m); parameters are not needed.
    postures : list of PostureOverall
        Overall COM and inertia per posture, base-link frame, with the links' rotations.
    total_mass_kg : float
        The object's mass ``M0``.
    rtol : float
        Relative singular-value tolerance of the whitened, column-equilibrated regressor.
    weighting : {"auto", "plain"}
        ``"auto"``: whiten with each posture's covariance (given standard errors, or the
        unit-free default of the module notes). ``"plain"``: unit weights on the rows as they
        come (kg m and kg m^2), paper 002's evaluation function E_v1; the covariance is then
        scaled by the reduced chi-square.
    advise : bool
        When Phi_s is not identified, search candidate postures for the best one to add.
    consistent : bool
        Also fit per-link standard parameters under the pseudo-inertia LMI (paper 000) whose
        image is Phi_s, and report that Phi_s instead (``link_params`` holds them).

    Returns
    -------
    SubsetResult
    """
    if not postures:
        raise ValueError("fit_subset needs at least one posture")
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, not {weighting!r}")
    names = phi_s_names(tree)
    warnings = []
    for p in postures:
        if not p.rotations:
            continue
        rs = np.stack([np.asarray(r, float) for r in p.rotations.values()])
        err = np.max(np.abs(rs @ np.swapaxes(rs, -1, -2) - np.eye(3)), axis=(1, 2))
        bad = (err > ROTATION_TOL) | (np.linalg.det(rs) <= 0)
        if bad.any():
            link = list(p.rotations)[int(np.argmax(bad))]
            raise ValueError(f"posture '{p.name}': rotation of '{link}' is not a rotation "
                             f"matrix (max |R R^T - 1| = {err.max():.3g})")
    a_w, b_w, a, b, given = stacked_system(tree, postures, total_mass_kg, weighting=weighting)
    n_par = a_w.shape[1]
    # identifiability on the unit-free structural rows (structural_whitener), columns
    # equilibrated; the estimate then uses the whitened rows within the identified subspace
    w_struct = structural_whitener(total_mass_kg, reference_radius(postures, total_mass_kg))
    a_s = a * np.tile(np.diag(w_struct), len(postures))[:, None]        # diagonal scaling
    scale = np.linalg.norm(a_s, axis=0)
    scale[scale == 0] = 1.0
    _, s, vt = np.linalg.svd(a_s / scale, full_matrices=True)
    s_full = np.zeros(n_par)
    s_full[:s.size] = s
    s_rel = s_full / s_full[0]
    rank = int(np.sum(s_rel > rtol))
    v_id, v_null = vt[:rank].T, vt[rank:].T
    basis = v_id / scale[:, None]                      # x = basis @ z
    x, cov = _solve_in(basis, a_w, b_w)
    if weighting != "plain" and any(p.rotation_cov for p in postures):
        # the rotations' errors into each posture's rows at this estimate, then again
        # (effective variance: one pass suffices, the rows' covariance barely moves x)
        extra = [rotation_row_covariance(tree, p, x) for p in postures]
        a_w, b_w, *_ = stacked_system(tree, postures, total_mass_kg, weighting=weighting,
                                      extra_cov=extra)
        x, cov = _solve_in(basis, a_w, b_w)
    resid_w = b_w - a_w @ x
    dof = a_w.shape[0] - rank
    chi2 = float(resid_w @ resid_w / dof) if dof > 0 else float("nan")
    weights = "given" if given else ("plain" if weighting == "plain" else "assumed")
    se_scale = 1.0
    if not given:
        if dof > 0:
            cov = cov * chi2
        else:
            cov = cov * np.nan
            warnings.append("no standard errors given and no redundancy: the standard errors "
                            "cannot be estimated")
    elif dof > 0 and chi2 > 1.0 and scipy.stats.chi2.sf(chi2 * dof, dof) < SCALE_P:
        se_scale = math.sqrt(chi2)
        cov = cov * chi2
    # an entry is determined when its unit vector has no component along the null space
    leak = np.linalg.norm(v_null, axis=1) if v_null.size else np.zeros(n_par)
    undetermined = leak > 1e-6
    std = np.sqrt(np.clip(np.diag(cov), 0, None))
    values = x.copy()
    values[undetermined] = np.nan
    std[undetermined] = np.inf
    resid = b - a @ x
    per = resid.reshape(-1, 9)
    rms = {"first_moment": float(np.sqrt(np.mean(per[:, :3] ** 2))),
           "inertia": float(np.sqrt(np.mean(per[:, 3:] ** 2)))}
    combos = null_combinations(v_null, scale, names)
    unident = [describe_null(c) for c in combos]
    advice: list[str] = []
    if rank < n_par and advise:
        from rigtool.identify.subset.advice import advise_next_posture
        adv = advise_next_posture(tree, postures, total_mass_kg, rtol=rtol)
        advice = adv.lines(combos)
    base_check = _base_check(tree, postures, total_mass_kg, rank, rtol)
    if not base_check.get("agree", True):
        warnings.append("the numerical base-parameter view (QR on Phi_B) disagrees with the "
                        "analytic Phi_s rank; rotations may be inaccurate")
    cond = float(s_full[0] / s_full[rank - 1]) if rank else float("inf")
    result = SubsetResult(names, values, std, cov, rank, cond, s_rel, unident, advice, rms,
                          chi2, weights, len(postures), rtol, base_check, warnings,
                          se_scale=se_scale, singular_vectors=vt, column_scale=scale,
                          estimate=x)
    if consistent:
        from rigtool.identify.subset.consistent import consistent_fit
        consistent_fit(tree, result, a_w, b_w, total_mass_kg)
    return result


def _solve_in(basis: np.ndarray, a_w: np.ndarray, b_w: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """``(x, cov)``: the whitened least-squares estimate ``x = basis @ z`` within the
    identified subspace and its covariance (columns equilibrated for the solve)."""
    bw = a_w @ basis
    bscale = np.linalg.norm(bw, axis=0)
    bscale[bscale == 0] = 1.0
    z_s, *_ = np.linalg.lstsq(bw / bscale, b_w, rcond=None)
    info = (bw / bscale).T @ (bw / bscale)
    cov_z = np.linalg.pinv(info) / np.outer(bscale, bscale)
    return basis @ (z_s / bscale), basis @ cov_z @ basis.T


def _base_check(tree: Tree, postures: list[PostureOverall], total_mass_kg: float,
                rank_s: int, rtol: float) -> dict:
    """The numerical view: QR with column pivoting on the (raw-rotation) Phi_B equations."""
    radius = reference_radius(postures, total_mass_kg)
    rows = []
    w_struct = structural_whitener(total_mass_kg, radius)
    for p in postures:
        rows.append(w_struct @ regressor_phi_b(tree, p.rotations))
    zb = np.vstack(rows)
    bp = base_parameters(zb, phi_b_names(tree), rtol=rtol)
    n = len(tree.links)
    leak = row_space_residual(zb, phi_s_selector(n), rtol=rtol)
    return {"phi_b_rank": bp.rank, "phi_s_rank": rank_s, "agree": bp.rank == rank_s,
            "max_phi_s_row_space_residual": float(np.max(leak)),
            "independent_phi_b": [bp.names[i] for i in bp.independent]}


# the posture model (targets, regressors, covariances) is re-exported from
# rigtool.identify.subset.regressor
__all__ = ["ROTATION_TOL", "DEFAULT_RTOL", "WEIGHTINGS", "SubsetResult", "weakest_terms",
           "null_combinations", "describe_null", "fit_subset", "PostureOverall", "six",
           "nearest_rotation", "rotation_error", "regressor_phi_b", "regressor_phi_s",
           "phi_s_selector", "posture_target", "posture_covariance", "whitener",
           "structural_whitener", "reference_radius", "stacked_system"]
