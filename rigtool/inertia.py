"""Inertial parameters of one rigid body and the rigid-body regressor.

Conventions
---------------------
- SI units: kg, m, kg m^2, s, N, N m.
- Standard parameters about the body-frame origin, in body-frame components::

      pi = [m, h_x, h_y, h_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz],   h = m c

  with ``I`` the inertia tensor about the origin in tensor form (``I_xy = -∫ x y dm``).
- Pose of a body: ``x_lab = R @ x_body + p`` (``R`` maps body to lab components).
- ``skew(v) @ u == np.cross(v, u)``.
- Arrays of many frames put time first: ``omega_body`` has shape ``[T, 3]``.

The regressor ``Y`` gives the external wrench (excluding gravity, which it includes through
``-g``) acting on the body, about its origin, in body components::

    f_body = m (a_o - g) + w_dot x h + w x (w x h)
    n_body = I w_dot + w x (I w) + h x (a_o - g)
    [f_body; n_body] = Y(a_o - g, w, w_dot) @ pi

where ``a_o`` is the acceleration of the body origin and ``g`` gravity, both in body
components. Pure array maths: this module imports nothing of the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Names of the ten standard parameters, in order.
PARAM_NAMES: tuple[str, ...] = ("m", "h_x", "h_y", "h_z", "I_xx", "I_xy", "I_xz", "I_yy",
                                "I_yz", "I_zz")


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix ``[v x]`` of one vector ``[3]`` or of many ``[..., 3]``."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape + (3,))
    out[..., 0, 1] = -v[..., 2]
    out[..., 0, 2] = v[..., 1]
    out[..., 1, 0] = v[..., 2]
    out[..., 1, 2] = -v[..., 0]
    out[..., 2, 0] = -v[..., 1]
    out[..., 2, 1] = v[..., 0]
    return out


def inertia_matrix(six: np.ndarray) -> np.ndarray:
    """3x3 tensor from ``[I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]`` (``[..., 6]`` -> ``[..., 3, 3]``)."""
    s = np.asarray(six, dtype=float)
    xx, xy, xz, yy, yz, zz = (s[..., k] for k in range(6))
    return np.stack([np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1),
                     np.stack([xz, yz, zz], -1)], -2)


def inertia_vector(inertia: np.ndarray) -> np.ndarray:
    """``[I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]`` of a (symmetrised) 3x3 tensor ``[..., 3, 3]``."""
    i = 0.5 * (np.asarray(inertia, float) + np.swapaxes(np.asarray(inertia, float), -1, -2))
    return np.stack([i[..., 0, 0], i[..., 0, 1], i[..., 0, 2], i[..., 1, 1], i[..., 1, 2],
                     i[..., 2, 2]], -1)


def parallel_axis(mass_kg: float, offset_m: np.ndarray) -> np.ndarray:
    """``m [r x]^T [r x]``: the inertia a point mass ``m`` at ``r`` adds about the origin."""
    s = skew(offset_m)
    return mass_kg * np.swapaxes(s, -1, -2) @ s


@dataclass(frozen=True)
class InertialParams:
    """The ten standard inertial parameters of one rigid body about its frame origin.

    Attributes
    ----------
    pi : ndarray, shape (10,)
        ``[m, h_x, h_y, h_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]`` (kg, kg m, kg m^2).
    """

    pi: np.ndarray

    @classmethod
    def from_com(cls, mass_kg: float, com_m: np.ndarray,
                 inertia_com_kgm2: np.ndarray) -> "InertialParams":
        """Build from mass, COM (body frame) and inertia about the COM (body axes)."""
        c = np.asarray(com_m, dtype=float)
        i_origin = np.asarray(inertia_com_kgm2, float) + parallel_axis(mass_kg, c)
        return cls(np.concatenate([[mass_kg], mass_kg * c, inertia_vector(i_origin)]))

    @classmethod
    def from_pseudo_inertia(cls, pseudo: np.ndarray) -> "InertialParams":
        """Inverse of :meth:`pseudo_inertia`."""
        pseudo = np.asarray(pseudo, float)
        sigma = pseudo[:3, :3]
        inertia = np.trace(sigma) * np.eye(3) - sigma
        return cls(np.concatenate([[pseudo[3, 3]], pseudo[:3, 3], inertia_vector(inertia)]))

    @property
    def mass(self) -> float:
        """Mass, kg."""
        return float(self.pi[0])

    @property
    def first_moment(self) -> np.ndarray:
        """``h = m c``, kg m, body frame."""
        return self.pi[1:4].copy()

    @property
    def com(self) -> np.ndarray:
        """Centre of mass, m, body frame."""
        return self.pi[1:4] / self.pi[0]

    @property
    def inertia_origin(self) -> np.ndarray:
        """Inertia tensor about the body origin, kg m^2."""
        return inertia_matrix(self.pi[4:])

    @property
    def inertia_com(self) -> np.ndarray:
        """Inertia tensor about the COM, body axes, kg m^2."""
        return self.inertia_origin - parallel_axis(self.mass, self.com)

    def pseudo_inertia(self) -> np.ndarray:
        """4x4 pseudo-inertia ``[[Sigma, h], [h^T, m]]``, ``Sigma = tr(I)/2 * 1 - I`` (paper 000)."""
        return pseudo_inertia(self.pi)

    def is_physically_consistent(self, *, tol: float = 0.0) -> bool:
        """True when the pseudo-inertia is positive semidefinite (paper 000, Thm. 3)."""
        ev = np.linalg.eigvalsh(self.pseudo_inertia())
        return bool(ev[0] >= -tol * max(1.0, abs(ev[-1])))

    def inside_consistent_set(self, *, floor_rel: float = 1e-9) -> "InertialParams":
        """These parameters when the pseudo-inertia's smallest eigenvalue is at least
        ``floor_rel`` times its largest; else the nearest (Frobenius) parameters whose
        pseudo-inertia has its eigenvalues raised to that floor. An estimate fitted under the
        consistency constraint sits on the set's boundary up to its solver's tolerance, which
        a simulation of it (rigtool.sim.assembly, 1e-12) refuses."""
        pseudo = self.pseudo_inertia()
        ev, vec = np.linalg.eigh(pseudo)
        floor = floor_rel * max(abs(ev[-1]), 1e-300)
        if ev[0] >= floor:
            return self
        return InertialParams.from_pseudo_inertia((vec * np.maximum(ev, floor)) @ vec.T)

    def transformed(self, rotation: np.ndarray, translation_m: np.ndarray) -> "InertialParams":
        """The same body's parameters in a frame F where ``x_F = R x_body + p``."""
        return InertialParams(transform_params(self.pi, rotation, translation_m))

    def __add__(self, other: "InertialParams") -> "InertialParams":
        """Parameters of two bodies rigidly joined, both already in the same frame."""
        return InertialParams(self.pi + other.pi)


#: ``pi[1:]`` (first moment, inertia about the origin ``xx xy xz yy yz zz``) in the order the
#: subset fit takes a posture's covariance, and Φ_B a link's ``MS`` and ``J``:
#: ``[h, J0 xx yy zz yz zx xy]``
PI9_TO_SUBSET_ORDER = [0, 1, 2, 3, 6, 8, 7, 5, 4]


def com_and_inertia(pi9: np.ndarray, mass_kg: float) -> np.ndarray:
    """``[COM (3), inertia about the COM (3x3, row-major)]`` of the body of mass ``mass_kg``
    whose ``pi[1:]`` is ``pi9[:9]`` (what a posture reports, and the map its covariance is
    carried by)."""
    p = InertialParams(np.concatenate([[mass_kg], np.asarray(pi9, float)[:9]]))
    return np.concatenate([p.com, p.inertia_com.ravel()])


#: the nine row-major entries of a 3x3 inertia as a linear map of its six
#: (:func:`inertia_vector`'s order): ``I.ravel() = SIX_TO_NINE @ six``
SIX_TO_NINE = np.stack([inertia_matrix(np.eye(6)[k]).ravel() for k in range(6)], axis=1)


def principal_moments_std(inertia: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """Standard errors of the principal moments of a 3x3 inertia, to first order.

    Parameters
    ----------
    inertia : ndarray (3, 3)
        The inertia tensor, kg m^2 (symmetrised before its eigenvectors are taken).
    covariance : ndarray (9, 9) or (6, 6)
        Covariance of its nine entries, row-major (as :func:`com_and_inertia` orders them),
        or of its six (:func:`inertia_vector`'s order), kg^2 m^4.

    Returns
    -------
    ndarray (3,)
        One standard error per principal moment, ascending as ``numpy.linalg.eigh`` orders
        the moments: ``d lambda_k = v_k^T dI v_k``, so the gradient of ``lambda_k`` is
        ``outer(v_k, v_k)`` row-major. A repeated moment's is that of the pair's mean.
    """
    cov = np.asarray(covariance, float)
    if cov.shape == (6, 6):
        cov = SIX_TO_NINE @ cov @ SIX_TO_NINE.T
    i = np.asarray(inertia, float)
    _, v = np.linalg.eigh(0.5 * (i + i.T))
    grad = np.stack([np.outer(v[:, k], v[:, k]).ravel() for k in range(3)], axis=1)  # (9, 3)
    var = np.einsum("ik,ij,jk->k", grad, cov, grad)
    return np.sqrt(np.maximum(var, 0.0))


def pseudo_inertia(pi: np.ndarray) -> np.ndarray:
    """4x4 pseudo-inertia matrix of ``pi`` (``[..., 10]`` -> ``[..., 4, 4]``)."""
    pi = np.asarray(pi, dtype=float)
    inertia = inertia_matrix(pi[..., 4:])
    tr = np.trace(inertia, axis1=-2, axis2=-1)
    sigma = 0.5 * tr[..., None, None] * np.eye(3) - inertia
    out = np.zeros(pi.shape[:-1] + (4, 4))
    out[..., :3, :3] = sigma
    out[..., :3, 3] = pi[..., 1:4]
    out[..., 3, :3] = pi[..., 1:4]
    out[..., 3, 3] = pi[..., 0]
    return out


def transform_params(pi: np.ndarray, rotation: np.ndarray, translation_m: np.ndarray) -> np.ndarray:
    """Express ``pi`` (about body origin, body axes) in frame F with ``x_F = R x_b + p``.

    Uses the pseudo-inertia congruence ``J_F = T J_b T^T`` with ``T = [[R, p], [0, 1]]``.
    """
    t = np.eye(4)
    t[:3, :3] = rotation
    t[:3, 3] = translation_m
    return InertialParams.from_pseudo_inertia(t @ pseudo_inertia(pi) @ t.T).pi


def _inertia_times(w: np.ndarray) -> np.ndarray:
    """Matrix ``L(w)`` ``[..., 3, 6]`` with ``I @ w == L(w) @ [I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]``."""
    w = np.asarray(w, float)
    out = np.zeros(w.shape[:-1] + (3, 6))
    wx, wy, wz = w[..., 0], w[..., 1], w[..., 2]
    out[..., 0, 0], out[..., 0, 1], out[..., 0, 2] = wx, wy, wz
    out[..., 1, 1], out[..., 1, 3], out[..., 1, 4] = wx, wy, wz
    out[..., 2, 2], out[..., 2, 4], out[..., 2, 5] = wx, wy, wz
    return out


def regressor_body(accel_minus_gravity_body: np.ndarray, omega_body: np.ndarray,
                   omega_dot_body: np.ndarray) -> np.ndarray:
    """Rigid-body regressor ``Y [..., 6, 10]`` in body components, about the body origin.

    Parameters
    ----------
    accel_minus_gravity_body : ndarray, shape (..., 3)
        ``a_o - g``: acceleration of the body origin minus gravity, body components, m/s^2.
    omega_body, omega_dot_body : ndarray, shape (..., 3)
        Angular velocity (rad/s) and its time derivative (rad/s^2), body components.

    Returns
    -------
    ndarray, shape (..., 6, 10)
        ``[f; n] = Y @ pi``: external (non-gravity) force and moment about the origin.
    """
    a = np.asarray(accel_minus_gravity_body, float)
    w = np.asarray(omega_body, float)
    wd = np.asarray(omega_dot_body, float)
    shape = np.broadcast_shapes(a.shape, w.shape, wd.shape)
    a, w, wd = (np.broadcast_to(x, shape) for x in (a, w, wd))
    y = np.zeros(shape[:-1] + (6, 10))
    sw = skew(w)
    y[..., :3, 0] = a
    y[..., :3, 1:4] = skew(wd) + sw @ sw
    y[..., 3:, 1:4] = -skew(a)
    y[..., 3:, 4:] = _inertia_times(wd) + sw @ _inertia_times(w)
    return y


def wrench_to_lab(rotation: np.ndarray, wrench_body: np.ndarray) -> np.ndarray:
    """Rotate a body-component wrench ``[..., 6]`` (same reference point) to lab components."""
    f = np.einsum("...ij,...j->...i", rotation, wrench_body[..., :3])
    n = np.einsum("...ij,...j->...i", rotation, wrench_body[..., 3:])
    return np.concatenate([f, n], -1)


def wrench_transform(rotation: np.ndarray, origin_m: np.ndarray) -> np.ndarray:
    """``X [..., 6, 6]`` taking a wrench ``[f, n]`` about a frame's origin in its axes to the
    reference frame's axes about the reference origin, for the frame at ``rotation``
    (``[..., 3, 3]``, reference from frame) and ``origin_m`` (``[..., 3]``, in the reference
    frame): ``f' = R f``, ``n' = R n + o x (R f)``."""
    rotation = np.asarray(rotation, dtype=float)
    x = np.zeros(rotation.shape[:-2] + (6, 6))
    x[..., :3, :3] = rotation
    x[..., 3:, 3:] = rotation
    x[..., 3:, :3] = np.einsum("...ij,...jk->...ik", skew(origin_m), rotation)
    return x


def shift_wrench(wrench: np.ndarray, from_point_m: np.ndarray, to_point_m: np.ndarray) -> np.ndarray:
    """Same wrench about another point: ``n_to = n_from + (from - to) x f`` (same components)."""
    f = wrench[..., :3]
    n = wrench[..., 3:] + np.cross(np.asarray(from_point_m) - np.asarray(to_point_m), f)
    return np.concatenate([f, n], -1)
