"""``rigtool modes RIG.calibrated.toml --mass KG``: before a person is recorded, do the rig's
modes keep clear of breathing, the heartbeat, soft tissue and the compliant back?

The subject is taken as a uniform box lying on the platform (``--size``, along platform x,
y, z; default a supine adult, 1.75 x 0.40 x 0.22 m) with its COM at ``--com`` (platform
frame; default 0.11 m above the platform origin). Prints the rig's modes with that load and
each conflict with its reason and advice (rigtool.protocol); exit status 0 either way.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rigtool.config import load_rig
from rigtool.errors import InputError
from rigtool.inertia import InertialParams
from rigtool.protocol import STRING_MODE_MARGIN, check_rig_modes, spring_line_limits

HELP = "the rig's modes with a person on it against breathing, heartbeat and soft tissue"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rigtool modes``."""
    parser.add_argument("rig", type=Path, help="a calibrated rig file (stiffness and platform "
                                               "inertia known)")
    parser.add_argument("--mass", type=float, required=True, help="the subject's mass, kg")
    parser.add_argument("--com", type=float, nargs=3, default=[0.0, 0.0, 0.11],
                        metavar=("X", "Y", "Z"), help="the subject's COM, platform frame, m")
    parser.add_argument("--size", type=float, nargs=3, default=[1.75, 0.40, 0.22],
                        metavar=("LX", "LY", "LZ"), help="the box standing for the subject, m")
    parser.add_argument("--breathing", type=float, nargs=2, default=[10.0, 20.0],
                        metavar=("LO", "HI"), help="breathing rates to expect, /min")


def run(args: argparse.Namespace) -> int:
    """Compute the modes with the load and print the conflicts."""
    if not (np.isfinite(args.mass) and args.mass > 0):
        raise InputError("expected a positive mass (kg)", field="--mass", found=args.mass)
    if not all(np.isfinite(s) and s > 0 for s in args.size):
        raise InputError("expected three positive lengths (m)", field="--size", found=args.size)
    rigfile = load_rig(args.rig)
    plat = rigfile.rig.platform.params
    if plat is None or not np.all(np.isfinite(rigfile.rig.stiffness)):
        raise InputError("the rig file is not calibrated (run rigtool calibrate first)",
                         path=args.rig)
    a, b, c = args.size
    inertia = args.mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    load = InertialParams.from_com(args.mass, np.asarray(args.com, float), inertia)
    modes_hz, conflicts = check_rig_modes(rigfile.rig, plat, load,
                                          breathing_per_min=tuple(args.breathing))
    print(f"modes with {args.mass:g} kg on the platform: "
          + ", ".join(f"{f:.2f}" for f in modes_hz) + " Hz")
    if not conflicts:
        print("clear: no mode meets breathing, the heartbeat, soft tissue or the support")
    # one advice per kind of conflict, after the modes it concerns
    for advice in dict.fromkeys(k.advice for k in conflicts):
        for k in conflicts:
            if k.advice == advice:
                print(f"- {k.effect}: {k.detail}")
        print(f"  what to do: {advice}")
    top, lines = spring_line_limits(rigfile.rig, plat, load)
    lightest = min(lines, key=lambda d: d["max_mass_kg"])
    hanging = plat.mass + args.mass
    print(f"springs: keep each line (coil and hooks) under {lightest['max_mass_kg']:.2f} kg "
          f"({lightest['name']}: {lightest['tension_n']:.0f} N over "
          f"{lightest['length_m']:.2f} m), so that its first string mode stays "
          f"{STRING_MODE_MARGIN:g}x above the rig's highest mode ({top:.2f} Hz), and all "
          f"lines together a small share of the hanging {hanging:.1f} kg (massless in the "
          "model); a stiffness that changes with the stretch, or with the temperature "
          "(steel: -0.024 % per kelvin), changes the force per displacement: calibrate "
          "with a reference load near the subject's weight, at the session's temperature "
          "(docs: how-to/ideal-rig)")
    return 0
