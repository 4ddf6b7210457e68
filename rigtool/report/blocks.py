"""The report as a document, independent of its format: sections holding paragraphs, tables
(columns with their units, numbers right-aligned), lists, figures with captions and the
checks' traffic lights. rigtool.report.markdown and rigtool.report.html render it.

Text may hold Markdown ``code`` spans (backticks); renderers escape everything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Col:
    """A table column: ``header`` (no unit), ``unit`` (shown in the header, e.g. ``mm``),
    ``numeric`` (right-aligned)."""

    header: str
    unit: str = ""
    numeric: bool = True

    def label(self) -> str:
        """The header as text: ``COM x [mm]``."""
        return f"{self.header} [{self.unit}]" if self.unit else self.header


@dataclass(frozen=True)
class Table:
    """Rows of preformatted cells under ``columns``; ``caption`` below it; ``kind`` a style
    hint (``"checks"``: the first cell of each row is a check level)."""

    columns: list[Col]
    rows: list[list[str]]
    caption: str = ""
    kind: str = ""


@dataclass(frozen=True)
class Para:
    """A paragraph; ``kind`` a style hint (``"verdict-<level>"``, ``"lead"``)."""

    text: str
    kind: str = ""


@dataclass(frozen=True)
class Bullets:
    """A list of items; ``levels`` (one check level per item, or empty) marks each item with
    its check's light."""

    items: list[str]
    levels: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileLinks:
    """Files next to the report, each linked, with a line of text: ``items`` of
    ``(file, text)``."""

    items: list[tuple[str, str]]


@dataclass(frozen=True)
class Fig:
    """A figure file (next to the report) with its caption."""

    file: str
    caption: str


@dataclass(frozen=True)
class Sub:
    """A sub-heading inside a section."""

    text: str


@dataclass
class Section:
    """A top-level section (one entry of the table of contents)."""

    id: str
    title: str
    blocks: list = field(default_factory=list)


@dataclass
class Document:
    """The whole report: a title line, a subtitle and its sections (summary first)."""

    title: str
    subtitle: str
    sections: list[Section]


__all__ = ["Col", "Table", "Para", "Bullets", "FileLinks", "Fig", "Sub", "Section", "Document"]
