"""Shared fixtures: the bundled demo calibrated and run once per test session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rigtool.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """A copy of the demo (calibration/ and captures/), calibrated and run with ``rigtool``.

    Returns ``(tmp, out)``: the copy's root and the results directory. Tests must not modify
    the results; they may add files next to the copied captures.
    """
    tmp = tmp_path_factory.mktemp("demo")
    shutil.copytree(ROOT / "calibration", tmp / "calibration",
                    ignore=shutil.ignore_patterns("*.calibrated.toml"))
    shutil.copytree(ROOT / "captures", tmp / "captures",
                    ignore=shutil.ignore_patterns("results"))
    assert main(["calibrate", str(tmp / "calibration" / "paper-rig.toml")]) == 0
    out = tmp / "results"
    assert main(["run", str(tmp / "captures" / "two-link" / "session.toml"), "-o", str(out)]) == 0
    return tmp, out
