"""``rigtool weigh``: the object's total mass from a serial laboratory scale -> weigh.json.

The session manifest can then say ``total_mass_from = "weigh.json"``. Bad settings, an
existing output file, and a scale that is silent, overloaded, unstable or speaks garbage
are :class:`~rigtool.errors.RigtoolError` (exit status 2, one line naming the port).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rigtool.devices.scale import PROTOCOLS, ScaleReply, weigh
from rigtool.devices.weigh_json import write_weigh_json
from rigtool.errors import InputError

HELP = "total mass from a serial scale (MT-SICS or continuous print) -> weigh.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rigtool weigh``."""
    parser.add_argument("--port", required=True,
                        help="serial port: /dev/ttyUSB0, COM3, or a pyserial URL")
    parser.add_argument("-o", "--output", default="weigh.json", type=Path,
                        help="JSON file to write (default: weigh.json)")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="auto",
                        help="auto (default: listen, then poll), mt-sics (Mettler Toledo; "
                             "polls with SI) or continuous (a scale that streams A&D-style "
                             "lines)")
    parser.add_argument("--baud", type=int, default=9600, help="baud rate (default: 9600)")
    parser.add_argument("--framing", default="8N1",
                        help="data bits, parity, stop bits (default: 8N1; A&D often 7E1)")
    parser.add_argument("--timeout", type=float, default=30.0, dest="timeout_s", metavar="SECONDS",
                        help="seconds to wait for a stable reading (default: 30)")
    parser.add_argument("--force", action="store_true",
                        help="overwrite the output file if it exists")


def _progress(reply: ScaleReply) -> None:
    if reply.value is not None:
        text = f"{reply.value:g} {reply.unit} ({reply.status})"
    else:
        text = reply.status
    print(f"\rscale: {text:<40}", end="", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Weigh, write the record, print the mass; returns the exit status."""
    if not args.timeout_s > 0:
        raise InputError("expected a positive number of seconds", field="--timeout",
                         found=args.timeout_s)
    if args.baud <= 0:
        raise InputError("expected a positive baud rate", field="--baud", found=args.baud)
    out: Path = args.output
    if out.exists() and not args.force:  # checked first, so nobody weighs for nothing
        raise InputError("the file exists; expected a new output file (use --force to "
                         "overwrite it)", path=out)
    if not out.parent.is_dir():
        raise InputError("the output folder does not exist", path=out)
    on_terminal = sys.stderr.isatty()
    result = weigh(args.port, protocol=args.protocol, baud=args.baud, framing=args.framing,
                   timeout_s=args.timeout_s, on_reply=_progress if on_terminal else None)
    if on_terminal:
        print(file=sys.stderr)
    write_weigh_json(result, out, force=args.force)
    r = result.reply
    print(f"{result.mass_kg:.6g} kg (read {r.value:g} {r.unit}, stable, {result.protocol}) "
          f"from {result.port} -> {out}")
    return 0
