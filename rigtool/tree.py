"""The object on the platform: a tree of links joined by spherical joints.

Conventions (Homma and Yamaura's eq. 1-12; docs/glossary.md)
-----------------------------------------
- ``links[0]`` is the base link (parent ``"platform"``), rigidly fixed to the platform;
  every other link's parent appears before it. Non-base link frames have their origin at
  the joint centre; ``joint_center_parent`` is that centre in the parent's frame (m).
- Link parameters :class:`InertialParams` are about the link origin, in link axes.
- A posture is given by ``rotations[name]`` = ``0R_j``: link j axes -> base-link axes (the
  base link's own rotation is the identity).
- Minimal parameters per link (Homma and Yamaura's eq. 1-3):
  ``M_j = m_j + sum_c M_c``, ``MS_j = m_j s_j + sum_c M_c p_c``,
  ``J_j = I_j + sum_c M_c [p_c x]^T [p_c x]``.
- Vector ``phi_B``: per link ``MS_x, MS_y, MS_z, J_xx, J_yy, J_zz, J_yz, J_zx, J_xy``.
  Vector ``phi_s``: per link ``MS_x, MS_y, MS_z, J_xx-J_yy, J_zz-J_yy, J_yz, J_zx, J_xy``,
  then ``sum.J_yy``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.errors import ConfigError
from rigtool.inertia import (InertialParams, inertia_matrix, inertia_vector, parallel_axis, skew,
                             transform_params)

PHI_B_FIELDS: tuple[str, ...] = ("MS_x", "MS_y", "MS_z", "J_xx", "J_yy", "J_zz", "J_yz", "J_zx",
                                 "J_xy")
PHI_S_FIELDS: tuple[str, ...] = ("MS_x", "MS_y", "MS_z", "J_xx-J_yy", "J_zz-J_yy", "J_yz",
                                 "J_zx", "J_xy")


@dataclass(frozen=True)
class Link:
    """One link of the tree.

    Attributes
    ----------
    name, parent : str
        ``parent`` is ``"platform"`` for the base link.
    joint_center_parent : ndarray (3,) or None
        Joint centre in the parent's frame, m (None for the base link, or when unknown).
    params : InertialParams or None
        Standard parameters about the link origin (known in simulation, unknown in a study).
    markers_link : dict
        Marker name -> coordinates in the link frame, m.
    """

    name: str
    parent: str
    joint_center_parent: np.ndarray | None = None
    params: InertialParams | None = None
    markers_link: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Tree:
    """Links in an order where every parent precedes its children; ``links[0]`` is the base."""

    links: tuple[Link, ...]

    def __post_init__(self) -> None:
        if not self.links:
            raise ConfigError("the object needs at least one link", field="links")
        if self.links[0].parent != "platform":
            raise ConfigError("the first link must be the base link (parent = \"platform\")",
                              field=f"links[0].parent", found=self.links[0].parent)
        seen = {"platform"}
        for i, link in enumerate(self.links):
            if link.name in seen:
                raise ConfigError(f"link name '{link.name}' is used twice", field=f"links[{i}].name")
            if link.parent not in seen:
                raise ConfigError(f"parent '{link.parent}' must be a link listed before "
                                  f"'{link.name}'", field=f"links[{i}].parent")
            if i > 0 and link.parent == "platform":
                raise ConfigError("only the first link may hang from the platform",
                                  field=f"links[{i}].parent")
            seen.add(link.name)

    @property
    def names(self) -> list[str]:
        """Link names in tree order."""
        return [l.name for l in self.links]

    def index(self, name: str) -> int:
        """Position of link ``name``."""
        return self.names.index(name)

    def parent_index(self) -> list[int]:
        """Index of each link's parent (-1 for the base)."""
        idx = {l.name: i for i, l in enumerate(self.links)}
        return [idx.get(l.parent, -1) for l in self.links]

    def children(self, name: str) -> list[Link]:
        """Direct children of link ``name``."""
        return [l for l in self.links if l.parent == name]

    def joint_center(self, i: int) -> np.ndarray:
        """Joint centre of link ``i`` in its parent's frame (zeros for the base)."""
        if i == 0:
            return np.zeros(3)
        p = self.links[i].joint_center_parent
        if p is None:
            raise ConfigError(f"link '{self.links[i].name}' has no joint centre",
                              field=f"links[{i}].joint_center")
        return np.asarray(p, float)

    def origins_and_rotations(self, rotations: dict[str, np.ndarray]):
        """Link origins ``[n, 3]`` and rotations ``[n, 3, 3]`` in the base frame for a posture."""
        n = len(self.links)
        rot = np.zeros((n, 3, 3))
        org = np.zeros((n, 3))
        parents = self.parent_index()
        rot[0] = np.eye(3)
        for i in range(1, n):
            name = self.links[i].name
            if name not in rotations:
                raise ConfigError(f"posture gives no rotation for link '{name}'",
                                  field=f"rotations.{name}")
            rot[i] = np.asarray(rotations[name], float)
            org[i] = org[parents[i]] + rot[parents[i]] @ self.joint_center(i)
        return org, rot


def composite_params(tree: Tree, rotations: dict[str, np.ndarray]) -> InertialParams:
    """Whole-object standard parameters in the base frame for one posture (from link params)."""
    org, rot = tree.origins_and_rotations(rotations)
    total = np.zeros(10)
    for i, link in enumerate(tree.links):
        if link.params is None:
            raise ConfigError(f"link '{link.name}' has no inertial parameters")
        total += transform_params(link.params.pi, rot[i], org[i])
    return InertialParams(total)


def minimal_parameters(tree: Tree) -> dict[str, dict[str, np.ndarray | float]]:
    """Minimal parameters per link: ``{"M": float, "MS": (3,), "J": (3, 3)}`` (eq. 1-3)."""
    n = len(tree.links)
    parents = tree.parent_index()
    mass_sub = np.array([l.params.mass for l in tree.links], float)
    for i in range(n - 1, 0, -1):             # children after parents: accumulate upwards
        mass_sub[parents[i]] += mass_sub[i]
    out: dict[str, dict] = {}
    for i, link in enumerate(tree.links):
        ms = link.params.first_moment
        j = link.params.inertia_origin.copy()
        for c, child in enumerate(tree.links):
            if parents[c] == i:
                p = tree.joint_center(c)
                ms = ms + mass_sub[c] * p
                j = j + parallel_axis(mass_sub[c], p)
        out[link.name] = {"M": float(mass_sub[i]), "MS": ms, "J": j}
    return out


def phi_b_names(tree: Tree) -> list[str]:
    """Names of the entries of ``phi_B`` (``link.MS_x``, ..., ``link.J_xy``)."""
    return [f"{n}.{f}" for n in tree.names for f in PHI_B_FIELDS]


def phi_s_names(tree: Tree) -> list[str]:
    """Names of the entries of ``phi_s`` (``link.MS_x``, ..., ``sum.J_yy``)."""
    return [f"{n}.{f}" for n in tree.names for f in PHI_S_FIELDS] + ["sum.J_yy"]


def _j_entries(j: np.ndarray) -> np.ndarray:
    return np.array([j[0, 0], j[1, 1], j[2, 2], j[1, 2], j[2, 0], j[0, 1]])


def phi_b_vector(minimal: dict[str, dict]) -> np.ndarray:
    """Stack minimal parameters (dict from :func:`minimal_parameters`) into ``phi_B``."""
    return np.concatenate([np.concatenate([v["MS"], _j_entries(v["J"])]) for v in minimal.values()])


def phi_s_from_phi_b(phi_b: np.ndarray) -> np.ndarray:
    """``phi_s`` (paper 002 eq. 11-12) from ``phi_B``."""
    per = np.asarray(phi_b, float).reshape(-1, 9)
    ms, jxx, jyy, jzz, off = per[:, :3], per[:, 3], per[:, 4], per[:, 5], per[:, 6:]
    rows = np.concatenate([ms, (jxx - jyy)[:, None], (jzz - jyy)[:, None], off], axis=1)
    return np.concatenate([rows.ravel(), [jyy.sum()]])


def j_matrix(entries_xx_yy_zz_yz_zx_xy: np.ndarray) -> np.ndarray:
    """3x3 ``J`` from ``[J_xx, J_yy, J_zz, J_yz, J_zx, J_xy]``."""
    xx, yy, zz, yz, zx, xy = entries_xx_yy_zz_yz_zx_xy
    return inertia_matrix(np.array([xx, xy, zx, yy, yz, zz]))


def overall_from_phi_b(tree: Tree, rotations: dict[str, np.ndarray], phi_b: np.ndarray,
                       total_mass_kg: float) -> InertialParams:
    """Whole-object parameters in the base frame from ``phi_B`` (paper 002 eq. 5-6).

    ``M0 s_t = sum_j 0R_j MS_j`` and, about the base origin,
    ``I_o = sum_j (0R_j J_j 0R_j^T + [o_j x]^T [0R_j MS_j x] + [0R_j MS_j x]^T [o_j x])``.
    """
    org, rot = tree.origins_and_rotations(rotations)
    per = np.asarray(phi_b, float).reshape(-1, 9)
    h = np.zeros(3)
    inertia = np.zeros((3, 3))
    for i in range(len(tree.links)):
        ms = rot[i] @ per[i, :3]
        h += ms
        so, sm = skew(org[i]), skew(ms)
        inertia += rot[i] @ j_matrix(per[i, 3:]) @ rot[i].T + so.T @ sm + sm.T @ so
    return InertialParams(np.concatenate([[total_mass_kg], h, inertia_vector(inertia)]))
