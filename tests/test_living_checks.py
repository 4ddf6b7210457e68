"""The living body's checks: each names its cause on a capture that has it, and none speaks
on the rigid demo.

Breathing, skin markers and a compliant support are put on the bundled demo's first posture
(fitted against the simulator's true rig) by moving markers as each effect does: chest
markers following a 15/min breath, every link marker drifting 0.7 mm on its bone, the base
link's markers deflecting ``-f / (2 pi 5 Hz)^2`` with the platform's specific force. The
apparent mass by band is checked on synthetic signals with a known mass per band; the
scenario keys' validation on small files.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.signal import savgol_filter

from rigtool.errors import ConfigError
from rigtool.kinematics.living_signs import apparent_mass_by_band
from rigtool.kinematics.pose import body_trajectory
from rigtool.pipeline.session import fit_one_posture
from rigtool.report.checks_living import (breathing_check, living_checks, skin_check,
                                          soft_tissue_check, support_check)
from rigtool.sim.scenario import load_scenario
from rigtool.sim.true_calibration import write_true_calibration

ROOT = Path(__file__).resolve().parents[1]
MASS = 80.817


def _outcome(posture1, data, support: str = "auto"):
    from dataclasses import replace
    session, rigfile, tree, markers, _ = posture1
    session = replace(session, support=support)
    ref = session.postures[0]
    p = fit_one_posture(session, rigfile, tree, markers, ref.capture, name=ref.name,
                        window=ref.window, units=ref.units, total_mass_kg=MASS,
                        settings=session.filter, method="equation-error", data=data)
    return SimpleNamespace(postures=[p], tree=tree, total_mass_kg=MASS, rigfile=rigfile)


def _index(data, suffix):
    return next(i for i, n in enumerate(data.names) if n.split(":")[-1] == suffix)


def _with(data, xyz):
    from dataclasses import replace
    return replace(data, xyz_m=xyz)


def test_rigid_demo_shows_no_living_sign(posture1):
    out = _outcome(posture1, posture1[4])
    assert living_checks(out) == []
    assert out.postures[0].base_pose_wander_cov is None      # white frames
    assert soft_tissue_check(out).level == "ok"      # one mass in every band
    assert support_check(out).level == "ok"


def test_chest_markers_following_a_breath_are_named(posture1):
    data = posture1[4]
    xyz = data.xyz_m.copy()
    t = data.time_s
    phase = 0.25 * t + 0.1 * np.sin(2 * np.pi * 0.03 * t)          # 15/min, wandering
    breath = 0.5 * (1 - np.cos(2 * np.pi * phase)) ** 1.5          # asymmetric: harmonics
    for name, depth in (("T1", 0.006), ("T2", 0.008)):
        xyz[:, _index(data, name), 2] += depth * breath
    out = _outcome(posture1, _with(data, xyz))
    check = breathing_check(out)
    assert check.level == "problem"
    named = {i["marker"] for i in check.items}
    # T2 moves most; a moving marker drags its link's fitted pose, so its neighbours share
    # the rhythm: the link's markers moving a third as much are named with it
    assert "T2" in named and named <= {"T1", "T2", "T3", "T4"}
    assert {i["link"] for i in check.items} == {"link0"}
    assert all(13 < i["rate_per_min"] < 17 for i in check.items)
    assert "breath" in check.meaning and "end of a quiet exhale" in check.action
    assert skin_check(out).level == "ok"           # the chest markers are breathing's


def test_skin_markers_drifting_on_bone_are_named(posture1):
    data = posture1[4]
    rng = np.random.default_rng(5)
    xyz = data.xyz_m.copy()
    t = data.time_s
    for k, name in enumerate(data.names):
        if name.split(":")[-1][0] in "TA":                         # link markers
            f = rng.uniform(0.04, 0.25, (5, 3))           # slow, irregular: 5 sines each
            xyz[:, k] += 0.0006 * np.sin(2 * np.pi * f * t[:, None, None]
                                         + rng.uniform(0, 6, (5, 3))).sum(1)
    out = _outcome(posture1, _with(data, xyz))
    check = skin_check(out)
    assert check.level == "caution"
    assert {i["link"] for i in check.items} == {"link0", "link1"}
    assert breathing_check(out).level == "ok"
    # the marker noise stays the platform's (0.1 mm), not the skin's
    assert abs(out.postures[0].marker_noise_mm - 0.1) < 0.01
    assert out.postures[0].marker_noise_body_mm["link0"] > 0.3
    # the base link's mean place carries its markers' wander, and the check says so
    assert out.postures[0].base_pose_wander_cov is not None
    assert "off the bone" in check.meaning


@pytest.mark.slow
def test_base_link_deflecting_with_the_platform_is_a_compliant_support(posture1):
    session, rigfile, tree, markers, data = posture1
    plat = body_trajectory(data, rigfile.rig.platform.markers_platform)
    rate = data.rate_hz
    base_origin = np.array([0.0, 0.30, 0.45])        # the base link's frame on the platform
    carried = plat.position_m + np.einsum("tij,j->ti", plat.rotation, base_origin)
    acc = savgol_filter(carried, 15, 3, deriv=2, delta=1 / rate, axis=0)
    spec = np.einsum("tji,tj->ti", plat.rotation, acc - rigfile.rig.gravity_lab)
    spec -= spec.mean(0)
    omega = 2 * np.pi * 5.0
    shift = np.einsum("tij,tj->ti", plat.rotation, -spec / omega ** 2)
    xyz = data.xyz_m.copy()
    for name in markers["link0"]:
        xyz[:, _index(data, name)] += shift
    out = _outcome(posture1, _with(data, xyz), support="rigid")
    check = support_check(out)
    assert check.level == "problem"
    freqs = [i["frequency_hz"] for i in check.items]
    assert all(4.0 < f < 6.0 for f in freqs), freqs
    assert 'support = "measured"' in check.action
    # by default the posture fit measures that motion through, and the check says so
    out = _outcome(posture1, _with(data, xyz))
    assert out.postures[0].support["model"] == "measured motion on the platform"
    check = support_check(out)
    assert check.level == "caution" and "took it as the body's own" in check.finding
    assert "output-error refinement" in check.meaning
    # no tissue element was fitted beside it: the tissue it could not rule out is held in
    # the standard errors, and the caution says so
    assert "no tissue element was told from it" in check.meaning
    assert out.postures[0].unseen_tissue and out.postures[0].shared_errors
    assert "held in their standard errors" in check.meaning
    # the support's measured motion carries the markers' noise into the upper band's
    # acceleration (its rotation through the body's lever): the band masses' standard errors
    # hold it, and a support without tissue is not named as tissue
    upper = out.postures[0].living_signs["apparent_mass"][-1]
    assert upper["std_probes_kg"] > 0
    assert soft_tissue_check(out).level == "ok"


def test_support_measured_because_of_a_tissue_element_at_its_limit(posture1):
    """A posture whose tissue element holds half the body, its support not measured through,
    sends every posture back with the support measured (the back is the body's); a Support
    caution then says why, though the base link rides too little for the check's own test.
    Not with the support left rigid by the manifest, nor once it was measured."""
    from dataclasses import replace
    from rigtool.pipeline.session import SUPPORT_FROM_TISSUE_LIMIT, support_behind_tissue

    session = posture1[0]
    limit = SimpleNamespace(soft_tissue={"at_mass_limit": True}, support={})
    below = SimpleNamespace(soft_tissue={"at_mass_limit": False}, support={})
    measured = SimpleNamespace(soft_tissue={"at_mass_limit": True}, support={"model": "m"})
    assert support_behind_tissue(replace(session, support="auto"), [below, limit])
    assert not support_behind_tissue(replace(session, support="auto"), [below, measured])
    assert not support_behind_tissue(replace(session, support="rigid"), [limit])
    out = _outcome(posture1, posture1[4], support="measured")
    assert support_check(out).level == "ok"        # measured, but the demo does not ride
    out.postures[0].support["measured_because"] = SUPPORT_FROM_TISSUE_LIMIT
    check = support_check(out)
    assert check.level == "caution" and SUPPORT_FROM_TISSUE_LIMIT in check.finding
    assert "firm back" in check.meaning


def _two_band_motion(t: np.ndarray, rng, high_amp_m: float):
    """COM motion and the force that moves it: one mass per band (0.4 Hz: 100 kg, 3.5 Hz:
    112 kg), each a decaying sinusoid per axis."""
    com = np.zeros((t.size, 3))
    force = np.zeros((t.size, 3))
    for f, m, amp in ((0.4, 100.0, 0.01), (3.5, 112.0, high_amp_m)):
        w = 2 * np.pi * f
        beta, phase = 0.05, rng.uniform(0, 6, 3)
        decay = np.exp(-beta * t)[:, None]
        arg = w * t[:, None] + phase
        com += amp * decay * np.sin(arg)
        force += m * amp * decay * ((beta ** 2 - w ** 2) * np.sin(arg)
                                    - 2 * beta * w * np.cos(arg))
    return com, force


def test_band_masses_carry_the_marker_noise_through_their_regressor(posture1):
    """Each band's mass is measured again on noisy copies of the capture: the spread joins
    the residual's standard error. The upper band's acceleration is the pose twice
    differentiated at up to 8 Hz, the lower band's below 1 Hz: the noise moves the upper
    band's mass many times further (the second difference's gain goes as the fourth power
    of the frequency), and with no noise nothing moves."""
    from rigtool.pipeline.posture import living_signs
    session, rigfile, tree, markers, data = posture1
    p = _outcome(posture1, data).postures[0]
    lower, upper = p.living_signs["apparent_mass"]
    for b in (lower, upper):
        assert b["std_kg"] == pytest.approx(np.hypot(b["std_residual_kg"],
                                                     b["std_probes_kg"]), rel=1e-12)
    assert upper["std_probes_kg"] > 5 * lower["std_probes_kg"] > 0
    plat = body_trajectory(data, rigfile.rig.platform.markers_platform)
    trajs = {l.name: body_trajectory(data, markers[l.name]) for l in tree.links}
    still = living_signs(rigfile.rig, data, plat, trajs, tree, p.result.com, p.result.mass,
                         p.base_rotation_platform, p.base_position_platform,
                         p.living_signs["base_on_platform"], marker_sigma_m=1e-12)
    assert all(b["std_probes_kg"] < 1e-6 for b in still["apparent_mass"])


def test_apparent_mass_by_band_recovers_each_band_mass():
    rate = 100.0
    t = np.arange(0, 20, 1 / rate)
    com, force = _two_band_motion(t, np.random.default_rng(1), 0.001)
    force += 100.0 * 9.81 * np.array([0, 0, 1])
    bands = apparent_mass_by_band(force, com, np.ones(t.size, bool), np.array([0, 0, -9.81]),
                                  rate, [(0.15, 1.0), (1.0, 8.0)])
    assert abs(bands[0]["mass_kg"] - 100.0) < 1.0
    assert abs(bands[1]["mass_kg"] - 112.0) < 1.5
    posture = SimpleNamespace(result=SimpleNamespace(name="p1"), living_signs={
        "apparent_mass": [dict(b, object_mass_kg=b["mass_kg"] - 25.0) for b in bands],
        "rhythm": {}, "base_on_platform": {"rms_mm": np.zeros(3), "r2": np.zeros(3),
                                           "frequency_hz": np.full(3, np.nan)},
        "rate_hz": rate}, marker_scatter_mm={}, marker_noise_mm=0.1)
    out = SimpleNamespace(postures=[posture], tree=None, total_mass_kg=75.0)
    check = soft_tissue_check(out)
    assert check.level == "problem" and "mode to mode" in check.finding
    assert "soft_tissue" in check.action
    # measured through: the finding names the element and the check is a caution
    posture.soft_tissue = {"mass_kg": 9.0, "mass_std_kg": 1.5, "frequency_hz": 5.2}
    check = soft_tissue_check(out)
    assert check.level == "caution" and "9.0 ± 1.5 kg at 5.2 Hz (p1)" in check.finding
    assert "mode to mode" in check.finding


def _scenario(tmp_path, text):
    base = tmp_path / "base.toml"
    shutil.copy(ROOT / "scenarios" / "living" / "rigid.toml", tmp_path / "rigid.toml")
    shutil.copy(ROOT / "scenarios" / "two_link_paper002.toml", tmp_path.parent / "two_link_paper002.toml")
    base.write_text('[scenario]\nextends = "rigid.toml"\n' + text)
    return base


@pytest.mark.parametrize("text, field", [
    ("[living.breathing]\nrate_per_min = 90.0\n", "living.breathing.rate_per_min"),
    ("[living.breathing]\ndepht_mm = 10.0\n", "living.breathing"),
    ("[[living.wobbling]]\nlink = \"arm\"\n", "living.wobbling[0].link"),
    ("[living.support]\nshear_hz = -1.0\n", "living.support.shear_hz"),
    ("[living.support]\n", "living.support"),                   # with a swing capture
    ("[living.skin]\nlinks = [\"nope\"]\n", "living.skin.links"),
])
def test_living_keys_are_validated(tmp_path, text, field):
    with pytest.raises(ConfigError) as err:
        load_scenario(_scenario(tmp_path, text))
    assert err.value.field == field


def test_living_effects_add_up_through_extends_and_drop_leaves_a_table_out():
    sc = load_scenario(ROOT / "scenarios" / "living" / "all.toml")
    liv = sc.living
    assert liv.breathing.rate_per_min == 14.0 and liv.cardiac.force_n == 2.0
    assert len(liv.wobbling) == 2 and liv.support is not None and liv.skin is not None
    assert sc.relative is None and sc.calibration == ()
    assert {"CH1", "AB1"} <= set(sc.obj.tree.links[0].markers_link)


def test_breath_held_in_the_movement_capture_only():
    """``hold_movement``: the relative-motion capture's system holds the breath, the
    postures' breathe."""
    from rigtool.sim.session_writer import capture_jobs, system_for
    sc = load_scenario(ROOT / "scenarios" / "living" / "breathhold_movement.toml")
    assert sc.living.breathing.hold_movement and not sc.living.breathing.hold
    held = {job.kind: system_for(sc, job).living.breathing.hold for job in capture_jobs(sc)
            if job.kind in ("posture", "relative")}
    assert held == {"posture": False, "relative": True}


def test_rig_modes_against_breathing_and_tissue():
    from rigtool.protocol import apparent_mass_factor, clear_breathing_rates, mode_conflicts
    modes = [0.36, 0.45, 1.4, 1.55, 2.0, 3.77]
    found = mode_conflicts(modes)
    breathing = [c for c in found if c.effect == "breathing"]
    assert {round(c.mode_hz, 2) for c in breathing} == {0.36, 0.45}
    tissue = [c for c in found if c.effect == "soft tissue"]
    assert tissue and tissue[0].mode_hz == 3.77
    # the closed form: resonance at r = 1 with zeta 0.3 is |1 + 0.6i| / 0.6
    assert abs(abs(apparent_mass_factor(1.0, 0.3)) - abs(1 + 0.6j) / 0.6) < 1e-12
    # a paced rate the benchmark uses keeps its three harmonics clear of the modes
    assert any(a <= 17 <= b for a, b in clear_breathing_rates(modes))
    # a rig with only slow pendulum modes and low highest mode is clear of tissue
    assert not [c for c in mode_conflicts([0.12, 0.13, 0.9, 1.0, 1.1, 1.2])
                if c.effect in ("soft tissue", "support")]


def test_modes_command_names_the_conflicts(tmp_path, capsys):
    from rigtool.cli import main
    rig = write_true_calibration(ROOT / "calibration" / "paper-rig.toml",
                                 ROOT / "calibration" / "paper-rig.truth.json",
                                 tmp_path / "paper-rig.calibrated.toml")
    assert main(["modes", str(rig), "--mass", "80.8", "--com", "0", "-0.01", "0.33"]) == 0
    out = capsys.readouterr().out
    assert "modes with 80.8 kg" in out and "breathing" in out and "harmonic 2" in out
    # each advice once, after the conflicts it answers, however many modes share it
    advice = [line for line in out.splitlines() if line.startswith("  what to do: ")]
    assert advice and len(advice) == len(set(advice))
    assert out.count("breath-hold") == 1
    # the support is named for what it is
    if "- support:" in out:
        assert "compliant back" in out
    assert main(["modes", str(rig), "--mass", "-1"]) == 2


def _noisy_bands(seed: int, rate: float = 120.0, noise_m: float = 1e-4):
    """Two bands of one mass each (0.4 Hz: 100 kg, 3.5 Hz: 112 kg), the COM's position read
    with white noise and the spring force from the same noisy position (a suspension of 12
    kN/m: its noise is the position's times the stiffness, as a force computed from a
    noisy pose)."""
    t = np.arange(0, 25, 1 / rate)
    rng = np.random.default_rng(seed)
    com, force = _two_band_motion(t, rng, 3e-4)
    noise = rng.normal(0.0, noise_m, com.shape)
    return apparent_mass_by_band(force - 12e3 * noise, com + noise, np.ones(t.size, bool),
                                 np.array([0, 0, -9.81]), rate, [(0.15, 1.0), (1.6, 8.0)])


def test_apparent_mass_takes_the_pose_noise_off_through_the_bands_own_filter():
    """The upper band's acceleration is the most noise-amplified regressor: 0.1 mm of white
    noise reads about a fifth of the band's power, so a mass biased by a tenth of that
    would be off by kilograms. Over 12 draws the mean of the upper band's mass is within 3
    of its standard errors of the mean (and its scatter within twice the reported standard
    error) of the 112 kg it was made with."""
    upper = np.array([[b["mass_kg"], b["std_kg"]] for b in
                      (_noisy_bands(seed)[1] for seed in range(12))])
    mean, scatter = upper[:, 0].mean(), upper[:, 0].std(ddof=1)
    assert abs(mean - 112.0) < 3.0 * scatter / np.sqrt(len(upper)), (mean, scatter)
    assert scatter < 2.0 * np.median(upper[:, 1]), (scatter, np.median(upper[:, 1]))


def test_a_lighter_upper_band_is_not_tissue():
    """Tissue below its frequency adds apparent mass in the rig's upper modes; an upper band
    that reads lighter is not named as tissue."""
    def outcome(high_kg):
        bands = [{"band_hz": [0.15, 1.0], "mass_kg": 105.8, "std_kg": 0.1},
                 {"band_hz": [1.6, 8.0], "mass_kg": high_kg, "std_kg": 1.0}]
        posture = SimpleNamespace(result=SimpleNamespace(name="p1"), living_signs={
            "apparent_mass": [dict(b, object_mass_kg=b["mass_kg"] - 25.0) for b in bands],
            "rhythm": {}, "base_on_platform": {"rms_mm": np.zeros(3), "r2": np.zeros(3),
                                               "frequency_hz": np.full(3, np.nan)},
            "rate_hz": 120.0}, marker_scatter_mm={}, marker_noise_mm=0.1)
        return SimpleNamespace(postures=[posture], tree=None, total_mass_kg=80.8)
    assert soft_tissue_check(outcome(99.8)).level == "ok"
    assert soft_tissue_check(outcome(111.8)).level == "problem"


def _residual(rate, seconds, lines_hz, amp_mm, seed=0, noise_mm=0.1, markers=4):
    t = np.arange(0, seconds, 1 / rate)
    rng = np.random.default_rng(seed)
    r = rng.normal(0.0, noise_mm, (t.size, markers, 3))
    for k, f in enumerate(lines_hz):
        r[:, :, 1] += (amp_mm / (k + 1)) * np.sin(2 * np.pi * f * t + k)[:, None]
    return r


def test_residual_rhythm_names_a_breath_away_from_the_modes():
    from rigtool.kinematics.living_signs import residual_rhythm
    modes = np.array([0.36, 0.45, 0.6, 2.1, 3.2, 3.8])
    breath = residual_rhythm(_residual(100, 20, [0.22, 0.44, 0.66], 0.5), 100, modes)
    assert breath["axis"] == 1 and abs(breath["frequency_hz"] - 0.22) < 0.05
    assert breath["band_fraction"] > 0.8 and breath["clear_of_modes"]
    # a rig's model error rings at a mode: not clear of the modes
    rig = residual_rhythm(_residual(100, 20, [0.45], 0.5), 100, modes)
    assert not rig["clear_of_modes"]
    # white noise alone has no rhythm
    white = residual_rhythm(_residual(100, 20, [], 0.0), 100, modes)
    assert white["band_fraction"] < 0.1


def test_breathing_is_named_from_the_residual_when_no_marker_follows_it():
    def outcome(rhythm):
        posture = SimpleNamespace(result=SimpleNamespace(name="p1"), living_signs={
            "apparent_mass": [], "rhythm": {}, "residual_rhythm": rhythm,
            "base_on_platform": {"rms_mm": np.zeros(3), "r2": np.zeros(3),
                                 "frequency_hz": np.full(3, np.nan)},
            "rate_hz": 100.0}, marker_scatter_mm={}, marker_noise_mm=0.1)
        return SimpleNamespace(postures=[posture], tree=None, total_mass_kg=80.8)
    breath = {"axis": 1, "frequency_hz": 0.23, "band_fraction": 0.9, "rms_mm": 0.45,
              "clear_of_modes": True, "n_markers": 4}
    check = breathing_check(outcome(breath))
    assert check.level == "problem" and "14/min" in check.finding
    assert "breathing_markers" in check.action
    assert breathing_check(outcome({**breath, "clear_of_modes": False})).level == "ok"
    assert breathing_check(outcome({**breath, "rms_mm": 0.1})).level == "ok"
    assert breathing_check(outcome({})).level == "ok"
