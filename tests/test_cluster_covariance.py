"""Cluster-robust (sandwich) standard errors of the output-error posture fit.

A camera's tag corners of one body in one frame share one pose estimate, so their errors are
correlated and the Gauss-Newton covariance, which counts every row as independent, is too
small. Checked here on a linear model whose statistics are known in closed form: the
sandwich against a brute-force sum, its agreement with ``s^2 H^-1`` under independent
errors (tolerance: the sandwich's own sampling error, from the design), the precision it
reports, and its coverage under cluster-correlated errors; then on the posture fit: equal to
the Gauss-Newton errors under independent isotropic noise, larger under the tracker's pose
errors (rigtool.camera.pose_noise); the manifest's settings and their errors.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import lfilter
from scipy.spatial.transform import Rotation

from rigtool.camera.demo import box_tags, locked_object, platform_scene
from rigtool.camera.pose_noise import body_pose_noise, draw_corner_errors
from rigtool.config import POSTURE_STANDARD_ERRORS
from rigtool.engine.whiten import MarkerCovariance
from rigtool.errors import InputError
from rigtool.identify.posture.cluster_covariance import (STANDARD_ERRORS, cluster_covariance,
                                                        frame_clustered,
                                                        resolve_standard_errors,
                                                        score_autocorrelation,
                                                        serial_covariance, SERIAL_GATE,
                                                        SERIAL_WINDOW_S)
from rigtool.identify.posture.equation_error import PostureResult
from rigtool.identify.posture.output_error import refine_posture
from rigtool.inertia import InertialParams
from rigtool.sim.dynamics import FixedBody, System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import demo_rig

from _living_posture import simulated_posture

ROOT = Path(__file__).resolve().parents[1]
G, M = 200, 6                                   # clusters, rows per cluster (linear model)


def _design(rng):
    """``[G*M, 3]``: an intercept, a cluster-level covariate, a row-level one."""
    z = np.repeat(rng.normal(size=G), M)
    return np.column_stack([np.ones(G * M), z, rng.normal(size=G * M)])


def _fit(x, y):
    """Least squares: ``(beta, H^-1, per-row scores [N, P])``."""
    h_inv = np.linalg.inv(x.T @ x)
    beta = h_inv @ x.T @ y
    return beta, h_inv, x * (y - x @ beta)[:, None]


def test_sandwich_is_the_brute_force_sum():
    """Clusters of 3 'frames' of 2 rows each, some frames empty: ``c H^-1 (sum_g s_g
    s_g^T) H^-1`` summed cluster by cluster by hand, with CR1's ``c``."""
    rng = np.random.default_rng(0)
    t_n, p_n = 31, 4
    scores = rng.normal(size=(t_n, p_n))
    seen = rng.random(t_n) > 0.2
    scores[~seen] = 0.0
    a = rng.normal(size=(p_n, p_n))
    bread = np.linalg.inv(a @ a.T + p_n * np.eye(p_n))
    out = cluster_covariance(bread, scores, n_rows=2 * int(seen.sum()), cluster_frames=3,
                             seen=seen)
    meat, g_n = np.zeros((p_n, p_n)), 0
    for t0 in range(0, t_n, 3):
        if seen[t0:t0 + 3].any():
            s = scores[t0:t0 + 3].sum(0)
            meat += np.outer(s, s)
            g_n += 1
    n_rows = 2 * int(seen.sum())
    c = g_n / (g_n - 1) * (n_rows - 1) / (n_rows - p_n)
    np.testing.assert_allclose(out.cov, c * bread @ meat @ bread, rtol=1e-12)
    assert out.n_clusters == g_n and out.cluster_frames == 3
    with pytest.raises(ValueError, match="at least 2 clusters"):
        cluster_covariance(bread, scores[:1], n_rows=4)
    with pytest.raises(ValueError, match="cluster_frames must be at least 1"):
        cluster_covariance(bread, scores, n_rows=n_rows, cluster_frames=0)
    with pytest.raises(ValueError, match="do not match"):
        cluster_covariance(bread, scores[:, :2], n_rows=n_rows)


def test_independent_errors_give_the_usual_covariance():
    """Independent, identically distributed errors: the sandwich's diagonal equals ``s^2
    (X^T X)^-1``'s within 5 of the sandwich's own relative standard deviations,
    ``sqrt(2 sum_g |w_g|^4) / sum_g |w_g|^2`` with ``w_g = (H^-1 X_g^T)_j`` (Gaussian
    errors; computed from the design, not from the estimate)."""
    rng = np.random.default_rng(1)
    x = _design(rng)
    y = x @ [1.0, -2.0, 0.5] + rng.normal(0, 0.3, len(x))
    beta, h_inv, rows = _fit(x, y)
    s2 = float(((y - x @ beta) ** 2).sum()) / (len(x) - 3)
    out = cluster_covariance(h_inv, rows.reshape(G, M, 3).sum(1), n_rows=len(x))
    w2 = ((h_inv @ x.T) ** 2).reshape(3, G, M).sum(-1)        # |w_g|^2 per coefficient
    rel_sd = np.sqrt(2 * (w2 ** 2).sum(1)) / w2.sum(1)
    ratio = np.diag(out.cov) / (s2 * np.diag(h_inv))
    assert np.all(np.abs(ratio - 1) < 5 * rel_sd), (ratio, rel_sd)


def test_reported_precision_is_the_sandwich_scatter():
    """Over 300 draws the sandwich's variance scatters by the relative standard deviation it
    reports (mean over draws), within 15 % (the scatter's own sampling error is 4 %)."""
    rng = np.random.default_rng(2)
    x = _design(rng)
    var, rel = [], []
    for _ in range(300):
        y = x @ [1.0, -2.0, 0.5] + rng.normal(0, 0.3, len(x))
        _, h_inv, rows = _fit(x, y)
        out = cluster_covariance(h_inv, rows.reshape(G, M, 3).sum(1), n_rows=len(x))
        var.append(np.diag(out.cov))
        rel.append(out.variance_rel_std)
    var = np.array(var)
    observed = var.std(0) / var.mean(0)
    np.testing.assert_allclose(observed, np.mean(rel, 0), rtol=0.15)


def test_cluster_correlated_errors_are_covered():
    """A shared error per cluster (correlation 0.8 within it) and a cluster-level covariate:
    the usual covariance is too small by ``sqrt(1 + (M-1) 0.8) = 2.2`` on that coefficient
    (coverage of +-2 SE near 64 %); the sandwich covers 95 % within three binomial standard
    deviations (400 draws: +-3.3 %)."""
    rng = np.random.default_rng(3)
    x = _design(rng)
    hit_s, hit_m = [], []
    for _ in range(400):
        e = np.repeat(rng.normal(0, np.sqrt(0.8), G), M) + rng.normal(0, np.sqrt(0.2), G * M)
        y = x @ [1.0, -2.0, 0.5] + e
        beta, h_inv, rows = _fit(x, y)
        s2 = float(((y - x @ beta) ** 2).sum()) / (len(x) - 3)
        out = cluster_covariance(h_inv, rows.reshape(G, M, 3).sum(1), n_rows=len(x))
        hit_s.append(abs(beta[1] + 2.0) <= 2 * np.sqrt(out.cov[1, 1]))
        hit_m.append(abs(beta[1] + 2.0) <= 2 * np.sqrt(s2 * h_inv[1, 1]))
    sd = np.sqrt(0.95 * 0.05 / 400)
    assert abs(np.mean(hit_s) - 0.95) < 3 * sd
    assert np.mean(hit_m) < 0.95 - 6 * sd


def test_serial_covariance_is_the_brute_force_sum():
    """Newey-West: ``c B (sum_{|l| <= L} (1 - |l|/(L+1)) sum_t s_t s_{t+l}^T) B`` summed
    pair by pair; with ``L = 0`` the sandwich of independent frames."""
    rng = np.random.default_rng(7)
    scores, bread = rng.normal(size=(40, 3)), np.linalg.inv(np.diag([2.0, 3.0, 4.0]) + 0.1)
    lag_n, n_rows = 4, 120
    meat = np.zeros((3, 3))
    for t in range(40):
        for u in range(40):
            if abs(t - u) <= lag_n:
                meat += (1 - abs(t - u) / (lag_n + 1)) * np.outer(scores[t], scores[u])
    want = (n_rows - 1) / (n_rows - 3) * bread @ meat @ bread
    got = serial_covariance(bread, scores, n_rows=n_rows, lag_frames=lag_n)
    np.testing.assert_allclose(got.cov, want, rtol=1e-12, atol=1e-15)
    assert got.cluster_frames == lag_n and got.n_clusters == 40
    white = serial_covariance(bread, scores, n_rows=n_rows, lag_frames=0).cov
    np.testing.assert_allclose(white, (n_rows - 1) / (n_rows - 3) * bread @ scores.T
                               @ scores @ bread, rtol=1e-12)


def test_serially_correlated_errors_are_covered():
    """Errors correlated over frames (first-order autoregression, correlation time 5
    frames: the long-run variance 10x the frames'), 2000 frames, an intercept and a slow
    sine: the independent frames' standard error of the intercept is about 3x too small
    (coverage of +-2 SE near 50 %); the Newey-West one over 50 frames (the posture fit's
    window at 100 Hz) covers 90-99 % over 300 draws (its Bartlett weights leave it a few per
    cent low)."""
    rng = np.random.default_rng(8)
    t_n, a = 2000, np.exp(-1 / 5)
    x = np.column_stack([np.ones(t_n), np.sin(2 * np.pi * np.arange(t_n) / 100)])
    h_inv = np.linalg.inv(x.T @ x)
    hit_hac, hit_iid = [], []
    for _ in range(300):
        e = lfilter([np.sqrt(1 - a * a)], [1, -a], rng.normal(size=t_n))
        y = x @ [1.0, 0.5] + e
        beta = h_inv @ x.T @ y
        r = y - x @ beta
        s2 = float(r @ r) / (t_n - 2)
        out = serial_covariance(h_inv, x * r[:, None], n_rows=t_n, lag_frames=50)
        hit_hac.append(abs(beta[0] - 1.0) <= 2 * np.sqrt(out.cov[0, 0]))
        hit_iid.append(abs(beta[0] - 1.0) <= 2 * np.sqrt(s2 * h_inv[0, 0]))
    assert 0.90 <= np.mean(hit_hac) <= 0.99, np.mean(hit_hac)
    assert np.mean(hit_iid) < 0.65


def test_score_autocorrelation_sees_correlation_over_frames():
    """Independent scores: every lag within 4/sqrt(T); a first-order autoregression with
    coefficient 0.6: lag 1 near 0.6 and lag 2 near 0.36, and the posture fit's warning says
    so unless the clusters span the lags checked."""
    rng = np.random.default_rng(4)
    t_n = 4000
    white = rng.normal(size=(t_n, 3))
    assert np.all(np.abs(score_autocorrelation(white, lags=5)[1:]) < 4 / np.sqrt(t_n))
    ar = white.copy()
    for t in range(1, t_n):
        ar[t] = 0.6 * ar[t - 1] + 0.8 * white[t]
    acf = score_autocorrelation(ar, lags=2)
    np.testing.assert_allclose(acf[1:], [0.6, 0.36], atol=4 / np.sqrt(t_n))
    seen = np.ones(t_n, bool)
    bread = np.eye(3) / t_n
    *_, note = frame_clustered(bread, white, None, 3, 0, None, n_rows=3 * t_n, seen=seen)
    assert note is None
    *_, note = frame_clustered(bread, ar, None, 3, 0, None, n_rows=3 * t_n, seen=seen)
    assert "scores are correlated over frames" in note and "clusters of 1 frame" in note
    # clusters of 20 frames span the correlation (0.6^5 = 0.08 at the last lag checked)
    *_, note = frame_clustered(bread, ar, None, 3, 0, None, n_rows=3 * t_n, seen=seen,
                               cluster_frames=20)
    assert note is None


def test_standard_error_settings():
    assert POSTURE_STANDARD_ERRORS == STANDARD_ERRORS
    assert resolve_standard_errors("auto", True) == "frame"
    assert resolve_standard_errors("auto", False) == "independent"
    assert resolve_standard_errors("frame", False) == "frame"
    assert resolve_standard_errors("serial", True) == "serial"
    assert POSTURE_STANDARD_ERRORS == ("auto", "independent", "frame", "serial")
    with pytest.raises(ValueError, match="standard_errors must be one of"):
        resolve_standard_errors("pose", True)


# ------------------------------------------------------------------------ the posture fit

RATE = 120.0


@pytest.fixture(scope="module")
def corners():
    """The demo posture filmed by the demo camera, 3 s: two tags (8 corners) on the
    platform, two on the box (its base-link markers), each body's tracker pose noise."""
    obj = locked_object()
    rig, platform = demo_rig(spring_damping_n_s_m=6.0)
    system = System(rig=rig, platform_params=platform,
                    fixed=(FixedBody("obj", obj.params, obj.rotation_platform,
                                     obj.position_platform_m),))
    traj = simulate(system, 3.0, RATE, platform_offset=[0.012, -0.01, 0.008, 0.03, -0.025, 0.03],
                    platform_velocity=[0.02, 0.02, -0.01, 0.05, -0.05, 0.05])
    scene = platform_scene(traj, rig.platform.markers_platform,
                           link_tags=box_tags("obj", obj.box_centre_m, obj.box_size_m))
    pm = dict(list(scene.layout.body_markers("platform").items())[:8])
    bm = dict(list(scene.layout.body_markers("obj").items())[:8])
    clean = synthesize_markers(traj, [MarkerSet("platform", pm), MarkerSet("obj", bm)],
                               noise_sigma_m=0.0, rate_hz=RATE)
    cp = scene.camera_pose
    t_n = clean.n_frames
    noise = [body_pose_noise(scene.camera, cp.rotation_cam_lab, cp.translation_cam_lab_m,
                             traj.rotation[b][:t_n], traj.position_m[b][:t_n],
                             np.array(list(m.values())), sigma_px=0.05)
             for b, m in (("platform", pm), ("obj", bm))]
    return obj, system, clean, pm, bm, (*noise, cp.rotation_cam_lab)


def _refine(corners, data, **kwargs):
    obj, system, _, pm, bm, _ = corners
    p = InertialParams.from_com(obj.params.mass, obj.params.com + 1e-3,
                                obj.params.inertia_com * 1.01)
    start = PostureResult("p", obj.params.mass, p.com, np.zeros(3), p.inertia_com,
                          np.zeros((3, 3)), p, np.eye(9), np.eye(12), p, {}, np.zeros((1, 6)),
                          np.zeros((1, 6)), np.zeros(1), "exact", "noise", [])
    off = Rotation.from_rotvec(np.deg2rad([0.5, -0.3, 0.2])).as_matrix()
    return refine_posture(system.rig, system.platform_params, data,
                          base_rotation_platform=obj.rotation_platform @ off,
                          base_position_platform=obj.position_platform_m + 1e-3,
                          total_mass_kg=obj.params.mass, start=start, markers_platform=pm,
                          base_markers=bm, **kwargs)


def _sd(res):
    return np.concatenate([res.com_std, res.inertia_com_std[np.triu_indices(3)]])


def test_posture_sandwich_equals_gauss_newton_for_independent_noise(corners):
    """Isotropic noise, independent per coordinate (0.02 mm): the same estimate, and
    standard errors equal within 5 of the sandwich's reported relative precision."""
    _, _, clean, *_ = corners
    data = replace(clean, xyz_m=clean.xyz_m
                   + np.random.default_rng(5).normal(0, 2e-5, clean.xyz_m.shape))
    gn = _refine(corners, data, standard_errors="independent")
    sw = _refine(corners, data, standard_errors="frame")
    assert gn.standard_errors == "independent" and gn.se_clusters == 0
    assert sw.standard_errors == "frame" and sw.se_clusters == clean.n_frames
    np.testing.assert_array_equal(sw.com, gn.com)
    prec = sw.se_rel_precision
    assert 0 < prec < 0.2
    ratio = _sd(sw) / _sd(gn)
    assert np.all(np.abs(ratio - 1) < 5 * prec), (ratio, prec)
    assert not any("correlated over frames" in w for w in sw.warnings)
    with pytest.raises(InputError, match=r"field 'cluster_frames'.*clusters of 10 frames "
                                         r"leave fewer than 50"):
        _refine(corners, data, standard_errors="frame", cluster_frames=10)


def test_posture_sandwich_sees_the_shared_pose_errors(corners):
    """The tracker's errors (one pose error per body and frame on all its corners, the
    side file's per-corner covariance for the whitened fit): ``auto`` clusters by frame, and
    its COM standard errors exceed the per-corner ones by more than 5 of their relative
    precision; the scores show no correlation between frames."""
    _, _, clean, _, _, noise = corners
    rng = np.random.default_rng(6)
    err = np.concatenate([draw_corner_errors(n, rng) for n in noise[:2]], axis=1)
    cov = np.concatenate([n.corner_cov_lab_m2 for n in noise[:2]], axis=1)
    data = replace(clean, xyz_m=clean.xyz_m + err)
    mc = MarkerCovariance(clean.names, cov, "sim", correlated_in_frame=True)
    auto = _refine(corners, data, marker_covariance=mc)
    indep = _refine(corners, data, marker_covariance=mc, standard_errors="independent")
    assert auto.standard_errors == "frame"
    assert np.all(auto.com_std > (1 + 5 * auto.se_rel_precision) * indep.com_std)
    assert np.all(np.abs(auto.se_score_autocorrelation[1:]) < 4 / np.sqrt(clean.n_frames))


def test_pose_noise_maps_pose_errors_to_corners(corners):
    """The corner Jacobian is the corners' finite-difference displacement under a small
    pose error (camera frame, carried to the lab); the corners' covariance is the pose
    covariance carried by it; drawn errors have that covariance (2000 draws: each variance
    within 5 of its relative standard errors, sqrt(2/2000))."""
    _, _, _, pm, _, noise = corners
    nz, r_cl = noise[0], noise[2]
    g = nz.corner_jac_lab
    np.testing.assert_allclose(np.einsum("tkip,tpq,tkjq->tkij", g, nz.pose_cov, g),
                               nz.corner_cov_lab_m2, rtol=1e-9, atol=1e-18)
    pts = np.array(list(pm.values()))
    d = np.array([1e-6, -2e-6, 1.5e-6, 2e-6, 1e-6, -1e-6])
    moved_cam = (Rotation.from_rotvec(nz.rvec[0] + d[:3]).apply(pts) + d[3:]
                 - Rotation.from_rotvec(nz.rvec[0]).apply(pts))
    np.testing.assert_allclose(np.einsum("kip,p->ki", g[0], d), moved_cam @ r_cl,
                               rtol=1e-4, atol=1e-12)
    rng = np.random.default_rng(7)
    n = 2000
    one = replace(nz, corner_jac_lab=np.repeat(g[:1], n, 0),
                  pose_cov=np.repeat(nz.pose_cov[:1], n, 0))
    draws = draw_corner_errors(one, rng)[:, 0]
    np.testing.assert_allclose(draws.var(0), np.diag(nz.corner_cov_lab_m2[0, 0]),
                               rtol=5 * np.sqrt(2 / n))
    with pytest.raises(ValueError, match="ar1 must lie in"):
        draw_corner_errors(nz, rng, ar1=1.0)


@pytest.mark.parametrize("line,match", [
    ('standard_errors = "pose"', r"postures\[0\].standard_errors.*expected one of auto, "
                                 r"independent, frame"),
    ("cluster_frames = 0", r"postures\[0\].cluster_frames.*whole number of frames >= 1"),
])
def test_run_refuses_a_bad_standard_error_setting(tmp_path, capsys, line, match):
    """A bad setting in the manifest: `rigtool run` exits 2 naming the file and field."""
    from rigtool.cli import main

    dst = tmp_path / "captures" / "two-link"
    shutil.copytree(ROOT / "captures" / "two-link", dst,
                    ignore=shutil.ignore_patterns("results", "*.csv"))
    manifest = dst / "session.toml"
    text = manifest.read_text()
    head, sep, tail = text.partition("[[postures]]\n")
    manifest.write_text(head + sep + line + "\n" + tail)
    assert main(["run", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "session.toml" in err and "Traceback" not in err
    assert re.search(match, err), err


def test_report_says_which_standard_errors():
    """report.json's output_error block names the standard errors' kind, and for the
    clustered sandwich its clusters and precision; the report's table says it in words."""
    from types import SimpleNamespace
    from rigtool.report.content_detail import _noise_model
    from rigtool.report.document import _standard_errors

    def r(v, digits=6):
        return round(float(v), digits)

    assert _standard_errors(SimpleNamespace(standard_errors="independent"), r) == {
        "kind": "independent"}
    oe = SimpleNamespace(standard_errors="frame", se_clusters=720, se_cluster_frames=1,
                         se_rel_precision=0.0312)
    got = _standard_errors(oe, r)
    assert got == {"kind": "frame", "clusters": 720, "cluster_frames": 1,
                   "relative_precision": 0.031}
    assert "clustered by 1 frame(s), 720 clusters" in _noise_model({"kind": "isotropic"}, got)
    assert _noise_model({"kind": "isotropic"}, {"kind": "independent"}) == "isotropic"


@pytest.mark.slow
def test_auto_takes_the_serial_covariance_under_a_heartbeat(tmp_path):
    """A posture with the simulator's cardiac recoil (no marker noise: the residual is the
    recoil's, periodic at the heart's rate): "auto" finds the serial-correlation-robust
    variances over twice the independent frames' and reports them."""
    from rigtool.pipeline.posture import fit_one_posture

    session, rigfile, markers, _ = simulated_posture(tmp_path, "heartbeat.toml", 8.0)
    ref = session.postures[0]
    out = fit_one_posture(session, rigfile, session.tree, markers, ref.capture,
                          name=ref.name, window=ref.window, units=ref.units,
                          total_mass_kg=session.total_mass_kg, settings=session.filter,
                          method="output-error")
    oe = out.refinement
    assert oe.standard_errors == "serial", oe.se_serial_inflation
    assert oe.se_serial_inflation > SERIAL_GATE
    assert oe.se_cluster_frames == round(SERIAL_WINDOW_S * 100)
