"""Several locked postures -> the subset vector Phi_s (paper 002 eq. 5-12).

Conventions
-----------
- Every quantity is in the base link's frame; SI units (kg, m, kg m, kg m^2).
- Per posture the *target* is the 9-vector ``y = [h_x, h_y, h_z, J0_xx, J0_yy, J0_zz,
  J0_yz, J0_zx, J0_xy]``: the first moment ``h = M0 s_t`` (kg m) and the inertia about the
  base-link origin ``J0 = I_com + M0 [s_t x]^T [s_t x]`` (kg m^2), six entries in SPEC order.
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
- Identifiability is decided on the structural regressor (rows scaled unit-free by
  ``M0 r`` and ``M0 r^2``, :func:`structural_whitener`; columns equilibrated), not on the
  whitened one: a singular value below ``rtol`` times the largest is a null direction, never
  solved for. The null set is a property of the rotations; the postures' precisions (which
  differ by orders of magnitude between an equation-error and an output-error fit) must not
  move it. The estimate then uses the whitened rows within the identified subspace.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from rigtool.identify.subset.base_params import base_parameters, row_space_residual
from rigtool.inertia import skew
from rigtool.tree import PHI_S_FIELDS, Tree, phi_b_names, phi_s_names

#: Rotation matrices further than this from orthonormal (max |R R^T - 1|) are refused.
ROTATION_TOL = 1e-2
#: Default relative singular-value tolerance for a direction to count as identified.
DEFAULT_RTOL = 1e-3
#: Row weightings of :func:`fit_subset`.
WEIGHTINGS = ("auto", "plain")
#: Relative scale of the unit-free default weights (only the ratio matters).
_DEFAULT_REL = 1e-3

# 3x3 basis of the six inertia entries in SPEC order xx, yy, zz, yz, zx, xy
_E6 = np.zeros((6, 3, 3))
for _k, (_a, _b) in enumerate([(0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1)]):
    _E6[_k, _a, _b] = _E6[_k, _b, _a] = 1.0
_IDX6 = (np.array([0, 1, 2, 1, 2, 0]), np.array([0, 1, 2, 2, 0, 1]))
_EYE6 = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])


def six(m: np.ndarray) -> np.ndarray:
    """``[..., 3, 3]`` symmetric -> ``[..., 6]`` entries xx, yy, zz, yz, zx, xy."""
    return np.asarray(m, float)[..., _IDX6[0], _IDX6[1]]


@dataclass(frozen=True)
class PostureOverall:
    """Overall properties of the object in one locked posture (base-link frame).

    Attributes
    ----------
    name : str
    com_base_m : ndarray (3,)
        Centre of mass, m.
    com_std_m : ndarray (3,) or None
        Its standard errors, m.
    inertia_com_base : ndarray (3, 3)
        Inertia about the COM, kg m^2.
    inertia_std : float or ndarray (3, 3) or None
        Standard error of each inertia entry, kg m^2 (one number for all, or per entry).
    rotations : dict
        Link name -> ``0R_j`` (link axes -> base axes) for every non-base link.
    covariance9 : ndarray (9, 9) or None
        Covariance of ``[h(3), J0 six]`` when the posture fit provides it (overrides the stds).
    """

    name: str
    com_base_m: np.ndarray
    com_std_m: np.ndarray | None
    inertia_com_base: np.ndarray
    inertia_std: np.ndarray | float | None
    rotations: dict[str, np.ndarray]
    covariance9: np.ndarray | None = None


# ----------------------------------------------------------------------------- regressors

def nearest_rotation(r: np.ndarray) -> np.ndarray:
    """Closest proper rotation to ``r`` (``[..., 3, 3]``) in the Frobenius norm (SVD polar)."""
    u, _, vt = np.linalg.svd(np.asarray(r, float))
    d = np.sign(np.linalg.det(u @ vt))
    u = u.copy()
    u[..., :, 2] *= d[..., None]
    return u @ vt


def rotation_error(r: np.ndarray) -> float:
    """``max |R R^T - 1|`` (0 for an exact rotation)."""
    r = np.asarray(r, float)
    return float(np.max(np.abs(r @ np.swapaxes(r, -1, -2) - np.eye(3))))


def _ms_inertia_columns(org: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """``[n, 3(a), 6]``: inertia (six) contributed by unit ``MS_a`` of each link through
    ``[o x]^T [R MS x] + [R MS x]^T [o x]`` (eq. 6)."""
    ms = np.swapaxes(rot, -1, -2)              # ms[j, a] = R_j e_a
    sm = skew(ms)                               # [n, 3, 3, 3]
    so = skew(org)                              # [n, 3, 3]
    t = np.einsum("jki,jakl->jail", so, sm) + np.einsum("jaki,jkl->jail", sm, so)
    return six(t)


def regressor_phi_b(tree: Tree, rotations: dict[str, np.ndarray]) -> np.ndarray:
    """``Z`` (9 x 9n) with ``y = Z @ Phi_B`` for one posture (rotations used as given)."""
    org, rot = tree.origins_and_rotations(rotations)
    n = len(tree.links)
    z = np.zeros((9, n, 9))
    z[:3, :, :3] = np.transpose(rot, (1, 0, 2))                       # h = sum R_j MS_j
    z[3:, :, :3] = np.transpose(_ms_inertia_columns(org, rot), (2, 0, 1))
    rer = np.einsum("jab,kbc,jdc->jkad", rot, _E6, rot)                # R E_k R^T
    z[3:, :, 3:] = np.transpose(six(rer), (2, 0, 1))
    return z.reshape(9, 9 * n)


def regressor_phi_s(tree: Tree, rotations: dict[str, np.ndarray]) -> np.ndarray:
    """``Z_s`` (9 x (8n+1)) with ``y = Z_s @ Phi_s`` for one posture.

    Rotations are projected onto SO(3) first, so the ``J_yy`` terms collapse exactly into
    the single ``sum.J_yy`` column ``[0, 0, 0, 1, 1, 1, 0, 0, 0]``.
    """
    keys = list(rotations)
    proj = nearest_rotation(np.stack([np.asarray(rotations[k], float) for k in keys])) \
        if keys else np.zeros((0, 3, 3))
    rots = dict(zip(keys, proj))                    # one batched SVD for all links
    zb = regressor_phi_b(tree, rots).reshape(9, -1, 9)
    n = zb.shape[1]
    zs = np.zeros((9, n, 8))
    zs[:, :, :3] = zb[:, :, :3]                    # MS
    zs[:, :, 3] = zb[:, :, 3]                      # J_xx - J_yy  -> column of J_xx
    zs[:, :, 4] = zb[:, :, 5]                      # J_zz - J_yy  -> column of J_zz
    zs[:, :, 5:] = zb[:, :, 6:]                    # yz, zx, xy
    out = np.zeros((9, 8 * n + 1))
    out[:, :8 * n] = zs.reshape(9, 8 * n)
    out[3:, -1] = _EYE6
    return out


def phi_s_selector(n_links: int) -> np.ndarray:
    """``S`` ((8n+1) x 9n) with ``Phi_s = S @ Phi_B`` (eq. 11-12)."""
    s = np.zeros((8 * n_links + 1, 9 * n_links))
    for j in range(n_links):
        r, c = 8 * j, 9 * j
        s[r:r + 3, c:c + 3] = np.eye(3)
        s[r + 3, c + 3], s[r + 3, c + 4] = 1.0, -1.0
        s[r + 4, c + 5], s[r + 4, c + 4] = 1.0, -1.0
        s[r + 5:r + 8, c + 6:c + 9] = np.eye(3)
        s[-1, c + 4] = 1.0
    return s


# ----------------------------------------------------------------------------- targets

def posture_target(p: PostureOverall, total_mass_kg: float) -> np.ndarray:
    """The 9-vector ``[h, J0 six]`` of one posture."""
    c = np.asarray(p.com_base_m, float)
    j0 = np.asarray(p.inertia_com_base, float) + total_mass_kg * (c @ c * np.eye(3)
                                                                  - np.outer(c, c))
    return np.concatenate([total_mass_kg * c, six(j0)])


def _inertia_std6(inertia_std) -> np.ndarray:
    s = np.asarray(inertia_std, float)
    return np.full(6, float(s)) if s.ndim == 0 else six(s)


def posture_covariance(p: PostureOverall, total_mass_kg: float,
                       radius_m: float) -> tuple[np.ndarray, bool]:
    """``(cov9, given)``: covariance of the target and whether it came from the user's
    standard errors (False when the unit-free default filled any part of it)."""
    if p.covariance9 is not None:
        return np.asarray(p.covariance9, float), True
    m0, c = total_mass_kg, np.asarray(p.com_base_m, float)
    have_c, have_i = p.com_std_m is not None, p.inertia_std is not None
    if have_c:
        var_c = np.asarray(p.com_std_m, float) ** 2 * np.ones(3)
    if have_i:
        var_i = _inertia_std6(p.inertia_std) ** 2
    if not have_c:
        sig_h = (math.sqrt(np.mean(var_i)) / radius_m if have_i
                 else _DEFAULT_REL * m0 * radius_m)
        var_c = np.full(3, (sig_h / m0) ** 2)
    if not have_i:
        var_i = np.full(6, (math.sqrt(np.mean(var_c)) * m0 * radius_m) ** 2)
    # y = [m0 c, I6 + m0 q(c)], q = six(|c|^2 1 - c c^T): Jacobian wrt [c, I6]
    cx, cy, cz = c
    dq = np.array([[0, 2 * cy, 2 * cz], [2 * cx, 0, 2 * cz], [2 * cx, 2 * cy, 0],
                   [0, -cz, -cy], [-cz, 0, -cx], [-cy, -cx, 0]])
    jac = np.zeros((9, 9))
    jac[:3, :3] = m0 * np.eye(3)
    jac[3:, :3] = m0 * dq
    jac[3:, 3:] = np.eye(6)
    cov = jac @ np.diag(np.concatenate([var_c, var_i])) @ jac.T
    return cov, have_c and have_i


def whitener(cov: np.ndarray) -> np.ndarray:
    """``W`` with ``W cov W^T = 1`` (eigenvalues floored at 1e-12 of the largest)."""
    ev, vec = np.linalg.eigh(0.5 * (cov + cov.T))
    ev = np.maximum(ev, 1e-12 * max(ev[-1], 1e-300))
    return (vec / np.sqrt(ev)).T


def structural_whitener(total_mass_kg: float, radius_m: float) -> np.ndarray:
    """Unit-free row scaling of one posture's 9 rows: first moment by ``1/(M0 r)``, inertia
    by ``1/(M0 r^2)``. Identifiability is decided on rows scaled this way, not on the
    postures' covariances: which directions are null is a property of the rotations, and a
    very precise posture (output error) must not make a weakly seen but real direction
    look null relative to the best-seen one (nor an imprecise one hide a null one)."""
    return np.diag(np.concatenate([np.full(3, 1.0 / (total_mass_kg * radius_m)),
                                   np.full(6, 1.0 / (total_mass_kg * radius_m ** 2))]))


def reference_radius(postures: list[PostureOverall], total_mass_kg: float) -> float:
    """Largest radius of gyration about the COM over the postures, m (the unit-free scale)."""
    lam = max(np.linalg.eigvalsh(np.asarray(p.inertia_com_base, float))[-1] for p in postures)
    return math.sqrt(max(lam, 1e-300) / total_mass_kg)


# ----------------------------------------------------------------------------- result

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
    singular_vectors: np.ndarray | None = None   # [P, P] rows: the directions (column-
                                                 # equilibrated parameters) of singular_values

    @property
    def identified(self) -> bool:
        """True when every entry of Phi_s is determined."""
        return self.rank == len(self.names)

    def value(self, name: str) -> float:
        """Value of one named entry."""
        return float(self.values[self.names.index(name)])

    def to_json(self) -> dict:
        """The SPEC ``subset`` block (names, values, std, rank, condition_number) plus extras;
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
               "base_parameter_check": self.base_check, "warnings": list(self.warnings)}
        if self.consistent_values is not None:
            out["consistent_values"] = [num(v) for v in self.consistent_values]
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
        """Readable table: name, value, standard error."""
        width = max(len(n) for n in self.names)
        lines = [f"{'parameter':<{width}}  {'value':>12}  {'std':>10}"]
        for n, v, s in zip(self.names, self.values, self.std):
            vs = f"{v:12.5f}" if math.isfinite(v) else f"{'--':>12}"
            ss = f"{s:10.5f}" if math.isfinite(s) else f"{'--':>10}"
            lines.append(f"{n:<{width}}  {vs}  {ss}")
        lines.append(f"rank {self.rank} of {len(self.names)}, condition number "
                     f"{self.condition_number:.4g}, {self.n_postures} postures, "
                     f"reduced chi^2 {self.reduced_chi2:.3g} ({self.weights} weights)")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- the fit

def stacked_system(tree: Tree, postures: list[PostureOverall], total_mass_kg: float, *,
                   weighting: str = "auto"):
    """``(A_w, b_w, A, b, given)``: whitened and raw Phi_s systems stacked over postures
    (``weighting="plain"``: no whitening, ``given`` False)."""
    radius = reference_radius(postures, total_mass_kg)
    a_rows, b_rows, aw_rows, bw_rows, given = [], [], [], [], True
    for p in postures:
        a = regressor_phi_s(tree, p.rotations)
        b = posture_target(p, total_mass_kg)
        if weighting == "plain":
            w, given = np.eye(9), False
        else:
            cov, g = posture_covariance(p, total_mass_kg, radius)
            given &= g
            w = whitener(cov)
        a_rows.append(a)
        b_rows.append(b)
        aw_rows.append(w @ a)
        bw_rows.append(w @ b)
    return (np.vstack(aw_rows), np.concatenate(bw_rows), np.vstack(a_rows),
            np.concatenate(b_rows), given)


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
    bw = a_w @ basis
    bscale = np.linalg.norm(bw, axis=0)
    bscale[bscale == 0] = 1.0
    z_s, *_ = np.linalg.lstsq(bw / bscale, b_w, rcond=None)
    info = (bw / bscale).T @ (bw / bscale)
    cov_z = np.linalg.pinv(info) / np.outer(bscale, bscale)
    x = basis @ (z_s / bscale)
    cov = basis @ cov_z @ basis.T
    resid_w = b_w - a_w @ x
    dof = a_w.shape[0] - rank
    chi2 = float(resid_w @ resid_w / dof) if dof > 0 else float("nan")
    weights = "given" if given else ("plain" if weighting == "plain" else "assumed")
    if not given:
        if dof > 0:
            cov = cov * chi2
        else:
            cov = cov * np.nan
            warnings.append("no standard errors given and no redundancy: the standard errors "
                            "cannot be estimated")
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
                          singular_vectors=vt)
    if consistent:
        from rigtool.identify.subset.consistent import consistent_fit
        consistent_fit(tree, result, a_w, b_w, total_mass_kg)
    return result


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
