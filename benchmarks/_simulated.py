"""Shared set-up of the Monte Carlo benchmarks: a scenario simulated once, written as a
rig + session bundle in a temporary folder, and (optionally) calibrated as
``rigtool calibrate`` does. Seeds then re-draw marker noise on the cached trajectories.

Not a benchmark itself (the leading underscore keeps it apart from the runnable scripts).
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class SimulatedBundle:
    """A scenario simulated once: its trajectories (by capture name) and the files written."""

    scenario: object            # rigtool.sim.scenario.Scenario
    trajectories: dict          # capture name -> rigtool.sim.dynamics.Trajectory
    root: Path
    rigfile: object             # rigtool.config.RigFile (uncalibrated)
    session_path: Path
    seconds: float


@dataclass
class CalibratedSession:
    """The bundle's rig calibrated (default method) and its session loaded."""

    job: object                 # rigtool.pipeline.calibration.CalibrationJob
    session: object             # rigtool.config.Session
    rig_calibrated: object      # rigtool.config.RigFile
    truth: dict
    markers: dict               # link -> marker -> link-frame xyz


def simulate_bundle(scenario_path: Path, prefix: str) -> SimulatedBundle:
    """Simulate every capture of a scenario once and write its bundle to a temporary folder."""
    from rigtool.config import load_rig
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import simulate_job, write_bundle

    sc = load_scenario(scenario_path)
    trajs: dict[str, object] = {}

    def caching(scn, job):
        trajs[job.name] = simulate_job(scn, job)
        return trajs[job.name]

    root = Path(tempfile.mkdtemp(prefix=prefix))
    t0 = time.perf_counter()
    bundle = write_bundle(sc, root, simulator=caching)
    seconds = time.perf_counter() - t0

    def absolute(p: Path) -> Path:
        return p if p.is_absolute() else root / p

    return SimulatedBundle(sc, trajs, root, load_rig(absolute(bundle.rig_file)),
                           absolute(bundle.session_file), seconds)


def calibrated_session(sim: SimulatedBundle) -> CalibratedSession:
    """Calibrate the bundle's rig (``rigtool calibrate`` defaults), write the calibrated rig
    file the session names, and load the session with its truth."""
    from rigtool.config import FilterSettings, load_rig, load_session
    from rigtool.pipeline.calibration import (calibrated_rig_document, default_output,
                                              run_calibration)
    from rigtool.pipeline.session import link_markers
    from rigtool.tomlwrite import dumps

    job = run_calibration(sim.rigfile)
    cal_path = default_output(sim.rigfile.path)
    cal_path.write_text(dumps(calibrated_rig_document(sim.rigfile, job, cal_path,
                                                      FilterSettings())))
    session = load_session(sim.session_path)
    truth = json.loads((sim.session_path.parent / "truth.json").read_text())
    return CalibratedSession(job, session, load_rig(session.rig_path), truth,
                             link_markers(session, session.tree))


def simulate_object(scenario_path: Path, kinds: tuple[str, ...] = ("posture", "relative")):
    """The object's captures of a scenario (``kinds``: posture and/or relative) simulated
    once, without writing files, with what the benchmarks score against.

    Returns a namespace: ``sc``, ``jobs``, ``postures`` (the posture jobs), ``relative`` (the
    relative-motion job or None), ``trajs`` (name -> trajectory), ``tree``, ``phi_b``,
    ``phi_s``, ``rig`` (the TRUE rig) and ``rigfile`` (a stand-in holding it), ``mass``,
    ``markers`` (link -> marker -> link-frame xyz), ``truth`` (posture name -> (COM, inertia
    about the COM, its largest principal moment), base-link frame), ``i_max`` (the largest
    of those) and ``sim_s``.
    """
    from types import SimpleNamespace

    import numpy as np

    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import _rig_with_truth, capture_jobs, simulate_job
    from rigtool.tree import (composite_params, minimal_parameters, phi_b_vector,
                              phi_s_from_phi_b)

    sc = load_scenario(scenario_path)
    jobs = [j for j in capture_jobs(sc) if j.kind in kinds]
    t0 = time.perf_counter()
    trajs = {j.name: simulate_job(sc, j) for j in jobs}
    sim_s = time.perf_counter() - t0
    tree = sc.obj.tree
    phi_b = phi_b_vector(minimal_parameters(tree))
    postures = [j for j in jobs if j.kind == "posture"]
    truth = {}
    for j in postures:
        whole = composite_params(tree, dict(j.plan.rotations))
        truth[j.name] = (whole.com, whole.inertia_com,
                         float(np.linalg.eigvalsh(whole.inertia_com)[-1]))
    rig = _rig_with_truth(sc)
    return SimpleNamespace(
        sc=sc, jobs=jobs, postures=postures,
        relative=next((j for j in jobs if j.kind == "relative"), None), trajs=trajs,
        tree=tree, phi_b=phi_b, phi_s=phi_s_from_phi_b(phi_b), rig=rig,
        rigfile=SimpleNamespace(rig=rig, raw={}), mass=float(sc.obj.total_mass),
        markers={l.name: l.markers_link for l in tree.links}, truth=truth,
        i_max=max((t[2] for t in truth.values()), default=float("nan")), sim_s=sim_s)


def draw_markers(p, job, rng, *, sigma_m: float | None = None, artefacts: bool = True):
    """One noise draw of a simulated capture of ``p`` (:func:`simulate_object`): the job's
    marker noise (or ``sigma_m``) and, unless ``artefacts`` is False, its artefacts."""
    from rigtool.sim.markers import synthesize_markers
    return synthesize_markers(
        p.trajs[job.name], job.marker_sets,
        noise_sigma_m=job.settings.noise_sigma_m if sigma_m is None else sigma_m,
        artefacts=job.settings.artefacts if artefacts else None, rng=rng,
        rate_hz=job.settings.rate_hz)


def default_session(p, settings):
    """The manifest ``rigtool run`` would read for the simulated object ``p`` with every
    setting at its default (no breathing markers; the support and soft tissue ``auto``; no
    priors): what ``fit_one_posture`` reads of a session."""
    from rigtool.config.session_file import Session
    return Session(path=Path("session.toml"), name=p.sc.name, rig_path=Path("rig.toml"),
                   total_mass_kg=p.mass, total_mass_from=None, filter=settings, tree=p.tree,
                   frames={}, postures=(), relative_motion=None, raw={})


def fit_simulated_postures(p, data, settings, *, rigfile=None, **kwargs):
    """Every posture of ``p`` (``data``: job name -> its markers) fitted as ``rigtool run``
    fits a session's: each by :func:`fit_simulated_posture`, then the body's soft tissue
    decided over them (rigtool.pipeline.session.settle_tissue)."""
    from rigtool.pipeline.session import settle_tissue
    session = default_session(p, settings)

    def refit(as_session, indices, extra):
        return [fit_simulated_posture(p, p.postures[i], data[p.postures[i].name], settings,
                                      rigfile=rigfile, session=as_session, **kwargs, **extra)
                for i in indices]

    outs = refit(session, list(range(len(p.postures))), {})
    settle_tissue(session, outs, p.mass, refit, lambda _: None)
    return outs


def fit_simulated_posture(p, job, data, settings, *, rigfile=None, session=None, **kwargs):
    """``fit_one_posture`` on a simulated posture capture of ``p`` (its true rig unless
    ``rigfile`` is given) under ``session`` (default: the default manifest,
    :func:`default_session`); ``kwargs`` as fit_one_posture takes them (method,
    weighting...)."""
    from rigtool.pipeline.session import fit_one_posture
    return fit_one_posture(default_session(p, settings) if session is None else session,
                           p.rigfile if rigfile is None else rigfile, p.tree, p.markers,
                           Path(job.name), name=job.name, window=job.settings.window,
                           units=None, total_mass_kg=p.mass, settings=settings, data=data,
                           **kwargs)
