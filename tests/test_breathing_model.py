"""Breathing as a measured internal wrench: the engine against the simulator, the
regressor against Newton-Euler of a point mass, the breath's measurement and the manifest's
``breathing_markers``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.interpolate import make_interp_spline

from rigtool.config.session_file import load_session
from rigtool.engine import internal, rigid
from rigtool.errors import ConfigError
from rigtool.identify.posture.breathing import breath_in_base_frame, internal_columns
from rigtool.inertia import InertialParams, regressor_body, transform_params
from rigtool.kinematics.breath_motion import measure_breath
from rigtool.mocap import MarkerData
from rigtool.sim.dynamics import System, simulate
from rigtool.sim.living import BreathingSpec, Living
from rigtool.sim.rigs import demo_rig, demo_tree


def test_internal_wrench_of_a_point_mass_on_a_locked_platform():
    """A point mass ``mu`` at ``s(t) = s0 + A sin(w t) e`` on a platform held still (a = 0, w = 0)
    pushes on it with ``-mu s''`` and ``-s x mu (s'' - g)``: the regressor's internal columns
    with ``G = mu e``, ``K = mu s0 x e`` and ``u = A sin(w t)``, added to the rigid columns
    of the mass at its mean place, give exactly the wrench Newton's law asks for it."""
    mu, amp, w = 3.0, 0.01, 2 * np.pi * 0.3
    s0, e = np.array([0.1, -0.3, 0.2]), np.array([0.0, 0.6, 0.8])
    g = np.array([0.0, 0.0, -9.81])
    t = np.linspace(0.0, 4.0, 41)
    u = (amp * np.sin(w * t))[:, None]
    u_d = (amp * w * np.cos(w * t))[:, None]
    u_dd = (-amp * w * w * np.sin(w * t))[:, None]
    a_minus_g = np.broadcast_to(-g, (t.size, 3))
    zero = np.zeros((t.size, 3))
    beta = _point_mass_beta(mu, s0, e)
    mean_body = InertialParams.from_com(mu, s0, np.zeros((3, 3))).pi
    wrench = (regressor_body(a_minus_g, zero, zero) @ mean_body
              + internal_columns(u, u_d, u_dd, a_minus_g, zero, zero) @ beta)
    s = s0 + u * e
    s_dd = u_dd * e
    force = mu * (s_dd - g)
    torque = np.cross(s, force)
    # exact but for the torque of the excursion on its own acceleration (s - s0) x s'' = 0
    assert np.allclose(wrench[:, :3], force, atol=1e-12)
    assert np.allclose(wrench[:, 3:], torque, atol=1e-12)


def test_rotating_platform_adds_the_coriolis_force_of_the_moving_mass():
    """On a platform spinning at constant ``w`` (origin still) a mass moving at ``s'`` in the
    platform frame needs ``mu (s'' + 2 w x s' + w x (w x s))`` (platform components)."""
    mu = 2.0
    w = np.array([[0.3, -0.2, 0.5]])
    s0, e = np.array([0.2, 0.1, -0.1]), np.array([1.0, 0.0, 0.0])
    u, u_d, u_dd = np.array([[0.004]]), np.array([[0.03]]), np.array([[-0.2]])
    zero = np.zeros((1, 3))
    beta = _point_mass_beta(mu, s0, e)
    mean_body = InertialParams.from_com(mu, s0, np.zeros((3, 3))).pi
    wrench = (regressor_body(zero, w, zero) @ mean_body
              + internal_columns(u, u_d, u_dd, zero, w, zero) @ beta)
    s, s_d, s_dd = s0 + u[0] * e, u_d[0] * e, u_dd[0] * e
    acc = s_dd + 2 * np.cross(w[0], s_d) + np.cross(w[0], np.cross(w[0], s))
    assert np.allclose(wrench[0, :3], mu * acc, atol=1e-12)
    # the torque up to what the model leaves out: the Coriolis torque of the excursion's
    # own rate, second order in u (mu (s - s0) x (2 w x s')) and the excursion's
    # centripetal torque about itself (mu u^2 e x (w x (w x e)))
    torque = np.cross(s, mu * acc)
    left_out = mu * (2 * np.linalg.norm(np.cross(s - s0, np.cross(w[0], s_d))) +
                     np.linalg.norm(np.cross(s - s0, np.cross(w[0], np.cross(w[0], s - s0)))))
    rigid_only = np.linalg.norm(torque - regressor_body(zero, w, zero)[0, 3:] @ mean_body)
    err = np.linalg.norm(wrench[0, 3:] - torque)
    assert err <= left_out + 1e-12 and err < 0.05 * rigid_only, (err, left_out, rigid_only)


def _point_mass_beta(mu, s0, e):
    """``[G, K, D]`` of a point mass ``mu`` moving by ``u e`` about ``s0``."""
    d = mu * (2 * (s0 @ e) * np.eye(3) - np.outer(s0, e) - np.outer(e, s0))
    return np.concatenate([mu * e, mu * np.cross(s0, e), d[np.triu_indices(3)]])


@pytest.mark.parametrize("locked", [(), ("rz", "x")])
def test_internal_engine_without_a_breath_is_the_rigid_engine(locked):
    anchors = [[0.72, 0.42, 2.3], [-0.7, 0.41, 2.3], [-0.71, -0.43, 2.3], [0.69, -0.4, 2.3]]
    atts = [[0.55, 0.25, 0.0], [-0.55, 0.25, 0.0], [-0.55, -0.25, 0.0], [0.55, -0.25, 0.0]]
    from rigtool.rig import Platform, Rig, Spring
    springs = tuple(Spring(f"S{i}", np.array(a), np.array(b), 3000.0 + 50 * i, 1.02, 6.0)
                    for i, (a, b) in enumerate(zip(anchors, atts)))
    rig = Rig("t", Platform({}), springs, np.array([0.0, 0.0, -9.80665]), tuple(locked))
    pi = InertialParams.from_com(90.0, np.array([0.05, -0.02, 0.1]),
                                 np.diag([8.0, 20.0, 25.0]) + 0.5).pi
    y0 = np.concatenate([[0.003, 0.002, 1.2], np.eye(3).ravel(), [0.01, 0.0, 0.02],
                         [0.02, 0.03, 0.01]])
    model = rigid.RigidModel.of(rig)
    theta = rigid.theta_of(pi, rig.stiffness, rig.free_length, rig.damping)
    ref, _ = rigid.simulate(model, theta, y0, 600, 1 / 120)
    grid = internal.input_grid(lambda t: (np.sin(t)[:, None],) * 3, 0.0, 600, 1 / 120, 1)
    got, _ = internal.simulate(model, np.concatenate([theta, np.zeros(12)]), y0, 600, 1 / 120,
                               inputs=grid)
    # the same model and RK4 grid, written in lab rather than body components: rounding
    # (the rigid engine's own test against its numpy reference allows 1e-9 over 10 s)
    assert np.abs(got - ref).max() < 1e-8
    assert np.ptp(got[:, 2]) > 1e-3


@pytest.mark.slow
def test_a_batch_of_breaths_integrates_as_each_alone():
    """``simulate_inputs`` (a breath's noise probes integrated together) against
    ``simulate`` of each breath: the same RK4 and model, so the same states to rounding,
    over more frames than one chunk holds."""
    from rigtool.rig import Platform, Rig, Spring
    anchors = [[0.72, 0.42, 2.3], [-0.7, 0.41, 2.3], [-0.71, -0.43, 2.3], [0.69, -0.4, 2.3]]
    atts = [[0.55, 0.25, 0.0], [-0.55, 0.25, 0.0], [-0.55, -0.25, 0.0], [0.55, -0.25, 0.0]]
    springs = tuple(Spring(f"S{i}", np.array(a), np.array(b), 3000.0 + 50 * i, 1.02, 6.0)
                    for i, (a, b) in enumerate(zip(anchors, atts)))
    rig = Rig("t", Platform({}), springs, np.array([0.0, 0.0, -9.80665]), ())
    pi = InertialParams.from_com(90.0, np.array([0.05, -0.02, 0.1]),
                                 np.diag([8.0, 20.0, 25.0]) + 0.5).pi
    model = rigid.RigidModel.of(rig)
    beta = np.concatenate([[0.5, 2.0, 3.0], [-0.8, 0.1, 0.0], [0.2, 0.0, 0.1, -0.3, 0.5, 0.1]])
    theta = np.concatenate([rigid.theta_of(pi, rig.stiffness, rig.free_length, rig.damping),
                            beta])
    y0 = np.concatenate([[0.003, 0.002, 1.2], np.eye(3).ravel(), [0.01, 0.0, 0.02],
                         [0.02, 0.03, 0.01]])
    n, dt = 700, 1 / 120

    def breath(a, f):
        w = 2 * np.pi * f
        return lambda t: (a * np.sin(w * t)[:, None], a * w * np.cos(w * t)[:, None],
                          -a * w ** 2 * np.sin(w * t)[:, None])

    grids = np.stack([internal.input_grid(breath(a, f), 0.0, n, dt, 2)
                      for a, f in ((0.006, 0.25), (0.004, 0.3), (0.0, 0.2))])
    offset = np.full((n, 18), 1e-6)
    got = internal.simulate_inputs(model, theta, y0, n, dt, inputs=grids, substeps=2,
                                   offset=offset)
    for b in range(3):
        one, _ = internal.simulate(model, theta, y0, n, dt, inputs=grids[b], substeps=2,
                                   offset=offset)
        assert np.abs(got[b] - one).max() < 1e-12
    assert np.abs(got[0, :, :3] - got[2, :, :3]).max() > 1e-4      # the breaths differ


def _breathing_system():
    rig, platform = demo_rig(spring_damping_n_s_m=8.0)
    spec = BreathingSpec(rate_per_min=20.0, variability=0.0, mass_kg=4.0, depth_m=0.015,
                         direction_link=np.array([0.0, 0.6, 0.8]))
    return System(rig, platform, tree=demo_tree(), posture={}, living=Living(breathing=spec),
                  living_seed=3)


def test_internal_engine_tracks_the_simulated_breathing_body():
    """The simulator (rigtool.sim: the breathing mass carried on its path inside the base
    link, integrated by DOP853) against the identification's engine with the point mass's
    ``G``, ``K``, ``D`` and its excursion as ``u``: the platform's motion agrees to what the
    engine leaves out (the internal Coriolis torque, second order in the excursion; measured
    6e-4 of the breath's whole effect at this 5 mm, 0.02 rad excitation, 1e-4 at a tenth of
    it; without ``D`` 1.7e-2), while the rigid engine with the same mean body misses the
    breath's whole effect."""
    system = _breathing_system()
    rate, dur = 400.0, 3.0
    traj = simulate(system, dur, rate, platform_offset=np.array([0.004, -0.003, 0.005,
                                                                 0.01, -0.01, 0.02]))
    n = traj.time_s.size
    rot_p, pos_p = traj.rotation["platform"][0], traj.position_m["platform"][0]
    pi_total = system.platform_params.pi.copy()
    for link in system.tree.links:
        r_rel = rot_p.T @ traj.rotation[link.name][0]
        p_rel = rot_p.T @ (traj.position_m[link.name][0] - pos_p)
        pi_total = pi_total + transform_params(link.params.pi, r_rel, p_rel)
    b = traj.internal["breathing"]
    link = b["link"]
    r_l = rot_p.T @ traj.rotation[link][0]
    p_l = rot_p.T @ (traj.position_m[link][0] - pos_p)
    e = r_l @ (system.living.breathing.direction_link / np.linalg.norm(
        system.living.breathing.direction_link))
    s0 = r_l @ b["rest_link"] + p_l
    beta = _point_mass_beta(b["mass"], s0, e)
    spl = make_interp_spline(traj.time_s, b["excursion_m"], k=5)

    def breath_at(t):
        return spl(t)[:, None], spl.derivative(1)(t)[:, None], spl.derivative(2)(t)[:, None]

    y0 = np.concatenate([pos_p, rot_p.ravel(), traj.velocity_lab["platform"][0],
                         traj.omega_lab["platform"][0]])
    rig = system.rig
    model = rigid.RigidModel.of(rig)
    theta = rigid.theta_of(pi_total, rig.stiffness, rig.free_length, rig.damping)
    grid = internal.input_grid(breath_at, 0.0, n, 1 / rate, 2)
    with_breath, _ = internal.simulate(model, np.concatenate([theta, beta]), y0, n, 1 / rate,
                                       inputs=grid, substeps=2)
    rigid_only, _ = rigid.simulate(model, theta, y0, n, 1 / rate, substeps=2)
    truth = traj.position_m["platform"]
    err = np.abs(with_breath[:, :3] - truth).max()
    missed = np.abs(rigid_only[:, :3] - truth).max()
    assert np.ptp(b["excursion_m"]) > 0.01                     # it breathes
    assert missed > 2e-5, missed                                # and the breath shows
    assert err < 2e-3 * missed, (err, missed)


def _capture(xyz: np.ndarray, names, rate=100.0) -> MarkerData:
    t = np.arange(xyz.shape[0]) / rate
    return MarkerData(t, tuple(names), xyz, rate)


def _rigid_cluster():
    return {"T1": np.array([0.1, -0.1, 0.05]), "T2": np.array([-0.12, -0.35, 0.02]),
            "T3": np.array([0.08, -0.45, -0.2]), "T4": np.array([-0.05, -0.2, -0.25])}


@pytest.mark.parametrize("independent", [False, True])
def test_breath_components_chosen_by_the_data(independent):
    """Two wall markers moving in phase give one breath coordinate, moving independently two;
    the coordinate is the walls' displacement along the kept direction (whatever the link's
    own motion in the lab)."""
    rng = np.random.default_rng(1)
    t = np.arange(2000) / 100.0
    rigid_m = _rigid_cluster()
    walls = {"CH1": np.array([0.05, -0.45, 0.06]), "AB1": np.array([-0.04, -0.15, 0.06])}
    a = 0.003 * np.sin(2 * np.pi * 0.25 * t)
    b = 0.004 * np.sin(2 * np.pi * 0.17 * t + 1.0) if independent else 2 * a
    rot = np.stack([np.array([[np.cos(q), -np.sin(q), 0], [np.sin(q), np.cos(q), 0],
                              [0, 0, 1]]) for q in 0.02 * np.sin(2 * np.pi * 1.3 * t)])
    pos = np.stack([0.01 * np.sin(2 * np.pi * 0.9 * t), np.zeros_like(t),
                    1.0 + 0.005 * np.cos(2 * np.pi * 1.1 * t)], 1)
    body = np.stack([rigid_m[n] for n in rigid_m] + [walls["CH1"], walls["AB1"]])
    disp = np.zeros((t.size, 6, 3))
    disp[:, 4, 2] = a
    disp[:, 5, 2] = b
    xyz = np.einsum("tij,tkj->tki", rot, body + disp) + pos[:, None, :]
    xyz += rng.normal(0, 1e-4, xyz.shape)
    data = _capture(xyz, list(rigid_m) + ["CH1", "AB1"])
    motion = measure_breath(data, {"link0": rigid_m}, {"link0": walls})
    assert motion.n_components == (2 if independent else 1)
    if not independent:
        expected = np.hypot(1, 2) * a          # (a, 2a) along (1, 2) / sqrt(5)
        u = motion.u_m[:, 0]
        assert np.abs(u - expected).max() < 6e-4                   # 1e-4 noise, 6 sigma
        u_s, _, _ = motion.at(t)
        assert np.sqrt(np.mean((u_s[:, 0] - expected) ** 2)) < 1e-4   # smoothed: below noise


def test_still_wall_markers_leave_the_rigid_model():
    rng = np.random.default_rng(2)
    rigid_m = _rigid_cluster()
    walls = {"CH1": np.array([0.05, -0.45, 0.06])}
    body = np.stack([rigid_m[n] for n in rigid_m] + [walls["CH1"]])
    xyz = body[None] + rng.normal(0, 1e-4, (500, 5, 3))
    data = _capture(xyz, list(rigid_m) + ["CH1"])
    assert measure_breath(data, {"link0": rigid_m}, {"link0": walls}) is None


def test_breath_model_in_the_base_frame():
    """``G`` rotates with the base link; ``K`` moves to the base origin by ``-t x G``."""
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    t = np.array([0.1, 0.2, 0.3])
    g_p, k_p = np.array([1.0, 2.0, 3.0]), np.array([0.5, -0.5, 0.1])
    s0 = np.array([0.3, -0.1, 0.2])
    d_p = _point_mass_beta(2.0, s0, g_p / 2.0)[6:]
    beta = np.concatenate([g_p, k_p, d_p])
    out = breath_in_base_frame(beta, np.eye(12) * 1e-4, 1, rot, t)
    assert np.allclose(np.asarray(out["G_kg"])[:, 0], rot.T @ g_p)
    assert np.allclose(np.asarray(out["K_kg_m"])[:, 0], rot.T @ (k_p - np.cross(t, g_p)))
    # a point mass's D about the base origin: the same formula with s0 - t, in base axes
    expected = _point_mass_beta(2.0, rot.T @ (s0 - t), rot.T @ g_p / 2.0)[6:]
    assert np.allclose(out["D_kg_m"][0], expected)


def test_breath_offset_moves_the_body_as_the_point_mass_moves():
    """A point mass breathing along ``e`` (platform frame), the base link rotated and moved
    on the platform: the body's parameters about the base origin at a breath 2 mm from the
    fit's zero are the point mass carried there, to the second order in the excursion
    (``mu u^2``, 1.6e-5 kg m^2 here); its covariance grows as the offset squared."""
    from rigtool.identify.posture.breathing import breath_offset
    mu, s0, e = 4.0, np.array([0.05, 0.25, 0.4]), np.array([0.0, 0.6, 0.8])
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    t = np.array([0.02, 0.3, 0.45])
    beta = _point_mass_beta(mu, s0, e)

    def pi_base(s):
        b = rot.T @ (s - t)
        return InertialParams.from_com(mu, b, np.zeros((3, 3))).pi[1:]

    u = 0.002
    d_pi, d_cov = breath_offset(beta, np.eye(12) * 1e-4, 1, rot, t, np.array([u]))
    expected = pi_base(s0 + u * e) - pi_base(s0)
    assert np.allclose(d_pi[:3], expected[:3], atol=1e-12)             # exact: G u
    assert np.allclose(d_pi[3:], expected[3:], atol=2 * mu * u ** 2)
    _, d_cov2 = breath_offset(beta, np.eye(12) * 1e-4, 1, rot, t, np.array([2 * u]))
    assert np.allclose(d_cov2, 4 * d_cov) and np.all(np.linalg.eigvalsh(d_cov) > -1e-18)


MANIFEST = """
[session]
rig = "rig.toml"
total_mass = 80.0

[[links]]
name = "trunk"
parent = "platform"
markers = {{ T1 = [0.1, 0, 0], T2 = [0, 0.1, 0], T3 = [0, 0, 0.1], T4 = [0.1, 0.1, 0], CH1 = [0.05, -0.45, 0.06] }}
{extra}
[[postures]]
capture = "p1.csv"
"""


def _manifest(tmp_path: Path, extra: str) -> Path:
    p = tmp_path / "session.toml"
    p.write_text(MANIFEST.format(extra=extra))
    return p


def test_manifest_names_breathing_markers(tmp_path):
    s = load_session(_manifest(tmp_path, 'breathing_markers = ["CH1"]'))
    assert list(s.breathing_markers["trunk"]) == ["CH1"]
    assert "CH1" not in s.tree.links[0].markers_link         # not among the rigid markers
    assert load_session(_manifest(tmp_path, "")).breathing_markers == {}


@pytest.mark.parametrize("extra, words", [
    ('breathing_markers = ["XX"]', "not among this link's markers"),
    ('breathing_markers = "CH1"', "list of marker names"),
    ('breathing_markers = ["CH1", "T1", "T2"]', "at least 3 markers besides"),
])
def test_bad_breathing_markers_name_the_field(tmp_path, extra, words):
    with pytest.raises(ConfigError) as err:
        load_session(_manifest(tmp_path, extra))
    assert "links[0].breathing_markers" in str(err.value) and words in str(err.value)


def test_breathing_check_says_the_breath_was_modelled():
    from types import SimpleNamespace
    from rigtool.report.checks_living import breathing_check, skin_check
    modelled = SimpleNamespace(result=SimpleNamespace(name="p1"), living_signs={},
                               marker_scatter_mm={},
                               breathing={"model": "measured internal wrench",
                                          "measurement": {"components": 1}})
    still = SimpleNamespace(result=SimpleNamespace(name="p2"), living_signs={},
                            marker_scatter_mm={},
                            breathing={"model": "rigid", "reason": "no breath"})
    out = SimpleNamespace(postures=[modelled, still], tree=None, total_mass_kg=75.0)
    check = breathing_check(out)
    assert check.level == "ok"
    assert "p1" in check.finding and "mean mass distribution" in check.finding
    assert "p2" in check.finding and "rigid model" in check.finding
    skin_check(out)                                  # reads the rhythm check's items only
