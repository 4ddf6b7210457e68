"""The CSV tables next to report.json: every parameter with its standard error and unit
(postures.csv, subset.csv, minimal_parameters.csv, segments.csv with the source flags).
SI units; numbers with 9 significant digits."""

from __future__ import annotations

from typing import TYPE_CHECKING

import csv
from pathlib import Path

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.session import SessionOutcome

_INERTIA_ENTRIES = ((0, 0, "xx"), (1, 1, "yy"), (2, 2, "zz"), (1, 2, "yz"), (2, 0, "zx"),
                    (0, 1, "xy"))


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    """One CSV file; floats written with 9 significant digits."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            w.writerow([f"{v:.9g}" if isinstance(v, float) else v for v in row])
    return path


def parameter_unit(name: str) -> str:
    """The unit of a Phi_s or Phi_B entry by its name: ``kg m`` for a first moment
    (``link.MS_x``), ``kg m^2`` for the second moments (``link.J_xy``, ``sum.J_yy``)."""
    return "kg m" if ".MS_" in name else "kg m^2"


def write_tables(out: SessionOutcome, out_dir: Path) -> list[Path]:
    """Every CSV table of a session outcome; returns the paths written."""
    written = []
    if out.subset is not None:
        written.append(write_csv(out_dir / "subset.csv", ["name", "value", "std", "unit"],
                                 [[n, float(v), float(s), parameter_unit(n)] for n, v, s in
                                  zip(out.subset.names, out.subset.values, out.subset.std)]))
    if out.relative is not None:
        rel = out.relative
        written.append(write_csv(
            out_dir / "minimal_parameters.csv", ["name", "value", "std", "unit"],
            [[n, float(v), float(sd), parameter_unit(n)]
             for n, v, sd in zip(rel.names, rel.values, rel.std_phi_b)]))
    if out.segments is not None:
        rows = []
        for name, ls in out.segments.links.items():
            rows.append([name, "mass", float(ls.mass_kg), float(ls.mass_std), "kg",
                         ls.source["mass"]])
            for k, axis in enumerate("xyz"):
                rows.append([name, f"com_{axis}", float(ls.com_m[k]), float(ls.com_std[k]),
                             "m", ls.source["com"][k]])
            for a, b, lab in _INERTIA_ENTRIES:
                rows.append([name, f"inertia_com_{lab}", float(ls.inertia_com[a, b]),
                             float(ls.inertia_com_std[a, b]), "kg m^2",
                             ls.source["inertia_com"][a][b]])
        written.append(write_csv(out_dir / "segments.csv",
                                 ["link", "quantity", "value", "std", "unit", "source"], rows))
    rows = []
    for p in out.postures:
        res = p.result
        for k, axis in enumerate("xyz"):
            rows.append([res.name, f"com_{axis}", float(res.com[k]), float(res.com_std[k]), "m"])
        for a, b, lab in _INERTIA_ENTRIES:
            rows.append([res.name, f"inertia_com_{lab}", float(res.inertia_com[a, b]),
                         float(res.inertia_com_std[a, b]), "kg m^2"])
    written.append(write_csv(out_dir / "postures.csv",
                             ["posture", "quantity", "value", "std", "unit"], rows))
    return written


__all__ = ["write_csv", "write_tables"]
