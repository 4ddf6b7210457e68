"""Minimal parameters: the SPEC formulas against the composite body computed independently."""

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.inertia import InertialParams
from rigtool.tree import (Link, Tree, composite_params, minimal_parameters, overall_from_phi_b,
                          phi_b_vector, phi_s_from_phi_b, phi_s_names)


def _body(rng, mass):
    a = rng.normal(size=(3, 3)) * 0.2
    sigma = a @ a.T + 0.01 * np.eye(3)
    return InertialParams.from_com(mass, rng.normal(size=3) * 0.1,
                                   np.trace(sigma) * np.eye(3) - sigma)


def _tree(rng):
    # base -> a -> b, base -> c : a small tree with offsets
    return Tree((
        Link("base", "platform", None, _body(rng, 30.0)),
        Link("a", "base", rng.normal(size=3) * 0.3, _body(rng, 5.0)),
        Link("b", "a", rng.normal(size=3) * 0.3, _body(rng, 3.0)),
        Link("c", "base", rng.normal(size=3) * 0.3, _body(rng, 4.0)),
    ))


def test_overall_from_minimal_equals_composite_of_links():
    rng = np.random.default_rng(0)
    tree = _tree(rng)
    phi_b = phi_b_vector(minimal_parameters(tree))
    total = sum(l.params.mass for l in tree.links)
    for seed in range(3):
        rots = {n: Rotation.random(random_state=seed * 10 + k).as_matrix()
                for k, n in enumerate(["a", "b", "c"])}
        direct = composite_params(tree, rots)
        via_phi = overall_from_phi_b(tree, rots, phi_b, total)
        assert np.allclose(direct.pi, via_phi.pi, atol=1e-12)


def test_phi_s_shape_and_names():
    rng = np.random.default_rng(1)
    tree = _tree(rng)
    phi_b = phi_b_vector(minimal_parameters(tree))
    phi_s = phi_s_from_phi_b(phi_b)
    names = phi_s_names(tree)
    assert len(phi_s) == len(names) == 8 * 4 + 1
    per = phi_b.reshape(-1, 9)
    assert np.isclose(phi_s[-1], per[:, 4].sum())
    assert names[3] == "base.J_xx-J_yy" and np.isclose(phi_s[3], per[0, 3] - per[0, 4])


def test_minimal_mass_accumulates_subtree():
    rng = np.random.default_rng(2)
    m = minimal_parameters(_tree(rng))
    assert np.isclose(m["base"]["M"], 42.0) and np.isclose(m["a"]["M"], 8.0)
