"""Priors of the segments stage: what is known of each link before the measurement (a human
segment's de Leva 1996 table values, or a robot link's CAD values) with its uncertainty
(:class:`Prior`), built from the manifest (:func:`priors_from_specs`), checked, and written as
the linear residual rows the segments fit adds to its objective (:func:`_prior_rows`; the
form is described in rigtool.identify.segments.fit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool import anthropometry as anthro
from rigtool.errors import ConfigError
from rigtool.inertia import parallel_axis
from rigtool.tree import Tree

# (row, col) of the 3x3 tensor for the six pi inertia entries (xx, xy, xz, yy, yz, zz).
_PI_IDX = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))

#: Default uncertainty of CAD values when the manifest gives none (rigtool's own choices:
#: CAD models usually miss cables, fasteners and density variations by several per cent).
CAD_MASS_REL_STD = 0.10
CAD_COM_STD_M = 0.01
CAD_INERTIA_REL_STD = 0.20


@dataclass(frozen=True)
class Prior:
    """Prior knowledge of one link: table or CAD values with their uncertainty.

    Attributes
    ----------
    mass_kg, mass_std : float
        Prior mass and its standard deviation, kg.
    com_m : ndarray (3,)
        Prior COM in the link frame, m.
    com_std : float or ndarray (3,)
        Its standard deviation, m.
    inertia_com : ndarray (3, 3)
        Prior inertia about the COM, link axes, kg m^2.
    inertia_rel_std : float
        Relative standard deviation of the inertia (of each entry, relative to the size of
        the diagonal entries it involves).
    source : str
        Where the prior came from (e.g. ``"de Leva 1996: upper_arm (male)"`` or ``"CAD"``).
    """

    mass_kg: float
    mass_std: float
    com_m: np.ndarray
    com_std: float | np.ndarray
    inertia_com: np.ndarray
    inertia_rel_std: float
    source: str = "prior"


def _prior_rows(prior: Prior) -> tuple[np.ndarray, np.ndarray]:
    """``(P, q)`` with the prior residual ``P @ pi_j - q`` (10 rows, module docstring)."""
    m0 = float(prior.mass_kg)
    c0 = np.asarray(prior.com_m, float)
    i0 = np.asarray(prior.inertia_com, float)
    sc = np.broadcast_to(np.asarray(prior.com_std, float), (3,))
    p = np.zeros((10, 10))
    q = np.zeros(10)
    p[0, 0] = 1.0 / prior.mass_std
    q[0] = m0 / prior.mass_std
    for k in range(3):
        p[1 + k, 0] = -c0[k] / (m0 * sc[k])
        p[1 + k, 1 + k] = 1.0 / (m0 * sc[k])
    shape = i0 / m0 + parallel_axis(1.0, c0)    # inertia about the origin per kg of mass
    d = np.sqrt(np.maximum(np.diag(i0), 1e-12 * max(np.trace(i0), 1e-30)))
    # The residual is about the origin, so the COM's own uncertainty enters through the
    # parallel-axis term: d(|c|^2 1 - c c^T)_rc / dc_k = 2 c_k d_rc - d_rk c_c - c_r d_ck,
    # propagated linearly (without it a far-off COM would make the inertia prior a tight,
    # unwarranted mass constraint).
    eye = np.eye(3)
    dpa = (2 * c0[None, None, :] * eye[:, :, None] - eye[:, None, :] * c0[None, :, None]
           - c0[:, None, None] * eye[None, :, :])          # [r, c, k]
    s_pa = m0 * np.sqrt(np.sum((dpa * sc[None, None, :]) ** 2, axis=2))
    for k, (r, c) in enumerate(_PI_IDX):
        s = float(np.hypot(prior.inertia_rel_std * d[r] * d[c], s_pa[r, c]))
        p[4 + k, 4 + k] = 1.0 / s
        p[4 + k, 0] = -shape[r, c] / s
    return p, q


def _check_prior(name: str, prior: Prior) -> None:
    def bad(field_, msg, found):
        raise ConfigError(msg, field=f"priors.{name}.{field_}", found=found)
    if not (np.isfinite(prior.mass_kg) and prior.mass_kg > 0):
        bad("mass_kg", "expected a positive mass", prior.mass_kg)
    if not (np.isfinite(prior.mass_std) and prior.mass_std > 0):
        bad("mass_std", "expected a positive standard deviation", prior.mass_std)
    cs = np.asarray(prior.com_std, float)
    if not (np.all(np.isfinite(cs)) and np.all(cs > 0)):
        bad("com_std", "expected positive standard deviations", prior.com_std)
    if not (np.isfinite(prior.inertia_rel_std) and prior.inertia_rel_std > 0):
        bad("inertia_rel_std", "expected a positive relative standard deviation",
            prior.inertia_rel_std)
    i0 = np.asarray(prior.inertia_com, float)
    if i0.shape != (3, 3) or not np.all(np.isfinite(i0)) or np.linalg.eigvalsh(
            0.5 * (i0 + i0.T))[0] < 0:
        bad("inertia_com", "expected a symmetric positive semidefinite 3x3 inertia", i0.tolist())


def prior_from_table(segment: str, *, body_mass_kg: float, proximal_m: np.ndarray,
                     distal_m: np.ndarray, sex: str = "male",
                     mass_rel_std: float = anthro.MASS_REL_STD,
                     com_std_fraction: float = anthro.COM_STD_FRACTION,
                     inertia_rel_std: float = anthro.INERTIA_REL_STD) -> Prior:
    """Prior of a human segment from de Leva (1996) Table 4 (:mod:`rigtool.anthropometry`).

    Parameters
    ----------
    segment : str
        Table segment or alias (``"upper_arm"``, ``"forearm"``, ``"thigh"``, ...).
    body_mass_kg : float
        Whole-body mass the table's mass fractions refer to, kg.
    proximal_m, distal_m : ndarray (3,)
        The table's segment endpoints in the link frame, m (e.g. shoulder and elbow joint
        centres for the upper arm).
    sex : {"male", "female"}
    mass_rel_std, com_std_fraction, inertia_rel_std : float
        Prior uncertainties: relative mass, COM as a fraction of segment length, relative
        inertia (rigtool's defaults, not published figures).

    Returns
    -------
    Prior
    """
    row = anthro.table_row(segment, sex)
    mass, com, inertia, length = anthro.segment_inertia(
        row, body_mass_kg=body_mass_kg, proximal_m=proximal_m, distal_m=distal_m)
    key = anthro.ALIASES.get(segment, segment)
    return Prior(mass, mass_rel_std * mass, com, com_std_fraction * length, inertia,
                 inertia_rel_std, f"de Leva 1996 Table 4: {key} ({sex}, {row.endpoints})")


def priors_from_specs(tree: Tree, specs: dict, *, body_mass_kg: float,
                      sex: str | None = None) -> dict[str, Prior]:
    """One :class:`Prior` per link from the manifest's prior specifications.

    Parameters
    ----------
    tree : Tree
        The object's links (joint centres give default segment endpoints).
    specs : dict[str, LinkPriorSpec]
        Per link name, an object with the attributes of :class:`rigtool.config.LinkPriorSpec`
        (``segment``, ``segment_start_m``, ``segment_end_m``, ``mass_kg``, ``com_m``,
        ``inertia_com``, ``mass_std``, ``com_std``, ``inertia_rel_std``). A link without a
        spec whose name names a table segment (``"left_forearm"``) uses the table.
    body_mass_kg : float
        Whole-body mass for table fractions (the object's total mass), kg.
    sex : {"male", "female"} or None
        Table to use; None uses the male table and says so in ``Prior.source``.

    Returns
    -------
    dict[str, Prior]

    Raises
    ------
    ConfigError
        A link with no usable prior, an unknown segment, or segment endpoints that are
        missing or coincide. Table endpoints default to the link origin (its joint centre)
        and the joint centre of its only child; the base link and links with no or several
        children need ``segment_start``/``segment_end``.
    """
    out: dict[str, Prior] = {}
    table_sex = sex or "male"
    for i, link in enumerate(tree.links):
        spec = specs.get(link.name)
        f = f"links[{i}]"
        if spec is not None and getattr(spec, "mass_kg", None) is not None:
            m = float(spec.mass_kg)
            out[link.name] = Prior(
                m, spec.mass_std if spec.mass_std is not None else CAD_MASS_REL_STD * m,
                np.asarray(spec.com_m, float),
                spec.com_std if spec.com_std is not None else CAD_COM_STD_M,
                np.asarray(spec.inertia_com, float),
                spec.inertia_rel_std if spec.inertia_rel_std is not None
                else CAD_INERTIA_REL_STD, getattr(spec, "source", None) or "CAD ([links.prior])")
            continue
        seg = getattr(spec, "segment", None) if spec is not None else None
        seg = seg or anthro.segment_for_name(link.name)
        if seg is None:
            raise ConfigError(
                f"link '{link.name}' has no prior for its own mass, COM and inertia: give "
                "segment = \"upper_arm\" (de Leva 1996 table: head, trunk, upper_arm, forearm, "
                "hand, thigh, shank, foot) or a [links.prior] table of CAD values (mass, com, "
                "inertia_com)", field=f"{f}.segment")
        if anthro.ALIASES.get(seg, seg) not in anthro.DE_LEVA_1996["male"]:
            raise ConfigError("unknown segment; expected one of " + ", ".join(
                anthro.DE_LEVA_1996["male"]), field=f"{f}.segment", found=seg)
        start = getattr(spec, "segment_start_m", None) if spec is not None else None
        end = getattr(spec, "segment_end_m", None) if spec is not None else None
        kids = [tree.index(c.name) for c in tree.children(link.name)]
        if start is None and i > 0:
            start = np.zeros(3)
        if end is None and len(kids) == 1:
            end = tree.joint_center(kids[0])
        for key, val in (("segment_start", start), ("segment_end", end)):
            if val is None:
                raise ConfigError(
                    f"link '{link.name}' ({seg}) needs {key} = [x, y, z]: the table's "
                    f"{'proximal' if key == 'segment_start' else 'distal'} endpoint in the "
                    "link frame, m (defaults exist only for the joint centre and a single "
                    "child's joint centre)", field=f"{f}.{key}")
        start, end = np.asarray(start, float), np.asarray(end, float)
        if not np.linalg.norm(end - start) > 1e-6:
            raise ConfigError("segment_start and segment_end coincide; expected the "
                              "segment's two endpoints", field=f"{f}.segment_end",
                              found=end.tolist())
        pr = prior_from_table(seg, body_mass_kg=body_mass_kg, proximal_m=start, distal_m=end,
                              sex=table_sex)
        if sex is None:
            pr = Prior(pr.mass_kg, pr.mass_std, pr.com_m, pr.com_std, pr.inertia_com,
                       pr.inertia_rel_std, pr.source + "; sex not given, male table")
        out[link.name] = pr
    return out


__all__ = ["Prior", "prior_from_table", "priors_from_specs", "CAD_MASS_REL_STD",
           "CAD_COM_STD_M", "CAD_INERTIA_REL_STD"]
