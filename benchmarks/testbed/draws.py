"""Subjects and rigs drawn at random (seeded) for the campaigns.

People: 2 to 14 of de Leva's (1996) segments (the trunk the base), each segment's mass, COM
and radii of gyration from Table 4 (the data table of rigtool/anthropometry.py) scaled by
a factor drawn within +-15 %, its length from the male segment lengths of de Leva's Table 1
(rounded; scaled by a stature factor), 3 to 6 markers per segment at random places on its
surface. Frames: each limb segment hangs along its own -z from its proximal joint centre
(the rest posture, every link on a spherical joint); the trunk lies along the base frame's
-y from C7. Rigs: four springs, anchors, stiffness, platform mass and marker noise drawn
around the demo rig's.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from benchmarks.testbed.model import Body, Link, Rig, Spring, Subject
from benchmarks.testbed.study import (CalibrationCapture, CaptureSpec, Posture,
                                      RelativeMotion, Study)

# de Leva (1996) Table 4, male: mass %, COM % from proximal, r_sag, r_trans, r_long (% length)
_TABLE = {
    "head": (6.94, 49.98, 30.3, 31.5, 26.1), "trunk": (43.46, 51.38, 32.8, 30.6, 16.9),
    "upper_arm": (2.71, 57.72, 28.5, 26.9, 15.8), "forearm": (1.62, 45.74, 27.6, 26.5, 12.1),
    "hand": (0.61, 79.00, 62.8, 51.3, 40.1), "thigh": (14.16, 40.95, 32.9, 32.9, 14.9),
    "shank": (4.33, 43.95, 25.1, 24.6, 10.2), "foot": (1.37, 44.15, 25.7, 24.5, 12.4),
}
# segment lengths of a 1.74 m man (m), de Leva Table 1 rounded
_LENGTH = {"head": 0.24, "trunk": 0.60, "upper_arm": 0.28, "forearm": 0.27, "hand": 0.09,
           "thigh": 0.42, "shank": 0.43, "foot": 0.26}
# (name, table segment, parent, joint centre in the parent's frame as a function of lengths)
_TREE = [
    ("head", "head", "trunk", lambda L: [0.0, 0.02, 0.0]),
    ("r_upper_arm", "upper_arm", "trunk", lambda L: [0.18, -0.03, 0.0]),
    ("l_upper_arm", "upper_arm", "trunk", lambda L: [-0.18, -0.03, 0.0]),
    ("r_thigh", "thigh", "trunk", lambda L: [0.09, -L["trunk"], 0.0]),
    ("l_thigh", "thigh", "trunk", lambda L: [-0.09, -L["trunk"], 0.0]),
    ("r_forearm", "forearm", "r_upper_arm", lambda L: [0.0, 0.0, -L["upper_arm"]]),
    ("l_forearm", "forearm", "l_upper_arm", lambda L: [0.0, 0.0, -L["upper_arm"]]),
    ("r_shank", "shank", "r_thigh", lambda L: [0.0, 0.0, -L["thigh"]]),
    ("l_shank", "shank", "l_thigh", lambda L: [0.0, 0.0, -L["thigh"]]),
    ("r_hand", "hand", "r_forearm", lambda L: [0.0, 0.0, -L["forearm"]]),
    ("l_hand", "hand", "l_forearm", lambda L: [0.0, 0.0, -L["forearm"]]),
    ("r_foot", "foot", "r_shank", lambda L: [0.0, 0.0, -L["shank"]]),
    ("l_foot", "foot", "l_shank", lambda L: [0.0, 0.0, -L["shank"]]),
]


_ABBREV = {"trunk": "TR", "head": "HD"}
_ABBREV.update({f"{side}_{seg}": f"{side.upper()}{ab}" for side in "rl" for seg, ab in
                (("upper_arm", "UA"), ("forearm", "FA"), ("hand", "HA"), ("thigh", "TH"),
                 ("shank", "SH"), ("foot", "FT"))})


def _segment_body(name, seg, body_mass, length, rng, *, trunk=False) -> Body:
    m_pc, c_pc, rs, rt, rl = _TABLE[seg]
    f = rng.uniform(0.85, 1.15, 4)
    mass = body_mass * m_pc / 100.0 * f[0]
    axis = np.array([0.0, -1.0, 0.0]) if trunk else np.array([0.0, 0.0, -1.0])
    com = axis * length * c_pc / 100.0 * f[1] + rng.normal(0.0, 0.01, 3) * (axis == 0)
    r = np.array([rs, rt, rl]) / 100.0 * length * np.sqrt(f[2:].mean())
    if trunk:                                    # long axis y
        diag = mass * np.array([r[0], r[2], r[1]]) ** 2
    else:                                        # long axis z
        diag = mass * np.array([r[0], r[1], r[2]]) ** 2
    q = Rotation.from_rotvec(rng.normal(0.0, np.radians(8.0), 3)).as_matrix()
    inertia = q @ np.diag(diag) @ q.T
    k = int(rng.integers(3, 7))
    markers = {}
    for j in range(k):
        s = rng.uniform(0.1, 0.95) * length
        rad = rng.uniform(0.03, 0.09) if seg not in ("trunk", "head") else rng.uniform(0.05, 0.14)
        az = rng.uniform(0.0, 2 * np.pi)
        if trunk:
            p = [rad * np.cos(az) * 1.5, -s, rad * np.sin(az) + 0.05]
        else:
            p = [rad * np.cos(az), rad * np.sin(az), -s]
        markers[f"{_ABBREV[name]}{j + 1}"] = np.array(p)
    return Body(name, float(mass), com, 0.5 * (inertia + inertia.T), markers)


def _prior(b: Body, rng) -> dict:
    """A table prior: mass +-10 %, COM +-1 cm, the inertia's diagonal scaled by a common
    factor in [0.8, 1.2] and each by up to +-5 % more, kept physically possible (the
    triangle inequality; else the common factor alone, which keeps it)."""
    d = np.diag(b.inertia_com_kg_m2) * rng.uniform(0.8, 1.2)
    dd = d * rng.uniform(0.95, 1.05, 3)
    if np.all(2 * dd <= dd.sum()):
        d = dd
    return {"mass": float(b.mass_kg * rng.uniform(0.9, 1.1)),
            "com": (b.com_m + rng.normal(0.0, 0.01, 3)).tolist(),
            "inertia_com": np.diag(d),
            "mass_std": 0.15 * b.mass_kg, "com_std": 0.03, "inertia_rel_std": 0.3}


def draw_person(rng: np.random.Generator, name: str, n_segments: int | None = None) -> Subject:
    """A person of ``n_segments`` (drawn in [2, 14] when None) de Leva segments."""
    n = int(rng.integers(2, 15)) if n_segments is None else n_segments
    body_mass = rng.uniform(55.0, 95.0)
    stature = rng.uniform(0.9, 1.1)
    L = {k: v * stature for k, v in _LENGTH.items()}
    trunk = _segment_body("trunk", "trunk", body_mass, L["trunk"], rng, trunk=True)
    links = [Link(trunk, "platform", "fixed", prior=_prior(trunk, rng))]
    chosen = {"trunk"}
    while len(links) < n:
        avail = [t for t in _TREE if t[0] not in chosen and t[2] in chosen]
        nm, seg, parent, jc = avail[int(rng.integers(len(avail)))]
        b = _segment_body(nm, seg, body_mass, L[seg], rng)
        links.append(Link(b, parent, "spherical", np.array(jc(L), float), prior=_prior(b, rng)))
        chosen.add(nm)
    return Subject(name, links, np.array([0.0, 0.30, 0.45]))


def draw_postures(rng, subject: Subject) -> list[Posture]:
    """The rest posture (every link hanging) and enough others (each moving link turned
    by up to 60 deg about a random axis) for Phi_s: 9 equations a posture against
    8 n + 1 unknowns, two postures to spare."""
    moving = [lk.body.name for lk in subject.links if lk.parent != "platform"]
    n_links = len(subject.links)
    k = max(3, int(np.ceil((8 * n_links + 1) / 9.0)) + 2)
    out = [Posture("rest", {})]
    for i in range(1, k):
        rots = {}
        for m in moving:
            ax = rng.normal(size=3)
            ax /= np.linalg.norm(ax)
            rots[m] = Rotation.from_rotvec(ax * np.radians(rng.uniform(15.0, 60.0))).as_matrix()
        out.append(Posture(f"posture{i}", rots))
    return out


def draw_rig(rng: np.random.Generator, demo_rig: Rig, load_kg: float) -> Rig:
    """A rig around the demo's: platform mass 15-40 kg (inertia scaled with it), anchors
    moved up to 0.15 m, stiffness 2.2-4.5 kN/m, free lengths giving a static stretch of
    5-12 cm under the load, damping 3-10 N s/m."""
    pl = demo_rig.platform
    mass = rng.uniform(15.0, 40.0)
    platform = Body("platform", mass, pl.com_m + rng.normal(0.0, 0.005, 3),
                    pl.inertia_com_kg_m2 * mass / pl.mass_kg, dict(pl.markers_m))
    springs = []
    n = len(demo_rig.springs)
    for s in demo_rig.springs:
        k = rng.uniform(2200.0, 4500.0)
        anchor = s.anchor_lab_m + np.r_[rng.uniform(-0.15, 0.15, 2), rng.uniform(-0.3, 0.3)]
        stretch = (mass + load_kg) * 9.80665 / n / k
        length_eq = np.linalg.norm(anchor - (np.array([0, 0, 1.2]) + s.attachment_platform_m))
        springs.append(Spring(s.name, anchor, s.attachment_platform_m, k,
                              float(length_eq - stretch), rng.uniform(3.0, 10.0)))
    return Rig(demo_rig.name, platform, springs, demo_rig.gravity_lab_m_s2)


def person_study(rng, name: str, rig: Rig, blocks, calibration, *, n_segments=None,
                 seed: int = 0, rate_hz: float = 100.0, duration_s: float = 15.0,
                 noise_sigma_m: float = 1e-4) -> Study:
    """A drawn person on ``rig``: its postures and every moving link released from rest."""
    sub = draw_person(rng, name, n_segments)
    postures = draw_postures(rng, sub)
    release = {}
    for lk in sub.links:
        if lk.parent != "platform":
            ax = rng.normal(size=3)
            ax[2] = 0.0
            release[lk.body.name] = ax / np.linalg.norm(ax) * rng.uniform(0.15, 0.3)
    rel = RelativeMotion("swing", "rest", release, 0.05, 12.0, (1.0, 11.0))
    spec = CaptureSpec(rate_hz=rate_hz, duration_s=duration_s, noise_sigma_m=noise_sigma_m)
    return Study(rig, blocks, calibration, sub, postures, rel, spec, seed)


#: The arm the demo rig is sized for: its 25 kg platform carries a Franka Panda (17.45 kg)
DEMO_ARM_KG = 17.452


def sized_rig_study(demo: Study, arm_kg: float, name: str, *,
                    stiffness_factor: float = 1.0) -> Study:
    """The demo's rig sized for an arm of ``arm_kg``: the platform's mass and inertia, the
    springs' stiffness and damping, and the reference blocks' masses and inertias all scaled
    by ``s = arm_kg / DEMO_ARM_KG`` (geometry, free lengths and markers kept), the
    stiffness by ``s * stiffness_factor``. With a factor of 1 the loaded rig's modes and
    static stretch are the Panda's on the demo rig but for the arm's own shape; its
    calibration captures are the demo's with the scaled blocks."""
    s = arm_kg / DEMO_ARM_KG
    pl = demo.rig.platform
    platform = Body("platform", pl.mass_kg * s, pl.com_m, pl.inertia_com_kg_m2 * s,
                    dict(pl.markers_m))
    springs = [Spring(sp.name, sp.anchor_lab_m, sp.attachment_platform_m,
                      sp.stiffness_n_m * s * stiffness_factor, sp.free_length_m,
                      sp.damping_n_s_m * s)
               for sp in demo.rig.springs]
    rig = Rig(name, platform, springs, demo.rig.gravity_lab_m_s2)
    blocks = {b.name: Body(b.name, b.mass_kg * s, b.com_m, b.inertia_com_kg_m2 * s,
                           dict(b.markers_m)) for b in demo.reference_bodies}
    cal = [CalibrationCapture(c.name, [(blocks[b.name], p, r) for b, p, r in c.loads],
                              c.holdout) for c in demo.calibration]
    return Study(rig, list(blocks.values()), cal, demo.subject, [], None, demo.capture,
                 demo.seed)
