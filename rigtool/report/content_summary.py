"""The report's first sections: the summary (the object, its segments, the verdict of the
checks, the method of each stage) and the checks in full (what each means and what to do).

Built from report.json's ``summary`` and ``checks`` blocks. Units: COM in mm, inertia in
kg m^2, masses in kg.
"""

from __future__ import annotations

from rigtool.report.blocks import Bullets, Col, Para, Section, Table

LEVEL_MARK = {"ok": "🟢", "caution": "🟠", "problem": "🔴", "not checked": "⚪"}
VERDICT = {"ok": "All checks pass", "caution": "Usable, with cautions",
           "problem": "A problem needs attention", "not checked": "Nothing could be checked"}
SOURCE_NOTE = ("Source: where each number came from: the vibration (it fixes the number "
               "alone), the prior (the vibration is silent), the vibration and the prior "
               "together, or mixed (entries differ; segments.csv flags every entry).")
#: a source flag of report.json (``measured``, ``prior``, ``both``, ``mixed``) in words
SOURCE_WORDS = {"measured": "vibration", "prior": "prior", "both": "vibration and prior",
                "mixed": "mixed"}


def source_words(src: dict) -> str:
    """A segment's ``source`` flags (``mass``, ``com``, ``inertia``) in words: one phrase
    when the three agree (``mass, COM, inertia: vibration and prior``), else one each."""
    words = [SOURCE_WORDS.get(src[k], src[k]) for k in ("mass", "com", "inertia")]
    if len(set(words)) == 1:
        return f"mass, COM, inertia: {words[0]}"
    return "; ".join(f"{name}: {w}" for name, w in zip(("mass", "COM", "inertia"), words))


def _pm(v, s, scale: float = 1.0, digits: int = 2) -> str:
    if v is None:
        return "–"
    if s is None:
        return f"{scale * v:.{digits}f}"
    return f"{scale * v:.{digits}f} ± {scale * s:.{digits}f}"


def segments_table(summary: dict) -> Table:
    """Per link: mass, COM, principal moments, source flags."""
    cols = [Col("link", numeric=False), Col("mass", "kg"), Col("COM x", "mm"),
            Col("COM y", "mm"), Col("COM z", "mm"), Col("I₁", "kg m²"), Col("I₂", "kg m²"),
            Col("I₃", "kg m²"), Col("source", numeric=False)]
    rows = []
    for s in summary["segments"]:
        pm_std = s.get("principal_moments_std") or [None] * 3
        rows.append([s["link"], _pm(s["mass"], s["mass_std"], digits=3)]
                    + [_pm(s["com"][k], s["com_std"][k], 1e3, 1) for k in range(3)]
                    + [_pm(m, sd, digits=4) for m, sd in zip(s["principal_moments"], pm_std)]
                    + [source_words(s["source"])])
    return Table(cols, rows, "Each link's own mass, COM (link frame) and principal moments "
                 "about its COM, ± one standard error. " + SOURCE_NOTE)


def overall_table(summary: dict) -> Table:
    """Per posture: the whole object's COM and principal moments (no segment parameters)."""
    cols = [Col("posture", numeric=False), Col("mass", "kg"), Col("COM x", "mm"),
            Col("COM y", "mm"), Col("COM z", "mm"), Col("I₁", "kg m²"), Col("I₂", "kg m²"),
            Col("I₃", "kg m²"), Col("method", numeric=False)]
    rows = [[o["posture"], f"{o['mass']:.3f}"]
            + [_pm(o["com"][k], o["com_std"][k], 1e3, 2) for k in range(3)]
            + [_pm(m, sd, digits=4) for m, sd in
               zip(o["principal_moments"], o.get("principal_moments_std") or [None] * 3)]
            + [o["method"]]
            for o in summary["overall"]]
    return Table(cols, rows, "The whole object in each posture: COM (base-link frame) and "
                 "principal moments of inertia about the COM, ± one standard error (the "
                 "moments' first order in the inertia's full covariance).")


def checks_table(checks: list[dict]) -> Table:
    """One row per check: its light, what is checked, what was found."""
    cols = [Col("status", numeric=False), Col("check", numeric=False),
            Col("finding", numeric=False)]
    rows = [[c["level"], c["title"], c["finding"]] for c in checks]
    return Table(cols, rows, kind="checks")


def methods_table(summary: dict) -> Table:
    cols = [Col("stage", numeric=False), Col("method", numeric=False),
            Col("note", numeric=False)]
    return Table(cols, [[m["stage"], m["method"], m["note"]] for m in summary["methods"]])


def summary_section(doc: dict) -> Section:
    """The first screen."""
    s = doc["summary"]
    c = s["counts"]
    counts = ", ".join(f"{c[lv]} {lv}" for lv in ("problem", "caution", "ok", "not checked")
                       if c.get(lv))
    blocks: list = [Para(s["object"], "lead"),
                    Para(f"{VERDICT[s['verdict']]} ({counts}).", f"verdict-{s['verdict']}")]
    blocks.append(segments_table(s) if s["segments"] else overall_table(s))
    blocks.append(checks_table(doc["checks"]))
    blocks.append(methods_table(s))
    return Section("summary", "Summary", blocks)


def checks_section(doc: dict) -> Section:
    """Every check in full: finding, meaning, what to do."""
    items = []
    for c in doc["checks"]:
        text = f"**{c['title']}** ({c['level']}): {c['finding']}."
        if c["meaning"]:
            text += f" {c['meaning']}"
        if c["action"]:
            text += f" What to do: {c['action']}"
        items.append(text)
    blocks: list = [Bullets(items, tuple(c["level"] for c in doc["checks"]))]
    if doc["warnings"]:
        blocks += [Para("Warnings (the checks above that are not green, as report.json "
                        "lists them):"), Bullets(list(doc["warnings"]))]
    else:
        blocks.append(Para("No warnings."))
    return Section("checks", "Checks", blocks)


__all__ = ["summary_section", "checks_section", "LEVEL_MARK", "SOURCE_WORDS", "source_words"]
