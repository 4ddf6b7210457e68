"""A calibration's captures read and prepared: each capture's platform poses, its filtered
motion (rigtool.identify.common.platform_motion) with its noise probes, and its known load
placed in the platform frame. What the calibration's fits start from; light to import (no
fitting code), so that ``rigtool calibrate`` can run it in a worker process while it imports
the fits (:func:`start_preparing`).
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from pathlib import Path
from typing import Callable

import numpy as np

from rigtool.config import FilterSettings, RigFile, sha256_of
from rigtool.errors import ConfigError, InputError, RigtoolError
from rigtool.identify.common.platform_motion import (CaptureMotion, capture_motion,
                                                     relative_pose, with_noise_probes)
from rigtool.inertia import InertialParams, transform_params
from rigtool.kinematics.pose import body_trajectory
from rigtool.mocap import MarkerData, read_capture
from rigtool.process_pool import LazyPool

#: what :func:`prepare_captures` returns: the prepared captures, the inputs' paths and
#: sha256, and the raw marker data (the output-error refinement fits it; read once)
PreparedCaptures = tuple[list[CaptureMotion], list[dict], list[MarkerData]]


def _load_in_platform(rigfile: RigFile, names: tuple[str, ...], data, platform_traj,
                      path: Path) -> InertialParams:
    """Sum of the named reference bodies' parameters in the platform frame."""
    total = np.zeros(10)
    for name in names:
        body = rigfile.reference_bodies[name]
        if body.markers_body:
            traj = body_trajectory(data, body.markers_body)
            try:
                rot, pos, spread = relative_pose(platform_traj, traj)
            except InputError:
                raise InputError(f"reference body '{name}' is not seen together with the "
                                 "platform (expected its markers "
                                 f"{', '.join(body.markers_body)} in the capture)",
                                 path=path) from None
            if spread > np.deg2rad(2.0):
                raise InputError(f"reference body '{name}' moves relative to the platform by "
                                 f"{np.rad2deg(spread):.1f} deg RMS; expected it bolted down",
                                 path=path)
        else:
            rot, pos = body.mount_rotation, body.mount_position
        total += transform_params(body.params.pi, rot, pos)
    return InertialParams(total)


def prepare_captures(rigfile: RigFile, settings: FilterSettings, *, compensate: bool = True,
                     progress: Callable[[str], None] | None = None) -> PreparedCaptures:
    """Read and prepare every calibration capture of ``rigfile``.

    Returns the prepared captures, the inputs' paths and sha256, and the raw marker data
    (the output-error refinement fits it; read once).
    """
    if not rigfile.captures:
        raise ConfigError("the rig file lists no [[calibration_captures]]; add the empty "
                          "platform and reference-body captures", path=rigfile.path,
                          field="calibration_captures")
    caps, inputs, datas = [], [], []
    for i, c in enumerate(rigfile.captures):
        if progress:
            progress(f"calibration capture {i + 1}/{len(rigfile.captures)}: {c.capture.name}")
        data = read_capture(c.capture, units=c.units)
        inputs.append({"path": os.path.relpath(c.capture, rigfile.path.parent),
                       "sha256": sha256_of(c.capture)})
        caps.append(prepare_capture(rigfile, c, data, settings, compensate=compensate, seed=i))
        datas.append(data)
    return caps, inputs, datas


def prepare_capture(rigfile: RigFile, c, data, settings: FilterSettings, *,
                    compensate: bool = True, seed: int = 0) -> CaptureMotion:
    """One calibration capture (already read) -> platform motion with its known load."""
    markers = rigfile.rig.platform.markers_platform
    platform_traj = body_trajectory(data, markers)
    load = _load_in_platform(rigfile, c.load, data, platform_traj, c.capture)
    cap = capture_motion(data, markers, settings, name=c.capture.name, window=c.window,
                         load=load, holdout=c.holdout)
    if compensate:
        cap = with_noise_probes(cap, markers, settings, seed=seed)
    return cap


def start_preparing(rigfile: RigFile, settings: FilterSettings, *, compensate: bool,
                    pool: LazyPool) -> Future | None:
    """:func:`prepare_captures` started in one of ``pool``'s workers, when its fork server
    was launched (:meth:`LazyPool.prestart`, preloading
    :data:`rigtool.pipeline.workers.CALIBRATION_PRELOAD`); None otherwise.

    Why: ``rigtool calibrate`` spends its first 1.4 s importing the fitting code (JAX,
    SciPy, pandas) on one core. A worker forked from a server that imported this module
    alone reads and filters the captures on the other core meanwhile (0.45 s of the demo's
    5.5; their results come back pickled, ~25 MB).
    """
    if not pool.warm:
        return None
    executor = pool.executor()
    if executor is None:
        return None
    return executor.submit(prepare_captures, rigfile, settings, compensate=compensate)


def prepared_captures(job: Future | None, rigfile: RigFile, settings: FilterSettings, *,
                      compensate: bool = True,
                      progress: Callable[[str], None] | None = None) -> PreparedCaptures:
    """The captures :func:`start_preparing` prepared in a worker, or prepared here when it
    did not (``job`` None) or its worker failed for a reason of its own (a lost process):
    the work is done again here, where an error in the input surfaces with its message."""
    if job is not None:
        if progress:
            progress(f"{len(rigfile.captures)} calibration captures read and filtered in a "
                     "worker process")
        try:
            return job.result()
        except RigtoolError:
            raise
        except Exception:                  # the worker, not the input: do it here instead
            pass
    return prepare_captures(rigfile, settings, compensate=compensate, progress=progress)


__all__ = ["PreparedCaptures", "prepare_captures", "prepare_capture", "start_preparing",
           "prepared_captures"]
