"""Writing a session's results: report.json, report.md, report.html, figures and CSV tables.

Everything is written into one results directory that never holds inputs. The parts, one job
each: rigtool.report.document (report.json: summary, checks, detail, truth comparison),
rigtool.report.checks (the quality checks), rigtool.report.figures (the PNG figures),
rigtool.report.content (the report's sections in reading order), rigtool.report.markdown and
rigtool.report.html (the two renderings), rigtool.report.csv_tables and
rigtool.report.exports (the model files: MuJoCo, OpenSim, URDF).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING
import json
from pathlib import Path

from rigtool.report.content import build_document
from rigtool.report.csv_tables import write_tables
from rigtool.report.document import report_dict
from rigtool.process_pool import LazyPool
from rigtool.report.figures import DrawnEarly, write_figures
from rigtool.report.html import render_html
from rigtool.report.markdown import render_markdown

if TYPE_CHECKING:                    # annotations only (data flows pipeline -> report)
    from rigtool.pipeline.session import SessionOutcome


def write_report(out: SessionOutcome, out_dir: Path, *,
                 now: _dt.datetime | None = None, pool: LazyPool | None = None,
                 early: DrawnEarly | None = None, model_base: str = "free",
                 model_geometry: bool = True) -> list[Path]:
    """Write every report file of a :class:`~rigtool.pipeline.session.SessionOutcome` into
    ``out_dir``; returns the paths written. ``now``: the time the calibration's age is
    measured to (default: now, UTC). ``pool``: worker processes for the figures, ``early``:
    the posture figures already being drawn there (see
    :func:`rigtool.report.figures.write_figures`). ``model_base``: the model files' base
    link ``"free"`` or ``"fixed"`` to the world; ``model_geometry``: their viewing
    ellipsoids."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = report_dict(out, now=now)
    figures = write_figures(out, doc, out_dir, pool=pool, early=early)
    written = write_tables(out, out_dir)
    if out.segments is not None:
        from rigtool.report.exports import write_models
        models, doc["model_files"] = write_models(doc, out_dir, base=model_base,
                                                  geometry=model_geometry)
        written += models
    opensim = getattr(out.session, "opensim", None)
    if opensim is not None and out.segments is not None:
        written.append(write_opensim_model(opensim, doc, out_dir))
    if getattr(out, "robot", None) is not None:
        written += write_robot_files(out.robot, out_dir)
        if out.robot.consistent is not None:
            models, doc["model_files"] = write_robot_models(doc, out.robot, out_dir,
                                                            base=model_base,
                                                            geometry=model_geometry)
            written += models
    (out_dir / "report.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    document = build_document(doc, figures)
    (out_dir / "report.md").write_text(render_markdown(document), encoding="utf-8")
    (out_dir / "report.html").write_text(render_html(document, out_dir), encoding="utf-8")
    written += [out_dir / "report.json", out_dir / "report.md", out_dir / "report.html"]
    written += [out_dir / f.file for f in figures]
    return written


def write_opensim_model(opensim, doc: dict, out_dir: Path) -> Path:
    """An [opensim] session's personalised model (the user's .osim with the measured mass
    properties, rigtool.osim.personalise); sets report.json's ``opensim`` block."""
    from rigtool.osim.personalise import FILE_NAME, write_personalised

    shown = next((i["path"] for i in doc.get("inputs", [])
                  if Path(i["path"]).name == opensim.model.name), str(opensim.model))
    path = out_dir / FILE_NAME
    doc["opensim"] = write_personalised(opensim.tree, doc, path, model_shown=shown)
    return path


#: Length of the advised joint trajectory written for the robot's controller, s
MOTION_ADVICE_S = 15.0


def write_robot_files(robot, out_dir: Path) -> list[Path]:
    """A robot session's robot.urdf (the user's URDF, identified <inertial> blocks) and
    base_parameters.csv."""
    from rigtool.robot.outputs import write_base_parameters_csv, write_robot_urdf

    written = [write_base_parameters_csv(robot.base, out_dir / "base_parameters.csv")]
    if robot.motion_advice is not None:
        path = out_dir / "motion_advice.csv"
        robot.motion_advice.write_csv(path, MOTION_ADVICE_S)
        written.append(path)
    if robot.consistent is not None:
        written.append(write_robot_urdf(robot.inputs.model, robot.consistent.own,
                                        out_dir / "robot.urdf"))
    return written


def write_robot_models(doc: dict, robot, out_dir: Path, *, base: str, geometry: bool
                       ) -> tuple[list[Path], dict]:
    """A robot session's MuJoCo and OpenSim models of its identified bodies (its URDF is
    robot.urdf); returns the paths and report.json's ``model_files`` block."""
    from rigtool.report.export_mjcf import write_mjcf
    from rigtool.report.export_osim import write_osim
    from rigtool.robot.model_files import robot_model_description

    provenance = ((f"written by rigtool {doc.get('rigtool_version', '?')} from the results of "
                   f"session '{doc.get('session', '?')}'",
                   "per body (a moving joint's link and the links held to it): mass (kg), COM "
                   "and inertia about the COM in the joint frame, identified from the "
                   "platform's free vibration, closest to the URDF's CAD values where the "
                   "captures are silent", "inputs (sha256):")
                  + tuple(f"  {i['path']}  {i['sha256']}" for i in doc.get("inputs", [])))
    model = robot_model_description(
        robot.inputs.model, list(robot.consistent.params), name=str(doc.get("session", "robot")),
        base=base, gravity_m_s2=doc.get("rig", {}).get("gravity"), provenance=provenance,
        prior_parameters=[k for k, v in robot.consistent.source.items() if v == "prior"])
    files = (("model_mujoco.xml", "MJCF", "mujoco.MjModel.from_xml_path", write_mjcf),
             ("model.osim", "OpenSim 4", "opensim.Model", write_osim))
    paths = [w(model, out_dir / name, geometry=geometry) for name, _, _, w in files]
    block = {"base": base, "geometry": geometry,
             "files": [{"file": name, "format": fmt, "loads_with": how}
                       for name, fmt, how, _ in files]
             + [{"file": "robot.urdf", "format": "URDF (the user's, only <inertial> replaced)",
                 "loads_with": "pinocchio.buildModelFromUrdf, urdfdom"}],
             "links": [{"name": l.name, "label": l.label, "parent": l.parent,
                        "joint": None if l.joint is None else l.joint.type}
                       for l in model.links]}
    return paths, block


__all__ = ["write_report", "report_dict", "write_robot_files", "write_robot_models",
           "write_opensim_model"]
