"""Readers of a scenario file's small values, each validated against its field.

Rotations (a matrix, a rotation vector or Euler angles), marker tables, inertial
parameters, capture settings with their marker artefacts, and subject names. Every error
is a :class:`~rigtool.errors.ConfigError` naming the file and field.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.errors import ConfigError
from rigtool.mocap.markerdata import FORMATS
from rigtool.sim.markers import Artefacts
from rigtool.sim.scenario_types import CaptureSettings
from rigtool.validate import as_array, as_float, as_str, as_symmetric_inertia, require


def orthonormalise(matrix: np.ndarray) -> np.ndarray:
    """Nearest rotation matrix (SVD; printed tables round their entries).

    Parameters
    ----------
    matrix : ndarray, shape (3, 3)
        A rotation matrix up to rounding.

    Returns
    -------
    ndarray, shape (3, 3)
        The proper rotation nearest to ``matrix`` in the Frobenius norm.
    """
    u, _, vt = np.linalg.svd(matrix)
    d = np.sign(np.linalg.det(u @ vt))
    return u @ np.diag([1.0, 1.0, d]) @ vt


def _rotation(table: dict, *, field: str, path: Path, default=None) -> np.ndarray | None:
    """A rotation from ``rotation`` (3x3), ``rotation_vector`` (rad) or ``euler_deg``."""
    keys = [k for k in ("rotation", "rotation_vector", "euler_deg") if k in table]
    if not keys:
        return default
    if len(keys) > 1:
        raise ConfigError(f"give one of rotation, rotation_vector or euler_deg (found "
                          f"{', '.join(keys)})", path=path, field=field)
    key = keys[0]
    return _rotation_value(key, table[key], table.get("euler_seq", "xyz"),
                           field=f"{field}.{key}", path=path)


def _rotation_value(kind: str, value, seq: str, *, field: str, path: Path) -> np.ndarray:
    if kind == "rotation":
        mat = as_array(value, (3, 3), field=field, path=path)
        if np.linalg.det(mat) <= 0.5 or not np.allclose(mat @ mat.T, np.eye(3), atol=0.02):
            raise ConfigError("expected a rotation matrix (orthonormal within rounding, "
                              "det +1)", path=path, field=field, found=value)
        return orthonormalise(mat)
    vec = as_array(value, (3,), field=field, path=path)
    if kind == "rotation_vector":
        return Rotation.from_rotvec(vec).as_matrix()
    if not (isinstance(seq, str) and len(seq) == 3 and set(seq.lower()) <= set("xyz")):
        raise ConfigError("expected a scipy Euler sequence such as \"xyz\" (extrinsic) or "
                          "\"XYZ\" (intrinsic)", path=path, field="euler_seq", found=seq)
    return Rotation.from_euler(seq, vec, degrees=True).as_matrix()


def _markers(value, *, field: str, path: Path) -> dict[str, np.ndarray]:
    if not isinstance(value, dict) or len(value) < 3:
        raise ConfigError("expected a table of at least 3 markers: name -> [x, y, z] (m)",
                          path=path, field=field, found=value)
    return {str(k): as_array(v, (3,), field=f"{field}.{k}", path=path) for k, v in value.items()}


def _params(t: dict, *, field: str, path: Path) -> tuple[float, np.ndarray, np.ndarray]:
    mass = as_float(require(t, "mass", field=field, path=path), field=f"{field}.mass",
                    path=path, positive=True)
    com = as_array(require(t, "com", field=field, path=path), (3,), field=f"{field}.com",
                   path=path)
    inertia = as_symmetric_inertia(require(t, "inertia_com", field=field, path=path),
                                   field=f"{field}.inertia_com", path=path)
    return mass, com, inertia


def _int_pair(t: dict, key: str, default, *, field: str, path: Path) -> tuple[int, int]:
    v = t.get(key, list(default))
    if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and x > 0 for x in v)
            and v[0] <= v[1]):
        raise ConfigError("expected [min, max] whole numbers of frames", path=path,
                          field=f"{field}.{key}", found=v)
    return int(v[0]), int(v[1])


def _artefacts(t: dict, base: Artefacts, *, field: str, path: Path) -> Artefacts:
    if not isinstance(t, dict):
        raise ConfigError("expected a table", path=path, field=field, found=t)
    kw = {}
    for key in ("short_gaps", "long_gaps", "dropouts", "swaps", "ghosts", "ghost_replacements"):
        if key in t:
            v = t[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError("expected a whole number >= 0", path=path,
                                  field=f"{field}.{key}", found=v)
            kw[key] = v
    for key in ("short_gap_frames", "long_gap_frames", "swap_frames", "ghost_frames"):
        if key in t:
            kw[key] = _int_pair(t, key, getattr(base, key), field=field, path=path)
    if "ghost_offset_mm" in t:
        kw["ghost_offset_m"] = 1e-3 * as_float(t["ghost_offset_mm"], path=path, positive=True,
                                               field=f"{field}.ghost_offset_mm")
    unknown = set(t) - set(Artefacts.__dataclass_fields__) - {"ghost_offset_mm"}
    if unknown:
        raise ConfigError(f"unknown artefact setting(s): {', '.join(sorted(unknown))}",
                          path=path, field=field)
    return replace(base, **kw)


def _settings(t: dict, base: CaptureSettings, *, field: str, path: Path) -> CaptureSettings:
    kw: dict = {}
    if "duration_s" in t:
        kw["duration_s"] = as_float(t["duration_s"], field=f"{field}.duration_s", path=path,
                                    positive=True)
    if "rate_hz" in t:
        kw["rate_hz"] = as_float(t["rate_hz"], field=f"{field}.rate_hz", path=path,
                                 positive=True)
    for key in ("offset", "velocity"):
        if key in t:
            kw[key] = as_array(t[key], (6,), field=f"{field}.{key}", path=path)
    if "noise_sigma_mm" in t:
        kw["noise_sigma_m"] = 1e-3 * as_float(t["noise_sigma_mm"], nonnegative=True,
                                              field=f"{field}.noise_sigma_mm", path=path)
    if "format" in t:
        kw["format"] = as_str(t["format"], field=f"{field}.format", path=path, choices=FORMATS)
    if "window" in t:
        w = as_array(t["window"], (2,), field=f"{field}.window", path=path)
        if not 0 <= w[0] < w[1]:
            raise ConfigError("expected [start, end] s with 0 <= start < end", path=path,
                              field=f"{field}.window", found=t["window"])
        kw["window"] = (float(w[0]), float(w[1]))
    if "artefacts" in t:
        kw["artefacts"] = _artefacts(t["artefacts"], base.artefacts,
                                     field=f"{field}.artefacts", path=path)
    out = replace(base, **kw)
    if out.window is not None and out.window[1] > out.duration_s + 1e-9:
        raise ConfigError(f"window ends after the capture ({out.duration_s} s)", path=path,
                          field=f"{field}.window", found=list(out.window))
    return out


def _subject(t: dict, default: str | None, *, field: str, path: Path) -> str | None:
    if "subject" not in t:
        return default
    s = as_str(t["subject"], field=f"{field}.subject", path=path)
    return s or None

