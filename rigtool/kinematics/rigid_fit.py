"""Weighted least-squares rigid fit of body points onto lab points, batched over frames.

:func:`kabsch` fits ``R, p`` minimising ``sum_k w_k |R x_k + p - y_k|^2`` in every frame
at once; :func:`rotation_from_covariance` is its rotation step (a closed-form 3x3
eigen-solution with a LAPACK fallback for near-degenerate frames), which never returns a
reflection. Time is the first axis; the frame loop is never written in Python.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kabsch", "rotation_from_covariance"]


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

    Parameters
    ----------
    h : ndarray, shape (T, 3, 3)
        Cross-covariances ``sum_k w_k x_c y_c^T`` of body and lab points, one per frame.

    Returns
    -------
    ndarray, shape (T, 3, 3)
        Body -> lab rotations.
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
