"""Multi-posture fit of Phi_s (paper 002 eq. 5-12), base parameters, advice, `rigtool subset`.

Reference values: paper 002 Tables 1-3 (published numbers, not our output). Simulated cases
compute the overall properties with ``tree.composite_params`` (rigid transforms of the link
parameters, independent of the regressor under test) and add noise at the levels the paper
calls realistic for a single-body machine: COM 0.1 mm per axis, each inertia entry 0.2 % of
the posture's largest principal moment (both stated to the fit as its standard errors).
"""

import functools
import json
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.identify.subset.base_params import base_parameters, row_space_residual
from rigtool.identify.subset.advice import advise_next_posture, candidate_grid, plan_postures
from rigtool.identify.subset.fit import (PostureOverall, fit_subset, phi_s_selector,
                                     posture_target, regressor_phi_b, regressor_phi_s,
                                     whitener)
from rigtool.inertia import InertialParams
from rigtool.tree import (Link, Tree, composite_params, minimal_parameters, overall_from_phi_b,
                          phi_b_vector, phi_s_from_phi_b, phi_s_names)

# ----------------------------------------------------------------------------- paper 002

M0_PAPER = 80.817
# Table 2: I_tg xx, yy, zz, xy, zx, yz (kg m^2); s_tg x, y, z (m); 0R_1 per posture
TABLE2_I = {1: (2.9221, 1.6368, 2.3958, 0.0066, -0.0017, 0.0203),
            2: (3.6841, 1.6167, 3.1638, 0.0155, 0.0000, 0.0723),
            3: (3.3737, 2.1047, 3.1348, -0.6960, -0.2345, -0.6275)}
TABLE2_S = {1: (0.0002, -0.2562, -0.1265), 2: (-0.0001, -0.2382, -0.1244),
            3: (0.0332, -0.2468, -0.0942)}
TABLE2_R = {1: [[0.9999, 0.0071, 0.0099], [-0.0096, 0.9576, 0.2880], [-0.0074, -0.2881, 0.9576]],
            2: [[0.9998, 0.0037, 0.0179], [0.0014, 0.9620, -0.2730], [-0.0182, 0.2730, 0.9618]],
            3: [[-0.0010, 0.0000, -1.0000], [-0.0316, 0.9995, 0.0000], [0.9995, 0.0316, -0.0010]]}
TABLE3 = {"link0.MS_x": 0.0599, "link0.MS_y": -20.2678, "link0.MS_z": -7.6113,
          "link1.MS_x": -0.0177, "link1.MS_y": 0.3212, "link1.MS_z": -2.6268,
          "link0.J_yz": -2.5027, "link0.J_zx": 0.0121, "link0.J_xy": 0.0192,
          "link1.J_yz": 0.0519, "link1.J_zx": -0.0087, "link1.J_xy": -0.0052,
          "link0.J_xx-J_yy": 6.6079, "link0.J_zz-J_yy": 5.2583, "link1.J_xx-J_yy": -0.0238,
          "link1.J_zz-J_yy": -0.5064, "sum.J_yy": 2.9315}
# Table 1: m, Ixx, Iyy, Izz, Ixy, Izx, Iyz (about the COM), s (m)
TABLE1 = {"link0": (65.921, 1.8506, 1.4892, 1.4157, -0.0081, -0.0024, -0.1659,
                    (0.0, -0.3072, -0.1152)),
          "link1": (14.896, 0.0774, 0.1020, 0.0458, 0.0, 0.0, 0.0041, (0.0, 0.0217, -0.1747))}


def _mat(xx, yy, zz, xy, zx, yz):
    return np.array([[xx, xy, zx], [xy, yy, yz], [zx, yz, zz]])


def _paper_tree(with_params=False):
    params = {}
    if with_params:
        for k, (m, xx, yy, zz, xy, zx, yz, s) in TABLE1.items():
            params[k] = InertialParams.from_com(m, np.array(s), _mat(xx, yy, zz, xy, zx, yz))
    # link frames at the joint: link 1's joint centre is link 0's origin (Table 3 MS_0 equals
    # m_0 s_0 from Table 1 to within the printed digits, so p_1 = 0)
    return Tree((Link("link0", "platform", None, params.get("link0")),
                 Link("link1", "link0", np.zeros(3), params.get("link1"))))


def _paper_postures(**stds):
    return [PostureOverall(f"posture{k}", np.array(TABLE2_S[k]), stds.get("com_std"),
                           _mat(*TABLE2_I[k]), stds.get("inertia_std"),
                           {"link1": np.array(TABLE2_R[k])}) for k in (1, 2, 3)]


def test_paper002_table3_from_table2():
    # Paper 002 fits Table 2 by minimising the plain norm E_v1 (eq. 17): first-moment rows in
    # kg m and inertia rows in kg m^2 with unit weights -> weighting="plain". Every entry
    # agrees with Table 3 within 0.006 (test: 0.01). What remains comes from the printed
    # inputs: Table 2 gives 4 decimals (COM to 0.1 mm = 0.008 kg m of first moment, inertia to
    # 1e-4), its rotations are non-orthonormal at the 1e-4 level (we project them onto SO(3);
    # the paper used them as printed), and the three postures are not exactly consistent
    # (first-moment residual 0.005 kg m rms), so the solution shifts with any such detail.
    r = fit_subset(_paper_tree(), _paper_postures(), M0_PAPER, weighting="plain")
    assert r.rank == 17 and r.identified and not r.unidentifiable
    for name, ref in TABLE3.items():
        assert abs(r.value(name) - ref) < 0.01, name
    assert r.base_check["agree"] and r.base_check["phi_b_rank"] == 17
    # the same data with stated standard errors (1 mm, 0.01 kg m^2) agree within ~2 std
    r2 = fit_subset(_paper_tree(), _paper_postures(com_std=np.full(3, 1e-3), inertia_std=0.01),
                    M0_PAPER)
    for name, ref in TABLE3.items():
        k = r2.names.index(name)
        assert abs(r2.values[k] - ref) < 2.5 * r2.std[k], name


def test_paper002_table1_links_reproduce_table3_through_minimal_parameters():
    # Table 3 against Table 1 (separately identified links) via SPEC formulas: the paper's
    # own comparison; agreement is at its stated single-body accuracy (1 mm, 1 % of I).
    tree = _paper_tree(with_params=True)
    phi_s = phi_s_from_phi_b(phi_b_vector(minimal_parameters(tree)))
    names = phi_s_names(tree)
    for k, name in enumerate(names):
        tol = 0.1 if ".MS_" in name else 0.05
        assert abs(phi_s[k] - TABLE3[name]) < tol, name


# ----------------------------------------------------------------------------- simulation

def _body(rng, mass, size):
    a = rng.normal(size=(3, 3)) * size
    sigma = mass * (a @ a.T + 0.05 * size ** 2 * np.eye(3))
    return InertialParams.from_com(mass, rng.normal(size=3) * size,
                                   np.trace(sigma) * np.eye(3) - sigma)


def _two_link_truth():
    return _paper_tree(with_params=True)


def _seg(mass, com, radii_gyration, tilt_deg=0.0):
    """A body from mass, COM (link frame) and principal radii of gyration, slightly tilted
    principal axes (so products of inertia are not zero)."""
    r = _rot([1, 1, 0] / np.sqrt(2), tilt_deg)
    i_com = r @ np.diag(mass * np.asarray(radii_gyration) ** 2) @ r.T
    return InertialParams.from_com(mass, np.array(com, float), i_com)


def _four_link_truth():
    # trunk on the platform, one arm (upper arm + forearm) and one leg: generic adult values
    return Tree((Link("trunk", "platform", None, _seg(45.0, [0.01, 0.0, 0.25], [0.19, 0.17, 0.09], 5)),
                 Link("arm", "trunk", np.array([0.0, -0.20, 0.45]),
                      _seg(2.2, [0.0, 0.0, -0.15], [0.09, 0.09, 0.035], 4)),
                 Link("forearm", "arm", np.array([0.0, 0.0, -0.30]),
                      _seg(1.6, [0.0, 0.01, -0.13], [0.08, 0.08, 0.03], 3)),
                 Link("leg", "trunk", np.array([0.0, -0.1, 0.0]),
                      _seg(12.0, [0.0, 0.0, -0.22], [0.16, 0.16, 0.06], 6))))


COM_STD = 1e-4          # m
INERTIA_REL = 2e-3      # of the posture's largest principal moment


def _observe(tree, rotations, rng, name="p"):
    whole = composite_params(tree, rotations)
    i_com = whole.inertia_com
    sig_i = INERTIA_REL * np.linalg.eigvalsh(i_com)[-1]
    noise = rng.normal(size=6) * sig_i
    d = _mat(noise[0], noise[1], noise[2], noise[5], noise[4], noise[3])
    return PostureOverall(name, whole.com + rng.normal(size=3) * COM_STD, np.full(3, COM_STD),
                          i_com + d, sig_i, rotations)


def _rot(axis, deg):
    return Rotation.from_rotvec(np.radians(deg) * np.asarray(axis, float)).as_matrix()


def _paper_like_rotations():
    return [{"link1": _rot([1, 0, 0], 17)}, {"link1": _rot([1, 0, 0], -16)},
            {"link1": _rot([0, 1, 0], -90) @ _rot([1, 0, 0], 2)}]


def _truth_phi_s(tree):
    return phi_s_from_phi_b(phi_b_vector(minimal_parameters(tree)))


def _errors(tree, rotation_sets, seeds):
    """Mean squared normalised error over seeds and entries, and the median over seeds of
    the paper's Table 5 figures E_MS/M0 (m) and E_J/I_m (I_m: largest principal moment
    about the base origin in the first posture), max over the entries of one experiment."""
    truth = _truth_phi_s(tree)
    m0 = sum(l.params.mass for l in tree.links)
    i_m = np.linalg.eigvalsh(composite_params(tree, rotation_sets[0]).inertia_origin)[-1]
    names = phi_s_names(tree)
    ms = np.array([".MS_" in n for n in names])
    z2, e_ms, e_j = [], [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        ps = [_observe(tree, r, rng, f"p{k}") for k, r in enumerate(rotation_sets)]
        r = fit_subset(tree, ps, m0, advise=False)
        assert r.identified
        e = r.values - truth
        z2.append((e / r.std) ** 2)
        e_ms.append(np.abs(e[ms]).max() / m0)
        e_j.append(np.abs(e[~ms]).max() / i_m)
    return float(np.mean(z2)), float(np.median(e_ms)), float(np.median(e_j))


_W_PLAN = whitener(np.diag(np.r_[np.full(3, (60 * COM_STD) ** 2), np.full(6, 0.01 ** 2)]))


def test_two_link_simulated_errors_are_calibrated_and_small():
    # Paper 002's object (Table 1) in its three postures plus the advised one(s).
    tree = _two_link_truth()
    start = _paper_like_rotations()
    added, history = plan_postures(tree, start, _W_PLAN, max_condition=10.0)
    assert history[-1][0] == 17 and len(added) <= 3
    mean_z2, e_ms, e_j = _errors(tree, start + [c.rotations for c in added], range(50))
    # 50 seeds x 17 entries: the mean squared normalised error is ~1 (sd ~0.05)
    assert 0.5 < mean_z2 < 2.0
    # a typical (median) experiment meets the single-body accuracy of the noise levels
    assert e_ms <= 2e-4          # E_MS / M0, m      (measured 1.0e-4)
    assert e_j <= 1e-3           # E_J / I_m         (measured 0.08 %)


@functools.lru_cache(maxsize=1)
def test_rotation_row_covariance_matches_monte_carlo():
    """The rows' covariance from the rotations' errors (first order, central differences) is
    the scatter of ``Z_s(R exp([delta x])) Phi_s`` over draws of ``delta``."""
    from rigtool.identify.subset.regressor import rotation_row_covariance
    tree = _two_link_truth()
    phi_s = _truth_phi_s(tree)
    rot = _paper_like_rotations()[2]
    c_r = np.diag([1.0, 4.0, 2.0]) * 1e-6                       # rad^2 (1-2 mrad)
    post = PostureOverall("p", np.zeros(3), None, np.eye(3), None, rot,
                          rotation_cov={"link1": c_r})
    predicted = rotation_row_covariance(tree, post, phi_s)
    rng = np.random.default_rng(3)
    draws = rng.multivariate_normal(np.zeros(3), c_r, size=4000)
    ys = np.array([regressor_phi_s(tree, {"link1": rot["link1"]
                                          @ Rotation.from_rotvec(d).as_matrix()}) @ phi_s
                   for d in draws])
    empirical = np.cov(ys.T)
    # 4000 draws: each variance to ~2.2 % (sqrt(2/4000)); the matrix to a few %
    scale = np.sqrt(np.outer(np.diag(predicted), np.diag(predicted)))
    assert np.abs(empirical - predicted).max() / scale.max() < 0.1
    np.testing.assert_allclose(np.diag(empirical), np.diag(predicted), rtol=0.1, atol=1e-3 * scale.max())


def test_rotation_errors_are_carried_into_phi_s_covariance():
    """Postures whose measured link rotations are off by their stated covariance: with it
    the whitened errors of Phi_s have mean square ~1, without it they are far larger (before
    the Birge ratio, which then scales the standard errors in many of the seeds: the
    postures' disagreement shows what their covariance left out)."""
    tree = _two_link_truth()
    truth = _truth_phi_s(tree)
    m0 = sum(l.params.mass for l in tree.links)
    sets = _paper_like_rotations() + [{"link1": _rot([0, 0, 1], 40) @ _rot([1, 0, 0], 30)}]
    sigma_r = 1e-2                                                # rad, per axis
    z2 = {True: [], False: []}
    scaled = {True: 0, False: 0}
    for seed in range(40):
        rng = np.random.default_rng(seed)
        ps = []
        for k, rots in enumerate(sets):
            obs = _observe(tree, rots, rng, f"p{k}")
            noisy = {"link1": rots["link1"] @ Rotation.from_rotvec(
                rng.normal(size=3) * sigma_r).as_matrix()}
            ps.append((obs, noisy))
        for given in (True, False):
            post = [PostureOverall(o.name, o.com_base_m, o.com_std_m, o.inertia_com_base,
                                   o.inertia_std, noisy,
                                   rotation_cov={"link1": sigma_r ** 2 * np.eye(3)}
                                   if given else None) for o, noisy in ps]
            r = fit_subset(tree, post, m0, advise=False)
            scaled[given] += r.se_scale > 1.0
            e = np.linalg.solve(np.linalg.cholesky(r.covariance / r.se_scale ** 2),
                                r.values - truth)
            z2[given].append(float(e @ e) / e.size)
    # 40 seeds x 17 numbers: the mean of chi^2/dof is 1 +- 0.06 when the covariance is right
    assert 0.75 < np.mean(z2[True]) < 1.3
    assert np.mean(z2[False]) > 2.0
    assert scaled[True] <= 1 and scaled[False] >= 25       # measured: 0 and 33 of 40


def _four_link_postures():
    tree = _four_link_truth()
    start = [{"arm": np.eye(3), "forearm": np.eye(3), "leg": np.eye(3)}]
    added, history = plan_postures(tree, start, _W_PLAN, max_condition=30.0, min_postures=12)
    return tree, start + [c.rotations for c in added], history


@pytest.mark.slow
def test_four_link_with_advised_postures():
    # Rank is reached after 6 advised postures (33 parameters, 9 equations each); the plan
    # then continues to 12 postures to average the noise down.
    tree, rotation_sets, history = _four_link_postures()
    assert history[-1][0] == 8 * 4 + 1 and history[-1][1] <= 30.0
    assert len(rotation_sets) == 12
    mean_z2, e_ms, e_j = _errors(tree, rotation_sets, range(30))
    assert 0.5 < mean_z2 < 2.0
    assert e_ms <= 2e-4          # measured 1.0e-4 m
    # KNOWN SHORTFALL: E_J / I_m is ~0.17 % (target 0.1 %). At these noise levels one
    # posture's inertia about the base origin is already uncertain by ~0.16 % of I_m per
    # entry (0.2 % of I_com plus 2 M0 |c| x 0.1 mm), the fit is the minimum-variance linear
    # one (normalised errors ~1) and the max over 20 inertia entries is ~2.5 sigma; reaching
    # 0.1 % needs roughly 3x more postures.
    assert e_j <= 2.5e-3


def test_rank_does_not_depend_on_the_postures_precision():
    """Which directions are null is a property of the rotations: one posture measured 1e4
    times more precisely (an output-error fit next to equation-error ones) must neither hide
    a weakly seen direction nor reveal a null one; the estimate stays as good."""
    from dataclasses import replace
    tree, rotation_sets, _ = _four_link_postures()
    m0 = sum(l.params.mass for l in tree.links)
    rng = np.random.default_rng(3)
    ps = [_observe(tree, r, rng, f"p{k}") for k, r in enumerate(rotation_sets[:7])]
    base = fit_subset(tree, ps, m0, advise=False)
    sharp = [replace(ps[0], com_std_m=ps[0].com_std_m * 1e-4,
                     inertia_std=ps[0].inertia_std * 1e-4)] + ps[1:]
    r = fit_subset(tree, sharp, m0, advise=False)
    assert r.rank == base.rank == 33
    np.testing.assert_allclose(r.singular_values, base.singular_values)
    truth = _truth_phi_s(tree)
    assert np.sqrt(np.mean(((r.values - truth) / r.std) ** 2)) < 3
    # a rotation set that cannot separate everything stays deficient however precise
    arm_x = [{"link1": _rot([1, 0, 0], a)} for a in (0, 20, -20, 45)]
    tree2 = _paper_tree(with_params=True)
    m2 = sum(l.params.mass for l in tree2.links)
    ps2 = [_observe(tree2, rr, rng, f"q{k}") for k, rr in enumerate(arm_x)]
    ps2[1] = replace(ps2[1], com_std_m=ps2[1].com_std_m * 1e-4,
                     inertia_std=ps2[1].inertia_std * 1e-4)
    assert fit_subset(tree2, ps2, m2, advise=False).rank < 17


# ----------------------------------------------------------------------------- regressors

def test_regressors_reproduce_overall_properties():
    tree = _four_link_truth()
    phi_b = phi_b_vector(minimal_parameters(tree))
    m0 = sum(l.params.mass for l in tree.links)
    rots = {n: Rotation.random(random_state=k).as_matrix()
            for k, n in enumerate(["arm", "forearm", "leg"])}
    whole = composite_params(tree, rots)
    y = posture_target(PostureOverall("p", whole.com, None, whole.inertia_com, None, rots), m0)
    assert np.allclose(regressor_phi_b(tree, rots) @ phi_b, y, atol=1e-10)
    assert np.allclose(regressor_phi_s(tree, rots) @ phi_s_from_phi_b(phi_b), y, atol=1e-10)
    via = overall_from_phi_b(tree, rots, phi_b, m0)
    assert np.allclose(via.pi[1:4], y[:3])


def test_phi_s_lies_in_row_space_of_phi_b_equations():
    tree = _four_link_truth()
    _, rotation_sets, _ = _four_link_postures()
    zb = np.vstack([regressor_phi_b(tree, r) for r in rotation_sets])
    bp = base_parameters(zb, rtol=1e-8)
    assert bp.rank == 8 * 4 + 1
    assert row_space_residual(zb, phi_s_selector(4), rtol=1e-8).max() < 1e-8


# ----------------------------------------------------------------------------- base params

def _planar_2r_regressor(q, qd, qdd, l1=0.5, g=9.81):
    """Torques of a planar 2R arm (gravity in the plane) as a regressor over the standard
    per-link parameters [zz1, mx1, my1, m1, zz2, mx2, my2, m2] (about each joint, link axes).
    Derived by hand with Lagrange's equations from
    T = 1/2 zz1 d1^2 + 1/2 m2 l1^2 d1^2 + l1 d1 (d1 + d2) (mx2 c2 - my2 s2) + 1/2 zz2 (d1 + d2)^2,
    V = g (s1 mx1 + c1 my1 + m2 l1 s1 + s12 mx2 + c12 my2)   (gravity along -y)."""
    q1, q2 = q.T
    d1, d2 = qd.T
    a1, a2 = qdd.T
    c2, s2 = np.cos(q2), np.sin(q2)
    c1, s1, c12, s12 = np.cos(q1), np.sin(q1), np.cos(q1 + q2), np.sin(q1 + q2)
    n = len(q1)
    y = np.zeros((n, 2, 8))
    y[:, 0, 0] = a1
    y[:, 0, 1] = g * c1
    y[:, 0, 2] = -g * s1
    y[:, 0, 4] = a1 + a2
    y[:, 1, 4] = a1 + a2
    y[:, 0, 5] = l1 * (c2 * (2 * a1 + a2) - s2 * (d2 ** 2 + 2 * d1 * d2)) + g * c12
    y[:, 0, 6] = -l1 * (s2 * (2 * a1 + a2) + c2 * (d2 ** 2 + 2 * d1 * d2)) - g * s12
    y[:, 0, 7] = l1 ** 2 * a1 + g * l1 * c1
    y[:, 1, 5] = l1 * (c2 * a1 + s2 * d1 ** 2) + g * c12
    y[:, 1, 6] = l1 * (-s2 * a1 + c2 * d1 ** 2) - g * s12
    return y.reshape(-1, 8)


def test_base_parameters_of_a_planar_2r_robot():
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.normal(size=(200, 2)) for _ in range(3))
    names = ["ZZ1", "MX1", "MY1", "M1", "ZZ2", "MX2", "MY2", "M2"]
    bp = base_parameters(_planar_2r_regressor(q, qd, qdd), names)
    assert bp.rank == 6
    assert set(bp.unidentifiable) == {"M1"}
    groups = {g.split()[0]: g for g in bp.groupings()}
    # textbook base parameters: ZZ1 + l1^2 M2 and MX1 + l1 M2 (M2 grouped, M1 absent)
    dep = [bp.names[j] for j in bp.dependent]
    assert "M2" in dep or ("M2" in groups)
    x = rng.normal(size=8)
    w = _planar_2r_regressor(q, qd, qdd)
    assert np.allclose(w[:, bp.independent] @ bp.base_values(x), w @ x)
    if "M2" in dep:
        assert "0.25 M2" in groups["ZZ1"] and "0.5 M2" in groups["MX1"]


def test_base_parameters_generic_groupings():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(50, 3))
    w = np.column_stack([a, a[:, 0] * 2.0 - a[:, 2], np.zeros(50),
                         a[:, 1] + 1e-9 * rng.normal(size=50)])
    bp = base_parameters(w, list("abcdef"), rtol=1e-6)
    assert bp.rank == 3
    assert {"e", "f"} <= set(bp.unidentifiable) | {bp.names[j] for j in bp.dependent}
    x = rng.normal(size=6)
    assert np.allclose(w[:, bp.independent] @ bp.base_values(x), w @ x, atol=1e-6)


# ----------------------------------------------------------------------------- rank & advice

def _rounded(r, digits=4):
    return np.round(r, digits)


def test_rank_deficiency_detected_with_rounded_rotations_and_advice_helps():
    # the arm only ever turns about x (rotations printed to 4 decimals, so the theoretically
    # null directions are merely ~1e-4 small): not enough to separate everything
    tree = _paper_tree(with_params=True)
    m0 = sum(l.params.mass for l in tree.links)
    sets = [{"link1": _rounded(_rot([1, 0, 0], a))} for a in (0, 20, -20, 45)]
    rng = np.random.default_rng(0)
    ps = [_observe(tree, r, rng, f"p{k}") for k, r in enumerate(sets)]
    r = fit_subset(tree, ps, m0)
    assert r.rank < 17 and not r.identified
    assert r.unidentifiable and all("link1" in u or "sum" in u or "link0" in u
                                    for u in r.unidentifiable)
    assert any("not separated" in u or "not determined" in u for u in r.unidentifiable)
    assert np.isnan(r.values).any() and np.isinf(r.std).any()
    assert r.base_check["agree"]
    assert any(a.startswith("best next posture") for a in r.advice)
    assert any("about y" in a or "about z" in a for a in r.advice)
    adv = advise_next_posture(tree, ps, m0)
    assert adv.rank_after > adv.rank_before or adv.smin_after > adv.smin_before
    # measuring the advised posture raises the rank
    ps2 = ps + [_observe(tree, adv.best.rotations, rng, "advised")]
    r2 = fit_subset(tree, ps2, m0)
    assert r2.rank > r.rank


def test_advice_raises_smallest_singular_value_at_full_rank():
    tree = _paper_tree(with_params=True)
    m0 = sum(l.params.mass for l in tree.links)
    rng = np.random.default_rng(1)
    ps = [_observe(tree, r, rng, f"p{k}") for k, r in enumerate(_paper_like_rotations())]
    adv = advise_next_posture(tree, ps, m0)
    assert adv.rank_before == adv.rank_after == 17
    assert adv.smin_after > adv.smin_before
    # measuring it lowers the fit's condition number accordingly (1 / smallest rel. s.v.)
    before = fit_subset(tree, ps, m0)
    after = fit_subset(tree, ps + [_observe(tree, adv.best.rotations, rng, "advised")], m0)
    assert np.isclose(before.condition_number, 1 / adv.smin_before, rtol=1e-6)
    assert np.isclose(after.condition_number, 1 / adv.smin_after, rtol=0.05)
    # and no other grid candidate would have done better
    for cand in candidate_grid(tree, ps[0].rotations):
        other = fit_subset(tree, ps + [_observe(tree, cand.rotations, rng, "c")], m0)
        assert other.condition_number >= after.condition_number * (1 - 0.05)


def test_json_block_and_nan_as_null():
    r = fit_subset(_paper_tree(), _paper_postures(), M0_PAPER, weighting="plain")
    block = json.loads(json.dumps(r.to_json()))
    assert block["names"][-1] == "sum.J_yy" and block["rank"] == 17
    assert len(block["values"]) == len(block["std"]) == 17
    assert math.isfinite(block["condition_number"])
    bad = fit_subset(_paper_tree(), _paper_postures()[:1], M0_PAPER)
    text = json.dumps(bad.to_json())          # NaN/inf must not leak into JSON
    assert "NaN" not in text and "Infinity" not in text


def test_consistent_variant_on_paper_data():
    r = fit_subset(_paper_tree(), _paper_postures(com_std=np.full(3, 1e-3), inertia_std=0.01),
                   M0_PAPER, consistent=True)
    assert set(r.link_params) == {"link0", "link1"}
    masses = [p[0] for p in r.link_params.values()]
    assert np.isclose(sum(masses), M0_PAPER, rtol=1e-6)
    for p in r.link_params.values():
        assert InertialParams(p).is_physically_consistent(tol=1e-6)
    # the paper's data are consistent with a realisable split: the image stays within ~1 std
    assert np.all(np.abs(r.consistent_values - r.values) <= 1.0 * r.std + 1e-6)
    assert "consistent_values" in r.to_json()


# ----------------------------------------------------------------------------- command line

PAPER_TOML = """total_mass = 80.817

[[links]]
name = "link0"
parent = "platform"
[[links]]
name = "link1"
parent = "link0"
joint = "spherical"
joint_center = [0.0, 0.0, 0.0]
""" + "".join(f"""
[[postures]]
name = "posture{k}"
com = {list(TABLE2_S[k])}
inertia_com = {_mat(*TABLE2_I[k]).tolist()}
com_std = [0.001, 0.001, 0.001]
inertia_std = 0.01
rotations = {{ link1 = {TABLE2_R[k]} }}
""" for k in (1, 2, 3))


def _run(argv):
    """``rigtool subset`` through the command module, with the CLI's error mapping."""
    import argparse
    from rigtool.commands import subset as cmd
    from rigtool.errors import RigtoolError
    parser = argparse.ArgumentParser()
    cmd.add_arguments(parser)
    try:
        return cmd.run(parser.parse_args(argv)), ""
    except RigtoolError as exc:
        return 2, str(exc)


def test_cli_writes_subset_json_and_refuses_to_overwrite_input(tmp_path, capsys):
    src = tmp_path / "postures.toml"
    src.write_text(PAPER_TOML)
    code, _ = _run([str(src), "-o", str(tmp_path / "subset.json")])
    assert code == 0
    out = capsys.readouterr().out
    assert "sum.J_yy" in out and "rank 17 of 17" in out
    doc = json.loads((tmp_path / "subset.json").read_text())
    assert doc["subset"]["rank"] == 17 and len(doc["subset"]["values"]) == 17
    assert len(doc["input"]["sha256"]) == 64
    code, msg = _run([str(src), "-o", str(src)])
    assert code == 2 and "refusing to write over the input" in msg
    assert src.read_text() == PAPER_TOML


@pytest.mark.parametrize("edit, field, message", [
    (lambda t: t.replace("total_mass = 80.817", "total_mass = -1"), "total_mass",
     "expected a positive number"),
    (lambda t: t.replace('joint_center = [0.0, 0.0, 0.0]\n', ""), "links[1].joint_center",
     "missing required field 'joint_center'"),
    (lambda t: t.replace('joint = "spherical"', 'joint = "revolute"'), "links[1].joint",
     "expected one of spherical"),
    (lambda t: t.replace("rotations = { link1", "rotations = { arm", 1),
     "postures[0].rotations.arm", "no link named 'arm'"),
    (lambda t: t.replace("[[0.9999, 0.0071, 0.0099]", "[[0.9, 0.0071, 0.0099]", 1),
     "postures[0].rotations.link1", "expected a rotation matrix"),
    (lambda t: t.replace("com = [0.0002, -0.2562, -0.1265]", "com = [0.0002, -0.2562]"),
     "postures[0].com", "expected an array of shape (3,)"),
    (lambda t: t.replace("inertia_std = 0.01", "inertia_std = 0.0", 1),
     "postures[0].inertia_std", "expected a positive number"),
    (lambda t: t.replace('parent = "link0"', 'parent = "hand"'), "links[1].parent",
     "must be a link listed before"),
    (lambda t: t + "\nfoo = 1\n", "postures[2].foo", "unknown key 'foo'"),
])
def test_cli_bad_input_names_the_field(tmp_path, edit, field, message):
    src = tmp_path / "postures.toml"
    src.write_text(edit(PAPER_TOML))
    code, msg = _run([str(src)])
    assert code == 2 and message in msg and str(src) in msg
    if field:
        assert f"field '{field}'" in msg


def test_cli_missing_file(tmp_path):
    code, msg = _run([str(tmp_path / "nope.toml")])
    assert code == 2 and "file not found" in msg


def test_consistent_variant_with_fine_marker_noise():
    """The whitened posture rows of a simulated two-link session at 0.05 mm marker noise
    (output-error postures, COM standard errors ~1 um; benchmarks/accuracy.py, sigma 0.05,
    seed 1) reach |b_w| ~ 1e6 while the residual at the optimum is O(1). Written as
    ||g pi - b_w||^2, Clarabel called this feasible problem infeasible; about the
    unconstrained solution it is solved, and its image is the unconstrained fit's (the
    constraints are inactive: the data are consistent)."""
    from pathlib import Path
    from types import SimpleNamespace

    from rigtool.identify.subset.consistent import consistent_fit
    from rigtool.sim.scenario import load_scenario
    root = Path(__file__).resolve().parents[1]
    tree = load_scenario(root / "scenarios" / "two_link_paper002.toml").obj.tree
    case = np.load(Path(__file__).parent / "data" / "consistent_subset_fine_noise.npz")
    out = SimpleNamespace()
    consistent_fit(tree, out, case["a_w"], case["b_w"], float(case["total_mass_kg"]))
    for p in out.link_params.values():
        assert InertialParams(p).is_physically_consistent(tol=1e-6)
    a_w, b_w = case["a_w"], case["b_w"]
    phi_ls = np.linalg.lstsq(a_w, b_w, rcond=None)[0]
    r_ls = a_w @ phi_ls - b_w
    r = a_w @ out.consistent_values - b_w
    # the constrained minimum is the unconstrained one (chi^2 1.084) to solver precision
    assert r @ r <= r_ls @ r_ls + 1e-3


@pytest.mark.parametrize("n_postures", [1, 2])
def test_identified_combinations_of_a_rank_deficient_subset(n_postures):
    """What one or two postures do determine: each reported combination is orthogonal to
    the null space (its value does not depend on the undetermined part), its value matches
    the truth's within the noise, and its standard error covers that error."""
    tree = _paper_tree(with_params=True)
    m0 = sum(l.params.mass for l in tree.links)
    truth = _truth_phi_s(tree)
    rng = np.random.default_rng(3)
    ps = [_observe(tree, rots, rng, f"p{k}")
          for k, rots in enumerate(_paper_like_rotations()[:n_postures])]
    r = fit_subset(tree, ps, m0)
    assert not r.identified
    combos = r.identified_combinations()
    assert len(combos) == r.rank
    null_x = r.singular_vectors[r.rank:].T / r.column_scale[:, None]     # null dirs in x
    z = []
    for c in combos:
        coef = np.array([c["expression"].get(n, 0.0) for n in r.names])
        # coefficients are written to 6 significant digits
        assert abs(coef @ null_x).max() <= 1e-5 * np.linalg.norm(coef) * np.abs(null_x).max()
        assert max(c["expression"].values(), key=abs) == pytest.approx(1.0) or \
            c["expression"][c["name"].split()[0]] == 1.0
        z.append((c["value"] - coef @ truth) / c["std"])
    z = np.asarray(z)
    assert np.all(np.isfinite(z)) and np.max(np.abs(z)) < 5.0          # 17 draws at most
    doc = r.to_json()
    assert len(doc["identified_combinations"]) == r.rank
    json.dumps(doc)


def _from_target(name, y, rotations, m0, cov9, shared=None):
    """A posture whose ``[h, J0 six]`` is ``y`` (the inverse of posture_target)."""
    c = y[:3] / m0
    j0 = _mat(y[3], y[4], y[5], y[8], y[7], y[6])
    i_com = j0 - m0 * (c @ c * np.eye(3) - np.outer(c, c))
    return PostureOverall(name, c, None, i_com, None, rotations, covariance9=cov9,
                          shared_errors=shared)


def _shared_study(rng, tree, rotation_sets, u, base_std, carried=True):
    """Postures whose targets carry white noise of ``base_std`` and one shared cause (unit
    variance) moving posture ``k`` by ``u[k]``; ``covariance9`` holds both."""
    from rigtool.identify.subset.fit import posture_target
    m0 = sum(l.params.mass for l in tree.links)
    cause = rng.normal()
    out = []
    for k, rot in enumerate(rotation_sets):
        whole = composite_params(tree, rot)
        y0 = posture_target(PostureOverall("t", whole.com, None, whole.inertia_com, None, rot),
                            m0)
        cov9 = np.diag(base_std ** 2) + np.outer(u[k], u[k])
        y = y0 + rng.normal(size=9) * base_std + u[k] * cause
        out.append(_from_target(f"p{k}", y, rot, m0, cov9,
                                {"tissue": u[k]} if carried else None))
    return out, m0


def _five_rotations():
    return _paper_like_rotations() + [{"link1": _rot([0, 1, 0], 60) @ _rot([0, 0, 1], 30)},
                                      {"link1": _rot([0, 0, 1], -45) @ _rot([1, 0, 0], 40)}]


def test_shared_errors_are_generalised_least_squares_with_the_full_covariance():
    """A cause shared by every posture makes the stacked rows' covariance dense; the fit is
    then the generalised least-squares estimate with that covariance, written out by hand."""
    from rigtool.identify.subset.fit import posture_target, regressor_phi_s
    tree = _two_link_truth()
    rots = _five_rotations()
    rng = np.random.default_rng(5)
    base_std = np.r_[np.full(3, 0.01), np.full(6, 0.002)]
    u = rng.normal(size=(5, 9)) * base_std * 3
    ps, m0 = _shared_study(rng, tree, rots, u, base_std)
    r = fit_subset(tree, ps, m0, advise=False)
    a = np.vstack([regressor_phi_s(tree, p.rotations) for p in ps])
    b = np.concatenate([posture_target(p, m0) for p in ps])
    cov = np.kron(np.eye(5), np.diag(base_std ** 2)) + np.outer(u.ravel(), u.ravel())
    ci = np.linalg.inv(cov)
    info = a.T @ ci @ a
    x = np.linalg.solve(info, a.T @ ci @ b)
    np.testing.assert_allclose(r.values, x, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(r.covariance, np.linalg.inv(info), rtol=1e-6, atol=1e-14)


@pytest.mark.slow
def test_a_shared_cause_taken_as_independent_is_overconfident():
    """A cause that moves every posture as a change of Phi_s would (``u_k = A_k d``: the
    same body, other tissue in it): over 300 draws, Phi_s's errors over its standard errors
    have a mean square of about 1 when the cause is carried as one, and far above it when
    each posture's share is taken as its own (the same covariance9, the correlation
    dropped: five postures then average the cause down as if it were five)."""
    from rigtool.identify.subset.fit import regressor_phi_s
    tree = _two_link_truth()
    rots = _five_rotations()
    base_std = np.r_[np.full(3, 0.01), np.full(6, 0.002)]
    rng = np.random.default_rng(7)
    d = rng.normal(size=17)
    u = np.stack([regressor_phi_s(tree, r) @ d for r in rots])
    u *= 4 * np.linalg.norm(base_std) / np.linalg.norm(u, axis=1).mean()
    truth = _truth_phi_s(tree)
    z2 = {True: [], False: []}
    for seed in range(300):
        for carried in (True, False):
            ps, m0 = _shared_study(np.random.default_rng(seed), tree, rots, u, base_std,
                                   carried)
            r = fit_subset(tree, ps, m0, advise=False)
            z2[carried].append(np.mean(((r.values - truth) / r.std) ** 2))
    # 300 draws x 17 entries: the mean of a chi-square(1) average is 1 within about 0.1
    assert 0.8 < np.mean(z2[True]) < 1.2, np.mean(z2[True])
    assert np.mean(z2[False]) > 1.5, np.mean(z2[False])


def _observe_understated(tree, rotations, rng, factor, name="p"):
    """A posture whose errors are ``factor`` times the standard errors it reports (a
    disturbance its fit did not model)."""
    whole = composite_params(tree, rotations)
    i_com = whole.inertia_com
    sig_i = INERTIA_REL * np.linalg.eigvalsh(i_com)[-1]
    noise = factor * rng.normal(size=6) * sig_i
    d = _mat(noise[0], noise[1], noise[2], noise[5], noise[4], noise[3])
    return PostureOverall(name, whole.com + factor * rng.normal(size=3) * COM_STD,
                          np.full(3, COM_STD), i_com + d, sig_i, rotations)


def test_postures_that_disagree_scale_phi_s_standard_errors_by_the_birge_ratio():
    tree = _two_link_truth()
    rotations = _paper_like_rotations()
    truth = _truth_phi_s(tree)
    m0 = sum(l.params.mass for l in tree.links)
    # errors as reported: the covariance is left alone (the chance of p < SCALE_P is one in
    # a thousand per fit; none of these seeds)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        r = fit_subset(tree, [_observe(tree, rot, rng, f"p{k}")
                              for k, rot in enumerate(rotations)], m0, advise=False)
        assert r.se_scale == 1.0
    # errors three times what the postures report: the reduced chi-square (10 degrees of
    # freedom) shows it, the standard errors grow by its square root, and the errors
    # whitened by them are back to unit variance (about 10/8 from the chi-square's scatter)
    z2, scaled = [], []
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        ps = [_observe_understated(tree, rot, rng, 3.0, f"p{k}")
              for k, rot in enumerate(rotations)]
        r = fit_subset(tree, ps, m0, advise=False)
        if r.se_scale > 1.0:
            assert r.se_scale == pytest.approx(math.sqrt(r.reduced_chi2), rel=1e-12)
            assert r.to_json()["se_scale"] == pytest.approx(r.se_scale)
            scaled.append(seed)
        z2.append(((r.values - truth) / r.std) ** 2)
    assert len(scaled) >= 36                  # chi-square 90 on 10: p < 1e-3 nearly always
    assert 0.6 < float(np.mean(z2)) < 2.0     # unscaled: about 9
