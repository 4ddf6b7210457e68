"""``rigtool simulate SCENARIO.toml -o DIR``: a synthetic rig and session with ground truth."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rigtool.mocap.markerdata import FORMATS

HELP = "a synthetic rig/session with ground truth"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``rigtool simulate``."""
    parser.add_argument("scenario", type=Path, help="scenario file (see scenarios/README.md)")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                        help="output directory (calibration/ and captures/ go under it)")
    parser.add_argument("--seed", type=int, default=None,
                        help="noise and artefact seed (default: the scenario's)")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="write every capture in this format (default: the scenario's)")
    parser.add_argument("--force", action="store_true",
                        help="overwrite files that already exist")
    parser.add_argument("--video", action="store_true",
                        help="also film every posture and relative-motion capture with a "
                             "simulated 1280x1024 camera 1.5 m from the platform (tags on "
                             "the platform, a floor board for the lab frame): NAME.avi, "
                             "NAME.video_truth.csv and camera/{camera,tags}.toml next to the "
                             "captures (slow: about 0.1 s a frame)")
    parser.add_argument("--video-frames", type=int, default=None,
                        help="film only the first N frames of each capture")


def run(args: argparse.Namespace) -> int:
    """Simulate the scenario and write the bundle; prints what was written."""
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import write_bundle

    scenario = load_scenario(args.scenario)
    if args.seed is not None and args.seed < 0:
        from rigtool.errors import InputError
        raise InputError("expected a whole number >= 0", field="--seed", found=args.seed)
    result = write_bundle(scenario, args.output, seed=args.seed, fmt=args.format,
                          force=args.force, progress=sys.stderr.isatty())
    print(f"wrote {len(result.files)} files under {args.output}")
    if result.rig_file is not None:
        print(f"  rig file:  {args.output / result.rig_file}  "
              f"(next: rigtool calibrate {args.output / result.rig_file})")
    if result.session_file is not None:
        print(f"  session:   {args.output / result.session_file}")
    if args.video:
        _videos(scenario, args)
    return 0


def _videos(scenario, args: argparse.Namespace) -> None:
    """Film the session's captures (see ``--video``)."""
    from rigtool.camera.demo import write_capture_video
    from rigtool.errors import InputError
    from rigtool.progress import progress_printer
    from rigtool.sim.session_writer import capture_jobs, simulate_job

    if args.video_frames is not None and args.video_frames < 1:
        raise InputError("expected a whole number >= 1", field="--video-frames",
                         found=args.video_frames)
    progress = progress_printer()
    target = None                     # one camera set-up for the whole session
    for job in capture_jobs(scenario):
        if job.kind == "calibration":
            continue
        traj = simulate_job(scenario, job)
        if target is None:
            target = traj.position_m["platform"].mean(axis=0)
        folder = args.output / job.relpath.parent
        files = write_capture_video(traj, scenario.rig.platform.markers_platform, folder,
                                    job.name, rate_hz=job.settings.rate_hz,
                                    n_frames=args.video_frames,
                                    seed=(args.seed or 0) + len(job.name), force=args.force,
                                    target_lab_m=target, progress=progress)
        print(f"  video:     {files[2]} (truth {files[3].name}; camera and tags in "
              f"{files[0].parent})")
