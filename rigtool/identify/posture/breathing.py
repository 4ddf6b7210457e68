"""Breathing as a measured internal wrench on the platform (a locked posture's model).

A breathing person is not one rigid body: the diaphragm pushes the abdominal contents
caudally and ventrally and back, and the chest and abdominal walls move with them. With the
breath measured by the wall markers, ``u(t) [k]`` (m, rigtool.kinematics.breath_motion), the
object's first moment about the platform origin (platform axes) is modelled as

    h(t) = h0 + G u(t)            (G [3, k] unknown, kg)
    I(t) = I0 + sum_j u_j(t) D_j  (D_j symmetric [3, 3] unknown, kg m)

(``I`` the inertia about the platform origin) and its internal angular momentum about the
platform origin as ``K du/dt`` (``K [3, k]`` unknown, kg m; a point mass ``mu`` moving by
``dr`` at ``s`` gives ``G u = mu dr``, ``K u' = mu s x dr'`` and ``D u = mu (2 s.dr 1 - s
dr^T - dr s^T)``). Newton-Euler for the object in the platform frame (which moves with
angular velocity ``w``) adds to the rigid wrench ``Y(a - g, w, w') pi`` the terms of the
moving parts::

    f += w' x G u + w x (w x G u) + G u'' + 2 w x G u'
    n += G u x (a - g) + K u'' + w x K u' + D u w' + w x (D u w) + D u' w

Gravity acting on ``G u`` is the ``G u x (a - g)`` torque; the momentum terms are the other
ones. The second moment's terms are products of the breath and the rig's vibration (on the
demo body ``D u w'`` is ~15 % of the breath's gravity torque, at the rig's frequencies plus
and minus the breath's). Everything is linear in ``beta = [G (column by column), K (column
by column), D (each as xx, xy, xz, yy, yz, zz)]``, so the equation-error fit stays linear
(these are more columns of its regressor) and the output-error fit integrates the platform
with the measured ``u`` as a prescribed input (rigtool.engine.internal). Left out: the
Coriolis torque of the internal motion (``~2 |w| |K u'|``, 1e-3 of the gravity torque on
the demo body).

``h0`` is the mean first moment over the capture (``u`` is zero-mean over it), so the
rigid parameters the fit reports are the posture's mean mass distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.inertia import regressor_body, skew

__all__ = ["BreathInput", "internal_columns", "n_breath_unknowns", "breath_in_base_frame",
           "breath_offset"]


@dataclass(frozen=True)
class BreathInput:
    """The breath a posture fit takes: ``at(t) -> (u, u', u'')`` each ``[..., k]``, its
    measurement's summary (for the report) and, when the measurement can draw them,
    ``noise_probes(n, seed) -> [at, ..]``: the breath as ``n`` other draws of its
    measurement noise would have given it
    (rigtool.kinematics.breath_motion.BreathMotion.noise_probes)."""

    at: object
    n_components: int
    summary: dict
    noise_probes: object | None = None


def n_breath_unknowns(k: int) -> int:
    """Unknowns of a ``k``-coordinate breath: ``G`` and ``K``, 3 k each, ``D``, 6 k."""
    return 12 * int(k)


def internal_columns(u: np.ndarray, u_d: np.ndarray, u_dd: np.ndarray,
                     accel_minus_gravity_body: np.ndarray, omega_body: np.ndarray,
                     omega_dot_body: np.ndarray) -> np.ndarray:
    """The internal wrench's regressor ``[T, 6, 6k]`` (platform components, about its origin).

    Parameters
    ----------
    u, u_d, u_dd : ndarray (T, k)
        The breath coordinates and their two time derivatives (m, m/s, m/s^2).
    accel_minus_gravity_body, omega_body, omega_dot_body : ndarray (T, 3)
        The platform's ``a - g``, ``w`` and ``w'`` in platform components.

    Returns
    -------
    ndarray (T, 6, 12k)
        ``wrench = cols @ beta`` with ``beta = [G[:, 0], .., G[:, k-1], K[:, 0], ..,
        D_0 (xx, xy, xz, yy, yz, zz), ..]``.
    """
    t_n, k = u.shape
    w = np.asarray(omega_body, float)
    y_full = regressor_body(accel_minus_gravity_body, w, omega_dot_body)
    y_h, y_i = y_full[..., 1:4], y_full[..., 4:10]
    sw = skew(w)                                                  # [T, 3, 3]
    eye = np.eye(3)
    d_w = np.einsum("kij,tj->tik", _SYM_BASIS, w)                 # E_k w, [T, 3, 6]
    cols = np.zeros((t_n, 6, 12 * k))
    for j in range(k):
        g = slice(3 * j, 3 * j + 3)
        kk = slice(3 * k + 3 * j, 3 * k + 3 * j + 3)
        dd = slice(6 * k + 6 * j, 6 * k + 6 * j + 6)
        cols[:, :, g] = y_h * u[:, j, None, None]
        cols[:, :3, g] += eye * u_dd[:, j, None, None] + 2.0 * sw * u_d[:, j, None, None]
        cols[:, 3:, kk] = eye * u_dd[:, j, None, None] + sw * u_d[:, j, None, None]
        cols[:, :, dd] = y_i * u[:, j, None, None]
        cols[:, 3:, dd] += d_w * u_d[:, j, None, None]
    return cols


def _sym(v: np.ndarray) -> np.ndarray:
    """The symmetric 3x3 of ``[xx, xy, xz, yy, yz, zz]`` (rigtool.inertia's order)."""
    return np.array([[v[0], v[1], v[2]], [v[1], v[3], v[4]], [v[2], v[4], v[5]]])


#: the symmetric basis ``E_k`` (``D = sum_k d_k E_k``)
_SYM_BASIS = np.stack([_sym(e) for e in np.eye(6)])


def breath_in_base_frame(beta: np.ndarray, cov: np.ndarray | None, k: int,
                         base_rotation_platform: np.ndarray,
                         base_position_platform: np.ndarray) -> dict:
    """``G``, ``K`` and ``D`` (platform frame, about its origin) carried to the base-link
    frame and origin, with standard errors: ``G_b = R^T G_p``, ``K_b = R^T (K_p - [t x]
    G_p)``, ``D_b = R^T (D_p - (2 t.G_p 1 - t G_p^T - G_p t^T)) R`` (a second moment's
    change about another point; the mass does not change).

    Returns a dict for the report: ``G_kg`` and ``K_kg_m`` as ``[3][k]`` lists (column ``j``
    multiplies breath coordinate ``j``, m), ``D_kg_m`` as ``k`` lists ``[xx, xy, xz, yy, yz,
    zz]``, and their standard errors. The map is linear, so the covariance is carried
    exactly.
    """
    n = 12 * k
    lin = _base_frame_map(k, base_rotation_platform, base_position_platform)
    b = lin @ np.asarray(beta, float)
    std = (np.full(n, np.nan) if cov is None else
           np.sqrt(np.clip(np.diag(lin @ np.asarray(cov, float) @ lin.T), 0, None)))
    as_cols = lambda v: v.reshape(k, 3).T.tolist()        # noqa: E731
    return {"G_kg": as_cols(b[:3 * k]), "G_std_kg": as_cols(std[:3 * k]),
            "K_kg_m": as_cols(b[3 * k:6 * k]), "K_std_kg_m": as_cols(std[3 * k:6 * k]),
            "D_kg_m": b[6 * k:].reshape(k, 6).tolist(),
            "D_std_kg_m": std[6 * k:].reshape(k, 6).tolist()}


def breath_offset(beta: np.ndarray, cov: np.ndarray, k: int,
                  base_rotation_platform: np.ndarray, base_position_platform: np.ndarray,
                  offset_u_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the body's parameters about the base-link origin (``pi[1:]``: first moment, then
    the inertia's ``xx xy xz yy yz zz``) gain when the breath stands ``offset_u_m [k]`` from
    the level the fit took as its zero: ``G_b u`` and ``sum_j u_j D_b,j``, and the covariance
    that adds (``G`` and ``D``'s own; the mean level's fit is nearly uncorrelated with them,
    the breath having zero mean over the capture)."""
    lin = _base_frame_map(k, base_rotation_platform, base_position_platform)
    u = np.asarray(offset_u_m, float)
    pick = np.zeros((9, 12 * k))
    for j in range(k):
        pick[0:3, 3 * j:3 * j + 3] = u[j] * np.eye(3)
        pick[3:9, 6 * k + 6 * j:6 * k + 6 * j + 6] = u[j] * np.eye(6)
    m = pick @ lin
    return m @ np.asarray(beta, float), m @ np.asarray(cov, float) @ m.T


def _base_frame_map(k: int, base_rotation_platform: np.ndarray,
                    base_position_platform: np.ndarray) -> np.ndarray:
    """The linear map ``[12k, 12k]`` of the breath's unknowns from the platform frame to the
    base-link frame and origin (:func:`breath_in_base_frame`)."""
    r = np.asarray(base_rotation_platform, float)
    t = np.asarray(base_position_platform, float)
    n = 12 * k

    def carry(v: np.ndarray) -> np.ndarray:
        out = np.empty(n)
        for j in range(k):
            g_p = v[3 * j:3 * j + 3]
            k_p = v[3 * k + 3 * j:3 * k + 3 * j + 3]
            d_p = _sym(v[6 * k + 6 * j:6 * k + 6 * j + 6])
            out[3 * j:3 * j + 3] = r.T @ g_p
            out[3 * k + 3 * j:3 * k + 3 * j + 3] = r.T @ (k_p - np.cross(t, g_p))
            shift = 2 * (t @ g_p) * np.eye(3) - np.outer(t, g_p) - np.outer(g_p, t)
            d_b = r.T @ (d_p - shift) @ r
            out[6 * k + 6 * j:6 * k + 6 * j + 6] = d_b[np.triu_indices(3)]
        return out

    return np.stack([carry(e) for e in np.eye(n)], axis=1)
