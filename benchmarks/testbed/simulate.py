"""Static equilibrium, initial conditions and sampled marker trajectories on MuJoCo.

Integration: MuJoCo's fixed-step RK4 at ``substeps`` steps per capture frame (default 10:
1.2 kHz for a 120 Hz capture). The rig's modes lie below 5 Hz and a released link swings at
1-3 Hz, so omega h < 2 pi 5 Hz / 1200 Hz = 0.026; RK4's local error per step is
~(omega h)^5 / 120 = 1e-10 of the amplitude, over 30,000 steps < 1e-5 of the amplitude
(< 0.1 um for a 15 mm excitation), three orders below 0.1 mm marker noise.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

from benchmarks.testbed.rigphysics import carry_beads, progressive_potential, state_forces


@dataclass
class Trajectory:
    """Sampled motion: ``time_s`` (n,), ``markers_lab_m`` (n, k, 3) named ``names`` (the
    MJCF site names, ``subject:marker``), ``qpos`` (n, nq) and ``qvel`` (n, nv)."""

    time_s: np.ndarray
    names: list[str]
    markers_lab_m: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray


def compile_model(xml: str) -> mujoco.MjModel:
    """The MuJoCo model of an MJCF string."""
    return mujoco.MjModel.from_xml_string(xml)


def platform_pose(qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Platform position (lab, m) and rotation (platform -> lab) of a state's free joint."""
    w, x, y, z = qpos[3:7]
    return np.array(qpos[:3]), Rotation.from_quat([x, y, z, w]).as_matrix()


def set_platform_pose(qpos: np.ndarray, p_lab_m: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """``qpos`` with the free joint set to the given pose."""
    out = np.array(qpos, float)
    x, y, z, w = Rotation.from_matrix(rot).as_quat()
    out[:3] = p_lab_m
    out[3:7] = [w, x, y, z]
    return out


def equilibrium(model: mujoco.MjModel, qpos0: np.ndarray | None = None, *,
                max_tilt_deg: float = 30.0) -> np.ndarray:
    """The rig's static equilibrium: the pose of the platform's free joint (and the state of
    every other joint of the rig's own, a frame's or a spring's beads) at which every
    acceleration vanishes at rest, hysteretic elements relaxed.

    Solved by Levenberg-Marquardt on qacc(q) with q = q0 (+) dq (MuJoCo's integratePos);
    converged when |qacc| < 1e-12 m/s^2 (rad/s^2), a static residual force of ~1e-10 N.
    """
    with state_forces(model) as forces:
        if forces is not None:
            forces.relaxed = True
        return _equilibrium(model, qpos0, max_tilt_deg)


def _equilibrium(model, qpos0, max_tilt_deg):
    data = mujoco.MjData(model)
    q0 = np.array(model.qpos0 if qpos0 is None else qpos0, float)
    if qpos0 is None:
        q0[2] = 1.2

    def q_of(dq):
        q = q0.copy()
        mujoco.mj_integratePos(model, q, np.asarray(dq, float), 1.0)
        return q

    def resid(dq):
        data.qpos[:] = q_of(dq)
        data.qvel[:] = 0.0
        mujoco.mj_forward(model, data)
        return data.qacc.copy()

    nv = model.nv
    sol = least_squares(resid, np.zeros(nv), method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15)
    if np.max(np.abs(resid(sol.x))) > 1e-9:
        # far from the start: settle the platform by damped motion (extra damping on its
        # six degrees of freedom, 40 s), then solve again from there
        q0 = _settled(model, q_of(np.zeros(nv)))
        sol = least_squares(resid, np.zeros(nv), method="lm", xtol=1e-15, ftol=1e-15,
                            gtol=1e-15)
    q = q_of(sol.x)
    r = resid(sol.x)
    if np.max(np.abs(r)) > 1e-9:
        raise RuntimeError(f"no static equilibrium found (|qacc| = {np.max(np.abs(r)):.2e})")
    tilt = np.degrees(np.arccos(np.clip(platform_pose(q)[1][2, 2], -1.0, 1.0)))
    if tilt > max_tilt_deg:
        raise RuntimeError(f"the loaded platform's equilibrium is tilted {tilt:.0f} deg "
                           f"(an upright one is unstable)")
    return q


def _settled(model: mujoco.MjModel, q0: np.ndarray) -> np.ndarray:
    damp = model.dof_damping.copy()
    dt = model.opt.timestep
    data = mujoco.MjData(model)
    try:
        model.dof_damping[:6] = 80.0
        model.opt.timestep = 1e-3
        data.qpos[:] = q0
        mujoco.mj_step(model, data, nstep=40000)
        return data.qpos.copy()
    finally:
        model.dof_damping[:] = damp
        model.opt.timestep = dt


def perturbed_state(model: mujoco.MjModel, q_eq: np.ndarray, offset: np.ndarray,
                    velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An initial state away from equilibrium.

    ``offset`` = [dx, dy, dz (m, lab), rotation vector (rad, lab axes, about the platform
    origin)]; ``velocity`` = [v of the platform origin (m/s, lab), omega (rad/s, lab)].
    MuJoCo's free joint takes the angular velocity in the body frame: converted. Springs'
    beads move with their line (:func:`benchmarks.testbed.rigphysics.carry_beads`).
    """
    p, rot = platform_pose(q_eq)
    dr = Rotation.from_rotvec(offset[3:6]).as_matrix()
    q = set_platform_pose(q_eq, p + np.asarray(offset[:3]), dr @ rot)
    v = np.zeros(model.nv)
    _, rot1 = platform_pose(q)
    v[:3] = velocity[:3]
    v[3:6] = rot1.T @ np.asarray(velocity[3:6])
    return carry_beads(model, q_eq, q, v)


def simulate(model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray, *, rate_hz: float,
             duration_s: float, substeps: int = 10, control=None) -> Trajectory:
    """Integrate from (qpos, qvel) and sample every site at ``rate_hz``; ``control(t)``,
    when given, sets the subject's actuators' targets at every integration step; the rig's
    state-set forces (:mod:`benchmarks.testbed.rigphysics`) are MuJoCo's control callback,
    its hysteretic elements starting relaxed at ``qpos``.

    The model's timestep is set to 1 / (rate_hz substeps). Raises FloatingPointError when
    the state leaves the finite numbers (MuJoCo's own divergence warning).
    """
    model.opt.timestep = 1.0 / (rate_hz * substeps)
    with state_forces(model) as forces:
        return _simulate(model, qpos, qvel, rate_hz, duration_s, substeps, control, forces)


def _simulate(model, qpos, qvel, rate_hz, duration_s, substeps, control, forces):
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    data.qvel[:] = qvel
    if forces is not None:
        forces.relaxed = True
        mujoco.mj_forward(model, data)
        forces.relaxed = False
    own = forces.subject if forces is not None else slice(None)
    n = int(round(duration_s * rate_hz))
    names = [model.site(i).name for i in range(model.nsite)]
    keep = [i for i, s in enumerate(names) if not s.startswith(("anchor:", "attach:", "bead:"))]
    xyz = np.empty((n, len(keep), 3))
    qp = np.empty((n, model.nq))
    qv = np.empty((n, model.nv))
    for k in range(n):
        mujoco.mj_kinematics(model, data)
        xyz[k] = data.site_xpos[keep]
        qp[k] = data.qpos
        qv[k] = data.qvel
        if control is None:
            mujoco.mj_step(model, data, nstep=substeps)
            continue
        for s in range(substeps):
            data.ctrl[own] = control(data.time)
            mujoco.mj_step(model, data)
    if not np.all(np.isfinite(xyz)) or unstable(data):
        raise FloatingPointError("the MuJoCo simulation diverged")
    return Trajectory(np.arange(n) / rate_hz, [names[i] for i in keep], xyz, qp, qv)


def unstable(data: mujoco.MjData) -> bool:
    """Whether MuJoCo met a non-finite state (it then resets the state and warns)."""
    return any(data.warning[w].number > 0 for w in (mujoco.mjtWarning.mjWARN_BADQACC,
                                                     mujoco.mjtWarning.mjWARN_BADQVEL,
                                                     mujoco.mjtWarning.mjWARN_BADQPOS))


def energy(model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    """Total mechanical energy (J) of each state (MuJoCo's potential: gravity, tendon and
    joint springs; the progressive springs' quadratic term; kinetic from the mass matrix)."""
    data = mujoco.MjData(model)
    out = np.empty(len(qpos))
    for k in range(len(qpos)):
        data.qpos[:] = qpos[k]
        data.qvel[:] = qvel[k]
        mujoco.mj_forward(model, data)
        mujoco.mj_energyPos(model, data)
        mujoco.mj_energyVel(model, data)
        out[k] = data.energy[0] + data.energy[1] + progressive_potential(model, data)
    return out


def add_noise(markers_lab_m: np.ndarray, sigma_m: float, rng: np.random.Generator) -> np.ndarray:
    """White Gaussian noise of ``sigma_m`` per coordinate."""
    return markers_lab_m + rng.normal(0.0, sigma_m, markers_lab_m.shape)


def modes_hz(model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """Undamped linear modes (Hz, ascending) about the equilibrium ``qpos``: the angles of
    the eigenvalues of MuJoCo's finite-difference transition matrix over a 0.1 ms
    semi-implicit Euler step, the springs' and joints' damping off (a copy of ``model``)."""
    m = copy.deepcopy(model)
    m.opt.timestep, m.opt.integrator = 1e-4, mujoco.mjtIntegrator.mjINT_EULER
    m.tendon_damping[:] = 0.0
    m.dof_damping[:] = 0.0
    data = mujoco.MjData(m)
    data.qpos[:] = qpos
    mujoco.mj_forward(m, data)
    a = np.zeros((2 * m.nv, 2 * m.nv))
    mujoco.mjd_transitionFD(m, data, 1e-7, 1, a, None, None, None)
    lam = np.linalg.eigvals(a)
    return np.sort(np.angle(lam[lam.imag > 1e-12]) / (2 * np.pi * m.opt.timestep))
