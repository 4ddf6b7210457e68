"""XML helpers shared by the model writers: exact numbers, safe comments, the file header.

Numbers are written with Python's shortest round-trip ``repr``, so a consumer that parses
doubles (MuJoCo, OpenSim, urdfdom) reads back the very float rigtool computed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from rigtool.report.model_description import ModelDescription, ModelLink


def num(x: float) -> str:
    """A float as its shortest exact decimal."""
    return repr(float(x))


def vec(v) -> str:
    """Space-separated exact decimals of an array (flattened)."""
    return " ".join(num(x) for x in np.asarray(v, float).ravel())


def comment(text: str) -> ET.Element:
    """An XML comment; ``--`` (forbidden inside comments) is broken up."""
    while "--" in text:
        text = text.replace("--", "- -")
    return ET.Comment(" " + text.rstrip("-") + " ")


def header_comments(model: ModelDescription, fmt_note: str) -> list[ET.Element]:
    """The comments every model file starts with: provenance, units, the format's note."""
    lines = list(model.provenance) + [
        f"base link '{model.links[0].name}' mounted {model.base}"
        + (" (six degrees of freedom)" if model.base == "free" else " (welded to the world)"),
        "units: kg, m, kg m^2, rad", fmt_note]
    return [comment("\n    " + "\n    ".join(lines) + "\n")]


def link_comment(link: ModelLink) -> ET.Element:
    """One comment per link: its manifest name, joint-centre origin and what was measured."""
    text = (f"link '{link.label}'" if link.label != link.name else f"link {link.name}")
    text += f": {link.source}"
    if link.joint is not None and link.joint.source:
        text += f"; {link.joint.source}"
    return comment(text)


def to_text(root: ET.Element, declaration: str) -> str:
    """Indented XML text behind ``declaration``."""
    ET.indent(root)
    return declaration + "\n" + ET.tostring(root, encoding="unicode") + "\n"


__all__ = ["num", "vec", "comment", "header_comments", "link_comment", "to_text"]
