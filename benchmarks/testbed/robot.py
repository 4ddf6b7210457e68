"""The serial arms of ``example-robot-data`` on the test bed.

Each arm's URDF is read into the test bed's tree (benchmarks.testbed.urdf: fixed links
merged into the moving link they hang from; a gripper's prismatic fingers held at a drawn
opening and written as fixed joints in the URDF handed to rigtool, the way a lab holds
them), bolted at the platform's origin on a rig sized for it
(benchmarks.testbed.draws.sized_rig_study), locked in postures drawn within its limits and
clear of the deck (every link frame, COM and mid-link point 5 cm above the platform's top,
by the arm's forward kinematics in MuJoCo), each captured in free vibration after a push.
The driven capture follows the motion rigtool advises (benchmarks.testbed.advice) on
MuJoCo position actuators; encoders read the joints (1e-5 rad noise). The URDF given to
rigtool is the CAD prior: each link's inertial perturbed (mass +-15 %, COM +-1 cm, each
principal moment scaled by up to +-12 % about the true axes) and, where asked, some links'
principal moments made to break the triangle inequality (the largest 5-40 % above the sum
of the other two), as published CAD inertials sometimes do.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np

from benchmarks.testbed import simulate as sim
from benchmarks.testbed.advice import advised_motion
from benchmarks.testbed.model import Rig, mjcf
from benchmarks.testbed.truth import posture_overall
from benchmarks.testbed.urdf import Arm, body_inertials, read_arm, rotations
from benchmarks.testbed.writers import toml_table, write_json, write_markers

ROBOTS_DIR = Path(mujoco.__file__).resolve().parents[1] / "cmeel.prefix" / "share" / \
    "example-robot-data" / "robots"
#: name -> (URDF in example-robot-data's robots folder, base link, held joints: name ->
#: the range their held value is drawn from; joints listed together share the value)
ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", "panda_link0",
              {"panda_finger_joint1": (0.005, 0.035), "panda_finger_joint2": (0.005, 0.035)}),
    "ur3": ("ur_description/urdf/ur3_robot.urdf", "base_link", {}),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "base_link", {}),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", "base_link", {}),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", "link_base", {}),
    "z1": ("z1_description/urdf/z1.urdf", "link00", {}),
    "so100": ("so_arm_description/urdf/so100.urdf", "base", {}),
    "so101": ("so_arm_description/urdf/so101.urdf", "base_link", {}),
    "kinova": ("kinova_description/robots/kinova.urdf", "base", {}),
}
#: Lowest height above the platform's top of a point standing for a moving link, m
DECK_CLEARANCE_M = 0.05
#: The highest mode of the demo rig with its two-link object (posture 1), Hz: the sized
#: rigs' highest
DEMO_TOP_MODE_HZ = 3.77
#: Base markers (base-link frame, m)
BASE_MARKERS = {"B1": [0.06, 0.05, 0.03], "B2": [-0.07, 0.04, 0.06],
                "B3": [-0.02, -0.07, 0.04], "B4": [0.05, -0.05, 0.09]}


def load_robot(name: str, rng: np.random.Generator | None = None) -> Arm:
    """``name``'s arm; its held joints at a value drawn within their range (the middle of
    it without ``rng``)."""
    rel, base, ranges = ROBOTS[name]
    u = 0.5 if rng is None else float(rng.uniform())
    held = {j: lo + u * (hi - lo) for j, (lo, hi) in ranges.items()}
    return read_arm(ET.parse(ROBOTS_DIR / rel), base, held, name)


def arm_mass_kg(name: str) -> float:
    """The arm's mass (its URDF's)."""
    return load_robot(name).subject.total_mass_kg


def draw_configuration(arm: Arm, rng, margin: float = 0.15) -> dict[str, float]:
    """Joint angles drawn uniformly within the limits less ``margin`` rad (each range at
    most +-pi)."""
    q = {}
    for j in arm.joints.values():
        lo, hi = max(j["lower"], -np.pi) + margin, min(j["upper"], np.pi) - margin
        q[j["name"]] = float(rng.uniform(lo, hi)) if hi > lo else 0.5 * (j["lower"] + j["upper"])
    return q


def deck_heights_m(arm: Arm, model: mujoco.MjModel) -> np.ndarray:
    """Heights above the platform's top of the points standing for the moving links of
    ``model`` (the arm on the platform, the platform at its frame's origin): each link
    frame's origin, each body's COM and each mid-point of a body's frame with its parent's;
    the frames of the joints on the base (the mount) left out."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    base = arm.base_link
    pts = []
    for ln in arm.subject.links[1:]:
        b = model.body(ln.body.name).id
        on_mount = ln.parent == base
        for r, p in arm.members[ln.body.name].values():
            if not (on_mount and np.allclose(p, 0.0)):
                pts.append(data.xmat[b].reshape(3, 3) @ p + data.xpos[b])
        if ln.body.mass_kg > 0:
            pts.append(data.xipos[b])
        if not on_mount:
            pts.append(0.5 * (data.xpos[b] + data.xpos[model.body(ln.parent).id]))
    return np.array([p[2] for p in pts])


def draw_posture(arm: Arm, rig: Rig, rng, *, attempts: int = 500
                 ) -> tuple[dict[str, float], mujoco.MjModel, np.ndarray]:
    """A locked posture clear of the deck whose loaded platform hangs upright: (angles,
    its MuJoCo model, the static equilibrium)."""
    for _ in range(attempts):
        q = draw_configuration(arm, rng)
        model = sim.compile_model(mjcf(rig, subject=arm.subject, rotations=rotations(arm, q)))
        if deck_heights_m(arm, model).min() < DECK_CLEARANCE_M:
            continue
        try:
            return q, model, sim.equilibrium(model)
        except RuntimeError:
            continue
    raise RuntimeError(f"{arm.subject.name}: no posture clear of the deck in {attempts} draws")


def _set_inertial(el: ET.Element, m: float, c: np.ndarray, t: np.ndarray) -> None:
    o = el.find("origin")
    if o is None:
        o = ET.SubElement(el, "origin")
    o.set("xyz", " ".join(f"{x:.9g}" for x in c))
    o.set("rpy", "0 0 0")
    el.find("mass").set("value", f"{m:.9g}")
    el.find("inertia").attrib.update({"ixx": f"{t[0, 0]:.9g}", "iyy": f"{t[1, 1]:.9g}",
                                      "izz": f"{t[2, 2]:.9g}", "ixy": f"{t[0, 1]:.9g}",
                                      "ixz": f"{t[0, 2]:.9g}", "iyz": f"{t[1, 2]:.9g}"})


def prior_urdf(arm: Arm, rng, n_inconsistent: int = 0) -> tuple[ET.ElementTree, list[str]]:
    """The CAD prior: the handed-over URDF with each link's inertial perturbed (mass x
    U(0.85, 1.15), COM + U(-1, 1) cm per axis, principal moments x U(0.88, 1.12) about the
    true axes; by their mean factor where the three would break the triangle inequality,
    so that a link near its edge stays consistent), ``n_inconsistent`` of the links of more
    than 50 g (drawn) then given a
    largest principal moment 5-40 % above the sum of the other two; visuals and collisions
    dropped. Returns the tree and the links made inconsistent."""
    from benchmarks.testbed.urdf import link_inertials

    tree = copy.deepcopy(arm.urdf)
    true = link_inertials(tree.getroot())
    heavy = [ln for ln, (m, _, _) in true.items() if m > 0.05]
    # the breaking drawn from a stream of its own: the other links' priors are the same
    # with and without it
    rng_break = np.random.default_rng(rng.integers(2**63))
    broken = [heavy[k] for k in sorted(rng_break.choice(
        len(heavy), min(n_inconsistent, len(heavy)), replace=False))] if n_inconsistent else []
    for lk in tree.getroot().findall("link"):
        for tag in ("visual", "collision"):
            for el in lk.findall(tag):
                lk.remove(el)
        i = lk.find("inertial")
        if i is None or true[lk.get("name")][0] <= 0:
            continue
        m0, c0, i0 = true[lk.get("name")]
        m = m0 * rng.uniform(0.85, 1.15)
        c = c0 + rng.uniform(-0.01, 0.01, 3)
        w0, v = np.linalg.eigh(i0)
        w = w0 * rng.uniform(0.88, 1.12, 3)
        if lk.get("name") not in broken and 2 * w.max() > w.sum():
            # a link near the triangle's edge (the Panda's link 2, the Kinova's link 6):
            # its moments scaled by their mean factor, which keeps the truth's shape
            w = w0 * np.mean(w / np.where(w0 > 0, w0, 1.0))
        if lk.get("name") in broken:
            k = int(np.argmax(w))
            w[k] = (w.sum() - w[k]) * rng_break.uniform(1.05, 1.4)
        _set_inertial(i, m, c, v @ np.diag(w) @ v.T)
    return tree, broken


def _joint_csv(path: Path, time_s: np.ndarray, names: list[str], q: np.ndarray) -> None:
    lines = ["time_s," + ",".join(names)]
    lines += [f"{t:.6f}," + ",".join(f"{x:.9f}" for x in row) for t, row in zip(time_s, q)]
    Path(path).write_text("\n".join(lines) + "\n")


def _driven(arm: Arm, rig: Rig, q_mid: dict[str, float], motion, rate_hz: float,
            motion_s: float):
    """The driven capture: every joint on a MuJoCo position servo (5 Hz, damping ratio 0.7,
    gains from the inertia each joint drives with the rest of the tree free) following the
    advised angles about ``q_mid``, the platform starting at rest at its equilibrium."""
    rots = rotations(arm, q_mid)
    xml = mjcf(rig, subject=arm.subject, rotations=rots,
               released={b: 0.0 for b in arm.joints})
    bare = sim.compile_model(xml)
    d0 = mujoco.MjData(bare)
    mujoco.mj_forward(bare, d0)
    full = np.zeros((bare.nv, bare.nv))
    mujoco.mj_fullM(bare, d0, full)
    minv = np.linalg.inv(full)
    w = 2 * np.pi * 5.0
    act = ""
    for b, j in arm.joints.items():
        k = bare.joint(b).dofadr[0]
        mii = 1.0 / minv[k, k]
        act += (f'<position name="{j["name"]}" joint="{b}" kp="{mii * w * w:.9g}" '
                f'kv="{2 * 0.7 * mii * w:.9g}"/>')
    model = sim.compile_model(xml.replace("</mujoco>", f"<actuator>{act}</actuator></mujoco>"))
    locked = sim.compile_model(mjcf(rig, subject=arm.subject, rotations=rots))
    q_full = np.array(model.qpos0, float)
    q_full[:7] = sim.equilibrium(locked)[:7]
    order = [motion.joints.index(j["name"]) for j in arm.joints.values()]
    tr = sim.simulate(model, q_full, np.zeros(model.nv), rate_hz=rate_hz, duration_s=motion_s,
                      control=lambda t: motion.offset(t)[order])
    adr = [model.joint(b).qposadr[0] for b in arm.joints]
    return tr, tr.qpos[:, adr]


def write_robot_study(name: str, rig: Rig, rig_rel: str, calibrated_rig: Path, out: Path,
                      rng, *, n_postures=9, duration_s=20.0, motion_s=14.0, rate_hz=120.0,
                      noise_m=1e-4, encoder_noise_rad=1e-5, n_inconsistent: int = 0,
                      push=None, session: str | None = None, file_format: str = "csv") -> dict:
    """A robot session on ``rig`` (its rig file written and calibrated at
    ``calibrated_rig``, named ``rig_rel`` from the manifest): postures, the advised driven
    capture, the CAD prior (``n_inconsistent`` links inconsistent) and the truth; the marker
    captures as Vicon CSV or C3D (``file_format``)."""
    arm = load_robot(name, rng)
    sub = arm.subject
    base = sub.links[0].body
    base.markers_m = {k: np.array(v) for k, v in BASE_MARKERS.items()}
    sess = Path(out) / "captures" / (session or name)
    sess.mkdir(parents=True, exist_ok=True)
    # the prior from a stream of its own: the captures are the same whatever the prior
    tree, broken = prior_urdf(arm, np.random.default_rng(rng.integers(2**63)), n_inconsistent)
    prior_path = sess / f"{name}.prior.urdf"
    tree.write(prior_path)
    push = push or (np.array([0.012, -0.01, 0.008, 0.03, -0.025, 0.025]),
                    np.array([0.02, 0.02, -0.01, 0.05, -0.05, 0.05]))
    jnames = [j["name"] for j in arm.joints.values()]
    posture_truth, post_rows, qs = [], [], []
    for p in range(n_postures):
        q, model, q_eq = draw_posture(arm, rig, rng)
        f = rng.uniform(0.7, 1.3, 12) * rng.choice([-1.0, 1.0], 12)
        q0, v0 = sim.perturbed_state(model, q_eq, push[0] * f[:6], push[1] * f[6:])
        tr = sim.simulate(model, q0, v0, rate_hz=rate_hz, duration_s=duration_s)
        pn = f"posture{p + 1:02d}"
        cap = write_markers(sess / pn, file_format, rate_hz, tr.names,
                            sim.add_noise(tr.markers_lab_m, noise_m, rng))
        enc = np.array([q[n] for n in jnames])[None] + rng.normal(
            0.0, encoder_noise_rad, (len(tr.time_s), len(jnames)))
        _joint_csv(sess / f"{pn}.joints.csv", tr.time_s, jnames, enc)
        ov = posture_overall(sub, rotations(arm, q))
        posture_truth.append({"name": pn, "mass": ov["mass"], "com": ov["com"],
                              "inertia_com": ov["inertia_com"], "joint_angles": q})
        post_rows.append((pn, cap))
        qs.append(q)
    motion = None
    if motion_s:
        try:
            adv = advised_motion(prior_path, base.name, calibrated_rig, qs,
                                 seed=int(rng.integers(2**31)))
        except ValueError as exc:
            motion = {"advised": None, "reason": str(exc)}
        else:
            q_mid = dict(zip(adv.joints, adv.center.tolist()))
            tr, qp = _driven(arm, rig, q_mid, adv, rate_hz, motion_s)
            cap = write_markers(sess / "motion", file_format, rate_hz, tr.names,
                                sim.add_noise(tr.markers_lab_m, noise_m, rng))
            enc = qp + np.array([q_mid[n] for n in jnames])[None]
            enc += rng.normal(0.0, encoder_noise_rad, enc.shape)
            _joint_csv(sess / "motion.joints.csv", tr.time_s, jnames, enc)
            motion = {"capture": cap, "joint_angles": "motion.joints.csv",
                      "advised": adv.to_json(), "excursion_rad": float(np.max(np.abs(qp)))}
    out_m = [toml_table("[session]", {"name": session or name, "rig": rig_rel,
                                      "total_mass": sub.total_mass_kg}),
             toml_table("[robot]", {"urdf": prior_path.name, "base_link": base.name}),
             toml_table("[robot.markers]", {base.name: {k: v.tolist() for k, v in
                                                        base.markers_m.items()}})]
    for pn, cap in post_rows:
        out_m.append(toml_table("[[postures]]", {"name": pn, "capture": cap,
                                                 "joint_angles": f"{pn}.joints.csv"}))
    if motion and motion.get("capture"):
        out_m.append(toml_table("[relative_motion]", {"capture": motion["capture"],
                                                      "joint_angles": motion["joint_angles"]}))
    (sess / "session.toml").write_text("\n".join(out_m))
    prior = {k: {"mass": m, "com": c, "inertia_com": i}
             for k, (m, c, i) in body_inertials(prior_path, base.name).items()}
    truth = {"simulator": "benchmarks.testbed (MuJoCo, RK4)", "session": session or name,
             "robot": name, "base_link": base.name, "held_joints": arm.held,
             "total_mass": sub.total_mass_kg, "postures": posture_truth,
             "links": [{"name": lk.body.name, "mass": lk.body.mass_kg, "com": lk.body.com_m,
                        "inertia_com": lk.body.inertia_com_kg_m2} for lk in sub.links],
             "prior": prior, "prior_inconsistent_links": broken, "motion": motion,
             "platform_mass": rig.platform.mass_kg}
    write_json(sess / "truth.json", truth)
    return {"session": sess / "session.toml", "truth": sess / "truth.json", "robot": arm}


def sized_rig(name: str):
    """The demo's rig and reference blocks sized for ``name`` (a Study without a subject,
    rig ``rig-<name>``): platform and blocks scaled with the arm's mass against the
    Panda's on the demo rig (benchmarks.testbed.draws.sized_rig_study), then the springs'
    stiffness set so that the loaded rig's highest mode over twelve reference postures
    (drawn from seed 0) is the demo rig's with its two-link object,
    ``DEMO_TOP_MODE_HZ`` (a small arm's inertia adds little to the platform's, so its
    rotational modes would sit above the 5 Hz filter passband)."""
    from benchmarks.testbed.demo import demo_study
    from benchmarks.testbed.draws import sized_rig_study

    demo, arm = demo_study(), load_robot(name)
    mass = arm.subject.total_mass_kg
    study = sized_rig_study(demo, mass, f"rig-{name}")
    rng = np.random.default_rng(0)
    top = 0.0
    for _ in range(12):
        _, model, q_eq = draw_posture(arm, study.rig, rng)
        top = max(top, float(sim.modes_hz(model, q_eq).max()))
    return sized_rig_study(demo, mass, f"rig-{name}",
                           stiffness_factor=(DEMO_TOP_MODE_HZ / top) ** 2)


def rig_for(name: str, out: Path, *, log=None) -> tuple[Rig, Path, int]:
    """The rig sized for ``name`` (:func:`sized_rig`), its reference captures written
    under ``out`` and calibrated by ``rigtool calibrate``: (rig, calibrated rig file,
    calibrate's exit status)."""
    from benchmarks.testbed.study import write_study

    study = sized_rig(name)
    paths = write_study(study, out)
    root = Path(__file__).resolve().parents[2]
    rc = subprocess.run([sys.executable, "-m", "rigtool.cli", "calibrate", str(paths["rig"]),
                         "--force"], cwd=root, stdout=log or subprocess.DEVNULL,
                        stderr=subprocess.STDOUT).returncode
    return study.rig, paths["rig"].with_name(f"rig-{name}.calibrated.toml"), rc


def main(argv: list[str] | None = None) -> int:
    """``python3 -m benchmarks.testbed.robot OUT [--robot panda] [--seed 59]
    [--inconsistent-prior]``: the rig sized for the arm (its reference captures, calibrated
    by ``rigtool calibrate``) and the arm's session on it under OUT; then ``rigtool run
    OUT/captures/ROBOT/session.toml``."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--robot", choices=sorted(ROBOTS), default="xarm7")
    ap.add_argument("--seed", type=int, default=59)
    ap.add_argument("--postures", type=int, default=9)
    ap.add_argument("--inconsistent-prior", action="store_true",
                    help="six links' CAD inertials break the triangle inequality")
    args = ap.parse_args(argv)
    rig, cal, rc = rig_for(args.robot, args.out)
    if rc != 0:
        print(f"rigtool calibrate exited {rc}", file=sys.stderr)
        return 1
    paths = write_robot_study(args.robot, rig, f"../../calibration/{cal.name}", cal,
                              args.out, np.random.default_rng(args.seed),
                              n_postures=args.postures,
                              n_inconsistent=6 if args.inconsistent_prior else 0)
    print(f"wrote {paths['session']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
