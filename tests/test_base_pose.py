"""The base link's pose on the platform: how it moves a posture's result, and what a wander
of its markers on the skin adds to the result's uncertainty.

The Jacobian is checked against the COM and inertia carried by hand (rotation and
translation of a point and a tensor); the covariance against white frames (unchanged to
the bit) and a wander; the posture fit against the bundled demo's first posture with its
base link's markers drifting on the bone, whose effect on the COM (the fit with the drift
minus the fit without) its standard errors must now hold.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.identify.common.output_error import base_pose_covariance
from rigtool.identify.posture.base_pose import base_pose_jacobian
from rigtool.inertia import InertialParams
from rigtool.kinematics.rotation_mean import wander_excess
from rigtool.pipeline.session import fit_one_posture

MASS = 80.817


def _by_hand(com_base, inertia_com_base, rotation, position, v):
    """The body held on the platform, seen from the base pose moved by ``v = [dt, delta]``:
    its COM and inertia about it carried point by point (not through transform_params)."""
    com_p = rotation @ com_base + position
    inertia_p = rotation @ inertia_com_base @ rotation.T
    rot = rotation @ Rotation.from_rotvec(v[3:]).as_matrix()
    com = rot.T @ (com_p - position - v[:3])
    return InertialParams.from_com(MASS, com, rot.T @ inertia_p @ rot).pi[1:]


def test_pose_jacobian_against_the_body_carried_by_hand():
    rng = np.random.default_rng(2)
    rotation = Rotation.from_rotvec([0.2, -0.1, 0.4]).as_matrix()
    position = np.array([0.02, 0.3, 0.45])
    com = np.array([0.01, -0.28, -0.11])
    a = rng.normal(size=(3, 3))
    inertia = np.diag([9.0, 2.4, 7.6]) + 0.1 * (a + a.T)
    pi = InertialParams.from_com(MASS, com, inertia).pi
    g = base_pose_jacobian(pi, rotation, position)
    step = 1e-5                                    # another step than the function's
    by_hand = np.stack([(_by_hand(com, inertia, rotation, position, step * e)
                         - _by_hand(com, inertia, rotation, position, -step * e)) / (2 * step)
                        for e in np.eye(6)], axis=1)
    assert np.allclose(g, by_hand, rtol=1e-6, atol=1e-7 * np.abs(by_hand).max())
    # first moment: a shift dt moves it by -M R^T dt
    assert np.allclose(g[:3, :3], -MASS * rotation.T, atol=1e-6)


def _poses(rng, n, wander_m=0.0):
    """Per-frame platform and base poses (lab) with 50 um of white noise on the base's
    place and optionally a slow wander (sines of 4-27 s periods)."""
    t = np.arange(n) / 100.0
    plat_r = np.repeat(np.eye(3)[None], n, axis=0)
    plat_p = np.zeros((n, 3))
    drift = wander_m * np.sin(2 * np.pi * rng.uniform(0.04, 0.25, (5, 3)) * t[:, None, None]
                              + rng.uniform(0, 6, (5, 3))).sum(1)
    base_p = np.array([0.0, 0.3, 0.45]) + 5e-5 * rng.normal(size=(n, 3)) + drift
    base_r = Rotation.from_rotvec(2e-4 * rng.normal(size=(n, 3))).as_matrix()
    return plat_r, plat_p, base_r, base_p


def test_white_frames_keep_the_independent_covariance_and_a_wander_adds_to_it():
    rng = np.random.default_rng(4)
    for _ in range(200):
        _, _, cov, independent = base_pose_covariance(*_poses(rng, 2000))
        assert np.array_equal(cov, independent)
        assert not np.any(wander_excess(cov, independent))
    _, _, cov, independent = base_pose_covariance(*_poses(rng, 2000, wander_m=3e-4))
    excess = wander_excess(cov, independent)
    assert np.all(np.linalg.eigvalsh(excess) >= -1e-30)
    # the translation's wander (0.3 mm sines) dwarfs 50 um of white noise over 2000 frames
    assert np.all(np.diag(excess)[:3] > 100 * np.diag(independent)[:3])


def _drifting(data, rng):
    """The base link's markers (T*) drifting on the bone: 0.6 mm sines of 4-25 s periods
    per coordinate, as skin markers do over a 20 s capture."""
    xyz = data.xyz_m.copy()
    t = data.time_s
    for k, name in enumerate(data.names):
        if name.split(":")[-1].startswith("T"):
            f = rng.uniform(0.04, 0.25, (5, 3))
            xyz[:, k] += 0.0006 * np.sin(2 * np.pi * f * t[:, None, None]
                                         + rng.uniform(0, 6, (5, 3))).sum(1)
    return replace(data, xyz_m=xyz)


def test_a_base_link_drifting_on_the_skin_widens_the_com_standard_errors(posture1):
    """The drift moves the fitted COM by the mean of the base markers' drift over the
    capture; the independent frames' standard errors are micrometres and cannot hold it,
    the wander's mean covariance does."""
    session, rigfile, tree, markers, data = posture1
    ref = session.postures[0]

    def fit(d):
        return fit_one_posture(session, rigfile, tree, markers, ref.capture, name=ref.name,
                               window=ref.window, units=ref.units, total_mass_kg=MASS,
                               settings=session.filter, method="equation-error", data=d)

    rigid = fit(data).result
    moved = []
    for seed in range(3):
        drifted = fit(_drifting(data, np.random.default_rng(seed))).result
        shift = drifted.com - rigid.com
        moved.append(shift / drifted.com_std)
        # beyond what the frames taken as independent allow
        assert np.any(np.abs(shift) > 3 * rigid.com_std), shift / rigid.com_std
        assert np.all(drifted.com_std > rigid.com_std)
    assert np.all(np.abs(moved) < 3.0), moved
