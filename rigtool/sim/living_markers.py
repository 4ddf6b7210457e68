"""What the markers of a living body see beyond the rigid motion of their link.

- Chest and abdominal wall markers (:class:`rigtool.sim.living.WallMarker`) move with the
  breath: by their end-exhale-to-end-inhale displacement times the breathing mass's
  normalised excursion (link axes).
- Skin markers slide on bone (:class:`rigtool.sim.living.SkinSpec`): a slow, smooth drift
  (a sum of sinusoids with periods around ``drift_period_s``, rms ``drift_m`` per
  coordinate, link axes) plus ``tissue_gain`` times the link's wobbling-mass displacement
  from its rest point (lab).

:func:`marker_offsets` returns the lab displacement of every marker ``[T, N, 3]`` in the
order :func:`rigtool.sim.markers.marker_positions` writes them; platform and reference-body
markers never move.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from rigtool.sim.living import Living
from rigtool.sim.markers import MarkerSet

__all__ = ["marker_offsets"]


def _drift(rng: np.random.Generator, t: np.ndarray, rms: float, period_s: float,
           n: int = 5) -> np.ndarray:
    """A smooth zero-mean drift ``[T, 3]`` with ``rms`` per coordinate."""
    freq = rng.uniform(0.3, 2.0, (n, 3)) / period_s
    phase = rng.uniform(0, 2 * np.pi, (n, 3))
    out = np.sin(2 * np.pi * freq * t[:, None, None] + phase).sum(1)
    return rms * np.sqrt(2.0 / n) * out


def marker_offsets(living: Living, traj, sets: Sequence[MarkerSet], object_links,
                   rng: np.random.Generator) -> np.ndarray | None:
    """Lab displacement ``[T, N, 3]`` of every marker by the living effects (None: none).

    Parameters
    ----------
    living : Living
    traj : Trajectory
        The simulated capture (``traj.internal`` holds the breathing excursion and the
        wobbling masses).
    sets : sequence of MarkerSet
        The capture's marker sets, in writing order.
    object_links : collection of str
        The object's link names (only their markers are on skin).
    rng : numpy.random.Generator
        Source of the drift's random draws.
    """
    if living is None or not (living.skin or (living.breathing
                                              and living.breathing.wall_markers)):
        return None
    t = np.asarray(traj.time_s, float)
    blocks = []
    breath = living.breathing
    walls = breath.wall_markers if breath is not None else {}
    excursion = None
    if walls and "breathing" in traj.internal:
        excursion = traj.internal["breathing"]["excursion_m"] / max(breath.depth_m, 1e-12)
    skin = living.skin
    for ms in sets:
        rot = traj.rotation[ms.body]
        block = np.zeros((len(t), len(ms.markers_body), 3))
        on_object = ms.body in object_links
        for m, name in enumerate(ms.markers_body):
            if name in walls and excursion is not None:
                disp_link = excursion[:, None] * walls[name].displacement_link
                block[:, m] += np.einsum("tij,tj->ti", rot, disp_link)
            if skin is not None and on_object and (skin.links is None or ms.body in skin.links):
                block[:, m] += np.einsum("tij,tj->ti", rot,
                                         _drift(rng, t, skin.drift_m, skin.drift_period_s))
                wob = traj.internal.get(f"wobbling:{ms.body}")
                if wob is not None and skin.tissue_gain > 0:
                    lever = np.einsum("tij,j->ti", rot, wob["rest_link"])
                    rest = traj.position_m[ms.body] + lever
                    block[:, m] += skin.tissue_gain * (wob["position_m"] - rest)
        blocks.append(block)
    return np.concatenate(blocks, axis=1)
