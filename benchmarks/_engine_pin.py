"""pinocchio (the ``pin`` wheel) driving the benchmark model of benchmarks/engine_choice.py
from a Python loop, one call per RK4 stage. Optional: imported only when ``pin`` is installed.

- Model: a free-flyer for body 0 (platform + base), ``JointModelSpherical`` links, the
  springs' wrench computed in numpy and applied as the free-flyer's generalised force (its
  motion subspace is the identity in its own axes), joint damping ``-c v_b`` as the links'.
- Primal: classical RK4 on rigtool's state (rotation matrices, lab angular velocities), the
  accelerations from ``pin.aba`` on the ``(q, v)`` of each stage: the same discrete map as
  rigtool.engine.tree, so the two agree to rounding.
- Sensitivities: the variational equations ``X' = A X + B`` of ``X = [dq; dv]`` (pinocchio's
  tangent coordinates), integrated by the same RK4 beside the state: ``dq' = dv - ad_v dq``,
  ``dv' = ddq_dq dq + ddq_dv dv + M^-1 (dtau_ext/dq dq + dtau_ext/dv dv) + B`` with
  ``pin.computeABADerivatives`` (``ddq_dq``, ``ddq_dv``, ``M^-1``), the springs' wrench
  derivatives in numpy, and ``B = -M^-1 Y(q, v, a)`` for the inertial parameters
  (``pin.computeJointTorqueRegressor``), ``M^-1 dtau/dk`` for the springs'.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from _engine_model import ANCHOR, ATTACH, GRAVITY, Bench, FPS, SUBSTEPS

#: rigtool's pi order [m, h, Ixx, Ixy, Ixz, Iyy, Iyz, Izz] -> pinocchio's [.., Ixx, Ixy, Iyy, Ixz, ..]
_PIN_OF_RIG = np.array([0, 1, 2, 3, 4, 5, 7, 6, 8, 9])
_RK4_C = (0.0, 0.5, 0.5, 1.0)
_RK4_B = (1 / 6, 1 / 3, 1 / 3, 1 / 6)


def _skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _cx(a, b):
    """``a x b`` of two 3-vectors (np.cross costs ~10 us a call on 3-vectors)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def _skews(a):
    """``[n, 3, 3]`` skew matrices of ``a [n, 3]``."""
    s = np.zeros(a.shape[:-1] + (3, 3))
    s[..., 0, 1], s[..., 0, 2], s[..., 1, 2] = -a[..., 2], a[..., 1], -a[..., 0]
    s[..., 1, 0], s[..., 2, 0], s[..., 2, 1] = a[..., 2], -a[..., 1], a[..., 0]
    return s


def model_of(bench: Bench) -> pin.Model:
    """The pinocchio model of ``bench`` (body b is joint b + 1)."""
    model = pin.Model()
    model.gravity = pin.Motion(np.r_[GRAVITY, 0.0, 0.0, 0.0])
    ids = [model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "body0")]
    for b in range(1, bench.nb):
        ids.append(model.addJoint(ids[bench.parents[b]], pin.JointModelSpherical(),
                                  pin.SE3(np.eye(3), bench.jp[b]), f"body{b}"))
    for b, jid in enumerate(ids):
        model.appendBodyToJoint(jid, pin.Inertia.FromDynamicParameters(
            bench.pis[b][_PIN_OF_RIG]), pin.SE3.Identity())
    return model


class PinEngine:
    """RK4 of the benchmark model with pinocchio's ABA (and its derivatives) per stage."""

    def __init__(self, bench: Bench, substeps: int = SUBSTEPS):
        self.b = bench
        self.substeps = substeps
        self.model = model_of(bench)
        self.data = self.model.createData()
        off = bench.offsets()
        th = bench.theta
        self.k, self.kl0, self.c = (th[off["k"]:off["k"] + 4], th[off["kl0"]:off["kl0"] + 4],
                                    th[off["c"]:off["c"] + 4])
        self.h = 1.0 / FPS / substeps
        self.sk_att = _skews(ATTACH)
        self.perm = (np.arange(bench.nb)[:, None] * 10 + _PIN_OF_RIG[None, :]).ravel()

    # ---- state conversions --------------------------------------------------------------
    def qv_of_y(self, y):
        b = self.b
        nb = b.nb
        rots = y[3:3 + 9 * nb].reshape(nb, 3, 3)
        w = y[6 + 9 * nb:].reshape(nb, 3)
        q = np.empty(7 + 4 * (nb - 1))
        v = np.empty(b.nv)
        q[:3] = y[:3]
        q[3:7] = pin.Quaternion(rots[0]).coeffs()
        v[:3] = rots[0].T @ y[3 + 9 * nb:6 + 9 * nb]
        v[3:6] = rots[0].T @ w[0]
        for i in range(1, nb):
            a = b.parents[i]
            q[7 + 4 * (i - 1):11 + 4 * (i - 1)] = pin.Quaternion(rots[a].T @ rots[i]).coeffs()
            v[6 + 3 * (i - 1):9 + 3 * (i - 1)] = rots[i].T @ (w[i] - w[a])
        return q, v, rots, w

    def ydot(self, y, rots, w, v, a):
        """rigtool's ``dy/dt`` from pinocchio's acceleration ``a``."""
        nb = self.b.nb
        w_dot = np.empty((nb, 3))
        w_dot[0] = rots[0] @ a[3:6]
        for i in range(1, nb):
            s = slice(6 + 3 * (i - 1), 9 + 3 * (i - 1))
            w_dot[i] = w_dot[self.b.parents[i]] + _cx(w[i], rots[i] @ v[s]) + rots[i] @ a[s]
        rot_dot = _skews(w) @ rots                      # each column of R crossed by w
        return np.concatenate([y[3 + 9 * nb:6 + 9 * nb], rot_dot.ravel(),
                               rots[0] @ (a[:3] + _cx(v[3:6], v[:3])), w_dot.ravel()])

    # ---- generalised forces -------------------------------------------------------------
    def tau(self, y, rots, v, derivs=False):
        """Springs' wrench (body 0's axes, about its origin) and joint damping as ``tau``;
        with ``derivs`` also ``dtau/dq0 [6, 6]``, ``dtau/dv0 [6, 6]``, ``dwrench/d(k, kL0)
        [6, 8]``."""
        b = self.b
        r0 = rots[0]
        a_loc = (ANCHOR - y[:3]) @ r0                  # anchors in body 0's axes
        d = ATTACH - a_loc
        sk_r = self.sk_att
        u = v[None, :3] - sk_r @ v[3:6]
        length = np.sqrt(np.sum(d * d, axis=1))
        n = d / length[:, None]
        rate = np.sum(n * u, axis=1)
        g = (self.kl0 - self.c * rate) / length - self.k
        f = d * g[:, None]
        tau = np.empty(b.nv)
        tau[:3] = f.sum(0)
        tau[3:6] = np.einsum("sij,sj->i", sk_r, f)
        tau[6:] = -np.repeat(b.jd[1:], 3) * v[6:]
        if not derivs:
            return tau
        eye = np.eye(3)
        drate = (u - rate[:, None] * n) / length[:, None]
        dg = (-self.c / length)[:, None] * drate - ((self.kl0 - self.c * rate)
                                                    / length ** 2)[:, None] * n
        df_dd = g[:, None, None] * eye + d[:, :, None] * dg[:, None, :]         # [S, 3, 3]
        df_du = -(self.c / length)[:, None, None] * d[:, :, None] * n[:, None, :]
        sk_a = _skews(a_loc)
        dd_dq = np.concatenate([np.broadcast_to(eye, sk_a.shape), -sk_a], axis=2)  # [S, 3, 6]
        du_dv = np.concatenate([np.broadcast_to(eye, sk_r.shape), -sk_r], axis=2)
        df_dq, df_dv = df_dd @ dd_dq, df_du @ du_dv
        dtq = np.concatenate([df_dq.sum(0), (sk_r @ df_dq).sum(0)])
        dtv = np.concatenate([df_dv.sum(0), (sk_r @ df_dv).sum(0)])
        dpar = np.concatenate([np.concatenate([-d, n]).T,
                               np.concatenate([-(sk_r @ d[:, :, None])[..., 0],
                                               (sk_r @ n[:, :, None])[..., 0]]).T])
        return tau, dtq, dtv, dpar

    # ---- primal -------------------------------------------------------------------------
    def rhs(self, y):
        q, v, rots, w = self.qv_of_y(y)
        a = pin.aba(self.model, self.data, q, v, self.tau(y, rots, v))
        return self.ydot(y, rots, w, v, a)

    def simulate(self, y0, n_frames):
        """Final state after ``n_frames`` frames (RK4, ``SUBSTEPS`` steps per frame)."""
        y, h = np.array(y0, float), self.h
        for _ in range(n_frames * self.substeps):
            k, acc = np.zeros_like(y), np.zeros_like(y)
            for c, wgt in zip(_RK4_C, _RK4_B):
                k = self.rhs(y + c * h * k)
                acc += wgt * k
            y = y + h * acc
        return y

    # ---- with sensitivities -------------------------------------------------------------
    def rhs_var(self, y, x, cols):
        """``(dy/dt, dX/dt)`` of the state and the variations ``X [2 nv, len(cols)]`` along the
        directions ``cols`` (indices into the model's P, see _engine_model.tangents)."""
        b, model, data = self.b, self.model, self.data
        nb, nv = b.nb, b.nv
        q, v, rots, w = self.qv_of_y(y)
        tau, dtq, dtv, dpar = self.tau(y, rots, v, derivs=True)
        pin.computeABADerivatives(model, data, q, v, tau)
        a = data.ddq.copy()
        minv = data.Minv
        minv = np.triu(minv) + np.triu(minv, 1).T
        da_dq = data.ddq_dq.copy()
        da_dv = data.ddq_dv.copy()
        da_dq[:, :6] += minv[:, :6] @ dtq
        da_dv[:, :6] += minv[:, :6] @ dtv
        da_dv[:, 6:] -= minv[:, 6:] * np.repeat(b.jd[1:], 3)[None, :]
        dq, dv = x[:nv], x[nv:]
        xdot = np.empty_like(x)
        # dq' = dv - ad_v dq (free-flyer: se(3) ad; spherical: omega x)
        lin, ang = v[:3], v[3:6]
        sk_ang = _skew(ang)
        xdot[:3] = dv[:3] - sk_ang @ dq[:3] - _skew(lin) @ dq[3:6]
        xdot[3:6] = dv[3:6] - sk_ang @ dq[3:6]
        dqr = dq[6:].reshape(nb - 1, 3, -1)
        xdot[6:nv] = dv[6:] - (_skews(v[6:].reshape(nb - 1, 3)) @ dqr).reshape(3 * (nb - 1), -1)
        xdot[nv:] = da_dq @ dq + da_dv @ dv
        y_reg = pin.computeJointTorqueRegressor(model, data, q, v, a)
        forcing = np.zeros((nv, b.n_dir))
        forcing[:, :10 * nb] = -(minv @ y_reg[:, self.perm])
        forcing[:, 16 * nb + 6:] = minv[:, :6] @ dpar[:, :6]
        xdot[nv:] += forcing[:, cols]
        return self.ydot(y, rots, w, v, a), xdot

    def simulate_var(self, y0, x0, n_frames, cols=None):
        """Final state and variations ``X [2 nv, len(cols)]`` after ``n_frames`` frames
        (``cols``: which of the P directions, all by default)."""
        cols = np.arange(self.b.n_dir) if cols is None else np.asarray(cols)
        y, x, h = np.array(y0, float), np.array(x0, float), self.h
        for _ in range(n_frames * self.substeps):
            ky, kx = np.zeros_like(y), np.zeros_like(x)
            ay, ax = np.zeros_like(y), np.zeros_like(x)
            for c, wgt in zip(_RK4_C, _RK4_B):
                ky, kx = self.rhs_var(y + c * h * ky, x + c * h * kx, cols)
                ay += wgt * ky
                ax += wgt * kx
            y, x = y + h * ay, x + h * ax
        return y, x

    def marker_tangents(self, y, x):
        """Markers' derivatives ``[K, 3, P]`` along the variations ``X`` at state ``y``."""
        b = self.b
        q, _, rots, _ = self.qv_of_y(y)
        pin.computeJointJacobians(self.model, self.data, q)
        out = []
        for k, body in enumerate(b.body_of_marker):
            jac = pin.getJointJacobian(self.model, self.data, body + 1,
                                       pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            r = rots[body] @ b.markers_body[k]
            out.append((jac[:3] - _skew(r) @ jac[3:]) @ x[:b.nv])
        return np.array(out)
