"""The session's quality checks, in the order a reviewer asks for them.

Captures first (rigtool.report.checks_capture: marker residual against marker noise, markers
still on their bodies, postures held, the mass against the scale; rigtool.report.checks_living:
breathing, soft tissue, the support, skin markers, shown when they find something), then the
identification
(rigtool.report.checks_model: Phi_s rank and condition, physical bounds, the calibration's age
and held-out test, the segments against Phi_B), then whatever else the fits said, once.
Each check judges the estimate the report gives; a warning is a check that is not green.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

from rigtool.report.check_types import Check, worst
from rigtool.report.checks_capture import capture_checks
from rigtool.report.checks_living import living_checks
from rigtool.report.checks_model import fit_messages, model_checks

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.session import SessionOutcome


def session_checks(out: SessionOutcome, *, now: _dt.datetime | None = None
                   ) -> tuple[list[Check], list[str]]:
    """Every check of a session outcome, and the notes (method remarks, not warnings).

    Parameters
    ----------
    out : rigtool.pipeline.session.SessionOutcome
    now : datetime, optional
        The time the calibration's age is measured to (default: now, UTC).

    Returns
    -------
    checks : list of Check
    notes : list of str
    """
    others, notes = fit_messages(out)
    extra = [others] if others.is_warning else []          # shown only when there are any
    return capture_checks(out) + living_checks(out) + model_checks(out, now) + extra, notes


def verdict(checks: list[Check]) -> str:
    """One line: the worst light and how many checks are at each level."""
    level = worst([c.level for c in checks])
    counts = {lv: sum(c.level == lv for c in checks) for lv in ("problem", "caution", "ok")}
    head = {"ok": "All checks pass", "caution": "Usable, with cautions",
            "problem": "A problem needs attention",
            "not checked": "Nothing could be checked"}[level]
    tail = ", ".join(f"{n} {lv}" for lv, n in counts.items() if n)
    return f"{head} ({tail})."


__all__ = ["session_checks", "verdict", "Check"]
