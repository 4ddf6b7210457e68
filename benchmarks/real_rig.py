"""The bundled demo on a rig that is not the ideal one it was calibrated as: per imperfection,
the postures' worst COM (mm) and inertia (%) error against the simulator's truth, the share
of the postures' and Phi_B's numbers within 2 standard errors, the force scale the session
measured, and what the checks said.

    python3 benchmarks/real_rig.py [--rows ideal,stiffness,warm,camera] [--code CHECKOUT]

``--code``: run another checkout's rigtool on the same rows (old against new).

Each row copies the bundled calibration/ and captures/ to a new folder, changes what the
row's imperfection changes, and runs ``rigtool calibrate`` then ``rigtool run`` as a user
does (a new process each, this checkout on ``PYTHONPATH``):

- ``ideal``: the demo as it is;
- ``stiffness``: every calibrated stiffness raised by 0.12 % (the springs are softer on the
  day than their calibration says);
- ``warm``: the day 5 K warmer than the calibration's: the calibrated stiffnesses over
  ``1 + 5 K x (-2.4e-4 /K)`` (steel's shear modulus);
- ``camera``: the motion-capture system's length scale +0.05 % on the calibration's day
  (every calibration capture's markers scaled about the lab origin, then calibrated) and
  -0.05 % on the session's (every session capture's).

The rows but ``camera`` change the calibrated rig file, not the captures: the physics of a
force-scale change between the calibration and the day, without a simulator of it.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHEAR_MODULUS_PER_K = -2.4e-4


CODE = [ROOT]


def _run(args: list[str], cwd: Path) -> int:
    env = dict(os.environ, PYTHONPATH=str(CODE[0]))
    proc = subprocess.run([sys.executable, "-m", "rigtool.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if proc.returncode not in (0, 3, 4):
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"rigtool {args[0]} failed with status {proc.returncode}")
    return proc.returncode


def scale_stiffness(path: Path, factor: float) -> None:
    """Every ``[[springs]]`` stiffness of a calibrated rig file times ``factor``."""
    text = path.read_text()
    head, sep, tail = text.partition("[[reference_bodies]]")
    head = re.sub(r"^stiffness = ([0-9.eE+-]+)$",
                  lambda m: f"stiffness = {float(m.group(1)) * factor!r}", head, flags=re.M)
    path.write_text(head + sep + tail)


def _scale_capture(path: Path, factor: float) -> None:
    """A Vicon CSV capture's marker coordinates times ``factor`` (about the lab origin)."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    out = rows[:5]
    for row in rows[5:]:
        out.append(row[:2] + [f"{float(v) * factor:.6f}" if v else v for v in row[2:]])
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(out)


def _row(name: str, work: Path) -> dict:
    shutil.copytree(ROOT / "calibration", work / "calibration")
    shutil.copytree(ROOT / "captures", work / "captures")
    rigdir = work / "calibration"
    if name == "camera":
        for cap in (rigdir / "paper-rig").glob("*.csv"):
            _scale_capture(cap, 1.0005)
        for cap in (work / "captures" / "two-link").glob("*.csv"):
            _scale_capture(cap, 0.9995)
    cal_status = _run(["calibrate", "calibration/paper-rig.toml", "--force"], work)
    calibrated = rigdir / "paper-rig.calibrated.toml"
    if name == "stiffness":
        scale_stiffness(calibrated, 1.0012)
    elif name == "warm":
        scale_stiffness(calibrated, 1.0 / (1.0 + 5.0 * SHEAR_MODULUS_PER_K))
    run_status = _run(["run", "captures/two-link/session.toml"], work)
    doc = json.loads((work / "captures" / "two-link" / "results" / "report.json").read_text())
    return _figures(doc) | {"calibrate_status": cal_status, "run_status": run_status}


def _figures(doc: dict) -> dict:
    entries = doc["truth_comparison"]["entries"]
    post = entries["postures"]
    com_mm = max(abs(e["error"]) * 1e3 for e in post if ".com[" in e["entry"])
    inertia_pct = 0.0
    for name in {e["entry"].split(".")[0] for e in post}:
        es = [e for e in post if e["entry"].startswith(name + ".I_")]
        err = np.array([e["error"] for e in es])
        tru = np.array([e["truth"] for e in es])
        twice = np.array([1.0 if e["entry"][-2] == e["entry"][-1] else 2.0 for e in es])
        inertia_pct = max(inertia_pct, 100 * float(np.sqrt(np.sum(twice * err ** 2)
                                                           / np.sum(twice * tru ** 2))))

    def share(es):
        z = np.array([e["z"] for e in es if e.get("z") is not None], float)
        return float(np.mean(np.abs(z) < 2.0)) if len(z) else float("nan")

    checks = [f"{c['title']}: {c['level']}" for c in doc["checks"] if c["level"] != "ok"]
    scale = doc.get("force_scale") or {}
    return {"postures_com_mm": com_mm, "postures_inertia_pct": inertia_pct,
            "postures_within_2se": share(post),
            "phi_b_within_2se": share(entries.get("phi_b", [])),
            "force_scale_pct": 100 * scale.get("delta", float("nan")),
            "force_scale_std_pct": 100 * scale.get("std", float("nan")),
            "applied": bool(scale.get("applied")), "checks": checks or ["all ok"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="ideal,stiffness,warm,camera")
    parser.add_argument("--code", type=Path, default=ROOT,
                        help="the checkout whose rigtool runs (default: this one)")
    args = parser.parse_args()
    CODE[0] = args.code.resolve()
    print(f"rigtool from {CODE[0]}")
    print(f"{'row':10} {'COM mm':>8} {'I %':>7} {'post 2SE':>8} {'PhiB 2SE':>8} "
          f"{'scale %':>16} applied  checks")
    for name in args.rows.split(","):
        with tempfile.TemporaryDirectory(prefix=f"real-rig-{name}-") as tmp:
            f = _row(name, Path(tmp))
        print(f"{name:10} {f['postures_com_mm']:8.3f} {f['postures_inertia_pct']:7.3f} "
              f"{100 * f['postures_within_2se']:7.0f}% {100 * f['phi_b_within_2se']:7.0f}% "
              f"{f['force_scale_pct']:+8.4f}+-{f['force_scale_std_pct']:.4f} "
              f"{'yes' if f['applied'] else 'no ':7}  {'; '.join(f['checks'])}", flush=True)


if __name__ == "__main__":
    main()
