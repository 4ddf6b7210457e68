"""The one place that checks user-supplied values and raises a clear :class:`ConfigError`.

Each checker takes the value, a ``field`` name (as the user wrote it, e.g.
``"springs[2].anchor"``) and the ``path`` of the file it came from, and returns the value
converted (floats, numpy arrays) or raises with a message naming field, expectation and
the value received.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

import numpy as np

from rigtool.errors import ConfigError

_MISSING = object()


def require(table: dict, key: str, *, field: str, path: str | PathLike | None) -> Any:
    """Return ``table[key]`` or raise naming the missing field."""
    if not isinstance(table, dict):
        raise ConfigError("expected a table", path=path, field=field, found=table)
    if key not in table:
        raise ConfigError(f"missing required field '{key}'", path=path, field=field)
    return table[key]


def as_float(value: Any, *, field: str, path: str | PathLike | None,
             positive: bool = False, nonnegative: bool = False) -> float:
    """A finite real number, optionally > 0 or >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError("expected a number", path=path, field=field, found=value)
    x = float(value)
    if not np.isfinite(x):
        raise ConfigError("expected a finite number", path=path, field=field, found=value)
    if positive and x <= 0:
        raise ConfigError("expected a positive number", path=path, field=field, found=value)
    if nonnegative and x < 0:
        raise ConfigError("expected a number >= 0", path=path, field=field, found=value)
    return x


def as_array(value: Any, shape: tuple[int, ...], *, field: str,
             path: str | PathLike | None) -> np.ndarray:
    """A finite float array of exactly ``shape`` (e.g. ``(3,)`` or ``(3, 3)``)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"expected numbers in an array of shape {shape}", path=path,
                          field=field, found=value) from None
    if arr.shape != shape:
        raise ConfigError(f"expected an array of shape {shape}, got shape {arr.shape}",
                          path=path, field=field, found=value)
    if not np.all(np.isfinite(arr)):
        raise ConfigError("expected finite numbers", path=path, field=field, found=value)
    return arr


def as_symmetric_inertia(value: Any, *, field: str, path: str | PathLike | None,
                         rtol: float = 1e-6) -> np.ndarray:
    """A symmetric 3x3 inertia tensor (kg m^2) whose eigenvalues satisfy the triangle inequality."""
    arr = as_array(value, (3, 3), field=field, path=path)
    scale = max(np.abs(arr).max(), 1e-300)
    if not np.allclose(arr, arr.T, atol=rtol * scale, rtol=0):
        raise ConfigError("expected a symmetric 3x3 inertia tensor", path=path, field=field,
                          found=value)
    arr = 0.5 * (arr + arr.T)
    ev = np.linalg.eigvalsh(arr)
    tol = rtol * scale
    if ev[0] < -tol or ev[0] + ev[1] < ev[2] - tol:
        raise ConfigError("expected a physically possible inertia tensor (principal moments "
                          "positive and each no larger than the sum of the other two)",
                          path=path, field=field, found=value)
    return arr


def as_str(value: Any, *, field: str, path: str | PathLike | None,
           choices: tuple[str, ...] | None = None) -> str:
    """A string, optionally one of ``choices``."""
    if not isinstance(value, str):
        raise ConfigError("expected a string", path=path, field=field, found=value)
    if choices is not None and value not in choices:
        raise ConfigError(f"expected one of {', '.join(choices)}", path=path, field=field,
                          found=value)
    return value
