"""The motion-capture system's length scale, read by the platform's rigid markers against
the rig file's layout, and the captures brought to the rig file's scale.

A motion-capture system calibrated again reads every length ``lambda`` times (its wand's
calibration), about its own origin, the lab's. Through the springs' static stretch a length
scale becomes a force scale some 15 times larger (on 1 m springs stretched 60 mm, ``(lambda
- 1) L / (L - L0)``), which no stiffness or mass explains: a calibration whose captures read
0.05 % long against the rig file's geometry misjudges its held-out body by 16 standard
errors. The platform's markers sit on a rigid plate at the layout the rig file gives, so
their distances measure ``lambda`` in every capture: least squares of the measured pairwise
distances on the layout's over every frame in which they are all seen. A capture whose
``lambda`` differs from 1 by more than :data:`APPLY_AT_SE` standard errors and more than
:data:`LAYOUT_FLOOR` (what a layout measured to 0.1 mm over a metre can tell) is divided by
it, so that the calibration and every session are in the rig file's lengths.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations
from pathlib import Path

import numpy as np

from rigtool.camera.side_files import summary_file_of
from rigtool.errors import InputError
from rigtool.mocap import MarkerData

#: a capture's length scale is applied when it is this many standard errors from 1
APPLY_AT_SE = 3.0
#: ... and farther from 1 than a layout known to 0.1 mm over 1 m can say
LAYOUT_FLOOR = 1e-4


def _has(data: MarkerData, name: str) -> bool:
    try:
        data.index(name)
    except InputError:                 # absent or ambiguous: not used
        return False
    return True


def marker_length_scale(data: MarkerData, layout: dict[str, np.ndarray]
                        ) -> tuple[float, float, int]:
    """``(lambda, its standard error, frames used)`` of a capture's lengths against the
    layout's (NaN and 0 frames with fewer than 3 layout markers seen together).

    Parameters
    ----------
    data : MarkerData
    layout : dict
        Marker name -> position on the rigid body (any frame), m.
    """
    names = [n for n in layout if _has(data, n)]
    if len(names) < 3:
        return float("nan"), float("nan"), 0
    xyz = data.select(names)                                   # [T, M, 3]
    pairs = list(combinations(range(len(names)), 2))
    i, j = np.array(pairs).T
    ref = np.array([np.linalg.norm(np.asarray(layout[names[a]], float)
                                   - np.asarray(layout[names[b]], float)) for a, b in pairs])
    d = np.linalg.norm(xyz[:, i] - xyz[:, j], axis=-1)          # [T, P]
    ok = np.all(np.isfinite(d), axis=1)
    n = int(ok.sum())
    if n < 10:
        return float("nan"), float("nan"), n
    d = d[ok]
    lam = float(np.sum(d * ref) / (n * np.sum(ref ** 2)))
    # the frames' scale, one per frame, scatters by the marker noise: their mean's error
    per_frame = (d @ ref) / np.sum(ref ** 2)
    std = float(np.std(per_frame, ddof=1) / np.sqrt(n))
    return lam, std, n


def to_layout_scale(data: MarkerData, layout: dict[str, np.ndarray],
                    capture: str | Path | None = None) -> tuple[MarkerData, dict | None]:
    """The capture in the layout's lengths when its length scale is off (module docstring),
    and what was measured (None when the capture is left as it is: a scale within its
    standard errors, or under :data:`LAYOUT_FLOOR`, or not measurable, or a capture
    ``rigtool track`` wrote, whose lengths its tags' printed size sets and whose pose noise
    its own models carry: its ``NAME.track.json`` beside ``capture``).

    The capture's coordinates are divided by ``lambda`` about the lab's origin (the
    motion-capture system's)."""
    if capture is not None and summary_file_of(capture).exists():
        return data, None
    lam, std, n = marker_length_scale(data, layout)
    if not np.isfinite(lam) or not np.isfinite(std):
        return data, None
    off = abs(lam - 1.0)
    if off <= max(APPLY_AT_SE * std, LAYOUT_FLOOR):
        return data, None
    scaled = replace(data, xyz_m=data.xyz_m / lam)
    return scaled, {"length_scale": lam, "std": std, "frames": n}


def scale_note(what: dict) -> str:
    """One sentence for the notes: the length scale a capture was read at and taken out."""
    return (f"the platform's markers read lengths {100 * (what['length_scale'] - 1):+.4f} ± "
            f"{100 * what['std']:.4f} % against the rig file's layout (a motion-capture "
            "length scale): the capture was brought to the rig file's lengths")


__all__ = ["APPLY_AT_SE", "LAYOUT_FLOOR", "marker_length_scale", "to_layout_scale",
           "scale_note"]
