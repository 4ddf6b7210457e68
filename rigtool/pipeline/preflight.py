"""Check every file a session or a rig file names before any fit runs.

A user's mistake in line 20 of a manifest must not cost minutes of fitting, nor end in an
internal error. :func:`check_session` and :func:`check_rig` read the manifest and the rig
file, then every capture they name (the rig's calibration captures, the session's postures,
relative-motion capture and static captures), and collect every problem they find: a file
that is missing or unreadable, a format no reader knows, an empty capture, a body with fewer
than three of its markers in a capture, a window outside a capture or longer than it, an
uncalibrated rig; for a robot, a URDF or joint-angle file that does not read, and an encoder
column that fits its joint's URDF limits only as degrees. All of them are reported at once,
each naming the file and the field (:class:`PreflightError`, a
:class:`~rigtool.errors.ConfigError`: exit status 2).

The captures are read in full (the readers validate as they parse; a 10-minute capture reads
in about a second), so what passes here is what the pipeline will read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rigtool.camera.covariance_file import side_file_of
from rigtool.config import RigFile, Session, load_rig, load_session
from rigtool.errors import ConfigError, RigtoolError
from rigtool.identify.posture.cluster_covariance import resolve_standard_errors, too_few_clusters
from rigtool.mocap import MarkerData, read_capture
from rigtool.identify.common.capture_window import MIN_WINDOW_FRAMES, window_problem



class PreflightError(ConfigError):
    """Every problem found before fitting, one per line."""

    def __init__(self, problems: list[str], what: str = "the inputs") -> None:
        self.problems, self.what = list(problems), what
        head = (f"{len(problems)} problem{'s' if len(problems) > 1 else ''} found in {what} "
                "before any fit ran:")
        super().__init__(head + "".join(f"\n  - {p}" for p in problems))

    def __reduce__(self):          # the problems survive a worker process boundary
        return (PreflightError, (self.problems, self.what))


@dataclass
class _Collector:
    """The problems found so far (messages naming file and field)."""

    problems: list[str] = field(default_factory=list)

    def add(self, message: str, *, path: Path | None = None, field: str | None = None) -> None:
        where = ", ".join(w for w in ([str(path)] if path is not None else [])
                          + ([f"field '{field}'"] if field else []))
        self.problems.append(f"{where}: {message}" if where else message)

    def error(self, exc: RigtoolError, *, named_by: Path | None = None,
              field: str | None = None) -> None:
        text = str(exc)
        if named_by is not None:
            text += f" (named by {named_by}, field '{field}')" if field else \
                f" (named by {named_by})"
        self.problems.append(text)


def _read(col: _Collector, path: Path, units: str | None, *, named_by: Path,
          field: str) -> MarkerData | None:
    """The capture, or None with the problem recorded."""
    try:
        data = read_capture(path, units=units)
    except RigtoolError as exc:
        col.error(exc, named_by=named_by, field=field)
        return None
    if data.n_frames == 0:
        col.add(f"the capture holds no frames (named by {named_by})", path=path, field=field)
        return None
    return data


def _check_markers(col: _Collector, data: MarkerData, body: str, names: list[str], *,
                   named_by: Path, field: str) -> None:
    """Every marker a body lists is in the capture (the pipeline selects each by name), and
    at least three of them are seen in some frame (a pose needs three)."""
    seen, unseen, absent, ambiguous = [], [], [], []
    for n in names:
        try:
            xyz = data.marker(n)             # with or without a Subject: prefix
        except RigtoolError as exc:
            (ambiguous if "several" in exc.message else absent).append(n)
            continue
        (seen if np.any(np.isfinite(xyz)) else unseen).append(n)
    shown = f"{', '.join(list(data.names)[:12])}{' ...' if len(data.names) > 12 else ''}"
    if ambiguous:
        col.add(f"{body}: marker name(s) {', '.join(ambiguous)} match several markers of the "
                "capture; use the full Subject:Marker names", path=data.source, field=field)
    if absent:
        col.add(f"{body}: marker(s) {', '.join(absent)} named by {named_by} are not in the "
                f"capture (it has {shown})", path=data.source, field=field)
    if len(seen) < 3 and not absent:
        col.add(f"{body} needs at least 3 of its markers seen in the capture, found "
                f"{len(seen)} ({', '.join(seen) or 'none'}); never seen: {', '.join(unseen)}",
                path=data.source, field=field)


def _check_window(col: _Collector, data: MarkerData, window: tuple[float, float] | None, *,
                  named_by: Path, field: str) -> None:
    problem = window_problem(window, data.time_s, data.rate_hz)
    if problem is not None:
        col.add(problem, path=named_by, field=field)


def _check_clusters(col: _Collector, data: MarkerData, ref, *, named_by: Path,
                    field: str) -> None:
    """A posture whose standard errors will be clustered by frames (``"frame"``, or
    ``"auto"`` with a ``rigtool track`` covariance) needs enough clusters in its window
    (rigtool.identify.posture.cluster_covariance.too_few_clusters)."""
    setting = getattr(ref, "standard_errors", None)
    if setting is None:                               # the relative-motion capture
        return
    cov = ref.marker_covariance
    camera = isinstance(cov, Path) or (cov == "auto" and side_file_of(ref.capture).exists())
    if resolve_standard_errors(setting, camera) != "frame":
        return
    sel = np.ones(data.n_frames, bool) if ref.window is None else (
        (data.time_s >= ref.window[0]) & (data.time_s <= ref.window[1]))
    hit = np.flatnonzero(sel)
    n = int(hit[-1] - hit[0] + 1) if hit.size else 0
    problem = too_few_clusters(n, ref.cluster_frames)
    if problem:
        col.add(problem, path=named_by, field=field)


def _calibrated_rig_hint(rig_path: Path) -> str | None:
    """For a missing ``NAME.calibrated.toml`` whose ``NAME.toml`` exists: the command."""
    if rig_path.name.endswith(".calibrated.toml"):
        source = rig_path.with_name(rig_path.name[:-len(".calibrated.toml")] + ".toml")
        if source.is_file():
            return (f"the rig is not calibrated yet: run `rigtool calibrate "
                    f"{os.path.normpath(source)}`, which writes {rig_path.name}")
    return None


def _rig_problems(col: _Collector, rig_path: Path, *, named_by: Path | None,
                  field: str | None, calibration: bool) -> RigFile | None:
    if not rig_path.exists():
        hint = _calibrated_rig_hint(rig_path)
        col.add(hint or "rig file not found", path=rig_path if not named_by else named_by,
                field=field if named_by else None)
        if named_by and not hint:
            col.problems[-1] += f" ({rig_path})"
        return None
    try:
        rigfile = load_rig(rig_path)
    except RigtoolError as exc:
        col.error(exc)
        return None
    if not calibration and not rigfile.calibrated:
        col.add("the rig is not calibrated (springs need stiffness and free_length, the "
                f"platform mass, com and inertia_com); run `rigtool calibrate "
                f"{os.path.normpath(rig_path)}` "
                "first and name the file it writes", path=rig_path)
    if calibration:
        plat = list(rigfile.rig.platform.markers_platform)
        for i, cap in enumerate(rigfile.captures):
            f = f"calibration_captures[{i}]"
            data = _read(col, cap.capture, cap.units, named_by=rig_path, field=f"{f}.capture")
            if data is None:
                continue
            _check_markers(col, data, "the platform", plat, named_by=rig_path,
                           field=f"{f}.capture")
            for body in cap.load:
                ref = rigfile.reference_bodies.get(body)
                if ref is not None and ref.markers_body:
                    _check_markers(col, data, f"reference body '{body}'", list(ref.markers_body),
                                   named_by=rig_path, field=f"{f}.load")
            _check_window(col, data, cap.window, named_by=rig_path, field=f"{f}.window")
    return rigfile


def check_rig(rig_path: str | Path) -> RigFile:
    """Everything ``rigtool calibrate`` will read, checked before it fits.

    Returns the rig file read; raises :class:`PreflightError` with every problem found.
    """
    rig_path = Path(rig_path)
    col = _Collector()
    rigfile = _rig_problems(col, rig_path, named_by=None, field=None, calibration=True)
    if col.problems:
        raise PreflightError(col.problems, str(rig_path))
    return rigfile


def _check_robot(col: _Collector, session: Session) -> None:
    """The URDF reads, and every joint-angle file (the postures' and the motion's) reads
    with a column per moving joint in rad: a column that fits its joint's limits only as
    degrees is a problem naming the file and the column."""
    from rigtool.pipeline.robot_stage import revolute_limits
    from rigtool.robot.joint_angles import degree_columns, read_joint_angles
    from rigtool.robot.urdf_model import load_robot_model

    spec = session.robot
    try:
        model = load_robot_model(spec.urdf, spec.base_link, spec.fixed_joints)
    except RigtoolError as exc:
        col.error(exc, named_by=session.path, field="robot.urdf")
        return
    limits = revolute_limits(model)
    files = [spec.joint_angles[ref.name] for ref in session.postures
             if ref.name in spec.joint_angles]
    if session.relative_motion is not None and spec.relative_joint_angles is not None:
        files.append(spec.relative_joint_angles)
    for path in files:
        try:
            ja = read_joint_angles(path, model.moving_joints, held=list(model.fixed_joints))
        except RigtoolError as exc:
            col.error(exc)
            continue
        for joint, message in degree_columns(ja, limits):
            col.add(message, path=path, field=joint)


def check_session(session_path: str | Path, *, rig: str | Path | None = None) -> Session:
    """Everything ``rigtool run`` will read, checked before it fits.

    Reads the manifest (its own errors raise at once: nothing else can be checked without
    it), then the rig file it names (or ``rig``, given instead of it) and every capture,
    collecting each problem. Returns the session; raises :class:`PreflightError` with every
    problem found.
    """
    session = load_session(session_path, rig=rig)
    col = _Collector()
    rigfile = _rig_problems(col, session.rig_path, named_by=None if rig else session.path,
                            field=None if rig else "session.rig", calibration=False)
    if session.total_mass_kg is None and session.total_mass_from is not None \
            and not Path(session.total_mass_from).is_file():
        col.add(f"the weighing file {session.total_mass_from} does not exist",
                path=session.path, field="session.total_mass_from")
    if not session.postures:
        col.add("the manifest lists no [[postures]]; add at least one locked-posture capture",
                path=session.path, field="postures")
    plat = list(rigfile.rig.platform.markers_platform) if rigfile is not None else []
    links = [(f"link '{l.name}'", list(l.markers_link)) for l in session.tree.links
             if l.name not in session.frames]
    refs = [(ref, f"postures[{i}]") for i, ref in enumerate(session.postures)]
    if session.relative_motion is not None:
        refs.append((session.relative_motion, "relative_motion"))
    for ref, f in refs:
        data = _read(col, ref.capture, ref.units, named_by=session.path, field=f"{f}.capture")
        if data is None:
            continue
        if plat:
            _check_markers(col, data, "the platform", plat, named_by=rigfile.path,
                           field=f"{f}.capture")
        for body, names in links:
            _check_markers(col, data, body, names, named_by=session.path, field=f"{f}.capture")
        _check_window(col, data, ref.window, named_by=session.path, field=f"{f}.window")
        cov = getattr(ref, "marker_covariance", "auto")
        if isinstance(cov, Path) and not cov.is_file():
            col.add(f"the marker covariance file {cov} does not exist", path=session.path,
                    field=f"{f}.marker_covariance")
        _check_clusters(col, data, ref, named_by=session.path, field=f"{f}.cluster_frames")
    if getattr(session, "robot", None) is not None:
        _check_robot(col, session)
    for i, link in enumerate(session.tree.links):
        spec = session.frames.get(link.name)
        if spec is not None:
            _read(col, spec.static_capture, None, named_by=session.path,
                  field=f"links[{i}].frame.static_capture")
    if col.problems:
        raise PreflightError(col.problems, str(session.path))
    return session


__all__ = ["PreflightError", "check_session", "check_rig", "MIN_WINDOW_FRAMES"]
