"""``rigtool subset POSTURES.toml [-o OUT.json]``: Phi_s from overall properties measured
elsewhere (the postures file, docs/reference/files/postures-file.md).

Prints a table (name, value, standard error), the rank and condition number, and names any
combination the postures cannot identify with the posture to add. ``-o`` writes the JSON
(``{"rigtool_version", "input": {path, sha256}, "subset": {...}}``); it never writes over
the input file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rigtool import __version__
from rigtool.config import read_toml, sha256_of
from rigtool.errors import EXIT_OK, EXIT_PARTIAL, ConfigError, InputError
from rigtool.identify.subset.postures_file import load_postures
from rigtool.identify.subset.fit import DEFAULT_RTOL, WEIGHTINGS, fit_subset
from rigtool.robot.postures_file import is_robot_postures

HELP = ("Phi_s, the parameter combinations locked postures identify, from the overall "
        "properties of several postures measured elsewhere")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rigtool subset``."""
    parser.add_argument("postures", type=Path,
                        help="postures file (TOML: docs/reference/files/postures-file.md; "
                             "an example: captures/two-link/postures.toml)")
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help="write the subset block as JSON here (default: print only)")
    parser.add_argument("--weighting", choices=WEIGHTINGS, default="auto",
                        help="auto: weight rows by the given standard errors (or a unit-free "
                             "default); plain: unit weights, as Homma and Yamaura's evaluation "
                             "function E_v1")
    parser.add_argument("--rtol", type=float, default=DEFAULT_RTOL,
                        help=f"relative singular-value tolerance for an identified direction "
                             f"(default {DEFAULT_RTOL:g})")
    parser.add_argument("--consistent", action="store_true",
                        help="also fit per-link parameters under the physical-consistency LMI "
                             "(cvxpy/Clarabel) and report the Phi_s they give")
    parser.add_argument("--json", action="store_true", help="print the JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    """Load, fit, print, and write when asked."""
    if not 0 < args.rtol < 1:
        raise InputError("expected 0 < --rtol < 1", field="--rtol", found=args.rtol)
    if args.output is not None:
        same = args.output.resolve() == args.postures.resolve() or (
            args.output.exists() and args.postures.exists()
            and args.output.samefile(args.postures))
        if same:
            raise InputError("refusing to write over the input file; choose another -o",
                             path=args.output)
    if is_robot_postures(read_toml(args.postures)):
        return run_robot(args)
    pf = load_postures(args.postures)
    result = fit_subset(pf.tree, pf.postures, pf.total_mass_kg, rtol=args.rtol,
                        weighting=args.weighting, consistent=args.consistent)
    doc = {"rigtool_version": __version__,
           "input": {"path": str(args.postures), "sha256": sha256_of(args.postures)},
           "subset": result.to_json()}
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(result.table())
        for line in result.unidentifiable:
            print(f"not identified: {line}")
        for line in result.advice:
            print(f"advice: {line}")
        for line in result.warnings:
            print(f"warning: {line}")
    _write_output(args, doc)
    # judged as `rigtool run` judges the same postures: a rank-deficient Phi_s is a
    # partial result (what is identified is written, the null directions named)
    return EXIT_OK if result.identified else EXIT_PARTIAL


def _write_output(args: argparse.Namespace, doc: dict) -> None:
    """``-o``: the JSON document (ConfigError naming the file when it cannot be written)."""
    if args.output is None:
        return
    try:
        args.output.write_text(json.dumps(doc, indent=2) + "\n")
    except OSError as exc:
        raise ConfigError(f"cannot write the output: {exc.strerror}",
                          path=args.output) from None
    if not args.json:
        print(f"wrote {args.output}")


def run_robot(args: argparse.Namespace) -> int:
    """A robot's postures.toml (a ``[robot]`` table): its base parameters
    (rigtool.robot.base_parameters) instead of Phi_s."""
    from rigtool.robot.base_parameters import fit_base_parameters
    from rigtool.robot.postures_file import load_robot_postures

    pf = load_robot_postures(args.postures)
    poses = [pf.robot.body_poses(q) for q in pf.angles]
    result = fit_base_parameters([r for r, _ in poses], [p for _, p in poses], pf.postures,
                                 pf.robot.names, pf.total_mass_kg,
                                 total_mass_std_kg=pf.total_mass_std_kg)
    doc = {"rigtool_version": __version__,
           "input": {"path": str(args.postures), "sha256": sha256_of(args.postures)},
           "robot": {"base_parameters": result.to_json(),
                     "unidentifiable": result.unidentifiable}}
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(result.table())
    _write_output(args, doc)
    # a robot's rank deficiency is structural (no capture of this kind identifies more):
    # a complete result, the unidentifiable directions reported
    return EXIT_OK
