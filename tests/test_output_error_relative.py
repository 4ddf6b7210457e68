"""Output-error refinement of the relative-motion stage (rigtool.identify.relative.output_error)
and the Kane's-method reference tree model (tests/_ref_tree_kane.py), checked against the simulator."""

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rigtool.errors import InputError
import _ref_tree_kane as tm              # the Kane's-method reference model (tests/)
from rigtool.identify.relative.output_error import RelativeRefinement, refine_relative
from rigtool.identify.relative.oe_result import floor_words
from rigtool.identify.relative.bounds import describe_interval
from rigtool.identify.relative.equation_error import RelativeResult, resolve_relative
from rigtool.config import FilterSettings
from rigtool.mocap import MarkerData
from rigtool.sim import dynamics as dyn
from rigtool.sim.markers import marker_positions
from rigtool.sim.scenario import load_scenario
from rigtool.sim.session_writer import _rig_with_truth, capture_jobs, system_for
from rigtool.tree import minimal_parameters, phi_b_vector, phi_s_from_phi_b

ROOT = Path(__file__).resolve().parents[1] / "scenarios"


def _setup(name: str, duration_s: float, *, spring_damping: bool = True,
           joint_damping: float | None = None):
    sc = load_scenario(ROOT / name)
    job = [j for j in capture_jobs(sc) if j.kind == "relative"][0]
    system = system_for(sc, job)
    if not spring_damping:
        rig = replace(system.rig, springs=tuple(replace(s, damping=0.0)
                                                for s in system.rig.springs))
        system = replace(system, rig=rig)
    if joint_damping is not None:
        system = replace(system, joint_damping=joint_damping)
    s = job.settings
    traj = dyn.simulate(system, duration_s, s.rate_hz, platform_offset=s.offset,
                        platform_velocity=s.velocity,
                        link_rotation=dict(job.plan.start_rotations))
    tree = sc.obj.tree
    n = len(tree.links)
    phi_b = phi_b_vector(minimal_parameters(tree))
    damp = system.joint_damping
    model = tm.tree_batch(system.rig, sc.platform_params.pi, tree.parent_index(),
                          np.array([tree.joint_center(i) for i in range(n)]),
                          sc.obj.base_rotation_platform, sc.obj.base_position_platform_m,
                          sc.obj.total_mass, phi_b[None], np.full((1, n - 1), damp))
    names = ["platform"] + [l.name for l in tree.links[1:]]
    y0 = np.concatenate([traj.position_m["platform"][0]]
                        + [traj.rotation[k][0].ravel() for k in names]
                        + [traj.velocity_lab["platform"][0]]
                        + [traj.omega_lab[k][0] for k in names])
    return SimpleNamespace(sc=sc, job=job, system=system, traj=traj, tree=tree, n=n,
                           phi_b=phi_b, model=model, y0=y0, dt=1.0 / s.rate_hz)


@pytest.fixture(scope="module")
def demo():
    return _setup("demo.toml", 4.0)


@pytest.mark.parametrize("name", ["demo.toml", "four_link.toml"])
def test_tree_model_tracks_the_simulator(name, demo):
    """Same parameters and initial state: every marker within 1e-6 m over 4 s (the RK4 grid
    is the only difference; 2 substeps at 100-120 Hz)."""
    p = demo if name == "demo.toml" else _setup(name, 4.0)
    states = tm.integrate(p.model, p.y0[None], len(p.traj.time_s), p.dt, substeps=2)
    sets = [m for m in p.job.marker_sets]
    names, xyz_sim, _ = marker_positions(p.traj, sets)
    body_of, coords, order = [], [], []
    link_index = {l.name: i for i, l in enumerate(p.tree.links)}
    r_pb = p.sc.obj.base_rotation_platform
    t_pb = p.sc.obj.base_position_platform_m
    for ms in sets:
        for k, m in ms.markers_body.items():
            m = np.asarray(m, float)
            i = 0 if ms.body == "platform" else link_index[ms.body]
            if ms.body == p.tree.links[0].name:
                m = r_pb @ m + t_pb
            body_of.append(i)
            coords.append(m)
    pred = tm.predict_markers(p.model, states[:, 0], np.array(body_of), np.array(coords))
    assert pred.shape == xyz_sim.shape
    assert np.abs(pred - xyz_sim).max() < 1e-6
    # and the links really swing (the comparison is not of a body at rest)
    assert np.ptp(xyz_sim[:, -1], axis=0).max() > 0.02


def test_energy_conserved_without_damping():
    """Springs and joints undamped: the energy drift is RK4's truncation error alone (it
    shrinks like h^4 or faster; an error in the equations of motion would not)."""
    p = _setup("four_link.toml", 0.02, spring_damping=False, joint_damping=0.0)
    drift = []
    for sub in (4, 8):
        states = tm.integrate(p.model, p.y0[None], 200, p.dt, substeps=sub)
        e = tm.energy(p.model, states[::10])[:, 0]
        drift.append(np.ptp(e))
    mm, _, nu = tm.TreeRHS(p.model).mass_and_forces(states[:, 0])
    ke = 0.5 * np.einsum("ti,tij,tj->t", nu, mm, nu)
    assert ke.max() > 0.1                      # a real motion (J)
    assert drift[1] < 1e-8 * ke.max()
    assert drift[0] > 12 * drift[1]


def test_minimal_lift_is_exact(demo):
    """Moving links with mass zero and their minimal MS/J: the mass matrix of the true
    system (simulator's standard parameters) and of the lift agree along the motion."""
    # kinetic energy along the simulator's trajectory, both ways
    t = demo.traj
    names = ["platform"] + [l.name for l in demo.tree.links[1:]]
    states = np.concatenate([t.position_m["platform"][:50]]
                            + [t.rotation[k][:50].reshape(50, 9) for k in names]
                            + [t.velocity_lab["platform"][:50]]
                            + [t.omega_lab[k][:50] for k in names], axis=1)
    mm, _, nu = tm.TreeRHS(demo.model).mass_and_forces(states)
    ke = 0.5 * np.einsum("ti,tij,tj->t", nu, mm, nu)
    ke_true = np.zeros(50)
    for link in demo.tree.links:
        prm = link.params
        rot = t.rotation[link.name][:50]
        v, w = t.velocity_lab[link.name][:50], t.omega_lab[link.name][:50]
        h = rot @ prm.first_moment
        inertia = rot @ prm.inertia_origin @ np.swapaxes(rot, -1, -2)
        ke_true += (0.5 * prm.mass * (v * v).sum(-1) + (v * np.cross(w, h)).sum(-1)
                    + 0.5 * np.einsum("ti,tij,tj->t", w, inertia, w))
    pp = demo.sc.platform_params
    rot = t.rotation["platform"][:50]
    v, w = t.velocity_lab["platform"][:50], t.omega_lab["platform"][:50]
    h = rot @ pp.first_moment
    inertia = rot @ pp.inertia_origin @ np.swapaxes(rot, -1, -2)
    ke_true += (0.5 * pp.mass * (v * v).sum(-1) + (v * np.cross(w, h)).sum(-1)
                + 0.5 * np.einsum("ti,tij,tj->t", w, inertia, w))
    assert np.allclose(ke, ke_true, rtol=1e-10, atol=1e-12)


def _markerdata(p, traj, noise_m=0.0, seed=0):
    names, xyz, _ = marker_positions(traj, list(p.job.marker_sets))
    rng = np.random.default_rng(seed)
    xyz = xyz + rng.normal(0.0, noise_m, xyz.shape) if noise_m else xyz
    return MarkerData(time_s=traj.time_s, names=tuple(names), xyz_m=xyz,
                      rate_hz=1.0 / p.dt, source=Path("swing.csv"))


@pytest.fixture(scope="module")
def swing():
    """A 5 s noise-free swing of the two-link demo, an equation-error start whose J_yy is
    2 % off, and Phi_s exact with a small covariance."""
    p = _setup("demo.toml", 5.0)
    data = _markerdata(p, p.traj)
    phi_s = phi_s_from_phi_b(p.phi_b)
    cov_s = np.diag((1e-9 + 1e-5 * np.abs(phi_s)) ** 2)
    markers = {l.name: l.markers_link for l in p.tree.links}
    start = resolve_relative(p.tree, p.sc.rig, p.sc.platform_params, data, markers,
                             SimpleNamespace(values=phi_s, covariance=cov_s),
                             p.sc.obj.total_mass, FilterSettings(), (0.5, 4.5))
    vals = start.values.copy()
    vals[13] *= 1.02
    vals[4] -= vals[13] * 0.02 / 1.02
    start = replace(start, values=vals)
    return SimpleNamespace(p=p, data=data, phi_s=phi_s, cov_s=cov_s, markers=markers,
                           start=start)


def test_refine_recovers_jyy_and_damping_noise_free(swing):
    p = swing.p
    res = refine_relative(p.tree, _rig_with_truth(p.sc), p.sc.platform_params, swing.data,
                          swing.markers, start=swing.start, phi_s_cov=swing.cov_s,
                          phi_s=swing.phi_s, total_mass_kg=p.sc.obj.total_mass,
                          base_pose=(p.sc.obj.base_rotation_platform,
                                     p.sc.obj.base_position_platform_m + [1e-3, 0.0, 0.0]),
                          window=(0.5, 3.5), damping_start=0.02, first_horizon_s=1.0,
                          free="jyy")
    assert isinstance(res, RelativeRefinement)
    true_jyy = p.phi_b[13]
    # model error of the 1-substep grid is a few micrometres: the bias it leaves is far
    # below 0.01 % of J_yy (the 2 % start error is removed)
    assert abs(res.jyy["link1.J_yy"] - true_jyy) < 1e-4 * true_jyy
    assert abs(res.joint_damping["link1"] - p.job.plan.joint_damping) < 1e-3
    assert res.residual_rms_mm["platform"] < 0.01
    # the base pose (started 1 mm off) is fitted from the base markers
    assert np.abs(res.base_pose[1] - p.sc.obj.base_position_platform_m).max() < 1e-5
    assert set(res.residual_rms_mm) == {"platform", "link0", "link1"}
    # Phi_B: Phi_s's entries kept, the two J_yy moved together (sum fixed)
    assert np.allclose(phi_s_from_phi_b(res.phi_b), swing.phi_s, atol=1e-12)
    assert np.all(res.phi_b_std >= res.phi_b_std_noise - 1e-15)
    assert res.phi_b_std[13] > 0 and not res.on_bound
    rr = res.as_relative_result()
    assert isinstance(rr, RelativeResult) and rr.method == "output-error"
    assert np.array_equal(rr.values, res.values)
    # Fig. 6 and eq. 16's residual are redrawn with the refined Phi_B, not the start's
    ok = np.all(np.isfinite(rr.figure["lhs"]), axis=1)
    assert np.allclose(rr.figure["rhs"][ok], rr.figure["a_phi_b"][ok] @ res.phi_b)
    assert not np.allclose(rr.figure["rhs"][ok], swing.start.figure["rhs"][ok])
    assert set(rr.residual_rms) >= {"force", "torque", "marker_mm.platform"}
    # free="phi_b": Phi_s as a prior, the swing moves J_yy the same way
    res_b = refine_relative(p.tree, _rig_with_truth(p.sc), p.sc.platform_params, swing.data,
                            swing.markers, start=swing.start, phi_s_cov=swing.cov_s,
                            phi_s=swing.phi_s, total_mass_kg=p.sc.obj.total_mass,
                            base_pose=(p.sc.obj.base_rotation_platform,
                                       p.sc.obj.base_position_platform_m),
                            window=(0.5, 2.5), damping="shared",
                            damping_start=0.05, first_horizon_s=1.0)
    assert abs(res_b.jyy["link1.J_yy"] - true_jyy) < 1e-3 * true_jyy
    assert set(res_b.joint_damping) == {"shared"}
    assert res_b.phi_b_cov.shape == (18, 18) and res_b.free == "phi_b"
    # the swing pulls Phi_B, the prior holds the rest near Phi_s
    assert np.abs(phi_s_from_phi_b(res_b.phi_b) - swing.phi_s).max() < 1e-3


def test_phi_b_without_covariance_falls_back_to_jyy(swing):
    p = swing.p
    res = refine_relative(p.tree, _rig_with_truth(p.sc), p.sc.platform_params, swing.data,
                          swing.markers, start=swing.start,
                          phi_s_cov=np.full_like(swing.cov_s, np.nan), phi_s=swing.phi_s,
                          total_mass_kg=p.sc.obj.total_mass, window=(0.5, 1.5),
                          first_horizon_s=0.5)
    assert res.free == "jyy" and any("covariance" in w for w in res.warnings)
    assert np.all(np.isfinite(res.phi_b))


def test_refine_input_errors(swing):
    p = swing.p
    kw = dict(start=swing.start, phi_s_cov=swing.cov_s, total_mass_kg=p.sc.obj.total_mass)
    rig = _rig_with_truth(p.sc)
    with pytest.raises(InputError, match="window"):
        refine_relative(p.tree, rig, p.sc.platform_params, swing.data, swing.markers,
                        window=(1.0, 1.05), **kw)
    few = dict(swing.markers)
    few["link1"] = dict(list(few["link1"].items())[:2])
    with pytest.raises(InputError, match="link1"):
        refine_relative(p.tree, rig, p.sc.platform_params, swing.data, few, **kw)
    with pytest.raises(ValueError):
        refine_relative(p.tree, rig, p.sc.platform_params, swing.data, swing.markers,
                        free="all", **kw)


def test_describe_interval_names_an_empty_interval():
    assert describe_interval(0.1, 0.25) == "[0.1000, 0.2500]"
    empty = describe_interval(0.4021, -2.7097)
    assert empty.startswith("empty") and "0.4021" in empty and "-2.7097" in empty


def test_refinement_that_misses_the_noise_is_not_reached(swing):
    """reached_noise() compares the refinement's residual with the marker sets' own scatter
    in their rigid fits; the noise reported is the platform's markers'."""
    p = swing.p
    res = refine_relative(p.tree, _rig_with_truth(p.sc), p.sc.platform_params, swing.data,
                          swing.markers, start=swing.start, phi_s_cov=swing.cov_s,
                          phi_s=swing.phi_s, total_mass_kg=p.sc.obj.total_mass,
                          window=(0.5, 1.5), first_horizon_s=0.5, free="jyy")
    # the simulated markers are rigid on their bodies: every set scatters as the platform's
    assert res.floor_mm == res.scatter_mm
    assert 0.5 < res.scatter_mm / res.noise_mm < 1.5
    fitted = replace(res, marker_sigma_mm=0.01, noise_mm=0.1, scatter_mm=0.1)
    assert fitted.reached_noise()
    # a voluntary-motion case that once failed: 31 mm against 0.1 mm
    failed = replace(res, marker_sigma_mm=31.0, noise_mm=0.1, scatter_mm=0.1)
    assert not failed.reached_noise()
    assert failed.to_json()["reached_noise"] is False
    # markers on skin: the sets scatter 0.7 mm, the platform's 0.1 mm; a model can leave no
    # less than the scatter, so the residual is judged against it and the words give both
    skin = replace(res, marker_sigma_mm=0.56, noise_mm=0.1, scatter_mm=0.7)
    assert skin.reached_noise() and skin.to_json()["floor_mm"] == 0.7
    assert floor_words(0.7, 0.1) == ("0.700 mm, the scatter of its markers on their links "
                                     "(7.0x the platform's markers' 0.100 mm noise)")
    assert floor_words(0.11, 0.1) == "0.110 mm marker noise"
    # unknown noise (no rigid fits): the residual cannot be judged, the fit is kept
    assert replace(res, marker_sigma_mm=31.0, noise_mm=float("nan"),
                   scatter_mm=float("nan")).reached_noise()


def _problems_made(monkeypatch) -> list:
    """Every RelativeProblem the refinement builds, in order (its construction watched), so
    a test can evaluate the fit's own problem afterwards."""
    from rigtool.identify.relative import problem as rp

    made = []
    post_init = rp.RelativeProblem.__post_init__

    def keep(self):
        post_init(self)
        made.append(self)

    monkeypatch.setattr(rp.RelativeProblem, "__post_init__", keep)
    return made


def test_held_parameters_integrate_only_the_state_columns(swing, monkeypatch):
    """With the parameters held (the first, initial-state stage) the Jacobian is the full
    Jacobian's state columns, integrated alone (the tangents are the cost)."""
    from rigtool.engine import tree as et

    made = _problems_made(monkeypatch)
    p = swing.p
    refine_relative(p.tree, _rig_with_truth(p.sc), p.sc.platform_params, swing.data,
                    swing.markers, start=swing.start, phi_s_cov=swing.cov_s, phi_s=swing.phi_s,
                    total_mass_kg=p.sc.obj.total_mass, window=(0.5, 1.5), first_horizon_s=0.5,
                    free="jyy")
    prob = made[0]
    widths = []
    simulate = et.simulate

    def counted(*args, **kwargs):
        widths.append(kwargs["tangent_y0"].shape[1])
        return simulate(*args, **kwargs)

    monkeypatch.setattr(et, "simulate", counted)
    # the estimate: the point of the last Jacobian (its covariance's rows)
    (_, fitted, x_bytes), = [k for k, v in prob.cache.items() if v[1] is not None]
    assert fitted
    x_full = np.frombuffer(x_bytes)
    full = prob.n_params
    prob.n_frames, prob.cache = 40, {}
    jac_full = prob.jacobian(x_full)
    assert np.abs(jac_full[:, full:]).max() > 0
    # held at the estimate's parameters: the same point
    prob.fit_params, prob.cache, prob.theta_fixed = False, {}, x_full[:full].copy()
    jac_state = prob.jacobian(x_full[full:])
    assert widths == [x_full.size, x_full.size - full]
    assert np.allclose(jac_state, jac_full[:, full:], rtol=0, atol=1e-9 * np.abs(jac_full).max())


def test_streamed_jacobian_gives_the_held_fit(swing, monkeypatch):
    """Above the Jacobian budget the swing's fit streams its normal equations over the
    frames (rigtool.identify.relative.streamed_rows.StreamedRows). They, and the covariance's
    cross products, are the held Jacobian's sums in another order (round-off); the geodesic
    acceleration's ``J^T r_vv`` from every 4th frame is a quadrature of it. End to end on a
    swing with 0.1 mm marker noise both fits stop within ftol = 1e-8 of the cost, i.e.
    within sqrt(1e-8 M) ~ 0.03 standard errors of each other for M ~ 10^4 rows."""
    from rigtool.identify.relative import streamed_rows
    from rigtool.identify.relative.fit_common import refinement_scores

    made = _problems_made(monkeypatch)
    p = swing.p
    noisy = _markerdata(p, p.traj, noise_m=1e-4, seed=4)
    kw = dict(start=swing.start, phi_s_cov=swing.cov_s, phi_s=swing.phi_s,
              total_mass_kg=p.sc.obj.total_mass, window=(0.5, 2.5), first_horizon_s=0.5,
              free="jyy")
    rig = _rig_with_truth(p.sc)
    held = refine_relative(p.tree, rig, p.sc.platform_params, noisy, swing.markers, **kw)
    prob = made[-1]
    x = np.frombuffer([k for k, v in prob.cache.items() if v[1] is not None][0][2]).copy()
    n_mark = int(prob.mask[:prob.n_frames].sum()) * 3
    members = [(None, None, (prob.platform_pi * 1.001, rig.stiffness * 1.01,
                             rig.free_length + 1e-4, rig.damping * 1.1))]
    prob.cache = {}
    ref_normal, ref_jac = prob.normal(x), prob.jacobian(x)
    ref_cross = streamed_rows.marker_cross_products(prob, x, ref_jac, n_mark, members)
    v = np.linalg.solve(ref_normal.jtj + 1e-3 * np.diag(np.diag(ref_normal.jtj)),
                        -ref_normal.jtr) + 1e-4 * np.abs(x)
    ref_curv = prob.curvature_at(x, v)
    monkeypatch.setattr(streamed_rows, "JACOBIAN_BYTES", 8 * ref_jac.size // 4 + 1)
    prob.cache = {}
    assert prob.stride(x.size) == 4
    got_normal, got_jac = prob.normal(x), prob.jacobian(x)
    assert isinstance(got_jac, streamed_rows.StreamedRows)
    assert got_normal.cost == ref_normal.cost
    np.testing.assert_allclose(got_normal.jtj, ref_normal.jtj, rtol=1e-11,
                               atol=1e-12 * np.abs(ref_normal.jtj).max())
    np.testing.assert_allclose(got_normal.jtr, ref_normal.jtr, rtol=1e-9,
                               atol=1e-10 * np.abs(ref_normal.jtr).max())
    # each frame's scores (the serial-correlation-robust covariance's): the same sums
    r_m = prob.residual(x)[:n_mark]
    mask = prob.mask[:prob.n_frames]
    held_scores = refinement_scores(ref_jac, r_m, mask)
    np.testing.assert_allclose(refinement_scores(got_jac, r_m, mask), held_scores,
                               rtol=1e-9, atol=1e-10 * np.abs(held_scores).max())
    got_cross = streamed_rows.marker_cross_products(prob, x, got_jac, n_mark, members)
    for a, b in zip(got_cross, ref_cross):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10 * np.abs(b).max())
    # the quadrature of every 4th frame: J^T r_vv to a few per cent
    got_curv = prob.curvature_at(x, v)
    assert np.linalg.norm(got_curv - ref_curv) < 0.05 * np.linalg.norm(ref_curv)
    streamed = refine_relative(p.tree, rig, p.sc.platform_params, noisy, swing.markers, **kw)
    assert np.abs(streamed.phi_b - held.phi_b).max() < 0.03 * held.phi_b_std[13]
    np.testing.assert_allclose(streamed.phi_b_std, held.phi_b_std, rtol=1e-3)


def test_markers_sliding_on_their_links_take_serial_standard_errors(swing):
    """Every link marker sliding 0.6 mm (sines of 4-25 s periods, as skin markers do)
    leaves the swing's fit a residual correlated over frames: the refinement reports the
    serial-correlation-robust covariance, and white marker noise keeps the independent
    frames' (rigtool.identify.relative.fit_common.marker_noise_covariance)."""
    p = swing.p
    kw = dict(start=swing.start, phi_s_cov=swing.cov_s, phi_s=swing.phi_s,
              total_mass_kg=p.sc.obj.total_mass, window=(0.5, 3.5), first_horizon_s=1.0,
              free="jyy")
    rig = _rig_with_truth(p.sc)
    white = _markerdata(p, p.traj, noise_m=1e-4, seed=5)
    res = refine_relative(p.tree, rig, p.sc.platform_params, white, swing.markers, **kw)
    assert res.standard_errors["kind"] == "independent"
    assert res.standard_errors["serial_inflation"] < 2.0
    rng = np.random.default_rng(6)
    xyz = white.xyz_m.copy()
    t = white.time_s
    for k, name in enumerate(white.names):
        if any(name.split(":")[-1] in m for m in swing.markers.values()):
            f = rng.uniform(0.04, 0.25, (5, 3))
            xyz[:, k] += 0.0006 * np.sin(2 * np.pi * f * t[:, None, None]
                                         + rng.uniform(0, 6, (5, 3))).sum(1)
    sliding = replace(white, xyz_m=xyz)
    res = refine_relative(p.tree, rig, p.sc.platform_params, sliding, swing.markers, **kw)
    assert res.standard_errors["kind"] == "serial"
    assert res.standard_errors["inflation"] > 2.0
    assert res.to_json()["standard_errors"] == res.standard_errors
