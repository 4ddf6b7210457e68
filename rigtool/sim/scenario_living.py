"""The ``[living]`` part of a scenario file: which effects of a living body are on.

Each effect is on when its table is present (``[living.breathing]``,
``[living.cardiac]``, ``[[living.wobbling]]``, ``[living.support]``, ``[living.skin]``);
every key has a default from the literature (:mod:`rigtool.sim.living`). Values are
validated against physiological ranges wide enough for any subject; each error is a
:class:`~rigtool.errors.ConfigError` naming the file and field.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.errors import ConfigError
from rigtool.sim.living import (BreathingSpec, CardiacSpec, Living, SkinSpec, SupportSpec,
                                WallMarker, WobblingSpec)
from rigtool.tree import Tree
from rigtool.validate import as_array, as_float, as_str, require

__all__ = ["read_living"]


def _number(t: dict, key: str, default: float, lo: float, hi: float, *, field: str,
            path: Path, scale: float = 1.0) -> float:
    """``t[key] * scale`` checked in ``[lo, hi]`` (the file's units), else ``default`` (SI)."""
    if key not in t:
        return default
    x = as_float(t[key], field=f"{field}.{key}", path=path)
    if not lo <= x <= hi:
        raise ConfigError(f"expected a value in [{lo:g}, {hi:g}]", path=path,
                          field=f"{field}.{key}", found=t[key])
    return x * scale


def _direction(t: dict, default: np.ndarray, *, field: str, path: Path) -> np.ndarray:
    if "direction" not in t:
        return default
    u = as_array(t["direction"], (3,), field=f"{field}.direction", path=path)
    if np.linalg.norm(u) < 1e-9:
        raise ConfigError("expected a non-zero direction", path=path, field=f"{field}.direction",
                          found=t["direction"])
    return u / np.linalg.norm(u)


def _link(t: dict, tree: Tree, default: str | None, *, field: str, path: Path) -> str | None:
    if "link" not in t:
        return default
    name = as_str(t["link"], field=f"{field}.link", path=path)
    if name not in tree.names:
        raise ConfigError(f"'{name}' is not a link of the object (links: "
                          f"{', '.join(tree.names)})", path=path, field=f"{field}.link")
    return name


def _position(t: dict, *, field: str, path: Path):
    return None if "position" not in t else as_array(t["position"], (3,),
                                                     field=f"{field}.position", path=path)


def _known(t: dict, keys: set[str], *, field: str, path: Path) -> None:
    if not isinstance(t, dict):
        raise ConfigError("expected a table", path=path, field=field, found=t)
    unknown = set(t) - keys
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(sorted(unknown))} (expected some of "
                          f"{', '.join(sorted(keys))})", path=path, field=field)


def _breathing(t: dict, tree: Tree, *, path: Path) -> BreathingSpec:
    f = "living.breathing"
    _known(t, {"link", "rate_per_min", "variability", "mass_kg", "depth_mm", "direction",
               "position", "inspiration_fraction", "wall_markers", "hold", "hold_movement"},
           field=f, path=path)
    d = BreathingSpec()
    walls = {}
    wt = t.get("wall_markers", {})
    if not isinstance(wt, dict):
        raise ConfigError("expected a table: marker name -> { position = [...], "
                          "displacement_mm = [...] }", path=path, field=f"{f}.wall_markers")
    for name, spec in wt.items():
        fm = f"{f}.wall_markers.{name}"
        if not isinstance(spec, dict):
            raise ConfigError("expected { position = [x, y, z], displacement_mm = [dx, dy, dz] }",
                              path=path, field=fm, found=spec)
        _known(spec, {"position", "displacement_mm"}, field=fm, path=path)
        disp = as_array(require(spec, "displacement_mm", field=fm, path=path), (3,),
                        field=f"{fm}.displacement_mm", path=path)
        if np.linalg.norm(disp) > 50:
            raise ConfigError("a wall moves less than 50 mm in a breath", path=path,
                              field=f"{fm}.displacement_mm", found=disp.tolist())
        walls[str(name)] = WallMarker(as_array(require(spec, "position", field=fm, path=path),
                                               (3,), field=f"{fm}.position", path=path),
                                      1e-3 * disp)
    return BreathingSpec(
        _link(t, tree, None, field=f, path=path),
        _number(t, "rate_per_min", d.rate_per_min, 4.0, 40.0, field=f, path=path),
        _number(t, "variability", d.variability, 0.0, 0.25, field=f, path=path),
        _number(t, "mass_kg", d.mass_kg, 0.0, 20.0, field=f, path=path),
        _number(t, "depth_mm", d.depth_m, 0.0, 60.0, field=f, path=path, scale=1e-3),
        _direction(t, d.direction_link, field=f, path=path),
        _position(t, field=f, path=path),
        _number(t, "inspiration_fraction", d.inspiration_fraction, 0.2, 0.6, field=f,
                path=path),
        walls, _flag(t, "hold", field=f, path=path),
        _flag(t, "hold_movement", field=f, path=path))


def _flag(t: dict, key: str, *, field: str, path: Path) -> bool:
    v = t.get(key, False)
    if not isinstance(v, bool):
        raise ConfigError("expected true or false", path=path, field=f"{field}.{key}", found=v)
    return v


def _cardiac(t: dict, tree: Tree, *, path: Path) -> CardiacSpec:
    f = "living.cardiac"
    _known(t, {"link", "rate_per_min", "variability", "force_n", "mass_kg", "direction",
               "position"}, field=f, path=path)
    d = CardiacSpec()
    return CardiacSpec(
        _link(t, tree, None, field=f, path=path),
        _number(t, "rate_per_min", d.rate_per_min, 30.0, 200.0, field=f, path=path),
        _number(t, "variability", d.variability, 0.0, 0.25, field=f, path=path),
        _number(t, "force_n", d.force_n, 0.0, 20.0, field=f, path=path),
        _number(t, "mass_kg", d.mass_kg, 0.01, 1.0, field=f, path=path),
        _direction(t, d.direction_link, field=f, path=path),
        _position(t, field=f, path=path))


def _wobbling(items, tree: Tree, *, path: Path) -> tuple[WobblingSpec, ...]:
    if not isinstance(items, list):
        raise ConfigError("expected [[living.wobbling]] tables (one per link)", path=path,
                          field="living.wobbling", found=items)
    out = []
    for k, t in enumerate(items):
        f = f"living.wobbling[{k}]"
        _known(t, {"link", "fraction", "frequency_hz", "damping_ratio", "position"}, field=f,
               path=path)
        d = WobblingSpec("")
        out.append(WobblingSpec(
            _link(t, tree, None, field=f, path=path) or require(t, "link", field=f, path=path),
            _number(t, "fraction", d.fraction, 0.0, 0.8, field=f, path=path),
            _number(t, "frequency_hz", d.frequency_hz, 0.5, 50.0, field=f, path=path),
            _number(t, "damping_ratio", d.damping_ratio, 0.0, 2.0, field=f, path=path),
            _position(t, field=f, path=path)))
    if len({w.link for w in out}) != len(out):
        raise ConfigError("one wobbling mass per link", path=path, field="living.wobbling")
    return tuple(out)


def _support(t: dict, *, path: Path) -> SupportSpec:
    f = "living.support"
    _known(t, {"shear_hz", "compression_hz", "damping_ratio", "pads", "pad_half_spacing"},
           field=f, path=path)
    d = SupportSpec()
    pads = None
    if "pads" in t:
        raw = t["pads"]
        if not (isinstance(raw, list) and len(raw) >= 3):
            raise ConfigError("expected at least three pad centres [[x, y, z], ...] "
                              "(platform frame, m)", path=path, field=f"{f}.pads", found=raw)
        pads = as_array(raw, (len(raw), 3), field=f"{f}.pads", path=path)
    spacing = d.pad_half_spacing_m
    if "pad_half_spacing" in t:
        sp = as_array(t["pad_half_spacing"], (2,), field=f"{f}.pad_half_spacing", path=path)
        if np.any(sp <= 0):
            raise ConfigError("expected two positive half spacings (m)", path=path,
                              field=f"{f}.pad_half_spacing", found=t["pad_half_spacing"])
        spacing = (float(sp[0]), float(sp[1]))
    return SupportSpec(_number(t, "shear_hz", d.shear_hz, 0.5, 50.0, field=f, path=path),
                       _number(t, "compression_hz", d.compression_hz, 0.5, 80.0, field=f,
                               path=path),
                       _number(t, "damping_ratio", d.damping_ratio, 0.0, 2.0, field=f,
                               path=path),
                       pads, spacing)


def _skin(t: dict, tree: Tree, *, path: Path) -> SkinSpec:
    f = "living.skin"
    _known(t, {"drift_mm", "drift_period_s", "tissue_gain", "links"}, field=f, path=path)
    d = SkinSpec()
    links = None
    if "links" in t:
        raw = t["links"]
        if not isinstance(raw, list) or any(x not in tree.names for x in raw):
            raise ConfigError(f"expected a list of link names (links: {', '.join(tree.names)})",
                              path=path, field=f"{f}.links", found=raw)
        links = tuple(raw)
    return SkinSpec(_number(t, "drift_mm", d.drift_m, 0.0, 20.0, field=f, path=path,
                            scale=1e-3),
                    _number(t, "drift_period_s", d.drift_period_s, 0.5, 600.0, field=f,
                            path=path),
                    _number(t, "tissue_gain", d.tissue_gain, 0.0, 2.0, field=f, path=path),
                    links)


def read_living(t, tree: Tree | None, *, path: Path) -> Living | None:
    """The ``[living]`` table (None when absent)."""
    if t is None:
        return None
    _known(t, {"breathing", "cardiac", "wobbling", "support", "skin"}, field="living",
           path=path)
    if tree is None:
        raise ConfigError("[living] needs an [object]", path=path, field="living")
    return Living(
        breathing=_breathing(t["breathing"], tree, path=path) if "breathing" in t else None,
        cardiac=_cardiac(t["cardiac"], tree, path=path) if "cardiac" in t else None,
        wobbling=_wobbling(t.get("wobbling", []), tree, path=path),
        support=_support(t["support"], path=path) if "support" in t else None,
        skin=_skin(t["skin"], tree, path=path) if "skin" in t else None)
