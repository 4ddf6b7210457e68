"""Maps from the fits' unknowns to the engine's inputs, with their exact Jacobians.

- a body's ``z = [c (3), log-Cholesky of Sigma_c (6)]`` (COM and COM-centred second moment,
  every value physically consistent; rigtool.identify.posture.output_error.object_to_z) to its
  standard parameters ``pi [10]`` about the frame origin;
- an initial state ``s = [p (3), rotation vector (3), v (3), omega (3)]`` (the rotation about
  a reference, ``R0 = exp([phi x]) R_ref``) to the engine's ``y0 [18]``.

Both maps and their Jacobians are written out in NumPy (Rodrigues' formula, its derivative
through SO(3)'s left Jacobian; the product rule through the Cholesky factor). Why by hand: they act on 12 and 9 numbers once per fit evaluation, and
tracing and compiling them with JAX (``expm`` under ``jacfwd``) took 1.1-1.3 s in every
process for 0.5 ms of work per call; tests hold them to JAX's ``jacfwd`` of ``expm``.
"""

from __future__ import annotations

import numpy as np

_TRIL = np.tril_indices(3)
_DIAG = np.flatnonzero(_TRIL[0] == _TRIL[1])
# Below this rotation angle (rad) the coefficients of Rodrigues' formula and of the left
# Jacobian are taken from their Taylor series (to theta^6: truncation under 1e-17 here),
# where the closed forms would lose digits to cancellation.
_SMALL_ANGLE = 1e-2


def _skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def rotation_and_derivative(phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(R [3, 3], dR/dphi [3, 3, 3])`` of ``R = exp([phi x])`` (last axis: ``phi_i``):
    Rodrigues' formula ``R = 1 + s K + a K^2`` and ``dR/dphi_i = [J_l e_i]x R`` with the
    left Jacobian ``J_l = 1 + a K + b K^2`` (``K = [phi x]``, ``s = sin t / t``,
    ``a = (1 - cos t) / t^2``, ``b = (t - sin t) / t^3``)."""
    phi = np.asarray(phi, float)
    t2 = float(phi @ phi)
    if t2 < _SMALL_ANGLE ** 2:
        s = 1.0 - t2 / 6.0 * (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0))
        a = 0.5 - t2 / 24.0 * (1.0 - t2 / 30.0 * (1.0 - t2 / 56.0))
        b = 1.0 / 6.0 - t2 / 120.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0))
    else:
        t = np.sqrt(t2)
        s = np.sin(t) / t
        a = 2.0 * np.sin(0.5 * t) ** 2 / t2
        b = (t - np.sin(t)) / (t2 * t)
    k = _skew(phi)
    k2 = k @ k
    eye = np.eye(3)
    rot = eye + s * k + a * k2
    j_left = eye + a * k + b * k2
    d = np.stack([_skew(j_left[:, i]) @ rot for i in range(3)], axis=2)
    return rot, d


def body_params(z: np.ndarray, mass_kg: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pi [10], d pi / d z [10, 9], d pi / d m [10])`` of a body ``z`` of mass ``mass_kg``:
    ``pi = [m, m c, I_o]`` with ``I_o = tr(Sigma) 1 - Sigma + m (|c|^2 1 - c c^T)`` and
    ``Sigma = L L^T``, ``L`` lower triangular from ``z[3:9]`` (its diagonal ``exp``)."""
    z = np.asarray(z, float)
    m = float(mass_kg)
    com = z[:3]
    vals = z[3:9].copy()
    vals[_DIAG] = np.exp(vals[_DIAG])
    low = np.zeros((3, 3))
    low[_TRIL] = vals
    eye = np.eye(3)

    def inertia_of(sigma: np.ndarray) -> np.ndarray:      # tr(S) 1 - S, linear in S
        return np.trace(sigma) * eye - sigma

    def six(a: np.ndarray) -> np.ndarray:
        return np.array([a[0, 0], a[0, 1], a[0, 2], a[1, 1], a[1, 2], a[2, 2]])

    shift = com @ com * eye - np.outer(com, com)
    pi = np.concatenate([[m], m * com, six(inertia_of(low @ low.T) + m * shift)])
    d_z = np.zeros((10, 9))
    for k in range(3):                                   # the COM
        d_z[1 + k, k] = m
        d_z[4:, k] = six(m * (2.0 * com[k] * eye - np.outer(eye[k], com)
                              - np.outer(com, eye[k])))
    for j, (r, c) in enumerate(zip(*_TRIL)):             # the Cholesky entries
        d_low = np.zeros((3, 3))
        d_low[r, c] = vals[j]                            # d exp(x) = exp(x) on the diagonal
        if r != c:
            d_low[r, c] = 1.0
        d_z[4:, 3 + j] = six(inertia_of(d_low @ low.T + low @ d_low.T))
    d_m = np.concatenate([[1.0], com, six(shift)])
    return pi, d_z, d_m


def initial_state(state12: np.ndarray, rot_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(y0 [18], d y0 / d s [18, 12])`` of ``s = [p, phi, v, omega]`` about ``rot_ref``."""
    s = np.asarray(state12, float)
    rot, d_rot = rotation_and_derivative(s[3:6])
    ref = np.asarray(rot_ref, float)
    y0 = np.concatenate([s[0:3], (rot @ ref).ravel(), s[6:9], s[9:12]])
    jac = np.zeros((18, 12))
    jac[0:3, 0:3] = np.eye(3)
    jac[3:12, 3:6] = np.einsum("abi,bc->aci", d_rot, ref).reshape(9, 3)
    jac[12:18, 6:12] = np.eye(6)
    return y0, jac


__all__ = ["body_params", "initial_state", "rotation_and_derivative"]
