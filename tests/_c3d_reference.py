"""Independent references for the C3D reader: what ezc3d and the ``c3d`` package read.

Each returns positions ``[T, N, 3]`` in file units with NaN where the library marks the point
invalid (a negative residual), plus the first frame number as the library reports it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np


def ezc3d_points(path: Path) -> tuple[np.ndarray, int]:
    """ezc3d's reading (Intel and DEC files only)."""
    import ezc3d

    c = ezc3d.c3d(str(path))
    pts = np.asarray(c["data"]["points"], float)  # [4, N, T]
    res = np.asarray(c["data"]["meta_points"]["residuals"], float)  # [1, N, T]
    xyz = np.transpose(pts[:3], (2, 1, 0))
    valid = res[0].T >= 0
    return np.where(valid[..., None], xyz, np.nan), int(c["header"]["points"]["first_frame"]) + 1


def c3dpkg_points(path: Path) -> tuple[np.ndarray, int]:
    """The ``c3d`` package's reading (every processor type; it may add padding frames)."""
    import c3d

    with open(path, "rb") as fh, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = c3d.Reader(fh)
        frames = [pts[:, :4].copy() for _, pts, _ in reader.read_frames(copy=True)]
        first = int(reader.first_frame)
    data = np.asarray(frames, float)
    return np.where(data[..., 3:4] >= 0, data[..., :3], np.nan), first
