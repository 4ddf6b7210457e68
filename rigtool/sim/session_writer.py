"""Write a synthetic study: the files a user would have, plus the ground truth.

Layout under the output directory ``DIR`` (SPEC.md)::

    DIR/calibration/RIG.toml            rig file as written by hand (no stiffness, no platform
                                        inertia: `rigtool calibrate` finds them)
    DIR/calibration/RIG.truth.json      true springs, platform, reference-body placements
    DIR/calibration/RIG/*.csv|tsv|c3d   calibration captures
    DIR/captures/SESSION/session.toml   manifest (rig = ../../calibration/RIG.calibrated.toml)
    DIR/captures/SESSION/*.csv|...      posture and relative-motion captures
    DIR/captures/SESSION/truth.json     true overall properties, Phi_s, Phi_B, link parameters

Every capture starts at the static equilibrium (joints locked at the posture) and is
excited by the scenario's initial offset and velocity in six DOF; the relative-motion
capture also releases links from a tilt. Trajectories come from ``rigtool.sim.dynamics``
(or a stand-in ``simulator`` for tests); markers from :mod:`rigtool.sim.markers`.
"""

from __future__ import annotations

import json
import sys
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from rigtool import __version__
from rigtool.errors import InputError
from rigtool.mocap import write_capture
from rigtool.rig import Platform
from rigtool.sim.living_markers import marker_offsets
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.scenario_types import (EXTENSIONS, CalibrationPlan, CaptureSettings,
                                        PosturePlan, RelativePlan, Scenario)
from rigtool.tomlwrite import Inline, dumps
from rigtool.tree import (composite_params, minimal_parameters, phi_b_names, phi_b_vector,
                          phi_s_from_phi_b, phi_s_names)

__all__ = ["CaptureJob", "BundleResult", "capture_jobs", "write_bundle"]


@dataclass(frozen=True)
class CaptureJob:
    """Everything needed to simulate and write one capture."""

    kind: str                                  # "calibration", "posture" or "relative"
    name: str
    relpath: Path                              # relative to the output directory
    settings: CaptureSettings
    marker_sets: tuple[MarkerSet, ...]
    plan: CalibrationPlan | PosturePlan | RelativePlan


@dataclass
class BundleResult:
    """What :func:`write_bundle` wrote (paths relative to the output directory)."""

    out_dir: Path
    files: list[Path] = field(default_factory=list)
    rig_file: Path | None = None
    session_file: Path | None = None


def _rig_with_truth(sc: Scenario):
    return replace(sc.rig, platform=Platform(sc.rig.platform.markers_platform,
                                             sc.platform_params))


def system_for(sc: Scenario, job: CaptureJob):
    """The ``rigtool.sim.dynamics.System`` of a capture (joints locked at its posture)."""
    from rigtool.sim import dynamics as dyn

    rig = _rig_with_truth(sc)
    if job.kind == "calibration":
        fixed = tuple(dyn.FixedBody(p.body, sc.reference_bodies[p.body].params,
                                    p.rotation_platform, p.position_platform_m)
                      for p in job.plan.load)
        return dyn.System(rig, sc.platform_params, fixed=fixed)
    obj = sc.obj
    relative = job.kind == "relative"
    living = sc.living
    if relative and living is not None and living.breathing is not None \
            and living.breathing.hold_movement:
        living = replace(living, breathing=replace(living.breathing, hold=True))
    return dyn.System(rig, sc.platform_params, tree=obj.tree,
                      base_rotation_platform=obj.base_rotation_platform,
                      base_position_platform_m=obj.base_position_platform_m,
                      posture=dict(job.plan.rotations), free_joints=relative,
                      joint_damping=job.plan.joint_damping if relative else 0.0,
                      joint_servo=dict(job.plan.drive) if relative else {},
                      living=living, living_seed=_living_seed(sc.seed, job))


def _living_seed(seed: int, job: "CaptureJob") -> int:
    """Seed of a capture's breath and beat variability (keyed by its name, like the noise)."""
    return int(zlib.crc32(f"living/{seed}/{job.kind}/{job.name}".encode()))


def simulate_job(sc: Scenario, job: CaptureJob):
    """Trajectory of one capture with ``rigtool.sim.dynamics.simulate``."""
    from rigtool.sim import dynamics as dyn

    s = job.settings
    kw = {}
    if job.kind == "relative":
        kw["link_rotation"] = dict(job.plan.start_rotations)
    return dyn.simulate(system_for(sc, job), s.duration_s, s.rate_hz, platform_offset=s.offset,
                        platform_velocity=s.velocity, **kw)


def capture_jobs(sc: Scenario) -> list[CaptureJob]:
    """The captures of a scenario in writing order, with paths and marker sets."""
    rig_name = sc.rig.name
    plat = MarkerSet("platform", sc.rig.platform.markers_platform, sc.platform_subject)
    jobs = []
    for plan in sc.calibration:
        sets = [plat] + [MarkerSet(p.body, sc.reference_bodies[p.body].markers,
                                   sc.reference_bodies[p.body].subject)
                         for p in plan.load if sc.reference_bodies[p.body].markers]
        rel = Path("calibration") / rig_name / (plan.name + EXTENSIONS[plan.settings.format])
        jobs.append(CaptureJob("calibration", plan.name, rel, plan.settings, tuple(sets), plan))
    if sc.obj is not None:
        sets = [plat] + [MarkerSet(l.name, l.markers_link, sc.obj.subject)
                         for l in sc.obj.tree.links]
        folder = Path("captures") / sc.obj.session
        for plan in sc.postures:
            jobs.append(CaptureJob("posture", plan.name,
                                   folder / (plan.name + EXTENSIONS[plan.settings.format]),
                                   plan.settings, tuple(sets), plan))
        if sc.relative is not None:
            plan = sc.relative
            jobs.append(CaptureJob("relative", plan.name,
                                   folder / (plan.name + EXTENSIONS[plan.settings.format]),
                                   plan.settings, tuple(sets), plan))
    return jobs


# --------------------------------------------------------------------------- text files

def _l(a) -> list:
    return np.asarray(a, float).tolist()


def rig_file_dict(sc: Scenario) -> dict:
    """The rig file a user writes by hand (SPEC "The rig file"), without calibrated values."""
    rig = sc.rig
    out: dict = {"rig": {"name": rig.name, "gravity": _l(rig.gravity_lab),
                         "locked_dofs": list(rig.locked_dofs)},
                 "platform": {"markers": Inline({k: _l(v) for k, v in
                                                 rig.platform.markers_platform.items()})},
                 "springs": [{"name": s.name, "anchor": _l(s.anchor_lab),
                              "attachment": _l(s.attachment_platform)} for s in rig.springs]}
    bodies = []
    for b in sc.reference_bodies.values():
        t = {"name": b.name, "mass": b.mass, "com": _l(b.com), "inertia_com": _l(b.inertia_com)}
        if b.markers:
            t["markers"] = Inline({k: _l(v) for k, v in b.markers.items()})
        else:
            t["mount"] = Inline({"position": _l(b.mount_position),
                                 "rotation": _l(b.mount_rotation)})
        bodies.append(t)
    if bodies:
        out["reference_bodies"] = bodies
    caps = []
    for job in capture_jobs(sc):
        if job.kind != "calibration":
            continue
        t = {"capture": job.relpath.relative_to("calibration").as_posix(),
             "load": [p.body for p in job.plan.load]}
        if job.settings.window is not None:
            t["window"] = list(job.settings.window)
        if job.plan.holdout:
            t["holdout"] = True
        caps.append(t)
    if caps:
        out["calibration_captures"] = caps
    return out


def session_dict(sc: Scenario) -> dict:
    """The session manifest (SPEC "The session manifest")."""
    obj = sc.obj
    links = []
    for link in obj.tree.links:
        t = {"name": link.name, "parent": link.parent}
        if link.parent != "platform":
            t["joint"] = "spherical"
            t["joint_center"] = _l(link.joint_center_parent)
        t["markers"] = Inline({k: _l(v) for k, v in link.markers_link.items()})
        t.update(obj.manifest_priors.get(link.name, {}))
        links.append(t)
    jobs = {j.name: j for j in capture_jobs(sc) if j.kind != "calibration"}
    postures = []
    for p in sc.postures:
        t = {"name": p.name, "capture": jobs[p.name].relpath.name}
        if p.settings.window is not None:
            t["window"] = list(p.settings.window)
        postures.append(t)
    out = {"session": {"name": obj.session,
                       "rig": f"../../calibration/{sc.rig.name}.calibrated.toml",
                       "total_mass": obj.total_mass}}
    if obj.opensim is not None:          # the model stands in for the links
        out["opensim"] = {"model": obj.opensim.name}
    else:
        out["links"] = links
    out["postures"] = postures
    if sc.relative is not None:
        r = {"capture": jobs[sc.relative.name].relpath.name}
        if sc.relative.settings.window is not None:
            r["window"] = list(sc.relative.settings.window)
        out["relative_motion"] = r
    return out


def _body_truth(params) -> dict:
    return {"mass": params.mass, "com": _l(params.com), "inertia_com": _l(params.inertia_com),
            "params": _l(params.pi)}


def _rig_truth(sc: Scenario) -> dict:
    return {"springs": [{"name": s.name, "anchor": _l(s.anchor_lab),
                         "attachment": _l(s.attachment_platform), "stiffness": s.stiffness,
                         "free_length": s.free_length, "damping": s.damping}
                        for s in sc.rig.springs],
            "platform": _body_truth(sc.platform_params),
            "gravity": _l(sc.rig.gravity_lab), "locked_dofs": list(sc.rig.locked_dofs)}


def _capture_truth(job: CaptureJob, equilibrium, modes_hz, log) -> dict:
    s = job.settings
    return {"name": job.name, "capture": job.relpath.name, "format": s.format,
            "rate_hz": s.rate_hz, "duration_s": s.duration_s, "noise_sigma_m": s.noise_sigma_m,
            "offset": _l(s.offset), "velocity": _l(s.velocity),
            "equilibrium": {"rotation": _l(equilibrium[0]), "position": _l(equilibrium[1])},
            "modes_hz": _l(modes_hz), "artefacts": log}


def session_truth(sc: Scenario) -> dict:
    """Truth of the object: per posture overall properties, Phi_s, Phi_B, link parameters."""
    tree = sc.obj.tree
    minimal = minimal_parameters(tree)
    phi_b = phi_b_vector(minimal)
    postures = []
    for p in sc.postures:
        overall = composite_params(tree, p.rotations)
        postures.append({"name": p.name, "mass": overall.mass, "com": _l(overall.com),
                         "inertia_com": _l(overall.inertia_com),
                         "rotations": {k: _l(v) for k, v in p.rotations.items()}})
    out = {"session": sc.obj.session, "total_mass": sc.obj.total_mass,
           "base": {"rotation_platform": _l(sc.obj.base_rotation_platform),
                    "position_platform": _l(sc.obj.base_position_platform_m)},
           "links": [{"name": l.name, "parent": l.parent,
                      "joint_center": None if l.joint_center_parent is None
                      else _l(l.joint_center_parent), **_body_truth(l.params)}
                     for l in tree.links],
           "postures": postures,
           "phi_s": {"names": phi_s_names(tree), "values": _l(phi_s_from_phi_b(phi_b))},
           "phi_b": {"names": phi_b_names(tree), "values": _l(phi_b)},
           "minimal_parameters": {k: {"M": v["M"], "MS": _l(v["MS"]), "J": _l(v["J"])}
                                  for k, v in minimal.items()}}
    if sc.relative is not None:
        r = sc.relative
        out["relative_motion"] = {"name": r.name, "posture": r.posture,
                                  "released": {k: _l(v) for k, v in r.released.items()},
                                  "start_rotations": {k: _l(v)
                                                      for k, v in r.start_rotations.items()},
                                  "joint_damping": r.joint_damping}
        if r.drive:                    # a driven swing only: a free one's truth has no drive
            out["relative_motion"]["drive"] = {
                k: {"amplitude_deg": _l(np.rad2deg(d.amplitude_rad)),
                    "frequency_hz": _l(d.frequency_hz), "phase_deg": _l(np.rad2deg(d.phase_rad)),
                    "stiffness_nm_per_rad": d.stiffness_nm_per_rad,
                    "damping_nms_per_rad": d.damping_nms_per_rad}
                for k, d in r.drive.items()}
    return out


# --------------------------------------------------------------------------- the bundle

def _rng(seed: int, job: CaptureJob) -> np.random.Generator:
    # One generator per capture, keyed by its name: adding a capture leaves the others' noise.
    return np.random.default_rng([seed, zlib.crc32(f"{job.kind}/{job.name}".encode())])


def write_bundle(sc: Scenario, out_dir: str | Path, /, *, seed: int | None = None,
                 fmt: str | None = None, force: bool = False,
                 simulator: Callable[[Scenario, CaptureJob], object] | None = None,
                 progress: bool = False) -> BundleResult:
    """Simulate every capture of ``sc`` and write the bundle under ``out_dir``.

    Parameters
    ----------
    sc : Scenario
    out_dir : path
        Created if needed. Existing files are never overwritten unless ``force``.
    seed : int, optional
        Overrides the scenario's seed (noise and artefacts).
    fmt : str, optional
        Writes every capture in this format (one of ``rigtool.mocap.FORMATS``).
    force : bool
        Overwrite files that already exist.
    simulator : callable, optional
        ``simulator(scenario, job) -> Trajectory``; default :func:`simulate_job`.
    progress : bool
        Print one line per capture to stderr.

    Raises
    ------
    InputError
        When a file to be written exists and ``force`` is false.
    """
    out_dir = Path(out_dir)
    if fmt is not None:
        sc = sc.with_format(fmt)
    seed = sc.seed if seed is None else int(seed)
    sc = replace(sc, seed=seed)            # the living effects' draws follow --seed too
    simulator = simulator or simulate_job
    jobs = capture_jobs(sc)
    rig_rel = Path("calibration") / f"{sc.rig.name}.toml"
    rig_truth_rel = Path("calibration") / f"{sc.rig.name}.truth.json"
    targets = [rig_rel, rig_truth_rel] + [j.relpath for j in jobs]
    if sc.obj is not None:
        sess = Path("captures") / sc.obj.session
        targets += [sess / "session.toml", sess / "truth.json"]
        if sc.obj.opensim is not None:
            targets.append(sess / sc.obj.opensim.name)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("expected an output directory, found a file", path=out_dir)
    existing = [t for t in targets if (out_dir / t).exists()]
    if existing and not force:
        raise InputError(f"{len(existing)} file(s) would be overwritten (first: "
                         f"{existing[0].as_posix()}); choose another directory or pass --force",
                         path=out_dir)

    result = BundleResult(out_dir)
    header = (f"written by rigtool {__version__} simulate from {sc.path.name} (seed {seed})")
    truths: dict[str, list] = {"calibration": [], "session": []}
    for k, job in enumerate(jobs):
        if progress:
            print(f"[{k + 1}/{len(jobs)}] simulating {job.relpath.as_posix()} "
                  f"({job.settings.duration_s:g} s at {job.settings.rate_hz:g} Hz)",
                  file=sys.stderr, flush=True)
        traj = simulator(sc, job)
        offsets = None
        if sc.living is not None and job.kind != "calibration":
            offsets = marker_offsets(sc.living, traj, job.marker_sets, sc.obj.tree.names,
                                     np.random.default_rng(_living_seed(seed, job)))
        data = synthesize_markers(traj, job.marker_sets, noise_sigma_m=job.settings.noise_sigma_m,
                                  artefacts=job.settings.artefacts, rng=_rng(seed, job),
                                  rate_hz=job.settings.rate_hz, offsets_m=offsets)
        path = out_dir / job.relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        write_capture(data, path, format=job.settings.format, units="mm")
        result.files.append(job.relpath)
        eq, modes_hz = _equilibrium_and_modes(sc, job)
        entry = _capture_truth(job, eq, modes_hz, data.extras.get("artefacts", []))
        if job.kind == "calibration":
            entry["holdout"] = job.plan.holdout
            entry["load"] = [{"body": p.body, "rotation_platform": _l(p.rotation_platform),
                              "position_platform": _l(p.position_platform_m)}
                             for p in job.plan.load]
            truths["calibration"].append(entry)
        else:
            entry["kind"] = job.kind
            shift = breathing_mean_shift(sc, traj)
            if shift is not None and job.kind != "relative":
                entry["breathing_mean_pi_base"] = _l(shift)
            truths["session"].append(entry)

    (out_dir / rig_rel).parent.mkdir(parents=True, exist_ok=True)
    (out_dir / rig_rel).write_text(dumps(rig_file_dict(sc), header=header + "\nthe rig file "
                                         "as a user writes it; `rigtool calibrate` completes it"),
                                   encoding="utf-8")
    rig_truth = {"rigtool_version": __version__, "scenario": sc.path.name, "seed": seed,
                 "rig": sc.rig.name, **_rig_truth(sc),
                 "reference_bodies": {b.name: _body_truth(b.params)
                                      for b in sc.reference_bodies.values()},
                 "captures": truths["calibration"]}
    _write_json(out_dir / rig_truth_rel, rig_truth)
    result.files += [rig_rel, rig_truth_rel]
    result.rig_file = rig_rel
    if sc.obj is not None:
        sess_dir = out_dir / "captures" / sc.obj.session
        sess_dir.mkdir(parents=True, exist_ok=True)
        (sess_dir / "session.toml").write_text(dumps(session_dict(sc), header=header),
                                               encoding="utf-8")
        if sc.obj.opensim is not None:
            (sess_dir / sc.obj.opensim.name).write_bytes(sc.obj.opensim.read_bytes())
            result.files.append(Path("captures") / sc.obj.session / sc.obj.opensim.name)
        truth = {"rigtool_version": __version__, "scenario": sc.path.name, "seed": seed,
                 **_rig_truth(sc), **session_truth(sc), "captures": truths["session"]}
        if sc.living is not None:
            truth["living"] = living_truth(sc.living)
        _write_json(sess_dir / "truth.json", truth)
        result.session_file = Path("captures") / sc.obj.session / "session.toml"
        result.files += [result.session_file, result.session_file.with_name("truth.json")]
    return result


def _equilibrium_and_modes(sc: Scenario, job: CaptureJob):
    """Static equilibrium (joints locked) and linear mode frequencies of a capture's system."""
    try:
        from rigtool.sim import dynamics as dyn
    except ImportError:                       # pragma: no cover - dynamics not built yet
        return (np.full((3, 3), np.nan), np.full(3, np.nan)), np.full(6, np.nan)
    system = system_for(sc, job)
    if job.kind == "relative":
        system = replace(system, free_joints=False)
    eq = dyn.static_equilibrium(system)
    return eq, dyn.linear_modes(system)[0]


def breathing_mean_shift(sc: Scenario, traj) -> np.ndarray | None:
    """How the capture's time-averaged mass distribution differs from the links' truth (the
    breathing mass at its path's long-run mean): ``[10]`` standard parameters about the
    base-link origin, base axes (truth.json ``breathing_mean_pi_base`` of a locked capture).

    Over a capture of a few breaths the mass's mean place is not its path's mean (a part
    cycle, the breath's wandering depth); a fit of the capture's mean distribution is
    judged against ``pi(posture) + this``. None without a breathing mass.
    """
    item = traj.internal.get("breathing") if getattr(traj, "internal", None) else None
    if item is None:
        return None
    base = sc.obj.tree.links[0].name
    rot, pos = traj.rotation[base], traj.position_m[base]
    s_base = np.einsum("tji,tj->ti", rot, item["position_m"] - pos)       # R^T (x - p)
    link = item["link"]
    r_l = rot[0].T @ traj.rotation[link][0]
    p_l = rot[0].T @ (traj.position_m[link][0] - pos[0])
    s_mean = r_l @ np.asarray(item["rest_link"], float) + p_l
    m = float(item["mass"])

    def point(s):                     # standard parameters of the mass at s [..., 3]
        sq = np.einsum("...i,...i->...", s, s)
        i_o = m * (sq[..., None, None] * np.eye(3) - s[..., :, None] * s[..., None, :])
        return np.concatenate([np.full(s.shape[:-1] + (1,), m), m * s,
                               i_o[..., [0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]], axis=-1)

    return point(s_base).mean(axis=0) - point(s_mean)


def living_truth(living) -> dict:
    """The living effects as plain values (truth.json ``living``)."""
    import dataclasses

    def plain(v):
        if dataclasses.is_dataclass(v):
            return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        return v
    return plain(living)


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
