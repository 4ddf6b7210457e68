"""Speed and scale of the pipeline: time per stage and peak memory against capture
length and against the number of links.

Every measurement runs in a fresh child process (``--child ...``) so that its peak resident
memory (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) is its own (a capture is simulated
and written by a child of its own first: the simulator's memory is not the pipeline's); the interpreter with numpy,
scipy and cvxpy imported is reported alone as ``baseline``.

Length (two-link paper-002 rig and object, one locked posture, 120 Hz, sigma 0.1 mm): the
capture simulated for L seconds and written as a Vicon CSV; timed: read (read_capture), pose
(marker-fitted poses of the platform and every link), filter (platform motion, filtered and
differentiated, plus the two noise probes), the equation-error posture fit (exact springs,
dual-metric weighting, compensation) and the output-error refinement as ``rigtool run`` runs
it (the object's markers in the fit; up to ``--oe-max-s``).

Links (a base and n-1 moving links in up to four limbs hanging from it, built
programmatically on the paper-002 rig; generic link parameters and 4 markers per link;
n+1 random locked postures of ``--posture-s`` seconds and a swing with every joint released):
read -> pose -> filter -> posture (equation error) -> subset -> relative stage, with the
simulation time reported apart (not part of the pipeline).

Times are CPU seconds of the child (``time.process_time``, one BLAS thread) and, for the
output-error stages and the whole pipeline, wall seconds beside them ("CPU / wall"): the
engine integrates sensitivity columns on several threads (rigtool.engine.columns) and XLA
has threads of its own, so CPU can exceed wall; on a shared machine wall time also measures
the neighbours.

    python3 benchmarks/speed.py [--lengths 10,30,60,180,600] [--links 2,4,8,15]
                                [--oe-max-s 60] [--posture-s 10]
                                [--links-method equation-error|output-error]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BASE_SCENARIO = ROOT / "scenarios" / "two_link_paper002.toml"


def _peak_mib() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _Clock:
    """Per-stage CPU time of this process (``time.process_time``: the machine is shared, so
    wall time measures the neighbours as much as rigtool; BLAS is pinned to one thread, so
    CPU time is what a quiet single core would take)."""

    def __init__(self) -> None:
        self.t = {}
        self.w = {}

    def __call__(self, name: str):
        clock = self

        class _Ctx:
            def __enter__(self):
                self.t0 = time.process_time()
                self.w0 = time.perf_counter()

            def __exit__(self, *exc):
                clock.t[name] = clock.t.get(name, 0.0) + time.process_time() - self.t0
                clock.w[name] = clock.w.get(name, 0.0) + time.perf_counter() - self.w0
        return _Ctx()


def _stages(data_path: Path, rig, tree, markers, mass, settings, window, clock, *,
            oe: bool, fit_seed: int = 0):
    """read -> pose -> filter -> equation-error fit (-> output error) of one posture."""
    from rigtool.identify.posture.output_error import refine_posture
    from rigtool.identify.posture.equation_error import fit_posture
    from rigtool.identify.common.platform_motion import (capture_motion, relative_pose,
                                                  with_noise_probes)
    from rigtool.kinematics.pose import body_trajectory
    from rigtool.mocap import read_capture
    from rigtool.pipeline.session import _attached_markers, _child_rotations

    with clock("read"):
        data = read_capture(data_path)
    with clock("pose"):
        plat = body_trajectory(data, rig.platform.markers_platform)
        trajs = {l.name: body_trajectory(data, markers[l.name]) for l in tree.links}
    with clock("filter"):
        cap = capture_motion(data, rig.platform.markers_platform, settings, name=data_path.stem,
                             window=window)
        cap = with_noise_probes(cap, rig.platform.markers_platform, settings)
    with clock("posture EE"):
        r_pb, t_pb, _ = relative_pose(plat, trajs[tree.links[0].name], cap.valid)
        rotations, *_ = _child_rotations(tree, trajs, data_path)
        res = fit_posture(rig, rig.platform.params, cap, base_rotation_platform=r_pb,
                          base_position_platform=t_pb, total_mass_kg=mass,
                          weighting="dual-metric")
    if oe:
        with clock("posture OE"):
            # as rigtool run: the object's markers join the fit, the base pose estimated
            res = refine_posture(rig, rig.platform.params, data, base_rotation_platform=r_pb,
                                 base_position_platform=t_pb, total_mass_kg=mass, start=res,
                                 window=window, **_attached_markers(tree, markers))
    return data, res, rotations


def child_simulate_length(seconds: float, folder: str) -> dict:
    """(child) Simulate one locked posture of ``seconds`` and write it as a Vicon CSV (in its
    own process: the simulator's memory is not the pipeline's)."""
    from dataclasses import replace

    from rigtool.mocap import write_capture
    from rigtool.sim.markers import synthesize_markers
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import capture_jobs, simulate_job

    sc = load_scenario(BASE_SCENARIO)
    job = [j for j in capture_jobs(sc) if j.kind == "posture"][0]
    job = replace(job, settings=replace(job.settings, duration_s=float(seconds), window=None))
    t0 = time.process_time()
    traj = simulate_job(sc, job)
    data = synthesize_markers(traj, job.marker_sets, noise_sigma_m=1e-4,
                              rng=np.random.default_rng(1), rate_hz=job.settings.rate_hz)
    path = Path(folder) / "posture.csv"
    write_capture(data, path, format="vicon-csv")
    return {"path": str(path), "simulate_s": time.process_time() - t0,
            "frames": int(round(seconds * job.settings.rate_hz))}


def child_length(seconds: float, oe: bool, path: str) -> dict:
    """(child) The pipeline on one locked posture of ``seconds`` already written at ``path``:
    per-stage times and peak memory."""
    from rigtool.config import FilterSettings
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import _rig_with_truth

    sc = load_scenario(BASE_SCENARIO)
    rig = _rig_with_truth(sc)
    tree = sc.obj.tree
    clock = _Clock()
    t0, w0 = time.process_time(), time.perf_counter()
    _, res, _ = _stages(Path(path), rig, tree, {l.name: l.markers_link for l in tree.links},
                        float(sc.obj.total_mass), FilterSettings(), None, clock, oe=oe)
    # the output-error fit's stages: (horizon s, cost-only simulations, normal equations)
    oe_stages = [[float(h), int(c), int(n)] for h, c, n in getattr(res, "stages", ())]
    return {"seconds": seconds, "file_mib": Path(path).stat().st_size / 2 ** 20,
            "oe_stages": oe_stages,
            "stages": clock.t, "stages_wall": clock.w, "total": time.process_time() - t0,
            "total_wall": time.perf_counter() - w0, "peak_mib": _peak_mib()}


def _limb_tree_toml(n_links: int, posture_s: float, seed: int, swing_s: float = 10.0) -> str:
    """A scenario: base + n-1 moving links in up to four limbs, n+1 random postures, and a
    swing fitted over ``swing_s`` (recorded 2 s longer: released 1 s before the window)."""
    rng = np.random.default_rng(seed)
    n_mov = n_links - 1
    roots = [[0.15, -0.22, 0.0], [-0.15, -0.22, 0.0], [0.12, 0.20, -0.05], [-0.12, 0.20, -0.05]]
    lines = ["[scenario]", f'name = "tree-{n_links}"', f'extends = "{BASE_SCENARIO}"', "",
             "[capture]", f"duration_s = {posture_s}", "[capture.artefacts]", "short_gaps = 0",
             "", "[object]", f'session = "tree-{n_links}"', 'subject = "robot"',
             "base = { position = [0.0, 0.05, 0.35] }", "",
             "[[object.links]]", 'name = "base"', 'parent = "platform"', "mass = 40.0",
             "com = [0.01, -0.01, -0.05]",
             "inertia_com = [[1.2, 0.02, -0.03], [0.02, 1.0, 0.01], [-0.03, 0.01, 0.5]]",
             "markers = { B1 = [0.15, 0.12, 0.05], B2 = [0.13, -0.14, 0.08], "
             "B3 = [-0.14, 0.02, 0.12], B4 = [0.16, 0.03, -0.18] }"]
    limbs: list[list[str]] = [[] for _ in range(min(4, max(n_mov, 1)))]
    for k in range(n_mov):
        limbs[k % len(limbs)].append(f"l{k + 1}")
    names = []
    for li, limb in enumerate(limbs):
        for d, name in enumerate(limb):
            parent = "base" if d == 0 else limb[d - 1]
            jc = roots[li] if d == 0 else [0.0, 0.0, -0.26]
            m = 2.0 + 0.5 * rng.random()
            off = 0.0005 * rng.standard_normal(3)
            lines += ["", "[[object.links]]", f'name = "{name}"', f'parent = "{parent}"',
                      f"joint_center = {list(map(float, jc))}", f"mass = {m:.3f}",
                      f"com = [{0.005 + 0.003 * rng.standard_normal():.4f}, "
                      f"{0.003 * rng.standard_normal():.4f}, -0.12]",
                      f"inertia_com = [[{0.020 * m / 2:.5f}, {off[0]:.6f}, {off[1]:.6f}], "
                      f"[{off[0]:.6f}, {0.021 * m / 2:.5f}, {off[2]:.6f}], "
                      f"[{off[1]:.6f}, {off[2]:.6f}, {0.004 * m / 2:.5f}]]",
                      "markers = { " + ", ".join(
                          f"{name}M{i} = [{x:.3f}, {y:.3f}, {z:.3f}]" for i, (x, y, z) in
                          enumerate([(0.04, 0.04, -0.05), (-0.04, 0.03, -0.15),
                                     (0.03, -0.04, -0.22), (-0.03, -0.04, -0.10)])) + " }"]
            names.append(name)
    for p in range(n_links + 1):
        eul = {nm: (rng.uniform(-60, 60, 3) if p else np.zeros(3)) for nm in names}
        lines += ["", "[[postures]]", f'name = "p{p}"',
                  "euler_deg = { " + ", ".join(f"{nm} = [{a:.1f}, {b:.1f}, {c:.1f}]"
                                               for nm, (a, b, c) in eul.items()) + " }"]
    rel = ", ".join(f"{nm} = [{0.05 + 0.1 * rng.random():.3f}, {0.2 + 0.1 * rng.random():.3f}, "
                    f"{0.05 * rng.random():.3f}]" for nm in names)
    lines += ["", "[relative_motion]", 'name = "swing"', 'posture = "p0"',
              f"release = {{ {rel} }}", "joint_damping = 0.1",
              f"duration_s = {swing_s + 2.0}", f"window = [1.0, {swing_s + 1.0}]"]
    return "\n".join(lines) + "\n"


def child_links(n_links: int, posture_s: float, oe: bool = False,
                swing_s: float = 10.0) -> dict:
    """The whole pipeline on a programmatically built tree of ``n_links`` links (``oe``:
    with the output-error refinements of the postures and of the relative stage, as
    ``rigtool run`` does by default)."""
    from rigtool.config import FilterSettings
    from rigtool.identify.relative.equation_error import resolve_relative
    from rigtool.identify.subset.fit import PostureOverall, fit_subset
    from rigtool.mocap import read_capture, write_capture
    from rigtool.sim.markers import synthesize_markers
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import _rig_with_truth, capture_jobs, simulate_job
    from rigtool.tree import minimal_parameters, phi_b_vector

    tmp = Path(tempfile.mkdtemp(prefix="rigtool-speed-links-"))
    scen = tmp / "tree.toml"
    scen.write_text(_limb_tree_toml(n_links, posture_s, seed=n_links, swing_s=swing_s))
    sc = load_scenario(scen)
    jobs = [j for j in capture_jobs(sc) if j.kind in ("posture", "relative")]
    t0 = time.process_time()
    rng = np.random.default_rng(3)
    paths = {}
    for j in jobs:
        data = synthesize_markers(simulate_job(sc, j), j.marker_sets, noise_sigma_m=1e-4,
                                  rng=rng, rate_hz=j.settings.rate_hz)
        paths[j.name] = tmp / f"{j.name}.csv"
        write_capture(data, paths[j.name], format="vicon-csv")
    sim_s = time.process_time() - t0
    rig, tree, mass = _rig_with_truth(sc), sc.obj.tree, float(sc.obj.total_mass)
    markers = {l.name: l.markers_link for l in tree.links}
    settings = FilterSettings()
    clock = _Clock()
    t0, w0 = time.process_time(), time.perf_counter()
    post = []
    out = {"links": n_links, "postures": sum(j.kind == "posture" for j in jobs),
           "simulate_s": sim_s}
    try:
        for j in jobs:
            if j.kind != "posture":
                continue
            _, res, rotations = _stages(paths[j.name], rig, tree, markers, mass, settings,
                                        j.settings.window, clock, oe=oe)
            post.append(PostureOverall(j.name, res.com, res.com_std, res.inertia_com,
                                       res.inertia_com_std, rotations,
                                       covariance9=res.covariance9))
        with clock("subset"):
            sub = fit_subset(tree, post, mass, consistent=True)
        out["subset_rank"] = f"{sub.rank}/{len(sub.names)}"
        rel_job = [j for j in jobs if j.kind == "relative"][0]
        with clock("read"):
            rdata = read_capture(paths[rel_job.name])
        with clock("relative"):
            rel = resolve_relative(tree, rig, sc.platform_params, rdata, markers, sub, mass,
                                   settings, rel_job.settings.window)
        if oe:
            from rigtool.identify.relative.output_error import refine_relative
            with clock("relative OE"):
                rel = refine_relative(tree, rig, sc.platform_params, rdata, markers, start=rel,
                                      phi_s_cov=sub.covariance, phi_s=sub.values,
                                      total_mass_kg=mass, window=rel_job.settings.window)
            out["relative_horizons_s"] = [round(float(h), 2) for h in rel.horizons_s]
            out["relative_rms_mm"] = float(rel.marker_sigma_mm)
        err = rel.values - phi_b_vector(minimal_parameters(tree))
        out["phi_b_max_ms_err_mm"] = float(np.abs(err.reshape(-1, 9)[:, :3]).max() / mass * 1e3)
    except Exception as exc:        # reported, not hidden: the timing up to here still counts
        out["error"] = f"{type(exc).__name__}: {exc}"
    out.update(stages=clock.t, stages_wall=clock.w, total=time.process_time() - t0,
               total_wall=time.perf_counter() - w0, peak_mib=_peak_mib())
    return out


def child_baseline() -> dict:
    import cvxpy  # noqa: F401
    import scipy.optimize  # noqa: F401

    import rigtool.pipeline.session  # noqa: F401
    return {"peak_mib": _peak_mib()}


def _run_child(args: list[str]) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed",
                "wall": time.perf_counter() - t0}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="10,30,60,180,600", help="capture lengths, s")
    ap.add_argument("--oe-max-s", type=float, default=60.0,
                    help="run the output-error refinement up to this capture length")
    ap.add_argument("--links", default="2,4,8,15")
    ap.add_argument("--posture-s", type=float, default=10.0)
    ap.add_argument("--swing-s", default="10",
                    help="fitted swing lengths, s (comma-separated; each with every --links)")
    ap.add_argument("--links-method", choices=["equation-error", "output-error"],
                    default="equation-error",
                    help="output-error: the links study with rigtool run's default "
                         "refinements (postures and relative stage)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "simulate-length":
            out = child_simulate_length(float(rest[0]), rest[1])
        elif kind == "length":
            out = child_length(float(rest[0]), rest[1] == "1", rest[2])
        elif kind == "links":
            out = child_links(int(rest[0]), float(rest[1]), rest[2] == "1", float(rest[3]))
        else:
            out = child_baseline()
        print(json.dumps(out))
        return
    base = _run_child(["baseline"])
    print(f"baseline (interpreter + numpy, scipy, cvxpy, rigtool imported): "
          f"{base.get('peak_mib', float('nan')):.0f} MiB\n")
    if args.lengths:
        print("### Against capture length (one locked posture, 120 Hz, two-link object)\n")
        print("| length | frames | CSV MiB | read s | pose s | filter s | posture EE s | "
              "posture OE s CPU / wall | pipeline s CPU / wall | peak MiB | (simulate s) |")
        print("|" + "---|" * 11)
        stage_log: list[str] = []
        for length in [float(x) for x in args.lengths.split(",")]:
            with tempfile.TemporaryDirectory(prefix="rigtool-speed-") as tmp:
                sim = _run_child(["simulate-length", str(length), tmp])
                r = sim if "error" in sim else _run_child(
                    ["length", str(length), "1" if length <= args.oe_max_s else "0",
                     sim["path"]])
            r.update({k: sim[k] for k in ("frames", "simulate_s") if k in sim})
            if "error" in r:
                print(f"| {length:g} s | failed: {r['error']} |")
                continue
            st = r["stages"]
            print(f"| {length:g} s | {r['frames']} | {r['file_mib']:.1f} | {st['read']:.2f} | "
                  f"{st['pose']:.2f} | {st['filter']:.2f} | {st['posture EE']:.2f} | "
                  + (f"{st['posture OE']:.1f} / {r['stages_wall']['posture OE']:.1f}"
                     if "posture OE" in st else "not run")
                  + f" | {r['total']:.1f} / {r['total_wall']:.1f} | {r['peak_mib']:.0f} | "
                  f"{r['simulate_s']:.1f} |",
                  flush=True)
            if r.get("oe_stages"):
                stage_log.append(f"{length:g} s: " + ", ".join(
                    f"{h:g} s ({c} + {n})" for h, c, n in r["oe_stages"]))
        if stage_log:
            print("\nOutput-error stages, horizon (cost-only simulations + normal equations "
                  "with sensitivities); the object's markers join at the repeated horizon:")
            for line in stage_log:
                print(f"- {line}")
    if args.links:
        oe = args.links_method == "output-error"
        print(f"\n### Against the number of links (n+1 postures of {args.posture_s:g} s, "
              f"a swing fitted over the given seconds, {args.links_method})\n")
        print("| links | swing s | postures | read s | pose s | filter s | posture EE s | "
              "posture OE s CPU / wall | subset s | relative s | relative OE s CPU / wall | "
              "pipeline s CPU / wall | peak MiB | Phi_s rank | Phi_B MS err mm | "
              "(simulate s) |")
        print("|" + "---|" * 16)
        for swing_s in [float(x) for x in args.swing_s.split(",")]:
            for n in [int(x) for x in args.links.split(",")]:
                r = _run_child(["links", str(n), str(args.posture_s), "1" if oe else "0",
                                str(swing_s)])
                st = r.get("stages", {})
                sw = r.get("stages_wall", {})
                g = lambda k: f"{st[k]:.2f}" if k in st else "-"   # noqa: E731
                gw = lambda k: (f"{st[k]:.1f} / {sw[k]:.1f}" if k in sw  # noqa: E731
                                else g(k))
                note = f" ({r['error']})" if "error" in r else ""
                if "relative_horizons_s" in r:
                    note += (f" (horizons {r['relative_horizons_s']} s, "
                             f"{r['relative_rms_mm']:.4f} mm)")
                print(f"| {n} | {swing_s:g} | {r.get('postures', '-')} | {g('read')} | "
                      f"{g('pose')} | {g('filter')} | {g('posture EE')} | {gw('posture OE')} | "
                      f"{g('subset')} | {g('relative')} | {gw('relative OE')} | "
                      f"{r.get('total', float('nan')):.1f} / "
                      f"{r.get('total_wall', float('nan')):.1f} | "
                      f"{r.get('peak_mib', float('nan')):.0f} | "
                      f"{r.get('subset_rank', '-')} | "
                      f"{r.get('phi_b_max_ms_err_mm', float('nan')):.4f}{note} | "
                      f"{r.get('simulate_s', float('nan')):.1f} |", flush=True)

if __name__ == "__main__":
    main()
