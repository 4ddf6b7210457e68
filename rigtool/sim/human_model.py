"""A person for the simulator: de Leva's (1996) 14-segment model of a 75 kg man.

Head, trunk, and per side upper arm, forearm, hand, thigh, shank, foot; segment masses, COM
positions and radii of gyration from rigtool's copy of de Leva's Table 4
(:mod:`rigtool.anthropometry`), segment lengths about de Leva's mean male lengths.
The truth is made generic (COMs a few mm off the segment axis, products of inertia of a few
per cent, drawn from ``rng``) so that no parameter is zero by symmetry. Link frames as
:mod:`rigtool.identify.subset.supine` assumes: x anterior, y left, z superior in the
anatomical position; non-base origins at the proximal joint centres; the trunk (base) frame
at the mid-hip joint centre. Used by ``tools/make_whole_body.py`` (which writes
``scenarios/whole_body.toml``) and the tests. Pure data and array maths: nothing from
the identification.
"""

from __future__ import annotations

import numpy as np

from rigtool.inertia import InertialParams
from rigtool.anthropometry import table_row
from rigtool.tree import Link, Tree

BODY_MASS_KG = 75.0
#: Segment lengths, m (about de Leva's 1996 mean male lengths).
LENGTH_M = {"head": 0.243, "trunk": 0.603, "upper_arm": 0.282, "forearm": 0.269,
            "hand": 0.086, "thigh": 0.422, "shank": 0.434, "foot": 0.258}
BASE_EULER_DEG = [0.0, -90.0, 0.0]          # body z (head) -> platform -x, anterior -> up
BASE_POSITION_M = [0.10, 0.0, 0.10]         # mid-hip joint centre, 0.10 m above the top
SHOULDER_M = (0.0, 0.18, 0.54)              # left shoulder in the trunk frame
HIP_M = (0.0, 0.085, 0.0)                   # left hip in the trunk frame


def _segment(seg: str, rng: np.random.Generator, *, along: np.ndarray):
    """Mass, COM (link frame), inertia about the COM, proximal and distal ends."""
    row = table_row(seg)
    length = LENGTH_M[seg]
    m = row.mass_fraction * BODY_MASS_KG
    u = along / np.linalg.norm(along)
    prox = np.zeros(3)
    dist = prox + length * u
    com = prox + row.com_fraction * length * u + rng.uniform(-0.006, 0.006, 3)
    # Radii about the anatomical axes: longitudinal about the segment axis, the two others
    # about the axes normal to it (sagittal about y, transverse about x for a limb).
    r = np.array([row.r_transverse, row.r_sagittal, row.r_longitudinal]) * length
    if seg == "foot":                      # a foot runs along x: its long axis is x
        r = np.array([row.r_longitudinal, row.r_sagittal, row.r_transverse]) * length
    i_diag = m * r ** 2
    off = rng.uniform(-0.03, 0.03, 3) * np.sqrt(np.outer(i_diag, i_diag))[[1, 2, 0], [2, 0, 1]]
    inertia = np.diag(i_diag)
    for (a, b), v in zip(((1, 2), (2, 0), (0, 1)), off):
        inertia[a, b] = inertia[b, a] = v
    return m, com, inertia, prox, dist


def _markers(prefix: str, dist: np.ndarray, rng: np.random.Generator, n: int = 3):
    """``n`` (3 or 4) markers 4-7 cm off the segment's axis on its anterior and lateral
    sides (what a camera above a supine person sees), as a lab's cluster puts them: two at
    one level on either side, the rest further along, so that no three are nearly in a
    line (markers along a line fix the rotation about it badly: seen as 1 deg of pose noise
    at 0.1 mm marker noise)."""
    layout = [(0.25, -55.0), (0.25, 55.0), (0.75, 0.0), (0.75, 90.0)][:n]
    out = {}
    for k, (frac, ang_deg) in enumerate(layout):
        ang = np.radians(ang_deg + rng.uniform(-8, 8))
        rad = rng.uniform(0.04, 0.07)
        off = rad * np.array([np.cos(ang), np.sin(ang), 0.0])
        if abs(dist[0]) > abs(dist[2]):     # foot: the axis is x, offsets in y-z (dorsal +z)
            off = rad * np.array([0.0, np.sin(ang), abs(np.cos(ang))])
        out[f"{prefix}{k + 1}"] = [round(float(v), 4) for v in frac * dist + off]
    return out


def human(rng: np.random.Generator) -> tuple[Tree, dict, dict]:
    """The person as a tree.

    Returns
    -------
    tree : Tree
        14 links, the trunk first (the base).
    markers : dict
        Link name -> {marker name: [x, y, z] in the link frame, m}.
    segment_keys : dict
        Link name -> the manifest's ``segment``, ``segment_start``, ``segment_end`` keys
        (the de Leva prior a lab would use).
    """
    links, markers, seg_keys = [], {}, {}

    def add(name, parent, seg, joint, along, prefix):
        n_markers = 3 if seg in ("head", "hand", "foot") else 4
        m, com, inertia, prox, dist = _segment(seg, rng, along=np.asarray(along, float))
        mk = _markers(prefix, dist, rng, n_markers)
        links.append(Link(name, parent, None if joint is None else np.asarray(joint, float),
                          InertialParams.from_com(m, com, inertia),
                          {k: np.asarray(v) for k, v in mk.items()}))
        markers[name] = mk
        seg_keys[name] = {"segment": seg, "segment_start": [round(float(v), 4) for v in prox],
                          "segment_end": [round(float(v), 4) for v in dist]}

    # Trunk: C7 at the top; its frame at the mid-hip joint centre, so the table's proximal
    # end (C7) is at +z and the distal (mid-hip) at the origin.
    row = table_row("trunk")
    lt = LENGTH_M["trunk"]
    m_t = row.mass_fraction * BODY_MASS_KG
    com_t = np.array([0.004, -0.003, (1.0 - row.com_fraction) * lt])
    r_t = np.array([row.r_transverse, row.r_sagittal, row.r_longitudinal]) * lt
    i_t = np.diag(m_t * r_t ** 2)
    i_t[0, 2] = i_t[2, 0] = 0.02 * np.sqrt(i_t[0, 0] * i_t[2, 2])
    mk_t = {"TR1": [0.10, 0.12, 0.45], "TR2": [0.11, -0.13, 0.47], "TR3": [0.12, 0.0, 0.25],
            "TR4": [0.10, 0.14, 0.06], "TR5": [0.11, -0.12, 0.05]}
    links.append(Link("trunk", "platform", None, InertialParams.from_com(m_t, com_t, i_t),
                      {k: np.asarray(v) for k, v in mk_t.items()}))
    markers["trunk"] = mk_t
    seg_keys["trunk"] = {"segment": "trunk", "segment_start": [0.0, 0.0, lt],
                         "segment_end": [0.0, 0.0, 0.0]}
    add("head", "trunk", "head", [0.0, 0.0, lt], [0.0, 0.0, 1.0], "HD")
    for side, s in (("l", 1.0), ("r", -1.0)):
        up = side.upper()
        add(f"{side}_upper_arm", "trunk", "upper_arm", [SHOULDER_M[0], s * SHOULDER_M[1],
                                                         SHOULDER_M[2]], [0, 0, -1], f"{up}UA")
        add(f"{side}_forearm", f"{side}_upper_arm", "forearm", [0.0, 0.0, -LENGTH_M["upper_arm"]],
            [0, 0, -1], f"{up}FA")
        add(f"{side}_hand", f"{side}_forearm", "hand", [0.0, 0.0, -LENGTH_M["forearm"]],
            [0, 0, -1], f"{up}HA")
    for side, s in (("l", 1.0), ("r", -1.0)):
        up = side.upper()
        add(f"{side}_thigh", "trunk", "thigh", [HIP_M[0], s * HIP_M[1], HIP_M[2]], [0, 0, -1],
            f"{up}TH")
        add(f"{side}_shank", f"{side}_thigh", "shank", [0.0, 0.0, -LENGTH_M["thigh"]],
            [0, 0, -1], f"{up}SH")
        add(f"{side}_foot", f"{side}_shank", "foot", [0.0, 0.0, -LENGTH_M["shank"]],
            [1.0, 0.0, -0.25], f"{up}FT")
    return Tree(tuple(links)), markers, seg_keys
