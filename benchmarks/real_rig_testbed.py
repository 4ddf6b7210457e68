"""The demo's study simulated on the independent test bed (MuJoCo, benchmarks/testbed) with one
imperfection of a real rig per row, then calibrated and run by ``rigtool calibrate`` and
``rigtool run`` as a user does (a new process each, this checkout on ``PYTHONPATH``): the
calibration's worst stiffness error, the postures' worst COM (mm) and inertia (%) error, the
worst Phi_B error in standard errors, the share of the postures' and Phi_B's numbers within
2 standard errors, the force scale the session measured (and whether it was applied), the
exit statuses of calibrate and run (4: the calibration failed its held-out test), and the
checks that were not green.

    python3 benchmarks/real_rig_testbed.py [--rows ideal,mass,...] [--json OUT.json] [--keep DIR]

``--keep DIR``: each row's lab folder kept under DIR/ROW (``rigtool calibrate
calibration/paper-rig.toml`` there prints the calibration's verdict and its likely cause).

Rows (each off in every other row; :mod:`benchmarks.testbed.rigphysics`):

- ``ideal``: the test bed's ideal rig (massless linear springs, viscous damping, rigid frame);
- ``mass``: each spring 0.40 kg, a chain of four beads (40 integration steps a frame);
- ``progressive``: the tangent stiffness +1.5 % over a 70 mm stroke;
- ``hysteretic``: loss factor 0.01 (flat over 0.3-5 Hz) instead of the viscous damping;
- ``frame``: the anchors on a 17 kg frame with 15-26 Hz modes (2 % damped);
- ``noise``: 1/f marker noise, 0.03 mm common to every marker and 0.03 mm per marker, on top
  of the 0.1 mm white noise;
- ``warm``: every stiffness -0.12 % on the session's captures only;
- ``camera``: the motion-capture length scale +0.05 % on the calibration's captures, -0.05 %
  on the session's;
- ``mass-session``, ``progressive-session``, ``hysteretic-session``, ``frame-session``: that
  imperfection on the session's captures only (the calibration's rig ideal).

The truth of the stiffness is the spring's static stiffness on the calibration's day.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.real_rig import _figures, _run  # noqa: E402
from benchmarks.testbed.demo import demo_study  # noqa: E402
from benchmarks.testbed.rigphysics import RigPhysics  # noqa: E402
from benchmarks.testbed.study import Study, write_study  # noqa: E402

ROWS = ("ideal", "mass", "progressive", "hysteretic", "frame", "noise", "warm", "camera")
PHYSICAL = ("mass", "progressive", "hysteretic", "frame")


def row_study(row: str, *, seed: int = 2002) -> Study:
    """The demo's study on the test bed with the imperfection of row ``row``; ``NAME-session``
    (mass, progressive, hysteretic, frame): that rig on the session's captures only, the
    calibration's rig ideal (the session's model error alone, the calibration exact)."""
    study = demo_study(seed=seed)
    name, _, where = row.partition("-")
    if where not in ("", "session") or (where and name not in PHYSICAL):
        raise SystemExit(f"unknown row {row!r} (rows: {', '.join(ROWS)}, or "
                         f"{'/'.join(PHYSICAL)}-session)")
    if name == "mass":
        study.physics = RigPhysics(spring_mass_kg=0.40, spring_beads=4)
        # the lines' surge modes reach ~130 Hz: 40 RK4 steps a frame (omega h < 0.2)
        study.capture = dataclasses.replace(study.capture, substeps=40)
    elif name == "progressive":
        study.physics = RigPhysics(progressive=0.015, stroke_m=0.070)
    elif name == "hysteretic":
        study.physics = RigPhysics(loss_factor=0.01)
    elif name == "frame":
        study.physics = RigPhysics(frame_mass_kg=17.0)
    elif name == "noise":
        study.capture = dataclasses.replace(study.capture, flicker_sigma_m=(3e-5, 3e-5))
    elif name == "warm":
        study.session_physics = RigPhysics(stiffness_factor=1.0 - 0.0012)
    elif name == "camera":
        study.camera_scale = (1.0005, 0.9995)
    elif name != "ideal":
        raise SystemExit(f"unknown row {row!r} (rows: {', '.join(ROWS)})")
    if where:
        study.session_physics, study.physics = study.physics, RigPhysics()
    return study


def _calibration_figures(calibrated: Path, truth: Path) -> dict:
    """The calibrated rig file's worst stiffness error (%, signed) against the calibration
    day's static stiffness, and in its standard errors (the report's entries hold the
    session's stiffness, the force scale applied)."""
    doc = tomllib.loads(calibrated.read_text())
    std = doc["calibration"]["std"]["springs"]
    true_k = {s["name"]: s["stiffness"] for s in json.loads(truth.read_text())["springs"]}
    rel, z = [], []
    for s in doc["springs"]:
        err = s["stiffness"] - true_k[s["name"]]
        rel.append(100 * err / true_k[s["name"]])
        z.append(abs(err) / std[s["name"]]["stiffness"])
    return {"k_error_pct": max(rel, key=abs), "k_worst_z": max(z)}


def _phi_b_worst_z(doc: dict) -> float:
    es = doc["truth_comparison"]["entries"].get("phi_b", [])
    return max((abs(e["z"]) for e in es if e.get("z") is not None), default=float("nan"))


def measure(name: str, work: Path) -> dict:
    """Simulate row ``name`` under ``work``, calibrate and run: its figures."""
    write_study(row_study(name), work)
    cal_status = _run(["calibrate", "calibration/paper-rig.toml", "--force"], work)
    run_status = _run(["run", "captures/two-link/session.toml"], work)
    doc = json.loads((work / "captures" / "two-link" / "results" / "report.json").read_text())
    cal = _calibration_figures(work / "calibration" / "paper-rig.calibrated.toml",
                               work / "captures" / "two-link" / "truth.json")
    return (_figures(doc) | cal
            | {"phi_b_worst_z": _phi_b_worst_z(doc), "calibrate_status": cal_status,
               "run_status": run_status})


HEADER = (f"{'row':19} {'k err %':>8} {'k |z|':>6} {'COM mm':>7} {'I %':>6} {'post 2SE':>8} "
          f"{'PhiB |z|':>8} {'PhiB 2SE':>8} {'scale %':>16} applied exit  checks")


def line(name: str, f: dict) -> str:
    """One row of the table printed under :data:`HEADER`."""
    return (f"{name:19} {f['k_error_pct']:+8.3f} {f['k_worst_z']:6.1f} "
            f"{f['postures_com_mm']:7.3f} {f['postures_inertia_pct']:6.3f} "
            f"{100 * f['postures_within_2se']:7.0f}% {f['phi_b_worst_z']:8.1f} "
            f"{100 * f['phi_b_within_2se']:7.0f}% "
            f"{f['force_scale_pct']:+8.4f}+-{f['force_scale_std_pct']:.4f} "
            f"{'yes' if f['applied'] else 'no ':7} {f['calibrate_status']}/{f['run_status']}"
            f"   {'; '.join(f['checks'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--json", type=Path, help="write every row's figures here")
    parser.add_argument("--keep", type=Path,
                        help="keep each row's lab folder under KEEP/ROW (else a temporary one)")
    args = parser.parse_args(argv)
    print(HEADER)
    out = {}
    for name in args.rows.split(","):
        if args.keep:
            f = measure(name, args.keep / name)
        else:
            with tempfile.TemporaryDirectory(prefix=f"real-rig-testbed-{name}-") as tmp:
                f = measure(name, Path(tmp))
        out[name] = f
        print(line(name, f), flush=True)
        if args.json:
            args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
