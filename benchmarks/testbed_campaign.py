"""Campaigns on the independent test bed (benchmarks/testbed, MuJoCo): subjects and rigs
drawn at random (seeded), each simulated, its rig calibrated with ``rigtool calibrate``, the
sessions run by ``rigtool batch``, and every reported number compared with the truth.

    python3 benchmarks/testbed_campaign.py --family people-rigid --draws 20 --seed 1
    python3 benchmarks/testbed_campaign.py --family rigs --draws 20 --seed 1
    python3 benchmarks/testbed_campaign.py --family robots --draws 20 --seed 1
    python3 benchmarks/testbed_campaign.py --family people-living --draws 20 --seed 1

Families: ``people-rigid`` (2 to 14 de Leva segments, ``--max-segments`` caps them, on the
demo's true rig calibrated once from its five reference captures), ``rigs`` (the demo's
two-link object on rigs drawn around the demo's: platform mass, anchors, stiffness, free
lengths, damping, marker noise 0.05-0.3 mm; each rig calibrated), ``robots`` (an arm of
example-robot-data's drawn per draw, on the demo rig sized for it, each such rig calibrated
once; 9 locked postures and the driven capture rigtool advises; the CAD prior perturbed,
two in five with 1-3 physically inconsistent links), ``people-living`` (the demo's two-link
body breathing, with wobbling tissue, on a soft back, with skin drift: each effect alone
and all together with wall markers, in turn; :func:`living_draw`). Every draw's captures
are Vicon Nexus CSV or C3D, one in two each. Prints per family: the
share of numbers within 2 standard errors, the worst |z| and the non-green checks that
judge it, numbers beyond 5 standard errors no check names, internal errors, and accuracy
quantiles; writes ``summary.json`` in the output folder.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.testbed.compare import (false_causes, named_by, named_by_cause,  # noqa: E402
                                        nongreen, numbers, robot_numbers)
from benchmarks.testbed.demo import demo_study  # noqa: E402
from benchmarks.testbed.draws import draw_rig, person_study  # noqa: E402
from benchmarks.testbed.living import (  # noqa: E402
    with_back, with_breathing, with_skin, with_tissue, with_wall_markers)
from benchmarks.testbed.robot import ROBOTS, rig_for, write_robot_study  # noqa: E402
from benchmarks.testbed.study import write_study  # noqa: E402

FAMILIES = ("people-rigid", "rigs", "robots", "people-living")
ROBOTS_SORTED = sorted(ROBOTS)


def _rigtool(*args: str, log: Path) -> int:
    with open(log, "ab") as fh:
        return subprocess.run([sys.executable, "-m", "rigtool.cli", *args], stdout=fh,
                              stderr=subprocess.STDOUT, cwd=ROOT).returncode


def build(family: str, draws: int, seed: int, out: Path, *, max_segments: int = 14,
          log: Path, kinds: tuple[str, ...] = ()) -> list[dict]:
    """Simulate and calibrate every draw; the sessions' manifests and truths (people-living:
    the effects ``kinds`` in turn, :data:`LIVING_KINDS` when empty)."""
    kinds = tuple(kinds) or LIVING_KINDS
    base = demo_study()
    sessions = []
    rigs = {}
    for i in range(draws):
        rng = np.random.default_rng([seed, i])
        name = f"{family}-{seed}-{i:03d}"
        t0 = time.time()
        # the captures' file format drawn from a stream of its own (the physics' draws stay
        # those of the seed): Vicon Nexus CSV or C3D, one draw in two each
        fmt = "c3d" if np.random.default_rng([seed, i, 7]).uniform() < 0.5 else "csv"
        if family == "robots":
            # an arm drawn from example-robot-data's, on the rig sized for it (each such rig
            # calibrated once); two draws in five get a CAD prior with 1-3 links whose
            # principal moments break the triangle inequality
            robot = ROBOTS_SORTED[int(rng.integers(len(ROBOTS_SORTED)))]
            if robot not in rigs:
                with open(log, "ab") as fh:
                    rigs[robot] = rig_for(robot, out / f"rig-{robot}", log=fh)
            rig, cal, rc0 = rigs[robot]
            n_bad = int(rng.integers(1, 4)) if rng.uniform() < 0.4 else 0
            paths = write_robot_study(
                robot, rig, f"../../../rig-{robot}/calibration/{cal.name}", cal,
                out / f"draw-{i:03d}", rng, session=name, n_inconsistent=n_bad,
                file_format=fmt)
            sessions.append({"name": name, "manifest": str(paths["session"]),
                             "truth": str(paths["truth"]), "calibrate_exit": rc0,
                             "robot": robot, "prior_inconsistent_links": n_bad, "format": fmt,
                             "links": len(paths["robot"].subject.links), "postures": 9,
                             "simulate_s": round(time.time() - t0, 1)})
            print(f"  {name}: {robot}, {n_bad} inconsistent prior links, calibrate exit "
                  f"{rc0}, {time.time() - t0:.0f} s", flush=True)
            continue
        if family == "people-rigid":
            # a person whose posture tips the loaded platform over (no upright equilibrium)
            # is drawn again from the next stream: counted in ``redrawn``
            for attempt in range(5):
                rng = np.random.default_rng([seed, i, attempt] if attempt else [seed, i])
                n = int(rng.integers(2, max_segments + 1))
                study = person_study(rng, name, base.rig, base.reference_bodies,
                                     base.calibration, n_segments=n,
                                     seed=int(rng.integers(2**31)))
                study.capture.file_format = fmt
                try:
                    paths = write_study(study, out, write_rig=i == 0)
                    break
                except RuntimeError as exc:
                    print(f"  {name}: drawn again ({exc})", flush=True)
            else:
                raise RuntimeError(f"{name}: five draws in a row without an upright "
                                   f"equilibrium")
            rc = _rigtool("calibrate", str(paths["rig"]), "--force", log=log) if i == 0 else 0
            sessions.append({"name": name, "manifest": str(paths["session"]),
                             "truth": str(paths["truth"]), "calibrate_exit": rc,
                             "links": len(study.subject.links),
                             "postures": len(study.postures), "redrawn": attempt,
                             "format": fmt,
                             "simulate_s": round(time.time() - t0, 1)})
            print(f"  {name}: {len(study.subject.links)} links, {len(study.postures)} "
                  f"postures", flush=True)
            continue
        if family == "people-living":
            # the demo's two-link body with one living effect drawn over the literature's
            # ranges, in turn each alone and all together (then with the chest and
            # abdominal wall's markers named as breathing markers)
            kind = kinds[i % len(kinds)]
            study = demo_study(seed=int(rng.integers(2**31)), rate_hz=100.0, duration_s=20.0)
            study.subject.name = name
            study.capture.file_format = fmt
            if i == 0:
                write_study(_rig_only(study), out)
                rc0 = _rigtool("calibrate", str(out / "calibration" / "paper-rig.toml"),
                               "--force", log=log)
            study, effects = living_draw(study, rng, kind)
            paths = write_study(study, out, write_rig=False)
            sessions.append({"name": name, "manifest": str(paths["session"]),
                             "truth": str(paths["truth"]), "calibrate_exit": rc0,
                             "links": 2, "postures": 3, "format": fmt, "living": kind,
                             "effects": effects, "simulate_s": round(time.time() - t0, 1)})
            print(f"  {name}: {kind} {json.dumps(effects)}", flush=True)
            continue
        study = demo_study(seed=int(rng.integers(2**31)))            # family "rigs"
        study.rig = draw_rig(rng, base.rig, study.subject.total_mass_kg)
        study.rig.name = f"rig-{i:03d}"
        study.subject.name = name
        study.capture.noise_sigma_m = float(rng.uniform(0.05e-3, 0.3e-3))
        study.capture.rate_hz, study.capture.duration_s = 100.0, 15.0
        study.capture.file_format = fmt
        root = out / f"draw-{i:03d}"
        first = True
        paths = write_study(study, root, write_rig=first)
        rc = 0
        if first:
            rc = _rigtool("calibrate", str(paths["rig"]), "--force", log=log)
        sessions.append({"name": name, "manifest": str(paths["session"]),
                         "truth": str(paths["truth"]), "calibrate_exit": rc,
                         "links": len(study.subject.links), "postures": len(study.postures),
                         "format": fmt, "simulate_s": round(time.time() - t0, 1)})
        print(f"  {name}: {len(study.subject.links)} links, {len(study.postures)} postures, "
              f"calibrate exit {rc}", flush=True)
    return sessions


#: the people-living family's effects, drawn in turn
LIVING_KINDS = ("breathing", "tissue", "back", "skin", "all")


def living_draw(study, rng, kind: str):
    """``study`` with the living effect ``kind`` (or ``"all"``) drawn over the literature's
    ranges: breathing 8-20 /min, 8-20 mm peak to peak of 2-6 kg of abdominal contents,
    5-15 % breath-to-breath variability, a second harmonic of 10-35 %; wobbling tissue 10-30 %
    of each link's mass at 4-12 Hz, damping ratio 0.1-0.4; a back of 3.5-7 Hz in shear,
    7-12 Hz in compression, 5-9 Hz rocking, damping ratio 0.1-0.3; skin drift 0.2-1.5 mm
    (2 s). ``"all"`` adds chest and abdominal wall markers moving 1-4 mm peak to peak,
    named as the trunk's breathing markers. Returns the study and the drawn values."""
    eff = {}
    if kind in ("breathing", "all"):
        eff["breathing"] = {"mass_kg": rng.uniform(2.0, 6.0),
                            "rate_per_min": rng.uniform(8.0, 20.0),
                            "peak_to_peak_m": rng.uniform(0.008, 0.020),
                            "variability": rng.uniform(0.05, 0.15),
                            "harmonic": rng.uniform(0.10, 0.35)}
        b = eff["breathing"]
        study = with_breathing(study, rng, **b)
    if kind == "all":
        places = {"CH1": np.array([0.05, -0.45, 0.06]), "AB1": np.array([-0.04, -0.15, 0.06])}
        eff["wall_markers"] = {
            m: {"place": (p + rng.normal(0.0, 0.02, 3)).tolist(),
                "peak_to_peak_m": rng.uniform(0.001, 0.004)} for m, p in places.items()}
        study = with_wall_markers(study, {
            m: (np.array(w["place"]), w["peak_to_peak_m"] / b["peak_to_peak_m"])
            for m, w in eff["wall_markers"].items()})
    if kind in ("tissue", "all"):
        eff["tissue"] = {"fraction": rng.uniform(0.10, 0.30),
                         "frequency_hz": rng.uniform(4.0, 12.0),
                         "damping_ratio": rng.uniform(0.1, 0.4)}
        study = with_tissue(study, **eff["tissue"])
    if kind in ("back", "all"):
        eff["back"] = {"shear_hz": rng.uniform(3.5, 7.0),
                       "compression_hz": rng.uniform(7.0, 12.0),
                       "rocking_hz": rng.uniform(5.0, 9.0),
                       "damping_ratio": rng.uniform(0.1, 0.3)}
        study = with_back(study, **eff["back"])
    if kind in ("skin", "all"):
        eff["skin"] = {"sigma_m": rng.uniform(0.2e-3, 1.5e-3), "tau_s": 2.0}
        study = with_skin(study, **eff["skin"])
    eff = {k: ({kk: (round(float(vv), 6) if isinstance(vv, float) else vv)
                for kk, vv in v.items()}) for k, v in eff.items()}
    return study, eff


def _rig_only(study):
    import copy
    s = copy.deepcopy(study)
    s.postures, s.relative = [], None
    s.subject.name = "rig-only"
    return s


def evaluate(sessions: list[dict], batch_dir: Path) -> dict:
    """The comparison of every session's report with its truth, and the family's figures."""
    status = {}
    summary_csv = batch_dir / "summary.csv"
    if summary_csv.is_file():
        with open(summary_csv) as fh:
            for row in csv.DictReader(fh):
                status.setdefault(row["session"], (row["status"], row["exit_status"],
                                                   row["message"]))
    rows_all, per_session = [], []
    for s in sessions:
        rep = batch_dir / s["name"] / "report.json"
        st = status.get(s["name"], ("missing", "", ""))
        entry = {**s, "status": st[0], "exit_status": st[1], "message": st[2]}
        if rep.is_file():
            report = json.loads(rep.read_text())
            truth = json.loads(Path(s["truth"]).read_text())
            checks = nongreen(report)
            rows = numbers(report, truth)
            brows, worst = robot_numbers(report, truth, rep.parent)
            rows += brows
            if worst:
                entry["robot_vs_prior"] = worst
            for r in rows:
                r["session"] = s["name"]
                r["named_by"] = named_by(r, checks)
                r["named_by_cause"] = named_by_cause(r, s.get("effects"))
            rows_all += rows
            entry["checks"] = [f"{c['key']}:{c['level']}" for c in checks]
            entry["false_causes"] = false_causes(checks, s.get("effects"))
            zs = [abs(r["z"]) for r in rows if r["z"] is not None]
            entry["numbers"] = len(rows)
            entry["within_2se"] = float(np.mean(np.array(zs) < 2.0)) if zs else None
            entry["worst_z"] = max(zs) if zs else None
        per_session.append(entry)
    return {"sessions": per_session, "figures": figures(rows_all, per_session),
            "rows": rows_all}


def _q(values) -> dict | None:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], float)
    if v.size == 0:
        return None
    return {"median": float(np.median(v)), "p90": float(np.quantile(v, 0.9)),
            "max": float(v.max()), "n": int(v.size)}


def figures(rows: list[dict], sessions: list[dict]) -> dict:
    """Per group: share within 2 SE, worst |z| (entry, checks naming it), numbers beyond
    5 SE no check names; accuracy quantiles; internal errors."""
    out = {"draws": len(sessions),
           "internal_errors": [s["name"] for s in sessions
                               if s["status"] in ("internal error", "missing")
                               or s["calibrate_exit"] == 1],
           "bad_input": [s["name"] for s in sessions if s["status"] == "bad input"
                         or s["calibrate_exit"] == 2],
           "partial": [s["name"] for s in sessions if s["status"] == "partial"],
           "redrawn": sum(s.get("redrawn", 0) for s in sessions),
           # robot sessions whose robot.urdf (or estimate) is farther from the truth than
           # the CAD prior on some kind of base combination
           "farther_than_prior": [
               f"{s['name']} {k} ({w})" for s in sessions
               for k, v in (s.get("robot_vs_prior") or {}).items() if isinstance(v, dict)
               for w in ("robot_urdf", "estimate") if v.get(w, 0.0) > v.get("prior", np.inf)],
           # living-body checks that name an effect the subject does not have
           "false_causes": [f"{s['name']} {k}" for s in sessions
                            for k in s.get("false_causes", [])]}
    groups = {}
    for g in ("postures", "phi_s", "phi_b", "segments", "base_parameters", "all"):
        rs = [r for r in rows if (g == "all" or r["group"] == g) and r["z"] is not None]
        if not rs:
            continue
        z = np.array([abs(r["z"]) for r in rs])
        w = rs[int(np.argmax(z))]
        unnamed5 = [f"{r['session']} {r['entry']} z={r['z']:.1f}" for r in rs
                    if abs(r["z"]) > 5 and not r["named_by"]]
        # stricter: a check judging it that names a cause the subject has
        uncaused5 = [f"{r['session']} {r['entry']} z={r['z']:.1f}" for r in rs
                     if abs(r["z"]) > 5 and not r.get("named_by_cause", r["named_by"])]
        groups[g] = {"numbers": len(rs), "within_2se": float(np.mean(z < 2)),
                     "within_5se": float(np.mean(z < 5)),
                     "worst": {"z": float(w["z"]), "entry": f"{w['session']} {w['entry']}",
                               "named_by": w["named_by"]},
                     "beyond_5se_unnamed": unnamed5,
                     "beyond_5se_not_named_by_its_cause": uncaused5}
    out["groups"] = groups
    com = [abs(r["error"]) * 1e3 for r in rows if r["group"] == "postures" and ".com" in r["entry"]]
    inertia = []
    for r in rows:
        if r["group"] == "postures" and ".I_" in r["entry"]:
            inertia.append(abs(r["error"]) / max(abs(r["truth"]), 1e-12) * 100
                           if r["entry"][-2] == r["entry"][-1] else None)
    out["accuracy"] = {"posture_com_mm": _q(com), "posture_inertia_diag_pct": _q(inertia),
                       "phi_b_ms_kg_mm": _q([abs(r["error"]) * 1e3 for r in rows
                                             if r["group"] == "phi_b" and ".MS_" in r["entry"]]),
                       "phi_b_j_kg_m2": _q([abs(r["error"]) for r in rows
                                            if r["group"] == "phi_b" and ".J_" in r["entry"]])}
    return out


def print_figures(family: str, fig: dict) -> None:
    """The campaign's figures, one block per family."""
    print(f"\n== {family}: {fig['draws']} draws; internal errors {len(fig['internal_errors'])}"
          f" {fig['internal_errors']}; bad input {len(fig['bad_input'])}; partial "
          f"{len(fig['partial'])}; subjects drawn again (no upright equilibrium) {fig['redrawn']}")
    if family == "robots":
        print(f"  models farther from the truth than the CAD prior: "
              f"{len(fig['farther_than_prior'])} {fig['farther_than_prior']}")
    for g, d in fig["groups"].items():
        w = d["worst"]
        print(f"  {g:9s} {d['numbers']:5d} numbers, within 2 SE {100 * d['within_2se']:.1f} %,"
              f" within 5 SE {100 * d['within_5se']:.1f} %; worst |z| {abs(w['z']):.1f} at"
              f" {w['entry']} (non-green checks judging it: {w['named_by'] or 'none'});"
              f" beyond 5 SE unnamed: {len(d['beyond_5se_unnamed'])}, not named by a cause"
              f" the subject has: {len(d['beyond_5se_not_named_by_its_cause'])}")
    print(f"  checks naming an effect the subject does not have: {len(fig['false_causes'])}"
          f" {fig['false_causes']}")
    for k, q in fig["accuracy"].items():
        if q:
            print(f"  {k}: median {q['median']:.4g}, 90 % {q['p90']:.4g}, max {q['max']:.4g}"
                  f" (n {q['n']})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", required=True, choices=FAMILIES)
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--max-segments", type=int, default=14)
    ap.add_argument("--kinds", default=",".join(LIVING_KINDS),
                    help="people-living: the effects drawn in turn, comma-separated from "
                         f"{', '.join(LIVING_KINDS)}")
    args = ap.parse_args(argv)
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    if not kinds or set(kinds) - set(LIVING_KINDS):
        print(f"testbed_campaign: --kinds {args.kinds!r}: expected a comma-separated list of "
              f"{', '.join(LIVING_KINDS)}", file=sys.stderr)
        return 2
    if args.family not in FAMILIES:
        print(f"testbed_campaign: the family {args.family!r} is not built yet "
              f"(built: {', '.join(FAMILIES)})", file=sys.stderr)
        return 2
    out = args.out or ROOT / "benchmarks" / "results" / f"testbed-{args.family}-{args.seed}"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "rigtool.log"
    t0 = time.time()
    print(f"simulating {args.draws} draws of {args.family} (seed {args.seed}) into {out}",
          flush=True)
    sessions = build(args.family, args.draws, args.seed, out,
                     max_segments=args.max_segments, log=log, kinds=kinds)
    t1 = time.time()
    batch_dir = out / "batch"
    manifests = [s["manifest"] for s in sessions if s["calibrate_exit"] in (0, 3)]
    rc = _rigtool("batch", *manifests, "-o", str(batch_dir), "--workers", str(args.workers),
                  "--force", log=log)
    t2 = time.time()
    res = evaluate(sessions, batch_dir)
    res["figures"].update({"batch_exit": rc, "simulate_calibrate_s": round(t1 - t0, 1),
                           "batch_s": round(t2 - t1, 1), "family": args.family,
                           "seed": args.seed,
                           "command": f"python3 benchmarks/testbed_campaign.py --family "
                                      f"{args.family} --draws {args.draws} --seed {args.seed}"})
    (out / "summary.json").write_text(json.dumps(res, indent=1, default=float))
    print_figures(args.family, res["figures"])
    print(f"  times: simulate + calibrate {t1 - t0:.0f} s, rigtool batch {t2 - t1:.0f} s "
          f"(exit {rc})")
    for s in res["sessions"]:
        print(f"  {s['name']}: {s.get('robot', '')} {s['links']} links, {s['status']} "
              f"(exit {s['exit_status']}), "
              f"within 2 SE {s.get('within_2se')}, worst |z| {s.get('worst_z')}, "
              f"checks {s.get('checks')}")
        if s.get("robot_vs_prior"):
            print(f"    largest error over the base combinations (estimate / CAD prior / "
                  f"robot.urdf): {json.dumps(s['robot_vs_prior'])}")
        if s["status"] not in ("done", "partial"):
            print(f"    {s['message']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
