"""Per-link (segment) parameters from the minimal set ``phi_B`` completed by a prior.

``phi_B`` fixes each link's ``MS_j`` and ``J_j`` (SPEC, paper 002 eq. 1-3) but not how the
mass of a subtree splits between its links: behind a spherical joint a child's mass only
shows through ``M_c p_c`` and ``M_c [p_c x]^T [p_c x]`` on its parent. This module finds
per-link standard parameters ``pi_j`` (10 each, about the link origin, link axes) that

- reproduce ``phi_B`` within its covariance (``phi_B = A pi``, linear, see
  :func:`phi_b_matrix`); hard equality when no covariance is given (noise-free ``phi_B``),
- give exactly the weighed total mass ``sum_j m_j = M0``,
- are physically consistent (pseudo-inertia LMI per link, paper 000 Thm. 3),
- and, where the measurement is silent, stay close to a prior (anthropometric table or CAD):
  a Gaussian maximum-a-posteriori fit whose prior residual per link is linear in ``pi_j``
  (relative mass deviation; COM deviation ``(h - m c0) / (m0 sigma_c)``; the inertia about
  the origin minus the prior's shape scaled to the link's mass, ``I_o - m (I0/m0 + [c0 x]^T
  [c0 x])``, relative to the prior's size with the COM's uncertainty propagated through the
  parallel-axis term; the paper-000 eq. 25 regulariser written in a form that keeps the
  problem a convex SDP).

What came from the measurement and what from the prior is reported per quantity (mass,
COM, inertia about the COM) by its posterior standard deviation next to its prior one
(linear-Gaussian posterior of the same problem, ignoring the LMI when it is not active) and
a flag: ``"measured"`` when ``phi_B`` and ``M0`` alone fix the quantity (its gradient is
orthogonal to every direction they leave free) and its posterior std is below half the
prior's; ``"prior"`` when they leave it free and the posterior std stays above 0.9 of the
prior's; ``"both"`` otherwise (a leaf's COM, for one: its ``m c`` is measured, its mass is
not).

Conventions: SI units; link frames as in :mod:`rigtool.tree`; ``phi_B`` per link
``MS_x, MS_y, MS_z, J_xx, J_yy, J_zz, J_yz, J_zx, J_xy``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.errors import ConfigError, InputError
from rigtool.identify.common.consistency import SOLVER, consistency_constraints
from rigtool.inertia import InertialParams, inertia_matrix, parallel_axis
from rigtool.report import anthropometry as anthro
from rigtool.tree import PHI_B_FIELDS, Tree

# Columns of pi (m, h_x, h_y, h_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz) feeding the J entries
# of phi_B in its order (J_xx, J_yy, J_zz, J_yz, J_zx, J_xy).
_J_COLS = (4, 7, 9, 8, 6, 5)
# (row, col) of the 3x3 tensor for each J entry of phi_B.
_J_IDX = ((0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1))
# (row, col) of the 3x3 tensor for the six pi inertia entries (xx, xy, xz, yy, yz, zz).
_PI_IDX = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))

#: A quantity whose posterior std is below this fraction of its prior std is "measured";
#: above ``PRIOR_RATIO`` it is "prior"; in between "both".
MEASURED_RATIO = 0.5
PRIOR_RATIO = 0.9

#: Default uncertainty of CAD values when the manifest gives none (rigtool's own choices:
#: CAD models usually miss cables, fasteners and density variations by several per cent).
CAD_MASS_REL_STD = 0.10
CAD_COM_STD_M = 0.01
CAD_INERTIA_REL_STD = 0.20


@dataclass(frozen=True)
class Prior:
    """Prior knowledge of one link: table or CAD values with their uncertainty.

    Attributes
    ----------
    mass_kg, mass_std : float
        Prior mass and its standard deviation, kg.
    com_m : ndarray (3,)
        Prior COM in the link frame, m.
    com_std : float or ndarray (3,)
        Its standard deviation, m.
    inertia_com : ndarray (3, 3)
        Prior inertia about the COM, link axes, kg m^2.
    inertia_rel_std : float
        Relative standard deviation of the inertia (of each entry, relative to the size of
        the diagonal entries it involves).
    source : str
        Where the prior came from (e.g. ``"de Leva 1996: upper_arm (male)"`` or ``"CAD"``).
    """

    mass_kg: float
    mass_std: float
    com_m: np.ndarray
    com_std: float | np.ndarray
    inertia_com: np.ndarray
    inertia_rel_std: float
    source: str = "prior"


@dataclass
class LinkSegment:
    """Estimated parameters of one link and where each number came from.

    Attributes
    ----------
    name : str
    params : InertialParams
        Standard parameters about the link origin.
    mass_kg, mass_std : float
    com_m, com_std : ndarray (3,)
    inertia_com, inertia_com_std : ndarray (3, 3)
        Estimate and posterior standard deviations (linear-Gaussian).
    prior_std : dict
        ``{"mass": float, "com": (3,), "inertia_com": (3, 3)}``: the prior's own stds.
    source : dict
        Per quantity ``"mass"``, ``"com"`` (3 entries) and ``"inertia_com"`` (3x3):
        ``"measured"``, ``"both"`` or ``"prior"`` (module docstring: fixed by ``phi_B``
        and ``M0`` alone with posterior/prior std below ``MEASURED_RATIO``; left free by
        them with the ratio above ``PRIOR_RATIO``; otherwise both).
    prior_source : str
    """

    name: str
    params: InertialParams
    mass_kg: float
    mass_std: float
    com_m: np.ndarray
    com_std: np.ndarray
    inertia_com: np.ndarray
    inertia_com_std: np.ndarray
    prior_std: dict
    source: dict
    prior_source: str

    def to_json(self) -> dict:
        """JSON-ready dict (lists, SI units)."""
        return {"mass": self.mass_kg, "mass_std": self.mass_std,
                "com": self.com_m.tolist(), "com_std": self.com_std.tolist(),
                "inertia_com": self.inertia_com.tolist(),
                "inertia_com_std": self.inertia_com_std.tolist(),
                "prior_std": {"mass": float(self.prior_std["mass"]),
                              "com": np.asarray(self.prior_std["com"]).tolist(),
                              "inertia_com": np.asarray(self.prior_std["inertia_com"]).tolist()},
                "source": {"mass": self.source["mass"], "com": list(self.source["com"]),
                           "inertia_com": [list(r) for r in self.source["inertia_com"]]},
                "prior": self.prior_source}


@dataclass
class SegmentsResult:
    """Per-link parameters reproducing ``phi_B``.

    Attributes
    ----------
    links : dict[str, LinkSegment]
        In tree order.
    phi_b_fit : ndarray
        ``phi_B`` reproduced by the estimate.
    phi_b_residual : ndarray
        ``phi_b_fit - phi_B`` (same order as ``phi_B``).
    phi_b_residual_z : ndarray or None
        Residual in units of ``phi_B``'s standard deviation (None without a covariance).
    names : list[str]
        SPEC names of the ``phi_B`` entries.
    status : str
        Solver status.
    """

    links: dict[str, LinkSegment]
    phi_b_fit: np.ndarray
    phi_b_residual: np.ndarray
    phi_b_residual_z: np.ndarray | None
    names: list[str]
    status: str = "optimal"
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """JSON-ready dict for report.json (``"segments"`` block)."""
        out = {"links": {k: v.to_json() for k, v in self.links.items()},
               "phi_b_residual": dict(zip(self.names, self.phi_b_residual.tolist())),
               "status": self.status, "notes": list(self.notes)}
        if self.phi_b_residual_z is not None:
            out["phi_b_residual_z"] = dict(zip(self.names, self.phi_b_residual_z.tolist()))
        return out


# ----------------------------------------------------------------------------- linear maps

def phi_b_matrix(tree: Tree) -> np.ndarray:
    """``A`` (``9 n x 10 n``) with ``phi_B = A @ concat(pi_j)`` (SPEC minimal parameters).

    Loops over links (tree structure, not samples).
    """
    n = len(tree.links)
    parents = tree.parent_index()
    a = np.zeros((9 * n, 10 * n))
    for j in range(n):
        r, c = 9 * j, 10 * j
        a[r:r + 3, c + 1:c + 4] = np.eye(3)
        for k, col in enumerate(_J_COLS):
            a[r + 3 + k, c + col] = 1.0
    for ci in range(1, n):                      # every link's mass reaches each ancestor
        p = tree.joint_center(ci)               # through the child c of that ancestor
        pa = parallel_axis(1.0, p)
        col_entries = np.concatenate([p, [pa[i] for i in _J_IDX]])
        j = parents[ci]
        for k in _subtree(parents, ci):
            a[9 * j:9 * j + 9, 10 * k] += col_entries
    return a


def _subtree(parents: list[int], root: int) -> list[int]:
    out = [root]
    for i in range(root + 1, len(parents)):
        if parents[i] in out:
            out.append(i)
    return out


def _prior_rows(prior: Prior) -> tuple[np.ndarray, np.ndarray]:
    """``(P, q)`` with the prior residual ``P @ pi_j - q`` (10 rows, module docstring)."""
    m0 = float(prior.mass_kg)
    c0 = np.asarray(prior.com_m, float)
    i0 = np.asarray(prior.inertia_com, float)
    sc = np.broadcast_to(np.asarray(prior.com_std, float), (3,))
    p = np.zeros((10, 10))
    q = np.zeros(10)
    p[0, 0] = 1.0 / prior.mass_std
    q[0] = m0 / prior.mass_std
    for k in range(3):
        p[1 + k, 0] = -c0[k] / (m0 * sc[k])
        p[1 + k, 1 + k] = 1.0 / (m0 * sc[k])
    shape = i0 / m0 + parallel_axis(1.0, c0)    # inertia about the origin per kg of mass
    d = np.sqrt(np.maximum(np.diag(i0), 1e-12 * max(np.trace(i0), 1e-30)))
    # The residual is about the origin, so the COM's own uncertainty enters through the
    # parallel-axis term: d(|c|^2 1 - c c^T)_rc / dc_k = 2 c_k d_rc - d_rk c_c - c_r d_ck,
    # propagated linearly (without it a far-off COM would make the inertia prior a tight,
    # unwarranted mass constraint).
    eye = np.eye(3)
    dpa = (2 * c0[None, None, :] * eye[:, :, None] - eye[:, None, :] * c0[None, :, None]
           - c0[:, None, None] * eye[None, :, :])          # [r, c, k]
    s_pa = m0 * np.sqrt(np.sum((dpa * sc[None, None, :]) ** 2, axis=2))
    for k, (r, c) in enumerate(_PI_IDX):
        s = float(np.hypot(prior.inertia_rel_std * d[r] * d[c], s_pa[r, c]))
        p[4 + k, 4 + k] = 1.0 / s
        p[4 + k, 0] = -shape[r, c] / s
    return p, q


def _check_prior(name: str, prior: Prior) -> None:
    def bad(field_, msg, found):
        raise ConfigError(msg, field=f"priors.{name}.{field_}", found=found)
    if not (np.isfinite(prior.mass_kg) and prior.mass_kg > 0):
        bad("mass_kg", "expected a positive mass", prior.mass_kg)
    if not (np.isfinite(prior.mass_std) and prior.mass_std > 0):
        bad("mass_std", "expected a positive standard deviation", prior.mass_std)
    cs = np.asarray(prior.com_std, float)
    if not (np.all(np.isfinite(cs)) and np.all(cs > 0)):
        bad("com_std", "expected positive standard deviations", prior.com_std)
    if not (np.isfinite(prior.inertia_rel_std) and prior.inertia_rel_std > 0):
        bad("inertia_rel_std", "expected a positive relative standard deviation",
            prior.inertia_rel_std)
    i0 = np.asarray(prior.inertia_com, float)
    if i0.shape != (3, 3) or not np.all(np.isfinite(i0)) or np.linalg.eigvalsh(
            0.5 * (i0 + i0.T))[0] < 0:
        bad("inertia_com", "expected a symmetric positive semidefinite 3x3 inertia", i0.tolist())


# ----------------------------------------------------------------------------- estimate

def _whitener(cov: np.ndarray) -> np.ndarray:
    """``W`` with ``W cov W^T = 1``; eigenvalues floored at 1e-12 of the largest (exactness)."""
    ev, vec = np.linalg.eigh(0.5 * (cov + cov.T))
    ev = np.maximum(ev, 1e-12 * max(ev[-1], 1e-300))
    return (vec / np.sqrt(ev)).T


def _solve(a, phi_b, w, p_blk, q_blk, mass_row, m0, n, scale, exact):
    import cvxpy as cp
    y = cp.Variable(10 * n)
    x = cp.multiply(scale, y)
    obj = cp.sum_squares(p_blk @ x - q_blk)
    cons = [mass_row @ x == m0]
    if exact:
        ref = max(np.max(np.abs(phi_b)), 1e-12)
        cons.append((a @ x - phi_b) / ref == 0)
    else:
        obj = obj + cp.sum_squares(w @ (a @ x - phi_b))
    for j in range(n):
        cons += consistency_constraints(x[10 * j:10 * j + 10])
    prob = cp.Problem(cp.Minimize(obj), cons)
    try:
        prob.solve(solver=SOLVER)
    except cp.SolverError:
        prob.solve(solver="SCS", eps=1e-9)
    return y.value, prob.status


def estimate_segments(tree: Tree, phi_b_values: np.ndarray, phi_b_cov: np.ndarray | None,
                      total_mass_kg: float, priors: dict[str, Prior]) -> SegmentsResult:
    """Physically consistent per-link parameters that reproduce ``phi_B``, completed by priors.

    Parameters
    ----------
    tree : Tree
        Links with joint centres (``params`` are not used).
    phi_b_values : ndarray (9 n,)
        ``phi_B`` in SPEC order.
    phi_b_cov : ndarray (9 n, 9 n) or None
        Its covariance; None (or all zeros) makes ``phi_B`` a hard equality.
    total_mass_kg : float
        ``M0``, matched exactly.
    priors : dict[str, Prior]
        One prior per link name (:func:`priors_from_specs` builds them from a manifest's
        ``segment`` keys or ``[links.prior]`` CAD tables).

    Returns
    -------
    SegmentsResult

    Raises
    ------
    ConfigError
        A link without a prior, a malformed prior, or no consistent solution (the message
        says how far ``phi_B`` and the mass are from any physical split).
    """
    n = len(tree.links)
    phi_b = np.asarray(phi_b_values, float).ravel()
    if phi_b.shape != (9 * n,) or not np.all(np.isfinite(phi_b)):
        raise InputError(f"phi_B needs {9 * n} finite values for {n} links",
                         field="phi_b_values", found=phi_b.shape)
    if not (np.isfinite(total_mass_kg) and total_mass_kg > 0):
        raise InputError("expected a positive total mass, kg", field="total_mass_kg",
                         found=total_mass_kg)
    missing = [nm for nm in tree.names if nm not in priors]
    if missing:
        raise ConfigError(f"no prior for link(s) {', '.join(missing)}: give `segment = "
                          "\"upper_arm\"` (de Leva 1996 table) or CAD `mass`, `com`, "
                          "`inertia_com` for each link", field="priors", found=missing)
    for nm in tree.names:
        _check_prior(nm, priors[nm])

    exact = phi_b_cov is None or not np.any(np.asarray(phi_b_cov, float))
    if not exact:
        cov = np.asarray(phi_b_cov, float)
        if cov.shape != (9 * n, 9 * n) or not np.all(np.isfinite(cov)):
            raise InputError(f"phi_B covariance must be a finite {9 * n}x{9 * n} matrix",
                             field="phi_b_cov", found=cov.shape)
        w = _whitener(cov)
    else:
        w = None
    a = phi_b_matrix(tree)
    p_blk = np.zeros((10 * n, 10 * n))
    q_blk = np.zeros(10 * n)
    scale = np.zeros(10 * n)
    for j, nm in enumerate(tree.names):
        pr = priors[nm]
        p_blk[10 * j:10 * j + 10, 10 * j:10 * j + 10], q_blk[10 * j:10 * j + 10] = \
            _prior_rows(pr)
        r = max(float(np.linalg.norm(pr.com_m)),
                float(np.sqrt(np.trace(pr.inertia_com) / pr.mass_kg)), 1e-2)
        scale[10 * j:10 * j + 10] = pr.mass_kg * np.array([1, r, r, r] + [r * r] * 6)
    mass_row = np.zeros(10 * n)
    mass_row[0::10] = 1.0

    y, status = _solve(a, phi_b, w, p_blk, q_blk, mass_row, total_mass_kg, n, scale, exact)
    if y is None or status not in ("optimal", "optimal_inaccurate"):
        raise ConfigError(
            f"no physically consistent split of phi_B among the links ({status}): "
            "phi_B, the joint centres or the total mass contradict each other", field="phi_b")
    pi = scale * np.asarray(y, float)
    fit = a @ pi
    resid = fit - phi_b
    resid_z = None if w is None else w @ resid

    # Linear-Gaussian posterior (equality constraints by null-space projection).
    h = p_blk.T @ p_blk
    eq = [mass_row[None, :]]
    if exact:
        eq.append(a)
    else:
        h = h + a.T @ w.T @ w @ a
    post = _constrained_cov(h, np.vstack(eq))
    prior_cov = _constrained_cov(p_blk.T @ p_blk, mass_row[None, :] * 0.0)

    # Directions of pi that phi_B and M0 leave free (scaled variables: balanced units).
    null_s = _null_basis(np.vstack([mass_row[None, :], a]) * scale[None, :])

    links = {}
    for j, nm in enumerate(tree.names):
        sl = slice(10 * j, 10 * j + 10)
        links[nm] = _link_result(nm, pi[sl], post[sl, sl], prior_cov[sl, sl], priors[nm],
                                 null_s[sl], scale[sl])
    names = [f"{nm}.{f}" for nm in tree.names for f in PHI_B_FIELDS]
    notes = []
    if status != "optimal":
        notes.append(f"solver status {status}")
    return SegmentsResult(links, fit, resid, resid_z, names, status, notes)


def _null_basis(c: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """Orthonormal basis (columns) of the null space of ``c``."""
    _, s, vt = np.linalg.svd(c)
    rank = int(np.sum(s > rtol * s[0])) if s.size else 0
    return vt[rank:].T


def _constrained_cov(h: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Covariance ``N (N^T H N)^+ N^T`` with ``N`` a basis of the null space of ``c``."""
    if np.any(c):
        u, s, vt = np.linalg.svd(c)
        rank = int(np.sum(s > 1e-10 * s[0]))
        nb = vt[rank:].T
    else:
        nb = np.eye(h.shape[0])
    return nb @ np.linalg.pinv(nb.T @ h @ nb, rcond=1e-13, hermitian=True) @ nb.T


def _derived(pi: np.ndarray) -> np.ndarray:
    """``[m, c (3), inertia_com 6 (xx, xy, xz, yy, yz, zz)]`` of one link."""
    m = pi[0]
    c = pi[1:4] / m
    ic = inertia_matrix(pi[4:]) - parallel_axis(m, c)
    return np.concatenate([[m], c, [ic[r, k] for r, k in _PI_IDX]])


def _jacobian(pi: np.ndarray) -> np.ndarray:
    # Central differences of a 10 -> 10 closed form; cheaper to read than the analytic form.
    jac = np.zeros((10, 10))
    step = 1e-6 * np.maximum(np.abs(pi), 1e-6 * abs(pi[0]) + 1e-12)
    for k in range(10):
        e = np.zeros(10)
        e[k] = step[k]
        jac[:, k] = (_derived(pi + e) - _derived(pi - e)) / (2 * step[k])
    return jac


def _sym6(v: np.ndarray) -> np.ndarray:
    return inertia_matrix(np.asarray(v))


def _link_result(name: str, pi: np.ndarray, post: np.ndarray, prior_cov: np.ndarray,
                 prior: Prior, null_s: np.ndarray, scale: np.ndarray) -> LinkSegment:
    params = InertialParams(pi)
    jac = _jacobian(pi)
    post_std = np.sqrt(np.maximum(np.diag(jac @ post @ jac.T), 0.0))
    prior_std = np.sqrt(np.maximum(np.diag(jac @ prior_cov @ jac.T), 0.0))
    ratio = post_std / np.maximum(prior_std, 1e-300)
    # A quantity is fixed by the measurement alone when its gradient has no component
    # along the directions phi_B and M0 leave free; otherwise the prior had a say, however
    # small its posterior std (e.g. a leaf's COM: measured m c over a prior-split m).
    g = jac * scale[None, :]
    free = np.linalg.norm(g @ null_s, axis=1) > 1e-6 * np.linalg.norm(g, axis=1)
    flags = np.where(~free, np.where(ratio < MEASURED_RATIO, "measured", "both"),
                     np.where(ratio > PRIOR_RATIO, "prior", "both"))
    flag3 = np.empty((3, 3), dtype=object)
    for k, (r, c) in enumerate(_PI_IDX):
        flag3[r, c] = flag3[c, r] = str(flags[4 + k])
    return LinkSegment(
        name=name, params=params, mass_kg=params.mass, mass_std=float(post_std[0]),
        com_m=params.com, com_std=post_std[1:4], inertia_com=params.inertia_com,
        inertia_com_std=_sym6(post_std[4:]),
        prior_std={"mass": float(prior_std[0]), "com": prior_std[1:4],
                   "inertia_com": _sym6(prior_std[4:])},
        source={"mass": str(flags[0]), "com": [str(f) for f in flags[1:4]],
                "inertia_com": flag3.tolist()},
        prior_source=prior.source)


# ----------------------------------------------------------------------------- priors

def prior_from_table(segment: str, *, body_mass_kg: float, proximal_m: np.ndarray,
                     distal_m: np.ndarray, sex: str = "male",
                     mass_rel_std: float = anthro.MASS_REL_STD,
                     com_std_fraction: float = anthro.COM_STD_FRACTION,
                     inertia_rel_std: float = anthro.INERTIA_REL_STD) -> Prior:
    """Prior of a human segment from de Leva (1996) Table 4 (:mod:`rigtool.report.anthropometry`).

    Parameters
    ----------
    segment : str
        Table segment or alias (``"upper_arm"``, ``"forearm"``, ``"thigh"``, ...).
    body_mass_kg : float
        Whole-body mass the table's mass fractions refer to, kg.
    proximal_m, distal_m : ndarray (3,)
        The table's segment endpoints in the link frame, m (e.g. shoulder and elbow joint
        centres for the upper arm).
    sex : {"male", "female"}
    mass_rel_std, com_std_fraction, inertia_rel_std : float
        Prior uncertainties: relative mass, COM as a fraction of segment length, relative
        inertia (rigtool's defaults, not published figures).

    Returns
    -------
    Prior
    """
    row = anthro.table_row(segment, sex)
    mass, com, inertia, length = anthro.segment_inertia(
        row, body_mass_kg=body_mass_kg, proximal_m=proximal_m, distal_m=distal_m)
    key = anthro.ALIASES.get(segment, segment)
    return Prior(mass, mass_rel_std * mass, com, com_std_fraction * length, inertia,
                 inertia_rel_std, f"de Leva 1996 Table 4: {key} ({sex}, {row.endpoints})")


def priors_from_specs(tree: Tree, specs: dict, *, body_mass_kg: float,
                      sex: str | None = None) -> dict[str, Prior]:
    """One :class:`Prior` per link from the manifest's prior specifications.

    Parameters
    ----------
    tree : Tree
        The object's links (joint centres give default segment endpoints).
    specs : dict[str, LinkPriorSpec]
        Per link name, an object with the attributes of :class:`rigtool.config.LinkPriorSpec`
        (``segment``, ``segment_start_m``, ``segment_end_m``, ``mass_kg``, ``com_m``,
        ``inertia_com``, ``mass_std``, ``com_std``, ``inertia_rel_std``). A link without a
        spec whose name names a table segment (``"left_forearm"``) uses the table.
    body_mass_kg : float
        Whole-body mass for table fractions (the object's total mass), kg.
    sex : {"male", "female"} or None
        Table to use; None uses the male table and says so in ``Prior.source``.

    Returns
    -------
    dict[str, Prior]

    Raises
    ------
    ConfigError
        A link with no usable prior, an unknown segment, or segment endpoints that are
        missing or coincide. Table endpoints default to the link origin (its joint centre)
        and the joint centre of its only child; the base link and links with no or several
        children need ``segment_start``/``segment_end``.
    """
    out: dict[str, Prior] = {}
    table_sex = sex or "male"
    for i, link in enumerate(tree.links):
        spec = specs.get(link.name)
        f = f"links[{i}]"
        if spec is not None and getattr(spec, "mass_kg", None) is not None:
            m = float(spec.mass_kg)
            out[link.name] = Prior(
                m, spec.mass_std if spec.mass_std is not None else CAD_MASS_REL_STD * m,
                np.asarray(spec.com_m, float),
                spec.com_std if spec.com_std is not None else CAD_COM_STD_M,
                np.asarray(spec.inertia_com, float),
                spec.inertia_rel_std if spec.inertia_rel_std is not None
                else CAD_INERTIA_REL_STD, "CAD ([links.prior])")
            continue
        seg = getattr(spec, "segment", None) if spec is not None else None
        seg = seg or anthro.segment_for_name(link.name)
        if seg is None:
            raise ConfigError(
                f"link '{link.name}' has no prior for its own mass, COM and inertia: give "
                "segment = \"upper_arm\" (de Leva 1996 table: head, trunk, upper_arm, forearm, "
                "hand, thigh, shank, foot) or a [links.prior] table of CAD values (mass, com, "
                "inertia_com)", field=f"{f}.segment")
        if anthro.ALIASES.get(seg, seg) not in anthro.DE_LEVA_1996["male"]:
            raise ConfigError("unknown segment; expected one of " + ", ".join(
                anthro.DE_LEVA_1996["male"]), field=f"{f}.segment", found=seg)
        start = getattr(spec, "segment_start_m", None) if spec is not None else None
        end = getattr(spec, "segment_end_m", None) if spec is not None else None
        kids = [tree.index(c.name) for c in tree.children(link.name)]
        if start is None and i > 0:
            start = np.zeros(3)
        if end is None and len(kids) == 1:
            end = tree.joint_center(kids[0])
        for key, val in (("segment_start", start), ("segment_end", end)):
            if val is None:
                raise ConfigError(
                    f"link '{link.name}' ({seg}) needs {key} = [x, y, z]: the table's "
                    f"{'proximal' if key == 'segment_start' else 'distal'} endpoint in the "
                    "link frame, m (defaults exist only for the joint centre and a single "
                    "child's joint centre)", field=f"{f}.{key}")
        start, end = np.asarray(start, float), np.asarray(end, float)
        if not np.linalg.norm(end - start) > 1e-6:
            raise ConfigError("segment_start and segment_end coincide; expected the "
                              "segment's two endpoints", field=f"{f}.segment_end",
                              found=end.tolist())
        pr = prior_from_table(seg, body_mass_kg=body_mass_kg, proximal_m=start, distal_m=end,
                              sex=table_sex)
        if sex is None:
            pr = Prior(pr.mass_kg, pr.mass_std, pr.com_m, pr.com_std, pr.inertia_com,
                       pr.inertia_rel_std, pr.source + "; sex not given, male table")
        out[link.name] = pr
    return out
