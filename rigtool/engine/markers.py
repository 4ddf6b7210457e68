"""The marker model: lab positions of markers fixed in a moving body, and their derivatives.

``x_k(t) = R(t) m_k + p(t)`` for markers ``m_k [K, 3]`` in the body frame and the engine's
states ``[T, 18]`` (``p = y[0:3]``, ``R = y[3:12]`` row-major); with tangents ``[T, 18, P]``
the derivative is ``dR m_k + dp``. Residual rows are in mm, frame-major, three per seen marker
(frame-major, seen markers in order).
"""

from __future__ import annotations

import numpy as np


def predicted_markers(states: np.ndarray, markers_body: np.ndarray) -> np.ndarray:
    """``[T, K, 3]`` lab positions (m) of ``markers_body [K, 3]`` (or ``[T, K, 3]``)."""
    t_n = states.shape[0]
    rot = states[:, 3:12].reshape(t_n, 3, 3)
    if markers_body.ndim == 2:
        return markers_body @ np.swapaxes(rot, 1, 2) + states[:, None, 0:3]
    return np.einsum("tij,tkj->tki", rot, markers_body) + states[:, None, 0:3]


def marker_rows(states: np.ndarray, tangents: np.ndarray | None, markers_body: np.ndarray,
                measured_m: np.ndarray, mask: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """Residual rows ``r [M]`` (mm) and their Jacobian ``[M, P]`` (mm per unit of each
    tangent direction) of the markers against ``measured_m [T', K, 3]`` where ``mask [T', K]``
    (the first ``T`` frames of both are used)."""
    t_n = states.shape[0]
    m = mask[:t_n]
    pred = predicted_markers(states, markers_body)
    r = 1e3 * (pred - measured_m[:t_n])[m].ravel()
    if tangents is None:
        return r, None
    p_n = tangents.shape[2]
    d_rot = tangents[:, 3:12, :].reshape(t_n, 3, 3, p_n)
    d_pos = tangents[:, 0:3, :]
    # only the seen (frame, marker) pairs: d x = dR m + dp
    t_idx, k_idx = np.nonzero(m)
    body = markers_body[k_idx] if markers_body.ndim == 2 else markers_body[t_idx, k_idx]
    jac = np.einsum("nijp,nj->nip", d_rot[t_idx], body) + d_pos[t_idx]
    return r, 1e3 * jac.reshape(-1, p_n)


__all__ = ["predicted_markers", "marker_rows"]
