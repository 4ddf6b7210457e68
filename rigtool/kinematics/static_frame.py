"""Body-frame marker coordinates from a static capture (SPEC ``[links.frame]``).

A body's frame is built from averaged marker positions: an origin (a marker, the midpoint
of several, or a given lab point), an x axis between two markers and a marker in the x-y
plane; :func:`markers_from_static` returns every named marker in that frame, m.
"""

from __future__ import annotations

import numpy as np

from rigtool.errors import InputError
from rigtool.mocap import MarkerData

__all__ = ["markers_from_static"]


def _mean_position(data: MarkerData, name: str) -> np.ndarray:
    xyz = data.marker(name)
    ok = np.all(np.isfinite(xyz), axis=1)
    if not ok.any():
        raise InputError(f"marker '{name}' is missing in every frame of the static capture",
                         path=data.source)
    return xyz[ok].mean(axis=0)


def markers_from_static(data: MarkerData, /, *, origin: str | list[str] | np.ndarray,
                        x_axis: tuple[str, str], xy_plane: str,
                        names: list[str]) -> dict[str, np.ndarray]:
    """Body-frame marker coordinates from a static capture (SPEC ``[links.frame]``).

    Each marker's lab position is averaged over the frames where it is seen. The frame:
    origin at a marker, at the midpoint of several markers, or at a given lab point (e.g. a
    joint centre); x from the first ``x_axis`` marker towards the second; y in the plane of
    x and the ``xy_plane`` marker, towards it; ``z = x × y``.

    Parameters
    ----------
    data : MarkerData
        The static capture.
    origin : str, list of str or ndarray, shape (3,)
        Origin marker, markers whose midpoint is the origin, or a lab point (m).
    x_axis : (str, str)
        Markers defining the x axis (from first to second).
    xy_plane : str
        A marker in the x-y plane, on the +y side.
    names : list of str
        Markers whose body-frame coordinates are returned.

    Returns
    -------
    dict of str -> ndarray, shape (3,)
        Body-frame coordinates, m.
    """
    if isinstance(origin, str):
        o = _mean_position(data, origin)
    elif isinstance(origin, (list, tuple)) and origin and all(isinstance(s, str) for s in origin):
        o = np.mean([_mean_position(data, s) for s in origin], axis=0)
    else:
        o = np.asarray(origin, dtype=float)
        if o.shape != (3,) or not np.all(np.isfinite(o)):
            raise InputError("expected a marker name, a list of marker names or a lab point "
                             "[x, y, z] in m", field="origin", found=origin)
    if len(x_axis) != 2:
        raise InputError("expected two marker names", field="x_axis", found=x_axis)
    a, b = (_mean_position(data, s) for s in x_axis)
    ex = b - a
    if np.linalg.norm(ex) < 1e-6:
        raise InputError(f"x_axis markers {x_axis[0]} and {x_axis[1]} coincide; expected two "
                         "distinct markers", path=data.source, field="x_axis")
    ex = ex / np.linalg.norm(ex)
    v = _mean_position(data, xy_plane) - a
    ey = v - (v @ ex) * ex
    if np.linalg.norm(ey) < 1e-3 * max(np.linalg.norm(v), 1e-9) or np.linalg.norm(ey) < 1e-6:
        raise InputError(f"xy_plane marker {xy_plane} lies on the x axis "
                         f"({x_axis[0]} -> {x_axis[1]}); expected a marker off that line",
                         path=data.source, field="xy_plane")
    ey = ey / np.linalg.norm(ey)
    rot = np.column_stack([ex, ey, np.cross(ex, ey)])  # body -> lab
    return {n: rot.T @ (_mean_position(data, n) - o) for n in names}
