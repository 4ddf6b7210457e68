"""How still each marker sits on its rigid body: its scatter about its place in the body frame.

Conventions: time is the first axis; positions in m (lab), results in mm. A marker glued to
a rigid body keeps one place in the body's frame; seen through the body's marker-fitted pose
(rigtool.kinematics.pose) it scatters about that place by the marker noise, a little less
than ``sqrt(3) sigma`` in 3-D (the fit absorbs part of it). A marker that slides, is knocked
or sits on skin that moves scatters far more, and pulls the fit: its neighbours on the same
body show part of its motion (about ``1/K`` of it for ``K`` markers).
"""

from __future__ import annotations

import numpy as np

from rigtool.kinematics.pose import BodyTrajectory


def marker_scatter_mm(traj: BodyTrajectory, xyz_lab_m: np.ndarray, /) -> np.ndarray:
    """RMS distance (mm) of each marker from its median place in the body frame.

    Parameters
    ----------
    traj : BodyTrajectory
        The body's marker-fitted pose over the capture.
    xyz_lab_m : ndarray (T, K, 3)
        The body's markers in ``traj.marker_names`` order (NaN where unseen).

    Returns
    -------
    ndarray (K,)
        NaN for a marker seen in fewer than 3 frames with a valid pose.
    """
    ok = traj.valid[:, None] & np.all(np.isfinite(xyz_lab_m), axis=2)       # [T, K]
    rot = np.where(traj.valid[:, None, None], traj.rotation, 0.0)
    pos = np.where(traj.valid[:, None], traj.position_m, 0.0)
    rel = np.where(ok[..., None], xyz_lab_m - pos[:, None, :], 0.0)
    local = np.einsum("tji,tkj->tki", rot, rel)                              # R^T (x - p)
    local = np.where(ok[..., None], local, np.nan)
    out = np.full(xyz_lab_m.shape[1], np.nan)
    seen = ok.sum(0) >= 3
    if not seen.any():
        return out
    place = np.nanmedian(local[:, seen], axis=0)                             # [K', 3]
    dist2 = np.sum((local[:, seen] - place) ** 2, axis=2)
    out[seen] = 1e3 * np.sqrt(np.nanmean(dist2, axis=0))
    return out


def moving_markers(scatter_mm: dict[str, float], noise_mm: float, *,
                   factor: float = 3.0) -> list[tuple[str, float]]:
    """Markers of one body that move on it: ``[(name, scatter mm), ...]``, worst first.

    A marker is moving when its scatter exceeds ``factor * sqrt(3) * noise_mm`` (a still
    marker stays below ``sqrt(3)`` times the per-coordinate noise) and at least half the
    body's largest scatter (its neighbours carry about ``1/K`` of a moving marker's motion
    through the fitted pose; they are not named for it).
    """
    vals = {k: float(v) for k, v in scatter_mm.items() if np.isfinite(v)}
    if not vals or not np.isfinite(noise_mm):
        return []
    limit = factor * np.sqrt(3.0) * noise_mm
    top = max(vals.values())
    out = [(k, v) for k, v in vals.items() if v > limit and v >= 0.5 * top]
    return sorted(out, key=lambda kv: -kv[1])


__all__ = ["marker_scatter_mm", "moving_markers"]
