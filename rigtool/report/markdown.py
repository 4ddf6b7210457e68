"""report.md: the report :class:`~rigtool.report.blocks.Document` as GitHub-flavoured
Markdown (numeric columns right-aligned, units in the headers, figures with captions)."""

from __future__ import annotations

from rigtool.report.blocks import Bullets, Document, Fig, FileLinks, Para, Sub, Table
from rigtool.report.content_summary import LEVEL_MARK


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table_markdown(t: Table) -> list[str]:
    """A table's Markdown lines (a caption becomes the paragraph below it)."""
    head = "| " + " | ".join(_cell(c.label()) for c in t.columns) + " |"
    rule = "|" + "|".join("---:" if c.numeric else "---" for c in t.columns) + "|"
    lines = [head, rule]
    for row in t.rows:
        cells = list(row)
        if t.kind == "checks":
            cells[0] = f"{LEVEL_MARK.get(cells[0], '')} {cells[0]}"
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if t.caption:
        lines += ["", t.caption]
    return lines


def render_markdown(doc: Document) -> str:
    """The whole report as Markdown text."""
    lines = [f"# {doc.title}", "", doc.subtitle, "", "Contents: " + " · ".join(
        f"[{s.title}](#{s.id})" for s in doc.sections)]
    for sec in doc.sections:
        lines += ["", f'<a id="{sec.id}"></a>', "", f"## {sec.title}", ""]
        for b in sec.blocks:
            if isinstance(b, Para) and b.kind.startswith("verdict-"):
                lines += [f"**{LEVEL_MARK.get(b.kind[8:], '')} {b.text}**", ""]
            elif isinstance(b, Para):
                lines += [b.text, ""]
            elif isinstance(b, Sub):
                lines += [f"### {b.text}", ""]
            elif isinstance(b, Table):
                lines += table_markdown(b) + [""]
            elif isinstance(b, Bullets):
                marks = [LEVEL_MARK.get(lv, "") + " " for lv in b.levels] or [""] * len(b.items)
                lines += [f"- {m}{i}" for m, i in zip(marks, b.items)] + [""]
            elif isinstance(b, FileLinks):
                lines += [f"- [`{f}`]({f}): {t}" for f, t in b.items] + [""]
            elif isinstance(b, Fig):
                lines += [f"![{b.file}]({b.file})", "", f"*{b.caption}*", ""]
    return "\n".join(lines).rstrip() + "\n"


__all__ = ["render_markdown", "table_markdown"]
