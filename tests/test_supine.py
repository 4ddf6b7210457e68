"""The whole-body protocol's postures: what a supine person can hold."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.identify.subset.advice import plan_postures, turn_link
from rigtool.identify.subset.fit import structural_whitener
from rigtool.identify.subset.supine import (clears_platform, combined_candidates, hook_lying,
                                            is_right, limbs, rotation_vectors,
                                            segment_points_platform, supine_candidates,
                                            holdable,
                                            turn_vector)
from rigtool.sim import human_model as wb


@pytest.fixture(scope="module")
def person():
    tree, _, _ = wb.human(np.random.default_rng(1996))
    base_r = Rotation.from_euler("xyz", wb.BASE_EULER_DEG, degrees=True).as_matrix()
    return tree, base_r, np.asarray(wb.BASE_POSITION_M)


def test_sides_mirror():
    assert is_right("r_thigh") and is_right("RightForearm") and is_right("hand_r")
    assert not is_right("l_thigh") and not is_right("trunk") and not is_right("forearm")
    from rigtool.anthropometry import segment_for_name, side_for_name
    for name, side, seg in (("r_thigh", "right", "thigh"), ("LeftHand", "left", "hand"),
                            ("shank_R", "right", "shank"), ("rightforearm", "right", "forearm"),
                            ("head", None, "head")):
        assert side_for_name(name) == side and segment_for_name(name) == seg
    # flexion (y) is the same turn on both sides; abduction (x) and axial turns (z) mirror
    np.testing.assert_allclose(turn_vector("r_thigh", "y", -45), turn_vector("l_thigh", "y", -45))
    np.testing.assert_allclose(turn_vector("r_thigh", "x", 30), -turn_vector("l_thigh", "x", 30))
    np.testing.assert_allclose(turn_vector("r_thigh", "z", 30), -turn_vector("l_thigh", "z", 30))


def test_supine_geometry(person):
    """Lying straight: the trunk's axis along the platform, the feet pointing up; a right
    arm abducted 90 deg lies on the platform at the person's right (-y of the platform,
    the person's left being +y with the head towards -x and the face up)."""
    tree, base_r, base_p = person
    straight = {n: np.eye(3) for n in tree.names[1:]}
    pts = segment_points_platform(tree, straight, base_r, base_p)
    assert np.all(np.abs(pts[:, 2] - 0.10) < 0.25)
    org, _ = tree.origins_and_rotations(straight)
    head = base_r @ org[tree.index("head")] + base_p
    assert head[0] < base_p[0] - 0.5          # head towards -x
    abducted = turn_link(tree, straight, "r_upper_arm", turn_vector("r_upper_arm", "x", 90.0))
    org, _ = tree.origins_and_rotations(abducted)
    elbow = base_r @ org[tree.index("r_forearm")] + base_p
    shoulder = base_r @ org[tree.index("r_upper_arm")] + base_p
    assert elbow[1] < shoulder[1] - 0.25 and abs(elbow[2] - shoulder[2]) < 1e-9
    assert clears_platform(tree, hook_lying(tree, straight), base_r, base_p)


def test_knee_flexion_needs_the_hip_flexed(person):
    """From lying straight the shank would go through the platform; from hook-lying the
    same turn is holdable."""
    tree, base_r, base_p = person
    cands = supine_candidates(tree, base_r, base_p)
    descr = [c.description for c in cands]
    assert not any(d.startswith("lying straight, l_shank turned +90 deg about l_thigh's y")
                   for d in descr)
    assert any(d.startswith("hook-lying, l_shank turned -45 deg about l_thigh's y")
               for d in descr)       # the knee extended to 45 deg: the foot lifted
    assert not any(d.startswith("lying straight, l_shank turned -45 deg") for d in descr)
    for c in cands:                  # (hyperextension from lying straight)
        assert holdable(tree, c.rotations, base_r, base_p)


@pytest.mark.slow
def test_combined_postures_identify_phi_s(person):
    """Holdable several-limb postures give Phi_s (8 x 14 + 1 entries) full rank, with
    about the fewest postures 9 rows each allow (13), where one joint per posture needs
    about twice as many."""
    tree, base_r, base_p = person
    assert [len(l) for l in limbs(tree)] == [1, 3, 3, 3, 3]
    rng = np.random.default_rng(0)
    cands = combined_candidates(tree, base_r, base_p, rng, n=600)
    assert len(cands) > 200
    for c in cands[:50]:
        assert clears_platform(tree, c.rotations, base_r, base_p)
    straight = {n: np.eye(3) for n in tree.names[1:]}
    w = structural_whitener(75.0, 0.5)
    p = 8 * len(tree.links) + 1
    added, history = plan_postures(tree, [straight], w, candidates=cands, max_condition=1e9,
                                   max_postures=40)
    assert history[-1][0] == p
    n_combined = 1 + len(added)
    added1, history1 = plan_postures(tree, [straight], w,
                                     candidates=supine_candidates(tree, base_r, base_p),
                                     max_condition=1e9, max_postures=40)
    assert history1[-1][0] == p
    assert 13 <= n_combined < 1 + len(added1)


def test_rotation_vectors_round_trip(person):
    tree, _, _ = person
    rot = hook_lying(tree)
    rv = rotation_vectors(rot)
    assert "trunk" not in rv and "l_thigh" in rv and "head" not in rv
    for name, v in rv.items():
        np.testing.assert_allclose(Rotation.from_rotvec(v).as_matrix(), rot[name], atol=1e-8)
