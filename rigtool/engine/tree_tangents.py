"""The tree engine's compiled forward-mode tangents: the articulated-body algorithm of
rigtool.engine.tree carried together with P tangent columns, RK4 and markers included, in
numba (one compiled loop over the frames; no Python call per step).

Why by hand: JAX's forward mode (``jax.linearize`` + ``vmap`` over the columns) turns every
3x3 and 6x6 product of the algorithm into a small batched kernel, and XLA's CPU code for
them ran at ~0.1 GFLOP/s: 36 ms per frame for 140 columns at 8 bodies
(benchmarks/RESULTS.md, "Engine choice"). Here each primal operation is written once with its
derivative rule (``d(AB) = dA B + A dB``, ``d(A^-1) = -A^-1 dA A^-1``, ...), and the
innermost loop of every rule runs over the P columns, which sit last and contiguous, so
the compiler vectorises it. The rules are exact: the columns are the derivatives of the
same discrete map the primal integrates (tests compare them with JAX's forward mode to
round-off, and with finite differences).

Arrays: a quantity ``x`` of shape ``S`` has its tangent ``dx`` of shape ``S + (P,)``.
With ``P = 0`` every routine is the primal alone.

Why one file of ~640 lines (above the project's ~400): numba's on-disk cache (``cache=True``)
checks only the source file of the function it compiled. A kernel that calls a rule defined
in another file keeps its cached machine code when that rule changes, and runs the old rule
with no warning (numba's pull requests #8396 and #9563, which would track other files, were
not merged). With the rules, the model and the integrator in one file, any edit here
invalidates all of them together.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# a body's 3x3 inertia from pi[4:10] = (xx, xy, xz, yy, yz, zz)
_SYM = np.array([[0, 1, 2], [1, 3, 4], [2, 4, 5]], dtype=np.int64)
_RK4_OFFSETS = np.array([0.0, 0.5, 0.5, 1.0])
_RK4_WEIGHTS = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0

# fused multiply-adds allowed (no other reassociation: the sums keep their order)
_JIT = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


# ------------------------------------------------------------------ derivative rules
# The product rules are written out for each orientation (a x, a^T x, a b, a b^T, a^T b)
# rather than one rule fed transposed views: a transposed view of a tangent array has no
# compile-time stride, and its column loop, the innermost, would no longer vectorise.
@njit(**_JIT)
def _mv(a, da, x, dx, o, do):
    """``o = a x``, ``do = da x + a dx`` (``a [r, c]``)."""
    r_n, c_n = a.shape
    p_n = do.shape[-1]
    for i in range(r_n):
        s = 0.0
        for j in range(c_n):
            s += a[i, j] * x[j]
        o[i] = s
        for q in range(p_n):
            do[i, q] = 0.0
        for j in range(c_n):
            aij, xj = a[i, j], x[j]
            for q in range(p_n):
                do[i, q] += da[i, j, q] * xj + aij * dx[j, q]


@njit(**_JIT)
def _mtv(a, da, x, dx, o, do):
    """``o = a^T x`` and its tangent."""
    r_n, c_n = a.shape
    p_n = do.shape[-1]
    for i in range(c_n):
        s = 0.0
        for j in range(r_n):
            s += a[j, i] * x[j]
        o[i] = s
        for q in range(p_n):
            do[i, q] = 0.0
        for j in range(r_n):
            aji, xj = a[j, i], x[j]
            for q in range(p_n):
                do[i, q] += da[j, i, q] * xj + aji * dx[j, q]


@njit(**_JIT)
def _mm(a, da, b, db, o, do):
    """``o = a b`` and its tangent."""
    r_n, k_n = a.shape
    c_n = b.shape[1]
    p_n = do.shape[-1]
    for i in range(r_n):
        for j in range(c_n):
            s = 0.0
            for k in range(k_n):
                s += a[i, k] * b[k, j]
            o[i, j] = s
            for q in range(p_n):
                do[i, j, q] = 0.0
            for k in range(k_n):
                aik, bkj = a[i, k], b[k, j]
                for q in range(p_n):
                    do[i, j, q] += da[i, k, q] * bkj + aik * db[k, j, q]


@njit(**_JIT)
def _mmt(a, da, b, db, o, do):
    """``o = a b^T`` and its tangent."""
    r_n, k_n = a.shape
    c_n = b.shape[0]
    p_n = do.shape[-1]
    for i in range(r_n):
        for j in range(c_n):
            s = 0.0
            for k in range(k_n):
                s += a[i, k] * b[j, k]
            o[i, j] = s
            for q in range(p_n):
                do[i, j, q] = 0.0
            for k in range(k_n):
                aik, bjk = a[i, k], b[j, k]
                for q in range(p_n):
                    do[i, j, q] += da[i, k, q] * bjk + aik * db[j, k, q]


@njit(**_JIT)
def _mtm(a, da, b, db, o, do):
    """``o = a^T b`` and its tangent."""
    k_n, r_n = a.shape
    c_n = b.shape[1]
    p_n = do.shape[-1]
    for i in range(r_n):
        for j in range(c_n):
            s = 0.0
            for k in range(k_n):
                s += a[k, i] * b[k, j]
            o[i, j] = s
            for q in range(p_n):
                do[i, j, q] = 0.0
            for k in range(k_n):
                aki, bkj = a[k, i], b[k, j]
                for q in range(p_n):
                    do[i, j, q] += da[k, i, q] * bkj + aki * db[k, j, q]


@njit(**_JIT)
def _cross(a, da, b, db, o, do):
    """``o = a x b`` and its tangent."""
    o[0] = a[1] * b[2] - a[2] * b[1]
    o[1] = a[2] * b[0] - a[0] * b[2]
    o[2] = a[0] * b[1] - a[1] * b[0]
    for i in range(3):
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        a1, a2, b1, b2 = a[i1], a[i2], b[i1], b[i2]
        for q in range(do.shape[-1]):
            do[i, q] = da[i1, q] * b2 + a1 * db[i2, q] - da[i2, q] * b1 - a2 * db[i1, q]


@njit(**_JIT)
def _skew(a, da, o, do):
    """``o = [a x]`` and its tangent."""
    o[0, 0], o[0, 1], o[0, 2] = 0.0, -a[2], a[1]
    o[1, 0], o[1, 1], o[1, 2] = a[2], 0.0, -a[0]
    o[2, 0], o[2, 1], o[2, 2] = -a[1], a[0], 0.0
    for q in range(do.shape[-1]):
        do[0, 0, q], do[0, 1, q], do[0, 2, q] = 0.0, -da[2, q], da[1, q]
        do[1, 0, q], do[1, 1, q], do[1, 2, q] = da[2, q], 0.0, -da[0, q]
        do[2, 0, q], do[2, 1, q], do[2, 2, q] = -da[1, q], da[0, q], 0.0


@njit(**_JIT)
def _inv_spd(a, o):
    """``o = a^-1`` for a small symmetric positive definite ``a`` (n <= 6), by its Cholesky
    factor ``a = L L^T``: ``a^-1 = L^-T L^-1``. A matrix that is not positive definite
    (the motion left the model) gives NaN, which the integrator's finiteness check stops on.

    Hand-written rather than ``np.linalg.inv``: numba lowers that to a LAPACK call wrapped in
    its argument checks and error-message formatting, which cost about 2.5 s of the kernels'
    first compilation per call site, for a 3x3 or 6x6 matrix that these loops invert in a
    few dozen flops."""
    n = a.shape[0]
    low = np.zeros((n, n))
    for j in range(n):
        s = a[j, j]
        for k in range(j):
            s -= low[j, k] * low[j, k]
        d = np.sqrt(s) if s > 0.0 else np.nan
        low[j, j] = d
        for i in range(j + 1, n):
            t = a[i, j]
            for k in range(j):
                t -= low[i, k] * low[j, k]
            low[i, j] = t / d
    # low <- L^-1 (lower triangular, in place, column by column)
    for j in range(n):
        low[j, j] = 1.0 / low[j, j]
        for i in range(j + 1, n):
            t = 0.0
            for k in range(j, i):
                t -= low[i, k] * low[k, j]
            low[i, j] = t / low[i, i]
    # o = L^-T L^-1
    for i in range(n):
        for j in range(i, n):
            t = 0.0
            for k in range(j, n):
                t += low[k, i] * low[k, j]
            o[i, j] = t
            o[j, i] = t


@njit(**_JIT)
def _inv(a, da, o, do, work):
    """``o = a^-1`` (a small symmetric positive definite matrix, :func:`_inv_spd`) and
    ``do = -a^-1 da a^-1``; ``work`` a scratch array of ``da``'s shape."""
    _inv_spd(a, o)
    n = a.shape[0]
    p_n = do.shape[-1]
    # work = da o, then do = -o work
    for i in range(n):
        for j in range(n):
            for q in range(p_n):
                work[i, j, q] = 0.0
            for k in range(n):
                okj = o[k, j]
                for q in range(p_n):
                    work[i, j, q] += da[i, k, q] * okj
    for i in range(n):
        for j in range(n):
            for q in range(p_n):
                do[i, j, q] = 0.0
            for k in range(n):
                oik = o[i, k]
                for q in range(p_n):
                    do[i, j, q] -= oik * work[k, j, q]


# ------------------------------------------------------------------ the model
@njit(**_JIT)
def _origins(y, dy, jp, djp, parents, rot, drot, org, dorg):
    """Every body's rotation ``rot [nb, 3, 3]`` and origin ``org [nb, 3]`` (lab) from the
    state, with tangents."""
    nb = parents.shape[0]
    p_n = dy.shape[1]
    for b in range(nb):
        for r in range(3):
            for s in range(3):
                rot[b, r, s] = y[3 + 9 * b + 3 * r + s]
                drot[b, r, s, :] = dy[3 + 9 * b + 3 * r + s, :]
    for r in range(3):
        org[0, r] = y[r]
        dorg[0, r, :] = dy[r, :]
    for i in range(1, nb):
        a = parents[i]
        for r in range(3):
            s_ = org[a, r]
            for s in range(3):
                s_ += rot[a, r, s] * jp[i, s]
            org[i, r] = s_
            for q in range(p_n):
                dorg[i, r, q] = dorg[a, r, q]
            for s in range(3):
                ras, jis = rot[a, r, s], jp[i, s]
                for q in range(p_n):
                    dorg[i, r, q] += drot[a, r, s, q] * jis + ras * djp[i, s, q]


@njit(**_JIT)
def rhs_tangent(y, dy, pis, dpis, jp, djp, jd, djd, k, dk, kl0, dkl0, c, dc,
                parents, free, anchor, att, g, out, dout):
    """``dy/dt`` of rigtool.engine.tree.rhs into ``out [n]`` and its tangents into
    ``dout [n, P]`` (``dy [n, P]`` the state's, ``dpis [nb, 10, P]`` ... the parameters')."""
    nb = parents.shape[0]
    ns = anchor.shape[0]
    nf = free.shape[0]
    p_n = dy.shape[1]
    i_w = 6 + 9 * nb                       # first angular velocity in the state
    rot, drot = np.empty((nb, 3, 3)), np.empty((nb, 3, 3, p_n))
    org, dorg = np.empty((nb, 3)), np.empty((nb, 3, p_n))
    _origins(y, dy, jp, djp, parents, rot, drot, org, dorg)
    w, dw = np.empty((nb, 3)), np.empty((nb, 3, p_n))
    for b in range(nb):
        for r in range(3):
            w[b, r] = y[i_w + 3 * b + r]
            dw[b, r, :] = dy[i_w + 3 * b + r, :]
    p, dp = y[0:3], dy[0:3]
    v_p, dv_p = y[3 + 9 * nb:6 + 9 * nb], dy[3 + 9 * nb:6 + 9 * nb]
    # scratch
    v3a, dv3a = np.empty(3), np.empty((3, p_n))
    v3b, dv3b = np.empty(3), np.empty((3, p_n))
    v3c, dv3c = np.empty(3), np.empty((3, p_n))
    m3a, dm3a = np.empty((3, 3)), np.empty((3, 3, p_n))
    m3b, dm3b = np.empty((3, 3)), np.empty((3, 3, p_n))
    m3c, dm3c = np.empty((3, 3)), np.empty((3, 3, p_n))
    m3d, dm3d = np.empty((3, 3)), np.empty((3, 3, p_n))
    m3e, dm3e = np.empty((3, 3)), np.empty((3, 3, p_n))
    # ---- spatial inertias about the lab origin and the external forces
    # the articulated inertias start as the bodies' own (pass 2 changes them in place after
    # the bias forces below have used them)
    art_i, dart_i = np.zeros((nb, 6, 6)), np.zeros((nb, 6, 6, p_n))
    inert, dinert = art_i, dart_i
    fext, dfext = np.zeros((nb, 6)), np.zeros((nb, 6, p_n))
    for b in range(nb):
        m, dm = pis[b, 0], dpis[b, 0]
        _mv(rot[b], drot[b], pis[b, 1:4], dpis[b, 1:4], v3a, dv3a)       # h = R c
        for r in range(3):
            for s in range(3):
                m3a[r, s] = pis[b, 4 + _SYM[r, s]]
                dm3a[r, s, :] = dpis[b, 4 + _SYM[r, s], :]
        _mm(rot[b], drot[b], m3a, dm3a, m3b, dm3b)                        # R I_body
        _mmt(m3b, dm3b, rot[b], drot[b], m3c, dm3c)                       # I_o
        _skew(org[b], dorg[b], m3a, dm3a)                                 # so
        _skew(v3a, dv3a, m3b, dm3b)                                       # sh
        # I_lab = I_o - m so so - so sh - sh so
        _mm(m3a, dm3a, m3a, dm3a, m3d, dm3d)
        for r in range(3):
            for s in range(3):
                inert[b, r, s] = m3c[r, s] - m * m3d[r, s]
                for q in range(p_n):
                    dinert[b, r, s, q] = dm3c[r, s, q] - dm[q] * m3d[r, s] - m * dm3d[r, s, q]
        _mm(m3a, dm3a, m3b, dm3b, m3d, dm3d)
        _mm(m3b, dm3b, m3a, dm3a, m3e, dm3e)
        for r in range(3):
            for s in range(3):
                inert[b, r, s] -= m3d[r, s] + m3e[r, s]
                for q in range(p_n):
                    dinert[b, r, s, q] -= dm3d[r, s, q] + dm3e[r, s, q]
        # first moment about the lab origin, its skew blocks, gravity
        for r in range(3):
            v3b[r] = m * org[b, r] + v3a[r]
            for q in range(p_n):
                dv3b[r, q] = dm[q] * org[b, r] + m * dorg[b, r, q] + dv3a[r, q]
        _skew(v3b, dv3b, m3a, dm3a)
        for r in range(3):
            for s in range(3):
                inert[b, r, 3 + s] = m3a[r, s]
                inert[b, 3 + s, r] = m3a[r, s]
                dinert[b, r, 3 + s, :] = dm3a[r, s, :]
                dinert[b, 3 + s, r, :] = dm3a[r, s, :]
            inert[b, 3 + r, 3 + r] = m
            dinert[b, 3 + r, 3 + r, :] = dm
        for r in range(3):
            r1, r2 = (r + 1) % 3, (r + 2) % 3
            fext[b, r] = v3b[r1] * g[r2] - v3b[r2] * g[r1]
            fext[b, 3 + r] = m * g[r]
            for q in range(p_n):
                dfext[b, r, q] = dv3b[r1, q] * g[r2] - dv3b[r2, q] * g[r1]
                dfext[b, 3 + r, q] = dm[q] * g[r]
    # ---- springs on body 0, moments about the lab origin
    dlen, dnum = np.empty(p_n), np.empty(p_n)
    for s_ in range(ns):
        for r in range(3):                                               # v3a: R0 att
            v3a[r] = rot[0, r, 0] * att[s_, 0] + rot[0, r, 1] * att[s_, 1] \
                + rot[0, r, 2] * att[s_, 2]
            for q in range(p_n):
                dv3a[r, q] = drot[0, r, 0, q] * att[s_, 0] + drot[0, r, 1, q] * att[s_, 1] \
                    + drot[0, r, 2, q] * att[s_, 2]
        _cross(w[0], dw[0], v3a, dv3a, v3b, dv3b)                        # w0 x r
        for r in range(3):                                               # v3a: a_lab
            v3a[r] += p[r]
            for q in range(p_n):
                dv3a[r, q] += dp[r, q]
        length, num = 0.0, 0.0
        for q in range(p_n):
            dlen[q] = 0.0
            dnum[q] = 0.0
        for r in range(3):
            d_r = v3a[r] - anchor[s_, r]
            u_r = v_p[r] + v3b[r]
            length += d_r * d_r
            num += d_r * u_r
            for q in range(p_n):
                dlen[q] += d_r * dv3a[r, q]
                dnum[q] += dv3a[r, q] * u_r + d_r * (dv_p[r, q] + dv3b[r, q])
        length = np.sqrt(length)
        for q in range(p_n):
            dlen[q] /= length
        rate = num / length
        base = kl0[s_] - c[s_] * rate
        coef = base / length - k[s_]
        for r in range(3):                                               # v3c: the force
            d_r = v3a[r] - anchor[s_, r]
            v3c[r] = d_r * coef
        for q in range(p_n):
            drate = dnum[q] / length - num * dlen[q] / (length * length)
            dbase = dkl0[s_, q] - dc[s_, q] * rate - c[s_] * drate
            dcoef = dbase / length - base * dlen[q] / (length * length) - dk[s_, q]
            for r in range(3):
                d_r = v3a[r] - anchor[s_, r]
                dv3c[r, q] = dv3a[r, q] * coef + d_r * dcoef
        _cross(v3a, dv3a, v3c, dv3c, v3b, dv3b)
        for r in range(3):
            fext[0, r] += v3b[r]
            fext[0, 3 + r] += v3c[r]
            for q in range(p_n):
                dfext[0, r, q] += dv3b[r, q]
                dfext[0, 3 + r, q] += dv3c[r, q]
    # ---- pass 1: velocities, bias accelerations, bias forces
    vel, dvel = np.zeros((nb, 6)), np.zeros((nb, 6, p_n))
    bias, dbias = np.zeros((nb, 6)), np.zeros((nb, 6, p_n))
    subsp, dsubsp = np.zeros((nb, 6, 3)), np.zeros((nb, 6, 3, p_n))
    qd, dqd = np.zeros((nb, 3)), np.zeros((nb, 3, p_n))
    _cross(p, dp, w[0], dw[0], v3a, dv3a)
    _cross(v_p, dv_p, w[0], dw[0], v3b, dv3b)
    for r in range(3):
        vel[0, r] = w[0, r]
        vel[0, 3 + r] = v_p[r] + v3a[r]
        bias[0, 3 + r] = v3b[r]
        dvel[0, r, :] = dw[0, r, :]
        for q in range(p_n):
            dvel[0, 3 + r, q] = dv_p[r, q] + dv3a[r, q]
            dbias[0, 3 + r, q] = dv3b[r, q]
    v6, dv6 = np.empty(6), np.empty((6, p_n))
    for i in range(1, nb):
        a = parents[i]
        for r in range(3):
            qd[i, r] = w[i, r] - w[a, r]
            for q in range(p_n):
                dqd[i, r, q] = dw[i, r, q] - dw[a, r, q]
            subsp[i, r, r] = 1.0
        _skew(org[i], dorg[i], m3a, dm3a)
        for r in range(3):
            for s in range(3):
                subsp[i, 3 + r, s] = m3a[r, s]
                dsubsp[i, 3 + r, s, :] = dm3a[r, s, :]
        _mv(subsp[i], dsubsp[i], qd[i], dqd[i], v6, dv6)
        for r in range(6):
            vel[i, r] = vel[a, r] + v6[r]
            for q in range(p_n):
                dvel[i, r, q] = dvel[a, r, q] + dv6[r, q]
        _cross(vel[a, :3], dvel[a, :3], org[i], dorg[i], v3a, dv3a)
        for r in range(3):
            v3a[r] += vel[a, 3 + r]
            for q in range(p_n):
                dv3a[r, q] += dvel[a, 3 + r, q]
        _cross(v3a, dv3a, qd[i], dqd[i], v3b, dv3b)
        for r in range(3):
            bias[i, 3 + r] = v3b[r]
            dbias[i, 3 + r, :] = dv3b[r, :]
    art_p, dart_p = np.empty((nb, 6)), np.empty((nb, 6, p_n))
    for b in range(nb):
        _mv(inert[b], dinert[b], vel[b], dvel[b], v6, dv6)
        _cross(vel[b, :3], dvel[b, :3], v6[:3], dv6[:3], v3a, dv3a)
        _cross(vel[b, 3:], dvel[b, 3:], v6[3:], dv6[3:], v3b, dv3b)
        _cross(vel[b, :3], dvel[b, :3], v6[3:], dv6[3:], v3c, dv3c)
        for r in range(3):
            art_p[b, r] = v3a[r] + v3b[r] - fext[b, r]
            art_p[b, 3 + r] = v3c[r] - fext[b, 3 + r]
            for q in range(p_n):
                dart_p[b, r, q] = dv3a[r, q] + dv3b[r, q] - dfext[b, r, q]
                dart_p[b, 3 + r, q] = dv3c[r, q] - dfext[b, 3 + r, q]
    # ---- pass 2: articulated inertias, leaves to root
    umat, dumat = np.zeros((nb, 6, 3)), np.zeros((nb, 6, 3, p_n))
    dinv, ddinv = np.zeros((nb, 3, 3)), np.zeros((nb, 3, 3, p_n))
    uvec, duvec = np.zeros((nb, 3)), np.zeros((nb, 3, p_n))
    ud, dud = np.empty((6, 3)), np.empty((6, 3, p_n))
    m6, dm6 = np.empty((6, 6)), np.empty((6, 6, p_n))
    v6b, dv6b = np.empty(6), np.empty((6, p_n))
    for i in range(nb - 1, 0, -1):
        a = parents[i]
        _mm(art_i[i], dart_i[i], subsp[i], dsubsp[i], umat[i], dumat[i])     # U = I^A S
        _mtm(subsp[i], dsubsp[i], umat[i], dumat[i], m3a, dm3a)              # S^T U
        _inv(m3a, dm3a, dinv[i], ddinv[i], dm3b)
        _mtv(subsp[i], dsubsp[i], art_p[i], dart_p[i], v3a, dv3a)            # S^T p^A
        for r in range(3):
            uvec[i, r] = -jd[i] * qd[i, r] - v3a[r]
            for q in range(p_n):
                duvec[i, r, q] = -djd[i, q] * qd[i, r] - jd[i] * dqd[i, r, q] - dv3a[r, q]
        _mm(umat[i], dumat[i], dinv[i], ddinv[i], ud, dud)
        _mv(dinv[i], ddinv[i], uvec[i], duvec[i], v3b, dv3b)
        _mmt(ud, dud, umat[i], dumat[i], m6, dm6)
        for r in range(6):
            for s in range(6):
                art_i[i, r, s] -= m6[r, s]
                for q in range(p_n):
                    dart_i[i, r, s, q] -= dm6[r, s, q]
        _mv(umat[i], dumat[i], v3b, dv3b, v6, dv6)
        _mv(art_i[i], dart_i[i], bias[i], dbias[i], v6b, dv6b)
        for r in range(6):
            art_p[a, r] += art_p[i, r] + v6[r] + v6b[r]
            for q in range(p_n):
                dart_p[a, r, q] += dart_p[i, r, q] + dv6[r, q] + dv6b[r, q]
            for s in range(6):
                art_i[a, r, s] += art_i[i, r, s]
                for q in range(p_n):
                    dart_i[a, r, s, q] += dart_i[i, r, s, q]
    # ---- the root: S_0 maps [v_p, omega_0] to (omega, v_p + p x omega); free columns
    s0, ds0 = np.zeros((6, nf)), np.zeros((6, nf, p_n))
    _skew(p, dp, m3a, dm3a)
    for j in range(nf):
        col = free[j]
        if col < 3:
            s0[3 + col, j] = 1.0
        else:
            s0[col - 3, j] = 1.0
            for r in range(3):
                s0[3 + r, j] = m3a[r, col - 3]
                ds0[3 + r, j, :] = dm3a[r, col - 3, :]
    u0, du0 = np.empty((6, nf)), np.empty((6, nf, p_n))
    d0, dd0 = np.empty((nf, nf)), np.empty((nf, nf, p_n))
    _mm(art_i[0], dart_i[0], s0, ds0, u0, du0)
    _mtm(s0, ds0, u0, du0, d0, dd0)
    _mv(art_i[0], dart_i[0], bias[0], dbias[0], v6, dv6)
    for r in range(6):
        v6[r] += art_p[0, r]
        for q in range(p_n):
            dv6[r, q] += dart_p[0, r, q]
    rhs0, drhs0 = np.empty(nf), np.empty((nf, p_n))
    _mtv(s0, ds0, v6, dv6, rhs0, drhs0)
    d0inv = np.empty((nf, nf))
    _inv_spd(d0, d0inv)
    qdd0, dqdd0 = np.zeros(nf), np.zeros((nf, p_n))
    # qdd0 = -d0^-1 rhs0; dqdd0 = d0^-1 (-drhs0 - dd0 qdd0)
    for r in range(nf):
        s_ = 0.0
        for j in range(nf):
            s_ -= d0inv[r, j] * rhs0[j]
        qdd0[r] = s_
    tmp = np.empty((nf, p_n))
    for r in range(nf):
        for q in range(p_n):
            tmp[r, q] = -drhs0[r, q]
        for j in range(nf):
            qj = qdd0[j]
            for q in range(p_n):
                tmp[r, q] -= dd0[r, j, q] * qj
    for r in range(nf):
        for j in range(nf):
            dij = d0inv[r, j]
            for q in range(p_n):
                dqdd0[r, q] += dij * tmp[j, q]
    # ---- pass 3: accelerations, root to leaves
    acc, dacc = np.empty((nb, 6)), np.empty((nb, 6, p_n))
    _mv(s0, ds0, qdd0, dqdd0, v6, dv6)
    for r in range(6):
        acc[0, r] = bias[0, r] + v6[r]
        for q in range(p_n):
            dacc[0, r, q] = dbias[0, r, q] + dv6[r, q]
    for i in range(1, nb):
        a = parents[i]
        for r in range(6):
            v6b[r] = acc[a, r] + bias[i, r]
            for q in range(p_n):
                dv6b[r, q] = dacc[a, r, q] + dbias[i, r, q]
        _mtv(umat[i], dumat[i], v6b, dv6b, v3a, dv3a)
        for r in range(3):
            v3a[r] = uvec[i, r] - v3a[r]
            for q in range(p_n):
                dv3a[r, q] = duvec[i, r, q] - dv3a[r, q]
        _mv(dinv[i], ddinv[i], v3a, dv3a, v3b, dv3b)
        _mv(subsp[i], dsubsp[i], v3b, dv3b, v6, dv6)
        for r in range(6):
            acc[i, r] = v6b[r] + v6[r]
            for q in range(p_n):
                dacc[i, r, q] = dv6b[r, q] + dv6[r, q]
    # ---- dy/dt
    gen, dgen = np.zeros(6), np.zeros((6, p_n))
    for j in range(nf):
        gen[free[j]] = qdd0[j]
        dgen[free[j], :] = dqdd0[j, :]
    for r in range(3):
        out[r] = v_p[r]
        dout[r, :] = dv_p[r, :]
        out[3 + 9 * nb + r] = gen[r]
        dout[3 + 9 * nb + r, :] = dgen[r, :]
        out[i_w + r] = gen[3 + r]
        dout[i_w + r, :] = dgen[3 + r, :]
    for i in range(1, nb):
        for r in range(3):
            out[i_w + 3 * i + r] = acc[i, r]
            dout[i_w + 3 * i + r, :] = dacc[i, r, :]
    for b in range(nb):                      # dR/dt = [w x] R, column by column
        for r in range(3):
            r1, r2 = (r + 1) % 3, (r + 2) % 3
            for s in range(3):
                j = 3 + 9 * b + 3 * r + s
                out[j] = w[b, r1] * rot[b, r2, s] - w[b, r2] * rot[b, r1, s]
                for q in range(p_n):
                    dout[j, q] = (dw[b, r1, q] * rot[b, r2, s] + w[b, r1] * drot[b, r2, s, q]
                                  - dw[b, r2, q] * rot[b, r1, s] - w[b, r2] * drot[b, r1, s, q])


@njit(**_JIT)
def markers_tangent(y, dy, jp, djp, mk, dmk, parents, body_of_marker, out, dout):
    """Marker positions ``o_b + R_b m_k`` into ``out [K, 3]``, tangents ``dout [K, 3, P]``."""
    nb = parents.shape[0]
    p_n = dy.shape[1]
    rot, drot = np.empty((nb, 3, 3)), np.empty((nb, 3, 3, p_n))
    org, dorg = np.empty((nb, 3)), np.empty((nb, 3, p_n))
    _origins(y, dy, jp, djp, parents, rot, drot, org, dorg)
    for j in range(body_of_marker.shape[0]):
        b = body_of_marker[j]
        _mv(rot[b], drot[b], mk[j], dmk[j], out[j], dout[j])
        for r in range(3):
            out[j, r] += org[b, r]
            for q in range(p_n):
                dout[j, r, q] += dorg[b, r, q]


@njit(**_JIT)
def simulate_tangents(y0, dy0, pis, dpis, jp, djp, jd, djd, k, dk, kl0, dkl0, c, dc,
                      mk, dmk, parents, free, anchor, att, g, body_of_marker, n_frames, h,
                      substeps, states, markers, d_markers):
    """RK4 from ``y0`` (frame 0) over ``n_frames`` frames of ``substeps`` steps of ``h``,
    tangents beside: fills ``states [T, n]``, ``markers [T, K, 3]`` and
    ``d_markers [T, K, 3, P]``; returns the final tangents ``[n, P]`` and the number of
    frames computed (fewer than ``n_frames`` when the state stopped being finite)."""
    n = y0.shape[0]
    p_n = dy0.shape[1]
    y, dy = y0.copy(), dy0.copy()
    ys, dys = np.empty(n), np.empty((n, p_n))
    kk, dkk = np.empty(n), np.empty((n, p_n))
    acc, dacc = np.empty(n), np.empty((n, p_n))
    states[0] = y
    markers_tangent(y, dy, jp, djp, mk, dmk, parents, body_of_marker, markers[0], d_markers[0])
    for fr in range(1, n_frames):
        for _ in range(substeps):
            acc[:] = 0.0
            dacc[:, :] = 0.0
            kk[:] = 0.0
            dkk[:, :] = 0.0
            for st in range(4):
                off = _RK4_OFFSETS[st] * h
                for i in range(n):
                    ys[i] = y[i] + off * kk[i]
                    for q in range(p_n):
                        dys[i, q] = dy[i, q] + off * dkk[i, q]
                rhs_tangent(ys, dys, pis, dpis, jp, djp, jd, djd, k, dk, kl0, dkl0, c, dc,
                            parents, free, anchor, att, g, kk, dkk)
                wt = _RK4_WEIGHTS[st]
                for i in range(n):
                    acc[i] += wt * kk[i]
                    for q in range(p_n):
                        dacc[i, q] += wt * dkk[i, q]
            for i in range(n):
                y[i] += h * acc[i]
                for q in range(p_n):
                    dy[i, q] += h * dacc[i, q]
        for i in range(n):
            if not np.isfinite(y[i]):
                return dy, fr
        states[fr] = y
        markers_tangent(y, dy, jp, djp, mk, dmk, parents, body_of_marker, markers[fr],
                        d_markers[fr])
    return dy, n_frames


__all__ = ["rhs_tangent", "markers_tangent", "simulate_tangents"]
