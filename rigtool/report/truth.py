"""The estimate against a known truth: ``truth.json`` next to the session manifest (as
``rigtool simulate`` writes it, or by hand for a rig validated with a known object).

Every error is ``estimate - truth`` in SI units (m, kg, kg m, kg m^2, N/m, N s/m), per
entry, and in standard errors (``z``, the report's own standard error of that entry; None
where it has none). The comparison reads report.json's blocks, so anyone can recompute it
from report.json and truth.json alone. Each row of :func:`truth_rows` gives, for one group
of entries, the RMS and the largest absolute error and the largest ``|z|``.

Truth keys read (all optional): ``postures`` (name, com, inertia_com; base-link frame),
``phi_s`` and ``phi_b`` (names, values), ``links`` (name, mass, com, inertia_com; link
frame, about the COM), ``springs`` (name, stiffness, free_length, damping) and ``platform``
(mass, com, inertia_com; platform frame).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rigtool.errors import InputError

_IU = ((0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1))       # the six entries' order of report.json
_SIX = ("xx", "yy", "zz", "yz", "zx", "xy")


def find_truth(session_path: Path) -> Path | None:
    """``truth.json`` next to the session manifest, if there is one."""
    path = Path(session_path).parent / "truth.json"
    return path if path.is_file() else None


def read_truth(path: Path) -> dict:
    """The truth file as a dict (InputError naming the file when it is not a JSON object)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the truth file: {exc}", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object (as rigtool simulate writes)", path=path)
    return doc


def _entries(label: str, unit: str, est, truth, std) -> list[dict]:
    est, truth = np.asarray(est, float).ravel(), np.asarray(truth, float).ravel()
    std = None if std is None else np.asarray(std, float).ravel()
    out = []
    for k in range(est.size):
        err = float(est[k] - truth[k])
        s = None if std is None or not np.isfinite(std[k]) or std[k] <= 0 else float(std[k])
        out.append({"entry": label if est.size == 1 else f"{label}[{k}]", "unit": unit,
                    "estimate": float(est[k]), "truth": float(truth[k]), "error": err,
                    "std": s, "z": None if s is None else err / s})
    return out


def _six(m) -> list[float]:
    m = np.asarray(m, float)
    return [float(m[a, b]) for a, b in _IU]


def _inertia(prefix: str, est, truth, std) -> list[dict]:
    rows = []
    e, t = _six(est), _six(truth)
    s = None if std is None else _six(std)
    for k, lab in enumerate(_SIX):
        rows += _entries(f"{prefix}.I_{lab}", "kg m^2", e[k], t[k],
                         None if s is None else s[k])
    return rows


def _named(prefix: str, names, values, std, t_names, t_values) -> list[dict]:
    t = dict(zip(t_names, t_values))
    rows = []
    for n, v, s in zip(names, values, std):
        if n in t and v is not None:
            unit = "kg m" if ".MS_" in n else "kg m^2"
            rows += _entries(f"{prefix} {n}", unit, v, t[n], s)
    return rows


def compare(doc: dict, truth: dict) -> dict:
    """Per group (``postures``, ``phi_s``, ``phi_b``, ``segments``, ``calibration``) the list
    of compared entries (:func:`_entries` rows)."""
    groups: dict[str, list[dict]] = {}
    tp = {p.get("name"): p for p in truth.get("postures", []) if isinstance(p, dict)}
    rows = []
    for p in doc.get("postures", []):
        t = tp.get(p["name"])
        if t and "com" in t and "inertia_com" in t:
            rows += _entries(f"{p['name']}.com", "m", p["com"], t["com"], p["com_std"])
            rows += _inertia(p["name"], p["inertia_com"], t["inertia_com"],
                             p["inertia_com_std"])
    groups["postures"] = rows
    if "subset" in doc and isinstance(truth.get("phi_s"), dict):
        s = doc["subset"]
        groups["phi_s"] = _named("Phi_s", s["names"], s["values"], s["std"],
                                 truth["phi_s"].get("names", []),
                                 truth["phi_s"].get("values", []))
    if "relative_motion" in doc and isinstance(truth.get("phi_b"), dict):
        b = doc["relative_motion"]["phi_b"]
        groups["phi_b"] = _named("Phi_B", b["names"], b["values"], b["std"],
                                 truth["phi_b"].get("names", []),
                                 truth["phi_b"].get("values", []))
    tl = {l.get("name"): l for l in truth.get("links", []) if isinstance(l, dict)}
    rows = []
    for name, ls in (doc.get("segments") or {}).get("links", {}).items():
        t = tl.get(name)
        if t and all(k in t for k in ("mass", "com", "inertia_com")):
            rows += _entries(f"{name}.mass", "kg", ls["mass"], t["mass"], ls["mass_std"])
            rows += _entries(f"{name}.com", "m", ls["com"], t["com"], ls["com_std"])
            rows += _inertia(name, ls["inertia_com"], t["inertia_com"], ls["inertia_com_std"])
    groups["segments"] = rows
    groups["calibration"] = _calibration(doc.get("rig", {}).get("calibration"), truth)
    return {k: v for k, v in groups.items() if v}


def _calibration(cal: dict | None, truth: dict) -> list[dict]:
    if not cal:
        return []
    rows = []
    ts = {s.get("name"): s for s in truth.get("springs", []) if isinstance(s, dict)}
    units = {"stiffness": "N/m", "free_length": "m", "damping": "N s/m"}
    for name, sp in cal.get("springs", {}).items():
        t = ts.get(name)
        for key, unit in units.items():
            if t and key in t and key in sp:
                rows += _entries(f"{name}.{key}", unit, sp[key], t[key],
                                 sp.get("std", {}).get(key))
    tp, pl = truth.get("platform"), cal.get("platform")
    if isinstance(tp, dict) and pl:
        std = pl.get("std", {})
        if "mass" in tp:
            rows += _entries("platform.mass", "kg", pl["mass"], tp["mass"], std.get("mass"))
        if "com" in tp:
            rows += _entries("platform.com", "m", pl["com"], tp["com"], std.get("com"))
        if "inertia_com" in tp:
            rows += _inertia("platform", pl["inertia_com"], tp["inertia_com"],
                             std.get("inertia_com"))
    return rows


def truth_rows(groups: dict) -> list[dict]:
    """The summary table: per group and unit, the number of entries, the RMS and largest
    absolute error (with its entry) and the largest ``|z|``."""
    out = []
    titles = {"postures": "postures (base-link frame)", "phi_s": "Phi_s",
              "phi_b": "Phi_B", "segments": "segments (link frames)",
              "calibration": "calibration (rig)"}
    for key, rows in groups.items():
        for unit in dict.fromkeys(r["unit"] for r in rows):
            sel = [r for r in rows if r["unit"] == unit]
            err = np.array([r["error"] for r in sel])
            k = int(np.argmax(np.abs(err)))
            zs = [abs(r["z"]) for r in sel if r["z"] is not None]
            out.append({"group": titles.get(key, key), "unit": unit, "entries": len(sel),
                        "rms_error": float(np.sqrt(np.mean(err ** 2))),
                        "max_abs_error": float(abs(err[k])), "at": sel[k]["entry"],
                        "max_abs_z": max(zs) if zs else None})
    return out


def truth_block(doc: dict, path: Path, sha256: str) -> dict:
    """The report.json ``truth_comparison`` block."""
    groups = compare(doc, read_truth(path))
    return {"file": path.name, "sha256": sha256, "summary": truth_rows(groups),
            "entries": groups}


__all__ = ["find_truth", "read_truth", "compare", "truth_rows", "truth_block"]
