"""The platform on springs carrying a tree of links on spherical joints: articulated-body
dynamics (O(n) in the links), RK4, exact sensitivities, markers.

Written for the relative-motion output-error fit and independent of rigtool.sim and of the
Kane's-method reference model of tests/_ref_tree_kane.py (tests compare the three).

The equations are written twice, on purpose: here in JAX (:func:`rhs`, :func:`markers`;
:func:`simulate_jax` differentiates them by forward mode), and in rigtool.engine.tree_tangents
as numba kernels that carry each operation's derivative rule beside it (what
:func:`simulate` runs: 4-7x less CPU per frame with the fits' tangent columns). Tests hold
the two to round-off, so neither can drift from the other unnoticed.

Bodies: 0 is the platform with the base link bolted on (platform frame, origin the platform
origin); 1..nb-1 are the moving links in tree order, each with its origin at its joint
centre. A moving link carries its *minimal* parameters ``[0, MS_j, J_j]`` (its subtree's mass
sits on its joint, i.e. on the parent), body 0 ``[M0, MS_0, J_0]`` of the base plus the
platform; that set has the true system's energy in every state, so the motion depends on the
object through ``Phi_B`` and ``M0`` only (the zero-mass links are fine: what the algorithm
inverts is each joint's rotational inertia about its centre, ``J_c``, and the base's full
spatial inertia).

State, lab components::

    y = [p (3), vec(R_0) .. vec(R_{nb-1}) (9 each), v_p (3), omega_0 .. omega_{nb-1} (3 each)]

(``p``/``v_p`` the platform origin; ``omega_b`` each body's absolute angular velocity).

Parameters ``theta = [pi_b (10 each body, body frame about its origin), jp_b (3 each: joint
centre in the parent's frame; body 0 unused), c_b (joint damping, N m s/rad; body 0 unused),
k (S), k L0 (S), c (S), m_k (3 each marker: its coordinates in its body's frame)]``.

Dynamics: Featherstone's articulated-body algorithm in lab ("world") coordinates about the lab
origin, motion vectors ``(omega, v_O)``, force vectors ``(n_O, f)``. A spherical joint at
``c`` has the subspace ``S = [1; [c x]]`` and relative rate ``omega_b - omega_parent``; in
world coordinates the bias acceleration is just ``dS/dt qdot = [0; c_dot x qdot]``. The
platform is the root, with ``S_0`` mapping ``[v_p, omega_0]`` to ``(omega, v_p + p x omega)``
(its locked lab-axis rows dropped), so locked DOFs are the columns left out. Joint damping
``-c (omega_b - omega_parent)`` is the joint's generalised force.
"""

from __future__ import annotations

import numpy as np

from rigtool.engine._jax import jax, jnp
from rigtool.engine.compiled import disk_jit
from rigtool.engine.columns import ColumnRunner, column_groups
from rigtool.engine.rigid import (CHUNK_FRAMES, _mm, _mv, _solve3, rk4_looped,
                                  tangent_start)
from rigtool.engine.tree_compiled import simulate_compiled
from rigtool.engine.tree_model import TreeModel, theta_of


def _skew(w):
    z = jnp.zeros((), w.dtype)
    return jnp.array([[z, -w[2], w[1]], [w[2], z, -w[0]], [-w[1], w[0], z]])


def _inv3(a):
    """Inverse of a symmetric positive definite 3x3 by its adjugate (closed form)."""
    eye = jnp.eye(3)
    return jnp.stack([_solve3(a, eye[:, j]) for j in range(3)], axis=1)


def _solve_spd6(a, b):
    """``a^-1 b`` for a symmetric positive definite 6x6 by 3x3 blocks (Schur complement,
    closed-form 3x3 inverses; no LAPACK call inside the compiled step)."""
    a11, a12, a22 = a[:3, :3], a[:3, 3:], a[3:, 3:]
    inv11 = _inv3(a11)
    t = _mm(inv11, a12)
    schur = a22 - _mm(a12.T, t)
    x2 = _solve3(schur, b[3:] - _mv(t.T, b[:3]))
    x1 = _mv(inv11, b[:3]) - _mv(t, x2)
    return jnp.concatenate([x1, x2])


def _unpack(theta, static):
    parents, body_of_marker, free, anchor, att, g = static
    nb, s_n, k_n = len(parents), len(anchor), len(body_of_marker)
    i = 0
    pi = theta[i:i + 10 * nb].reshape(nb, 10); i += 10 * nb
    jp = theta[i:i + 3 * nb].reshape(nb, 3); i += 3 * nb
    jd = theta[i:i + nb]; i += nb
    k = theta[i:i + s_n]; i += s_n
    kl0 = theta[i:i + s_n]; i += s_n
    c = theta[i:i + s_n]; i += s_n
    mk = theta[i:i + 3 * k_n].reshape(k_n, 3)
    return pi, jp, jd, k, kl0, c, mk


def _poses(y, jp, parents):
    """Rotations ``[nb, 3, 3]`` and origins ``[nb, 3]`` (lab) of every body."""
    nb = len(parents)
    rot = y[3:3 + 9 * nb].reshape(nb, 3, 3)
    org = [y[0:3]]
    for i in range(1, nb):
        a = parents[i]
        org.append(org[a] + _mv(rot[a], jp[i]))
    return rot, jnp.stack(org)


def rhs(y, theta, static):
    """``dy/dt`` by the articulated-body algorithm (see the module docstring)."""
    parents, body_of_marker, free, anchor, att, g = static
    anchor, att, g = jnp.array(anchor), jnp.array(att), jnp.array(g)
    nb = len(parents)
    pi, jp, jd, k, kl0, c, _ = _unpack(theta, static)
    rot, org = _poses(y, jp, parents)
    p = y[0:3]
    nu = y[3 + 9 * nb:]
    v_p = nu[0:3]
    w = nu[3:].reshape(nb, 3)
    eye = jnp.eye(3)
    # ---- spatial inertias about the lab origin and the external forces
    inert, f_ext = [], []
    for b in range(nb):
        m = pi[b, 0]
        h = _mv(rot[b], pi[b, 1:4])                  # first moment about the body origin
        six = pi[b, 4:]
        i_body = jnp.array([[six[0], six[1], six[2]], [six[1], six[3], six[4]],
                            [six[2], six[4], six[5]]])
        i_o = _mm(_mm(rot[b], i_body), rot[b].T)
        o = org[b]
        so, sh = _skew(o), _skew(h)
        i_lab = i_o - m * _mm(so, so) - _mm(so, sh) - _mm(sh, so)
        first = m * o + h                            # first moment about the lab origin
        sf = _skew(first)
        inert.append(jnp.block([[i_lab, sf], [sf.T, m * eye]]))
        f_ext.append(jnp.concatenate([jnp.cross(first, g), m * g]))
    # springs on body 0, moments about the lab origin
    r = jnp.sum(att[:, None, :] * rot[0][None, :, :], axis=2)
    a_lab = r + p
    d = a_lab - anchor
    length = jnp.sqrt(jnp.sum(d * d, axis=1))
    rate = jnp.sum(d * (v_p + jnp.cross(w[0], r)), axis=1) / length
    f_s = d * ((kl0 - c * rate) / length - k)[:, None]
    f_ext[0] = f_ext[0] + jnp.concatenate([jnp.cross(a_lab, f_s).sum(0), f_s.sum(0)])
    # ---- pass 1: velocities, bias accelerations, bias forces
    s0 = jnp.block([[jnp.zeros((3, 3)), eye], [eye, _skew(p)]])
    if len(free) < 6:
        s0 = s0[:, np.array(free)]
    vel = [jnp.concatenate([w[0], v_p + jnp.cross(p, w[0])])]
    bias = [jnp.concatenate([jnp.zeros(3), jnp.cross(v_p, w[0])])]
    subsp = [s0]
    qd = [None]
    for i in range(1, nb):
        a = parents[i]
        ci = org[i]
        q = w[i] - w[a]
        s_i = jnp.concatenate([eye, _skew(ci)], axis=0)
        vel.append(vel[a] + _mv(s_i, q))
        c_dot = vel[a][3:] + jnp.cross(vel[a][:3], ci)
        bias.append(jnp.concatenate([jnp.zeros(3), jnp.cross(c_dot, q)]))
        subsp.append(s_i)
        qd.append(q)

    def cross_force(v, f):
        return jnp.concatenate([jnp.cross(v[:3], f[:3]) + jnp.cross(v[3:], f[3:]),
                                jnp.cross(v[:3], f[3:])])

    art_i = list(inert)
    art_p = [cross_force(vel[b], _mv(inert[b], vel[b])) - f_ext[b] for b in range(nb)]
    # ---- pass 2: articulated inertias, leaves to root
    u_mat, d_inv, u_vec = [None] * nb, [None] * nb, [None] * nb
    for i in range(nb - 1, 0, -1):
        a = parents[i]
        s_i = subsp[i]
        u_i = _mm(art_i[i], s_i)
        dinv = _inv3(_mm(s_i.T, u_i))
        u_v = -jd[i] * qd[i] - _mv(s_i.T, art_p[i])
        i_a = art_i[i] - _mm(_mm(u_i, dinv), u_i.T)
        p_a = art_p[i] + _mv(i_a, bias[i]) + _mv(u_i, _mv(dinv, u_v))
        art_i[a] = art_i[a] + i_a
        art_p[a] = art_p[a] + p_a
        u_mat[i], d_inv[i], u_vec[i] = u_i, dinv, u_v
    # ---- pass 3: accelerations, root to leaves
    u0 = _mm(art_i[0], s0)
    d0 = _mm(s0.T, u0)
    rhs0 = -_mv(s0.T, art_p[0] + _mv(art_i[0], bias[0]))
    qdd0 = _solve_spd6(d0, rhs0) if len(free) == 6 else jnp.linalg.solve(d0, rhs0)
    acc = [bias[0] + _mv(s0, qdd0)]
    for i in range(1, nb):
        a = parents[i]
        a_i = acc[a] + bias[i]
        qdd = _mv(d_inv[i], u_vec[i] - _mv(u_mat[i].T, a_i))
        acc.append(a_i + _mv(subsp[i], qdd))
    gen = qdd0 if len(free) == 6 else jnp.zeros(6, y.dtype).at[np.array(free)].set(qdd0)
    w_dot = jnp.concatenate([gen[3:]] + [acc[i][:3] for i in range(1, nb)])
    # dR/dt = [w x] R: each column of R crossed by w
    rot_dot = jnp.swapaxes(jnp.cross(w[:, None, :], jnp.swapaxes(rot, 1, 2)), 1, 2)
    return jnp.concatenate([v_p, rot_dot.reshape(9 * nb), gen[:3], w_dot])


def markers(y, theta, static):
    """Lab positions ``[K, 3]`` of the markers, ``o_b + R_b m_k``."""
    parents, body_of_marker = static[0], static[1]
    _, jp, *_, mk = _unpack(theta, static)
    rot, org = _poses(y, jp, parents)
    b = jnp.array(body_of_marker)
    return jnp.sum(rot[b] * mk[:, None, :], axis=2) + org[b]


def _step(y, theta, static, h, substeps):
    """``substeps`` classical RK4 steps, the four stages a loop over one traced right-hand
    side (the articulated-body algorithm is long: tracing and compiling it once instead of
    four times cuts the compile time about fourfold)."""
    for _ in range(substeps):
        y = rk4_looped(lambda yy, _: rhs(yy, theta, static), y, h)
    return y


@disk_jit(static_argnames=("static", "substeps", "n"))
def _chunk(y, theta, h, *, static, substeps, n):
    def body(y, _):
        y = _step(y, theta, static, h, substeps)
        return y, (y, markers(y, theta, static))
    return jax.lax.scan(body, y, None, length=n)[1]


@disk_jit(static_argnames=("static", "substeps", "n"))
def _chunk_tangents(y, tan_y, theta, tan_theta, h, *, static, substeps, n):
    def body(carry, _):
        y, tan_y = carry
        y_next, lin = jax.linearize(lambda yy, tt: _step(yy, tt, static, h, substeps), y,
                                    theta)
        tan_next = jax.vmap(lin, in_axes=(1, 1), out_axes=1)(tan_y, tan_theta)
        mk, lin_m = jax.linearize(lambda yy, tt: markers(yy, tt, static), y_next, theta)
        tan_mk = jax.vmap(lin_m, in_axes=(1, 1), out_axes=2)(tan_next, tan_theta)
        return (y_next, tan_next), (y_next, mk, tan_mk)
    (_, tan_last), out = jax.lax.scan(body, (y, tan_y), None, length=n)
    return out + (tan_last,)


@disk_jit(static_argnames=("static",))
def _markers0(y, tan_y, theta, tan_theta, *, static):
    mk, lin = jax.linearize(lambda yy, tt: markers(yy, tt, static), y, theta)
    return mk, jax.vmap(lin, in_axes=(1, 1), out_axes=2)(tan_y, tan_theta)


def simulate(model: TreeModel, theta: np.ndarray, y0: np.ndarray, n_frames: int, dt: float,
             *, substeps: int = 1, tangent_theta: np.ndarray | None = None,
             tangent_y0: np.ndarray | None = None, consume=None):
    """States ``[T, n_state]``, markers ``[T, K, 3]`` and, with tangents, the markers'
    exact derivatives ``[T, K, 3, P]`` along them (``tangent_theta [n_theta, P]``,
    ``tangent_y0 [n_state, P]``).

    ``consume(k0, states, markers, d_markers)``, when given, receives the frames chunk by
    chunk instead (rigtool.engine.tree_compiled.simulate_compiled; memory bounded by one
    chunk whatever the capture's length) and None is returned.

    Run by the compiled forward-mode kernels of rigtool.engine.tree_tangents (the same
    equations as :func:`rhs` and :func:`markers`, the same RK4; 4-7x faster than
    :func:`simulate_jax` with tangents, benchmarks/RESULTS.md).

    Raises FloatingPointError when the motion leaves the model.
    """
    return simulate_compiled(model, theta, y0, n_frames, dt, substeps, tangent_theta,
                             tangent_y0, consume)


def simulate_jax(model: TreeModel, theta: np.ndarray, y0: np.ndarray, n_frames: int,
                 dt: float, *, substeps: int = 1, tangent_theta: np.ndarray | None = None,
                 tangent_y0: np.ndarray | None = None):
    """:func:`simulate` by JAX: :func:`rhs` and :func:`markers` traced and compiled, the
    tangents by ``jax.linearize`` (forward mode). The compiled kernels' independent check
    (tests compare the two to round-off)."""
    static = model.static()
    n_s = model.n_state
    k_n = len(model.body_of_marker)
    states = np.empty((n_frames, n_s))
    mks = np.empty((n_frames, k_n, 3))
    states[0] = y0
    y = jnp.asarray(y0, float)
    th = jnp.asarray(theta, float)
    with_tan = tangent_theta is not None or tangent_y0 is not None
    if not with_tan:
        m0, _ = _markers0(y, jnp.zeros((n_s, 1)), th, jnp.zeros((theta.size, 1)), static=static)
        mks[0] = np.asarray(m0)
        k = 1
        while k < n_frames:
            m = min(CHUNK_FRAMES, n_frames - k)
            ys, ms = _chunk(y, th, dt / substeps, static=static, substeps=substeps,
                            n=CHUNK_FRAMES)
            ys_np = np.asarray(ys)
            if not np.all(np.isfinite(ys_np[m - 1])):
                raise FloatingPointError("the simulated motion diverged")
            states[k:k + m] = ys_np[:m]
            mks[k:k + m] = np.asarray(ms)[:m]
            y = ys[CHUNK_FRAMES - 1]
            k += m
        return states, mks, None
    p, t_th, t_y = tangent_start(theta.size, n_s, tangent_theta, tangent_y0)
    d_mks = np.empty((n_frames, k_n, 3, p))
    groups = column_groups(t_y.shape[1])
    # one column group per thread (rigtool.engine.columns); each integrates the state too
    tans = [jnp.asarray(t_y[:, g]) for g in groups]
    t_ths = [jnp.asarray(t_th[:, g]) for g in groups]
    m0, dm0 = _markers0(y, jnp.asarray(t_y), th, jnp.asarray(t_th), static=static)
    mks[0], d_mks[0] = np.asarray(m0), np.asarray(dm0)[..., :p]
    with ColumnRunner(groups) as runner:
        k = 1
        while k < n_frames:
            m = min(CHUNK_FRAMES, n_frames - k)
            outs = runner.map(lambda i: _chunk_tangents(
                y, tans[i], th, t_ths[i], dt / substeps, static=static, substeps=substeps,
                n=CHUNK_FRAMES))
            ys, ms = outs[0][0], outs[0][1]
            ys_np = np.asarray(ys)
            if not np.all(np.isfinite(ys_np[m - 1])):
                raise FloatingPointError("the simulated motion diverged")
            states[k:k + m] = ys_np[:m]
            mks[k:k + m] = np.asarray(ms)[:m]
            for g, out in zip(groups, outs):
                cols = range(g.start, min(g.stop, p))
                if len(cols):
                    d_mks[k:k + m, ..., cols.start:cols.stop] = \
                        np.asarray(out[2])[:m, ..., :len(cols)]
            tans = [out[3] for out in outs]
            y = ys[CHUNK_FRAMES - 1]
            k += m
    return states, mks, d_mks


def energy(model: TreeModel, theta: np.ndarray, states: np.ndarray) -> np.ndarray:
    """Kinetic + gravity + spring energy ``[T]`` (J) of states ``[T, n_state]`` (for the
    conservation tests: with every damping zero it is constant)."""
    static = model.static()

    def one(y):
        parents, _, _, anchor, att, g = static
        nb = len(parents)
        pi, jp, _, k, kl0, _, _ = _unpack(jnp.asarray(theta), static)
        rot, org = _poses(y, jp, parents)
        w = y[3 + 9 * nb + 3:].reshape(nb, 3)
        v_p = y[3 + 9 * nb:3 + 9 * nb + 3]
        # body origins' velocities along the tree
        vel = [v_p]
        for i in range(1, nb):
            a = parents[i]
            vel.append(vel[a] + jnp.cross(w[a], rot[a] @ jp[i]))
        kin, pot = 0.0, 0.0
        for b in range(nb):
            m, h = pi[b, 0], rot[b] @ pi[b, 1:4]
            six = pi[b, 4:]
            i_body = jnp.array([[six[0], six[1], six[2]], [six[1], six[3], six[4]],
                                [six[2], six[4], six[5]]])
            i_o = rot[b] @ i_body @ rot[b].T
            kin += (0.5 * m * vel[b] @ vel[b] + vel[b] @ jnp.cross(w[b], h)
                    + 0.5 * w[b] @ i_o @ w[b])
            pot -= (m * org[b] + h) @ jnp.array(g)
        d = jnp.array(att) @ rot[0].T + y[0:3] - jnp.array(anchor)
        length = jnp.sqrt(jnp.sum(d * d, axis=1))
        pot += 0.5 * jnp.sum(k * (length - kl0 / k) ** 2)
        return kin + pot

    return np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(states)))


__all__ = ["TreeModel", "theta_of", "rhs", "markers", "simulate", "simulate_jax", "energy"]
