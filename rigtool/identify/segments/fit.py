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
from rigtool.identify.segments.priors import (_PI_IDX, Prior, _check_prior, _prior_rows,
                                              prior_from_table, priors_from_specs)
from rigtool.inertia import InertialParams, inertia_matrix, parallel_axis, principal_moments_std
from rigtool.lsq import scaled_pinv
from rigtool.tree import PHI_B_FIELDS, Tree

# Columns of pi (m, h_x, h_y, h_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz) feeding the J entries
# of phi_B in its order (J_xx, J_yy, J_zz, J_yz, J_zx, J_xy).
_J_COLS = (4, 7, 9, 8, 6, 5)
# (row, col) of the 3x3 tensor for each J entry of phi_B.
_J_IDX = ((0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1))

#: A quantity whose posterior std is below this fraction of its prior std is "measured";
#: above ``PRIOR_RATIO`` it is "prior"; in between "both".
MEASURED_RATIO = 0.5
PRIOR_RATIO = 0.9

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
    principal_moments_std : ndarray (3,) or None
        Standard errors of the principal moments about the COM (ascending, as
        ``numpy.linalg.eigh`` orders them), kg m^2: first order in the six inertia entries'
        full posterior covariance (``d lambda_k = v_k^T dI v_k``).
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
    principal_moments_std: np.ndarray | None = None

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
                "prior": self.prior_source,
                **({} if self.principal_moments_std is None else
                   {"principal_moments_std": np.asarray(self.principal_moments_std).tolist()})}


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

    # Linear-Gaussian posterior: the prior updated by phi_B and M0 (exact: zero variance)
    prior_cov = _constrained_cov(p_blk.T @ p_blk, mass_row[None, :] * 0.0)
    post = _posterior_cov(prior_cov, np.vstack([mass_row[None, :], a]),
                          np.zeros((9 * n, 9 * n)) if exact else cov)

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


def _posterior_cov(prior_cov: np.ndarray, rows: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """The prior's covariance updated by measurements ``rows @ pi`` (the first row exact:
    the total mass; the others of covariance ``cov``): ``S_p - S_p R^T (R S_p R^T + C)^+
    R S_p``, the Kalman form.

    Why not the information form ``(P^T P + R^T C^-1 R)^-1``: phi_B's standard errors are
    six to eight orders below the prior's, so the information matrix spans twelve orders
    or more, and the directions phi_B leaves free (a subtree's mass against its parent's
    first moment and inertia: the split of the mass between links) have the smallest
    eigenvalues; a pseudo-inverse cut at a relative 1e-13 dropped them and reported their
    variance as zero (a trunk's mass 0.09 kg against a prior of 4.3 kg, 12 standard errors
    off on the independent test bed). The Kalman form inverts the prior predictive
    covariance of the measurements, whose scale is the prior's."""
    c_full = np.zeros((rows.shape[0], rows.shape[0]))
    c_full[1:, 1:] = cov
    pred = rows @ prior_cov @ rows.T + c_full
    gain = prior_cov @ rows.T @ scaled_pinv(0.5 * (pred + pred.T))
    post = prior_cov - gain @ rows @ prior_cov
    return 0.5 * (post + post.T)


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
    post_cov = jac @ post @ jac.T
    post_std = np.sqrt(np.maximum(np.diag(post_cov), 0.0))
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
        prior_source=prior.source,
        principal_moments_std=principal_moments_std(params.inertia_com, post_cov[4:, 4:]))


# re-exported: the priors live in rigtool.identify.segments.priors
__all__ = ["Prior", "LinkSegment", "SegmentsResult", "phi_b_matrix", "estimate_segments",
           "prior_from_table", "priors_from_specs", "MEASURED_RATIO", "PRIOR_RATIO"]
