"""The robot's result files: ``robot.urdf`` (the user's URDF with only the ``<inertial>``
blocks of the identified links replaced) and ``base_parameters.csv``.

The URDF is edited in place: the XML parser under ``xml.etree`` (expat) locates each
``<inertial>`` block in the original bytes, and every byte outside the replaced blocks is
written back as it was read (comments, attribute order, namespaces, whitespace). A
body's own link receives the identified body minus the links attached to it, which keep
their own blocks (SPEC "A robot described by its URDF") unless a block was not physically
consistent: then it receives the projection the prior was taken as
(rigtool.robot.urdf_model.project_inertial). Each new block gives the COM as
``<origin xyz>`` (``rpy = 0``) and the inertia tensor about the COM in the link's axes.
"""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from rigtool.errors import InputError
from rigtool.inertia import InertialParams, transform_params
from rigtool.robot.base_parameters import RobotBaseResult
from rigtool.robot.urdf_model import RobotModel


def _fmt(x: float) -> str:
    return f"{float(x):.10g}"


def _inertial_text(p: InertialParams, indent: str, step: str) -> str:
    """An ``<inertial>`` block (parameters about the link origin in link axes) for a link
    whose children sit at ``indent``."""
    m = p.mass
    com = p.com if m > 0 else np.zeros(3)
    ic = p.inertia_com if m > 0 else p.inertia_origin
    ic = 0.5 * (ic + ic.T)
    inner = indent + step
    return (f"<inertial>\n"
            f"{inner}<origin xyz=\"{' '.join(_fmt(v) for v in com)}\" rpy=\"0 0 0\"/>\n"
            f"{inner}<mass value=\"{_fmt(m)}\"/>\n"
            f"{inner}<inertia ixx=\"{_fmt(ic[0, 0])}\" ixy=\"{_fmt(ic[0, 1])}\" "
            f"ixz=\"{_fmt(ic[0, 2])}\" iyy=\"{_fmt(ic[1, 1])}\" iyz=\"{_fmt(ic[1, 2])}\" "
            f"izz=\"{_fmt(ic[2, 2])}\"/>\n"
            f"{indent}</inertial>")


def _spans(data: bytes) -> dict[str, dict]:
    """Byte positions in a URDF of every top-level ``<link>``'s start tag, its end, and its
    ``<inertial>`` block (``xml.parsers.expat``, the parser under ``xml.etree``: the
    positions let the file be edited in place, every other byte kept)."""
    import xml.parsers.expat

    parser = xml.parsers.expat.ParserCreate()
    out: dict[str, dict] = {}
    stack: list[tuple[str, str | None]] = []

    def tag_end(i: int) -> int:
        return data.index(b">", i) + 1

    def start(name, attrs):
        i = parser.CurrentByteIndex
        if name == "link" and len(stack) == 1:
            out[attrs.get("name")] = {"start": i, "start_end": tag_end(i), "inertial": None}
        if name == "inertial" and len(stack) == 2 and stack[-1][0] == "link":
            out[stack[-1][1]]["inertial"] = [i, None]
        stack.append((name, attrs.get("name")))

    def end(name):
        i = parser.CurrentByteIndex
        _, lname = stack.pop()
        if name == "link" and len(stack) == 1:
            out[lname]["end"] = tag_end(i)
            out[lname]["empty"] = i == out[lname]["start"]
        if name == "inertial" and len(stack) == 2 and stack[-1][0] == "link":
            out[stack[-1][1]]["inertial"][1] = tag_end(i)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.Parse(data, True)
    return out


def own_link_params(robot: RobotModel, own_body_frame: list[InertialParams]
                    ) -> dict[str, InertialParams]:
    """Each body's own part moved from the body frame to its own link's frame."""
    out = {}
    for body, p in zip(robot.bodies, own_body_frame):
        _, r_bl, p_bl = robot.link_poses[body.name]
        out[body.name] = InertialParams(transform_params(p.pi, r_bl.T, -r_bl.T @ p_bl))
    return out


def write_robot_urdf(robot: RobotModel, own_body_frame: list[InertialParams],
                     out_path: str | Path) -> Path:
    """Write ``robot.urdf``: the model's URDF with each body's own link's ``<inertial>``
    replaced by ``own_body_frame[j]`` (body frame; moved to the link frame here). Every
    other byte of the file is kept."""
    out_path = Path(out_path)
    data = Path(robot.path).read_bytes()
    ET.fromstring(data)                                   # the file still parses
    spans = _spans(data)
    new = own_link_params(robot, own_body_frame)
    for p in robot.projected:            # attached links: the consistent prior fitted with
        if p.link not in new:
            new[p.link] = robot.link_inertials[p.link]
    edits = []                                            # (start, end, replacement)
    for name, p in new.items():
        sp = spans[name]
        line_start = data.rfind(b"\n", 0, sp["start"]) + 1
        indent_link = data[line_start:sp["start"]].decode()
        indent_link = indent_link if not indent_link.strip() else ""
        step = "    " if "    <" in data[:2000].decode(errors="ignore") else "  "
        if sp["inertial"] is not None:
            a, b = sp["inertial"]
            ls = data.rfind(b"\n", 0, a) + 1
            indent = data[ls:a].decode()
            indent = indent if not indent.strip() else indent_link + step
            edits.append((a, b, _inertial_text(p, indent, step)))
        elif sp["empty"]:
            tag = data[sp["start"]:sp["end"]].decode().rstrip()
            tag = tag[:-2].rstrip() + ">"
            block = _inertial_text(p, indent_link + step, step)
            edits.append((sp["start"], sp["end"],
                          f"{tag}\n{indent_link + step}{block}\n{indent_link}</link>"))
        else:
            a = sp["start_end"]
            block = _inertial_text(p, indent_link + step, step)
            edits.append((a, a, f"\n{indent_link + step}{block}"))
    out = data
    for a, b, text in sorted(edits, reverse=True):
        out = out[:a] + text.encode() + out[b:]
    try:
        out_path.write_bytes(out)
    except OSError as exc:
        raise InputError(f"cannot write the URDF: {exc.strerror}", path=out_path) from None
    return out_path


def write_base_parameters_csv(base: RobotBaseResult, out_path: str | Path) -> Path:
    """``base_parameters.csv``: name (the leading standard parameter the others are
    regrouped into), combination (``coefficient*parameter`` terms), value, standard error;
    SI units (kg, kg m, kg m^2)."""
    out_path = Path(out_path)
    with open(out_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["name", "combination", "value", "std"])
        for name, expr, v, s in zip(base.names, base.expressions, base.values, base.std):
            combo = " + ".join(f"{c:.10g}*{k}" for k, c in expr.items())
            w.writerow([name.split(" ")[0], combo,
                        f"{v:.10g}", f"{s:.6g}"])
    return out_path


__all__ = ["own_link_params", "write_robot_urdf", "write_base_parameters_csv"]
