"""MarkerData: what every capture reader returns and every writer takes.

Conventions
-----------
- Time is the first axis. ``xyz_m`` has shape ``[T, N, 3]``: frame, marker, lab x/y/z.
- Positions are in metres in the motion-capture (lab) frame, converted once on read.
- A missing marker is NaN in all three coordinates, by policy, whatever the file wrote
  (empty cells, 0.000 triples, negative C3D residuals).
- ``names`` are the marker names as the file writes them (``Subject:Marker`` kept);
  :meth:`MarkerData.index` matches a manifest name with or without that prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rigtool.errors import InputError

#: Format identifiers used by readers, writers and ``rigtool inspect``.
FORMATS: tuple[str, ...] = ("vicon-csv", "motive-csv", "qualisys-tsv", "c3d", "plain-csv")

#: Length units a capture may declare, with their factor to metres.
LENGTH_UNITS_TO_M: dict[str, float] = {"mm": 1e-3, "cm": 1e-2, "m": 1.0, "millimeters": 1e-3,
                                        "centimeters": 1e-2, "meters": 1.0, "in": 0.0254,
                                        "inches": 0.0254}


def length_factor(units: str, *, path: Path | None = None, field: str | None = "units") -> float:
    """Factor from ``units`` (as a file or user writes it, case-insensitive) to metres."""
    key = units.strip().lower()
    if key not in LENGTH_UNITS_TO_M:
        raise InputError(f"unknown length units; expected one of mm, cm, m, in", path=path,
                         field=field, found=units)
    return LENGTH_UNITS_TO_M[key]


@dataclass(frozen=True)
class MarkerData:
    """Marker trajectories of one capture, in metres.

    Attributes
    ----------
    time_s : ndarray, shape (T,)
        Time of each frame, s, from 0 at the first frame.
    names : tuple of str
        Marker names in file order (as written, prefixes kept).
    xyz_m : ndarray, shape (T, N, 3)
        Positions in the lab frame, m; NaN where a marker is missing.
    rate_hz : float
        Frame rate, Hz.
    first_frame : int
        Number of the first frame as the file numbers it (1 when the file does not).
    units : str
        Length units as the file (or the user) stated them.
    format : str
        One of :data:`FORMATS`.
    source : Path or None
        File the data came from.
    extras : dict
        Reader-specific extras that are not markers (e.g. Motive rigid-body poses).
    notes : tuple of str
        What the reader had to reconcile or skip to read the file (fields that disagree, a
        frame range that wraps, sections that hold no markers); ``rigtool inspect`` shows them.
    """

    time_s: np.ndarray
    names: tuple[str, ...]
    xyz_m: np.ndarray
    rate_hz: float
    first_frame: int = 1
    units: str = "m"
    format: str = "plain-csv"
    source: Path | None = None
    extras: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        t, n = self.xyz_m.shape[0], len(self.names)
        if self.xyz_m.shape != (t, n, 3) or self.time_s.shape != (t,):
            raise ValueError(f"inconsistent MarkerData shapes: time {self.time_s.shape}, "
                             f"{n} names, xyz {self.xyz_m.shape}")

    @property
    def n_frames(self) -> int:
        """Number of frames."""
        return int(self.xyz_m.shape[0])

    def missing_counts(self) -> dict[str, int]:
        """Marker name -> number of frames without a position."""
        miss = np.isnan(self.xyz_m).any(axis=2).sum(axis=0)
        return {name: int(k) for name, k in zip(self.names, miss)}

    def index(self, name: str) -> int:
        """Column of marker ``name``, matching with or without a ``Subject:`` prefix.

        Raises
        ------
        InputError
            When no marker or more than one marker matches.
        """
        hits = [i for i, full in enumerate(self.names)
                if full == name or full.rsplit(":", 1)[-1] == name]
        exact = [i for i in hits if self.names[i] == name]
        if len(exact) == 1:
            return exact[0]
        if not hits:
            raise InputError(f"marker '{name}' is not in the capture (it has: "
                             f"{', '.join(self.names[:12])}{' ...' if len(self.names) > 12 else ''})",
                             path=self.source)
        if len(hits) > 1:
            raise InputError(f"marker name '{name}' matches several markers: "
                             f"{', '.join(self.names[i] for i in hits)}; use the full name",
                             path=self.source)
        return hits[0]

    def marker(self, name: str) -> np.ndarray:
        """Trajectory ``[T, 3]`` (m) of marker ``name`` (see :meth:`index`)."""
        return self.xyz_m[:, self.index(name), :]

    def select(self, names: list[str] | tuple[str, ...]) -> np.ndarray:
        """Trajectories ``[T, K, 3]`` of several markers, in the order given."""
        return self.xyz_m[:, [self.index(n) for n in names], :]
