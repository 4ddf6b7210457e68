"""The report's quality checks: each turns red, with its explanation, on a session
with the real problem it is there for, and stays green on a clean one.

Real problems are made on the bundled demo's first posture, fitted against the simulator's
true rig (no calibration run needed): a marker sliding 4 mm on a locked link, the platform
pushed by hand (a 1 Hz, 3 mm motion the springs do not make: the output-error residual at
about 10x the marker noise), and a weighed mass 1 % off. Checks that need a whole session
(relative motion, calibration age, held-out test, bounds, repeated messages) run on
constructed outcomes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rigtool.config import load_session
from rigtool.pipeline.session import fit_one_posture
from rigtool.report.checks import session_checks
from rigtool.report.checks_capture import (markers_still_check, marker_residual_check,
                                           mass_check, postures_held_check)
from rigtool.report.checks_model import (COVERED_PHRASES, bounds_check, calibration_check,
                                         fit_messages)

ROOT = Path(__file__).resolve().parents[1]
MASS = 80.817                     # the demo object's true (and weighed) mass, kg
SIGMA_MM = 0.1                    # the demo's marker noise per coordinate


def _fit(posture1, data, *, mass=MASS, method="output-error"):
    session, rigfile, tree, markers, _ = posture1
    ref = session.postures[0]
    return fit_one_posture(session, rigfile, tree, markers, ref.capture, name=ref.name,
                           window=ref.window, units=ref.units, total_mass_kg=mass,
                           settings=session.filter, weighting="dual-metric", method=method,
                           data=data)


def _outcome(postures, rigfile, tree, *, mass=MASS, **kw):
    base = dict(postures=postures, rigfile=rigfile, relative_refinement=None,
                total_mass_kg=mass, total_mass_std_kg=1e-3 * mass,
                total_mass_std_source="test", tree=tree, subset=None, relative=None,
                segments=None, warnings=[w for p in postures for w in p.warnings], notes=[])
    base.update(kw)
    return SimpleNamespace(**base)


def _marker(data, suffix: str) -> int:
    return next(i for i, n in enumerate(data.names) if n.split(":")[-1] == suffix)


def test_marker_moving_on_a_locked_link_turns_red(posture1):
    """A2 (on link1, locked) slides 4 mm along the capture: the markers check names it, its
    link and the posture, once; the joint's apparent wobble is put down to it."""
    *_, data = posture1
    xyz = data.xyz_m.copy()
    xyz[:, _marker(data, "A2"), 0] += 0.004 * np.linspace(0.0, 1.0, xyz.shape[0])
    p = _fit(posture1, dataclasses.replace(data, xyz_m=xyz), method="equation-error")
    out = _outcome([p], posture1[1], posture1[2])
    check = markers_still_check(out)
    assert check.level == "problem"
    assert "A2 on link1" in check.finding and "posture1" in check.finding
    assert check.finding.count("A2") == 1
    assert "rotation" in check.meaning and "Fix the marker" in check.action
    assert [i["marker"] for i in check.items] == ["A2"]       # its neighbours are not named
    assert postures_held_check(out).level == "ok"


def test_clean_posture_is_green_and_weighs_what_the_scale_does(posture1):
    """The demo posture as captured: every capture-level check green; the vibration's mass
    (output error, mass freed at the estimate) within its standard error of the truth."""
    *_, data = posture1
    p = _fit(posture1, data)
    out = _outcome([p], posture1[1], posture1[2])
    checks, _ = session_checks(out)
    assert [c.level for c in checks if c.is_warning] == [], [c.message() for c in checks]
    vm = p.refinement.mass_from_vibration
    assert abs(vm.value_kg - MASS) < 4 * vm.std_noise_kg + 1e-3
    ratio = marker_residual_check(out).items[0]["ratio"]
    assert 0.9 < ratio < 1.1


def test_capture_with_residual_10x_the_noise_turns_red(posture1):
    """The platform pushed by hand from 5 s on (1 Hz, 3 mm, not a spring mode): the fitted
    rig cannot follow; the residual check says so, with the ratio and what to look at."""
    *_, data = posture1
    xyz = data.xyz_m.copy()
    t = data.time_s
    xyz[:, :, 2] += (0.003 * np.sin(2 * np.pi * t) * (t > 5.0))[:, None]
    p = _fit(posture1, dataclasses.replace(data, xyz_m=xyz))
    out = _outcome([p], posture1[1], posture1[2])
    check = marker_residual_check(out)
    item = next(i for i in check.items if i["capture"] == "posture1")
    assert item["ratio"] > 8.0, item
    assert check.level == "problem"
    assert "does not follow posture1" in check.finding
    assert "recalibrate" in check.action and "model" in check.meaning


def test_mass_off_by_one_percent_turns_red(posture1):
    """The manifest's mass 1 % high: the mass check is red and says why; the vibration's
    own estimate lands on the true mass (one Gauss-Newton step from the held mass)."""
    *_, data = posture1
    weighed = 1.01 * MASS
    p = _fit(posture1, data, mass=weighed)
    out = _outcome([p], posture1[1], posture1[2], mass=weighed)
    check = mass_check(out)
    assert check.level == "problem"
    assert " %) apart in posture1" in check.finding
    assert "weighed mass" in check.meaning and "rigtool weigh" in check.action
    assert abs(p.refinement.mass_from_vibration.value_kg - MASS) < 0.05     # 0.06 % of it


# ------------------------------------------------------------------ constructed outcomes

def _posture(name, warnings=(), **kw):
    res = SimpleNamespace(name=name, mass_from_vibration=None)
    base = dict(result=res, refinement=None, equation_error=None, marker_noise_mm=SIGMA_MM,
                marker_scatter_mm={}, base_wobble_deg=0.05, rotation_spread_deg={},
                warnings=list(warnings), notes=[])
    base.update(kw)
    return SimpleNamespace(**base)


def _tree():
    return SimpleNamespace(links=[SimpleNamespace(name="link0"), SimpleNamespace(name="link1")])


def test_same_message_in_every_posture_is_said_once():
    ps = [_posture(f"posture{k}", [f"posture{k}: a joint limit was touched ({k}.5 deg)"])
          for k in (1, 2, 3)]
    check, notes = fit_messages(_outcome(ps, SimpleNamespace(raw={}), _tree()))
    assert check.level == "caution" and len(check.items) == 1
    assert "posture1, posture2 and posture3" in check.finding
    # messages a check judges from numbers are not repeated, notes are not warnings
    ps = [_posture(f"posture{k}", [f"posture{k}: marker residuals grow or shrink along the "
                                   "capture (RMS 0.1 mm early, 0.3 mm late)"],
                   notes=[f"posture{k}: 99% of the motion's power lies below 4.6 Hz, close "
                          "to or above the filter's passband edge (5 Hz)"]) for k in (1, 2)]
    check, notes = fit_messages(_outcome(ps, SimpleNamespace(raw={}), _tree()))
    assert check.level == "ok" and len(notes) == 1 and "posture1 and posture2" in notes[0]


def test_covered_phrases_are_still_written_by_the_fits():
    """The checks replace the fits' own words for these; if a message is reworded, this
    fails instead of the report repeating it."""
    source = "".join(p.read_text() for p in (ROOT / "rigtool").rglob("*.py")
                     if "report" not in p.parts)
    missing = [ph for ph in COVERED_PHRASES if ph not in source]
    assert missing == [], missing


def _relative_residual_check(residual_mm: float, floor_mm: float, reached: bool):
    """The marker residual check of one fitted posture and a relative-motion refinement
    leaving ``residual_mm`` against ``floor_mm`` (the platform's noise: SIGMA_MM)."""
    ref = SimpleNamespace(marker_sigma_mm=residual_mm, noise_mm=SIGMA_MM, floor_mm=floor_mm,
                          residual_rms_frame_mm=np.full(100, residual_mm),
                          reached_noise=lambda: reached)
    p = _posture("posture1", refinement=SimpleNamespace(
        marker_sigma_mm=0.1, residual_rms_frame_mm=np.full(100, 0.1)))
    return marker_residual_check(_outcome([p], SimpleNamespace(raw={}), _tree(),
                                          relative_refinement=ref))


def test_relative_refinement_not_used_is_amber_with_its_reason():
    check = _relative_residual_check(0.42, SIGMA_MM, False)
    assert check.level == "caution"
    assert "not used" in check.finding and "4.2x" in check.finding
    assert "equation-error" in check.meaning
    assert "scatter" not in check.finding


def test_relative_markers_scattering_above_the_platforms_noise_are_named():
    """A refinement judged against its markers' own scatter (skin) reaches it, and the check
    says that scatter stands above the platform's markers' noise instead of calling it
    noise."""
    check = _relative_residual_check(0.56, 0.69, True)
    assert check.level == "caution"
    assert "not used" not in check.finding
    assert f"scatter 0.690 mm in their rigid fits, 6.9x the platform's markers' " \
           f"{SIGMA_MM:.3f} mm noise" in check.finding
    assert "skin" in check.meaning and "bony landmarks" in check.action


def test_no_relative_model_reached_the_noise_names_both_and_a_divergence():
    """Both models tried, neither reached the noise: the check says so (not 'record a passive
    swing'), and a passive fit whose simulation diverged is not reported as 1e6 mm."""
    from rigtool.identify.relative.fit_common import DIVERGED_MM
    from rigtool.pipeline.relative_model import RelativeModelChoice, _reason
    choice = RelativeModelChoice("auto", tried=[
        {"model": "passive", "method": "output-error", "residual_mm": DIVERGED_MM,
         "noise_mm": SIGMA_MM, "reached_noise": False, "stopped_after_s": 2.0},
        {"model": "active", "method": "output-error (prescribed motion)",
         "residual_mm": 8.9, "noise_mm": SIGMA_MM, "reached_noise": False}])
    reason = _reason(choice)
    assert "passive model's simulation diverged within its first 2.0 s" in reason
    assert "1000000" not in reason and "active model left 8.900 mm" in reason
    p = _posture("posture1", refinement=SimpleNamespace(
        marker_sigma_mm=0.1, residual_rms_frame_mm=np.full(100, 0.1)))
    check = marker_residual_check(_outcome([p], SimpleNamespace(raw={}), _tree(),
                                           relative_model=choice))
    assert check.level == "caution" and "not used" in check.finding
    assert "Neither the passive model" in check.meaning
    assert "passive swing" not in check.action


def test_relative_refinement_left_by_a_breath_names_the_breath():
    """The same rejected refinement, with the swing's breath measured by the breathing
    markers: the check names the breath (which the refinements do not model) instead of the
    list of marker and joint causes, and asks for nothing more."""
    from rigtool.pipeline.relative_model import RelativeModelChoice
    choice = RelativeModelChoice("auto", tried=[
        {"model": "active", "method": "output-error (prescribed motion)",
         "residual_mm": 0.257, "noise_mm": SIGMA_MM, "reached_noise": False}])
    p = _posture("posture1", refinement=SimpleNamespace(
        marker_sigma_mm=0.1, residual_rms_frame_mm=np.full(100, 0.1)))
    out = _outcome([p], SimpleNamespace(raw={}), _tree(), relative_model=choice)
    out.relative_breath = {"measurement": {"component_rms_mm": [3.2],
                                           "markers": ["link0:CH1", "link0:AB1"]},
                           "level": None}
    check = marker_residual_check(out)
    assert check.level == "caution" and "not used" in check.finding
    assert "breathed during the movement" in check.meaning and "3.2 mm RMS" in check.meaning
    assert "Neither the passive model" not in check.meaning
    assert check.action.startswith("Nothing to redo for this report")
    assert "holding the breath at the end of a quiet exhale" in check.action


def test_relative_refinement_that_disagrees_with_its_start_names_a_disturbance():
    """The passive model reached the noise but its Phi_B disagreed with the equation-error
    start: the check says it reached the noise, quotes the disagreement, names a force on the
    platform that no model has, and asks for nothing; the reason says the same."""
    from rigtool.pipeline.relative_model import RelativeModelChoice, _reason
    choice = RelativeModelChoice("auto", tried=[
        {"model": "passive", "method": "output-error", "residual_mm": 0.116,
         "noise_mm": SIGMA_MM, "floor_mm": SIGMA_MM, "reached_noise": True,
         "start_agreement": {"chi2": 191.3, "dof": 18, "p": 1e-30, "agrees": False}}])
    assert "the noise), but its Phi_B is 3.3x" in _reason(choice)
    p = _posture("posture1", refinement=SimpleNamespace(
        marker_sigma_mm=0.1, residual_rms_frame_mm=np.full(100, 0.1)))
    check = marker_residual_check(_outcome([p], SimpleNamespace(raw={}), _tree(),
                                           relative_model=choice))
    assert check.level == "caution"
    assert "reached its noise" in check.finding and "chi-square 191 on 18" in check.finding
    assert "heartbeat" in check.meaning and "Neither the passive model" not in check.meaning
    assert check.action == "Nothing to redo for this report."


def test_calibration_age_and_held_out_test():
    raw = {"calibration": {"date": "2026-01-10T09:00:00+00:00", "method": "output-error",
                           "holdout": [{"capture": "h.csv", "com_error_m": 4e-4,
                                        "inertia_error_rel": 0.02, "max_error_z": 1.2}]}}
    out = _outcome([], SimpleNamespace(raw=raw), _tree())
    fresh = calibration_check(out, dt.datetime(2026, 1, 20, tzinfo=dt.timezone.utc))
    assert fresh.level == "ok" and "10 days ago" in fresh.finding
    old = calibration_check(out, dt.datetime(2026, 9, 1, tzinfo=dt.timezone.utc))
    assert old.level == "caution" and "recalibrate" in old.action
    raw["calibration"]["holdout"][0]["max_error_z"] = 6.5
    bad = calibration_check(out, dt.datetime(2026, 1, 20, tzinfo=dt.timezone.utc))
    assert bad.level == "problem" and "6.5 standard errors" in bad.finding
    assert "known inertia" in bad.meaning


def test_bounds_on_a_bound_amber_empty_red():
    rel = SimpleNamespace(resolved={"link1.J_yy": 0.5}, bounds={"link1.J_yy": (0.5, 1.6)},
                          on_bound=["link1.J_yy"])
    out = _outcome([], SimpleNamespace(raw={}), _tree(), relative=rel)
    assert bounds_check(out).level == "caution"
    rel.bounds, rel.on_bound = {"link1.J_yy": (0.7, 0.6)}, []
    check = bounds_check(out)
    assert check.level == "problem" and "empty" in check.finding
    rel.bounds = {"link1.J_yy": (0.4, 0.6)}
    assert bounds_check(out).level == "ok"


# ------------------------------------------------------------------ the scale's uncertainty

def test_scale_uncertainty_from_manifest_weigh_json_or_default(tmp_path):
    """The mass check's tolerance holds the scale's uncertainty: the manifest's
    total_mass_std, else the weigh.json's mass_std_kg, else 0.1 % of the mass; a bad value
    is refused naming the field."""
    from rigtool.devices.scale import total_mass_std
    from rigtool.errors import ConfigError
    src = (ROOT / "captures" / "two-link" / "session.toml").read_text()
    path = tmp_path / "session.toml"
    path.write_text(src)
    session = load_session(path)
    std, where = total_mass_std(session, 80.0)
    assert std == pytest.approx(0.08) and "assumed 0.1 %" in where
    path.write_text(src.replace("total_mass = 80.81700000000001",
                                "total_mass = 80.817\ntotal_mass_std = 0.02"))
    assert total_mass_std(load_session(path), 80.817) == (0.02, "session.total_mass_std")
    (tmp_path / "weigh.json").write_text(json.dumps({"mass_kg": 80.82, "mass_std_kg": 0.01}))
    path.write_text(src.replace("total_mass = 80.81700000000001",
                                'total_mass_from = "weigh.json"'))
    std, where = total_mass_std(load_session(path), 80.82)
    assert std == 0.01 and "weigh.json" in where
    path.write_text(src.replace("total_mass = 80.81700000000001",
                                "total_mass = 80.817\ntotal_mass_std = -1"))
    with pytest.raises(ConfigError, match="session.total_mass_std"):
        load_session(path)
