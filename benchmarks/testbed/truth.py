"""The true numbers rigtool reports, from the bodies' parameters by the SPEC's definitions
(nothing taken from rigtool): a posture's overall mass, COM and inertia about the COM in the
base link's frame; the minimal parameters of each link; Phi_s and Phi_B by name.
"""

from __future__ import annotations

import numpy as np

from benchmarks.testbed.model import Subject


def _skew2(p: np.ndarray) -> np.ndarray:
    """[p x]^T [p x] = |p|^2 1 - p p^T."""
    return float(p @ p) * np.eye(3) - np.outer(p, p)


def link_poses_base(subject: Subject, rotations: dict[str, np.ndarray]) -> dict:
    """Each link's (rotation, origin) in the base link's frame for relative rotations
    ``rotations`` (child relative to parent; identity where absent)."""
    poses = {}
    for lk in subject.links:                       # manifest order: parents first
        if lk.parent == "platform":
            poses[lk.body.name] = (np.eye(3), np.zeros(3))
            continue
        rp, op = poses[lk.parent]
        r = rotations.get(lk.body.name, np.eye(3))
        poses[lk.body.name] = (rp @ r, op + rp @ lk.joint_center_parent_m)
    return poses


def posture_overall(subject: Subject, rotations: dict[str, np.ndarray]) -> dict:
    """Mass, COM and inertia about the COM of the whole subject in the base frame, and each
    moving link's rotation in the base frame (``rotations``, base axes)."""
    poses = link_poses_base(subject, rotations)
    m_tot, h = 0.0, np.zeros(3)
    i_o = np.zeros((3, 3))
    for lk in subject.links:
        r, o = poses[lk.body.name]
        b = lk.body
        c = o + r @ b.com_m
        m_tot += b.mass_kg
        h += b.mass_kg * c
        i_o += r @ b.inertia_com_kg_m2 @ r.T + b.mass_kg * _skew2(c)
    com = h / m_tot
    i_c = i_o - m_tot * _skew2(com)
    return {"mass": m_tot, "com": com, "inertia_com": 0.5 * (i_c + i_c.T),
            "rotations": {k: v[0] for k, v in poses.items()
                          if subject.link(k).parent != "platform"}}


def minimal_parameters(subject: Subject) -> dict:
    """Per link M, MS (kg m) and J (kg m^2, about the link origin) of the SPEC."""
    subtree = {lk.body.name: lk.body.mass_kg for lk in subject.links}
    for lk in reversed(subject.links):
        if lk.parent != "platform":
            subtree[lk.parent] += subtree[lk.body.name]
    out = {}
    for lk in subject.links:
        b = lk.body
        ms = b.mass_kg * b.com_m
        j = b.inertia_com_kg_m2 + b.mass_kg * _skew2(b.com_m)
        for ch in subject.links:
            if ch.parent == b.name:
                p = ch.joint_center_parent_m
                ms = ms + subtree[ch.body.name] * p
                j = j + subtree[ch.body.name] * _skew2(p)
        out[b.name] = {"M": subtree[b.name], "MS": ms, "J": j}
    return out


def phi_named(subject: Subject) -> tuple[dict, dict]:
    """(Phi_s, Phi_B) as {names, values}."""
    mp = minimal_parameters(subject)
    s_names, s_vals, b_names, b_vals = [], [], [], []
    jyy = 0.0
    for lk in subject.links:
        n = lk.body.name
        ms, j = mp[n]["MS"], mp[n]["J"]
        for a, v in zip("xyz", ms):
            s_names.append(f"{n}.MS_{a}")
            s_vals.append(float(v))
            b_names.append(f"{n}.MS_{a}")
            b_vals.append(float(v))
        s_names += [f"{n}.J_xx-J_yy", f"{n}.J_zz-J_yy", f"{n}.J_yz", f"{n}.J_zx", f"{n}.J_xy"]
        s_vals += [j[0, 0] - j[1, 1], j[2, 2] - j[1, 1], j[1, 2], j[2, 0], j[0, 1]]
        b_names += [f"{n}.J_xx", f"{n}.J_yy", f"{n}.J_zz", f"{n}.J_yz", f"{n}.J_zx", f"{n}.J_xy"]
        b_vals += [j[0, 0], j[1, 1], j[2, 2], j[1, 2], j[2, 0], j[0, 1]]
        jyy += j[1, 1]
    s_names.append("sum.J_yy")
    s_vals.append(jyy)
    return ({"names": s_names, "values": [float(v) for v in s_vals]},
            {"names": b_names, "values": [float(v) for v in b_vals]})
