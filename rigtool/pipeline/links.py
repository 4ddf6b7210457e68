"""The session's links: marker coordinates in each link's frame (from the manifest or built
from a static capture) and the joint centres the manifest leaves out, estimated from the
relative-motion capture (SCoRE).

Conventions: link frames as SPEC ("Link frames"); coordinates in m.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.config import Session
from rigtool.errors import ConfigError, IdentifiabilityError, InputError
from rigtool.kinematics.joint_centre import score_joint_centre
from rigtool.kinematics.pose import body_trajectory
from rigtool.kinematics.static_frame import markers_from_static
from rigtool.mocap import MarkerData, read_capture
from rigtool.tree import Tree


def link_markers(session: Session, tree: Tree) -> dict[str, dict[str, np.ndarray]]:
    """Marker coordinates of every link in its own frame (manifest, or static capture)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for i, link in enumerate(tree.links):
        spec = session.frames.get(link.name)
        if spec is None:
            out[link.name] = dict(link.markers_link)
            continue
        raw_links = session.raw.get("links", [])
        frame_t = raw_links[i].get("frame", {}) if i < len(raw_links) else {}
        names = list(link.markers_link) or list(frame_t.get("markers", []))
        if not names:
            names = sorted({*([spec.origin] if isinstance(spec.origin, str) else spec.origin),
                            *spec.x_axis, spec.xy_plane} - {"joint_center"})
        data = read_capture(spec.static_capture)
        origin = spec.origin
        if origin == "joint_center" and link.joint_center_parent is None:
            # Provisional origin at the markers' midpoint; estimate_joint_centres moves it to
            # the centre found from the relative motion.
            origin = names
        elif origin == "joint_center":
            jc = link.joint_center_parent
            parent = link.parent
            if parent not in out:
                raise ConfigError("origin = \"joint_center\" needs the parent's markers",
                                  path=session.path, field=f"links[{i}].frame.origin")
            ptraj = body_trajectory(data, out[parent])
            ok = ptraj.valid
            if not ok.any():
                raise InputError(f"the parent '{parent}' is not seen in the static capture",
                                 path=spec.static_capture)
            r = Rotation.from_matrix(ptraj.rotation[ok]).mean().as_matrix()
            origin = r @ jc + ptraj.position_m[ok].mean(axis=0)
        out[link.name] = markers_from_static(data, origin=origin, x_axis=spec.x_axis,
                                             xy_plane=spec.xy_plane, names=names)
        if len(out[link.name]) < 3:
            raise ConfigError("a link frame from a static capture needs at least 3 markers",
                              path=session.path, field=f"links[{i}].frame")
    return out


def estimate_joint_centres(session: Session, tree: Tree,
                           markers: dict[str, dict[str, np.ndarray]],
                           data: MarkerData | None) -> tuple[Tree, dict, dict]:
    """Fill the joint centres the manifest leaves out from the relative-motion capture (SCoRE).

    A link without ``joint_center`` has its marker coordinates in a provisional frame with the
    link's axes; the centre found in that frame becomes the link's origin (its markers are
    shifted), and the centre in the parent's frame becomes ``joint_center``.

    Returns
    -------
    tree : Tree
        With every joint centre set.
    markers : dict
        Link marker coordinates in the (possibly moved) link frames.
    estimates : dict[str, JointCentreEstimate]
        Per link whose centre was estimated.
    """
    missing = [i for i, l in enumerate(tree.links) if i > 0 and l.joint_center_parent is None]
    if not missing:
        return tree, markers, {}
    names = ", ".join(tree.links[i].name for i in missing)
    if data is None:
        raise ConfigError(f"no joint_center for {names} and no [relative_motion] capture to "
                          "estimate it from; give joint_center (parent frame, m) or add a "
                          "capture where the link swings", path=session.path,
                          field=f"links[{missing[0]}].joint_center")
    window = session.relative_motion.window
    frames = None
    if window is not None:
        frames = (data.time_s >= window[0]) & (data.time_s <= window[1])
    links = list(tree.links)
    markers = dict(markers)
    estimates = {}
    for i in missing:
        link = links[i]
        ptraj = body_trajectory(data, markers[link.parent])
        ctraj = body_trajectory(data, markers[link.name])
        try:
            est = score_joint_centre(ptraj, ctraj, frames=frames,
                                     block_frames=max(1, int(round(data.rate_hz / 2))))
        except IdentifiabilityError as exc:
            raise IdentifiabilityError(f"joint centre of '{link.name}': {exc.message}",
                                       path=session.relative_motion.capture) from None
        estimates[link.name] = est
        markers[link.name] = {k: v - est.centre_child_m for k, v in markers[link.name].items()}
        links[i] = replace(link, joint_center_parent=est.centre_parent_m,
                           markers_link=markers[link.name])
    return Tree(tuple(links)), markers, estimates


__all__ = ["link_markers", "estimate_joint_centres"]
