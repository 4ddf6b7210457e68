"""Anisotropic marker noise in the output-error posture fit: whitened rows.

A single camera sees a marker's depth several times worse than its position across the
view. With each marker's covariance ``C = L L^T`` the fit whitens its rows (``L^-1 r``,
``L^-1 J``), places the object's markers by their information and reports ``s^2 (J^T C^-1
J)^-1``. Checked here: the factors and the weighted placements against brute force; an
isotropic covariance gives the isotropic fit; with depth noise 7x the lateral the whitened
fit's standard errors describe its scatter over noise draws, its noise scale is 1, and it
beats the isotropic fit.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

from rigtool.camera.demo import box_tags, locked_object
from rigtool.engine.whiten import MarkerCovariance, whiten_rows, whitening_factors
from rigtool.identify.posture.attached_markers import attached_positions, placed_positions
from rigtool.identify.posture.equation_error import PostureResult
from rigtool.identify.posture.output_error import refine_posture
from rigtool.inertia import InertialParams
from rigtool.sim.dynamics import FixedBody, System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import demo_rig

RATE = 100.0
_TRIU = np.triu_indices(3)


def _random_cov(rng, n, ratio=7.0, lateral=5e-5):
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    dd = d[:, :, None] * d[:, None, :]
    return lateral ** 2 * (np.eye(3) - dd) + (ratio * lateral) ** 2 * dd


def test_whitening_factors_whiten():
    rng = np.random.default_rng(0)
    cov = _random_cov(rng, 5)
    seen = np.array([True, True, False, True, True])
    w = whitening_factors(cov, seen)
    c_mm = 1e6 * cov
    np.testing.assert_allclose(w[seen] @ c_mm[seen] @ np.swapaxes(w[seen], 1, 2),
                               np.broadcast_to(np.eye(3), (4, 3, 3)), atol=1e-10)
    assert np.all(w[~seen] == 0)
    r = rng.normal(size=12)
    jac = rng.normal(size=(12, 2))
    rw, jw = whiten_rows(w[seen], r, jac)
    for i in range(4):
        np.testing.assert_allclose(rw[3 * i:3 * i + 3], w[seen][i] @ r[3 * i:3 * i + 3])
        np.testing.assert_allclose(jw[3 * i:3 * i + 3], w[seen][i] @ jac[3 * i:3 * i + 3])
    bad = cov.copy()
    bad[1] = -bad[1]
    with pytest.raises(ValueError, match="not positive definite"):
        whitening_factors(bad, seen)
    bad[1] = np.nan
    with pytest.raises(ValueError, match="no finite covariance"):
        whitening_factors(bad, seen)


def test_weighted_places_are_the_maximum_likelihood_ones():
    """A free marker's place and the base cluster's pose under matrix weights, against a
    brute-force least-squares fit of the whitened rows."""
    rng = np.random.default_rng(1)
    t_n, e_n = 40, 4
    rot = Rotation.from_rotvec(rng.normal(0, 0.05, (t_n, 3))).as_matrix()
    pos = rng.normal(0, 0.01, (t_n, 3))
    defs = rng.normal(0, 0.2, (3, 3))                       # base-link markers (first 3)
    r_b = Rotation.from_rotvec([0.1, -0.2, 0.3]).as_matrix()
    places = np.vstack([defs @ r_b.T + [0.05, 0.0, 0.3], [[0.1, 0.2, 0.4]]])
    xyz = np.einsum("tij,kj->tki", rot, places) + pos[:, None]
    cov = np.stack([_random_cov(rng, e_n) for _ in range(t_n)])
    xyz = xyz + np.einsum("tkij,tkj->tki", np.linalg.cholesky(cov), rng.normal(size=xyz.shape))
    seen = rng.random((t_n, e_n)) > 0.1
    w = whitening_factors(cov, seen)

    def rows(v):
        rb = Rotation.from_rotvec(v[:3]).as_matrix()
        q = np.vstack([defs @ rb.T + v[3:6], v[6:9]])
        res = 1e3 * (np.einsum("tij,kj->tki", rot, q) + pos[:, None] - xyz)
        return np.einsum("tkij,tkj->tki", w, res)[seen].ravel()

    v0 = np.r_[Rotation.from_matrix(r_b).as_rotvec(), places[0] - r_b @ defs[0], places[3]]
    v0[3:6] = places[:3].mean(0) - r_b @ defs.mean(0)
    best = least_squares(rows, v0, xtol=1e-15, ftol=1e-15, gtol=1e-15).x
    rb = Rotation.from_rotvec(best[:3]).as_matrix()
    want = np.vstack([defs @ rb.T + best[3:6], best[6:9]])
    got = placed_positions(rot[:, None], pos[:, None], np.where(seen[..., None], xyz, 0.0),
                           seen, defs, w)[0]
    np.testing.assert_allclose(got, want, atol=1e-9)
    att = attached_positions(rot, pos, xyz, seen, defs, w)
    np.testing.assert_allclose(att.positions_m, want, atol=1e-9)
    np.testing.assert_allclose(att.base_rotation, rb, atol=1e-8)


@pytest.fixture(scope="module")
def posture():
    obj = locked_object()
    rig, platform = demo_rig(spring_damping_n_s_m=6.0)
    system = System(rig=rig, platform_params=platform,
                    fixed=(FixedBody("obj", obj.params, obj.rotation_platform,
                                     obj.position_platform_m),))
    traj = simulate(system, 4.0, RATE,
                    platform_offset=np.array([0.012, -0.01, 0.008, 0.03, -0.025, 0.03]),
                    platform_velocity=np.array([0.02, 0.02, -0.01, 0.05, -0.05, 0.05]))
    top = {f"o{k + 1}": t.position_body_m
           for k, t in enumerate(box_tags("obj", obj.box_centre_m, obj.box_size_m)[:4])}
    plat = rig.platform.markers_platform
    clean = synthesize_markers(traj, [MarkerSet("platform", plat), MarkerSet("obj", top)],
                               noise_sigma_m=0.0, rate_hz=RATE)
    return obj, system, clean, plat, top


def _fit(posture, data, cov=None):
    obj, system, _, plat, top = posture
    com0 = obj.params.com + np.array([1e-3, -1e-3, 1e-3])
    i0 = obj.params.inertia_com * 1.01
    p = InertialParams.from_com(obj.params.mass, com0, i0)
    z3, z9 = np.zeros(3), np.zeros((3, 3))
    start = PostureResult("p", obj.params.mass, com0, z3, i0, z9, p, np.eye(9), np.eye(12), p,
                          {}, np.zeros((1, 6)), np.zeros((1, 6)), np.zeros(1), "exact",
                          "noise", [])
    off = Rotation.from_rotvec(np.deg2rad([0.5, -0.3, 0.2])).as_matrix()
    return refine_posture(system.rig, system.platform_params, data,
                          base_rotation_platform=obj.rotation_platform @ off,
                          base_position_platform=obj.position_platform_m + 1e-3,
                          total_mass_kg=obj.params.mass, start=start, markers_platform=plat,
                          base_markers=top, marker_covariance=cov)


def _err_sd(res, obj):
    e = np.concatenate([res.com - obj.params.com,
                        (res.inertia_com - obj.params.inertia_com)[_TRIU]])
    return e, np.concatenate([res.com_std, res.inertia_com_std[_TRIU]])


def test_an_isotropic_covariance_gives_the_isotropic_fit(posture):
    """Whitening by ``sigma^2 1`` scales every row alike: same estimate (to the solver's
    convergence, measured 6e-4 standard errors) and the same standard errors (the noise
    scale's ``s`` carries the size); the noise scale is the residual std in sigmas."""
    obj, _, clean, _, _ = posture
    data = replace(clean, xyz_m=clean.xyz_m
                   + np.random.default_rng(1).normal(0, 1e-4, clean.xyz_m.shape))
    plain = _fit(posture, data)
    assert plain.noise_model == "isotropic" and np.isnan(plain.noise_scale)
    k = len(data.names)
    iso = MarkerCovariance(data.names, np.broadcast_to(1e-8 * np.eye(3), (k, 3, 3)), "test")
    white = _fit(posture, data, iso)
    assert white.noise_model == "covariance" and white.noise_source == "test"
    e0, sd0 = _err_sd(plain, obj)
    e1, sd1 = _err_sd(white, obj)
    assert np.all(np.abs(e1 - e0) <= 1e-2 * sd0)
    np.testing.assert_allclose(sd1, sd0, rtol=1e-5)
    np.testing.assert_allclose(white.marker_sigma_mm, plain.marker_sigma_mm, rtol=1e-6)
    np.testing.assert_allclose(white.noise_scale, plain.marker_sigma_mm / 0.1, rtol=1e-6)


@pytest.mark.slow
def test_whitened_standard_errors_match_the_scatter(posture):
    """Depth noise 7x the lateral (0.05 / 0.35 mm, along the demo camera's rays), 12 draws.

    Over the draws, the RMS of error / reported std for one number has a relative sampling
    spread of 1/sqrt(2 N) = 0.20; the nine numbers pooled are partly correlated, so their
    RMS spreads by at most that: 0.55-1.6 (about 2.3 spreads either side) does not fail by
    chance and fails standard errors off by 1.7x. The noise scale is estimated from
    ~10^4 rows (spread 0.7 %) and must be 1; the whitened fit's squared errors must be
    well below the isotropic fit's (measured 4-30x less per number on this geometry)."""
    obj, system, clean, _, _ = posture
    target = np.nanmean(clean.xyz_m[:, :4], axis=(0, 1))
    el = np.radians(50.0)
    cam = target + 1.5 * np.array([0.0, -np.cos(el), np.sin(el)])
    d = np.nanmean(clean.xyz_m, 0) - cam
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    dd = d[:, :, None] * d[:, None, :]
    lat = 5e-5
    cov = lat ** 2 * (np.eye(3) - dd) + (7 * lat) ** 2 * dd
    chol = np.linalg.cholesky(cov)
    mc = MarkerCovariance(clean.names, cov, "known")
    z, sq_w, sq_i = [], 0.0, 0.0                 # squared errors of the first 4 draws
    for draw in range(12):
        noise = np.einsum("kij,tkj->tki", chol,
                          np.random.default_rng(300 + draw).normal(size=clean.xyz_m.shape))
        data = replace(clean, xyz_m=clean.xyz_m + noise)
        white = _fit(posture, data, mc)
        assert abs(white.noise_scale - 1.0) < 0.03
        e, sd = _err_sd(white, obj)
        z.append(e / sd)
        if draw < 4:
            e_i, _ = _err_sd(_fit(posture, data), obj)
            sq_w += np.sum((e / sd) ** 2)
            sq_i += np.sum((e_i / sd) ** 2)
    rms = float(np.sqrt(np.mean(np.square(z))))
    assert 0.55 < rms < 1.6, rms
    assert sq_i > 3 * sq_w


# ------------------------------------------------------------------ through `rigtool run`

def _side_file(path, data, sigma_m, drop=()):
    """A side file as ``rigtool track`` writes it: isotropic ``sigma_m`` for every marker."""
    import pandas as pd

    cols = {"time": data.time_s}
    for n in data.names:
        if n in drop:
            continue
        for c in ("xx", "yy", "zz", "yz", "zx", "xy"):
            cols[f"{n}_c{c}"] = np.full(data.n_frames, sigma_m ** 2 if c in ("xx", "yy", "zz")
                                        else 0.0)
    pd.DataFrame(cols).to_csv(path, index=False)


@pytest.mark.slow
def test_run_uses_the_side_file_next_to_a_capture(demo_run, tmp_path):
    """``marker_covariance = "auto"`` (the default) takes ``NAME.residuals.csv`` beside the
    capture: the fit says so; at the demo's own noise (isotropic 0.1 mm) it is the isotropic
    fit, and its standard errors are clustered by frame unless told otherwise. "none" ignores the file; a file without a marker of the fit is refused (exit 2 in
    `rigtool run`: InputError naming the file)."""
    import shutil

    from rigtool.config import load_rig, load_session
    from rigtool.devices.scale import resolve_total_mass
    from rigtool.errors import InputError
    from rigtool.mocap import read_capture
    from rigtool.pipeline.links import link_markers
    from rigtool.pipeline.posture import fit_one_posture

    root, _ = demo_run
    session = load_session(root / "captures" / "two-link" / "session.toml")
    rigfile = load_rig(session.rig_path)
    capture = tmp_path / "posture1.csv"
    shutil.copy(session.postures[0].capture, capture)
    data = read_capture(capture)
    markers = link_markers(session, session.tree)

    def run(setting, standard_errors="auto"):
        return fit_one_posture(session, rigfile, session.tree, markers, capture,
                               name="posture1", window=(0.5, 5.5), units=None,
                               total_mass_kg=resolve_total_mass(session),
                               settings=session.filter, method="output-error",
                               marker_covariance=setting, data=data,
                               standard_errors=standard_errors).refinement

    plain = run("auto")                                      # no side file yet
    assert plain.noise_model == "isotropic"
    _side_file(tmp_path / "posture1.residuals.csv", data, 1e-4)
    white = run("auto", "independent")
    assert white.noise_model == "covariance" and white.standard_errors == "independent"
    assert white.noise_source == "posture1.residuals.csv"
    assert abs(white.noise_scale - 1.0) < 0.05               # the demo's noise is 0.1 mm
    assert np.all(np.abs(white.com - plain.com) <= 1e-2 * plain.com_std)
    np.testing.assert_allclose(white.com_std, plain.com_std, rtol=1e-4)
    # a track side file's corners share a pose per frame: by default the standard errors
    # are clustered by frame (here the noise is independent, so they agree within their
    # own precision)
    auto = run("auto")
    assert auto.standard_errors == "frame" and auto.se_clusters > 0
    np.testing.assert_array_equal(auto.com, white.com)
    assert np.all(np.abs(auto.com_std / white.com_std - 1) < 5 * auto.se_rel_precision)
    assert run("none").noise_model == "isotropic"
    _side_file(tmp_path / "other.residuals.csv", data, 1e-4, drop=(data.names[0],))
    with pytest.raises(InputError, match="no covariance for markers"):
        run(tmp_path / "other.residuals.csv")
    with pytest.raises(InputError, match="does not exist"):
        run(tmp_path / "missing.residuals.csv")
