"""Write a person as an OpenSim model and the scenario that simulates measuring them.

The model (built with the ``opensim`` package, 13 bodies): pelvis joined to ground by a
FreeJoint; torso and head welded to it (with the pelvis, the base link); per side a humerus
on a BallJoint, a forearm on a PinJoint (elbow), a femur on a BallJoint, a tibia on a PinJoint
(knee) with the foot welded to it. OpenSim's axes (y up, the segments along -y), a MarkerSet
of 3-6 markers per link, a mesh reference per body (viewing only; no file needed).

The scenario (rigtool simulate): the rig of ``two_link_paper002.toml`` without its
calibration captures (the test writes the true calibration), the model's tree as rigtool
reads it (rigtool.osim.links) with true mass properties that differ from the model's (masses
by ~8 %, COMs by ~1 cm, inertias by ~10 %: the model is the prior, the scenario the person),
postures turning every moving link, and a swing of every moving link from the hanging
posture. The simulated person's joints are spherical (rigtool's model of every rotation
joint); the manifest names the model (``[opensim] model = "subject.osim"``).

Usage::

    python3 tools/make_opensim_subject.py -o DIR [--postures 14] [--seed 7]

writes ``DIR/subject.osim`` and ``DIR/opensim_subject.toml``; then
``rigtool simulate DIR/opensim_subject.toml -o BUNDLE``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

ROOT = Path(__file__).resolve().parents[1]

#: body -> (parent, joint type, joint place in the parent [m], parent-frame orientation
#: [rad], child-frame place in the body [m], mass [kg], COM [m], length [m])
BODIES = {
    "pelvis": (None, "FreeJoint", (0, 0, 0), (0, 0, 0), (0, 0, 0),
               11.0, (0.0, -0.02, 0.0), 0.20),
    "torso": ("pelvis", "WeldJoint", (0, 0.10, 0), (0, 0, 0), (0, 0, 0),
              27.0, (0.0, 0.24, 0.0), 0.50),
    "head": ("torso", "WeldJoint", (0, 0.50, 0), (0, 0, 0), (0, 0, 0),
             5.0, (0.0, 0.10, 0.0), 0.22),
    "humerus_r": ("torso", "BallJoint", (0, 0.42, 0.19), (0, 0, 0.1), (0, 0, 0),
                  2.1, (0.0, -0.14, 0.0), 0.30),
    "forearm_r": ("humerus_r", "PinJoint", (0, -0.30, 0), (0, 0, 0), (0, 0.005, 0),
                  1.6, (0.0, -0.13, 0.0), 0.27),
    "humerus_l": ("torso", "BallJoint", (0, 0.42, -0.19), (0, 0, -0.1), (0, 0, 0),
                  2.1, (0.0, -0.14, 0.0), 0.30),
    "forearm_l": ("humerus_l", "PinJoint", (0, -0.30, 0), (0, 0, 0), (0, 0.005, 0),
                  1.6, (0.0, -0.13, 0.0), 0.27),
    "femur_r": ("pelvis", "BallJoint", (-0.05, -0.07, 0.09), (0, 0, 0), (0, 0, 0),
                9.0, (0.0, -0.18, 0.0), 0.42),
    "tibia_r": ("femur_r", "PinJoint", (0, -0.42, 0), (0, 0, 0.05), (0, 0.01, 0),
                3.6, (0.0, -0.18, 0.0), 0.42),
    "foot_r": ("tibia_r", "WeldJoint", (0, -0.43, 0), (0, 0.2, 0), (0, 0, 0),
               1.1, (0.08, -0.03, 0.0), 0.22),
    "femur_l": ("pelvis", "BallJoint", (-0.05, -0.07, -0.09), (0, 0, 0), (0, 0, 0),
                9.0, (0.0, -0.18, 0.0), 0.42),
    "tibia_l": ("femur_l", "PinJoint", (0, -0.42, 0), (0, 0, -0.05), (0, 0.01, 0),
                3.6, (0.0, -0.18, 0.0), 0.42),
    "foot_l": ("tibia_l", "WeldJoint", (0, -0.43, 0), (0, -0.2, 0), (0, 0, 0),
               1.1, (0.08, -0.03, 0.0), 0.22),
}

#: markers per body: fractions of its length along -y with sideways offsets (m)
_MARKER_PATTERN = ((0.05, -0.2, 0.04), (-0.04, -0.5, 0.05), (0.04, -0.8, -0.05),
                   (-0.05, -0.35, -0.04))
_EXTRA = {
    "pelvis": ((0.09, 0.02, 0.12), (0.09, 0.02, -0.12), (-0.08, 0.05, 0.0)),
    "torso": ((0.10, 0.30, 0.08), (-0.10, 0.40, -0.06), (0.08, 0.15, -0.10)),
    "head": ((0.09, 0.12, 0.0), (0.0, 0.2, 0.07)),
    "foot_r": ((0.15, -0.04, 0.03),), "foot_l": ((0.15, -0.04, -0.03),),
}


def _inertia(mass: float, length: float, k: int) -> np.ndarray:
    """A segment's generic inertia about its COM: radii of gyration 0.3 L across, 0.12 L
    along its y axis, small products of inertia."""
    kxz, ky = 0.3 * length, 0.12 * length
    i = np.diag([mass * kxz ** 2, mass * ky ** 2, mass * kxz ** 2 * 0.95])
    i[0, 1] = i[1, 0] = 0.02 * i[0, 0] * (1 if k % 2 else -1)
    i[1, 2] = i[2, 1] = 0.015 * i[2, 2]
    return i


def build_model(path: Path) -> Path:
    """Build the model with the ``opensim`` package and print it to ``path``."""
    import opensim as osim

    osim.Logger.setLevelString("error")
    model = osim.Model()
    model.setName("rigtool_subject")
    made = {}
    for k, (name, (parent, jtype, jp, jo, cp, mass, com, length)) in enumerate(BODIES.items()):
        i = _inertia(mass, length, k)
        body = osim.Body(name, mass, osim.Vec3(*com),
                         osim.Inertia(i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]))
        model.addBody(body)
        body.attachGeometry(osim.Mesh(f"{name}.vtp"))
        made[name] = body
        pframe = model.getGround() if parent is None else made[parent]
        args = (f"{name}_joint" if parent else "ground_pelvis", pframe, osim.Vec3(*jp),
                osim.Vec3(*jo), body, osim.Vec3(*cp), osim.Vec3(0, 0, 0))
        joint = getattr(osim, jtype)(*args)
        model.addJoint(joint)
        pattern = [(x, f * length, z) for x, f, z in _MARKER_PATTERN]
        if name in _EXTRA:
            pattern = list(_EXTRA[name]) + (pattern[:1] if name in ("torso", "head") else [])
        for j, loc in enumerate(pattern):
            model.addMarker(osim.Marker(f"{name}_M{j + 1}", body, osim.Vec3(*loc)))
    model.finalizeConnections()
    model.initSystem()
    model.printToXML(str(path))
    return path


def _toml_matrix(m: np.ndarray) -> str:
    return "[" + ", ".join("[" + ", ".join(f"{x:.10g}" for x in row) + "]" for row in m) + "]"


def _toml_vec(v) -> str:
    return "[" + ", ".join(f"{float(x):.10g}" for x in v) + "]"


def scenario_text(osim_path: Path, *, postures: int = 14, seed: int = 7,
                  posture_s: float = 15.0, swing_s: float = 12.0) -> str:
    """The scenario of the model (module docstring): ``postures`` of ``posture_s`` each
    and a swing of ``swing_s`` (its first and last second left out of the fit)."""
    from rigtool.osim.links import osim_tree
    from rigtool.osim.model_file import read_osim

    tree = osim_tree(read_osim(osim_path))
    rng = np.random.default_rng(seed)
    lines = ["# The person of subject.osim measured on the paper rig (written by",
             "# tools/make_opensim_subject.py; the manifest names the model: [opensim]).",
             "", "[scenario]", 'name = "opensim-subject"',
             f'extends = "{(ROOT / "scenarios" / "two_link_paper002.toml").as_posix()}"',
             f"seed = {seed}", 'drop = ["calibration_captures"]', "",
             "[capture]", "rate_hz = 100.0", f"duration_s = {posture_s:g}",
             "noise_sigma_mm = 0.1", "",
             "[object]", 'session = "opensim-subject"', 'subject = "subj"',
             f'opensim = "{osim_path.name}"',
             # OpenSim's y (up the body) along the platform's z: the limbs hang below
             "base = { position = [0.0, 0.0, 0.35], euler_deg = [90.0, 0.0, 0.0] }", ""]
    moving = [l.name for l in tree.links[1:]]
    for link in tree.links:
        p = link.prior
        mass = p.mass * (1.0 + 0.08 * rng.standard_normal())
        com = p.com + 0.01 * rng.standard_normal(3)
        turn = Rotation.from_rotvec(0.1 * rng.standard_normal(3)).as_matrix()
        inertia = (1.0 + 0.1 * rng.standard_normal()) * mass / p.mass * (
            turn @ p.inertia_com @ turn.T)
        lines += ["[[object.links]]", f'name = "{link.name}"', f'parent = "{link.parent}"']
        if link.joint_center is not None:
            lines.append(f"joint_center = {_toml_vec(link.joint_center)}")
        lines += [f"mass = {mass:.10g}", f"com = {_toml_vec(com)}",
                  f"inertia_com = {_toml_matrix(0.5 * (inertia + inertia.T))}",
                  "markers = { " + ", ".join(f"{k} = {_toml_vec(v)}"
                                             for k, v in link.markers.items()) + " }", ""]
    lines += ["[[postures]]", 'name = "hanging"', "rotation_vectors = { "
              + ", ".join(f"{n} = [0.0, 0.0, 0.0]" for n in moving) + " }", ""]
    for k in range(postures - 1):
        vecs = {}
        for n in moving:
            axis = rng.standard_normal(3)
            vecs[n] = axis / np.linalg.norm(axis) * rng.uniform(0.5, 1.6)
        lines += ["[[postures]]", f'name = "p{k + 1:02d}"', "rotation_vectors = { "
                  + ", ".join(f"{n} = {_toml_vec(v)}" for n, v in vecs.items()) + " }", ""]
    release = {n: rng.uniform(0.15, 0.3) * np.array([1.0, 0.0, 0.0] if k % 2 else
                                                      [0.0, 0.0, 1.0])
               for k, n in enumerate(moving)}
    lines += ["[relative_motion]", 'name = "swing"', 'posture = "hanging"',
              "release = { " + ", ".join(f"{n} = {_toml_vec(v)}" for n, v in release.items())
              + " }", "joint_damping = 0.1", f"duration_s = {swing_s:g}",
              f"window = [1.0, {swing_s - 1.0:g}]", ""]
    return "\n".join(lines)


def write_subject(out_dir: Path, *, postures: int = 14, seed: int = 7, posture_s: float = 15.0,
                  swing_s: float = 12.0) -> tuple[Path, Path]:
    """Write ``subject.osim`` and ``opensim_subject.toml`` into ``out_dir``
    (:func:`scenario_text`'s settings)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    osim_path = build_model(out_dir / "subject.osim")
    scenario = out_dir / "opensim_subject.toml"
    scenario.write_text(scenario_text(osim_path, postures=postures, seed=seed,
                                      posture_s=posture_s, swing_s=swing_s), encoding="utf-8")
    return osim_path, scenario


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True, type=Path)
    ap.add_argument("--postures", type=int, default=14)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    osim_path, scenario = write_subject(args.out, postures=args.postures, seed=args.seed)
    print(f"wrote {osim_path} and {scenario}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
