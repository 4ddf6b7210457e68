"""Equations of motion of the platform with its load (private to the simulator,
:mod:`rigtool.sim.dynamics` and the modules it re-exports).

Conventions
-----------
- Lab frame, SI units, pose ``x_lab = R @ x_body + p``. Everything here is written from
  first principles (Newton-Euler projected on generalized velocities) and shares no code with
  the identification path (``rigtool.rig`` spring regressor, ``rigtool.inertia`` regressor),
  so that the simulator can be checked against it.
- *Dynamic bodies*: body 0 is the platform together with everything rigidly fixed to it (fixed
  bodies, the base link and, when the joints are locked, the whole tree); bodies 1.. are the
  links that swing on spherical joints (free regime only), in tree order.
- State ``y = [p (3), quaternions (4 per dynamic body, scalar last, body -> lab), nu]`` with
  generalized velocities ``nu = [v_p, omega_0, omega_1, ...]``: the lab velocity of the
  platform origin and the *absolute* lab angular velocity of every dynamic body. Absolute
  angular velocities are a valid choice for spherical joints (the map to relative ones is
  triangular with unit diagonal) and make every angular Jacobian a column selector.
- Locked DOFs are lab-axis components of ``[v_p, omega_0]`` held at zero (ideal, workless
  constraints): those generalized velocities are removed from the equations.
- Every function accepts leading batch axes (``y[..., n]``): this readable path computes the
  accelerations of all samples at once after integration and is the reference for the lean
  single-state right-hand side the integrator calls (``_fastrhs.py``; tests keep them equal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.sim.servo import drive_generalized_force
from scipy.linalg.lapack import dposv



_I1 = np.array([1, 2, 0])
_I2 = np.array([2, 0, 1])
_EYE3 = np.eye(3)
_LEVI = np.zeros((3, 3, 3))
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    _LEVI[_i, _j, _k], _LEVI[_i, _k, _j] = 1.0, -1.0
#: ``skew3(v).ravel() == v @ _SKEW`` (``skew3(v)[i, j] = -eps_ijk v_k``).
_SKEW = np.ascontiguousarray(-_LEVI.transpose(2, 0, 1).reshape(3, 9))


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` over the last axis (broadcasting).

    Hand-written because ``np.cross`` spends ~40 us per call on axis bookkeeping, and the
    right-hand side makes a dozen of them for a few numbers each.
    """
    return a.take(_I1, -1) * b.take(_I2, -1) - a.take(_I2, -1) * b.take(_I1, -1)


def skew3(v: np.ndarray) -> np.ndarray:
    """``[v x]`` ``[..., 3, 3]`` by one matrix product (faster than ``inertia.skew`` here)."""
    return (v @ _SKEW).reshape(v.shape[:-1] + (3, 3))


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices ``[..., 3, 3]`` of quaternions ``[..., 4]`` (scalar last, any norm).

    ``R = ((w^2 - v.v) 1 + 2 v v^T + 2 w [v x]) / |q|^2``. Hand-written (not
    ``scipy.spatial.transform.Rotation``) because the right-hand side calls it tens of
    thousands of times and the object construction costs more than the maths.
    """
    v, w = q[..., :3], q[..., 3:]
    n2 = (q * q).sum(-1)[..., None, None]
    vv = v[..., :, None] * v[..., None, :]
    diag = (w * w - (v * v).sum(-1, keepdims=True))[..., None] * _EYE3
    return (diag + 2.0 * (vv + skew3(w * v))) / n2


def quat_rate(q: np.ndarray, omega_lab: np.ndarray,
              omega_skew: np.ndarray | None = None) -> np.ndarray:
    """``dq/dt = 1/2 (0, omega) * q`` (Hamilton product, lab angular velocity), ``[..., 4]``.

    ``omega_skew`` (``[omega x]``), when the caller has it, saves a cross product.
    """
    qv, qw = q[..., :3], q[..., 3:]
    w_qv = cross(omega_lab, qv) if omega_skew is None else (omega_skew @ qv[..., None])[..., 0]
    return 0.5 * np.concatenate([qw * omega_lab + w_qv,
                                 -(omega_lab * qv).sum(-1, keepdims=True)], -1)


@dataclass(frozen=True)
class Model:
    """Constant arrays of one system, prepared once for the right-hand side.

    Attributes
    ----------
    mass : ndarray [B]
        Mass of each dynamic body, kg.
    first_moment_body : ndarray [B, 3]
        ``h = m c`` of each dynamic body, body axes, kg m.
    inertia_body : ndarray [B, 3, 3]
        Inertia about each body origin, body axes, kg m^2.
    parent : tuple[int, ...]
        Parent dynamic body of each body (-1 for body 0).
    joint_parent : ndarray [B, 3]
        Joint centre (= body origin) in the parent body's frame, m (zeros for body 0).
    joint_damping : ndarray [B]
        Viscous joint damping to the parent, N m s/rad (0 for body 0).
    anchor_lab, attachment_platform : ndarray [S, 3]
        Spring ends, m.
    stiffness, free_length, spring_damping : ndarray [S]
        N/m, m, N s/m.
    gravity_lab : ndarray [3]
        m/s^2.
    free : ndarray [F]
        Indices of the unlocked generalized velocities.
    """

    mass: np.ndarray
    first_moment_body: np.ndarray
    inertia_body: np.ndarray
    parent: tuple[int, ...]
    joint_parent: np.ndarray
    joint_damping: np.ndarray
    anchor_lab: np.ndarray
    attachment_platform: np.ndarray
    stiffness: np.ndarray
    free_length: np.ndarray
    spring_damping: np.ndarray
    gravity_lab: np.ndarray
    free: np.ndarray
    drives: tuple = ()          # rigtool.sim.servo.Drive per driven joint (muscles)

    @property
    def n_bodies(self) -> int:
        """Number of dynamic bodies ``B``."""
        return len(self.mass)

    @property
    def n_nu(self) -> int:
        """Number of generalized velocities ``3 + 3 B``."""
        return 3 + 3 * self.n_bodies

    def __post_init__(self) -> None:
        # Derived constants of the tree topology (cached on the frozen instance).
        b_count, n = self.n_bodies, self.n_nu
        ancestors = np.zeros((b_count, b_count))   # [b, e] = 1: edge into e is on b's path
        pairs = []                                 # (body b, ancestor a, child c of a on path)
        for b in range(1, b_count):
            c = b
            while c > 0:
                ancestors[b, c] = 1.0
                pairs.append((b, self.parent[c], c))
                c = self.parent[c]
        j0 = np.zeros((b_count, 6, n))
        j0[:, :3, :3] = np.eye(3)
        for b in range(b_count):
            j0[b, 3:, 3 + 3 * b:6 + 3 * b] = np.eye(3)
        scatter = [pb * 6 * n + i * n + 3 + 3 * pa + j
                   for pb, pa, _ in pairs for i in range(3) for j in range(3)]
        damping = np.zeros((n, n))                 # Q_joint = -damping @ nu
        for b in range(1, b_count):
            a = self.parent[b]
            sel = np.zeros((3, n))
            sel[:, 3 + 3 * b:6 + 3 * b] = np.eye(3)
            sel[:, 3 + 3 * a:6 + 3 * a] -= np.eye(3)
            damping += self.joint_damping[b] * sel.T @ sel
        extra = {"ancestors": ancestors, "jacobian0": j0,
                 "scatter": np.array(scatter, int), "scatter_edge": np.array(
                     [c for _, _, c in pairs], int),
                 "parent_index": np.array(self.parent[1:], int), "damping_matrix": damping,
                 "parent_full": np.array([0] + list(self.parent[1:]), int),
                 "has_damping": bool(np.any(damping)),
                 "has_spring_damping": bool(np.any(self.spring_damping)),
                 "mass_eye": self.mass[:, None, None] * np.eye(3)}
        for key, val in extra.items():
            object.__setattr__(self, key, val)

    def split(self, y: np.ndarray):
        """``p [..., 3]``, quaternions ``[..., B, 4]``, ``nu [..., 3 + 3B]`` of a state."""
        b = self.n_bodies
        return (y[..., :3], y[..., 3:3 + 4 * b].reshape(y.shape[:-1] + (b, 4)),
                y[..., 3 + 4 * b:])


def spring_state(model: Model, rotation: np.ndarray, position_m: np.ndarray,
                 velocity_m_s: np.ndarray, omega_lab: np.ndarray):
    """Spring lever ``r`` (lab, from p) ``[..., S, 3]``, length, unit vector, dL/dt, force.

    ``dL/dt`` is None when no spring has damping (it is then not needed).
    """
    r = model.attachment_platform @ np.swapaxes(rotation, -1, -2)
    d = r + (position_m[..., None, :] - model.anchor_lab)
    length = np.sqrt((d * d).sum(-1))
    u = d / length[..., None]
    tension = model.stiffness * (length - model.free_length)
    if model.has_spring_damping:
        v_att = velocity_m_s[..., None, :] + cross(omega_lab[..., None, :], r)
        rate = (u * v_att).sum(-1)
        tension = tension + model.spring_damping * rate
    else:
        rate = None                     # not needed without spring damping
    return r, length, u, rate, -tension[..., None] * u


def spring_wrench_lab(model: Model, rotation: np.ndarray, position_m: np.ndarray,
                      velocity_m_s: np.ndarray, omega_lab: np.ndarray) -> np.ndarray:
    """Total spring wrench on the platform about its origin, lab components ``[..., 6]``."""
    r, _, _, _, f = spring_state(model, rotation, position_m, velocity_m_s, omega_lab)
    return np.concatenate([f.sum(-2), cross(r, f).sum(-2)], -1)


@dataclass
class Kinematics:
    """Pose, velocity and velocity-product acceleration of every dynamic body (batched)."""

    rotation: np.ndarray      # [..., B, 3, 3]
    origin: np.ndarray        # [..., B, 3]
    velocity: np.ndarray      # [..., B, 3]
    omega: np.ndarray         # [..., B, 3]
    bias_accel: np.ndarray    # [..., B, 3]  origin acceleration when d(nu)/dt = 0
    jacobian: np.ndarray      # [..., B, 6, N]  [v; omega] = J nu
    omega_skew: np.ndarray    # [..., B, 3, 3]  [omega x]
    omega_skew2: np.ndarray   # [..., B, 3, 3]  [omega x]^2


def _matvec(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``a @ v`` over stacks of 3x3 matrices and 3-vectors."""
    return (a @ v[..., None])[..., 0]


def kinematics(model: Model, y: np.ndarray, *, full: bool = True) -> Kinematics:
    """Forward kinematics of a state ``y [..., n]``, vectorised over bodies and samples.

    With ``lever_e = R_parent(e) @ joint_parent_e`` (joint centre of body e relative to its
    parent's origin, lab): ``o_b = p + sum_{e on path} lever_e``,
    ``v_b = v_p + sum_e omega_parent(e) x lever_e`` and the velocity-product acceleration
    ``beta_b = sum_e omega_parent(e) x (omega_parent(e) x lever_e)``.
    With ``full=False`` (the integrator) only body 0's origin and velocity are filled in.
    Cross products go through ``[omega x]`` matrices built once (fewer numpy calls).
    """
    p, quat, nu = model.split(y)
    lead = y.shape[:-1]
    b_count = model.n_bodies
    rot = quat_to_matrix(quat)
    omega = nu[..., 3:].reshape(lead + (b_count, 3))
    w_skew = skew3(omega)
    w_skew2 = w_skew @ w_skew
    if b_count == 1:
        jac = np.broadcast_to(model.jacobian0, lead + model.jacobian0.shape)
        origin = p[..., None, :]
        bias = np.zeros(lead + (1, 3))
    else:
        par = model.parent_index
        levers = np.zeros(lead + (b_count, 3))
        levers[..., 1:, :] = (rot[..., par, :, :] @ model.joint_parent[1:, :, None])[..., 0]
        origin = p[..., None, :] + model.ancestors @ levers if full else p[..., None, :]
        bias = model.ancestors @ _matvec(w_skew2[..., model.parent_full, :, :], levers)
        jac = np.zeros(lead + model.jacobian0.shape)
        jac += model.jacobian0
        flat = jac.reshape(lead + (-1,))
        flat[..., model.scatter] = -(levers[..., model.scatter_edge, :] @ _SKEW).reshape(
            lead + (-1,))
    if full:
        vel = (jac[..., :3, :] @ nu[..., None, :, None])[..., 0]
    else:
        vel = nu[..., None, :3]
    return Kinematics(rot, origin, vel, omega, bias, jac, w_skew, w_skew2)


def mass_and_forces(model: Model, kin: Kinematics, nu: np.ndarray, t_s=None):
    """Mass matrix ``M [..., N, N]`` and generalized force ``Q [..., N]`` (all but inertia).

    Newton-Euler of body b about its origin, lab components, with ``h = m s = R h_body``:
    ``[f; n] = Lambda [a; alpha] + [w x (w x h); w x (I w)]``,
    ``Lambda = [[m 1, -[h x]], [[h x], I]]`` and ``[a; alpha] = J nu_dot + [beta; 0]``, so
    ``M = sum J^T Lambda J`` and ``Q = sum J^T (W_ext - Lambda [beta; 0] - bias)``.
    """
    rot = kin.rotation
    lead = rot.shape[:-3]
    b_count, n = model.n_bodies, model.n_nu
    h = rot @ model.first_moment_body[:, :, None]                           # [..., B, 3, 1]
    inertia = rot @ model.inertia_body @ np.swapaxes(rot, -1, -2)           # about origin
    sh = skew3(h[..., 0])
    lam = np.empty(lead + (b_count, 6, 6))
    lam[..., :3, :3] = model.mass_eye
    lam[..., :3, 3:] = -sh
    lam[..., 3:, :3] = sh
    lam[..., 3:, 3:] = inertia
    g_eff = (model.gravity_lab - kin.bias_accel)[..., None]                  # [..., B, 3, 1]
    wrench = np.concatenate([model.mass[:, None, None] * g_eff - kin.omega_skew2 @ h,
                             sh @ g_eff - kin.omega_skew @ (inertia @ kin.omega[..., None])],
                            -2)[..., 0]                                     # [..., B, 6]
    wrench[..., 0, :] += spring_wrench_lab(model, rot[..., 0, :, :], kin.origin[..., 0, :],
                                           kin.velocity[..., 0, :], kin.omega[..., 0, :])
    if b_count == 1:                    # J is the identity: skip the projection
        q = wrench[..., 0, :]
        return lam[..., 0, :, :], q
    jac = kin.jacobian
    jac_t = np.swapaxes(jac.reshape(lead + (6 * b_count, n)), -1, -2)
    mass_matrix = jac_t @ (lam @ jac).reshape(lead + (6 * b_count, n))
    q = (jac_t @ wrench.reshape(lead + (6 * b_count, 1)))[..., 0]
    if model.has_damping:
        q = q - nu @ model.damping_matrix      # symmetric
    if model.drives:
        q = q + drive_generalized_force(model.drives, t_s, kin.rotation, kin.omega, n)
    return mass_matrix, q


def accelerations(model: Model, y: np.ndarray, *, full: bool = True, t_s=None):
    """Kinematics and ``d(nu)/dt [..., N]`` of a state (locked components stay 0);
    ``t_s`` (time, s, shaped as ``y``'s leading axes) is needed when joints are driven."""
    if model.drives and t_s is None:
        raise ValueError("a model with driven joints needs the time t_s")
    kin = kinematics(model, y, full=full)
    nu = y[..., -model.n_nu:]
    mass_matrix, q = mass_and_forces(model, kin, nu, t_s)
    free = model.free
    if len(free) < model.n_nu:
        mass_matrix = mass_matrix[..., free[:, None], free[None, :]]
        q_free = q[..., free]
    else:
        q_free = q
    if y.ndim == 1:
        # LAPACK's SPD solver directly: np.linalg.solve costs 4x more for a 12x12 system.
        _, sol, info = dposv(mass_matrix, q_free)
        if info != 0:
            raise np.linalg.LinAlgError("mass matrix is not positive definite")
    else:
        sol = np.linalg.solve(mass_matrix, q_free[..., None])[..., 0]
    if len(free) < model.n_nu:
        nu_dot = np.zeros_like(q)
        nu_dot[..., free] = sol
        return kin, nu_dot
    return kin, sol


def state_derivative(model: Model, y: np.ndarray, t_s=None) -> np.ndarray:
    """``dy/dt`` of a state (the integrator's right-hand side; batched too)."""
    kin, nu_dot = accelerations(model, y, full=False, t_s=t_s)
    _, quat, nu = model.split(y)
    q_dot = quat_rate(quat, kin.omega, kin.omega_skew)
    return np.concatenate([nu[..., :3], q_dot.reshape(y.shape[:-1] + (-1,)), nu_dot], -1)
