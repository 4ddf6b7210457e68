"""The fit methods a user chooses between (``--method`` of ``rigtool calibrate`` and
``rigtool run``, ``--lab-frame`` of ``rigtool calibrate``). Kept free of imports so the
command line can offer them without loading the pipelines."""

from __future__ import annotations

import argparse

#: Output-error (maximum-likelihood) refinement of the equation-error fit (default), or the
#: equation-error fit alone (faster).
FIT_METHODS = ("output-error", "equation-error")

#: ``rigtool calibrate --lab-frame``: fit the measured lab frame against the rig file's
#: ("fit"), keep them one ("fixed"), or fit it for captures ``rigtool track`` wrote ("auto",
#: the default: a camera's lab frame comes from a board on the floor)
LAB_FRAME_CHOICES = ("auto", "fit", "fixed")


def add_method_argument(p: argparse.ArgumentParser, what: str) -> None:
    """The ``--method`` option; ``what`` says which fits it applies to."""
    p.add_argument("--method", choices=FIT_METHODS, default=FIT_METHODS[0],
                   help=f"{what}: maximum-likelihood output-error refinement of the "
                        "equation-error fit (default), or the equation-error fit alone (faster)")


def check_method(method: str) -> None:
    """ValueError (a programming error, not a user's) unless ``method`` is in FIT_METHODS."""
    if method not in FIT_METHODS:
        raise ValueError(f"method must be one of {FIT_METHODS}")
