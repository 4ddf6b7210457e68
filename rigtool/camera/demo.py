"""A camera set up on a simulated rig: where the tags go, where the camera stands.

Used by the tests, ``benchmarks/camera.py``, ``benchmarks/camera_posture.py`` and the video
option of ``rigtool simulate``: tags on the platform's top face at its markers and half way
between them, optionally tags on the object's links (:func:`box_tags`: the top face and
the face towards the camera of a box around the link), a board of tags lying on the floor
in front of it (its frame is the lab frame, so the tracked capture is in the simulator's
lab frame), and a camera ``distance_m`` from the platform's centre, looking down at it from
``elevation_deg`` above the horizontal.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rigtool.camera.model import CameraModel, camera_toml
from rigtool.camera.simvideo import BodyMotion, CameraPose, look_at
from rigtool.camera.tags import Tag, TagLayout
from rigtool.tomlwrite import dumps


@dataclass(frozen=True)
class Scene:
    """What the simulated camera sees: the tags, the camera's pose and the bodies' motion."""

    layout: TagLayout
    camera: CameraModel
    camera_pose: CameraPose
    motion: dict[str, BodyMotion]


def demo_camera(width: int = 1280, height: int = 1024, *, hfov_deg: float = 50.0) -> CameraModel:
    """A machine-vision camera with a little barrel distortion and an off-centre principal
    point (so a calibration has something to find)."""
    f = 0.5 * width / np.tan(np.radians(0.5 * hfov_deg))
    matrix = np.array([[f, 0.0, 0.5 * width + 1.3], [0.0, 0.9985 * f, 0.5 * height - 2.8],
                       [0.0, 0.0, 1.0]])
    return CameraModel(matrix, np.array([-0.12, 0.08, 0.0005, -0.0003, 0.0]), (width, height))


def platform_tags(markers_platform: dict[str, np.ndarray], *, edge_m: float = 0.06,
                  first_id: int = 0) -> list[Tag]:
    """Tags lying on the platform (``+z`` up, top of the print towards ``+y``) centred on its
    markers (projected on their plane) and half way between neighbouring markers."""
    pts = np.array(list(markers_platform.values()), dtype=float)
    centre = pts.mean(axis=0)
    order = np.argsort(np.arctan2(pts[:, 1] - centre[1], pts[:, 0] - centre[0]))
    ring = pts[order]
    places = []
    for i in range(len(ring)):
        places.append(ring[i])
        places.append(0.5 * (ring[i] + ring[(i + 1) % len(ring)]))
    z = float(pts[:, 2].max())
    return [Tag(first_id + k, "platform", edge_m, np.eye(3), np.array([p[0], p[1], z]))
            for k, p in enumerate(places)]


def box_tags(body: str, centre_m, size_m, *, edge_m: float = 0.06, first_id: int = 10,
             front_axis: int = 1, front_sign: float = -1.0, inset_m: float = 0.02
             ) -> list[Tag]:
    """Tags on a link: four on the top face (``+z``) of a box ``size_m`` centred at
    ``centre_m`` (link frame, m), near its corners, and two on the face whose outward normal
    is ``front_sign`` along link axis ``front_axis`` (0: x, 1: y; default ``-y``, the side a
    camera in front sees), so the link's depth is seen from two directions."""
    c = np.asarray(centre_m, float)
    half = 0.5 * np.asarray(size_m, float)
    dx, dy = half[0] - 0.5 * edge_m - inset_m, half[1] - 0.5 * edge_m - inset_m
    top = [c + np.array([sx * dx, sy * dy, half[2]]) for sx, sy in
           ((-1, -1), (1, -1), (1, 1), (-1, 1))]
    tags = [Tag(first_id + k, body, edge_m, np.eye(3), p) for k, p in enumerate(top)]
    # the front face: the tag's +z along the outward normal, its +y (top of the print) up
    normal = np.zeros(3)
    normal[front_axis] = front_sign
    up = np.array([0.0, 0.0, 1.0])
    rot = np.stack([np.cross(up, normal), up, normal], axis=1)     # tag axes -> link axes
    side = 1 - front_axis                                          # the face's other axis
    d_side = half[side] - 0.5 * edge_m - inset_m
    for j, sgn in enumerate((-1.0, 1.0)):
        p = c.copy()
        p[front_axis] += front_sign * half[front_axis]
        p[side] += sgn * d_side
        tags.append(Tag(first_id + 4 + j, body, edge_m, rot, p))
    return tags


def floor_board(centre_lab_m: np.ndarray, *, width_m: float = 0.9, edge_m: float = 0.08,
                first_id: int = 40) -> list[Tag]:
    """A board of four tags lying flat along the lab's x around ``centre`` (lab frame),
    staggered by 0.1 m in y: the lab body."""
    xs = np.linspace(-0.5, 0.5, 4) * width_m
    return [Tag(first_id + k, "floor", edge_m, np.eye(3),
                np.asarray(centre_lab_m, float) + np.array([x, 0.05 * (-1) ** k, 0.0]))
            for k, x in enumerate(xs)]


def platform_scene(traj, markers_platform: dict[str, np.ndarray], *,
                   camera: CameraModel | None = None, distance_m: float = 1.5,
                   elevation_deg: float = 50.0, edge_m: float = 0.06, lab_board: bool = True,
                   dictionary: str = "DICT_4X4_50", target_lab_m: np.ndarray | None = None,
                   link_tags: list[Tag] | tuple[Tag, ...] = ()) -> Scene:
    """The scene of a simulated capture (a :class:`rigtool.sim.dynamics.Trajectory`).

    The camera looks at ``target_lab_m`` (default: the platform's mean position) from the
    ``-y`` side; the floor board lies in front of it, 0.17 m beyond the platform's edge
    towards the camera and 0.05 m lower. Captures filmed by one set-up share the target.
    ``link_tags``: tags on other bodies of the trajectory (a locked object's links, by their
    names in it, e.g. from :func:`box_tags`); they move as the trajectory says.
    """
    camera = camera or demo_camera()
    rot = traj.rotation["platform"]
    pos = traj.position_m["platform"]
    target = pos.mean(axis=0) if target_lab_m is None else np.asarray(target_lab_m, float)
    el = np.radians(elevation_deg)
    pose = look_at(target + distance_m * np.array([0.0, -np.cos(el), np.sin(el)]), target)
    tags = platform_tags(markers_platform, edge_m=edge_m) + list(link_tags)
    if lab_board:
        pts = np.array(list(markers_platform.values()))
        tags += floor_board(target + np.array([0.0, -0.5 * np.ptp(pts[:, 1]) - 0.17, -0.05]),
                            width_m=0.8 * np.ptp(pts[:, 0]))
    layout = TagLayout(dictionary, tuple(tags), "floor" if lab_board else None)
    motion = {"platform": BodyMotion(traj.time_s, rot, pos)}
    for body in dict.fromkeys(t.body for t in link_tags):
        if body not in traj.rotation:
            from rigtool.errors import InputError
            raise InputError(f"tags on body '{body}', which the simulated capture does not "
                             f"have (it has {', '.join(traj.rotation)})")
        motion[body] = BodyMotion(traj.time_s, traj.rotation[body], traj.position_m[body])
    return Scene(layout, camera, pose, motion)


def tags_toml(layout: TagLayout) -> str:
    """The text of ``tags.toml`` for ``layout``."""
    data = {"dictionary": layout.dictionary_name,
            "lab": layout.lab_body or "camera",
            "tags": [{"id": t.id, "body": t.body, "edge_m": t.edge_m,
                      "position": [float(v) for v in t.position_body_m],
                      "rotation": t.rotation_body.tolist()} for t in layout.tags]}
    return dumps(data, header="tags printed on the bodies (see rigtool/camera/tags.py)")


def write_scene_files(directory: str | Path, scene: Scene) -> tuple[Path, Path]:
    """Write ``camera.toml`` (the true intrinsics) and ``tags.toml``; returns their paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    cam, tags = directory / "camera.toml", directory / "tags.toml"
    cam.write_text(camera_toml(scene.camera, header="the simulated camera's true intrinsics"),
                   encoding="utf-8")
    tags.write_text(tags_toml(scene.layout), encoding="utf-8")
    return cam, tags


def write_capture_video(traj, markers_platform: dict[str, np.ndarray], folder: str | Path,
                        name: str, *, rate_hz: float, n_frames: int | None = None,
                        seed: int = 0, force: bool = False, target_lab_m=None,
                        progress=None) -> list[Path]:
    """The video of one simulated capture, as the demo camera films the platform's tags.

    Writes ``folder/NAME.avi`` (raw 8-bit video), ``folder/NAME.video_truth.csv`` (the tag
    corners' true lab positions, named as ``rigtool track`` names them) and, once per
    folder, ``folder/camera/camera.toml`` and ``folder/camera/tags.toml`` (true intrinsics,
    the tags). Only the platform's tags are filmed (the object is not drawn). Captures of
    one session must pass the same ``target_lab_m`` (see :func:`platform_scene`): the
    camera and the floor board do not move between them.

    Raises
    ------
    InputError
        When a file exists and ``force`` is false.
    """
    from rigtool.camera.simvideo import render_video, true_markers
    from rigtool.errors import InputError
    from rigtool.mocap import write_capture

    folder = Path(folder)
    scene = platform_scene(traj, markers_platform, target_lab_m=target_lab_m)
    n = len(traj.time_s) if n_frames is None else min(int(n_frames), len(traj.time_s))
    video = folder / f"{name}.avi"
    truth = folder / f"{name}.video_truth.csv"
    for p in (video, truth):
        if p.exists() and not force:
            raise InputError("the file exists; pass --force to replace it", path=p)
    files = list(write_scene_files(folder / "camera", scene))
    render_video(video, scene.camera, scene.camera_pose, scene.layout, scene.motion,
                 rate_hz=rate_hz, n_frames=n, seed=seed, progress=progress)
    write_capture(true_markers(scene.layout, scene.motion, np.arange(n) / rate_hz, rate_hz),
                  truth, format="plain-csv")
    return files + [video, truth]


@dataclass(frozen=True)
class LockedObject:
    """A locked one-link object on the demo rig for the camera's posture benchmarks and tests:
    a 45 kg box (0.5 x 0.35 x 0.6 m, products of inertia added) standing on the platform.

    ``params`` about its own frame's origin (the base link's frame); ``rotation_platform``/
    ``position_platform_m``: that frame in the platform's frame; ``box_centre_m``,
    ``box_size_m``: where :func:`box_tags` puts its tags.
    """

    params: "object"
    rotation_platform: np.ndarray
    position_platform_m: np.ndarray
    box_centre_m: np.ndarray
    box_size_m: tuple[float, float, float]


def locked_object() -> LockedObject:
    """The demo object (see :class:`LockedObject`)."""
    from scipy.spatial.transform import Rotation

    from rigtool.inertia import InertialParams
    from rigtool.sim.rigs import box_inertia

    size = (0.5, 0.35, 0.6)
    com = np.array([0.03, -0.02, 0.30])
    inertia = box_inertia(45.0, size) + np.array([[0.0, 0.05, -0.02], [0.05, 0.0, 0.03],
                                                  [-0.02, 0.03, 0.0]])
    return LockedObject(InertialParams.from_com(45.0, com, inertia),
                        Rotation.from_euler("zyx", [10, 5, -3], degrees=True).as_matrix(),
                        np.array([0.05, -0.02, 0.04]), com, size)
