"""The subset stage's linear model: per locked posture, the 9-vector target ``y = [h, J0]``
(the first moment and the inertia about the base-link origin, base-link frame) as linear
maps of Phi_B and of Phi_s (paper 002 eq. 5-12), with each posture's covariance of ``y``
and the whitening that stacks the postures into one weighted system
(rigtool.identify.subset.fit states the conventions and does the fit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rigtool.inertia import skew
from rigtool.tree import Tree

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
    rotation_cov : dict or None
        Link name -> covariance (3, 3, rad^2) of the error of ``rotations[link]``, as the
        rotation vector ``delta`` of ``R = R_est exp([delta x])``; the subset fit then
        carries it into the rows' covariance (:func:`rotation_row_covariance`).
    shared_errors : dict or None
        Errors this posture shares with others: per shared cause (a key, the same in every
        posture it moves), the 9-vector by which it moves ``[h, J0 six]`` at one standard
        deviation. ``covariance9`` holds their share (the outer products); the subset fit
        takes them as one cause across the postures (:func:`stacked_system`).
    """

    name: str
    com_base_m: np.ndarray
    com_std_m: np.ndarray | None
    inertia_com_base: np.ndarray
    inertia_std: np.ndarray | float | None
    rotations: dict[str, np.ndarray]
    covariance9: np.ndarray | None = None
    rotation_cov: dict[str, np.ndarray] | None = None
    shared_errors: dict[str, np.ndarray] | None = None


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


def rotation_row_covariance(tree: Tree, p: PostureOverall, phi_s: np.ndarray,
                            step_rad: float = 1e-6) -> np.ndarray | None:
    """Covariance (9, 9) that the errors of a posture's link rotations add to its row
    ``y - Z_s(R) Phi_s``: ``G C_R G^T`` with ``G = d(Z_s(R exp([delta x])) Phi_s) / d delta``
    (central differences, one triple per link) at an estimate ``phi_s``, ``C_R`` the
    rotations' covariance (``p.rotation_cov``, links independent). None when the posture
    gives none. The regressor holds the measured rotations as exact; each posture's mean
    rotation carries the marker noise of its frames (~6e-5 rad at 0.2 mm on the demo's
    links), which on the two-link object raised Phi_s's chi^2 from 20.0 to 22.3 for 17
    numbers (benchmarks/RESULTS.md, "Speed and memory")."""
    if not p.rotation_cov:
        return None
    from scipy.spatial.transform import Rotation

    cov = np.zeros((9, 9))
    for link, c_r in p.rotation_cov.items():
        if link not in p.rotations or not np.all(np.isfinite(c_r)):
            continue
        g = np.zeros((9, 3))
        for a in range(3):
            turn = Rotation.from_rotvec(step_rad * np.eye(3)[a]).as_matrix()
            ys = []
            for sign in (1.0, -1.0):
                rots = dict(p.rotations)
                rots[link] = np.asarray(p.rotations[link], float) @ (
                    turn if sign > 0 else turn.T)
                ys.append(regressor_phi_s(tree, rots) @ phi_s)
            g[:, a] = (ys[0] - ys[1]) / (2.0 * step_rad)
        cov += g @ np.asarray(c_r, float) @ g.T
    return cov


def stacked_system(tree: Tree, postures: list[PostureOverall], total_mass_kg: float, *,
                   weighting: str = "auto", extra_cov: list | None = None):
    """``(A_w, b_w, A, b, given)``: whitened and raw Phi_s systems stacked over postures
    (``weighting="plain"``: no whitening, ``given`` False). ``extra_cov``: per posture a
    covariance (9, 9) added to its own before whitening, or None.

    Errors the postures share (``PostureOverall.shared_errors``, one cause moving several
    postures) make the stacked rows' covariance dense: each posture is whitened by its own
    covariance less their share, and the stack then by ``1 + U U^T`` (``U`` the shared
    errors' whitened columns), so that the rows are white as a whole (generalised least
    squares with the full covariance)."""
    radius = reference_radius(postures, total_mass_kg)
    a_rows, b_rows, aw_rows, bw_rows, given = [], [], [], [], True
    shared = (sorted({k for p in postures for k in (p.shared_errors or {})})
              if weighting != "plain" else [])
    u_rows = []
    for i, p in enumerate(postures):
        a = regressor_phi_s(tree, p.rotations)
        b = posture_target(p, total_mass_kg)
        if weighting == "plain":
            w, given = np.eye(9), False
        else:
            cov, g = posture_covariance(p, total_mass_kg, radius)
            given &= g
            if extra_cov is not None and extra_cov[i] is not None:
                cov = cov + extra_cov[i]
            u = np.zeros((9, len(shared)))
            for k, key in enumerate(shared):
                if key in (p.shared_errors or {}):
                    u[:, k] = p.shared_errors[key]
            w = whitener(cov - u @ u.T)
            u_rows.append(w @ u)
        a_rows.append(a)
        b_rows.append(b)
        aw_rows.append(w @ a)
        bw_rows.append(w @ b)
    a_w, b_w = np.vstack(aw_rows), np.concatenate(bw_rows)
    if shared:
        u_w = np.vstack(u_rows)
        w_all = whitener(np.eye(len(b_w)) + u_w @ u_w.T)
        a_w, b_w = w_all @ a_w, w_all @ b_w
    return a_w, b_w, np.vstack(a_rows), np.concatenate(b_rows), given


__all__ = ["PostureOverall", "six", "nearest_rotation", "rotation_error", "regressor_phi_b",
           "regressor_phi_s", "phi_s_selector", "posture_target", "posture_covariance",
           "whitener", "structural_whitener", "reference_radius", "stacked_system",
           "rotation_row_covariance"]
