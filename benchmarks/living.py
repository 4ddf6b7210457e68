"""A living body on the rig: what each effect does to the default pipeline's numbers.

Simulates the two-link demo body (scenarios/living/*.toml: 20 s postures at 100 Hz, 0.1 mm
marker noise) rigid and with each effect of a living body alone and all together
(rigtool.sim.living), completes the rig file with the TRUE rig (no calibration error),
runs the default ``rigtool run`` on each session and prints, per effect, the posture COM
and inertia errors, the Phi_B errors (minimal parameters per link), the marker noise the
fits estimated, and the checks that were not green.

    PYTHONPATH=. python3 benchmarks/living.py [--only breathing14,wobbling] [--keep DIR]
        [--reuse] [--pipeline OTHER_CHECKOUT --label before]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("rigid", "breathing14", "breathing10", "heartbeat", "wobbling", "support",
             "skin", "all")


def simulate(name: str, out: Path) -> tuple[Path, float]:
    """Simulate one scenario into ``out`` with the true rig as its calibrated rig file."""
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import write_bundle
    from rigtool.sim.true_calibration import write_true_calibration

    sc = load_scenario(ROOT / "scenarios" / "living" / f"{name}.toml")
    t0 = time.perf_counter()
    bundle = write_bundle(sc, out, force=True)
    sim_s = time.perf_counter() - t0
    rig_toml = out / bundle.rig_file
    write_true_calibration(rig_toml, rig_toml.with_suffix(".truth.json"),
                           rig_toml.with_name(f"{sc.rig.name}.calibrated.toml"))
    return out / bundle.session_file, sim_s


def run(session: Path, pipeline: Path, label: str) -> dict:
    """``rigtool run`` (defaults) on a simulated session with the pipeline of ``pipeline``
    (a rigtool source tree); the report and the truth."""
    import os
    results = session.parent / f"results-{label}"
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(pipeline)}
    proc = subprocess.run([sys.executable, "-m", "rigtool.cli", "run", str(session), "-o",
                           str(results)], capture_output=True, text=True, cwd=pipeline, env=env)
    run_s = time.perf_counter() - t0
    if proc.returncode not in (0,):
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
    report = json.loads((results / "report.json").read_text())
    truth = json.loads((session.parent / "truth.json").read_text())
    return {"report": report, "truth": truth, "run_s": run_s, "exit": proc.returncode}


def scores(report: dict, truth: dict) -> dict:
    """Posture COM (mm) and inertia (%) errors, Phi_B errors, estimated noise, checks."""
    true_p = {p["name"]: p for p in truth["postures"]}
    com, inertia = [], []
    for p in report.get("postures", []):
        t = true_p[p["name"]]
        com.append(1e3 * np.linalg.norm(np.subtract(p["com"], t["com"])))
        i_t = np.asarray(t["inertia_com"])
        inertia.append(100 * np.linalg.norm(np.subtract(p["inertia_com"], i_t)) /
                       np.linalg.norm(i_t))
    ms, jr = [], []
    for link, mp in (report.get("minimal_parameters") or {}).items():
        t = truth["minimal_parameters"][link]
        ms.append(1e3 * np.linalg.norm(np.subtract(mp["MS"], t["MS"])))
        j_t = np.asarray(t["J"])
        jr.append(100 * np.linalg.norm(np.subtract(mp["J"], j_t)) / np.linalg.norm(j_t))
    checks = [(c["key"], c["level"]) for c in report.get("checks", [])
              if c.get("level") in ("caution", "problem")]
    noise = [i.get("noise_mm") for c in report.get("checks", []) if c["key"] == "marker_residual"
             for i in c.get("items", []) if i.get("stage") == "posture"]
    return {"com_mm": com, "inertia_pct": inertia, "ms_g_m": ms, "j_pct": jr,
            "noise_mm": [n for n in noise if n is not None], "checks": checks}


def _span(values, fmt="{:.2f}") -> str:
    values = [v for v in values if v is not None and np.isfinite(v)]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt.format(lo) if np.isclose(lo, hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated scenario names")
    ap.add_argument("--keep", type=Path, help="write the bundles under this folder")
    ap.add_argument("--reuse", action="store_true",
                    help="take the bundles already under --keep (no simulation)")
    ap.add_argument("--pipeline", type=Path, default=ROOT,
                    help="the rigtool source tree whose `rigtool run` is scored (default this "
                         "one; another checkout gives the 'before' figures)")
    ap.add_argument("--label", default="default", help="results folder suffix")
    ap.add_argument("--simulate-only", action="store_true", help="write the bundles and stop")
    args = ap.parse_args()
    names = [n for n in (args.only.split(",") if args.only else SCENARIOS) if n]
    base = args.keep or Path(tempfile.mkdtemp(prefix="rigtool-living-"))
    print(f"bundles under {base}", flush=True)
    header = (f"{'effect':<12} {'COM err mm':>12} {'inertia err %':>14} {'Phi_B MS err g m':>17}"
              f" {'Phi_B J err %':>14} {'noise est mm':>13}  not green")
    rows = []
    for name in names:
        session = base / name / "captures" / "two-link" / "session.toml"
        sim_s = 0.0
        if not args.reuse:
            session, sim_s = simulate(name, base / name)
            if args.simulate_only:
                print(f"[{name}: simulated in {sim_s:.0f} s]", flush=True)
                continue
        res = run(session, args.pipeline.resolve(), args.label)
        s = scores(res["report"], res["truth"])
        row = (f"{name:<12} {_span(s['com_mm']):>12} {_span(s['inertia_pct']):>14} "
               f"{_span(s['ms_g_m'], '{:.1f}'):>17} {_span(s['j_pct']):>14} "
               f"{_span(s['noise_mm'], '{:.3f}'):>13}  "
               + (", ".join(f"{k} ({lv})" for k, lv in s["checks"]) or "none"))
        rows.append(row)
        print(f"[{name}: simulated in {sim_s:.0f} s, rigtool run {res['run_s']:.0f} s, "
              f"exit {res['exit']}]", flush=True)
        print(header)
        print(row, flush=True)
    print("\n" + header)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
