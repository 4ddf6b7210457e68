"""Write a simulated robot study to try the robot path without a robot: a published arm
(example-robot-data's Franka Panda or Universal Robots UR5) bolted to the demo rig,
locked postures within its limits and clear of the deck, each with its encoders' file, and
optionally a capture of the joints driven along the motion rigtool advises. The URDF given
to rigtool is a CAD prior perturbed from the truth (masses +-15 %, COMs +-1 cm, inertias
+-25 %); ``truth.json`` beside the manifest holds the true parameters.

    python3 tools/make_robot_study.py OUT [--robot panda|ur5] [--postures 9]
        [--duration 20] [--rate 120] [--motion 14] [--seed 0]

then ``rigtool run OUT/captures/<robot>/session.toml``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from rigtool.errors import RigtoolError
from rigtool.extras import missing_extra_error, require_extra
from rigtool.sim.robot_models import EXAMPLE_ROBOTS, example_robot_urdf
from rigtool.sim.robot_session import write_robot_study

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder to write (calibration/ and captures/)")
    ap.add_argument("--robot", choices=sorted(EXAMPLE_ROBOTS), default="panda")
    ap.add_argument("--postures", type=int, default=9)
    ap.add_argument("--duration", type=float, default=20.0, help="per posture, s")
    ap.add_argument("--rate", type=float, default=120.0, help="frame rate, Hz")
    ap.add_argument("--motion", type=float, default=None, metavar="SECONDS",
                    help="also a capture of the joints driven along the advised motion")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    require_extra("robot")              # pinocchio and example-robot-data
    _, base, fixed = EXAMPLE_ROBOTS[args.robot]
    manifest = write_robot_study(ROOT / "scenarios" / "demo.toml", args.out,
                                 example_robot_urdf(args.robot), base, fixed,
                                 session=args.robot, n_postures=args.postures, seed=args.seed,
                                 duration_s=args.duration, rate_hz=args.rate,
                                 motion_s=args.motion)
    print(f"wrote {manifest}")


def _fail(message: str) -> NoReturn:
    """One line on stderr and exit status 2, as ``rigtool`` does for bad input."""
    print(f"make_robot_study.py: error: {message}", file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    try:
        main()
    except RigtoolError as exc:         # e.g. the [robot] extra not installed: one line
        _fail(str(exc))
    except ModuleNotFoundError as exc:  # an extra's package missing where it is imported
        err = missing_extra_error(exc)
        if err is None:
            raise
        _fail(str(err))
