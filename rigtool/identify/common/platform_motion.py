"""Platform motion of one capture, prepared for the Newton-Euler equations.

Every identification stage (calibration, locked postures, relative motion) writes, per frame,
the Newton-Euler balance of what rides on the springs about the platform origin:

    Y(filtered motion) pi = filter(spring wrench from the raw pose) + damping terms

This module turns a capture into the pieces of that equation: the unfiltered marker pose
(short gaps interpolated), the zero-phase filtered kinematics, the filter itself (so the
spring side sees exactly the filter the kinematics saw), and a validity mask (pose defined,
outside long gaps, filter transients and the analysis window).

Rows: wrench components are in platform axes unless the rig has locked DOFs; guides act along
lab axes, so then the rows are rotated to lab axes and the locked ones dropped
(:func:`equation_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.config import FilterSettings
from rigtool.errors import InputError
from rigtool.identify.common.capture_window import window_note
from rigtool.inertia import InertialParams
from rigtool.kinematics.filtering import fill_gaps, motion_from_pose
from rigtool.kinematics.pose import BodyTrajectory, body_trajectory
from rigtool.kinematics.rotation_mean import mean_rotation, rms_angle
from rigtool.mocap import MarkerData
from rigtool.rig import DOF_NAMES, Rig

WRENCH_ROWS: tuple[str, ...] = ("f_x", "f_y", "f_z", "n_x", "n_y", "n_z")


@dataclass(frozen=True)
class CaptureMotion:
    """Platform motion of one capture, ready for the equations.

    ``rotation_raw``/``position_raw`` are the marker-fitted pose before filtering (short gaps
    interpolated); the other arrays are filtered (lab components unless named ``_body``).
    ``filt`` applies the same zero-phase filter (time axis first, same segments) that
    produced the filtered kinematics.
    """

    name: str
    path: Path | None
    time_s: np.ndarray
    rotation_raw: np.ndarray
    position_raw: np.ndarray
    rotation: np.ndarray
    position: np.ndarray
    velocity_lab: np.ndarray
    accel_lab: np.ndarray
    omega_lab: np.ndarray
    omega_body: np.ndarray
    omega_dot_body: np.ndarray
    valid: np.ndarray
    filt: Callable[[np.ndarray], np.ndarray]
    correlation_frames: int
    load: InertialParams = field(default_factory=lambda: InertialParams(np.zeros(10)))
    holdout: bool = False
    pose_rms_m: float = 0.0
    dominant_hz: float = float("nan")
    warnings: tuple[str, ...] = ()
    marker_sigma_m: float = float("nan")
    noise_probes: tuple = ()     # (clean, noisy_1, ..., noisy_n) CaptureMotions, see below


def _fill_pose(traj: BodyTrajectory, rate_hz: float, max_gap_s: float):
    """Raw pose with short gaps interpolated (rotation via rotation vectors about the mean)."""
    ok = traj.valid
    if ok.sum() < 3:
        return traj.rotation, traj.position_m
    r_ref = Rotation.from_matrix(traj.rotation[ok]).mean()
    rotvec = np.full((traj.rotation.shape[0], 3), np.nan)
    rotvec[ok] = (r_ref.inv() * Rotation.from_matrix(traj.rotation[ok])).as_rotvec()
    rotvec_f, _ = fill_gaps(rotvec, rate_hz=rate_hz, max_gap_s=max_gap_s)
    pos_f, _ = fill_gaps(traj.position_m, rate_hz=rate_hz, max_gap_s=max_gap_s)
    rot = np.full_like(traj.rotation, np.nan)
    good = np.all(np.isfinite(rotvec_f), axis=1)
    rot[good] = (r_ref * Rotation.from_rotvec(rotvec_f[good])).as_matrix()
    return rot, pos_f


def _power_spectrum(x: np.ndarray, rate_hz: float):
    """``(freq_hz, power)`` of the detrended, Hann-windowed columns of ``x`` (summed), or
    None when fewer than 16 finite rows."""
    x = np.asarray(x, float)
    ok = np.all(np.isfinite(x), axis=1)
    if ok.sum() < 16:
        return None
    x = x[ok] - x[ok].mean(axis=0)
    spec = (np.abs(np.fft.rfft(x * np.hanning(x.shape[0])[:, None], axis=0)) ** 2).sum(axis=1)
    return np.fft.rfftfreq(x.shape[0], 1.0 / rate_hz), spec


def dominant_frequency(x: np.ndarray, rate_hz: float) -> float:
    """Frequency (Hz) of the largest spectral peak of the (detrended) columns of ``x``."""
    fs = _power_spectrum(x, rate_hz)
    if fs is None:
        return float("nan")
    freq, spec = fs
    spec[0] = 0.0
    return float(freq[int(np.argmax(spec))])


def spectral_edge(x: np.ndarray, rate_hz: float, fraction: float = 0.99) -> float:
    """Frequency (Hz) below which ``fraction`` of the detrended signal power lies."""
    fs = _power_spectrum(x, rate_hz)
    if fs is None:
        return float("nan")
    freq, spec = fs
    cum = np.cumsum(spec) / spec.sum()
    return float(freq[int(np.searchsorted(cum, fraction))])


def capture_motion(data: MarkerData, markers_platform: dict[str, np.ndarray],
                   settings: FilterSettings, *, name: str, window: tuple[float, float] | None = None,
                   load: InertialParams | None = None, holdout: bool = False,
                   max_gap_s: float = 0.1) -> CaptureMotion:
    """Pose the platform from its markers, filter, differentiate; see :class:`CaptureMotion`.

    The filter runs over the whole record (so its edge transients fall outside a window
    that leaves margins); the window only masks frames.
    """
    traj = body_trajectory(data, markers_platform)
    if traj.valid.sum() < 10:
        raise InputError(f"the platform markers ({', '.join(markers_platform)}) give a pose in "
                         f"only {int(traj.valid.sum())} frames; expected a capture of the "
                         "platform", path=data.source)
    motion = motion_from_pose(traj, settings, rate_hz=data.rate_hz, max_gap_s=max_gap_s)
    rot_raw, pos_raw = _fill_pose(traj, data.rate_hz, max_gap_s)
    valid = motion.valid.copy() & np.all(np.isfinite(pos_raw), axis=1)
    if window is not None:
        t0, t1 = window
        if t0 >= data.time_s[-1]:
            raise InputError(f"window starts at {t0} s but the capture ends at "
                             f"{data.time_s[-1]:.3f} s", path=data.source, field="window")
        valid &= (data.time_s >= t0) & (data.time_s <= t1)
    filt = motion.filter
    rt = np.swapaxes(motion.rotation, -1, -2)
    omega_dot_body = np.einsum("tij,tj->ti", rt, motion.alpha_lab)
    # Where does the motion lie relative to the filter's passband?
    # (rotations about the mean pose, scaled by 0.5 m to compare with translations)
    good = valid & np.all(np.isfinite(rot_raw), axis=(1, 2))
    dq = np.full((len(valid), 6), np.nan)
    if good.sum() >= 16:
        r_mean = Rotation.from_matrix(rot_raw[good]).mean()
        dq[good, :3] = pos_raw[good]
        dq[good, 3:] = 0.5 * (r_mean.inv() * Rotation.from_matrix(rot_raw[good])).as_rotvec()
    f_dom = dominant_frequency(dq[valid], data.rate_hz)
    f_edge = spectral_edge(dq[valid], data.rate_hz)
    # what the reader noticed (a C3D stopped early, a count column checked) and the window
    # taken to the capture's end: said in the run's notes, not lost
    note = window_note(window, data.time_s, data.rate_hz)
    warnings = [f"{name}: {n}" for n in data.notes] + ([f"{name}: {note}"] if note else [])
    if np.isfinite(f_edge) and f_edge > 0.8 * settings.passband_hz:
        warnings.append(
            f"{name}: 99% of the motion's power lies below {f_edge:.2f} Hz, close to or above the "
            f"filter's passband edge ({settings.passband_hz:g} Hz): the filter distorts this "
            "motion. Both sides of the equations are filtered alike, so the fit stays unbiased, "
            "but consider a wider passband for this capture")
    return CaptureMotion(
        name=name, path=data.source, time_s=data.time_s, rotation_raw=rot_raw,
        position_raw=pos_raw, rotation=motion.rotation, position=motion.position_m,
        velocity_lab=motion.velocity_lab, accel_lab=motion.accel_lab,
        omega_lab=motion.omega_lab, omega_body=motion.omega_body,
        omega_dot_body=omega_dot_body, valid=valid, filt=filt,
        correlation_frames=int(getattr(filt, "impulse_frames", settings.order)),
        load=load if load is not None else InertialParams(np.zeros(10)), holdout=holdout,
        pose_rms_m=float(np.sqrt(np.nanmean(traj.residual_rms_m ** 2))),
        dominant_hz=f_dom, warnings=tuple(warnings),
        marker_sigma_m=marker_sigma_from_residual(traj.residual_rms_m, len(markers_platform)))


def marker_sigma_from_residual(residual_rms_m: np.ndarray, n_markers: int) -> float:
    """Per-coordinate marker noise (m) from the rigid fit's RMS residual distances.

    A rigid fit of K markers absorbs 6 of the 3K coordinates' noise, so the mean squared
    residual distance is ``sigma^2 (3K - 6) / K``.
    """
    if n_markers < 3:
        return float("nan")
    ms = float(np.nanmean(np.asarray(residual_rms_m) ** 2))
    return float(np.sqrt(ms * n_markers / (3 * n_markers - 6)))


def with_noise_probes(cap: CaptureMotion, markers_platform: dict[str, np.ndarray],
                      settings: FilterSettings, *, n_probes: int = 2,
                      sigma_m: float | None = None, seed: int = 0) -> CaptureMotion:
    """``cap`` with noise probes for bias-compensated least squares.

    Equation-error regressors built from noisy, twice-differentiated markers are biased
    (errors in variables): ``E[A^T A]`` holds a noise term ``E[dA^T dA]``. To measure it, the
    platform markers are rebuilt noise-free from the filtered pose, then re-processed by the
    very same pipeline once clean and ``n_probes`` times with fresh white noise of the
    capture's own marker noise level (estimated from the rigid-fit residuals). The
    differences noisy - clean are samples of the noise in every regressor column and in the
    right-hand side, including their correlation (both come from the same markers).
    """
    sigma = cap.marker_sigma_m if sigma_m is None else float(sigma_m)
    if not np.isfinite(sigma) or sigma <= 0:
        return cap
    names = list(markers_platform)
    body = np.stack([markers_platform[n] for n in names])
    clean = np.einsum("tij,kj->tki", cap.rotation, body) + cap.position[:, None, :]
    rng = np.random.default_rng(seed)
    rate = 1.0 / float(np.median(np.diff(cap.time_s)))
    probes = []
    for k in range(n_probes + 1):
        xyz = clean if k == 0 else clean + rng.normal(0.0, sigma, clean.shape)
        data = MarkerData(time_s=cap.time_s, names=tuple(names), xyz_m=xyz, rate_hz=rate,
                          source=cap.path)
        probes.append(capture_motion(data, markers_platform, settings, name=f"{cap.name}#probe{k}",
                                     load=cap.load, holdout=cap.holdout))
    from dataclasses import replace
    return replace(cap, noise_probes=tuple(probes), marker_sigma_m=sigma)


def relative_pose(platform: BodyTrajectory, body: BodyTrajectory,
                  valid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Mean pose of ``body`` in the platform frame: ``(R_pb, t_pb, spread_rad)``.

    For a body bolted to the platform (reference body, base link): per frame
    ``R_pb = R_p^T R_b``, ``t_pb = R_p^T (p_b - p_p)``, averaged over the frames where both
    are defined (rotation by the chordal L2 mean of scipy). ``spread_rad`` is the RMS angle
    of the per-frame relative rotations about the mean: large values mean the body moved.
    """
    ok = platform.valid & body.valid
    if valid is not None:
        ok &= valid
    if ok.sum() < 3:
        raise InputError("the body and the platform are seen together in fewer than 3 frames")
    r_pb, t_pb = relative_frames(platform.rotation[ok], platform.position_m[ok],
                                 body.rotation[ok], body.position_m[ok])
    mean, delta = mean_rotation(r_pb)
    return mean, t_pb.mean(axis=0), rms_angle(delta)


def relative_frames(platform_rotation: np.ndarray, platform_position_m: np.ndarray,
                    body_rotation: np.ndarray, body_position_m: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """A body's pose in the platform frame, frame by frame: ``R_pb = R_p^T R_b [T, 3, 3]``
    and ``t_pb = R_p^T (p_b - p_p) [T, 3]`` from lab poses."""
    rt = np.swapaxes(platform_rotation, -1, -2)
    return rt @ body_rotation, np.einsum("tij,tj->ti", rt, body_position_m - platform_position_m)


def equation_rows(rig: Rig, rotation: np.ndarray, rows_body: np.ndarray) -> np.ndarray:
    """Wrench rows ``[T, 6, ...]`` (platform axes) as fitted: unchanged without locked DOFs;
    otherwise rotated to lab axes (guides act along lab axes) with the locked rows dropped."""
    if not rig.locked_dofs:
        return rows_body
    f = np.einsum("tij,tj...->ti...", rotation, rows_body[:, :3])
    n = np.einsum("tij,tj...->ti...", rotation, rows_body[:, 3:])
    return np.concatenate([f, n], axis=1)[:, rig.free_dof_rows]


def row_names(rig: Rig) -> list[str]:
    """Names of the rows :func:`equation_rows` keeps."""
    if not rig.locked_dofs:
        return list(WRENCH_ROWS)
    return [WRENCH_ROWS[i] for i in rig.free_dof_rows]


__all__ = ["CaptureMotion", "WRENCH_ROWS", "capture_motion", "relative_pose", "relative_frames",
           "equation_rows",
           "row_names", "dominant_frequency", "spectral_edge", "DOF_NAMES"]
