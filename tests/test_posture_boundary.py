"""A posture near or on the physical-consistency boundary (a flat body).

The posture fit's log-Cholesky unknowns have a Jacobian that vanishes along the flat axis of
a body whose smallest principal second moment is zero. A 45 kg plate 20 mm thick on the demo
rig (0.1 mm marker noise, 6 s) has ``Sigma_min`` = 1.5 g m^2 against a standard error of
about 0.9 g m^2 along that axis, the same size as the other inertias' (every second moment
enters the platform's rotational modes alike). A start that is not consistent is clipped onto
the boundary; from there the fit must leave it where the data say so, and the standard errors
must come from the information the data carry, not collapse with the map's Jacobian (they
did: 0.005-0.014 g m^2, the truth 100-280 of them away). A plate 2 mm thick (0.015 g m^2) is
on the boundary within its noise: the estimate stays there, reported as such with a one-sided
bound that holds the truth.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.posture_boundary import (COM_M, MASS_KG, OFFSET, P_BASE, PLATE_M, R_BASE,
                                         RATE_HZ, VELOCITY, _start)
from rigtool.identify.posture.boundary import boundary_of, second_moment
from rigtool.identify.posture.output_error import refine_posture
from rigtool.inertia import InertialParams
from rigtool.sim.dynamics import FixedBody, System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import box_inertia, demo_rig


def _fit(thickness_m: float, seed: int):
    inertia = box_inertia(MASS_KG, (*PLATE_M, thickness_m))
    rig, platform = demo_rig(spring_damping_n_s_m=6.0)
    system = System(rig=rig, platform_params=platform,
                    fixed=(FixedBody("plate", InertialParams.from_com(MASS_KG, COM_M, inertia),
                                     R_BASE, P_BASE),))
    traj = simulate(system, 6.0, RATE_HZ, platform_offset=OFFSET, platform_velocity=VELOCITY)
    data = synthesize_markers(traj, [MarkerSet("platform", rig.platform.markers_platform)],
                              noise_sigma_m=1e-4, rng=np.random.default_rng(seed),
                              rate_hz=RATE_HZ)
    # the start's second moment is not consistent: clipped onto the boundary
    start = _start(COM_M + 1e-3, inertia + np.diag([0.01, -0.01, 0.005]))
    assert np.linalg.eigvalsh(second_moment(start.inertia_com))[0] < 0
    res = refine_posture(rig, platform, data, base_rotation_platform=R_BASE,
                         base_position_platform=P_BASE, total_mass_kg=MASS_KG, start=start)
    sigma = second_moment(inertia)
    ev, vec = np.linalg.eigh(sigma)
    n = vec[:, 0]
    a = 0.5 * np.eye(3).ravel() - np.outer(n, n).ravel()
    se_flat = float(np.sqrt(a @ res.props_cov[3:, 3:] @ a))
    est_flat = float(n @ second_moment(res.inertia_com) @ n)
    return res, inertia, ev[0], est_flat, se_flat


@pytest.mark.parametrize("seed", [0, 2])
def test_a_plate_next_to_the_boundary_keeps_honest_standard_errors(seed):
    res, inertia, truth, est, se = _fit(0.02, seed)
    # the flat axis's standard error is of the others' size, not collapsed
    se_diag = np.diag(res.inertia_com_std)
    assert se > 0.3 * np.median(se_diag)
    assert abs(est - truth) <= 3.0 * se
    z = (res.inertia_com - inertia) / res.inertia_com_std
    assert np.abs(z).max() <= 4.0
    if res.boundary is None:                  # it left the boundary: a body inside
        assert np.linalg.eigvalsh(second_moment(res.inertia_com))[0] > 0
    else:                                     # the data ask for a body outside
        assert res.boundary.upper_kgm2 >= truth
        assert any("physical-consistency boundary" in w for w in res.warnings)


def test_a_plate_on_the_boundary_is_reported_as_such():
    res, inertia, truth, est, se = _fit(0.002, 1)
    assert res.boundary is not None
    assert res.boundary.second_moment_kgm2 < 1e-5 * np.abs(inertia).max()
    assert 0.0 <= truth <= res.boundary.upper_kgm2
    # the flat axis named is the plate's normal (the base-link frame's z)
    assert abs(res.boundary.axis @ np.array([0.0, 0.0, 1.0])) > 0.99
    assert sum("physical-consistency boundary" in w for w in res.warnings) == 1


def test_boundary_of_a_body_inside_is_none():
    inertia = box_inertia(10.0, (0.3, 0.2, 0.1))
    assert boundary_of(inertia, np.eye(12) * 1e-8) is None
    flat = box_inertia(10.0, (0.3, 0.2, 0.0))
    b = boundary_of(flat, np.eye(12) * 1e-8)
    assert b is not None and b.upper_kgm2 > 0 and abs(b.axis[2]) > 0.999
