"""What one quality check of a session says: its traffic light, what was measured, and, when
it is not green, what that means and what to do.

Levels, from good to bad: ``"ok"`` (green: nothing to do), ``"caution"`` (amber: the numbers
stand, but something limits them and the report says what), ``"problem"`` (red: a number in
this report is likely wrong; the message says which and why), and ``"not checked"`` (grey:
the session has nothing this check could judge, e.g. no relative-motion capture). Only
``"caution"`` and ``"problem"`` become warnings (report.json ``warnings``, the command line);
each check is one line however many captures it covers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LEVELS = ("ok", "caution", "problem", "not checked")
#: the light shown for each level (HTML colour names are in rigtool.report.html)
LIGHTS = {"ok": "green", "caution": "amber", "problem": "red", "not checked": "grey"}


@dataclass(frozen=True)
class Check:
    """One check of the session.

    Attributes
    ----------
    key : str
        Stable identifier (``marker_residual``, ``markers_still``, ``postures_held``,
        ``mass``, ``phi_s``, ``bounds``, ``calibration``, ``segments``, ``fit_messages``).
    title : str
        What is checked, for people.
    level : str
        One of :data:`LEVELS`.
    finding : str
        What was measured, one sentence, every capture it concerns listed once.
    meaning, action : str
        When the level is not ``"ok"``: what the finding means for the numbers, and what to
        do about it.
    items : list of dict
        The figures behind the finding (per capture or per posture), for report.json.
    """

    key: str
    title: str
    level: str
    finding: str
    meaning: str = ""
    action: str = ""
    items: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, not {self.level!r}")

    @property
    def is_warning(self) -> bool:
        """True for ``"caution"`` and ``"problem"``."""
        return self.level in ("caution", "problem")

    def message(self) -> str:
        """The check as one warning line: title, finding, meaning, action."""
        text = f"{self.title}: {self.finding}."
        for part in (self.meaning, self.action):
            if part:
                text += f" {part}"
        return text

    def to_json(self) -> dict:
        """The report.json ``checks`` entry."""
        return {"key": self.key, "title": self.title, "level": self.level,
                "light": LIGHTS[self.level], "finding": self.finding,
                "meaning": self.meaning, "action": self.action, "items": list(self.items)}


def worst(levels: list[str]) -> str:
    """The worst of several levels (``"not checked"`` only when all are)."""
    for level in ("problem", "caution", "ok"):
        if level in levels:
            return level
    return "not checked"


def listing(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + f" and {names[-1]}"


__all__ = ["Check", "LEVELS", "LIGHTS", "worst", "listing"]
