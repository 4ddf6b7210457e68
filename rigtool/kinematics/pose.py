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
- Everything is vectorised over frames: one batched ``np.linalg.svd`` on ``[T, 3, 3]``
  stacks; the outlier search loops over markers (at most ``K`` times), never over frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.errors import InputError
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


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # np.cross on [T, 3] has a large fixed overhead; this is the same thing, elementwise
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                     a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _top_eigvecs(a: np.ndarray, rel_gap: float = 1e-3):
    """Eigenvectors of the two largest eigenvalues of symmetric ``a [T, 3, 3]`` (closed form).

    Hand-written because numpy's batched ``eigh``/``svd`` call LAPACK once per 3x3 matrix
    (~5-10 us each, seconds for a long capture); the trigonometric eigenvalue formula and
    cross products of rows of ``A - lambda I`` are plain array arithmetic. That eigenvector
    formula loses accuracy as an eigenvalue nears another (error ~ eps * lambda_1 / gap),
    so frames whose gaps are below ``rel_gap * lambda_1`` are returned in ``bad`` for a
    LAPACK fallback.
    """
    a00, a11, a22 = a[:, 0, 0], a[:, 1, 1], a[:, 2, 2]
    a01, a02, a12 = a[:, 0, 1], a[:, 0, 2], a[:, 1, 2]
    q = (a00 + a11 + a22) / 3.0
    p1 = a01 ** 2 + a02 ** 2 + a12 ** 2
    p = np.sqrt(((a00 - q) ** 2 + (a11 - q) ** 2 + (a22 - q) ** 2 + 2.0 * p1) / 6.0)
    ps = np.where(p > 0, p, 1.0)
    b00, b11, b22 = (a00 - q) / ps, (a11 - q) / ps, (a22 - q) / ps
    b01, b02, b12 = a01 / ps, a02 / ps, a12 / ps
    r = 0.5 * (b00 * (b11 * b22 - b12 ** 2) - b01 * (b01 * b22 - b12 * b02)
               + b02 * (b01 * b12 - b11 * b02))
    phi = np.arccos(np.clip(r, -1.0, 1.0)) / 3.0
    lam1 = q + 2.0 * p * np.cos(phi)
    lam3 = q + 2.0 * p * np.cos(phi + 2.0 * np.pi / 3.0)
    lam2 = 3.0 * q - lam1 - lam3
    vecs = []
    eye = np.eye(3)
    for lam in (lam1, lam2):
        m = a - lam[:, None, None] * eye
        c = np.stack([_cross(m[:, 0], m[:, 1]), _cross(m[:, 0], m[:, 2]),
                      _cross(m[:, 1], m[:, 2])], axis=1)
        n2 = np.einsum("tci,tci->tc", c, c)
        vecs.append(c[np.arange(len(c)), np.argmax(n2, axis=1)])
    scale = np.abs(lam1)
    bad = ~((lam1 - lam2 > rel_gap * scale) & (lam2 - lam3 > rel_gap * scale)
            & np.isfinite(lam1) & (p > 0))
    return _unit(vecs[0]), _unit(vecs[1]), bad


def rotation_from_covariance(h: np.ndarray) -> np.ndarray:
    """Proper rotation ``R`` maximising ``trace(R h)`` for ``h [T, 3, 3]`` (guarded Kabsch).

    With ``h = U S V^T`` the optimum over rotations is ``R = V diag(1, 1, d) U^T``,
    ``d = sign det(V U^T)``. Equivalently, from the two leading singular pairs only:
    ``R = [v1 v2 v1 x v2] [u1 u2 u1 x u2]^T`` with ``v`` the leading eigenvectors of
    ``h^T h`` and ``u_i = h v_i / s_i``. That form needs no third singular vector, so it is
    exact for coplanar markers (``s3 = 0``) and never a reflection.
    """
    a = np.swapaxes(h, -1, -2) @ h
    with np.errstate(invalid="ignore", divide="ignore"):  # degenerate frames -> fallback
        rot, bad = _rotation_closed_form(h, a)
    if bad.any():  # near-degenerate singular values (symmetric clusters): LAPACK SVD
        u, _, vt = np.linalg.svd(h[bad])
        v = np.swapaxes(vt, -1, -2)
        ut = np.swapaxes(u, -1, -2)
        d = np.sign(np.linalg.det(v @ ut))
        d[d == 0] = 1.0
        v[:, :, 2] *= d[:, None]
        rot[bad] = v @ ut
    return rot


def _rotation_closed_form(h: np.ndarray, a: np.ndarray):
    v1, v2, bad = _top_eigvecs(a)
    u1 = _unit(np.einsum("tij,tj->ti", h, v1))
    u2 = np.einsum("tij,tj->ti", h, v2)
    u2 = _unit(u2 - np.einsum("ti,ti->t", u1, u2)[:, None] * u1)
    v2 = _unit(v2 - np.einsum("ti,ti->t", v1, v2)[:, None] * v1)
    vm = np.stack([v1, v2, _cross(v1, v2)], axis=2)
    um = np.stack([u1, u2, _cross(u1, u2)], axis=2)
    rot = vm @ np.swapaxes(um, -1, -2)
    bad |= ~np.all(np.isfinite(rot.reshape(len(rot), 9)), axis=1)
    return rot, bad


def kabsch(y_lab: np.ndarray, x_body: np.ndarray, w: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """Weighted least-squares rigid fit of body points onto lab points, batched over frames.

    Parameters
    ----------
    y_lab : ndarray, shape (T, K, 3)
        Lab positions; rows with zero weight may hold anything finite.
    x_body : ndarray, shape (K, 3)
        Body-frame coordinates of the same points.
    w : ndarray, shape (T, K)
        Non-negative weights (0 = not used).

    Returns
    -------
    rotation : ndarray, shape (T, 3, 3)
    position : ndarray, shape (T, 3)

    Notes
    -----
    Minimises ``sum_k w_k |R x_k + p - y_k|^2`` (Kabsch / Arun et al.) with
    ``H = sum w x_c y_c^T`` and :func:`rotation_from_covariance`, which never returns a
    reflection (always possible for three or coplanar markers).
    ``scipy.spatial.transform.Rotation.align_vectors`` does the same fit but one frame per
    call, far too slow for long captures.
    """
    wsum = w.sum(axis=1)
    wn = w / np.where(wsum > 0, wsum, 1.0)[:, None]
    # H = sum_k w x_c y^T = X^T W Y - c_x (sum_k w y)^T, never centring the [T, K, 3]
    # lab array (lab coordinates of a few metres cost at most ~2 of float64's 16 digits)
    wy = wn[:, :, None] * y_lab
    cy = wy.sum(axis=1)
    cx = wn @ x_body
    h = np.einsum("ki,tkj->tij", x_body, wy) - cx[:, :, None] * cy[:, None, :]
    rot = rotation_from_covariance(h)
    pos = cy - np.einsum("tij,tj->ti", rot, cx)
    return rot, pos


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
    """
    if not markers_body:
        raise InputError("expected at least 3 markers for a body, got none",
                         path=data.source, field="markers")
    names = list(markers_body)
    x = np.array([np.asarray(markers_body[n], dtype=float) for n in names])
    return fit_pose(data.select(names), x, marker_names=tuple(names), time_s=data.time_s,
                    **kw)


def _mean_position(data: MarkerData, name: str) -> np.ndarray:
    xyz = data.marker(name)
    ok = np.all(np.isfinite(xyz), axis=1)
    if not ok.any():
        raise InputError(f"marker '{name}' is missing in every frame of the static capture",
                         path=data.source)
    return xyz[ok].mean(axis=0)


def markers_from_static(data: MarkerData, /, *, origin: str | list[str] | np.ndarray,
                        x_axis: tuple[str, str], xy_plane: str,
                        names: list[str]) -> dict[str, np.ndarray]:
    """Body-frame marker coordinates from a static capture (SPEC ``[links.frame]``).

    Each marker's lab position is averaged over the frames where it is seen. The frame:
    origin at a marker, at the midpoint of several markers, or at a given lab point (e.g. a
    joint centre); x from the first ``x_axis`` marker towards the second; y in the plane of
    x and the ``xy_plane`` marker, towards it; ``z = x × y``.

    Parameters
    ----------
    data : MarkerData
        The static capture.
    origin : str, list of str or ndarray, shape (3,)
        Origin marker, markers whose midpoint is the origin, or a lab point (m).
    x_axis : (str, str)
        Markers defining the x axis (from first to second).
    xy_plane : str
        A marker in the x-y plane, on the +y side.
    names : list of str
        Markers whose body-frame coordinates are returned.

    Returns
    -------
    dict of str -> ndarray, shape (3,)
        Body-frame coordinates, m.
    """
    if isinstance(origin, str):
        o = _mean_position(data, origin)
    elif isinstance(origin, (list, tuple)) and origin and all(isinstance(s, str) for s in origin):
        o = np.mean([_mean_position(data, s) for s in origin], axis=0)
    else:
        o = np.asarray(origin, dtype=float)
        if o.shape != (3,) or not np.all(np.isfinite(o)):
            raise InputError("expected a marker name, a list of marker names or a lab point "
                             "[x, y, z] in m", field="origin", found=origin)
    if len(x_axis) != 2:
        raise InputError("expected two marker names", field="x_axis", found=x_axis)
    a, b = (_mean_position(data, s) for s in x_axis)
    ex = b - a
    if np.linalg.norm(ex) < 1e-6:
        raise InputError(f"x_axis markers {x_axis[0]} and {x_axis[1]} coincide; expected two "
                         "distinct markers", path=data.source, field="x_axis")
    ex = ex / np.linalg.norm(ex)
    v = _mean_position(data, xy_plane) - a
    ey = v - (v @ ex) * ex
    if np.linalg.norm(ey) < 1e-3 * max(np.linalg.norm(v), 1e-9) or np.linalg.norm(ey) < 1e-6:
        raise InputError(f"xy_plane marker {xy_plane} lies on the x axis "
                         f"({x_axis[0]} -> {x_axis[1]}); expected a marker off that line",
                         path=data.source, field="xy_plane")
    ey = ey / np.linalg.norm(ey)
    rot = np.column_stack([ex, ey, np.cross(ex, ey)])  # body -> lab
    return {n: rot.T @ (_mean_position(data, n) - o) for n in names}


__all__ = ["BodyTrajectory", "fit_pose", "body_trajectory", "markers_from_static", "kabsch"]
