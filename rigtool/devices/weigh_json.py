"""The ``weigh.json`` file, and the total mass and its uncertainty a session takes from it.

``rigtool weigh`` writes a :class:`~rigtool.devices.scale_reader.WeighResult` as
``weigh.json`` (:func:`write_weigh_json`); a session's manifest gives its object's mass
directly or names such a file (:func:`resolve_total_mass`, :func:`total_mass_std`). Masses
are in kg. Failures are :class:`~rigtool.errors.InputError` (writing) or
:class:`~rigtool.errors.ConfigError` (reading), naming the file and field.
"""

from __future__ import annotations

import json
import math
from os import PathLike
from pathlib import Path

from rigtool.devices.scale_protocols import KG_PER_UNIT, MASS_UNITS_TEXT
from rigtool.devices.scale_reader import WeighResult
from rigtool.errors import ConfigError, InputError, RigtoolError

__all__ = ["write_weigh_json", "read_weigh_json", "resolve_total_mass",
           "DEFAULT_SCALE_REL_STD", "total_mass_std"]


def write_weigh_json(result: WeighResult, path: str | PathLike, /, *,
                     force: bool = False) -> Path:
    """Write ``result.to_record()`` as JSON; refuse to overwrite unless ``force``.

    Parameters
    ----------
    result : WeighResult
        The reading to record.
    path : str or PathLike
        The ``weigh.json`` to write.
    force : bool
        Overwrite an existing file.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    InputError
        The file exists (without ``force``) or cannot be written.
    """
    path = Path(path)
    text = json.dumps(result.to_record(), indent=2) + "\n"
    try:
        with open(path, "w" if force else "x", encoding="utf-8") as fh:
            fh.write(text)
    except FileExistsError:
        raise InputError("the file exists; expected a new output file (use --force to "
                         "overwrite it)", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot write the file: {exc.strerror}", path=path) from None
    return path


def read_weigh_json(path: str | PathLike, /) -> tuple[float, dict]:
    """Read a ``weigh.json`` written by ``rigtool weigh`` (or by hand).

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    mass_kg : float
        The object's mass (kg), positive and finite.
    record : dict
        The whole file.

    Raises
    ------
    ConfigError
        Missing file, not JSON, no positive ``mass_kg``, ``stable`` not true, or
        ``value``/``unit`` that disagree with ``mass_kg``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found; expected a weigh.json written by 'rigtool weigh'",
                          path=path) from None
    except IsADirectoryError:
        raise ConfigError("expected a weigh.json file, found a directory", path=path) from None
    except UnicodeDecodeError:
        raise ConfigError("not a weigh.json: the file is not UTF-8 text", path=path) from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    if not isinstance(record, dict):
        raise ConfigError("expected a JSON object with mass_kg", path=path, found=record)
    if "mass_kg" not in record:
        raise ConfigError("missing required field 'mass_kg' (kg)", path=path, field="mass_kg")
    mass = record["mass_kg"]
    if isinstance(mass, bool) or not isinstance(mass, (int, float)) or not math.isfinite(mass) \
            or mass <= 0:
        raise ConfigError("expected a positive number of kg", path=path, field="mass_kg",
                          found=mass)
    if record.get("stable", True) is not True:
        raise ConfigError("expected a stable reading (stable = true); weigh again",
                          path=path, field="stable", found=record.get("stable"))
    value, unit = record.get("value"), record.get("unit")
    if value is not None or unit is not None:
        if not isinstance(unit, str) or unit.lower() not in KG_PER_UNIT:
            raise ConfigError(f"expected a mass unit ({MASS_UNITS_TEXT})", path=path,
                              field="unit", found=unit)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError("expected a number", path=path, field="value", found=value)
        converted = value * KG_PER_UNIT[unit.lower()]
        if not math.isclose(converted, mass, rel_tol=1e-9, abs_tol=1e-12):
            raise ConfigError(f"value {value:g} {unit} is {converted:g} kg, which disagrees "
                              "with mass_kg; expected the two to match (was the file edited?)",
                              path=path, field="mass_kg", found=mass)
    return float(mass), record


def resolve_total_mass(session, /) -> float:
    """The object's total mass (kg) for a session: ``total_mass``, or its ``weigh.json``.

    Parameters
    ----------
    session : rigtool.config.Session
        Uses ``total_mass_kg`` when set, else reads ``total_mass_from`` (already resolved
        relative to the manifest by :func:`rigtool.config.load_session`).

    Returns
    -------
    float
        The total mass, kg.

    Raises
    ------
    ConfigError
        The named ``weigh.json`` cannot be read (see :func:`read_weigh_json`); the message
        names the manifest.
    """
    if session.total_mass_kg is not None:
        return float(session.total_mass_kg)
    try:
        return read_weigh_json(session.total_mass_from)[0]
    except RigtoolError as exc:
        raise ConfigError(f"{exc.message} (named by session.total_mass_from in "
                          f"{session.path})", path=exc.path, line=exc.line, field=exc.field,
                          found=exc.found) from None


#: The scale's relative standard uncertainty assumed when neither the manifest
#: (``session.total_mass_std``) nor the weigh.json (``mass_std_kg``) gives one: 0.1 % of the
#: reading, the accuracy of a common laboratory floor scale (OIML class III over most of its
#: range). It enters the report's mass check only.
DEFAULT_SCALE_REL_STD = 1e-3


def total_mass_std(session, total_mass_kg: float, /) -> tuple[float, str]:
    """The weighed mass's standard uncertainty (kg) and where it came from.

    ``session.total_mass_std`` (kg) when the manifest gives it, else the weigh.json's
    ``mass_std_kg`` when the mass comes from one and it holds a positive number, else
    :data:`DEFAULT_SCALE_REL_STD` times the mass.

    Parameters
    ----------
    session : rigtool.config.Session
        Uses ``total_mass_std_kg`` and ``total_mass_from`` when present.
    total_mass_kg : float
        The weighed mass (kg), for the assumed relative uncertainty.

    Returns
    -------
    std_kg : float
        The standard uncertainty, kg.
    source : str
        Where it came from, for the report.
    """
    if getattr(session, "total_mass_std_kg", None) is not None:
        return float(session.total_mass_std_kg), "session.total_mass_std"
    if getattr(session, "total_mass_from", None) is not None:
        _, record = read_weigh_json(session.total_mass_from)
        std = record.get("mass_std_kg")
        if isinstance(std, (int, float)) and not isinstance(std, bool) and math.isfinite(std) \
                and std > 0:
            return float(std), f"mass_std_kg of {Path(session.total_mass_from).name}"
    return (DEFAULT_SCALE_REL_STD * float(total_mass_kg),
            f"assumed {100 * DEFAULT_SCALE_REL_STD:g} % of the reading")
