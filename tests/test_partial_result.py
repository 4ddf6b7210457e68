"""Postures that cannot identify Phi_s give a partial result, not a lost one: `rigtool run`,
`rigtool batch` and `rigtool subset` write what was measured (each posture, the combinations
of Phi_s that are determined, the null directions, the advice) and exit with status 3; the
three commands judge the same postures the same way."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from rigtool.cli import main
from rigtool.errors import EXIT_PARTIAL
from rigtool.sim.true_calibration import write_true_calibration
from rigtool.tomlwrite import dumps

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def one_posture(tmp_path_factory) -> Path:
    """The demo with its first posture only (and its swing), on the truth-calibrated rig."""
    tmp = tmp_path_factory.mktemp("partial")
    shutil.copytree(ROOT / "calibration", tmp / "calibration",
                    ignore=shutil.ignore_patterns("*.calibrated.toml"))
    shutil.copytree(ROOT / "captures", tmp / "captures",
                    ignore=shutil.ignore_patterns("results"))
    write_true_calibration(tmp / "calibration" / "paper-rig.toml",
                           tmp / "calibration" / "paper-rig.truth.json",
                           tmp / "calibration" / "paper-rig.calibrated.toml")
    manifest = tmp / "captures" / "two-link" / "session.toml"
    text = manifest.read_text()
    head, *postures = text.split("[[postures]]")
    last = postures[-1].split("[relative_motion]")
    manifest.write_text(head + "[[postures]]" + postures[0] + "\n[relative_motion]" + last[1])
    return manifest


def _quiet(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def partial_run(one_posture):
    out = one_posture.parent / "results-partial"
    code, stdout, stderr = _quiet(["run", str(one_posture), "-o", str(out),
                                   "--method", "equation-error"])
    return code, stdout, stderr, out


def test_run_writes_what_was_measured_and_exits_3(partial_run):
    code, stdout, stderr, out = partial_run
    assert code == EXIT_PARTIAL == 3, stderr
    assert "partial result" in stdout and "not identified: Phi_s: 1 posture identifies" in stdout
    doc = json.loads((out / "report.json").read_text())
    assert doc["status"] == "partial"
    assert len(doc["postures"]) == 1 and doc["postures"][0]["com"]
    sub = doc["subset"]
    assert sub["rank"] < sub["n_parameters"] and sub["unidentifiable"] and sub["advice"]
    combos = sub["identified_combinations"]
    assert len(combos) == sub["rank"]
    assert all(np.isfinite(c["value"]) and c["std"] > 0 for c in combos)
    assert "relative_motion" in doc["stages_not_run"]
    assert any("relative-motion stage was not run" in n for n in doc["not_identified"])
    for name in ("report.html", "report.md"):
        assert "Not identified" in (out / name).read_text()


def test_subset_judges_the_same_postures_the_same_way(one_posture, partial_run, tmp_path):
    """The run's posture, fed to `rigtool subset` as a postures file: the same rank, the
    same exit status, as many null directions and determined combinations."""
    from rigtool.config import load_session
    _, _, _, out = partial_run
    doc = json.loads((out / "report.json").read_text())
    links = [{"name": l.name, "parent": l.parent,
              **({"joint_center": l.joint_center_parent.tolist()}
                 if l.parent != "platform" else {})}
             for l in load_session(one_posture).tree.links]
    p = doc["postures"][0]
    postures = [{"name": p["name"], "com": p["com"], "inertia_com": p["inertia_com"],
                 "com_std": p["com_std"], "inertia_std": p["inertia_com_std"],
                 "rotations": p["rotations"]}]
    src = tmp_path / "postures.toml"
    src.write_text(dumps({"total_mass": doc["total_mass"], "links": links,
                          "postures": postures}))
    code, stdout, _ = _quiet(["subset", str(src), "-o", str(tmp_path / "subset.json")])
    assert code == EXIT_PARTIAL
    sub = json.loads((tmp_path / "subset.json").read_text())["subset"]
    assert sub["rank"] == doc["subset"]["rank"]
    assert len(sub["unidentifiable"]) == len(doc["subset"]["unidentifiable"])
    assert len(sub["identified_combinations"]) == len(doc["subset"]["identified_combinations"])
    assert "not identified" in stdout


@pytest.mark.slow
def test_batch_shows_the_partial_status(one_posture, tmp_path):
    out = tmp_path / "batch"
    code, stdout, stderr = _quiet(["batch", str(one_posture), "-o", str(out), "--workers", "1",
                                   "--method", "equation-error"])
    assert code == EXIT_PARTIAL, stderr
    summary = (out / "summary.csv").read_text()
    assert re.search(r",partial,3,", summary)
    assert "partial" in (out / "index.html").read_text()
    assert "error" not in stderr
