"""The camera path: pose accuracy from simulated video, tracking speed, and camera
calibration accuracy.

1. Tracking accuracy and speed. The demo rig's platform (``rigtool.sim.rigs.demo_rig``, no
   load) vibrates freely in six DOF from an initial offset (a few mm, about 0.5 deg); a
   1280x1024 camera (50 deg horizontal field, barrel distortion) 1.5 m from the platform's
   centre, 50 deg above the horizontal, films it at 120 fps (1/500 s exposure with motion
   blur, 0.7 px optical blur, read and shot noise, 8-bit, raw Y800 video); eight 6 cm tags
   (DICT_4X4_50) lie on the platform's top face and four 8 cm tags on the floor in front
   set the lab frame. ``rigtool track``'s code (``track_video``) turns the video into a
   capture; the platform's pose is fitted to the tracked corners (Kabsch) and compared with
   the simulator's, in the camera's axes (x, y across the view, z along it), after taking
   out the lab frame's own (constant) error, which is reported apart. The RMS of each
   error is printed, raw and with its mean over the video removed (what the vibration
   fits see: a constant offset of the platform's pose does not change its dynamics).
   The per-corner covariance of the side file is checked against the actual corner
   errors.
2. Speed: wall and CPU time of ``track_video`` on the ``--frames`` frames (rendering not
   included), frames per second, peak resident memory.
3. Calibration: ``--views`` ChArUco views (9x7 squares of 40 mm, 30 mm markers) rendered
   through the same camera at 0.5-0.9 m, tilted up to 35 deg; ``rigtool camera
   calibrate``'s code; the focal lengths against the truth.

    nice python3 benchmarks/camera.py [--frames 3000] [--views 20] [--keep DIR]
                                     [--skip-calibration] [--seed 0] [--supersample 8]

The video (1.3 MB a frame: 3.9 GB for 3000 frames) is written to a temporary folder and
deleted unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigtool.camera.demo import demo_camera, platform_scene, write_scene_files  # noqa: E402
from rigtool.camera.simvideo import VideoSettings, render_video, true_markers  # noqa: E402
from rigtool.camera.tags import load_tags  # noqa: E402
from rigtool.camera.track import track_video  # noqa: E402
from rigtool.kinematics.pose import kabsch  # noqa: E402
from rigtool.mocap import read_capture  # noqa: E402
from rigtool.sim import dynamics as dyn  # noqa: E402
from rigtool.sim.rigs import demo_rig  # noqa: E402

RATE_HZ = 120.0


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def simulate_platform(n_frames: int):
    """The demo rig's free vibration, sampled at 120 Hz (plus margin for interpolation)."""
    rig, platform = demo_rig(spring_damping_n_s_m=2.0)
    system = dyn.System(rig, platform)
    offset = np.array([0.004, -0.003, 0.006, 0.008, -0.006, 0.005])
    traj = dyn.simulate(system, (n_frames + 2) / RATE_HZ, RATE_HZ, platform_offset=offset,
                        platform_velocity=np.array([0.0, 0.02, 0.0, 0.0, 0.0, 0.03]))
    return rig, traj


def pose_errors(capture_csv: Path, scene, track_json: dict, n_frames: int) -> dict:
    """Platform pose errors in the camera's axes, and the lab frame's own error."""
    data = read_capture(capture_csv)
    layout = scene.layout
    markers_body = layout.body_markers("platform")
    names = [f"platform:{m}" for m in markers_body]
    xyz = data.select(names)                                        # [T, K, 3] lab
    body = np.array(list(markers_body.values()))
    # back to the camera frame through the tracker's own lab frame (isolates the tracking)
    lab = track_json["lab_frame"]
    r_cl_est = np.array(lab["rotation_cam_lab"]) if lab.get("frame") == "body" else np.eye(3)
    t_cl_est = np.array(lab["translation_cam_lab_m"]) if lab.get("frame") == "body" \
        else np.zeros(3)
    xyz_cam = xyz @ r_cl_est.T + t_cl_est
    good = np.isfinite(xyz_cam).all(axis=2)
    rot_est, pos_est = kabsch(np.where(good[..., None], xyz_cam, 0.0), body,
                              good.astype(float))
    t = np.arange(n_frames) / RATE_HZ
    rot_true, pos_true = scene.motion["platform"].at(t)
    r_cl, t_cl = scene.camera_pose.rotation_cam_lab, scene.camera_pose.translation_cam_lab_m
    rot_true_cam = r_cl @ rot_true
    pos_true_cam = pos_true @ r_cl.T + t_cl
    seen = good.all(axis=1)
    d_pos = (pos_est - pos_true_cam)[seen]                          # [T, 3] camera axes
    d_rot = Rotation.from_matrix(rot_est[seen] @ np.swapaxes(rot_true_cam[seen], 1, 2)
                                 ).as_rotvec()

    def rms(a):
        return np.sqrt(np.mean(a ** 2, axis=0))

    lab_rot_err = Rotation.from_matrix(r_cl_est @ r_cl.T).as_rotvec()
    # the lab origin as the camera sees it, estimated vs true
    lab_pos_err = t_cl_est - t_cl
    # corner errors against the side file's predicted standard deviations
    truth = true_markers(layout, scene.motion, t, RATE_HZ).select(names)
    return {"frames_seen": int(seen.sum()),
            "position_rms_mm": (rms(d_pos) * 1e3).tolist(),
            "position_rms_dynamic_mm": (rms(d_pos - d_pos.mean(axis=0)) * 1e3).tolist(),
            "rotation_rms_deg": np.degrees(rms(d_rot)).tolist(),
            "rotation_rms_dynamic_deg": np.degrees(rms(d_rot - d_rot.mean(axis=0))).tolist(),
            "lab_frame_rotation_error_deg": np.degrees(lab_rot_err).tolist(),
            "lab_frame_origin_error_mm": (lab_pos_err * 1e3).tolist(),
            # corner errors in the lab's axes, without the lab frame's own error
            "_corner_err_lab": ((xyz_cam - (truth @ r_cl.T + t_cl)) @ r_cl_est)[seen]}


def covariance_check(residuals_csv: Path, corner_err_lab: np.ndarray, names: list[str],
                     seen: np.ndarray) -> dict:
    """Mean ``e^T C^-1 e`` per corner (3 for an honest covariance), of the corner errors as
    they are and with each corner's mean error over the video removed (its constant bias:
    what the vibration fits see)."""
    import pandas as pd

    cols = [f"{m}_c{c}" for m in names for c in ("xx", "yy", "zz", "yz", "zx", "xy")]
    table = pd.read_csv(residuals_csv, usecols=cols).to_numpy()[seen]
    c6 = table.reshape(len(table), len(names), 6)
    cov = np.empty(c6.shape[:2] + (3, 3))
    for k, (i, j) in enumerate(((0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1))):
        cov[..., i, j] = c6[..., k]
        cov[..., j, i] = c6[..., k]
    inv = np.linalg.inv(cov)
    e = corner_err_lab
    d = e - e.mean(axis=0)
    return {"mahalanobis2_total": float(np.einsum("tki,tkij,tkj->tk", e, inv, e).mean()),
            "mahalanobis2_mean_removed": float(np.einsum("tki,tkij,tkj->tk", d, inv, d).mean()),
            "expected": 3.0}


def tracking(args, work: Path) -> dict:
    rig, traj = simulate_platform(args.frames)
    scene = platform_scene(traj, rig.platform.markers_platform, camera=demo_camera())
    cam_file, tags_file = write_scene_files(work, scene)
    video = work / "platform.avi"
    if not video.exists():
        t0 = time.perf_counter()
        render_video(video, scene.camera, scene.camera_pose, scene.layout, scene.motion,
                     rate_hz=RATE_HZ, n_frames=args.frames,
                     settings=VideoSettings(supersample=args.supersample),
                     seed=args.seed,
                     progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True))
        print(f"rendered {args.frames} frames in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
    layout = load_tags(tags_file)
    out = work / "capture.csv"
    mem0 = _peak_mib()
    c0, w0 = time.process_time(), time.perf_counter()
    result = track_video(video, scene.camera, layout, out, camera_file=cam_file)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    summary = json.loads((work / "capture.track.json").read_text())
    errors = pose_errors(out, scene, summary, result.n_frames)
    names = [f"platform:{m}" for m in layout.body_markers("platform")]
    data = read_capture(out)
    seen = np.isfinite(data.select(names)).all(axis=(1, 2))
    cov = covariance_check(work / "capture.residuals.csv", errors.pop("_corner_err_lab"),
                           names, seen)
    return {"frames": result.n_frames, "wall_s": wall, "cpu_s": cpu,
            "frames_per_s_wall": result.n_frames / wall,
            "peak_mib_before": mem0, "peak_mib_after": _peak_mib(),
            "image_noise_px": result.sigma_px,
            "corner_std_lateral_mm": result.lateral_std_m["platform"] * 1e3,
            "corner_std_depth_mm": result.depth_std_m["platform"] * 1e3,
            "seen_fraction": result.seen_fraction["platform"], **errors, "covariance": cov}


def calibration(args) -> dict:
    from rigtool.camera.intrinsics import BoardSpec, View, calibrate, detect_views
    from rigtool.camera.simvideo import board_poses, render_board_views

    cam = demo_camera()
    spec = BoardSpec((9, 7), 0.04, 0.03, "DICT_4X4_50")
    poses = board_poses(cam, spec, args.views, seed=args.seed + 1)
    t0 = time.perf_counter()
    images = render_board_views(cam, spec, poses, settings=VideoSettings(supersample=6),
                                seed=args.seed + 2)
    t_render = time.perf_counter() - t0
    views = [v for v in detect_views([(f"view{i}", g) for i, g in enumerate(images)], spec)
             if isinstance(v, View)]
    t0 = time.perf_counter()
    res = calibrate(views, cam.image_size)
    t_cal = time.perf_counter() - t0
    k_true, k = cam.matrix, res.camera.matrix
    return {"views_rendered": args.views, "views_used": len(views), "render_s": t_render,
            "calibrate_s": t_cal, "rms_px": res.rms_px,
            "fx_error_pct": 100 * (k[0, 0] / k_true[0, 0] - 1),
            "fy_error_pct": 100 * (k[1, 1] / k_true[1, 1] - 1),
            "fx_std_pct": 100 * res.std["fx"] / k_true[0, 0],
            "cx_error_px": k[0, 2] - k_true[0, 2], "cy_error_px": k[1, 2] - k_true[1, 2],
            "k1_true_est": [float(cam.distortion[0]), float(res.camera.distortion[0])],
            "coverage": res.coverage, "warnings": res.warnings}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=3000)
    ap.add_argument("--views", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--supersample", type=int, default=8,
                    help="rays per pixel along each axis of the tracked video (the demo's 8; "
                         "16 takes the renderer's own sampling error of about 0.02 px at "
                         "some edge angles out, see benchmarks/corner_bias.py)")
    ap.add_argument("--keep", type=Path, default=None, help="folder for the video (reused)")
    ap.add_argument("--skip-calibration", action="store_true")
    ap.add_argument("--skip-tracking", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    figures = {}
    if not args.skip_tracking:
        work = args.keep or Path(tempfile.mkdtemp(prefix="rigtool-camera-"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            tr = tracking(args, work)
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
        figures["tracking"] = tr
        print(f"tracking: {tr['frames']} frames 1280x1024 in {tr['wall_s']:.1f} s wall, "
              f"{tr['cpu_s']:.1f} s CPU ({tr['frames_per_s_wall']:.0f} frames/s); peak memory "
              f"{tr['peak_mib_after']:.0f} MiB (before tracking {tr['peak_mib_before']:.0f})")
        print(f"  image noise (pooled residual) {tr['image_noise_px']:.3f} px; platform seen "
              f"in {tr['seen_fraction']:.1%} of the frames")
        fmt = lambda v, d=4: "[" + ", ".join(f"{x:.{d}f}" for x in v) + "]"  # noqa: E731
        print(f"  platform position error, camera axes x, y (image plane), z (depth), mm: "
              f"RMS {fmt(tr['position_rms_mm'])}, mean removed "
              f"{fmt(tr['position_rms_dynamic_mm'])}")
        print(f"  platform rotation error about camera x, y, z, deg: RMS "
              f"{fmt(tr['rotation_rms_deg'], 5)}, mean removed "
              f"{fmt(tr['rotation_rms_dynamic_deg'], 5)}")
        print(f"  lab frame (floor board) error: rotation {fmt(tr['lab_frame_rotation_error_deg'])}"
              f" deg, origin {fmt(tr['lab_frame_origin_error_mm'], 3)} mm (camera axes)")
        print(f"  corner std from the side file (median): {tr['corner_std_lateral_mm']:.4f} mm "
              f"across the view, {tr['corner_std_depth_mm']:.4f} mm along it; mean "
              f"e'C^-1e per corner {tr['covariance']['mahalanobis2_total']:.2f}, with each "
              f"corner's constant bias removed {tr['covariance']['mahalanobis2_mean_removed']:.2f}"
              " (3 if the covariance were exact)")
    if not args.skip_calibration:
        cal = calibration(args)
        figures["calibration"] = cal
        print(f"calibration: {cal['views_used']}/{cal['views_rendered']} ChArUco views, RMS "
              f"{cal['rms_px']:.3f} px; fx error {cal['fx_error_pct']:+.4f} % (std "
              f"{cal['fx_std_pct']:.4f} %), fy error {cal['fy_error_pct']:+.4f} %, principal "
              f"point error ({cal['cx_error_px']:+.2f}, {cal['cy_error_px']:+.2f}) px; "
              f"coverage {cal['coverage']:.0%}; calibrateCamera {cal['calibrate_s']:.1f} s")
        for w in cal["warnings"]:
            print(f"  warning: {w}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
