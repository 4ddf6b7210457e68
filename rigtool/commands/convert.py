"""``rigtool convert CAPTURE -o OUT.csv [--units U] [--format FMT] [--force]``.

Reads any supported export (format detected from the content) and writes it again, by
default as the plain CSV (docs/reference/captures.md): ``time`` (s, from 0 at the first frame) and
``<marker>_x,<marker>_y,<marker>_z`` in metres, empty where a marker is missing.
``--units`` gives the length units of an input that does not state them; ``--format``
chooses another output format (``--out-units`` its length units, default mm). Never writes
over the input; refuses an existing output unless ``--force``. What the reader had to
reconcile or skip to read the input (``MarkerData.notes``, as ``rigtool inspect`` shows them)
is printed after the summary line as ``note:`` lines.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rigtool.errors import InputError
from rigtool.mocap import FORMATS, read_capture, write_capture

HELP = "any supported capture export -> plain CSV in metres (or another format)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rigtool convert``."""
    parser.add_argument("capture", type=Path, help="capture file (any supported export)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="file to write")
    parser.add_argument("--units", default=None,
                        help="length units (mm, cm, m, in) of an input that does not state them")
    parser.add_argument("--format", choices=FORMATS, default="plain-csv",
                        help="output format (default plain-csv, always in metres)")
    parser.add_argument("--out-units", default="mm",
                        help="length units of the output for formats that carry units "
                             "(default mm; plain CSV is always in metres)")
    parser.add_argument("--force", action="store_true", help="replace an existing output")


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


def run(args: argparse.Namespace) -> int:
    """Read, check the output path, write, and say what was written."""
    src, out = args.capture, args.output
    if _same_file(src, out):
        raise InputError("refusing to write over the input capture; choose another -o",
                         path=out)
    if out.is_dir():
        raise InputError("expected a file name for -o, found a directory", path=out)
    if out.exists() and not args.force:
        raise InputError("the output file exists; pass --force to replace it", path=out)
    data = read_capture(src, units=args.units)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_capture(data, out, format=args.format, units=args.out_units)
    except OSError as exc:
        raise InputError(f"cannot write the output ({exc.strerror})", path=out) from None
    print(f"wrote {out}: {args.format}, {len(data.names)} markers, {data.n_frames} frames "
          f"at {data.rate_hz:g} Hz (from {data.format} {src})")
    for note in data.notes:
        print(f"note: {note}")
    return 0
