"""tools/make_robot_study.py without the robot extra's packages: one line naming the extra to
install, exit status 2, no traceback (as ``rigtool`` does for bad input).

The missing package is simulated in a child process: ``importlib.metadata`` reports
example-robot-data (a distribution of data files, no module) as not installed, or an import
hook refuses pinocchio as an interpreter without it would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_WITHOUT = {
    "example-robot-data": """
import importlib.metadata as md
_real = md.distribution
def _distribution(name):
    if name.replace("_", "-").lower() == "example-robot-data":
        raise md.PackageNotFoundError(name)
    return _real(name)
md.distribution = _distribution
""",
    "pin": """
import importlib.abc, importlib.metadata as md, importlib.util, sys
class _NoPinocchio(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "pinocchio":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoPinocchio())
_find = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a, **k: (
    None if name.split(".")[0] == "pinocchio" else _find(name, *a, **k))
_real = md.distribution
def _distribution(name):
    if name.lower() == "pin":
        raise md.PackageNotFoundError(name)
    return _real(name)
md.distribution = _distribution
""",
}


@pytest.mark.parametrize("missing", sorted(_WITHOUT))
def test_missing_robot_extra_is_one_line_and_exit_status_2(missing, tmp_path):
    tool, out = str(ROOT / "tools" / "make_robot_study.py"), str(tmp_path / "study")
    script = _WITHOUT[missing] + f"""
import runpy, sys
sys.argv = [{tool!r}, {out!r}, "--motion", "14"]
runpy.run_path({tool!r}, run_name="__main__")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert lines[0].startswith("make_robot_study.py: error: ")
    assert f"needs {missing}" in lines[0] and "pip install 'rigtool[robot]'" in lines[0]
    assert not (tmp_path / "study").exists()            # nothing written
