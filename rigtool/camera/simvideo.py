"""A simulated video of the rig: the simulator's body motions seen by a camera, with the truth.

Each tag of a :class:`~rigtool.camera.tags.TagLayout` is printed (its cv2.aruco image, ink on
white paper with a quiet zone) on its body; the bodies move as a simulated trajectory says
(``rotation[body] [T, 3, 3]`` body -> lab, ``position_m[body] [T, 3]``, lab frame, as
:class:`rigtool.sim.dynamics.Trajectory` holds them); the lab body of the layout (if any)
stays at the lab origin (its frame *is* the lab frame). Frames are ray cast
(:mod:`rigtool.camera.render`) through the camera's lens with motion blur over the
exposure, optical blur and sensor noise, and written one at a time (memory does not grow
with the length). Next to the video: the truth, the tag corners' lab positions at every
frame as the plain CSV ``rigtool track`` writes, and the bodies' poses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from rigtool.camera.model import CameraModel
from rigtool.camera.render import PixelRays, TexturedPlane, finish_frame, render_frame
from rigtool.camera.tags import Tag, TagLayout
from rigtool.errors import InputError
from rigtool.mocap.markerdata import MarkerData


@dataclass(frozen=True)
class VideoSettings:
    """How the simulated camera records.

    Attributes
    ----------
    exposure_s : float
        Shutter time; the bodies are drawn at ``n_exposure_samples`` instants spread over
        it, centred on the frame time (0: no motion blur).
    n_exposure_samples : int
    supersample : int
        Sub-pixel rays per pixel along each axis.
    blur_px, read_noise, shot_noise : float
        See :func:`rigtool.camera.render.finish_frame`.
    background, paper, ink : float
        Intensities in [0, 1] of the scene behind the tags, the tags' paper and their ink.
    margin_fraction : float
        White paper around each printed tag, in tag edges.
    fourcc : str
        Codec of the written video: Y800 (raw 8-bit gray in an .avi, 1.3 MB per 1280x1024
        frame, the fastest to read) or FFV1 (lossless, about half the size with this
        noise, but several times slower to decode).
    """

    exposure_s: float = 1.0 / 500.0
    n_exposure_samples: int = 4
    supersample: int = 8
    blur_px: float = 0.7
    read_noise: float = 2.0 / 255.0
    shot_noise: float = 0.02
    background: float = 0.45
    paper: float = 0.85
    ink: float = 0.08
    margin_fraction: float = 0.25
    fourcc: str = "Y800"


@dataclass(frozen=True)
class CameraPose:
    """Where the camera is: ``X_cam = rotation_cam_lab @ x_lab + translation_cam_lab_m``."""

    rotation_cam_lab: np.ndarray
    translation_cam_lab_m: np.ndarray


def look_at(eye_lab_m, target_lab_m, up_lab=(0.0, 0.0, 1.0)) -> CameraPose:
    """The pose of a camera at ``eye`` whose optical axis passes through ``target``, with the
    image's up (``-y_cam``) towards ``up``."""
    eye = np.asarray(eye_lab_m, dtype=float)
    z = np.asarray(target_lab_m, dtype=float) - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, np.asarray(up_lab, dtype=float))
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    rot = np.stack([x, y, z])                  # rows: camera axes in lab coordinates
    return CameraPose(rot, -rot @ eye)


def tag_plane(dictionary, tag: Tag, settings: VideoSettings) -> TexturedPlane:
    """The printed tag as a textured plane (one texel per cell: the renderer needs no more)."""
    import cv2

    cells = int(dictionary.markerSize) + 2
    img = cv2.aruco.generateImageMarker(dictionary, tag.id, cells, borderBits=1)
    texture = np.where(img > 127, settings.paper, settings.ink).astype(np.float32)
    return TexturedPlane(texture, (tag.edge_m, tag.edge_m),
                         margin_m=settings.margin_fraction * tag.edge_m,
                         margin_value=settings.paper)


class BodyMotion:
    """Poses of one body at any instant: the samples, interpolated (cubic spline for the
    position, rotation spline for the attitude) between them."""

    def __init__(self, time_s: np.ndarray, rotation_lab: np.ndarray, position_lab_m: np.ndarray):
        from scipy.interpolate import CubicSpline
        from scipy.spatial.transform import Rotation, RotationSpline

        self.time_s = np.asarray(time_s, dtype=float)
        self._rot = RotationSpline(self.time_s, Rotation.from_matrix(rotation_lab))
        self._pos = CubicSpline(self.time_s, position_lab_m, axis=0)

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rotations ``[n, 3, 3]`` (body -> lab) and positions ``[n, 3]`` (m) at times ``t``."""
        t = np.clip(np.atleast_1d(t), self.time_s[0], self.time_s[-1])
        return self._rot(t).as_matrix(), self._pos(t)


def true_markers(layout: TagLayout, motion: dict[str, BodyMotion], time_s: np.ndarray,
                 rate_hz: float) -> MarkerData:
    """The tag corners' true lab positions at ``time_s``, named as ``rigtool track`` names
    them (moving bodies only)."""
    names, columns = [], []
    for body in layout.moving_bodies:
        rot, pos = motion[body].at(time_s)
        for name, xyz in layout.body_markers(body).items():
            names.append(f"{body}:{name}")
            columns.append(np.einsum("tij,j->ti", rot, xyz) + pos)
    xyz = np.stack(columns, axis=1) if columns else np.zeros((len(time_s), 0, 3))
    return MarkerData(np.asarray(time_s, float), tuple(names), xyz, rate_hz)


def render_video(path: str | Path, camera: CameraModel, camera_pose: CameraPose,
                 layout: TagLayout, motion: dict[str, BodyMotion], *, rate_hz: float,
                 n_frames: int, settings: VideoSettings = VideoSettings(), seed: int = 0,
                 progress: Callable[[str], None] | None = None) -> None:
    """Write the simulated video of ``n_frames`` frames at ``rate_hz``.

    Parameters
    ----------
    path : path
        The video file (``.avi``).
    camera : CameraModel
        Intrinsics and lens distortion; the frame size is its image size.
    camera_pose : CameraPose
        Where the camera is in the lab.
    layout : TagLayout
        The tags; those of ``layout.lab_body`` are fixed in the lab.
    motion : dict
        Body name -> :class:`BodyMotion` for every moving body of the layout.
    rate_hz, n_frames : float, int
        Frame ``k`` is exposed around ``t = k / rate_hz``.
    settings : VideoSettings
    seed : int
        Sensor noise seed.
    progress : callable, optional
        Called with a status line now and then.
    """
    import cv2

    missing = [b for b in layout.moving_bodies if b not in motion]
    if missing:
        raise InputError(f"no simulated motion for bodies {', '.join(missing)} of the tags",
                         path=layout.source)
    width, height = camera.image_size
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*settings.fourcc), rate_hz,
                             (width, height), isColor=False)
    if not writer.isOpened():
        raise InputError(f"cannot write a {settings.fourcc} video here (try an .avi file)",
                         path=path)
    rays = PixelRays(camera)
    rng = np.random.default_rng(seed)
    dictionary = layout.dictionary()
    planes = {t.id: tag_plane(dictionary, t, settings) for t in layout.tags}
    n_exp = settings.n_exposure_samples if settings.exposure_s > 0 else 1
    offsets = (settings.exposure_s * ((np.arange(n_exp) + 0.5) / n_exp - 0.5)
               if n_exp > 1 else np.zeros(1))
    r_cl, t_cl = camera_pose.rotation_cam_lab, camera_pose.translation_cam_lab_m
    try:
        for k in range(n_frames):
            times = k / rate_hz + offsets
            scene = []
            for body in layout.bodies:
                if body == layout.lab_body:
                    rot_lab, pos_lab = np.eye(3)[None], np.zeros((1, 3))
                else:
                    rot_lab, pos_lab = motion[body].at(times)
                rot_cam = r_cl @ rot_lab                                    # body -> camera
                pos_cam = pos_lab @ r_cl.T + t_cl
                for tag in layout.tags_of(body):
                    scene.append((planes[tag.id], rot_cam @ tag.rotation_body,
                                  pos_cam + rot_cam @ tag.position_body_m))
            frame = render_frame(rays, scene, background=settings.background,
                                 supersample=settings.supersample)
            writer.write(finish_frame(frame, rng, blur_px=settings.blur_px,
                                      read_noise=settings.read_noise,
                                      shot_noise=settings.shot_noise))
            if progress is not None and (k + 1) % 100 == 0:
                progress(f"rendered {k + 1}/{n_frames} frames")
    finally:
        writer.release()


def board_plane(spec, settings: VideoSettings = VideoSettings(), *,
                pixels_per_square: int = 40) -> TexturedPlane:
    """A printed ChArUco board (:class:`rigtool.camera.intrinsics.BoardSpec`) as a plane.

    The texture has ``pixels_per_square`` texels per square; the marker's side must come
    out a whole number of texels (e.g. 40 per square for a 0.75 marker/square ratio) so
    the texture is exact.
    """
    cols, rows = spec.squares
    img = spec.board().generateImage((cols * pixels_per_square, rows * pixels_per_square),
                                     marginSize=0, borderBits=1)
    texture = np.where(img > 127, settings.paper, settings.ink).astype(np.float32)
    return TexturedPlane(texture, (cols * spec.square_m, rows * spec.square_m),
                         margin_m=0.5 * spec.square_m, margin_value=settings.paper)


def board_poses(camera: CameraModel, spec, n_views: int, *, seed: int = 0,
                distance_m: tuple[float, float] = (0.5, 0.9), tilt_deg: float = 35.0
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Poses ``(R_cam_board, t_cam_m)`` of a board (plane frame of :func:`board_plane`)
    spread over the image: its centre on a grid of image points, at random distances in
    ``distance_m``, tilted up to ``tilt_deg`` about random in-plane axes, facing the camera."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    width, height = camera.image_size
    side = int(np.ceil(np.sqrt(n_views)))
    grid = [(width * (0.5 + i) / side, height * (0.5 + j) / side)
            for j in range(side) for i in range(side)]
    order = rng.permutation(len(grid))[:n_views]
    poses = []
    for k in order:
        ray = camera.normalized_rays(np.array(grid[k]))
        depth = rng.uniform(*distance_m)
        centre = depth * np.array([ray[0], ray[1], 1.0])
        axis_angle = rng.uniform(0, 2 * np.pi)
        tilt = np.radians(rng.uniform(0.3, 1.0) * tilt_deg)
        tilt_rot = Rotation.from_rotvec(tilt * np.array([np.cos(axis_angle),
                                                         np.sin(axis_angle), 0.0]))
        spin = Rotation.from_euler("z", rng.uniform(-20, 20), degrees=True)
        facing = Rotation.from_euler("x", 180.0, degrees=True)   # plane +z towards camera
        poses.append(((tilt_rot * facing * spin).as_matrix(), centre))
    return poses


def render_board_views(camera: CameraModel, spec, poses, *,
                       settings: VideoSettings = VideoSettings(), seed: int = 0
                       ) -> list[np.ndarray]:
    """Grayscale ``uint8`` images of the board at each pose (no motion blur)."""
    rays = PixelRays(camera)
    rng = np.random.default_rng(seed)
    plane = board_plane(spec, settings)
    return [finish_frame(render_frame(rays, [(plane, rot[None], t[None])],
                                      background=settings.background,
                                      supersample=settings.supersample),
                         rng, blur_px=settings.blur_px, read_noise=settings.read_noise,
                         shot_noise=settings.shot_noise)
            for rot, t in poses]
