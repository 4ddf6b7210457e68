"""The constant (per-corner) error of the tag corners, against the renderer's truth.

Each tracked corner carries an error that is partly noise (new in every frame) and partly
constant (the same in every frame while the tag stays near one place in the image): the
constant part does not average out over a video, so it sets the accuracy of a posture's
centre of mass from video (benchmarks/RESULTS.md, "The camera path").
This script renders tags through the demo camera (1280x1024, f = 1372 px, the demo's lens
distortion, 0.7 px optical blur, read and shot noise, 8-bit), refines their corners and
splits the error of each method into

- bias: the RMS over corners of each corner's mean error over the frames (px), the mean's
  own noise (scatter**2 / frames) subtracted;
- scatter: the RMS of the errors about each corner's mean, frame to frame (px).

Cases: 6 cm tags 1.5 m away facing the camera, a grid of them over the whole image at
random sub-pixel positions, turned in their plane by 0, 2, 10 and 30 deg; static (one
noiseless render, a new noise draw per frame) and moving with the demo platform's free
vibration (``benchmarks/camera.py``'s simulation: a few px, motion blur over the 1/500 s
exposure), each frame rendered; one static case rendered with 16 x 16 rays per pixel
instead of 8 x 8 (is the renderer's own sampling the bias?). Each frame's refinement
starts from the true corners moved by up to +-0.3 px. Methods: rigtool's
``refine_corners``, the same function as it was at a git revision (``--old REV``: the
comparison before and after a change, on the same frames), and ``cv2.cornerSubPix`` for
reference. Also printed: each case's common shift (the mean of all its corners' mean
errors, a renderer artefact when it is not zero) and the bias without it ("own bias").

    nice python3 benchmarks/corner_bias.py [--frames 30] [--moving-frames 24] [--old REV]
                                           [--angles 0,2,10,30] [--supersample 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from scipy.spatial.transform import Rotation

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigtool.camera import aruco  # noqa: E402
from rigtool.camera.demo import demo_camera, platform_scene  # noqa: E402
from rigtool.camera.model import CameraModel  # noqa: E402
from rigtool.camera.render import PixelRays, finish_frame, render_frame  # noqa: E402
from rigtool.camera.simvideo import VideoSettings, tag_plane  # noqa: E402
from rigtool.camera.tags import Tag, square_corners  # noqa: E402

RATE_HZ = 120.0
EDGE_M = 0.06
DISTANCE_M = 1.5

Method = Callable[[np.ndarray, np.ndarray, CameraModel], tuple[np.ndarray, np.ndarray]]


def tag_grid(camera: CameraModel, angle_deg: float, nx: int, ny: int, seed: int
             ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Poses ``(R_cam_tag, t_cam_m)`` of tags facing the camera (plane normal along the optical
    axis) on an ``nx`` x ``ny`` grid over the image, each moved by a random few px (so the
    corners fall at random sub-pixel positions) and turned by ``angle_deg`` in its plane."""
    rng = np.random.default_rng(seed)
    width, height = camera.image_size
    rot = (Rotation.from_euler("x", 180.0, degrees=True)        # printed side to the camera
           * Rotation.from_euler("z", angle_deg, degrees=True)).as_matrix()
    poses = []
    for v in (np.arange(ny) + 0.5) / ny * 0.88 * height + 0.06 * height:
        for u in (np.arange(nx) + 0.5) / nx * 0.88 * width + 0.06 * width:
            ray = camera.normalized_rays(np.array([u, v]) + rng.uniform(-4.0, 4.0, 2))
            poses.append((rot, DISTANCE_M * np.array([ray[0], ray[1], 1.0])))
    return poses


@dataclass
class Motion:
    """The demo platform's free vibration as a rigid motion of the camera-frame scene:
    ``X(t) = R(t) X(0) + t(t)``, relative to the platform's pose at time 0."""

    scene: object

    def at(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rot, pos = self.scene.motion["platform"].at(times)
        rot0, pos0 = self.scene.motion["platform"].at(np.zeros(1))
        r_cl = self.scene.camera_pose.rotation_cam_lab
        t_cl = self.scene.camera_pose.translation_cam_lab_m
        rel = rot @ rot0[0].T                                     # lab frame
        rel_t = pos - np.einsum("tij,j->ti", rel, pos0[0])
        r_cam = r_cl @ rel @ r_cl.T
        t_cam = rel_t @ r_cl.T + t_cl - np.einsum("tij,j->ti", r_cam, t_cl)
        return r_cam, t_cam


def demo_motion(seconds: float) -> Motion:
    from benchmarks.camera import simulate_platform

    rig, traj = simulate_platform(int(seconds * RATE_HZ) + 2)
    return Motion(platform_scene(traj, rig.platform.markers_platform, camera=demo_camera()))


def frames_of(camera: CameraModel, rays: PixelRays, poses, *, n_frames: int,
              motion: Motion | None, frame_step_s: float, supersample: int, seed: int,
              settings: VideoSettings = VideoSettings()
              ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Frames (uint8) and true corners ``[n, 4, 2]`` of the tags at ``poses`` (static: one
    noiseless render, new noise per frame; moving: each frame rendered, motion blurred)."""
    dictionary = aruco.get_dictionary("DICT_4X4_50")
    plane = tag_plane(dictionary, Tag(7, "t", EDGE_M, np.eye(3), np.zeros(3)), settings)
    corners = square_corners(EDGE_M)
    rng = np.random.default_rng(seed)
    n_exp = settings.n_exposure_samples
    offsets = settings.exposure_s * ((np.arange(n_exp) + 0.5) / n_exp - 0.5)
    still = None
    for k in range(n_frames):
        if motion is None:
            if still is None:
                still = render_frame(rays, [(plane, r[None], t[None]) for r, t in poses],
                                     background=settings.background, supersample=supersample)
                truth = np.array([camera.project(corners @ r.T + t) for r, t in poses])
            image = still
        else:
            t_frame = k * frame_step_s
            r_m, t_m = motion.at(t_frame + np.concatenate([[0.0], offsets]))
            scene, truth = [], []
            for r, t in poses:
                rot = r_m @ r                                     # [1 + n_exp, 3, 3]
                pos = np.einsum("tij,j->ti", r_m, t) + t_m
                scene.append((plane, rot[1:], pos[1:]))
                truth.append(camera.project(corners @ rot[0].T + pos[0]))
            image = render_frame(rays, scene, background=settings.background,
                                 supersample=supersample)
            truth = np.array(truth)
        yield finish_frame(image, rng, blur_px=settings.blur_px,
                           read_noise=settings.read_noise,
                           shot_noise=settings.shot_noise), truth


def corner_subpix(gray: np.ndarray, corners: np.ndarray, camera: CameraModel
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``cv2.cornerSubPix`` (11 x 11 window) on each corner, for reference."""
    import cv2

    pts = corners.reshape(-1, 1, 2).astype(np.float32)
    crit = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_COUNT, 50, 1e-4)
    out = cv2.cornerSubPix(gray, pts, (5, 5), (-1, -1), crit)
    return out.reshape(corners.shape).astype(np.float64), np.ones(len(corners), dtype=bool)


def split(errors: np.ndarray, ok: np.ndarray) -> dict:
    """Bias and scatter (px) of errors ``[T, n, 4, 2]`` over the frames where the tag was
    ``ok`` ``[T, n]``."""
    w = ok[..., None, None].astype(float)
    count = w.sum(axis=0)                                         # [n, 1, 1]
    use = count[:, 0, 0] >= 2
    mean = (errors * w).sum(axis=0) / np.maximum(count, 1)
    dev = (errors - mean) * w
    scatter2 = float((dev ** 2).sum() / np.maximum((count[use] - 1).sum() * 8, 1))
    n_mean = float(count[use].mean())
    bias2 = float(np.mean(mean[use] ** 2)) - scatter2 / n_mean
    common = mean[use].mean(axis=(0, 1))                                # [2]
    bias2_own = float(np.mean((mean[use] - common) ** 2)) - scatter2 / n_mean
    return {"bias_px": float(np.sqrt(max(bias2, 0.0))), "scatter_px": float(np.sqrt(scatter2)),
            "bias_own_px": float(np.sqrt(max(bias2_own, 0.0))), "common_px": common.tolist(),
            "max_mean_px": float(np.abs(mean[use]).max()), "failed": float(1 - ok.mean())}


@dataclass(frozen=True)
class Case:
    name: str
    angle_deg: float
    moving: bool
    supersample: int = 8


def run_case(case: Case, camera: CameraModel, rays: PixelRays, methods: dict[str, Method],
             args, motion: Motion | None) -> dict[str, dict]:
    poses = tag_grid(camera, case.angle_deg, args.nx, args.ny, seed=args.seed)
    n_frames = args.moving_frames if case.moving else args.frames
    rng = np.random.default_rng(args.seed + 1)
    errors = {m: [] for m in methods}
    oks = {m: [] for m in methods}
    seconds = {m: 0.0 for m in methods}
    for gray, truth in frames_of(camera, rays, poses, n_frames=n_frames,
                                 motion=motion if case.moving else None,
                                 frame_step_s=args.frame_step_s,
                                 supersample=case.supersample, seed=args.seed + 2):
        start = truth + rng.uniform(-0.3, 0.3, truth.shape)
        for name, method in methods.items():
            t0 = time.perf_counter()
            corners, ok = method(gray, start, camera)
            seconds[name] += time.perf_counter() - t0
            errors[name].append(corners - truth)
            oks[name].append(ok & np.isfinite(corners).all(axis=(1, 2)))
    out = {}
    for name in methods:
        out[name] = split(np.array(errors[name]), np.array(oks[name]))
        out[name]["ms_per_frame"] = 1e3 * seconds[name] / n_frames
    return out


def refine_corners_at(ref: str) -> Method:
    """``refine_corners`` as it was at git revision ``ref`` of this repository (to compare
    the method before and after a change on the same frames)."""
    import subprocess
    import types

    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:rigtool/camera/aruco.py"],
                          check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f"aruco_at_{ref}")
    sys.modules[module.__name__] = module            # dataclasses look their module up
    exec(compile(text, f"{ref}:rigtool/camera/aruco.py", "exec"), module.__dict__)
    return module.refine_corners


def methods_to_compare(old_ref: str | None) -> dict[str, Method]:
    methods: dict[str, Method] = {"refine_corners": aruco.refine_corners}
    if old_ref:
        methods[f"refine_corners@{old_ref}"] = refine_corners_at(old_ref)
    methods["cv2.cornerSubPix"] = corner_subpix
    return methods


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=30, help="noise draws per static case")
    ap.add_argument("--moving-frames", type=int, default=24, help="frames per moving case")
    ap.add_argument("--frame-step-s", type=float, default=0.25,
                    help="time between the moving cases' frames (spans the vibration)")
    ap.add_argument("--nx", type=int, default=10)
    ap.add_argument("--ny", type=int, default=8)
    ap.add_argument("--angles", default="0,2,10,30")
    ap.add_argument("--no-moving", action="store_true")
    ap.add_argument("--supersample", type=int, default=8,
                    help="rays per pixel along each axis (the demo's 8)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--old", default=None, metavar="REV",
                    help="also run refine_corners as it was at this git revision")
    args = ap.parse_args()
    camera = demo_camera()
    rays = PixelRays(camera)
    angles = [float(a) for a in args.angles.split(",")]
    cases = [Case(f"static {a:g} deg", a, False, args.supersample) for a in angles]
    cases += [Case(f"static {a:g} deg, 16x16 rays", a, False, 16) for a in angles]
    if not args.no_moving:
        cases += [Case(f"moving {a:g} deg", a, True, args.supersample) for a in angles]
    motion = None if args.no_moving else demo_motion(args.moving_frames * args.frame_step_s)
    methods = methods_to_compare(args.old)
    print(f"{args.nx * args.ny} tags of {EDGE_M * 100:g} cm at {DISTANCE_M} m "
          f"({4 * args.nx * args.ny} corners) per case; {args.frames} frames static, "
          f"{args.moving_frames} moving ({args.frame_step_s} s apart)")
    print(f"{'case':28s} {'method':24s} {'bias px':>8s} {'shift px':>16s} {'own bias':>8s} "
          f"{'scatter px':>10s} {'max |mean|':>10s} {'failed':>7s} {'ms/frame':>8s}")
    for case in cases:
        t0 = time.perf_counter()
        res = run_case(case, camera, rays, methods, args, motion)
        for name, r in res.items():
            shift = "(" + ", ".join(f"{x:+.4f}" for x in r["common_px"]) + ")"
            print(f"{case.name:28s} {name:24s} {r['bias_px']:8.4f} {shift:>16s} "
                  f"{r['bias_own_px']:8.4f} {r['scatter_px']:10.4f} {r['max_mean_px']:10.4f} "
                  f"{r['failed']:7.1%} {r['ms_per_frame']:8.1f}", flush=True)
        print(f"  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
