"""Overall inertial properties of one locked posture from its free vibration (paper 002 §2.1).

With the joints locked the object is one rigid body fixed to the platform. Per frame, in
platform components about the platform origin (see rigtool.identify.calibration.equation_error)::

    Y(a - g, w, w_dot) (pi_platform + T pi_object) = w_springs

``T`` is the (linear) map from the object's parameters in its base-link frame to the
platform frame (the base link's pose on the platform, from its markers). The platform and
springs are known from calibration, the object's mass is weighed, so the unknowns are the
object's first moment and inertia about the base-link origin: 9 numbers.

Spring models: ``"exact"`` (default) evaluates every spring from the measured geometry;
``"linear"`` is paper 002's stiffness-matrix model, ``w = w(q_mean) - K (q - q_mean)`` with
``K`` the elastic + geometric stiffness at the capture's mean pose (rigtool.rig).

Row weighting: ``"noise"`` (default; 1/sigma per wrench component from a first pass),
``"plain"`` (unweighted: N and N m mixed as they come), ``"dual-metric"`` (paper 004: the
residual wrench measured by the inverse spatial inertia of the vibrating assembly, which is
unit- and coordinate-independent; convex through a Schur-complement LMI).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.identify.common.consistency import consistency_constraints, solve_problem, solve_triangle
from rigtool.lsq import (compensated_triangle, noise_moments, reduce_to_triangle,
                         sensitivity, solve_compensated, solve_wls)
from rigtool.identify.common.platform_motion import CaptureMotion, equation_rows
from rigtool.identify.common.propagate import jacobian_fd
from rigtool.identify.posture.base_pose import pose_added_covariance
from rigtool.identify.posture.breathing import BreathInput, internal_columns
from rigtool.identify.posture.soft_tissue import TissueElement, tissue_columns
from rigtool.identify.posture.support import support_columns
from rigtool.kinematics.support_motion import SupportMotion
from rigtool.inertia import (PI9_TO_SUBSET_ORDER, InertialParams, com_and_inertia,
                             regressor_body, skew, transform_params)
from rigtool.rig import Rig, linearised_stiffness, spring_wrench, spring_wrench_regressor

SPRING_MODELS = ("exact", "linear")
WEIGHTINGS = ("noise", "plain", "dual-metric")


def transform_matrix(rotation: np.ndarray, translation_m: np.ndarray) -> np.ndarray:
    """10x10 ``T`` with ``transform_params(pi, R, p) == T @ pi`` (the map is linear)."""
    return np.stack([transform_params(e, rotation, translation_m) for e in np.eye(10)], axis=1)


def _rate_of(cap: CaptureMotion) -> float:
    """The capture's frame rate, Hz."""
    return float(1.0 / np.median(np.diff(cap.time_s)))


def _to_body(rot: np.ndarray, w_lab: np.ndarray) -> np.ndarray:
    rt = np.swapaxes(rot, -1, -2)
    return np.concatenate([np.einsum("tij,tj...->ti...", rt, w_lab[:, :3]),
                           np.einsum("tij,tj...->ti...", rt, w_lab[:, 3:])], axis=1)


def spring_wrench_body(rig: Rig, cap: CaptureMotion, *, model: str = "exact") -> np.ndarray:
    """Total spring wrench ``[T, 6]`` in platform components about its origin.

    The elastic part comes from the raw (unfiltered) pose and is passed through the capture's
    filter, so both sides of the equation see the same filter; the damping part comes from
    the filtered velocities. ``model="linear"`` replaces the exact elastic wrench by paper
    002's stiffness-matrix model about the capture's mean pose (``w0 - K q``).
    """
    if model == "exact":
        w_lab = spring_wrench(rig, cap.rotation_raw, cap.position_raw)
        rot = cap.rotation_raw
    elif model == "linear":
        ok = np.all(np.isfinite(cap.position_raw), axis=1)
        r_mean = Rotation.from_matrix(cap.rotation_raw[ok]).mean().as_matrix()
        p_mean = cap.position_raw[ok].mean(axis=0)
        w0 = spring_wrench(rig, r_mean, p_mean)
        k = linearised_stiffness(rig, r_mean, p_mean).total
        rel = np.einsum("tij,kj->tik", cap.rotation_raw, r_mean)
        good = np.all(np.isfinite(rel), axis=(1, 2))
        dtheta = np.full(cap.position_raw.shape, np.nan)
        dtheta[good] = Rotation.from_matrix(rel[good]).as_rotvec()
        dq = np.concatenate([cap.position_raw - p_mean, dtheta], axis=1)
        w_lab = w0 - dq @ k.T
        rot = cap.rotation_raw
    else:
        raise ValueError(f"spring model must be one of {SPRING_MODELS}")
    w_body = cap.filt(_to_body(rot, w_lab))
    if np.any(rig.damping > 0):
        n_spr = len(rig.springs)
        cols = spring_wrench_regressor(rig, cap.rotation, cap.position, cap.velocity_lab,
                                       cap.omega_lab)[..., 2 * n_spr:]
        w_body = w_body + _to_body(cap.rotation, cols) @ rig.damping
    return w_body


def spatial_inertia_basis() -> np.ndarray:
    """``[10, 6, 6]``: spatial inertia about the origin (body comps) is ``sum_k pi_k B_k``.

    ``Lambda = [[m 1, -[h x]], [[h x], I_o]]``; wrench ``= Lambda @ [a; w_dot]`` + velocity
    terms. Affine in the parameters, so the dual metric stays an LMI (paper 004 eq. 31-33).
    """
    from rigtool.inertia import inertia_matrix
    out = np.zeros((10, 6, 6))
    out[0, :3, :3] = np.eye(3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1.0
        out[1 + k, :3, 3:] = -skew(e)
        out[1 + k, 3:, :3] = skew(e)
    six_order = [0, 1, 2, 3, 4, 5]           # xx, xy, xz, yy, yz, zz as in pi[4:]
    for k in six_order:
        v = np.zeros(6)
        v[k] = 1.0
        out[4 + k, 3:, 3:] = inertia_matrix(v)
    return out


@dataclass(frozen=True)
class PostureResult:
    """Whole-object properties of one posture, in the base-link frame."""

    name: str
    mass: float
    com: np.ndarray
    com_std: np.ndarray
    inertia_com: np.ndarray
    inertia_com_std: np.ndarray
    params: InertialParams                # about the base-link origin (consistent fit)
    params_cov: np.ndarray                # 9x9 covariance of pi[1:] (h, I about origin)
    props_cov: np.ndarray                 # 12x12 covariance of [com (3), inertia_com (9)]
    unconstrained: InertialParams
    residual_rms: dict[str, float]
    measured_wrench: np.ndarray           # [T, 6] spring wrench (platform comps)
    fitted_wrench: np.ndarray             # [T, 6] model
    time_s: np.ndarray
    spring_model: str
    weighting: str
    warnings: list[str]
    mass_from_vibration: tuple[float, float] | None = None   # (kg, std) when asked
    covariance9: np.ndarray | None = None  # cov of [h (3), J0 six xx yy zz yz zx xy] (subset)
    compensated: bool = False              # errors-in-variables bias removed (noise probes)
    breath: dict | None = None             # the breath's model when fitted (posture/breathing):
                                           # beta (platform frame), its covariance, k
    tissue: dict | None = None             # the soft tissue's elements when fitted
                                           # (posture/soft_tissue): beta, its covariance
    considered: dict | None = None         # the considered tissue's share of the standard
                                           # errors (other_std) and its shifts (other_shared)


def dual_metric_rows(metric: np.ndarray) -> np.ndarray:
    """``L^T`` (6x6) with ``L L^T = M^-1``: premultiplying wrench rows by it measures their
    residual by the dual metric ``r^T M^-1 r`` of paper 004 (``M`` a spatial inertia in the
    rows' frame). ``L = V W^-1/2`` for ``M = V W V^T``; an intermediate estimate from poor
    data can make ``M`` indefinite, so its nearest positive definite metric is used (small
    eigenvalues floored at 1e-6 of the largest), which keeps a reweighting defined."""
    w, v = np.linalg.eigh(0.5 * (metric + metric.T))
    w = np.maximum(w, 1e-6 * max(float(w.max()), 1e-12))
    return (v / np.sqrt(w)).T


def _dual_metric_fit(a: np.ndarray, b: np.ndarray, metric_const: np.ndarray,
                     metric_basis: np.ndarray, x_fixed_prefix: np.ndarray | None,
                     consistent_map, scale: np.ndarray) -> np.ndarray:
    """``min sum_t r_t^T M(x)^-1 r_t``, ``r_t = a_t x - b_t``, ``M(x) = M0 + sum_k x_k B_k``.

    Paper 004 (eq. 31-33) writes one Schur-complement LMI per sample. Here the metric is the
    same for every frame (a rigid assembly, platform components), so
    ``sum_t r_t^T M^-1 r_t = tr(M^-1 R R^T)`` with ``R = [r_1 .. r_T]`` (6 x T). ``R``'s rows
    lie in the span of the columns of the stacked design, so with an orthonormal basis ``Q``
    of that span ``R R^T = (R Q)(R Q)^T`` exactly and one LMI
    ``[[M(x), R~(x)], [R~(x)^T, Z]] >> 0``, minimise ``tr Z``, does it with R~ only 6 x (P+1).
    """
    import cvxpy as cp
    t, r, p = a.shape
    stacked = np.concatenate([a.transpose(1, 2, 0).reshape(r * p, t),
                              b.T.reshape(r, t)], axis=0).T        # [T, r (P + 1)]
    q, _ = np.linalg.qr(stacked)
    # divided by sqrt(T): the same minimiser, but the residual block stays the size of one
    # frame's wrench next to M(x) whatever the capture's length (unscaled, a 1-minute
    # capture made Clarabel fail and the SCS fallback take ~20 s)
    a_red = np.einsum("trp,tk->rkp", a, q) / np.sqrt(t)             # [r, K, P]
    b_red = b.T @ q / np.sqrt(t)                                    # [r, K]
    y = cp.Variable(p)
    x = cp.multiply(scale, y)
    kdim = q.shape[1]
    r_tilde = cp.hstack([cp.reshape(a_red[:, k, :] @ x - b_red[:, k], (r, 1), order="F")
                         for k in range(kdim)])
    metric = metric_const + sum(x[k] * metric_basis[k] for k in range(p))
    z = cp.Variable((kdim, kdim), symmetric=True)
    block = cp.bmat([[metric, r_tilde], [r_tilde.T, z]])
    cons = [0.5 * (block + block.T) >> 0]
    if consistent_map is not None:
        cons += consistent_map(x)
    solve_problem(cp.Problem(cp.Minimize(cp.trace(z)), cons), y, "dual-metric fit")
    return np.asarray(scale * y.value, float)


def _considered_shifts(rig: Rig, cap: CaptureMotion, a_minus_g: np.ndarray,
                       considered: tuple[tuple[TissueElement, float], ...],
                       a: np.ndarray, ok: np.ndarray,
                       weights: np.ndarray | None) -> np.ndarray:
    """What tissue the fit leaves out (``fit_posture``'s ``considered_tissue``) moves the
    unknowns by, one column per element, scaled by its standard deviation ``[P, K]``: each
    element's wrench per kilogram at its point, regressed on the fit's rows ``a`` (its frames
    ``ok``, row ``weights``). Their covariance is its product with its transpose."""
    rate = _rate_of(cap)
    cols = np.stack([tissue_columns(a_minus_g, cap.omega_body, cap.omega_dot_body, rate, e)
                     @ np.concatenate([[1.0], e.point_platform_m]) for e, _ in considered],
                    axis=2)                                                  # [T, 6, K]
    # frames the element has not settled in yet carry none of its wrench (a lower bound)
    rows = np.nan_to_num(equation_rows(rig, cap.rotation, cols))[ok]
    sens = sensitivity(a, rows, row_weights=weights)                         # [P, K]
    return sens * np.sqrt(np.array([v for _, v in considered], float))


def fit_posture(rig: Rig, platform: InertialParams, cap: CaptureMotion, *,
                base_rotation_platform: np.ndarray, base_position_platform: np.ndarray,
                total_mass_kg: float, spring_model: str = "exact", weighting: str = "noise",
                consistent: bool = True, fit_mass: bool = False,
                breath: BreathInput | None = None,
                support: SupportMotion | None = None,
                tissue: tuple[TissueElement, ...] = (),
                rows_cache: dict | None = None,
                added_cov: np.ndarray | None = None,
                base_pose_wander_cov: np.ndarray | None = None,
                considered_tissue: tuple[tuple[TissueElement, float], ...] = ()
                ) -> PostureResult:
    """Fit the object's first moment and inertia (mass known) from one locked posture.

    Parameters
    ----------
    rig : Rig
        Calibrated rig (springs with stiffness, free length, damping).
    platform : InertialParams
        Calibrated platform (platform frame, about its origin).
    cap : CaptureMotion
        The posture capture's platform motion.
    base_rotation_platform, base_position_platform : ndarray
        Base-link pose on the platform (base axes -> platform axes; origin in platform frame).
    total_mass_kg : float
        The object's weighed mass.
    spring_model : {"exact", "linear"}
    weighting : {"noise", "plain", "dual-metric"}
        Row weighting: 1/sigma per wrench component from a first pass; none (N and N m as
        they come); or the dual metric of paper 004 (inverse spatial inertia of the whole
        vibrating assembly, unit-independent).
    consistent : bool
        Physically consistent object parameters (pseudo-inertia LMI).
    fit_mass : bool
        Also report the mass identified from the vibration itself (a check on the scale).
    breath : BreathInput, optional
        The measured breath: its internal wrench joins the model with ``6k`` more unknowns
        (rigtool.identify.posture.breathing); the object's parameters are then its mean
        mass distribution. Noise or plain weighting only (dual-metric falls back to noise).
    support : SupportMotion, optional
        The body's measured motion on the platform (a compliant support under it): the
        body's wrench follows that motion (rigtool.identify.posture.support), with no new
        unknown; the parameters are the body's at its mean place.
    tissue : tuple of TissueElement
        Wobbling soft tissue (rigtool.identify.posture.soft_tissue): each element's mass and
        first moment join the unknowns; the object's parameters are then its mean mass
        distribution, tissue at rest included. Noise or plain weighting only.
    rows_cache : dict, optional
        Keeps the rows of the capture and its noise probes but the tissue's between calls
        that differ only in ``tissue`` (one dict per posture and set of other arguments:
        the profile over the tissue's frequency, rigtool.identify.posture.tissue_fit).
    added_cov : ndarray, optional
        A covariance added to the fit's, over all its unknowns (the object's nine, then the
        breath's and the tissue's): what a parameter profiled outside this fit (the tissue's
        frequency) moves in them.
    base_pose_wander_cov : ndarray (6, 6), optional
        What the base link's markers wandering on the skin add to the covariance of its
        pose ``[dt, delta]`` (``R = R_b exp([delta x])``, ``t = t_b + dt``;
        rigtool.identify.common.output_error.base_pose_covariance): the pose carries the
        fitted body into the base-link frame, and this much of its uncertainty is added
        to the reported covariance (rigtool.identify.posture.base_pose). The independent
        frames' share, micrometres, is left out as before.
    considered_tissue : tuple of (TissueElement, float)
        Soft tissue the model leaves out, each a point mass at its element's point with a
        variance (kg^2) and no mean: what it would move the unknowns by
        (:func:`rigtool.lsq.sensitivity` of its wrench, the element's columns at that
        point) is added to their covariance, the estimate unchanged (a "consider"
        covariance: Tapley, Schutz & Born 2004, Statistical Orbit Determination, 6.3).
    """
    if spring_model not in SPRING_MODELS:
        raise ValueError(f"spring_model must be one of {SPRING_MODELS}")
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}")
    warnings: list[str] = []
    if weighting == "dual-metric" and rig.locked_dofs:
        warnings.append("dual-metric weighting needs all six DOFs free; used noise weighting")
        weighting = "noise"
    if weighting == "dual-metric" and (breath is not None or support is not None
                                       or bool(tissue)):
        warnings.append("dual-metric weighting does not take the body's internal motion (the "
                        "breath's, the support's or the tissue's model); used noise weighting")
        weighting = "noise"
    tmat = transform_matrix(base_rotation_platform, base_position_platform)

    def body_rows(c: CaptureMotion, sup: SupportMotion | None):
        """Everything of a capture's rows but the tissue's (which alone changes from one
        element to the next: ``rows_cache`` keeps this part)."""
        # keyed by identity; the entry holds the capture and support themselves, so neither
        # can be collected and its id reused while the cache lives
        key = (id(c), id(sup))
        hit = rows_cache.get(key) if rows_cache is not None else None
        if hit is not None and hit[0] is c and hit[1] is sup:
            return hit[2]
        rt = np.swapaxes(c.rotation, -1, -2)
        a_minus_g = np.einsum("tij,tj->ti", rt, c.accel_lab - rig.gravity_lab)
        y_c = regressor_body(a_minus_g, c.omega_body, c.omega_dot_body)
        w_c = spring_wrench_body(rig, c, model=spring_model)
        a_full_c = y_c @ tmat                                # [T, 6, 10] in object params
        # the body's internal motion: the support's columns (in the object's parameters)
        # and the breath's (its own unknowns), each None without it
        support_c = breath_c = None
        if sup is not None:
            support_c = support_columns(*sup.filtered(c.filt, _rate_of(c)), a_minus_g,
                                        c.omega_body, c.omega_dot_body) @ tmat
            a_full_c = a_full_c + support_c
        if breath is not None:
            u, u_d, u_dd = (np.nan_to_num(v) for v in breath.at(c.time_s))
            breath_c = internal_columns(u, u_d, u_dd, a_minus_g, c.omega_body,
                                        c.omega_dot_body)
            a_full_c = np.concatenate([a_full_c, breath_c], axis=2)
        rows_a = equation_rows(rig, c.rotation, a_full_c)
        rows_b = equation_rows(rig, c.rotation, (w_c - y_c @ platform.pi)[..., None])[..., 0]
        ok_c = (c.valid & np.all(np.isfinite(rows_a), axis=(1, 2))
                & np.all(np.isfinite(rows_b), axis=1))
        out = (rows_a, rows_b, ok_c, y_c, w_c, support_c, breath_c, a_minus_g)
        if rows_cache is not None:
            rows_cache[key] = (c, sup, out)
        return out

    def rows(c: CaptureMotion, sup: SupportMotion | None = support):
        rows_a, rows_b, ok_c, y_c, w_c, support_c, breath_c, a_minus_g = body_rows(c, sup)
        tissue_c = None
        if tissue:
            tissue_c = np.concatenate([tissue_columns(a_minus_g, c.omega_body, c.omega_dot_body,
                                                      _rate_of(c), e) for e in tissue], axis=2)
            rows_t = equation_rows(rig, c.rotation, tissue_c)
            rows_a = np.concatenate([rows_a, rows_t], axis=2)
            ok_c = ok_c & np.all(np.isfinite(rows_t), axis=(1, 2))
        return rows_a, rows_b, ok_c, y_c, w_c, support_c, breath_c, tissue_c, a_minus_g

    # Memory: a 10-minute capture has 72 000 frames, and each [T, 6, 10] array is 35 MB;
    # the full-row arrays and the probes' rows are released as soon as their last use is
    # done (the mass check), so the fit below holds only what it needs.
    rows_a, rows_b, ok, y, w, support_cols, breath_cols, tissue_cols, a_minus_g = rows(cap)
    a = rows_a[ok][:, :, 1:]
    b = rows_b[ok] - rows_a[ok][:, :, 0] * total_mass_kg
    probes, probes_full = [], []
    if cap.noise_probes:
        sups = (support.probes if support is not None and support.probes
                else (support,) * len(cap.noise_probes))
        pr = [rows(p, q)[:3] for p, q in zip(cap.noise_probes, sups)]
        ok_p = ok.copy()
        for _, _, o in pr:
            ok_p &= o
        if ok_p.sum() >= 10:
            a0 = pr[0][0][ok_p]
            b0 = pr[0][1][ok_p] - a0[:, :, 0] * total_mass_kg
            da = np.stack([q[0][ok_p][:, :, 1:] - a0[:, :, 1:] for q in pr[1:]])
            db = np.stack([q[1][ok_p] - q[0][ok_p][:, :, 0] * total_mass_kg - b0
                           for q in pr[1:]])
            probes = [(da, db, int(ok.sum()))]
            if fit_mass:
                probes_full = [(np.stack([q[0][ok_p] - pr[0][0][ok_p] for q in pr[1:]]),
                                np.stack([q[1][ok_p] - pr[0][1][ok_p] for q in pr[1:]]),
                                int(ok.sum()))]
            del pr, a0, b0
    first = solve_wls(a, b)
    lag = cap.correlation_frames
    weights = None
    if weighting == "noise":
        sigma = np.sqrt(np.mean(first.residual ** 2, axis=0))
        weights = 1.0 / np.where(sigma > 0, sigma, 1.0)
    mass_check = None
    if fit_mass:
        if probes_full:
            mfit = solve_compensated(rows_a[ok], rows_b[ok], *noise_moments(probes_full, weights),
                                     row_weights=weights, max_lag=lag)
        else:
            mfit = solve_wls(rows_a[ok], rows_b[ok], row_weights=weights, max_lag=lag)
        mass_check = (float(mfit.x[0]), float(mfit.std[0]))
    del rows_a, rows_b, probes_full

    def consistent_map(xv):
        import cvxpy as cp
        return consistency_constraints(cp.hstack([np.array([total_mass_kg]), xv[:9]]))

    if weighting == "dual-metric":
        basis = spatial_inertia_basis()
        obj_basis = np.einsum("kij,kp->pij", basis, tmat)   # [10, 6, 6] in object params
        m_const = np.einsum("k,kij->ij", platform.pi, basis) + total_mass_kg * obj_basis[0]
        scale = np.where(np.abs(first.x) > 0, np.abs(first.x), 1.0)
        if probes:
            # the compensated problem below is solved by iterated reweighting anyway; the
            # plain least-squares solution is a close enough start and saves the SDP (a
            # 66 x 66 LMI, 1-5 s of Clarabel per posture)
            x = first.x
        else:
            x = _dual_metric_fit(a, b, m_const, obj_basis[1:], None,
                                 consistent_map if consistent else None, scale)

        def whiten(xv):
            lt = dual_metric_rows(m_const + np.einsum("k,kij->ij", xv, obj_basis[1:]))
            return lambda arr: np.einsum("ij,...j->...i", lt, arr)

        if probes:
            # The LMI form cannot subtract the errors-in-variables noise term, so with noise
            # probes the dual metric is applied by iterated reweighting: fix M at the current
            # estimate, whiten rows by L^T (L L^T = M^-1), solve the compensated problem.
            da, db, n_fit = probes[0]
            for _ in range(4):
                wt = whiten(x)
                a_w = np.moveaxis(wt(np.moveaxis(a, 1, -1)), -1, 1)
                b_w = wt(b)
                pr_w = [(np.moveaxis(wt(np.moveaxis(da, 2, -1)), -1, 2), wt(db), n_fit)]
                fit = solve_compensated(a_w, b_w, *noise_moments(pr_w), max_lag=lag)
                x = fit.x
            unconstrained = InertialParams(np.concatenate([[total_mass_kg], fit.x[:9]]))
            if consistent and not unconstrained.is_physically_consistent():
                rq, z = compensated_triangle(a_w, b_w, *noise_moments(pr_w))
                scale = np.where(np.abs(x) > 0, np.abs(x), 1.0)
                x = solve_triangle(rq, z, constraints_for=consistent_map, x0=x, scale=scale)
        else:
            wt = whiten(x)
            a_w = np.moveaxis(wt(np.moveaxis(a, 1, -1)), -1, 1)
            fit = solve_wls(a_w, wt(b), max_lag=lag)
            unconstrained = InertialParams(np.concatenate([[total_mass_kg], fit.x[:9]]))
    else:
        fit = None
        if probes:
            aa, ab = noise_moments(probes, weights)
            fit = solve_compensated(a, b, aa, ab, row_weights=weights, max_lag=lag)
            if fit.rank < a.shape[2]:
                fit = None
        if fit is None:
            probes = []
            fit = solve_wls(a, b, row_weights=weights, max_lag=lag)
        x = fit.x
        unconstrained = InertialParams(np.concatenate([[total_mass_kg], fit.x[:9]]))
        if consistent and not unconstrained.is_physically_consistent():
            if probes:
                rq, z = compensated_triangle(a, b, *noise_moments(probes, weights), weights)
            else:
                rq, z, _ = reduce_to_triangle(a, b, weights)
            scale = np.where(np.abs(x) > 0, np.abs(x), 1.0)
            x = solve_triangle(rq, z, constraints_for=consistent_map, x0=x, scale=scale)
    if added_cov is not None:
        fit = replace(fit, cov=fit.cov + np.asarray(added_cov, float))
    considered_cov = considered = None
    if considered_tissue:
        considered = _considered_shifts(rig, cap, a_minus_g, considered_tissue, a, ok,
                                        weights)
        considered_cov = considered @ considered.T
        fit = replace(fit, cov=fit.cov + considered_cov)
    if base_pose_wander_cov is not None:
        extra = np.zeros_like(fit.cov)
        extra[:9, :9] = pose_added_covariance(np.concatenate([[total_mass_kg], x[:9]]),
                                              base_rotation_platform, base_position_platform,
                                              base_pose_wander_cov)
        fit = replace(fit, cov=fit.cov + extra)
    if np.any(np.abs(x - fit.x) > 2 * fit.std):
        warnings.append("the physically consistent estimate differs from the unconstrained "
                        "one by more than 2 standard errors")
    params = InertialParams(np.concatenate([[total_mass_kg], x[:9]]))

    def props(v):
        return com_and_inertia(v, total_mass_kg)

    props_jac = jacobian_fd(props, x)          # [COM, inertia] by the unknowns
    pcov = props_jac @ fit.cov @ props_jac.T
    pstd = np.sqrt(np.clip(np.diag(pcov), 0, None))
    fitted = y @ (tmat @ params.pi + platform.pi)        # a_full pi + y pi_platform
    if support_cols is not None:
        fitted = fitted + support_cols @ params.pi
    breath_fit = tissue_fit = considered_fit = None
    n_breath = 0 if breath_cols is None else breath_cols.shape[2]
    if breath is not None:
        sl = slice(9, 9 + n_breath)
        fitted = fitted + breath_cols @ x[sl]
        breath_fit = {"beta": x[sl].copy(), "cov": fit.cov[sl, sl].copy(),
                      "k": breath.n_components, "summary": breath.summary}
    if tissue:
        sl = slice(9 + n_breath, None)
        fitted = fitted + np.nan_to_num(tissue_cols) @ x[sl]
        tissue_fit = {"beta": x[sl].copy(), "cov": fit.cov[sl, sl].copy()}
    if considered_cov is not None:
        # the considered tissue's share of the COM's and inertia's standard errors
        other = np.sqrt(np.clip(np.diag(props_jac @ considered_cov @ props_jac.T), 0,
                                None))
        # and each element's shift of [h, J0] (the subset fit's order) at one standard
        # deviation: the same tissue in every posture, so shared between them
        considered_fit = {"other_std": {"com": other[:3], "inertia_com": other[3:].reshape(3, 3)},
                          "other_shared": considered[:9][PI9_TO_SUBSET_ORDER]}
    w = np.where(ok[:, None], w, np.nan)          # the figure shows the fitted frames only
    fitted = np.where(ok[:, None], fitted, np.nan)
    cov9 = fit.cov[np.ix_(PI9_TO_SUBSET_ORDER, PI9_TO_SUBSET_ORDER)]
    params_cov = fit.cov[:9, :9]
    resid = (w - fitted)[ok]
    rms = {"force": float(np.sqrt(np.mean(resid[:, :3] ** 2))),
           "torque": float(np.sqrt(np.mean(resid[:, 3:] ** 2)))}
    # mass_check is judged by the report (rigtool.report.checks), against a tolerance that
    # holds the scale's and the calibration's uncertainty too
    return PostureResult(cap.name, total_mass_kg, params.com, pstd[:3], params.inertia_com,
                         pstd[3:].reshape(3, 3), params, params_cov, pcov, unconstrained, rms,
                         w, fitted, cap.time_s, spring_model, weighting, warnings, mass_check,
                         cov9, bool(probes), breath_fit, tissue_fit, considered_fit)
