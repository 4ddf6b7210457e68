"""Breathing as a measured internal wrench: the posture numbers before and after naming the
breathing markers.

Simulates the breathing scenarios (scenarios/living/breathing14.toml, breathing10.toml, and
all.toml with --only) for a few seeds, completes the rig file with the TRUE rig, and runs the
default ``rigtool run`` on the postures twice: as simulated (the rigid model, what a manifest
without ``breathing_markers`` gets) and with ``breathing_markers = ["CH1", "AB1"]`` on the
trunk (the breath's internal wrench in the posture fits). The relative-motion capture is
left out of both manifests (these figures are the postures'). The truth is the capture's
time-averaged mass distribution (the simulator's ``breathing_mean_pi_base``: over a 20 s
capture the breathing mass's mean place is not its path's long-run mean, by up to ~0.03 mm
of the COM), or, for postures the report brought to the session's mean breath, the mean of
that over the postures. Prints per scenario and run the postures' COM errors (mm), inertia errors (%
of the inertia's Frobenius norm, as benchmarks/living.py), the largest error over its
standard error among the COM's coordinates and among the inertia's entries (|err| / SE
within 2 for ~95 % of them when the SEs are right), and the identified ``G`` against the
simulator's point-mass value.

    PYTHONPATH=. python3 benchmarks/living_breathing.py [--only breathing14] [--seeds 2]
        [--keep DIR] [--reuse]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from living import _span          # benchmarks/living.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("breathing14", "breathing10")
WALLS = '["CH1", "AB1"]'


def simulate(name: str, seed_offset: int, out: Path) -> Path:
    """One seed of a scenario into ``out`` (true rig as the calibrated rig file)."""
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import write_bundle
    from rigtool.sim.true_calibration import write_true_calibration

    sc = load_scenario(ROOT / "scenarios" / "living" / f"{name}.toml")
    sc = dataclasses.replace(sc, seed=sc.seed + 7919 * seed_offset)
    bundle = write_bundle(sc, out, force=True)
    rig_toml = out / bundle.rig_file
    write_true_calibration(rig_toml, rig_toml.with_suffix(".truth.json"),
                           rig_toml.with_name(f"{sc.rig.name}.calibrated.toml"))
    return out / bundle.session_file


def manifests(session: Path) -> tuple[Path, Path]:
    """Posture-only manifests next to ``session``: as simulated, and naming the trunk's
    wall markers as its breathing markers."""
    text = session.read_text()
    head = text.split("[relative_motion]")[0]
    rigid = session.with_name("postures-rigid.toml")
    rigid.write_text(head)
    breath = session.with_name("postures-breathing.toml")
    breath.write_text(walls_named(head, session))
    return rigid, breath


def walls_named(text: str, session: Path) -> str:
    """A manifest's ``text`` with the trunk's wall markers named as its breathing markers
    (after its markers line holding CH1)."""
    lines, done = [], False
    for line in text.splitlines():
        lines.append(line)
        if not done and line.startswith("markers = ") and "CH1" in line:
            lines.append(f"breathing_markers = {WALLS}")
            done = True
    if not done:
        raise SystemExit(f"{session}: no trunk markers line with CH1")
    return "\n".join(lines) + "\n"


def run(manifest: Path, label: str) -> tuple[dict, float]:
    results = manifest.parent / f"results-{label}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rigtool.cli", "run", str(manifest), "-o",
                           str(results)], capture_output=True, text=True, cwd=ROOT, env=env)
    if not (results / "report.json").exists():
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"rigtool run failed on {manifest}")
    return json.loads((results / "report.json").read_text()), time.perf_counter() - t0


def true_g(truth: dict, report_posture: dict, scenario: str):
    """The point-mass ``G`` (kg), ``K`` (kg m) of the simulated breath (base-link frame and
    origin; the breathing mass in the base link at its COM) for the measured breath
    coordinate: ``G = mass x depth / (the walls' excursion along the measured direction) e``,
    ``K = s0 x G``."""
    from rigtool.sim.scenario import load_scenario
    sc = load_scenario(ROOT / "scenarios" / "living" / f"{scenario}.toml")
    b = sc.living.breathing if sc.living is not None else None
    br = report_posture.get("breathing", {})
    if b is None or "measurement" not in br or br["measurement"]["components"] != 1:
        return None
    names = [m.split(":")[1] for m in br["measurement"]["markers"]]
    walls = np.concatenate([b.wall_markers[n].displacement_link for n in names])
    along = float(np.asarray(br["measurement"]["directions"][0]) @ walls)
    g = b.mass_kg * b.depth_m / along * np.asarray(b.direction_link)
    s0 = (np.asarray(truth["links"][0]["com"]) if b.position_link is None
          else np.asarray(b.position_link))
    return g, np.cross(s0, g)


def capture_mean_truth(truth: dict) -> dict:
    """Posture name -> (COM, inertia about it) of the capture's time-averaged mass
    distribution: the links' truth plus the simulator's ``breathing_mean_pi_base`` (the
    breathing mass's mean place over this capture is not its path's long-run mean)."""
    from rigtool.inertia import InertialParams
    shifts = {c["name"]: c.get("breathing_mean_pi_base") for c in truth["captures"]}
    out = {}
    for p in truth["postures"]:
        pi = InertialParams.from_com(p["mass"], np.asarray(p["com"]),
                                     np.asarray(p["inertia_com"])).pi
        if shifts.get(p["name"]) is not None:
            pi = pi + np.asarray(shifts[p["name"]])
        q = InertialParams(pi)
        out[p["name"]] = (q.com, q.inertia_com)
    return out


def _postures_mean_breath_shift(truth: dict) -> np.ndarray | None:
    """The mean over the posture captures of the simulator's ``breathing_mean_pi_base`` (None
    without a breath)."""
    names = {p["name"] for p in truth["postures"]}
    shifts = [c["breathing_mean_pi_base"] for c in truth["captures"]
              if c.get("breathing_mean_pi_base") is not None and c["name"] in names]
    return np.mean(shifts, axis=0) if shifts else None


def session_level_truth(truth: dict) -> dict:
    """As :func:`capture_mean_truth`, with every capture at the postures' mean breath: the
    links' truth plus the mean over the posture captures of ``breathing_mean_pi_base`` (what
    a posture's numbers are once the session's postures are brought to one breath level,
    rigtool.pipeline.breath_level: the wall markers follow the breathing mass linearly)."""
    mean = _postures_mean_breath_shift(truth)
    if mean is None:
        return capture_mean_truth(truth)
    mean = mean.tolist()
    return capture_mean_truth({**truth, "captures": [
        {**c, "breathing_mean_pi_base": mean} for c in truth["captures"]]})


def posture_truth(report: dict, truth: dict) -> dict:
    """Each reported posture's truth: at the session's breath level when the report brought
    it there (``breathing.level``), else its capture's mean."""
    capture, session = capture_mean_truth(truth), session_level_truth(truth)
    return {p["name"]: (session if (p.get("breathing") or {}).get("level") else capture)[
        p["name"]] for p in report.get("postures", [])}


def phi_s_truth(report: dict, truth: dict) -> np.ndarray:
    """Φ_s of the body the report's postures describe: the links' truth, with the breathing
    mass at the postures' mean breath in the base link when the report brought them to the
    session's breath level (else its path's long-run mean, which no single capture has)."""
    from rigtool.tree import phi_s_from_phi_b
    return phi_s_from_phi_b(phi_b_truth(report, truth))


def phi_b_truth(report: dict, truth: dict) -> np.ndarray:
    """Φ_B of the body the report describes (as :func:`phi_s_truth`)."""
    phi_b = np.asarray(truth["phi_b"]["values"], float).copy()
    d = _postures_mean_breath_shift(truth)
    leveled = any((p.get("breathing") or {}).get("level") for p in report.get("postures", []))
    if d is not None and leveled:
        # d: [m, h (3), I about the origin: xx xy xz yy yz zz]
        phi_b[:3] += d[1:4]
        phi_b[3:9] += d[[4, 7, 9, 8, 6, 5]]  # J: xx yy zz yz zx xy
    return phi_b


def scores(report: dict, truth: dict, scenario: str) -> dict:
    true_p = posture_truth(report, truth)
    com, inertia, ratio, i_ratio, g_err = [], [], [], [], []
    for p in report.get("postures", []):
        t_com, i_t = true_p[p["name"]]
        err = np.subtract(p["com"], t_com)
        com.append(1e3 * np.linalg.norm(err))
        ratio.append(float(np.max(np.abs(err) / np.asarray(p["com_std"]))))
        i_err = np.subtract(p["inertia_com"], i_t)
        i_ratio.append(float(np.max(np.abs(i_err) / np.asarray(p["inertia_com_std"]))))
        inertia.append(100 * np.linalg.norm(i_err) / np.linalg.norm(i_t))
        gk_true = true_g(truth, p, scenario)
        if gk_true is not None:
            br = p["breathing"]
            g, k = np.asarray(br["G_kg"])[:, 0], np.asarray(br["K_kg_m"])[:, 0]
            g_se, k_se = np.asarray(br["G_std_kg"])[:, 0], np.asarray(br["K_std_kg_m"])[:, 0]
            g_err.append(f"{p['name']}: G {np.round(g, 2).tolist()} +- "
                         f"{np.round(g_se, 2).tolist()} (point mass "
                         f"{np.round(gk_true[0], 2).tolist()}), K {np.round(k, 2).tolist()} +- "
                         f"{np.round(k_se, 2).tolist()} (point mass "
                         f"{np.round(gk_true[1], 2).tolist()})")
    return {"com_mm": com, "inertia_pct": inertia, "ratio": ratio, "i_ratio": i_ratio,
            "g": g_err}


def seeded_study(description: str, scenarios: tuple[str, ...], seeds: int, prefix: str):
    """The command line of a study of scenarios over seeds: ``(args, names, base)``, the
    scenarios asked for and the folder the bundles go to (printed)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--only", default="", help="comma-separated scenario names")
    ap.add_argument("--seeds", type=int, default=seeds, help="seeds per scenario")
    ap.add_argument("--keep", type=Path, help="write the bundles under this folder")
    ap.add_argument("--reuse", action="store_true", help="take the bundles under --keep")
    args = ap.parse_args()
    names = [n for n in (args.only.split(",") if args.only else scenarios) if n]
    base = args.keep or Path(tempfile.mkdtemp(prefix=prefix))
    print(f"bundles under {base}", flush=True)
    return args, names, base


def seeded_session(base: Path, name: str, seed: int, reuse: bool) -> tuple[Path, dict]:
    """One seed of a scenario under ``base`` (simulated unless ``reuse``): its manifest and
    truth."""
    folder = base / f"{name}-s{seed}"
    session = folder / "captures" / "two-link" / "session.toml"
    if not reuse:
        session = simulate(name, seed, folder)
    return session, json.loads((session.parent / "truth.json").read_text())


def main() -> None:
    args, names, base = seeded_study(__doc__.splitlines()[0], SCENARIOS, 2,
                                     "rigtool-breathing-")
    header = (f"{'scenario':<12} {'seed':>4} {'model':<9} {'COM err mm':>12} "
              f"{'inertia err %':>14} {'COM |err|/SE':>13} {'I |err|/SE':>11} {'run s':>6}")
    rows = []
    for name in names:
        for s in range(args.seeds):
            session, truth = seeded_session(base, name, s, args.reuse)
            rigid, breath = manifests(session)
            for label, manifest in (("rigid", rigid), ("breathing", breath)):
                report, secs = run(manifest, label)
                sc = scores(report, truth, name)
                row = (f"{name:<12} {s:>4} {label:<9} {_span(sc['com_mm']):>12} "
                       f"{_span(sc['inertia_pct']):>14} {_span(sc['ratio'], '{:.1f}'):>13} "
                       f"{_span(sc['i_ratio'], '{:.1f}'):>11} {secs:>6.0f}")
                rows.append(row)
                print(row, flush=True)
                for g in sc["g"]:
                    print("    " + g, flush=True)
    print("\n" + header)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
