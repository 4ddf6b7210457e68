"""A person from an OpenSim model end to end: the personalised model's accuracy.

Writes the 13-body model and its scenario (tools/make_opensim_subject.py), simulates it,
writes the simulator's true rig calibration as the session's rig file (the rig is not what
is measured here), runs ``rigtool run`` and prints, per link, the mass and COM against the
truth with their standard errors and sources, the share within +-2 standard errors, and
whether ``personalised.osim`` loads in OpenSim with the total mass weighed.

    python3 benchmarks/opensim_subject.py [--out DIR] [--postures 14] [--seed 7]

About 15 s to simulate and 1-3 min to run on two cores.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _rigtool(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "rigtool.cli", *args], capture_output=True,
                          text=True)
    if done.returncode not in (0, 3):
        sys.exit(f"rigtool {args[0]} failed ({done.returncode}):\n{done.stderr}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--postures", type=int, default=14)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="opensim_subject_"))
    spec = importlib.util.spec_from_file_location("make_opensim_subject",
                                                  ROOT / "tools" / "make_opensim_subject.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    _, scenario = tool.write_subject(out / "gen", postures=args.postures, seed=args.seed)
    bundle = out / "bundle"
    _rigtool("simulate", str(scenario), "-o", str(bundle), "--force")
    from rigtool.sim.true_calibration import write_true_calibration
    rig = bundle / "calibration" / "paper-rig.toml"
    write_true_calibration(str(rig), str(rig.with_suffix(".truth.json")),
                           str(rig.with_suffix(".calibrated.toml")))
    session = bundle / "captures" / "opensim-subject" / "session.toml"
    results = out / "results"
    start = time.perf_counter()
    _rigtool("run", str(session), "-o", str(results))
    wall = time.perf_counter() - start
    rep = json.loads((results / "report.json").read_text())
    truth = {l["name"]: l for l in json.loads((session.parent / "truth.json").read_text())
             ["links"]}
    print(f"rigtool run: {wall:.0f} s wall; relative-motion model "
          f"{rep['relative_motion']['model']['used']}")
    print(f"{'link':10s} {'mass err kg':>12s} {'(SE)':>7s}  {'COM err mm x y z':>24s}  "
          f"{'(SE)':>20s}  source mass / COM")
    z = []
    for name, seg in rep["segments"]["links"].items():
        t = truth[name]
        em = seg["mass"] - t["mass"]
        ec = 1e3 * (np.array(seg["com"]) - t["com"])
        sc = 1e3 * np.array(seg["com_std"])
        z += [em / seg["mass_std"], *(ec / sc)]
        print(f"{name:10s} {em:+12.3f} {seg['mass_std']:7.3f}  "
              f"{' '.join(f'{v:+7.1f}' for v in ec):>24s}  "
              f"{' '.join(f'{v:6.1f}' for v in sc):>20s}  {seg['source']['mass']} / "
              f"{','.join(seg['source']['com'])}")
    z = np.abs(z)
    print(f"within +-2 SE: {np.mean(z < 2):.0%} of {z.size}; largest |error|/SE {z.max():.2f}")
    try:
        import opensim as osim
    except ImportError:
        print("opensim not installed: personalised.osim not loaded")
        return 0
    osim.Logger.setLevelString("error")
    model = osim.Model(str(results / "personalised.osim"))
    state = model.initSystem()
    print(f"personalised.osim loads in OpenSim {osim.GetVersion()}: "
          f"{model.getBodySet().getSize()} bodies, total mass {model.getTotalMass(state):.4f} kg "
          f"(weighed {sum(t['mass'] for t in truth.values()):.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
