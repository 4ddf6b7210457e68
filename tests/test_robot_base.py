"""Base parameters of a robot from locked postures: the rank the structure implies (the
Panda: 52 of 80 with 9 postures), checked against pinocchio's body regressor, the
estimate and its standard errors, and `rigtool subset` on a robot postures.toml."""

from __future__ import annotations

import json

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from rigtool.identify.subset.regressor import PostureOverall
from rigtool.robot.base_parameters import fit_base_parameters, overall_regressor
from rigtool.robot.urdf_model import load_robot_model, to_pinocchio_order
from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf


def _robot(name):
    rel, base, fixed = EXAMPLE_ROBOTS[name]
    return load_robot_model(example_robot_urdf(name), base, fixed)


def _random_postures(robot, n, seed):
    rng = np.random.default_rng(seed)
    lo, hi = robot.limits()
    return [rng.uniform(lo, hi) for _ in range(n)]


def _pinocchio_rank(robot, qs, seed=0):
    """Rank of the locked robot's wrench regressor built from pinocchio's bodyRegressor:
    the robot, locked in each posture, moved as one rigid body with random spatial
    velocities and accelerations; every body's wrench (pinocchio's dynamic parameters)
    moved to the base frame and summed. Rows stacked over samples and postures; columns
    scaled to unit norm; rank by SVD."""
    rng = np.random.default_rng(seed)
    model = robot.pin_model
    data = model.createData()
    fid = model.getFrameId(robot.base_link)
    rows = []
    for q in qs:
        pin.forwardKinematics(model, data, robot.configuration(q))
        pin.updateFramePlacements(model, data)
        o_m_b = data.oMf[fid]
        for _ in range(4):
            v_b = pin.Motion(rng.standard_normal(6))
            a_b = pin.Motion(rng.standard_normal(6))
            block = np.zeros((6, 10 * robot.n_bodies))
            for j in range(robot.n_bodies):
                b_m_j = o_m_b.actInv(data.oMi[j])
                y = pin.bodyRegressor(b_m_j.actInv(v_b), b_m_j.actInv(a_b))   # 6 x 10
                # a body wrench in frame j -> base frame: the dual action of b_M_j
                x_star = b_m_j.toDualActionMatrix()
                block[:, 10 * j:10 * j + 10] = x_star @ y
            rows.append(block)
    w = np.vstack(rows)
    w = w / np.maximum(np.linalg.norm(w, axis=0), 1e-300)
    s = np.linalg.svd(w, compute_uv=False)
    return int(np.sum(s > 1e-8 * s[0]))


def _overall(robot, pi, q, name, com_std=1e-4, i_std=1e-4):
    o = robot.composite(pi, q)
    return PostureOverall(name, o.com, np.full(3, com_std), o.inertia_com, i_std, {})


def test_overall_regressor_matches_pinocchio_inertia_algebra():
    robot = _robot("panda")
    rng = np.random.default_rng(1)
    q = _random_postures(robot, 1, 1)[0]
    rot, pos = robot.body_poses(q)
    pi = robot.prior_vector() * (1 + 0.1 * rng.standard_normal(80))
    ours = overall_regressor(rot, pos) @ pi
    total = pin.Inertia.Zero()
    for j in range(robot.n_bodies):
        m = pin.SE3(rot[j], pos[j])
        dyn = to_pinocchio_order(pi[10 * j:10 * j + 10])
        total += m.act(pin.Inertia.FromDynamicParameters(dyn))
    assert np.allclose(to_pinocchio_order(ours), total.toDynamicParameters(), atol=1e-12)


@pytest.mark.parametrize("name,n_postures,rank", [("panda", 9, 52), ("ur5", 9, None)])
def test_rank_and_pinocchio_agree(name, n_postures, rank):
    robot = _robot(name)
    qs = _random_postures(robot, n_postures, 7)
    poses = [robot.body_poses(q) for q in qs]
    pi = robot.prior_vector()
    m = pi[0::10].sum()
    res = fit_base_parameters([r for r, _ in poses], [p for _, p in poses],
                              [_overall(robot, pi, q, f"p{i}") for i, q in enumerate(qs)],
                              robot.names, m)
    assert res.rank == _pinocchio_rank(robot, qs)
    if rank is not None:
        assert res.rank == rank and res.n_parameters == 80
    # noise-free data: the base parameters of the truth, exactly
    assert np.allclose(res.values, res.base_values_of(pi), atol=1e-9)
    # the groupings: the total mass, and the null directions really are unseen
    assert res.names[0].startswith("m_" + robot.names[0]) and res.values[0] == pytest.approx(m)
    for u in res.unidentifiable:
        d = np.zeros(res.n_parameters)
        for k, c in u["direction"].items():
            d[res.parameter_names.index(k)] = c
        for (r, p) in poses:
            assert np.allclose(overall_regressor(r, p) @ d, 0, atol=1e-9)


def test_standard_errors_cover_the_truth():
    """Noisy postures (COM 0.05 mm, inertia 1e-4 kg m^2 per entry): over 40 draws the base
    parameters' errors over their standard errors have unit variance."""
    robot = _robot("panda")
    qs = _random_postures(robot, 9, 11)
    poses = [robot.body_poses(q) for q in qs]
    pi = robot.prior_vector()
    m = pi[0::10].sum()
    rng = np.random.default_rng(5)
    z = []
    for _ in range(40):
        posts = []
        for i, q in enumerate(qs):
            o = robot.composite(pi, q)
            d = 1e-4 * rng.standard_normal((3, 3))
            # symmetric noise: 1e-4 on the diagonal, 1e-4 / sqrt 2 off it
            posts.append(PostureOverall(f"p{i}", o.com + 5e-5 * rng.standard_normal(3),
                                        np.full(3, 5e-5), o.inertia_com + 0.5 * (d + d.T),
                                        1e-4 * np.where(np.eye(3) > 0, 1.0, np.sqrt(0.5)), {}))
        res = fit_base_parameters([r for r, _ in poses], [p for _, p in poses], posts,
                                  robot.names, m)
        z.append((res.values - res.base_values_of(pi)) / res.std)
    z = np.array(z)[:, 1:]            # the mass row is pinned by the default scale std
    assert 0.7 < z.std() < 1.3


def test_subset_command_on_a_robot(tmp_path, capsys):
    from rigtool.cli import main
    robot = _robot("panda")
    qs = _random_postures(robot, 9, 7)
    pi = robot.prior_vector()
    lines = [f"total_mass = {pi[0::10].sum():.9f}", "[robot]",
             f'urdf = "{example_robot_urdf("panda")}"', 'base_link = "panda_link0"',
             "fixed_joints = { panda_finger_joint1 = 0.02, panda_finger_joint2 = 0.02 }"]
    for i, q in enumerate(qs):
        o = robot.composite(pi, q)
        ic = o.inertia_com
        lines += ["[[postures]]", f'name = "p{i}"',
                  "com = [" + ", ".join(f"{v:.12g}" for v in o.com) + "]",
                  "inertia_com = [" + ", ".join("[" + ", ".join(f"{v:.12g}" for v in row) + "]"
                                                for row in ic) + "]",
                  "com_std = 1e-4", "inertia_std = 1e-4",
                  "joint_angles = { " + ", ".join(f"{j} = {v:.12g}" for j, v in
                                                  zip(robot.moving_joints, q)) + " }"]
    path = tmp_path / "postures.toml"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.json"
    assert main(["subset", str(path), "-o", str(out)]) == 0
    assert "rank 52 of 80" in capsys.readouterr().out
    doc = json.loads(out.read_text())["robot"]
    assert doc["base_parameters"]["rank"] == 52 and len(doc["unidentifiable"]) == 28
    # a joint outside its limits names the posture and joint
    path.write_text(path.read_text().replace("panda_joint4 = -", "panda_joint4 = ", 1))
    assert main(["subset", str(path)]) == 2
    assert "panda_joint4" in capsys.readouterr().err


def test_a_failed_per_link_fit_leaves_the_base_parameters(monkeypatch):
    """When the solver finds no per-link set, the robot stage still reports the base
    parameters the postures determine, with a warning, and writes no per-link values."""
    import rigtool.pipeline.robot_stage as stage
    from rigtool.robot.joint_angles import PostureAngles

    robot = _robot("panda")
    pi = robot.prior_vector()
    qs = _random_postures(robot, 9, seed=2)
    overall = [_overall(robot, pi, q, f"p{i}") for i, q in enumerate(qs)]
    angles = [PostureAngles(dict(zip(robot.moving_joints, q)), {}, {}) for q in qs]

    def infeasible(*args, **kwargs):
        raise RuntimeError("the per-link fit closest to the prior failed: infeasible")

    monkeypatch.setattr(stage, "fit_consistent", infeasible)
    out = stage.fit_robot(stage.RobotInputs(robot, angles), overall,
                          sum(b.prior.mass for b in robot.bodies), advice=False)
    assert out.consistent is None and out.base.rank == 52
    assert any("per-link parameters not written" in w and "infeasible" in w
               for w in out.warnings)
    assert "links" not in out.to_json()


def test_a_robot_no_posture_keeps_clear_of_the_deck_is_advised_nothing(monkeypatch):
    """When no configuration within the limits keeps the arm clear of the deck, the robot
    stage reports its base parameters with a note instead of failing."""
    import rigtool.pipeline.robot_stage as stage
    import rigtool.robot.advice as advice
    from rigtool.robot.joint_angles import PostureAngles

    robot = _robot("panda")
    pi = robot.prior_vector()
    qs = _random_postures(robot, 9, seed=2)
    overall = [_overall(robot, pi, q, f"p{i}") for i, q in enumerate(qs)]
    angles = [PostureAngles(dict(zip(robot.moving_joints, q)), {}, {}) for q in qs]
    monkeypatch.setattr(advice, "clear_of_deck", lambda *a, **k: False)
    out = stage.fit_robot(stage.RobotInputs(robot, angles), overall,
                          sum(b.prior.mass for b in robot.bodies), consistent=False)
    assert out.advice is None and out.base.rank == 52
    assert any(n.startswith("no posture advised") and "deck" in n for n in out.notes)
    assert out.to_json()["advice"] is None
