"""The calibration's full covariance: written by `rigtool calibrate`, read back, and turned into
the perturbed calibrations the posture fit propagates (rigtool.calibration_uncertainty)."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from rigtool.cli import main
from rigtool.config import load_rig
from rigtool.errors import ConfigError
from rigtool.calibration_uncertainty import calibration_vector, parameter_names
from rigtool.calibration_uncertainty import calibration_std_from_rigfile
from rigtool.tomlwrite import dumps


@pytest.fixture(scope="module")
def calibrated(demo_run):
    tmp, _ = demo_run
    path = tmp / "calibration" / "paper-rig.calibrated.toml"
    return path, tomllib.loads(path.read_text())


def test_covariance_agrees_with_the_standard_errors_and_is_a_covariance(calibrated):
    path, doc = calibrated
    table = doc["calibration"]["covariance"]
    rig = load_rig(path).rig
    names = [s.name for s in rig.springs]
    assert table["parameters"] == parameter_names(names)
    cov = np.array(table["matrix"])
    assert np.allclose(cov, cov.T, rtol=0, atol=1e-12 * np.abs(cov).max())
    assert np.linalg.eigvalsh(cov)[0] > -1e-9 * np.linalg.eigvalsh(cov)[-1]
    sd = np.sqrt(np.diag(cov))
    std = doc["calibration"]["std"]
    expect = np.concatenate([
        [std["springs"][n]["stiffness"] for n in names],
        [std["springs"][n]["free_length"] for n in names],
        [std["springs"][n]["damping"] for n in names],
        [std["platform"]["mass"]], std["platform"]["com"],
        np.array(std["platform"]["inertia_com"])[np.triu_indices(3)]])
    # [calibration.std] is written with 4 significant digits
    np.testing.assert_allclose(sd, expect, rtol=2e-3)
    # the reason to store it: each spring's stiffness and free length share the preload
    corr = cov / np.outer(sd, sd)
    n = len(names)
    assert np.all(np.abs(np.diag(corr[:n, n:2 * n])) > 0.5)


def test_members_reproduce_the_covariance(calibrated):
    """The principal-axis perturbations the posture fit uses sum back to the covariance:
    sum_j d_j d_j^T = C (first-order propagation through them is then exact)."""
    path, doc = calibrated
    rf = load_rig(path)
    members = calibration_std_from_rigfile(rf.raw, rf.rig, path=path)["members"]
    x0 = calibration_vector(rf.rig, rf.rig.platform.params)
    from rigtool.inertia import InertialParams
    rebuilt = np.zeros((x0.size, x0.size))
    for _, _, (pi, k, l0, c), frame in members:
        assert frame is None              # the lab frame was not fitted (optical mocap)
        p = InertialParams(pi)
        x = np.concatenate([k, l0, c, [p.mass], p.com, p.inertia_com[np.triu_indices(3)]])
        rebuilt += np.outer(x - x0, x - x0)
    cov = np.array(doc["calibration"]["covariance"]["matrix"])
    sd = np.sqrt(np.diag(cov))
    # the members pass through InertialParams (first moment = m c): rounding of order 1e-6
    # of each entry's own standard error
    np.testing.assert_allclose(rebuilt / np.outer(sd, sd), cov / np.outer(sd, sd), atol=1e-5)


@pytest.mark.parametrize("corrupt, field", [
    (lambda t: t.update(matrix=[row[:-1] for row in t["matrix"]]), "calibration.covariance.matrix"),
    (lambda t: t["matrix"][0].__setitem__(0, -abs(t["matrix"][0][0])),
     "calibration.covariance.matrix"),
    (lambda t: t["parameters"].reverse(), "calibration.covariance.parameters"),
])
def test_a_damaged_covariance_table_is_refused_when_the_rig_is_read(calibrated, tmp_path,
                                                                    corrupt, field, capsys):
    path, doc = calibrated
    bad = dict(doc)
    bad["calibration"] = dict(doc["calibration"])
    table = {k: (list(map(list, v)) if k == "matrix" else list(v) if isinstance(v, list) else v)
             for k, v in doc["calibration"]["covariance"].items()}
    corrupt(table)
    bad["calibration"]["covariance"] = table
    text = dumps(bad)
    # capture paths in the document are relative to the original file's folder
    out = path.parent / "bad-covariance.calibrated.toml"
    out.write_text(text)
    try:
        with pytest.raises(ConfigError) as err:
            load_rig(out)
        assert field in str(err.value) and "bad-covariance" in str(err.value)
        # the command refuses it before any fitting
        assert main(["calibrate", str(out), "-o", str(tmp_path / "never.toml")]) == 2
        assert field in capsys.readouterr().err
    finally:
        out.unlink()


@pytest.mark.parametrize("calibration, field", [
    (5, "field 'calibration'"),
    ({"std": 3}, "field 'calibration.std'"),
])
def test_a_calibration_table_of_the_wrong_kind_is_refused(calibrated, tmp_path, calibration,
                                                          field, capsys):
    """One clear message (exit 2), not a traceback, when [calibration] or its std is no table."""
    path, doc = calibrated
    bad = dict(doc)
    bad["calibration"] = calibration
    out = path.parent / "bad-calibration.calibrated.toml"
    out.write_text(dumps(bad))
    try:
        with pytest.raises(ConfigError, match=field.split("'")[1].replace(".", r"\.")):
            load_rig(out)
        assert main(["calibrate", str(out), "-o", str(tmp_path / "never.toml")]) == 2
        assert field in capsys.readouterr().err
    finally:
        out.unlink()
