"""Noise-free calibration captures of a simulated rig, shared by the calibration tests."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.inertia import InertialParams, transform_params
from rigtool.sim.dynamics import FixedBody, System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import box_inertia


def block_captures(rig, platform: InertialParams, *, seconds: float, seed: int,
                   rate_hz: float) -> list[tuple]:
    """``[(MarkerData, load about the platform origin)]``: the empty platform and a 20 kg
    block in two places (the second turned 90 deg), each started from its own random offset
    and velocity (``seed``), the platform's markers without noise."""
    block = InertialParams.from_com(20.0, np.array([0.0, 0.0, 0.1]),
                                    box_inertia(20.0, (0.4, 0.3, 0.2)))
    mounts = [None, (block, np.eye(3), np.array([0.3, 0.1, 0.04])),
              (block, Rotation.from_euler("z", 90, degrees=True).as_matrix(),
               np.array([-0.35, -0.1, 0.04]))]
    rng = np.random.default_rng(seed)
    out = []
    for m in mounts:
        fixed = () if m is None else (FixedBody("ref", *m),)
        off = np.r_[rng.normal(0, 0.008, 3), rng.normal(0, 0.02, 3)]
        vel = np.r_[rng.normal(0, 0.03, 3), rng.normal(0, 0.05, 3)]
        traj = simulate(System(rig=rig, platform_params=platform, fixed=fixed), seconds,
                        rate_hz, platform_offset=off, platform_velocity=vel)
        data = synthesize_markers(traj, [MarkerSet("platform", rig.platform.markers_platform)],
                                  noise_sigma_m=0.0, rate_hz=rate_hz)
        load = (InertialParams(np.zeros(10)) if m is None
                else InertialParams(transform_params(m[0].pi, m[1], m[2])))
        out.append((data, load))
    return out
