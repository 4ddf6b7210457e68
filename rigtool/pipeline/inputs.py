"""The inputs of a session's results, each with its sha256 (report.json's ``inputs``).

One list serves the report (every result records what it was computed from) and ``rigtool
batch``'s resume check (a session whose report lists the same inputs with the same sha256 is
up to date). Paths are relative to the manifest's folder when inside it (the rig file's is
always relative to it, ``../../calibration/...``), so results stay comparable when a study
folder moves. Kept free of the fitting pipeline's imports: the batch's parent process reads
it without loading JAX.
"""

from __future__ import annotations

import os
from pathlib import Path

from rigtool.config import Session, sha256_of


def _rel(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it, else as given."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def covariance_file_of(ref) -> Path | None:
    """The marker covariance file a posture's output-error fit uses (manifest
    ``marker_covariance``: a path, or ``"auto"`` and the capture's ``rigtool track`` side
    file exists), else None."""
    from rigtool.camera.covariance_file import side_file_of

    setting = getattr(ref, "marker_covariance", "none")
    if isinstance(setting, Path):
        return setting
    if setting == "auto" and side_file_of(ref.capture).is_file():
        return side_file_of(ref.capture)
    return None


def session_inputs(session: Session) -> list[dict]:
    """Every file the session's results depend on, with its sha256.

    Order: the manifest, the rig file, the relative-motion capture, the posture captures
    (as report.json has always listed them), then the weighing file and static captures
    when the manifest names them, a robot's URDF and joint-angle files (the postures', then
    the motion's), an OpenSim model ([opensim]), then the posture captures' marker
    covariance files (``rigtool track``'s side files) when there is one, then the rig
    checks' captures.

    Returns
    -------
    list of dict
        ``{"path": str, "sha256": str}`` per file.
    """
    root = session.path.parent
    files = [(session.path.name, session.path),
             (os.path.relpath(session.rig_path, root), session.rig_path)]
    if session.relative_motion is not None:
        files.append((_rel(session.relative_motion.capture, root),
                      session.relative_motion.capture))
    files += [(_rel(ref.capture, root), ref.capture) for ref in session.postures]
    if session.total_mass_kg is None and session.total_mass_from is not None:
        files.append((_rel(Path(session.total_mass_from), root), Path(session.total_mass_from)))
    for spec in session.frames.values():
        files.append((_rel(spec.static_capture, root), spec.static_capture))
    robot = getattr(session, "robot", None)
    if robot is not None:                         # the URDF and the joint-angle files
        files.append((_rel(robot.urdf, root), robot.urdf))
        files += [(_rel(p, root), p) for p in robot.joint_angles.values()]
        if robot.relative_joint_angles is not None:     # the motion's encoders
            files.append((_rel(robot.relative_joint_angles, root), robot.relative_joint_angles))
    opensim = getattr(session, "opensim", None)
    if opensim is not None:                       # the OpenSim model of the person
        files.append((_rel(opensim.model, root), opensim.model))
    for ref in session.postures:                 # a camera capture's marker covariance
        cov = covariance_file_of(ref)
        if cov is not None:
            files.append((_rel(cov, root), cov))
    files += [(_rel(ref.capture, root), ref.capture)               # the rig's checks
              for ref in getattr(session, "rig_checks", ())]
    seen, out = set(), []
    for shown, path in files:
        if shown not in seen:           # a static capture may also be a posture capture
            seen.add(shown)
            out.append({"path": shown, "sha256": sha256_of(path)})
    return out


__all__ = ["session_inputs"]
