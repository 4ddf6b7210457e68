"""The batch summary: one table (CSV and Parquet, via pandas) and an HTML overview.

The table has one row per session and result: a row per posture (mass, COM, inertia about
the COM, wrench and marker residuals, fit method, iterations and time), per J_yy the
relative-motion stage resolved, and per link with segment parameters; a session without
results (bad input, internal error) has one row with its message. Every row carries the
session's status, the exit status it means, its preflight and run times and the link to its
report. Columns are in SI units (named with them); the table is built from each session's
report.json, so sessions skipped as up to date are summarised like those just run.

``index.html`` is one self-contained page: the sessions with their status, message and a
link to each ``KEY/report.html``, then the whole table.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import pandas as pd

from rigtool.batch.tasks import SessionRecord
from rigtool.errors import EXIT_OK, EXIT_PARTIAL

#: the table's columns, in order (units in the names; inertia about the COM, base-link axes)
COLUMNS = ("session", "status", "exit_status", "message", "kind", "item", "method",
           "mass_kg", "com_x_m", "com_y_m", "com_z_m", "com_std_max_m",
           "inertia_xx_kg_m2", "inertia_yy_kg_m2", "inertia_zz_kg_m2",
           "inertia_yz_kg_m2", "inertia_zx_kg_m2", "inertia_xy_kg_m2",
           "value", "value_std", "residual_force_N", "residual_torque_N_m",
           "marker_residual_rms_mm", "iterations", "fit_time_s",
           "preflight_s", "run_s", "worker", "report", "manifest")


def _report(record: SessionRecord) -> dict | None:
    try:
        return json.loads((Path(record.out_dir) / "report.json").read_text())
    except (OSError, ValueError):
        return None


def _body(entry: dict) -> dict:
    """Mass, COM and inertia-about-COM columns of a posture or segment entry."""
    com, inertia = entry.get("com") or [None] * 3, entry.get("inertia_com")
    row = {"mass_kg": entry.get("mass"), "com_x_m": com[0], "com_y_m": com[1],
           "com_z_m": com[2]}
    std = [s for s in (entry.get("com_std") or []) if s is not None]
    row["com_std_max_m"] = max(std) if std else None
    if inertia:
        for (i, j), name in zip(((0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1)),
                                ("xx", "yy", "zz", "yz", "zx", "xy")):
            row[f"inertia_{name}_kg_m2"] = inertia[i][j]
    return row


def _result_rows(doc: dict) -> list[dict]:
    rows = []
    for p in doc.get("postures", []):
        oe, res = p.get("output_error") or {}, p.get("residual_rms") or {}
        rows.append({"kind": "posture", "item": p.get("name"), "method": p.get("method"),
                     **_body(p), "residual_force_N": res.get("force"),
                     "residual_torque_N_m": res.get("torque"),
                     "marker_residual_rms_mm": oe.get("marker_residual_rms_mm"),
                     "iterations": oe.get("iterations"), "fit_time_s": oe.get("time_s")})
    rel = doc.get("relative_motion")
    if rel:
        oe, res = rel.get("output_error") or {}, rel.get("residual_rms") or {}
        used = oe.get("used", False)
        for name, value in (rel.get("resolved") or {}).items():
            rows.append({"kind": "relative_motion", "item": name, "method": rel.get("method"),
                         "value": value, "value_std": (rel.get("std") or {}).get(name),
                         "residual_force_N": res.get("force"),
                         "residual_torque_N_m": res.get("torque"),
                         "marker_residual_rms_mm": oe.get("marker_sigma_mm") if used else None,
                         "iterations": oe.get("iterations"), "fit_time_s": oe.get("elapsed_s")})
    for name, link in ((doc.get("segments") or {}).get("links") or {}).items():
        rows.append({"kind": "segment", "item": name, "method": link.get("prior"),
                     **_body(link)})
    return rows


def summary_rows(records: list[SessionRecord]) -> list[dict]:
    """The table's rows (dicts over :data:`COLUMNS`), sessions in ``records`` order."""
    rows = []
    for rec in records:
        common = {"session": rec.key, "status": rec.status, "exit_status": rec.exit_status,
                  "message": rec.message, "preflight_s": rec.preflight_s, "run_s": rec.run_s,
                  "worker": rec.worker, "manifest": rec.manifest}
        doc = _report(rec) if rec.exit_status in (EXIT_OK, EXIT_PARTIAL) else None
        if doc is not None:
            common["report"] = f"{rec.key}/report.html"
        results = _result_rows(doc) if doc is not None else []
        for r in results or [{"kind": "session", "item": rec.key}]:
            rows.append({c: {**common, **r}.get(c) for c in COLUMNS})
    return rows


def _replace(path: Path, write) -> None:
    """Write through a temporary file renamed into place (no half-written summary)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    write(tmp)
    os.replace(tmp, path)


def write_summary(records: list[SessionRecord], results: Path) -> list[Path]:
    """``summary.csv``, ``summary.parquet`` and ``index.html`` in ``results``."""
    results.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame(summary_rows(records), columns=list(COLUMNS))
    for col in COLUMNS[COLUMNS.index("mass_kg"):COLUMNS.index("worker")]:
        table[col] = table[col].astype("Int64" if col == "iterations" else "float64")
    table["exit_status"] = table["exit_status"].astype("Int64")
    out = [results / "summary.csv", results / "summary.parquet", results / "index.html"]
    _replace(out[0], lambda p: table.to_csv(p, index=False))
    _replace(out[1], lambda p: table.to_parquet(p, index=False))
    _replace(out[2], lambda p: p.write_text(overview_html(records, table), encoding="utf-8"))
    return out


_STYLE = """body{font-family:sans-serif;margin:2em;max-width:90em}
table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;padding:2px 6px}
th{background:#eee}.done,.skipped{color:#060}.bad{color:#a00}.internal{color:#a50}
.partial{color:#850}
pre{white-space:pre-wrap;margin:0}"""


def _cell(value) -> str:
    if value is None or pd.isna(value):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return html.escape(str(value))


def overview_html(records: list[SessionRecord], table) -> str:
    """The overview page: one line per session (status, message, link), then the table."""
    css = {"done": "done", "skipped": "skipped", "partial": "partial", "bad input": "bad",
           "internal error": "internal"}
    counts = {s: sum(r.status == s for r in records) for s in css}
    lines = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
             "<title>rigtool batch</title>", f"<style>{_STYLE}</style></head><body>",
             "<h1>rigtool batch</h1>",
             "<p>" + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + "</p>",
             "<h2>Sessions</h2>", "<table><tr><th>session</th><th>status</th>"
             "<th>exit status</th><th>run [s]</th><th>message</th></tr>"]
    for r in records:
        report = Path(r.out_dir) / "report.html"
        name = (f"<a href='{html.escape(r.key)}/report.html'>{html.escape(r.key)}</a>"
                if r.exit_status in (EXIT_OK, EXIT_PARTIAL) and report.is_file()
                else html.escape(r.key))
        message = f"<pre>{html.escape(r.message)}</pre>" if r.message else ""
        if r.detail:
            message += f"<details><summary>traceback</summary><pre>{html.escape(r.detail)}" \
                       "</pre></details>"
        lines.append(f"<tr><td>{name}</td><td class='{css[r.status]}'>{r.status}</td>"
                     f"<td>{r.exit_status}</td><td>{_cell(r.run_s)}</td><td>{message}</td>"
                     "</tr>")
    lines += ["</table>", "<h2>Results</h2>",
              "<p>Inertia about the COM in the base link's axes; residuals are RMS; the same "
              "table is in summary.csv and summary.parquet.</p>", "<table><tr>"
              + "".join(f"<th>{html.escape(c)}</th>" for c in table.columns
                        if c not in ("message", "manifest", "report")) + "</tr>"]
    for row in table.to_dict("records"):
        lines.append("<tr>" + "".join(f"<td>{_cell(v)}</td>" for c, v in row.items()
                                      if c not in ("message", "manifest", "report")) + "</tr>")
    lines += ["</table>", "</body></html>"]
    return "\n".join(lines) + "\n"


__all__ = ["COLUMNS", "summary_rows", "write_summary", "overview_html"]
