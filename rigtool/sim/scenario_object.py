"""The object part of a scenario file: its link tree, its postures and the relative motion.

Reads ``[object]`` with its ``[[object.links]]``, each posture's link rotations, and
``[relative_motion]`` (which links are released from which tilt, or driven by a joint
servo). Every error is a :class:`~rigtool.errors.ConfigError` naming the file and field.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.config import _link_prior
from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams
from rigtool.sim.scenario_fields import (_markers, _params, _rotation, _rotation_value,
                                         _settings, _subject)
from rigtool.sim.scenario_types import CaptureSettings, ObjectSpec, PosturePlan, RelativePlan
from rigtool.tree import Link, Tree
from rigtool.validate import as_array, as_float, as_str, require


def _object(t: dict, *, path: Path) -> ObjectSpec:
    session = as_str(t.get("session", "session"), field="object.session", path=path)
    subject = _subject(t, "object", field="object", path=path)
    base_r = _rotation(t.get("base", {}), field="object.base", path=path, default=np.eye(3))
    base_p = as_array(t.get("base", {}).get("position", [0.0, 0.0, 0.0]), (3,),
                      field="object.base.position", path=path)
    links_t = t.get("links")
    if not isinstance(links_t, list) or not links_t:
        raise ConfigError("expected at least one [[object.links]] table", path=path,
                          field="object.links")
    links, priors = [], {}
    for i, lt in enumerate(links_t):
        f = f"object.links[{i}]"
        lname = as_str(require(lt, "name", field=f, path=path), field=f"{f}.name", path=path)
        parent = as_str(require(lt, "parent", field=f, path=path), field=f"{f}.parent",
                        path=path)
        jc = None
        if parent != "platform":
            jc = as_array(require(lt, "joint_center", field=f, path=path), (3,),
                          field=f"{f}.joint_center", path=path)
        mass, com, inertia = _params(lt, field=f, path=path)
        links.append(Link(lname, parent, jc, InertialParams.from_com(mass, com, inertia),
                          _markers(require(lt, "markers", field=f, path=path),
                                   field=f"{f}.markers", path=path)))
        # What the manifest will say the link is near (CAD values or a table segment):
        # validated as the manifest loader does, copied to the manifest as written.
        keys = {k: lt[k] for k in ("segment", "segment_start", "segment_end", "prior")
                if k in lt}
        if keys and _link_prior(keys, field=f, path=path) is not None:
            priors[lname] = keys
    try:
        tree = Tree(tuple(links))
    except ConfigError as exc:
        raise ConfigError(exc.message, path=path, field=f"object.{exc.field}") from None
    opensim = None
    if "opensim" in t:
        opensim = path.parent / as_str(t["opensim"], field="object.opensim", path=path)
        if not opensim.is_file():
            raise ConfigError("the OpenSim model does not exist", path=path,
                              field="object.opensim", found=str(opensim))
    return ObjectSpec(session, subject, tree, base_r, base_p, priors, opensim)


def _posture_rotations(t: dict, tree: Tree, *, field: str, path: Path) -> dict[str, np.ndarray]:
    """``0R_j`` of every non-base link (identity when not given)."""
    out = {l.name: np.eye(3) for l in tree.links[1:]}
    seq = t.get("euler_seq", "xyz")
    given: set[str] = set()
    for kind, key in (("rotation", "rotations"), ("rotation_vector", "rotation_vectors"),
                      ("euler_deg", "euler_deg")):
        table = t.get(key, {})
        if not isinstance(table, dict):
            raise ConfigError("expected a table: link name -> rotation", path=path,
                              field=f"{field}.{key}", found=table)
        for lname, value in table.items():
            if lname not in out:
                raise ConfigError(f"'{lname}' is not a non-base link of the object (links: "
                                  f"{', '.join(out) or 'none'})", path=path,
                                  field=f"{field}.{key}.{lname}")
            if lname in given:
                raise ConfigError(f"link '{lname}' has two rotations", path=path, field=field)
            given.add(lname)
            out[lname] = _rotation_value(kind, value, seq, field=f"{field}.{key}.{lname}",
                                         path=path)
    return out


def _relative(t: dict, tree: Tree, postures: list[PosturePlan], defaults: CaptureSettings, *,
              path: Path) -> RelativePlan:
    f = "relative_motion"
    pname = t.get("posture")
    if pname is None:
        rest = {l.name: np.eye(3) for l in tree.links[1:]}
        pname = "identity"
    else:
        by_name = {p.name: p for p in postures}
        if pname not in by_name:
            raise ConfigError(f"unknown posture '{pname}' (postures: "
                              f"{', '.join(by_name) or 'none'})", path=path, field=f"{f}.posture")
        rest = by_name[pname].rotations
    drive = _drive(t.get("drive", {}), rest, field=f"{f}.drive", path=path)
    release = t.get("release", {}) if drive else require(t, "release", field=f, path=path)
    if not isinstance(release, dict) or not (release or drive):
        raise ConfigError("expected a table: link name -> tilt rotation vector (rad, base "
                          "axes)", path=path, field=f"{f}.release", found=release)
    tilts = {}
    for lname, vec in release.items():
        if lname not in rest:
            raise ConfigError(f"'{lname}' is not a non-base link", path=path,
                              field=f"{f}.release.{lname}")
        tilts[lname] = as_array(vec, (3,), field=f"{f}.release.{lname}", path=path)
    # A tilt turns the released link and its whole subtree about its joint (base axes).
    start = dict(rest)
    parents = {l.name: l.parent for l in tree.links}
    for lname in tree.names[1:]:
        chain, node = [], lname
        while node in parents and node != tree.links[0].name:
            chain.append(node)
            node = parents[node]
        for anc in chain:      # own tilt first, then each released ancestor's (base axes)
            if anc in tilts:
                start[lname] = Rotation.from_rotvec(tilts[anc]).as_matrix() @ start[lname]
    damping = as_float(t.get("joint_damping", 0.0), field=f"{f}.joint_damping", path=path,
                       nonnegative=True)
    return RelativePlan(as_str(t.get("name", "swing"), field=f"{f}.name", path=path), pname,
                        rest, start, tilts, damping, _settings(t, defaults, field=f, path=path),
                        drive)


def _drive(t, rest: dict, *, field: str, path: Path) -> dict:
    """``[relative_motion.drive.LINK]`` tables: a joint moved by muscles (a servo tracking
    a multi-sine about the rest posture) instead of released to swing."""
    from rigtool.sim.servo import JointServo
    if not isinstance(t, dict):
        raise ConfigError("expected a table: link name -> servo", path=path, field=field,
                          found=t)
    out = {}
    for lname, spec in t.items():
        fl = f"{field}.{lname}"
        if lname not in rest:
            raise ConfigError(f"'{lname}' is not a non-base link", path=path, field=fl)
        if not isinstance(spec, dict):
            raise ConfigError("expected a table (amplitude_deg, frequency_hz, ...)",
                              path=path, field=fl, found=spec)
        freq = np.atleast_1d(np.asarray(require(spec, "frequency_hz", field=fl, path=path),
                                        float))
        k = freq.size
        amp = as_array(require(spec, "amplitude_deg", field=fl, path=path), (k, 3),
                       field=f"{fl}.amplitude_deg", path=path)
        phase = as_array(spec.get("phase_deg", np.zeros((k, 3)).tolist()), (k, 3),
                         field=f"{fl}.phase_deg", path=path)
        if not (np.all(np.isfinite(freq)) and np.all(freq > 0)):
            raise ConfigError("frequencies must be positive", path=path,
                              field=f"{fl}.frequency_hz", found=freq.tolist())
        out[lname] = JointServo(np.deg2rad(amp), freq, np.deg2rad(phase),
                                as_float(spec.get("stiffness_nm_per_rad", 400.0),
                                         field=f"{fl}.stiffness_nm_per_rad", path=path,
                                         nonnegative=True),
                                as_float(spec.get("damping_nms_per_rad", 20.0),
                                         field=f"{fl}.damping_nms_per_rad", path=path,
                                         nonnegative=True))
    return out

