"""The test bed's living subject and its file output: the soft tissue and the back rest
where the welded body lies, energy is conserved with their damping off, skin drift has the
law it is drawn from, the wall markers ride the breath, and a C3D capture reads back as
its Vicon CSV twin does."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from benchmarks.testbed import simulate as sim
from benchmarks.testbed.demo import demo_study
from benchmarks.testbed.living import (with_back, with_breathing, with_tissue,
                                       with_wall_markers)
from benchmarks.testbed.model import mjcf
from benchmarks.testbed.study import (_carried, rest_at_welded_place, skin_drift,
                                      write_manifest)
from benchmarks.testbed.writers import write_markers
from rigtool.mocap import read_capture


def _released(study, posture):
    """The locked model's equilibrium carried into the living model, its springs at rest
    at the welded place: (living model, its state at rest)."""
    locked = sim.compile_model(mjcf(study.rig, subject=study.truth_subject,
                                    rotations=posture.rotations, spring_damping=False))
    q = sim.equilibrium(locked)
    model = sim.compile_model(mjcf(study.rig, subject=study.subject,
                                   rotations=posture.rotations, internal=study.internal,
                                   back=study.back, spring_damping=False))
    q = _carried(locked, q, model)
    rest_at_welded_place(model, q)
    return model, q


@pytest.fixture(scope="module")
def soft():
    """The demo body with 20 % of each link's mass wobbling at 8 Hz and a back of
    5 / 9 / 7 Hz, all undamped."""
    return with_back(with_tissue(demo_study(), damping_ratio=0.0), damping_ratio=0.0)


def test_tissue_and_back_rest_at_the_welded_place(soft):
    """At rest from the welded body's equilibrium nothing moves: every joint spring was set
    to balance the forces on it there (round-off only, ~1e-16 m over 3 s)."""
    model, q = _released(soft, soft.postures[0])
    assert model.nv == 6 + 6 + 2 * 3                   # platform, back, tissue of two links
    tr = sim.simulate(model, q, np.zeros(model.nv), rate_hz=100.0, duration_s=3.0)
    assert np.max(np.abs(tr.markers_lab_m - tr.markers_lab_m[0])) < 1e-12


def test_energy_conserved_with_soft_tissue_and_back(soft):
    """Damping off, the living body's energy (rig springs, gravity, joint springs, kinetic)
    is conserved to RK4's error: the highest mode (25.8 Hz) at 4.8 kHz has omega h = 0.034,
    an energy loss of (omega h)^6 / 72 = 2e-11 per step, < 1e-6 over 24,000 steps."""
    model, q = _released(soft, soft.postures[0])
    c = soft.capture
    q0, v0 = sim.perturbed_state(model, q, c.offset, c.velocity)
    assert sim.modes_hz(model, q).max() < 27.0
    tr = sim.simulate(model, q0, v0, rate_hz=120.0, duration_s=5.0, substeps=40)
    e = sim.energy(model, tr.qpos, tr.qvel)
    swing = e[0] - sim.energy(model, q[None], np.zeros((1, model.nv)))[0]
    assert swing > 0.1
    assert np.max(np.abs(e - e[0])) < 1e-6 * swing


def test_tissue_frequency_matches_its_spring():
    """A wobbling mass on a link much heavier than it and than the rig's load: its three
    modes at f sqrt(1 + m / M) of the drawn frequency, the rig's modes far below (1e-3
    relative: the coupling to the rig's modes, (f_rig / f)^2 m / M, is below it)."""
    st = demo_study()
    st = with_tissue(st, fraction=0.002, frequency_hz=11.0, damping_ratio=0.0,
                     links=["link0"])
    model, q = _released(st, st.postures[0])
    f = sim.modes_hz(model, q)
    high = f[f > 6.0]
    assert high.size == 3
    np.testing.assert_allclose(high, 11.0, rtol=1e-3)


def test_skin_drift_has_its_law():
    """Per marker and axis a stationary Ornstein-Uhlenbeck process: standard deviation
    sigma from the first frame on, correlation exp(-lag / tau). 600 series of 100 time
    constants: the estimates' relative standard error is ~1 %; the tolerances are 5 %."""
    rng = np.random.default_rng(0)
    names = [f"s:M{k}" for k in range(200)] + ["rig:P1"]
    xyz = np.zeros((20000, 201, 3))
    out = skin_drift(names, xyz, "s:", 1e-3, 2.0, 100.0, rng)
    assert np.all(out[:, -1] == 0.0)                     # the platform's marker untouched
    d = out[:, :-1].reshape(20000, -1)
    assert abs(d[0].std() / 1e-3 - 1) < 0.1             # stationary from the start
    assert abs(d.std() / 1e-3 - 1) < 0.05
    lag = 200                                            # 2 s = tau
    rho = np.mean(d[lag:] * d[:-lag]) / np.mean(d * d)
    assert abs(rho - np.exp(-1.0)) < 0.05


def test_wall_markers_ride_the_breath(tmp_path):
    """The wall markers are sites of bodies servoed to a gain of the breath's path along its
    axis: in the trunk's frame each moves by gain x path (40 Hz servo: lag 2 zeta / omega =
    8 ms of a 0.2 Hz breath, < 1 % of its motion) and the manifest lists them as breathing
    markers at their mean place."""
    st = with_breathing(demo_study(), np.random.default_rng(1), mass_kg=4.0,
                        peak_to_peak_m=0.016, variability=0.0)
    st = with_wall_markers(st, {"CH1": ((0.05, -0.45, 0.06), 0.2)})
    model, q = _released(st, st.postures[0])
    wall = next(k for k, im in enumerate(st.internal) if im["kind"] == "wall")
    breath = st.internal[0]["path"]
    for k, im in enumerate(st.internal):
        q[model.joint(f"internal{k}").qposadr[0]] = im["path"](0.0)
    tr = sim.simulate(model, q, np.zeros(model.nv), rate_hz=100.0, duration_s=10.0,
                      control=lambda t: [im["path"](t) for im in st.internal])
    x = tr.qpos[:, model.joint(f"internal{wall}").qposadr[0]]
    want = np.array([0.2 * breath(t) for t in tr.time_s])
    assert np.ptp(want) > 2.5e-3
    assert np.max(np.abs(x - want)[100:]) < 0.01 * np.ptp(want)
    write_manifest(st, tmp_path / "session.toml", "rig.toml")
    trunk = tomllib.loads((tmp_path / "session.toml").read_text())["links"][0]
    assert trunk["breathing_markers"] == ["CH1"]
    assert trunk["markers"]["CH1"] == [0.05, -0.45, 0.06]
    assert set(trunk["markers"]) >= {"T1", "T2", "T3", "T4"}      # the rigid ones stay


def test_c3d_capture_reads_as_its_csv_twin(tmp_path):
    """The same motion (with a gap) written as Vicon Nexus CSV and as C3D reads back through
    rigtool's readers to the same labels and positions: the CSV keeps 1e-6 mm, the C3D's
    float32 millimetres ~1e-7 of 2 m, so 1e-6 m is the tolerance; gaps stay gaps."""
    rng = np.random.default_rng(2)
    names = ["rig:P1", "two-link:T1", "two-link:T2"]
    xyz = np.array([0.5, -0.3, 1.2]) + 0.01 * rng.standard_normal((300, 3, 3))
    xyz[40:55, 1] = np.nan
    a = read_capture(tmp_path / write_markers(tmp_path / "cap", "csv", 100.0, names, xyz))
    b = read_capture(tmp_path / write_markers(tmp_path / "cap", "c3d", 100.0, names, xyz))
    assert (a.format, b.format) == ("vicon-csv", "c3d")
    assert list(a.names) == list(b.names) == names
    assert a.rate_hz == b.rate_hz == 100.0
    assert np.array_equal(np.isnan(a.xyz_m), np.isnan(xyz))
    assert np.array_equal(np.isnan(b.xyz_m), np.isnan(xyz))
    np.testing.assert_allclose(b.xyz_m, xyz, atol=1e-6)
    np.testing.assert_allclose(a.xyz_m, xyz, atol=1e-6)
