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
    "base_parameters": {"segments", "postures_held", "marker_residual", "mass", "fit_messages",
                        "robot", "robot_markers", "calibration"},
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


#: the checks that name each effect of a living body the test bed simulates (a subject's
#: ``effects`` in the campaign's session entry)
CAUSE_CHECKS = {"breathing": {"breathing"}, "tissue": {"soft_tissue"}, "back": {"support"},
                "skin": {"skin", "markers_still"}}
_CAUSE_KEYS = set().union(*CAUSE_CHECKS.values())


def subject_causes(effects: dict | None) -> set[str]:
    """The checks that name a cause the subject has (from its drawn ``effects``)."""
    return set().union(*(CAUSE_CHECKS.get(k, set()) for k in (effects or {})))


def named_by_cause(row: dict, effects: dict | None) -> list[str]:
    """Of the checks judging ``row`` (its ``named_by``), those that name a cause the subject
    has: for a living body, a check of one of its effects; for a body without them, any
    check but one naming an effect it does not have (a wrong cause names nothing)."""
    causes = subject_causes(effects)
    if causes:
        return [k for k in row["named_by"] if k in causes]
    return [k for k in row["named_by"] if k not in _CAUSE_KEYS]


def false_causes(checks: list[dict], effects: dict | None) -> list[str]:
    """The non-green checks that name an effect of a living body the subject does not
    have (a soft tissue named on a rigid body, a breath on a body that does not breathe)."""
    causes = subject_causes(effects)
    return sorted({c["key"] for c in checks if c["key"] in _CAUSE_KEYS - causes})


_PARAMS = ("m", "MX", "MY", "MZ", "XX", "XY", "XZ", "YY", "YZ", "ZZ")


def standard_parameters(links: dict[str, tuple]) -> dict[str, float]:
    """``{"m_<link>": ..., "MX_<link>": ..., "XX_<link>": ...}``: each body's mass, first
    moment m c and inertia about its frame's origin (tensor form) from (mass, com,
    inertia_com) per link."""
    out = {}
    for name, (m, c, ic) in links.items():
        c = np.asarray(c, float)
        io = np.asarray(ic, float) + m * (c @ c * np.eye(3) - np.outer(c, c))
        vals = (m, *(m * c), io[0, 0], io[0, 1], io[0, 2], io[1, 1], io[1, 2], io[2, 2])
        out.update({f"{p}_{name}": float(v) for p, v in zip(_PARAMS, vals)})
    return out


def urdf_inertials(path) -> dict[str, tuple]:
    """(mass, com, inertia_com) per link of a URDF's ``<inertial>`` blocks."""
    import xml.etree.ElementTree as ET
    from scipy.spatial.transform import Rotation
    out = {}
    for lk in ET.parse(path).getroot().findall("link"):
        i = lk.find("inertial")
        if i is None:
            continue
        o = i.find("origin")
        xyz = np.array([float(x) for x in (o.get("xyz", "0 0 0") if o is not None
                                           else "0 0 0").split()])
        rpy = [float(x) for x in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
        r = Rotation.from_euler("xyz", rpy).as_matrix()
        a = {k: float(v) for k, v in i.find("inertia").attrib.items()}
        t = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]],
                      [a["ixz"], a["iyz"], a["izz"]]])
        out[lk.get("name")] = (float(i.find("mass").get("value")), xyz, r @ t @ r.T)
    return out


def robot_numbers(report: dict, truth: dict, results_dir=None) -> tuple[list[dict], dict]:
    """Rows of the robot's base parameters against the truth, and robot.urdf / the prior
    against the truth on the same combinations (largest error over the combination's
    kind: mass in % of M, first moments in mm M, inertia in % of the largest moment).
    robot.urdf is read per body (its fixed links merged into the moving link) when the
    truth names the base link."""
    bp = ((report.get("robot") or {}).get("base_parameters")) or {}
    if not bp:
        return [], {}
    true = standard_parameters({lk["name"]: (lk["mass"], lk["com"], lk["inertia_com"])
                                for lk in truth["links"]})
    prior = standard_parameters({k: (v["mass"], v["com"], v["inertia_com"])
                                 for k, v in truth.get("prior", {}).items()})
    ident = None
    if results_dir is not None:
        from pathlib import Path
        p = Path(results_dir) / "robot.urdf"
        if p.is_file() and truth.get("base_link"):
            from benchmarks.testbed.urdf import body_inertials
            ident = standard_parameters(body_inertials(p, truth["base_link"]))
        elif p.is_file():
            ident = standard_parameters(urdf_inertials(p))
    m_tot = truth["total_mass"]
    i_max = max(np.linalg.eigvalsh(np.asarray(p["inertia_com"])).max()
                for p in truth["postures"])
    rows, worst = [], {}
    for name, expr, v, s in zip(bp["names"], bp["expressions"], bp["values"], bp["std"]):
        t = sum(c * true[k] for k, c in expr.items())
        rows.append(_row("base_parameters", name.split(" ")[0], f"base {name}", v, t, s))
        lead = name.split(" ")[0].split("_")[0]
        kind, scale = (("mass", 100.0 / m_tot) if lead == "m" else
                       ("first_moment", 1e3 / m_tot) if lead.startswith("M") else
                       ("inertia", 100.0 / i_max))
        w = worst.setdefault(kind, {"estimate": 0.0, "prior": 0.0, "robot_urdf": 0.0})
        w["estimate"] = max(w["estimate"], abs(v - t) * scale)
        if prior:
            w["prior"] = max(w["prior"], abs(sum(c * prior[k] for k, c in expr.items()) - t)
                             * scale)
        if ident:
            w["robot_urdf"] = max(w["robot_urdf"], abs(
                sum(c * ident.get(k, 0.0) for k, c in expr.items()) - t) * scale)
    if ident:
        worst["robot_urdf_mass_kg"] = sum(v for k, v in ident.items() if k.startswith("m_"))
    return rows, worst


def main(argv: list[str] | None = None) -> int:
    """``python3 -m benchmarks.testbed.compare RESULTS TRUTH``: a run's report
    (RESULTS/report.json, RESULTS/robot.urdf) against the test bed's truth.json: per group
    the share of numbers within 2 standard errors and the worst |z|, the non-green checks,
    and for a robot the base combinations' largest errors (estimate / CAD prior /
    robot.urdf) and robot.urdf's mass against the weighed one."""
    import argparse
    import json
    from pathlib import Path

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("truth", type=Path)
    args = ap.parse_args(argv)
    report = json.loads((args.results / "report.json").read_text())
    truth = json.loads(args.truth.read_text())
    rows = numbers(report, truth)
    brows, worst = robot_numbers(report, truth, args.results)
    rows += brows
    for g in ("postures", "phi_s", "phi_b", "segments", "base_parameters"):
        z = np.array([abs(r["z"]) for r in rows if r["group"] == g and r["z"] is not None])
        if z.size:
            print(f"{g}: {z.size} numbers, within 2 SE {100 * np.mean(z < 2):.1f} %, "
                  f"worst |z| {z.max():.2f}")
    tp = {p["name"]: p for p in truth.get("postures", [])}
    com_mm, inertia_pct = [], []
    for p in report.get("postures", []):
        if p["name"] in tp:
            t = tp[p["name"]]
            com_mm.append(1e3 * np.linalg.norm(np.subtract(p["com"], t["com"])))
            inertia_pct.append(100 * np.abs(np.subtract(p["inertia_com"], t["inertia_com"])).max()
                               / np.linalg.eigvalsh(np.asarray(t["inertia_com"])).max())
    if com_mm:
        print(f"postures: COM within {max(com_mm):.3f} mm, inertia within "
              f"{max(inertia_pct):.2f} % of the largest principal moment")
    print("non-green checks:", [f"{c['key']}:{c['level']}" for c in nongreen(report)] or "none")
    for k, v in worst.items():
        if isinstance(v, dict):
            print(f"{k}: largest error estimate {v['estimate']:.4g}, CAD prior {v['prior']:.4g},"
                  f" robot.urdf {v['robot_urdf']:.4g}")
    if "robot_urdf_mass_kg" in worst:
        print(f"robot.urdf sums to {worst['robot_urdf_mass_kg']:.4f} kg; weighed "
              f"{truth['total_mass']:.4f} kg")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
