"""The test bed's arms (benchmarks/testbed/robot.py, urdf.py): each example-robot-data arm
read by the test bed as rigtool reads the URDF it is handed, its sized rig's modes in the
demo rig's band, its postures clear of the deck by rigtool's own clearance, its CAD priors
broken where asked and nowhere else."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.testbed import simulate as sim
from benchmarks.testbed.demo import demo_study
from benchmarks.testbed.model import mjcf
from benchmarks.testbed.robot import (DECK_CLEARANCE_M, ROBOTS, draw_posture, load_robot,
                                      prior_urdf, sized_rig)
from benchmarks.testbed.urdf import link_inertials
from rigtool.robot.clearance import deck_heights_m
from rigtool.robot.urdf_model import load_robot_model


def _consistent(i: np.ndarray) -> bool:
    w = np.linalg.eigvalsh(i)
    return bool(w.min() >= 0 and 2 * w.max() <= w.sum() * (1 + 1e-9))


@pytest.mark.parametrize("name", sorted(ROBOTS))
def test_arm_read_as_rigtool_reads_it(name, tmp_path):
    """The test bed's bodies (fixed links merged, fingers held) against rigtool's reading of
    the URDF the test bed hands over: two implementations of the URDF's composition. Their
    masses, first moments and second moments about the body frame agree to the URDF's
    printed digits (1e-9 relative of the largest)."""
    arm = load_robot(name, np.random.default_rng(0))
    path = tmp_path / "arm.urdf"
    arm.urdf.write(path)
    types = {j.get("type") for j in arm.urdf.getroot().findall("joint")}
    assert types <= {"revolute", "continuous", "fixed"}
    model = load_robot_model(path, arm.base_link)
    assert model.names == [lk.body.name for lk in arm.subject.links]
    assert model.moving_joints == [j["name"] for j in arm.joints.values()]
    for lk, body in zip(arm.subject.links, model.bodies):
        b = lk.body
        ip = body.prior
        m, c = b.mass_kg, b.com_m
        j_o = b.inertia_com_kg_m2 + m * (c @ c * np.eye(3) - np.outer(c, c))
        scale = max(m, 1e-3)
        assert abs(ip.mass - m) <= 1e-9 * scale
        np.testing.assert_allclose(ip.mass * ip.com, m * c, atol=1e-9 * scale)
        j_rig = ip.inertia_com + ip.mass * (ip.com @ ip.com * np.eye(3)
                                            - np.outer(ip.com, ip.com))
        np.testing.assert_allclose(j_rig, j_o, atol=1e-9 * max(np.abs(j_o).max(), 1e-6))


@pytest.mark.parametrize("name", sorted(ROBOTS))
def test_sized_rig_modes_and_clear_postures(name, tmp_path):
    """On its sized rig each arm's loaded modes lie in the demo rig's band (0.357-3.77 Hz
    with its 80 kg object: pendulum modes set by the springs' geometry, the highest by the
    sizing over twelve postures, within 8 % of it in others), and the drawn postures keep every link
    5 cm above the deck by rigtool's own clearance (its URDF reading, not MuJoCo's)."""
    arm = load_robot(name)
    rig = sized_rig(name).rig
    arm.urdf.write(tmp_path / "arm.urdf")
    rmodel = load_robot_model(tmp_path / "arm.urdf", arm.base_link)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, model, q_eq = draw_posture(arm, rig, rng)
        f = sim.modes_hz(model, q_eq)
        assert f.size == 6
        assert 0.35 < f[0] and f[-1] < 3.77 * 1.08, f
        qv = np.array([q[j] for j in rmodel.moving_joints])
        assert deck_heights_m(rmodel, qv).min() >= DECK_CLEARANCE_M - 1e-9


def test_modes_match_closed_form_on_the_demo():
    """The linear modes the sizing uses (MuJoCo's transition matrix) against the demo's
    six frequencies from the closed-form potential (test_testbed_physics: 0.357-3.766 Hz),
    to the finite differences' 1e-5."""
    study = demo_study()
    model = sim.compile_model(mjcf(study.rig, subject=study.subject,
                                   rotations=study.postures[0].rotations))
    f = sim.modes_hz(model, sim.equilibrium(model))
    assert f.size == 6
    assert abs(f[0] - 0.357) < 1e-3 and abs(f[-1] - 3.766) < 1e-3, f


def test_inconsistent_prior_breaks_exactly_the_links_named():
    """Six Panda links' priors break the triangle inequality (largest principal moment
    5-40 % above the other two's sum), the rest stay consistent, and every mass is within
    the +-15 % drawn."""
    arm = load_robot("panda")
    tree, broken = prior_urdf(arm, np.random.default_rng(3), n_inconsistent=6)
    assert len(broken) == 6
    true, prior = link_inertials(arm.urdf.getroot()), link_inertials(tree.getroot())
    for ln, (m, _, i) in prior.items():
        if true[ln][0] == 0:
            continue
        assert 0.85 * true[ln][0] <= m <= 1.15 * true[ln][0]
        assert _consistent(i) == (ln not in broken), ln
        if ln in broken:
            w = np.linalg.eigvalsh(i)
            assert 1.05 * (w[0] + w[1]) * (1 - 1e-6) <= w[2] <= 1.4 * (w[0] + w[1]) * (1 + 1e-6)
