"""A living body over seeds: the posture errors and whether their standard errors cover.

Simulates scenarios of scenarios/living/ (default: the compliant back, the heartbeat and
skin markers) for a few seeds each (the two-link demo body's three postures, 20 s at
100 Hz, 0.1 mm marker noise), completes the rig file with the TRUE rig and runs the
default ``rigtool run`` on the postures (the relative-motion capture left out; the trunk's
wall markers named as its ``breathing_markers`` when the scenario has them). Prints per
scenario the postures' COM errors (mm) and inertia errors (% of the inertia's Frobenius
norm), every COM coordinate's and inertia entry's error over its standard error (z), the
share of them within 2 (about 95 % when the standard errors are right), their RMS, Φ_s's
share within 2 standard errors of its truth (:func:`living_breathing.phi_s_truth`) with the
subset fit's reduced chi-square, and the run's time.

    PYTHONPATH=. python3 benchmarks/living_coverage.py [--only support,heartbeat]
        [--seeds 4] [--keep DIR] [--reuse]
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from living import _span                                       # noqa: E402 (beside this)
from living_breathing import (manifests, phi_s_truth, posture_truth, run,  # noqa: E402
                              seeded_session, seeded_study)

SCENARIOS = ("support", "heartbeat", "skin")


def _posture_manifest(session: Path) -> Path:
    """The posture-only manifest: with the trunk's breathing markers named when the
    scenario has chest and abdominal wall markers, else as simulated."""
    if "CH1" in session.read_text():
        return manifests(session)[1]
    rigid = session.with_name("postures-rigid.toml")
    rigid.write_text(session.read_text().split("[relative_motion]")[0])
    return rigid


def z_scores(report: dict, truth: dict) -> tuple[list, list, list]:
    """COM errors (mm), inertia errors (%), and every COM coordinate's and unique inertia
    entry's error over its standard error."""
    true_p = posture_truth(report, truth)
    com, inertia, z = [], [], []
    iu = np.triu_indices(3)
    for p in report.get("postures", []):
        t_com, i_t = true_p[p["name"]]
        err = np.subtract(p["com"], t_com)
        com.append(1e3 * np.linalg.norm(err))
        z += list(err / np.asarray(p["com_std"]))
        i_err = np.subtract(p["inertia_com"], i_t)
        inertia.append(100 * np.linalg.norm(i_err) / np.linalg.norm(i_t))
        z += list(i_err[iu] / np.asarray(p["inertia_com_std"])[iu])
    return com, inertia, z


def phi_s_z(report: dict, truth: dict) -> tuple[np.ndarray, float]:
    """Φ_s's errors over their standard errors, and the subset fit's reduced chi-square."""
    sub = report["subset"]
    err = np.subtract(sub["values"], phi_s_truth(report, truth))
    return err / np.asarray(sub["std"]), float(sub.get("reduced_chi2", float("nan")))


def main() -> None:
    args, names, base = seeded_study(__doc__.splitlines()[0], SCENARIOS, 4,
                                     "rigtool-living-cover-")
    rows = []
    for name in names:
        com, inertia, z, secs, zs, chi2 = [], [], [], [], [], []
        for s in range(args.seeds):
            session, truth = seeded_session(base, name, s, args.reuse)
            report, sec = run(_posture_manifest(session), "default")
            c, i, zz = z_scores(report, truth)
            z_s, c2 = phi_s_z(report, truth)
            com += c
            inertia += i
            z += zz
            zs += list(z_s)
            chi2.append(c2)
            secs.append(sec)
            print(f"[{name} seed {s}: COM {_span(c)} mm, inertia {_span(i)} %, "
                  f"|z| max {np.max(np.abs(zz)):.1f}, Φ_s |z| max {np.max(np.abs(z_s)):.1f} "
                  f"(chi2 {c2:.2f}), run {sec:.0f} s]", flush=True)
        z, zs = np.asarray(z), np.asarray(zs)
        rows.append(f"| {name} | {args.seeds} | {_span(com)} | {_span(inertia)} | "
                    f"{100 * np.mean(np.abs(z) <= 2):.1f} % ({int(np.sum(np.abs(z) <= 2))}/"
                    f"{z.size}) | {np.sqrt(np.mean(z ** 2)):.2f} | "
                    f"{100 * np.mean(np.abs(zs) <= 2):.1f} % ({int(np.sum(np.abs(zs) <= 2))}/"
                    f"{zs.size}), chi2 {_span(chi2)} | {np.median(secs):.0f} |")
    print("\n| scenario | seeds | COM err mm | inertia err % | within 2 SE | RMS z | "
          "Φ_s within 2 SE | run s |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
