"""The relative-motion fit's input map in NumPy and its complex-step Jacobian
(rigtool.identify.relative.input_map), held to the map as JAX computed it with ``jacfwd``
(tests/_ref_relative_map.py, the fit's implementation until 2026-11-26)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from _ref_relative_map import jax_map
from rigtool.identify.relative.input_map import MapConstants, input_map, input_map_jacobian


def _case(free: str, fit_base: bool, per_joint: bool, seed: int = 0):
    """A four-body tree (a chain and a branch: parents 0, 1, 1), four springs, nine markers
    (three on the base), random poses, and an unknown vector whose rotations take both
    branches of Rodrigues' coefficients (a zero vector and one of about 1 rad)."""
    rng = np.random.default_rng(seed)
    n, s_n, k_n = 4, 4, 9
    n_theta = n - 1 if free == "jyy" else 9 * n
    n_damp = n - 1 if per_joint else 1
    consts = MapConstants(
        parents=(-1, 0, 1, 1), n_theta=n_theta, n_damp=n_damp, fit_base=fit_base, free=free,
        r_pb=Rotation.from_rotvec(rng.normal(size=3) * 0.3).as_matrix(),
        t_pb=rng.normal(size=3) * 0.2, joint_centres=rng.normal(size=(n, 3)) * 0.3,
        markers_body=rng.normal(size=(k_n, 3)) * 0.1,
        on_base=np.arange(k_n) < 3,
        rot_ref=Rotation.from_rotvec(rng.normal(size=(n, 3))).as_matrix(),
        mass_kg=71.5, n_springs=s_n)
    rot_state = rng.normal(size=(n, 3)) * 0.05
    rot_state[0] = 0.0                           # the Taylor branch at its centre
    rot_state[2] = [0.6, -0.7, 0.4]              # the closed form (|phi| ~ 1 rad)
    state = np.concatenate([rng.normal(size=3) * 0.01, rot_state.ravel(),
                            rng.normal(size=3) * 0.01, rng.normal(size=3 * n) * 0.2])
    x = np.concatenate([rng.normal(size=n_theta), rng.uniform(0.1, 1.0, n_damp),
                        rng.normal(size=6) * 0.05 if fit_base else [], state])
    phi_s = rng.normal(size=8 * n + 1)
    calib = np.concatenate([rng.normal(size=10), rng.uniform(3e3, 5e3, s_n),
                            rng.uniform(0.3, 0.5, s_n), rng.uniform(5, 20, s_n)])
    holder = SimpleNamespace(
        n=n, n_theta=n_theta, n_damp=n_damp, fit_base=fit_base, free=free,
        parents=list(consts.parents), r_pb=consts.r_pb, t_pb=consts.t_pb,
        joint_centres=consts.joint_centres, markers_body=consts.markers_body,
        on_base=consts.on_base, rot_ref=consts.rot_ref, mass_kg=consts.mass_kg,
        rig=SimpleNamespace(springs=[None] * s_n))
    return consts, holder, x, phi_s, calib


@pytest.mark.slow
@pytest.mark.parametrize("free, fit_base, per_joint",
                         [("jyy", True, False), ("jyy", False, True), ("phi_b", True, True)])
def test_numpy_map_and_jacobian_match_jax(free, fit_base, per_joint):
    """The engine inputs agree to round-off, and every Jacobian block (unknowns, Phi_s,
    calibration) agrees with JAX's forward mode to 1e-12 of its largest entry: the complex
    step carries no truncation error at h = 1e-30."""
    consts, holder, x, phi_s, calib = _case(free, fit_base, per_joint)
    ref_map, ref_jac = jax_map(holder)
    theta_e, y0 = input_map(consts, x, phi_s, calib)
    ref_theta, ref_y0 = (np.asarray(a) for a in ref_map(x, phi_s, calib))
    np.testing.assert_allclose(theta_e, ref_theta, rtol=0, atol=1e-13 * np.abs(ref_theta).max())
    np.testing.assert_allclose(y0, ref_y0, rtol=0, atol=1e-14)
    got = input_map_jacobian(consts, x, phi_s, calib)
    jt, jy = ref_jac(x, phi_s, calib)
    want = [np.asarray(a) for a in (jt[0], jy[0], jt[1], jy[1], jt[2], jy[2])]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12 * max(np.abs(w).max(), 1.0))
    assert np.abs(want[0]).max() > 0 and np.abs(want[4]).max() > 0   # nothing vacuous


def test_rotation_is_continuous_across_the_series_threshold():
    """Rodrigues' coefficients switch from their series to the closed form at 0.01 rad; the
    rotation and its complex-step derivative agree on either side to round-off."""
    from rigtool.identify.relative.input_map import STEP, rotation
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    below, above = axis * (1e-2 * (1 - 1e-9)), axis * (1e-2 * (1 + 1e-9))
    np.testing.assert_allclose(rotation(below), Rotation.from_rotvec(below).as_matrix(),
                               atol=1e-15)
    np.testing.assert_allclose(rotation(above), Rotation.from_rotvec(above).as_matrix(),
                               atol=1e-15)
    for phi in (below, above):
        d = rotation(phi + 1j * STEP * axis).imag / STEP
        h = 1e-7
        fd = (Rotation.from_rotvec(phi + h * axis).as_matrix()
              - Rotation.from_rotvec(phi - h * axis).as_matrix()) / (2 * h)
        np.testing.assert_allclose(d, fd, atol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("free, fit_base", [("jyy", True), ("phi_b", False)])
def test_numpy_active_map_and_jacobian_match_jax(free, fit_base):
    """The active model's map (bodies, chain offsets, springs; the platform's initial state;
    the markers in the platform frame) and its Jacobian blocks along the unknowns, Phi_s and
    the calibration, against JAX's forward mode (tests/_ref_relative_map.py)."""
    from _ref_relative_map import jax_active_map
    from rigtool.identify.relative.input_map import (ActiveMapConstants, active_map,
                                                     active_map_jacobian)
    rng = np.random.default_rng(1)
    n, s_n, k_n = 4, 4, 7
    n_theta = n - 1 if free == "jyy" else 9 * n
    consts = ActiveMapConstants(
        n=n, n_theta=n_theta, fit_base=fit_base, free=free,
        r_pb=Rotation.from_rotvec(rng.normal(size=3) * 0.3).as_matrix(),
        t_pb=rng.normal(size=3) * 0.2, joint_centres=rng.normal(size=(n, 3)) * 0.3,
        roots=(1, 3), markers_body=rng.normal(size=(k_n, 3)) * 0.1,
        on_base=np.arange(k_n) >= 4,
        rot_ref=Rotation.from_rotvec([0.2, -0.1, 0.7]).as_matrix(), mass_kg=64.0,
        n_springs=s_n)
    state = np.concatenate([rng.normal(size=3) * 0.01, [0.6, -0.7, 0.4],
                            rng.normal(size=6) * 0.05])
    x = np.concatenate([rng.normal(size=n_theta),
                        rng.normal(size=6) * 0.05 if fit_base else [], state])
    phi_s = rng.normal(size=8 * n + 1)
    calib = np.concatenate([rng.normal(size=10), rng.uniform(3e3, 5e3, s_n),
                            rng.uniform(0.3, 0.5, s_n), rng.uniform(5, 20, s_n)])
    holder = SimpleNamespace(**{k: getattr(consts, k) for k in (
        "n", "n_theta", "free", "fit_base", "r_pb", "t_pb", "joint_centres", "markers_body",
        "on_base", "rot_ref", "mass_kg")}, roots=list(consts.roots),
        rig=SimpleNamespace(springs=[None] * s_n))
    ref_map, ref_jac = jax_active_map(holder)
    for got, want in zip(active_map(consts, x, phi_s, calib), ref_map(x, phi_s, calib)):
        want = np.asarray(want)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * max(np.abs(want).max(), 1))
    blocks = ref_jac(x, phi_s, calib)                     # per output: per argument
    for wrt in range(3):
        got = active_map_jacobian(consts, x, phi_s, calib, wrt)
        for g, out in zip(got, blocks):
            w = np.asarray(out[wrt])
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-12 * max(np.abs(w).max(), 1.0))
