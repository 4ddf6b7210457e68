"""A short noise-free posture of a living-body scenario, simulated and ready to fit (shared
by the tests that hold a posture model against the simulator's own living parts)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def simulated_posture(tmp_path: Path, scenario: str, duration_s: float, **scenario_changes):
    """The scenario's first posture, ``duration_s`` long, without marker noise or gaps,
    written with the true rig as its calibrated rig file.

    Returns ``(session, rigfile, markers, truth)``: the loaded manifest, rig file, each
    link's markers and the bundle's truth.json."""
    from rigtool.config import load_rig, load_session
    from rigtool.pipeline.links import link_markers
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import write_bundle
    from rigtool.sim.true_calibration import write_true_calibration

    sc = load_scenario(ROOT / "scenarios" / "living" / scenario)
    posture = sc.postures[0]
    settings = replace(posture.settings, duration_s=duration_s, noise_sigma_m=0.0,
                       artefacts=replace(posture.settings.artefacts, short_gaps=0))
    sc = replace(sc, postures=(replace(posture, settings=settings),), **scenario_changes)
    bundle = write_bundle(sc, tmp_path, force=True)
    rig_toml = tmp_path / bundle.rig_file
    write_true_calibration(rig_toml, rig_toml.with_suffix(".truth.json"),
                           rig_toml.with_name(f"{sc.rig.name}.calibrated.toml"))
    manifest = tmp_path / bundle.session_file
    session = load_session(manifest)
    return (session, load_rig(session.rig_path), link_markers(session, session.tree),
            json.loads((manifest.parent / "truth.json").read_text()))
