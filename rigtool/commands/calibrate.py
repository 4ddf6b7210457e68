"""``rigtool calibrate RIG.toml [-o OUT.toml]``: spring stiffness and platform inertia.

Exit status 0, or :data:`~rigtool.errors.EXIT_MODEL_FAILED` (4) when the calibrated file was
written but a held-out reference body is off by more than
:data:`~rigtool.identify.calibration.verdict.HOLDOUT_Z_LIMIT` standard errors (the message
names the likely cause)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from rigtool.config import FilterSettings
from rigtool.errors import EXIT_MODEL_FAILED, InputError
from rigtool.identify.calibration.verdict import HOLDOUT_Z_LIMIT
from rigtool.pipeline.methods import LAB_FRAME_CHOICES, add_method_argument
from rigtool.progress import progress_printer
from rigtool.textformat import pm

HELP = "spring stiffness, free length, damping and platform inertia from reference-body captures"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rig", type=Path, help="rig file (TOML) listing the calibration captures")
    p.add_argument("-o", "--output", type=Path, default=None,
                   help="calibrated rig file to write (default: NAME.calibrated.toml)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--residual-stiffness", action="store_true",
                   help="add a symmetric 6x6 residual stiffness for effects the axial springs "
                        "lack (lateral stiffness); reported in [calibration]")
    add_method_argument(p, "the spring and platform fit")
    p.add_argument("--no-compensation", action="store_true",
                   help="plain equation-error least squares (no errors-in-variables correction)")
    p.add_argument("--no-consistency", action="store_true",
                   help="skip the physical-consistency constraints (report the raw fit)")
    p.add_argument("--passband", type=float, default=5.0, help="filter passband edge, Hz")
    p.add_argument("--stopband", type=float, default=10.0, help="filter stopband edge, Hz")
    p.add_argument("--filter", choices=("fir", "butterworth"), default="fir",
                   help="the zero-phase low-pass filter of the equation-error start: fir "
                        "(default: linear phase, applied forward and backward) or butterworth "
                        "(IIR, forward-backward)")
    p.add_argument("--order", type=int, default=50, help="filter order")
    p.add_argument("--lab-frame", choices=LAB_FRAME_CHOICES, default=LAB_FRAME_CHOICES[0],
                   help="the lab frame of the output-error refinement: auto (default: "
                        "fitted for captures from `rigtool track`, whose lab frame a floor "
                        "board sets, else as the rig file's), fit (the measured lab frame "
                        "fitted against the rig file's anchors and gravity), fixed (the rig "
                        "file's taken as it is)")


def run(args: argparse.Namespace) -> int:
    from rigtool.pipeline.preflight import check_rig
    from rigtool.tomlwrite import dumps

    rigfile = check_rig(args.rig)      # every capture checked, in seconds, before the fitting
    from rigtool.pipeline.calibration import (calibrated_rig_document, default_output,
                                              run_calibration)     # code is even imported
    out = args.output or default_output(args.rig)
    if out.resolve() == args.rig.resolve():
        raise InputError("refusing to write the calibrated rig over its input; choose another "
                         "file with -o", path=out)
    if out.exists() and not args.force:
        raise InputError("output file exists; pass --force to replace it", path=out)
    if not args.stopband > args.passband > 0:
        raise InputError("expected 0 < passband < stopband", field="--passband/--stopband",
                         found=f"{args.passband}, {args.stopband}")
    settings = FilterSettings(args.filter, args.order, args.passband, args.stopband)
    job = run_calibration(rigfile, settings=settings, consistent=not args.no_consistency,
                          residual_stiffness=args.residual_stiffness,
                          compensate=not args.no_compensation, method=args.method,
                          lab_frame=args.lab_frame, progress=progress_printer())
    doc = calibrated_rig_document(rigfile, job, out, settings)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(doc, header=f"calibrated by rigtool from {args.rig.name}"),
                   encoding="utf-8")
    res = job.result
    print(f"calibrated {rigfile.rig.name}: {len(rigfile.captures)} captures, "
          f"{res.n_frames} frames ({job.method})")
    print(f"  platform mass {pm(res.platform.mass, res.platform_mass_std, 4)} kg, COM "
          f"{np.array2string(res.platform.com * 1e3, precision=2)} mm")
    for i, s in enumerate(rigfile.rig.springs):
        print(f"  {s.name}: k = {pm(res.stiffness[i], res.stiffness_std[i], 1)} N/m, "
              f"L0 = {pm(res.free_length[i], res.free_length_std[i], 5)} m, "
              f"c = {pm(res.damping[i], res.damping_std[i], 2)} N s/m")
    frame = job.refinement.frame if job.refinement is not None else None
    if frame is not None:
        sd = np.sqrt(np.clip(np.diag(job.refinement.frame_covariance), 0, None))
        print(f"  lab frame fitted: turned {np.array2string(np.degrees(frame[:3]), precision=5)}"
              f" ± {np.array2string(np.degrees(sd[:3]), precision=5)} deg, shifted "
              f"{np.array2string(1e3 * frame[3:], precision=4)} ± "
              f"{np.array2string(1e3 * sd[3:], precision=4)} mm from the rig file's; anchors "
              "and gravity written in the measured frame")
    for h in res.holdout:
        mass = ("mass known" if job.method == "output-error"
                else f"mass error {h.mass_error_kg:+.4f} kg")
        print(f"  held-out {h.capture}: {mass}, COM error "
              f"{h.com_error_m * 1e3:.2f} mm, inertia error {100 * h.inertia_error_rel:.2f}%")
    for w in res.warnings:
        print(f"  warning: {w}")
    print(f"wrote {out}")
    failed = [h.signature for h in res.holdout
              if h.signature is not None and h.signature.failed]
    for sig in failed:
        print(f"rigtool calibrate: CALIBRATION FAILED: held-out {sig.capture} is "
              f"{sig.max_error_z:.1f} standard errors off its known values (more than "
              f"{HOLDOUT_Z_LIMIT:g}): the rig's model does not hold, and every number measured "
              f"with this calibration inherits its error. Likely cause: {sig.likely_cause()}.",
              file=sys.stderr)
    return EXIT_MODEL_FAILED if failed else 0
