"""Output-error posture refinement against the simulator (an independent forward model).

The batched RK4 model must track rigtool.sim.dynamics.simulate (DOP853, rtol 1e-10) to the
integrator's truncation error (measured: ~7 um over 3 s with one step per 10 ms frame on the demo rig,
16x less with two). The fit then has no approximation but that truncation: noise-free, the
object is recovered to well inside 1 um / 0.01 % of its largest principal moment, from a start
1 mm and ~1 % off. With sigma = 0.1 mm marker noise (and gaps), the marker residual RMS is the
noise and the errors lie within 4 reported standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.engine import rigid
from rigtool.engine.markers import predicted_markers
from rigtool.identify.posture.output_error import refine_posture
from rigtool.identify.posture.problem import object_to_z, z_to_params
from rigtool.identify.posture.equation_error import PostureResult
from rigtool.inertia import InertialParams
from rigtool.sim.dynamics import FixedBody, System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import box_inertia, demo_rig

RATE = 100.0
DURATION = 6.0
R_BASE = Rotation.from_euler("zyx", [10, 5, -3], degrees=True).as_matrix()
P_BASE = np.array([0.05, -0.02, 0.04])
OBJECT = InertialParams.from_com(
    45.0, np.array([0.03, -0.02, 0.30]),
    box_inertia(45.0, (0.5, 0.35, 0.6)) + np.array([[0.0, 0.05, -0.02], [0.05, 0.0, 0.03],
                                                    [-0.02, 0.03, 0.0]]))
OFFSET = np.array([0.012, -0.01, 0.008, 0.03, -0.025, 0.03])
VELOCITY = np.array([0.02, 0.02, -0.01, 0.05, -0.05, 0.05])


def _system(locked=()):
    rig, platform = demo_rig(spring_damping_n_s_m=6.0, locked_dofs=locked)
    return System(rig=rig, platform_params=platform,
                  fixed=(FixedBody("obj", OBJECT, R_BASE, P_BASE),))


@pytest.fixture(scope="module")
def sim():
    system = _system()
    return system, simulate(system, DURATION, RATE, platform_offset=OFFSET,
                            platform_velocity=VELOCITY)


def _start(com, inertia_com) -> PostureResult:
    """A stand-in for the equation-error result (only com and inertia are read)."""
    params = InertialParams.from_com(OBJECT.mass, com, inertia_com)
    z3, z9 = np.zeros(3), np.zeros((3, 3))
    return PostureResult("p", OBJECT.mass, com, z3, inertia_com, z9, params, np.eye(9),
                         np.eye(12), params, {}, np.zeros((1, 6)), np.zeros((1, 6)),
                         np.zeros(1), "exact", "noise", [])


def _perturbed_start() -> PostureResult:
    d_i = np.array([[0.01, 0.003, -0.002], [0.003, -0.012, 0.004], [-0.002, 0.004, 0.008]])
    return _start(OBJECT.com + np.array([1e-3, -1e-3, 1e-3]), OBJECT.inertia_com + d_i)


def _refine(rig, platform, data, **kw):
    return refine_posture(rig, platform, data, base_rotation_platform=R_BASE,
                          base_position_platform=P_BASE, total_mass_kg=OBJECT.mass,
                          start=_perturbed_start(), **kw)


def _errors(res):
    i_max = np.linalg.eigvalsh(OBJECT.inertia_com)[-1]
    return res.com - OBJECT.com, (res.inertia_com - OBJECT.inertia_com) / i_max


def _states_of(traj):
    n = len(traj.time_s)
    return np.concatenate([traj.position_m["platform"][:, None],
                           traj.rotation["platform"].reshape(n, 1, 9), np.zeros((n, 1, 6))], -1)


@pytest.mark.parametrize("locked", [(), ("x", "rz")])
def test_engine_tracks_the_simulator(locked):
    """The fit's model (rigtool.engine.rigid, fixed-step RK4) against the simulator
    (rigtool.sim, its own equations and integrator): markers within RK4's truncation error,
    fourth order in the step; a heavier assembly moves differently."""
    system = _system(locked)
    traj = simulate(system, 3.0, RATE, platform_offset=OFFSET, platform_velocity=VELOCITY)
    from rigtool.sim.dynamics import lumped_params
    lump = lumped_params(system).pi
    rig = system.rig
    y0 = np.concatenate([traj.position_m["platform"][0], traj.rotation["platform"][0].ravel(),
                         traj.velocity_lab["platform"][0], traj.omega_lab["platform"][0]])
    mk = np.stack(list(rig.platform.markers_platform.values()))
    ref = predicted_markers(_states_of(traj)[:, 0], mk)
    model = rigid.RigidModel.of(rig)
    heavy = lump.copy()
    heavy[0] += 5.0
    errs = []
    for sub in (1, 2):
        def run(pi):
            states, _ = rigid.simulate(model, rigid.theta_of(pi, rig.stiffness, rig.free_length,
                                                             rig.damping),
                                       y0, len(traj.time_s), 1 / RATE, substeps=sub)
            return predicted_markers(states, mk)
        errs.append(np.abs(run(lump) - ref).max())
        assert np.abs(run(heavy) - ref).max() > 1e-4               # the heavy one differs
    assert errs[0] < 2e-5 and errs[1] < 2e-6                      # measured 6.7 um, 0.4 um
    assert errs[1] < errs[0] / 8                                   # fourth order


def test_parameterisation_round_trip_and_consistency():
    rng = np.random.default_rng(1)
    for _ in range(20):
        z = rng.normal(0, 1, 9)
        pi = z_to_params(z, 3.0)
        assert InertialParams(pi).is_physically_consistent()
        p = InertialParams(pi)
        np.testing.assert_allclose(object_to_z(p.com, p.inertia_com), z, atol=1e-9)
    # an inconsistent start is moved to a consistent body
    bad = np.diag([1.0, 1.0, 3.0])                                # violates the triangle rule
    pi = z_to_params(object_to_z(np.zeros(3), bad), 2.0)
    assert InertialParams(pi).is_physically_consistent()


def test_noise_free_capture_is_recovered(sim):
    system, traj = sim
    data = synthesize_markers(traj, [MarkerSet("platform", system.rig.platform.markers_platform)],
                              noise_sigma_m=0.0, rng=np.random.default_rng(0), rate_hz=RATE)
    res = _refine(system.rig, system.platform_params, data, substeps=2)
    e_c, e_i = _errors(res)
    assert np.abs(e_c).max() < 1e-6 and np.abs(e_i).max() < 1e-4
    assert res.residual_rms_mm < 1e-3
    np.testing.assert_allclose(res.initial_state["velocity_lab"], traj.velocity_lab["platform"][0],
                               atol=1e-6)


def test_final_half_step_removes_the_integrators_bias(sim):
    """With one RK4 step per frame the fitted object carries RK4's error (global error
    O(h^4)); the final Gauss-Newton step at half the step (``final_substeps``, default
    2 x substeps) must cut it by about 2^4 = 16. Asserted: at least 8x smaller (the
    reference simulator's own error and higher-order terms take part of the rest)."""
    system, traj = sim
    data = synthesize_markers(traj, [MarkerSet("platform", system.rig.platform.markers_platform)],
                              noise_sigma_m=0.0, rng=np.random.default_rng(0), rate_hz=RATE)
    one = _refine(system.rig, system.platform_params, data, substeps=1, final_substeps=1)
    polished = _refine(system.rig, system.platform_params, data, substeps=1)
    e_one = np.concatenate([e.ravel() for e in _errors(one)])
    e_pol = np.concatenate([e.ravel() for e in _errors(polished)])
    assert np.abs(e_one).max() > 8 * np.abs(e_pol).max()
    assert polished.stages[-1][2] >= 1          # the step ran (its normal equations)


def test_noisy_capture_with_gaps_is_within_standard_errors(sim):
    system, traj = sim
    rng = np.random.default_rng(11)
    data = synthesize_markers(traj, [MarkerSet("platform", system.rig.platform.markers_platform)],
                              noise_sigma_m=1e-4, rng=rng, rate_hz=RATE)
    xyz = data.xyz_m.copy()
    xyz[100:130, 1] = np.nan                                       # a gap of 0.3 s
    xyz[rng.random(xyz.shape[:2]) < 0.02] = np.nan                 # dropouts
    from dataclasses import replace
    data = replace(data, xyz_m=xyz)
    res = _refine(system.rig, system.platform_params, data)
    e_c, e_i = _errors(res)
    i_max = np.linalg.eigvalsh(OBJECT.inertia_com)[-1]
    assert np.all(np.abs(e_c) <= 4 * res.com_std)
    assert np.all(np.abs(e_i) <= 4 * res.inertia_com_std / i_max)
    assert abs(res.marker_sigma_mm - 0.1) < 0.01                  # residuals are the noise
    assert res.n_residuals == 3 * int(np.isfinite(xyz[..., 0]).sum())
    # the drop-in result for the subset stage carries the same numbers
    pr = res.as_posture_result()
    assert pr.weighting == "output-error" and pr.covariance9.shape == (9, 9)
    np.testing.assert_allclose(pr.com, res.com)
    np.testing.assert_allclose(np.sqrt(np.diag(res.props_cov))[:3], res.com_std)


def test_damping_scale_nuisance_is_recovered(sim):
    system, traj = sim
    data = synthesize_markers(traj, [MarkerSet("platform", system.rig.platform.markers_platform)],
                              noise_sigma_m=0.0, rng=np.random.default_rng(0), rate_hz=RATE)
    from dataclasses import replace
    rig_off = replace(system.rig, springs=tuple(replace(s, damping=s.damping * 1.1)
                                                for s in system.rig.springs))
    res = _refine(rig_off, system.platform_params, data, nuisance="damping-scale", substeps=2)
    assert abs(res.nuisance["damping_scale"] - 1 / 1.1) < 1e-4
    e_c, e_i = _errors(res)
    assert np.abs(e_c).max() < 1e-6 and np.abs(e_i).max() < 1e-4


def test_calibration_error_is_propagated(sim):
    """Noise-free data fitted with one stiffness off by delta: the error that causes is what
    the propagated calibration term predicts for a standard error of delta (first order)."""
    system, traj = sim
    data = synthesize_markers(traj, [MarkerSet("platform", system.rig.platform.markers_platform)],
                              noise_sigma_m=0.0, rng=np.random.default_rng(0), rate_hz=RATE)
    from dataclasses import replace
    delta = 1.5                                                   # N/m, 0.05 %
    springs = list(system.rig.springs)
    springs[0] = replace(springs[0], stiffness=springs[0].stiffness + delta)
    rig_off = replace(system.rig, springs=tuple(springs))
    n = len(springs)
    cal_std = {"stiffness": np.r_[delta, np.zeros(n - 1)], "free_length": np.zeros(n),
               "damping": np.zeros(n), "platform_mass": 0.0, "platform_com": np.zeros(3),
               "platform_inertia_com": np.zeros((3, 3))}
    res = _refine(rig_off, system.platform_params, data, substeps=2, calibration_std=cal_std)
    e_c, _ = _errors(res)
    big = np.argmax(np.abs(e_c))
    assert np.abs(e_c[big]) > 1e-5                                 # the error is visible
    # the residual misfit the stiffness error leaves also enters the residual variance
    cal_part = np.sqrt(res.com_std ** 2 - res.com_std_noise ** 2)
    np.testing.assert_allclose(cal_part, np.abs(e_c), rtol=0.05, atol=2e-7)


def test_calibration_refinement_recovers_the_rig():
    """Three noise-free captures (empty, one block in two placements) from a start 0.3 %
    off in stiffness, 0.5 mm in free length, 10 % in damping, 0.5 % in platform mass and
    1 % in inertia: refined to well inside the calibration's goals (stiffness 0.05 %,
    mass 0.01 %, inertia 0.1 %). Measured: 3e-4 %, 4e-4 %, 0.02 %."""
    from dataclasses import replace
    from rigtool.identify.calibration.output_error import OECapture, refine_calibration
    rig, plat = demo_rig(spring_damping_n_s_m=6.0)
    from _calibration_sim import block_captures
    caps = [OECapture(f"c{i}", data, load) for i, (data, load) in
            enumerate(block_captures(rig, plat, seconds=5.0, seed=3, rate_hz=RATE))]
    start_rig = replace(rig, springs=tuple(
        replace(s, stiffness=s.stiffness * 1.003, free_length=s.free_length + 5e-4,
                damping=s.damping * 1.1) for s in rig.springs))
    start_plat = InertialParams.from_com(plat.mass * 1.005, plat.com + 1e-3,
                                         plat.inertia_com * 1.01)
    res = refine_calibration(start_rig, start_plat, caps)
    i_max = np.linalg.eigvalsh(plat.inertia_com)[-1]
    assert np.abs(res.rig.stiffness / rig.stiffness - 1).max() < 5e-5
    assert abs(res.platform.mass / plat.mass - 1) < 2e-5
    assert np.abs(res.platform.inertia_com - plat.inertia_com).max() / i_max < 2e-4
    assert np.abs(res.rig.free_length - rig.free_length).max() < 2e-6
    assert np.abs(res.rig.damping - rig.damping).max() < 0.05
    assert max(res.residual_rms_mm.values()) < 2e-3
    # the full covariance travels to the posture fit as principal-axis perturbations
    members = res.as_calibration_std()["members"]
    assert 0 < len(members) <= 3 * len(rig.springs) + 10
    assert all(len(m[2]) == 4 and InertialParams(m[2][0]).mass > 0 for m in members)
