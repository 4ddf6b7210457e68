"""Reader of the postures file of ``rigtool subset``: overall properties measured elsewhere
(docs/reference/files/postures-file.md; an example: captures/two-link/postures.toml).

::

    total_mass = 80.817
    [[links]]            name, parent ("platform" for the first), joint = "spherical",
                         joint_center = [x, y, z] (parent frame, m; required for non-base links)
    [[postures]]         name, com (m), inertia_com (kg m^2, about the COM), optional
                         com_std (m; 3 numbers or one), inertia_com_std (kg m^2; one number
                         or 3x3; report.json's name, ``inertia_std`` the same),
                         rotations = { link = 3x3 } for every non-base link (link -> base axes)

Everything is in the base link's frame. Every problem raises :class:`ConfigError` naming the
file and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rigtool.config import read_toml
from rigtool.config.schema import POSTURES, check_keys
from rigtool.errors import ConfigError
from rigtool.identify.subset.fit import ROTATION_TOL, PostureOverall, rotation_error
from rigtool.tree import Link, Tree
from rigtool.validate import as_array, as_float, as_str, as_symmetric_inertia, require


@dataclass(frozen=True)
class PosturesFile:
    """A parsed postures.toml."""

    path: Path
    total_mass_kg: float
    tree: Tree
    postures: list[PostureOverall]


def _links(raw, path: Path) -> Tree:
    if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
        raise ConfigError("expected at least one [[links]] table", path=path, field="links")
    links = []
    for i, t in enumerate(raw):
        f = f"links[{i}]"
        name = as_str(require(t, "name", field=f, path=path), field=f"{f}.name", path=path)
        parent = as_str(require(t, "parent", field=f, path=path), field=f"{f}.parent", path=path)
        jc = None
        if i > 0:
            as_str(t.get("joint", "spherical"), field=f"{f}.joint", path=path,
                   choices=("spherical",))
            if "joint_center" not in t:
                raise ConfigError("missing required field 'joint_center' (the joint centre in "
                                  "the parent's frame, m; postures.toml cannot estimate it)",
                                  path=path, field=f"{f}.joint_center")
            jc = as_array(t["joint_center"], (3,), field=f"{f}.joint_center", path=path)
        elif "joint_center" in t or "joint" in t:
            raise ConfigError("the base link (parent = \"platform\") has no joint", path=path,
                              field=f"{f}.joint_center" if "joint_center" in t else f"{f}.joint")
        links.append(Link(name, parent, jc))
    try:
        return Tree(tuple(links))
    except ConfigError as exc:
        raise ConfigError(exc.message, path=path, field=exc.field, found=exc.found) from None


def _rotation(value, *, field: str, path: Path) -> np.ndarray:
    r = as_array(value, (3, 3), field=field, path=path)
    err = rotation_error(r)
    if err > ROTATION_TOL or np.linalg.det(r) <= 0:
        raise ConfigError(f"expected a rotation matrix (orthonormal, det +1; max |R R^T - 1| = "
                          f"{err:.2g}, det = {np.linalg.det(r):.3g}); rows are the base-frame "
                          "components of the link axes' images, check for a transposed or "
                          "mistyped row", path=path, field=field)
    return r


def _std3(value, *, field: str, path: Path) -> np.ndarray:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return np.full(3, as_float(value, field=field, path=path, positive=True))
    arr = as_array(value, (3,), field=field, path=path)
    if np.any(arr <= 0):
        raise ConfigError("expected positive standard errors (m)", path=path, field=field,
                          found=value)
    return arr


def _inertia_std(value, *, field: str, path: Path):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return as_float(value, field=field, path=path, positive=True)
    arr = as_array(value, (3, 3), field=field, path=path)
    if np.any(arr <= 0) or not np.allclose(arr, arr.T):
        raise ConfigError("expected one positive number or a symmetric 3x3 of positive numbers "
                          "(kg m^2)", path=path, field=field, found=value)
    return arr


def _postures(raw, tree: Tree, path: Path) -> list[PostureOverall]:
    if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
        raise ConfigError("expected at least one [[postures]] table", path=path,
                          field="postures")
    movable = tree.names[1:]
    out, seen = [], set()
    for i, t in enumerate(raw):
        f = f"postures[{i}]"
        name, com, com_std, inertia, i_std = overall_fields(t, i, seen, path=path)
        rot_t = t.get("rotations", {})
        if not isinstance(rot_t, dict):
            raise ConfigError("expected a table of link name -> 3x3 rotation", path=path,
                              field=f"{f}.rotations", found=rot_t)
        for k in rot_t:
            if k == tree.names[0]:
                raise ConfigError("the base link's rotation is the identity by definition; "
                                  "leave it out", path=path, field=f"{f}.rotations.{k}")
            if k not in movable:
                raise ConfigError(f"no link named '{k}' (links: {', '.join(movable)})",
                                  path=path, field=f"{f}.rotations.{k}")
        rots = {}
        for k in movable:
            if k not in rot_t:
                raise ConfigError(f"missing the rotation of link '{k}'", path=path,
                                  field=f"{f}.rotations.{k}")
            rots[k] = _rotation(rot_t[k], field=f"{f}.rotations.{k}", path=path)
        out.append(PostureOverall(name, com, com_std, inertia, i_std, rots))
    return out


def overall_fields(t: dict, i: int, seen: set[str], *, path: Path
                   ) -> tuple[str, np.ndarray, np.ndarray | None, np.ndarray, object]:
    """One ``[[postures]]`` table's name (unique: added to ``seen``), COM, its standard
    errors, inertia about the COM and its standard error (a tree's or a robot's postures
    file; ConfigError naming the field)."""
    f = f"postures[{i}]"
    name = as_str(t.get("name", f"posture{i + 1}"), field=f"{f}.name", path=path)
    if name in seen:
        raise ConfigError(f"posture name '{name}' is used twice", path=path, field=f"{f}.name")
    seen.add(name)
    com = as_array(require(t, "com", field=f, path=path), (3,), field=f"{f}.com", path=path)
    inertia = as_symmetric_inertia(require(t, "inertia_com", field=f, path=path),
                                   field=f"{f}.inertia_com", path=path)
    com_std = _std3(t["com_std"], field=f"{f}.com_std", path=path) if "com_std" in t else None
    if "inertia_com_std" in t and "inertia_std" in t:
        raise ConfigError("give the inertia's standard error once: inertia_com_std (as "
                          "report.json names it) or inertia_std, not both", path=path,
                          field=f"{f}.inertia_std")
    key = "inertia_com_std" if "inertia_com_std" in t else "inertia_std"
    i_std = _inertia_std(t[key], field=f"{f}.{key}", path=path) if key in t else None
    return name, com, com_std, inertia, i_std


def load_postures(path: str | Path) -> PosturesFile:
    """Parse and validate a postures file (overall properties measured elsewhere)."""
    path = Path(path)
    raw = read_toml(path)
    check_keys(raw, POSTURES, path=path, what="postures file")
    mass = as_float(require(raw, "total_mass", field="total_mass", path=path),
                    field="total_mass", path=path, positive=True)
    tree = _links(raw.get("links"), path)
    postures = _postures(raw.get("postures"), tree, path)
    return PosturesFile(path, mass, tree, postures)
