"""The rig checked on the day: a reference body captured before the session, identified with the
calibrated rig against its known values (rigtool.pipeline.rig_check).

The demo's block-a capture is a body of known inertia on the demo's rig. Against the rig as
calibrated it must hold (its largest error within the held-out limit, its force scale within
3 standard errors of 1). Against a rig file whose every stiffness reads 0.5 % high (the day's
springs softer than the file: a 20 K warmer day, or hooks that seated) its mass from vibration
reads the force scale: ``delta = -(m_v - m) / (m_p + m)`` is -0.5 % to first order, measured
within a tenth of itself (the scale's other first-order terms: the calibration's own errors,
3e-5 here), and the body no longer holds (a force scale of the weighed-mass posture fit turns
into an inertia error many times larger).
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from rigtool.cli import main
from rigtool.config import FilterSettings, load_rig, load_session
from rigtool.errors import ConfigError
from rigtool.pipeline.rig_check import check_rig_on_the_day


def _session(tmp, demo_tmp, rig_name: str, load: str = '["block-a"]'):
    shutil.copytree(demo_tmp / "captures" / "two-link", tmp, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("results"))
    shutil.copy(demo_tmp / "calibration" / "paper-rig" / "block-a-centre.csv",
                tmp / "check.csv")
    text = (tmp / "session.toml").read_text()
    text = re.sub(r'rig = ".*"', f'rig = "{rig_name}"', text, count=1)
    text += f'\n[[rig_checks]]\ncapture = "check.csv"\nload = {load}\n'
    (tmp / "session.toml").write_text(text)
    return tmp / "session.toml"


def _rig_copy(demo_tmp, dest, stiffness_factor: float = 1.0):
    src = demo_tmp / "calibration" / "paper-rig.calibrated.toml"
    text = src.read_text().replace('"paper-rig/', f'"{demo_tmp / "calibration"}/paper-rig/')
    text = re.sub(r"^stiffness = ([0-9.eE+-]+)$",
                  lambda m: f"stiffness = {float(m.group(1)) * stiffness_factor!r}", text,
                  flags=re.M)
    dest.write_text(text)


def test_a_check_naming_a_body_the_rig_file_lacks_is_refused(demo_run, tmp_path, capsys):
    demo_tmp, _ = demo_run
    _rig_copy(demo_tmp, tmp_path / "rig.toml")
    path = _session(tmp_path, demo_tmp, "rig.toml", load='["block-z"]')
    with pytest.raises(ConfigError, match=r"block-z.*block-a, block-b") as err:
        check_rig_on_the_day(load_session(path), load_rig(tmp_path / "rig.toml"),
                             FilterSettings())
    assert "rig_checks[0].load" in str(err.value)
    assert main(["run", str(path), "-o", str(tmp_path / "out")]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("factor", [1.0, 1.005])
def test_the_day_check_holds_or_reads_the_force_scale(demo_run, tmp_path, factor):
    demo_tmp, _ = demo_run
    _rig_copy(demo_tmp, tmp_path / "rig.toml", factor)
    path = _session(tmp_path, demo_tmp, "rig.toml")
    (check,) = check_rig_on_the_day(load_session(path), load_rig(tmp_path / "rig.toml"),
                                    FilterSettings())
    delta = check.scale["delta"]
    std = float(np.hypot(check.scale["std_noise"], check.scale["std_calibration"]))
    sig = check.holdout.signature
    if factor == 1.0:
        assert abs(delta) < 3.0 * std and not sig.failed
        assert check.to_json()["holds"] is True
    else:
        assert abs(delta - (1.0 / factor - 1.0)) < 0.1 * abs(1.0 / factor - 1.0)
        assert sig.failed and "force per displacement" in sig.likely_cause()
        assert check.to_json()["holds"] is False
