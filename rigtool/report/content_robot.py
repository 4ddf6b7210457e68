"""The report's robot section (a ``[robot]`` session): the identifiable combinations of the
standard parameters with their standard errors, the directions the URDF prior fixed, the
per-link parameters written to robot.urdf, the posture advice and the link-marker checks.

Built from report.json's ``robot`` block (rigtool.pipeline.robot_stage).
"""

from __future__ import annotations

from rigtool.report.blocks import Bullets, Col, Para, Section, Sub, Table


def _unit(name: str) -> str:
    lead = name.split(" ")[0].split("_")[0]
    return "kg" if lead == "m" else "kg m" if lead.startswith("M") else "kg m²"


def _links_text(links: dict) -> str:
    """What robot.urdf holds, each claim computed from report.json's ``links`` block: the
    per-link fit when it held, else what failed and what was written instead; agreement
    with the combinations said only when the chi-square test passes."""
    z = links.get("max_abs_z")
    chi2, limit = links.get("chi2"), links.get("chi2_limit")
    z_text = "" if z is None else f"largest |misfit|/std {z:.2f}"
    if chi2 is not None and limit is not None:
        z_text += f", chi-square {chi2:.3g} against the 0.999 quantile {limit:.3g}"
    agree = ("within the combinations' standard errors" if links.get("reproduces", True)
             else "NOT within the combinations' standard errors")
    total = links.get("total_mass")
    mass = "" if total is None else f" The links sum to {total:.4f} kg."
    if links.get("held", True):
        return ("Physically consistent (pseudo-inertia LMI), the links' masses summing to the "
                f"weighed mass, {agree} ({z_text}), and closest to the URDF prior (log-det "
                "divergence) in the directions the postures do not see "
                f"({len(links['from_prior'])} standard parameters depend on the prior). Own "
                "link only: links attached by fixed joints keep their URDF values." + mass)
    written = ("the URDF prior moved onto the identified combinations"
               if links.get("written") == "prior on the combinations"
               else "the URDF prior, scaled to the weighed mass")
    return (f"The per-link fit failed ({links['failure']}); it is not the result. robot.urdf "
            f"holds {written}: {agree} ({z_text})." + mass)


def robot_section(doc: dict) -> Section | None:
    """The section, or None for a session without a robot."""
    rb = doc.get("robot")
    if not rb:
        return None
    bp = rb["base_parameters"]
    chi2 = ("none (as many numbers as combinations)" if bp.get("reduced_chi2") is None
            else f"{bp['reduced_chi2']:.3g}")
    blocks: list = [Para(
        f"URDF `{rb['urdf']}`, base link `{rb['base_link']}`, {len(rb['bodies'])} bodies "
        f"(held joints merged into their parent). {bp['n_postures']} locked postures determine "
        f"{bp['rank']} combinations of the {bp['n_parameters']} standard parameters; the other "
        f"{bp['n_parameters'] - bp['rank']} directions come from the URDF prior. Reduced "
        f"chi² of the combinations' fit: {chi2}. base_parameters.csv holds "
        "them with full-precision coefficients.")]
    rows = [[name, f"{v:.6g}", f"{s:.3g}", _unit(name)]
            for name, v, s in zip(bp["names"], bp["values"], bp["std"])]
    blocks.append(Table([Col("combination", numeric=False), Col("value"), Col("std"),
                         Col("unit", numeric=False)], rows,
                        "XX, XY ... are inertia-tensor entries about the body origin (body "
                        "axes); MX = m c_x."))
    if rb.get("links"):
        links = rb["links"]
        cols = ([Col("link", numeric=False), Col("mass", "kg")]
                + [Col(f"COM {a}", "mm") for a in "xyz"]
                + [Col(f"I_{a}", "kg m²") for a in ("xx", "yy", "zz")])
        rows = []
        for name, entry in links["links"].items():
            o = entry["own_link"]
            rows.append([name, f"{o['mass']:.4f}"] + [f"{1e3 * c:.2f}" for c in o["com"]]
                        + [f"{o['inertia_com'][k][k]:.5f}" for k in range(3)])
        blocks += [Sub("Per-link parameters (robot.urdf)"), Para(_links_text(links)),
                   Table(cols, rows)]
    if rb.get("advice"):
        blocks += [Sub("The next posture"), Para(rb["advice"]["text"])]
    if rb.get("motion_advice"):
        blocks += [Sub("The joints' motion to capture"), Para(rb["motion_advice"]["text"])]
    if rb.get("marker_checks"):
        worst = max((d for c in rb["marker_checks"] for d in c["distance_m"].values()),
                    default=None)
        if worst is not None:
            blocks += [Sub("Markers on moving links"),
                       Para(f"Each marker's place from the capture against forward kinematics "
                            f"of the encoders: largest distance {1e3 * worst:.2f} mm.")]
    if rb.get("warnings"):
        blocks.append(Bullets(list(rb["warnings"])))
    return Section("robot", "Robot: base parameters and links", blocks)


__all__ = ["robot_section"]
