"""Which living-body check speaks on which simulated effect (fast: equation-error fits).

Takes the bundles ``benchmarks/living.py --keep DIR`` wrote, fits every posture by equation
error (seconds each; the living signs do not depend on the fit method) and prints the four
living checks of rigtool.report.checks_living and each posture's equation-error COM and
inertia errors.

    PYTHONPATH=. python3 benchmarks/living_checks.py DIR [NAME ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from rigtool.config import load_rig, load_session
from rigtool.pipeline.session import fit_one_posture, link_markers
from rigtool.report.checks_living import (breathing_check, skin_check, soft_tissue_check,
                                          support_check)


def main() -> None:
    base = Path(sys.argv[1])
    names = sys.argv[2:] or sorted(p.name for p in base.iterdir()
                                   if (p / "captures" / "two-link" / "truth.json").exists())
    for name in names:
        sp = base / name / "captures" / "two-link" / "session.toml"
        session = load_session(sp)
        rigfile = load_rig(session.rig_path)
        markers = link_markers(session, session.tree)
        fits = [fit_one_posture(session, rigfile, session.tree, markers, ref.capture,
                                name=ref.name, window=ref.window, units=ref.units,
                                total_mass_kg=session.total_mass_kg, settings=session.filter,
                                method="equation-error") for ref in session.postures]
        out = SimpleNamespace(postures=fits, tree=session.tree,
                              total_mass_kg=session.total_mass_kg, rigfile=rigfile)
        truth = {p["name"]: p for p in json.loads((sp.parent / "truth.json").read_text())[
            "postures"]}
        com = [1e3 * np.linalg.norm(np.subtract(f.result.com, truth[f.result.name]["com"]))
               for f in fits]
        ine = [100 * np.linalg.norm(np.subtract(f.result.inertia_com,
                                                truth[f.result.name]["inertia_com"]))
               / np.linalg.norm(truth[f.result.name]["inertia_com"]) for f in fits]
        print(f"== {name}: marker noise (platform) "
              f"{', '.join(f'{f.marker_noise_mm:.3f}' for f in fits)} mm; equation-error COM "
              f"err {min(com):.2f}-{max(com):.2f} mm, inertia err {min(ine):.2f}-{max(ine):.2f} %")
        for c in (breathing_check(out), soft_tissue_check(out), support_check(out),
                  skin_check(out)):
            print(f"  {c.key}: {c.level}" + (f": {c.finding}" if c.is_warning else ""))


if __name__ == "__main__":
    main()
