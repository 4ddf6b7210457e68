"""The motion-capture length scale the platform's rigid markers read against the rig file's
layout (rigtool.kinematics.length_scale)."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.kinematics.length_scale import (LAYOUT_FLOOR, marker_length_scale,
                                             to_layout_scale)
from rigtool.mocap import MarkerData

LAYOUT = {"P1": np.array([0.58, 0.28, 0.0]), "P2": np.array([-0.58, 0.28, 0.0]),
          "P3": np.array([-0.58, -0.28, 0.0]), "P4": np.array([0.5, -0.28, 0.0])}


def _capture(scale: float, noise_m: float, seed: int = 0, frames: int = 1500) -> MarkerData:
    rng = np.random.default_rng(seed)
    rot = Rotation.from_rotvec(rng.normal(0, 0.01, (frames, 3))).as_matrix()
    pos = np.array([0.0, 0.0, 1.2]) + rng.normal(0, 0.005, (frames, 3))
    pts = np.stack([LAYOUT[n] for n in LAYOUT])
    xyz = np.einsum("tij,kj->tki", rot, pts) + pos[:, None]
    xyz = scale * xyz + rng.normal(0, noise_m, xyz.shape)     # the cameras' scale, lab origin
    return MarkerData(np.arange(frames) / 100.0, tuple(f"rig:{n}" for n in LAYOUT), xyz, 100.0)


def test_the_scale_is_measured_within_its_standard_error():
    lam, std, n = marker_length_scale(_capture(1.0005, 1e-4), LAYOUT)
    assert n == 1500
    # six distances of 0.56-1.28 m, 0.1 mm noise: one frame's scale to ~1e-4, the mean's
    # 1500 times better in variance
    assert 1e-6 < std < 5e-6
    assert abs(lam - 1.0005) < 4 * std


def test_a_scale_is_taken_out_and_none_is_left_alone():
    data = _capture(1.0005, 1e-4)
    fixed, what = to_layout_scale(data, LAYOUT)
    assert what is not None and abs(what["length_scale"] - 1.0005) < 4 * what["std"]
    lam, std, _ = marker_length_scale(fixed, LAYOUT)
    assert abs(lam - 1.0) < 4 * std
    same = _capture(1.0, 1e-4, seed=1)
    out, what = to_layout_scale(same, LAYOUT)
    assert what is None and out is same
    # a scale the layout cannot vouch for (under its floor) is left too
    small = _capture(1.0 + 0.5 * LAYOUT_FLOOR, 1e-4, seed=2)
    assert to_layout_scale(small, LAYOUT)[1] is None
