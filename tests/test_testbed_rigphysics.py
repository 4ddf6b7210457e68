"""The test bed's real-rig physics (benchmarks/testbed/rigphysics.py, markernoise.py) checked
against closed forms and energy: springs with mass (a beaded string), progressive stiffness,
hysteretic damping, a compliant frame and flicker marker noise."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from benchmarks.testbed import simulate as sim
from benchmarks.testbed.demo import demo_study
from benchmarks.testbed.markernoise import add_flicker, flicker
from benchmarks.testbed.model import Body, Rig, Spring, mjcf
from benchmarks.testbed.rigphysics import (RigPhysics, StateForces, bead_bodies,
                                           frame_body, maxwell_elements, spring_tendons,
                                           storage_stiffness)

G = 9.80665


def _dmd_frequencies(x: np.ndarray, rate_hz: float) -> np.ndarray:
    """Frequencies (Hz) of the linear map advancing the sampled states ``x`` (n, d) a frame."""
    a = x[1:].T @ np.linalg.pinv(x[:-1].T)
    f = np.angle(np.linalg.eigvals(a)) * rate_hz / (2 * np.pi)
    return np.sort(f[f > 0])


def _chain_xml(physics: RigPhysics, k: float, free_length: float, length: float) -> str:
    """One spring stretched between two fixed points ``length`` apart, gravity off."""
    anchor, attach = np.array([0.0, 0.0, length]), np.zeros(3)
    tendons, _ = spring_tendons(physics, "S", k, free_length, 0.0)
    return ('<mujoco><option gravity="0 0 0" integrator="RK4"><flag contact="disable"/>'
            f'</option><worldbody><site name="anchor:S" pos="0 0 {length!r}"/>'
            '<site name="attach:S" pos="0 0 0"/>'
            + bead_bodies(physics, "S", anchor, attach)
            + f"</worldbody><tendon>{tendons}</tendon></mujoco>")


@pytest.mark.parametrize("beads", [4, 16])
def test_spring_chain_lateral_modes_are_a_beaded_string(beads):
    """The chain's lateral modes: the beaded string's closed form to RK4's accuracy, and its
    first within the lumping's bound of the taut string's f = (1/2L) sqrt(T L / m)."""
    k, free_length, length, m = 3000.0, 1.02, 1.10, 0.40
    physics = RigPhysics(spring_mass_kg=m, spring_beads=beads)
    model = sim.compile_model(_chain_xml(physics, k, free_length, length))
    n = beads
    tension = k * (length - free_length)
    mb, a = m / (n + 1), length / (n + 1)
    j = np.arange(1, n + 1)
    f_closed = 2 * np.sqrt(tension / (mb * a)) * np.sin(j * np.pi / (2 * (n + 1))) / (2 * np.pi)
    # a 1 um lateral push of every bead (x only: lateral motion is uncoupled from the rest
    # to first order; the second-order coupling is (1 um / 0.2 m)^2 = 3e-11 relative)
    rng = np.random.default_rng(1)
    qvel = np.zeros(model.nv)
    qpos = np.zeros(model.nq)
    qpos[0::3] = 1e-6 * rng.standard_normal(n)
    rate = 20.0 * f_closed[-1]
    traj = sim.simulate(model, qpos, qvel, rate_hz=rate, duration_s=40.0 / f_closed[0])
    f_sim = _dmd_frequencies(np.hstack([traj.qpos[:, 0::3], traj.qvel[:, 0::3]]), rate)
    # RK4's phase error (omega h)^4 / 120 at omega h = 2 pi / 200: 2e-9; 1e-6 relative
    np.testing.assert_allclose(f_sim, f_closed, rtol=1e-6)
    f_string = np.sqrt(tension * length / m) / (2 * length)
    # lumping error of the first mode: 1 - sin(x) / x < x^2 / 6, x = pi / (2 (n + 1))
    x = np.pi / (2 * (n + 1))
    assert 0.0 < 1.0 - f_sim[0] / f_string < x * x / 6.0


def _hanging(mass: float, k: float, free_length: float, physics: RigPhysics,
             damping: float = 0.0) -> mujoco.MjModel:
    """A free body hanging from one vertical spring attached at its COM."""
    body = Body("platform", mass, np.zeros(3), np.diag([1.0, 1.0, 1.0]) * mass * 0.05)
    rig = Rig("one", body, [Spring("S", np.array([0.0, 0.0, 2.3]), np.zeros(3), k,
                                   free_length, damping)])
    return sim.compile_model(mjcf(rig, physics=physics))


def test_progressive_spring_static_stretch():
    """m g = k (X + b X^2 / 2): the stretch of a progressive spring under a hanging mass."""
    mass, k, free_length = 40.0, 3000.0, 1.0
    physics = RigPhysics(progressive=0.015, stroke_m=0.07)
    q = sim.equilibrium(_hanging(mass, k, free_length, physics))
    b = physics.progressive / physics.stroke_m
    x_closed = (np.sqrt(1.0 + 2.0 * b * mass * G / k) - 1.0) / b
    stretch = 2.3 - q[2] - free_length
    # the linear spring's stretch m g / k is 0.131 m; the progressive term shortens it by
    # b X^2 / 2 / (1 + b X) X ~ 1.4 %: 1e-9 m (a residual force of 3e-6 N) tells them apart
    assert abs(mass * G / k - x_closed) > 1e-3
    assert abs(stretch - x_closed) < 1e-9


@pytest.fixture(scope="module")
def study():
    return demo_study()


@pytest.mark.parametrize("physics", [RigPhysics(progressive=0.015),
                                     RigPhysics(spring_mass_kg=0.4),
                                     RigPhysics(frame_mass_kg=17.0, frame_damping_ratio=0.0)],
                         ids=["progressive", "mass", "frame"])
def test_energy_conserved_without_damping(study, physics):
    """Damping off, the loaded rig's energy (MuJoCo's, plus the progressive springs' cubic
    potential) is conserved: the progressive force set at every Runge-Kutta stage, the
    beads' and the frame's joints integrated with the platform."""
    xml = mjcf(study.rig, subject=study.subject, rotations=study.postures[0].rotations,
               spring_damping=False, physics=physics)
    model = sim.compile_model(xml)
    q_eq = sim.equilibrium(model)
    q0, v0 = sim.perturbed_state(model, q_eq, study.capture.offset, study.capture.velocity)
    # the frame's and the beads' modes reach 35 and 90 Hz: 40 steps a frame at 120 Hz
    # keep omega h < 0.12, RK4's energy error (omega h)^6 / 72 < 5e-8 per step of the
    # fastest mode's share
    traj = sim.simulate(model, q0, v0, rate_hz=120.0, duration_s=4.0, substeps=40)
    e = sim.energy(model, traj.qpos, traj.qvel)
    e_rest = sim.energy(model, q_eq[None], np.zeros((1, model.nv)))[0]
    swing = e[0] - e_rest
    assert swing > 0.1
    assert np.max(np.abs(e - e[0])) < 1e-6 * swing


def test_progressive_force_is_set_at_every_stage(study):
    """The same energy check with the force held over each step (a zero-order hold, what a
    per-step control would give) fails: the tolerance above can tell."""
    physics = RigPhysics(progressive=0.015)
    xml = mjcf(study.rig, subject=study.subject, rotations=study.postures[0].rotations,
               spring_damping=False, physics=physics)
    model = sim.compile_model(xml)
    q_eq = sim.equilibrium(model)
    q0, v0 = sim.perturbed_state(model, q_eq, study.capture.offset, study.capture.velocity)
    forces = StateForces(model)
    model.opt.timestep = 1.0 / 4800.0
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = q0, v0
    qp, qv = [], []
    for _ in range(480):
        for _ in range(40):
            mujoco.mj_forward(model, data)
            forces(model, data)            # held for the step
            mujoco.mj_step(model, data)
        qp.append(data.qpos.copy())
        qv.append(data.qvel.copy())
    e = sim.energy(model, np.array(qp), np.array(qv))
    e_rest = sim.energy(model, q_eq[None], np.zeros((1, model.nv)))[0]
    assert np.max(np.abs(e - e[0])) > 1e-6 * (e[0] - e_rest)


def test_maxwell_fit_is_flat():
    """The Biot model's loss is the loss factor across its band (the fit's claim)."""
    eta, band = 0.01, (0.3, 5.0)
    phys = RigPhysics(loss_factor=eta, band_hz=band)
    for f in np.geomspace(*band, 25):
        storage, loss = storage_stiffness(phys, f)
        assert abs(loss / eta - 1.0) < 1e-3
        assert 1.0 < storage < 1.0 + 4 * eta       # Kramers-Kronig: (2 eta / pi) ln f
    tau, kr = maxwell_elements(eta, band)
    assert np.all(kr > 0) and np.all(tau > 0)


def _peaks(v: np.ndarray) -> np.ndarray:
    """Parabola-refined values of the local maxima of a sampled signal."""
    i = np.flatnonzero((v[1:-1] > v[:-2]) & (v[1:-1] >= v[2:])) + 1
    a, b, c = v[i - 1], v[i], v[i + 1]
    return b - 0.25 * (a - c) ** 2 / (a - 2 * b + c)


@pytest.mark.parametrize("f_hz", [0.8, 3.0])
def test_hysteretic_decay_per_cycle_is_pi_eta(f_hz):
    """A mass on a hysteretic spring: the logarithmic decrement of its free vibration is
    pi eta' (eta' = loss / storage of the Biot model at its frequency, the closed form), and
    so pi eta within the storage's rise (Kramers-Kronig), at 0.8 Hz as at 3 Hz."""
    eta, k, free_length = 0.01, 3000.0, 1.0
    physics = RigPhysics(loss_factor=eta)
    storage, loss = storage_stiffness(physics, f_hz)
    mass = k * storage / (2 * np.pi * f_hz) ** 2
    model = _hanging(mass, k, free_length, physics, damping=6.0)   # the viscous one: off
    q_eq = sim.equilibrium(model)
    q0, v0 = sim.perturbed_state(model, q_eq, np.zeros(6), np.array([0, 0, 0.05, 0, 0, 0]))
    rate = 100.0 * f_hz
    traj = sim.simulate(model, q0, v0, rate_hz=rate, duration_s=32.0 / f_hz)
    vz = traj.qvel[:, 2]
    peaks = _peaks(vz)[2:]                     # after the fast elements' transients
    slope = np.polyfit(np.arange(len(peaks)), np.log(peaks), 1)[0]
    delta = -slope
    # The decrement of a complex stiffness k*(omega) is pi eta' (1 + O(eta'^2)) with k*
    # taken at the decaying motion's complex frequency omega (1 + i eta / 2): a constant-loss
    # stiffness ~ (i omega)^(2 eta / pi) there has the loss eta (1 + eta / pi) (+0.3 %).
    # The slow elements' creep in the velocity is < 1e-3 of the swing, the peaks' parabola
    # error < (2 pi / 100)^4 / 8: 1e-3 is the tolerance.
    np.testing.assert_allclose(delta, np.pi * loss / storage * (1 + eta / np.pi), rtol=1e-3)
    assert abs(delta / (np.pi * eta) - 1.0) < 4 * eta


def test_frame_modes_and_sag(study):
    """The frame alone has its six stated modes; under the rig its vertical slide carries
    the frame's and the platform's weight (the springs' vertical pull is the platform's)."""
    physics = RigPhysics(frame_mass_kg=17.0, frame_damping_ratio=0.0)
    anchors = {s.name: s.anchor_lab_m for s in study.rig.springs}
    alone = sim.compile_model('<mujoco><option gravity="0 0 0" integrator="RK4"/><worldbody>'
                              + frame_body(physics, anchors) + "</worldbody></mujoco>")
    rng = np.random.default_rng(2)
    traj = sim.simulate(alone, 1e-7 * rng.standard_normal(6), np.zeros(6), rate_hz=600.0,
                        duration_s=2.0)
    f_sim = _dmd_frequencies(np.hstack([traj.qpos, traj.qvel]), 600.0)
    np.testing.assert_allclose(f_sim, np.sort(physics.frame_modes_hz), rtol=1e-5)
    model = sim.compile_model(mjcf(study.rig, physics=physics))
    q = sim.equilibrium(model)
    z = q[model.joint("rig-frame:2").qposadr[0]]
    k_z = 17.0 * (2 * np.pi * physics.frame_modes_hz[2]) ** 2
    weight = (17.0 + study.rig.platform.mass_kg) * G
    assert abs(z + weight / k_z) < 1e-9


def test_flicker_noise_spectrum():
    """Flicker noise: root-mean-square exactly sigma, power spectrum ~ 1/f (slope -1 on
    log-log within its sampling error), the common part the same on every marker."""
    rng = np.random.default_rng(5)
    x = flicker(4096, (400,), 3e-5, rng)
    np.testing.assert_allclose(np.sqrt(np.mean(x * x, axis=0)), 3e-5, rtol=1e-12)
    psd = np.mean(np.abs(np.fft.rfft(x, axis=0)) ** 2, axis=1)
    f = np.arange(len(psd))
    band = slice(4, 1024)
    slope = np.polyfit(np.log(f[band]), np.log(psd[band]), 1)[0]
    # 400 series: each bin's mean power to +-5 %, the slope over 2.4 decades to +-0.02
    assert abs(slope + 1.0) < 0.05
    zero = np.zeros((2048, 5, 3))
    common = add_flicker(zero, 3e-5, 0.0, rng)
    np.testing.assert_array_equal(common[:, 0], common[:, 4])
    apart = add_flicker(zero, 0.0, 3e-5, rng)
    assert abs(np.corrcoef(apart[:, 0, 0], apart[:, 4, 0])[0, 1]) < 0.3
