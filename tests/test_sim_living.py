"""The living-body simulator, checked against balances it does not compute itself.

- internal forces stay internal: the total momentum of rig + body (every rigid body, the
  breathing and blood masses on their paths, the wobbling masses, the object on its pads)
  changes only by the springs' force and gravity;
- energy: without damping a wobbling/supported body conserves spring + gravity + kinetic +
  pad energy; with tissue damping the loss equals the work of the dampers;
- the closed-form apparent mass of a wobbling mass on a harmonically shaken base,
  ``m (1 + 2 i zeta r) / (1 - r^2 + 2 i zeta r)``;
- no living effect: the simulator's trajectory is the rigid one bit for bit.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from rigtool.errors import ConfigError
from rigtool.sim._parts import LivingTerms, Pad, PointSatellite
from rigtool.sim.dynamics import System, mechanical_energy, simulate
from rigtool.sim.living import (BreathingSpec, CardiacSpec, Living, SupportSpec, WobblingSpec,
                                breathing_path, cardiac_path)
from rigtool.sim.rigs import demo_rig, demo_tree

OFFSET = np.array([0.01, -0.01, 0.01, 0.03, -0.02, 0.03])
VELOCITY = np.array([0.02, 0.0, -0.01, 0.05, 0.0, 0.05])
POSTURE = {"upper": Rotation.from_euler("y", 0.5).as_matrix()}


def system_with(living, *, spring_damping=0.0, free_joints=False):
    rig, platform = demo_rig(spring_damping_n_s_m=spring_damping)
    return System(rig, platform, tree=demo_tree(), posture=POSTURE, living=living,
                  living_seed=3, free_joints=free_joints)


def _rigid_terms(traj, system):
    """Momentum ``[T, 3]`` and energy ``[T]`` of the physical bodies with their full
    (mean) parameters, plus the internal masses' corrections."""
    gravity = system.rig.gravity_lab
    bodies = {"platform": system.platform_params}
    bodies.update({l.name: l.params for l in system.tree.links})
    momentum = np.zeros((len(traj.time_s), 3))
    for name, params in bodies.items():
        h = traj.rotation[name] @ params.first_moment
        momentum += params.mass * traj.velocity_lab[name] + np.cross(traj.omega_lab[name], h)
    energy = mechanical_energy(replace(system, living=None), traj)
    for name, item in traj.internal.items():
        if name == "pads":
            continue
        link, m = item["link"], item["mass"]
        lever = traj.rotation[link] @ item["rest_link"]
        x_rest = traj.position_m[link] + lever
        v_rest = traj.velocity_lab[link] + np.cross(traj.omega_lab[link], lever)
        v = item["velocity_lab"]
        momentum += m * (v - v_rest)
        energy += 0.5 * m * (np.sum(v * v, -1) - np.sum(v_rest * v_rest, -1))
        energy -= m * (item["position_m"] - x_rest) @ gravity
    return momentum, energy


def _spring_force(system, traj):
    """Total spring force on the platform (lab), written here from the spring definitions."""
    rot, pos = traj.rotation["platform"], traj.position_m["platform"]
    vel, omega = traj.velocity_lab["platform"], traj.omega_lab["platform"]
    total = np.zeros((len(traj.time_s), 3))
    for s in system.rig.springs:
        lever = rot @ s.attachment_platform
        d = pos + lever - s.anchor_lab
        length = np.linalg.norm(d, axis=-1, keepdims=True)
        u = d / length
        rate = np.sum(u * (vel + np.cross(omega, lever)), -1, keepdims=True)
        total -= (s.stiffness * (length - s.free_length) + s.damping * rate) * u
    return total


LIVING_CASES = {
    "breathing": Living(breathing=BreathingSpec(rate_per_min=18.0, mass_kg=3.0,
                                                direction_link=np.array([0.3, 0.0, 1.0]))),
    "cardiac": Living(cardiac=CardiacSpec(force_n=2.0)),
    "wobbling": Living(wobbling=(WobblingSpec("frame", 0.3, 5.0, 0.3),
                                 WobblingSpec("upper", 0.3, 8.0, 0.3))),
    "support": Living(support=SupportSpec(), wobbling=(WobblingSpec("frame", 0.2, 6.0, 0.3),),
                      breathing=BreathingSpec(rate_per_min=20.0)),
}


@pytest.mark.parametrize("case", sorted(LIVING_CASES) + ["swinging"])
def test_internal_forces_leave_momentum_to_springs_and_gravity(case):
    if case == "swinging":          # tissue on a swinging link, breathing in the base link
        living = Living(wobbling=(WobblingSpec("upper", 0.3, 6.0, 0.3),),
                        breathing=BreathingSpec(rate_per_min=18.0))
        system = system_with(living, spring_damping=8.0, free_joints=True)
    else:
        system = system_with(LIVING_CASES[case], spring_damping=8.0)
    rate = 800.0
    traj = simulate(system, 1.5, rate, platform_offset=OFFSET, platform_velocity=VELOCITY)
    momentum, _ = _rigid_terms(traj, system)
    mass = system.platform_params.mass + sum(l.params.mass for l in system.tree.links)
    external = _spring_force(system, traj) + mass * system.rig.gravity_lab
    dp_dt = (momentum[2:] - momentum[:-2]) * (rate / 2)         # central differences
    scale = np.max(np.abs(external[1:-1] - external[1:-1].mean(0)))
    err = np.max(np.abs(dp_dt - external[1:-1]))
    # the central difference's error ~ h^2/6 |d3p/dt3| (9 Hz pads, 800 Hz sampling) is
    # ~1e-4; leaving out the breathing mass's own momentum would show as 4e-3
    assert err < 6e-4 * scale, (case, err, scale)
    # and the internal masses really move relative to their carriers
    for name, item in traj.internal.items():
        if name != "pads":
            lever = traj.rotation[item["link"]] @ item["rest_link"]
            rel = item["position_m"] - traj.position_m[item["link"]] - lever
            assert np.ptp(rel, 0).max() > 1e-5, name


@pytest.mark.slow
def test_energy_conserved_without_damping_and_lost_to_the_dampers():
    undamped = Living(wobbling=(WobblingSpec("frame", 0.3, 5.0, 0.0),
                                WobblingSpec("upper", 0.3, 8.0, 0.0)),
                      support=SupportSpec(damping_ratio=0.0))
    system = system_with(undamped)
    traj = simulate(system, 1.0, 100.0, platform_offset=OFFSET, platform_velocity=VELOCITY)
    _, energy = _rigid_terms(traj, system)
    energy = energy + _pad_energy(traj, system)
    excitation = energy[0] - _rest_energy(system)
    assert np.ptp(energy) < 1e-6 * excitation

    damped = Living(wobbling=(WobblingSpec("frame", 0.3, 5.0, 0.3),))
    system = system_with(damped)
    rate = 1000.0
    traj = simulate(system, 0.6, rate, platform_offset=OFFSET, platform_velocity=VELOCITY)
    _, energy = _rigid_terms(traj, system)
    energy = energy + _pad_energy(traj, system)
    item = traj.internal["wobbling:frame"]
    rot = traj.rotation["frame"]
    lever = rot @ item["rest_link"]
    e = np.einsum("tji,tj->ti", rot, item["position_m"] - traj.position_m["frame"] - lever)
    e_dot = np.gradient(e, 1 / rate, axis=0, edge_order=2)
    m, zeta, omega_n = item["mass"], 0.3, 2 * np.pi * 5.0
    power = 2 * zeta * m * omega_n * np.sum(e_dot * e_dot, -1)
    lost = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1])) / rate])
    assert energy[0] - energy[-1] > 1e-3 * (energy[0] - _rest_energy(system))  # it dissipates
    assert np.max(np.abs(energy + lost - energy[0])) < 2e-3 * (energy[0] - energy[-1])


def _pad_energy(traj, system):
    """Elastic energy of the wobbling springs and of the support pads (with their preload)."""
    out = np.zeros(len(traj.time_s))
    g = system.rig.gravity_lab
    for name, item in traj.internal.items():
        if name == "pads":
            e = item["deflection_m"]
            out += np.sum(0.5 * item["stiffness"] * e * e - item["preload"] * e, axis=(1, 2))
            continue
        if item["kind"] != "wobbling":
            continue
        spec = next(w for w in system.living.wobbling if f"wobbling:{w.link}" == name)
        rot = traj.rotation[item["link"]]
        lever = rot @ item["rest_link"]
        e = np.einsum("tji,tj->ti", rot, item["position_m"] - traj.position_m[item["link"]]
                      - lever)
        k = item["mass"] * (2 * np.pi * spec.frequency_hz) ** 2
        rest_rot = simulate(replace(system, living=None), 1.0, 1.0).rotation[item["link"]][0]
        preload = -item["mass"] * (rest_rot.T @ g)    # carried weight at rest (link axes)
        out += 0.5 * k * np.sum(e * e, -1) - e @ preload
    return out


def _rest_energy(system):
    traj = simulate(system, 1.0, 1.0)
    _, energy = _rigid_terms(traj, system)
    return float((energy + _pad_energy(traj, system))[0])


@pytest.mark.parametrize("r", [0.5, 1.0, 1.6])
def test_wobbling_mass_apparent_mass_on_a_shaken_base(r):
    """Steady state on a base shaken at ``r`` times the tissue frequency: the force the
    base gives the tissue over the base acceleration is the closed-form apparent mass."""
    m, f_n, zeta = 2.5, 6.0, 0.3
    w_n = 2 * np.pi * f_n
    w = r * w_n
    pad = Pad(0, np.array([0.1, 0.0, 0.0]), 1, np.zeros(3), np.full(3, m * w_n ** 2),
              np.full(3, 2 * zeta * m * w_n), np.zeros(3))
    terms = LivingTerms(1, (), (PointSatellite("tissue", m),), (pad,), np.zeros(3))
    amp = 1e-3
    direction = np.array([0.6, 0.0, 0.8])

    def base(t):
        x = amp * np.sin(w * t) * direction
        v = amp * w * np.cos(w * t) * direction
        return x, v

    def rhs(t, y):
        x, v = base(t)
        _, dy = terms.forces(t, y, np.eye(3)[None], x[None], v[None], np.zeros((1, 3)))
        return dy

    settle = 12.0 / (zeta * w_n)
    period = 2 * np.pi / w
    t_eval = settle + np.linspace(0, 10 * period, 2001)
    y0 = np.concatenate([pad.a, np.zeros(3)])
    sol = solve_ivp(rhs, (0, t_eval[-1]), y0, t_eval=t_eval, rtol=1e-11, atol=1e-14,
                    method="DOP853")
    force_on_base = np.array([terms.forces(t, y, np.eye(3)[None], base(t)[0][None],
                                           base(t)[1][None], np.zeros((1, 3)))[0][0, :3]
                              for t, y in zip(sol.t, sol.y.T)])
    design = np.column_stack([np.cos(w * sol.t), np.sin(w * sol.t)])
    f_coef = np.linalg.lstsq(design, force_on_base @ direction, rcond=None)[0]
    # base acceleration -amp w^2 sin(w t): phasor (cos, sin) coefficients (0, -amp w^2)
    force_phasor = complex(f_coef[1], f_coef[0])         # F = Re(F e^{i w t}) with sin ref
    accel_phasor = complex(-amp * w * w, 0.0)
    apparent = -force_phasor / accel_phasor              # base pushes the tissue: -F_on_base
    closed = m * (1 + 2j * zeta * r) / (1 - r * r + 2j * zeta * r)
    assert abs(apparent - closed) < 1e-6 * abs(closed), (apparent, closed)


def test_no_living_effect_is_bit_identical_to_the_rigid_simulator():
    rigid = system_with(None)
    off = replace(rigid, living=Living())
    a = simulate(rigid, 2.0, 100.0, platform_offset=OFFSET, platform_velocity=VELOCITY)
    b = simulate(off, 2.0, 100.0, platform_offset=OFFSET, platform_velocity=VELOCITY)
    for name in a.position_m:
        assert np.array_equal(a.position_m[name], b.position_m[name])
        assert np.array_equal(a.rotation[name], b.rotation[name])


def test_paths_have_the_asked_rate_depth_and_recoil():
    rng = np.random.default_rng(0)
    spec = BreathingSpec(rate_per_min=12.0, depth_m=0.01, variability=0.2)
    path = breathing_path(spec, np.zeros(3), rng)
    t = np.arange(0, 300, 0.01)
    a, ad, add = path.scalar(t)
    spectrum = np.abs(np.fft.rfft(a - a.mean()))
    f = np.fft.rfftfreq(len(t), 0.01)
    assert abs(f[np.argmax(spectrum)] - 0.2) < 0.03        # 12/min
    assert 0.006 < np.median(_peak_to_peak_per_cycle(a, 0.2, 0.01)) < 0.014
    assert np.allclose(np.gradient(a, 0.01), ad, atol=1e-3 * np.abs(ad).max())
    assert np.allclose(np.gradient(ad, 0.01), add, atol=1e-2 * np.abs(add).max())
    beat = cardiac_path(CardiacSpec(rate_per_min=60.0, force_n=1.5, mass_kg=0.075,
                                    variability=0.0), np.zeros(3), rng)
    _, _, acc = beat.scalar(np.arange(0, 5, 0.001))
    assert abs(0.075 * np.abs(acc).max() - 1.5) < 0.01


def _peak_to_peak_per_cycle(a, f_hz, dt):
    n = int(round(1 / f_hz / dt))
    return [np.ptp(a[k:k + n]) for k in range(0, len(a) - n, n)]


def test_support_with_swinging_links_is_refused():
    system = system_with(Living(support=SupportSpec()), free_joints=True)
    with pytest.raises(ConfigError, match="support"):
        simulate(system, 0.1, 100.0)


@pytest.mark.slow
def test_wall_and_skin_markers_move_as_asked():
    from rigtool.sim.living import SkinSpec, WallMarker
    from rigtool.sim.living_markers import marker_offsets
    from rigtool.sim.markers import MarkerSet
    wall = WallMarker(np.array([0.1, 0.0, 0.3]), np.array([0.0, 0.0, 0.008]))
    living = Living(breathing=BreathingSpec(depth_m=0.012, wall_markers={"AB1": wall}),
                    skin=SkinSpec(drift_m=0.0007, drift_period_s=8.0, tissue_gain=0.0,
                                  links=("upper",)))
    system = system_with(living)
    traj = simulate(system, 60.0, 20.0)
    sets = [MarkerSet("platform", {"P1": np.zeros(3)}),
            MarkerSet("frame", {"AB1": wall.position_link, "F1": np.array([0.2, 0.1, 0.5])}),
            MarkerSet("upper", {"U1": np.array([0.0, 0.05, -0.1])})]
    off = marker_offsets(living, traj, sets, {"frame", "upper", "lower", "side"},
                         np.random.default_rng(0))
    assert np.all(off[:, 0] == 0) and np.all(off[:, 2] == 0)    # platform, a bone marker
    # the wall marker moves 8 mm per breath along the link's z (peak to peak, lab)
    rot = traj.rotation["frame"]
    local = np.einsum("tji,tj->ti", rot, off[:, 1])
    assert np.allclose(local[:, :2], 0, atol=1e-12)
    assert 0.004 < np.ptp(local[:, 2]) < 0.014
    # the skin marker drifts ~0.7 mm RMS per coordinate
    rms = np.sqrt(np.mean((off[:, 3] - off[:, 3].mean(0)) ** 2, axis=0))
    assert np.all((0.0003 < rms) & (rms < 0.0012)), rms
