"""Output-error refinement of the rig calibration over several captures.

Same estimator as the posture refinement (rigtool.identify.posture.output_error): simulate every
calibration capture from its own initial state with the rig model, predict the platform's
markers, minimise the squared marker residuals; no filtering, no differentiation.

Unknowns: shared by all captures, every spring's stiffness, free length and damping and the
platform's 10 inertial parameters (mass, COM, log-Cholesky of the COM-centred second moment,
so the platform stays physically consistent); per capture, its initial state (12). The known
loads (reference bodies, placed from their markers) are added to the platform.

Residual rows and their exact Jacobian come from rigtool.engine (forward-mode sensitivities
through the compiled integrator). With ``n`` captures the Jacobian has a block-arrow shape (shared columns dense, each
capture's state columns only in its own rows). The Levenberg-Marquardt iteration here
accumulates the normal equations capture by capture (34 x 34 blocks) instead of holding a
Jacobian of ``3 x markers x frames x captures`` rows, so memory stays small; scipy's
least_squares would need the whole matrix. The same growing-horizon schedule as the posture
fit guards single shooting against a drifting start.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Sequence, TypeVar

import numpy as np

from rigtool.errors import InputError
from rigtool.engine.capture import CaptureRows, RigidCapture
from rigtool.engine.columns import engine_threads
from rigtool.engine.lm import WARM_LAMBDA, Normal, levenberg_marquardt
from rigtool.engine.params import body_params, initial_state
from rigtool.engine.rigid import RigidModel, simulate, theta_of
from rigtool.identify.common.output_error import (final_substeps_of, gauss_newton_polish,
                                                  integrator_offset, start_state,
                                                  unpolished_warning, window_frames)
from rigtool.engine.lab_frame import FRAME_NAMES, framed_rows, rig_in_frame
from rigtool.identify.calibration.oe_result import (CalibrationRefinement, _platform_pi,
                                                   _platform_z)
from rigtool.identify.common.propagate import propagate
from rigtool.identify.posture.cluster_covariance import cluster_covariance, frame_sums
from rigtool.inertia import InertialParams
from rigtool.lsq import scaled_pinv
from rigtool.kinematics.pose import fit_pose
from rigtool.mocap import MarkerData
from rigtool.rig import Rig

from scipy.optimize import least_squares

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class OECapture:
    """One calibration capture for the output-error fit.

    ``load``: the known load in the platform frame about its origin (sum of the reference
    bodies placed from their markers; zeros for the empty platform).
    """

    name: str
    data: MarkerData
    load: InertialParams
    window: tuple[float, float] | None = None


def _each(function: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[function(item) for item in items]``, the items on parallel threads (the captures are
    independent simulations; the engine's compiled code runs without the interpreter lock,
    and XLA runs concurrent calls side by side: the demo's four captures' Jacobians on two
    threads in about 0.6 of the time). Results in the items' order, so the fit is the same
    as on one thread; a worker's error re-raises here."""
    items = list(items)
    threads = min(engine_threads(), len(items))
    if threads <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(function, items))


#: the platform start's second moment about its COM, eigenvalues floored at this fraction of
#: the largest (object_to_z's floor). A thin plate sits next to singular (the demo camera
#: rig's 4 cm platform: Sigma_zz is 1e-3 of Sigma_xx), and an equation-error start can land
#: on it (measured: 5e-6 instead of 3e-3 kg m^2, the other moments within 0.2 %), where the
#: log-Cholesky parameters have almost no gradient along that axis: the refinement stopped
#: at 3x the markers' noise (0.029 against 0.009 mm); from the raised start it converges.
START_SIGMA_FLOOR = 1e-3


def _frame_clustered(mat: np.ndarray, blocks: list, caps: list[RigidCapture], n_sh: int,
                     n_rows: int) -> np.ndarray:
    """The frame-clustered sandwich covariance of the calibration's unknowns from every
    capture's rows (``blocks``: ``(r, jac)``, columns shared then the capture's state)."""
    size = mat.shape[0]
    scores = []
    for i, (r, jac) in enumerate(blocks):
        n = caps[i].n_frames
        per_frame = frame_sums(jac * r[:, None], caps[i].mask[:n])
        full = np.zeros((n, size))
        full[:, np.r_[np.arange(n_sh), n_sh + 12 * i + np.arange(12)]] = per_frame
        scores.append(full)
    return cluster_covariance(scaled_pinv(mat), np.vstack(scores), n_rows=n_rows).cov


def _jac_or_zero(rows: CaptureRows, n: int) -> np.ndarray:
    return rows.jac if rows.jac is not None else np.zeros((rows.r.size, n))


def refine_calibration(rig: Rig, platform: InertialParams, captures: Sequence[OECapture], *,
                       markers_platform: dict[str, np.ndarray] | None = None,
                       substeps: int = 1, final_substeps: int | None = None,
                       first_horizon_s: float = 2.0,
                       horizon_factor: float = 4.0, max_iterations: int = 12,
                       ftol: float = 1e-8, fit_frame: bool = False,
                       standard_errors: str = "independent") -> CalibrationRefinement:
    """Refine springs (stiffness, free length, damping) and platform parameters jointly
    over calibration captures, from the equation-error calibration ``rig``/``platform``.

    Parameters
    ----------
    rig : Rig
        The equation-error calibration (start) with its geometry and gravity.
    platform : InertialParams
        Its platform parameters (start).
    captures : sequence of OECapture
        Captures with known loads (leave hold-out captures out).
    markers_platform : dict, optional
        Default the rig's platform markers.
    substeps, final_substeps, first_horizon_s, horizon_factor, ftol
        As in :func:`rigtool.identify.posture.output_error.refine_posture`: the fit ends with
        one Gauss-Newton step on the model corrected by the states of ``final_substeps`` RK4
        steps per frame (default twice ``substeps``) at the converged fit, the model the
        standard errors come from too. Measured on the demo rig:
        the calibrated platform inertia's largest error went from 3.4 to 2.0 of its standard
        errors (benchmarks/RESULTS.md, "Stages one at a time").
    max_iterations : int
        Levenberg-Marquardt iterations per horizon stage.
    fit_frame : bool
        Fit the measured lab frame against the rig's too (six more shared unknowns,
        :mod:`rigtool.engine.lab_frame`); the refined rig then has its anchors
        and gravity in the measured frame. For a camera's lab frame, set by a board on the
        floor; optical motion capture that measured the anchors needs none.
    standard_errors : {"independent", "frame"}
        The covariance: Gauss-Newton (every marker coordinate independent), or clustered by
        frame (the sandwich of rigtool.identify.posture.cluster_covariance over every
        capture's frames), for markers placed by one pose per body and frame (``rigtool
        track``'s corners), whose errors within a frame are correlated.

    Returns
    -------
    CalibrationRefinement
    """
    t0 = time.perf_counter()
    if not captures:
        raise InputError("expected at least one calibration capture")
    if standard_errors not in ("independent", "frame"):
        raise ValueError(f"standard_errors must be 'independent' or 'frame', got "
                         f"{standard_errors!r}")
    markers_platform = markers_platform or rig.platform.markers_platform
    names = list(markers_platform)
    mk = np.array([np.asarray(markers_platform[n], float) for n in names])
    n_spr = len(rig.springs)
    n_fr = len(FRAME_NAMES) if fit_frame else 0
    z_platform = _platform_z(platform, floor=START_SIGMA_FLOOR)
    if not np.array_equal(z_platform, _platform_z(platform)):
        platform = InertialParams(_platform_pi(z_platform))    # the raised start, as fitted
    shared = np.concatenate([rig.stiffness, rig.free_length, rig.damping, z_platform,
                             np.zeros(n_fr)])
    n_sh = shared.size
    n_ph = n_sh - n_fr              # the physical unknowns (springs, platform)
    model = RigidModel.of(rig)
    def prepared(cap: OECapture):
        """The capture's engine view, its reference rotation, its initial state fitted alone
        on a short horizon (rig held at the start) and its window's frame count."""
        xyz = cap.data.select(names)
        idx = window_frames(cap.data, cap.window, f"calibration capture '{cap.name}'")
        xyz = xyz[idx]
        traj = fit_pose(xyz, mk, marker_names=tuple(names))
        mask = traj.used & np.all(np.isfinite(xyz), axis=2)
        dt = 1.0 / cap.data.rate_hz
        rot_ref, st0 = start_state(traj.rotation, traj.position_m, traj.valid, dt)
        capture = RigidCapture(model, np.where(mask[..., None], xyz, 0.0), mask, dt, substeps,
                               min(len(idx), max(20, int(round(first_horizon_s / dt)))))
        theta0 = theta_of(platform.pi + cap.load.pi, rig.stiffness, rig.free_length,
                          rig.damping)

        last: dict = {}            # scipy asks for the rows and the Jacobian at one x apart

        def state_rows(x):
            key = x.tobytes()
            if key not in last:
                y0, dy0 = initial_state(x, rot_ref)
                last.clear()
                last[key] = capture.rows(theta0, y0, mk, tangent_y0=dy0)
            return last[key]

        sol = least_squares(lambda x: state_rows(x).r, st0,
                            jac=lambda x: _jac_or_zero(state_rows(x), 12), method="trf",
                            x_scale="jac", ftol=1e-10, xtol=1e-10, gtol=1e-10, max_nfev=50)
        return capture, rot_ref, sol.x, len(idx)

    caps, rot_refs, states, totals = (list(a) for a in zip(*_each(prepared, captures)))

    def shared_inputs(s: np.ndarray, load: InertialParams):
        """``(theta, d theta / d shared)`` of the shared unknowns with a known load."""
        k, l0, c = s[:n_spr], s[n_spr:2 * n_spr], s[2 * n_spr:3 * n_spr]
        zp = s[3 * n_spr:n_ph]
        pi_p, dpi_dz, dpi_dm = body_params(zp[1:], zp[0])
        theta = theta_of(pi_p + load.pi, k, l0, c)
        d = np.zeros((theta.size, n_ph))
        eye = np.eye(n_spr)
        d[10:10 + n_spr, :n_spr] = eye
        d[10 + n_spr:10 + 2 * n_spr, :n_spr] = np.diag(l0)
        d[10 + n_spr:10 + 2 * n_spr, n_spr:2 * n_spr] = np.diag(k)
        d[10 + 2 * n_spr:, 2 * n_spr:3 * n_spr] = eye
        d[:10, 3 * n_spr] = dpi_dm
        d[:10, 3 * n_spr + 1:] = dpi_dz
        return theta, d

    def evaluate(s: np.ndarray, xs: list[np.ndarray]):
        """Residuals and exact Jacobian ``[M, shared + 12]`` of every capture."""
        def one(i: int) -> CaptureRows:
            theta, d_theta = shared_inputs(s, captures[i].load)
            y0, dy0 = initial_state(xs[i], rot_refs[i])
            rows = caps[i].rows(theta, y0, mk,
                                tangent_theta=np.hstack([d_theta, np.zeros((theta.size, 12))]),
                                tangent_y0=np.hstack([np.zeros((18, n_ph)), dy0]))
            if not (fit_frame and rows.ok):
                return rows
            r, jac = framed_rows(rows.r, rows.jac, measured_rows(i), s[n_ph:])
            # columns: physical, frame, the capture's initial state
            return CaptureRows(r, np.hstack([jac[:, :n_ph], jac[:, n_ph + 12:],
                                             jac[:, n_ph:n_ph + 12]]), rows.states)

        rows = _each(one, range(len(caps)))
        if not all(r.ok for r in rows):
            return None
        return [(r.r, r.jac) for r in rows]

    def measured_rows(i: int) -> np.ndarray:
        """The measured coordinates (m) of capture ``i``'s residual rows."""
        n = caps[i].n_frames
        return caps[i].measured_m[:n][caps[i].mask[:n]].ravel()

    def normal(blocks):
        n_c = len(blocks)
        size = n_sh + 12 * n_c
        mat = np.zeros((size, size))
        grad = np.zeros(size)
        cost = 0.0
        for i, (r, jac) in enumerate(blocks):
            cols = np.r_[np.arange(n_sh), n_sh + 12 * i + np.arange(12)]
            mat[np.ix_(cols, cols)] += jac.T @ jac
            grad[cols] += jac.T @ r
            cost += float(r @ r)
        return cost, mat, grad

    iterations = 0
    def unpack(z: np.ndarray):
        return z[:n_sh], [z[n_sh + 12 * i:n_sh + 12 * (i + 1)] for i in range(len(caps))]

    last_blocks: dict = {}          # the last point's Jacobian blocks (the covariance's)

    def point_key(z: np.ndarray) -> tuple:
        return z.tobytes(), tuple(c.n_frames for c in caps)

    def normal_at(z: np.ndarray) -> Normal:
        blocks = evaluate(*unpack(z))
        last_blocks.clear()
        last_blocks[point_key(z)] = blocks
        if blocks is None:
            return Normal(np.inf, np.eye(z.size), np.zeros(z.size))
        return Normal(*normal(blocks))

    def capture_costs(z: np.ndarray) -> list[float]:
        """Each capture's ``r^T r`` from a primal simulation (inf where it diverges)."""
        s, xs = unpack(z)

        def one(i: int) -> float:
            rows = caps[i].rows(shared_inputs(s, captures[i].load)[0],
                                initial_state(xs[i], rot_refs[i])[0], mk)
            if not rows.ok:
                return np.inf
            r = framed_rows(rows.r, None, measured_rows(i), s[n_ph:])[0] if fit_frame else rows.r
            return float(r @ r)

        return _each(one, range(len(caps)))

    z = np.concatenate([shared] + states)
    schedule_done = False
    warm = False
    while True:
        start_normal = normal_at(z)
        if not np.isfinite(start_normal.cost):
            raise InputError("the start calibration cannot be simulated over the captures")
        # the first stage starts from the equation-error calibration; later ones from the
        # previous (shorter) horizon's optimum, Gauss-Newton's ground
        sol = levenberg_marquardt(normal_at, lambda v: sum(capture_costs(v)), z, ftol=ftol,
                                  max_iterations=max_iterations, start=start_normal,
                                  lam0=WARM_LAMBDA if warm else 1e-3)
        warm = True
        z = sol.x
        iterations += sol.n_cost
        if schedule_done:
            break
        for capture, n_tot in zip(caps, totals):
            capture.n_frames = min(n_tot, int(round(capture.n_frames * horizon_factor)))
        schedule_done = all(c.n_frames >= n for c, n in zip(caps, totals))
    final_substeps = final_substeps_of(substeps, final_substeps)
    unpolished = None
    if final_substeps != substeps:
        # RK4's bias out (refine_posture's final_substeps): each capture's finer states at z
        # as a fixed correction of its own, then one Gauss-Newton step
        s_now, xs_now = unpack(z)

        def offset_of(i: int) -> np.ndarray | None:
            theta = shared_inputs(s_now, captures[i].load)[0]
            y0 = initial_state(xs_now[i], rot_refs[i])[0]
            return integrator_offset(
                lambda n: simulate(model, theta, y0, caps[i].n_frames, caps[i].dt,
                                   substeps=n)[0], substeps, final_substeps)

        offsets = _each(offset_of, range(len(caps)))
        polished = None
        if all(o is not None for o in offsets):
            for capture, offset in zip(caps, offsets):
                capture.offset = offset
            last_blocks.clear()
            polished = gauss_newton_polish(normal_at, lambda v: sum(capture_costs(v)), z,
                                           ftol=ftol, max_iterations=max_iterations)
        if polished is None:
            for capture in caps:
                capture.offset = None
            last_blocks.clear()
            unpolished = unpolished_warning("calibration", substeps, final_substeps)
        else:
            z, n_cost, _ = polished
            iterations += n_cost
    shared, states = unpack(z)
    # the solver's last normal equations are often at the estimate already
    blocks = last_blocks.get(point_key(z))
    if blocks is None:
        blocks = evaluate(shared, states)
    cost, mat, grad = normal(blocks)
    n_res = sum(b[0].size for b in blocks)
    dof = max(n_res - len(grad), 1)
    s2 = cost / dof
    cov = s2 * scaled_pinv(mat)
    if standard_errors == "frame":
        cov = _frame_clustered(mat, blocks, caps, n_sh, n_res)
    cov_sh = cov[:n_ph, :n_ph]
    std_sh = np.sqrt(np.clip(np.diag(cov_sh), 0, None))
    zp = shared[3 * n_spr:n_ph]

    def plat_props(v):
        p = InertialParams(_platform_pi(v))
        return np.concatenate([[p.mass], p.com, p.inertia_com.ravel()])

    _, pcov = propagate(plat_props, zp, cov_sh[3 * n_spr:, 3 * n_spr:])
    pstd = np.sqrt(np.clip(np.diag(pcov), 0, None))
    plat = InertialParams(_platform_pi(zp))
    springs = tuple(replace(sp, stiffness=float(shared[i]), free_length=float(shared[n_spr + i]),
                            damping=float(shared[2 * n_spr + i]))
                    for i, sp in enumerate(rig.springs))
    new_rig = replace(rig, springs=springs, platform=replace(rig.platform, params=plat))
    frame, frame_cov, frame_cross = None, None, None
    if fit_frame:
        frame, frame_cov = shared[n_ph:].copy(), cov[n_ph:n_sh, n_ph:n_sh]
        frame_cross = cov[:n_ph, n_ph:n_sh]
        new_rig = rig_in_frame(new_rig, frame)
    rms = {cap.name: float(np.sqrt(np.mean(b[0] ** 2))) for cap, b in zip(captures, blocks)}
    warnings = [] if unpolished is None else [unpolished]
    if np.any(shared[2 * n_spr:3 * n_spr] < 0):
        warnings.append("a spring's damping came out negative: the captures barely decay")
    return CalibrationRefinement(
        rig=new_rig, platform=plat, stiffness_std=std_sh[:n_spr],
        free_length_std=std_sh[n_spr:2 * n_spr], damping_std=std_sh[2 * n_spr:3 * n_spr],
        platform_mass_std=float(pstd[0]), platform_com_std=pstd[1:4],
        platform_inertia_std=pstd[4:].reshape(3, 3), covariance=cov_sh,
        initial_states={c.name: x for c, x in zip(captures, states)}, residual_rms_mm=rms,
        marker_sigma_mm=float(np.sqrt(s2)), iterations=iterations,
        elapsed_s=time.perf_counter() - t0, warnings=warnings, frame=frame,
        frame_covariance=frame_cov, frame_cross=frame_cross, standard_errors=standard_errors)


__all__ = ["OECapture", "CalibrationRefinement", "refine_calibration", "START_SIGMA_FLOOR"]
