"""SVD pose fit: seeded synthetic rigid motion, tolerances derived from the injected noise."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.errors import InputError
from rigtool.kinematics.pose import (BodyTrajectory, body_trajectory, fit_pose,
                                     markers_from_static)
from rigtool.mocap import MarkerData

SIGMA = 1e-4  # 0.1 mm marker noise per coordinate

MARKERS = np.array([[0.12, 0.03, 0.05], [-0.10, 0.08, 0.02], [0.02, -0.11, 0.07],
                    [0.05, 0.09, -0.06], [-0.07, -0.05, -0.04], [0.10, -0.06, 0.11]])


def synth(n_frames=600, markers=MARKERS, sigma=SIGMA, seed=0):
    rng = np.random.default_rng(seed)
    rot = Rotation.random(n_frames, random_state=rng).as_matrix()
    pos = rng.normal(0.0, 0.5, (n_frames, 3))
    xyz = np.einsum("tij,kj->tki", rot, markers) + pos[:, None, :]
    return xyz + rng.normal(0.0, sigma, xyz.shape), rot, pos


def angle_err(r_fit, r_true):
    return Rotation.from_matrix(np.swapaxes(r_true, -1, -2) @ r_fit).magnitude()


def derived_errors(markers, sigma):
    """Predicted RMS rotation (rad) and origin (m) errors of the unweighted fit.

    Linearised least squares: the small rotation error has covariance sigma^2 M^-1 with
    M = sum (|x_c|^2 I - x_c x_c^T) over the centred body coordinates; the origin error is
    the centroid noise sigma^2 / K plus the rotation error seen through the centroid offset.
    """
    c = markers.mean(axis=0)
    xc = markers - c
    m = sum(xk @ xk * np.eye(3) - np.outer(xk, xk) for xk in xc)
    c_theta = sigma ** 2 * np.linalg.inv(m)
    cx = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    c_p = np.eye(3) * sigma ** 2 / len(markers) + cx @ c_theta @ cx.T
    return np.sqrt(np.trace(c_theta)), np.sqrt(np.trace(c_p))


def test_pose_recovery_matches_noise_derived_accuracy():
    xyz, rot, pos = synth()
    traj = fit_pose(xyz, MARKERS)
    assert isinstance(traj, BodyTrajectory) and traj.valid.all()
    e_rot, e_pos = derived_errors(MARKERS, SIGMA)
    rms_rot = np.sqrt(np.mean(angle_err(traj.rotation, rot) ** 2))
    rms_pos = np.sqrt(np.mean(np.sum((traj.position_m - pos) ** 2, axis=1)))
    # 600 frames estimate an RMS to ~3 %: the fit must be as good as least squares allows
    assert 0.8 * e_rot < rms_rot < 1.2 * e_rot
    assert 0.8 * e_pos < rms_pos < 1.2 * e_pos
    assert np.allclose(np.linalg.det(traj.rotation), 1.0)
    # residual: E[sum r^2] = sigma^2 (3K - 6) over the K markers
    k = len(MARKERS)
    expected = SIGMA * np.sqrt((3 * k - 6) / k)
    assert abs(np.sqrt(np.mean(traj.residual_rms_m ** 2)) / expected - 1) < 0.1
    assert traj.dropped == [] and traj.used.all()


def test_missing_markers_use_the_rest_and_two_markers_give_nan():
    xyz, rot, pos = synth(seed=1)
    rng = np.random.default_rng(2)
    for t in range(xyz.shape[0]):  # test-data set-up only
        xyz[t, rng.choice(6, size=rng.integers(0, 4), replace=False)] = np.nan
    xyz[:10, 2:] = np.nan  # frames 0-9: two markers left
    traj = fit_pose(xyz, MARKERS)
    assert not traj.valid[:10].any() and np.isnan(traj.rotation[:10]).all()
    assert np.isnan(traj.position_m[:10]).all()
    assert traj.valid[10:].all()
    # frames with three markers: RMS error of a few triples (derived), max over frames ~3x
    # the RMS; allow 4x that
    e3 = max(derived_errors(MARKERS[list(c)], SIGMA)[0]
             for c in [(0, 1, 2), (3, 4, 5), (0, 3, 5), (1, 2, 4)])
    assert np.max(angle_err(traj.rotation[10:], rot[10:])) < 4 * 3 * e3
    assert np.array_equal(traj.used, np.all(np.isfinite(xyz), axis=2))


def test_collinear_markers_give_nan_pose():
    line = np.array([[0.0, 0, 0], [0.1, 0, 0], [0.25, 0, 0], [0.0, 0.1, 0.0]])
    xyz, _, _ = synth(50, markers=line, seed=3)
    xyz[:20, 3] = np.nan  # only the three collinear markers left
    traj = fit_pose(xyz, line)
    assert not traj.valid[:20].any() and np.isnan(traj.rotation[:20]).all()
    assert traj.valid[20:].all()


def test_reflection_guard_three_markers():
    """Regression: three (always coplanar) markers let an unguarded SVD return det R = -1."""
    tri = MARKERS[:3]
    xyz, rot, _ = synth(2000, markers=tri, sigma=0.0, seed=4)
    traj = fit_pose(xyz, tri)
    assert np.allclose(np.linalg.det(traj.rotation), 1.0)
    assert np.max(angle_err(traj.rotation, rot)) < 1e-7
    # mirrored lab data: the fit still returns a proper rotation, and a large residual
    mirrored = xyz * np.array([1.0, 1.0, -1.0])
    traj_m = fit_pose(mirrored, tri, outlier_m=None)
    assert np.allclose(np.linalg.det(traj_m.rotation), 1.0)


def test_label_swap_and_ghost_are_dropped_and_reported():
    names = tuple("ABCDEF")
    xyz, rot, pos = synth(300, seed=5)
    xyz[50:60, [1, 3]] = xyz[50:60, [3, 1]]          # label swap B <-> D in 10 frames
    xyz[100:107, 4] += np.array([0.03, -0.02, 0.01])  # ghost: E jumps 3.7 cm in 7 frames
    traj = fit_pose(xyz, MARKERS, marker_names=names)
    assert dict(traj.dropped) == {"B": 10, "D": 10, "E": 7}
    assert not traj.used[50:60, 1].any() and not traj.used[50:60, 3].any()
    assert not traj.used[100:107, 4].any() and traj.used[:50].all()
    assert traj.valid.all() and traj.rejected_frames == 0
    # worst frames fit four markers; max over frames ~3x the RMS; allow 4x that
    e4 = derived_errors(MARKERS[[0, 2, 4, 5]], SIGMA)[0]
    assert np.max(angle_err(traj.rotation, rot)) < 4 * 3 * e4
    # without the search the swap shows as a centimetre residual
    raw = fit_pose(xyz, MARKERS, outlier_m=None)
    assert raw.residual_rms_m[50:60].min() > 0.01


def test_unresolvable_outlier_in_three_marker_cluster_is_rejected():
    tri = MARKERS[:3]
    xyz, _, _ = synth(40, markers=tri, seed=6)
    xyz[5:8, [0, 1]] = xyz[5:8, [1, 0]]
    traj = fit_pose(xyz, tri)
    assert not traj.valid[5:8].any() and traj.valid[8:].all() and traj.rejected_frames == 3


def test_weights_zero_weight_excludes_and_inverse_variance_helps():
    xyz, rot, _ = synth(800, seed=7)
    rng = np.random.default_rng(8)
    xyz[:, 0] += rng.normal(0, 20 * SIGMA, (800, 3))  # one noisy marker (2 mm)
    w0 = np.array([0.0, 1, 1, 1, 1, 1])
    a = fit_pose(xyz, MARKERS, weights=w0, outlier_m=None)
    b = fit_pose(xyz[:, 1:], MARKERS[1:], outlier_m=None)
    assert np.allclose(a.rotation, b.rotation, atol=1e-12)
    w = np.array([1 / 400, 1, 1, 1, 1, 1])
    weighted = np.sqrt(np.mean(angle_err(fit_pose(xyz, MARKERS, weights=w, outlier_m=None)
                                         .rotation, rot) ** 2))
    plain = np.sqrt(np.mean(angle_err(fit_pose(xyz, MARKERS, outlier_m=None).rotation,
                                      rot) ** 2))
    assert weighted < 0.5 * plain
    # per-frame weights are accepted too
    fit_pose(xyz, MARKERS, weights=np.ones((800, 6)))


def test_input_errors_name_the_parameter():
    xyz, _, _ = synth(10)
    with pytest.raises(InputError, match="field 'markers_body_m'.*shape \\(6, 3\\)"):
        fit_pose(xyz, MARKERS[:4])
    with pytest.raises(InputError, match="field 'weights'"):
        fit_pose(xyz, MARKERS, weights=np.ones(4))
    with pytest.raises(InputError, match="non-negative"):
        fit_pose(xyz, MARKERS, weights=-np.ones(6))
    with pytest.raises(InputError, match="shape \\[frames, markers, 3\\]"):
        fit_pose(xyz[0], MARKERS)
    with pytest.raises(InputError, match="at least 3 markers"):
        fit_pose(xyz, MARKERS, min_markers=2)


def _capture(xyz, names, rate=120.0):
    t = np.arange(xyz.shape[0]) / rate
    return MarkerData(time_s=t, names=tuple(names), xyz_m=xyz, rate_hz=rate,
                      source=None)


def test_body_trajectory_from_marker_data_uses_names_and_time():
    xyz, rot, _ = synth(100, seed=9)
    names = ["Sub:A", "Sub:B", "Sub:C", "Sub:D", "Sub:E", "Sub:F", "Sub:X"]
    extra = np.full((100, 1, 3), 1.0)
    data = _capture(np.concatenate([xyz[:, ::-1], extra], axis=1), names)
    body = {n: MARKERS[5 - i] for i, n in enumerate("ABCDEF")}
    traj = body_trajectory(data, body)
    assert traj.marker_names == tuple("ABCDEF")
    assert np.allclose(traj.time_s, data.time_s)
    assert np.max(angle_err(traj.rotation, rot)) < 4 * derived_errors(MARKERS, SIGMA)[0]
    with pytest.raises(InputError, match="marker 'Q' is not in the capture"):
        body_trajectory(data, {"Q": np.zeros(3), "A": MARKERS[0], "B": MARKERS[1]})


def test_markers_from_static_reproduces_a_known_frame():
    # body frame defined so that A1 -> A2 is +x, A3 lies in the x-y plane on the +y side
    body = {"A1": np.array([-0.10, 0.02, 0.0]), "A2": np.array([0.15, 0.02, 0.0]),
            "A3": np.array([0.03, 0.20, 0.0]), "B1": np.array([0.05, -0.04, 0.09]),
            "B2": np.array([-0.05, 0.04, -0.09]), "C": np.array([0.02, 0.07, 0.13])}
    names = list(body)
    r0 = Rotation.from_euler("zyx", [0.7, -0.3, 1.1]).as_matrix()
    p0 = np.array([0.4, -0.2, 1.1])
    rng = np.random.default_rng(10)
    lab = np.array([r0 @ body[n] + p0 for n in names])
    xyz = lab[None] + rng.normal(0, SIGMA, (240, len(names), 3))
    xyz[::7, 5] = np.nan  # marker C missing in some frames
    data = _capture(xyz, names)
    tol = 4 * SIGMA * 10 / np.sqrt(240)  # averaged noise, levered by ~10x over the axes
    for origin in (p0, ["B1", "B2"]):
        got = markers_from_static(data, origin=origin, x_axis=("A1", "A2"), xy_plane="A3",
                                  names=names)
        for n in names:
            assert np.allclose(got[n], body[n], atol=tol), n
    got = markers_from_static(data, origin="A1", x_axis=("A1", "A2"), xy_plane="A3",
                              names=["C"])
    assert np.allclose(got["C"], body["C"] - body["A1"], atol=tol)
    with pytest.raises(InputError, match="xy_plane marker A2 lies on the x axis"):
        markers_from_static(data, origin="A1", x_axis=("A1", "A2"), xy_plane="A2", names=[])
    with pytest.raises(InputError, match="field 'origin'"):
        markers_from_static(data, origin=[1.0, 2.0], x_axis=("A1", "A2"), xy_plane="A3",
                            names=[])


def _svd_kabsch(h):
    u, _, vt = np.linalg.svd(h)
    v, ut = np.swapaxes(vt, -1, -2), np.swapaxes(u, -1, -2)
    d = np.sign(np.linalg.det(v @ ut))
    v[:, :, 2] *= d[:, None]
    return v @ ut


def test_closed_form_rotation_equals_guarded_svd_kabsch():
    """The closed-form leading-eigenvector solution against LAPACK SVD: general, planar
    (rank 2), reflected (det H < 0), symmetric (repeated singular values) and nearly so."""
    from rigtool.kinematics.pose import rotation_from_covariance
    rng = np.random.default_rng(11)
    n = 400
    r = Rotation.random(n, random_state=rng).as_matrix()
    s = np.abs(rng.normal(1.0, 0.5, (n, 3))) + 0.05
    s[100:200, 2] = 0.0                       # coplanar clusters
    s[200:250] = [1.0, 1.0, 0.0]              # square planar cluster: s1 == s2
    s[250:300] = [1.0, 1.0 + 1e-7, 0.3]       # nearly repeated
    s[300:350] = [2.0, 1.0, 1.0]              # s2 == s3
    q = Rotation.random(n, random_state=rng).as_matrix()
    h = q @ (s[:, :, None] * np.swapaxes(r, -1, -2))  # h = Q S R^T, optimum R Q^T
    h[350:] = h[350:] * np.array([1.0, 1.0, -1.0])[None, :, None]  # reflected: det H < 0
    got = rotation_from_covariance(h)
    want = _svd_kabsch(h)
    assert np.allclose(np.linalg.det(got), 1.0)
    # compare the achieved objective trace(R h): unique even where R is not
    obj = np.einsum("tij,tji->t", got, h)
    obj_ref = np.einsum("tij,tji->t", want, h)
    assert np.allclose(obj, obj_ref, rtol=1e-12, atol=1e-12)
    unique = np.r_[0:100, 100:200, 350:400]
    assert np.allclose(got[unique], want[unique], atol=1e-9)


def test_static_and_body_errors_name_the_marker():
    body = {"A1": np.zeros(3), "A2": np.array([0.1, 0, 0]), "A3": np.array([0, 0.1, 0])}
    xyz = np.array([[body[n] for n in body]] * 5)
    xyz[:, 2] = np.nan
    data = _capture(xyz, list(body))
    with pytest.raises(InputError, match="marker 'A3' is missing in every frame"):
        markers_from_static(data, origin="A1", x_axis=("A1", "A2"), xy_plane="A3", names=[])
    with pytest.raises(InputError, match="x_axis markers A1 and A1 coincide"):
        markers_from_static(data, origin="A1", x_axis=("A1", "A1"), xy_plane="A2", names=[])
    with pytest.raises(InputError, match="expected at least 3 markers for a body"):
        body_trajectory(data, {})
