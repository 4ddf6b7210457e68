"""``rigtool track VIDEO --camera camera.toml --tags tags.toml -o capture.csv``.

Tags found in every frame of the video, each body's pose fitted to its visible tag corners,
and the corners' lab positions written as a plain CSV capture that ``rigtool inspect`` and
``rigtool run`` read like any other (see :mod:`rigtool.camera.track` for the side files:
``.residuals.csv`` with per-frame reprojection residuals and per-corner covariance,
``.track.json``, ``.markers.toml``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rigtool.errors import InputError

HELP = "video of printed tags -> a capture (tag corners in the lab, metres) via OpenCV"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rigtool track``."""
    parser.add_argument("video", type=Path, help="the video (any format OpenCV decodes)")
    parser.add_argument("--camera", type=Path, required=True,
                        help="camera.toml from `rigtool camera calibrate`")
    parser.add_argument("--tags", type=Path, required=True,
                        help="tags.toml: dictionary, and each tag's id, edge, body and pose")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="capture CSV to write (side files go next to it)")
    parser.add_argument("--rate-hz", type=float, default=None,
                        help="frame rate, when the video states none or a playback rate")
    parser.add_argument("--detect-every", type=int, default=30,
                        help="full tag detection every N frames; tags are followed from "
                             "frame to frame in between (default 30; 1: detect in every "
                             "frame)")
    parser.add_argument("--lab-frame", type=Path, default=None, metavar="OTHER.track.json",
                        help="use the lab frame an earlier track of the same set-up set "
                             "(camera and lab board unmoved) instead of this video's own: "
                             "every capture of a session in one lab frame")
    parser.add_argument("--force", action="store_true", help="replace existing outputs")


def run(args: argparse.Namespace) -> int:
    """Check the inputs, track, and print what was measured."""
    from rigtool.extras import require_extra

    require_extra("camera")
    from rigtool.camera.capture_files import read_lab_frame
    from rigtool.camera.model import load_camera
    from rigtool.camera.tags import load_tags
    from rigtool.camera.track import output_paths, track_video
    from rigtool.progress import progress_printer

    out = args.output
    if args.rate_hz is not None and not args.rate_hz > 0:
        raise InputError("expected a positive frame rate", field="--rate-hz",
                         found=args.rate_hz)
    if args.detect_every < 1:
        raise InputError("expected a whole number >= 1", field="--detect-every",
                         found=args.detect_every)
    if out.suffix.lower() != ".csv":
        raise InputError("expected a .csv file name for the capture", path=out)
    for p in (args.video, args.camera, args.tags):
        if p.exists() and out.resolve() == p.resolve():
            raise InputError("refusing to write over an input; choose another -o", path=out)
    existing = [p for p in output_paths(out) if p.exists()]
    if existing and not args.force:
        raise InputError(f"{existing[0].name} exists; pass --force to replace the outputs",
                         path=existing[0])
    camera = load_camera(args.camera)
    layout = load_tags(args.tags)
    lab_frame = (read_lab_frame(args.lab_frame, camera_file=args.camera)
                 if args.lab_frame is not None else None)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = track_video(args.video, camera, layout, out, camera_file=args.camera,
                         rate_hz=args.rate_hz, detect_every=args.detect_every,
                         lab_frame=lab_frame, progress=progress_printer())
    lost = result.n_frames - result.n_decoded
    print(f"wrote {out}: {result.n_frames} frames at {result.rate_hz:g} Hz"
          + (f" ({lost} of them lost, empty rows)" if lost else "") + f" in "
          f"{result.time_s:.1f} s; image noise {result.sigma_px:.3f} px "
          f"(RMS reprojection residual, pooled)")
    for body, frac in result.seen_fraction.items():
        print(f"  {body}: seen in {frac:.1%} of the frames, residual {result.rms_px[body]:.3f} "
              f"px, corner std {result.lateral_std_m[body] * 1e3:.4f} mm across the view, "
              f"{result.depth_std_m[body] * 1e3:.4f} mm along it (median)")
    lab = result.lab_frame
    print("  lab frame: " + (f"the frame of '{lab['body']}' (tags {lab['tags']}, averaged "
                             f"over {lab['frames_averaged']} frames"
                             + (f", from {lab['from']})" if "from" in lab else ")")
                             if lab.get("frame") == "body" else "the camera's (x right, "
                             "y down, z along the view): give gravity in it in the rig file"))
    print("  side files: " + ", ".join(p.name for p in result.files[1:]))
    for note in result.notes:
        print(f"note: {note}")
    return 0
