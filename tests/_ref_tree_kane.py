"""Reference model for the tests (was rigtool's relative-motion model before the engine): the platform (with the
base link bolted on) on damped axial springs, and every moving link on a spherical joint
with viscous joint damping.

Written for rigtool.identify.relative.output_error and independent of rigtool.sim (the
simulator is the reference the tests compare this with; the two must not share a hidden
error). As in rigtool.identify._oe_model the many simulations one iteration needs (the
estimate and one finite-difference perturbation per unknown) share the time grid and run as
one batch ``B`` through a hand-written fixed-step RK4: numpy's per-call cost is paid once per
stage for the whole batch, and a fixed grid keeps the response a smooth function of the
parameters for finite differences.

Bodies: 0 is the platform with the base link (platform frame); 1..n-1 are the moving links in
tree order, each with its origin at its joint centre. Parameters of a moving link enter only
through its minimal parameters ``[0, MS_j, J_j]`` (its subtree's mass moved onto its joint,
i.e. onto the parent; a point mass at the joint gives the same wrench whichever body carries
it), and body 0 carries ``[M0, MS_0, J_0]`` of the base plus the platform. That standard
parameter set is exact (it has the true system's kinetic and potential energy for every
state), so the motion depends on the object through ``Phi_B`` and ``M0`` only.

State per batch member, lab components::

    y = [p (3), vec(R_0) .. vec(R_{n-1}) (9 each), v_p (3), omega_0 .. omega_{n-1} (3 each)]

with ``p``/``v_p`` the platform origin and ``omega_b`` the *absolute* angular velocity of
body b (generalised velocities ``nu = [v_p, omega_0, ..]``; with spherical joints the body
rotations are independent, so every ``R_b`` is integrated directly, ``dR/dt = [w x] R``).

Equations of motion by projecting each body's Newton-Euler equations (about its origin, lab
components) on ``nu`` (Kane's method). With the body origin's acceleration
``a_b = J_b nu' + beta_b`` (``beta_b`` the velocity-product part, summed along the joint
chain: ``omega_parent x (omega_parent x lever)``) and, for ``h = R h_body``,
``I = R I_body R^T``::

    Lambda_b = [[m 1, -[h x]], [[h x], I]]
    M = sum_b J_b^T Lambda_b J_b
    Q = sum_b J_b^T [m (g - beta) - w x (w x h) + f_ext;
                     h x (g - beta) - w x (I w) + n_ext] - D nu

``D`` the joint damping (torque ``-c (omega_child - omega_parent)`` on the child, the
opposite on the parent). Springs act on body 0 like rigtool.rig (force
``-(k (L - L0) + c dL/dt) u`` at each attachment).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from _ref_rigid_batch import cross, rk4_samples, spring_arrays
from _ref_rigid_batch import skew_batch as skew
from rigtool.inertia import inertia_matrix, transform_params
from rigtool.rig import Rig


def link_params_from_phi_b(phi_b: np.ndarray) -> np.ndarray:
    """Standard parameters ``[..., n, 10]`` (link frame, about its origin) with zero mass and
    the minimal ``MS``/``J`` of each link, from ``phi_b [..., 9n]``."""
    per = np.asarray(phi_b, float).reshape(phi_b.shape[:-1] + (-1, 9))
    ms, jxx, jyy, jzz, jyz, jzx, jxy = (per[..., :3], per[..., 3], per[..., 4], per[..., 5],
                                        per[..., 6], per[..., 7], per[..., 8])
    zero = np.zeros_like(jxx)
    return np.concatenate([zero[..., None], ms, np.stack([jxx, jxy, jzx, jyy, jyz, jzz], -1)],
                          -1)


@dataclass(frozen=True)
class TreeBatch:
    """``B`` variants of the platform + tree system (``nb`` dynamic bodies).

    Attributes
    ----------
    parent : ndarray [nb]
        Parent body of each body (-1 for body 0).
    joint_parent : ndarray [B, nb, 3]
        Joint centre (body origin) in the parent body's frame, m (zeros for body 0).
    mass, h_body, inertia_body : ndarray [B, nb], [B, nb, 3], [B, nb, 3, 3]
        Standard parameters of each body about its origin, body axes.
    joint_damping : ndarray [B, nb]
        Viscous damping of each body's joint to its parent, N m s/rad (body 0: unused).
    anchor_lab, attachment_body : ndarray [S, 3]
    stiffness, stiffness_free_length, spring_damping : ndarray [B, S]
    gravity_lab : ndarray [3]
    free : ndarray or None
        Free generalised velocities (rows of ``nu``) when platform DOFs are locked.
    """

    parent: np.ndarray
    joint_parent: np.ndarray
    mass: np.ndarray
    h_body: np.ndarray
    inertia_body: np.ndarray
    joint_damping: np.ndarray
    anchor_lab: np.ndarray
    attachment_body: np.ndarray
    stiffness: np.ndarray
    stiffness_free_length: np.ndarray
    spring_damping: np.ndarray
    gravity_lab: np.ndarray
    free: np.ndarray | None = None

    @property
    def n_bodies(self) -> int:
        return int(self.parent.shape[0])

    @property
    def size(self) -> int:
        return int(self.mass.shape[0])

    @property
    def n_state(self) -> int:
        return 6 + 12 * self.n_bodies


def tree_batch(rig: Rig, platform_pi: np.ndarray, parents: list[int],
               joint_centres_parent: np.ndarray, base_rotation_platform: np.ndarray,
               base_position_platform: np.ndarray, total_mass_kg: float,
               phi_b: np.ndarray, joint_damping: np.ndarray, *,
               stiffness: np.ndarray | None = None, free_length: np.ndarray | None = None,
               spring_damping: np.ndarray | None = None) -> TreeBatch:
    """Batch of systems from ``phi_b [B, 9n]`` and ``joint_damping [B, n-1]``.

    ``parents``: tree parent index of each link (-1 for the base); ``joint_centres_parent
    [n, 3]``: each link's joint centre in its parent link's frame (row 0 unused). The base
    pose on the platform is ``[3, 3]``/``[3]`` or per member ``[B, 3, 3]``/``[B, 3]``.
    ``platform_pi [B, 10]`` or ``[10]``; spring arrays ``[B, S]`` or ``[S]`` override the rig's.
    """
    phi_b = np.atleast_2d(np.asarray(phi_b, float))
    b = phi_b.shape[0]
    n = phi_b.shape[1] // 9
    r_pb = np.broadcast_to(np.asarray(base_rotation_platform, float), (b, 3, 3))
    t_pb = np.broadcast_to(np.asarray(base_position_platform, float), (b, 3))
    links = link_params_from_phi_b(phi_b)                               # [B, n, 10]
    base = links[:, 0].copy()
    base[:, 0] = total_mass_kg
    body0 = np.broadcast_to(np.asarray(platform_pi, float), (b, 10)) + np.stack(
        [transform_params(p, r, t) for p, r, t in zip(base, r_pb, t_pb)])
    pis = np.concatenate([body0[:, None], links[:, 1:]], axis=1)        # [B, nb, 10]
    inertia = inertia_matrix(pis[..., 4:])
    jp = np.zeros((b, n, 3))
    for i in range(1, n):
        c = np.asarray(joint_centres_parent[i], float)
        jp[:, i] = r_pb @ c + t_pb if parents[i] == 0 else c
    damp = np.zeros((b, n))
    damp[:, 1:] = np.broadcast_to(np.asarray(joint_damping, float), (b, n - 1))
    free = None
    if rig.locked_dofs:
        free = np.concatenate([rig.free_dof_rows(), np.arange(6, 3 + 3 * n)])
    par = np.array([-1] + [max(p, 0) for p in parents[1:]], int)
    return TreeBatch(par, jp, pis[..., 0], pis[..., 1:4], inertia, damp,
                     *spring_arrays(rig, b, stiffness=stiffness, free_length=free_length,
                                    damping=spring_damping),
                     np.asarray(rig.gravity_lab, float), free)


class TreeRHS:
    """``y [B, 6 + 12 nb] -> dy/dt`` for a :class:`TreeBatch` (see the module docstring)."""

    def __init__(self, model: TreeBatch) -> None:
        self.m = model
        nb = model.n_bodies
        self.nb, self.n_nu = nb, 3 + 3 * nb
        n = self.n_nu
        # damping matrix D [B, N, N] (constant per member)
        d = np.zeros((model.size, n, n))
        for i in range(1, nb):
            a = model.parent[i]
            sel = np.zeros((3, n))
            sel[:, 3 + 3 * i:6 + 3 * i] += np.eye(3)
            sel[:, 3 + 3 * a:6 + 3 * a] -= np.eye(3)
            d += model.joint_damping[:, i, None, None] * (sel.T @ sel)
        self.damping = d
        self.has_joint_damping = bool(np.any(model.joint_damping))
        # angular rows of each body's Jacobian: a fixed selector
        ja = np.zeros((nb, 3, n))
        for i in range(nb):
            ja[i, :, 3 + 3 * i:6 + 3 * i] = np.eye(3)
        self.ja = ja
        self.att_t = np.ascontiguousarray(model.attachment_body.T)
        self.has_c = bool(np.any(model.spring_damping != 0))
        self.mass_eye = model.mass[..., None, None] * np.eye(3)           # [B, nb, 3, 3]

    def split(self, y: np.ndarray):
        nb = self.nb
        b = y.shape[0]
        p = y[:, :3]
        rot = y[:, 3:3 + 9 * nb].reshape(b, nb, 3, 3)
        nu = y[:, 3 + 9 * nb:]
        return p, rot, nu

    def springs(self, p, rot0, v, w0):
        """Spring force and moment about the platform origin, lab ``[B, 3]`` each."""
        m = self.m
        r = np.swapaxes(rot0 @ self.att_t, 1, 2)                          # [B, S, 3]
        d = r + (p[:, None, :] - m.anchor_lab)
        length = np.sqrt((d * d).sum(-1))
        if self.has_c:
            v_att = v[:, None, :] + cross(w0[:, None, :], r)
            rate = (d * v_att).sum(-1) / length
            scale = (m.stiffness_free_length - m.spring_damping * rate) / length - m.stiffness
        else:
            scale = m.stiffness_free_length / length - m.stiffness
        f = d * scale[..., None]
        return f.sum(1), cross(r, f).sum(1)

    def kinematics(self, rot: np.ndarray, w: np.ndarray):
        """Levers (joint centre from parent origin, lab) ``[B, nb, 3]``, velocity-product
        accelerations ``beta [B, nb, 3]`` and linear Jacobian rows ``[B, nb, 3, N]``."""
        m = self.m
        b, nb, n = rot.shape[0], self.nb, self.n_nu
        lever = np.zeros((b, nb, 3))
        beta = np.zeros((b, nb, 3))
        jl = np.zeros((b, nb, 3, n))
        jl[:, :, :, :3] = np.eye(3)
        # tree order: each body's chain is its parent's plus one edge (loop over <= a few
        # bodies; every operation is batched over B)
        for i in range(1, nb):
            a = m.parent[i]
            li = (rot[:, a] @ m.joint_parent[:, i, :, None])[..., 0]
            lever[:, i] = li
            wa = w[:, a]
            beta[:, i] = beta[:, a] + cross(wa, cross(wa, li))
            jl[:, i] = jl[:, a]
            jl[:, i, :, 3 + 3 * a:6 + 3 * a] -= skew(li)
        return lever, beta, jl

    def mass_and_forces(self, y: np.ndarray):
        """Mass matrix ``[B, N, N]``, generalised force ``[B, N]`` and ``nu``."""
        m = self.m
        p, rot, nu = self.split(y)
        b, nb, n = y.shape[0], self.nb, self.n_nu
        v = nu[:, :3]
        w = nu[:, 3:].reshape(b, nb, 3)
        _, beta, jl = self.kinematics(rot, w)
        h = (rot @ m.h_body[..., None])[..., 0]                          # [B, nb, 3]
        inertia = rot @ m.inertia_body @ np.swapaxes(rot, -1, -2)
        hs = skew(h)
        lam = np.empty((b, nb, 6, 6))
        lam[..., :3, :3] = self.mass_eye
        lam[..., :3, 3:] = -hs
        lam[..., 3:, :3] = hs
        lam[..., 3:, 3:] = inertia
        jac = np.concatenate([jl, np.broadcast_to(self.ja, (b, nb, 3, n))], axis=2)
        g_eff = m.gravity_lab - beta
        iw = (inertia @ w[..., None])[..., 0]
        force = m.mass[..., None] * g_eff - cross(w, cross(w, h))
        moment = cross(h, g_eff) - cross(w, iw)
        fs, ns = self.springs(p, rot[:, 0], v, w[:, 0])
        force[:, 0] += fs
        moment[:, 0] += ns
        wrench = np.concatenate([force, moment], -1)                      # [B, nb, 6]
        jt = np.swapaxes(jac.reshape(b, nb * 6, n), 1, 2)                 # [B, N, 6nb]
        mass_matrix = jt @ (lam @ jac).reshape(b, nb * 6, n)
        q = (jt @ wrench.reshape(b, nb * 6, 1))[..., 0]
        if self.has_joint_damping:
            q = q - (self.damping @ nu[..., None])[..., 0]
        return mass_matrix, q, nu

    def __call__(self, y: np.ndarray) -> np.ndarray:
        mass_matrix, q, nu = self.mass_and_forces(y)
        b, nb = y.shape[0], self.nb
        free = self.m.free
        if free is None:
            nu_dot = np.linalg.solve(mass_matrix, q[..., None])[..., 0]
        else:
            nu_dot = np.zeros_like(q)
            nu_dot[:, free] = np.linalg.solve(mass_matrix[:, free[:, None], free[None, :]],
                                              q[:, free, None])[..., 0]
        rot = y[:, 3:3 + 9 * nb].reshape(b, nb, 3, 3)
        w = nu[:, 3:].reshape(b, nb, 3)
        rot_dot = skew(w) @ rot
        return np.concatenate([nu[:, :3], rot_dot.reshape(b, 9 * nb), nu_dot], axis=1)


def integrate(model: TreeBatch, y0: np.ndarray, n_samples: int, dt: float,
              substeps: int = 1) -> np.ndarray:
    """States ``[T, B, n_state]`` at ``t = k dt`` by classical RK4 (``substeps`` per sample).

    Raises FloatingPointError when the motion diverges and LinAlgError when a mass matrix is
    singular (a Phi_B far from any physical body).
    """
    return rk4_samples(TreeRHS(model), y0, n_samples, dt, substeps)


def body_poses(model: TreeBatch, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rotations ``[..., nb, 3, 3]`` and origins ``[..., nb, 3]`` of every body from states
    ``[..., n_state]`` (any leading axes)."""
    nb = model.n_bodies
    lead = states.shape[:-1]
    rot = states[..., 3:3 + 9 * nb].reshape(lead + (nb, 3, 3))
    org = np.empty(lead + (nb, 3))
    org[..., 0, :] = states[..., :3]
    for i in range(1, nb):
        a = model.parent[i]
        org[..., i, :] = org[..., a, :] + (rot[..., a, :, :]
                                           @ model.joint_parent[:, i, :, None])[..., 0]
    return rot, org


def predict_markers(model: TreeBatch, states: np.ndarray, body_of_marker: np.ndarray,
                    markers_body: np.ndarray) -> np.ndarray:
    """Lab marker positions ``[T, B, K, 3]``: ``o_b + R_b m`` of each marker's body, from
    states ``[T, B, n_state]``; ``markers_body`` ``[K, 3]`` or per member ``[B, K, 3]``."""
    rot, org = body_poses(model, states)
    r_k = rot[..., body_of_marker, :, :]
    return (r_k @ markers_body[..., None])[..., 0] + org[..., body_of_marker, :]


def energy(model: TreeBatch, states: np.ndarray) -> np.ndarray:
    """Kinetic + gravity + spring energy ``[T, B]`` of states ``[T, B, n_state]`` (J)."""
    t, b = states.shape[:2]
    rhs = TreeRHS(model)
    out = np.empty(t * b)
    rot_all, org_all = body_poses(model, states)
    for k in range(t):
        y = states[k]
        mm, _, nu = rhs.mass_and_forces(y)
        kin = 0.5 * np.einsum("bi,bij,bj->b", nu, mm, nu)
        h = (rot_all[k] @ model.h_body[..., None])[..., 0]
        pot = -((model.mass[..., None] * org_all[k] + h) @ model.gravity_lab).sum(-1)
        r = np.swapaxes(rot_all[k][:, 0] @ rhs.att_t, 1, 2)
        length = np.linalg.norm(r + y[:, None, :3] - model.anchor_lab, axis=-1)
        l0 = model.stiffness_free_length / model.stiffness
        pot = pot + 0.5 * (model.stiffness * (length - l0) ** 2).sum(-1)
        out[k * b:(k + 1) * b] = kin + pot
    return out.reshape(t, b)


__all__ = ["TreeBatch", "TreeRHS", "tree_batch", "integrate", "body_poses", "predict_markers",
           "energy", "link_params_from_phi_b"]
