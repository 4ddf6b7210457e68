"""Synthetic sessions: TOML writer, marker synthesis, scenarios, truth files, the bundle."""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import re

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.config import load_rig, load_session
from rigtool.errors import ConfigError, InputError
from rigtool.sim.markers import Artefacts, MarkerSet, marker_positions, synthesize_markers
from rigtool.sim.scenario import load_scenario, orthonormalise
from rigtool.sim.session_writer import (capture_jobs, rig_file_dict, session_dict,
                                        session_truth, write_bundle)
from rigtool.tomlwrite import Inline, dumps

ROOT = Path(__file__).resolve().parents[1]

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


# --------------------------------------------------------------------------- tomlwrite

def test_tomlwrite_round_trip():
    data = {
        "title": 'quote " backslash \\ tab \t newline \n unicode é \x01',
        "n": 3, "flag": False, "big": 1e300, "tiny": 1.2345678901234567e-17, "neg": -0.0,
        "third": 1 / 3, "empty": [],
        "rig": {"gravity": [0.0, 0.0, -9.80665], "locked_dofs": ["z", "rx"],
                "nested": {"deeper": {"x": 1}}},
        "platform": {"markers": {"P1": [0.45, 0.25, 0.02], "odd name": [1, 2, 3]},
                     "inertia_com": np.diag([1.1, 2.1, 3.0]), "mass": np.float64(24.8)},
        "springs": [{"name": "S1", "anchor": [0.6, 0.4, 1.2], "extra": {"k": 1}},
                    {"name": "S2", "anchor": [0.6, -0.4, 1.2], "on": True}],
        "inline": Inline({"position": [0.1, 0.0, 0.05], "rotation": np.eye(3)}),
    }
    text = dumps(data, header="a comment\nsecond line")
    back = tomllib.loads(text)
    expected = json.loads(json.dumps(data, default=lambda o: o.tolist()))
    assert back == expected
    assert math.copysign(1.0, back["neg"]) == -1.0
    assert "markers = { P1 = [0.45, 0.25, 0.02]" in text           # inline marker table
    assert text.count("[[springs]]") == 2 and text.startswith("# a comment")


def test_tomlwrite_nan_and_none():
    back = tomllib.loads(dumps({"a": float("nan"), "b": None, "c": float("-inf")}))
    assert math.isnan(back["a"]) and "b" not in back and back["c"] == -math.inf


def test_tomlwrite_refuses_unknown_types():
    with pytest.raises(TypeError, match="key 'x'"):
        dumps({"x": object()})


# --------------------------------------------------------------------------- markers

def _standin_traj(n_frames: int = 600, rate_hz: float = 120.0) -> SimpleNamespace:
    """A rigidly oscillating platform and a body bolted to it (no dynamics involved)."""
    t = np.arange(n_frames) / rate_hz
    rv = 0.01 * np.stack([np.sin(2 * np.pi * 0.7 * t), np.cos(2 * np.pi * 1.3 * t),
                          np.sin(2 * np.pi * 0.4 * t + 1)], -1)
    r_p = Rotation.from_rotvec(rv).as_matrix()
    p_p = np.array([0.0, 0.0, 1.2]) + 0.008 * np.stack([np.sin(3.1 * t), np.cos(2.2 * t),
                                                       np.sin(5.0 * t)], -1)
    r_b0 = Rotation.from_euler("xyz", [10, -20, 30], degrees=True).as_matrix()
    p_b0 = np.array([0.1, -0.2, 0.3])
    return SimpleNamespace(time_s=t, rotation={"platform": r_p, "body": r_p @ r_b0},
                           position_m={"platform": p_p, "body": p_p + r_p @ p_b0})


def _sets():
    return [MarkerSet("platform", {"P1": np.array([0.5, 0.25, 0.0]),
                                   "P2": np.array([-0.5, 0.25, 0.0]),
                                   "P3": np.array([-0.5, -0.25, 0.0]),
                                   "P4": np.array([0.4, -0.25, 0.0])}, "rig"),
            MarkerSet("body", {"B1": np.array([0.1, 0.0, 0.0]), "B2": np.array([0.0, 0.1, 0.0]),
                               "B3": np.array([0.0, 0.0, 0.1]),
                               "B4": np.array([0.1, 0.1, 0.1])}, None)]


def test_markers_exact_without_noise():
    traj = _standin_traj()
    data = synthesize_markers(traj, _sets(), noise_sigma_m=0.0)
    assert data.names[:2] == ("rig:P1", "rig:P2") and data.names[4] == "B1"
    assert data.rate_hz == pytest.approx(120.0)
    # marker = R c + p, checked frame by frame with a plain loop (independent of einsum)
    for k in (0, 137, 599):
        r, p = traj.rotation["body"][k], traj.position_m["body"][k]
        assert np.allclose(data.xyz_m[k, 7], r @ np.array([0.1, 0.1, 0.1]) + p, atol=1e-15)
    # rigid: distances between markers of one body never change
    d = np.linalg.norm(data.xyz_m[:, 0] - data.xyz_m[:, 2], axis=1)
    assert np.allclose(d, np.hypot(1.0, 0.5), atol=1e-12)
    assert data.missing_counts() == {n: 0 for n in data.names}


def test_markers_noise_has_requested_sigma_and_is_seeded():
    traj = _standin_traj(2000)
    sigma = 1e-4
    exact = marker_positions(traj, _sets())[1]
    a = synthesize_markers(traj, _sets(), noise_sigma_m=sigma, rng=np.random.default_rng(5))
    b = synthesize_markers(traj, _sets(), noise_sigma_m=sigma, rng=np.random.default_rng(5))
    err = (a.xyz_m - exact).ravel()
    # 48 000 samples: the sample std is within ~0.3 % (1 s.e.) of sigma; allow 2 %.
    assert np.std(err) == pytest.approx(sigma, rel=0.02)
    assert abs(np.mean(err)) < 5 * sigma / np.sqrt(err.size)
    assert np.array_equal(a.xyz_m, b.xyz_m)


def test_marker_artefacts_are_logged_and_applied():
    traj = _standin_traj(600)
    art = Artefacts(short_gaps=3, long_gaps=1, dropouts=1, swaps=1, ghosts=2,
                    ghost_replacements=1)
    data = synthesize_markers(traj, _sets(), noise_sigma_m=0.0, artefacts=art,
                              rng=np.random.default_rng(11))
    exact_names, exact, _ = marker_positions(traj, _sets())
    log = data.extras["artefacts"]
    kinds = [e["kind"] for e in log]
    assert sorted(kinds) == sorted(["short_gap"] * 3 + ["long_gap", "dropout", "swap",
                                                        "ghost", "ghost"] + ["ghost_replacement"])
    assert data.names[-2:] == ("UNLABELED1", "UNLABELED2")
    miss = data.missing_counts()
    dropped = next(e["marker"] for e in log if e["kind"] == "dropout")
    assert miss[dropped] == 600
    for e in log:
        if e["kind"] == "ghost":
            lo, hi = e["frames"]
            assert miss[e["marker"]] == 600 - (hi - lo + 1)
            near = data.xyz_m[lo:hi + 1, data.names.index(e["marker"])]
            ref = exact[lo:hi + 1, exact_names.index(e["near"])]
            assert np.allclose(np.linalg.norm(near - ref, axis=1), art.ghost_offset_m)
        if e["kind"] == "swap":
            i, j = (exact_names.index(m) for m in e["markers"])
            lo, hi = e["frames"]
            got = data.xyz_m[lo:hi + 1, i]
            ok = ~np.isnan(got).any(1)
            assert np.allclose(got[ok], exact[lo:hi + 1, j][ok])
    # a body never loses more than it can spare to a dropout: each keeps >= 3 markers
    for s in _sets():
        kept = [n for n in s.names() if miss[n] < 600]
        assert len(kept) >= 3


# --------------------------------------------------------------------------- scenario + truth

_THREE_LINK = """
[scenario]
name = "three"
seed = 3
[capture]
duration_s = 0.5
rate_hz = 50.0
format = "plain-csv"
noise_sigma_mm = 0.0
[rig]
name = "tiny-rig"
[platform]
mass = 20.0
com = [0.0, 0.0, -0.02]
inertia_com = [[0.6, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.5]]
markers = { P1 = [0.5, 0.25, 0.0], P2 = [-0.5, 0.25, 0.0], P3 = [-0.5, -0.25, 0.0] }
[[springs]]
name = "S1"
anchor = [0.6, 0.4, 2.3]
attachment = [0.5, 0.25, 0.0]
stiffness = 3000.0
free_length = 1.0
[[springs]]
name = "S2"
anchor = [-0.6, 0.4, 2.3]
attachment = [-0.5, 0.25, 0.0]
stiffness = 3000.0
free_length = 1.0
[[springs]]
name = "S3"
anchor = [0.0, -0.45, 2.3]
attachment = [0.0, -0.25, 0.0]
stiffness = 3000.0
free_length = 1.0
[[reference_bodies]]
name = "blk"
mass = 5.0
com = [0.0, 0.0, 0.05]
inertia_com = [[0.02, 0.0, 0.0], [0.0, 0.03, 0.0], [0.0, 0.0, 0.04]]
markers = { R1 = [0.1, 0.1, 0.1], R2 = [-0.1, 0.1, 0.1], R3 = [0.0, -0.1, 0.1] }
[[reference_bodies]]
name = "mounted"
mass = 3.0
com = [0.0, 0.01, 0.02]
inertia_com = [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]]
mount = { position = [0.2, 0.0, 0.0], rotation_vector = [0.0, 0.0, 0.3] }
[[calibration_captures]]
name = "empty"
[[calibration_captures]]
name = "blk"
load = [{ body = "blk", position = [0.1, 0.0, 0.0], euler_deg = [0.0, 0.0, 45.0] }, "mounted"]
holdout = true
window = [0.1, 0.4]
[object]
session = "three-link"
subject = "obj"
base = { position = [0.0, 0.1, 0.2] }
[[object.links]]
name = "base"
parent = "platform"
mass = 30.0
com = [0.01, -0.2, 0.1]
inertia_com = [[1.2, 0.05, -0.02], [0.05, 0.9, -0.1], [-0.02, -0.1, 0.8]]
markers = { B1 = [0.1, 0.0, 0.0], B2 = [0.0, 0.2, 0.0], B3 = [0.0, 0.0, 0.3] }
[[object.links]]
name = "mid"
parent = "base"
joint_center = [0.05, -0.3, 0.2]
mass = 5.0
com = [0.02, 0.01, -0.15]
inertia_com = [[0.05, 0.002, 0.001], [0.002, 0.06, -0.003], [0.001, -0.003, 0.02]]
markers = { M1 = [0.03, 0.0, -0.1], M2 = [0.0, 0.03, -0.2], M3 = [-0.03, 0.0, -0.25] }
[[object.links]]
name = "tip"
parent = "mid"
joint_center = [0.0, 0.02, -0.3]
mass = 2.0
com = [0.0, 0.01, -0.1]
inertia_com = [[0.01, 0.0005, 0.0], [0.0005, 0.012, 0.001], [0.0, 0.001, 0.004]]
markers = { X1 = [0.02, 0.0, -0.05], X2 = [0.0, 0.02, -0.12], X3 = [-0.02, 0.0, -0.18] }
[[postures]]
name = "p1"
[[postures]]
name = "p2"
rotation_vectors = { mid = [0.3, -0.2, 0.1] }
euler_deg = { tip = [10.0, 80.0, -5.0] }
window = [0.1, 0.5]
[[postures]]
name = "p3"
rotations = { mid = [[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]] }
[relative_motion]
posture = "p1"
release = { mid = [0.0, 0.3, 0.0] }
joint_damping = 0.1
"""


@pytest.fixture()
def three(tmp_path):
    path = tmp_path / "three.toml"
    path.write_text(_THREE_LINK)
    return load_scenario(path)


def _independent_minimal(links):
    """SPEC formulas written out directly: M_j, MS_j = m_j s_j + sum M_c p_c, J_j = I_j + ..."""
    names = [l["name"] for l in links]
    subtree_mass = {}
    for l in reversed(links):
        subtree_mass[l["name"]] = l["mass"] + sum(subtree_mass[c["name"]] for c in links
                                                  if c["parent"] == l["name"])
    out = {}
    for l in links:
        m, s = l["mass"], np.array(l["com"])
        # inertia about the link origin: I_com + m (|s|^2 1 - s s^T)
        i_o = np.array(l["inertia_com"]) + m * (s @ s * np.eye(3) - np.outer(s, s))
        ms, j = m * s, i_o.copy()
        for c in links:
            if c["parent"] == l["name"]:
                p, mc = np.array(c["joint_center"]), subtree_mass[c["name"]]
                ms = ms + mc * p
                j = j + mc * (p @ p * np.eye(3) - np.outer(p, p))
        out[l["name"]] = (subtree_mass[l["name"]], ms, j)
    phi_b = np.concatenate([np.concatenate([out[n][1], [out[n][2][0, 0], out[n][2][1, 1],
                                                        out[n][2][2, 2], out[n][2][1, 2],
                                                        out[n][2][2, 0], out[n][2][0, 1]]])
                            for n in names])
    per = phi_b.reshape(-1, 9)
    phi_s = np.concatenate([np.concatenate([r[:3], [r[3] - r[4], r[5] - r[4]], r[6:]])
                            for r in per] + [[per[:, 4].sum()]])
    return out, phi_b, phi_s


def test_truth_phi_b_and_phi_s_match_spec_formulas(three):
    truth = json.loads(json.dumps(session_truth(three)))
    links = [{"name": l["name"], "parent": l["parent"], "mass": l["mass"], "com": l["com"],
              "inertia_com": l["inertia_com"], "joint_center": l["joint_center"]}
             for l in truth["links"]]
    minimal, phi_b, phi_s = _independent_minimal(links)
    assert truth["phi_b"]["names"][:4] == ["base.MS_x", "base.MS_y", "base.MS_z", "base.J_xx"]
    assert truth["phi_s"]["names"][3:5] == ["base.J_xx-J_yy", "base.J_zz-J_yy"]
    assert truth["phi_s"]["names"][-1] == "sum.J_yy" and len(phi_s) == 8 * 3 + 1
    assert np.allclose(truth["phi_b"]["values"], phi_b, atol=1e-12)
    assert np.allclose(truth["phi_s"]["values"], phi_s, atol=1e-12)
    for name, (m, ms, j) in minimal.items():
        got = truth["minimal_parameters"][name]
        assert got["M"] == pytest.approx(m) and np.allclose(got["MS"], ms)
        assert np.allclose(got["J"], j)
    assert minimal["base"][0] == pytest.approx(37.0) and truth["total_mass"] == 37.0


def test_truth_overall_properties_by_hand(three):
    truth = session_truth(three)
    p2 = next(p for p in truth["postures"] if p["name"] == "p2")
    rot = {k: np.array(v) for k, v in p2["rotations"].items()}
    assert np.allclose(rot["mid"], Rotation.from_rotvec([0.3, -0.2, 0.1]).as_matrix())
    # COM: base COM, mid COM at jc_mid + R_mid s_mid, tip at jc_mid + R_mid jc_tip + R_tip s_tip
    links = {l.name: l for l in three.obj.tree.links}
    o_mid = links["mid"].joint_center_parent
    o_tip = o_mid + rot["mid"] @ links["tip"].joint_center_parent
    com = (30 * links["base"].params.com + 5 * (o_mid + rot["mid"] @ links["mid"].params.com)
           + 2 * (o_tip + rot["tip"] @ links["tip"].params.com)) / 37
    assert np.allclose(p2["com"], com, atol=1e-12) and p2["mass"] == pytest.approx(37.0)


def test_rotation_matrices_are_orthonormalised():
    printed = np.array([[0.9999, 0.0071, 0.0099], [-0.0096, 0.9576, 0.2880],
                        [-0.0074, -0.2881, 0.9576]])
    r = orthonormalise(printed)
    assert np.allclose(r @ r.T, np.eye(3), atol=1e-14) and np.isclose(np.linalg.det(r), 1.0)
    assert np.abs(r - printed).max() < 5e-4


def test_rig_file_and_session_load_with_config(three, tmp_path):
    rig_path = tmp_path / "calibration" / "tiny-rig.toml"
    rig_path.parent.mkdir()
    rig_path.write_text(dumps(rig_file_dict(three)))
    rf = load_rig(rig_path)
    assert not rf.calibrated and rf.rig.platform.params is None
    assert np.all(np.isnan(rf.rig.stiffness))
    assert [s.name for s in rf.rig.springs] == ["S1", "S2", "S3"]
    assert set(rf.reference_bodies) == {"blk", "mounted"}
    assert rf.reference_bodies["mounted"].mount_rotation is not None
    assert np.allclose(rf.reference_bodies["blk"].params.pi, three.reference_bodies["blk"].params.pi)
    caps = rf.captures
    assert [c.capture for c in caps] == [rig_path.parent / "tiny-rig" / "empty.csv",
                                        rig_path.parent / "tiny-rig" / "blk.csv"]
    assert caps[1].load == ("blk", "mounted") and caps[1].holdout and caps[1].window == (0.1, 0.4)

    sess_path = tmp_path / "captures" / "three-link" / "session.toml"
    sess_path.parent.mkdir(parents=True)
    sess_path.write_text(dumps(session_dict(three)))
    s = load_session(sess_path)
    assert s.rig_path == sess_path.parent / "../../calibration/tiny-rig.calibrated.toml"
    assert s.total_mass_kg == pytest.approx(37.0)
    assert s.tree.names == ["base", "mid", "tip"]
    assert np.allclose(s.tree.links[2].joint_center_parent, [0.0, 0.02, -0.3])
    assert [p.name for p in s.postures] == ["p1", "p2", "p3"]
    assert s.postures[1].window == (0.1, 0.5)
    assert s.relative_motion.capture == sess_path.parent / "swing.csv"
    assert s.tree.links[1].markers_link["M2"].tolist() == [0.0, 0.03, -0.2]


def test_relative_motion_tilts_the_subtree(three):
    rel = three.relative
    tilt = Rotation.from_rotvec([0.0, 0.3, 0.0]).as_matrix()
    assert np.allclose(rel.start_rotations["mid"], tilt)
    assert np.allclose(rel.start_rotations["tip"], tilt)          # the child turns with it


@pytest.mark.parametrize("old, new, field, message", [
    ("stiffness = 3000.0\nfree_length = 1.0\n[[reference", "stiffness = 3000.0\n[[reference",
     "springs[2]", "missing required field 'free_length'"),
    ("mass = 5.0", "mass = -5.0", "reference_bodies[0].mass", "expected a positive number"),
    ('format = "plain-csv"', 'format = "xls"', "capture.format", "expected one of"),
    ('load = [{ body = "blk"', 'load = [{ body = "blok"', "calibration_captures[1].load[0].body",
     "unknown reference body 'blok'"),
    ("rotation_vectors = { mid", "rotation_vectors = { nope",
     "postures[1].rotation_vectors.nope", "not a non-base link"),
    ("release = { mid", "release = { nope", "relative_motion.release.nope", "not a non-base link"),
    ("R3 = [0.0, -0.1, 0.1]", "B1 = [0.0, -0.1, 0.1]", "markers", "marker name 'B1' is used by"),
    ("[[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]",
     "[[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]", "postures[2].rotations.mid",
     "expected a rotation matrix"),
])
def test_scenario_errors_name_the_field(tmp_path, old, new, field, message):
    assert old in _THREE_LINK
    path = tmp_path / "bad.toml"
    path.write_text(_THREE_LINK.replace(old, new, 1))
    with pytest.raises(ConfigError, match=message) as info:
        load_scenario(path)
    assert info.value.field == field and info.value.path == path


# --------------------------------------------------------------------------- shipped scenarios

def test_paper002_truth_matches_table2():
    """Composite of Table 1's links in Table 2's postures reproduces Table 2 within the
    paper's stated accuracy (COM +-1 mm, inertia +-1 % of the largest principal moment,
    ~0.037 kg m^2; both links were measured separately, so allow 0.05 kg m^2)."""
    sc = load_scenario(SCENARIOS / "two_link_paper002.toml")
    assert sc.obj.total_mass == pytest.approx(80.817)
    table2 = {"posture1": ([0.0002, -0.2562, -0.1265], [2.9221, 1.6368, 2.3958, 0.0066, -0.0017, 0.0203]),
              "posture2": ([-0.0001, -0.2382, -0.1244], [3.6841, 1.6167, 3.1638, 0.0155, 0.0, 0.0723]),
              "posture3": ([0.0332, -0.2468, -0.0942], [3.3737, 2.1047, 3.1348, -0.6960, -0.2345, -0.6275])}
    for p in session_truth(sc)["postures"]:
        com, six = table2[p["name"]]
        i = np.array(p["inertia_com"])
        got = [i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[2, 0], i[1, 2]]
        assert np.allclose(p["com"], com, atol=1.2e-3)
        assert np.allclose(got, six, atol=0.05)
    # Table 3 (identified Phi_s) against our truth: MS within 0.03 kg m (Table 5 errors)
    phi_s = dict(zip(*session_truth(sc)["phi_s"].values()))
    assert phi_s["link0.MS_y"] == pytest.approx(-20.2678, abs=0.05)
    assert phi_s["link1.MS_z"] == pytest.approx(-2.6268, abs=0.03)


@pytest.mark.parametrize("name", ["two_link_paper002", "human_like", "demo"])
def test_shipped_scenarios_have_realistic_modes(name):
    from rigtool.sim import dynamics as dyn
    from rigtool.sim.session_writer import system_for

    sc = load_scenario(SCENARIOS / f"{name}.toml")
    assert 1.15 <= 2 * max(abs(m) for m in sc.rig.platform.markers_platform["P1"][:2]) <= 1.25
    assert sc.platform_params.mass == pytest.approx(25.0)
    for job in capture_jobs(sc):
        if job.kind == "posture":
            freq = dyn.linear_modes(system_for(sc, job))[0]
            assert len(freq) == 6 and 0.3 <= freq.min() and freq.max() <= 4.0, freq


def test_human_like_postures_identify_phi_s():
    """Rank of the overall-properties map over the postures equals len(Phi_s) = 8n + 1."""
    from rigtool.tree import overall_from_phi_b

    sc = load_scenario(SCENARIOS / "human_like.toml")
    tree = sc.obj.tree
    n = len(tree.links)
    assert n >= 4 and any(np.linalg.norm(l.joint_center_parent) > 0 for l in tree.links[1:])
    rows = []
    for p in sc.postures:
        def obs(phi):  # first moment and inertia about the base origin: linear in phi_B
            pi = overall_from_phi_b(tree, p.rotations, phi, 1.0).pi
            return pi[1:]
        z = np.stack([obs(e) for e in np.eye(9 * n)], axis=1)
        rows.append(z)
    assert np.linalg.matrix_rank(np.vstack(rows), tol=1e-9) == 8 * n + 1


# --------------------------------------------------------------------------- the bundle

def _standin_simulator(sc, job):
    """Rigid motion of everything with the platform (no dynamics): fast and exact."""
    base = _standin_traj(int(round(job.settings.duration_s * job.settings.rate_hz)),
                         job.settings.rate_hz)
    r_p, p_p = base.rotation["platform"], base.position_m["platform"]
    rot, pos = {"platform": r_p}, {"platform": p_p}
    if job.kind == "calibration":
        for pl in job.plan.load:
            rot[pl.body] = r_p @ pl.rotation_platform
            pos[pl.body] = p_p + r_p @ pl.position_platform_m
    else:
        org, rr = sc.obj.tree.origins_and_rotations(job.plan.rotations)
        rb, pb = sc.obj.base_rotation_platform, sc.obj.base_position_platform_m
        for i, link in enumerate(sc.obj.tree.links):
            rot[link.name] = r_p @ rb @ rr[i]
            pos[link.name] = p_p + r_p @ (pb + rb @ org[i])
    return SimpleNamespace(time_s=base.time_s, rotation=rot, position_m=pos)


_FORMAT_MODULES = {"plain-csv": "plaincsv", "vicon-csv": "vicon", "motive-csv": "motive",
                   "qualisys-tsv": "qualisys", "c3d": "c3d"}


@pytest.mark.parametrize("fmt", list(_FORMAT_MODULES))
def test_bundle_written_and_read_back(three, tmp_path, fmt):
    module = pytest.importorskip(f"rigtool.mocap.{_FORMAT_MODULES[fmt]}")
    if not hasattr(module, "write"):
        pytest.skip(f"no {fmt} writer yet")
    from rigtool.mocap import detect_format, read_capture

    three = three.with_format(fmt)
    out = tmp_path / "out"
    res = write_bundle(three, out, simulator=_standin_simulator)
    rig = load_rig(out / "calibration" / "tiny-rig.toml")
    sess = load_session(out / "captures" / "three-link" / "session.toml")
    assert all(c.capture.exists() for c in rig.captures)
    assert all(p.capture.exists() for p in sess.postures) and sess.relative_motion.capture.exists()
    truth = json.loads((out / "captures" / "three-link" / "truth.json").read_text())
    assert truth["phi_s"]["names"][-1] == "sum.J_yy"
    rig_truth = json.loads((out / "calibration" / "tiny-rig.truth.json").read_text())
    assert [s["stiffness"] for s in rig_truth["springs"]] == [3000.0] * 3
    assert rig_truth["captures"][1]["holdout"] is True
    # capture files equal the synthesized markers to writing precision
    for job in capture_jobs(three):
        assert detect_format(out / job.relpath) == fmt
        data = read_capture(out / job.relpath)
        exact_names, exact, _ = marker_positions(_standin_simulator(three, job), job.marker_sets)
        assert list(data.names) == exact_names
        assert np.allclose(data.xyz_m, exact, atol=1e-6), job.name
    with pytest.raises(InputError, match="would be overwritten"):
        write_bundle(three, out, simulator=_standin_simulator)
    write_bundle(three, out, simulator=_standin_simulator, force=True)
    assert len(res.files) == len(capture_jobs(three)) + 4


def test_bundle_with_real_dynamics_is_rigid(three, tmp_path):
    """One short capture through rigtool.sim.dynamics: each body's markers stay rigid and the
    platform starts at the offset from equilibrium."""
    pytest.importorskip("rigtool.mocap.plaincsv")
    from rigtool.mocap import read_capture

    sc = replace(three, calibration=three.calibration[:1], postures=three.postures[1:2],
                 relative=None)
    out = tmp_path / "real"
    write_bundle(sc, out)
    data = read_capture(out / "captures" / "three-link" / "p2.csv")
    assert data.n_frames == 25
    x = data.select(["M1", "M3"])
    d = np.linalg.norm(x[:, 0] - x[:, 1], axis=1)
    assert np.allclose(d, np.linalg.norm(np.array([0.03, 0, -0.1]) - [-0.03, 0, -0.25]),
                       atol=1e-6)


def _simulate_cli(argv):
    """Run the simulate command as the CLI does (only this command's parser, so the test does
    not depend on the other sub-commands being importable)."""
    import argparse

    from rigtool.commands import simulate

    parser = argparse.ArgumentParser(prog="rigtool simulate")
    simulate.add_arguments(parser)
    return simulate.run(parser.parse_args(argv))


def test_cli_simulate_refuses_overwrite(three, tmp_path):
    out = tmp_path / "cli"
    (out / "calibration").mkdir(parents=True)
    (out / "calibration" / "tiny-rig.toml").write_text("x = 1\n")
    with pytest.raises(InputError, match="1 file\\(s\\) would be overwritten .*--force"):
        _simulate_cli([str(three.path), "-o", str(out)])
    assert (out / "calibration" / "tiny-rig.toml").read_text() == "x = 1\n"
    with pytest.raises(ConfigError, match="file not found"):
        _simulate_cli([str(tmp_path / "missing.toml"), "-o", str(out)])


def test_extends_merges_and_detects_loops(tmp_path):
    demo = load_scenario(SCENARIOS / "demo.toml")
    base = load_scenario(SCENARIOS / "two_link_paper002.toml")
    assert demo.name == "demo" and demo.seed == base.seed
    assert [p.name for p in demo.calibration] == ["empty", "block-a-centre", "block-b-on-end",
                                                 "both", "holdout"]
    s = demo.postures[0].settings
    assert (s.rate_hz, s.duration_s, s.format) == (100.0, 15.0, "vicon-csv")
    assert s.artefacts.short_gaps == base.postures[0].settings.artefacts.short_gaps == 2
    assert np.allclose(s.offset, base.postures[0].settings.offset)
    assert [h.holdout for h in demo.calibration].count(True) == 1
    (tmp_path / "a.toml").write_text('[scenario]\nextends = "b.toml"\n')
    (tmp_path / "b.toml").write_text('[scenario]\nextends = "a.toml"\n')
    with pytest.raises(ConfigError, match="extend each other in a loop") as info:
        load_scenario(tmp_path / "a.toml")
    assert info.value.field == "scenario.extends"


def test_relative_motion_capture_moves_links_and_keeps_them_rigid(three, tmp_path):
    """Free joints through the real dynamics: the released link swings relative to the base
    (tens of mrad) while every link's markers stay rigid to the integrator's precision."""
    from rigtool.sim.session_writer import simulate_job

    job = next(j for j in capture_jobs(three) if j.kind == "relative")
    traj = simulate_job(three, job)
    _, xyz, owner = marker_positions(traj, job.marker_sets)
    for k in set(owner):
        idx = [i for i, o in enumerate(owner) if o == k]
        d = np.linalg.norm(xyz[:, idx[0]] - xyz[:, idx[1]], axis=1)
        assert np.ptp(d) < 1e-9
    r_rel = np.einsum("tji,tjk->tik", traj.rotation["base"], traj.rotation["mid"])
    assert np.allclose(r_rel[0], three.relative.start_rotations["mid"], atol=1e-9)
    angle = Rotation.from_matrix(r_rel[0].T @ r_rel[-1]).magnitude()
    assert angle > 0.05


def _numbers_and_text(text: str) -> tuple[list[str], np.ndarray]:
    """A file's text split into its words between numbers and its numbers."""
    parts = re.split(r"(-?\d+\.?\d*(?:[eE][-+]?\d+)?)", text)
    return parts[0::2], np.array([float(v) for v in parts[1::2]])


@pytest.mark.slow
def test_the_bundled_demo_is_rebuilt_the_same(tmp_path):
    """tools/make_demo.sh's command writes the bundled demo (captures, rig file, manifest and
    both truth files): the demo is what its scenario says. The same to the last printed
    digit: the text between the numbers byte for byte, every number within 1e-12 of it
    (relative, and 1e-14 absolute for a small difference of large terms) or one unit of a CSV's last printed digit (1e-6 mm), which a LAPACK or numpy
    other than the one that wrote the demo moves by round-off (an eigenvalue's last bits, a
    coordinate rounded the other way)."""
    from rigtool.cli import main

    assert main(["simulate", str(ROOT / "scenarios" / "demo.toml"), "-o", str(tmp_path),
                 "--force"]) == 0
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert written
    for rel in written:
        new, old = (tmp_path / rel).read_bytes(), (ROOT / rel).read_bytes()
        if new == old:
            continue
        words_new, num_new = _numbers_and_text(new.decode())
        words_old, num_old = _numbers_and_text(old.decode())
        assert words_new == words_old, f"{rel} differs from the bundled demo"
        unit = 1.5e-6 if rel.suffix == ".csv" else 0.0      # one unit of 1e-6, as stored
        assert num_new.shape == num_old.shape and np.all(
            np.abs(num_new - num_old) <= np.maximum(1e-12 * np.abs(num_old) + 1e-14, unit)), \
            f"{rel} differs from the bundled demo beyond round-off"
