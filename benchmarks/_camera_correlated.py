"""``camera_posture.py --part correlated``: the camera's error structure without video.

The posture of ``--part video`` (demo rig, the locked 45 kg box, 120 fps), its tag corners
as ``rigtool track`` places them: 32 on the platform (eight tags), 24 on the box (six tags,
its base-link markers, so the base link's pose on the platform is fitted too). Per body and
frame one pose error is drawn from the tracker's Gauss-Newton pose covariance for the demo
camera's geometry (``sigma_px^2 (J^T J)^-1``, rigtool.camera.pose_noise, at the image noise
``--image-noise-px`` the video measured) and applied to all of that body's corners, plus
optional independent per-corner noise (``--corner-mm``) and a frame-to-frame correlation of
the pose errors (``--pose-ar1``). The marker covariance handed to the whitened fits is each
corner's marginal one, as the side file gives it. Each draw is fitted four ways, one estimate
per noise model: isotropic and per-corner whitened, each with the Gauss-Newton standard
errors (independent markers) and with the frame-clustered sandwich
(rigtool.identify.posture.cluster_covariance, ``--cluster-frames`` frames per cluster).
``--substeps``: the fit's RK4 steps per frame; with 1 (rigtool's default) the integrator
alone biases I_yy by 0.007 % of the largest moment (noise-free fit), about 2 of the
whitened fit's standard errors at this noise, so 2 steps isolate what the noise does.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from rigtool.camera.demo import box_tags, platform_scene
from rigtool.camera.pose_noise import body_pose_noise, draw_corner_errors
from rigtool.engine.whiten import MarkerCovariance
from rigtool.sim.dynamics import simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers


def corner_scene(system, obj, seconds: float, rate: float, offset, velocity):
    """``(clean MarkerData, platform markers, box markers, {body: [marker columns]},
    scene)`` of the posture filmed by the demo camera (no noise)."""
    traj = simulate(system, seconds, rate, platform_offset=offset, platform_velocity=velocity)
    tags = box_tags("obj", obj.box_centre_m, obj.box_size_m)
    scene = platform_scene(traj, system.rig.platform.markers_platform, link_tags=tags)
    pm = scene.layout.body_markers("platform")
    bm = scene.layout.body_markers("obj")
    clean = synthesize_markers(traj, [MarkerSet("platform", pm), MarkerSet("obj", bm)],
                               noise_sigma_m=0.0, rate_hz=rate)
    cols = {"platform": np.arange(len(pm)), "obj": len(pm) + np.arange(len(bm))}
    return traj, clean, pm, bm, cols, scene


def part_correlated(args, posture_system, fit, errors, summary, offset, velocity) -> None:
    """Coverage of +-2 SE over ``args.draws`` draws of the camera's correlated errors."""
    rate = 120.0
    obj, system = posture_system(damping=args.damping)
    traj, clean, pm, bm, cols, scene = corner_scene(system, obj, args.noise_seconds, rate,
                                                    offset, velocity)
    cp = scene.camera_pose
    noise = {b: body_pose_noise(scene.camera, cp.rotation_cam_lab, cp.translation_cam_lab_m,
                                traj.rotation[b][:clean.n_frames],
                                traj.position_m[b][:clean.n_frames],
                                np.array(list(m.values())), sigma_px=args.image_noise_px)
             for b, m in (("platform", pm), ("obj", bm))}
    cov = np.empty(clean.xyz_m.shape + (3,))
    for b, c in cols.items():
        cov[:, c] = noise[b].corner_cov_lab_m2
    sig_c = args.corner_mm * 1e-3
    cov_side = cov + sig_c ** 2 * np.eye(3)
    mc = MarkerCovariance(clean.names, cov_side, "simulated", correlated_in_frame=True)
    rms = np.sqrt(np.trace(cov_side, axis1=-2, axis2=-1).mean() / 3)
    print(f"correlated: {args.draws} draws, {args.noise_seconds:g} s at {rate:.0f} fps, "
          f"{len(pm)} platform + {len(bm)} box corners, image noise {args.image_noise_px} px "
          f"(per-corner std RMS {1e3 * rms:.4f} mm per coordinate), per-corner noise "
          f"{args.corner_mm} mm, pose AR(1) {args.pose_ar1}, clusters of "
          f"{args.cluster_frames} frame(s), {args.substeps} RK4 step(s) per frame")
    fits = (("isotropic, independent SE", None, "independent"),
            ("isotropic, frame-clustered SE", None, "frame"),
            ("whitened, independent SE", mc, "independent"),
            ("whitened, frame-clustered SE", mc, "frame"))
    res = {label: ([], []) for label, *_ in fits}
    times = {label: [] for label, *_ in fits}
    acf = []
    i_max = np.linalg.eigvalsh(obj.params.inertia_com)[-1]
    for draw in range(args.draws):
        rng = np.random.default_rng(1300 + draw)
        err = np.zeros_like(clean.xyz_m)
        for b, c in cols.items():
            err[:, c] = draw_corner_errors(noise[b], rng, corner_sigma_m=sig_c,
                                           ar1=args.pose_ar1)
        data = replace(clean, xyz_m=clean.xyz_m + err)
        for label, c, se in fits:
            t0 = time.process_time()
            r = fit(system, obj, data, pm, bm, c, standard_errors=se,
                    cluster_frames=args.cluster_frames, substeps=args.substeps)
            times[label].append(time.process_time() - t0)
            e, sd = errors(r, obj)
            res[label][0].append(e)
            res[label][1].append(sd)
            if se == "frame" and c is not None:
                acf.append(r.se_score_autocorrelation)
        print(f"  draw {draw + 1}/{args.draws} done", file=sys.stderr, flush=True)
    names = ("cx", "cy", "cz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
    for label in res:
        summary(f"{label} (fit {np.median(times[label]):.1f} s CPU)", *res[label], i_max)
        z = np.array(res[label][0]) / np.array(res[label][1])
        worst = np.unravel_index(np.argmax(np.abs(z)), z.shape)
        print(f"  {'':28s} coverage per entry (%): " + ", ".join(
            f"{n} {100 * c:.0f}" for n, c in zip(names, (np.abs(z) <= 2).mean(0)))
            + f"; largest |error/std| {np.abs(z).max():.1f} ({names[worst[1]]}, draw "
              f"{worst[0] + 1}); median |error/std| {np.median(np.abs(z)):.2f} (0.67 normal)")
    a = np.mean(acf, axis=0)
    print("  whitened fit's score autocorrelation, lags 1-5, mean over draws: "
          + ", ".join(f"{v:.3f}" for v in a[1:6])
          + f" (+-{2 / np.sqrt(clean.n_frames * args.draws):.3f}: independent frames)")
