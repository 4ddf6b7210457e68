"""Locked postures a person lying supine on the platform can hold: the whole-body protocol.

The multi-posture fit needs postures whose overall inertia differs enough to identify Phi_s
(8 per link + sum.J_yy). For a robot any joint angle will do; a person lying on their back
can only hold what their joints allow, for the 15-25 s of a capture, without a limb pressing
on the platform. This module gives the candidate postures :func:`plan_postures` chooses
from for such a person:

- **Joint ranges** (:data:`SUPINE_TURNS`): per de Leva segment, the single-joint turns from
  a reference posture a lying person holds without help (shoulder flexion to overhead,
  abduction on the platform, elbow flexion, hip flexion with the knee straight or bent, head
  turned, ...). Angles are comfortable holding angles, well inside the joints' ranges of
  motion, not their limits.
- **Hinge ranges** (:data:`FLEXION_RANGE_DEG`): knees and elbows neither hyperextend nor
  flex past their range, whatever the reference posture.
- **Contact**: a candidate is dropped when any segment's proximal end, COM or distal end
  would go below ``min_height_m`` above the platform's top (a limb cannot go through it).
- **Two references**: lying straight (every joint at the anatomical position) and
  hook-lying (hips flexed 45 deg, knees 90 deg, ankles 35 deg: feet flat), from which knee and ankle turns
  are holdable.

Link-frame convention (the one ``scenarios/whole_body.toml`` uses): in the anatomical
position every link's axes are x anterior, y to the person's left, z superior (a limb
hangs along -z from its proximal joint; the foot points along +x). Rotations are about
the parent's axes; a turn given for the left side is mirrored for the right (rotation
vector (a, b, c) -> (-a, b, -c)). Which links are which segment and side comes from their
names (:func:`rigtool.anthropometry.segment_for_name`).

What stays unidentifiable, whatever the postures: one term per moving link. A link's
inertia turns with it, ``R J R^T``, and the trace of ``J`` is the same in every
orientation, so locked postures see each link's ``J`` only up to a multiple of the identity
(Phi_s holds ``J_xx - J_yy`` and ``J_zz - J_yy``) and only the sum of the ``J_yy`` terms
through the base. The relative-motion capture (a limb moving while the platform vibrates)
resolves them, because a link turning relative to the base carries angular momentum
``J omega`` in which the trace counts.
"""

from __future__ import annotations


import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.identify.subset.advice import Candidate, turn_link
from rigtool.anthropometry import segment_for_name, side_for_name
from rigtool.tree import Tree

#: Single-joint turns a supine person holds for a capture: segment -> ``(axis, degrees)``
#: about the parent's axes, for the left side (mirrored for the right). Sign conventions with
#: the module's link axes: shoulder/hip flexion is a negative turn about y (the limb moves
#: anterior, i.e. up off the platform), knee flexion positive about y, abduction of a left
#: limb positive about x, head flexion positive about y.
SUPINE_TURNS: dict[str, tuple[tuple[str, float], ...]] = {
    "head": (("z", 45.0), ("z", -45.0), ("z", 80.0), ("z", -80.0), ("x", 20.0), ("x", -20.0),
             ("y", 30.0)),
    "upper_arm": (("y", -45.0), ("y", -90.0), ("y", -135.0), ("y", -180.0), ("x", 45.0),
                  ("x", 90.0), ("z", 45.0), ("z", -45.0), ("z", 90.0), ("z", -90.0)),
    "forearm": (("y", -45.0), ("y", -90.0), ("y", -135.0), ("y", 45.0), ("y", 90.0),
                ("z", 45.0), ("z", 90.0), ("z", -45.0), ("z", -90.0)),
    "hand": (("y", -45.0), ("y", 45.0), ("x", 20.0), ("x", -20.0), ("z", 45.0),
             ("z", -45.0)),
    "thigh": (("y", -45.0), ("y", -90.0), ("x", 30.0), ("x", 45.0), ("z", 30.0),
              ("z", -30.0)),
    "shank": (("y", 45.0), ("y", 90.0), ("y", -45.0), ("y", -90.0), ("z", 20.0),
              ("z", -20.0)),
    "foot": (("y", 20.0), ("y", 40.0), ("y", -20.0), ("x", 20.0), ("x", -20.0)),
}

#: Hinge-like joints: the flexion angle (about the parent's y axis, degrees, from the
#: anatomical position) must stay in this range whatever the turns (a knee does not
#: hyperextend; an elbow flexes to about 145 deg).
FLEXION_RANGE_DEG: dict[str, tuple[float, float]] = {"shank": (0.0, 140.0),
                                                     "forearm": (-145.0, 0.0)}

_AXES = {"x": np.array([1.0, 0, 0]), "y": np.array([0, 1.0, 0]), "z": np.array([0, 0, 1.0])}
def is_right(link_name: str) -> bool:
    """Whether a link name says right side (``r_thigh``, ``RightThigh``, ``thigh_r``)."""
    return side_for_name(link_name) == "right"


def turn_vector(link_name: str, axis: str, angle_deg: float) -> np.ndarray:
    """Rotation vector (rad, parent axes) of a turn given for the left side, mirrored for
    a right-side link."""
    v = np.radians(angle_deg) * _AXES[axis]
    if is_right(link_name):
        v = v * np.array([-1.0, 1.0, -1.0])
    return v


def _signed_angle(link_name: str, axis: str, angle_deg: float) -> float:
    """The turn's angle about the parent's ``axis`` as :func:`turn_vector` makes it (x and
    z turns change sign on the right side), deg."""
    return -angle_deg if is_right(link_name) and axis != "y" else angle_deg


def hook_lying(tree: Tree, reference: dict[str, np.ndarray] | None = None
               ) -> dict[str, np.ndarray]:
    """Hips flexed 45 deg, knees 90 deg, ankles plantar-flexed 35 deg (feet flat)."""
    rot = dict(reference or {n: np.eye(3) for n in tree.names[1:]})
    for seg, (axis, ang) in (("thigh", ("y", -45.0)), ("shank", ("y", 90.0)),
                             ("foot", ("y", 35.0))):
        for name in tree.names[1:]:
            if segment_for_name(name) == seg:
                rot = turn_link(tree, rot, name, turn_vector(name, axis, ang))
    return rot


def segment_points_platform(tree: Tree, rotations: dict[str, np.ndarray],
                            base_rotation: np.ndarray, base_position_m: np.ndarray
                            ) -> np.ndarray:
    """Points that must stay above the platform, platform frame ``[n_points, 3]`` (m):
    every link's origin (joint centre) and COM, and for a link without children the point
    as far beyond its COM as the COM is from its origin (its distal end, roughly)."""
    org, rot = tree.origins_and_rotations(rotations)
    parents = tree.parent_index()
    has_child = {parents[i] for i in range(1, len(tree.links))}
    pts = []
    for i, link in enumerate(tree.links):
        com = link.params.com if link.params is not None else np.zeros(3)
        c = org[i] + rot[i] @ com
        pts += [org[i], c]
        if i not in has_child and i > 0:
            pts.append(org[i] + 2.0 * (c - org[i]))
    pts = np.asarray(pts)
    return pts @ np.asarray(base_rotation).T + np.asarray(base_position_m)


def within_joint_ranges(tree: Tree, rotations: dict[str, np.ndarray], *,
                        tol_deg: float = 1.0) -> bool:
    """Whether every hinge-like joint (:data:`FLEXION_RANGE_DEG`) is within its range: the
    y component of the child's rotation vector relative to its parent."""
    for name in tree.names[1:]:
        rng = FLEXION_RANGE_DEG.get(segment_for_name(name))
        if rng is None:
            continue
        parent = tree.links[tree.index(name)].parent
        r_p = np.eye(3) if tree.index(parent) == 0 else np.asarray(rotations[parent])
        rel = r_p.T @ np.asarray(rotations[name])
        flex = np.degrees(Rotation.from_matrix(rel).as_rotvec()[1])
        if not rng[0] - tol_deg <= flex <= rng[1] + tol_deg:
            return False
    return True


def clears_platform(tree: Tree, rotations: dict[str, np.ndarray], base_rotation: np.ndarray,
                    base_position_m: np.ndarray, *, min_height_m: float = 0.03) -> bool:
    """Whether every point of :func:`segment_points_platform` is at least ``min_height_m``
    above the platform's top (platform z = 0)."""
    z = segment_points_platform(tree, rotations, base_rotation, base_position_m)[:, 2]
    return bool(np.all(z >= min_height_m))


def holdable(tree: Tree, rotations: dict[str, np.ndarray], base_rotation: np.ndarray,
             base_position_m: np.ndarray, *, min_height_m: float = 0.03) -> bool:
    """Within the joints' ranges and clear of the platform."""
    return (within_joint_ranges(tree, rotations)
            and clears_platform(tree, rotations, base_rotation, base_position_m,
                                min_height_m=min_height_m))


def supine_candidates(tree: Tree, base_rotation: np.ndarray, base_position_m: np.ndarray, *,
                      min_height_m: float = 0.03) -> list[Candidate]:
    """Holdable single-joint turns from lying straight and from hook-lying.

    Links whose name is not a de Leva segment get no candidates (they are held at their
    reference rotation).
    """
    straight = {n: np.eye(3) for n in tree.names[1:]}
    refs = [("lying straight", straight), ("hook-lying", hook_lying(tree, straight))]
    out = []
    for ref_name, ref in refs:
        if not holdable(tree, ref, base_rotation, base_position_m, min_height_m=min_height_m):
            continue
        out.append(Candidate(ref_name, ref))
        for name in tree.names[1:]:
            seg = segment_for_name(name)
            parent = tree.links[tree.index(name)].parent
            for axis, ang in SUPINE_TURNS.get(seg, ()):
                rot = turn_link(tree, ref, name, turn_vector(name, axis, ang))
                if holdable(tree, rot, base_rotation, base_position_m,
                            min_height_m=min_height_m):
                    side_ang = _signed_angle(name, axis, ang)
                    out.append(Candidate(f"{ref_name}, {name} turned {side_ang:+g} deg about "
                                         f"{parent}'s {axis} axis", rot, name, axis, side_ang))
    return out


def limbs(tree: Tree) -> list[list[str]]:
    """The links grouped by limb: each child of the base with everything it carries."""
    parents = tree.parent_index()
    out: dict[int, list[str]] = {}
    for i in range(1, len(tree.links)):
        top = i
        while parents[top] != 0:
            top = parents[top]
        out.setdefault(top, []).append(tree.links[i].name)
    return list(out.values())


def combined_candidates(tree: Tree, base_rotation: np.ndarray, base_position_m: np.ndarray,
                        rng: np.random.Generator, *, n: int = 2000, turns_per_limb: int = 2,
                        min_height_m: float = 0.03) -> list[Candidate]:
    """Postures with several limbs turned at once: ``n`` random draws, from lying straight
    or hook-lying, of up to ``turns_per_limb`` holdable turns (:data:`SUPINE_TURNS`) per
    limb in each limb, kept when they clear the platform.

    A person holds an arm, a leg and the head in different places at the same time as
    easily as one of them, and each posture then informs several links' parameters: the
    greedy design reaches full rank with about as few postures as Phi_s allows (9 rows
    each), where one joint per posture needs twice as many.
    """
    straight = {n_: np.eye(3) for n_ in tree.names[1:]}
    refs = [("lying straight", straight), ("hook-lying", hook_lying(tree, straight))]
    groups = limbs(tree)
    out = []
    for _ in range(n):
        ref_name, rot = refs[rng.integers(len(refs))]
        parts = []
        for limb in groups:
            options = [(name, ax, ang) for name in limb
                       for ax, ang in SUPINE_TURNS.get(segment_for_name(name), ())]
            if not options:
                continue
            k = int(rng.integers(turns_per_limb + 1))
            used: set[str] = set()
            for j in rng.permutation(len(options))[:4 * k]:   # a few tries per turn
                if len(used) == k:
                    break
                name, ax, ang = options[j]
                if name in used:
                    continue
                used.add(name)
                rot = turn_link(tree, rot, name, turn_vector(name, ax, ang))
                a = _signed_angle(name, ax, ang)
                parts.append(f"{name} {a:+g} deg about {ax}")
        if parts and holdable(tree, rot, base_rotation, base_position_m,
                              min_height_m=min_height_m):
            out.append(Candidate(f"{ref_name}; " + ", ".join(parts), rot))
    return out


def rotation_vectors(rotations: dict[str, np.ndarray]) -> dict[str, list[float]]:
    """Rotations as rotation vectors in rad (the scenario files' ``rotation_vectors``),
    rounded to 1e-9 rad; identity rotations left out."""
    out = {}
    for name, r in rotations.items():
        v = Rotation.from_matrix(r).as_rotvec()
        if np.linalg.norm(v) < 1e-12:
            continue
        out[name] = [round(float(x), 9) + 0.0 for x in v]
    return out
