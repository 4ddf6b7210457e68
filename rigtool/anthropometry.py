"""Anthropometric priors for human segments: de Leva (1996), Table 4.

Source
------
de Leva P. (1996) Adjustments to Zatsiorsky-Seluyanov's segment inertia parameters.
J. Biomech. 29(9):1223-1230, Table 4 (segment mass as a fraction of body mass, longitudinal
COM position as a fraction of segment length from the table's first endpoint, radii of
gyration as fractions of segment length about the sagittal, transverse and longitudinal
axes). The figures below were checked against three independent transcriptions of Table 4
(R. Gurchiek's ``deleva.m`` lookup table, M. Duarte's BMC ``BSP_ZdeLeva.txt`` and the biorbd
``DeLevaTable``; where those disagree, biorbd's female head mass 6.69 and female foot
longitudinal radius 12.4, the two agreeing transcriptions are kept: 6.68 and 13.9). Where
a segment has several endpoint definitions we keep the one whose endpoints are joint
centres, because rigtool's non-base link frames have their origin at the proximal joint
centre: head and trunk from C7 ("Head 2"/"Trunk 2" in those transcriptions) and the shank
from knee to ankle joint centre (KJC-AJC, not KJC-lateral malleolus). Each sex's masses sum
to 100 % (tested).

Conventions
-----------
- A segment's axis runs from its proximal endpoint to its distal endpoint, both given in the
  link frame (m). ``com_fraction`` is measured from the proximal endpoint along that axis.
- The link frame's anatomical orientation (which axis is anterior) is not known to rigtool,
  so the prior inertia is axisymmetric about the segment axis: the longitudinal radius of
  gyration about the axis and the mean of the sagittal and transverse radii about every
  axis normal to it. The difference between those two radii is folded into the prior's
  relative inertia uncertainty.
- The table gives no standard deviations; the default prior uncertainties
  (``MASS_REL_STD``, ``COM_STD_FRACTION``, ``INERTIA_REL_STD``) are rigtool's own, loose
  choices so that the measurement wins wherever it speaks. They are not published figures.

Pure data and array maths: no pipeline imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: Default relative standard deviation of a table mass (rigtool's choice, not from the table).
MASS_REL_STD = 0.20
#: Default COM standard deviation as a fraction of segment length (rigtool's choice).
COM_STD_FRACTION = 0.05
#: Default relative standard deviation of the table inertia (rigtool's choice).
INERTIA_REL_STD = 0.30


@dataclass(frozen=True)
class SegmentRow:
    """One row of de Leva (1996) Table 4 for one sex.

    Attributes
    ----------
    mass_fraction : float
        Segment mass / body mass.
    com_fraction : float
        COM distance from the proximal endpoint / segment length.
    r_sagittal, r_transverse, r_longitudinal : float
        Radii of gyration about the COM / segment length.
    endpoints : str
        The table's endpoint definition (proximal -> distal).
    """

    mass_fraction: float
    com_fraction: float
    r_sagittal: float
    r_transverse: float
    r_longitudinal: float
    endpoints: str


def _row(m, c, rs, rt, rl, ends):
    return SegmentRow(m / 100.0, c / 100.0, rs / 100.0, rt / 100.0, rl / 100.0, ends)


# de Leva (1996) Table 4, in per cent: mass, COM from proximal, r_sag, r_trans, r_long.
# Head and trunk: the C7-based definitions, with the head's COM converted from the vertex
# (50.02 % male, 48.41 % female) to the C7 (proximal, joint) end: 100 - 50.02 = 49.98 and
# 100 - 48.41 = 51.59.
DE_LEVA_1996: dict[str, dict[str, SegmentRow]] = {
    "male": {
        "head": _row(6.94, 49.98, 30.3, 31.5, 26.1, "C7 -> vertex"),
        "trunk": _row(43.46, 51.38, 32.8, 30.6, 16.9, "C7 -> mid-hip joint centres"),
        "upper_arm": _row(2.71, 57.72, 28.5, 26.9, 15.8, "shoulder -> elbow joint centre"),
        "forearm": _row(1.62, 45.74, 27.6, 26.5, 12.1, "elbow -> wrist joint centre"),
        "hand": _row(0.61, 79.00, 62.8, 51.3, 40.1, "wrist joint centre -> 3rd metacarpale"),
        "thigh": _row(14.16, 40.95, 32.9, 32.9, 14.9, "hip -> knee joint centre"),
        "shank": _row(4.33, 43.95, 25.1, 24.6, 10.2, "knee -> ankle joint centre"),
        "foot": _row(1.37, 44.15, 25.7, 24.5, 12.4, "heel -> toe tip"),
    },
    "female": {
        "head": _row(6.68, 51.59, 27.1, 29.5, 26.1, "C7 -> vertex"),
        "trunk": _row(42.57, 49.64, 30.7, 29.2, 14.7, "C7 -> mid-hip joint centres"),
        "upper_arm": _row(2.55, 57.54, 27.8, 26.0, 14.8, "shoulder -> elbow joint centre"),
        "forearm": _row(1.38, 45.59, 26.1, 25.7, 9.4, "elbow -> wrist joint centre"),
        "hand": _row(0.56, 74.74, 53.1, 45.4, 33.5, "wrist joint centre -> 3rd metacarpale"),
        "thigh": _row(14.78, 36.12, 36.9, 36.4, 16.2, "hip -> knee joint centre"),
        "shank": _row(4.81, 43.52, 26.7, 26.3, 9.2, "knee -> ankle joint centre"),
        "foot": _row(1.29, 40.14, 29.9, 27.9, 13.9, "heel -> toe tip"),
    },
}

#: Words in a link name that map it to a table segment (checked after side markers are removed).
ALIASES: dict[str, str] = {
    "head": "head", "trunk": "trunk", "torso": "trunk", "upper_arm": "upper_arm",
    "upperarm": "upper_arm", "humerus": "upper_arm", "arm": "upper_arm", "forearm": "forearm",
    "lower_arm": "forearm", "lowerarm": "forearm", "hand": "hand", "thigh": "thigh",
    "femur": "thigh", "upper_leg": "thigh", "shank": "shank", "lower_leg": "shank",
    "leg": "shank", "calf": "shank", "tibia": "shank", "foot": "foot",
}

_SIDE = re.compile(r"^(left|right|l|r)[_\-\s]+|[_\-\s]+(left|right|l|r)$")


def _snake(link_name: str) -> str:
    """``"RightUpper-Arm"`` -> ``"right_upper_arm"``."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", link_name).lower().strip()
    return re.sub(r"[\s\-]+", "_", s)


def segment_for_name(link_name: str) -> str | None:
    """Table segment a link name stands for (``"RightUpperArm"`` -> ``"upper_arm"``), or None.

    Side markers (``left_``, ``r_``, ``_l`` ...) are ignored; CamelCase becomes snake_case.
    """
    s = _SIDE.sub("", _snake(link_name))
    s = re.sub(r"^(left|right)", "", s).strip("_")
    return ALIASES.get(s)


def side_for_name(link_name: str) -> str | None:
    """``"left"``, ``"right"`` or None: the side marker :func:`segment_for_name` ignores
    (``r_thigh``, ``RightThigh``, ``thigh_R``, ``rightforearm``)."""
    s = _snake(link_name)
    m = _SIDE.search(s) or re.match(r"^(left|right)", s)
    if m is None:
        return None
    word = next(g for g in m.groups() if g)
    return "right" if word in ("right", "r") else "left"


def table_row(segment: str, sex: str = "male") -> SegmentRow:
    """Row of :data:`DE_LEVA_1996` (``segment`` may be an alias); KeyError when unknown."""
    key = ALIASES.get(segment, segment)
    return DE_LEVA_1996[sex][key]


def segment_inertia(row: SegmentRow, *, body_mass_kg: float, proximal_m: np.ndarray,
                    distal_m: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, float]:
    """Mass, COM (link frame), inertia about the COM (link axes) and length from the table.

    Parameters
    ----------
    row : SegmentRow
        Table row (:func:`table_row`).
    body_mass_kg : float
        Whole-body mass the fractions refer to, kg.
    proximal_m, distal_m : ndarray (3,)
        Segment endpoints in the link frame, m.

    Returns
    -------
    mass_kg, com_m (3,), inertia_com_kgm2 (3, 3), length_m
        Inertia axisymmetric about the segment axis (module conventions).
    """
    p = np.asarray(proximal_m, float)
    d = np.asarray(distal_m, float)
    axis = d - p
    length = float(np.linalg.norm(axis))
    if not np.isfinite(length) or length <= 0.0:
        raise ValueError("segment endpoints coincide")
    u = axis / length
    mass = row.mass_fraction * body_mass_kg
    com = p + row.com_fraction * axis
    i_long = mass * (row.r_longitudinal * length) ** 2
    r_perp = 0.5 * (row.r_sagittal + row.r_transverse)
    i_perp = mass * (r_perp * length) ** 2
    inertia = i_perp * (np.eye(3) - np.outer(u, u)) + i_long * np.outer(u, u)
    return mass, com, inertia, length
