"""Segment parameters from phi_B and a prior (rigtool.identify.segments.fit) and the de Leva table.

Truth: per-link parameters of a tree -> phi_B computed by rigtool.tree.minimal_parameters (the
SPEC formulas, independent of segments.phi_b_matrix) -> estimate_segments with priors that are
the truth perturbed by 10-20 %. The estimate must reproduce phi_B, keep the total mass, be
physically consistent, give every posture's whole-object parameters (composite of the
estimated links, rigtool.tree.composite_params), and match the truth wherever phi_B fixes
a quantity (a leaf link's first moment and inertia about its joint).
"""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.errors import ConfigError, InputError
from rigtool.identify.segments.fit import (Prior, estimate_segments, phi_b_matrix,
                                       prior_from_table, priors_from_specs)
from rigtool.inertia import InertialParams
from rigtool import anthropometry as anthro
from rigtool.sim.rigs import demo_tree
from rigtool.tree import Link, Tree, composite_params, minimal_parameters, phi_b_vector


def _truth_pi(tree: Tree) -> np.ndarray:
    return np.concatenate([l.params.pi for l in tree.links])


def _phi_b(tree: Tree) -> np.ndarray:
    return phi_b_vector(minimal_parameters(tree))


def _perturbed_priors(tree: Tree, seed: int) -> dict[str, Prior]:
    """Truth perturbed by 10-20 % (mass, COM offset, inertia), loose prior stds."""
    rng = np.random.default_rng(seed)
    out = {}
    for l in tree.links:
        p = l.params
        sgn = rng.choice([-1.0, 1.0], size=3)
        f_m, f_i = 1 + sgn[0] * rng.uniform(0.10, 0.20), 1 + sgn[1] * rng.uniform(0.10, 0.20)
        com = p.com * (1 + sgn[2] * rng.uniform(0.10, 0.20)) + 0.01 * rng.standard_normal(3)
        out[l.name] = Prior(p.mass * f_m, 0.2 * p.mass, com, 0.03, p.inertia_com * f_i, 0.3)
    return out


def _total(tree: Tree) -> float:
    return float(sum(l.params.mass for l in tree.links))


def _rotations(tree: Tree, seed: int) -> dict[str, np.ndarray]:
    return {n: Rotation.random(random_state=seed * 17 + k).as_matrix()
            for k, n in enumerate(tree.names[1:])}


def _estimated_tree(tree: Tree, res) -> Tree:
    return Tree(tuple(Link(l.name, l.parent, l.joint_center_parent, res.links[l.name].params)
                      for l in tree.links))


@pytest.fixture(scope="module")
def demo():
    tree = demo_tree()
    return tree, _phi_b(tree), _total(tree)


def test_phi_b_matrix_is_the_spec_formulas(demo):
    tree, phi_b, _ = demo
    assert np.allclose(phi_b_matrix(tree) @ _truth_pi(tree), phi_b, rtol=0, atol=1e-13)


def test_prior_equal_to_truth_returns_truth(demo):
    # The truth is feasible and costs nothing against its own prior: the unique optimum.
    tree, phi_b, m0 = demo
    priors = {l.name: Prior(l.params.mass, 0.2 * l.params.mass, l.params.com, 0.03,
                            l.params.inertia_com, 0.3) for l in tree.links}
    res = estimate_segments(tree, phi_b, None, m0, priors)
    for l in tree.links:
        assert np.allclose(res.links[l.name].params.pi, l.params.pi, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_phi_b_reproduced_with_perturbed_priors(demo, seed):
    tree, phi_b, m0 = demo
    priors = _perturbed_priors(tree, seed)
    res = estimate_segments(tree, phi_b, None, m0, priors)
    assert res.status == "optimal"
    assert res.phi_b_residual_z is None
    # phi_B (kg m, kg m^2 of order 1-20) to solver precision
    assert np.max(np.abs(res.phi_b_residual)) < 1e-6 * np.max(np.abs(phi_b))
    masses = np.array([res.links[n].mass_kg for n in tree.names])
    assert masses.sum() == pytest.approx(m0, rel=1e-8)
    assert np.all(masses > 0)
    for n in tree.names:
        assert res.links[n].params.is_physically_consistent(tol=1e-7), n
    # Every posture's whole-object parameters follow (independent composite of the links).
    est_tree = _estimated_tree(tree, res)
    for k in range(3):
        rots = _rotations(tree, k)
        assert np.allclose(composite_params(est_tree, rots).pi, composite_params(tree, rots).pi,
                           rtol=0, atol=1e-6)
    # Leaf links: phi_B is their own h and inertia about the joint -> equal to truth.
    for leaf in ("lower", "side"):
        est, true = res.links[leaf].params, tree.links[tree.index(leaf)].params
        assert np.allclose(est.first_moment, true.first_moment, atol=1e-7)
        assert np.allclose(est.inertia_origin, true.inertia_origin, atol=1e-7)
        # ... and the report says the measurement fixed them (posterior << prior std on h)
    # The estimate moves from the prior towards the truth for the base mass (30 kg of 42;
    # its prior is 10-20 % off, the leaves' h and J pull the split back).
    assert abs(res.links["frame"].mass_kg - 30.0) < abs(priors["frame"].mass_kg - 30.0)


def test_source_flags_and_stds(demo):
    tree, phi_b, m0 = demo
    res = estimate_segments(tree, phi_b, None, m0, _perturbed_priors(tree, 5))
    for n, seg in res.links.items():
        assert seg.mass_std <= seg.prior_std["mass"] * (1 + 1e-9)
        assert seg.source["mass"] in ("measured", "both", "prior")
        assert np.shape(seg.source["inertia_com"]) == (3, 3)
        js = seg.to_json()
        assert set(js) >= {"mass", "mass_std", "com", "com_std", "inertia_com",
                           "inertia_com_std", "prior_std", "source", "prior"}
    # No link's mass is fixed by phi_B and M0 alone in this tree (the split is the prior's
    # business, helped by the measured first moments), so none may claim "measured".
    assert all(seg.source["mass"] != "measured" for seg in res.links.values())
    # A leaf's COM along its non-zero first moment depends on its (unmeasured) mass.
    assert res.links["lower"].source["com"][2] == "both"
    js = res.to_json()
    assert set(js["phi_b_residual"]) == {f"{n}.{f}" for n in tree.names
                                         for f in ("MS_x", "MS_y", "MS_z", "J_xx", "J_yy",
                                                   "J_zz", "J_yz", "J_zx", "J_xy")}


def test_single_body_is_all_measured():
    # One link: phi_B is its h and I_o, M0 its mass; the prior (30 % off) has no say.
    body = InertialParams.from_com(10.0, np.array([0.02, -0.01, 0.1]), np.diag([0.2, 0.3, 0.1]))
    tree = Tree((Link("a", "platform", None, body),))
    res = estimate_segments(tree, _phi_b(tree), None, 10.0,
                            {"a": Prior(13.0, 3.0, np.array([0, 0, 0.15]), 0.05,
                                        np.diag([0.3, 0.3, 0.2]), 0.3)})
    seg = res.links["a"]
    assert np.allclose(seg.params.pi, body.pi, atol=1e-7)
    assert seg.source["mass"] == "measured"
    assert seg.source["com"] == ["measured"] * 3
    assert np.all(np.array(seg.source["inertia_com"]) == "measured")
    assert seg.mass_std < 1e-6 and np.all(seg.inertia_com_std < 1e-6)


def test_prior_only_quantity_is_not_flagged_measured():
    # A two-link chain whose joint sits at the parent's origin (p_c = 0): the child's mass
    # never reaches phi_B, only M0 fixes the sum, so the split is the prior's.
    base = InertialParams.from_com(10.0, np.array([0.0, 0.0, 0.1]), np.diag([0.2, 0.3, 0.1]))
    child = InertialParams.from_com(2.0, np.array([0.0, 0.0, -0.2]), np.diag([0.02, 0.02, 0.005]))
    tree = Tree((Link("a", "platform", None, base), Link("b", "a", np.zeros(3), child)))
    res = estimate_segments(tree, _phi_b(tree), None, 12.0,
                            {"a": Prior(9.0, 3.0, np.array([0, 0, 0.1]), 0.05,
                                        np.diag([0.2, 0.3, 0.1]), 0.3),
                             "b": Prior(3.0, 0.6, np.array([0, 0, -0.2]), 0.05,
                                        np.diag([0.02, 0.02, 0.005]), 0.3)})
    assert res.links["a"].mass_kg + res.links["b"].mass_kg == pytest.approx(12.0, rel=1e-8)
    assert res.links["b"].source["mass"] != "measured"


def test_noisy_phi_b_within_its_covariance(demo):
    tree, phi_b, m0 = demo
    rng = np.random.default_rng(11)
    std = 0.005 * np.abs(phi_b) + 2e-3
    noisy = phi_b + std * rng.standard_normal(phi_b.size)
    res = estimate_segments(tree, noisy, np.diag(std ** 2), m0, _perturbed_priors(tree, 3))
    assert res.status in ("optimal", "optimal_inaccurate")
    # A fit to the measurement: residual within a few of its standard deviations, and no
    # better than the noise would allow overall (chi^2 of 36 numbers).
    assert np.max(np.abs(res.phi_b_residual_z)) < 4.0
    assert np.sum(res.phi_b_residual_z ** 2) < 36 + 5 * np.sqrt(72)
    for n in tree.names:
        assert res.links[n].params.is_physically_consistent(tol=1e-7)
    # Leaf first moments: error within 4 posterior standard deviations (+ solver slack).
    for leaf in ("lower", "side"):
        true = tree.links[tree.index(leaf)].params
        est = res.links[leaf]
        err_c = np.abs(est.com_m - true.com)
        assert np.all(err_c < 4 * est.com_std + 1e-4), (leaf, err_c, est.com_std)


def test_inconsistent_total_mass_is_refused(demo):
    # The leaves alone need more than 1 kg to carry their measured first moments/inertia.
    tree, phi_b, _ = demo
    with pytest.raises(ConfigError, match="no physically consistent split of phi_B"):
        estimate_segments(tree, phi_b, None, 1.0, _perturbed_priors(tree, 0))


def test_input_errors(demo):
    tree, phi_b, m0 = demo
    priors = _perturbed_priors(tree, 0)
    with pytest.raises(InputError, match="phi_B needs 36 finite values for 4 links"):
        estimate_segments(tree, phi_b[:-1], None, m0, priors)
    with pytest.raises(InputError, match="expected a positive total mass"):
        estimate_segments(tree, phi_b, None, -1.0, priors)
    with pytest.raises(InputError, match="covariance must be a finite 36x36"):
        estimate_segments(tree, phi_b, np.eye(3), m0, priors)
    with pytest.raises(ConfigError, match="no prior for link\\(s\\) side"):
        estimate_segments(tree, phi_b, None, m0, {k: v for k, v in priors.items()
                                                  if k != "side"})
    bad = dict(priors, lower=Prior(-1.0, 0.1, np.zeros(3), 0.01, np.eye(3) * 0.01, 0.3))
    with pytest.raises(ConfigError, match="expected a positive mass") as e:
        estimate_segments(tree, phi_b, None, m0, bad)
    assert e.value.field == "priors.lower.mass_kg"
    bad = dict(priors, lower=Prior(1.0, 0.1, np.zeros(3), 0.01, -np.eye(3), 0.3))
    with pytest.raises(ConfigError, match="positive semidefinite 3x3 inertia"):
        estimate_segments(tree, phi_b, None, m0, bad)


# ----------------------------------------------------------------------------- de Leva

def test_de_leva_masses_sum_to_whole_body():
    # Published-table invariant: head + trunk + 2 x (upper arm, forearm, hand, thigh, shank,
    # foot) = 100 % for each sex (catches a mistyped mass fraction).
    for sex, tol in (("male", 1e-9), ("female", 1.5e-4)):
        t = anthro.DE_LEVA_1996[sex]
        total = t["head"].mass_fraction + t["trunk"].mass_fraction + 2 * sum(
            t[k].mass_fraction for k in ("upper_arm", "forearm", "hand", "thigh", "shank",
                                         "foot"))
        assert total == pytest.approx(1.0, abs=tol), sex


def test_de_leva_published_figures():
    # Spot values of de Leva (1996) Table 4 (per cent), independent of the module's rows.
    r = anthro.table_row("upper_arm", "male")
    assert (r.mass_fraction, r.com_fraction, r.r_sagittal, r.r_transverse,
            r.r_longitudinal) == pytest.approx((0.0271, 0.5772, 0.285, 0.269, 0.158))
    r = anthro.table_row("thigh", "female")
    assert (r.mass_fraction, r.com_fraction, r.r_longitudinal) == pytest.approx(
        (0.1478, 0.3612, 0.162))
    # Head from C7: vertex-based COM 50.02 % -> 49.98 % from C7.
    assert anthro.table_row("head", "male").com_fraction == pytest.approx(0.4998)


def test_segment_inertia_closed_form():
    r = anthro.table_row("upper_arm", "male")
    m, com, inertia, length = anthro.segment_inertia(
        r, body_mass_kg=80.0, proximal_m=np.zeros(3), distal_m=np.array([0.0, 0.0, -0.30]))
    assert m == pytest.approx(0.0271 * 80.0)
    assert length == pytest.approx(0.30)
    assert np.allclose(com, [0.0, 0.0, -0.30 * 0.5772])
    i_perp = m * (0.5 * (0.285 + 0.269) * 0.30) ** 2
    assert np.allclose(inertia, np.diag([i_perp, i_perp, m * (0.158 * 0.30) ** 2]))


@pytest.mark.parametrize("name,seg", [("RightUpperArm", "upper_arm"), ("l_forearm", "forearm"),
                                      ("left-thigh", "thigh"), ("Shank_R", "shank"),
                                      ("torso", "trunk"), ("link1", None)])
def test_segment_for_name(name, seg):
    assert anthro.segment_for_name(name) == seg


def _arm_tree(params=None):
    p = params or {}
    return Tree((
        Link("trunk", "platform", None, p.get("trunk")),
        Link("upper_arm", "trunk", np.array([0.0, -0.20, 0.45]), p.get("upper_arm")),
        Link("forearm", "upper_arm", np.array([0.0, 0.0, -0.30]), p.get("forearm")),
    ))


def _spec(**kw):
    base = dict(segment=None, segment_start_m=None, segment_end_m=None, mass_kg=None,
                com_m=None, inertia_com=None, mass_std=None, com_std=None,
                inertia_rel_std=None)
    base.update(kw)
    return SimpleNamespace(**base)


def test_priors_from_specs_table_and_cad():
    tree = _arm_tree()
    specs = {"trunk": _spec(mass_kg=40.0, com_m=np.array([0, 0, 0.2]),
                            inertia_com=np.diag([2.0, 1.8, 0.5])),
             "forearm": _spec(segment="forearm", segment_end_m=np.array([0, 0, -0.27]))}
    pr = priors_from_specs(tree, specs, body_mass_kg=80.0, sex="female")
    assert pr["trunk"].source.startswith("CAD")
    assert pr["trunk"].mass_std == pytest.approx(4.0)
    # upper_arm: by its name; endpoints default to its origin and the elbow joint centre
    ua = pr["upper_arm"]
    assert ua.mass_kg == pytest.approx(0.0255 * 80.0)
    assert np.allclose(ua.com_m, [0, 0, -0.30 * 0.5754])
    assert "female" in ua.source and "de Leva" in ua.source
    assert pr["forearm"].mass_kg == pytest.approx(0.0138 * 80.0)
    assert np.allclose(pr["forearm"].com_m, [0, 0, -0.27 * 0.4559])
    # no sex given: male table, said in the source
    pr = priors_from_specs(tree, specs, body_mass_kg=80.0)
    assert pr["upper_arm"].mass_kg == pytest.approx(0.0271 * 80.0)
    assert "male table" in pr["upper_arm"].source


def test_priors_from_specs_errors():
    tree = Tree((Link("base", "platform"), Link("link1", "base", np.zeros(3))))
    with pytest.raises(ConfigError, match="link 'base' has no prior") as e:
        priors_from_specs(tree, {}, body_mass_kg=70.0)
    assert e.value.field == "links[0].segment"
    with pytest.raises(ConfigError, match="unknown segment"):
        priors_from_specs(tree, {"base": _spec(segment="wing")}, body_mass_kg=70.0)
    with pytest.raises(ConfigError, match="needs segment_start") as e:
        priors_from_specs(tree, {"base": _spec(segment="trunk")}, body_mass_kg=70.0)
    assert e.value.field == "links[0].segment_start"
    cad = _spec(mass_kg=10.0, com_m=np.zeros(3), inertia_com=np.eye(3) * 0.1)
    with pytest.raises(ConfigError, match="needs segment_end"):
        priors_from_specs(tree, {"base": cad, "link1": _spec(segment="hand")},
                          body_mass_kg=70.0)
    with pytest.raises(ConfigError, match="coincide"):
        priors_from_specs(tree, {"base": cad, "link1": _spec(
            segment="hand", segment_end_m=np.zeros(3))}, body_mass_kg=70.0)


def test_human_arm_with_table_priors():
    # Truth: a 78 kg man's arm segments 15 % heavier than the table, COMs 2 cm off; the
    # estimate reproduces phi_B, and the forearm (a leaf) gets its measured h and I_o.
    specs = {"trunk": _spec(mass_kg=40.0, com_m=np.array([0, -0.05, 0.25]),
                            inertia_com=np.diag([2.0, 1.8, 0.5])),
             "forearm": _spec(segment="forearm", segment_end_m=np.array([0, 0, -0.27]))}
    table = priors_from_specs(_arm_tree(), specs, body_mass_kg=78.0, sex="male")
    assert table["forearm"].mass_kg == pytest.approx(prior_from_table(
        "forearm", body_mass_kg=78.0, proximal_m=np.zeros(3),
        distal_m=np.array([0, 0, -0.27])).mass_kg)
    truth = {n: InertialParams.from_com(1.15 * p.mass_kg, p.com_m + np.array([0.02, 0, 0]),
                                        1.1 * p.inertia_com) for n, p in table.items()}
    tree = _arm_tree(truth)
    priors = priors_from_specs(tree, specs, body_mass_kg=78.0, sex="male")
    res = estimate_segments(tree, _phi_b(tree), None, _total(tree), priors)
    assert np.max(np.abs(res.phi_b_residual)) < 1e-6
    fa = res.links["forearm"].params
    assert np.allclose(fa.first_moment, truth["forearm"].first_moment, atol=1e-7)
    assert np.allclose(fa.inertia_origin, truth["forearm"].inertia_origin, atol=1e-7)
    for n in tree.names:
        assert res.links[n].params.is_physically_consistent(tol=1e-7)


@pytest.mark.parametrize("rel_std", [1e-4, 1e-7])
def test_a_precise_phi_b_leaves_the_mass_split_to_the_prior(rel_std):
    """phi_B does not tell how a subtree's mass splits from its parent's, however precise it
    is: the links' mass standard errors with a nearly exact phi_B (its covariance six or
    more orders below the prior's, as a good capture's) must be those of an exact phi_B (the
    null-space posterior), not collapse as the precision grows (they did: the information
    form's pseudo-inverse dropped the directions phi_B leaves free, a person's trunk mass
    0.09 kg against a prior of 4.3 kg)."""
    body = {"trunk": InertialParams.from_com(38.0, np.array([0.0, -0.05, 0.25]),
                                             np.diag([2.0, 1.8, 0.5])),
            "upper_arm": InertialParams.from_com(2.1, np.array([0.0, 0.0, -0.14]),
                                                 np.diag([0.013, 0.013, 0.003])),
            "forearm": InertialParams.from_com(1.3, np.array([0.0, 0.0, -0.12]),
                                               np.diag([0.007, 0.007, 0.001])),
            "thigh": InertialParams.from_com(9.5, np.array([0.0, 0.0, -0.18]),
                                             np.diag([0.15, 0.15, 0.03]))}
    tree = Tree((
        Link("trunk", "platform", None, body["trunk"]),
        Link("upper_arm", "trunk", np.array([0.0, -0.20, 0.45]), body["upper_arm"]),
        Link("forearm", "upper_arm", np.array([0.0, 0.0, -0.30]), body["forearm"]),
        Link("thigh", "trunk", np.array([0.1, 0.0, -0.05]), body["thigh"])))
    phi_b = _phi_b(tree)
    priors = _perturbed_priors(tree, 3)
    exact = estimate_segments(tree, phi_b, None, _total(tree), priors)
    cov = np.diag((rel_std * np.maximum(np.abs(phi_b), 1e-3 * np.abs(phi_b).max())) ** 2)
    noisy = estimate_segments(tree, phi_b, cov, _total(tree), priors)
    for n in tree.names:
        e, m = exact.links[n], noisy.links[n]
        assert e.mass_std > 0.05 * e.prior_std["mass"]        # the prior's to decide
        assert m.mass_std == pytest.approx(e.mass_std, rel=1e-2), n
        np.testing.assert_allclose(m.com_std, e.com_std, rtol=2e-2, atol=1e-6)
