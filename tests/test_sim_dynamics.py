"""Forward dynamics of the rig, checked against things the simulator does not compute itself.

- closed forms: one mass on one vertical spring (equilibrium stretch m g / k, frequency
  sqrt(k/m) / 2 pi, the whole response), a compound pendulum on a fixed base (small-angle
  period and the large-amplitude period from the complete elliptic integral);
- the linearised eigen-analysis of ``rigtool.rig.modes`` (separate code: stiffness matrix by
  hand) against modal coordinates of a small free vibration;
- conservation of mechanical energy without damping, its decrease with damping;
- the identification side's rigid-body regressor and spring wrench (separate code) against the
  simulated accelerations: a sign error shared by both sides would not pass the closed forms.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import CubicSpline
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation
from scipy.special import ellipk

from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams, regressor_body
from rigtool.rig import Platform, Rig, Spring, gravity_wrench, spring_wrench
from rigtool.sim.dynamics import (FixedBody, System, linear_modes, lumped_params,
                                  mechanical_energy, simulate, static_equilibrium)
from rigtool.sim.rigs import box_inertia, demo_rig, demo_tree
from rigtool.tree import Link, Tree

G = 9.80665


def fit_frequency_hz(t: np.ndarray, y: np.ndarray, guess_hz: float) -> float:
    """Frequency of ``y = a cos(w t) + b sin(w t) + c`` by nonlinear least squares."""
    def design(w):
        return np.column_stack([np.cos(w * t), np.sin(w * t), np.ones_like(t)])

    w0 = 2 * np.pi * guess_hz
    coef = np.linalg.lstsq(design(w0), y, rcond=None)[0]
    scale = np.max(np.abs(y))

    def resid(x):
        return (design(x[0]) @ x[1:] - y) / scale

    sol = least_squares(resid, np.concatenate([[w0], coef]), x_scale="jac", xtol=1e-14,
                        ftol=1e-14, gtol=1e-14)
    return sol.x[0] / (2 * np.pi)


def rest_energy(system: System) -> float:
    """Mechanical energy of the system at rest in its static equilibrium."""
    return float(mechanical_energy(system, simulate(system, 1.0, 1.0))[0])


def relative_drift(system: System, traj) -> float:
    """Peak-to-peak energy change over the excitation energy."""
    energy = mechanical_energy(system, traj)
    return float(np.ptp(energy) / (energy[0] - rest_energy(system)))


def pendulum_system(link_params: InertialParams, joint_m: np.ndarray,
                    joint_damping: float = 0.0) -> System:
    """A pendulum link on a base bolted to a platform whose six DOFs are locked."""
    rig = Rig("locked", Platform({}), (Spring("S1", np.array([0.0, 0.0, 1.0]), np.zeros(3),
                                               1000.0, 0.5),),
              locked_dofs=("x", "y", "z", "rx", "ry", "rz"))
    base = Link("base", "platform", None, InertialParams.from_com(
        10.0, np.zeros(3), box_inertia(10.0, (0.3, 0.3, 0.3))))
    bob = Link("bob", "base", joint_m, link_params)
    return System(rig, InertialParams.from_com(20.0, np.zeros(3), np.eye(3)),
                  tree=Tree((base, bob)), free_joints=True, joint_damping=joint_damping)


# --------------------------------------------------------------------------- equilibrium

def test_equilibrium_balances_every_force_with_independent_spring_code():
    rig, platform = demo_rig()
    block = FixedBody("block", InertialParams.from_com(8.0, np.array([0.0, 0.0, 0.05]),
                                                       box_inertia(8.0, (0.2, 0.2, 0.1))),
                      Rotation.from_euler("z", 0.3).as_matrix(), np.array([-0.3, 0.1, 0.0]))
    system = System(rig, platform, fixed=(block,), tree=demo_tree(),
                    base_rotation_platform=Rotation.from_euler("z", 0.1).as_matrix(),
                    base_position_platform_m=np.array([0.1, 0.0, 0.02]),
                    posture={"upper": Rotation.from_euler("x", 0.4).as_matrix()})
    rot, pos = static_equilibrium(system)
    assert np.allclose(rot.T @ rot, np.eye(3), atol=1e-14)
    total = spring_wrench(rig, rot, pos) + gravity_wrench(rig, rot, lumped_params(system))
    assert np.max(np.abs(total)) < 1e-9
    # The load weighs (25 + 8 + 42) kg: the springs carry exactly that.
    assert lumped_params(system).mass == pytest.approx(75.0)


def test_single_vertical_spring_closed_form():
    """Point mass on one spring, all but z locked: stretch m g / k and x(t) = A cos(w t)."""
    k, free_length, mass, amp = 2000.0, 0.8, 5.0, 0.01
    anchor = np.array([0.0, 0.0, 1.5])   # above the platform origin (x, y locked at 0)
    rig = Rig("one", Platform({}), (Spring("S", anchor, np.zeros(3), k, free_length),),
              locked_dofs=("x", "y", "rx", "ry", "rz"))
    system = System(rig, InertialParams(np.r_[mass, np.zeros(9)]))
    rot, pos = static_equilibrium(system)
    assert np.allclose(rot, np.eye(3))
    assert pos[2] == pytest.approx(anchor[2] - free_length - mass * G / k, abs=1e-12)
    traj = simulate(system, 5.0, 200.0, platform_offset=np.array([0, 0, amp, 0, 0, 0]))
    w = np.sqrt(k / mass)
    z = traj.position_m["platform"][:, 2] - pos[2]
    assert np.max(np.abs(z - amp * np.cos(w * traj.time_s))) < 1e-8
    assert np.allclose(traj.position_m["platform"][:, :2], 0.0, atol=1e-15)
    assert np.allclose(traj.accel_lab["platform"][:, 2], -w ** 2 * z, atol=1e-7)


# --------------------------------------------------------------------------- eigen-analysis

def test_small_vibration_frequencies_match_linearised_modes():
    """Modal coordinates of a small free vibration are single sinusoids at rig.modes' rates."""
    rig, platform = demo_rig()
    system = System(rig, platform, tree=demo_tree())
    freq, shapes = linear_modes(system)
    assert 0.3 < freq[0] and freq[-1] < 4.0
    # Excite every mode at once (1 mm / 1 mrad scale) and project back on the modes.
    amp = 1e-3 * shapes @ np.ones(6) / np.max(np.abs(shapes @ np.ones(6)))
    traj = simulate(system, 16.0, 50.0, platform_offset=amp)
    rot_eq, pos_eq = static_equilibrium(system)
    q = np.hstack([traj.position_m["platform"] - pos_eq,
                   Rotation.from_matrix(traj.rotation["platform"] @ rot_eq.T).as_rotvec()])
    from rigtool.rig import mass_matrix_lab
    modal = q @ (mass_matrix_lab(lumped_params(system), rot_eq) @ shapes)
    for i in range(6):
        fitted = fit_frequency_hz(traj.time_s, modal[:, i], freq[i])
        assert fitted == pytest.approx(freq[i], rel=2e-3), i


def test_rhs_jacobian_at_equilibrium_has_the_modes_frequencies():
    """Eigenvalues of the linearised equations of motion (finite differences of the
    simulator's right-hand side) are +-i 2 pi f with f from rig.modes."""
    from rigtool.sim._fastrhs import FastRHS
    from rigtool.sim.dynamics import _assemble, _initial_state

    rig, platform = demo_rig(locked_dofs=("rz",))
    system = System(rig, platform, tree=demo_tree())
    model, outputs = _assemble(system)
    y0 = _initial_state(system, model, outputs, np.zeros(6), np.zeros(6), None, None)
    rhs = FastRHS(model)
    assert np.max(np.abs(rhs(0.0, y0))) < 1e-9
    step = 1e-7
    jac = np.column_stack([(rhs(0.0, y0 + e) - rhs(0.0, y0 - e)) / (2 * step)
                           for e in step * np.eye(len(y0))])
    ev = np.linalg.eigvals(jac)
    freq_sim = np.sort(ev.imag[ev.imag > 1e-3]) / (2 * np.pi)
    freq, _ = linear_modes(system)
    assert len(freq) == 5
    assert np.allclose(freq_sim, freq, rtol=1e-6)


# --------------------------------------------------------------------------- pendulum

def test_pendulum_small_and_large_amplitude_periods():
    mass, d = 2.0, 0.4
    params = InertialParams.from_com(mass, np.array([0.0, 0.0, -d]),
                                     np.diag([0.02, 0.03, 0.01]))
    system = pendulum_system(params, np.array([0.0, 0.0, 0.5]))
    i_pivot = 0.02 + mass * d * d
    w0 = np.sqrt(mass * G * d / i_pivot)
    # Small angle: 2 pi sqrt(I / (m g d)).
    small = simulate(system, 6.0, 100.0,
                     link_rotation={"bob": Rotation.from_euler("x", 0.01).as_matrix()})
    r = small.rotation["bob"]
    theta = np.arctan2(r[:, 2, 1], r[:, 1, 1])
    assert fit_frequency_hz(small.time_s, theta, w0 / (2 * np.pi)) == pytest.approx(
        w0 / (2 * np.pi), rel=2e-5)
    assert np.allclose(small.position_m["bob"], [0.0, 0.0, 0.5], atol=1e-12)
    # Large amplitude: T = 4 K(sin^2(theta0 / 2)) / w0, and energy conserved.
    theta0 = 1.2
    big = simulate(system, 3.0, 1000.0,
                   link_rotation={"bob": Rotation.from_euler("x", theta0).as_matrix()})
    r = big.rotation["bob"]
    theta = np.arctan2(r[:, 2, 1], r[:, 1, 1])
    idx = np.nonzero(np.diff(np.sign(theta)) != 0)[0]
    t_cross = big.time_s[idx] - theta[idx] * (big.time_s[idx + 1] - big.time_s[idx]) / (
        theta[idx + 1] - theta[idx])
    period = 2 * np.mean(np.diff(t_cross))
    assert period == pytest.approx(4 * ellipk(np.sin(theta0 / 2) ** 2) / w0, rel=1e-7)
    energy = mechanical_energy(system, big)
    assert np.ptp(energy) / (mass * G * d * (1 - np.cos(theta0))) < 1e-8


def test_pendulum_on_sliding_platform_matches_two_dof_closed_form():
    """Free joint coupled to the platform: a compound pendulum on a cart (x only) held by one
    horizontal spring. Linearised by hand: M = [[M_c + m, -m d], [-m d, I_p]],
    K = diag(k, m g d); its two frequencies against modal coordinates of the simulation."""
    k, free_length = 400.0, 0.5
    rig = Rig("cart", Platform({}), (Spring("S", np.array([-0.9, 0.0, 0.0]), np.zeros(3), k,
                                            free_length),),
              locked_dofs=("y", "z", "rx", "ry", "rz"))
    cart = InertialParams.from_com(6.0, np.zeros(3), np.eye(3))
    base = Link("base", "platform", None, InertialParams.from_com(4.0, np.zeros(3), np.eye(3)))
    mass, d, i_com = 3.0, 0.35, 0.04
    bob = Link("bob", "base", np.array([0.1, 0.0, 0.2]),
               InertialParams.from_com(mass, np.array([0.0, 0.0, -d]), np.eye(3) * i_com))
    system = System(rig, cart, tree=Tree((base, bob)), free_joints=True)
    rot_eq, pos_eq = static_equilibrium(system)
    assert pos_eq[0] == pytest.approx(-0.9 + free_length, abs=1e-12)
    m_mat = np.array([[10.0 + mass, -mass * d], [-mass * d, i_com + mass * d * d]])
    k_mat = np.diag([k, mass * G * d])
    from scipy.linalg import eigh
    w2, shapes = eigh(k_mat, m_mat)
    freq = np.sqrt(w2) / (2 * np.pi)
    traj = simulate(system, 15.0, 50.0, platform_offset=np.array([0.002, 0, 0, 0, 0, 0]),
                    link_rotation={"bob": Rotation.from_euler("y", 0.01).as_matrix()})
    r = traj.rotation["bob"]
    q = np.column_stack([traj.position_m["platform"][:, 0] - pos_eq[0],
                         np.arctan2(r[:, 0, 2], r[:, 0, 0])])
    modal = q @ m_mat @ shapes
    for i in range(2):
        assert fit_frequency_hz(traj.time_s, modal[:, i], freq[i]) == pytest.approx(
            freq[i], rel=1e-4)


def test_joint_damping_dissipates():
    params = InertialParams.from_com(2.0, np.array([0.0, 0.0, -0.4]), np.diag([0.02] * 3))
    system = pendulum_system(params, np.array([0.0, 0.0, 0.5]), joint_damping=0.2)
    traj = simulate(system, 3.0, 50.0,
                    link_rotation={"bob": Rotation.from_euler("xy", [0.5, 0.3]).as_matrix()},
                    link_omega={"bob": np.array([0.0, 0.0, 2.0])})
    energy = mechanical_energy(system, traj)
    assert np.all(np.diff(energy) < 1e-9)
    assert energy[-1] < energy[0] - 0.5


# --------------------------------------------------------------------------- energy

@pytest.fixture(scope="module")
def locked_run():
    rig, platform = demo_rig()
    system = System(rig, platform, tree=demo_tree(),
                    posture={"upper": Rotation.from_euler("y", 0.5).as_matrix()})
    traj = simulate(system, 30.0, 60.0,
                    platform_offset=np.array([0.02, -0.01, 0.015, 0.03, -0.02, 0.05]),
                    platform_velocity=np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.1]))
    return system, traj


def test_energy_conserved_locked_load(locked_run):
    system, traj = locked_run
    assert relative_drift(system, traj) < 1e-6


@pytest.mark.slow
def test_energy_conserved_free_joints():
    rig, platform = demo_rig()
    tree = demo_tree()
    tree = Tree(tuple(l for l in tree.links if l.name != "side"))
    system = System(rig, platform, tree=tree, free_joints=True)
    traj = simulate(system, 30.0, 30.0,
                    platform_offset=np.array([0.01, 0.01, 0.01, 0.02, 0.01, 0.02]),
                    link_rotation={"upper": Rotation.from_euler("x", 0.4).as_matrix()},
                    link_omega={"lower": np.array([0.5, 0.0, 1.0])}, rtol=1e-9)
    # rtol 1e-9 keeps the test fast; the benchmark shows ~4e-10 at the default 1e-10.
    assert relative_drift(system, traj) < 1e-6
    # The swinging links really swing relative to the base.
    rel = np.einsum("tji,tjk->tik", traj.rotation["frame"], traj.rotation["upper"])
    assert np.ptp(Rotation.from_matrix(rel).magnitude()) > 0.3


def test_locked_dofs_stay_locked_and_energy_is_conserved():
    """Guides on rx, ry (lab axes) and y: the platform only yaws, moves in x and z."""
    rig, platform = demo_rig(locked_dofs=("y", "rx", "ry"))
    system = System(rig, platform, tree=demo_tree())
    rot_eq, pos_eq = static_equilibrium(system)
    assert np.allclose(rot_eq[2], [0, 0, 1], atol=1e-15) and pos_eq[1] == 0.0
    traj = simulate(system, 5.0, 50.0, platform_offset=np.full(6, 0.01),
                    platform_velocity=np.full(6, 0.05))
    assert np.all(traj.omega_lab["platform"][:, :2] == 0.0)
    assert np.all(traj.position_m["platform"][:, 1] == 0.0)
    assert np.allclose(traj.rotation["platform"][:, 2], [0, 0, 1], atol=1e-12)
    assert np.ptp(traj.rotation["platform"][:, 0, 1]) > 1e-3      # it does yaw
    assert relative_drift(system, traj) < 1e-6


def test_spring_damping_dissipates():
    rig, platform = demo_rig(spring_damping_n_s_m=20.0)
    system = System(rig, platform, tree=demo_tree())
    traj = simulate(system, 4.0, 50.0, platform_offset=np.array([0.01, 0, 0.02, 0, 0.02, 0]))
    energy = mechanical_energy(system, traj)
    assert np.all(np.diff(energy) < 1e-9)


# --------------------------------------------------------------------------- identification side

def test_accelerations_satisfy_identification_regressor(locked_run):
    """Y(a - g, w, dw) pi = spring wrench, both computed by the identification code."""
    system, traj = locked_run
    rig = system.rig
    rot = traj.rotation["platform"]
    rt = np.swapaxes(rot, 1, 2)
    g_body = rt @ rig.gravity_lab
    a_body = np.einsum("tij,tj->ti", rt, traj.accel_lab["platform"]) - g_body
    w_body = np.einsum("tij,tj->ti", rt, traj.omega_lab["platform"])
    dw_body = np.einsum("tij,tj->ti", rt, traj.alpha_lab["platform"])
    wrench_body = regressor_body(a_body, w_body, dw_body) @ lumped_params(system).pi
    springs = spring_wrench(rig, rot, traj.position_m["platform"],
                            traj.velocity_lab["platform"], traj.omega_lab["platform"])
    springs_body = np.concatenate([np.einsum("tij,tj->ti", rt, springs[:, :3]),
                                   np.einsum("tij,tj->ti", rt, springs[:, 3:])], 1)
    assert np.max(np.abs(wrench_body - springs_body)) < 1e-6 * np.max(np.abs(springs_body))


def _external_wrench_lab(traj, name, params, gravity):
    """Non-gravity wrench on one body about its origin (lab), by the identification regressor."""
    rot = traj.rotation[name]
    rt = np.swapaxes(rot, 1, 2)
    body = regressor_body(np.einsum("tij,tj->ti", rt, traj.accel_lab[name] - gravity),
                          np.einsum("tij,tj->ti", rt, traj.omega_lab[name]),
                          np.einsum("tij,tj->ti", rt, traj.alpha_lab[name])) @ params.pi
    return np.concatenate([np.einsum("tij,tj->ti", rot, body[:, :3]),
                           np.einsum("tij,tj->ti", rot, body[:, 3:])], 1)


def test_free_joints_transmit_force_but_only_damping_torque():
    """Newton-Euler per link from the simulated motion: a spherical joint passes a force and
    only its damping torque; all joint forces cancel in the total (= springs)."""
    rig, platform = demo_rig()
    tree = demo_tree()
    c_side = 0.4
    system = System(rig, platform, tree=tree, free_joints=True, joint_damping={"side": c_side})
    traj = simulate(system, 2.0, 100.0,
                    platform_offset=np.array([0.01, -0.01, 0.015, 0.02, -0.01, 0.03]),
                    link_rotation={"upper": Rotation.from_euler("x", 0.6).as_matrix(),
                                   "side": Rotation.from_euler("y", -0.5).as_matrix()},
                    link_omega={"lower": np.array([1.0, 0.0, 2.0])})
    g = rig.gravity_lab
    links = {l.name: l for l in tree.links}
    wr = {n: _external_wrench_lab(traj, n, links[n].params, g) for n in ("upper", "lower", "side")}
    scale = 5.0 * 9.81 * 0.2                        # m g d of the heaviest link, N m
    # leaf links: moment about the joint centre = joint damping torque only
    assert np.max(np.abs(wr["lower"][:, 3:])) < 1e-8 * scale
    damping = -c_side * (traj.omega_lab["side"] - traj.omega_lab["frame"])
    assert np.max(np.abs(wr["side"][:, 3:] - damping)) < 1e-8 * scale
    assert np.max(np.abs(damping)) > 0.1
    # upper: only the reaction of lower at lower's joint centre
    lever = traj.position_m["lower"] - traj.position_m["upper"]
    assert np.allclose(wr["upper"][:, 3:], np.cross(lever, -wr["lower"][:, :3]),
                       atol=1e-8 * scale)
    # everything on the springs: sum of wrenches about the lab origin = spring wrench
    total = np.zeros((len(traj.time_s), 6))
    bodies = {"platform": platform, "frame": links["frame"].params,
              **{n: links[n].params for n in wr}}
    for name, params in bodies.items():
        w = _external_wrench_lab(traj, name, params, g)
        total += np.concatenate([w[:, :3], w[:, 3:] + np.cross(traj.position_m[name],
                                                                   w[:, :3])], 1)
    springs = spring_wrench(rig, traj.rotation["platform"], traj.position_m["platform"],
                            traj.velocity_lab["platform"], traj.omega_lab["platform"])
    p = traj.position_m["platform"]
    springs_o = np.concatenate([springs[:, :3], springs[:, 3:] + np.cross(p, springs[:, :3])], 1)
    assert np.max(np.abs(total - springs_o)) < 1e-8 * np.max(np.abs(springs_o))


def test_trajectory_sampling_and_rigid_bodies(locked_run):
    system, traj = locked_run
    assert len(traj.time_s) == 1800 and traj.time_s[1] == pytest.approx(1 / 60)
    assert set(traj.rotation) == {"platform", "frame", "upper", "lower", "side"}
    # Bodies fixed to the platform keep their platform-frame pose; velocities are consistent.
    rel = np.einsum("tji,tjk->tik", traj.rotation["platform"], traj.rotation["frame"])
    assert np.allclose(rel, system.base_rotation_platform, atol=1e-12)
    spline = CubicSpline(traj.time_s, traj.position_m["side"])
    v_num = spline(traj.time_s, 1)[10:-10]
    assert np.max(np.abs(v_num - traj.velocity_lab["side"][10:-10])) < 1e-4


# --------------------------------------------------------------------------- fast path

@pytest.mark.parametrize("free_joints, locked, damping",
                         [(True, (), 0.0), (True, ("x", "rz"), 5.0), (False, (), 0.0),
                          (False, ("z",), 3.0)])
def test_fast_rhs_equals_reference_rhs(free_joints, locked, damping):
    """The integrator's lean right-hand side and the readable batched one agree."""
    from rigtool.sim import _model
    from rigtool.sim._fastrhs import FastRHS
    from rigtool.sim.dynamics import _assemble

    rig, platform = demo_rig(spring_damping_n_s_m=damping, locked_dofs=locked)
    system = System(rig, platform, tree=demo_tree(), free_joints=free_joints,
                    joint_damping={"upper": 0.3 * damping, "side": 0.1})
    model, _ = _assemble(system)
    rng = np.random.default_rng(7)
    b = model.n_bodies
    for _ in range(3):
        y = np.concatenate([0.1 * rng.normal(size=3), 1.3 * rng.normal(size=4 * b),
                            rng.normal(size=model.n_nu)])
        y[3 + 4 * b:][np.setdiff1d(np.arange(model.n_nu), model.free)] = 0.0
        ref = _model.state_derivative(model, y)
        assert np.allclose(FastRHS(model)(0.0, y), ref, rtol=0, atol=1e-11 * np.abs(ref).max())
        # batched reference == one state at a time
        assert np.allclose(_model.state_derivative(model, np.stack([y, y]))[1], ref,
                           rtol=0, atol=1e-11 * np.abs(ref).max())


# --------------------------------------------------------------------------- errors

def test_errors_name_the_field():
    rig, platform = demo_rig()
    bad = Rig(rig.name, rig.platform, rig.springs, locked_dofs=("q",))
    with pytest.raises(ConfigError, match="locked_dofs"):
        simulate(System(bad, platform), 1.0, 10.0)
    weak = Rig(rig.name, rig.platform, tuple(
        Spring(s.name, s.anchor_lab, s.attachment_platform, 0.0, s.free_length)
        for s in rig.springs))
    with pytest.raises(ConfigError, match="cannot hold the load"):
        static_equilibrium(System(weak, platform))
    links = demo_tree().links
    tree = Tree((links[0], Link("x", "frame", np.zeros(3), None)))
    with pytest.raises(ConfigError, match="inertial parameters"):
        simulate(System(rig, platform, tree=tree), 1.0, 10.0)
    with pytest.raises(ConfigError, match="free_joints"):
        simulate(System(rig, platform, tree=demo_tree()), 1.0, 10.0,
                 link_rotation={"upper": np.eye(3)})
    with pytest.raises(ConfigError, match="physically consistent"):
        simulate(System(rig, InertialParams(np.r_[25.0, 0, 0, 0, -1.0, 0, 0, 1, 0, 1])),
                 1.0, 10.0)
    point = InertialParams(np.r_[25.0, np.zeros(9)])
    with pytest.raises(ConfigError, match="singular"):
        simulate(System(rig, point), 1.0, 10.0)
    with pytest.raises(ConfigError, match="singular"):
        simulate(System(rig, point), 0.1, 10.0)          # one sample: no integration
    one = Rig("one", Platform({}), (Spring("S", np.array([0.0, 0.0, 1.5]), np.zeros(3), 100.0,
                                           0.8),), locked_dofs=("x", "y", "rx", "ry", "rz"))
    lift = 1.5 - static_equilibrium(System(one, point))[1][2]   # attachment onto the anchor
    with pytest.raises(ConfigError, match="excitation"), np.errstate(all="ignore"):
        simulate(System(one, point), 1.0, 10.0, platform_offset=np.array([0, 0, lift, 0, 0, 0]))
    with pytest.raises(ConfigError, match="own name"):
        simulate(System(rig, platform, fixed=(FixedBody("frame", platform),),
                        tree=demo_tree()), 1.0, 10.0)
