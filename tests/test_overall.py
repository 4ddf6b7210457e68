"""Locked-posture fit against the simulator: a 4-link object bolted to the demo rig.

The rig is the true one (calibration is tested elsewhere), so what remains are the fit's own
approximations: noise-free, the exact spring model must recover COM and inertia to well inside
the issue's goals (0.3 mm, 0.3 % of the largest principal moment); with noise, errors must sit
within 4 reported standard errors of that floor.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.config import FilterSettings
from rigtool.identify.posture.equation_error import fit_posture
from rigtool.identify.common.platform_motion import capture_motion, with_noise_probes
from rigtool.sim.dynamics import System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import demo_rig, demo_tree
from rigtool.tree import composite_params

RATE = 100.0
R_BASE = Rotation.from_euler("z", 10, degrees=True).as_matrix()
P_BASE = np.array([0.05, -0.02, 0.04])
POSTURE = {"upper": Rotation.from_rotvec([0.3, 0.1, 0.0]).as_matrix(),
           "lower": Rotation.from_rotvec([0.5, -0.2, 0.1]).as_matrix(),
           "side": Rotation.from_rotvec([-0.2, 0.0, 0.3]).as_matrix()}


def _simulate(scale: float):
    rig, platform = demo_rig(spring_damping_n_s_m=2.0)
    tree = demo_tree()
    system = System(rig=rig, platform_params=platform, tree=tree, base_rotation_platform=R_BASE,
                    base_position_platform_m=P_BASE, posture=POSTURE)
    traj = simulate(system, 16.0, RATE,
                    platform_offset=scale * np.array([0.012, -0.01, 0.008, 0.03, -0.025, 0.03]),
                    platform_velocity=scale * np.array([0.02, 0.02, -0.01, 0.05, -0.05, 0.05]))
    truth = composite_params(tree, POSTURE)           # base-link frame
    return rig, platform, tree, traj, truth


@pytest.fixture(scope="module")
def sim():
    return _simulate(1.0)


def _fit(sim, sigma, **kw):
    rig, platform, tree, traj, truth = sim
    data = synthesize_markers(traj, [MarkerSet("platform", rig.platform.markers_platform)],
                              noise_sigma_m=sigma, rng=np.random.default_rng(3), rate_hz=RATE)
    cap = capture_motion(data, rig.platform.markers_platform, FilterSettings(), name="p")
    if sigma > 0:
        cap = with_noise_probes(cap, rig.platform.markers_platform, FilterSettings())
    return fit_posture(rig, platform, cap, base_rotation_platform=R_BASE,
                       base_position_platform=P_BASE, total_mass_kg=truth.mass, **kw), truth


@pytest.mark.parametrize("weighting", ["noise", "plain", "dual-metric"])
def test_noise_free_posture_is_recovered(sim, weighting):
    res, truth = _fit(sim, 0.0, weighting=weighting)
    i_max = np.linalg.eigvalsh(truth.inertia_com)[-1]
    assert np.all(np.abs(res.com - truth.com) < 5e-5)
    assert np.all(np.abs(res.inertia_com - truth.inertia_com) < 1e-3 * i_max)
    assert res.params.is_physically_consistent()


def test_linear_spring_model_error_is_second_order(sim):
    """Paper 002's K q model drops the spring wrench's second-order terms, so its error must
    shrink ~ linearly with the amplitude relative to the wrench (quadratic terms / linear
    ones), while the exact model stays exact."""
    small = _simulate(0.2)
    i_max = np.linalg.eigvalsh(sim[4].inertia_com)[-1]
    err = []
    for s in (sim, small):
        res, truth = _fit(s, 0.0, spring_model="linear")
        err.append(np.abs(res.inertia_com - truth.inertia_com).max() / i_max)
        exact, _ = _fit(s, 0.0)
        assert np.abs(exact.inertia_com - truth.inertia_com).max() < 1e-3 * i_max
    assert err[1] < 0.3 * err[0]          # 5x smaller motion, >= 3.3x smaller error


def test_noisy_posture_within_standard_errors(sim):
    res, truth = _fit(sim, 1e-4, fit_mass=True)
    assert res.compensated
    i_max = np.linalg.eigvalsh(truth.inertia_com)[-1]
    assert np.all(np.abs(res.com - truth.com) < 5e-5 + 4 * res.com_std)
    assert np.all(np.abs(res.inertia_com - truth.inertia_com)
                  < 1e-3 * i_max + 4 * res.inertia_com_std)
    m, m_std = res.mass_from_vibration
    assert abs(m - truth.mass) < 4 * m_std + 1e-3 * truth.mass
    assert res.covariance9.shape == (9, 9)
