"""Shared fixtures: the bundled demo calibrated and run once per test session, and its first
posture against the simulator's true calibration."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

# The settings the ``rigtool`` console script makes for its own processes
# (rigtool.cli.console), made here for the test process and the workers it starts, before
# anything imports NumPy or numba: the tests call rigtool.cli.main in-process, so without
# them BLAS would start a thread per core for products of tens of columns (which then only
# fight the other tests' process for the cores) and numba would compile the tree kernels at
# its slower default optimisation level. A value set in the environment stands.
from rigtool.cli import BLAS_THREADS, NUMBA_OPT_LEVEL  # noqa: E402  (imports no NumPy)

os.environ.setdefault("NUMBA_OPT", NUMBA_OPT_LEVEL)
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, BLAS_THREADS)

import pytest  # noqa: E402

from rigtool.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """A copy of the demo (calibration/ and captures/), calibrated and run with ``rigtool``.

    Returns ``(tmp, out)``: the copy's root and the results directory. Tests must not modify
    the results; they may add files next to the copied captures. What the two commands
    printed is in ``tmp / "calibrate.out"`` and ``tmp / "run.out"``.
    """
    tmp = tmp_path_factory.mktemp("demo")
    shutil.copytree(ROOT / "calibration", tmp / "calibration",
                    ignore=shutil.ignore_patterns("*.calibrated.toml"))
    shutil.copytree(ROOT / "captures", tmp / "captures",
                    ignore=shutil.ignore_patterns("results"))
    out = tmp / "results"
    for name, args in (("calibrate", [str(tmp / "calibration" / "paper-rig.toml")]),
                       ("run", [str(tmp / "captures" / "two-link" / "session.toml"), "-o",
                                str(out)])):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            status = main([name, *args])
        # what each command printed, for the tests that hold the docs to it
        (tmp / f"{name}.out").write_text(printed.getvalue(), encoding="utf-8")
        assert status == 0, printed.getvalue()
    return tmp, out


@pytest.fixture(scope="module")
def posture1(tmp_path_factory):
    """The demo session against a rig file holding the simulator's true calibration:
    ``(session, rigfile, tree, markers, data)`` of its first posture (one per test module;
    tests must not modify them)."""
    from rigtool.config import load_rig, load_session
    from rigtool.mocap import read_capture
    from rigtool.pipeline.session import link_markers
    from rigtool.sim.true_calibration import write_true_calibration

    tmp = tmp_path_factory.mktemp("posture1")
    shutil.copytree(ROOT / "captures" / "two-link", tmp / "captures" / "two-link",
                    ignore=shutil.ignore_patterns("results"))
    (tmp / "calibration").mkdir()
    write_true_calibration(ROOT / "calibration" / "paper-rig.toml",
                           ROOT / "calibration" / "paper-rig.truth.json",
                           tmp / "calibration" / "paper-rig.calibrated.toml")
    session = load_session(tmp / "captures" / "two-link" / "session.toml")
    rigfile = load_rig(session.rig_path)
    markers = link_markers(session, session.tree)
    return session, rigfile, session.tree, markers, read_capture(session.postures[0].capture)
