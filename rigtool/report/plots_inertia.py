"""The object drawn as inertia ellipsoids on its link frames, one 3-D view per posture.

Each segment is drawn as the uniform solid ellipsoid with its mass and principal moments
(semi-axes ``a_i = sqrt(5 (I_j + I_k - I_i) / (2 m))`` along the principal axes), centred on
its COM; each link frame as three short axes (x red, y green, z blue) at its origin (the
joint centre), joints joined by grey lines, markers as dots. Poses per posture from the
fitted joint rotations ``0R_j`` (link -> base axes) and the joint centres: everything in the
base link's frame, m. Without segment parameters the whole object of each posture is drawn
(its COM and inertia in the base frame).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.report.png import pyplot, save_png

_COLOURS = ("tab:blue", "tab:orange", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
            "tab:cyan", "tab:gray")


def ellipsoid_semi_axes(mass_kg: float, moments: np.ndarray) -> np.ndarray:
    """Semi-axes (m) of the uniform solid ellipsoid with this mass and principal moments
    (0 where the moments violate the triangle inequality)."""
    i1, i2, i3 = np.asarray(moments, float)
    sq = np.array([i2 + i3 - i1, i1 + i3 - i2, i1 + i2 - i3]) * 5.0 / (2.0 * mass_kg)
    return np.sqrt(np.clip(sq, 0.0, None))


def link_poses(links: list[dict], rotations: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``name -> (R [3, 3] link -> base axes, origin [3] in the base frame)`` of every link
    in one posture. ``links`` as report.json's summary lists them (name, parent,
    joint_center in the parent's frame); ``rotations``: ``0R_j`` of the non-base links."""
    poses: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for link in links:
        if link["parent"] == "platform":
            poses[link["name"]] = (np.eye(3), np.zeros(3))
            continue
        r_p, o_p = poses[link["parent"]]
        jc = np.zeros(3) if link.get("joint_center") is None else np.asarray(
            link["joint_center"], float)
        rot = np.asarray(rotations.get(link["name"], np.eye(3)), float)
        poses[link["name"]] = (rot, o_p + r_p @ jc)
    return poses


def _draw_ellipsoid(ax, centre, axes_cols, semi, colour) -> np.ndarray:
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 28), np.linspace(0, np.pi, 14))
    sphere = np.stack([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)], axis=-1)
    pts = (sphere * semi) @ axes_cols.T + centre
    ax.plot_surface(pts[..., 0], pts[..., 1], pts[..., 2], color=colour, alpha=0.35,
                    linewidth=0, shade=True)
    return pts.reshape(-1, 3)


def _draw_frame(ax, rot, origin, length) -> None:
    for k, c in enumerate(("red", "green", "blue")):
        end = origin + length * rot[:, k]
        ax.plot(*np.stack([origin, end]).T, color=c, lw=1.2)


def _equal_box(ax, pts: np.ndarray) -> None:
    lo, hi = np.nanmin(pts, axis=0), np.nanmax(pts, axis=0)
    centre, half = 0.5 * (lo + hi), 0.5 * max(float(np.max(hi - lo)), 1e-3) * 1.05
    for k, setter in enumerate((ax.set_xlim, ax.set_ylim, ax.set_zlim)):
        setter(centre[k] - half, centre[k] + half)
    ax.set_box_aspect((1, 1, 1))


def ellipsoid_figure(doc: dict, markers: dict[str, dict[str, np.ndarray]],
                     path: Path) -> None:
    """One 3-D view per posture (report.json ``doc``; ``markers``: link -> marker -> link
    frame xyz, m)."""
    plt = pyplot()
    links = doc["summary"]["links"]
    segs = (doc.get("segments") or {}).get("links")
    postures = doc["postures"]
    n = len(postures)
    cols = min(n, 3)
    rows = int(np.ceil(n / cols))
    fig = plt.figure(figsize=(3.4 * cols, 3.4 * rows + 0.5))
    size = max((np.linalg.norm(np.asarray(v, float)) for m in markers.values()
                for v in m.values()), default=0.3)
    for i, p in enumerate(postures):
        ax = fig.add_subplot(rows, cols, i + 1, projection="3d")
        poses = link_poses(links, p["rotations"])
        pts = [np.zeros((1, 3))]
        for j, link in enumerate(links):
            rot, origin = poses[link["name"]]
            colour = _COLOURS[j % len(_COLOURS)]
            _draw_frame(ax, rot, origin, 0.25 * size)
            if link["parent"] != "platform":
                ax.plot(*np.stack([poses[link["parent"]][1], origin]).T, color="0.5", lw=1)
            mk = np.array([np.asarray(v, float) for v in markers.get(link["name"], {}).values()])
            if mk.size:
                world = mk @ rot.T + origin
                ax.scatter(*world.T, s=6, color=colour, depthshade=False)
                pts.append(world)
            if segs and link["name"] in segs:
                ls = segs[link["name"]]
                w, v = np.linalg.eigh(np.asarray(ls["inertia_com"], float))
                centre = origin + rot @ np.asarray(ls["com"], float)
                pts.append(_draw_ellipsoid(ax, centre, rot @ v,
                                           ellipsoid_semi_axes(ls["mass"], w), colour))
        if not segs:
            w, v = np.linalg.eigh(np.asarray(p["inertia_com"], float))
            pts.append(_draw_ellipsoid(ax, np.asarray(p["com"], float), v,
                                       ellipsoid_semi_axes(p["mass"], w), "0.55"))
        _equal_box(ax, np.vstack(pts))
        ax.view_init(elev=22, azim=-58)
        ax.set_title(p["name"], fontsize=9)
        ax.tick_params(labelsize=6)
        ax.set_xlabel("x [m]", fontsize=7)
        ax.set_ylabel("y [m]", fontsize=7)
        ax.set_zlabel("z [m]", fontsize=7)
    handles = [plt.Line2D([], [], color=_COLOURS[j % len(_COLOURS)], lw=6 if segs else 0,
                          marker=None if segs else "o", alpha=0.5 if segs else 1.0,
                          label=link["name"] + ("" if segs else " (markers)"))
               for j, link in enumerate(links)]
    if not segs:
        handles.append(plt.Line2D([], [], color="0.55", lw=6, alpha=0.5,
                                  label="whole object"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save_png(fig, path, dpi=90)


__all__ = ["ellipsoid_figure", "ellipsoid_semi_axes", "link_poses"]
