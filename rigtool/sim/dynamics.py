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

The equations of motion are written here from first principles (see ``_model.py``) and are
checked against energy conservation, closed forms and ``rigtool.rig.modes`` in the tests;
they share no code with the identification path on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import root
from scipy.spatial.transform import Rotation

from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams, inertia_vector, transform_params
from rigtool.rig import DOF_NAMES, Rig, modes
from rigtool.sim import _model
from rigtool.sim._fastrhs import FastRHS
from rigtool.sim.servo import Drive, JointServo
from rigtool.tree import Tree

__all__ = ["FixedBody", "System", "Trajectory", "static_equilibrium", "simulate",
           "mechanical_energy", "linear_modes"]


@dataclass(frozen=True)
class FixedBody:
    """A rigid load bolted to the platform (a reference body, a weight, a fixture).

    Attributes
    ----------
    name : str
    params : InertialParams
        About the body's own frame origin, in its own axes.
    rotation_platform : ndarray (3, 3)
        Body axes -> platform axes.
    position_platform_m : ndarray (3,)
        Body frame origin in the platform frame, m.
    """

    name: str
    params: InertialParams
    rotation_platform: np.ndarray = field(default_factory=lambda: np.eye(3))
    position_platform_m: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass(frozen=True)
class System:
    """Everything the simulator needs: the rig, the platform's inertia and the load.

    Attributes
    ----------
    rig : Rig
        Springs (stiffness, free length, damping), gravity, locked DOFs.
    platform_params : InertialParams
        Platform about its frame origin, platform axes.
    fixed : tuple of FixedBody
        Rigid loads on the platform.
    tree : Tree or None
        The object; ``links[0]`` is the base link; every link needs ``params``.
    base_rotation_platform, base_position_platform_m : ndarray
        Base-link axes -> platform axes, and base-link origin in the platform frame (m).
    posture : dict
        ``0R_j`` per non-base link (link axes -> base-link axes); missing = identity.
    free_joints : bool
        False: the tree is one locked composite body; True: non-base links swing.
    joint_damping : float or dict
        Viscous damping of each spherical joint, N m s/rad (a dict by link name; missing = 0).
    joint_servo : dict
        Link name -> :class:`rigtool.sim.servo.JointServo`: that link's joint is driven (a
        muscle-like servo tracking a reference about the posture) instead of swinging
        freely (free joints only).
    """

    rig: Rig
    platform_params: InertialParams
    fixed: tuple[FixedBody, ...] = ()
    tree: Tree | None = None
    base_rotation_platform: np.ndarray = field(default_factory=lambda: np.eye(3))
    base_position_platform_m: np.ndarray = field(default_factory=lambda: np.zeros(3))
    posture: dict[str, np.ndarray] = field(default_factory=dict)
    free_joints: bool = False
    joint_damping: float | dict[str, float] = 0.0
    joint_servo: dict[str, JointServo] = field(default_factory=dict)


@dataclass(frozen=True)
class Trajectory:
    """Sampled motion of every body (keys: ``"platform"``, fixed-body names, link names).

    All dicts map a body name to an array with time first; rotations are body axes -> lab,
    positions/velocities/accelerations are of the body's frame origin, lab components.
    """

    time_s: np.ndarray
    rotation: dict[str, np.ndarray]
    position_m: dict[str, np.ndarray]
    velocity_lab: dict[str, np.ndarray]
    omega_lab: dict[str, np.ndarray]
    accel_lab: dict[str, np.ndarray] = field(default_factory=dict)
    alpha_lab: dict[str, np.ndarray] = field(default_factory=dict)


# --------------------------------------------------------------------------- model assembly

@dataclass(frozen=True)
class _Output:
    """A physical body: which dynamic body carries it and its frame in that body's frame."""

    name: str
    body: int
    rotation: np.ndarray
    position: np.ndarray
    params: InertialParams


def _posture(system: System) -> dict[str, np.ndarray]:
    tree = system.tree
    out = {}
    for link in tree.links[1:]:
        r = system.posture.get(link.name, np.eye(3))
        out[link.name] = np.asarray(r, float)
    unknown = set(system.posture) - set(out)
    if unknown:
        raise ConfigError("posture names a link that is not a non-base link of the tree",
                          field="posture", found=sorted(unknown))
    return out


def _joint_damping(system: System, name: str) -> float:
    jd = system.joint_damping
    if isinstance(jd, dict):
        return float(jd.get(name, 0.0))
    return float(jd)


def _check(system: System) -> None:
    rig = system.rig
    if not rig.springs:
        raise ConfigError("the rig needs at least one spring", field="springs")
    for i, s in enumerate(rig.springs):
        for attr in ("stiffness", "free_length", "damping"):
            val = getattr(s, attr)
            if not np.isfinite(val) or val < 0:
                raise ConfigError(f"spring '{s.name}' needs a finite, non-negative {attr}",
                                  field=f"springs[{i}].{attr}", found=val)
    bad = set(rig.locked_dofs) - set(DOF_NAMES)
    if bad:
        raise ConfigError(f"locked_dofs may only contain {', '.join(DOF_NAMES)}",
                          field="locked_dofs", found=sorted(bad))
    names = ["platform"] + [f.name for f in system.fixed]
    if system.tree is not None:
        names += system.tree.names
        for i, link in enumerate(system.tree.links):
            if link.params is None:
                raise ConfigError(f"link '{link.name}' needs inertial parameters to be "
                                  "simulated", field=f"links[{i}].params")
    bodies = [("platform_params", system.platform_params)]
    bodies += [(f"fixed.{f.name}", f.params) for f in system.fixed]
    if system.tree is not None:
        bodies += [(f"links.{l.name}.params", l.params) for l in system.tree.links]
    for where, params in bodies:
        if not (params.mass > 0 and params.is_physically_consistent(tol=1e-12)):
            raise ConfigError("inertial parameters must be physically consistent (mass > 0, "
                              "pseudo-inertia positive semidefinite)", field=where,
                              found=np.round(params.pi, 6).tolist())
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError("every body (platform, fixed bodies, links) needs its own name",
                          field="name", found=sorted(dup))


def _assemble(system: System, *, free_joints: bool | None = None):
    """Dynamic bodies (``_model.Model``) and the physical bodies they carry."""
    _check(system)
    free_joints = system.free_joints if free_joints is None else free_joints
    rig = system.rig
    lumped = system.platform_params.pi.astype(float).copy()
    outputs = [_Output("platform", 0, np.eye(3), np.zeros(3), system.platform_params)]
    for fb in system.fixed:
        rot = np.asarray(fb.rotation_platform, float)
        pos = np.asarray(fb.position_platform_m, float)
        lumped += transform_params(fb.params.pi, rot, pos)
        outputs.append(_Output(fb.name, 0, rot, pos, fb.params))
    moving: list[tuple[str, InertialParams, int, np.ndarray, float]] = []
    if system.tree is not None:
        tree = system.tree
        base_r = np.asarray(system.base_rotation_platform, float)
        base_p = np.asarray(system.base_position_platform_m, float)
        posture = _posture(system)
        org, rot = tree.origins_and_rotations(posture)
        parents = tree.parent_index()
        dyn_index = {tree.links[0].name: 0}
        for i, link in enumerate(tree.links):
            if i == 0 or not free_joints:
                r_pl, p_pl = base_r @ rot[i], base_r @ org[i] + base_p
                lumped += transform_params(link.params.pi, r_pl, p_pl)
                outputs.append(_Output(link.name, 0, r_pl, p_pl, link.params))
                continue
            par = parents[i]
            centre = tree.joint_center(i)
            if par == 0:
                centre = base_r @ centre + base_p      # in the platform (body 0) frame
            dyn_index[link.name] = len(moving) + 1
            moving.append((link.name, link.params, dyn_index[tree.links[par].name], centre,
                           _joint_damping(system, link.name)))
            outputs.append(_Output(link.name, dyn_index[link.name], np.eye(3), np.zeros(3),
                                   link.params))
    drives = _drives(system, dyn_index if system.tree is not None and free_joints else {})
    params = [InertialParams(lumped)] + [m[1] for m in moving]
    n_nu = 6 + 3 * len(moving)
    free = np.concatenate([rig.free_dof_rows(), np.arange(6, n_nu)]).astype(int)
    model = _model.Model(
        mass=np.array([p.mass for p in params]),
        first_moment_body=np.stack([p.first_moment for p in params]),
        inertia_body=np.stack([p.inertia_origin for p in params]),
        parent=(-1,) + tuple(m[2] for m in moving),
        joint_parent=np.stack([np.zeros(3)] + [np.asarray(m[3], float) for m in moving]),
        joint_damping=np.array([0.0] + [m[4] for m in moving]),
        anchor_lab=np.stack([np.asarray(s.anchor_lab, float) for s in rig.springs]),
        attachment_platform=np.stack([np.asarray(s.attachment_platform, float)
                                      for s in rig.springs]),
        stiffness=rig.stiffness.astype(float),
        free_length=rig.free_length.astype(float),
        spring_damping=rig.damping.astype(float),
        gravity_lab=np.asarray(rig.gravity_lab, float),
        free=free,
        drives=drives,
    )
    return model, outputs


def _drives(system: System, dyn_index: dict[str, int]) -> tuple[Drive, ...]:
    """The driven joints as dynamic-body pairs (none when the joints are locked)."""
    if not system.joint_servo or not dyn_index:
        return ()
    tree = system.tree
    posture = _posture(system)
    unknown = set(system.joint_servo) - set(posture)
    if unknown:
        raise ConfigError("joint_servo names a link that is not a non-base link of the tree",
                          field="joint_servo", found=sorted(unknown))
    base = tree.links[0].name
    out = []
    for name, servo in system.joint_servo.items():
        parent = tree.links[tree.index(name)].parent
        rest_parent = np.eye(3) if parent == base else posture[parent]
        frame = np.asarray(system.base_rotation_platform, float) if parent == base \
            else np.eye(3)
        out.append(Drive(dyn_index[name], dyn_index[parent], frame,
                         rest_parent.T @ posture[name], servo))
    return tuple(out)


def lumped_params(system: System) -> InertialParams:
    """Everything on the springs as one body (joints locked at the posture), platform frame."""
    model, _ = _assemble(system, free_joints=False)
    return InertialParams(np.concatenate([[model.mass[0]], model.first_moment_body[0],
                                          inertia_vector(model.inertia_body[0])]))


# --------------------------------------------------------------------------- equilibrium

def _pose_from(x6: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return Rotation.from_rotvec(x6[3:]).as_matrix(), x6[:3]


def static_wrench(system: System, rotation: np.ndarray, position_m: np.ndarray) -> np.ndarray:
    """Net spring + gravity wrench ``[6]`` on the locked system at rest (lab, about ``p``)."""
    model, _ = _assemble(system, free_joints=False)
    return _static_wrench(model, rotation, position_m)


def _static_wrench(model: _model.Model, rotation: np.ndarray, position_m: np.ndarray):
    zero = np.zeros(3)
    w = _model.spring_wrench_lab(model, rotation, position_m, zero, zero)
    force = model.mass[0] * model.gravity_lab
    moment = np.cross(rotation @ model.first_moment_body[0], model.gravity_lab)
    return w + np.concatenate([force, moment])


def static_equilibrium(system: System) -> tuple[np.ndarray, np.ndarray]:
    """Platform pose (R, p in the lab) where springs hold the load at rest, joints locked.

    Solves the free rows of ``spring wrench + gravity wrench = 0`` over
    ``[p, rotation vector]`` (locked components held at 0) with ``scipy.optimize.root``
    from the unstretched hanging guess, then polishes with Newton steps (central-difference
    Jacobian) until the residual is below 1e-10 N (N m).

    Raises
    ------
    ConfigError
        When no equilibrium exists (springs too weak or geometry without a rest pose).
    """
    model, _ = _assemble(system, free_joints=False)
    free = system.rig.free_dof_rows()
    if len(free) == 0:
        return np.eye(3), np.zeros(3)
    g = model.gravity_lab
    g_dir = g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, -1.0])
    hanging = np.zeros(6)
    hanging[:3] = (model.anchor_lab.mean(0) + g_dir * model.free_length.mean()
                   - model.attachment_platform.mean(0))
    x_full = np.zeros(6)
    scale = max(1.0, model.mass[0] * np.linalg.norm(g))

    def residual(xf: np.ndarray) -> np.ndarray:
        x_full[free] = xf
        return _static_wrench(model, *_pose_from(x_full))[free]

    best = None
    # The hanging pose (springs at free length below their anchors) suits a suspended rig;
    # the zero pose suits guided rigs whose springs are not vertical.
    for guess in (hanging, np.zeros(6)):
        xf = _solve_static(residual, guess[free])
        if xf is None:
            continue
        err = np.max(np.abs(residual(xf)))
        if best is None or err < best[1]:
            best = (xf, err)
        if err < 1e-10 * scale:
            break
    if best is None or best[1] > 1e-9 * scale:
        found = "no solution" if best is None else f"residual {best[1]:.3g} N"
        raise ConfigError("the springs cannot hold the load at rest (no static equilibrium "
                          f"found: {found}); check stiffness, free length and anchors",
                          field="springs")
    x_full[free] = best[0]
    rot, pos = _pose_from(x_full)
    return rot, pos.copy()


def _solve_static(residual, guess: np.ndarray) -> np.ndarray | None:
    """``scipy.optimize.root`` then Newton polish (central differences); None on failure."""
    with np.errstate(all="ignore"):
        if not np.all(np.isfinite(residual(guess))):
            guess = guess + 1e-3
        sol = root(residual, guess, method="hybr", options={"xtol": 1e-13})
        xf = sol.x
        n = len(xf)
        for _ in range(20):
            res = residual(xf)
            if not np.all(np.isfinite(res)):
                return None
            if np.max(np.abs(res)) < 1e-11:
                break
            jac = np.empty((n, n))
            for j in range(n):
                step = np.zeros(n)
                step[j] = 1e-6
                jac[:, j] = (residual(xf + step) - residual(xf - step)) / 2e-6
            if not np.all(np.isfinite(jac)):
                return None
            xf = xf - np.linalg.lstsq(jac, res, rcond=None)[0]
    return xf if np.all(np.isfinite(residual(xf))) else None


def linear_modes(system: System) -> tuple[np.ndarray, np.ndarray]:
    """Small-vibration modes at the equilibrium (joints locked), via ``rigtool.rig.modes``.

    Returns frequencies (Hz, ascending, one per free DOF) and shapes (columns over the free
    DOFs of ``[dp (lab, m), rotation vector (lab, rad)]``).
    """
    rot, pos = static_equilibrium(system)
    return modes(system.rig, rot, pos, lumped_params(system))


# --------------------------------------------------------------------------- simulation

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
    try:
        if n_samples > 1:
            try:
                sol = solve_ivp(FastRHS(model), (0.0, t[-1]), y0, method=method, t_eval=t,
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
