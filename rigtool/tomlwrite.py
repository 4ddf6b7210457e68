"""A small TOML writer (the standard library's ``tomllib`` only reads).

Hand-written because the files rigtool writes (rig files, session manifests) must look
like the ones a user writes by hand (SPEC.md): marker dicts as inline tables, 3x3
matrices as nested lists, ``[[springs]]`` as arrays of tables. The third-party writers
either need a network install (tomli-w) or reformat differently; this one is ~150 lines.

Rules
-----
- ``dict`` values become ``[table]`` sections; a ``list`` of dicts becomes ``[[array]]``
  of tables, except when the caller wraps a dict in :class:`Inline` (or the key is listed
  in ``inline_keys``), which writes ``{ a = 1, b = [..] }`` on one line.
- Floats are written with ``repr`` (shortest round-trip), ``nan``/``inf`` as TOML spells them.
- numpy scalars and arrays are accepted (converted with ``.tolist()``).
- Keys that are not bare (``A-Za-z0-9_-``) are quoted.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

__all__ = ["Inline", "dumps", "dump"]

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


class Inline(dict):
    """A dict written as a TOML inline table (``{ k = v, ... }``) on one line."""


def _key(k: Any) -> str:
    k = str(k)
    return k if _BARE.match(k) else _string(k)


def _string(s: str) -> str:
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _plain(value: Any) -> Any:
    """numpy objects -> Python objects."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(float(x))
    if "e" in text and "." not in text.split("e")[0]:
        mant, exp = text.split("e")            # TOML needs "1.0e-05", not "1e-05"
        text = f"{mant}.0e{exp}"
    return text


def _value(value: Any, *, key: str = "") -> str:
    value = _plain(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        items = ", ".join(f"{_key(k)} = {_value(v, key=str(k))}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v, key=key) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML (key '{key}')")


def _is_table_array(value: Any) -> bool:
    value = _plain(value)
    return (isinstance(value, (list, tuple)) and len(value) > 0
            and all(isinstance(v, dict) and not isinstance(v, Inline) for v in value))


def _is_table(value: Any) -> bool:
    return isinstance(value, dict) and not isinstance(value, Inline)


def _emit(table: dict, prefix: str, out: list[str], inline_keys: frozenset[str]) -> None:
    # Plain keys (and inline tables/arrays) first, as TOML requires; then sub-tables and
    # arrays of tables in the caller's order (so a manifest reads top to bottom as written).
    simple, sections = [], []
    for k, v in table.items():
        if v is None:
            continue                                     # TOML has no null: leave it out
        if str(k) in inline_keys and isinstance(v, dict):
            simple.append((k, Inline(v)))
        elif _is_table(v) or _is_table_array(v):
            sections.append((k, v))
        else:
            simple.append((k, v))
    for k, v in simple:
        out.append(f"{_key(k)} = {_value(v, key=str(k))}")
    for k, v in sections:
        name = f"{prefix}.{_key(k)}" if prefix else _key(k)
        items, header = ([v], f"[{name}]") if _is_table(v) else (v, f"[[{name}]]")
        for item in items:
            if out and out[-1] != "":
                out.append("")
            out.append(header)
            _emit(item, name, out, inline_keys)


def dumps(data: dict, *, inline_keys: tuple[str, ...] = ("markers",), header: str = "") -> str:
    """TOML text of ``data``.

    Parameters
    ----------
    data : dict
        Nested dicts/lists of str, int, float, bool (numpy scalars and arrays accepted).
        ``None`` values are left out.
    inline_keys : tuple of str
        Keys whose dict values are written as inline tables (default: ``markers``).
    header : str
        Comment lines put at the top (each prefixed with ``# ``).

    Returns
    -------
    str
        Text that ``tomllib.loads`` reads back to ``data`` (floats exactly).
    """
    out: list[str] = [f"# {line}".rstrip() for line in header.splitlines()]
    if out:
        out.append("")
    _emit(data, "", out, frozenset(inline_keys))
    return "\n".join(out).strip("\n") + "\n"


def dump(data: dict, path, **kwargs) -> None:
    """Write :func:`dumps` of ``data`` to ``path`` (UTF-8)."""
    from pathlib import Path

    Path(path).write_text(dumps(data, **kwargs), encoding="utf-8")
