"""Rigid-body core: invariants, round trips and closed-form cases."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.inertia import (InertialParams, parallel_axis, regressor_body, skew,
                             transform_params)


def _random_body(rng):
    # any positive definite second moment Sigma gives a physical inertia tr(Sigma) 1 - Sigma
    a = rng.normal(size=(3, 3))
    sigma = a @ a.T + 0.1 * np.eye(3)
    i_com = np.trace(sigma) * np.eye(3) - sigma
    return InertialParams.from_com(rng.uniform(1, 10), rng.normal(size=3) * 0.2, i_com)


def test_skew_is_cross_product():
    rng = np.random.default_rng(0)
    v, u = rng.normal(size=(2, 5, 3))
    assert np.allclose(skew(v) @ u[..., None], np.cross(v, u)[..., None])


def test_com_round_trip_and_pseudo_inertia():
    rng = np.random.default_rng(1)
    body = _random_body(rng)
    back = InertialParams.from_com(body.mass, body.com, body.inertia_com)
    assert np.allclose(back.pi, body.pi)
    assert np.allclose(InertialParams.from_pseudo_inertia(body.pseudo_inertia()).pi, body.pi)
    assert body.is_physically_consistent()


def test_point_mass_inertia_closed_form():
    # a point mass of 2 kg at (0, 0, 3): I_xx = I_yy = m z^2 = 18, I_zz = 0
    inertia = parallel_axis(2.0, np.array([0.0, 0.0, 3.0]))
    assert np.allclose(inertia, np.diag([18.0, 18.0, 0.0]))


def test_transform_matches_parallel_axis_and_rotation():
    rng = np.random.default_rng(2)
    body = _random_body(rng)
    rot = Rotation.random(random_state=3).as_matrix()
    p = rng.normal(size=3)
    moved = InertialParams(transform_params(body.pi, rot, p))
    assert np.isclose(moved.mass, body.mass)
    assert np.allclose(moved.com, rot @ body.com + p)
    assert np.allclose(moved.inertia_com, rot @ body.inertia_com @ rot.T)


def test_non_physical_body_is_flagged():
    # principal moments (1, 1, 3) violate the triangle inequality
    bad = InertialParams.from_com(1.0, np.zeros(3), np.diag([1.0, 1.0, 3.0]))
    assert not bad.is_physically_consistent()


def test_regressor_matches_newton_euler_about_com():
    """Y pi equals the Newton-Euler wrench written about the COM and shifted to the origin."""
    rng = np.random.default_rng(4)
    body = _random_body(rng)
    a_minus_g, w, wd = rng.normal(size=(3, 3))
    f_n = regressor_body(a_minus_g, w, wd) @ body.pi
    c = body.com
    a_com = a_minus_g + np.cross(wd, c) + np.cross(w, np.cross(w, c))
    f = body.mass * a_com
    i_c = body.inertia_com
    n_com = i_c @ wd + np.cross(w, i_c @ w)
    n_origin = n_com + np.cross(c, f)
    assert np.allclose(f_n[:3], f)
    assert np.allclose(f_n[3:], n_origin)


def test_regressor_vectorised_over_frames():
    rng = np.random.default_rng(5)
    body = _random_body(rng)
    a, w, wd = rng.normal(size=(3, 7, 3))
    y = regressor_body(a, w, wd)
    assert y.shape == (7, 6, 10)
    for t in range(7):
        assert np.allclose(y[t] @ body.pi, regressor_body(a[t], w[t], wd[t]) @ body.pi)


@pytest.mark.parametrize("angle", [0.0, np.pi / 2, np.pi])
def test_rotation_about_z_closed_form(angle):
    # a rod along x (I = diag(0, 1, 1)) turned about z by 90 deg lies along y: diag(1, 0, 1)
    rod = InertialParams.from_com(1.0, np.zeros(3), np.diag([0.0, 1.0, 1.0]))
    rot = Rotation.from_euler("z", angle).as_matrix()
    moved = rod.transformed(rot, np.zeros(3))
    c, s = np.cos(angle), np.sin(angle)
    expected = np.diag([s * s, c * c, 1.0])
    expected[0, 1] = expected[1, 0] = -c * s
    assert np.allclose(moved.inertia_com, expected, atol=1e-12)


def test_wrench_transform_is_a_rotation_then_a_shift():
    """``wrench_transform`` against ``shift_wrench``: rotate into the reference axes, then
    move the moment from the frame's origin to the reference origin; batched alike."""
    from scipy.spatial.transform import Rotation

    from rigtool.inertia import shift_wrench, wrench_transform

    rng = np.random.default_rng(4)
    rot = Rotation.random(5, random_state=rng).as_matrix()
    origin = rng.standard_normal((5, 3))
    w = rng.standard_normal((5, 6))
    rotated = np.concatenate([np.einsum("tij,tj->ti", rot, w[:, :3]),
                              np.einsum("tij,tj->ti", rot, w[:, 3:])], axis=1)
    expected = shift_wrench(rotated, origin, np.zeros(3))
    x = wrench_transform(rot, origin)
    assert np.allclose(np.einsum("tij,tj->ti", x, w), expected, atol=1e-12)
    assert np.allclose(wrench_transform(rot[0], origin[0]), x[0], atol=0)


def test_a_body_on_the_consistency_boundary_is_moved_just_inside():
    """A consistent body is returned as it is; one whose pseudo-inertia's smallest eigenvalue
    is a rounding below zero (a constrained fit at its solver's tolerance) is moved by about
    that much to where the simulator accepts it, and one well outside moves to the boundary
    (the eigenvalue projection: its negative eigenvalue raised, the others kept)."""
    body = InertialParams.from_com(58.0, np.array([0.1, 0.01, 0.3]), np.diag([2.0, 2.5, 3.0]))
    assert body.inside_consistent_set() is body
    ev, vec = np.linalg.eigh(body.pseudo_inertia())
    for low in (-1e-10 * ev[-1], -0.2 * ev[0]):
        bent = InertialParams.from_pseudo_inertia((vec * np.r_[low, ev[1:]]) @ vec.T)
        assert not bent.is_physically_consistent(tol=1e-12)
        fixed = bent.inside_consistent_set()
        assert fixed.is_physically_consistent(tol=1e-12)     # the simulator's own tolerance
        ev_fixed = np.linalg.eigvalsh(fixed.pseudo_inertia())
        assert np.allclose(ev_fixed[1:], ev[1:], rtol=1e-12)
        assert ev_fixed[0] == pytest.approx(1e-9 * ev[-1], rel=1e-6)
