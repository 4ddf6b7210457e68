"""What the output-error fits (posture, calibration, relative motion) share: the calibrated
rig's uncertainty as perturbed members, the base link's pose on the platform and its
covariance, the analysis window, the start state, the growing-horizon schedule, and the
last step at a shorter RK4 step that takes the integrator's bias out.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.engine.lm import WARM_LAMBDA, Normal, levenberg_marquardt
from rigtool.errors import InputError
from rigtool.identify.common.platform_motion import relative_frames
from rigtool.identify.posture.equation_error import transform_matrix
from rigtool.kinematics.rotation_mean import mean_rotation, wander_covariance
from rigtool.mocap import MarkerData


def base_pose_covariance(platform_rotation: np.ndarray, platform_position_m: np.ndarray,
                         base_rotation: np.ndarray, base_position_m: np.ndarray,
                         valid: np.ndarray | None = None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean pose of the base link on the platform and the 6x6 covariance of that mean.

    From per-frame marker-fitted poses (``[T, 3, 3]``, ``[T, 3]``, lab; NaN where unseen):
    ``R_pb = R_p^T R_b``, ``t_pb = R_p^T (p_b - p_p)``, averaged (as
    rigtool.identify.common.platform_motion.relative_pose). The covariance is of ``[t_pb (3),
    delta (3)]`` with ``R_pb = R_mean exp([delta x])``. For white marker noise it is the
    per-frame scatter over the number of frames: on a 25 s capture at 120 Hz a few
    micrometres, as large as the output-error COM standard error, so it belongs in the
    reported uncertainty (``refine_posture(base_pose_cov=...)``). When the base link's
    markers wander on the skin, the mean pose carries the wander's mean over the capture
    (a bias to the bony frame that no fit of this capture removes), and the covariance is
    that of a wander's mean (:func:`rigtool.kinematics.rotation_mean.wander_covariance`, on
    the coordinates scaled to unit spread so that metres and radians weigh alike).

    Returns
    -------
    rotation : ndarray (3, 3)
    position_m : ndarray (3,)
    cov : ndarray (6, 6)
        The covariance of the mean pose.
    cov_independent : ndarray (6, 6)
        The same with the frames taken as independent (``cov`` itself for white frames).
    """
    ok = (np.all(np.isfinite(platform_position_m), axis=1)
          & np.all(np.isfinite(base_position_m), axis=1))
    if valid is not None:
        ok &= valid
    if ok.sum() < 3:
        raise InputError("the base link and the platform are seen together in fewer than 3 "
                         "frames")
    r_pb, t_pb = relative_frames(platform_rotation[ok], platform_position_m[ok],
                                 base_rotation[ok], base_position_m[ok])
    mean, delta = mean_rotation(r_pb)
    dev = np.concatenate([t_pb - t_pb.mean(0), delta], axis=1)
    independent = np.cov(dev.T) / ok.sum()
    scale = dev.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    wander = wander_covariance(dev / scale)
    cov = independent if wander is None else wander * np.outer(scale, scale)
    return mean, t_pb.mean(0), cov, independent


def object_in_base_frame(v: np.ndarray, base_rotation: np.ndarray, base_position_m: np.ndarray,
                         tmat_fit: np.ndarray, mass_kg: float) -> np.ndarray:
    """The object's ``pi`` (10) in the base-link frame from ``v = [pi[1:] (9), dt (3), delta
    (3)]``.

    ``pi[1:]`` are the object's standard parameters (first moment, inertia about the origin)
    in the frame that ``tmat_fit`` carries to the platform frame, its mass ``mass_kg``; the
    base link's pose on the platform is ``R = R_b exp([delta x])``, ``t = t_b + dt`` about
    ``(base_rotation, base_position_m)``. Its derivative at ``dt = delta = 0`` carries the
    covariance of ``[pi[1:], pose]`` to the reported body (linear in ``pi``: the derivative
    holds on the consistency boundary too)."""
    rot = base_rotation @ Rotation.from_rotvec(v[12:15]).as_matrix()
    tinv = np.linalg.inv(transform_matrix(rot, base_position_m + v[9:12]))
    return tinv @ (tmat_fit @ np.concatenate([[mass_kg], v[:9]]))


def window_frames(data: MarkerData, window: tuple[float, float] | None, what: str,
                  min_frames: int = 20) -> np.ndarray:
    """Consecutive frame indices of ``data`` from the first to the last inside ``window``
    (s; the whole capture when None). InputError naming the file and ``window`` when fewer
    than ``min_frames``: ``what`` says which capture was expected (e.g. "a relative-motion
    capture")."""
    sel = np.ones(data.n_frames, bool)
    if window is not None:
        sel = (data.time_s >= window[0]) & (data.time_s <= window[1])
    idx = np.flatnonzero(sel)
    if idx.size < min_frames:
        raise InputError(f"the window holds {idx.size} frames; expected {what} of at least "
                         f"{min_frames} frames", path=data.source, field="window")
    return np.arange(idx[0], idx[-1] + 1)


def start_state(pose_rot: np.ndarray, pose_pos: np.ndarray, valid: np.ndarray, dt: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(rot_ref, state [12])`` at frame 0 from a quadratic fit of the first ~0.15 s of
    marker-fitted poses (position and rotation vector about the first good pose)."""
    good = np.flatnonzero(valid[: max(8, int(round(0.15 / dt)))])
    if good.size < 4:
        good = np.flatnonzero(valid)[:8]
    if good.size < 4:
        raise InputError("fewer than 4 frames with a platform pose at the start of the window")
    rot_ref = pose_rot[good[0]]
    t = good * dt
    phi = (Rotation.from_matrix(pose_rot[good]) * Rotation.from_matrix(rot_ref).inv()).as_rotvec()
    design = np.stack([np.ones_like(t), t, t * t], axis=1)
    cp_, *_ = np.linalg.lstsq(design, pose_pos[good], rcond=None)
    cr, *_ = np.linalg.lstsq(design, phi, rcond=None)
    return rot_ref, np.concatenate([cp_[0], cr[0], cp_[1], cr[1]])


def next_horizon(n_frames: int, n_total: int, factor: float, dt: float,
                 settled_s: float = 30.0) -> int:
    """The next horizon of the growing-horizon schedule: ``factor`` times longer, or the whole
    window once the current horizon is at least ``settled_s`` long. A fit over 30 s fixes the
    modal frequencies to about 1e-5 Hz (mm amplitudes, 0.1 mm marker noise, 120 Hz, tens of
    marker coordinates: sqrt(12) sigma / (A T sqrt(N))), a phase drift of a few hundredths of
    a radian over a 10-minute capture: far inside Gauss-Newton's reach, so intermediate
    stages (128 s, 512 s, ...) would only cost time."""
    nxt = int(round(n_frames * factor))
    if n_frames * dt >= settled_s:
        nxt = n_total
    return min(n_total, nxt)


def central_jacobian(fun, x: np.ndarray, step: float = 1e-7) -> np.ndarray:
    """Central differences of a cheap analytic map (the parameterisation)."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = step
        cols.append((fun(x + e) - fun(x - e)) / (2 * step))
    return np.stack(cols, axis=1)


def gauss_newton_step(jtj: np.ndarray, jtr: np.ndarray) -> np.ndarray | None:
    """Gauss-Newton's step ``-(J^T J)^-1 J^T r`` (columns scaled to a unit diagonal for the
    solve), None when the normal matrix is singular."""
    scale = 1.0 / np.sqrt(np.maximum(np.diag(jtj), 1e-30))
    try:
        return -scale * np.linalg.solve(jtj * np.outer(scale, scale), jtr * scale)
    except np.linalg.LinAlgError:
        return None


def final_substeps_of(substeps: int, final_substeps: int | None) -> int:
    """RK4 steps per frame of an output-error fit's last step: ``final_substeps``, by default
    twice ``substeps`` (refine_posture's ``final_substeps`` says why)."""
    return 2 * int(substeps) if final_substeps is None else int(final_substeps)


def integrator_offset(simulate_states: Callable[[int], np.ndarray], substeps: int,
                      final_substeps: int, coarse: np.ndarray | None = None
                      ) -> np.ndarray | None:
    """The integrator's error at a converged estimate as a fixed correction of the coarse
    model's states: ``states(final_substeps) - states(substeps)`` (``[T, 18]``), from one
    primal simulation each (``coarse``: the coarse states when the caller has them). None
    when the finer model cannot be simulated there.

    Why a correction and not the finer model itself: the coarse model plus this offset
    differs from the finer model by the change of the integrator's error over the last step,
    ``(omega h)^4 / 60`` of a step that is itself a fraction of a standard error, and its
    sensitivities differ from the finer model's by that same relative ``(omega h)^4 / 60``
    (1e-4 on the paper-002 rig at 120 Hz). So the last Gauss-Newton step and the standard
    errors keep the coarse model's sensitivities, at half the cost of the finer model's
    (which integrates twice the steps), and only the primal output is refined.
    """
    try:
        fine = simulate_states(final_substeps)
        if coarse is None:
            coarse = simulate_states(substeps)
    except (FloatingPointError, np.linalg.LinAlgError):
        return None
    offset = fine - coarse
    return offset if np.all(np.isfinite(offset)) else None


def gauss_newton_polish(normal_at: Callable[[np.ndarray], Normal],
                        cost_at: Callable[[np.ndarray], float], x: np.ndarray, *,
                        ftol: float, max_iterations: int = 50
                        ) -> tuple[np.ndarray, int, int] | None:
    """One Gauss-Newton step from ``x``, a converged fit of a nearby model (the same problem
    integrated with a longer RK4 step), kept when it lowers the cost; Levenberg-Marquardt
    from ``x`` when it does not. The two optima differ by the integrator's bias (a fraction
    of a standard error per entry on a 25 s capture, a few along the best determined
    directions; more on long captures, whose standard errors are smaller), over which the
    cost is quadratic to far better than that: one step lands on the new optimum, for one
    evaluation of the normal equations and one primal simulation (a Levenberg-Marquardt
    stage takes a second evaluation to see that it has converged).

    Returns ``(x, cost evaluations, normal equations)``, or None when the nearby model
    cannot be simulated at ``x`` (its cost is not finite): the caller then keeps its
    converged fit and its model, and says so.
    """
    cur = normal_at(x)
    if not np.isfinite(cur.cost):
        return None
    step = gauss_newton_step(cur.jtj, cur.jtr)
    n_cost = 0
    if step is not None:
        n_cost = 1
        if cost_at(x + step) < cur.cost:
            return x + step, n_cost, 1
    sol = levenberg_marquardt(normal_at, cost_at, x, ftol=ftol, max_iterations=max_iterations,
                              start=cur, lam0=WARM_LAMBDA)
    return sol.x, sol.n_cost + n_cost, sol.n_normal + 1


def unpolished_warning(label: str, substeps: int, final_substeps: int) -> str:
    """The warning of a fit whose last step at a shorter RK4 step could not run."""
    return (f"{label}: the capture could not be simulated with {final_substeps} RK4 steps "
            f"per frame at the fitted estimate; it keeps the fit with {substeps}, whose "
            "integrator bias (about (omega h)^4 / 60 of the inertia) the standard errors "
            "do not include")


__all__ = ["gauss_newton_step", "gauss_newton_polish", "final_substeps_of",
           "integrator_offset", "unpolished_warning", "base_pose_covariance",
           "object_in_base_frame", "window_frames", "start_state", "next_horizon"]
