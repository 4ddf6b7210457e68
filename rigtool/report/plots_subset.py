"""Figures of the subset Phi_s: its values with error bars, and its identifiability (the
singular values of the postures' unit-free, column-equilibrated regressor, each bar named by
the parameters its direction is made of, so the weakest and any null directions read as
combinations of named parameters).

Units: MS entries kg m, J entries kg m^2; singular values relative to the largest.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.report.png import pyplot, save_png


def subset_values_figure(sub: dict, path: Path) -> None:
    """Phi_s entries with ±2 standard-error bars (report.json ``subset`` block)."""
    plt = pyplot()
    vals = np.array([np.nan if v is None else v for v in sub["values"]], float)
    std = np.array([np.nan if v is None else v for v in sub["std"]], float)
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(vals) + 1.2))
    y = np.arange(len(vals))
    ax.errorbar(vals, y, xerr=2 * np.where(np.isfinite(std), std, 0), fmt="o", ms=3, capsize=2)
    ax.set_yticks(y, sub["names"], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0, color="0.7", lw=0.5)
    ax.set_xlabel("value (kg m or kg m²), error bars ±2 standard errors")
    ax.set_title("Subset of the minimal inertial parameters (Φ_s)", fontsize=9)
    fig.tight_layout()
    save_png(fig, path, dpi=90)


def _term_label(terms: list) -> str:
    return "  ".join(f"{'+' if c >= 0 else '−'}{abs(c):.2f} {n}" for n, c in terms)


def identifiability_figure(sub: dict, path: Path) -> None:
    """Singular values (log scale), strongest first, each named by its direction's terms;
    the rank tolerance drawn; directions below it (null) in red."""
    plt = pyplot()
    sv = np.array([np.nan if v is None else v for v in sub["singular_values"]], float)
    dirs = sub.get("singular_directions") or [[] for _ in sv]
    tol = float(sub.get("rank_tolerance", 1e-3))
    floor = min(tol / 10, np.nanmin(np.where(sv > 0, sv, np.nan)) / 3 if np.any(sv > 0)
                else tol / 10)
    shown = np.where(sv > 0, sv, floor)
    fig, ax = plt.subplots(figsize=(11, 0.3 * len(sv) + 1.4))
    y = np.arange(len(sv))
    null = sv <= tol
    ax.barh(y, shown, left=0, color=np.where(null, "tab:red", "tab:blue"), height=0.6,
            alpha=0.8)
    ax.set_xscale("log")
    ax.set_xlim(floor, 1.5)
    ax.axvline(tol, color="tab:red", lw=0.8, ls="--")
    ax.text(tol, len(sv) - 0.4, f" rank tolerance {tol:g}", color="tab:red", fontsize=7,
            va="top")
    ax.set_yticks(y, [f"σ{k + 1} = {v:.3g}" for k, v in enumerate(sv)], fontsize=7)
    ax.set_ylim(len(sv) - 0.5, -0.5)
    # the directions, named, as labels on the right (one per bar)
    right = ax.twinx()
    right.set_ylim(ax.get_ylim())
    right.set_yticks(y, [("null: " if null[k] else "") + _term_label(dirs[k])
                         for k in range(len(sv))], fontsize=6.5)
    for k, lab in enumerate(right.get_yticklabels()):
        lab.set_color("tab:red" if null[k] else "0.15")
    ax.set_xlabel("singular value relative to the largest (unit-free rows, columns "
                  "equilibrated)", fontsize=8)
    ax.set_title(f"Identifiability of Φ_s: rank {sub['rank']} of {len(sv)}, condition number "
                 f"{sub['condition_number']:.3g}; each direction named by its largest terms",
                 fontsize=9)
    fig.tight_layout()
    save_png(fig, path, dpi=90)


__all__ = ["subset_values_figure", "identifiability_figure"]
