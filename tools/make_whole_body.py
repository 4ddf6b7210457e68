"""Write ``scenarios/whole_body.toml``: a 14-segment person lying supine on the rig.

The person: :func:`rigtool.sim.human_model.human` (de Leva's 1996 14-segment model of a
75 kg man), lying on its back, head towards -x of the platform.

Postures: the locked postures a supine person can hold (:func:`supine_candidates`), chosen
greedily (:func:`plan_postures`, among single-joint turns and random several-limb
combinations, :func:`combined_candidates`) until Phi_s (8 x 14 + 1 = 113 entries) has full
rank and a condition number of at most ``--max-condition``, starting from lying straight and a
"movement-start" posture (arms raised to the ceiling, hook-lying), in which the
relative-motion capture starts.

The relative-motion capture: every joint moved by the person's muscles at once (a servo per
joint tracking a multi-sine of three frequencies between 0.3 and 1.6 Hz, each joint its own
frequencies, 4-15 deg per component about the movement-start posture), 12 s; servo gains
scaled to each joint's load (:func:`servo_gains`).

    python3 tools/make_whole_body.py [-o scenarios/whole_body.toml] [--max-condition 150]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rigtool.identify.subset.advice import plan_postures, subtree, turn_link
from rigtool.identify.subset.fit import structural_whitener
from rigtool.identify.subset.supine import (combined_candidates, holdable, hook_lying,
                                            rotation_vectors, supine_candidates, turn_vector)
from rigtool.sim.human_model import BASE_EULER_DEG, BASE_POSITION_M, human
from rigtool.tomlwrite import dump
from rigtool.tree import Tree, composite_params

def movement_start(tree: Tree) -> dict[str, np.ndarray]:
    """Arms raised to the ceiling (shoulders flexed 90 deg, elbows 30 deg), hook-lying."""
    rot = hook_lying(tree)
    for name in tree.names[1:]:
        if name.endswith("upper_arm"):
            rot = turn_link(tree, rot, name, turn_vector(name, "y", -90.0))
        if name.endswith("forearm"):
            rot = turn_link(tree, rot, name, turn_vector(name, "y", -30.0))
    return rot


def _subtree_principal_moments(tree: Tree, rotations, name: str) -> np.ndarray:
    """Principal moments (ascending) of the link's subtree about its joint, kg m^2."""
    i = tree.index(name)
    org, rot = tree.origins_and_rotations(rotations)
    total = np.zeros((3, 3))
    for k in subtree(tree, i):
        p = tree.links[k].params
        c = org[k] + rot[k] @ p.com - org[i]
        total += rot[k] @ p.inertia_com @ rot[k].T + p.mass * (c @ c * np.eye(3) - np.outer(c, c))
    return np.linalg.eigvalsh(total)


def servo_gains(moments: np.ndarray) -> tuple[float, float]:
    """``(K_p, K_d)`` of one joint's servo from its subtree's principal moments.

    The servo's gains are scalars (the same about every axis), and a limb's moments differ
    by up to 25x (a forearm about its long axis and across it). The stiffness puts the
    largest moment's natural frequency at 3 Hz, above the drive's 0.3-1.6 Hz (so the limb
    follows the reference within ~1.4x, not at a resonance); the damping is a ratio of 0.5
    on that axis but capped at 40 I_min: a derivative gain of 1000 I_min (what the same ratio
    gives on the small moment) makes the equations stiff and the simulator's adaptive
    Runge-Kutta crawl (0.3 ms steps)."""
    i_min, i_max = float(moments[0]), float(moments[-1])
    w = 2.0 * np.pi * 3.0
    k_p = i_max * w ** 2
    k_d = min(2.0 * 0.5 * np.sqrt(k_p * i_max), 40.0 * i_min)
    return k_p, k_d


def _rounded(value, digits: int = 6):
    """Nested lists/dicts/arrays with every number rounded to ``digits`` decimals (a
    readable file; the simulator's truth is what the file says)."""
    if isinstance(value, dict):
        return {k: _rounded(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_rounded(v, digits) for v in value]
    return round(float(value), digits) + 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=str(Path(__file__).resolve().parents[1]
                                                    / "scenarios" / "whole_body.toml"))
    ap.add_argument("--max-condition", type=float, default=150.0)
    ap.add_argument("--seed", type=int, default=1996)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    tree, markers, seg_keys = human(rng)
    from scipy.spatial.transform import Rotation
    base_r = Rotation.from_euler("xyz", BASE_EULER_DEG, degrees=True).as_matrix()
    base_p = np.asarray(BASE_POSITION_M)
    straight = {n: np.eye(3) for n in tree.names[1:]}
    start = movement_start(tree)
    for name, rot in (("lying straight", straight), ("movement start", start)):
        if not holdable(tree, rot, base_r, base_p):
            raise SystemExit(f"'{name}' posture goes through the platform")
    cands = supine_candidates(tree, base_r, base_p) + combined_candidates(
        tree, base_r, base_p, np.random.default_rng(args.seed), n=3000)
    m0 = sum(l.params.mass for l in tree.links)
    radius = float(np.sqrt(np.linalg.eigvalsh(composite_params(tree, straight)
                                              .inertia_com)[-1] / m0))
    w = structural_whitener(m0, radius)
    added, history = plan_postures(tree, [straight, start], w, candidates=cands,
                                   max_condition=args.max_condition, max_postures=60)
    rank, cond = history[-1]
    postures = [("lying-straight", "lying straight", straight),
                ("movement-start", "arms raised to the ceiling, hook-lying", start)]
    postures += [(f"p{k + 3:02d}", c.description, c.rotations) for k, c in enumerate(added)]

    header = "\n".join([
        "A person lying supine on the rig: de Leva's (1996) 14-segment model of a 75 kg man.",
        "Written by tools/make_whole_body.py (read its docstring); do not edit by hand.",
        f"{len(postures)} locked postures a supine person can hold, chosen by the posture",
        f"advice until Phi_s ({8 * len(tree.links) + 1} entries) had rank {rank} and condition "
        f"{cond:.1f};",
        "a relative-motion capture with every joint moved by the person's muscles at once.",
        "The platform is the paper-002 rig's (1.2 m): the person's head and lower legs reach",
        "past its ends, which changes nothing for the method (the object is a rigid tree in",
        "every locked posture); a rig built for people would be ~2 m long.",
        "    rigtool simulate scenarios/whole_body.toml -o OUT --force",
        "",
        "Postures:"] + [f"  {pname}: {desc}" for pname, desc, _ in postures])
    links = []
    for link in tree.links:
        p = link.params
        entry = {"name": link.name, "parent": link.parent}
        if link.joint_center_parent is not None:
            entry["joint_center"] = _rounded(link.joint_center_parent)
        entry |= {"mass": _rounded(p.mass), "com": _rounded(p.com),
                  "inertia_com": _rounded(p.inertia_com), "markers": markers[link.name],
                  **seg_keys[link.name]}
        links.append(entry)
    freqs = np.round(np.linspace(0.30, 1.60, 3 * (len(tree.links) - 1)), 3)
    order = rng.permutation(freqs.size)
    amp_deg = {"head": 8.0, "upper_arm": 12.0, "forearm": 15.0, "hand": 12.0, "thigh": 8.0,
               "shank": 10.0, "foot": 10.0}
    drive = {}
    for j, name in enumerate(tree.names[1:]):
        seg = seg_keys[name]["segment"]
        f = np.sort(freqs[order[3 * j:3 * j + 3]])
        a = amp_deg[seg] * rng.uniform(0.5, 1.0, (3, 3))
        ph = rng.uniform(0.0, 360.0, (3, 3))
        k_p, k_d = servo_gains(_subtree_principal_moments(tree, start, name))
        drive[name] = {"frequency_hz": _rounded(f), "amplitude_deg": _rounded(np.round(a, 2)),
                       "phase_deg": _rounded(np.round(ph, 1)),
                       "stiffness_nm_per_rad": float(f"{k_p:.4g}"),
                       "damping_nms_per_rad": float(f"{k_d:.4g}")}
    scenario = {
        "scenario": {"name": "whole-body", "extends": "two_link_paper002.toml",
                     "seed": args.seed},
        "capture": {"rate_hz": 100.0, "duration_s": 15.0},
        "object": {"session": "whole-body", "subject": "subj",
                   "base": {"position": BASE_POSITION_M, "euler_deg": BASE_EULER_DEG},
                   "links": links},
        "postures": [{"name": pname, "rotation_vectors": _rounded(rotation_vectors(rot))}
                     for pname, _, rot in postures],
        "relative_motion": {"name": "move-all", "posture": "movement-start",
                            "joint_damping": 0.0, "duration_s": 12.0, "window": [1.0, 11.0],
                            "drive": drive},
    }
    dump(scenario, args.output, header=header,
         inline_keys=("markers", "base", "rotation_vectors"))
    print(f"wrote {args.output}: {len(tree.links)} segments, {m0:.2f} kg, {len(postures)} "
          f"postures (Phi_s rank {rank} of {8 * len(tree.links) + 1}, condition {cond:.1f}); "
          f"{len(cands)} holdable candidates")


if __name__ == "__main__":
    main()
