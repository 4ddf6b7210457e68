"""Reference for rigtool.identify.relative.input_map: the relative-motion fits' input maps
(passive and active models) as they were written in JAX (differentiated by ``jax.jacfwd``), kept here as the independent check
of the NumPy map and its complex-step Jacobian."""

from __future__ import annotations

from rigtool.engine._jax import jax, jnp
from rigtool.engine.rigid import _skew
from rigtool.identify.relative.bounds import phi_b_affine


def _transform(pi, rot, t):
    """``pi`` (body frame about its origin) in a frame where ``x = R x_b + t`` (pseudo-inertia
    congruence, as rigtool.inertia.transform_params)."""
    m, h = pi[0], pi[1:4]
    i_b = jnp.array([[pi[4], pi[5], pi[6]], [pi[5], pi[7], pi[8]], [pi[6], pi[8], pi[9]]])
    sigma = 0.5 * jnp.trace(i_b) * jnp.eye(3) - i_b
    tm = jnp.eye(4).at[:3, :3].set(rot).at[:3, 3].set(t)
    pseudo = jnp.block([[sigma, h[:, None]], [h[None, :], m[None, None]]])
    out = tm @ pseudo @ tm.T
    s2 = out[:3, :3]
    i_f = jnp.trace(s2) * jnp.eye(3) - s2
    return jnp.concatenate([out[3, 3][None], out[:3, 3],
                            jnp.stack([i_f[0, 0], i_f[0, 1], i_f[0, 2], i_f[1, 1], i_f[1, 2],
                                       i_f[2, 2]])])


def object_bodies(phi_b, mass_kg: float, platform_pi, rot_b, t_b, n: int):
    """JAX: the minimal parameters as bodies ``[n, 10]``: body 0 the platform plus the base
    link (platform frame, the whole mass M0), each moving link ``[0, MS, J]`` about its joint
    in its own frame (its mass lumped at the joint, on the parent: the same dynamics)."""
    per = phi_b.reshape(n, 9)
    links = jnp.concatenate(
        [jnp.zeros((n, 1)), per[:, :3],
         jnp.stack([per[:, 3], per[:, 8], per[:, 7], per[:, 4], per[:, 6], per[:, 5]], 1)], 1)
    body0 = platform_pi + _transform(links[0].at[0].set(mass_kg), rot_b, t_b)
    return jnp.concatenate([body0[None], links[1:]], 0)


def _base_pose(x, i, fit_base, r_pb0, t_pb0):
    """The base pose at unknowns ``x[i:i+6]`` (when fitted) and the index after it."""
    if fit_base:
        base = x[i:i + 6]
        return jax.scipy.linalg.expm(_skew(base[3:6])) @ r_pb0, t_pb0 + base[:3], i + 6
    return r_pb0, t_pb0, i


def _passive_fmap(prob):
    """The passive model's map, ``prob`` a RelativeProblem (or its attributes)."""
    n, n_th, n_d = prob.n, prob.n_theta, prob.n_damp
    fit_base, free = prob.fit_base, prob.free
    parents = list(prob.parents)
    g_mat, h_mat = (jnp.asarray(a) for a in phi_b_affine(n))
    r_pb0, t_pb0 = jnp.asarray(prob.r_pb, float), jnp.asarray(prob.t_pb, float)
    centres = jnp.asarray(prob.joint_centres, float)
    mk0 = jnp.asarray(prob.markers_body, float)
    on_base = jnp.asarray(prob.on_base, bool)
    rot_ref = jnp.asarray(prob.rot_ref, float)
    mass = float(prob.mass_kg)
    s_n = len(prob.rig.springs)

    def fmap(x, phi_s, calib):
        theta = x[:n_th]
        damp = x[n_th:n_th + n_d]
        rot_b, t_b, i = _base_pose(x, n_th + n_d, fit_base, r_pb0, t_pb0)
        st = x[i:]
        phi_b = theta if free == "phi_b" else g_mat @ phi_s + h_mat @ theta
        pis = object_bodies(phi_b, mass, calib[:10], rot_b, t_b, n)
        jp = [jnp.zeros(3)]
        for j in range(1, n):
            jp.append(rot_b @ centres[j] + t_b if parents[j] == 0 else centres[j])
        jd = jnp.concatenate([jnp.zeros(1), jnp.broadcast_to(damp, (n - 1,))])
        k, l0, c = calib[10:10 + s_n], calib[10 + s_n:10 + 2 * s_n], calib[10 + 2 * s_n:]
        mk = jnp.where(on_base[:, None], mk0 @ rot_b.T + t_b, mk0)
        theta_e = jnp.concatenate([pis.ravel(), jnp.stack(jp).ravel(), jd, k, k * l0, c,
                                   mk.ravel()])
        rv = st[3:3 + 3 * n].reshape(n, 3)
        rots = jnp.stack([jax.scipy.linalg.expm(_skew(rv[b])) @ rot_ref[b]
                          for b in range(n)])
        y0 = jnp.concatenate([st[:3], rots.ravel(), st[3 + 3 * n:]])
        return theta_e, y0

    return fmap


def jax_map(prob):
    """``(map, jacobian)`` of a RelativeProblem as JAX computed them: ``map(x, phi_s, calib)
    -> (theta_e, y0)``, ``jacobian`` its ``jacfwd`` in the three arguments."""
    fmap = _passive_fmap(prob)
    return jax.jit(fmap), jax.jit(jax.jacfwd(fmap, argnums=(0, 1, 2)))


def _active_fmap(prob):
    """The active model's map, ``prob`` an ActiveProblem (or its attributes)."""
    n, n_th, free, fit_base = prob.n, prob.n_theta, prob.free, prob.fit_base
    g_mat, h_mat = (jnp.asarray(a) for a in phi_b_affine(n))
    r_pb0, t_pb0 = jnp.asarray(prob.r_pb, float), jnp.asarray(prob.t_pb, float)
    centres = jnp.asarray(prob.joint_centres, float)
    roots = list(prob.roots)
    mk0 = jnp.asarray(prob.markers_body, float)
    on_base = jnp.asarray(prob.on_base, bool)
    rot_ref = jnp.asarray(prob.rot_ref, float)
    mass = float(prob.mass_kg)
    s_n = len(prob.rig.springs)

    def fmap(x, phi_s, calib):
        theta = x[:n_th]
        rot_b, t_b, i = _base_pose(x, n_th, fit_base, r_pb0, t_pb0)
        st = x[i:]
        phi_b = theta if free == "phi_b" else g_mat @ phi_s + h_mat @ theta
        pis = object_bodies(phi_b, mass, calib[:10], rot_b, t_b, n)
        offsets = jnp.stack([rot_b @ centres[r] + t_b for r in roots])
        k, l0, c = calib[10:10 + s_n], calib[10 + s_n:10 + 2 * s_n], calib[10 + 2 * s_n:]
        theta_e = jnp.concatenate([pis.ravel(), offsets.ravel(), k, k * l0,
                                   c])
        mk = jnp.where(on_base[:, None], mk0 @ rot_b.T + t_b, mk0)
        rot0 = jax.scipy.linalg.expm(_skew(st[3:6])) @ rot_ref
        y0 = jnp.concatenate([st[:3], rot0.ravel(), st[6:9], st[9:12]])
        return theta_e, y0, mk

    return fmap


def jax_active_map(prob):
    """``(map, jacobian)`` of an ActiveProblem as JAX computed them: ``map(x, phi_s, calib)
    -> (theta_e, y0, markers)``, ``jacobian`` its ``jacfwd`` in the three arguments."""
    fmap = _active_fmap(prob)
    return jax.jit(fmap), jax.jit(jax.jacfwd(fmap, argnums=(0, 1, 2)))
