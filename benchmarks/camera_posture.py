"""A locked posture's COM and inertia with a camera's noise.

1. ``--part noise``: isotropic vs whitened output-error fits under anisotropic marker noise
   of a known covariance. The demo rig carries the demo object (``rigtool.camera.demo.
   locked_object``: 45 kg box, products of inertia) in a locked posture; the platform's four
   markers and four markers on the object's top face (its base-link markers, so the base
   link's pose on the platform is fitted too) are seen with noise whose standard deviation
   is ``--lateral-mm`` across the line of sight of the demo camera (1.5 m away, 50 deg above
   the horizontal) and ``--depth-ratio`` times that along it, independently per marker and
   frame. For each of ``--draws`` noise draws the posture is fitted twice from the same
   start: assuming isotropic noise (rigtool's default) and whitened by the covariance. The
   rig is the true one (no calibration error), so the errors are the marker noise's.
   Printed: RMS error of the COM (mm) and of the inertia tensor's six entries (% of the
   largest principal moment), the mean reported standard error, and the coverage of
   +-2 reported standard errors (95 % when they are right).
2. ``--part video``: the same posture filmed. ``--seconds`` of 120 fps 1280x1024 video
   rendered through the demo camera (``rigtool.camera.simvideo``; 6 cm DICT_4X4_50 tags:
   eight on the platform, six on the object (``box_tags``: four on its top face, two on its
   front), four on the floor for the lab frame), tracked by ``rigtool track``'s code, and the
   posture fitted to the tracked corners (platform corners, the object's corners as its
   base-link markers) with isotropic noise and whitened by the side file's per-frame
   covariance. Against it: optical motion capture of the same points with isotropic noise
   at the camera's measured noise (the RMS per-coordinate standard deviation of the side
   file's covariances), ``--mocap-draws`` draws fitted as rigtool fits mocap. The video fits'
   standard errors: ``--standard-errors`` (default independent, as first measured; "frame":
   clustered by frame, with the scores' autocorrelation printed).
3. ``--part correlated``: the camera's error structure without rendering video (one pose
   error per body and frame applied to all its corners, benchmarks/_camera_correlated.py):
   coverage of the Gauss-Newton standard errors (independent markers) and of the
   frame-clustered sandwich, for the isotropic and the per-corner whitened fit.
4. ``--part calibrated``: the posture from video on a rig calibrated from video of the
   same camera set-up (the lab frame fitted with it), against mocap on a rig calibrated
   from mocap (benchmarks/_camera_calibrated.py).
5. ``--part offsets``: what a constant error of every marker does (noise-free mocap of the
   posture of part 1 at 120 Hz, shifted by 0.05 mm along x or z or turned by 0.008 deg about
   the lab's x: the floor board's lab-frame error and the corners' constant errors).

    nice python3 benchmarks/camera_posture.py --part noise [--draws 20]
    nice python3 benchmarks/camera_posture.py --part video [--seconds 10] [--keep DIR]
    nice python3 benchmarks/camera_posture.py --part offsets
    nice python3 benchmarks/camera_posture.py --part correlated [--draws 20] [--pose-ar1 0.5]
    nice python3 benchmarks/camera_posture.py --part calibrated [--seconds 10] [--keep DIR]

The video (1.3 MB a frame) goes to a temporary folder, deleted unless ``--keep`` (reused).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigtool.camera.demo import box_tags, locked_object, platform_scene  # noqa: E402
from rigtool.engine.whiten import MarkerCovariance  # noqa: E402
from rigtool.identify.posture.equation_error import PostureResult  # noqa: E402
from rigtool.identify.posture.output_error import refine_posture  # noqa: E402
from rigtool.inertia import InertialParams  # noqa: E402
from rigtool.sim.dynamics import FixedBody, System, simulate  # noqa: E402
from rigtool.sim.markers import MarkerSet, synthesize_markers  # noqa: E402
from rigtool.sim.rigs import demo_rig  # noqa: E402

OFFSET = np.array([0.012, -0.01, 0.008, 0.03, -0.025, 0.03])
VELOCITY = np.array([0.02, 0.02, -0.01, 0.05, -0.05, 0.05])
_TRIU = np.triu_indices(3)


def posture_system(damping: float = 6.0):
    obj = locked_object()
    rig, platform = demo_rig(spring_damping_n_s_m=damping)
    return obj, System(rig=rig, platform_params=platform,
                       fixed=(FixedBody("obj", obj.params, obj.rotation_platform,
                                        obj.position_platform_m),))


def start_of(obj) -> PostureResult:
    """A start 1 mm and 1 % off (a stand-in for the equation-error fit: the output-error
    optimum does not depend on it)."""
    com0 = obj.params.com + np.array([1e-3, -1e-3, 1e-3])
    i0 = obj.params.inertia_com * 1.01
    p = InertialParams.from_com(obj.params.mass, com0, i0)
    z3, z9 = np.zeros(3), np.zeros((3, 3))
    return PostureResult("p", obj.params.mass, com0, z3, i0, z9, p, np.eye(9), np.eye(12), p,
                         {}, np.zeros((1, 6)), np.zeros((1, 6)), np.zeros(1), "exact", "noise",
                         [])


def fit(system, obj, data, platform_markers, base_markers, cov=None, **kwargs):
    off = Rotation.from_rotvec(np.deg2rad([0.5, -0.3, 0.2])).as_matrix()
    return refine_posture(system.rig, system.platform_params, data,
                          base_rotation_platform=obj.rotation_platform @ off,
                          base_position_platform=obj.position_platform_m + 1e-3,
                          total_mass_kg=obj.params.mass, start=start_of(obj),
                          markers_platform=platform_markers, base_markers=base_markers,
                          marker_covariance=cov, **kwargs)


def errors(res, obj) -> tuple[np.ndarray, np.ndarray]:
    """``(error [9], reported std [9])``: COM (m) and the inertia's six entries (kg m^2)."""
    e = np.concatenate([res.com - obj.params.com,
                        (res.inertia_com - obj.params.inertia_com)[_TRIU]])
    sd = np.concatenate([res.com_std, res.inertia_com_std[_TRIU]])
    return e, sd


def summary(label: str, errs: list, sds: list, i_max: float) -> dict:
    e, sd = np.array(errs), np.array(sds)
    scale = np.r_[np.full(3, 1e3), np.full(6, 100 / i_max)]
    cover = np.abs(e) <= 2 * sd
    out = {"label": label, "rms": np.sqrt((e ** 2).mean(0)) * scale,
           "sd": sd.mean(0) * scale, "cover_com": cover[:, :3].mean(),
           "cover_inertia": cover[:, 3:].mean(), "z_rms": float(np.sqrt(((e / sd) ** 2).mean()))}
    print(f"  {label:28s} COM RMS error x,y,z mm {_fmt(out['rms'][:3])}, mean reported std "
          f"{_fmt(out['sd'][:3])}")
    print(f"  {'':28s} inertia RMS error (xx xy xz yy yz zz) % {_fmt(out['rms'][3:], 3)}, "
          f"mean std {_fmt(out['sd'][3:], 3)}")
    print(f"  {'':28s} coverage of +-2 std: COM {100 * out['cover_com']:.0f} %, inertia "
          f"{100 * out['cover_inertia']:.0f} %; RMS of error/std {out['z_rms']:.2f}")
    return out


def _fmt(v, d=4):
    return "[" + ", ".join(f"{x:.{d}f}" for x in v) + "]"


def ray_covariance(points_lab: np.ndarray, eye_lab: np.ndarray, lateral_m: float,
                   depth_m: float) -> np.ndarray:
    """``[K, 3, 3]``: std ``depth_m`` along the ray from ``eye`` to each point, ``lateral_m``
    across it."""
    d = points_lab - eye_lab
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    dd = d[:, :, None] * d[:, None, :]
    return lateral_m ** 2 * (np.eye(3) - dd) + depth_m ** 2 * dd


def part_noise(args) -> None:
    obj, system = posture_system()
    rate = 100.0
    traj = simulate(system, args.noise_seconds, rate, platform_offset=OFFSET,
                    platform_velocity=VELOCITY)
    top = {f"o{k + 1}": t.position_body_m for k, t in
           enumerate(box_tags("obj", obj.box_centre_m, obj.box_size_m)[:4])}
    plat = system.rig.platform.markers_platform
    sets = [MarkerSet("platform", plat), MarkerSet("obj", top)]
    clean = synthesize_markers(traj, sets, noise_sigma_m=0.0, rate_hz=rate)
    target = traj.position_m["platform"].mean(0)
    el = np.radians(50.0)
    eye = target + 1.5 * np.array([0.0, -np.cos(el), np.sin(el)])
    lat = args.lateral_mm * 1e-3
    cov = ray_covariance(np.nanmean(clean.xyz_m, 0), eye, lat, lat * args.depth_ratio)
    chol = np.linalg.cholesky(cov)
    mc = MarkerCovariance(clean.names, cov, "known")
    i_max = np.linalg.eigvalsh(obj.params.inertia_com)[-1]
    print(f"noise: {args.draws} draws, {args.noise_seconds:.0f} s at {rate:.0f} Hz, 4 platform + 4 "
          f"object markers, std {args.lateral_mm} mm across the camera's line of sight, "
          f"{args.lateral_mm * args.depth_ratio:.3f} mm along it")
    res = {"isotropic": ([], []), "whitened": ([], [])}
    times = {"isotropic": [], "whitened": []}
    for draw in range(args.draws):
        rng = np.random.default_rng(700 + draw)
        noise = np.einsum("kij,tkj->tki", chol, rng.normal(size=clean.xyz_m.shape))
        data = replace(clean, xyz_m=clean.xyz_m + noise)
        for label, c in (("isotropic", None), ("whitened", mc)):
            t0 = time.process_time()
            r = fit(system, obj, data, plat, top, c)
            times[label].append(time.process_time() - t0)
            e, sd = errors(r, obj)
            res[label][0].append(e)
            res[label][1].append(sd)
        print(f"  draw {draw + 1}/{args.draws} done", file=sys.stderr, flush=True)
    for label in res:
        summary(f"{label} (fit {np.median(times[label]):.1f} s CPU)", *res[label], i_max)


def part_video(args) -> None:
    from rigtool.camera.covariance_file import read_marker_covariance, side_file_of
    from rigtool.camera.demo import write_scene_files
    from rigtool.camera.simvideo import VideoSettings, render_video, true_markers
    from rigtool.camera.tags import load_tags
    from rigtool.camera.track import track_video
    from rigtool.mocap import read_capture

    rate = 120.0
    n = int(round(args.seconds * rate))
    obj, system = posture_system(damping=args.damping)
    traj = simulate(system, (n + 2) / rate, rate, platform_offset=OFFSET,
                    platform_velocity=VELOCITY)
    tags = box_tags("obj", obj.box_centre_m, obj.box_size_m)
    scene = platform_scene(traj, system.rig.platform.markers_platform, link_tags=tags)
    work = args.keep or Path(tempfile.mkdtemp(prefix="rigtool-camera-posture-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        cam_file, tags_file = write_scene_files(work, scene)
        video = work / "posture.avi"
        if not video.exists():
            t0 = time.perf_counter()
            render_video(video, scene.camera, scene.camera_pose, scene.layout, scene.motion,
                         rate_hz=rate, n_frames=n,
                         settings=VideoSettings(supersample=args.supersample), seed=args.seed,
                         progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True))
            print(f"rendered {n} frames in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        layout = load_tags(tags_file)
        out = work / "posture.csv"
        t0 = time.perf_counter()
        tr = track_video(video, scene.camera, layout, out, camera_file=cam_file)
        t_track = time.perf_counter() - t0
        data = read_capture(out)
        cov = read_marker_covariance(side_file_of(out), n_frames=data.n_frames)
        lab = json.loads((work / "posture.track.json").read_text())["lab_frame"]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    plat = {f"platform:{m}": v for m, v in layout.body_markers("platform").items()}
    base = {f"obj:{m}": v for m, v in layout.body_markers("obj").items()}
    seen = np.isfinite(data.xyz_m).all(-1)
    tr_c = np.trace(cov.cov_m2, axis1=-2, axis2=-1)[seen]
    sigma_cam = float(np.sqrt(np.mean(tr_c) / 3))
    print(f"video: {n} frames ({args.seconds:g} s at 120 fps), tracked in {t_track:.0f} s; "
          f"image noise {tr.sigma_px:.3f} px; seen: platform {tr.seen_fraction['platform']:.1%},"
          f" object {tr.seen_fraction['obj']:.1%}")
    print(f"  corner std (side file, median): platform {1e3 * tr.lateral_std_m['platform']:.4f}"
          f" mm across / {1e3 * tr.depth_std_m['platform']:.4f} mm along the view; object "
          f"{1e3 * tr.lateral_std_m['obj']:.4f} / {1e3 * tr.depth_std_m['obj']:.4f} mm; RMS "
          f"per coordinate {1e3 * sigma_cam:.4f} mm (the mocap comparison's noise)")
    i_max = np.linalg.eigvalsh(obj.params.inertia_com)[-1]
    # the same capture in the true lab frame: the floor board's own error taken out
    r_est, t_est = np.array(lab["rotation_cam_lab"]), np.array(lab["translation_cam_lab_m"])
    r_cl, t_cl = scene.camera_pose.rotation_cam_lab, scene.camera_pose.translation_cam_lab_m
    turn = r_cl.T @ r_est
    data_true = replace(data, xyz_m=data.xyz_m @ turn.T + r_cl.T @ (t_est - t_cl))
    cov_true = replace(cov, cov_m2=turn @ cov.cov_m2 @ turn.T)
    err_rot = np.degrees(Rotation.from_matrix(turn).as_rotvec())
    print(f"  lab frame from the floor board: rotation error {_fmt(err_rot, 4)} deg, origin "
          f"error {_fmt(1e3 * r_cl.T @ (t_est - t_cl), 4)} mm (lab axes)")
    # and without each corner's constant error (sub-pixel bias of its edge fits): what is left
    # is the tracking's frame-to-frame noise, what the mocap comparison has
    truth = true_markers(layout, scene.motion, np.arange(n) / rate, rate).select(data.names)
    bias = np.nanmean(data_true.xyz_m - truth, axis=0)
    data_nb = replace(data_true, xyz_m=data_true.xyz_m - bias)
    # only the platform corners' constant errors removed: what a rig calibrated from
    # captures of the same camera set-up would absorb, if it absorbed all of the platform's
    # constant pose error (an assumption; the object's corners keep theirs)
    plat_cols = np.array([data.index(k) for k in plat])
    bias_p = np.zeros_like(bias)
    bias_p[plat_cols] = bias[plat_cols]
    data_pb = replace(data_true, xyz_m=data_true.xyz_m - bias_p)
    b_plat = np.sqrt(np.mean(bias[[data.index(k) for k in plat]] ** 2, axis=0))
    print(f"  corners' constant errors (RMS over the platform's corners, lab x, y, z): "
          f"{_fmt(1e3 * b_plat)} mm")
    figures = {}
    for label, d, c in (("video, isotropic", data, None), ("video, whitened", data, cov),
                        ("video, true lab, isotropic", data_true, None),
                        ("video, true lab, whitened", data_true, cov_true),
                        ("video, true lab, platform bias out, isotropic", data_pb, None),
                        ("video, true lab, platform bias out, whitened", data_pb, cov_true),
                        ("video, true lab, no bias, isotropic", data_nb, None),
                        ("video, true lab, no bias, whitened", data_nb, cov_true)):
        t0 = time.process_time()
        r = fit(system, obj, d, plat, base, c, standard_errors=args.standard_errors,
                cluster_frames=args.cluster_frames)
        e, sd = errors(r, obj)
        print(f"  ({label}: fit {time.process_time() - t0:.0f} s CPU, marker residual "
              f"{r.marker_sigma_mm:.4f} mm, noise scale {r.noise_scale:.2f}, standard "
              f"errors {r.standard_errors})")
        if r.se_score_autocorrelation is not None:
            print(f"  (scores' autocorrelation, lags 1-5: "
                  f"{_fmt(r.se_score_autocorrelation[1:6], 3)}, +-{2 / np.sqrt(n):.3f} for "
                  f"independent frames; SE precision {100 * r.se_rel_precision:.0f} %)")
        figures[label] = summary(label, [e], [sd], i_max)
    # optical mocap of the same points, isotropic noise at the camera's measured noise
    sets = [MarkerSet("platform", {k[len("platform:"):]: v for k, v in plat.items()}),
            MarkerSet("obj", {k[len("obj:"):]: v for k, v in base.items()})]
    pm = {k[len("platform:"):]: v for k, v in plat.items()}
    bm = {k[len("obj:"):]: v for k, v in base.items()}
    errs, sds = [], []
    for draw in range(args.mocap_draws):
        m = synthesize_markers(traj, sets, noise_sigma_m=sigma_cam,
                               rng=np.random.default_rng(900 + draw), rate_hz=rate)
        m = replace(m, time_s=m.time_s[:n], xyz_m=m.xyz_m[:n])
        r = fit(system, obj, m, pm, bm)
        e, sd = errors(r, obj)
        errs.append(e)
        sds.append(sd)
    mocap = summary(f"mocap, {args.mocap_draws} draws", errs, sds, i_max)
    # and at a typical optical-mocap noise, for scale
    e01, s01 = [], []
    for draw in range(3):
        m = synthesize_markers(traj, sets, noise_sigma_m=1e-4,
                               rng=np.random.default_rng(950 + draw), rate_hz=rate)
        m = replace(m, time_s=m.time_s[:n], xyz_m=m.xyz_m[:n])
        e, sd = errors(fit(system, obj, m, pm, bm), obj)
        e01.append(e)
        s01.append(sd)
    summary("mocap at 0.1 mm, 3 draws", e01, s01, i_max)
    print("ratios (video error / mocap RMS error at the camera's noise):")
    for label in figures:
        v = figures[label]["rms"]
        ratio = v / mocap["rms"]
        print(f"  {label}: error / mocap RMS error, COM {_fmt(ratio[:3], 2)}, inertia "
              f"{_fmt(ratio[3:], 2)}; COM |error| {np.linalg.norm(v[:3]):.4f} mm "
              f"vs mocap RMS {np.linalg.norm(mocap['rms'][:3]):.4f} mm")


def part_offsets(args) -> None:
    obj, system = posture_system(damping=args.damping)
    traj = simulate(system, 5.0, 120.0, platform_offset=OFFSET, platform_velocity=VELOCITY)
    top = {f"o{k + 1}": t.position_body_m for k, t in
           enumerate(box_tags("obj", obj.box_centre_m, obj.box_size_m)[:4])}
    plat = system.rig.platform.markers_platform
    clean = synthesize_markers(traj, [MarkerSet("platform", plat), MarkerSet("obj", top)],
                               noise_sigma_m=0.0, rate_hz=120.0)
    i_max = np.linalg.eigvalsh(obj.params.inertia_com)[-1]
    print("offsets: noise-free markers, 5 s at 120 Hz, every marker moved alike")
    for label, shift, turn in (("none", np.zeros(3), np.zeros(3)),
                               ("0.05 mm along x", np.array([5e-5, 0, 0]), np.zeros(3)),
                               ("0.05 mm along z", np.array([0, 0, 5e-5]), np.zeros(3)),
                               ("0.008 deg about x", np.zeros(3),
                                np.array([np.radians(0.008), 0, 0]))):
        rot = Rotation.from_rotvec(turn).as_matrix()
        d = replace(clean, xyz_m=clean.xyz_m @ rot.T + shift)
        e, _ = errors(fit(system, obj, d, plat, top), obj)
        print(f"  {label:18s} COM error mm {_fmt(1e3 * e[:3])} (|.| "
              f"{1e3 * np.linalg.norm(e[:3]):.4f}); inertia error % {_fmt(100 * e[3:] / i_max, 3)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("noise", "video", "offsets", "correlated", "calibrated"),
                    required=True)
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--noise-seconds", type=float, default=6.0)
    ap.add_argument("--lateral-mm", type=float, default=0.05)
    ap.add_argument("--depth-ratio", type=float, default=7.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--damping", type=float, default=2.0)
    ap.add_argument("--mocap-draws", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=2, help="calibrated: videos rendered at once")
    ap.add_argument("--calibration-standard-errors", choices=("independent", "frame"),
                    default="frame", help="calibrated: the video calibrations' (rigtool "
                    "calibrate clusters them by frame for tracked captures)")
    ap.add_argument("--video-draws", type=int, default=1,
                    help="calibrated: noise draws of the whole set of videos (each rendered "
                         "with its own sensor noise; the first in --keep, the others in "
                         "--keep/drawK)")
    ap.add_argument("--per-video-lab-frame", dest="one_lab_frame", action="store_false",
                    help="calibrated: each video sets its own lab frame (default: the first "
                         "sets it for all, rigtool track --lab-frame)")
    ap.add_argument("--image-noise-px", type=float, default=0.033,
                    help="correlated: image noise per corner coordinate (the video's)")
    ap.add_argument("--corner-mm", type=float, default=0.0,
                    help="correlated: independent per-corner noise, mm")
    ap.add_argument("--pose-ar1", type=float, default=0.0,
                    help="correlated: pose errors' correlation from frame to frame")
    ap.add_argument("--cluster-frames", type=int, default=1,
                    help="correlated, video: consecutive frames per cluster of the sandwich")
    ap.add_argument("--substeps", type=int, default=1,
                    help="correlated: the fit's RK4 steps per frame")
    ap.add_argument("--supersample", type=int, default=8,
                    help="video: rays per pixel side of the renderer (8: 64 rays; 16 "
                         "removes most of the renderer's own corner error, at 4x the "
                         "rendering time)")
    ap.add_argument("--standard-errors", choices=("auto", "independent", "frame"),
                    default="independent",
                    help="video: the video fits' standard errors (mocap: independent)")
    args = ap.parse_args()
    if args.part == "noise":
        part_noise(args)
    elif args.part == "offsets":
        part_offsets(args)
    elif args.part == "correlated":
        from _camera_correlated import part_correlated
        part_correlated(args, posture_system, fit, errors, summary, OFFSET, VELOCITY)
    elif args.part == "calibrated":
        from _camera_calibrated import part_calibrated
        part_calibrated(args, posture_system, fit, errors, summary, OFFSET, VELOCITY, _fmt)
    else:
        part_video(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
