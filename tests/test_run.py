"""`rigtool run` on the bundled demo: report files, values against the simulator's truth."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rigtool.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demo(demo_run):
    return demo_run


def test_postures_are_refined_by_output_error(demo):
    """The default posture method is the output-error refinement; its start (the
    equation-error fit) is kept in the report for comparison."""
    _, out = demo
    doc = json.loads((out / "report.json").read_text())
    for p in doc["postures"]:
        assert p["method"] == "output-error"
        # Marker noise of the demo is 0.1 mm per coordinate: the fitted residual RMS over
        # the platform's markers estimates it.
        assert 0.08 < p["output_error"]["marker_sigma_mm"] < 0.12
        # optical mocap, no camera side file: the isotropic noise model, and it says so
        assert p["output_error"]["noise_model"] == {"kind": "isotropic"}
        assert len(p["equation_error"]["com"]) == 3


def test_report_files_and_contract(demo):
    tmp, out = demo
    for name in ("report.json", "report.md", "report.html", "postures.csv", "subset.csv",
                 "subset.png", "posture_posture1_wrench.png"):
        assert (out / name).stat().st_size > 0, name
    doc = json.loads((out / "report.json").read_text())
    assert doc["session"] == "two-link"
    assert {p["name"] for p in doc["postures"]} == {"posture1", "posture2", "posture3"}
    assert all(len(i["sha256"]) == 64 for i in doc["inputs"])
    assert doc["subset"]["rank"] == 17 and len(doc["subset"]["names"]) == 17
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and 'src="http' not in html   # self-contained


def test_report_values_against_truth(demo):
    """Posture COM and inertia within 4 reported standard errors of the truth (plus 0.2 mm /
    0.2 % floors for the method's own approximations)."""
    tmp, out = demo
    doc = json.loads((out / "report.json").read_text())
    truth = json.loads((tmp / "captures" / "two-link" / "truth.json").read_text())
    for p, t in zip(doc["postures"], truth["postures"]):
        com, std = np.array(p["com"]), np.array(p["com_std"])
        assert np.all(np.abs(com - t["com"]) < 4 * std + 2e-4), p["name"]
        i_max = np.linalg.eigvalsh(np.array(t["inertia_com"]))[-1]
        err = np.abs(np.array(p["inertia_com"]) - t["inertia_com"])
        assert np.all(err < 4 * np.array(p["inertia_com_std"]) + 2e-3 * i_max), p["name"]
        for link, rot in p["rotations"].items():
            assert np.allclose(rot, t["rotations"][link], atol=2e-4)
    names, vals = truth["phi_s"]["names"], truth["phi_s"]["values"]
    sub = doc["subset"]
    assert sub["names"] == names
    z = (np.array(sub["values"]) - vals) / np.array(sub["std"])
    assert np.all(np.abs(z) < 5)


def test_report_phi_b_against_truth(demo):
    """The relative-motion stage completes Phi_B: every entry within 5 reported standard
    errors of the truth, the resolved J_yy inside its feasible interval, Fig. 6 written."""
    tmp, out = demo
    doc = json.loads((out / "report.json").read_text())
    truth = json.loads((tmp / "captures" / "two-link" / "truth.json").read_text())
    rel = doc["relative_motion"]
    assert rel["phi_b"]["names"] == truth["phi_b"]["names"]
    z = (np.array(rel["phi_b"]["values"]) - truth["phi_b"]["values"]) / np.array(
        rel["phi_b"]["std"])
    assert np.all(np.abs(z) < 5), z
    for name, value in rel["resolved"].items():
        lo, hi = rel["bounds"][name]
        assert lo <= value <= hi
    for link in ("link0", "link1"):
        mp = doc["minimal_parameters"][link]
        assert np.shape(mp["MS"]) == (3,) and np.shape(mp["J"]) == (3, 3)
    assert (out / "relative_motion.png").stat().st_size > 0
    assert (out / "minimal_parameters.csv").read_text().count("\n") == 19
    # default: refined by output error; the fit leaves the markers' own noise (0.1 mm in
    # the demo) and keeps the equation-error start beside it
    assert rel["method"] == "output-error"
    oe = rel["output_error"]
    assert all(0.08 < v < 0.12 for v in oe["residual_rms_mm"].values()), oe
    assert set(rel["equation_error"]["resolved"]) == set(rel["resolved"])


def test_report_segments_reproduce_phi_b(demo):
    """The demo's links carry CAD priors: segment parameters are estimated, reproduce Phi_B
    within its uncertainty, and are exported (URDF, OpenSim, MuJoCo) with the same numbers."""
    import xml.etree.ElementTree as ET
    tmp, out = demo
    doc = json.loads((out / "report.json").read_text())
    seg = doc["segments"]
    assert set(seg["links"]) == {"link0", "link1"}
    assert np.all(np.abs(list(seg["phi_b_residual_z"].values())) < 3)
    total = sum(l["mass"] for l in seg["links"].values())
    assert abs(total - doc["total_mass"]) < 1e-6 * doc["total_mass"]
    urdf = ET.parse(out / "model.urdf").getroot()
    masses = {l.get("name"): float(l.find("inertial/mass").get("value"))
              for l in urdf.findall("link") if l.find("inertial") is not None}
    assert set(masses) == set(seg["links"])          # the ball joints' links are massless
    for name, l in seg["links"].items():
        assert abs(masses[name] - l["mass"]) < 1e-6 * l["mass"]
    for f in ("model_mujoco.xml", "model.osim"):     # loaded: tests/test_model_exports.py
        assert (out / f).stat().st_size > 0
    assert doc["stages_not_run"] == []


def test_run_refuses_to_write_into_the_session_folder(demo, capsys):
    tmp, _ = demo
    session = tmp / "captures" / "two-link" / "session.toml"
    assert main(["run", str(session), "-o", str(session.parent)]) == 2
    assert "must not be the session's own folder" in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"\xff\xfe\x00 not text", b"[session\nname = ",
                                     b"postures = 3\n"])
def test_a_broken_manifest_is_reported_not_an_internal_error(tmp_path, capsys, content):
    """``rigtool run`` counts the manifest's postures before its checks, to choose what its
    workers import (rigtool.pipeline.workers.fits_in_workers); a manifest that is not text,
    not TOML or of the wrong shape is left to the checks, which name the problem: exit 2,
    one message, no traceback."""
    from rigtool.pipeline.workers import fits_in_workers
    manifest = tmp_path / "session.toml"
    manifest.write_bytes(content)
    assert fits_in_workers(manifest, "output-error") is False
    assert main(["run", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "session.toml" in err and "Traceback" not in err and "internal error" not in err


def test_run_needs_a_calibrated_rig(tmp_path, capsys):
    shutil.copytree(ROOT / "captures" / "two-link", tmp_path / "captures" / "two-link",
                    ignore=shutil.ignore_patterns("results"))
    shutil.copytree(ROOT / "calibration", tmp_path / "calibration",
                    ignore=shutil.ignore_patterns("*.calibrated.toml"))
    (tmp_path / "calibration" / "paper-rig.calibrated.toml").write_bytes(
        (tmp_path / "calibration" / "paper-rig.toml").read_bytes())
    assert main(["run", str(tmp_path / "captures" / "two-link" / "session.toml")]) == 2
    assert "the rig is not calibrated" in capsys.readouterr().err


@pytest.mark.slow
def test_missing_joint_centre_is_estimated_from_the_swing(demo, tmp_path):
    """SPEC: leave joint_center out and it is found from the relative-motion capture.

    link1's markers are given in a provisional frame offset by d from the joint: the estimate
    must move the link's origin back by d and put the centre at the true one (0, 0, 0) in
    link0's frame, within the issue's 2 mm.
    """
    tmp, _ = demo
    src = tmp / "captures" / "two-link"
    text = (src / "session.toml").read_text()
    d = np.array([0.01, 0.02, -0.05])
    old = ('markers = { A1 = [0.04, 0.05, -0.1], A2 = [-0.04, 0.03, -0.25], '
           'A3 = [0.03, -0.04, -0.32], A4 = [-0.03, -0.05, -0.18] }')
    assert old in text
    true_markers = {"A1": [0.04, 0.05, -0.1], "A2": [-0.04, 0.03, -0.25],
                    "A3": [0.03, -0.04, -0.32], "A4": [-0.03, -0.05, -0.18]}
    shifted = ", ".join(f"{k} = [{', '.join(f'{x:.4f}' for x in np.add(v, d))}]"
                        for k, v in true_markers.items())
    text = text.replace(old, "markers = { " + shifted + " }")
    text = text.replace("joint_center = [0.0, 0.0, 0.0]\n", "")
    (src / "session-no-jc.toml").write_text(text)
    out = tmp_path / "res"
    assert main(["run", str(src / "session-no-jc.toml"), "-o", str(out),
                 "--method", "equation-error"]) == 0
    doc = json.loads((out / "report.json").read_text())
    jc = doc["joint_centres"]["link1"]
    assert np.linalg.norm(jc["joint_center"]) < 2e-3
    np.testing.assert_allclose(jc["link_origin_moved_by"], d, atol=2e-3)
    assert doc["subset"]["rank"] == 17


@pytest.mark.slow
def test_voluntary_motion_end_to_end(demo_run, tmp_path, capsys):
    """A limb moved by muscles (scenarios/voluntary.toml, shortened): rigtool run tries the
    passive swing, sees it cannot follow the markers, uses the active model and says so; the
    reported J_yy is the truth's within its standard error."""
    tmp, _ = demo_run
    scen = tmp_path / "lift.toml"
    text = (ROOT / "scenarios" / "voluntary.toml").read_text()
    body = text[text.index("[relative_motion]"):].replace("duration_s = 12.0", "duration_s = 7.0"
                                                          ).replace("window = [1.0, 11.0]",
                                                                    "window = [1.0, 6.0]")
    scen.write_text(f'[scenario]\nname = "lift"\nextends = "{ROOT / "scenarios" / "voluntary.toml"}"'
                    f"\n\n{body}")
    bundle = tmp_path / "bundle"
    assert main(["simulate", str(scen), "-o", str(bundle)]) == 0
    # same rig and calibration captures as the demo: its calibration serves
    shutil.copy(tmp / "calibration" / "paper-rig.calibrated.toml", bundle / "calibration")
    capsys.readouterr()
    out = tmp_path / "results"
    session = bundle / "captures" / "two-link" / "session.toml"
    assert main(["run", str(session), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "relative motion (output-error (prescribed motion))" in printed
    rep = json.loads((out / "report.json").read_text())
    rel = rep["relative_motion"]
    assert rel["model"]["requested"] == "auto" and rel["model"]["used"] == "active"
    assert [t["model"] for t in rel["model"]["tried"]] == ["passive", "active"]
    assert not rel["model"]["tried"][0]["reached_noise"]
    assert rel["output_error"]["used"] and rel["output_error"]["method"].startswith("output")
    truth = json.loads((session.parent / "truth.json").read_text())
    k = truth["phi_b"]["names"].index("link1.J_yy")
    assert abs(rel["phi_b"]["values"][k] - truth["phi_b"]["values"][k]) < 3 * rel["phi_b"]["std"][k]
    assert not any("output-error refinement" in w for w in rep.get("warnings", []))
    assert "moved by muscles" in (out / "report.md").read_text()


def test_demo_report_answers_first_without_warnings(demo):
    """On the bundled demo no warning is written (nothing is wrong with it), every
    check is green, and the report opens with the summary: the object, the segments (mass,
    COM, principal moments, source), the checks and the method of every stage."""
    _, out = demo
    doc = json.loads((out / "report.json").read_text())
    assert doc["warnings"] == []
    assert {c["level"] for c in doc["checks"]} == {"ok"}, [
        (c["title"], c["finding"]) for c in doc["checks"] if c["level"] != "ok"]
    assert {c["key"] for c in doc["checks"]} >= {"marker_residual", "markers_still",
                                                  "postures_held", "mass", "phi_s",
                                                  "bounds", "calibration", "segments"}
    assert list(doc).index("summary") < list(doc).index("postures")  # summary before detail
    summ = doc["summary"]
    assert summ["verdict"] == "ok"
    assert [s["link"] for s in summ["segments"]] == ["link0", "link1"]
    for s in summ["segments"]:
        i = np.array(doc["segments"]["links"][s["link"]]["inertia_com"])
        assert np.allclose(s["principal_moments"], np.linalg.eigvalsh(i), rtol=1e-6)
        assert s["source"]["mass"] in ("measured", "both", "prior")
    stages = {m["stage"]: m["method"] for m in summ["methods"]}
    assert stages["postures"] == "output-error (3)" and stages["relative motion"] == \
        "output-error"
    # the mass check uses the reported (output-error) estimate: the vibration weighs what
    # the scale did, within its own standard error
    for p in doc["postures"]:
        mv = p["mass_from_vibration"]
        assert mv["method"] == "output-error"
        assert abs(mv["value"] - doc["total_mass"]) < 4 * mv["std"]
    md = (out / "report.md").read_text()
    assert md.index("## Summary") < md.index("## Postures") < md.index("## Segment")
    assert "## Warnings" not in md and "No warnings." in md
    assert "🔴" not in md and "🟠" not in md


def test_truth_comparison_matches_an_independent_computation(demo):
    """truth.json sits next to the demo's manifest: the report compares every estimate with
    it in SPEC units; recomputed here from report.json and truth.json alone."""
    tmp, out = demo
    doc = json.loads((out / "report.json").read_text())
    truth = json.loads((tmp / "captures" / "two-link" / "truth.json").read_text())
    tc = doc["truth_comparison"]
    assert tc["file"] == "truth.json" and any(i["path"] == "truth.json" for i in doc["inputs"])
    rows = {(r["group"], r["unit"]): r for r in tc["summary"]}
    # posture COM (m): largest |estimate - truth| over postures and axes, and in std
    err = np.concatenate([np.subtract(p["com"], t["com"])
                          for p, t in zip(doc["postures"], truth["postures"])])
    std = np.concatenate([p["com_std"] for p in doc["postures"]])
    r = rows[("postures (base-link frame)", "m")]
    assert r["entries"] == 9
    assert np.isclose(r["max_abs_error"], np.abs(err).max(), rtol=1e-4)
    assert np.isclose(r["max_abs_z"], np.abs(err / std).max(), rtol=1e-3)
    # Phi_B J entries (kg m^2)
    b = doc["relative_motion"]["phi_b"]
    tb = dict(zip(truth["phi_b"]["names"], truth["phi_b"]["values"]))
    j = [k for k, n in enumerate(b["names"]) if ".J_" in n]
    e = np.array([b["values"][k] - tb[b["names"][k]] for k in j])
    r = rows[("Phi_B", "kg m^2")]
    assert r["entries"] == len(j)
    assert np.isclose(r["rms_error"], np.sqrt(np.mean(e ** 2)), rtol=1e-4)
    # segment masses (kg) against the simulated links
    tl = {l["name"]: l["mass"] for l in truth["links"]}
    e = [doc["segments"]["links"][n]["mass"] - tl[n] for n in tl]
    assert np.isclose(rows[("segments (link frames)", "kg")]["max_abs_error"],
                      np.abs(e).max(), rtol=1e-4)
    # the rig's calibration against the simulated rig: spring stiffness (N/m)
    ts = {s["name"]: s["stiffness"] for s in truth["springs"]}
    cal = doc["rig"]["calibration"]["springs"]
    e = [cal[n]["stiffness"] - ts[n] for n in ts]
    assert np.isclose(rows[("calibration (rig)", "N/m")]["max_abs_error"], np.abs(e).max(),
                      rtol=1e-4)
    html = (out / "report.html").read_text()
    assert 'id="truth"' in html and "Against the truth" in html
