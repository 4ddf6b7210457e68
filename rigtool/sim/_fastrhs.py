"""The integrator's right-hand side for one state, with as few numpy calls as possible.

Same equations as :func:`rigtool.sim._model.state_derivative` (which stays the readable,
batched reference; the tests check that both agree to rounding). Why a second path: the
right-hand side is called ~1000 times per simulated second on arrays of a few numbers, so its
cost is the count of numpy calls, not arithmetic. Here bilinear maps are folded into constant
tensors built once:

- ``R = (q q^T)`` contracted with a constant ``[16, 9]`` map (then divided by ``|q|^2``),
- ``dq/dt = Omega(omega) q`` with ``Omega`` linear in ``omega`` (constant ``[3, 16]`` map),
- ``sum_s r_s x f_s`` from the single matrix ``r^T f`` and a constant ``[9, 3]`` map.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dposv

from rigtool.sim._model import _SKEW, Model
from rigtool.sim.servo import drive_generalized_force


def _quadratic_rotation_map() -> tuple[np.ndarray, np.ndarray]:
    """``C [16, 9]`` with ``vec(R) = vec(q q^T) @ C / |q|^2`` and ``c [16, 1]`` for ``|q|^2``.

    ``R = (w^2 - v.v) 1 + 2 v v^T + 2 w [v x]`` is a quadratic form in ``q = [v, w]``; its
    coefficients are recovered exactly by polarisation on basis vectors.
    """
    def homogeneous(q):
        v, w = q[:3], q[3]
        sv = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
        return ((w * w - v @ v) * np.eye(3) + 2 * np.outer(v, v) + 2 * w * sv).ravel()

    eye = np.eye(4)
    c = np.zeros((4, 4, 9))
    for a in range(4):
        c[a, a] = homogeneous(eye[a])
        for b in range(a + 1, 4):
            half = 0.5 * (homogeneous(eye[a] + eye[b]) - homogeneous(eye[a])
                          - homogeneous(eye[b]))
            c[a, b] = c[b, a] = half
    return c.reshape(16, 9), np.eye(4).reshape(16, 1)


def _omega_map() -> np.ndarray:
    """``[3, 16]`` with ``Omega = (omega @ map).reshape(4, 4)``, ``dq/dt = Omega q`` (q = [v, w])."""
    out = np.zeros((3, 4, 4))
    for k in range(3):
        w = np.eye(3)[k]
        sw = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        out[k, :3, :3] = 0.5 * sw
        out[k, :3, 3] = 0.5 * w
        out[k, 3, :3] = -0.5 * w
    return out.reshape(3, 16)


def _cross_map() -> np.ndarray:
    """``[9, 3]`` with ``sum_s r_s x f_s = vec(r^T f) @ map`` (Levi-Civita)."""
    levi = np.zeros((3, 3, 3))
    for i, j, k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        levi[i, j, k], levi[i, k, j] = 1.0, -1.0
    return np.ascontiguousarray(levi.transpose(1, 2, 0).reshape(9, 3))


_ROT_MAP, _NORM_MAP = _quadratic_rotation_map()
#: ``vec(q q^T) @ _ROT_NORM_MAP = [vec(R |q|^2), |q|^2]``
_ROT_NORM_MAP = np.ascontiguousarray(np.hstack([_ROT_MAP, _NORM_MAP]))
_OMEGA_MAP = _omega_map()
#: ``omega @ _W_MAP = [vec([omega x]), vec(Omega(omega))]``
_W_MAP = np.ascontiguousarray(np.hstack([_SKEW, _OMEGA_MAP]))
_NEG_SKEW = -_SKEW
_CROSS_MAP = _cross_map()


class FastRHS:
    """Callable ``(t, y) -> dy/dt`` for ``scipy.integrate.solve_ivp`` (one state, no batch)."""

    def __init__(self, model: Model, living=None) -> None:
        self.model = model
        self.living = living        # rigtool.sim._parts.LivingTerms or None (rigid)
        b = model.n_bodies
        self.b = b
        self.n = model.n_nu
        self.q_slice = slice(3, 3 + 4 * b)
        self.nu_start = 3 + 4 * b
        self.nu_stop = self.nu_start + self.n       # living satellites' states follow
        self.h_body = model.first_moment_body[:, :, None]
        self.i_body = model.inertia_body
        self.mass_eye = model.mass_eye
        self.mass_col = model.mass[:, None, None]
        self.gravity = model.gravity_lab[:, None]
        self.att = model.attachment_platform
        self.anchor = model.anchor_lab
        self.k = model.stiffness
        self.kl0 = model.stiffness * model.free_length
        self.c = model.spring_damping if model.has_spring_damping else None
        self.locked = len(model.free) < self.n
        self.free = model.free
        self.free_ix = np.ix_(model.free, model.free)
        if b > 1:
            self.par = model.parent_index
            self.joint = model.joint_parent[1:, :, None]
            self.anc = np.ascontiguousarray(model.ancestors[:, 1:])
            self.edge = model.scatter_edge - 1
            self.scatter = model.scatter
            self.jac0 = model.jacobian0
            self.damping = model.damping_matrix if model.has_damping else None
        self.drives = model.drives

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        b = self.b
        quat = y[self.q_slice].reshape(b, 4)
        living = self.living
        if living is None:
            nu = y[self.nu_start:]
            h_body, i_body, mass_eye, mass_col = (self.h_body, self.i_body, self.mass_eye,
                                                  self.mass_col)
        else:
            nu = y[self.nu_start:self.nu_stop]
            paths = living.evaluate_paths(t)
            h_body, i_body, mass = living.body_params(paths, self.h_body, self.i_body,
                                                      self.model.mass)
            mass_eye, mass_col = mass[:, None, None] * np.eye(3), mass[:, None, None]
        omega = nu[3:].reshape(b, 3, 1)
        # np.dot rather than @ for 2-D products: half the call overhead at these sizes
        qq = np.dot((quat[:, :, None] * quat[:, None, :]).reshape(b, 16), _ROT_NORM_MAP)
        rot = (qq[:, :9] / qq[:, 9:]).reshape(b, 3, 3)
        w_maps = np.dot(nu[3:].reshape(b, 3), _W_MAP)
        w_skew = w_maps[:, :9].reshape(b, 3, 3)
        w_skew2 = w_skew @ w_skew
        # rigid-body terms about each origin, lab: h = R h_body, I = R I_body R^T
        h = rot @ h_body                                                 # [B, 3, 1]
        inertia = rot @ i_body @ rot.transpose(0, 2, 1)
        sh = np.dot(h.reshape(b, 3), _SKEW).reshape(b, 3, 3)
        lam = np.concatenate([np.concatenate([mass_eye, -sh], 2),
                              np.concatenate([sh, inertia], 2)], 1)
        # springs on body 0
        r = np.dot(self.att, rot[0].T)
        d = r + (y[:3] - self.anchor)
        length = np.sqrt((d * d).sum(1))
        if self.c is None:
            scale = self.kl0 / length - self.k                           # f = scale * d
        else:
            v_att = nu[:3] + np.dot(r, w_skew[0].T)
            rate = (d * v_att).sum(1) / length
            scale = (self.kl0 - self.c * rate) / length - self.k
        f_spring = d * scale[:, None]
        spring = np.concatenate([f_spring.sum(0),
                                 np.dot(np.dot(r.T, f_spring).reshape(9), _CROSS_MAP)])
        if b == 1:
            g_eff = self.gravity
            wrench = np.concatenate([mass_col[0] * g_eff - w_skew2[0] @ h[0],
                                     sh[0] @ g_eff - w_skew[0] @ (inertia[0] @ omega[0])])
            mass_matrix, q = lam[0], wrench[:, 0] + spring
            if living is not None:
                w_add, extra_dot = living.forces(t, y[self.nu_stop:], rot, y[None, :3],
                                                 nu[None, :3], nu[None, 3:6], paths)
                q = q + w_add[0]
        else:
            lever = rot[self.par] @ self.joint                           # [B-1, 3, 1]
            bias = np.dot(self.anc, (w_skew2[self.par] @ lever).reshape(b - 1, 3))
            g_eff = self.gravity - bias[:, :, None]                        # [B, 3, 1]
            wrench = np.concatenate([mass_col * g_eff - w_skew2 @ h,
                                     sh @ g_eff - w_skew @ (inertia @ omega)], 1)
            jac = self.jac0.copy()
            jac.reshape(-1)[self.scatter] = np.dot(lever.reshape(b - 1, 3)[self.edge],
                                                   _NEG_SKEW).reshape(-1)
            if living is not None:
                origin = y[:3] + np.dot(self.anc, lever.reshape(b - 1, 3))
                vel = (jac[:, :3, :] @ nu[:, None])[..., 0]
                w_add, extra_dot = living.forces(t, y[self.nu_stop:], rot, origin, vel,
                                                 nu[3:].reshape(b, 3), paths)
                wrench = wrench + w_add[:, :, None]
            jac_t = jac.reshape(6 * b, self.n).T
            mass_matrix = np.dot(jac_t, (lam @ jac).reshape(6 * b, self.n))
            q = np.dot(jac_t, wrench.reshape(6 * b))
            q[:6] += spring
            if self.damping is not None:
                q -= np.dot(self.damping, nu)
            if self.drives:
                q += drive_generalized_force(self.drives, t, rot, nu[3:].reshape(b, 3),
                                             self.n)
        if self.locked:
            _, sol, info = dposv(mass_matrix[self.free_ix], q[self.free])
            nu_dot = np.zeros(self.n)
            nu_dot[self.free] = sol
        else:
            _, nu_dot, info = dposv(mass_matrix, q)
        if info != 0:
            raise np.linalg.LinAlgError("mass matrix is not positive definite")
        if not np.isfinite(nu_dot).all():   # a spring of zero length; would stall the solver
            raise FloatingPointError("non-finite acceleration")
        q_dot = w_maps[:, 9:].reshape(b, 4, 4) @ quat[:, :, None]
        if living is not None:
            return np.concatenate([nu[:3], q_dot.reshape(4 * b), nu_dot, extra_dot])
        return np.concatenate([nu[:3], q_dot.reshape(4 * b), nu_dot])
