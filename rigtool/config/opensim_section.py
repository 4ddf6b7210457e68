"""The session manifest's ``[opensim]`` section: a person described by an OpenSim model.

::

    [opensim]
    model = "subject.osim"        # relative to the manifest
    mass_rel_std = 0.2            # the prior's uncertainty (defaults shown)
    com_std = 0.02                # m
    inertia_rel_std = 0.3

The section stands in for ``[[links]]``: the model's bodies and joints are the tree
(rigtool.osim.links), its MarkerSet the links' markers, its bodies' mass properties the
prior (instead of de Leva's tables). ``rigtool run`` writes the model back with the
measured mass properties (``personalised.osim``, rigtool.osim.personalise).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rigtool import anthropometry as anthro
from rigtool.errors import ConfigError, InputError
from rigtool.osim.links import OsimTree, osim_tree
from rigtool.osim.model_file import read_osim
from rigtool.validate import as_float, as_str, require

#: the prior's default uncertainty of a model body's COM, m (a generic model scaled to a
#: person: a few per cent of a segment's length; rigtool's choice)
COM_STD_M = 0.02


@dataclass(frozen=True)
class OpenSimSpec:
    """The ``[opensim]`` section as read.

    Attributes
    ----------
    model : Path
        The .osim file.
    tree : OsimTree
        Its links (rigtool.osim.links).
    mass_rel_std, com_std, inertia_rel_std : float
        The prior's uncertainties: relative mass, COM (m), relative inertia.
    """

    model: Path
    tree: OsimTree
    mass_rel_std: float
    com_std: float
    inertia_rel_std: float

    @property
    def notes(self) -> list[str]:
        """What the run says of the model: joints taken as spherical, bodies fused."""
        return list(self.tree.notes)

    def links_tables(self) -> list[dict]:
        """The ``[[links]]`` equivalent: per link its parent, joint centre, markers and the
        model's mass properties as a prior of given uncertainty."""
        out = []
        for link in self.tree.links:
            p = link.prior
            t = {"name": link.name, "parent": link.parent,
                 "markers": {k: v.tolist() for k, v in link.markers.items()},
                 "prior": {"mass": p.mass, "com": p.com.tolist(),
                           "inertia_com": (0.5 * (p.inertia_com + p.inertia_com.T)).tolist(),
                           "mass_std": self.mass_rel_std * p.mass, "com_std": self.com_std,
                           "inertia_rel_std": self.inertia_rel_std}}
            if link.joint_center is not None:
                t["joint_center"] = np.asarray(link.joint_center, float).tolist()
            out.append(t)
        return out

    def prior_source(self, link: str) -> str:
        """The prior's name in the report: the model file and the link's bodies."""
        bodies = next(l.bodies for l in self.tree.links if l.name == link)
        return (f"OpenSim model {self.model.name}: "
                + ("body " if len(bodies) == 1 else "bodies ") + ", ".join(bodies))


def opensim_section(raw: dict, path: Path) -> OpenSimSpec:
    """Read ``[opensim]`` of a manifest and the model it names.

    Parameters
    ----------
    raw : dict
        The parsed manifest.
    path : Path
        The manifest (the model's path resolves against its folder).

    Raises
    ------
    ConfigError
        A bad key of the section, or ``[[links]]`` beside it.
    InputError
        The model refused (rigtool.osim.links), naming the .osim file; or a link with fewer
        than 3 markers.
    """
    t = raw["opensim"]
    if not isinstance(t, dict):
        raise ConfigError("expected an [opensim] table", path=path, field="opensim", found=t)
    for other in ("links", "robot"):
        if other in raw:
            raise ConfigError(f"give either [opensim] (an OpenSim model) or "
                              f"{'[[links]]' if other == 'links' else '[robot]'}, not both",
                              path=path, field=other)
    model = path.parent / as_str(require(t, "model", field="opensim", path=path),
                                 field="opensim.model", path=path)
    tree = osim_tree(read_osim(model))
    for link in tree.links:
        if len(link.markers) < 3:
            bodies = ", ".join(link.bodies)
            raise InputError(f"link '{link.name}' (body {bodies}) has {len(link.markers)} "
                             "marker(s) in the MarkerSet; rigtool follows each link by 3 or "
                             "more (add markers to the body, or weld it to its parent)",
                             path=model, field=f"MarkerSet.{link.name}")

    def std(key: str, default: float) -> float:
        return as_float(t.get(key, default), field=f"opensim.{key}", path=path, positive=True)

    return OpenSimSpec(model, tree, std("mass_rel_std", anthro.MASS_REL_STD),
                       std("com_std", COM_STD_M), std("inertia_rel_std", anthro.INERTIA_REL_STD))


__all__ = ["OpenSimSpec", "opensim_section", "COM_STD_M"]
