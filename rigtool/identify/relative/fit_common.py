"""What the passive and the active relative-motion refinements share: the object unknowns'
start and bounds, the residual cache with Phi_s's prior rows, and Phi_B's covariance.

The two refinements differ in their model (a swinging tree, or the platform with the links'
motion prescribed) and in which markers they fit; around that, they are the same fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.engine.lm import (GEODESIC_H, WARM_LAMBDA, Normal, finite_difference_curvature,
                               levenberg_marquardt, second_derivative_along)

from rigtool.identify.common.output_error import next_horizon
from rigtool.identify.posture.cluster_covariance import (SERIAL_GATE, SERIAL_WINDOW_S,
                                                        serial_covariance, serial_inflation)
from rigtool.identify.relative import streamed_rows
from rigtool.identify.relative.streamed_rows import StreamedRows
from rigtool.identify.relative.bounds import feasible_intervals, link_lower_bounds, phi_b_affine


#: marker residual (mm) given to every row when a simulation leaves the model (non-finite
#: states): large, so the solver backs off; a fit that ends there has diverged
DIVERGED_MM = 1e6
# Stopping tolerance (relative cost left to gain) of the growing-horizon stages before the
# whole window's: such a stage only has to bring the estimate within Gauss-Newton's reach of
# the next horizon's optimum, which that stage's first steps then reach. The last stage keeps
# the caller's ftol. Measured on the speed benchmark's draws (benchmarks/RESULTS.md, "Speed and memory"): the same
# end points at 2, 8 and 15 links as with 1e-8 throughout, 6.7 / 38 / 97 s -> 4.7 / 34 / 78 s.
INTERMEDIATE_FTOL = 1e-3
#: a stage's estimate that predicts the frames beyond its horizon with a mean square marker
#: residual at most this much above its own goes straight to the whole window: the phase
#: error the growing horizon guards against would show there first. A statistical error of
#: the estimate raises that excess by the same fraction at any marker noise (both scale with
#: it); a blind jump from the initial state's fit, which this check would refuse, ended at
#: other optima in 4 of 20 four-link draws (benchmarks/RESULTS.md, "Fewer evaluations per
#: fit").
WHOLE_WINDOW_EXCESS = 0.05


def checked_phi_s(n: int, start_phi_b: np.ndarray, phi_s: np.ndarray | None,
                  phi_s_cov: np.ndarray, free: str):
    """``(phi_s, cov_s, free, chol, warnings)``: the postures' Phi_s (default: the start's),
    its covariance and, with Phi_B free, its Cholesky factor for the prior (``free`` falls
    back to ``"jyy"`` with a warning when the covariance is not usable).

    Raises
    ------
    IdentifiabilityError
        Phi_s incomplete.
    """
    from rigtool.errors import IdentifiabilityError
    from rigtool.tree import phi_s_from_phi_b
    phi_s = phi_s_from_phi_b(np.asarray(start_phi_b, float)) if phi_s is None \
        else np.asarray(phi_s, float)
    cov_s = np.asarray(phi_s_cov, float)
    if phi_s.shape[0] != 8 * n + 1 or not np.all(np.isfinite(phi_s)):
        raise IdentifiabilityError("the relative-motion refinement needs the whole subset "
                                   "Phi_s identified by the locked postures")
    warnings, chol = [], None
    if free == "phi_b":
        try:
            chol = np.linalg.cholesky(cov_s)
        except np.linalg.LinAlgError:
            chol = None
        if chol is None or not np.all(np.isfinite(chol)):
            warnings.append("Phi_s has no usable covariance for the prior of the Phi_B fit; "
                            "only the moving links' J_yy were refined (free='jyy')")
            free, chol = "jyy", None
    return phi_s, cov_s, free, chol, warnings


@dataclass(frozen=True)
class ObjectStart:
    """The object unknowns' start ``theta0``, their box ``lo``/``hi``, the postures' J_yy
    ``intervals`` ``[n-1, 2]`` and whether any of them is empty."""

    theta0: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    intervals: np.ndarray
    empty: bool


def object_start(free: str, n: int, start_phi_b: np.ndarray, phi_s: np.ndarray,
                 total_mass_kg: float) -> ObjectStart:
    """Start and bounds of the object unknowns (``free`` ``"jyy"``: the moving links' J_yy
    in their physically consistent intervals; ``"phi_b"``: all of Phi_B, unbounded, checked
    against its own intervals after the fit)."""
    intervals = feasible_intervals(link_lower_bounds(phi_s, n, total_mass_kg), phi_s[-1])
    lo_t, hi_t = jyy_bounds(free, n, intervals)
    empty = lo_t >= hi_t
    lo_t[empty], hi_t[empty] = -np.inf, np.inf
    if free == "phi_b":
        lo_t, hi_t = np.full_like(lo_t, -np.inf), np.full_like(hi_t, np.inf)
    jyy_idx = np.array([9 * i + 4 for i in range(1, n)])
    phi_b0 = np.asarray(start_phi_b, float)
    theta0 = phi_b0[jyy_idx] if free == "jyy" else phi_b0.copy()
    width = np.where(np.isfinite(hi_t - lo_t), hi_t - lo_t, 1.0)
    theta0 = np.clip(theta0, lo_t + 1e-6 * width, hi_t - 1e-6 * width)
    return ObjectStart(theta0, lo_t, hi_t, intervals, bool(np.any(empty)))


def jyy_bounds(free: str, n: int, intervals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box bounds of the object unknowns: the moving links' ``J_yy`` in their intervals."""
    if free == "jyy":
        return intervals[:, 0].copy(), intervals[:, 1].copy()
    lo, hi = np.full(9 * n, -np.inf), np.full(9 * n, np.inf)
    for k in range(n - 1):
        lo[9 * (k + 1) + 4], hi[9 * (k + 1) + 4] = intervals[k]
    return lo, hi


class PriorRowsFit:
    """``residual(x)``/``jacobian(x)`` of a refinement's problem, cached for the last ``x``,
    with Phi_s's prior rows appended when Phi_B is free. A residual alone (a trial point of
    the solver, often rejected) costs one simulation without sensitivities; the Jacobian,
    asked for at accepted points, adds them.

    The problem class provides ``_marker_rows(full, columns) -> (r, jac)`` (the Jacobian along
    the unknowns ``columns`` of ``full``),
    ``_marker_residual(full) -> r`` and the attributes ``n``, ``free``, ``mask``,
    ``n_frames``, ``fit_params``, ``n_params``, ``prior_rows``, ``prior_rhs``, ``cache`` and
    the methods ``_full`` and ``split``.
    """

    def stride(self, n_columns: int) -> int:
        """1 when the Jacobian of ``n_columns`` on the current horizon fits in
        :data:`rigtool.identify.relative.streamed_rows.JACOBIAN_BYTES` (held whole), else the frame stride of the rows kept for the
        geodesic acceleration (the normal equations then streamed; only problems with a
        ``_marker_stream_along`` can)."""
        n_rows = int(self.mask[:self.n_frames].sum()) * 3
        need = 8 * n_rows * max(n_columns, 1)
        budget = streamed_rows.JACOBIAN_BYTES
        if need <= budget or not hasattr(self, "_marker_stream_along"):
            return 1
        return -(-need // budget)

    def _eval(self, x: np.ndarray, with_jacobian: bool):
        key = (self.n_frames, self.fit_params, x.tobytes())
        hit = self.cache.get(key)
        if hit is not None and (hit[1] is not None or not with_jacobian):
            return hit
        n_rows = int(self.mask[:self.n_frames].sum()) * 3
        stride = self.stride(x.size) if with_jacobian else 1
        try:
            if with_jacobian:
                # held parameters: only the state's columns are integrated (the tangents
                # are the Jacobian's cost, one per column)
                free_cols = self.free_columns
                if stride > 1:
                    r, jac = self._marker_stream_along(self._full(x), free_cols, stride)
                    finite = np.all(np.isfinite(jac.jtj)) and np.all(np.isfinite(jac.held))
                else:
                    r, jac = self._marker_rows(self._full(x), free_cols)
                    finite = np.all(np.isfinite(jac))
            else:
                r, jac, finite = self._marker_residual(self._full(x)), None, True
            if not np.all(np.isfinite(r)) or not finite:
                raise FloatingPointError
        except (FloatingPointError, np.linalg.LinAlgError):
            # the motion left the model: a large residual the solver backs off from
            r = np.full(n_rows, DIVERGED_MM)
            jac = None if not with_jacobian else (
                np.zeros((n_rows, x.size)) if stride == 1 else StreamedRows.zeros(x.size))
        if self.prior_rows is not None and self.fit_params:
            theta = self.split(x)[0]
            r_prior = self.prior_rows @ theta - self.prior_rhs
            offset = r.size
            r = np.concatenate([r, r_prior])
            if jac is not None:
                jp = np.zeros((self.prior_rows.shape[0], x.size))
                jp[:, :self.n_theta] = self.prior_rows
                jac = (jac.with_prior(offset, jp, r_prior) if isinstance(jac, StreamedRows)
                       else np.vstack([jac, jp]))
        # kept: this point's rows and, when this was a trial point (often rejected), the last
        # Jacobian's point too (the solver's estimate, whose Jacobian the covariance needs)
        with_jac = {k: v for k, v in self.cache.items() if v[1] is not None and k != key}
        self.cache = {**(with_jac if jac is None else {}), key: (r, jac)}
        return r, jac

    @property
    def free_columns(self) -> slice:
        """The columns of the full unknown vector being fitted: all of them, or the initial
        state's alone while the parameters are held (``fit_params`` False)."""
        return slice(None) if self.fit_params else slice(self.n_params, None)

    def member_deltas(self, members: list) -> np.ndarray:
        """``[n_calib, C]``: each calibration member's change of the calibration vector
        (:meth:`calib_vector`), the directions of the covariance's calibration share."""
        return np.stack([self.calib_vector(m[2]) - self.calib_vector() for m in members], 1)

    @property
    def n_theta(self) -> int:
        """Object unknowns: the moving links' J_yy, or all of Phi_B."""
        return self.n - 1 if self.free == "jyy" else 9 * self.n

    def base_pose(self, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(R_pb, t_pb)`` of base unknowns ``[dt (3), rotation vector (3)]`` (about the
        marker-fitted pose; empty: that pose)."""
        if base.size == 0:
            return self.r_pb, self.t_pb
        from scipy.spatial.transform import Rotation
        return Rotation.from_rotvec(base[3:6]).as_matrix() @ self.r_pb, self.t_pb + base[:3]

    def phi_b(self, theta: np.ndarray, phi_s: np.ndarray | None = None) -> np.ndarray:
        """Phi_B of the object unknowns (``jyy`` mode: Phi_s completed by the J_yy)."""
        if self.free == "phi_b":
            return theta
        g, h = phi_b_affine(self.n)
        return g @ (self.phi_s if phi_s is None else phi_s) + h @ theta

    def calib_vector(self, calib: tuple | None = None) -> np.ndarray:
        """``[platform pi (10), k (S), L0 (S), c (S)]`` of the rig or of a member."""
        plat, k, l0, c = (self.platform_pi, self.rig.stiffness, self.rig.free_length,
                          self.rig.damping) if calib is None else calib
        return np.concatenate([np.asarray(v, float).ravel() for v in (plat, k, l0, c)])

    def residual(self, x: np.ndarray) -> np.ndarray:
        """Residual rows (mm; the prior's after the markers')."""
        return self._eval(x, False)[0]

    def jacobian(self, x: np.ndarray) -> np.ndarray | StreamedRows:
        """Their exact Jacobian (held whole, or streamed: :class:`StreamedRows`)."""
        return self._eval(x, True)[1]

    def normal(self, x: np.ndarray) -> Normal:
        """The normal equations at ``x`` (one tangent run, cached with the rows)."""
        jac = self.jacobian(x)
        r = self.residual(x)
        if isinstance(jac, StreamedRows):
            return Normal(float(r @ r), jac.jtj, jac.jtr)
        return Normal(float(r @ r), jac.T @ jac, jac.T @ r)

    def curvature_at(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``J^T r_vv`` along the step ``v`` for the geodesic acceleration (Transtrum and
        Sethna's finite difference, rigtool.engine.lm.finite_difference_curvature; with a
        streamed Jacobian over its held rows, :class:`StreamedRows`)."""
        jac = self.jacobian(x)
        if not isinstance(jac, StreamedRows):
            return finite_difference_curvature(self.residual, self.jacobian)(x, v)
        r_vv = second_derivative_along(self.residual(x)[jac.rows],
                                       self.residual(x + GEODESIC_H * v)[jac.rows],
                                       jac.held @ v)
        return jac.held.T @ (jac.weight * r_vv)


def solve_bounded(prob, x: np.ndarray, lo: np.ndarray | None, hi: np.ndarray | None,
                  ftol: float, max_nfev: int, lam0: float = 1e-3
                  ) -> tuple[np.ndarray, int, int, bool]:
    """Minimise the problem's squared residual rows in the box ``[lo, hi]`` (None: no bounds)
    by Levenberg-Marquardt on normal equations (rigtool.engine.lm, projected steps) with
    geodesic acceleration. Its linear algebra is ``J^T J`` (P x P) where scipy's exact trust
    region takes the SVD of the whole ``J`` at every Jacobian (at 8 links a third of the
    fit's time). The acceleration costs one primal run per step; without it an 8-link swing's
    long horizons crawled along a curved valley, 10^-3 of the cost per Jacobian for the
    whole iteration budget, with scipy's solver and this one alike. ``lam0``: the starting
    damping (rigtool.engine.lm.levenberg_marquardt's). Returns ``(x, cost
    evaluations (the acceleration's runs included), Jacobians, converged)``, ``converged``
    False when ``max_nfev`` trial steps ran out before a stopping rule held."""
    def cost_at(v):
        r = prob.residual(v)
        return float(r @ r)

    # rows and Jacobian (or its streamed normal equations) from one run, cached
    sol = levenberg_marquardt(prob.normal, cost_at, x, ftol=ftol, max_iterations=max_nfev,
                              lower=lo, upper=hi, curvature_at=prob.curvature_at, lam0=lam0)
    return sol.x, sol.n_cost + sol.n_normal, sol.n_normal, sol.converged


def fit_initial_state(prob, st0: np.ndarray, max_nfev: int
                      ) -> tuple[np.ndarray, np.ndarray, tuple[float, int, int]]:
    """The first stage: the initial state alone on the problem's current (short) horizon,
    parameters held (``prob.fit_params`` False). Returns ``(state, its residual rows, (horizon
    s, evaluations, Jacobians))``."""
    x, nfev, njev, _ = solve_bounded(prob, st0, None, None, 1e-10, max_nfev)
    return x, prob.residual(x), (prob.n_frames * prob.dt, nfev, njev)


def fit_growing_horizon(prob, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_total: int,
                        factor: float, dt: float, ftol: float, max_nfev: int, *,
                        whole_window_excess: float = WHOLE_WINDOW_EXCESS):
    """Fit every unknown on horizons growing by ``factor`` up to the whole window (each stage
    started from the last; a phase error cannot build up before the frequencies are fitted).
    After each stage one simulation over the whole window checks the estimate's prediction
    of the frames beyond the horizon: when it is already at the stage's own residual
    (:func:`predicts_whole_window`), the next stage is the whole window. A blind jump to the
    whole window from 3/4 of it (the demo's swing at 2 then 10 s instead of 2, 8 and 10 s:
    1.4x faster, the same optimum there) was tried and left out: on the four-link object at
    0.2-0.5 mm noise it ended at other points in 4 of 20 draws, Phi_B's coverage falling
    from 97 % to 71 % at 0.5 mm (benchmarks/RESULTS.md, "Speed and memory"). The
    stages before the last stop at :data:`INTERMEDIATE_FTOL`, the last at ``ftol``.
    The whole window reached by that jump starts at Gauss-Newton's step
    (rigtool.engine.lm.WARM_LAMBDA): its start predicts the window as well as it fits its
    own horizon, so it is next to the window's optimum, and Marquardt's 1e-3 would only
    hold its first steps back (the demo's swing: 4 Jacobians there, now 2, the same
    optimum). The growing stages keep 1e-3: started undamped as well, an 8-link swing's
    2 s stage left for another optimum (Phi_B 0.17 mm off instead of 0.003 mm;
    benchmarks/RESULTS.md, "Speed and memory").
    ``whole_window_excess``: the check's threshold (``-inf``: every stage of the schedule).
    Returns ``(x, iterations, stages [(horizon s, nfev, njev)], horizons_s, converged)``,
    ``converged`` the whole window's stage's (:func:`solve_bounded`)."""
    iterations, stages, horizons = 0, [], []
    jump = False
    while True:
        prob.n_frames = n_total if jump else next_horizon(prob.n_frames, n_total, factor, dt)
        horizons.append(prob.n_frames * dt)
        stage_ftol = ftol if prob.n_frames >= n_total else max(ftol, INTERMEDIATE_FTOL)
        x, nfev, njev, converged = solve_bounded(prob, x, lo, hi, stage_ftol, max_nfev,
                                                 lam0=WARM_LAMBDA if jump else 1e-3)
        iterations += nfev
        stages.append((prob.n_frames * dt, nfev, njev))
        if prob.n_frames >= n_total:
            return x, iterations, stages, horizons, converged
        jump = predicts_whole_window(prob, x, n_total, whole_window_excess)
        iterations += 1                    # the check's simulation, counted as an evaluation


def predicts_whole_window(prob, x: np.ndarray, n_total: int,
                          excess: float = WHOLE_WINDOW_EXCESS) -> bool:
    """Whether the estimate ``x`` of the current horizon's stage predicts the frames beyond it
    as well as it fits its own: their mean square marker residual at most ``1 + excess``
    times the horizon's (one simulation over ``n_total`` frames, no sensitivities)."""
    n_h = prob.n_frames
    r_h = prob.residual(x)                         # the stage's rows (cached), markers first
    if prob.prior_rows is not None and prob.fit_params:
        r_h = r_h[:r_h.size - prob.prior_rows.shape[0]]
    rows_h = r_h.size
    try:
        prob.n_frames = n_total
        with np.errstate(all="ignore"):
            r_all = prob._marker_residual(prob._full(x))
    except (FloatingPointError, np.linalg.LinAlgError):
        return False
    finally:
        prob.n_frames = n_h
    beyond = r_all[rows_h:]
    if beyond.size == 0 or not np.all(np.isfinite(r_all)):
        return False
    return bool(np.mean(beyond ** 2) <= (1.0 + excess) * np.mean(r_h ** 2))


def platform_noise_mm(set_sigma_m: list[float], fallback_mm: float) -> float:
    """The platform's markers' noise (mm, per coordinate): the first marker set's rigid-fit
    scatter (the platform's, rigid on the rig), ``fallback_mm`` when it is unusable.

    The body's markers are left out: on skin they scatter more than the camera's noise, and
    that scatter is the model's floor, not the measurement's noise.

    Parameters
    ----------
    set_sigma_m : list of float
        Each marker set's rigid-fit noise (m, per coordinate), the platform's first.
    fallback_mm : float
        Returned when the platform's is not finite or not positive.

    Returns
    -------
    float
        mm, at least 1 um.
    """
    sigma_mm = 1e3 * float(set_sigma_m[0]) if set_sigma_m else float("nan")
    if not (np.isfinite(sigma_mm) and sigma_mm > 0):
        return float(fallback_mm)
    return max(sigma_mm, 1e-3)          # 1 um, as the scatter: no capture is better


def unconverged_warning(max_nfev: int, horizon_s: float) -> str:
    """The warning of a relative-motion fit whose whole-window stage ran out of trial steps:
    it may reach the marker noise and still not be the optimum (the 8-link swing that
    crawled ended 0.4 % above the noise with a Phi_B element 24 standard errors off), so its
    standard errors understate its error."""
    return (f"relative motion: the fit over the whole window ({horizon_s:.1f} s) stopped at "
            f"its budget of {max_nfev} trial steps before converging; its Phi_B may not be "
            "the optimum and its standard errors understate its error")


@dataclass(frozen=True)
class PhiBCovariance:
    """Phi_B's covariance (``cov``), its marker-noise part (``cov_noise``), the unknowns'
    (``cov_x``, Phi_s's share included in ``jyy`` mode) and the map of the object unknowns
    to Phi_B (``map_b``)."""

    cov: np.ndarray
    cov_noise: np.ndarray
    cov_x: np.ndarray
    map_b: np.ndarray


def refinement_scores(jac: np.ndarray | StreamedRows, r_m: np.ndarray,
                      mask: np.ndarray) -> np.ndarray:
    """Each frame's marker rows' ``J^T r`` (``[frames, P]``) at a refinement's estimate:
    from the streamed run (:class:`StreamedRows`), or from the held Jacobian whose marker
    rows follow ``mask`` (frames, markers; three rows a marker)."""
    if isinstance(jac, StreamedRows):
        return jac.frame_scores
    frames = np.repeat(np.nonzero(mask)[0], 3)
    return streamed_rows.frame_scores(r_m, jac[:r_m.size], frames)[1]


def marker_noise_covariance(prob, info_inv: np.ndarray, s2: float,
                            scores: np.ndarray | None, n_rows: int, rate_hz: float,
                            reference: np.ndarray | None = None
                            ) -> tuple[np.ndarray, dict]:
    """The marker noise's share of the covariance of a refinement's unknowns, and how it
    was taken (report.json's ``standard_errors``).

    ``s2 (J^T J)^-1`` takes the frames' residuals as independent. A residual correlated
    over frames (a heartbeat's recoil, markers sliding on the skin, a breath) makes that
    too small, as in the posture fit
    (rigtool.identify.posture.cluster_covariance.serial_covariance): here too the
    Newey-West covariance over :data:`SERIAL_WINDOW_S` of each frame's marker scores
    (``scores [frames, P]``), with Phi_s's prior rows (independent, ``s2`` per row) added,
    is taken when its variances of the object's unknowns exceed the independent ones
    :data:`SERIAL_GATE`-fold on average; white residuals keep ``s2 (J^T J)^-1`` to the bit.
    ``reference``: what the fit reports otherwise, when more than ``s2 (J^T J)^-1`` (the
    active model's input probes added: the smoothed input's noise correlates the residual
    too, and the serial covariance, which holds that as well, must exceed both).
    """
    white = s2 * info_inv
    if scores is None or len(scores) < 3:
        return white, {"kind": "independent"}
    lag = int(round(SERIAL_WINDOW_S * rate_hz))
    cov = serial_covariance(info_inv, scores, n_rows=n_rows, lag_frames=lag).cov
    if prob.prior_rows is not None and prob.fit_params:
        jp = np.zeros((prob.prior_rows.shape[0], info_inv.shape[0]))
        jp[:, :prob.n_theta] = prob.prior_rows
        cov = cov + s2 * info_inv @ (jp.T @ jp) @ info_inv
    inflation = serial_inflation(cov, white if reference is None else reference,
                                 prob.n_theta)
    if inflation > SERIAL_GATE:
        return cov, {"kind": "serial", "window_frames": lag, "inflation": inflation}
    return white, {"kind": "independent", "serial_inflation": inflation}


def phi_b_covariance(prob, info_inv: np.ndarray, s2: float, cov_s: np.ndarray,
                     cross_s: np.ndarray | None, cross_cal: np.ndarray | None,
                     cov_x_noise: np.ndarray | None = None) -> PhiBCovariance:
    """Gauss-Newton covariance of the refinement: marker noise (``s2 (J^T J)^-1``, or
    ``cov_x_noise`` when given: :func:`marker_noise_covariance`), Phi_s's
    covariance propagated in ``jyy`` mode (``cross_s = J_m^T dr/dPhi_s``, the marker rows'
    Jacobian against their derivative along Phi_s), the calibration (``cross_cal =
    J_m^T A_cal``, ``A_cal`` the marker rows' change per calibration member; None without
    members). rigtool.identify.relative.streamed_rows.marker_cross_products gives both."""
    n, n_theta = prob.n, prob.n_theta
    cov_x = s2 * info_inv if cov_x_noise is None else np.asarray(cov_x_noise, float)
    finite_s = np.all(np.isfinite(cov_s))
    if prob.free == "jyy":
        g_mat, h_mat = phi_b_affine(n)
        sens_s = -info_inv @ cross_s                                       # dx / dPhi_s
        jb_s = g_mat + h_mat @ sens_s[:n_theta]
        cov_noise = h_mat @ cov_x[:n_theta, :n_theta] @ h_mat.T
        cov = cov_noise + jb_s @ cov_s @ jb_s.T if finite_s else cov_noise.copy()
        cov_x = cov_x + sens_s @ cov_s @ sens_s.T if finite_s else cov_x
        map_b = h_mat
    else:
        cov_noise = cov_x[:n_theta, :n_theta].copy()
        cov = cov_noise.copy()
        map_b = np.eye(9 * n)
    if cross_cal is not None:
        sens = -info_inv @ cross_cal
        cov_x = cov_x + sens @ sens.T
        sb = map_b @ sens[:n_theta]
        cov = cov + sb @ sb.T
    return PhiBCovariance(cov, cov_noise, cov_x, map_b)


__all__ = ["checked_phi_s", "platform_noise_mm", "ObjectStart", "object_start", "jyy_bounds", "PriorRowsFit", "PhiBCovariance",
           "phi_b_covariance", "marker_noise_covariance", "refinement_scores", "fit_growing_horizon",
           "predicts_whole_window", "WHOLE_WINDOW_EXCESS"]
