"""The personalised model: the user's OpenSim model with the measured mass properties.

The .osim file is edited in place, as a robot's URDF is (rigtool.robot.outputs): the XML
parser under ``xml.etree`` (expat) locates each ``<Body>``'s ``<mass>``, ``<mass_center>``
and ``<inertia>`` in the original bytes, their text is replaced, and every other byte is
written back as it was read (bodies, joints, markers, geometry references, muscles,
comments). A comment before each body says what was measured and what came from the
prior; one after ``<OpenSimDocument>`` names rigtool, the session and every input with its
sha256.

Per body (rigtool.osim.links): a link made of one body gets the link's estimate moved from
the link frame (origin at the joint centre) to the body frame. A link of several bodies
(WeldJoints) is one rigid body to the measurement, which cannot say how its mass splits
between them: the estimate is shared in the model's proportions, each body's pseudo-inertia
``J_b`` (the model's, in the link frame) becoming ``A J_b A`` with the one symmetric ``A``
that takes the model's link onto the measured one (:func:`shared_congruence`). Every body
stays physically possible, they sum to the estimate exactly, and a measurement equal to
the model (or the model scaled) gives the model's bodies back (scaled alike).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
import xml.parsers.expat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rigtool.errors import InputError
from rigtool.inertia import InertialParams
from rigtool.osim.links import OsimTree
from rigtool.report.model_description import source_line
from rigtool.report.model_xml import comment, num, vec

#: the personalised model's file name in the results directory
FILE_NAME = "personalised.osim"

_FIELDS = ("mass", "mass_center", "inertia")


@dataclass(frozen=True)
class BodyValues:
    """A body's new mass properties (body frame) and what the comment says of them."""

    body: str
    link: str
    params: InertialParams
    how: str                # "measured", "welded: model values kept", ...
    source: str             # the link's source line (mass: measured; COM: ...)


def _body_spans(data: bytes) -> dict[str, dict]:
    """Byte positions of every ``Model/BodySet/objects/Body``: its start tag, the end of
    its start tag, and the text spans of its ``mass``, ``mass_center`` and ``inertia``."""
    parser = xml.parsers.expat.ParserCreate()
    out: dict[str, dict] = {}
    stack: list[str] = []
    current: list[str | None] = [None]

    def tag_end(i: int) -> int:
        return data.index(b">", i) + 1

    def start(name, attrs):
        i = parser.CurrentByteIndex
        if name == "Body" and stack == ["OpenSimDocument", "Model", "BodySet", "objects"]:
            current[0] = attrs.get("name", "")
            out[current[0]] = {"start": i, "start_end": tag_end(i)}
        elif len(stack) == 5 and current[0] is not None and name in _FIELDS:
            out[current[0]][name] = [tag_end(i), None, data[tag_end(i) - 2:tag_end(i)] == b"/>"]
        stack.append(name)

    def end(name):
        i = parser.CurrentByteIndex
        stack.pop()
        if len(stack) == 5 and current[0] is not None and name in _FIELDS:
            span = out[current[0]][name]
            span[1] = span[0] if span[2] else i
        if name == "Body" and len(stack) == 4:
            current[0] = None

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.Parse(data, True)
    return out


def _comment(text: str) -> str:
    """An XML comment's text (rigtool.report.model_xml.comment, serialised)."""
    return ET.tostring(comment(text), encoding="unicode")


def _sqrt_psd(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The symmetric square root of a positive semidefinite matrix and its (pseudo-)inverse."""
    w, v = np.linalg.eigh(0.5 * (m + m.T))
    w = np.clip(w, 0.0, None)
    root = np.sqrt(w)
    inv = np.where(root > 1e-12 * root.max(), 1.0 / np.where(root > 0, root, 1.0), 0.0)
    return (v * root) @ v.T, (v * inv) @ v.T


def shared_congruence(prior: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """The symmetric 4x4 ``A`` with ``A P A = M`` for pseudo-inertias ``P`` (the model's
    link, positive definite) and ``M`` (the measured link): the matrix geometric mean
    ``P^-1/2 (P^1/2 M P^1/2)^1/2 P^-1/2``.

    Each welded body's pseudo-inertia ``J_b`` becomes ``A J_b A``: positive semidefinite
    (a physically possible body) whatever ``M`` is, the bodies sum to the measured link
    exactly, ``A`` is the identity when the measurement is the model and ``sqrt(k)`` times
    it when the measurement is the model scaled by ``k``.
    """
    root, inv = _sqrt_psd(prior)
    middle, _ = _sqrt_psd(root @ measured @ root)
    return inv @ middle @ inv


def body_values(tree: OsimTree, segments: dict[str, dict]) -> list[BodyValues]:
    """Each model body's new mass properties from the links' estimates.

    Parameters
    ----------
    tree : OsimTree
        The model's links (rigtool.osim.links).
    segments : dict
        report.json's ``segments.links``: per link ``mass``, ``com`` and ``inertia_com``
        (link frame) and their source flags.

    Returns
    -------
    list of BodyValues
        In the links' order, each link's own body first.
    """
    model = tree.model
    out = []
    for link in tree.links:
        seg = segments.get(link.name)
        if seg is None:
            continue
        line = source_line(seg)
        measured = InertialParams.from_com(float(seg["mass"]), np.asarray(seg["com"], float),
                                           np.asarray(seg["inertia_com"], float))

        def to_body(p: InertialParams, body: str) -> InertialParams:
            place = tree.places[body]
            return p.transformed(place.rotation.T, -place.rotation.T @ place.position)

        def model_in_link(body: str) -> InertialParams:
            ob = model.bodies[body]
            place = tree.places[body]
            return InertialParams.from_com(ob.mass, ob.mass_center, ob.inertia).transformed(
                place.rotation, place.position)

        own, welded = link.bodies[0], link.bodies[1:]
        if not welded:
            out.append(BodyValues(own, link.name, to_body(measured, own), "measured", line))
            continue
        share = shared_congruence(link.prior.pseudo_inertia(), measured.pseudo_inertia())
        for b in link.bodies:
            part = InertialParams.from_pseudo_inertia(
                share @ model_in_link(b).pseudo_inertia() @ share.T)
            how = (f"measured: its share of link '{link.name}' (bodies "
                   f"{', '.join(link.bodies)} welded together), in the model's proportions")
            out.append(BodyValues(b, link.name, to_body(part, b), how, line))
    return out


def _fields_text(p: InertialParams) -> dict[str, str]:
    m = p.mass
    com = p.com if m > 0 else np.zeros(3)
    ic = p.inertia_com if m > 0 else np.zeros((3, 3))
    ic = 0.5 * (ic + ic.T)
    return {"mass": num(m), "mass_center": vec(com),
            "inertia": vec([ic[0, 0], ic[1, 1], ic[2, 2], ic[0, 1], ic[0, 2], ic[1, 2]])}


def personalised_text(tree: OsimTree, segments: dict[str, dict],
                      provenance: list[str]) -> tuple[bytes, list[BodyValues]]:
    """The personalised model's bytes and the values written (module docstring).

    ``provenance``: the header comment's lines (rigtool version, session, inputs).
    """
    data = Path(tree.model.path).read_bytes()
    spans = _body_spans(data)
    values = body_values(tree, segments)
    edits: list[tuple[int, int, str]] = []
    for v in values:
        sp = spans[v.body]
        line_start = data.rfind(b"\n", 0, sp["start"]) + 1
        indent = data[line_start:sp["start"]].decode()
        indent = indent if not indent.strip() else ""
        edits.append((sp["start"], sp["start"],
                      _comment(f"rigtool: body '{v.body}' {v.how}; link {v.source}")
                      + "\n" + indent))
        text = _fields_text(v.params)
        missing = []
        for f in _FIELDS:
            if f in sp:
                a, b, empty = sp[f]
                if empty:                 # <mass_center/>: written as a full element
                    a0 = data.rfind(b"<", 0, a)
                    edits.append((a0, a, f"<{f}>{text[f]}</{f}>"))
                else:
                    edits.append((a, b, text[f]))
            else:
                missing.append(f"<{f}>{text[f]}</{f}>")
        if missing:
            a = sp["start_end"]
            edits.append((a, a, "".join("\n" + indent + "\t" + m for m in missing)))
    root = data.find(b"<OpenSimDocument")
    root_end = data.index(b">", root) + 1
    edits.append((root_end, root_end, "\n" + _comment("\n    " + "\n    ".join(provenance)
                                                       + "\n")))
    out = data
    for a, b, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:a] + text.encode() + out[b:]
    return out, values


def write_personalised(tree: OsimTree, doc: dict, out_path: str | Path, *,
                       model_shown: str) -> dict:
    """Write the personalised model; returns report.json's ``opensim`` block.

    Parameters
    ----------
    tree : OsimTree
        The session's model (``Session.opensim.tree``).
    doc : dict
        report.json's content (``segments``, ``inputs``, ``session``, ``rigtool_version``).
    out_path : str or Path
        The file to write (never the input model).
    model_shown : str
        The input model's path as report.json's inputs list it.

    Raises
    ------
    InputError
        When ``out_path`` is the input model, or cannot be written.
    """
    out_path = Path(out_path)
    src = Path(tree.model.path)
    if out_path.exists() and out_path.resolve() == src.resolve():
        raise InputError("the personalised model would overwrite the input model; write the "
                         "results elsewhere (-o DIR)", path=out_path)
    prov = ([f"written by rigtool {doc.get('rigtool_version', '?')} from {model_shown} and the "
             f"results of session '{doc.get('session', '?')}': each body's mass, mass_center "
             "(body frame) and inertia (about the mass centre, body axes) replaced by the "
             "measured ones; every other element as in the input",
             "per body, a comment says what was measured and what came from the prior (the "
             "input model's values); report.json's opensim block lists the same",
             "inputs (sha256):"]
            + [f"  {i['path']}  {i['sha256']}" for i in doc.get("inputs", [])])
    segs = doc["segments"]["links"]
    data, values = personalised_text(tree, segs, prov)
    try:
        out_path.write_bytes(data)
    except OSError as exc:
        raise InputError(f"cannot write the personalised model: {exc.strerror}",
                         path=out_path) from None
    bodies = []
    for v in values:
        ob = tree.model.bodies[v.body]
        f = _fields_text(v.params)
        seg = segs[v.link]
        bodies.append({
            "body": v.body, "link": v.link, "written": v.how,
            "mass": v.params.mass, "mass_center": [float(x) for x in f["mass_center"].split()],
            "inertia": [float(x) for x in f["inertia"].split()],
            "model": {"mass": ob.mass, "mass_center": ob.mass_center.tolist(),
                      "inertia": [ob.inertia[0, 0], ob.inertia[1, 1], ob.inertia[2, 2],
                                  ob.inertia[0, 1], ob.inertia[0, 2], ob.inertia[1, 2]]},
            "link_mass_std": seg.get("mass_std"), "link_com_std": seg.get("com_std"),
            "source": source_line(seg)})
    return {"model": model_shown, "file": out_path.name, "root_joint": tree.root_joint,
            "bodies": bodies}


__all__ = ["FILE_NAME", "BodyValues", "shared_congruence", "body_values", "personalised_text",
           "write_personalised"]
