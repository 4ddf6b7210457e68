"""Breathing as a measured internal wrench on the platform (a locked posture's model).

A breathing person is not one rigid body: the diaphragm pushes the abdominal contents
caudally and ventrally and back, and the chest and abdominal walls move with them. With the
breath measured by the wall markers, ``u(t) [k]`` (m, rigtool.kinematics.breath_motion), the
object's first moment about the platform origin (platform axes) is modelled as

    h(t) = h0 + G u(t)            (G [3, k] unknown, kg)

and its internal angular momentum about the platform origin as ``K du/dt`` (``K [3, k]``
unknown, kg m; a point mass ``mu`` moving by ``dr`` at ``s`` gives ``K u' = mu s x dr'``).
Newton-Euler for the object in the platform frame (which moves with angular velocity
``w``) adds to the rigid wrench ``Y(a - g, w, w') pi`` the terms of the moving parts::

    f += w' x G u + w x (w x G u) + G u'' + 2 w x G u'
    n += G u x (a - g) + K u'' + w x K u'

Gravity acting on ``G u`` is the ``G u x (a - g)`` torque; the momentum terms are the other
ones. Everything is linear in ``beta = [G (column by column), K (column by column)]``, so the
equation-error fit stays linear (these are more columns of its regressor) and the
output-error fit integrates the platform with the measured ``u`` as a prescribed input
(rigtool.engine.internal). Left out: the change of the object's second moment with ``u``
(first order in ``u`` but it only modulates the rig's frequencies by ~1e-4 at the breath's
rate) and the Coriolis torque of the internal motion (``~2 |w| |K u'|``, 1e-3 of the
gravity torque on the demo body).

``h0`` is the mean first moment over the capture (``u`` is zero-mean over it), so the
rigid parameters the fit reports are the posture's mean mass distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.inertia import regressor_body, skew

__all__ = ["BreathInput", "internal_columns", "n_breath_unknowns", "breath_in_base_frame"]


@dataclass(frozen=True)
class BreathInput:
    """The breath a posture fit takes: ``at(t) -> (u, u', u'')`` each ``[..., k]``, and its
    measurement's summary (for the report)."""

    at: object
    n_components: int
    summary: dict


def n_breath_unknowns(k: int) -> int:
    """Unknowns of a ``k``-coordinate breath: ``G`` and ``K``, 3 k each."""
    return 6 * int(k)


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
    ndarray (T, 6, 6k)
        ``wrench = cols @ beta`` with ``beta = [G[:, 0], .., G[:, k-1], K[:, 0], ..]``.
    """
    t_n, k = u.shape
    y_h = regressor_body(accel_minus_gravity_body, omega_body, omega_dot_body)[..., 1:4]
    sw = skew(np.asarray(omega_body, float))                      # [T, 3, 3]
    eye = np.eye(3)
    cols = np.zeros((t_n, 6, 6 * k))
    for j in range(k):
        g = slice(3 * j, 3 * j + 3)
        kk = slice(3 * k + 3 * j, 3 * k + 3 * j + 3)
        cols[:, :, g] = y_h * u[:, j, None, None]
        cols[:, :3, g] += eye * u_dd[:, j, None, None] + 2.0 * sw * u_d[:, j, None, None]
        cols[:, 3:, kk] = eye * u_dd[:, j, None, None] + sw * u_d[:, j, None, None]
    return cols


def breath_in_base_frame(beta: np.ndarray, cov: np.ndarray | None, k: int,
                         base_rotation_platform: np.ndarray,
                         base_position_platform: np.ndarray) -> dict:
    """``G`` and ``K`` (platform frame, about its origin) carried to the base-link frame and
    origin, with standard errors: ``G_b = R^T G_p``, ``K_b = R^T (K_p - [t x] G_p)``.

    Returns a dict for the report: ``G_kg`` and ``K_kg_m`` as ``[3][k]`` lists (column ``j``
    multiplies breath coordinate ``j``, m) and their standard errors.
    """
    r = np.asarray(base_rotation_platform, float)
    t = np.asarray(base_position_platform, float)
    n = 6 * k
    lin = np.zeros((n, n))
    for j in range(k):
        g, kk = slice(3 * j, 3 * j + 3), slice(3 * k + 3 * j, 3 * k + 3 * j + 3)
        lin[g, g] = r.T
        lin[kk, kk] = r.T
        lin[kk, g] = -r.T @ skew(t)
    b = lin @ np.asarray(beta, float)
    std = (np.full(n, np.nan) if cov is None else
           np.sqrt(np.clip(np.diag(lin @ np.asarray(cov, float) @ lin.T), 0, None)))
    as_cols = lambda v: v.reshape(k, 3).T.tolist()        # noqa: E731
    return {"G_kg": as_cols(b[:3 * k]), "G_std_kg": as_cols(std[:3 * k]),
            "K_kg_m": as_cols(b[3 * k:]), "K_std_kg_m": as_cols(std[3 * k:])}
