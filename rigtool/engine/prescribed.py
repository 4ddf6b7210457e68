"""The platform on springs carrying links whose motion relative to it is prescribed (the
links moved by muscles): dynamics, RK4 and exact sensitivities.

A person moves a limb with joint torques nobody measures. Those torques are internal to the
object: the platform-plus-object system's equations (springs, gravity, inertia) do not
contain them. Given each moving link's rotation relative to the platform and its joint
centre's position in the platform frame as functions of time (from the link's markers),
only the platform's six degrees of freedom are simulated. The links' accelerations are
affine in the platform's, so the equations stay a 6x6 rigid-body system whose first moment
and inertia about the platform origin change with time, plus a bias wrench::

    [m 1    -[c x]] [a_o  ]   [F_springs - F_bias]
    [[c x]   I_o  ] [alpha] = [N_springs - N_bias]

with ``m``, ``c``, ``I_o`` summed over the rigid part (platform and base link, ``pi_0``)
and every moving link ``j`` at its current pose: ``r_j = R_p d_j``, ``h_j = R_p Q_j h_j^b``,
``c_j = m_j r_j + h_j``, ``I_j^o = I_j - m_j [r_j x]^2 - [r_j x][h_j x] - [h_j x][r_j x]``
(``I_j`` about the link's origin, lab axes). The bias is each body's Newton-Euler wrench at
zero platform acceleration: for link ``j`` with ``w_j = w + R_p w_j^P``,
``a_0 = w x (w x r_j) + 2 w x (R_p d'_j) + R_p d''_j - g`` and
``alpha_0 = w x (R_p w_j^P) + R_p alpha_j^P``::

    f_0 = m_j a_0 + alpha_0 x h_j + w_j x (w_j x h_j)
    n_0 = h_j x a_0 + I_j alpha_0 + w_j x (I_j w_j) + r_j x f_0     (about the platform origin)

State ``y [18]`` as :mod:`rigtool.engine.rigid` (platform pose, velocity, lab).
Parameters ``theta = [pi_0 (10), pi_1 .. pi_{L} (10 each, link axes about the joint),
o_1 .. o_L (3 each), k (S), k L0 (S), c (S)]`` with ``o_j`` the platform-frame position of
the joint where link ``j``'s chain leaves the base link (it moves with the fitted base pose;
the inputs' ``d`` are relative to it). Inputs per time ``u [L, 24] = [Q (9, row-major: link -> platform
axes), w^P, alpha^P, d, d', d'' (3 each, platform axes)]``, sampled on the RK4 grid (every
half step). The forward-mode derivative through the RK4 map is exact (jax.linearize).
"""

from __future__ import annotations


import numpy as np

from rigtool.engine._jax import jax, jnp
from rigtool.engine.columns import ColumnRunner, column_groups
from rigtool.engine.compiled import disk_jit
from rigtool.engine.rigid import (CHUNK_FRAMES, STATE, RigidModel, _mm, _mv, _skew, _solve3,
                                  rk4_looped, rk4_written, spring_wrench, tangent_start)

INPUTS = 24
#: up to this many moving links the RK4 stages are written out in the compiled step
UNROLLED_LINKS = 6


def _inertia(pi):
    return jnp.array([[pi[4], pi[5], pi[6]], [pi[5], pi[7], pi[8]], [pi[6], pi[8], pi[9]]])


def rhs(y, theta, consts, u, n_links: int):
    """``dy/dt`` with the moving links' prescribed motion ``u [L, 24]`` at this instant."""
    _, _, g = consts
    rot, w = y[3:12].reshape(3, 3), y[15:18]
    w_dot_r = jnp.cross(w[None, :], rot.T).T.reshape(9)
    force, moment = spring_wrench(y, _spring_theta(theta, n_links), consts)
    pi0 = theta[:10]
    m = pi0[0]
    c = _mv(rot, pi0[1:4])
    i_o = _mm(_mm(rot, _inertia(pi0)), rot.T)
    f_b = -m * g + jnp.cross(w, jnp.cross(w, c))
    n_b = -jnp.cross(c, g) + jnp.cross(w, _mv(i_o, w))
    for j in range(n_links):
        pj = theta[10 * (j + 1):10 * (j + 2)]
        uj = u[j]
        q = uj[0:9].reshape(3, 3)
        w_rel, a_rel = _mv(rot, uj[9:12]), _mv(rot, uj[12:15])
        o_j = theta[10 * (n_links + 1) + 3 * j:10 * (n_links + 1) + 3 * j + 3]
        r = _mv(rot, uj[15:18] + o_j)
        r_d, r_dd = _mv(rot, uj[18:21]), _mv(rot, uj[21:24])
        rq = _mm(rot, q)
        mj = pj[0]
        h = _mv(rq, pj[1:4])
        i_j = _mm(_mm(rq, _inertia(pj)), rq.T)
        w_j = w + w_rel
        a0 = jnp.cross(w, jnp.cross(w, r)) + 2.0 * jnp.cross(w, r_d) + r_dd - g
        al0 = jnp.cross(w, w_rel) + a_rel
        f0 = mj * a0 + jnp.cross(al0, h) + jnp.cross(w_j, jnp.cross(w_j, h))
        n0 = (jnp.cross(h, a0) + _mv(i_j, al0) + jnp.cross(w_j, _mv(i_j, w_j))
              + jnp.cross(r, f0))
        f_b, n_b = f_b + f0, n_b + n0
        sr, sh = _skew(r), _skew(h)
        i_o = i_o + i_j - mj * _mm(sr, sr) - _mm(sr, sh) - _mm(sh, sr)
        c = c + mj * r + h
        m = m + mj
    f_net, n_net = force - f_b, moment - n_b
    # [m, -[c x]; [c x], I_o] [a; alpha] = [f; n] about the COM: I_c alpha = n - c x f / m
    sc = _skew(c)
    i_c = i_o + _mm(sc, sc) / m
    alpha = _solve3(i_c, n_net - jnp.cross(c, f_net) / m)
    acc = (f_net + jnp.cross(c, alpha)) / m
    return jnp.concatenate([y[12:15], w_dot_r, acc, alpha])


def _spring_theta(theta, n_links: int):
    """The rigid engine's parameter layout ``[pi (10), k, k L0, c]`` for the spring wrench."""
    return jnp.concatenate([theta[:10], theta[13 * n_links + 10:]])


#: which of an RK4 step's three input samples (start, middle, end) each stage sees
_STAGE_U = np.array([0, 1, 1, 2])


def _frame(y, theta, consts, uf, n_links, h, substeps, unrolled):
    """One frame: ``substeps`` RK4 steps; ``uf [2 substeps + 1, L, 24]``.

    ``unrolled``: the steps and stages written out (by default up to :data:`UNROLLED_LINKS`
    links: :func:`simulate`), else loops over one traced right-hand side
    (:func:`rigtool.engine.rigid.rk4_looped`, as rigtool.engine.tree's). Measured
    (forward tangents, ms per frame, loops / written out): 1 link 0.69 / 0.42, 4 links 2.33
    / 1.64, 13 links 5.7 / 5.4; at 13 links written out the tangent chunk took 41 s to
    compile, and 11.8 s and 2.0 GiB to load from the cache against 5.1 s and 1.0 GiB.
    """
    def stage_rhs(yy, u):
        return rhs(yy, theta, consts, u, n_links)

    if unrolled:
        for s in range(substeps):
            u3 = uf[2 * s:2 * s + 3]
            y = rk4_written(stage_rhs, y, h, tuple(u3[i] for i in _STAGE_U))
        return y

    def step(y, k_step):
        u3 = jax.lax.dynamic_slice_in_dim(uf, 2 * k_step, 3)
        return rk4_looped(stage_rhs, y, h, u3[jnp.asarray(_STAGE_U)]), None
    return jax.lax.scan(step, y, jnp.arange(substeps))[0]


@disk_jit(static_argnames=("n_links", "substeps", "unrolled"))
def _chunk(y, theta, consts, us, h, *, n_links, substeps, unrolled):
    def body(y, uf):
        y = _frame(y, theta, consts, uf, n_links, h, substeps, unrolled)
        return y, y
    return jax.lax.scan(body, y, us)[1]


@disk_jit(static_argnames=("n_links", "substeps", "unrolled"))
def _chunk_tangents(y, tan_y, theta, tan_theta, consts, us, h, *, n_links, substeps,
                    unrolled):
    def body(carry, uf):
        y, tan_y = carry
        y_next, lin = jax.linearize(
            lambda yy, tt: _frame(yy, tt, consts, uf, n_links, h, substeps, unrolled), y, theta)
        tan_next = jax.vmap(lin, in_axes=(1, 1), out_axes=1)(tan_y, tan_theta)
        return (y_next, tan_next), (y_next, tan_next)
    return jax.lax.scan(body, (y, tan_y), us)[1]


def frame_inputs(u_grid: np.ndarray, substeps: int) -> np.ndarray:
    """``[T - 1, 2 substeps + 1, L, 24]`` per-frame inputs from ``u_grid [2 substeps (T-1) +
    1, L, 24]`` sampled every half RK4 step (neighbouring frames share their end sample)."""
    per = 2 * substeps
    n_steps = (u_grid.shape[0] - 1) // per
    idx = np.arange(n_steps)[:, None] * per + np.arange(per + 1)[None, :]
    return u_grid[idx]


def simulate(model: RigidModel, theta: np.ndarray, y0: np.ndarray, u_grid: np.ndarray,
             dt: float, *, substeps: int = 1, tangent_theta: np.ndarray | None = None,
             tangent_y0: np.ndarray | None = None, unrolled: bool | None = None):
    """States at ``t = k dt`` and, with tangents, their exact derivatives along them.

    Parameters
    ----------
    model : RigidModel
        Springs and gravity (every DOF free: prescribed links need the full rigid body).
    theta : ndarray [10 + 13 L + 3S]
    y0 : ndarray [18]
    u_grid : ndarray [2 substeps (T - 1) + 1, L, 24]
        The moving links' motion relative to the platform every half RK4 step.
    dt : float
        Frame interval, s.
    substeps : int
    tangent_theta, tangent_y0 : ndarray [theta.size, P], [18, P], optional
    unrolled : bool, optional
        RK4 stages written out in the compiled step (default: up to :data:`UNROLLED_LINKS`
        links) or looped over one traced right-hand side; the same map either way.

    Returns
    -------
    states : ndarray [T, 18]
    tangents : ndarray [T, 18, P] or None

    Raises
    ------
    FloatingPointError
        When the motion leaves the model (non-finite state).
    """
    if len(model.free_rows) != 6:
        raise ValueError("the prescribed-motion model needs every platform DOF free")
    n_links = u_grid.shape[1]
    unrolled = n_links <= UNROLLED_LINKS if unrolled is None else bool(unrolled)
    us_all = frame_inputs(np.asarray(u_grid, float), substeps)
    n_frames = us_all.shape[0] + 1
    consts = model.consts()
    states = np.empty((n_frames, STATE))
    states[0] = y0
    y = jnp.asarray(y0, float)
    theta_j = jnp.asarray(theta, float)
    with_tan = tangent_theta is not None or tangent_y0 is not None
    tangents = None
    if with_tan:
        p, t_th, t_y = tangent_start(theta.size, STATE, tangent_theta, tangent_y0)
        tangents = np.empty((n_frames, STATE, p))
        tangents[0] = t_y[:, :p]
        groups = column_groups(t_y.shape[1])
        # one column group per thread (rigtool.engine.columns); each integrates the state
        tans = [jnp.asarray(t_y[:, g]) for g in groups]
        t_ths = [jnp.asarray(t_th[:, g]) for g in groups]
    else:
        groups = [slice(0, 0)]
    h = dt / substeps
    with ColumnRunner(groups) as runner:
        k = 1
        while k < n_frames:
            m = min(CHUNK_FRAMES, n_frames - k)
            us = us_all[k - 1:k - 1 + m]
            if m < CHUNK_FRAMES:            # pad (one compilation for every length)
                us = np.concatenate([us, np.repeat(us[-1:], CHUNK_FRAMES - m, 0)])
            us = jnp.asarray(us)
            if with_tan:
                outs = runner.map(lambda i: _chunk_tangents(
                    y, tans[i], theta_j, t_ths[i], consts, us, h, n_links=n_links,
                    substeps=substeps, unrolled=unrolled))
                ys = outs[0][0]
            else:
                ys = _chunk(y, theta_j, consts, us, h, n_links=n_links, substeps=substeps,
                            unrolled=unrolled)
            ys_np = np.asarray(ys)
            if not np.all(np.isfinite(ys_np[m - 1])):
                raise FloatingPointError("the simulated motion diverged")
            states[k:k + m] = ys_np[:m]
            y = ys[m - 1]
            if with_tan:
                for g, out in zip(groups, outs):
                    cols = range(g.start, min(g.stop, p))
                    if len(cols):
                        tangents[k:k + m, :, cols.start:cols.stop] = \
                            np.asarray(out[1])[:m, :, :len(cols)]
                tans = [out[1][m - 1] for out in outs]
            k += m
    return states, tangents


__all__ = ["INPUTS", "rhs", "simulate", "frame_inputs"]
