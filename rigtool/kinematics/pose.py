"""Pose of a rigid marker cluster, frame by frame (SVD / Kabsch fit).

Conventions
-----------
- Time is the first axis. Marker positions ``xyz_lab_m`` are ``[T, K, 3]`` in the lab
  frame, metres, NaN where a marker is missing; body-frame marker coordinates are ``[K, 3]``.
- A pose maps body to lab: ``x_lab = R @ x_body + p`` with ``R`` ``[T, 3, 3]`` and ``p``
  ``[T, 3]``.
- A frame's pose is NaN (and ``valid`` False) when fewer than ``min_markers`` markers are
  seen, when the seen markers are (nearly) collinear, or when a residual above the outlier
  threshold cannot be resolved by dropping a marker.
- Everything is vectorised over frames: the rigid fit works on ``[T, 3, 3]`` stacks at
  once; the outlier search loops over markers (at most ``K`` times), never over frames.

This module fits the pose with its outlier search (:func:`fit_pose`,
:func:`body_trajectory`). The rigid fit itself is :mod:`rigtool.kinematics.rigid_fit`
(:func:`kabsch`, :func:`rotation_from_covariance`) and a body's marker coordinates from a
static capture are :mod:`rigtool.kinematics.static_frame` (:func:`markers_from_static`);
both are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.errors import InputError
from rigtool.kinematics.rigid_fit import kabsch, rotation_from_covariance
from rigtool.kinematics.static_frame import markers_from_static
from rigtool.mocap import MarkerData

#: A cluster whose smaller spread across its main line is below this fraction of the spread
#: along it is treated as collinear: the rotation about that line is then undetermined.
COLLINEAR_RATIO = 1e-3


@dataclass(frozen=True)
class BodyTrajectory:
    """Marker-fitted pose of one rigid body over a capture.

    Attributes
    ----------
    time_s : ndarray, shape (T,)
        Time of each frame, s.
    rotation : ndarray, shape (T, 3, 3)
        Body -> lab rotation, NaN where the pose is undefined.
    position_m : ndarray, shape (T, 3)
        Body origin in the lab, m, NaN where the pose is undefined.
    residual_rms_m : ndarray, shape (T,)
        RMS distance (m) between the used markers and the fitted cluster.
    valid : ndarray of bool, shape (T,)
        True where the pose is defined.
    used : ndarray of bool, shape (T, K)
        Markers that entered the final fit of each frame.
    marker_names : tuple of str
        Names of the K markers, in column order.
    dropped : list of (str, int)
        Markers dropped as outliers (label swap, ghost) and in how many frames.
    rejected_frames : int
        Frames whose residual stayed above the outlier threshold with no marker left to
        drop (e.g. a label swap in a three-marker cluster); their pose is NaN.
    """

    time_s: np.ndarray
    rotation: np.ndarray
    position_m: np.ndarray
    residual_rms_m: np.ndarray
    valid: np.ndarray
    used: np.ndarray
    marker_names: tuple[str, ...]
    dropped: list[tuple[str, int]] = field(default_factory=list)
    rejected_frames: int = 0

    @property
    def n_frames(self) -> int:
        """Number of frames."""
        return int(self.time_s.shape[0])


def _collinear(w: np.ndarray, x_body: np.ndarray) -> np.ndarray:
    """Frames ``[T]`` whose weighted markers (weights ``w [T, K]``) are (nearly) collinear
    in the body frame: the smaller cross-line spread is below :data:`COLLINEAR_RATIO` of
    the spread along the line."""
    wn = w / np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
    xc = x_body[None] - (wn @ x_body)[:, None, :]
    ev = np.linalg.eigvalsh(np.swapaxes(wn[:, :, None] * xc, -1, -2) @ xc)
    return ev[:, 1] <= (COLLINEAR_RATIO ** 2) * ev[:, 2]


def _collinear_by_pattern(used: np.ndarray, w_k: np.ndarray, x_body: np.ndarray
                          ) -> np.ndarray:
    """:func:`_collinear` for per-marker weights ``w_k [K]``: the geometry depends only on
    which markers are used, so it is computed once per distinct pattern (a few, typically)."""
    code = used.astype(np.int64) @ (np.int64(1) << np.arange(used.shape[1], dtype=np.int64))
    uniq, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return _collinear(used[first] * w_k, x_body)[inverse.ravel()]


def _residuals(y_lab, x_body, rot, pos):
    """Distances ``[T, K]`` between lab markers and the fitted cluster."""
    n_t = rot.shape[0]
    pred = (rot.reshape(n_t * 3, 3) @ x_body.T).reshape(n_t, 3, -1)  # one GEMM: [T, 3, K]
    d = y_lab.transpose(0, 2, 1) - pred - pos[:, :, None]
    return np.sqrt(np.einsum("tik,tik->tk", d, d))


def _check_inputs(xyz_lab_m, markers_body_m, weights, min_markers):
    y = np.asarray(xyz_lab_m, dtype=float)
    x = np.asarray(markers_body_m, dtype=float)
    if y.ndim != 3 or y.shape[2] != 3:
        raise InputError("expected marker positions of shape [frames, markers, 3]",
                         field="xyz_lab_m", found=y.shape)
    if x.shape != (y.shape[1], 3) or not np.all(np.isfinite(x)):
        raise InputError(f"expected finite body-frame marker coordinates of shape "
                         f"({y.shape[1]}, 3), one row per marker column",
                         field="markers_body_m", found=x.shape)
    if min_markers < 3:
        raise InputError("a rigid pose needs at least 3 markers", field="min_markers",
                         found=min_markers)
    if weights is None:
        w = np.ones(y.shape[:2])
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape not in ((y.shape[1],), y.shape[:2]):
            raise InputError(f"expected marker weights of shape ({y.shape[1]},) or "
                             f"({y.shape[0]}, {y.shape[1]})", field="weights", found=w.shape)
        w = np.broadcast_to(w, y.shape[:2]).copy()
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise InputError("expected finite non-negative marker weights", field="weights",
                             found=weights)
    return y, x, w


def fit_pose(xyz_lab_m: np.ndarray, markers_body_m: np.ndarray, *,
             weights: np.ndarray | None = None, outlier_m: float | None = 0.005,
             min_markers: int = 3, marker_names: tuple[str, ...] | None = None,
             time_s: np.ndarray | None = None) -> BodyTrajectory:
    """Fit the pose of a rigid marker cluster in every frame.

    Parameters
    ----------
    xyz_lab_m : ndarray, shape (T, K, 3)
        Marker positions in the lab, m; NaN where missing.
    markers_body_m : ndarray, shape (K, 3)
        Marker coordinates in the body frame, m.
    weights : ndarray, shape (K,) or (T, K), optional
        Relative marker weights (e.g. inverse noise variance); default all equal.
    outlier_m : float or None
        A frame whose worst marker residual exceeds this (m) is searched for one bad marker
        (label swap, ghost): the marker whose removal leaves the best fit is dropped and the
        frame refitted, repeatedly while at least ``min_markers + 1`` remain. ``None``
        disables the search.
    min_markers : int
        Fewest markers for a pose (>= 3).
    marker_names : tuple of str, optional
        Names for the report; default ``m0, m1, ...``.
    time_s : ndarray, shape (T,), optional
        Frame times; default ``arange(T)`` (frame numbers).

    Returns
    -------
    BodyTrajectory
    """
    y, x, w = _check_inputs(xyz_lab_m, markers_body_m, weights, min_markers)
    n_t, n_k = y.shape[:2]
    names = tuple(marker_names) if marker_names is not None else tuple(
        f"m{k}" for k in range(n_k))
    present = np.all(np.isfinite(y), axis=2)
    used = present & (w > 0)
    y0 = np.where(used[:, :, None], y, 0.0)

    rot, pos = kabsch(y0, x, w * used)
    res = _residuals(y0, x, rot, pos)
    dropped_counts = np.zeros(n_k, dtype=int)
    rejected = np.zeros(n_t, dtype=bool)
    if outlier_m is not None:
        for _ in range(n_k):
            bad = np.where(used, res, 0.0).max(axis=1) > outlier_m
            if not bad.any():
                break
            can = bad & (used.sum(axis=1) > min_markers)
            idx = np.flatnonzero(can)
            if idx.size == 0:
                break
            # Leave-one-out: drop in turn each used marker of the suspect frames; keep the
            # drop whose refit leaves the smallest worst residual. The worst residual of the
            # full fit can sit on a good marker (the fit leans toward the outlier).
            best_k = np.full(idx.size, -1)
            best_r = np.full(idx.size, np.inf)
            for k in range(n_k):
                cand = used[idx, k]
                if not cand.any():
                    continue
                sub = idx[cand]
                u_k = used[sub].copy()
                u_k[:, k] = False
                r_k, p_k = kabsch(y0[sub], x, w[sub] * u_k)
                worst = np.where(u_k, _residuals(y0[sub], x, r_k, p_k), 0.0).max(axis=1)
                better = worst < best_r[cand]
                pos_in = np.flatnonzero(cand)[better]
                best_r[pos_in] = worst[better]
                best_k[pos_in] = k
            used[idx, best_k] = False
            dropped_counts += np.bincount(best_k, minlength=n_k)
            r_new, p_new = kabsch(y0[idx], x, w[idx] * used[idx])
            rot[idx], pos[idx] = r_new, p_new
            res[idx] = _residuals(y0[idx], x, r_new, p_new)
        rejected = np.where(used, res, 0.0).max(axis=1) > outlier_m

    n_used = used.sum(axis=1)
    rms = np.sqrt(np.where(used, res ** 2, 0.0).sum(axis=1) / np.maximum(n_used, 1))
    if weights is not None and np.ndim(weights) == 2:
        collinear = _collinear(w * used, x)
    else:
        collinear = _collinear_by_pattern(used, w[0], x)
    valid = (n_used >= min_markers) & ~collinear & ~rejected
    rot[~valid] = np.nan
    pos[~valid] = np.nan
    rms[n_used < 1] = np.nan
    t = np.arange(n_t, dtype=float) if time_s is None else np.asarray(time_s, dtype=float)
    dropped = [(names[k], int(c)) for k, c in enumerate(dropped_counts) if c > 0]
    return BodyTrajectory(time_s=t, rotation=rot, position_m=pos, residual_rms_m=rms,
                          valid=valid, used=used, marker_names=names, dropped=dropped,
                          rejected_frames=int((rejected & (n_used >= min_markers)).sum()))


def body_trajectory(data: MarkerData, markers_body: dict[str, np.ndarray], /,
                    **kw) -> BodyTrajectory:
    """:func:`fit_pose` of the named markers of a capture (``markers_body``: name -> xyz, m).

    Keyword arguments go to :func:`fit_pose`; ``time_s`` is the capture's.

    Parameters
    ----------
    data : MarkerData
        The capture.
    markers_body : dict of str -> ndarray, shape (3,)
        Body-frame coordinates (m) of the markers to fit, by name.
    **kw
        Passed to :func:`fit_pose` (``weights``, ``outlier_m``, ``min_markers``).

    Returns
    -------
    BodyTrajectory

    Raises
    ------
    InputError
        No markers given, or a named marker missing from (or ambiguous in) the capture.
    """
    if not markers_body:
        raise InputError("expected at least 3 markers for a body, got none",
                         path=data.source, field="markers")
    names = list(markers_body)
    x = np.array([np.asarray(markers_body[n], dtype=float) for n in names])
    return fit_pose(data.select(names), x, marker_names=tuple(names), time_s=data.time_s,
                    **kw)


__all__ = ["BodyTrajectory", "fit_pose", "body_trajectory", "markers_from_static", "kabsch",
           "rotation_from_covariance", "COLLINEAR_RATIO"]
