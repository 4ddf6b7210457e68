"""A simulated rig file completed with the simulator's own truth (no calibration run).

``rigtool simulate`` writes the rig file as a user writes it by hand (no stiffness, no
platform inertia) and ``RIG.truth.json`` beside it. Tests and benchmarks that are about
something else than calibration (the batch runner, preflight checks) need a calibrated rig
file in seconds: :func:`write_true_calibration` completes the hand-written file with the true
values, exactly as ``rigtool calibrate`` would complete it with estimates (without the
``[calibration]`` table: no uncertainty is claimed). ``stiffness_scale`` makes a deliberately
different rig, as a recalibration would give.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from rigtool.tomlwrite import dumps


def write_true_calibration(rig_toml: Path, truth_json: Path, out: Path, *,
                           stiffness_scale: float = 1.0) -> Path:
    """Write ``out``: ``rig_toml`` with springs and platform set to ``truth_json``'s values.

    Parameters
    ----------
    rig_toml : Path
        The rig file ``rigtool simulate`` wrote (``calibration/RIG.toml``).
    truth_json : Path
        Its truth (``calibration/RIG.truth.json``).
    out : Path
        Where to write (the name the session manifests expect, ``RIG.calibrated.toml``).
    stiffness_scale : float
        Every spring's stiffness multiplied by this (1: the truth).

    Returns
    -------
    Path
        ``out``.
    """
    raw = tomllib.loads(Path(rig_toml).read_text())
    truth = json.loads(Path(truth_json).read_text())
    by_name = {s["name"]: s for s in truth["springs"]}
    for spring in raw["springs"]:
        t = by_name[spring["name"]]
        spring.update(stiffness=t["stiffness"] * stiffness_scale,
                      free_length=t["free_length"], damping=t["damping"])
    plat = truth["platform"]
    raw["platform"].update(mass=plat["mass"], com=plat["com"], inertia_com=plat["inertia_com"])
    raw.pop("calibration_captures", None)       # nothing left to calibrate from
    Path(out).write_text(dumps(raw))
    return Path(out)


__all__ = ["write_true_calibration"]
