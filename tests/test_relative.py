"""Relative-motion stage (paper 002 eq. 13-20): J_yy of the moving links and the full Phi_B."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import cvxpy as cp
import numpy as np
import pytest

from rigtool.config import FilterSettings
from rigtool.errors import ConfigError, IdentifiabilityError
from rigtool.identify.relative.bounds import (feasible_intervals, link_lower_bounds,
                                              phi_b_affine)
from rigtool.identify.relative.equation_error import dual_metric_factor, resolve_relative
from rigtool.identify.relative.regression import relative_system
from rigtool.report.plots_fit import plot_relative
from rigtool.tree import j_matrix, minimal_parameters, phi_b_vector, phi_s_from_phi_b

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def swing():
    """Noise-free simulated swing of the demo scenario, the true rig and the true Phi_B."""
    from rigtool.sim.markers import synthesize_markers
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import _rig_with_truth, capture_jobs, simulate_job
    sc = load_scenario(ROOT / "scenarios" / "demo.toml")
    job = [j for j in capture_jobs(sc) if j.kind == "relative"][0]
    traj = simulate_job(sc, job)
    data = synthesize_markers(traj, job.marker_sets, noise_sigma_m=0.0,
                              rate_hz=job.settings.rate_hz)
    tree = sc.obj.tree
    phi_b = phi_b_vector(minimal_parameters(tree))
    return SimpleNamespace(sc=sc, traj=traj, job=job, data=data, tree=tree, phi_b=phi_b,
                           rig=_rig_with_truth(sc), platform=sc.platform_params,
                           mass=float(sum(l.params.mass for l in tree.links)),
                           markers={l.name: l.markers_link for l in tree.links})


def test_affine_map_rebuilds_phi_b(swing):
    n = len(swing.tree.links)
    g, h = phi_b_affine(n)
    phi_s = phi_s_from_phi_b(swing.phi_b)
    u = swing.phi_b.reshape(n, 9)[1:, 4]
    assert np.allclose(g @ phi_s + h @ u, swing.phi_b, atol=1e-12)


def test_eq16_is_exact_for_the_minimal_set(swing):
    """With a filter wide enough to pass the swing's harmonics, the simulated spring wrench
    equals the Phi_B model to ~1e-5 of its size: the lumped parametrisation (child masses on
    the joints, m_j = 0 off the base) is exact for free spherical joints."""
    fs = FilterSettings(passband_hz=20.0, stopband_hz=35.0)
    s = relative_system(swing.tree, swing.rig, swing.platform, swing.data, swing.markers,
                        swing.mass, fs, window=(1.0, 11.0))
    r = (s.b - s.a_phi_b @ swing.phi_b)[s.ok]
    size = np.sqrt(np.mean(s.b[s.ok] ** 2, axis=0))
    assert np.all(np.sqrt(np.mean(r ** 2, axis=0)) < 2e-4 * size + 1e-4)
    # a wrong J_yy split (same Phi_s) does not fit: the stage can see it
    n = len(swing.tree.links)
    g, h = phi_b_affine(n)
    wrong = swing.phi_b + h @ np.full(n - 1, 0.05)
    r_wrong = (s.b - s.a_phi_b @ wrong)[s.ok]
    assert np.sqrt(np.mean(r_wrong ** 2)) > 100 * np.sqrt(np.mean(r ** 2))


def test_noise_free_j_yy_recovered(swing):
    """Paper filter (5 Hz): the filter does not commute with the swing's nonlinear terms, a
    small deterministic error well under 0.1 % of the link's J_yy."""
    phi_s = phi_s_from_phi_b(swing.phi_b)
    sub = SimpleNamespace(values=phi_s, covariance=np.zeros((phi_s.size, phi_s.size)))
    res = resolve_relative(swing.tree, swing.rig, swing.platform, swing.data, swing.markers,
                           sub, swing.mass, FilterSettings(), (1.0, 11.0), compensate=False)
    true = swing.phi_b[9 + 4]
    assert abs(res.resolved["link1.J_yy"] - true) < 1e-3 * true
    assert np.allclose(res.values, swing.phi_b, atol=1e-3 * true)
    lo, hi = res.bounds["link1.J_yy"]
    assert lo <= true <= hi and not res.on_bound
    fig = plot_relative(res)
    assert len(fig.axes) == 6
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_dual_metric_is_the_inverse_spatial_inertia_of_the_assembly(swing):
    """``L L^T = Lambda^-1`` with Lambda the spatial inertia (about the platform origin,
    platform axes) of platform plus object in the swing's mean posture, built here
    independently from the links' true standard parameters (not from Phi_s)."""
    from rigtool.identify.posture.equation_error import transform_matrix
    from rigtool.inertia import skew
    from rigtool.tree import composite_params
    s = relative_system(swing.tree, swing.rig, swing.platform, swing.data, swing.markers,
                        swing.mass, FilterSettings(), window=(1.0, 11.0))
    phi_s = phi_s_from_phi_b(swing.phi_b)
    lt = dual_metric_factor(swing.tree, swing.platform, phi_s, s, swing.mass)
    obj = composite_params(swing.tree, s.link_rotations_base)        # base frame, base origin
    pi = swing.platform.pi + transform_matrix(s.base_rotation_platform,
                                              s.base_position_platform) @ obj.pi
    p = type(obj)(pi)
    m, h = p.mass, p.pi[1:4]
    lam = np.block([[m * np.eye(3), -skew(h)], [skew(h), p.inertia_origin]])
    np.testing.assert_allclose(lt.T @ lt, np.linalg.inv(lam), rtol=1e-9, atol=1e-12)
    # noise-free, the weighting is immaterial: the dual-metric fit recovers J_yy as well
    sub = SimpleNamespace(values=phi_s, covariance=np.zeros((phi_s.size, phi_s.size)))
    res = resolve_relative(swing.tree, swing.rig, swing.platform, swing.data, swing.markers,
                           sub, swing.mass, FilterSettings(), (1.0, 11.0), compensate=False,
                           weighting="dual-metric")
    assert res.weighting == "dual-metric"
    assert abs(res.resolved["link1.J_yy"] - swing.phi_b[13]) < 1e-3 * swing.phi_b[13]


def test_lower_bounds_match_the_sdp(swing):
    """Closed-form lower bounds equal cvxpy's SDP (pseudo-inertia with mass M0)."""
    n = len(swing.tree.links)
    phi_s = phi_s_from_phi_b(swing.phi_b)
    lower = link_lower_bounds(phi_s, n, swing.mass)
    per = phi_s[:8 * n].reshape(n, 8)
    for j in range(n):
        v = cp.Variable()
        ms, (dxx, dzz, yz, zx, xy) = per[j, :3], per[j, 3:]
        d = j_matrix(np.array([dxx, 0.0, dzz, yz, zx, xy]))
        sig = 0.5 * np.trace(d) * np.eye(3) - d
        block = cp.bmat([[sig + 0.5 * v * np.eye(3), ms.reshape(3, 1)],
                         [ms.reshape(1, 3), np.array([[swing.mass]])]])
        cp.Problem(cp.Minimize(v), [0.5 * (block + block.T) >> 0]).solve(solver="CLARABEL")
        assert abs(v.value - lower[j]) < 1e-5 * max(1.0, abs(lower[j]))
    # the true J_yy are feasible; PSD-only bounds are weaker
    true_jyy = swing.phi_b.reshape(n, 9)[:, 4]
    assert np.all(true_jyy >= lower - 1e-9)
    assert np.all(link_lower_bounds(phi_s, n, swing.mass, psd_only=True) <= lower + 1e-12)
    iv = feasible_intervals(lower, phi_s[-1])
    assert np.all(iv[:, 0] <= true_jyy[1:]) and np.all(true_jyy[1:] <= iv[:, 1])


def test_incomplete_subset_and_missing_markers_refused(swing):
    phi_s = phi_s_from_phi_b(swing.phi_b)
    bad = SimpleNamespace(values=np.where(np.arange(phi_s.size) == 3, np.nan, phi_s),
                          covariance=np.zeros((phi_s.size, phi_s.size)))
    with pytest.raises(IdentifiabilityError, match="Phi_s"):
        resolve_relative(swing.tree, swing.rig, swing.platform, swing.data, swing.markers,
                         bad, swing.mass, FilterSettings(), (1.0, 11.0))
    sub = SimpleNamespace(values=phi_s, covariance=np.zeros((phi_s.size, phi_s.size)))
    markers = dict(swing.markers)
    markers["link1"] = dict(list(markers["link1"].items())[:2])
    with pytest.raises(ConfigError, match="link1"):
        resolve_relative(swing.tree, swing.rig, swing.platform, swing.data, markers, sub,
                         swing.mass, FilterSettings(), (1.0, 11.0))


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The bundled demo session (calibrated in a temporary copy), postures and swing."""
    from rigtool.cli import main
    from rigtool.mocap import read_capture
    from rigtool.pipeline.session import run_session
    tmp = tmp_path_factory.mktemp("demo")
    shutil.copytree(ROOT / "calibration", tmp / "calibration",
                    ignore=shutil.ignore_patterns("*.calibrated.toml"))
    shutil.copytree(ROOT / "captures" / "two-link", tmp / "captures" / "two-link",
                    ignore=shutil.ignore_patterns("results"))
    # This stage is tested on equation-error postures (fast); the default output-error
    # path is exercised end to end by test_run.py.
    assert main(["calibrate", str(tmp / "calibration" / "paper-rig.toml"),
                 "--method", "equation-error"]) == 0
    out = run_session(tmp / "captures" / "two-link" / "session.toml", method="equation-error")
    s = out.session
    data = read_capture(s.relative_motion.capture, units=s.relative_motion.units)
    res = resolve_relative(s.tree, out.rigfile.rig, out.rigfile.rig.platform.params, data,
                           out.link_markers, out.subset, out.total_mass_kg, s.filter,
                           s.relative_motion.window)
    joint = resolve_relative(s.tree, out.rigfile.rig, out.rigfile.rig.platform.params, data,
                             out.link_markers, out.subset, out.total_mass_kg, s.filter,
                             s.relative_motion.window, method="joint")
    dual = resolve_relative(s.tree, out.rigfile.rig, out.rigfile.rig.platform.params, data,
                            out.link_markers, out.subset, out.total_mass_kg, s.filter,
                            s.relative_motion.window, weighting="dual-metric")
    truth = json.loads((tmp / "captures" / "two-link" / "truth.json").read_text())
    return out, res, truth, joint, dual


def test_demo_phi_b_against_truth(demo):
    """Every Phi_B element within 4 standard errors of the truth (plus floors of 0.05 mm x M0
    and 0.05 % of the largest link J_yy-scale for the 5 Hz filter's own error)."""
    out, res, truth, *_ = demo
    assert res.names == truth["phi_b"]["names"]
    tv = np.array(truth["phi_b"]["values"])
    err = np.abs(res.values - tv)
    per = np.array(res.names)
    is_ms = np.array([".MS_" in n for n in per])
    floor = np.where(is_ms, 5e-5 * out.total_mass_kg, 5e-4 * np.abs(tv[~is_ms]).max())
    assert np.all(err < 4 * res.std_phi_b + floor), dict(zip(per, err / res.std_phi_b))
    # paper 002 Table 5's figures
    i_max = max(np.linalg.eigvalsh(np.array(p["inertia_com"]))[-1] for p in truth["postures"])
    assert err[is_ms].max() / out.total_mass_kg < 2e-4
    assert err[~is_ms].max() / i_max < 1e-2
    t_jyy = truth["phi_b"]["values"][truth["phi_b"]["names"].index("link1.J_yy")]
    assert abs(res.resolved["link1.J_yy"] - t_jyy) < 4 * res.std["link1.J_yy"] + 5e-4
    lo, hi = res.bounds["link1.J_yy"]
    assert lo < res.resolved["link1.J_yy"] < hi and not res.on_bound
    assert res.compensated
    mp = res.minimal_parameters["link1"]
    assert np.allclose(mp["J"], np.array(truth["minimal_parameters"]["link1"]["J"]),
                       atol=4 * res.std_phi_b.max() + 1e-3)
    doc = res.to_json()
    json.dumps(doc)
    assert set(doc["residual_rms"]) == {"force", "torque"}


def test_demo_joint_fit(demo):
    """Joint fit of the postures' Phi_s and eq. 16: within 4 standard errors of the truth,
    and its standard errors no larger than the two-step ones (it uses more information)."""
    out, res, truth, joint, _ = demo
    assert joint.method == "joint" and not any("two-step" in w for w in joint.warnings)
    tv = np.array(truth["phi_b"]["values"])
    err = np.abs(joint.values - tv)
    assert np.all(err < 4 * joint.std_phi_b + 1e-4), err / joint.std_phi_b
    assert np.all(joint.std_phi_b <= res.std_phi_b * (1 + 1e-6))
    assert err[:3].max() / out.total_mass_kg < 2e-4


def test_demo_dual_metric_weighting(demo):
    """Paper 004's weighting of eq. 16's rows: within 4 standard errors of the truth (with
    the same floors as the default), compensated, inside the feasible interval."""
    out, _, truth, _, dual = demo
    assert dual.weighting == "dual-metric" and dual.compensated
    tv = np.array(truth["phi_b"]["values"])
    err = np.abs(dual.values - tv)
    is_ms = np.array([".MS_" in n for n in dual.names])
    floor = np.where(is_ms, 5e-5 * out.total_mass_kg, 5e-4 * np.abs(tv[~is_ms]).max())
    assert np.all(err < 4 * dual.std_phi_b + floor), err / dual.std_phi_b
    lo, hi = dual.bounds["link1.J_yy"]
    assert lo < dual.resolved["link1.J_yy"] < hi


def test_figure_jobs_need_only_the_drawing_code(demo, tmp_path):
    """The report's time-series figures go to worker processes with plain arrays
    (rigtool.report.figure_inputs): unpickling a run's figure jobs imports none of the
    fitting code (a worker drawing them needs numpy and matplotlib, not JAX, numba, cvxpy or
    scipy), and what they draw is the outcome's own numbers."""
    import pickle
    import subprocess
    import sys

    from rigtool.report.figures import posture_figures
    out, res, *_ = demo
    figures = posture_figures(out.postures)
    assert {f.file for f, _ in figures} >= {f"posture_{p.result.name}_{kind}.png"
                                            for p in out.postures
                                            for kind in ("motion", "wrench")}
    wrench = dict((f.file, call) for f, call in figures)[
        f"posture_{out.postures[0].result.name}_wrench.png"][1]
    assert np.array_equal(wrench.measured, out.postures[0].result.measured_wrench,
                          equal_nan=True)
    jobs = tmp_path / "jobs.pkl"
    jobs.write_bytes(pickle.dumps([call for _, call in figures] + [res.figure["rows"]]))
    heavy = ("jax", "numba", "cvxpy", "scipy", "pandas", "rigtool.identify",
             "rigtool.pipeline", "rigtool.engine")
    code = ("import pickle, sys; pickle.loads(open(sys.argv[1], 'rb').read()); "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r} "
            f"or any(m.startswith(h + '.') for h in {heavy!r})))")
    done = subprocess.run([sys.executable, "-c", code, str(jobs)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
