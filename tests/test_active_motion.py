"""Voluntary (muscle-driven) link motion: the simulator's servo, the prescribed-motion
engine against the simulator, the relative rotation spline, the active refinement and the
model choice."""

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rigtool.config import FilterSettings
from rigtool.engine import prescribed as ep
from rigtool.engine.rigid import RigidModel, theta_of
from rigtool.errors import ConfigError
from rigtool.identify.relative.active import METHOD, refine_relative_active
from rigtool.identify.relative.equation_error import resolve_relative
from rigtool.inertia import transform_params
from rigtool.kinematics.motion import exp_rotation
from rigtool.kinematics.relative_spline import fit_relative_rotation
from rigtool.mocap import MarkerData
from rigtool.pipeline.relative_model import refine_relative_motion
from rigtool.sim import dynamics as dyn
from rigtool.sim._model import spring_wrench_lab
from rigtool.sim.markers import marker_positions
from rigtool.sim.scenario import load_scenario
from rigtool.sim.session_writer import _rig_with_truth, capture_jobs, system_for
from rigtool.tree import minimal_parameters, phi_b_vector, phi_s_from_phi_b

ROOT = Path(__file__).resolve().parents[1] / "scenarios"


def _voluntary(duration_s: float, rate_hz: float):
    sc = load_scenario(ROOT / "voluntary.toml")
    job = [j for j in capture_jobs(sc) if j.kind == "relative"][0]
    system = system_for(sc, job)
    traj = dyn.simulate(system, duration_s, rate_hz, platform_offset=job.settings.offset,
                        platform_velocity=job.settings.velocity)
    return SimpleNamespace(sc=sc, job=job, system=system, traj=traj, tree=sc.obj.tree)


@pytest.fixture(scope="module")
def fine():
    """2.5 s of the voluntary lift sampled at 400 Hz (exact inputs every quarter frame)."""
    return _voluntary(2.5, 400.0)


def test_servo_moves_the_limb_as_a_person_would(fine):
    """The servo tracks its multi-sine: the limb turns by tens of degrees, and the joint
    torque being internal, the whole system's momentum changes only by springs and gravity."""
    from scipy.spatial.transform import Rotation
    t = fine.traj
    rel = np.einsum("tji,tjk->tik", t.rotation["link0"], t.rotation["link1"])
    rest = fine.job.plan.rotations["link1"]
    turn = Rotation.from_matrix(rel @ rest.T).magnitude()
    assert np.rad2deg(turn.max()) > 10.0
    # Newton for the whole system: sum m a_c = F_springs + M g (lab), every body
    force = np.zeros((t.time_s.size, 3))
    total = 0.0
    bodies = {"platform": fine.system.platform_params,
              **{l.name: l.params for l in fine.tree.links}}
    for name, prm in bodies.items():
        rot, w, al = t.rotation[name], t.omega_lab[name], t.alpha_lab[name]
        h = np.einsum("tij,j->ti", rot, prm.first_moment)
        force += (prm.mass * t.accel_lab[name] + np.cross(al, h)
                  + np.cross(w, np.cross(w, h)))
        total += prm.mass
    model, _ = dyn._assemble(replace(fine.system, free_joints=False))
    springs = spring_wrench_lab(model, t.rotation["platform"], t.position_m["platform"],
                                t.velocity_lab["platform"], t.omega_lab["platform"])[:, :3]
    balance = force - springs - total * fine.system.rig.gravity_lab
    # the integrator's tolerance (rtol 1e-10) against forces of ~1e3 N
    assert np.abs(balance).max() < 1e-5 * np.abs(springs).max()


def _exact_inputs(v):
    """The engine's inputs from the simulated motion (exact, every sample)."""
    t = v.traj
    mv = lambda a, x: np.einsum("tij,tj->ti", a, x)    # noqa: E731
    rp, p, vp, wp, ap, alp = (getattr(t, k)["platform"] for k in (
        "rotation", "position_m", "velocity_lab", "omega_lab", "accel_lab", "alpha_lab"))
    rj, oj, vj, wj, aj, alj = (getattr(t, k)["link1"] for k in (
        "rotation", "position_m", "velocity_lab", "omega_lab", "accel_lab", "alpha_lab"))
    rpt = np.swapaxes(rp, 1, 2)
    r = oj - p
    o = v.sc.obj.base_rotation_platform @ v.tree.joint_center(1) \
        + v.sc.obj.base_position_platform_m
    d1 = mv(rpt, vj - vp - np.cross(wp, r))
    d2 = mv(rpt, aj - ap - np.cross(alp, r) - np.cross(wp, np.cross(wp, r))
            - 2 * np.cross(wp, mv(rp, d1)))
    u = np.concatenate([(rpt @ rj).reshape(-1, 9), mv(rpt, wj - wp),
                        mv(rpt, alj - alp - np.cross(wp, wj - wp)), mv(rpt, r) - o, d1, d2], 1)
    return u[:, None, :], o


@pytest.mark.slow
def test_prescribed_engine_tracks_the_simulator(fine):
    """Platform-only simulation with the limb's true motion prescribed reproduces the full
    simulation: RK4 at 100 Hz with 2 substeps, error O(h^4) (~2 um over 4 s measured)."""
    v = fine
    u, o = _exact_inputs(v)
    rig = _rig_with_truth(v.sc)
    tree = v.tree
    pi0 = v.sc.platform_params.pi + transform_params(
        tree.links[0].params.pi, v.sc.obj.base_rotation_platform,
        v.sc.obj.base_position_platform_m)
    theta = np.concatenate([pi0, tree.links[1].params.pi, o,
                            theta_of(np.zeros(10), rig.stiffness, rig.free_length,
                                     rig.damping)[10:]])
    t = v.traj
    y0 = np.concatenate([t.position_m["platform"][0], t.rotation["platform"][0].ravel(),
                         t.velocity_lab["platform"][0], t.omega_lab["platform"][0]])
    states, tan = ep.simulate(RigidModel.of(rig), theta, y0, u, 0.01, substeps=2,
                              tangent_theta=np.eye(theta.size)[:, [7]])
    ref = t.position_m["platform"][::4]
    assert np.ptp(ref, 0).max() > 0.02                    # the platform moves by cm
    assert np.abs(states[:, :3] - ref).max() < 5e-6
    # exact sensitivity against a central difference (link1's I_xx... its J entry)
    step = 1e-4 * abs(theta[7])
    up, _ = ep.simulate(RigidModel.of(rig), theta + step * np.eye(theta.size)[7], y0, u,
                        0.01, substeps=2)
    dn, _ = ep.simulate(RigidModel.of(rig), theta - step * np.eye(theta.size)[7], y0, u,
                        0.01, substeps=2)
    fd = (up - dn) / (2 * step)
    assert np.abs(fd - tan[:, :, 0]).max() < 1e-5 * np.abs(tan).max()


@pytest.mark.slow
def test_looped_stages_equal_written_out_stages(fine):
    """The prescribed engine's RK4 stages looped over one traced right-hand side (many links)
    or written out (few): the same discrete map and derivatives, to round-off."""
    v = fine
    u, o = _exact_inputs(v)
    rig = _rig_with_truth(v.sc)
    pi0 = v.sc.platform_params.pi + transform_params(
        v.tree.links[0].params.pi, v.sc.obj.base_rotation_platform,
        v.sc.obj.base_position_platform_m)
    theta = np.concatenate([pi0, v.tree.links[1].params.pi, o,
                            theta_of(np.zeros(10), rig.stiffness, rig.free_length,
                                     rig.damping)[10:]])
    t = v.traj
    y0 = np.concatenate([t.position_m["platform"][0], t.rotation["platform"][0].ravel(),
                         t.velocity_lab["platform"][0], t.omega_lab["platform"][0]])
    n = theta.size + y0.size
    t_th, t_y = np.eye(theta.size, n), np.eye(y0.size, n, theta.size)
    out = [ep.simulate(RigidModel.of(rig), theta, y0, u[:4 * 100 + 1], 0.01, substeps=2,
                       tangent_theta=t_th, tangent_y0=t_y, unrolled=flag)
           for flag in (True, False)]
    scale = np.abs(out[0][0]).max(axis=0) + 1e-3
    assert (np.abs(out[1][0] - out[0][0]).max(axis=0) / scale).max() < 1e-12
    tan_scale = np.abs(out[0][1]).max(axis=(0, 1))
    assert np.all(tan_scale > 0)
    assert (np.abs(out[1][1] - out[0][1]).max(axis=(0, 1)) / tan_scale).max() < 1e-10


def test_relative_rotation_spline_derivatives():
    """A known rotation about a moving axis: the spline gives its angular velocity and
    acceleration (platform axes) to the accuracy a cubic spline of 200 Hz samples allows."""
    t = np.arange(0.0, 4.0, 0.005)
    r = np.stack([0.2 * np.sin(2.0 * t), 0.3 * np.sin(1.3 * t + 0.4), 0.1 * np.cos(0.7 * t)], 1)
    q0 = exp_rotation(np.array([[0.3, -0.2, 1.0]]))[0]
    rot = q0 @ exp_rotation(r)
    spl = fit_relative_rotation(t, rot, lam=(0.0, 0.0, 0.0))     # interpolating
    inner = (t > 0.5) & (t < 3.5)
    q, w, a = spl.evaluate(t[inner])
    assert np.abs(q - rot[inner]).max() < 1e-9
    # reference by differentiating the exact rotations: w = vee(Q' Q^T)
    h = 1e-5

    def rot_at(tt):
        rr = np.stack([0.2 * np.sin(2.0 * tt), 0.3 * np.sin(1.3 * tt + 0.4),
                       0.1 * np.cos(0.7 * tt)], 1)
        return q0 @ exp_rotation(rr)

    def omega_at(tt):
        d = (rot_at(tt + h) - rot_at(tt - h)) / (2 * h)
        s = d @ np.swapaxes(rot_at(tt), 1, 2)
        return np.stack([s[:, 2, 1], s[:, 0, 2], s[:, 1, 0]], 1)

    w_ref = omega_at(t[inner])
    a_ref = (omega_at(t[inner] + 1e-3) - omega_at(t[inner] - 1e-3)) / 2e-3
    assert np.abs(w - w_ref).max() < 1e-6 * np.abs(w_ref).max() + 1e-8
    assert np.abs(a - a_ref).max() < 1e-3 * np.abs(a_ref).max()


@pytest.fixture(scope="module")
def lift():
    """6 s of the voluntary lift at 100 Hz with 0.05 mm marker noise, Phi_s exact, and the
    equation-error start."""
    v = _voluntary(6.0, 100.0)
    names, xyz, _ = marker_positions(v.traj, list(v.job.marker_sets))
    rng = np.random.default_rng(3)
    data = MarkerData(time_s=v.traj.time_s, names=tuple(names),
                      xyz_m=xyz + rng.normal(0.0, 5e-5, xyz.shape), rate_hz=100.0,
                      source=Path("lift.csv"))
    phi_b = phi_b_vector(minimal_parameters(v.tree))
    phi_s = phi_s_from_phi_b(phi_b)
    cov_s = np.diag((1e-9 + 1e-5 * np.abs(phi_s)) ** 2)
    markers = {l.name: l.markers_link for l in v.tree.links}
    rig = _rig_with_truth(v.sc)
    start = resolve_relative(v.tree, rig, v.sc.platform_params, data, markers,
                             SimpleNamespace(values=phi_s, covariance=cov_s),
                             v.sc.obj.total_mass, FilterSettings(), (0.5, 5.5))
    return SimpleNamespace(v=v, data=data, phi_b=phi_b, phi_s=phi_s, cov_s=cov_s,
                           markers=markers, rig=rig, start=start)


@pytest.mark.slow
def test_active_refinement_recovers_jyy_on_voluntary_motion(lift):
    v = lift.v
    ref = refine_relative_active(v.tree, lift.rig, v.sc.platform_params, lift.data,
                                 lift.markers, start=lift.start, phi_s=lift.phi_s,
                                 phi_s_cov=lift.cov_s, total_mass_kg=v.sc.obj.total_mass,
                                 window=(0.5, 5.5), n_probes=6)
    assert ref.method == METHOD and ref.reached_noise()
    # the fitted platform and base markers sit at their noise; the limb's markers, which
    # made the input, are predicted to it too
    for name in ("platform", "link0", "link1"):
        assert ref.residual_rms_mm[name] < 1.3 * 0.05
    k = 13                                                 # link1.J_yy in Phi_B
    err = ref.phi_b[k] - lift.phi_b[k]
    assert abs(err) < 3.0 * ref.phi_b_std[k]
    assert ref.phi_b_std[k] < 0.01 * lift.phi_b[k]         # better than 1 % of J_yy
    # the input's noise is part of the reported uncertainty
    assert ref.phi_b_std[k] > ref.phi_b_std_noise[k]
    assert ref.as_relative_result().method == METHOD


@pytest.mark.slow
def test_model_choice_rejects_the_passive_swing_on_voluntary_motion(lift):
    v = lift.v
    ref, choice = refine_relative_motion(
        "auto", lift.start,
        fit_args=(v.tree, lift.rig, v.sc.platform_params, lift.data, lift.markers),
        fit_kwargs=dict(phi_s=lift.phi_s, phi_s_cov=lift.cov_s,
                        total_mass_kg=v.sc.obj.total_mass, window=(0.5, 3.5)))
    assert [t["model"] for t in choice.tried] == ["passive", "active"]
    passive, active = choice.tried
    # a free swing cannot follow a limb moved by muscles: millimetres, not the noise
    assert not passive["reached_noise"] and passive["residual_mm"] > 10 * passive["noise_mm"]
    assert active["reached_noise"] and choice.used == "active"
    assert ref is not None and ref.method == METHOD
    assert "moved by muscles" in choice.reason and "passive model left" in choice.reason
    # asked for the passive model only: it is tried, fails, and the estimate is kept
    ref_p, choice_p = refine_relative_motion(
        "passive", lift.start,
        fit_args=(v.tree, lift.rig, v.sc.platform_params, lift.data, lift.markers),
        fit_kwargs=dict(phi_s=lift.phi_s, phi_s_cov=lift.cov_s,
                        total_mass_kg=v.sc.obj.total_mass, window=(0.5, 2.0)))
    assert ref_p is None and choice_p.used == "equation-error"
    assert "equation-error estimate is reported" in choice_p.reason


def test_manifest_motion_model_is_checked(tmp_path):
    from rigtool.config import load_session
    src = Path(__file__).resolve().parents[1] / "captures" / "two-link" / "session.toml"
    text = src.read_text().replace("[relative_motion]", "[relative_motion]\nmotion = \"swing\"")
    bad = tmp_path / "session.toml"
    bad.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_session(bad)
    assert "relative_motion.motion" in str(exc.value) and "active" in str(exc.value)


def test_a_fit_that_diverges_keeps_the_equation_error_estimate(monkeypatch):
    """A model whose simulated motion diverges is a failed model, not a crash: the
    equation-error estimate stays and the reason names the failure."""
    import rigtool.pipeline.relative_model as rm

    def diverges(*args, **kwargs):
        raise FloatingPointError("the simulated motion diverged")

    monkeypatch.setattr(rm, "refine_relative", diverges)
    monkeypatch.setattr(rm, "refine_relative_active", diverges)
    ref, choice = rm.refine_relative_motion("auto", SimpleNamespace(), fit_args=(),
                                            fit_kwargs={})
    assert ref is None and choice.used == "equation-error"
    assert [t["model"] for t in choice.tried] == ["passive", "active"]
    assert "passive model failed (the simulated motion diverged)" in choice.reason
    assert "equation-error estimate is reported" in choice.reason


@pytest.mark.slow
def test_active_refinement_streamed_equals_held(lift, monkeypatch):
    """Above the Jacobian budget the active model streams its rows' normal equations
    (rigtool.identify.relative.streamed_rows; its covariance's cross products and the input
    probes' J^T dr from streamed runs too): the same fit within the stopping tolerance
    (ftol 1e-8 of the cost: sqrt(1e-8 M) ~ 0.03 standard errors for M ~ 10^4 rows) and the
    same standard errors, input probes included."""
    from rigtool.identify.relative import streamed_rows
    v = lift.v
    kw = dict(start=lift.start, phi_s=lift.phi_s, phi_s_cov=lift.cov_s,
              total_mass_kg=v.sc.obj.total_mass, window=(0.5, 3.5), n_probes=4)
    held = refine_relative_active(v.tree, lift.rig, v.sc.platform_params, lift.data,
                                  lift.markers, **kw)
    from rigtool.identify.relative.active_problem import ActiveProblem
    calls = []
    stream = ActiveProblem._marker_stream_along

    def counted(self, *args):
        calls.append(args[-1])
        return stream(self, *args)

    monkeypatch.setattr(ActiveProblem, "_marker_stream_along", counted)
    monkeypatch.setattr(streamed_rows, "JACOBIAN_BYTES", 2 ** 20)    # 1 MiB: streamed
    streamed = refine_relative_active(v.tree, lift.rig, v.sc.platform_params, lift.data,
                                      lift.markers, **kw)
    assert calls and max(calls) > 1                    # the long horizons streamed
    assert held.reached_noise() and streamed.reached_noise()
    assert np.abs(streamed.phi_b - held.phi_b).max() < 0.03 * held.phi_b_std[13]
    np.testing.assert_allclose(streamed.phi_b_std, held.phi_b_std, rtol=1e-3)
    np.testing.assert_allclose(streamed.phi_b_std_noise, held.phi_b_std_noise, rtol=1e-3)
