"""The independent test bed (benchmarks/testbed, MuJoCo) checked against closed forms and
against rigtool's own simulator on the rigid demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
from scipy.linalg import eigh
from scipy.spatial.transform import Rotation

from benchmarks.testbed import simulate as sim
from benchmarks.testbed.demo import demo_study
from benchmarks.testbed.model import mjcf
from benchmarks.testbed.truth import phi_named, posture_overall
from benchmarks.testbed.writers import read_vicon_csv

ROOT = Path(__file__).resolve().parents[1]


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def _loaded_body(study, posture):
    """The platform and the subject locked in ``posture`` as one rigid body: mass, COM and
    inertia about the COM in the platform frame (SPEC definitions, no MuJoCo)."""
    plat, sub = study.rig.platform, study.subject
    ov = posture_overall(sub, posture.rotations)
    rb, pb = sub.base_rotation_platform, sub.base_position_platform_m
    c_sub = pb + rb @ ov["com"]
    i_sub = rb @ ov["inertia_com"] @ rb.T
    m = plat.mass_kg + ov["mass"]
    c = (plat.mass_kg * plat.com_m + ov["mass"] * c_sub) / m
    i = np.zeros((3, 3))
    for mk, ck, ik in ((plat.mass_kg, plat.com_m, plat.inertia_com_kg_m2),
                       (ov["mass"], c_sub, i_sub)):
        d = ck - c
        i += ik + mk * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, i


def _closed_form_modes(study, m, c_plat, i_plat, p0, r0):
    """Natural frequencies (Hz) of the rigid loaded platform on its springs, linearised
    about the pose (p0, r0): K the Hessian of the potential (springs + gravity, written
    here), M the rigid-body mass matrix, both in (origin displacement, small lab rotation)."""
    g = study.rig.gravity_lab_m_s2

    def potential(x):
        rot = Rotation.from_rotvec(x[3:]).as_matrix() @ r0
        p = p0 + x[:3]
        v = -m * g @ (p + rot @ c_plat)
        for s in study.rig.springs:
            length = np.linalg.norm(s.anchor_lab_m - (p + rot @ s.attachment_platform_m))
            v += 0.5 * s.stiffness_n_m * (length - s.free_length_m) ** 2
        return v

    # Central second differences, h = 1e-4 (m, rad): truncation ~ h^2 V''''/12 relative to
    # V'' ~ (h / L)^2 = 1e-8 for the ~1 m spring lengths; round-off ~ eps V / h^2 ~ 1e-4 of
    # the smallest (pendulum, m g / L ~ 1e3 N/m) stiffness: 1e-8 of the frequencies.
    h = 1e-4
    k = np.zeros((6, 6))
    e = np.eye(6) * h
    for a in range(6):
        for b in range(6):
            k[a, b] = (potential(e[a] + e[b]) - potential(e[a] - e[b])
                       - potential(-e[a] + e[b]) + potential(-e[a] - e[b])) / (4 * h * h)
    grad = np.array([(potential(e[a]) - potential(-e[a])) / (2 * h) for a in range(6)])
    r_c = r0 @ c_plat
    i_lab = r0 @ i_plat @ r0.T
    mm = np.zeros((6, 6))
    mm[:3, :3] = m * np.eye(3)
    mm[:3, 3:] = -m * _skew(r_c)
    mm[3:, :3] = m * _skew(r_c)
    mm[3:, 3:] = i_lab + m * _skew(r_c).T @ _skew(r_c)
    w2 = eigh(0.5 * (k + k.T), mm, eigvals_only=True)
    return np.sqrt(w2) / (2 * np.pi), grad


def _dmd_frequencies(model, traj, q_eq, rate_hz):
    """Frequencies (Hz) of the linear map that advances the sampled state one frame (exact
    for a linear system: dynamic mode decomposition of [dq, qvel])."""
    dq = np.empty((len(traj.qpos), model.nv))
    for k, q in enumerate(traj.qpos):
        mujoco.mj_differentiatePos(model, dq[k], 1.0, q_eq, q)
    x = np.hstack([dq, traj.qvel]).T
    a = x[:, 1:] @ np.linalg.pinv(x[:, :-1])
    lam = np.linalg.eigvals(a)
    f = np.angle(lam) * rate_hz / (2 * np.pi)
    return np.sort(f[f > 0])


@pytest.fixture(scope="module")
def study():
    return demo_study()


def test_equilibrium_and_modes_match_closed_form(study):
    posture = study.postures[0]
    xml = mjcf(study.rig, subject=study.subject, rotations=posture.rotations,
               spring_damping=False)
    model = sim.compile_model(xml)
    q_eq = sim.equilibrium(model)
    p0, r0 = sim.platform_pose(q_eq)
    m, c, i = _loaded_body(study, posture)
    f_closed, grad = _closed_form_modes(study, m, c, i, p0, r0)
    # Static balance of the closed-form potential at MuJoCo's equilibrium: its gradient is
    # the residual force / torque (N, N m); the central-difference error is ~h^2 V''' ~ 1e-5.
    assert np.max(np.abs(grad)) < 1e-3, grad
    # A small push (10 um, 10 urad) excites every mode; damping off. The map's frequencies
    # differ from the linearisation by the nonlinearity, relative ~ amplitude / L = 1e-5,
    # and by RK4's phase error (omega h)^4 / 120 < 1e-9: 1e-4 relative is the tolerance.
    rng = np.random.default_rng(3)
    q0, v0 = sim.perturbed_state(model, q_eq, 1e-5 * rng.standard_normal(6),
                                 1e-5 * rng.standard_normal(6))
    traj = sim.simulate(model, q0, v0, rate_hz=120.0, duration_s=20.0)
    f_sim = _dmd_frequencies(model, traj, q_eq, 120.0)
    assert f_sim.size == 6
    np.testing.assert_allclose(f_sim, f_closed, rtol=1e-4)
    assert 0.2 < f_closed[0] < f_closed[-1] < 5.0         # the rig's band (0.36-3.8 Hz)


@pytest.mark.parametrize("released", [False, True])
def test_energy_conserved_without_damping(study, released):
    posture = study.postures[0]
    if released:
        rot = {"link1": Rotation.from_rotvec([0.03, 0.26, 0.0]).as_matrix()
               @ posture.rotations["link1"]}
        xml = mjcf(study.rig, subject=study.subject, rotations=rot,
                   released={"link1": 0.0}, spring_damping=False)
    else:
        xml = mjcf(study.rig, subject=study.subject, rotations=posture.rotations,
                   spring_damping=False)
    model = sim.compile_model(xml)
    q_eq = sim.equilibrium(model)
    q0, v0 = sim.perturbed_state(model, q_eq, study.capture.offset, study.capture.velocity)
    traj = sim.simulate(model, q0, v0, rate_hz=120.0, duration_s=10.0)
    e = sim.energy(model, traj.qpos, traj.qvel)
    e_rest = sim.energy(model, q_eq[None], np.zeros((1, model.nv)))[0]
    swing = e[0] - e_rest                                   # the motion's energy, J
    assert swing > 0.1
    # RK4 on an oscillation of frequency f loses (omega h)^6 / 72 of its energy per step;
    # at 1.2 kHz and f < 4 Hz that is < 1e-11 per step, < 1e-6 over 12,000 steps: the
    # tolerance is 1e-6 of the motion's energy.
    assert np.max(np.abs(e - e[0])) < 1e-6 * swing


def test_truth_definitions(study):
    """Phi_s, Phi_B and the postures' overall properties of truth.py against the demo's
    published values (paper 002, Table 1 and 2 as rigtool's demo truth holds them)."""
    ref = json.loads((ROOT / "captures" / "two-link" / "truth.json").read_text())
    phi_s, phi_b = phi_named(study.subject)
    assert phi_s["names"] == ref["phi_s"]["names"]
    assert phi_b["names"] == ref["phi_b"]["names"]
    np.testing.assert_allclose(phi_s["values"], ref["phi_s"]["values"], atol=1e-12)
    np.testing.assert_allclose(phi_b["values"], ref["phi_b"]["values"], atol=1e-12)
    for p, rp in zip(study.postures, ref["postures"]):
        ov = posture_overall(study.subject, p.rotations)
        np.testing.assert_allclose(ov["com"], rp["com"], atol=1e-12)
        np.testing.assert_allclose(ov["inertia_com"], rp["inertia_com"], atol=1e-12)


SCENARIO = """
[scenario]
name = "testbed-check"
extends = "{demo}"
[capture]
noise_sigma_mm = 0.0
duration_s = 4.0
[capture.artefacts]
short_gaps = 0
[[calibration_captures]]
name = "empty"
load = []
"""


def test_marker_trajectories_match_rigtool_simulator(study, tmp_path):
    """rigtool's simulator (the `simulate` command, noise off) and the test bed, given the
    same rig, object and initial state (equilibrium plus the scenario's push, read from
    rigtool's truth.json): every marker of every posture and of the swing."""
    scen = tmp_path / "check.toml"
    scen.write_text(SCENARIO.format(demo=(ROOT / "scenarios" / "demo.toml").as_posix()))
    out = tmp_path / "sim"
    subprocess.run([sys.executable, "-m", "rigtool.cli", "simulate", str(scen), "-o", str(out),
                    "--force"], check=True, capture_output=True, cwd=ROOT)
    sess = out / "captures" / "two-link"
    truth = json.loads((sess / "truth.json").read_text())
    caps = {c["name"]: c for c in truth["captures"]}
    worst = 0.0
    rel = truth["relative_motion"]
    cases = [(p.name, p.rotations, None) for p in study.postures]
    cases.append((rel["name"], {"link1": np.array(rel["start_rotations"]["link1"])},
                  {"link1": rel["joint_damping"]}))
    locked = mjcf(study.rig, subject=study.subject, rotations=study.postures[0].rotations)
    for name, rotations, released in cases:
        cap = caps[name]
        xml = mjcf(study.rig, subject=study.subject, rotations=rotations, released=released)
        model = sim.compile_model(xml)
        if released:                     # equilibrium with the rest posture locked
            q_eq = np.array(model.qpos0, float)
            q_eq[:7] = sim.equilibrium(sim.compile_model(locked))[:7]
        else:
            q_eq = sim.equilibrium(model)
            p, rot = sim.platform_pose(q_eq)
            eq = cap["equilibrium"]
            # the two statics agree to round-off (both solve to < 1e-9 N)
            assert np.max(np.abs(p - eq["position"])) < 1e-9
            assert np.max(np.abs(rot - np.array(eq["rotation"]))) < 1e-9
        q0, v0 = sim.perturbed_state(model, q_eq, np.array(cap["offset"]),
                                     np.array(cap["velocity"]))
        traj = sim.simulate(model, q0, v0, rate_hz=cap["rate_hz"], duration_s=cap["duration_s"])
        _, names, xyz = read_vicon_csv(sess / cap["capture"])
        mine = {n.split(":")[1]: k for k, n in enumerate(traj.names)}
        d = xyz - traj.markers_lab_m[:, [mine[n.split(":")[1]] for n in names]]
        worst = max(worst, float(np.max(np.abs(d))))
    # The file rounds to 1e-6 mm (5e-10 m); RK4 at 10 steps a frame leaves < 1e-5 of the
    # ~20 mm motion (2e-7 m, see benchmarks/testbed/simulate.py): 2e-7 m is the tolerance,
    # three orders below the 0.1 mm marker noise of a capture.
    assert worst < 2e-7, worst
