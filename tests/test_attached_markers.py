"""The object's markers in the output-error posture fit (rigtool.identify.posture.attached_markers).

The information-matrix blocks are checked against a dense Jacobian written out column by
column; the base-pose columns against finite differences of the placed markers; the joint
fit against the simulator: noise-free it recovers the object and the base link's pose on the
platform from a start 1 mm / 0.5 deg off, and with noise its reported standard errors match
its scatter over seeds (the Fisher information of the joint problem is the right one).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.identify.posture.attached_markers import (attached_positions, joint_information,
                                               nuisance_products, pose_columns,
                                               position_products)
from rigtool.identify.posture.output_error import refine_posture
from rigtool.identify.posture.equation_error import PostureResult
from rigtool.inertia import InertialParams
from rigtool.sim.dynamics import FixedBody, System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import box_inertia, demo_rig

RATE = 100.0
R_BASE = Rotation.from_euler("zyx", [10, 5, -3], degrees=True).as_matrix()
P_BASE = np.array([0.05, -0.02, 0.04])
OBJECT = InertialParams.from_com(45.0, np.array([0.03, -0.02, 0.30]),
                                 box_inertia(45.0, (0.5, 0.35, 0.6)))
BASE_MARKERS = {"b1": np.array([0.2, 0.0, 0.05]), "b2": np.array([-0.2, 0.1, 0.05]),
                "b3": np.array([0.0, -0.15, 0.1]), "b4": np.array([0.05, 0.12, 0.4])}
TOP_MARKERS = {"t1": np.array([0.1, 0.1, 0.6]), "t2": np.array([-0.15, 0.05, 0.55])}


def _rand_rotations(rng, n):
    return Rotation.from_rotvec(rng.normal(0, 0.3, (n, 3))).as_matrix()


def test_pose_columns_are_the_derivative_of_the_placed_markers():
    rng = np.random.default_rng(0)
    rot = _rand_rotations(rng, 1)[0]
    d = rng.normal(0, 0.2, (4, 3))
    t = rng.normal(0, 0.1, 3)

    def placed(v):
        r = rot @ Rotation.from_rotvec(v[3:]).as_matrix()
        return d @ r.T + t + v[:3]

    h = 1e-6
    num = np.stack([(placed(e) - placed(-e)) / (2 * h) for e in h * np.eye(6)], axis=-1)
    np.testing.assert_allclose(pose_columns(d, rot), num, atol=1e-8)


def test_information_blocks_match_a_dense_jacobian():
    """Rows frame-major over a mask with gaps; attached markers' columns ``1e3 R_t`` written
    out densely, the base cluster's through its pose."""
    rng = np.random.default_rng(1)
    t_n, k_n, n = 7, 5, 4                      # markers 0-1 platform, 2-3 base, 4 free
    mask = rng.random((t_n, k_n)) > 0.2
    rot = _rand_rotations(rng, t_n)
    m_rows = 3 * int(mask.sum())
    jac = rng.normal(size=(m_rows, n))
    att = np.array([2, 3, 4])
    defs = rng.normal(0, 0.2, (2, 3))
    r_b = _rand_rotations(rng, 1)[0]
    pcols = pose_columns(defs, r_b)
    dense_c = np.zeros((m_rows, 9))            # 3 per attached marker
    row = 0
    for ti in range(t_n):
        for k in range(k_n):
            if not mask[ti, k]:
                continue
            if k in att:
                j = int(np.flatnonzero(att == k)[0])
                dense_c[row:row + 3, 3 * j:3 * j + 3] = 1e3 * rot[ti]
            row += 3
    dense = np.hstack([jac, dense_c[:, :3] @ pcols[0] + dense_c[:, 3:6] @ pcols[1],
                       dense_c[:, 6:]])
    n_seen = mask[:, att].sum(0)
    prods = position_products(jac, mask, rot, att)
    info = joint_information(jac.T @ jac, prods, n_seen, 2, pcols)
    np.testing.assert_allclose(info, dense.T @ dense, rtol=1e-10, atol=1e-6)
    other = rng.normal(size=(m_rows, 2))
    cross = np.vstack([jac.T @ other, nuisance_products(position_products(other, mask, rot, att),
                                                        2, pcols)])
    np.testing.assert_allclose(cross, dense.T @ other, rtol=1e-10, atol=1e-8)


def test_positions_and_base_pose_from_an_exact_trajectory():
    rng = np.random.default_rng(2)
    t_n = 50
    rot = _rand_rotations(rng, t_n)
    pos = rng.normal(0, 0.01, (t_n, 3))
    defs = np.stack(list(BASE_MARKERS.values()))
    on_platform = np.vstack([defs @ R_BASE.T + P_BASE, [[0.3, 0.2, 0.7]]])
    xyz = np.einsum("tij,kj->tki", rot, on_platform) + pos[:, None]
    seen = rng.random((t_n, 5)) > 0.1
    got = attached_positions(rot, pos, np.where(seen[..., None], xyz, np.nan), seen, defs)
    np.testing.assert_allclose(got.positions_m, on_platform, atol=1e-12)
    np.testing.assert_allclose(got.base_rotation, R_BASE, atol=1e-12)
    np.testing.assert_allclose(got.base_position_m, P_BASE, atol=1e-12)
    assert np.all(got.scatter_mm < 1e-9)


@pytest.fixture(scope="module")
def sim():
    rig, platform = demo_rig(spring_damping_n_s_m=6.0)
    system = System(rig=rig, platform_params=platform,
                    fixed=(FixedBody("obj", OBJECT, R_BASE, P_BASE),))
    traj = simulate(system, 5.0, RATE, platform_offset=np.array([0.012, -0.01, 0.008, 0.03,
                                                                 -0.025, 0.03]),
                    platform_velocity=np.array([0.02, 0.02, -0.01, 0.05, -0.05, 0.05]))
    sets = [MarkerSet("platform", rig.platform.markers_platform),
            MarkerSet("obj", {**BASE_MARKERS, **TOP_MARKERS})]
    return system, traj, sets


def _fit(system, data, **kw):
    off = Rotation.from_rotvec(np.deg2rad([0.5, -0.3, 0.2])).as_matrix()
    com0 = OBJECT.com + np.array([1e-3, -1e-3, 1e-3])
    i0 = OBJECT.inertia_com * 1.01
    params = InertialParams.from_com(OBJECT.mass, com0, i0)
    z3, z9 = np.zeros(3), np.zeros((3, 3))
    start = PostureResult("p", OBJECT.mass, com0, z3, i0, z9, params, np.eye(9), np.eye(12),
                          params, {}, np.zeros((1, 6)), np.zeros((1, 6)), np.zeros(1),
                          "exact", "noise", [])
    return refine_posture(system.rig, system.platform_params, data,
                          base_rotation_platform=R_BASE @ off,
                          base_position_platform=P_BASE + 1e-3, total_mass_kg=OBJECT.mass,
                          start=start, base_markers=BASE_MARKERS,
                          object_markers=list(TOP_MARKERS), **kw)


@pytest.mark.slow
def test_noise_free_joint_fit_recovers_object_and_base_pose(sim):
    system, traj, sets = sim
    data = synthesize_markers(traj, sets, noise_sigma_m=0.0, rng=np.random.default_rng(0),
                              rate_hz=RATE)
    res = _fit(system, data, substeps=2)
    i_max = np.linalg.eigvalsh(OBJECT.inertia_com)[-1]
    # two RK4 steps per frame track the simulator to ~0.5 um (test_output_error)
    assert np.abs(res.com - OBJECT.com).max() < 1e-6
    assert np.abs(res.inertia_com - OBJECT.inertia_com).max() / i_max < 1e-4
    assert res.base_pose_fitted
    angle = Rotation.from_matrix(res.base_rotation_platform.T @ R_BASE).magnitude()
    assert angle < 1e-6 and np.abs(res.base_position_platform_m - P_BASE).max() < 1e-6
    assert res.attached_markers == tuple(BASE_MARKERS) + tuple(TOP_MARKERS)
    assert res.n_residuals == 3 * data.xyz_m.shape[0] * data.xyz_m.shape[1]


@pytest.mark.slow
def test_noisy_joint_fit_standard_errors_match_the_scatter(sim):
    """Over 8 noise draws (sigma 0.1 mm) the errors divided by the reported standard errors
    have an RMS near 1: with 8 x 9 numbers (correlated within a draw) its sampling spread
    is about 0.1-0.2, so 0.6-1.5 is wide enough not to fail by chance and narrow enough to
    catch standard errors off by a factor of 1.5 or more (leaving out the information's
    cross blocks between the dynamics and the base pose makes c_x and c_y's 1.8x and 2.2x
    too small on this capture)."""
    system, traj, sets = sim
    zs = []
    for seed in range(8):
        data = synthesize_markers(traj, sets, noise_sigma_m=1e-4,
                                  rng=np.random.default_rng(100 + seed), rate_hz=RATE)
        res = _fit(system, data)
        e = np.concatenate([res.com - OBJECT.com,
                            (res.inertia_com - OBJECT.inertia_com)[np.triu_indices(3)]])
        sd = np.concatenate([res.com_std, res.inertia_com_std[np.triu_indices(3)]])
        zs.append(e / sd)
    rms = float(np.sqrt(np.mean(np.square(zs))))
    assert 0.6 < rms < 1.5, rms


def test_a_moving_marker_is_left_out(sim):
    system, traj, sets = sim
    data = synthesize_markers(traj, sets, noise_sigma_m=1e-4, rng=np.random.default_rng(5),
                              rate_hz=RATE)
    xyz = data.xyz_m.copy()
    k = list(data.names).index("t1")
    xyz[:, k, 2] += 2e-3 * np.sin(2 * np.pi * 0.3 * data.time_s)    # breathing, 2 mm
    from dataclasses import replace
    res = _fit(system, replace(data, xyz_m=xyz))
    assert "t1" not in res.attached_markers and "t2" in res.attached_markers
    assert any("t1" in w and "left out" in w for w in res.warnings)


def test_a_marker_that_moves_after_the_attach_horizon_is_left_out(sim):
    """The object's markers join the fit on the horizon before the whole window (2 s here:
    horizons 0.5, 2, then the 5 s window). A marker knocked 2 mm at 3.5 s is still over the
    first 2 s, so only the whole-window check can catch it: it must be left out, with a
    warning, and the estimate must be the one without it (the same problem then: equal to
    far below a standard error)."""
    system, traj, sets = sim
    data = synthesize_markers(traj, sets, noise_sigma_m=1e-4, rng=np.random.default_rng(7),
                              rate_hz=RATE)
    xyz = data.xyz_m.copy()
    k = list(data.names).index("t1")
    xyz[data.time_s >= 3.5, k, 0] += 2e-3
    from dataclasses import replace
    res = _fit(system, replace(data, xyz_m=xyz), first_horizon_s=0.5)
    assert "t1" not in res.attached_markers and "t2" in res.attached_markers
    assert any("t1" in w and "left out" in w for w in res.warnings)
    assert dict(res.left_out_markers)["t1"] > 0.5            # ~1 mm RMS about its mean
    ref = refine_posture(system.rig, system.platform_params, replace(data, xyz_m=xyz),
                         base_rotation_platform=R_BASE, base_position_platform=P_BASE,
                         total_mass_kg=OBJECT.mass, start=res.start,
                         base_markers=BASE_MARKERS, object_markers=["t2"], first_horizon_s=0.5)
    assert np.all(np.abs(res.com - ref.com) < 0.05 * ref.com_std)
    assert np.all(np.abs(res.inertia_com - ref.inertia_com)
                  < 0.05 * ref.inertia_com_std + 1e-12)
