"""``camera_posture.py --part calibrated``: the posture from video on a rig calibrated from
video of the same camera set-up, against mocap on a rig calibrated from mocap.

The demo rig (damping ``--damping``) is calibrated from four captures of ``--seconds`` each:
the empty platform and three boxes of known inertia bolted at known places
(:func:`calibration_loads`), each started from its own offset. Each capture and the locked
posture of ``--part video`` are rendered through the demo camera (one set-up: camera and
floor board unmoved, ``--supersample`` rays per pixel side; the boxes carry no tags, only the
platform's eight and the floor board's four are filmed), tracked by ``rigtool track``'s code,
and the rig calibrated by output error from the tracked platform corners, with the measured
lab frame against the rig's fitted too (``refine_calibration(fit_frame=True)``) and, for
comparison, without it. The posture is then fitted on each calibrated rig and on the true
one. Against it: ``--mocap-draws`` draws of optical mocap of the same points (the platform
corners and the object's) with isotropic noise at the camera's measured noise, each
calibrating the rig from its own noisy calibration captures (in the rig's own frame, as a
mocap system that measured the anchors) and fitting the posture on it; and the camera's own
error structure without video (:func:`camera_noise_reference`): what the video could reach
if rendering, corner detection and the floor board added nothing. ``--video-draws``: noise
draws of the whole set of videos (the first in ``--keep``, the others in ``--keep/drawK``).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.inertia import InertialParams
from rigtool.sim.dynamics import FixedBody, System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import box_inertia

RATE_HZ = 120.0


def calibration_loads() -> list[tuple[str, tuple | None]]:
    """The calibration captures' loads: name -> (mass kg, box size m, position on the
    platform m, rotation vector rad) or None for the empty platform."""
    return [("empty", None),
            ("box_a", (20.0, (0.4, 0.3, 0.2), np.array([0.3, 0.1, 0.12]), np.zeros(3))),
            ("box_b", (15.0, (0.5, 0.2, 0.3), np.array([-0.25, -0.1, 0.17]),
                       np.array([0.0, 0.0, 0.6]))),
            ("box_c", (25.0, (0.3, 0.3, 0.3), np.array([0.0, 0.15, 0.17]),
                       np.array([0.3, 0.0, 0.0])))]


def simulate_calibration(rig, platform, seconds: float, offset, velocity):
    """``[(name, trajectory, load about the platform origin)]`` of the calibration captures,
    each from its own initial offset and velocity."""
    offs = [offset, offset[[1, 2, 0, 4, 5, 3]], -offset, offset * [1, -1, 1, -1, 1, -1]]
    vels = [velocity, -velocity, velocity[[2, 0, 1, 5, 3, 4]], 0.5 * velocity]
    out = []
    for (name, spec), o, v in zip(calibration_loads(), offs, vels):
        fixed, load = (), InertialParams(np.zeros(10))
        if spec is not None:
            mass, size, pos, rv = spec
            rot = Rotation.from_rotvec(rv).as_matrix()
            body = InertialParams.from_com(mass, np.zeros(3), box_inertia(mass, size))
            fixed, load = (FixedBody(name, body, rot, pos),), body.transformed(rot, pos)
        traj = simulate(System(rig=rig, platform_params=platform, fixed=fixed),
                        seconds + 2 / RATE_HZ, RATE_HZ, platform_offset=o, platform_velocity=v)
        out.append((name, traj, load))
    return out


def _render(job) -> float:
    from rigtool.camera.simvideo import VideoSettings, render_video
    path, scene, n, supersample, seed = job
    t0 = time.perf_counter()
    render_video(path, scene.camera, scene.camera_pose, scene.layout, scene.motion,
                 rate_hz=RATE_HZ, n_frames=n, settings=VideoSettings(supersample=supersample),
                 seed=seed)
    return time.perf_counter() - t0


def start_rig(rig, platform):
    """The calibration's start: the true rig 1-2 % and a few mm off (a stand-in for the
    equation-error calibration; the output-error optimum does not depend on it)."""
    springs = tuple(replace(s, stiffness=1.01 * s.stiffness, free_length=s.free_length + 1e-3)
                    for s in rig.springs)
    plat0 = InertialParams.from_com(1.01 * platform.mass, platform.com + 2e-3,
                                    1.02 * platform.inertia_com)
    return replace(rig, springs=springs), plat0


def _track_draw(args, scenes: dict, work: Path, seed: int, fmt) -> dict:
    """Render (unless there) and track every capture of one noise draw in ``work``: the
    first calibration capture sets the lab frame for all (``rigtool track --lab-frame``)."""
    from rigtool.camera.capture_files import read_lab_frame
    from rigtool.camera.covariance_file import read_marker_covariance, side_file_of
    from rigtool.camera.demo import write_scene_files
    from rigtool.camera.tags import load_tags
    from rigtool.camera.track import track_video
    from rigtool.mocap import read_capture

    n = int(round(args.seconds * RATE_HZ))
    work.mkdir(parents=True, exist_ok=True)
    cam_file, tags_file = write_scene_files(work, scenes["posture"])
    jobs = [(work / f"{k}.avi", s, n, args.supersample, seed + i)
            for i, (k, s) in enumerate(scenes.items()) if not (work / f"{k}.avi").exists()]
    if jobs:
        t0 = time.perf_counter()
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            cpu = sum(pool.map(_render, jobs))
        print(f"rendered {len(jobs)} videos of {n} frames in "
              f"{time.perf_counter() - t0:.0f} s ({cpu:.0f} s summed)", file=sys.stderr)
    layout = load_tags(tags_file)
    lab_frame, tracked = None, {}
    for k, s in [*list(scenes.items())[1:], ("posture", scenes["posture"])]:
        out = work / f"{k}.csv"
        t0 = time.perf_counter()
        tr = track_video(work / f"{k}.avi", s.camera, layout, out, camera_file=cam_file,
                         lab_frames_s=args.seconds, lab_frame=lab_frame)
        if lab_frame is None and args.one_lab_frame:
            lab_frame = read_lab_frame(work / f"{k}.track.json", camera_file=cam_file)
        data = read_capture(out)
        cov = read_marker_covariance(side_file_of(out), n_frames=data.n_frames)
        lab = json.loads((work / f"{k}.track.json").read_text())["lab_frame"]
        tracked[k] = (data, cov, tr, lab)
        print(f"  tracked {k} in {time.perf_counter() - t0:.0f} s: image noise "
              f"{tr.sigma_px:.3f} px, platform seen {tr.seen_fraction['platform']:.1%}")
    r_cl = scenes["posture"].camera_pose.rotation_cam_lab
    t_cl = scenes["posture"].camera_pose.translation_cam_lab_m
    for k, (_, _, _, lb) in tracked.items():
        turn = r_cl.T @ np.array(lb["rotation_cam_lab"])
        shift = r_cl.T @ (np.array(lb["translation_cam_lab_m"]) - t_cl)
        print(f"  {k}: lab frame from the floor board off by "
              f"{fmt(np.degrees(Rotation.from_matrix(turn).as_rotvec()), 5)} deg, "
              f"{fmt(1e3 * shift)} mm")
    return {"tracked": tracked, "layout": layout}


def part_calibrated(args, posture_system, fit, errors, summary, offset, velocity, fmt) -> None:
    from rigtool.camera.demo import box_tags, platform_scene
    from rigtool.identify.calibration.output_error import OECapture, refine_calibration

    n = int(round(args.seconds * RATE_HZ))
    obj, system = posture_system(damping=args.damping)
    rig, platform = system.rig, system.platform_params
    post = simulate(system, (n + 2) / RATE_HZ, RATE_HZ, platform_offset=offset,
                    platform_velocity=velocity)
    cal = simulate_calibration(rig, platform, args.seconds, offset, velocity)
    target = post.position_m["platform"].mean(axis=0)       # one set-up for every capture
    tags = box_tags("obj", obj.box_centre_m, obj.box_size_m)
    scenes = {"posture": platform_scene(post, rig.platform.markers_platform, link_tags=tags,
                                        target_lab_m=target)}
    for name, traj, _ in cal:
        scenes[name] = platform_scene(traj, rig.platform.markers_platform, target_lab_m=target)
    rig0, plat0 = start_rig(rig, platform)
    i_max = np.linalg.eigvalsh(obj.params.inertia_com)[-1]
    results: dict[str, list] = {}
    sigmas, sigmas_px = [], []
    for draw in range(args.video_draws):
        root = args.keep or Path(tempfile.mkdtemp(prefix="rigtool-camera-calibrated-"))
        work = root if draw == 0 else root / f"draw{draw}"
        print(f"video draw {draw} ({work}):")
        try:
            got = _track_draw(args, scenes, work, args.seed + 10 * draw, fmt)
        finally:
            if args.keep is None:
                shutil.rmtree(root, ignore_errors=True)
        layout, tracked = got["layout"], got["tracked"]
        plat = {f"platform:{m}": v for m, v in layout.body_markers("platform").items()}
        base = {f"obj:{m}": v for m, v in layout.body_markers("obj").items()}
        data, cov, tr_post, _ = tracked["posture"]
        sigmas_px.append(float(np.mean([v[2].sigma_px for v in tracked.values()])))
        seen = np.isfinite(data.xyz_m).all(-1)
        sigmas.append(float(np.sqrt(np.mean(np.trace(cov.cov_m2, axis1=-2,
                                                       axis2=-1)[seen]) / 3)))
        caps = [OECapture(name, tracked[name][0], load) for name, _, load in cal]
        fits = [("true rig", system, None)]
        for label, frame in (("video-calibrated rig, lab frame fitted", True),
                             ("video-calibrated rig, frame not fitted", False)):
            t0 = time.perf_counter()
            # tracked corners: standard errors clustered by frame, as rigtool calibrate does
            ref = refine_calibration(rig0, plat0, caps, markers_platform=plat, fit_frame=frame,
                                     standard_errors=args.calibration_standard_errors)
            print(f"  calibration ({label}): {time.perf_counter() - t0:.0f} s, marker residual "
                  f"{ref.marker_sigma_mm:.4f} mm; platform COM error "
                  f"{fmt(1e3 * (ref.platform.com - platform.com))} mm")
            if frame:
                sd = np.sqrt(np.diag(ref.frame_covariance))
                print(f"    frame fitted: rotation {fmt(np.degrees(ref.frame[:3]), 5)} deg "
                      f"(+- {fmt(np.degrees(sd[:3]), 5)}), translation "
                      f"{fmt(1e3 * ref.frame[3:])} mm (+- {fmt(1e3 * sd[3:])})")
            fits.append((label, replace(system, rig=ref.rig, platform_params=ref.platform), ref))
        for label, sys_, ref in fits:
            # a calibrated rig's uncertainty (its lab frame's too) enters the standard errors
            cal_std = None if ref is None else ref.as_calibration_std()
            for weights, c in (("isotropic", None), ("whitened", cov)):
                r = fit(sys_, obj, data, plat, base, c, standard_errors=args.standard_errors,
                        calibration_std=cal_std)
                e, sd = errors(r, obj)
                print(f"  video, {label}, {weights}: COM error {fmt(1e3 * e[:3])} mm, "
                      f"std {fmt(1e3 * sd[:3])}")
                results.setdefault(f"video, {label}, {weights}", []).append((e, sd))
    figures = {label: summary(f"{label}, {len(v)} draws", [e for e, _ in v],
                              [sd for _, sd in v], i_max) for label, v in results.items()}
    sigma_cam = float(np.mean(sigmas))
    print(f"camera noise, RMS per coordinate: {1e3 * sigma_cam:.4f} mm (the mocap's)")
    # optical mocap at the camera's noise, each draw with its own calibration
    sets_cal = [MarkerSet("platform", {k[len("platform:"):]: v for k, v in plat.items()})]
    sets_post = sets_cal + [MarkerSet("obj", {k[len("obj:"):]: v for k, v in base.items()})]
    pm = {k[len("platform:"):]: v for k, v in plat.items()}
    bm = {k[len("obj:"):]: v for k, v in base.items()}
    errs, sds, errs_true = [], [], []
    for draw in range(args.mocap_draws):
        rng = np.random.default_rng(900 + draw)
        caps_m = []
        for name, traj, load in cal:
            m = synthesize_markers(traj, sets_cal, noise_sigma_m=sigma_cam, rng=rng,
                                   rate_hz=RATE_HZ)
            caps_m.append(OECapture(name, replace(m, time_s=m.time_s[:n], xyz_m=m.xyz_m[:n]),
                                    load))
        ref = refine_calibration(rig0, plat0, caps_m, markers_platform=pm)
        m = synthesize_markers(post, sets_post, noise_sigma_m=sigma_cam, rng=rng,
                               rate_hz=RATE_HZ)
        m = replace(m, time_s=m.time_s[:n], xyz_m=m.xyz_m[:n])
        e, sd = errors(fit(replace(system, rig=ref.rig, platform_params=ref.platform), obj, m,
                           pm, bm, calibration_std=ref.as_calibration_std()), obj)
        errs.append(e)
        sds.append(sd)
        errs_true.append(errors(fit(system, obj, m, pm, bm), obj)[0])
        print(f"  mocap draw {draw}: COM error {fmt(1e3 * e[:3])} mm (true rig: "
              f"{fmt(1e3 * errs_true[-1][:3])})", flush=True)
    mocap = summary(f"mocap, calibrated, {args.mocap_draws} draws", errs, sds, i_max)
    summary(f"mocap, true rig, {args.mocap_draws} draws", errs_true, sds, i_max)
    own = camera_noise_reference(args, scenes, cal, post, system, obj, pm, bm, rig0, plat0,
                                 float(np.mean(sigmas_px)), fit, errors, summary, i_max, n)
    for label, ref_fig in (("optical mocap", mocap), ("the camera's own noise", own)):
        print(f"ratios (video RMS error / RMS error of {label}):")
        for vl, v in figures.items():
            ratio = v["rms"] / ref_fig["rms"]
            print(f"  {vl}: COM {fmt(ratio[:3], 2)}, inertia {fmt(ratio[3:], 2)}; COM |error| "
                  f"{np.linalg.norm(v['rms'][:3]):.4f} mm vs "
                  f"{np.linalg.norm(ref_fig['rms'][:3]):.4f} mm")


def camera_noise_reference(args, scenes, cal, post, system, obj, pm, bm, rig0, plat0,
                           sigma_px: float, fit, errors, summary, i_max: float, n: int) -> dict:
    """The same captures with the camera's own error structure and nothing else: per body
    and frame one pose error from the tracker's pose covariance at the videos' image noise
    (rigtool.camera.pose_noise) on every corner, in the true lab frame, no rendering; the
    rig calibrated from them (standard errors clustered by frame) and the posture fitted
    whitened by the corners' marginal covariance, as for the video."""
    from rigtool.camera.pose_noise import body_pose_noise, draw_corner_errors
    from rigtool.engine.whiten import MarkerCovariance
    from rigtool.identify.calibration.output_error import OECapture, refine_calibration

    def noisy_maker(name, traj, bodies):
        scene = scenes[name]
        cp = scene.camera_pose
        sets = [MarkerSet(b, m) for b, m in bodies]
        clean = synthesize_markers(traj, sets, noise_sigma_m=0.0, rate_hz=RATE_HZ)
        clean = replace(clean, time_s=clean.time_s[:n], xyz_m=clean.xyz_m[:n])
        noise, start = [], 0
        cov = np.empty(clean.xyz_m.shape + (3,))
        for b, m in bodies:
            nz = body_pose_noise(scene.camera, cp.rotation_cam_lab, cp.translation_cam_lab_m,
                                 traj.rotation[b][:n], traj.position_m[b][:n],
                                 np.array(list(m.values())), sigma_px=sigma_px)
            cols = start + np.arange(len(m))
            cov[:, cols] = nz.corner_cov_lab_m2
            noise.append((cols, nz))
            start += len(m)

        def draw(rng):
            err = np.zeros_like(clean.xyz_m)
            for cols, nz in noise:
                err[:, cols] = draw_corner_errors(nz, rng)
            return replace(clean, xyz_m=clean.xyz_m + err)
        return draw, MarkerCovariance(clean.names, cov, "simulated", correlated_in_frame=True)

    makers = [(name, noisy_maker(name, traj, [("platform", pm)])[0], load)
              for name, traj, load in cal]
    post_draw, post_cov = noisy_maker("posture", post, [("platform", pm), ("obj", bm)])
    out = {"isotropic": ([], []), "whitened": ([], [])}
    for draw in range(args.mocap_draws):
        rng = np.random.default_rng(1700 + draw)
        caps = [OECapture(name, make(rng), load) for name, make, load in makers]
        ref = refine_calibration(rig0, plat0, caps, markers_platform=pm,
                                 standard_errors="frame")
        data = post_draw(rng)
        sys_cal = replace(system, rig=ref.rig, platform_params=ref.platform)
        for weights, c in (("isotropic", None), ("whitened", post_cov)):
            e, sd = errors(fit(sys_cal, obj, data, pm, bm, c, standard_errors="frame",
                               calibration_std=ref.as_calibration_std()), obj)
            out[weights][0].append(e)
            out[weights][1].append(sd)
    print(f"the camera's own noise (pose errors at {sigma_px:.3f} px, true lab frame, no "
          f"video), {args.mocap_draws} draws:")
    summary("camera noise, isotropic", *out["isotropic"], i_max)
    return summary("camera noise, whitened", *out["whitened"], i_max)
