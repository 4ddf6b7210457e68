"""Every number rigtool reported against the truth: its error over its own standard error,
and the non-green checks of the report that could name a cause."""

from __future__ import annotations

import numpy as np

_SIX = (("xx", 0, 0), ("yy", 1, 1), ("zz", 2, 2), ("yz", 1, 2), ("zx", 2, 0), ("xy", 0, 1))

#: the checks that judge each group's numbers (besides a check naming the item itself)
GROUP_CHECKS = {
    "postures": {"postures_held", "marker_residual", "markers_still", "mass", "soft_tissue",
                 "calibration", "fit_messages"},
    "phi_s": {"phi_s", "postures_held", "marker_residual", "mass", "soft_tissue",
              "calibration", "fit_messages"},
    "phi_b": {"bounds", "segments", "marker_residual", "fit_messages", "calibration"},
    "segments": {"segments", "bounds", "fit_messages"},
}


def _row(group, item, entry, est, tru, std):
    z = (est - tru) / std if std is not None and np.isfinite(std) and std > 0 else None
    return {"group": group, "item": item, "entry": entry, "estimate": float(est),
            "truth": float(tru), "error": float(est - tru),
            "std": None if std is None else float(std), "z": None if z is None else float(z)}


def numbers(report: dict, truth: dict) -> list[dict]:
    """Rows (group, item, entry, estimate, truth, error, std, z) of every reported number
    that has a truth: postures' COM and inertia, Phi_s, Phi_B, the segments."""
    out = []
    tp = {p["name"]: p for p in truth.get("postures", [])}
    for p in report.get("postures", []):
        t = tp.get(p["name"])
        if t is None:
            continue
        for k in range(3):
            out.append(_row("postures", p["name"], f"{p['name']}.com[{k}]", p["com"][k],
                            t["com"][k], p["com_std"][k]))
        for lab, a, b in _SIX:
            out.append(_row("postures", p["name"], f"{p['name']}.I_{lab}",
                            p["inertia_com"][a][b], t["inertia_com"][a][b],
                            p["inertia_com_std"][a][b]))
    for group, block, tkey in (("phi_s", report.get("subset"), "phi_s"),
                               ("phi_b", (report.get("relative_motion") or {}).get("phi_b"),
                                "phi_b")):
        if not block or not truth.get(tkey):
            continue
        tv = dict(zip(truth[tkey]["names"], truth[tkey]["values"]))
        for n, v, s in zip(block["names"], block["values"], block["std"]):
            if n in tv and v is not None:
                out.append(_row(group, n.split(".")[0], f"{group} {n}", v, tv[n], s))
    tl = {lk["name"]: lk for lk in truth.get("links", [])}
    for name, ls in ((report.get("segments") or {}).get("links") or {}).items():
        t = tl.get(name)
        if t is None or ls.get("mass") is None:
            continue
        out.append(_row("segments", name, f"{name}.mass", ls["mass"], t["mass"], ls["mass_std"]))
        for k in range(3):
            out.append(_row("segments", name, f"{name}.com[{k}]", ls["com"][k], t["com"][k],
                            ls["com_std"][k]))
        for lab, a, b in _SIX:
            out.append(_row("segments", name, f"{name}.I_{lab}", ls["inertia_com"][a][b],
                            t["inertia_com"][a][b], ls["inertia_com_std"][a][b]))
    return out


def nongreen(report: dict) -> list[dict]:
    """The report's checks at caution or problem: key, level, finding, and their text."""
    out = []
    for c in report.get("checks", []):
        if c.get("level") in ("caution", "problem"):
            out.append({"key": c["key"], "level": c["level"], "finding": c.get("finding", ""),
                        "text": repr(c)})
    return out


def named_by(row: dict, checks: list[dict]) -> list[str]:
    """The non-green checks that judge ``row``: one of its group's checks, or one whose
    text names its item (posture or link)."""
    return [c["key"] for c in checks
            if c["key"] in GROUP_CHECKS[row["group"]] or row["item"] in c["text"]]
