"""The platform with a locked load whose first moment moves inside it (a breathing person):
dynamics, RK4 and exact sensitivities.

As :mod:`rigtool.engine.rigid` (state ``y [18]``, lab frame, all six DOFs free or some
locked), with the load's first moment about the platform origin ``h(t) = h0 + G u(t)``
(platform axes), its inertia about the platform origin ``I(t) = I0 + sum_j u_j D_j`` and
its internal angular momentum ``K u'(t)`` driven by a prescribed input ``u(t) [k]`` (the
measured breath, rigtool.kinematics.breath_motion). With ``c = R (h0 + G u)``, ``I_o = R
I(t) R^T``, ``I_o' = R (sum_j u_j' D_j) R^T`` (the part of its rate that is not the
rotation's) and ``g`` gravity::

    [m 1    -[c x]] [a_o  ]   [F + m g - w x (w x c) - R G u'' - 2 w x R G u'           ]
    [[c x]   I_o  ] [alpha] = [N + c x g - w x (I_o w) - I_o' w - R K u'' - w x R K u'  ]

(rigtool.identify.posture.breathing derives the terms). Parameters ``theta = [pi (10), k
(S), k L0 (S), c (S), G (3k, column by column), K (3k), D (6k, each xx xy xz yy yz zz)]``;
inputs ``[u, u', u''] (3k)`` sampled every half RK4 step. With ``G = K = D = 0`` this is
the rigid engine's model.
"""

from __future__ import annotations

import numpy as np

from rigtool.engine._jax import jax, jnp
from rigtool.engine.compiled import committed, disk_jit
from rigtool.engine.rigid import (CHUNK_FRAMES, PAD_COLUMNS, STATE, RigidModel, _mv, _skew,
                                  _solve3, rk4_written, spring_wrench, tangent_start)

__all__ = ["rhs", "simulate", "simulate_inputs", "input_grid"]


def rhs(y, theta, consts, uin, free: tuple[int, ...], n_u: int):
    """``dy/dt`` with the breath ``uin = [u, u', u''] (3 n_u)`` at this instant."""
    anchor, _, g = consts
    s_n = anchor.shape[0]
    n0 = 10 + 3 * s_n
    pi = theta[:10]
    gm = theta[n0:n0 + 3 * n_u].reshape(n_u, 3).T          # [3, k]
    km = theta[n0 + 3 * n_u:n0 + 6 * n_u].reshape(n_u, 3).T
    dm = theta[n0 + 6 * n_u:n0 + 12 * n_u].reshape(n_u, 6)        # [k, 6]
    u, u_d, u_dd = uin[:n_u], uin[n_u:2 * n_u], uin[2 * n_u:]
    rot, v, w = y[3:12].reshape(3, 3), y[12:15], y[15:18]
    m = pi[0]
    i6 = pi[4:10] + jnp.sum(dm * u[:, None], axis=0)
    i_body = jnp.array([[i6[0], i6[1], i6[2]], [i6[1], i6[3], i6[4]], [i6[2], i6[4], i6[5]]])
    d6 = jnp.sum(dm * u_d[:, None], axis=0)
    i_rate = jnp.array([[d6[0], d6[1], d6[2]], [d6[1], d6[3], d6[4]], [d6[2], d6[4], d6[5]]])
    force, moment = spring_wrench(y, theta[:n0], consts)
    w_dot_r = jnp.cross(w[None, :], rot.T).T.reshape(9)
    c = _mv(rot, pi[1:4] + _mv(gm, u))
    i_o = jnp.sum(rot[:, :, None] * jnp.sum(i_body[:, :, None] * rot.T[None, :, :], axis=1)
                  [None, :, :], axis=1)
    f_net = (force + m * g - jnp.cross(w, jnp.cross(w, c)) - _mv(rot, _mv(gm, u_dd))
             - 2.0 * jnp.cross(w, _mv(rot, _mv(gm, u_d))))
    w_b = _mv(rot.T, w)
    n_net = (moment + jnp.cross(c, g) - jnp.cross(w, _mv(i_o, w)) - _mv(rot, _mv(km, u_dd))
             - jnp.cross(w, _mv(rot, _mv(km, u_d))) - _mv(rot, _mv(i_rate, w_b)))
    if len(free) == 6:
        # about the COM: I_c alpha = n - c x f / m, a = (f + c x alpha) / m (closed form)
        sc = _skew(c)
        i_c = i_o + jnp.sum(sc[:, :, None] * sc[None, :, :], axis=1) / m
        alpha = _solve3(i_c, n_net - jnp.cross(c, f_net) / m)
        acc = (f_net + jnp.cross(c, alpha)) / m
        return jnp.concatenate([v, w_dot_r, acc, alpha])
    sc = _skew(c)
    lam = jnp.block([[m * jnp.eye(3), -sc], [sc, i_o]])
    b = jnp.concatenate([f_net, n_net])
    idx = jnp.array(free)
    acc = jnp.zeros(6, b.dtype).at[idx].set(jnp.linalg.solve(lam[jnp.ix_(idx, idx)], b[idx]))
    return jnp.concatenate([v, w_dot_r, acc[:3], acc[3:]])


#: which of an RK4 step's three input samples (start, middle, end) each stage sees
_STAGE_U = (0, 1, 1, 2)


def _frame(y, theta, consts, uf, free, n_u, h, substeps):
    """One frame: ``substeps`` RK4 steps; ``uf [2 substeps + 1, 3 n_u]``."""
    for s in range(substeps):
        u3 = uf[2 * s:2 * s + 3]
        y = rk4_written(lambda yy, x: rhs(yy, theta, consts, x, free, n_u), y, h,
                        tuple(u3[i] for i in _STAGE_U))
    return y


@disk_jit(static_argnames=("free", "n_u", "substeps"))
def _chunk(y, theta, consts, us, h, *, free, n_u, substeps):
    def body(y, uf):
        y = _frame(y, theta, consts, uf, free, n_u, h, substeps)
        return y, y
    last, ys = jax.lax.scan(body, y, us)
    return ys, last


@disk_jit(static_argnames=("free", "n_u", "substeps"))
def _chunk_inputs(y, theta, consts, us, h, *, free, n_u, substeps):
    """:func:`_chunk` for a batch of inputs ``us [B, m, 2 substeps + 1, 3 n_u]`` from the
    states ``y [B, 18]`` (one scan over the frames, the batch mapped within each step)."""
    def body(y, uf):
        y = jax.vmap(lambda yy, ff: _frame(yy, theta, consts, ff, free, n_u, h, substeps))(
            y, uf)
        return y, y
    last, ys = jax.lax.scan(body, y, jnp.swapaxes(us, 0, 1))
    return jnp.swapaxes(ys, 0, 1), last


@disk_jit(static_argnames=("free", "n_u", "substeps"))
def _chunk_tangents(y, tan_y, theta, tan_theta, consts, us, h, *, free, n_u, substeps):
    def body(carry, uf):
        y, tan_y = carry
        y_next, lin = jax.linearize(
            lambda yy, tt: _frame(yy, tt, consts, uf, free, n_u, h, substeps), y, theta)
        tan_next = jax.vmap(lin, in_axes=(1, 1), out_axes=1)(tan_y, tan_theta)
        return (y_next, tan_next), (y_next, tan_next)
    (last, tan_last), (ys, tans) = jax.lax.scan(body, (y, tan_y), us)
    return ys, tans, last, tan_last


def input_grid(breath_at, t0_s: float, n_frames: int, dt: float, substeps: int) -> np.ndarray:
    """``[n_frames - 1, 2 substeps + 1, 3k]``: ``[u, u', u'']`` of ``breath_at(t)`` at every
    half RK4 step of each frame (neighbouring frames share their end sample)."""
    per = 2 * substeps
    t = t0_s + dt * np.arange(per * max(n_frames - 1, 0) + 1) / per
    u, u_d, u_dd = breath_at(t)
    grid = np.concatenate([u, u_d, u_dd], axis=-1)
    idx = np.arange(max(n_frames - 1, 0))[:, None] * per + np.arange(per + 1)[None, :]
    return grid[idx]


def simulate(model: RigidModel, theta: np.ndarray, y0: np.ndarray, n_frames: int,
             dt: float, *, inputs: np.ndarray, substeps: int = 1,
             tangent_theta: np.ndarray | None = None, tangent_y0: np.ndarray | None = None,
             consume=None, offset: np.ndarray | None = None):
    """States at ``t = k dt`` and their exact derivatives, as :func:`rigtool.engine.rigid
    .simulate` (same ``consume`` and ``offset``), with the breath's ``inputs``
    (:func:`input_grid` of at least ``n_frames`` frames and these ``substeps``).

    Raises
    ------
    FloatingPointError
        When the motion leaves the model (non-finite state).
    """
    n_u = inputs.shape[-1] // 3
    us_all = np.asarray(inputs[:max(n_frames - 1, 0)], float)
    consts = model.consts()
    states = np.empty((n_frames, STATE))
    states[0] = y0
    y = np.asarray(y0, float)
    theta_j = np.asarray(theta, float)
    h = dt / substeps
    with_tan = tangent_theta is not None or tangent_y0 is not None
    p = 0
    if with_tan:
        p, t_th, t_y = tangent_start(theta.size, STATE, tangent_theta, tangent_y0,
                                     block=PAD_COLUMNS)
        keep = consume is None
        tangents = np.empty((n_frames, STATE, p)) if keep else None
        tan = t_y
        fixed = committed((theta_j, t_th, consts))
    else:
        keep, tangents = True, None
        fixed = committed((theta_j, consts))
    if offset is not None:
        states[0] += offset[0]
    if with_tan:
        if keep:
            tangents[0] = t_y[:, :p]
        else:
            consume(0, states[:1], t_y[None, :, :p])
    def dispatch(k, y, tan):
        """Start the chunk of frames ``k ..``: XLA integrates it while the caller goes on
        (the previous chunk's rows are consumed meanwhile, as the rigid engine does)."""
        m = min(CHUNK_FRAMES, n_frames - k)
        us = us_all[k - 1:k - 1 + m]
        if m < CHUNK_FRAMES:            # pad (one compilation for every length)
            us = np.concatenate([us, np.repeat(us[-1:], CHUNK_FRAMES - m, 0)])
        if with_tan:
            return m, _chunk_tangents(y, tan, fixed[0], fixed[1], fixed[2], us, h,
                                      free=model.free_rows, n_u=n_u, substeps=substeps)
        ys, y_last = _chunk(y, fixed[0], fixed[1], us, h, free=model.free_rows, n_u=n_u,
                            substeps=substeps)
        return m, (ys, None, y_last, None)

    out = dispatch(1, y, tan if with_tan else None) if n_frames > 1 else None
    k = 1
    while k < n_frames:
        m, (ys, ts, y_last, t_last) = out
        ys_np = np.asarray(ys)
        if not np.all(np.isfinite(ys_np[m - 1])):
            raise FloatingPointError("the simulated motion diverged")
        states[k:k + m] = ys_np[:m]
        if offset is not None:
            states[k:k + m] += offset[k:k + m]
        ts_np = np.asarray(ts)[:m, :, :p] if with_tan else None
        if k + m < n_frames:             # m == CHUNK_FRAMES: the next chunk starts now
            out = dispatch(k + m, y_last, t_last)
        if with_tan:
            if keep:
                tangents[k:k + m] = ts_np
            else:
                consume(k, states[k:k + m], ts_np)
        k += m
    return states, tangents


def simulate_inputs(model: RigidModel, theta: np.ndarray, y0: np.ndarray, n_frames: int,
                    dt: float, *, inputs: np.ndarray, substeps: int = 1,
                    offset: np.ndarray | None = None) -> np.ndarray:
    """States ``[B, n_frames, 18]`` of :func:`simulate` (no sensitivities) for a batch of
    inputs ``[B, frames - 1, 2 substeps + 1, 3k]`` at the same ``theta`` and ``y0``: the
    batch integrates in one pass (a breath's noise probes: one primal simulation each took
    ~20 ms of Python and dispatch for 2,000 frames, where the arithmetic is microseconds).

    Raises
    ------
    FloatingPointError
        When a motion leaves the model (non-finite state).
    """
    inputs = np.asarray(inputs, float)
    n_b, n_u = inputs.shape[0], inputs.shape[-1] // 3
    us_all = inputs[:, :max(n_frames - 1, 0)]
    fixed = committed((np.asarray(theta, float), model.consts()))
    h = dt / substeps
    states = np.empty((n_b, n_frames, STATE))
    states[:, 0] = y0
    y = np.repeat(np.asarray(y0, float)[None], n_b, axis=0)
    k = 1
    while k < n_frames:
        m = min(CHUNK_FRAMES, n_frames - k)
        us = us_all[:, k - 1:k - 1 + m]
        if m < CHUNK_FRAMES:            # pad (one compilation for every length)
            us = np.concatenate([us, np.repeat(us[:, -1:], CHUNK_FRAMES - m, 1)], axis=1)
        ys, y = _chunk_inputs(y, fixed[0], fixed[1], us, h, free=model.free_rows, n_u=n_u,
                              substeps=substeps)
        ys_np = np.asarray(ys)
        if not np.all(np.isfinite(ys_np[:, m - 1])):
            raise FloatingPointError("the simulated motion diverged")
        states[:, k:k + m] = ys_np[:, :m]
        y = ys_np[:, m - 1]
        k += m
    if offset is not None:
        states += offset[None, :n_frames]
    return states
