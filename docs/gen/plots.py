"""Draw the plots of the Performance and accuracy pages from the tables in benchmarks/RESULTS.md.

The tables are the one source of every figure: this script reads them (the sections between
``--8<-- [start:NAME]`` and ``--8<-- [end:NAME]`` markers, which the documentation also
includes) and writes small PNGs under docs/img/. Run it after updating a table::

    python3 docs/gen/plots.py

Written here rather than generated at every build: the PNGs are committed so that README.md and
the pages show them on a code host without building, and the site build does not need
matplotlib's font cache.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
OUT = ROOT / "docs" / "img"

#: small figures: one column of a documentation page
FIGSIZE = (5.6, 3.4)
DPI = 100


def section(name: str, text: str | None = None) -> str:
    """The text of RESULTS.md between the ``[start:name]`` and ``[end:name]`` markers."""
    text = RESULTS.read_text() if text is None else text
    m = re.search(rf"--8<-- \[start:{re.escape(name)}\].*?\n(.*?)\n[^\n]*--8<-- \[end:{re.escape(name)}\]",
                  text, re.S)
    if m is None:
        raise SystemExit(f"{RESULTS}: no section {name!r}")
    return m.group(1)


def tables(text: str) -> list[list[dict[str, str]]]:
    """Every Markdown table of ``text`` as a list of rows (header -> cell)."""
    out, block = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        if len(block) > 2:
            head = block[0]
            out.append([dict(zip(head, row)) for row in block[2:]])
        block = []
    return out


def number(cell: str) -> float:
    """The first number of a cell (``**0.0035**``, ``1.2 / 3.4``, ``582``)."""
    m = re.search(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", cell.replace("**", ""))
    if m is None:
        raise ValueError(f"no number in {cell!r}")
    return float(m.group(0))


def _plain_ticks(axis, ticks) -> None:
    """Log-scale ticks written as plain numbers (0.05, 0.1, ...), without minor labels."""
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(ScalarFormatter())
    axis.set_minor_formatter(NullFormatter())


SIGMAS = [0.05, 0.1, 0.2, 0.5]


def _save(fig, name: str, rect=(0, 0, 1, 1)) -> None:
    fig.tight_layout(rect=rect)
    path = OUT / name
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")


def accuracy_vs_noise(text: str) -> None:
    """Posture COM error and Φ_B's E_J/Im against the marker noise, rigtool against paper 002."""
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 4.2))
    styles = {"paper002": ("o--", "paper 002's procedure"),
              "rigtool-EE": ("s:", "rigtool, equation error"),
              "rigtool-OE": ("D-", "rigtool (default, output error)")}
    for table, scenario, fill in zip(tables(section("accuracy-compare", text))[:2],
                                     ("two-link", "four-link"), ("full", "none")):
        for method, (style, label) in styles.items():
            rows = [r for r in table if r["method"] == method]
            sigma = [number(r["sigma mm"]) for r in rows]
            for ax, col in zip(axes, ("COM mm", "Phi_B E_J/Im %")):
                ax.plot(sigma, [number(r[col]) for r in rows], style, fillstyle=fill,
                        color={"paper002": "C3", "rigtool-EE": "C1", "rigtool-OE": "C0"}[method],
                        label=f"{label}, {scenario}")
    for ax, title in zip(axes, ("posture COM error, mm", "Φ_B inertia error E_J/Im, %")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("marker noise σ, mm")
        _plain_ticks(ax.xaxis, SIGMAS)
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=7.5, frameon=False)
    _save(fig, "accuracy_vs_noise.png", rect=(0, 0.17, 1, 1))


def crb_ratio(text: str) -> None:
    """The posture fits' RMS error over the Cramér-Rao bound, median and worst parameter."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    for table, scenario, color in zip(tables(section("accuracy-default", text))[:2],
                                      ("two-link", "four-link"), ("C0", "C2")):
        rows = [r for r in table if not r["sigma mm"].startswith("pooled")]
        sigma = [number(r["sigma mm"]) for r in rows]
        col = "CRB ratio median / worst"
        median = [number(r[col]) for r in rows]
        worst = [number(r[col].split("/")[1]) for r in rows]
        ax.plot(sigma, median, "o-", color=color, label=f"{scenario}: median parameter")
        ax.plot(sigma, worst, "o--", color=color, fillstyle="none",
                label=f"{scenario}: worst parameter")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    _plain_ticks(ax.xaxis, SIGMAS)
    ax.set_ylim(0.6, 1.8)
    ax.set_xlabel("marker noise σ, mm")
    ax.set_ylabel("RMS error / √CRB")
    ax.set_title("Locked postures against the Cramér-Rao bound", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    _save(fig, "crb_ratio.png")


def relative_speed(text: str) -> None:
    """The relative-motion fit's wall time against links and against the swing's length."""
    links = tables(section("speed-links", text))[0]
    swing = tables(section("speed-swing", text))[0]
    fig, (a, b) = plt.subplots(1, 2, figsize=(7.2, 3.2))
    n = [number(r["links"]) for r in links]
    a.plot(n, [number(r["relative fit, wall s"]) for r in links], "o-", label="wall")
    a.plot(n, [number(r["relative fit, CPU s"]) for r in links], "s--", label="CPU")
    a.set_xlabel("links")
    a.set_xticks(n)
    a.set_ylabel("s")
    a.set_title("relative fit, 10 s swing", fontsize=10)
    a.legend(fontsize=8)
    length = [number(r["swing"]) for r in swing]
    b.plot(length, [number(r["relative fit, wall s"]) for r in swing], "o-", label="wall, s")
    b2 = b.twinx()
    b2.plot(length, [number(r["peak memory MiB"]) for r in swing], "s:", color="C3",
            label="peak memory, MiB")
    b.set_xscale("log")
    b.set_yscale("log")
    _plain_ticks(b.xaxis, length)
    _plain_ticks(b.yaxis, [1, 2, 5, 10, 20, 50])
    b.set_xlabel("swing fitted, s")
    b.set_ylabel("wall s")
    b2.set_ylabel("peak MiB", color="C3")
    b2.set_ylim(0, 2000)
    b.set_title("relative fit, 2 links", fontsize=10)
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.3)
    _save(fig, "relative_fit_speed.png")


def engine_tangents(text: str) -> None:
    """CPU ms per frame of the tree's exact tangents against the number of bodies."""
    kernels, choice = tables(section("engine", text))[:2]
    fig, ax = plt.subplots(figsize=FIGSIZE)
    nb = [number(r["nb"]) for r in kernels]
    ax.plot(nb, [number(r["numba kernels, CPU ms"]) for r in kernels], "D-",
            label="rigtool's numba kernels (exact)")
    ax.plot(nb, [number(r["JAX, CPU ms"]) for r in kernels], "o-", label="JAX forward mode (exact)")
    nb2 = [number(r["nb"]) for r in choice]
    ax.plot(nb2, [number(r["pinocchio variational (calls alone)"]) for r in choice], "s--",
            label="pinocchio from Python (exact)")
    ax.plot(nb2, [number(r["numba P+1 forward differences"]) for r in choice], "^:",
            label="numba forward differences (inexact)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _plain_ticks(ax.xaxis, nb)
    ax.set_xlabel("bodies in the tree")
    ax.set_ylabel("CPU ms per frame")
    ax.set_title("The tree's tangents, per simulated frame", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    _save(fig, "engine_tangents.png")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    text = RESULTS.read_text()
    accuracy_vs_noise(text)
    crb_ratio(text)
    relative_speed(text)
    engine_tangents(text)


if __name__ == "__main__":
    main()
