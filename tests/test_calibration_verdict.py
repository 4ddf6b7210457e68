"""A calibration judges itself: a held-out reference body many standard errors off is a failed
calibration, said by ``rigtool calibrate`` with its own exit status and the likely cause."""

from __future__ import annotations

import csv
import shutil
import tomllib
from pathlib import Path

import numpy as np

from rigtool.errors import EXIT_MODEL_FAILED
from rigtool.identify.calibration.verdict import HOLDOUT_Z_LIMIT, HoldoutSignature, max_error_z

ROOT = Path(__file__).resolve().parents[1]


def test_max_error_z_takes_the_com_and_the_six_inertia_entries():
    inertia = np.diag([1.0, 2.0, 3.0])
    off = inertia.copy()
    off[0, 1] = off[1, 0] = 0.05                   # 5 standard errors of 0.01
    z = max_error_z(np.zeros(3), np.zeros(3), off, inertia, np.full(3, 1e-3),
                    np.full((3, 3), 0.01))
    assert np.isclose(z, 5.0)
    assert np.isnan(max_error_z(np.zeros(3), np.zeros(3), off, inertia, np.zeros(3),
                                np.zeros((3, 3))))


def test_the_likely_cause_follows_the_signature():
    # a force scale at a stretch beyond the fitted captures': progressive springs
    sig = HoldoutSignature("h", 10.0, force_scale=-0.004, force_scale_std=0.0002,
                           stretch_mm=65.0, fitted_stretch_mm=(20.0, 27.0))
    assert sig.failed and "progressive" in sig.likely_cause()
    # the same scale within their stretch: another day (temperature, the cameras)
    sig = HoldoutSignature("h", 10.0, force_scale=-0.004, force_scale_std=0.0002,
                           stretch_mm=24.0, fitted_stretch_mm=(20.0, 27.0))
    assert "different days" in sig.likely_cause()
    # the force right and the inertia wrong: what a rigid suspension lacks
    sig = HoldoutSignature("h", 10.0, force_scale=1e-5, force_scale_std=5e-5,
                           stretch_mm=24.0, fitted_stretch_mm=(20.0, 27.0))
    assert "springs with mass" in sig.likely_cause()
    assert not HoldoutSignature("h", HOLDOUT_Z_LIMIT - 0.1).failed


def _scale_capture(path: Path, factor: float) -> None:
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    rows[5:] = [r[:2] + [f"{float(v) * factor:.6f}" if v else v for v in r[2:]]
                for r in rows[5:]]
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)


def test_calibrate_says_loudly_that_a_calibration_failed(tmp_path, capsys):
    """The demo's calibration captures read 0.05 % long (a motion-capture length scale the
    rig file's geometry does not share): the held-out body comes out 16 standard errors
    off. The calibrated file is written; the command says it failed, why it may have, and
    exits with EXIT_MODEL_FAILED. The demo itself passes (conftest's demo_run)."""
    from rigtool.cli import main

    shutil.copytree(ROOT / "calibration", tmp_path / "calibration",
                    ignore=shutil.ignore_patterns("*.calibrated.toml"))
    for cap in (tmp_path / "calibration" / "paper-rig").glob("*.csv"):
        _scale_capture(cap, 1.0005)
    status = main(["calibrate", str(tmp_path / "calibration" / "paper-rig.toml")])
    assert status == EXIT_MODEL_FAILED == 4
    err = capsys.readouterr().err
    assert "CALIBRATION FAILED" in err and "holdout.csv" in err and "Likely cause" in err
    doc = tomllib.loads((tmp_path / "calibration" / "paper-rig.calibrated.toml").read_text())
    (h,) = doc["calibration"]["holdout"]
    assert h["max_error_z"] > HOLDOUT_Z_LIMIT and h["likely_cause"]
