"""A whole study on the test bed: the rig calibrated from reference bodies, the subject in
locked postures and in a relative motion, written as a lab's files with ``truth.json``.

Layout written under ``root`` (as a lab keeps it):
``calibration/<rig>.toml`` and ``calibration/<rig>/<capture>.csv`` (or ``.c3d``);
``captures/<session>/session.toml``, its capture CSVs and ``truth.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import signal
from scipy.spatial.transform import Rotation

from benchmarks.testbed import simulate as sim
from benchmarks.testbed.markernoise import add_flicker
from benchmarks.testbed.model import Body, Rig, Subject, mjcf
from benchmarks.testbed.rigphysics import RigPhysics, storage_stiffness
from benchmarks.testbed.truth import phi_named, posture_overall
from benchmarks.testbed.writers import toml_table, write_json, write_markers


@dataclass
class CaptureSpec:
    """How each capture is taken: rate, length, marker noise and the hand's push (offset:
    m lab + rotation vector rad; velocity: m/s lab + rad/s lab), scaled per capture by a
    seeded factor in [0.7, 1.3] with a random sign per component when ``vary``.
    ``flicker_sigma_m``: 1/f marker noise, (common to every marker, per marker), on top of
    the white noise (:mod:`benchmarks.testbed.markernoise`). ``file_format``: the captures
    written as Vicon Nexus CSV (``"csv"``) or C3D (``"c3d"``)."""

    rate_hz: float = 120.0
    duration_s: float = 25.0
    noise_sigma_m: float = 1e-4
    offset: np.ndarray = field(default_factory=lambda: np.array(
        [0.015, -0.012, 0.010, 0.035, -0.030, 0.030]))
    velocity: np.ndarray = field(default_factory=lambda: np.array(
        [0.02, 0.02, -0.01, 0.05, -0.05, 0.05]))
    vary: bool = True
    substeps: int = 10
    flicker_sigma_m: tuple[float, float] = (0.0, 0.0)
    file_format: str = "csv"


@dataclass
class CalibrationCapture:
    """Reference bodies on the platform: (body, position, rotation) in the platform frame."""

    name: str
    loads: list[tuple[Body, np.ndarray, np.ndarray]]
    holdout: bool = False


@dataclass
class Posture:
    """A locked posture: each moving link's rotation relative to its parent's frame."""

    name: str
    rotations: dict[str, np.ndarray]


@dataclass
class RelativeMotion:
    """Links released from a posture (tilt: rotation vector in the parent's axes, rad; the
    base's for a link on the base) on their joints
    with ``joint_damping`` (N m s/rad); equilibrium found with the posture locked."""

    name: str
    posture: str
    release: dict[str, np.ndarray]
    joint_damping: float = 0.05
    duration_s: float = 12.0
    window: tuple[float, float] | None = (1.0, 11.0)


@dataclass
class Study:
    """Everything one simulated study needs."""

    rig: Rig
    reference_bodies: list[Body]
    calibration: list[CalibrationCapture]
    subject: Subject
    postures: list[Posture]
    relative: RelativeMotion | None
    capture: CaptureSpec = field(default_factory=CaptureSpec)
    seed: int = 0
    #: masses inside links on prescribed paths (model.mjcf's ``internal``, each with its
    #: ``path(t)``, m from its mean place); ``truth_subject`` then holds the body with every
    #: such mass at its mean place (what rigtool is to report)
    internal: list[dict] = field(default_factory=list)
    truth_subject: Subject | None = None
    #: the rig's physics on the calibration's day and on the session's (the calibration's
    #: when ``None``); :mod:`benchmarks.testbed.rigphysics`
    physics: RigPhysics = field(default_factory=RigPhysics)
    session_physics: RigPhysics | None = None
    #: the motion-capture system's length scale on each day (markers scaled about the lab
    #: origin): (calibration, session)
    camera_scale: tuple[float, float] = (1.0, 1.0)
    #: the base link on a compliant mount (model.mjcf's ``back``; ``None``: welded)
    back: dict | None = None
    #: skin drift of the subject's markers: a stationary Ornstein-Uhlenbeck process per
    #: marker and lab axis of standard deviation ``skin_sigma_m`` and time constant
    #: ``skin_tau_s`` (0: none)
    skin_sigma_m: float = 0.0
    skin_tau_s: float = 2.0


def _push(spec: CaptureSpec, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if not spec.vary:
        return spec.offset, spec.velocity
    f = rng.uniform(0.7, 1.3, 12) * rng.choice([-1.0, 1.0], 12)
    return spec.offset * f[:6], spec.velocity * f[6:]


def _carried(locked: "sim.mujoco.MjModel", q: np.ndarray, model) -> np.ndarray:
    """``model``'s qpos0 with every joint it shares with ``locked`` (by name: the platform's,
    a frame's, the spring beads') set from ``locked``'s state ``q``."""
    out = np.array(model.qpos0, float)
    width = {0: 7, 1: 4, 2: 1, 3: 1}                      # free, ball, slide, hinge
    for j in range(locked.njnt):
        name = locked.joint(j).name
        try:
            dst = model.joint(name)
        except KeyError:
            continue
        w = width[int(locked.jnt_type[j])]
        src = int(locked.jnt_qposadr[j])
        out[int(dst.qposadr[0]):int(dst.qposadr[0]) + w] = q[src:src + w]
    return out


def rest_at_welded_place(model: "sim.mujoco.MjModel", q: np.ndarray) -> None:
    """Set the rest of every sprung hinge and slide joint of ``model`` (soft tissue, a
    back) so that at the state ``q`` at rest (each such joint at its welded place) the
    joint's spring balances the forces on it: the statics of the welded body, each tissue
    sagging nowhere. In place on ``model.qpos_spring``."""
    mj = sim.mujoco
    sprung = [j for j in range(model.njnt) if model.jnt_stiffness[j] > 0
              and int(model.jnt_type[j]) in (int(mj.mjtJoint.mjJNT_SLIDE),
                                             int(mj.mjtJoint.mjJNT_HINGE))]
    if not sprung:
        return
    for j in sprung:
        model.qpos_spring[model.jnt_qposadr[j]] = q[model.jnt_qposadr[j]]
    data = mj.MjData(model)
    data.qpos[:] = q
    data.qvel[:] = 0.0
    mj.mj_forward(model, data)
    for j in sprung:           # k (rest - q) + (the other forces on the joint) = 0
        model.qpos_spring[model.jnt_qposadr[j]] -= (data.qfrc_smooth[model.jnt_dofadr[j]]
                                                    / model.jnt_stiffness[j])


def skin_drift(names: list[str], markers_lab_m: np.ndarray, prefix: str, sigma_m: float,
               tau_s: float, rate_hz: float, rng) -> np.ndarray:
    """``markers_lab_m`` with skin drift on the markers named ``prefix...``: per marker
    and lab axis a stationary Ornstein-Uhlenbeck process (standard deviation ``sigma_m``,
    time constant ``tau_s``), x[n] = a x[n-1] + sqrt(1 - a^2) sigma w[n], a = exp(-1 /
    (rate tau)), started from its stationary law."""
    out = np.array(markers_lab_m, float)
    cols = [k for k, n in enumerate(names) if n.startswith(prefix)]
    if not cols or sigma_m <= 0:
        return out
    a = float(np.exp(-1.0 / (rate_hz * tau_s)))
    n = out.shape[0]
    w = rng.standard_normal((n, len(cols), 3)) * sigma_m * np.sqrt(1 - a * a)
    x0 = rng.standard_normal((len(cols), 3)) * sigma_m
    drift = signal.lfilter([1.0], [1.0, -a], w, axis=0, zi=(a * x0)[None])[0]
    out[:, cols] += drift
    return out


def _sample(xml: str, spec: CaptureSpec, rng, *, duration_s=None, q_eq=None,
            push=True, released_xml: str | None = None, internal=(), camera_scale=1.0,
            skin: tuple[str, float, float] | None = None):
    """Equilibrium of ``xml``, then the motion of ``released_xml`` (or ``xml``) from it
    (its sprung joints at rest at their welded place); ``internal`` masses on a path
    follow it from a random phase of their cycle; ``skin`` = (marker prefix, sigma m,
    tau s) drifts the subject's markers; the markers read by a camera of length scale
    ``camera_scale``."""
    model = sim.compile_model(xml)
    q = sim.equilibrium(model)
    off, vel = _push(spec, rng) if push else (np.zeros(6), np.zeros(6))
    if released_xml is not None:
        locked = model
        model = sim.compile_model(released_xml)
        q = _carried(locked, q, model)
        rest_at_welded_place(model, q)
    q0, v0 = sim.perturbed_state(model, q, off, vel)
    control = None
    driven = [(k, im) for k, im in enumerate(internal) if "path" in im]
    if driven:
        t_off = rng.uniform(0.0, 60.0)
        paths = [im["path"] for _, im in driven]

        def control(t):
            return [p(t + t_off) for p in paths]
        for k, im in driven:                   # start on the path, at its velocity
            adr = model.joint(f"internal{k}").qposadr[0]
            q0[adr] = im["path"](t_off)
            v0[model.joint(f"internal{k}").dofadr[0]] = (im["path"](t_off + 1e-6)
                                                         - im["path"](t_off - 1e-6)) / 2e-6
    traj = sim.simulate(model, q0, v0, rate_hz=spec.rate_hz,
                        duration_s=duration_s or spec.duration_s, substeps=spec.substeps,
                        control=control)
    noisy = sim.add_noise(traj.markers_lab_m, spec.noise_sigma_m, rng)
    if skin is not None and skin[1] > 0:
        noisy = skin_drift(traj.names, noisy, skin[0], skin[1], skin[2], spec.rate_hz, rng)
    if any(spec.flicker_sigma_m):
        noisy = add_flicker(noisy, *spec.flicker_sigma_m, rng)
    if camera_scale != 1.0:
        noisy = noisy * camera_scale
    return traj, noisy, {"offset": off, "velocity": vel, "equilibrium_qpos": q[:7]}


def _inertia_list(m: np.ndarray) -> list:
    return [[float(x) for x in row] for row in np.asarray(m)]


def _markers(b: Body) -> dict:
    return {k: [float(x) for x in v] for k, v in b.markers_m.items()}


def write_rig_file(study: Study, path: Path) -> None:
    """The rig file as a user writes it (geometry, reference bodies, captures; no
    stiffness or platform inertia: ``rigtool calibrate`` completes them)."""
    rig = study.rig
    out = [toml_table("[rig]", {"name": rig.name, "gravity": rig.gravity_lab_m_s2,
                                "locked_dofs": []}),
           toml_table("[platform]", {"markers": _markers(rig.platform)})]
    for s in rig.springs:
        out.append(toml_table("[[springs]]", {"name": s.name, "anchor": s.anchor_lab_m,
                                              "attachment": s.attachment_platform_m}))
    for b in study.reference_bodies:
        out.append(toml_table("[[reference_bodies]]", {
            "name": b.name, "mass": b.mass_kg, "com": b.com_m,
            "inertia_com": _inertia_list(b.inertia_com_kg_m2), "markers": _markers(b)}))
    for c in study.calibration:
        out.append(toml_table("[[calibration_captures]]", {
            "capture": f"{rig.name}/{c.name}.{study.capture.file_format}",
            "load": [b.name for b, _, _ in c.loads],
            "holdout": True if c.holdout else None}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# the rig file as a user writes it; `rigtool calibrate` completes it\n\n"
                    + "\n".join(out), encoding="utf-8")


def write_manifest(study: Study, path: Path, rig_rel: str) -> None:
    """The session manifest as a user writes it (links, markers, priors, captures)."""
    sub = study.subject
    ext = study.capture.file_format
    weighed = (study.truth_subject or sub).total_mass_kg
    out = [toml_table("[session]", {"name": sub.name, "rig": rig_rel, "total_mass": weighed})]
    for lk in sub.links:
        items = {"name": lk.body.name, "parent": lk.parent}
        if lk.parent != "platform":
            items["joint"] = lk.joint
            items["joint_center"] = lk.joint_center_parent_m
        items["markers"] = _markers(lk.body)
        wall = {m: p for im in study.internal if im.get("kind") == "wall"
                and im["link"] == lk.body.name for m, p in im["sites"].items()}
        if wall:            # the wall's markers at their mean place, named as they move
            items["markers"].update({m: [float(x) for x in p] for m, p in wall.items()})
            items["breathing_markers"] = list(wall)
        out.append(toml_table("[[links]]", items))
        if lk.prior:
            pr = dict(lk.prior)
            pr["inertia_com"] = _inertia_list(pr["inertia_com"])
            out.append(toml_table("[links.prior]", pr))
    for p in study.postures:
        out.append(toml_table("[[postures]]", {"name": p.name,
                                                "capture": f"{p.name}.{ext}"}))
    if study.relative is not None:
        r = study.relative
        out.append(toml_table("[relative_motion]", {
            "capture": f"{r.name}.{ext}", "window": list(r.window) if r.window else None}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# the session manifest as a user writes it\n\n" + "\n".join(out),
                    encoding="utf-8")


def _physics_doc(physics: RigPhysics) -> dict:
    doc = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(physics).items()}
    if physics.loss_factor > 0:        # the hysteretic spring's stiffness in the band
        doc["storage_stiffness_relative"] = {f"{f:g} Hz": storage_stiffness(physics, f)[0]
                                             for f in (0.3, 1.0, 3.0)}
    return doc


def _living_doc(study: Study) -> dict:
    """What of the subject lives (truth.json's ``living``): each internal mass without its
    path, the back's mount, the skin drift."""
    internal = [{k: v for k, v in im.items() if k != "path"} for im in study.internal]
    return {"internal": internal, "back": study.back,
            "skin": {"sigma_m": study.skin_sigma_m, "tau_s": study.skin_tau_s}}


def write_study(study: Study, root: Path, *, write_rig: bool = True) -> dict:
    """Simulate every capture of ``study`` and write the lab's files under ``root``
    (with ``write_rig=False`` only the session: its rig file is already there).

    Returns the paths: ``rig`` (the rig file), ``session`` (the manifest), ``truth``.
    """
    root = Path(root)
    rng = np.random.default_rng(study.seed)
    rig, spec, sub = study.rig, study.capture, study.subject
    tsub = study.truth_subject or sub
    rig_path = root / "calibration" / f"{rig.name}.toml"
    captures = []
    if write_rig:
        write_rig_file(study, rig_path)
    cal_physics = study.physics
    physics = study.session_physics or cal_physics
    cal_scale, scale = study.camera_scale
    for c in study.calibration if write_rig else []:
        traj, noisy, info = _sample(mjcf(rig, loads=c.loads, physics=cal_physics), spec, rng,
                                    camera_scale=cal_scale)
        write_markers(rig_path.parent / rig.name / c.name, spec.file_format, spec.rate_hz,
                      traj.names, noisy)
        captures.append({"name": c.name, "kind": "calibration", **info})
    sess_dir = root / "captures" / sub.name
    skin = (f"{sub.name}:", study.skin_sigma_m, study.skin_tau_s)
    posture_truth = []
    rot_of = {}
    for p in study.postures:
        rot_of[p.name] = p.rotations
        # equilibrium with any internal mass held at its mean place (the truth's body)
        traj, noisy, info = _sample(mjcf(rig, subject=tsub, rotations=p.rotations,
                                         physics=physics), spec, rng,
                                    released_xml=(mjcf(rig, subject=sub, rotations=p.rotations,
                                                       internal=study.internal,
                                                       back=study.back, physics=physics)
                                                  if study.internal or study.back else None),
                                    internal=study.internal, camera_scale=scale, skin=skin)
        write_markers(sess_dir / p.name, spec.file_format, spec.rate_hz, traj.names, noisy)
        ov = posture_overall(tsub, p.rotations)
        posture_truth.append({"name": p.name, **ov})
        captures.append({"name": p.name, "kind": "posture", **info})
    rel_truth = None
    if study.relative is not None:
        r = study.relative
        rots = rot_of[r.posture]
        start = {}
        for n, rel in rots.items():                # released: tilted in parent axes
            start[n] = rel
        for n, rv in r.release.items():
            start[n] = Rotation.from_rotvec(rv).as_matrix() @ rots.get(n, np.eye(3))
        damp = {n: r.joint_damping for n in r.release}
        traj, noisy, info = _sample(mjcf(rig, subject=tsub, rotations=rots, physics=physics),
                                    spec, rng, duration_s=r.duration_s,
                                    released_xml=mjcf(rig, subject=sub, rotations=start,
                                                      released=damp,
                                                      internal=study.internal,
                                                      back=study.back, physics=physics),
                                    internal=study.internal, camera_scale=scale, skin=skin)
        write_markers(sess_dir / r.name, spec.file_format, spec.rate_hz, traj.names, noisy)
        captures.append({"name": r.name, "kind": "relative_motion", **info})
        rel_truth = {"name": r.name, "posture": r.posture, "released": r.release,
                     "start_rotations_parent": start, "joint_damping": r.joint_damping}
    man_path = sess_dir / "session.toml"
    write_manifest(study, man_path, f"../../calibration/{rig.name}.calibrated.toml")
    phi_s, phi_b = phi_named(tsub)
    plat = rig.platform
    truth = {
        "simulator": f"benchmarks.testbed (MuJoCo {sim.mujoco.__version__}, RK4, "
                     f"{spec.substeps} steps per frame)",
        "seed": study.seed,
        "springs": [{"name": s.name, "anchor": s.anchor_lab_m,
                     "attachment": s.attachment_platform_m, "stiffness": s.stiffness_n_m,
                     "free_length": s.free_length_m, "damping": s.damping_n_s_m}
                    for s in rig.springs],
        "platform": {"mass": plat.mass_kg, "com": plat.com_m,
                     "inertia_com": plat.inertia_com_kg_m2},
        "gravity": rig.gravity_lab_m_s2,
        "rig_physics": {"calibration": _physics_doc(cal_physics),
                        "session": _physics_doc(physics),
                        "camera_scale": {"calibration": cal_scale, "session": scale},
                        "flicker_sigma_m": list(spec.flicker_sigma_m)},
        "session": sub.name, "total_mass": tsub.total_mass_kg,
        "base": {"rotation_platform": sub.base_rotation_platform,
                 "position_platform": sub.base_position_platform_m},
        "links": [{"name": lk.body.name, "parent": lk.parent,
                   "joint_center": None if lk.parent == "platform" else lk.joint_center_parent_m,
                   "mass": lk.body.mass_kg, "com": lk.body.com_m,
                   "inertia_com": lk.body.inertia_com_kg_m2} for lk in tsub.links],
        "postures": posture_truth, "phi_s": phi_s, "phi_b": phi_b,
        "relative_motion": rel_truth,
        "living": _living_doc(study),
        "captures": [{**c, "rate_hz": spec.rate_hz, "noise_sigma_m": spec.noise_sigma_m}
                     for c in captures],
    }
    write_json(sess_dir / "truth.json", truth)
    return {"rig": rig_path, "session": man_path, "truth": sess_dir / "truth.json"}
