"""One table per scenario of rigtool's default method, from what ``accuracy.py`` prints.

``benchmarks/accuracy.py`` prints, per scenario, its accuracy table (every method), the
whitened-error table and the Cramer-Rao table. RESULTS.md's "rigtool's default" tables put the
rigtool-OE rows of the three side by side, per noise level; this script writes them from the
printed tables, so an update is a paste::

    python3 benchmarks/accuracy.py --from-json benchmarks/results/accuracy_ee_two-link.json.gz \\
        benchmarks/results/accuracy_oe_two-link.json.gz | python3 benchmarks/accuracy_summary.py

Reads standard input (or the files named), writes Markdown to standard output.
"""

from __future__ import annotations

import argparse
import re
import sys

METHOD = "rigtool-OE"
HEADER = ("| sigma mm | seeds | COM mm | inertia % | Phi_B E_MS/M0 mm | Phi_B E_J/Im % | "
          "coverage post. / Phi_s / Phi_B | chi2/dof post. / Phi_s / Phi_B | "
          "whitened within ±2 | CRB ratio median / worst |")


def tables(text: str) -> dict[str, list[dict[str, str]]]:
    """The Markdown tables after each ``### Title`` line: title -> rows (header -> cell)."""
    out: dict[str, list[dict[str, str]]] = {}
    title, block = None, []

    def close() -> None:
        if title is not None and len(block) > 2 and title not in out:
            head = block[0]
            out[title] = [dict(zip(head, row)) for row in block[2:]]

    for line in text.splitlines() + [""]:
        if line.startswith("### "):
            close()
            title, block = line[4:].strip(), []
        elif line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif block:
            close()
            block = []
    return out


def _find(found: dict, prefix: str) -> list[dict[str, str]]:
    for title, rows in found.items():
        if title.startswith(prefix):
            return rows
    raise SystemExit(f"no '### {prefix}...' table in the input")


def summary(scenario_text: str) -> str:
    """The rigtool-OE summary table of one scenario's printed tables."""
    found = tables(scenario_text)
    acc = {r["sigma mm"]: r for r in _find(found, "Accuracy") if r["method"] == METHOD}
    white = {r["sigma mm"]: r for r in _find(found, "Whitened errors") if r["method"] == METHOD}
    crb = {r["sigma mm"]: r for r in _find(found, "Posture fit against the Cramer-Rao bound")
           if r["method"] == METHOD}
    lines = [HEADER, "|---|---|---|---|---|---|---|---|---|---|"]
    for sigma, a in acc.items():
        w, c = white[sigma], crb[sigma]
        cover = " / ".join(a[k].rstrip("%") for k in ("cover post.", "cover Phi_s",
                                                      "cover Phi_B")) + " %"
        within = re.sub(r"\s*%", "", w["whitened within +-2: post. / Phi_s / Phi_B"]) + " %"
        lines.append(f"| {sigma} | {a['seeds']} | {a['COM mm']} | {a['inertia %']} | "
                     f"{a['Phi_B E_MS/M0 mm']} | {a['Phi_B E_J/Im %']} | {cover} | "
                     f"{w['chi2/dof post. / Phi_s / Phi_B']} | {within} | "
                     f"{c['median ratio']} / {c['max ratio']} |")
    pooled = crb.get("pooled")
    if pooled:
        lines.append(f"| pooled | {pooled['seeds']} draws | | | | | | | | "
                     f"{pooled['median ratio']} / {pooled['max ratio']} "
                     f"({pooled['worst (posture.param)']}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="accuracy.py's output (default: standard input)")
    args = ap.parse_args(argv)
    text = "".join(open(f).read() for f in args.files) if args.files else sys.stdin.read()
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    if not parts:
        raise SystemExit("no '## SCENARIO' heading in the input: is it accuracy.py's output?")
    for part in parts:
        print(f"{part.splitlines()[0].split(':')[0]}, {METHOD}:\n\n{summary(part)}\n")


if __name__ == "__main__":
    main()
