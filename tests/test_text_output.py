"""What a reader sees: numbers with their standard errors to the digits those show, the
principal moments' standard errors, the source flags in words, the results' CSV units, the
postures file of the demo, and the message naming the extra to install."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from rigtool.cli import main
from rigtool.inertia import principal_moments_std
from rigtool.inertia import inertia_matrix, inertia_vector
from rigtool.report.content_summary import source_words
from rigtool.textformat import pm

ROOT = Path(__file__).resolve().parents[1]


def test_a_value_is_printed_to_the_digit_its_standard_error_shows():
    # a spring's free length, 2 micrometres: never "1.03000 ± 0.00000"
    assert pm(1.0300013, 2.08e-6, 5) == "1.030001 ± 0.000002"
    # the default digits kept when the error needs no more
    assert pm(3049.71, 0.5, 1) == "3049.7 ± 0.5"
    assert pm(6.0123, 0.03, 2) == "6.01 ± 0.03"
    # a value the fit did not move says so; an unknown error prints the value alone
    assert pm(1.03, 0.0, 5) == "1.03000 (held)"
    assert pm(1.03, None, 5) == pm(1.03, float("nan"), 5) == "1.03000"


def test_principal_moment_errors_match_the_spread_of_sampled_tensors():
    """First-order standard errors of the principal moments against 200,000 tensors drawn
    from the entries' full covariance: within 3 % (sampling error of a std at this count is
    0.16 %; the rest is the second-order term of well-separated moments)."""
    rng = np.random.default_rng(3)
    inertia = np.array([[1.88, -0.008, -0.0035], [-0.008, 1.49, -0.177],
                        [-0.0035, -0.177, 1.445]])
    a = rng.normal(size=(6, 6)) * 1e-3
    cov6 = a @ a.T                                   # correlated entries, xx xy xz yy yz zz
    draws = inertia_vector(inertia) + rng.multivariate_normal(np.zeros(6), cov6, 200_000)
    spread = np.linalg.eigvalsh(inertia_matrix(draws)).std(axis=0)
    np.testing.assert_allclose(principal_moments_std(inertia, cov6), spread, rtol=0.03)
    # a diagonal tensor with independent diagonal entries: each moment's error is its own
    diag = np.diag([1.0, 2.0, 3.0])
    cov = np.diag([1e-4, 0, 0, 4e-4, 0, 9e-4])
    np.testing.assert_allclose(principal_moments_std(diag, cov), [1e-2, 2e-2, 3e-2])


def test_source_flags_read_as_words():
    same = {"mass": "both", "com": "both", "inertia": "both"}
    assert source_words(same) == "mass, COM, inertia: vibration and prior"
    assert source_words({"mass": "measured", "com": "mixed", "inertia": "prior"}) == \
        "mass: vibration; COM: mixed; inertia: prior"


def test_the_demos_postures_file_gives_the_runs_phi_s(demo_run, tmp_path, capsys):
    """captures/two-link/postures.toml is the demo's report.json postures as they are
    (report.json's key names, inertia_com_std included): `rigtool subset` on it gives the
    run's Phi_s within 2 of its standard errors (the file holds each posture's standard
    errors, not their covariance, so the fits weigh the postures' rows differently: 0.95 at
    most here), and --consistent adds the consistent column."""
    _, out = demo_run
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    result = tmp_path / "subset.json"
    example = ROOT / "captures" / "two-link" / "postures.toml"
    assert main(["subset", str(example), "--consistent", "-o", str(result)]) == 0
    table = capsys.readouterr().out
    header = table.splitlines()[0].split()
    assert header == ["parameter", "value", "std", "consistent"]
    assert "constraints" in table
    sub = json.loads(result.read_text())["subset"]
    assert sub["names"] == doc["subset"]["names"]
    z = (np.array(sub["values"]) - doc["subset"]["values"]) / np.array(doc["subset"]["std"])
    assert np.all(np.abs(z) < 2.0), z
    assert len(sub["consistent_values"]) == len(sub["names"])
    # without the flag, no consistent column
    assert main(["subset", str(example)]) == 0
    assert capsys.readouterr().out.splitlines()[0].split() == ["parameter", "value", "std"]


def test_postures_file_takes_either_name_of_the_inertia_error_once(tmp_path, capsys):
    text = (ROOT / "captures" / "two-link" / "postures.toml").read_text()
    renamed = tmp_path / "postures.toml"
    renamed.write_text(text.replace("inertia_com_std =", "inertia_std ="))
    assert main(["subset", str(renamed), "--json"]) == 0
    a = json.loads(capsys.readouterr().out)["subset"]
    assert main(["subset", str(ROOT / "captures" / "two-link" / "postures.toml"), "--json"]) == 0
    b = json.loads(capsys.readouterr().out)["subset"]
    assert a["values"] == b["values"] and a["std"] == b["std"]
    both = tmp_path / "both.toml"
    both.write_text(text.replace("inertia_com_std =", "inertia_std = 0.001\ninertia_com_std =",
                                 1))
    assert main(["subset", str(both)]) == 2
    err = capsys.readouterr().err
    assert "postures[0].inertia_std" in err and "not both" in err and "Traceback" not in err


def test_every_results_csv_has_a_unit_column(demo_run):
    _, out = demo_run
    for name in ("postures.csv", "subset.csv", "minimal_parameters.csv", "segments.csv"):
        with (out / name).open(newline="") as f:
            rows = list(csv.DictReader(f))
        assert rows and all(r["unit"] for r in rows), name
    with (out / "subset.csv").open(newline="") as f:
        units = {r["name"]: r["unit"] for r in csv.DictReader(f)}
    assert units["link0.MS_x"] == "kg m" and units["sum.J_yy"] == "kg m^2"
    assert units["link1.J_xx-J_yy"] == "kg m^2"


def test_a_missing_extra_is_named(monkeypatch, tmp_path, capsys):
    """Asking for a part whose optional packages are missing: one line naming the extra to
    install, exit status 2, no traceback."""
    import rigtool.extras as extras

    # a module import that fails inside a command is translated at the command line
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(extras.MissingExtraError, match=r"rigtool\[camera\]"):
        extras.require("cv2")
    # and a command asking for its extra up front
    monkeypatch.setattr(extras, "_installed", lambda module, dist: False)
    for argv, extra in ((["camera", "print-tags", str(tmp_path / "tags.toml"), "-o",
                          str(tmp_path / "tags.pdf")], "camera"),
                        (["batch", str(tmp_path / "none.toml")], "batch")):
        status = main(argv)
        err = capsys.readouterr().err
        assert status == 2, (argv, err)
        assert f"pip install 'rigtool[{extra}]'" in err and "Traceback" not in err, err
    with pytest.raises(extras.MissingExtraError, match=r"rigtool\[robot\]"):
        extras.require_extra("robot")
    # an import error of anything else is not taken for a missing extra
    assert extras.missing_extra_error(ModuleNotFoundError("x", name="numpy")) is None
