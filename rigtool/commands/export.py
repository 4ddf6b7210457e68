"""``rigtool export RESULTS [-o DIR] [--force]``: the model files of a results directory,
written again.

Reads ``RESULTS/report.json`` (its per-link parameters, tree, gravity, inputs) and writes the
MuJoCo, OpenSim and URDF models (rigtool.report.exports.write_models) with the base link free
or fixed to the world, with or without viewing ellipsoids; no fit is run again. Writing into
RESULTS itself (with ``--force``: it holds the run's) replaces its model files and updates
report.json's ``model_files`` block; existing model files are replaced only with ``--force``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rigtool.errors import InputError
from rigtool.pipeline.run_job import add_model_arguments

HELP = "the model files (MuJoCo, OpenSim, URDF) of a results directory, written again"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``rigtool export``."""
    p.add_argument("results", type=Path, help="a results directory of `rigtool run` "
                                              "(holds report.json)")
    p.add_argument("-o", "--output", type=Path, default=None,
                   help="directory for the model files (default: RESULTS itself)")
    p.add_argument("--force", action="store_true",
                   help="replace model files already in the output directory (RESULTS "
                        "itself holds those of the run)")
    add_model_arguments(p)


def run(args: argparse.Namespace) -> int:
    """Read report.json, write the three models, print their paths."""
    from rigtool.report.exports import MODEL_FILES, write_models

    report = args.results / "report.json"
    if not report.is_file():
        raise InputError("expected a results directory holding report.json", path=args.results)
    try:
        doc = json.loads(report.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a report.json: {exc}", path=report) from None
    if not isinstance(doc, dict) or "summary" not in doc:
        raise InputError("not a rigtool report.json (no summary block)", path=report)
    out_dir = args.output or args.results
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("expected a directory for the model files, found a file",
                         path=out_dir)
    present = [name for name, _, _ in MODEL_FILES if (out_dir / name).exists()]
    if present and not args.force:
        raise InputError(f"model files exist ({', '.join(present)}); pass --force to replace "
                         "them, or -o another directory", path=out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output directory: {exc.strerror}",
                         path=out_dir) from None
    paths, block = write_models(doc, out_dir, base=args.model_base,
                                geometry=not args.no_model_geometry)
    if out_dir.resolve() == args.results.resolve():
        doc["model_files"] = block
        report.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    for p in paths:
        print(f"wrote {p}")
    return 0
