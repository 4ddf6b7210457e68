"""Relative-motion stage on voluntary (muscle-driven) and passive (released) link motion.

For each scenario the relative-motion capture is simulated once (the two-link demo's object;
``voluntary``: link1 moved by a joint servo tracking a 0.35-1.3 Hz multi-sine, ``demo``: link1
released from a tilt), then every seed draws new marker noise (``--sigma`` mm) and the stage
runs with the true rig and Phi_s (covariance ``(1e-5 |Phi_s|)^2``: the relative stage alone
is measured, not the postures'):

- ``EE``: the equation-error two-step stage (``resolve_relative``);
- ``passive``: the passive output-error refinement (links on damped spherical joints);
- ``active``: the prescribed-motion output-error refinement (the links' measured motion
  as input, only the platform simulated);
- ``auto``: what ``rigtool run`` reports (passive if it reaches the noise, else active, else EE).

Printed per scenario and method: link1.J_yy error (mean, RMS), its mean reported standard
error, the coverage of +-2 reported standard errors, Phi_B's E_MS/M0 (mm) and E_J/Im (%)
(median over seeds), the fit's marker residual (mm) and seconds per seed.

    python3 benchmarks/voluntary.py [--seeds 6] [--sigma 0.1] [--scenarios voluntary,demo]
                                    [--methods passive,active]

``auto`` on a voluntary scenario after seed 0 assumes the passive model's failure seen there.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from rigtool.config import FilterSettings
from rigtool.identify.relative.active import refine_relative_active
from rigtool.identify.relative.equation_error import resolve_relative
from rigtool.identify.relative.output_error import refine_relative
from rigtool.mocap import MarkerData
from rigtool.sim import dynamics as dyn
from rigtool.sim.markers import marker_positions
from rigtool.sim.scenario import load_scenario
from rigtool.sim.session_writer import _rig_with_truth, capture_jobs, system_for
from rigtool.tree import minimal_parameters, phi_b_names, phi_b_vector, phi_s_from_phi_b

ROOT = Path(__file__).resolve().parents[1] / "scenarios"
DURATION_S, WINDOW = 12.0, (1.0, 11.0)


def _scenario(name: str):
    sc = load_scenario(ROOT / f"{name}.toml")
    job = [j for j in capture_jobs(sc) if j.kind == "relative"][0]
    s = job.settings
    t0 = time.perf_counter()
    traj = dyn.simulate(system_for(sc, job), DURATION_S, s.rate_hz, platform_offset=s.offset,
                        platform_velocity=s.velocity,
                        link_rotation=dict(job.plan.start_rotations))
    tree = sc.obj.tree
    phi_b = phi_b_vector(minimal_parameters(tree))
    names, xyz, _ = marker_positions(traj, list(job.marker_sets))
    print(f"{name}: simulated {DURATION_S:.0f} s in {time.perf_counter() - t0:.0f} s")
    return SimpleNamespace(sc=sc, job=job, traj=traj, tree=tree, phi_b=phi_b, names=names,
                           xyz=xyz, rate=s.rate_hz)


def _errors(p, values: np.ndarray) -> tuple[float, float]:
    names = phi_b_names(p.tree)
    err = np.asarray(values) - p.phi_b
    ms = np.array([".MS" in n for n in names])
    im = float(np.linalg.eigvalsh(_whole_inertia(p)).max())
    return 1e3 * np.abs(err[ms]).max() / p.sc.obj.total_mass, 100 * np.abs(err[~ms]).max() / im


def _whole_inertia(p) -> np.ndarray:
    """The object's inertia about its COM at the capture's rest posture (base axes)."""
    from rigtool.inertia import InertialParams, transform_params
    org, rot = p.tree.origins_and_rotations(dict(p.job.plan.rotations))
    pi = sum(transform_params(l.params.pi, rot[i], org[i]) for i, l in enumerate(p.tree.links))
    return InertialParams(pi).inertia_com


def run(args) -> None:
    rows = []
    for name in args.scenarios.split(","):
        p = _scenario(name)
        rig = _rig_with_truth(p.sc)
        phi_s = phi_s_from_phi_b(p.phi_b)
        cov_s = np.diag((1e-9 + 1e-5 * np.abs(phi_s)) ** 2)
        subset = SimpleNamespace(values=phi_s, covariance=cov_s)
        markers = {l.name: l.markers_link for l in p.tree.links}
        jyy = phi_b_names(p.tree).index("link1.J_yy")
        per = {m: [] for m in ("EE", "passive", "active", "auto")}
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            data = MarkerData(time_s=p.traj.time_s, names=tuple(p.names),
                              xyz_m=p.xyz + rng.normal(0.0, args.sigma * 1e-3, p.xyz.shape),
                              rate_hz=p.rate, source=Path(f"{name}-{seed}.csv"))
            t0 = time.perf_counter()
            start = resolve_relative(p.tree, rig, p.sc.platform_params, data, markers, subset,
                                     p.sc.obj.total_mass, FilterSettings(), WINDOW)
            per["EE"].append((start.values, start.std_phi_b, float("nan"),
                              time.perf_counter() - t0))
            kw = dict(start=start, phi_s=phi_s, phi_s_cov=cov_s,
                      total_mass_kg=p.sc.obj.total_mass, window=WINDOW)
            refs = {}
            for method, fit in (("passive", refine_relative), ("active", refine_relative_active)):
                if method not in args.methods.split(","):
                    continue
                if method == "passive" and name != "demo" and seed > 0:
                    continue            # fails on voluntary motion (shown on seed 0)
                t0 = time.perf_counter()
                ref = fit(p.tree, rig, p.sc.platform_params, data, markers, **kw)
                refs[method] = ref
                per[method].append((ref.phi_b, ref.phi_b_std, ref.marker_sigma_mm,
                                    time.perf_counter() - t0))
            auto = next((refs[m] for m in ("passive", "active")
                         if m in refs and refs[m].reached_noise()), None)
            per["auto"].append((start.values, start.std_phi_b, float("nan"), 0.0) if auto is None
                               else (auto.phi_b, auto.phi_b_std, auto.marker_sigma_mm, 0.0))
            print(f"  {name} seed {seed}: " + ", ".join(
                f"{m} J_yy {v[-1][0][jyy]:.5f}" for m, v in per.items() if v), flush=True)
        for method, res in per.items():
            if not res:
                continue
            vals = np.array([r[0] for r in res])
            stds = np.array([r[1] for r in res])
            e = vals[:, jyy] - p.phi_b[jyy]
            z = np.abs(vals - p.phi_b) / np.where(stds > 0, stds, np.nan)
            errs = np.array([_errors(p, v) for v in vals])
            rows.append((name, method, len(res), e.mean(), np.sqrt(np.mean(e ** 2)),
                         stds[:, jyy].mean(), np.nanmean(z < 2), np.median(errs[:, 0]),
                         np.median(errs[:, 1]), np.nanmedian([r[2] for r in res]),
                         np.mean([r[3] for r in res])))
    print(f"\nsigma {args.sigma} mm, true J_yy per scenario; Phi_s exact "
          "(relative stage alone)\n")
    print("| scenario | method | seeds | J_yy err mean | J_yy err RMS | mean std | cover +-2 "
          "std (all Phi_B) | E_MS/M0 mm | E_J/Im % | residual mm | s/seed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:+.5f} | {r[4]:.5f} | {r[5]:.5f} | "
              f"{100 * r[6]:.0f}% | {r[7]:.4f} | {r[8]:.4f} | {r[9]:.3f} | {r[10]:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--sigma", type=float, default=0.1, help="marker noise, mm")
    ap.add_argument("--scenarios", default="voluntary,demo")
    ap.add_argument("--methods", default="passive,active",
                    help="output-error models to run besides EE (passive runs on seed 0 only "
                         "of a voluntary scenario: it cannot follow it)")
    run(ap.parse_args())


if __name__ == "__main__":
    main()
