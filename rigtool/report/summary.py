"""The report's first screen, as data: the object, its segments (mass, COM, principal
moments, where each came from), the method of every stage, and the checks' verdict.

Everything here is read from report.json's own blocks (``postures``, ``segments``,
``relative_motion``, ``checks``...), so the summary never says a number the detail does not.
Conventions: segment COM and inertia in the link's frame, inertia about
the COM; principal moments ascending with their axes as columns; SI units.
"""

from __future__ import annotations

import numpy as np

from rigtool.report.check_types import listing, worst


def principal(inertia: list) -> tuple[list[float], list[list[float]]]:
    """Principal moments (ascending) and axes (columns, right-handed) of a 3x3 inertia."""
    w, v = np.linalg.eigh(0.5 * (np.asarray(inertia, float) + np.asarray(inertia, float).T))
    if np.linalg.det(v) < 0:
        v[:, 2] *= -1.0
    return w.tolist(), v.tolist()


def _flag(values: list[str]) -> str:
    """One source flag for several entries: the common one, or ``mixed``."""
    vals = list(dict.fromkeys(values))
    return vals[0] if len(vals) == 1 else "mixed"


def segment_rows(doc: dict) -> list[dict]:
    """Per link: mass, COM, principal moments and axes, source flags (``segments`` block)."""
    seg = doc.get("segments")
    if not seg:
        return []
    rows = []
    for name, ls in seg["links"].items():
        moments, axes = principal(ls["inertia_com"])
        src = ls["source"]
        iu = [src["inertia_com"][a][b] for a, b in ((0, 0), (1, 1), (2, 2), (1, 2), (2, 0),
                                                     (0, 1))]
        rows.append({"link": name, "mass": ls["mass"], "mass_std": ls["mass_std"],
                     "com": ls["com"], "com_std": ls["com_std"],
                     "principal_moments": moments,
                     "principal_moments_std": ls.get("principal_moments_std"),
                     "principal_axes": axes,
                     "source": {"mass": src["mass"], "com": _flag(src["com"]),
                                "inertia": _flag(iu)},
                     "prior": ls.get("prior", "")})
    return rows


def overall_rows(doc: dict) -> list[dict]:
    """Per posture: the whole object's COM and principal moments (when there are no
    segment parameters, these are what the session measured)."""
    rows = []
    for p in doc["postures"]:
        moments, axes = principal(p["inertia_com"])
        rows.append({"posture": p["name"], "mass": p["mass"], "com": p["com"],
                     "com_std": p["com_std"], "principal_moments": moments,
                     "principal_moments_std": p.get("principal_moments_std"),
                     "principal_axes": axes, "method": p["method"]})
    return rows


def stage_methods(doc: dict, calibration: dict) -> list[dict]:
    """What produced the numbers of each stage, with a short note."""
    out = [{"stage": "calibration", "method": calibration.get("method", "not recorded"),
            "note": f"rig {doc['rig']['name']}"}]
    methods = [p["method"] for p in doc["postures"]]
    per = ", ".join(f"{m} ({methods.count(m)})" for m in dict.fromkeys(methods))
    note = "rig simulated and fitted to the raw markers" if "output-error" in methods else \
        "filtered markers, Newton-Euler least squares"
    out.append({"stage": "postures", "method": per, "note": note})
    if "subset" in doc:
        out.append({"stage": "subset Phi_s", "method": "weighted least squares",
                    "note": f"{doc['subset']['n_postures']} postures, their covariances"})
    if "joint_centres" in doc:
        out.append({"stage": "joint centres", "method": "SCoRE",
                    "note": listing(list(doc["joint_centres"])) + " from the relative motion"})
    if "relative_motion" in doc:
        rel = doc["relative_motion"]
        oe = rel.get("output_error")
        if oe is None:
            out.append({"stage": "relative motion", "method": rel.get("method", ""),
                        "note": "equation error"})
        elif oe.get("used"):
            active = not oe.get("joint_damping")
            out.append({"stage": "relative motion", "method": oe.get("method", "output-error"),
                        "note": ("links' measured motion prescribed, platform simulated and "
                                 "fitted" if active else "swing simulated and fitted")
                                + "; refinement used"})
        else:
            out.append({"stage": "relative motion",
                        "method": f"{rel.get('method', 'equation-error')} (refinement not "
                                  "used)", "note": oe.get("reason", "")})
    if "segments" in doc:
        out.append({"stage": "segments", "method": "consistent fit to Phi_B with priors",
                    "note": "pseudo-inertia constraints, weighed total mass"})
    return out


def _robot_part(robot: dict) -> str:
    """A robot counted from report.json's ``robot`` block: its bodies, its base, its
    moving and held joints."""
    bodies = robot.get("bodies", [])
    n = len(bodies)
    moving = [b["joint"] for b in bodies if b.get("joint")]
    held = list(robot.get("fixed_joints", {}))
    text = (f"a robot of {n} bod{'ies' if n != 1 else 'y'} ({robot['base_link']} fixed to the "
            f"platform, {len(moving)} moving joint{'s' if len(moving) != 1 else ''}")
    if held:
        text += f", {len(held)} held"
    return text + ")"


def object_line(doc: dict, tree_links: list[dict]) -> str:
    """One sentence: what was measured and how (counted from ``doc``: a robot's bodies
    from its ``robot`` block, a tree's links from ``tree_links``)."""
    n = len(tree_links)
    parts = []
    for link in tree_links:
        if link["parent"] == "platform":
            parts.append(f"{link['name']} fixed to the platform")
        else:
            parts.append(f"{link['name']} on {link['parent']} ({link.get('joint', 'spherical')}"
                         " joint)")
    mass = f"{doc['total_mass']:.3f} kg weighed"
    if doc.get("total_mass_std") is not None:
        mass = f"{doc['total_mass']:.3f} ± {doc['total_mass_std']:.3f} kg weighed"
    captures = f"{len(doc['postures'])} locked posture{'s' if len(doc['postures']) > 1 else ''}"
    if "relative_motion" in doc:
        captures += " and a relative-motion capture"
    elif (doc.get("robot") or {}).get("with_motion"):
        captures += " and a capture of the joints' motion"
    what = (_robot_part(doc["robot"]) if doc.get("robot") else
            f"{n} link{'s' if n > 1 else ''} ({listing(parts)})")
    return f"{doc['session']}: {what}, {mass}; {captures} on rig {doc['rig']['name']}."


def summary_block(doc: dict, tree_links: list[dict], calibration: dict) -> dict:
    """The report.json ``summary`` block (``doc`` must already hold ``checks``)."""
    checks = doc.get("checks", [])
    level = worst([c["level"] for c in checks]) if checks else "not checked"
    return {"object": object_line(doc, tree_links), "links": tree_links,
            "segments": segment_rows(doc), "overall": overall_rows(doc),
            "methods": stage_methods(doc, calibration), "verdict": level,
            "counts": {lv: sum(c["level"] == lv for c in checks)
                       for lv in ("ok", "caution", "problem", "not checked")}}


__all__ = ["summary_block", "segment_rows", "overall_rows", "stage_methods", "principal",
           "object_line"]
