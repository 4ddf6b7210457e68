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
