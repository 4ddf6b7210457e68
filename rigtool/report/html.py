"""report.html: the report :class:`~rigtool.report.blocks.Document` as one self-contained page.

Figures are embedded as base64 PNG (the same bytes as the files next to it), styles inline,
no script and no external resource. The summary comes first; the table of contents follows
it (a sidebar on wide screens); numbers are right-aligned in tabular figures with the units
in the column headers; figures carry captions; a print style drops the navigation and keeps
figures and table rows whole.
"""

from __future__ import annotations

import base64
import html as _html
import re
from pathlib import Path

from rigtool.report.blocks import Bullets, Document, Fig, FileLinks, Para, Sub, Table

_STYLE = """
:root{--ok:#1e8e3e;--caution:#e37400;--problem:#c5221f;--na:#9aa0a6;--rule:#d0d4d9}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#202124;
 margin:0;line-height:1.4;font-size:15px}
main{max-width:1120px;margin:0 auto;padding:12px 24px 48px}
header h1{font-size:22px;margin:4px 0 0}header p{margin:2px 0 8px;color:#5f6368;font-size:13px}
h2{font-size:19px;margin:28px 0 8px;padding-top:6px;border-top:2px solid var(--rule)}
h3{font-size:16px;margin:18px 0 6px}
#summary h2{border-top:none;margin-top:4px}
#summary{background:#f8f9fa;border:1px solid var(--rule);border-radius:6px;padding:4px 16px 10px}
p.lead{font-size:16px;margin:4px 0 6px}
p.verdict{font-size:17px;font-weight:600;margin:6px 0 10px;padding:6px 10px;border-radius:4px;
 border-left:6px solid var(--na);background:#fff}
p.verdict-ok{border-left-color:var(--ok)}p.verdict-caution{border-left-color:var(--caution)}
p.verdict-problem{border-left-color:var(--problem)}
table{border-collapse:collapse;font-size:13px;margin:6px 0 4px;background:#fff}
th,td{border:1px solid var(--rule);padding:3px 7px;vertical-align:top}
th{background:#eef0f2;font-weight:600;text-align:left}
th.num,td.num{text-align:right;font-variant-numeric:tabular-nums}
td.num .nw{white-space:nowrap}
div.table{max-width:100%;overflow-x:auto}
th .unit{font-weight:400;color:#5f6368;white-space:nowrap}
p.caption,figcaption{font-size:12.5px;color:#5f6368;margin:2px 0 12px;max-width:900px}
.light{display:inline-block;width:.85em;height:.85em;border-radius:50%;margin-right:6px;
 vertical-align:-1px;background:var(--na)}
.light.ok{background:var(--ok)}.light.caution{background:var(--caution)}
.light.problem{background:var(--problem)}
table.checks td:first-child,table.checks td:nth-child(2){white-space:nowrap}
table.checks tr.problem td{background:#fce8e6}table.checks tr.caution td{background:#fef7e0}
figure{margin:12px 0 18px}figure img{max-width:100%;height:auto;border:1px solid #eee}
code{font-size:12px;background:#f1f3f4;padding:0 3px;border-radius:3px;overflow-wrap:anywhere}
figcaption code{white-space:nowrap}
nav#toc{font-size:13.5px;margin:10px 0 0}nav#toc ol{margin:4px 0;padding-left:22px}
nav#toc a{color:#1a73e8;text-decoration:none}
@media (min-width:1500px){nav#toc{position:fixed;top:16px;left:16px;width:230px;margin:0}}
@media print{
 nav#toc{display:none}body{font-size:10pt}main{max-width:none;padding:0}
 #summary{background:none;border:none;padding:0}
 h2{break-after:avoid;border-top:1px solid #999}h3{break-after:avoid}
 figure,tr{break-inside:avoid}table{font-size:8.5pt}
 table.checks tr.problem td,table.checks tr.caution td{background:none}
 a{color:inherit;text-decoration:none}
}
"""


def inline(text: str) -> str:
    """Escaped text with Markdown ``code`` spans as <code> and ``**bold**`` as <strong>."""
    parts = _html.escape(str(text)).split("`")
    out = []
    for i, p in enumerate(parts):
        if i % 2:
            out.append(f"<code>{p}</code>")
        else:
            out.append(re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", p))
    return "".join(out)


def _number(text: str) -> str:
    """A numeric cell: ``value ± std`` may wrap before the ``±``, never inside a number."""
    return " ".join(f'<span class="nw">{inline(part)}</span>'
                    for part in re.split(r" (?=± )", str(text)))


def _table(t: Table) -> str:
    head = "".join(
        f'<th class="{"num" if c.numeric else "txt"}">{_html.escape(c.header)}'
        + (f' <span class="unit">[{_html.escape(c.unit)}]</span>' if c.unit else "") + "</th>"
        for c in t.columns)
    rows = []
    for row in t.rows:
        cells = []
        for c, v in zip(t.columns, row):
            if c.numeric:
                cells.append(f'<td class="num">{_number(v)}</td>')
            else:
                cells.append(f'<td class="txt">{inline(v)}</td>')
        tr_cls = ""
        if t.kind == "checks":
            level = str(row[0])
            css = level.replace(" ", "-")
            cells[0] = (f'<td class="txt"><span class="light {css}"></span>'
                        f"{_html.escape(level)}</td>")
            tr_cls = f' class="{css}"'
        rows.append(f"<tr{tr_cls}>" + "".join(cells) + "</tr>")
    cls = f' class="{t.kind}"' if t.kind else ""
    # a table wider than the page scrolls inside its box, never the page
    out = f'<div class="table"><table{cls}><thead><tr>{head}</tr></thead><tbody>' + \
        "".join(rows) + "</tbody></table></div>"
    if t.caption:
        out += f'<p class="caption">{inline(t.caption)}</p>'
    return out


def _figure(f: Fig, out_dir: Path) -> str:
    data = base64.b64encode((out_dir / f.file).read_bytes()).decode()
    return (f'<figure><img alt="{_html.escape(f.file)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{inline(f.caption)} <code>{_html.escape(f.file)}</code>"
            "</figcaption></figure>")


def render_html(doc: Document, out_dir: Path) -> str:
    """The whole report as one HTML page (figures read from ``out_dir``)."""
    body = [f"<header><h1>{_html.escape(doc.title)}</h1><p>{inline(doc.subtitle)}</p>"
            "</header>"]
    toc = ('<nav id="toc" aria-label="Contents"><strong>Contents</strong><ol>'
           + "".join(f'<li><a href="#{s.id}">{_html.escape(s.title)}</a></li>'
                     for s in doc.sections) + "</ol></nav>")
    for k, sec in enumerate(doc.sections):
        parts = [f'<section id="{sec.id}"><h2>{_html.escape(sec.title)}</h2>']
        for b in sec.blocks:
            if isinstance(b, Para) and b.kind.startswith("verdict-"):
                level = b.kind[8:].replace(" ", "-")
                parts.append(f'<p class="verdict {b.kind.replace(" ", "-")}">'
                             f'<span class="light {level}"></span>{inline(b.text)}</p>')
            elif isinstance(b, Para):
                parts.append(f'<p class="{b.kind}">{inline(b.text)}</p>' if b.kind
                             else f"<p>{inline(b.text)}</p>")
            elif isinstance(b, Sub):
                parts.append(f"<h3>{_html.escape(b.text)}</h3>")
            elif isinstance(b, Table):
                parts.append(_table(b))
            elif isinstance(b, Bullets):
                lights = ([f'<span class="light {lv.replace(" ", "-")}"></span>'
                           for lv in b.levels] or [""] * len(b.items))
                parts.append("<ul>" + "".join(f"<li>{m}{inline(i)}</li>"
                                              for m, i in zip(lights, b.items)) + "</ul>")
            elif isinstance(b, FileLinks):
                parts.append("<ul>" + "".join(
                    f'<li><a href="{_html.escape(f, quote=True)}"><code>{_html.escape(f)}'
                    f"</code></a>: {inline(t)}</li>" for f, t in b.items) + "</ul>")
            elif isinstance(b, Fig):
                parts.append(_figure(b, out_dir))
        parts.append("</section>")
        body.append("".join(parts))
        if k == 0:
            body.append(toc)
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_html.escape(doc.title)}</title><style>{_STYLE}</style></head><body><main>"
            + "\n".join(body) + "</main></body></html>\n")


__all__ = ["render_html", "inline"]
