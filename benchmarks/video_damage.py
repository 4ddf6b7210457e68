"""A damaged lossless video: where ``rigtool track`` puts each row, against the truth.

The demo rig's platform vibrates freely (as in ``benchmarks/camera.py``); the demo camera
films it into a lossless FFV1/Matroska video (``rigtool.camera.simvideo``). A copy of it
gets ``--damage-mb`` of garbage (zero bytes, or random bytes) written over the middle of
the file, and is tracked by ``rigtool track``'s code. For each copy:

- what ``rigtool track`` reports: exit status, the frames lost and their notes;
- the time error of every row: its written time less the time its picture was rendered
  at (the frame whose undamaged picture it is, found pixel for pixel), now, and as the
  earlier numbering (decoded frames counted) would have written it;
- the corners' error against the simulator's truth at each row's written time, in the
  camera's axes with the tracked lab frame's constant error taken out: RMS and largest
  over the rows after the damage, with the rows at their own times and as the counted
  numbering put them.

    nice python3 benchmarks/video_damage.py [--frames 240] [--rate 120] [--damage-mb 2]
                                            [--width 1280] [--height 1024] [--keep DIR]

With ``--keep DIR`` the clip and the damaged copies stay in DIR, and a clip already there
(same options) is reused instead of rendered again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigtool.camera.demo import demo_camera, platform_scene, write_scene_files  # noqa: E402
from rigtool.camera.simvideo import VideoSettings, render_video, true_markers  # noqa: E402
from rigtool.camera.tags import load_tags  # noqa: E402
from rigtool.camera.track import track_video  # noqa: E402
from rigtool.camera.video import VideoFrames  # noqa: E402
from rigtool.errors import RigtoolError  # noqa: E402
from rigtool.mocap import read_capture  # noqa: E402
from rigtool.sim import dynamics as dyn  # noqa: E402
from rigtool.sim.rigs import demo_rig  # noqa: E402


def damage(src: Path, dst: Path, n_bytes: int, kind: str) -> None:
    data = bytearray(src.read_bytes())
    start = len(data) // 2 - n_bytes // 2
    data[start:start + n_bytes] = (bytes(n_bytes) if kind == "zeros" else np.random.default_rng(
        5).integers(0, 256, n_bytes, dtype=np.uint8).tobytes())
    dst.write_bytes(bytes(data))


def picture_numbers(video: Path, clean: np.ndarray, rate: float) -> list[int]:
    """For each picture VideoFrames hands out, the number of the undamaged picture it is
    (searched among the pictures from a few before its decoding order to a few after its
    timestamp's number: wherever the two numberings put it), -1 for none."""
    frames = VideoFrames(video)
    out = []
    while (gray := frames.read()) is not None:
        stamp_k = int(round(frames.stamp_s * rate))
        lo, hi = max(0, min(len(out), stamp_k) - 3), min(len(clean), max(len(out), stamp_k) + 4)
        diff = np.abs(clean[lo:hi].astype(np.int16) - gray).mean(axis=(1, 2))
        out.append(lo + int(np.argmin(diff)) if diff.min() < 0.5 else -1)
    frames.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=240)
    ap.add_argument("--rate", type=float, default=120.0)
    ap.add_argument("--damage-mb", type=float, default=2.0)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=1024)
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="rigtool-video-damage-"))
    work.mkdir(parents=True, exist_ok=True)
    rate, n = args.rate, args.frames
    rig, platform = demo_rig()
    traj = dyn.simulate(dyn.System(rig, platform), (n + 2) / rate, rate,
                        platform_offset=np.array([0.004, -0.003, 0.006, 0.008, -0.006, 0.005]),
                        platform_velocity=np.array([0.05, 0.05, 0.02, 0.1, 0.0, 0.1]))
    scene = platform_scene(traj, rig.platform.markers_platform,
                           camera=demo_camera(args.width, args.height))
    cam_file, tags_file = write_scene_files(work, scene)
    video = work / "clip.mkv"
    t0 = time.perf_counter()
    reused = args.keep is not None and video.exists()     # a kept clip is reused
    if not reused:
        render_video(video, scene.camera, scene.camera_pose, scene.layout, scene.motion,
                     rate_hz=rate, n_frames=n, settings=VideoSettings(supersample=4,
                                                                       fourcc="FFV1"), seed=2)
    cap = cv2.VideoCapture(str(video))
    clean = []
    while (got := cap.read())[0]:
        clean.append(cv2.cvtColor(got[1], cv2.COLOR_BGR2GRAY))
    clean = np.array(clean)
    size = video.stat().st_size
    print(f"clip: {n} frames {args.width}x{args.height} at {rate:g} Hz, FFV1/MKV "
          f"{size / 1e6:.1f} MB ({size / n / 1e6:.2f} MB a frame)"
          + (", reused" if reused else f", rendered in {time.perf_counter() - t0:.0f} s"))
    layout = load_tags(tags_file)
    pose = scene.camera_pose
    report = {}
    for kind in ("zeros", "random"):
        copy = work / f"damaged_{kind}.mkv"
        damage(video, copy, int(args.damage_mb * 1e6), kind)
        out = work / f"damaged_{kind}.csv"
        try:
            result = track_video(copy, scene.camera, layout, out, camera_file=cam_file)
        except RigtoolError as exc:
            print(f"{kind}: refused (exit 2): {exc}")
            report[kind] = {"refused": str(exc)}
            continue
        data = read_capture(out)
        names = list(data.names)
        seen = np.flatnonzero(np.isfinite(data.xyz_m).all(axis=(1, 2)))
        numbers = [k for k in picture_numbers(copy, clean, rate) if k >= 0]
        k_row = np.arange(data.n_frames)
        # rows written now: row k holds picture k exactly when the picture numbers match
        now_err_frames = np.array(numbers) - k_row[np.isin(k_row, numbers)]
        counted = np.arange(len(numbers))            # the earlier numbering: decode order
        old_err_frames = counted - np.array(numbers)
        lab = json.loads(out.with_name(out.stem + ".track.json").read_text())["lab_frame"]
        r_est, t_est = np.array(lab["rotation_cam_lab"]), np.array(lab["translation_cam_lab_m"])

        def truth_cam(time_s):
            tr = true_markers(layout, scene.motion, time_s, rate).select(names)
            return tr @ pose.rotation_cam_lab.T + pose.translation_cam_lab_m

        xyz_cam = data.xyz_m[seen] @ r_est.T + t_est
        missing = sorted(set(range(data.n_frames)) - set(numbers))
        after = seen > (missing[-1] if missing else -1)
        err_now = np.linalg.norm(xyz_cam - truth_cam(seen / rate), axis=2)
        order = np.searchsorted(np.array(numbers), seen)        # decode order of each row
        err_old = np.linalg.norm(xyz_cam - truth_cam(order / rate), axis=2)
        lost = data.n_frames - result.n_decoded
        entry = {
            "frames_lost": lost, "notes": result.notes,
            "time_error_now_frames_max": int(np.abs(now_err_frames).max()),
            "time_error_counted_frames_max": int(np.abs(old_err_frames).max()),
            "corner_err_after_gap_now_mm_rms": float(np.sqrt(np.mean(err_now[after] ** 2)) * 1e3),
            "corner_err_after_gap_now_mm_max": float(err_now[after].max() * 1e3),
            "corner_err_after_gap_counted_mm_rms":
                float(np.sqrt(np.mean(err_old[after] ** 2)) * 1e3),
            "corner_err_after_gap_counted_mm_max": float(err_old[after].max() * 1e3),
        }
        report[kind] = entry
        print(f"{kind}: exit 0, {lost} frames lost "
              f"({lost / rate * 1e3:.0f} ms); row time error now max "
              f"{entry['time_error_now_frames_max']} frames, counted "
              f"{entry['time_error_counted_frames_max']} frames; corners after the gap vs "
              f"truth: now RMS {entry['corner_err_after_gap_now_mm_rms']:.3f} mm (max "
              f"{entry['corner_err_after_gap_now_mm_max']:.3f}), counted RMS "
              f"{entry['corner_err_after_gap_counted_mm_rms']:.3f} mm (max "
              f"{entry['corner_err_after_gap_counted_mm_max']:.3f})")
        for note in result.notes:
            print(f"  note: {note}")
    print(json.dumps(report, indent=1))
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
