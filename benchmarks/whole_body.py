"""A whole-body session end to end: 14 segments, voluntary limb movements.

Simulates ``scenarios/whole_body.toml`` (a 75 kg person lying supine, de Leva's 14
segments; 20 locked postures the posture advice chose among those a supine person can hold;
one capture with every joint moved by the person's muscles), writes the simulator's true
rig calibration as the session's rig file (the rig is not what is measured here), runs
``rigtool run`` with the default method in a child process, and prints:

- time (wall, CPU of the child) and peak memory of ``rigtool run``;
- the stages' figures: Phi_s rank, the relative-motion model used and its residual against
  the marker noise, Phi_B errors E_MS/M0 and E_J/Im (paper 002's figures of merit);
- per segment: mass, COM and inertia (about the COM, link axes) against the truth, the
  source of each (measured / prior / both), and the share of entries whose truth lies
  within +-2 standard errors.

    python3 benchmarks/whole_body.py [--out DIR [--reuse]] [--seed N] [--scenario FILE]

The simulation takes about 5 min (the 12 s movement capture of 14 driven segments, the
simulator's adaptive Runge-Kutta at rtol 1e-10).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _rigtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rigtool.cli", *args], capture_output=True,
                          text=True)


def _phi_b_errors(report: dict, truth: dict) -> tuple[float, float, float]:
    """E_MS/M0 (m), E_J/Im (fraction) and the share of Phi_B within +-2 SE."""
    pb = report["relative_motion"]["phi_b"]
    names, est, std = pb["names"], np.asarray(pb["values"]), np.asarray(pb["std"])
    tb = truth["phi_b"]
    tv = dict(zip(tb["names"], tb["values"])) if isinstance(tb, dict) else None
    if tv is None:
        raise SystemExit("truth.json: phi_b is not a {names, values} table")
    true = np.array([tv[n] for n in names])
    err = est - true
    ms = np.array([".MS_" in n for n in names])
    m0 = truth["total_mass"]
    # I_m: the largest principal moment about the COM over the postures (as
    # benchmarks/accuracy.py scales E_J)
    i_m = max(float(np.linalg.eigvalsh(np.asarray(p["inertia_com"]))[-1])
              for p in truth["postures"])
    within = float(np.mean(np.abs(err) <= 2.0 * std))
    return float(np.abs(err[ms]).max() / m0), float(np.abs(err[~ms]).max() / i_m), within


def segment_table(report: dict, truth: dict) -> list[dict]:
    """Per segment: errors against the truth and the +-2 SE share."""
    rows = []
    true_links = {l["name"]: l for l in truth["links"]}
    for name, seg in report["segments"]["links"].items():
        t = true_links[name]
        m_err = seg["mass"] - t["mass"]
        c_err = np.asarray(seg["com"]) - np.asarray(t["com"])
        i_true = np.asarray(t["inertia_com"])
        i_err = np.asarray(seg["inertia_com"]) - i_true
        iu = np.triu_indices(3)
        z = np.r_[m_err / seg["mass_std"], c_err / np.asarray(seg["com_std"]),
                  i_err[iu] / np.asarray(seg["inertia_com_std"])[iu]]
        src = seg.get("source", {})
        names = [src.get("mass"), *src.get("com", []),
                 *np.ravel(src.get("inertia_com", [])).tolist()]
        kinds = sorted({k for k in names if k})
        rows.append({
            "segment": name, "mass_kg": t["mass"], "mass_err_pct": 100 * m_err / t["mass"],
            "com_err_mm": 1e3 * float(np.linalg.norm(c_err)),
            "inertia_err_pct": 100 * float(np.abs(i_err).max()
                                           / np.linalg.eigvalsh(i_true)[-1]),
            "within_2se": float(np.mean(np.abs(z) <= 2.0)), "n": int(z.size),
            "source": "/".join(kinds)})
    return rows


def with_breathing_markers(session: Path, link: str, names: str) -> Path:
    """A copy of the manifest with ``names`` (comma-separated) as ``link``'s breathing
    markers, beside it."""
    lines, in_link, done = [], False, False
    for line in session.read_text().splitlines():
        lines.append(line)
        if line.strip() == f'name = "{link}"':
            in_link = True
        if in_link and not done and line.startswith("markers = "):
            lines.append("breathing_markers = [" + ", ".join(f'"{n}"' for n in names.split(","))
                         + "]")
            done = True
    if not done:
        raise SystemExit(f"{session}: no markers line for link {link}")
    out = session.with_name("session-breathing.toml")
    out.write_text("\n".join(lines) + "\n")
    return out


def posture_coverage(report: dict, truth: dict) -> str:
    """The postures' COM and inertia errors against the body each describes (its capture's
    time-averaged mass distribution, or the session's mean breath when the report brought
    it there), their entries within 2 standard errors, and Φ_s's against its truth."""
    from living_coverage import phi_s_z, z_scores   # noqa: E402 (beside this)
    com, inertia, z = z_scores(report, truth)
    z = np.asarray(z)
    z_s, chi2 = phi_s_z(report, truth)
    breath = sum((p.get("breathing") or {}).get("model") == "measured internal wrench"
                 for p in report["postures"])
    return (f"postures: COM {min(com):.2f}-{max(com):.2f} mm, inertia {min(inertia):.2f}-"
            f"{max(inertia):.2f} %, {100 * np.mean(np.abs(z) <= 2):.0f} % within +-2 SE "
            f"(RMS z {np.sqrt(np.mean(z ** 2)):.2f}); breath modelled in {breath} of "
            f"{len(report['postures'])}; Phi_s {100 * np.mean(np.abs(z_s) <= 2):.0f} % within "
            f"+-2 SE, reduced chi2 {chi2:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "whole_body.toml"))
    ap.add_argument("--out", default=None, help="study folder (default: a temporary one)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--reuse", action="store_true",
                    help="--out already holds the simulated study: do not simulate again")
    ap.add_argument("--breathing-markers", default="",
                    help="LINK:M1,M2 names a link's chest and abdominal wall markers as its "
                         "breathing_markers (a manifest written beside the simulated one)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="rigtool-whole-body-"))
    t0 = time.perf_counter()
    if not args.reuse:
        sim_args = ["simulate", args.scenario, "-o", str(out), "--force"]
        if args.seed is not None:
            sim_args += ["--seed", str(args.seed)]
        r = _rigtool(*sim_args)
        if r.returncode != 0:
            raise SystemExit(f"simulate failed:\n{r.stderr}")
    t_sim = time.perf_counter() - t0
    cal = out / "calibration"
    rig = next(p for p in cal.glob("*.toml") if not p.name.endswith(".calibrated.toml"))
    from rigtool.sim.true_calibration import write_true_calibration
    write_true_calibration(str(rig), str(rig.with_suffix(".truth.json")),
                           str(rig.with_suffix(".calibrated.toml")))
    session = next((out / "captures").glob("*/session.toml"))
    print(f"simulated {session.parent.name} in {t_sim:.0f} s ({out})")
    if args.breathing_markers:
        session = with_breathing_markers(session, *args.breathing_markers.split(":"))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = _rigtool("run", str(session))
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print(f"rigtool run: exit {r.returncode}, {wall:.0f} s wall, {cpu:.0f} s CPU, "
          f"peak {after.ru_maxrss / 1024:.0f} MiB (largest child so far)")
    if r.returncode != 0:
        print(r.stderr[-3000:])
        raise SystemExit(1)
    print(r.stdout[-2500:])
    report = json.loads((session.parent / "results" / "report.json").read_text())
    truth = json.loads((session.parent / "truth.json").read_text())
    sub = report["subset"]
    print(f"Phi_s: rank {sub.get('rank')} of {len(sub['names'])}, condition "
          f"{sub.get('condition_number', float('nan')):.1f}")
    rel = report["relative_motion"]
    model = rel.get("model", {})
    print(f"relative-motion model: {model.get('used')} ({model.get('reason', '')[:200]})")
    for t in model.get("tried", []):
        print(f"  tried {t['model']} ({t['method']}): residual {t['residual_mm']:.4f} mm "
              f"against noise {t['noise_mm']:.4f} mm, {t.get('elapsed_s', float('nan')):.0f} s")
    print(posture_coverage(report, truth))
    e_ms, e_j, within = _phi_b_errors(report, truth)
    print(f"Phi_B: E_MS/M0 = {e_ms * 1e3:.4f} mm, E_J/Im = {100 * e_j:.4f} %, "
          f"{100 * within:.0f} % of {len(rel['phi_b']['names'])} entries within +-2 SE")
    rows = segment_table(report, truth)
    print("\n| segment | mass kg | mass err % | COM err mm | inertia err % of max | "
          "within +-2 SE | source |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['segment']} | {row['mass_kg']:.3f} | {row['mass_err_pct']:+.2f} | "
              f"{row['com_err_mm']:.2f} | {row['inertia_err_pct']:.2f} | "
              f"{100 * row['within_2se']:.0f} % of {row['n']} | {row['source']} |")
    share = np.mean([r_["within_2se"] for r_ in rows])
    print(f"\nall segments: {100 * share:.0f} % of entries within +-2 SE")


if __name__ == "__main__":
    main()
