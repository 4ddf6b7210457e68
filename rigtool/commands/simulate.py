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
    return 0
