"""numba: rigtool.engine.tree's right-hand side (Featherstone's articulated-body algorithm in
lab coordinates, spherical joints, the platform on springs as the root) written out by hand
with loops, ``@njit``, and the RK4 loop over frames compiled with it. Optional: imported only
when numba is installed.

numba has no automatic differentiation, so the sensitivities are forward differences: one
primal run per direction plus the nominal one (P + 1 runs), step ``1e-7`` times the larger of
1 and the perturbed values' magnitude; their error is ~1e-6 relative, not rounding.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from _engine_model import ANCHOR, ATTACH, GRAVITY, Bench, FPS, SUBSTEPS


@njit(cache=False)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=False)
def _inv3(a, out):
    c00 = a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]
    c01 = a[0, 2] * a[2, 1] - a[0, 1] * a[2, 2]
    c02 = a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]
    c10 = a[1, 2] * a[2, 0] - a[1, 0] * a[2, 2]
    c11 = a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0]
    c12 = a[0, 2] * a[1, 0] - a[0, 0] * a[1, 2]
    c20 = a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]
    c21 = a[0, 1] * a[2, 0] - a[0, 0] * a[2, 1]
    c22 = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    det = a[0, 0] * c00 + a[0, 1] * c10 + a[0, 2] * c20
    out[0, 0], out[0, 1], out[0, 2] = c00 / det, c01 / det, c02 / det
    out[1, 0], out[1, 1], out[1, 2] = c10 / det, c11 / det, c12 / det
    out[2, 0], out[2, 1], out[2, 2] = c20 / det, c21 / det, c22 / det


@njit(cache=False)
def _skew(a, out):
    out[0, 0], out[0, 1], out[0, 2] = 0.0, -a[2], a[1]
    out[1, 0], out[1, 1], out[1, 2] = a[2], 0.0, -a[0]
    out[2, 0], out[2, 1], out[2, 2] = -a[1], a[0], 0.0


@njit(cache=False)
def rhs(y, pis, jp, jd, k, kl0, c, parents, anchor, att, g, out):
    """``dy/dt`` into ``out`` (the equations of rigtool.engine.tree.rhs, all DOFs free)."""
    nb = parents.shape[0]
    ns = anchor.shape[0]
    rot = y[3:3 + 9 * nb].reshape(nb, 3, 3)
    p = y[0:3]
    v_p = y[3 + 9 * nb:6 + 9 * nb]
    w = y[6 + 9 * nb:].reshape(nb, 3)
    org = np.zeros((nb, 3))
    org[0] = p
    for i in range(1, nb):
        a = parents[i]
        for r in range(3):
            org[i, r] = org[a, r] + rot[a, r, 0] * jp[i, 0] + rot[a, r, 1] * jp[i, 1] \
                + rot[a, r, 2] * jp[i, 2]
    inert = np.zeros((nb, 6, 6))
    fext = np.zeros((nb, 6))
    so, sh, ib, tmp, i_o, s3 = (np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)),
                                np.empty((3, 3)), np.empty((3, 3)), np.empty(3))
    h, first = np.empty(3), np.empty(3)
    for b in range(nb):
        m = pis[b, 0]
        for r in range(3):
            h[r] = rot[b, r, 0] * pis[b, 1] + rot[b, r, 1] * pis[b, 2] + rot[b, r, 2] * pis[b, 3]
        ib[0, 0], ib[0, 1], ib[0, 2] = pis[b, 4], pis[b, 5], pis[b, 6]
        ib[1, 0], ib[1, 1], ib[1, 2] = pis[b, 5], pis[b, 7], pis[b, 8]
        ib[2, 0], ib[2, 1], ib[2, 2] = pis[b, 6], pis[b, 8], pis[b, 9]
        for r in range(3):
            for s in range(3):
                tmp[r, s] = rot[b, r, 0] * ib[0, s] + rot[b, r, 1] * ib[1, s] + rot[b, r, 2] * ib[2, s]
        for r in range(3):
            for s in range(3):
                i_o[r, s] = tmp[r, 0] * rot[b, s, 0] + tmp[r, 1] * rot[b, s, 1] + tmp[r, 2] * rot[b, s, 2]
        _skew(org[b], so)
        _skew(h, sh)
        for r in range(3):
            for s in range(3):
                acc = i_o[r, s]
                for t in range(3):
                    acc -= m * so[r, t] * so[t, s] + so[r, t] * sh[t, s] + sh[r, t] * so[t, s]
                inert[b, r, s] = acc
        for r in range(3):
            first[r] = m * org[b, r] + h[r]
        _skew(first, tmp)
        for r in range(3):
            for s in range(3):
                inert[b, r, 3 + s] = tmp[r, s]
                inert[b, 3 + s, r] = tmp[r, s]
            inert[b, 3 + r, 3 + r] = m
        _cross(first, g, s3)
        for r in range(3):
            fext[b, r] = s3[r]
            fext[b, 3 + r] = m * g[r]
    # springs on body 0, moments about the lab origin
    rr, d, al, u, f = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for s in range(ns):
        for r in range(3):
            rr[r] = rot[0, r, 0] * att[s, 0] + rot[0, r, 1] * att[s, 1] + rot[0, r, 2] * att[s, 2]
            al[r] = rr[r] + p[r]
            d[r] = al[r] - anchor[s, r]
        length = np.sqrt(d[0] ** 2 + d[1] ** 2 + d[2] ** 2)
        _cross(w[0], rr, u)
        rate = (d[0] * (v_p[0] + u[0]) + d[1] * (v_p[1] + u[1]) + d[2] * (v_p[2] + u[2])) / length
        coef = (kl0[s] - c[s] * rate) / length - k[s]
        for r in range(3):
            f[r] = d[r] * coef
        _cross(al, f, s3)
        for r in range(3):
            fext[0, r] += s3[r]
            fext[0, 3 + r] += f[r]
    # pass 1
    vel = np.zeros((nb, 6))
    bias = np.zeros((nb, 6))
    subsp = np.zeros((nb, 6, 3))
    qd = np.zeros((nb, 3))
    _cross(p, w[0], s3)
    for r in range(3):
        vel[0, r] = w[0, r]
        vel[0, 3 + r] = v_p[r] + s3[r]
    _cross(v_p, w[0], s3)
    for r in range(3):
        bias[0, 3 + r] = s3[r]
    cd = np.empty(3)
    for i in range(1, nb):
        a = parents[i]
        for r in range(3):
            qd[i, r] = w[i, r] - w[a, r]
            subsp[i, r, r] = 1.0
        _skew(org[i], tmp)
        for r in range(3):
            for s in range(3):
                subsp[i, 3 + r, s] = tmp[r, s]
        for r in range(6):
            vel[i, r] = vel[a, r] + subsp[i, r, 0] * qd[i, 0] + subsp[i, r, 1] * qd[i, 1] \
                + subsp[i, r, 2] * qd[i, 2]
        _cross(vel[a, :3], org[i], s3)
        for r in range(3):
            cd[r] = vel[a, 3 + r] + s3[r]
        _cross(cd, qd[i], s3)
        for r in range(3):
            bias[i, 3 + r] = s3[r]
    art_i = inert.copy()
    art_p = np.empty((nb, 6))
    iv = np.empty(6)
    c1, c2, c3 = np.empty(3), np.empty(3), np.empty(3)
    for b in range(nb):
        for r in range(6):
            acc = 0.0
            for s in range(6):
                acc += inert[b, r, s] * vel[b, s]
            iv[r] = acc
        _cross(vel[b, :3], iv[:3], c1)
        _cross(vel[b, 3:], iv[3:], c2)
        _cross(vel[b, :3], iv[3:], c3)
        for r in range(3):
            art_p[b, r] = c1[r] + c2[r] - fext[b, r]
            art_p[b, 3 + r] = c3[r] - fext[b, 3 + r]
    # pass 2
    umat = np.zeros((nb, 6, 3))
    dinv = np.zeros((nb, 3, 3))
    uvec = np.zeros((nb, 3))
    dd, ud = np.empty((3, 3)), np.empty((6, 3))
    pa, uv2 = np.empty(6), np.empty(3)
    for i in range(nb - 1, 0, -1):
        a = parents[i]
        for r in range(6):
            for s in range(3):
                acc = 0.0
                for t in range(6):
                    acc += art_i[i, r, t] * subsp[i, t, s]
                umat[i, r, s] = acc
        for r in range(3):
            for s in range(3):
                acc = 0.0
                for t in range(6):
                    acc += subsp[i, t, r] * umat[i, t, s]
                dd[r, s] = acc
        _inv3(dd, dinv[i])
        for r in range(3):
            acc = -jd[i] * qd[i, r]
            for t in range(6):
                acc -= subsp[i, t, r] * art_p[i, t]
            uvec[i, r] = acc
        for r in range(6):
            for s in range(3):
                ud[r, s] = umat[i, r, 0] * dinv[i, 0, s] + umat[i, r, 1] * dinv[i, 1, s] \
                    + umat[i, r, 2] * dinv[i, 2, s]
        for r in range(3):
            uv2[r] = dinv[i, r, 0] * uvec[i, 0] + dinv[i, r, 1] * uvec[i, 1] + dinv[i, r, 2] * uvec[i, 2]
        for r in range(6):
            for s in range(6):
                art_i[i, r, s] -= ud[r, 0] * umat[i, s, 0] + ud[r, 1] * umat[i, s, 1] \
                    + ud[r, 2] * umat[i, s, 2]
        for r in range(6):
            acc = art_p[i, r] + umat[i, r, 0] * uv2[0] + umat[i, r, 1] * uv2[1] + umat[i, r, 2] * uv2[2]
            for t in range(6):
                acc += art_i[i, r, t] * bias[i, t]
            pa[r] = acc
        for r in range(6):
            art_p[a, r] += pa[r]
            for s in range(6):
                art_i[a, r, s] += art_i[i, r, s]
    # pass 3: the root (S_0 maps [v_p, omega_0] to (omega, v_p + p x omega))
    s0 = np.zeros((6, 6))
    _skew(p, tmp)
    for r in range(3):
        s0[r, 3 + r] = 1.0
        s0[3 + r, r] = 1.0
        for s in range(3):
            s0[3 + r, 3 + s] = tmp[r, s]
    u0 = art_i[0] @ s0
    d0 = s0.T @ u0
    rhs0 = -(s0.T @ (art_p[0] + art_i[0] @ bias[0]))
    qdd0 = np.linalg.solve(d0, rhs0)
    accs = np.zeros((nb, 6))
    accs[0] = bias[0] + s0 @ qdd0
    ai, qdd = np.empty(6), np.empty(3)
    for i in range(1, nb):
        a = parents[i]
        for r in range(6):
            ai[r] = accs[a, r] + bias[i, r]
        for r in range(3):
            acc = uvec[i, r]
            for t in range(6):
                acc -= umat[i, t, r] * ai[t]
            s3[r] = acc
        for r in range(3):
            qdd[r] = dinv[i, r, 0] * s3[0] + dinv[i, r, 1] * s3[1] + dinv[i, r, 2] * s3[2]
        for r in range(6):
            accs[i, r] = ai[r] + subsp[i, r, 0] * qdd[0] + subsp[i, r, 1] * qdd[1] \
                + subsp[i, r, 2] * qdd[2]
    # assemble dy/dt
    out[0:3] = v_p
    for b in range(nb):
        for r in range(3):
            for s in range(3):       # column s of R crossed by w: (w x R[:, s])_r
                r1, r2 = (r + 1) % 3, (r + 2) % 3
                out[3 + 9 * b + 3 * r + s] = w[b, r1] * rot[b, r2, s] - w[b, r2] * rot[b, r1, s]
    out[3 + 9 * nb:6 + 9 * nb] = qdd0[:3]
    out[6 + 9 * nb:9 + 9 * nb] = qdd0[3:]
    for i in range(1, nb):
        out[6 + 9 * nb + 3 * i:9 + 9 * nb + 3 * i] = accs[i, :3]


@njit(cache=False)
def simulate(y0, n_frames, h, substeps, pis, jp, jd, k, kl0, c, parents, anchor, att, g,
             body_of_marker, mk):
    """Markers ``[n_frames + 1, K, 3]`` of the RK4 run from ``y0`` (and the final state)."""
    nb = parents.shape[0]
    n = y0.shape[0]
    kn = body_of_marker.shape[0]
    out = np.empty((n_frames + 1, kn, 3))
    y = y0.copy()
    k1, k2, k3, k4, ys = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    for fr in range(n_frames + 1):
        if fr > 0:
            for _ in range(substeps):
                rhs(y, pis, jp, jd, k, kl0, c, parents, anchor, att, g, k1)
                ys[:] = y + 0.5 * h * k1
                rhs(ys, pis, jp, jd, k, kl0, c, parents, anchor, att, g, k2)
                ys[:] = y + 0.5 * h * k2
                rhs(ys, pis, jp, jd, k, kl0, c, parents, anchor, att, g, k3)
                ys[:] = y + h * k3
                rhs(ys, pis, jp, jd, k, kl0, c, parents, anchor, att, g, k4)
                y = y + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)
        # markers o_b + R_b m
        for j in range(kn):
            b = body_of_marker[j]
            o = y[0:3].copy()
            # origin of body b along the tree
            chain = b
            while chain > 0:
                a = parents[chain]
                for r in range(3):
                    o[r] += (y[3 + 9 * a + 3 * r] * jp[chain, 0] + y[4 + 9 * a + 3 * r]
                             * jp[chain, 1] + y[5 + 9 * a + 3 * r] * jp[chain, 2])
                chain = a
            for r in range(3):
                out[fr, j, r] = o[r] + (y[3 + 9 * b + 3 * r] * mk[j, 0] + y[4 + 9 * b + 3 * r]
                                        * mk[j, 1] + y[5 + 9 * b + 3 * r] * mk[j, 2])
    return out, y


class NumbaEngine:
    """The benchmark model with the compiled numba RK4 loop; sensitivities by forward
    differences."""

    def __init__(self, bench: Bench):
        self.b = bench
        self.h = 1.0 / FPS / SUBSTEPS

    def _args(self, theta):
        b = self.b
        nb, off = b.nb, b.offsets()
        kn = len(b.body_of_marker)
        return (theta[:10 * nb].reshape(nb, 10), theta[10 * nb:13 * nb].reshape(nb, 3),
                theta[13 * nb:14 * nb], theta[off["k"]:off["k"] + 4],
                theta[off["kl0"]:off["kl0"] + 4], theta[off["c"]:off["c"] + 4],
                np.array(b.parents, np.int64), ANCHOR, ATTACH, GRAVITY,
                np.array(b.body_of_marker, np.int64),
                theta[off["markers"]:off["end"]].reshape(kn, 3))

    def simulate(self, theta, y0, n_frames):
        """``(markers [n_frames + 1, K, 3], final state)``."""
        return simulate(np.array(y0, float), n_frames, self.h, SUBSTEPS,
                        *self._args(np.array(theta, float)))

    def sensitivities(self, theta, y0, t_theta, t_y, n_frames, rel_step=1e-7):
        """Markers and their forward-difference derivatives ``[T, K, 3, P]``."""
        base, _ = self.simulate(theta, y0, n_frames)
        d = np.empty(base.shape + (t_theta.shape[1],))
        for j in range(t_theta.shape[1]):
            scale = max(np.max(np.abs(theta[t_theta[:, j] != 0]), initial=0.0),
                        np.max(np.abs(y0[t_y[:, j] != 0]), initial=0.0), 1.0)
            eps = rel_step * scale
            pert, _ = self.simulate(theta + eps * t_theta[:, j], y0 + eps * t_y[:, j], n_frames)
            d[..., j] = (pert - base) / eps
        return base, d
