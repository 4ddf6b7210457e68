"""Forward dynamics of the spring-suspended platform with its load.

Conventions
-----------
- Lab frame, SI units (m, kg, s, rad, N); a body's pose is ``x_lab = R @ x_body + p``.
- The platform hangs on axial springs (``rigtool.rig.Spring``); spring i pulls on its
  attachment point along the current line with ``-(k (L - L0) + c dL/dt) u``. Gravity is
  ``rig.gravity_lab``. ``rig.locked_dofs`` (subset of x, y, z, rx, ry, rz) are lab-axis
  components of the platform's velocity ``[v_origin, omega]`` held at zero by ideal guides;
  a locked coordinate stays at its value in the zero pose (``R = I``, ``p`` component 0).
- The object is a :class:`rigtool.tree.Tree`; its base link is bolted to the platform
  (``base_rotation_platform``, ``base_position_platform_m``), every other link hangs on a
  spherical joint from its parent. ``posture[name]`` is ``0R_j`` (link axes -> base-link
  axes). With ``free_joints=False`` the tree is one rigid composite; with ``True`` the links
  swing (viscous joint damping on the relative angular velocity, N m s/rad).
- Trajectories are sampled at ``t = k / rate_hz``; time is the first axis of every array.

This module integrates the motion from the static equilibrium (:func:`simulate`) and
measures its energy (:func:`mechanical_energy`). The pieces live beside it and are
re-exported here: what is simulated and what comes out in :mod:`rigtool.sim.system`, the
system turned into the equations' bodies in :mod:`rigtool.sim.assembly`, the static
equilibrium and linear modes in :mod:`rigtool.sim.equilibrium`.

The equations of motion are written in this package from first principles (see
``_model.py``) and are checked against energy conservation, closed forms and
``rigtool.rig.modes`` in the tests; they share no code with the identification path on
purpose.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from rigtool.errors import ConfigError
from rigtool.sim import _model
from rigtool.sim._fastrhs import FastRHS
from rigtool.sim.assembly import _assemble, _posture, lumped_params
from rigtool.sim.equilibrium import linear_modes, static_equilibrium, static_wrench
from rigtool.sim.living_assembly import assemble_living
from rigtool.sim.living_trajectory import living_initial_state, living_trajectory
from rigtool.sim.system import FixedBody, System, Trajectory

__all__ = ["FixedBody", "System", "Trajectory", "static_equilibrium", "simulate",
           "mechanical_energy", "linear_modes", "lumped_params", "static_wrench"]


def _initial_state(system: System, model: _model.Model, outputs, platform_offset,
                   platform_velocity, link_rotation, link_omega) -> np.ndarray:
    locked = np.ones(6, bool)
    locked[system.rig.free_dof_rows()] = False
    off = np.asarray(platform_offset, float).copy()
    vel = np.asarray(platform_velocity, float).copy()
    off[locked] = 0.0
    vel[locked] = 0.0
    r_eq, p_eq = static_equilibrium(system)
    r0 = Rotation.from_rotvec(off[3:]).as_matrix() @ r_eq
    p0 = p_eq + off[:3]
    rots = [r0]
    omegas = [vel[3:]]
    if model.n_bodies > 1:
        tree = system.tree
        posture = dict(_posture(system))
        for name, r in (link_rotation or {}).items():
            if name not in posture:
                raise ConfigError("link_rotation names a link that is not a moving link",
                                  field="link_rotation", found=name)
            posture[name] = np.asarray(r, float)
        unknown = set(link_omega or {}) - set(posture)
        if unknown:
            raise ConfigError("link_omega names a link that is not a moving link",
                              field="link_omega", found=sorted(unknown))
        base_lab = r0 @ np.asarray(system.base_rotation_platform, float)
        lab_rot = {tree.links[0].name: base_lab}
        lab_omega = {tree.links[0].name: vel[3:]}
        for link in tree.links[1:]:
            lab_rot[link.name] = base_lab @ posture[link.name]
            w_rel = np.asarray((link_omega or {}).get(link.name, np.zeros(3)), float)
            lab_omega[link.name] = lab_omega[link.parent] + lab_rot[link.parent] @ w_rel
        for out in outputs:
            if out.body > 0:
                rots.append(lab_rot[out.name])
                omegas.append(lab_omega[out.name])
    elif link_rotation or link_omega:
        raise ConfigError("link_rotation and link_omega need free_joints = true",
                          field="free_joints")
    quats = Rotation.from_matrix(np.stack(rots)).as_quat()      # scalar last
    return np.concatenate([p0, quats.ravel(), vel[:3], np.concatenate(omegas)])


def simulate(system: System, duration_s: float, rate_hz: float, *,
             platform_offset: np.ndarray = np.zeros(6),
             platform_velocity: np.ndarray = np.zeros(6),
             link_rotation: dict[str, np.ndarray] | None = None,
             link_omega: dict[str, np.ndarray] | None = None,
             rtol: float = 1e-10, atol: float = 1e-12,
             method: str = "DOP853") -> Trajectory:
    """Integrate the motion from the static equilibrium plus an initial excitation.

    Parameters
    ----------
    system : System
    duration_s, rate_hz : float
        Samples at ``t = k / rate_hz``, ``k = 0 .. round(duration_s * rate_hz) - 1``.
    platform_offset : ndarray (6,)
        ``[dx, dy, dz]`` (lab, m) and a lab rotation vector (rad) applied to the equilibrium
        pose: ``R0 = exp(rv) R_eq``, ``p0 = p_eq + dp``. Locked components are ignored.
    platform_velocity : ndarray (6,)
        Initial ``[v_origin_lab, omega_lab]``; locked components are ignored.
    link_rotation : dict, optional
        Initial ``0R_j`` per link overriding the posture (free joints only).
    link_omega : dict, optional
        Initial angular velocity of each link relative to its parent, parent axes, rad/s.
    rtol, atol : float
        Integrator tolerances.
    method : str
        ``scipy.integrate.solve_ivp`` method; DOP853 (8th-order Runge-Kutta) suits these
        smooth, lightly damped motions; "Radau" for very stiff damping.

    Returns
    -------
    Trajectory
    """
    if not (np.isfinite(duration_s) and duration_s > 0 and np.isfinite(rate_hz) and rate_hz > 0):
        raise ConfigError("duration and rate must be positive numbers", field="duration",
                          found=(duration_s, rate_hz))
    model, outputs = _assemble(system)
    n_samples = max(1, int(round(duration_s * rate_hz)))
    t = np.arange(n_samples) / rate_hz
    y0 = _initial_state(system, model, outputs, platform_offset, platform_velocity,
                        link_rotation, link_omega)
    living = None
    if system.living is not None and system.living.any_dynamic:
        living = assemble_living(system, model, outputs, static_equilibrium(system)[0])
        y0 = np.concatenate([y0, living_initial_state(living, y0)])
    rhs = FastRHS(model) if living is None else FastRHS(living.model, living.terms)
    try:
        if n_samples > 1:
            try:
                sol = solve_ivp(rhs, (0.0, t[-1]), y0, method=method, t_eval=t,
                                rtol=rtol, atol=atol)
            except FloatingPointError:
                sol = SimpleNamespace(success=False, message="a spring reached zero length")
            if not sol.success:
                raise ConfigError(f"the motion could not be integrated ({sol.message}): check "
                                  "the excitation (platform_offset, platform_velocity, link "
                                  "start rotations) against the rig's geometry",
                                  field="excitation")
            y = sol.y.T
        else:
            y = y0[None, :]
        if living is not None:
            return living_trajectory(living, rhs, t, y)
        return _trajectory(model, outputs, t, y)
    except np.linalg.LinAlgError:
        raise ConfigError("the mass matrix is singular: a free DOF moves a body without mass "
                          "or inertia about it (lock that DOF or give the body inertia)",
                          field="platform_params") from None


def _trajectory(model: _model.Model, outputs, t: np.ndarray, y: np.ndarray) -> Trajectory:
    """Every physical body's motion from the states ``y [T, n]`` (vectorised over time)."""
    kin, nu_dot = _model.accelerations(model, y, t_s=t)
    acc = np.einsum("tbin,tn->tbi", kin.jacobian[..., :3, :], nu_dot) + kin.bias_accel
    alpha = nu_dot[:, 3:].reshape(len(t), model.n_bodies, 3)
    traj = Trajectory(t, {}, {}, {}, {}, {}, {})
    for out in outputs:
        b = out.body
        rot_b = kin.rotation[:, b]
        w, wd = kin.omega[:, b], alpha[:, b]
        lever = rot_b @ out.position
        traj.rotation[out.name] = rot_b @ out.rotation
        traj.position_m[out.name] = kin.origin[:, b] + lever
        traj.velocity_lab[out.name] = kin.velocity[:, b] + np.cross(w, lever)
        traj.omega_lab[out.name] = w.copy()
        traj.accel_lab[out.name] = (acc[:, b] + np.cross(wd, lever)
                                    + np.cross(w, np.cross(w, lever)))
        traj.alpha_lab[out.name] = wd.copy()
    return traj


def mechanical_energy(system: System, traj: Trajectory) -> np.ndarray:
    """Kinetic + gravity potential + spring elastic energy ``[T]``, J.

    Computed body by body from the trajectory (platform, fixed bodies, links, whatever the
    joint regime) and from the platform pose for the springs (``0.5 k (L - L0)^2``).

    Parameters
    ----------
    system : System
        The system that was simulated.
    traj : Trajectory
        Its motion, as :func:`simulate` returns it.

    Returns
    -------
    ndarray, shape (T,)
        Total mechanical energy at each sample, J.
    """
    model, outputs = _assemble(system)
    g = model.gravity_lab
    energy = np.zeros(len(traj.time_s))
    for out in outputs:
        rot = traj.rotation[out.name]
        h = rot @ out.params.first_moment
        inertia = rot @ out.params.inertia_origin @ np.swapaxes(rot, -1, -2)
        v, w = traj.velocity_lab[out.name], traj.omega_lab[out.name]
        m = out.params.mass
        energy += (0.5 * m * np.sum(v * v, -1) + np.sum(v * np.cross(w, h), -1)
                   + 0.5 * np.einsum("ti,tij,tj->t", w, inertia, w))
        energy -= (m * traj.position_m[out.name] + h) @ g
    rot_p, pos_p = traj.rotation["platform"], traj.position_m["platform"]
    att = np.einsum("tij,sj->tsi", rot_p, model.attachment_platform)
    length = np.linalg.norm(pos_p[:, None, :] + att - model.anchor_lab, axis=-1)
    energy += 0.5 * np.sum(model.stiffness * (length - model.free_length) ** 2, -1)
    return energy
