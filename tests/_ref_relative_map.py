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


class _Holder:
    def __init__(self, prob):
        self.__dict__.update({k: getattr(prob, k) for k in (
            "n", "n_theta", "n_damp", "fit_base", "free", "parents", "r_pb", "t_pb",
            "joint_centres", "markers_body", "on_base", "rot_ref", "mass_kg", "rig")})

    def _make_map(self):
        n, n_th, n_d = self.n, self.n_theta, self.n_damp
        fit_base, free = self.fit_base, self.free
        parents = list(self.parents)
        g_mat, h_mat = (jnp.asarray(a) for a in phi_b_affine(n))
        r_pb0, t_pb0 = jnp.asarray(self.r_pb, float), jnp.asarray(self.t_pb, float)
        centres = jnp.asarray(self.joint_centres, float)
        mk0 = jnp.asarray(self.markers_body, float)
        on_base = jnp.asarray(self.on_base, bool)
        rot_ref = jnp.asarray(self.rot_ref, float)
        mass = float(self.mass_kg)
        s_n = len(self.rig.springs)

        def fmap(x, phi_s, calib):
            theta = x[:n_th]
            damp = x[n_th:n_th + n_d]
            i = n_th + n_d
            if fit_base:
                base, i = x[i:i + 6], i + 6
                rot_b = jax.scipy.linalg.expm(_skew(base[3:6])) @ r_pb0
                t_b = t_pb0 + base[:3]
            else:
                rot_b, t_b = r_pb0, t_pb0
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
    fmap = _Holder(prob)._make_map()
    return jax.jit(fmap), jax.jit(jax.jacfwd(fmap, argnums=(0, 1, 2)))


class _ActiveHolder:
    def __init__(self, prob):
        self.__dict__.update({k: getattr(prob, k) for k in (
            "n", "n_theta", "free", "fit_base", "r_pb", "t_pb", "joint_centres", "roots",
            "markers_body", "on_base", "rot_ref", "mass_kg", "rig")})

    def _make_map(self):
        n, n_th, free, fit_base = self.n, self.n_theta, self.free, self.fit_base
        g_mat, h_mat = (jnp.asarray(a) for a in phi_b_affine(n))
        r_pb0, t_pb0 = jnp.asarray(self.r_pb, float), jnp.asarray(self.t_pb, float)
        centres = jnp.asarray(self.joint_centres, float)
        roots = list(self.roots)
        mk0 = jnp.asarray(self.markers_body, float)
        on_base = jnp.asarray(self.on_base, bool)
        rot_ref = jnp.asarray(self.rot_ref, float)
        mass = float(self.mass_kg)
        s_n = len(self.rig.springs)

        def fmap(x, phi_s, calib):
            theta = x[:n_th]
            i = n_th
            if fit_base:
                base, i = x[i:i + 6], i + 6
                rot_b = jax.scipy.linalg.expm(_skew(base[3:6])) @ r_pb0
                t_b = t_pb0 + base[:3]
            else:
                rot_b, t_b = r_pb0, t_pb0
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
    fmap = _ActiveHolder(prob)._make_map()
    return jax.jit(fmap), jax.jit(jax.jacfwd(fmap, argnums=(0, 1, 2)))
