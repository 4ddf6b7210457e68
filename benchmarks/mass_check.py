"""The report's mass check: what the vibration weighs, and when the check fires.

Copies the bundled demo, calibrates its rig as `rigtool calibrate` does (output error, with
the calibration's covariance), then fits each of the demo's three postures with the weighed
mass set off the true 80.817 kg by a range of offsets. Prints per offset: the mass the
vibration gives (output-error fit, mass freed at the estimate: one Gauss-Newton step), its
error against the true mass, its standard error (marker noise, calibration), the fit's
marker residual against the marker noise, and the levels of the mass and residual checks;
and, for comparison, the equation-error fit's mass (the old check's estimate).

    python3 benchmarks/mass_check.py [--offsets -2,-1,-0.5,-0.2,0,0.2,0.5,1,2]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TRUE_MASS = 80.817


def main() -> None:
    from rigtool.cli import main as cli
    from rigtool.config import load_rig, load_session
    from rigtool.devices.scale import DEFAULT_SCALE_REL_STD
    from rigtool.mocap import read_capture
    from rigtool.pipeline.session import fit_one_posture, link_markers
    from rigtool.report.checks_capture import marker_residual_check, mass_check

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offsets", default="-2,-1,-0.5,-0.2,0,0.2,0.5,1,2",
                    help="weighed-mass offsets, percent")
    args = ap.parse_args()
    offsets = [float(v) for v in args.offsets.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="rigtool-mass-check-"))
    try:
        shutil.copytree(ROOT / "calibration", tmp / "calibration",
                        ignore=shutil.ignore_patterns("*.calibrated.toml"))
        shutil.copytree(ROOT / "captures" / "two-link", tmp / "captures" / "two-link",
                        ignore=shutil.ignore_patterns("results"))
        assert cli(["calibrate", str(tmp / "calibration" / "paper-rig.toml")]) == 0
        session = load_session(tmp / "captures" / "two-link" / "session.toml")
        rigfile = load_rig(session.rig_path)
        markers = link_markers(session, session.tree)
        datas = [read_capture(ref.capture) for ref in session.postures]
        print("\noffset %  | vibration kg (3 postures)   | error g  | std g (noise, cal) | "
              "resid/noise | mass check | resid check | EE mass kg | s/posture")
        for off in offsets:
            weighed = TRUE_MASS * (1 + off / 100)
            t0 = time.process_time()
            outs = [fit_one_posture(session, rigfile, session.tree, markers, ref.capture,
                                    name=ref.name, window=ref.window, units=ref.units,
                                    total_mass_kg=weighed, settings=session.filter,
                                    weighting="dual-metric", method="output-error", data=d)
                    for ref, d in zip(session.postures, datas)]
            cpu = (time.process_time() - t0) / len(outs)
            out = types.SimpleNamespace(
                postures=outs, rigfile=rigfile, relative_refinement=None,
                total_mass_kg=weighed, total_mass_std_kg=DEFAULT_SCALE_REL_STD * weighed,
                total_mass_std_source="default")
            vm = [p.refinement.mass_from_vibration for p in outs]
            vals = np.array([v.value_kg for v in vm])
            ratio = max(p.refinement.marker_sigma_mm / p.marker_noise_mm for p in outs)
            ee = np.mean([p.equation_error.mass_from_vibration[0] for p in outs])
            print(f"{off:+8.2f}  | " + " ".join(f"{v:8.3f}" for v in vals)
                  + f" | {1e3 * np.max(np.abs(vals - TRUE_MASS)):7.1f}"
                  + f"  | {1e3 * max(v.std_kg for v in vm):5.1f} ("
                  + f"{1e3 * max(v.std_noise_kg for v in vm):.1f}, "
                  + f"{1e3 * max(v.std_calibration_kg for v in vm):.1f})"
                  + f"     | {ratio:10.2f}  | {mass_check(out).level:10s} | "
                  + f"{marker_residual_check(out).level:11s} | {ee:10.3f} | {cpu:6.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
