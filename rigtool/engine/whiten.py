"""Marker noise that is not isotropic: whitening of the output-error fits' residual rows.

A marker measured with noise covariance ``C`` (3x3, lab frame) contributes
``r^T C^-1 r`` to the negative log-likelihood. With ``C = L L^T`` (Cholesky) that is the
squared norm of the whitened residual ``L^-1 r``, so a least-squares fit of the whitened
rows (and of the Jacobian rows whitened alike, ``L^-1 J``) is the maximum-likelihood fit,
and ``(J^T C^-1 J)^-1`` its covariance. A camera's tag corners are such markers: one camera
sees depth several times worse than the image plane (rigtool.camera.track writes each
corner's covariance).

Conventions: covariances in m^2 (lab frame), residual rows in mm (as rigtool.engine.markers
writes them), so the whitening factors ``W = L^-1`` are in 1/mm and whitened rows are pure
numbers (1 when the covariance is exact). Arrays ``[T, K, 3, 3]``: frame, marker.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MarkerCovariance:
    """Per-marker, per-frame noise covariance of a capture's markers.

    Attributes
    ----------
    names : tuple of str
        Marker names, as the capture names them.
    cov_m2 : ndarray, shape (T, K, 3, 3) or (K, 3, 3)
        Lab-frame covariance of each marker at each frame of the capture (or the same at
        every frame), m^2; NaN where the marker is not seen.
    source : str
        Where it came from (a side file's name), for the report.
    correlated_in_frame : bool
        The markers' errors are correlated within a frame (a camera's tag corners: all of
        one body's come from one pose estimate, rigtool.camera.track), so ``cov_m2`` gives
        each marker's marginal covariance, not the joint one; the output-error fit's
        standard errors are then clustered by frame by default.
    """

    names: tuple[str, ...]
    cov_m2: np.ndarray
    source: str = ""
    correlated_in_frame: bool = False

    def select(self, names: list[str] | tuple[str, ...], frames: np.ndarray,
               n_frames: int) -> np.ndarray:
        """Covariances ``[F, len(names), 3, 3]`` of ``names`` at the capture frames
        ``frames`` (indices; the capture has ``n_frames``); a name not here raises
        ``KeyError``."""
        where = {n: i for i, n in enumerate(self.names)}
        cols = [where[n] for n in names]
        if self.cov_m2.ndim == 3:
            return np.broadcast_to(self.cov_m2[cols], (len(frames), len(cols), 3, 3))
        if self.cov_m2.shape[0] != n_frames:
            raise ValueError(f"covariance has {self.cov_m2.shape[0]} frames, the capture "
                             f"{n_frames}")
        return self.cov_m2[frames][:, cols]


def whitening_factors(cov_m2: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """``W = L^-1`` (1/mm) of ``C = L L^T`` for each covariance ``cov_m2 [..., 3, 3]``
    (m^2) where ``seen [...]``; zero where unseen.

    Raises
    ------
    ValueError
        When a seen marker's covariance is not finite or not positive definite.
    """
    c_mm2 = 1e6 * np.asarray(cov_m2, float)
    out = np.zeros(np.broadcast_shapes(c_mm2.shape[:-2], seen.shape) + (3, 3))
    c_seen = np.broadcast_to(c_mm2, out.shape)[seen]
    if not np.all(np.isfinite(c_seen)):
        raise ValueError("a seen marker has no finite covariance")
    c_seen = 0.5 * (c_seen + np.swapaxes(c_seen, -1, -2))
    try:
        low = np.linalg.cholesky(c_seen)
    except np.linalg.LinAlgError as err:
        raise ValueError("a marker's covariance is not positive definite") from err
    eye = np.broadcast_to(np.eye(3), low.shape)
    out[seen] = np.linalg.solve(low, eye)
    return out


def whiten_rows(w_seen: np.ndarray, r: np.ndarray, jac: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """Whitened residual rows and Jacobian rows: ``w_seen [n, 3, 3]`` the factors of the
    ``n`` seen (frame, marker) pairs in the rows' order (frame-major, three rows each, as
    rigtool.engine.markers.marker_rows writes them)."""
    rw = np.einsum("nij,nj->ni", w_seen, r.reshape(-1, 3)).ravel()
    if jac is None:
        return rw, None
    jw = np.einsum("nij,njp->nip", w_seen, jac.reshape(-1, 3, jac.shape[1]))
    return rw, jw.reshape(jac.shape)


__all__ = ["MarkerCovariance", "whitening_factors", "whiten_rows"]
