"""A camera set up on a simulated rig: where the tags go, where the camera stands.

Used by the tests, ``benchmarks/camera.py`` and the video option of ``rigtool simulate``:
tags on the platform's top face at its markers and half way between them, a board of tags
lying on the floor in front of it (its frame is the lab frame, so the tracked capture is
in the simulator's lab frame), and a camera ``distance_m`` from the platform's centre,
looking down at it from ``elevation_deg`` above the horizontal.
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
                   dictionary: str = "DICT_4X4_50", target_lab_m: np.ndarray | None = None
                   ) -> Scene:
    """The scene of a simulated capture (a :class:`rigtool.sim.dynamics.Trajectory`).

    The camera looks at ``target_lab_m`` (default: the platform's mean position) from the
    ``-y`` side; the floor board lies in front of it, 0.17 m beyond the platform's edge
    towards the camera and 0.05 m lower. Captures filmed by one set-up share the target.
    """
    camera = camera or demo_camera()
    rot = traj.rotation["platform"]
    pos = traj.position_m["platform"]
    target = pos.mean(axis=0) if target_lab_m is None else np.asarray(target_lab_m, float)
    el = np.radians(elevation_deg)
    pose = look_at(target + distance_m * np.array([0.0, -np.cos(el), np.sin(el)]), target)
    tags = platform_tags(markers_platform, edge_m=edge_m)
    if lab_board:
        pts = np.array(list(markers_platform.values()))
        tags += floor_board(target + np.array([0.0, -0.5 * np.ptp(pts[:, 1]) - 0.17, -0.05]),
                            width_m=0.8 * np.ptp(pts[:, 0]))
    layout = TagLayout(dictionary, tuple(tags), "floor" if lab_board else None)
    motion = {"platform": BodyMotion(traj.time_s, rot, pos)}
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
