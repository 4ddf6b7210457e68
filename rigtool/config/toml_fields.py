"""The hand-written TOML files' common pieces: reading a file (a syntax error names its line),
its sha256 (every result records its inputs'), and the field readers both files share
(marker tables, optional inertial parameters, a time window, length units).
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import numpy as np

from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams
from rigtool.validate import as_array, as_float, as_str, as_symmetric_inertia


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file's bytes (recorded for every input of every result)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_toml(path: Path) -> dict:
    """Parse a TOML file; syntax errors name the file and line."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError("file not found", path=path) from None
    except IsADirectoryError:
        raise ConfigError("expected a TOML file, found a directory", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=path) from None
    except UnicodeDecodeError:
        raise ConfigError("not valid TOML: the file is not UTF-8 text", path=path) from None


def _markers(value, *, field: str, path: Path) -> dict[str, np.ndarray]:
    if not isinstance(value, dict) or not value:
        raise ConfigError("expected a table of marker name -> [x, y, z] (m)", path=path,
                          field=field, found=value)
    return {str(k): as_array(v, (3,), field=f"{field}.{k}", path=path) for k, v in value.items()}


def _optional_params(table: dict, *, field: str, path: Path) -> InertialParams | None:
    keys = [k for k in ("mass", "com", "inertia_com") if k in table]
    if not keys:
        return None
    if len(keys) < 3:
        missing = sorted({"mass", "com", "inertia_com"} - set(keys))
        raise ConfigError(f"mass, com and inertia_com go together; missing {', '.join(missing)}",
                          path=path, field=field)
    return InertialParams.from_com(
        as_float(table["mass"], field=f"{field}.mass", path=path, positive=True),
        as_array(table["com"], (3,), field=f"{field}.com", path=path),
        as_symmetric_inertia(table["inertia_com"], field=f"{field}.inertia_com", path=path))


def _window(value, *, field: str, path: Path) -> tuple[float, float] | None:
    if value is None:
        return None
    w = as_array(value, (2,), field=field, path=path)
    if not (0 <= w[0] < w[1]):
        raise ConfigError("expected [start, end] in seconds with 0 <= start < end", path=path,
                          field=field, found=value)
    return float(w[0]), float(w[1])


def _units(table: dict, *, field: str, path: Path) -> str | None:
    if "units" not in table:
        return None
    return as_str(table["units"], field=f"{field}.units", path=path,
                  choices=("mm", "cm", "m", "in"))


# --------------------------------------------------------------------------- rig file


__all__ = ["sha256_of", "read_toml"]
