"""A covariance of the output-error estimate that holds when marker errors are correlated
within a frame: the cluster-robust (sandwich) covariance.

The Gauss-Newton covariance ``s^2 H^-1`` (``H = J^T W J``) assumes every residual row
independent. A camera's tag corners are not: all corners of one body in one frame are placed
by one pose estimate (rigtool.camera.pnp), so their errors share six numbers and per-corner
whitening counts each body's frame 3N times instead of six. The sandwich

    Cov = c H^-1 (sum_g s_g s_g^T) H^-1,    s_g = sum_{t in g} J_t^T W r_t,

with the score ``s_g`` of each cluster ``g`` of consecutive frames, is right whatever the
errors' correlation within a cluster (White 1980; Liang and Zeger 1986), provided clusters
are independent of each other. ``c = G/(G-1) (N-1)/(N-P)`` is the usual small-sample
correction (CR1: ``G`` clusters, ``N`` rows, ``P`` unknowns), so that with independent,
identically distributed rows the sandwich estimates what ``s^2 H^-1`` does.

Conventions: per-frame scores ``[T, P]`` in the units of the fit's rows times its Jacobian
(mm or whitened, as the fit's normal equations), frames in capture order; a frame with no
rows has a zero score and forms no cluster. Plain arrays only: nothing of the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.config import POSTURE_STANDARD_ERRORS as STANDARD_ERRORS
from rigtool.identify.posture.attached_markers import nuisance_products

#: Fewest clusters the posture fit accepts: a sandwich's variance scatters by about
#: ``sqrt(2 / G)`` (20 % of a variance at 50).
MIN_CLUSTERS = 50


def too_few_clusters(n_frames: int, cluster_frames: int) -> str | None:
    """Why ``n_frames`` in clusters of ``cluster_frames`` are too few for the sandwich (fewer
    than :data:`MIN_CLUSTERS`), as the message's text; None when they suffice."""
    if n_frames >= MIN_CLUSTERS * cluster_frames:
        return None
    return (f"clusters of {cluster_frames} frames leave fewer than {MIN_CLUSTERS} in the "
            f"{n_frames} frames fitted; expected cluster_frames of at most "
            f"{max(n_frames // MIN_CLUSTERS, 1)} (its standard errors would be unreliable)")


@dataclass(frozen=True)
class ClusterCovariance:
    """A cluster-robust covariance and what it rests on.

    Attributes
    ----------
    cov : ndarray (P, P)
        The sandwich, in the units of the unknowns.
    n_clusters : int
        Clusters with at least one row (``G``).
    cluster_frames : int
        Consecutive frames per cluster.
    correction : float
        The small-sample factor ``c`` applied.
    variance_rel_std : ndarray (P,)
        Relative standard deviation of each diagonal entry (its own sampling error: with
        ``q_g = (H^-1 s_g)_j^2``, ``sqrt(2/3 sum q_g^2) / sum q_g``, exact in expectation for
        Gaussian errors); about ``sqrt(2 / G)`` when every cluster weighs alike. A standard
        error's relative precision is half of it.
    """

    cov: np.ndarray
    n_clusters: int
    cluster_frames: int
    correction: float
    variance_rel_std: np.ndarray


def cluster_sums(scores: np.ndarray, /, *, cluster_frames: int = 1,
                 seen: np.ndarray | None = None) -> np.ndarray:
    """Scores summed over clusters of ``cluster_frames`` consecutive frames ``[G, P]``
    (clusters without a seen frame left out; ``seen [T]``, default: a nonzero score)."""
    scores = np.asarray(scores, float)
    if cluster_frames < 1:
        raise ValueError(f"cluster_frames must be at least 1, got {cluster_frames}")
    t_n = scores.shape[0]
    seen = np.any(scores != 0, axis=1) if seen is None else np.asarray(seen, bool)
    starts = np.arange(0, t_n, cluster_frames)
    if t_n == 0:
        return np.zeros((0, scores.shape[1]))
    sums = np.add.reduceat(scores, starts, axis=0)
    used = np.add.reduceat(seen.astype(int), starts) > 0
    return sums[used]


def cluster_covariance(bread: np.ndarray, scores: np.ndarray, /, *, n_rows: int,
                       cluster_frames: int = 1, seen: np.ndarray | None = None
                       ) -> ClusterCovariance:
    """The cluster-robust covariance ``c B M B`` of an M-estimate.

    Parameters
    ----------
    bread : ndarray (P, P)
        ``H^-1``, the inverse of the fit's information ``J^T W J`` (pseudo-inverse when the
        fit has gauge freedoms).
    scores : ndarray (T, P)
        Each frame's score ``J_t^T W r_t`` at the estimate (the gradient's terms).
    n_rows : int
        Residual rows of the fit (``N``).
    cluster_frames : int
        Consecutive frames per cluster: 1 when errors are independent between frames; more
        when they are correlated over time (then clusters must span that correlation).
    seen : ndarray (T,), optional
        Frames with rows (default: those with a nonzero score).

    Returns
    -------
    ClusterCovariance

    Raises
    ------
    ValueError
        Fewer than two clusters, or shapes that do not match.
    """
    bread = np.asarray(bread, float)
    p_n = bread.shape[0]
    if bread.shape != (p_n, p_n) or np.shape(scores)[1:] != (p_n,):
        raise ValueError(f"bread {bread.shape} and scores {np.shape(scores)} do not match "
                         "(expected (P, P) and (T, P))")
    sums = cluster_sums(scores, cluster_frames=cluster_frames, seen=seen)
    g_n = sums.shape[0]
    if g_n < 2:
        raise ValueError(f"a cluster-robust covariance needs at least 2 clusters, got {g_n}")
    infl = sums @ bread                               # [G, P]: H^-1 s_g (bread symmetric)
    correction = g_n / (g_n - 1) * (n_rows - 1) / max(n_rows - p_n, 1)
    cov = correction * (infl.T @ infl)
    q = infl ** 2
    tot = q.sum(0)
    rel = np.sqrt(2.0 / 3.0 * (q ** 2).sum(0)) / np.where(tot > 0, tot, np.inf)
    return ClusterCovariance(0.5 * (cov + cov.T), int(g_n), int(cluster_frames),
                             float(correction), rel)


def score_autocorrelation(scores: np.ndarray, /, lags: int = 10,
                          seen: np.ndarray | None = None) -> np.ndarray:
    """Autocorrelation ``[lags + 1]`` of the per-frame scores over time (lag 0 is 1): the
    mean over the score's ``P`` directions after standardising them by their covariance
    (``u_t = L^-1 s_t``, ``L L^T = sum_t s_t s_t^T``), ``rho_l = tr(sum_t u_t u_{t+l}^T)
    / P``. Near zero for every ``l >= 1``: clusters of one frame suffice; a value far
    beyond ``+-2 / sqrt(T)`` at lag ``l``: errors correlated over ``l`` frames."""
    s = np.asarray(scores, float)
    if seen is not None:
        s = np.where(np.asarray(seen, bool)[:, None], s, 0.0)
    s = s - s.mean(0)
    m = s.T @ s
    keep = np.diag(m) > 0
    s, m = s[:, keep], m[np.ix_(keep, keep)]
    low = np.linalg.cholesky(m + 1e-12 * np.trace(m) / max(len(m), 1) * np.eye(len(m)))
    u = np.linalg.solve(low, s.T).T
    p_n = u.shape[1]
    out = np.ones(lags + 1)
    for lag in range(1, lags + 1):
        out[lag] = float(np.einsum("ti,ti->", u[:-lag], u[lag:])) / p_n
    return out


def frame_sums(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per-frame sums ``[T, ...]`` of row quantities ``values [3 n_seen, ...]`` whose rows
    follow ``mask [T, K]`` (frame-major, three rows per seen marker, as
    rigtool.engine.markers.marker_rows orders them); zero for a frame with no rows."""
    t_n = mask.shape[0]
    out = np.zeros((t_n,) + values.shape[1:])
    per = 3 * mask.sum(1)
    has = per > 0
    if values.shape[0]:
        starts = np.concatenate([[0], np.cumsum(per)[:-1]])[has]
        out[has] = np.add.reduceat(values, starts, axis=0)
    return out


def position_scores(r: np.ndarray, mask: np.ndarray, rot_lab: np.ndarray,
                    attached: np.ndarray, whiten: np.ndarray | None = None) -> np.ndarray:
    """``[T, E, 3]``: each frame's score of the attached markers' platform-frame positions,
    ``1e3 R_t^T W_tk^T (W_tk r_tk)`` (``r`` the fit's rows, whitened when ``whiten [T, K,
    3, 3]`` is given; rows ordered as in :func:`frame_sums`): the per-frame terms of
    rigtool.identify.posture.attached_markers.position_products of ``r``."""
    t_n, k_n = mask.shape
    full = np.zeros((t_n, k_n, 3))
    full[mask] = r.reshape(-1, 3)
    part = full[:, attached]
    if whiten is not None:
        part = np.einsum("tkji,tkj->tki", whiten[:t_n, attached], part)
    return 1e3 * np.einsum("tji,tkj->tki", rot_lab[:t_n], part)


def joint_scores(scores: np.ndarray, scores_att: np.ndarray | None, n_x: int, n_base: int,
                 pose_cols: np.ndarray | None) -> np.ndarray:
    """Per-frame scores ``[T, P]`` of the joint unknowns ``[x (n_x), base pose (6, when
    n_base > 0), free markers' positions (3 each)]`` (the order of
    rigtool.identify.posture.attached_markers.joint_information) from the fit's per-frame
    scores ``[T, >= n_x]`` and the attached markers' ``[T, E, 3]`` (None: no markers)."""
    if scores_att is None or scores_att.shape[1] == 0:
        return scores[:, :n_x]
    nuis = nuisance_products(np.moveaxis(scores_att, 0, -1), n_base, pose_cols)   # [Q, T]
    return np.hstack([scores[:, :n_x], nuis.T])


def frame_clustered(bread: np.ndarray, scores: np.ndarray, scores_att: np.ndarray | None,
                    n_x: int, n_base: int, pose_cols: np.ndarray | None, *, n_rows: int,
                    seen: np.ndarray, cluster_frames: int = 1
                    ) -> tuple[ClusterCovariance, np.ndarray, str | None]:
    """The posture fit's frame-clustered covariance of its joint unknowns (the arguments
    of :func:`joint_scores` and :func:`cluster_covariance`), the per-frame scores'
    autocorrelation at lags 0 to ``max(5, 2 cluster_frames)`` and, when it shows
    correlation at a lag of ``cluster_frames`` or more (over ``4/sqrt(T)``), a warning's
    text (else None)."""
    full = joint_scores(scores, scores_att, n_x, n_base, pose_cols)
    robust = cluster_covariance(bread, full, n_rows=n_rows, seen=seen,
                                cluster_frames=cluster_frames)
    acf = score_autocorrelation(full, lags=max(5, 2 * cluster_frames), seen=seen)
    note = None
    if np.abs(acf[cluster_frames:]).max(initial=0.0) > 4.0 / np.sqrt(np.sum(seen)):
        note = (f"the fit's scores are correlated over frames (autocorrelation at lags 1-5: "
                f"{np.round(acf[1:6], 2).tolist()}): the marker errors are not independent "
                f"between clusters of {cluster_frames} frame(s), and the standard errors are "
                "too small. Correlation that dies out within a few frames: cluster over more "
                "(cluster_frames); that persists: constant marker errors (a tag corner's "
                "bias, the lab frame's), which no standard error covers")
    return robust, acf, note


#: the serial-correlation-robust covariance's window (s): Bartlett weights over lags up to
#: this. Chosen on the simulator's heartbeat (a 70/min recoil the model leaves out; 4 seeds,
#: 108 COM and inertia entries): within 2 standard errors 91.7 % at 0.5 s, 88.9 % at 2 s,
#: 80.6 % at 5 s (the fit's gradient is zero at its estimate, so the scores' long lags are
#: biased low and a long window loses what they carry), 82 % with frames independent
SERIAL_WINDOW_S = 0.5
#: ``"auto"`` takes the serial-correlation-robust covariance when it exceeds the independent
#: frames' by this factor (mean over the object's variances). Measured at 20 s and 100 Hz:
#: 0.69-1.25 over 25 rigid postures (the demo's, the living study's rigid ones, the rigid
#: whole body's 19), so a rigid body keeps the independent frames' to the bit; 2.3-3.6 over
#: the heartbeat's 12 (4 seeds)
SERIAL_GATE = 2.0


def serial_covariance(bread: np.ndarray, scores: np.ndarray, /, *, n_rows: int,
                      lag_frames: int, seen: np.ndarray | None = None) -> ClusterCovariance:
    """The serial-correlation-robust (Newey and West 1987, Econometrica 55:703) covariance
    ``c B (sum_l w_l G_l) B`` of an M-estimate, ``G_l = sum_t s_t s_{t+l}^T`` (and its
    transpose for ``-l``), Bartlett weights ``w_l = 1 - |l| / (L + 1)`` for ``|l| <= L =
    lag_frames``: right when the residual is correlated over up to ``L`` frames (an
    unmodelled periodic force, a slow drift), which the independent frames' ``s^2 H^-1``
    takes as white. Arguments as :func:`cluster_covariance` (``c = (N - 1)/(N - P)``); the
    result's ``n_clusters`` counts the frames with rows and ``cluster_frames`` is ``L``.

    Written here, not taken from statsmodels (not a dependency), whose HAC needs the rows
    themselves: the posture fit keeps only its per-frame scores, chunk by chunk.

    Parameters
    ----------
    bread : ndarray (P, P)
        ``H^-1``, the inverse of the fit's information.
    scores : ndarray (T, P)
        Each frame's score ``J_t^T W r_t`` at the estimate, frames in capture order.
    n_rows : int
        Residual rows of the fit (``N``).
    lag_frames : int
        The window ``L`` (frames); 0 gives the independent frames' sandwich.
    seen : ndarray (T,), optional
        Frames with rows (the others' scores are taken as zero).

    Returns
    -------
    ClusterCovariance
        ``variance_rel_std``: the Bartlett estimate's own relative scatter,
        ``sqrt(2 (2L + 1) / (3 T))``.

    Raises
    ------
    ValueError
        Shapes that do not match.
    """
    bread = np.asarray(bread, float)
    p_n = bread.shape[0]
    scores = np.asarray(scores, float)
    if bread.shape != (p_n, p_n) or scores.shape[1:] != (p_n,):
        raise ValueError(f"bread {bread.shape} and scores {scores.shape} do not match "
                         "(expected (P, P) and (T, P))")
    if seen is not None:
        scores = np.where(np.asarray(seen, bool)[:, None], scores, 0.0)
    infl = scores @ bread                             # [T, P]: H^-1 s_t
    meat = infl.T @ infl
    lag_n = int(min(max(lag_frames, 0), max(len(infl) - 1, 0)))
    for lag in range(1, lag_n + 1):                   # a loop over lags, not samples
        g = infl[:-lag].T @ infl[lag:]
        meat += (1.0 - lag / (lag_n + 1.0)) * (g + g.T)
    correction = (n_rows - 1) / max(n_rows - p_n, 1)
    cov = correction * meat
    frames = int(np.any(scores != 0, axis=1).sum())
    # the variance estimate's own scatter, about sqrt(2 (2L + 1) / 3 / T) (Bartlett)
    rel = np.full(p_n, np.sqrt(2.0 * (2 * lag_n + 1) / 3.0 / max(frames, 1)))
    return ClusterCovariance(0.5 * (cov + cov.T), frames, lag_n, float(correction), rel)


def frame_serial(bread: np.ndarray, scores: np.ndarray, scores_att: np.ndarray | None,
                 n_x: int, n_base: int, pose_cols: np.ndarray | None, *, n_rows: int,
                 seen: np.ndarray, lag_frames: int) -> ClusterCovariance:
    """The posture fit's serial-correlation-robust covariance of its joint unknowns (the
    arguments of :func:`joint_scores` and :func:`serial_covariance`)."""
    full = joint_scores(scores, scores_att, n_x, n_base, pose_cols)
    return serial_covariance(bread, full, n_rows=n_rows, seen=seen, lag_frames=lag_frames)


def serial_inflation(serial: np.ndarray, independent: np.ndarray, n: int) -> float:
    """Mean over the first ``n`` unknowns (the object's) of the serial-correlation-robust
    variance over the independent frames' (1 for white residuals)."""
    a, b = np.diag(serial)[:n], np.diag(independent)[:n]
    ok = b > 0
    return float(np.mean(a[ok] / b[ok])) if ok.any() else 1.0


def resolve_standard_errors(setting: str, correlated_in_frame: bool) -> str:
    """``"independent"``, ``"frame"`` or ``"serial"`` for a :data:`STANDARD_ERRORS` setting;
    ``"auto"`` is ``"frame"`` when the markers' errors are correlated within a frame (a
    camera's), else ``"independent"`` (which the fit turns into ``"serial"`` when its
    residual shows serial correlation: :data:`SERIAL_GATE`)."""
    if setting not in STANDARD_ERRORS:
        raise ValueError(f"standard_errors must be one of {', '.join(STANDARD_ERRORS)}, "
                         f"got {setting!r}")
    if setting == "auto":
        return "frame" if correlated_in_frame else "independent"
    return setting


__all__ = ["MIN_CLUSTERS", "too_few_clusters", "frame_clustered", "serial_covariance",
           "frame_serial", "serial_inflation", "SERIAL_WINDOW_S", "SERIAL_GATE",
           "joint_scores", "resolve_standard_errors", "ClusterCovariance",
           "STANDARD_ERRORS", "cluster_covariance", "cluster_sums",
           "score_autocorrelation", "frame_sums", "position_scores"]
