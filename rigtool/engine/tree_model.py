"""The tree engine's fixed structure (:class:`TreeModel`: parents, each marker's body, the
springs' geometry, gravity, the platform's free rows) and the layout of its parameter vector
``theta`` (:func:`theta_of`); rigtool.engine.tree documents the state and the parameters and
holds the dynamics. NumPy only, so the compiled kernels' driver (rigtool.engine.tree_compiled)
and the fits can describe a model without importing the JAX equations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.rig import Rig


@dataclass(frozen=True)
class TreeModel:
    """The fixed structure: parents (tree order, -1 for body 0), each marker's body, the
    spring geometry, gravity and the platform's free rows of ``[v_p, omega_0]``."""

    parents: tuple[int, ...]
    body_of_marker: tuple[int, ...]
    anchor_lab: np.ndarray
    attachment_platform: np.ndarray
    gravity_lab: np.ndarray
    free_rows: tuple[int, ...]

    @classmethod
    def of(cls, rig: Rig, parents, body_of_marker) -> "TreeModel":
        free = tuple(int(i) for i in rig.free_dof_rows()) if rig.locked_dofs else tuple(range(6))
        par = tuple([-1] + [max(int(p), 0) for p in list(parents)[1:]])
        return cls(par, tuple(int(b) for b in body_of_marker),
                   np.stack([np.asarray(s.anchor_lab, float) for s in rig.springs]),
                   np.stack([np.asarray(s.attachment_platform, float) for s in rig.springs]),
                   np.asarray(rig.gravity_lab, float), free)

    @property
    def n_bodies(self) -> int:
        return len(self.parents)

    @property
    def n_state(self) -> int:
        return 6 + 12 * self.n_bodies

    @property
    def n_springs(self) -> int:
        return int(self.anchor_lab.shape[0])

    def layout(self) -> dict[str, slice]:
        """Slices of ``theta``."""
        nb, s, k = self.n_bodies, self.n_springs, len(self.body_of_marker)
        edges = np.cumsum([0, 10 * nb, 3 * nb, nb, s, s, s, 3 * k])
        names = ("pi", "jp", "joint_damping", "k", "kl0", "c", "markers")
        return {n: slice(int(a), int(b)) for n, a, b in zip(names, edges[:-1], edges[1:])}

    def static(self) -> tuple:
        """Hashable description for the compiled functions."""
        return (self.parents, self.body_of_marker, self.free_rows,
                tuple(map(tuple, self.anchor_lab)), tuple(map(tuple, self.attachment_platform)),
                tuple(self.gravity_lab))


def theta_of(pis: np.ndarray, joint_parent: np.ndarray, joint_damping: np.ndarray,
             stiffness: np.ndarray, free_length: np.ndarray, spring_damping: np.ndarray,
             markers_body: np.ndarray) -> np.ndarray:
    """``theta`` from each body's ``pi [nb, 10]``, joint centres in the parent's frame
    ``[nb, 3]``, joint damping ``[nb]``, the spring values ``[S]`` and the markers' body
    coordinates ``[K, 3]``."""
    k = np.asarray(stiffness, float)
    return np.concatenate([np.asarray(pis, float).ravel(), np.asarray(joint_parent, float).ravel(),
                           np.asarray(joint_damping, float), k,
                           k * np.asarray(free_length, float), np.asarray(spring_damping, float),
                           np.asarray(markers_body, float).ravel()])


__all__ = ["TreeModel", "theta_of"]
