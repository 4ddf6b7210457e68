"""Synthetic marker data from a simulated trajectory, with the artefacts of a real lab.

Conventions
-----------
- A trajectory gives, per body key (``"platform"``, a fixed body's name, a link name),
  ``rotation[key] [T, 3, 3]`` (body axes -> lab) and ``position_m[key] [T, 3]`` (lab
  position of the body-frame origin); time is the first axis.
- A marker at ``c`` (body frame, m) is at ``x_lab = R @ c + p``.
- Output is a :class:`~rigtool.mocap.markerdata.MarkerData` in metres; a missing marker
  is NaN in all three coordinates. Names are ``"Subject:Marker"`` when the marker set
  has a subject, else ``"Marker"``.
- Every random choice is drawn from the one ``numpy.random.Generator`` passed in, so a
  seed reproduces the capture exactly. What was done is listed in
  ``MarkerData.extras["artefacts"]`` (a list of plain dicts) so a test or a truth file
  can say which frames are corrupt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

import numpy as np

from rigtool.mocap.markerdata import MarkerData

__all__ = ["MarkerSet", "Artefacts", "marker_positions", "synthesize_markers"]


class PoseTrajectory(Protocol):
    """What marker synthesis needs of a trajectory (rigtool.sim.dynamics.Trajectory has it)."""

    time_s: np.ndarray
    rotation: Mapping[str, np.ndarray]
    position_m: Mapping[str, np.ndarray]


@dataclass(frozen=True)
class MarkerSet:
    """The markers of one body.

    Attributes
    ----------
    body : str
        Key of the body in the trajectory (``"platform"``, a fixed body or link name).
    markers_body : dict
        Marker name -> coordinates in the body frame, m.
    subject : str or None
        Written as the ``Subject:`` prefix of every marker name when given.
    """

    body: str
    markers_body: dict[str, np.ndarray]
    subject: str | None = None

    def names(self) -> list[str]:
        """Full marker names as written to the capture."""
        pre = f"{self.subject}:" if self.subject else ""
        return [pre + n for n in self.markers_body]


@dataclass(frozen=True)
class Artefacts:
    """Lab artefacts to inject (counts per capture; frame ranges are inclusive [lo, hi]).

    Attributes
    ----------
    short_gaps, long_gaps : int
        Runs of missing frames of one marker, lengths drawn from ``short_gap_frames`` /
        ``long_gap_frames``.
    dropouts : int
        Markers missing for the whole capture (only taken from bodies that keep >= 3).
    swaps : int
        Two markers of one body exchange labels for a run of ``swap_frames`` frames.
    ghosts : int
        Extra (unlabelled) markers ``ghost_offset_m`` away from a real one for a run of
        ``ghost_frames`` frames, NaN elsewhere; named ``UNLABELED<k>``.
    ghost_replacements : int
        A real marker's position replaced by a ghost ``ghost_offset_m`` away for a run.
    """

    short_gaps: int = 0
    short_gap_frames: tuple[int, int] = (2, 10)
    long_gaps: int = 0
    long_gap_frames: tuple[int, int] = (30, 120)
    dropouts: int = 0
    swaps: int = 0
    swap_frames: tuple[int, int] = (5, 40)
    ghosts: int = 0
    ghost_replacements: int = 0
    ghost_frames: tuple[int, int] = (3, 20)
    ghost_offset_m: float = 0.015

    @property
    def any(self) -> bool:
        """True when anything is to be injected."""
        return bool(self.short_gaps or self.long_gaps or self.dropouts or self.swaps
                    or self.ghosts or self.ghost_replacements)


def marker_positions(traj: PoseTrajectory, sets: Sequence[MarkerSet]
                     ) -> tuple[list[str], np.ndarray, list[int]]:
    """Exact marker positions: names, ``xyz [T, N, 3]`` (lab, m) and each marker's set index."""
    names: list[str] = []
    blocks: list[np.ndarray] = []
    owner: list[int] = []
    for k, ms in enumerate(sets):
        if ms.body not in traj.rotation:
            raise KeyError(f"trajectory has no body '{ms.body}' (has: {', '.join(traj.rotation)})")
        coords = np.array([np.asarray(c, float) for c in ms.markers_body.values()])   # [M, 3]
        rot = np.asarray(traj.rotation[ms.body], float)                                # [T,3,3]
        pos = np.asarray(traj.position_m[ms.body], float)                              # [T,3]
        blocks.append(np.einsum("tij,mj->tmi", rot, coords) + pos[:, None, :])
        names += ms.names()
        owner += [k] * len(ms.markers_body)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicated marker names: {', '.join(dup)}")
    return names, np.concatenate(blocks, axis=1), owner


def _run(rng: np.random.Generator, n_frames: int, lengths: tuple[int, int]) -> slice:
    lo, hi = int(lengths[0]), int(min(lengths[1], max(n_frames - 1, 1)))
    length = int(rng.integers(min(lo, hi), hi + 1))
    start = int(rng.integers(0, max(n_frames - length, 0) + 1))
    return slice(start, start + length)


def _inject(xyz: np.ndarray, names: list[str], owner: list[int], art: Artefacts,
            rng: np.random.Generator) -> tuple[np.ndarray, list[str], list[dict]]:
    """Apply ``art`` to a copy of ``xyz``; returns data, names (ghosts appended) and a log."""
    xyz = xyz.copy()
    n_frames, n_mark = xyz.shape[:2]
    log: list[dict] = []
    owner_arr = np.asarray(owner)

    for _ in range(art.swaps):
        bodies = [b for b in np.unique(owner_arr) if np.sum(owner_arr == b) >= 2]
        if not bodies:
            break
        members = np.flatnonzero(owner_arr == rng.choice(bodies))
        i, j = (int(x) for x in rng.choice(members, size=2, replace=False))
        s = _run(rng, n_frames, art.swap_frames)
        xyz[s, [i, j]] = xyz[s, [j, i]]
        log.append({"kind": "swap", "markers": [names[i], names[j]],
                    "frames": [s.start, s.stop - 1]})

    for _ in range(art.ghost_replacements):
        i = int(rng.integers(n_mark))
        s = _run(rng, n_frames, art.ghost_frames)
        offset = rng.normal(size=3)
        xyz[s, i] += art.ghost_offset_m * offset / np.linalg.norm(offset)
        log.append({"kind": "ghost_replacement", "marker": names[i],
                    "frames": [s.start, s.stop - 1]})

    dropped: set[int] = set()
    for _ in range(art.dropouts):
        left = [i for i in range(n_mark) if i not in dropped
                and np.sum([(owner[j] == owner[i]) and j not in dropped
                            for j in range(n_mark)]) > 3]
        if not left:
            break
        i = int(rng.choice(left))
        dropped.add(i)
        xyz[:, i] = np.nan
        log.append({"kind": "dropout", "marker": names[i]})

    for count, lengths, kind in ((art.short_gaps, art.short_gap_frames, "short_gap"),
                                 (art.long_gaps, art.long_gap_frames, "long_gap")):
        for _ in range(count):
            i = int(rng.integers(n_mark))
            s = _run(rng, n_frames, lengths)
            xyz[s, i] = np.nan
            log.append({"kind": kind, "marker": names[i], "frames": [s.start, s.stop - 1]})

    ghosts = []
    names = list(names)
    for k in range(art.ghosts):
        i = int(rng.integers(n_mark))
        s = _run(rng, n_frames, art.ghost_frames)
        offset = rng.normal(size=3)
        track = np.full((n_frames, 3), np.nan)
        track[s] = xyz[s, i] + art.ghost_offset_m * offset / np.linalg.norm(offset)
        ghosts.append(track)
        names.append(f"UNLABELED{k + 1}")
        log.append({"kind": "ghost", "marker": names[-1], "near": names[i],
                    "frames": [s.start, s.stop - 1]})
    if ghosts:
        xyz = np.concatenate([xyz, np.stack(ghosts, axis=1)], axis=1)
    return xyz, names, log


def synthesize_markers(traj: PoseTrajectory, sets: Sequence[MarkerSet], /, *,
                       noise_sigma_m: float = 1e-4, artefacts: Artefacts | None = None,
                       rng: np.random.Generator | None = None,
                       rate_hz: float | None = None,
                       offsets_m: np.ndarray | None = None) -> MarkerData:
    """Marker data of a simulated capture.

    Parameters
    ----------
    traj : Trajectory
        Simulated poses (see module conventions).
    sets : sequence of MarkerSet
        The bodies' markers, written in this order.
    noise_sigma_m : float
        Standard deviation of white Gaussian noise added to every coordinate, m
        (default 0.1 mm, a good optical system).
    artefacts : Artefacts, optional
        Gaps, dropouts, label swaps and ghosts to inject (default none).
    rng : numpy.random.Generator, optional
        Source of every random draw (default: a fresh unseeded generator).
    rate_hz : float, optional
        Frame rate; default ``1 / median(diff(time))``.
    offsets_m : ndarray [T, N, 3], optional
        Lab displacement of every marker from its rigid position before noise (a living
        body's skin and chest wall, :mod:`rigtool.sim.living_markers`).

    Returns
    -------
    MarkerData
        Positions in m, ``format="plain-csv"``, ``units="m"``; ``extras["artefacts"]``
        lists what was injected.
    """
    rng = np.random.default_rng() if rng is None else rng
    time_s = np.asarray(traj.time_s, float)
    names, xyz, owner = marker_positions(traj, sets)
    if offsets_m is not None:
        xyz = xyz + offsets_m
    if noise_sigma_m < 0:
        raise ValueError("noise_sigma_m must be >= 0")
    if noise_sigma_m > 0:
        xyz = xyz + rng.normal(scale=noise_sigma_m, size=xyz.shape)
    log: list[dict] = []
    if artefacts is not None and artefacts.any:
        xyz, names, log = _inject(xyz, names, owner, artefacts, rng)
    if rate_hz is None:
        rate_hz = 1.0 / float(np.median(np.diff(time_s))) if len(time_s) > 1 else 1.0
    return MarkerData(time_s=time_s - time_s[0], names=tuple(names), xyz_m=xyz,
                      rate_hz=float(rate_hz), first_frame=1, units="m", format="plain-csv",
                      source=None, extras={"artefacts": log})
