"""rigtool.engine against independent references: the simulator (rigtool.sim), the Kane's-
method tree model and the batched rigid model of rigtool.identify, energy conservation, and
finite differences of its sensitivities."""

from dataclasses import replace
from pathlib import Path

import _ref_rigid_batch as om            # independent numpy references (tests/)
import _ref_tree_kane as tm

import numpy as np
import pytest

from rigtool.engine import rigid, tree as et
from rigtool.inertia import InertialParams, inertia_vector
from rigtool.rig import Platform, Rig, Spring
from rigtool.sim import dynamics as dyn
from rigtool.sim.markers import marker_positions
from rigtool.sim.scenario import load_scenario
from rigtool.sim.session_writer import capture_jobs, system_for
from rigtool.tree import minimal_parameters, phi_b_vector

ROOT = Path(__file__).resolve().parents[1] / "scenarios"


def _paper_rig(locked=()):
    anchors = [[0.72, 0.42, 2.3], [-0.7, 0.41, 2.3], [-0.71, -0.43, 2.3], [0.69, -0.4, 2.3]]
    atts = [[0.55, 0.25, 0.0], [-0.55, 0.25, 0.0], [-0.55, -0.25, 0.0], [0.55, -0.25, 0.0]]
    springs = tuple(Spring(f"S{i}", np.array(a), np.array(b), 3000.0 + 50 * i, 1.02, 6.0)
                    for i, (a, b) in enumerate(zip(anchors, atts)))
    return Rig("t", Platform({}), springs, np.array([0.0, 0.0, -9.80665]), tuple(locked))


def _rigid_case(locked=()):
    rig = _paper_rig(locked)
    pi = InertialParams.from_com(90.0, np.array([0.05, -0.02, 0.1]),
                                 np.diag([8.0, 20.0, 25.0]) + 0.5).pi
    y0 = np.concatenate([[0.003, 0.002, 1.2], np.eye(3).ravel(), [0.01, 0.0, 0.02],
                         [0.02, 0.03, 0.01]])
    return rig, pi, y0


@pytest.mark.parametrize("locked", [(), ("rz", "x")])
def test_rigid_engine_matches_the_batched_model(locked):
    """The same RK4 grid as the numpy reference model (tests/_ref_rigid_batch.py, written independently): the
    states agree to rounding over 10 s (free: the same COM-form equations; locked: the
    spatial solve on the free rows)."""
    rig, pi, y0 = _rigid_case(locked)
    ref = om.integrate(om.batch_model(rig, pi[None]), y0[None], 1200, 1 / 120, 1)[:, 0]
    got, _ = rigid.simulate(rigid.RigidModel.of(rig),
                            rigid.theta_of(pi, rig.stiffness, rig.free_length, rig.damping),
                            y0, 1200, 1 / 120)
    assert np.abs(got - ref).max() < 1e-9
    assert np.ptp(got[:, 2]) > 1e-3                   # it moves


@pytest.mark.slow
def test_loaded_rigid_executables_are_the_ones_a_fit_calls(monkeypatch):
    """load_executables (calibrate runs it on a thread while it reads the captures) loads
    the compiled chunks under the same argument types a simulation passes: a simulation
    after it, primal and with 20 tangent columns (padded to 24), finds them and adds none
    (one more would be a second load, or a compilation, on the fit's path)."""
    rig, pi, y0 = _rigid_case(("rz", "x"))      # a locked rig: its own static free rows
    model = rigid.RigidModel.of(rig)
    for chunk in (rigid._chunk, rigid._chunk_tangents):    # as in a new process
        monkeypatch.setattr(chunk, "_loaded", {})
    assert rigid.padded_width(20) == 24
    rigid.load_executables(model, widths=(24,))
    loaded = (set(rigid._chunk._loaded), set(rigid._chunk_tangents._loaded))
    th = rigid.theta_of(pi, rig.stiffness, rig.free_length, rig.damping)
    rigid.simulate(model, th, y0, 300, 1 / 120)
    rigid.simulate(model, th, y0, 300, 1 / 120, tangent_y0=np.eye(18)[:, :20])
    assert (set(rigid._chunk._loaded), set(rigid._chunk_tangents._loaded)) == loaded


@pytest.mark.slow
def test_rigid_offset_corrects_the_output_not_the_integration():
    """``simulate(offset=...)`` adds the offset to every returned and consumed state and
    leaves the trajectory itself (and its tangents) alone: with the offset the integrator's
    difference at the same inputs, the coarse model returns the finer model's states."""
    rig, pi, y0 = _rigid_case()
    model = rigid.RigidModel.of(rig)
    th = rigid.theta_of(pi, rig.stiffness, rig.free_length, rig.damping)
    coarse, tan = rigid.simulate(model, th, y0, 600, 1 / 120, tangent_y0=np.eye(18)[:, :5])
    fine, _ = rigid.simulate(model, th, y0, 600, 1 / 120, substeps=2)
    offset = fine - coarse
    assert np.abs(offset).max() > 1e-9                     # RK4's error is there to correct
    got, tan_off = rigid.simulate(model, th, y0, 600, 1 / 120, offset=offset,
                                  tangent_y0=np.eye(18)[:, :5])
    np.testing.assert_allclose(got, fine, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(tan_off, tan)
    seen = np.empty_like(got)

    def consume(k0, states, _tangents):
        seen[k0:k0 + states.shape[0]] = states

    rigid.simulate(model, th, y0, 600, 1 / 120, offset=offset, tangent_y0=np.eye(18)[:, :5],
                   consume=consume)
    np.testing.assert_allclose(seen, fine, rtol=0, atol=1e-13)


def test_rigid_sensitivities_match_central_differences():
    """Exact forward-mode derivatives against central differences along random directions
    (their truncation error, ~1e-7 relative, bounds the agreement)."""
    rig, pi, y0 = _rigid_case()
    model = rigid.RigidModel.of(rig)
    th = rigid.theta_of(pi, rig.stiffness, rig.free_length, rig.damping)
    rng = np.random.default_rng(0)
    d_th = rng.normal(size=(th.size, 3)) * np.abs(th)[:, None] * 1e-2
    d_y = np.zeros((18, 3))
    d_y[[0, 1, 2, 12, 13, 14, 15, 16, 17]] = rng.normal(size=(9, 3)) * 1e-2
    _, tan = rigid.simulate(model, th, y0, 600, 1 / 120, tangent_theta=d_th, tangent_y0=d_y)
    eps = 1e-6
    for j in range(3):
        plus, _ = rigid.simulate(model, th + eps * d_th[:, j], y0 + eps * d_y[:, j], 600, 1 / 120)
        minus, _ = rigid.simulate(model, th - eps * d_th[:, j], y0 - eps * d_y[:, j], 600,
                                  1 / 120)
        fd = (plus - minus) / (2 * eps)
        assert np.abs(fd - tan[:, :, j]).max() < 1e-6 * np.abs(tan[:, :, j]).max()


def _tree_setup(name: str, duration_s: float, *, spring_damping=True, joint_damping=None):
    sc = load_scenario(ROOT / name)
    job = [j for j in capture_jobs(sc) if j.kind == "relative"][0]
    system = system_for(sc, job)
    if not spring_damping:
        system = replace(system, rig=replace(system.rig, springs=tuple(
            replace(s, damping=0.0) for s in system.rig.springs)))
    if joint_damping is not None:
        system = replace(system, joint_damping=joint_damping)
    s = job.settings
    traj = dyn.simulate(system, duration_s, s.rate_hz, platform_offset=s.offset,
                        platform_velocity=s.velocity,
                        link_rotation=dict(job.plan.start_rotations))
    tree = sc.obj.tree
    n = len(tree.links)
    phi_b = phi_b_vector(minimal_parameters(tree))
    batch = tm.tree_batch(system.rig, sc.platform_params.pi, tree.parent_index(),
                          np.array([tree.joint_center(i) for i in range(n)]),
                          sc.obj.base_rotation_platform, sc.obj.base_position_platform_m,
                          sc.obj.total_mass, phi_b[None], np.full((1, n - 1),
                                                                  system.joint_damping))
    names = ["platform"] + [l.name for l in tree.links[1:]]
    y0 = np.concatenate([traj.position_m["platform"][0]]
                        + [traj.rotation[k][0].ravel() for k in names]
                        + [traj.velocity_lab["platform"][0]]
                        + [traj.omega_lab[k][0] for k in names])
    link_index = {l.name: i for i, l in enumerate(tree.links)}
    body_of, coords = [], []
    for ms in job.marker_sets:
        for m in ms.markers_body.values():
            m = np.asarray(m, float)
            i = 0 if ms.body == "platform" else link_index[ms.body]
            if ms.body == tree.links[0].name:
                m = sc.obj.base_rotation_platform @ m + sc.obj.base_position_platform_m
            body_of.append(i)
            coords.append(m)
    pis = np.concatenate([batch.mass[0][:, None], batch.h_body[0],
                          inertia_vector(batch.inertia_body[0])], 1)
    model = et.TreeModel.of(system.rig, tree.parent_index(), body_of)
    theta = et.theta_of(pis, batch.joint_parent[0], batch.joint_damping[0],
                        system.rig.stiffness, system.rig.free_length, system.rig.damping,
                        np.array(coords))
    return dict(sc=sc, job=job, traj=traj, batch=batch, y0=y0, model=model, theta=theta,
                dt=1.0 / s.rate_hz, body_of=np.array(body_of), coords=np.array(coords))


@pytest.mark.parametrize("name", ["demo.toml", "four_link.toml"])
def test_tree_engine_tracks_the_simulator(name):
    """Articulated-body engine against rigtool.sim (its own equations, adaptive integrator):
    every marker within 1e-6 m over 4 s (2 RK4 substeps), and against the Kane's-method
    model on the same RK4 grid to 1e-9 m."""
    p = _tree_setup(name, 4.0)
    n_t = len(p["traj"].time_s)
    _, mk, _ = et.simulate(p["model"], p["theta"], p["y0"], n_t, p["dt"], substeps=2)
    _, xyz_sim, _ = marker_positions(p["traj"], list(p["job"].marker_sets))
    assert np.abs(mk - xyz_sim).max() < 1e-6
    assert np.ptp(xyz_sim[:, -1], axis=0).max() > 0.02           # the links really swing
    states = tm.integrate(p["batch"], p["y0"][None], n_t, p["dt"], substeps=2)
    kane = tm.predict_markers(p["batch"], states[:, 0], p["body_of"], p["coords"])
    assert np.abs(mk - kane).max() < 1e-9


def test_tree_engine_conserves_energy():
    """Springs and joints undamped: the energy drift is RK4's truncation error alone (shrinks
    like h^4 or faster; an error in the equations would not)."""
    p = _tree_setup("four_link.toml", 0.02, spring_damping=False, joint_damping=0.0)
    p["theta"][p["model"].layout()["c"]] = 0.0
    drift = []
    for sub in (4, 8):
        states, _, _ = et.simulate(p["model"], p["theta"], p["y0"], 200, p["dt"], substeps=sub)
        e = et.energy(p["model"], p["theta"], states[::10])
        drift.append(np.ptp(e))
    assert drift[1] < 1e-8 * np.abs(e).max() + 1e-9
    assert drift[0] > 12 * drift[1]


def test_tree_sensitivities_match_central_differences():
    p = _tree_setup("four_link.toml", 1.0)
    rng = np.random.default_rng(1)
    th, y0, model = p["theta"], p["y0"], p["model"]
    n_s = model.n_state
    d_th = rng.normal(size=(th.size, 2)) * (np.abs(th)[:, None] + 1e-3) * 1e-2
    d_y = np.zeros((n_s, 2))
    d_y[n_s - 3 * model.n_bodies - 3:] = rng.normal(size=(3 * model.n_bodies + 3, 2)) * 1e-2
    _, _, tan = et.simulate(model, th, y0, 100, p["dt"], tangent_theta=d_th, tangent_y0=d_y)
    eps = 1e-6
    for j in range(2):
        _, plus, _ = et.simulate(model, th + eps * d_th[:, j], y0 + eps * d_y[:, j], 100, p["dt"])
        _, minus, _ = et.simulate(model, th - eps * d_th[:, j], y0 - eps * d_y[:, j], 100,
                                  p["dt"])
        fd = (plus - minus) / (2 * eps)
        assert np.abs(fd - tan[..., j]).max() < 1e-6 * np.abs(tan[..., j]).max()


def test_tree_frames_consumed_chunk_by_chunk_equal_the_whole_run(monkeypatch):
    """``consume``: the frames integrated chunk by chunk (each chunk restarted from the last
    frame of the one before, the tangents carried, columns split over two threads) are the
    frames of one run, bit for bit: the same RK4 steps in the same order."""
    from rigtool.engine import tree_compiled
    p = _tree_setup("four_link.toml", 1.0)
    model, th, y0 = p["model"], p["theta"], p["y0"]
    rng = np.random.default_rng(3)
    d_th = rng.normal(size=(th.size, 20)) * (np.abs(th)[:, None] + 1e-3) * 1e-2
    d_y = rng.normal(size=(model.n_state, 20)) * 1e-3
    whole = et.simulate(model, th, y0, 101, p["dt"], substeps=2, tangent_theta=d_th,
                        tangent_y0=d_y)
    monkeypatch.setattr(tree_compiled, "CHUNK_BYTES", 1)       # the 16-frame minimum
    got = [np.empty_like(a) for a in whole]
    seen = []

    def consume(k0, states, mks, d_mks):
        seen.append((k0, states.shape[0]))
        for out, part in zip(got, (states, mks, d_mks)):
            out[k0:k0 + part.shape[0]] = part

    assert et.simulate(model, th, y0, 101, p["dt"], substeps=2, tangent_theta=d_th,
                       tangent_y0=d_y, consume=consume) is None
    assert [k for k, _ in seen] == list(range(0, 101, 16)) and sum(m for _, m in seen) == 101
    for a, b in zip(got, whole):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("name, free_rows", [("four_link.toml", None),
                                             ("demo.toml", (0, 1, 2, 4))])
def test_compiled_tree_tangents_equal_jax_forward_mode(name, free_rows):
    """The hand-written derivative rules (rigtool.engine.tree_tangents) against JAX's forward
    mode through the same equations (rigtool.engine.tree.rhs, traced): states, markers and
    all marker derivatives agree to round-off over 1 s, random directions in every input
    (inertial parameters, joint centres and damping, springs, markers, initial state),
    with every platform DOF free and with two of them locked (the root's reduced solve)."""
    p = _tree_setup(name, 1.0)
    model, th, y0 = p["model"], p["theta"], p["y0"]
    if free_rows is not None:
        model = replace(model, free_rows=free_rows)
    rng = np.random.default_rng(7)
    n_dir = 20
    d_th = rng.normal(size=(th.size, n_dir)) * (np.abs(th)[:, None] + 1e-3) * 1e-2
    d_y = rng.normal(size=(model.n_state, n_dir)) * 1e-3
    got = et.simulate(model, th, y0, 120, p["dt"], substeps=2, tangent_theta=d_th,
                      tangent_y0=d_y)
    ref = et.simulate_jax(model, th, y0, 120, p["dt"], substeps=2, tangent_theta=d_th,
                          tangent_y0=d_y)
    assert np.ptp(ref[1], axis=0).max() > 1e-3                      # it moves
    for a, b in zip(got, ref):
        assert np.abs(a - b).max() <= 1e-11 * np.abs(b).max()
    primal = et.simulate(model, th, y0, 120, p["dt"], substeps=2)
    assert primal[2] is None
    np.testing.assert_array_equal(primal[1], got[1])               # the same primal path
