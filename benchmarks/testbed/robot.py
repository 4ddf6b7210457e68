"""A robot of ``example-robot-data`` on the test bed: its URDF read into the test bed's link
tree (revolute joints; a fixed joint's child merged into its parent), bolted to the platform,
locked in postures within its limits, and driven by MuJoCo position actuators along a
multi-sine; encoders read from the joint positions (1e-5 rad noise). The URDF given to
rigtool is the CAD prior: the truth's inertials perturbed (mass +-15 %, COM +-1 cm, each
principal moment scaled by up to +-12 %).
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from benchmarks.testbed import simulate as sim
from benchmarks.testbed.model import Body, Link, Rig, Subject, mjcf
from benchmarks.testbed.truth import posture_overall
from benchmarks.testbed.writers import toml_table, write_json, write_vicon_csv

ROBOTS_DIR = Path(mujoco.__file__).resolve().parents[1] / "cmeel.prefix" / "share" / \
    "example-robot-data" / "robots"
ROBOTS = {"xarm7": ("xarm_description/urdf/xarm7.urdf", "link_base")}


def _origin(el) -> tuple[np.ndarray, np.ndarray]:
    o = el.find("origin") if el is not None else None
    xyz = np.array([float(x) for x in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()])
    rpy = [float(x) for x in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
    return xyz, Rotation.from_euler("xyz", rpy).as_matrix()   # URDF: fixed-axis roll, pitch, yaw


@dataclass
class Robot:
    """The robot as the test bed's tree: ``subject`` (one link per body), each moving
    link's joint (name, axis, lower, upper, fixed origin rotation in the parent frame)."""

    subject: Subject
    joints: dict[str, dict]
    urdf: ET.ElementTree


def load_robot(name: str, base_position_platform_m=(0.0, 0.0, 0.0)) -> Robot:
    """Read ``name``'s URDF; fixed joints are merged into their parent (inertia summed)."""
    rel, base = ROBOTS[name]
    tree = ET.parse(ROBOTS_DIR / rel)
    root = tree.getroot()
    inertial = {}
    for lk in root.findall("link"):
        i = lk.find("inertial")
        if i is None:
            continue
        xyz, rot = _origin(i)
        a = i.find("inertia").attrib
        t = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]],
                      [a["ixz"], a["iyz"], a["izz"]]], float)
        inertial[lk.get("name")] = (float(i.find("mass").get("value")), xyz, rot @ t @ rot.T)
    joints_by_child = {j.find("child").get("link"): j for j in root.findall("joint")}
    links, joints = [], {}
    order = [base]
    children = {}
    for j in root.findall("joint"):
        children.setdefault(j.find("parent").get("link"), []).append(j)
    k = 0
    while k < len(order):
        for j in children.get(order[k], []):
            order.append(j.find("child").get("link"))
        k += 1
    for ln in order:
        if ln not in inertial:
            continue
        m, c, i = inertial[ln]
        body = Body(ln, m, c, i, {})
        if ln == base:
            links.append(Link(body, "platform", "fixed"))
            continue
        j = joints_by_child[ln]
        if j.get("type") == "fixed":
            continue            # no inertial children are fixed in the arms used here
        xyz, rot = _origin(j)
        axis = np.array([float(x) for x in j.find("axis").get("xyz").split()])
        lim = j.find("limit")
        joints[ln] = {"name": j.get("name"), "axis": axis / np.linalg.norm(axis),
                      "lower": float(lim.get("lower")), "upper": float(lim.get("upper")),
                      "origin_rotation": rot}
        links.append(Link(body, j.find("parent").get("link"), "revolute", xyz, axis))
    sub = Subject(name, links, np.asarray(base_position_platform_m, float))
    return Robot(sub, joints, tree)


def rotations(robot: Robot, q: dict[str, float]) -> dict[str, np.ndarray]:
    """Each moving link's rotation in its parent's frame at joint angles ``q`` (by joint)."""
    out = {}
    for ln, j in robot.joints.items():
        out[ln] = j["origin_rotation"] @ Rotation.from_rotvec(
            j["axis"] * q.get(j["name"], 0.0)).as_matrix()
    return out


def draw_configuration(robot: Robot, rng, margin: float = 0.15) -> dict[str, float]:
    """Joint angles drawn uniformly within the limits (less ``margin`` rad, each range at
    most +-pi), with the shoulder and elbow kept so the arm stays above the deck."""
    q = {}
    for ln, j in robot.joints.items():
        lo, hi = max(j["lower"], -np.pi) + margin, min(j["upper"], np.pi) - margin
        q[j["name"]] = float(rng.uniform(lo, hi))
    return q


def prior_urdf(robot: Robot, rng) -> tuple[ET.ElementTree, dict]:
    """The CAD prior: a copy of the URDF with each inertial perturbed (mass x U(0.85, 1.15),
    COM + U(-1, 1) cm per axis, principal moments x U(0.88, 1.12) about the true axes)."""
    tree = copy.deepcopy(robot.urdf)
    prior = {}
    for lk in tree.getroot().findall("link"):
        i = lk.find("inertial")
        if i is None:
            continue
        b = robot.subject.link(lk.get("name")).body
        m = b.mass_kg * rng.uniform(0.85, 1.15)
        c = b.com_m + rng.uniform(-0.01, 0.01, 3)
        w, v = np.linalg.eigh(b.inertia_com_kg_m2)
        t = v @ np.diag(w * rng.uniform(0.88, 1.12, 3)) @ v.T
        o = i.find("origin")
        o.set("xyz", " ".join(f"{x:.9g}" for x in c))
        o.set("rpy", "0 0 0")
        i.find("mass").set("value", f"{m:.9g}")
        i.find("inertia").attrib.update({"ixx": f"{t[0, 0]:.9g}", "iyy": f"{t[1, 1]:.9g}",
                                         "izz": f"{t[2, 2]:.9g}", "ixy": f"{t[0, 1]:.9g}",
                                         "ixz": f"{t[0, 2]:.9g}", "iyz": f"{t[1, 2]:.9g}"})
        for tag in ("visual", "collision"):
            for el in lk.findall(tag):
                lk.remove(el)
        prior[lk.get("name")] = {"mass": m, "com": c, "inertia_com": t}
    return tree, prior


def _joint_csv(path: Path, time_s: np.ndarray, names: list[str], q: np.ndarray) -> None:
    lines = ["time_s," + ",".join(names)]
    lines += [f"{t:.6f}," + ",".join(f"{x:.9f}" for x in row) for t, row in zip(time_s, q)]
    Path(path).write_text("\n".join(lines) + "\n")


def write_robot_study(name: str, rig: Rig, rig_rel: str, out: Path, rng, *, n_postures=9,
                      duration_s=20.0, motion_s=14.0, rate_hz=120.0, noise_m=1e-4,
                      encoder_noise_rad=1e-5, push=None, session: str | None = None) -> dict:
    """A robot session on ``rig`` (its rig file already written and calibrated at
    ``rig_rel`` from the manifest): postures, a driven capture, the prior URDF, truth."""
    robot = load_robot(name, base_position_platform_m=(0.0, 0.0, 0.0))
    sub = robot.subject
    base = sub.links[0].body
    base.markers_m = {"B1": np.array([0.06, 0.05, 0.03]), "B2": np.array([-0.07, 0.04, 0.06]),
                      "B3": np.array([-0.02, -0.07, 0.04]), "B4": np.array([0.05, -0.05, 0.09])}
    sess = Path(out) / "captures" / (session or name)
    sess.mkdir(parents=True, exist_ok=True)
    tree, prior = prior_urdf(robot, rng)
    tree.write(sess / f"{name}.prior.urdf")
    push = push or (np.array([0.012, -0.01, 0.008, 0.03, -0.025, 0.025]),
                    np.array([0.02, 0.02, -0.01, 0.05, -0.05, 0.05]))
    jnames = [j["name"] for j in robot.joints.values()]
    posture_truth, post_rows = [], []
    for p in range(n_postures):
        q = draw_configuration(robot, rng)
        rots = rotations(robot, q)
        model = sim.compile_model(mjcf(rig, subject=sub, rotations=rots))
        q_eq = sim.equilibrium(model)
        f = rng.uniform(0.7, 1.3, 12) * rng.choice([-1.0, 1.0], 12)
        q0, v0 = sim.perturbed_state(model, q_eq, push[0] * f[:6], push[1] * f[6:])
        tr = sim.simulate(model, q0, v0, rate_hz=rate_hz, duration_s=duration_s)
        pn = f"posture{p + 1:02d}"
        write_vicon_csv(sess / f"{pn}.csv", rate_hz, tr.names,
                        sim.add_noise(tr.markers_lab_m, noise_m, rng))
        enc = np.array([q[n] for n in jnames])[None] + rng.normal(
            0.0, encoder_noise_rad, (len(tr.time_s), len(jnames)))
        _joint_csv(sess / f"{pn}.joints.csv", tr.time_s, jnames, enc)
        ov = posture_overall(sub, rots)
        posture_truth.append({"name": pn, "mass": ov["mass"], "com": ov["com"],
                              "inertia_com": ov["inertia_com"], "joint_angles": q})
        post_rows.append(pn)
    motion = None
    if motion_s:
        q_mid = draw_configuration(robot, rng, margin=0.8)
        rots = rotations(robot, q_mid)
        moving = {ln: 0.0 for ln in robot.joints}
        xml = mjcf(rig, subject=sub, rotations=rots, released=moving)
        # Servo gains per joint from the inertia it drives with the rest of the tree free,
        # 1 / (M^-1)_ii: a 5 Hz servo, damping ratio 0.7 (omega h = 0.03 at 1.2 kHz, well
        # inside RK4's stability)
        bare = sim.compile_model(xml)
        d0 = mujoco.MjData(bare)
        mujoco.mj_forward(bare, d0)
        full = np.zeros((bare.nv, bare.nv))
        mujoco.mj_fullM(bare, d0, full)
        w = 2 * np.pi * 5.0
        minv = np.linalg.inv(full)
        act = ""
        for ln, j in robot.joints.items():
            mii = 1.0 / minv[bare.joint(ln).dofadr[0], bare.joint(ln).dofadr[0]]
            act += (f'<position name="{j["name"]}" joint="{ln}" kp="{mii * w * w:.9g}" '
                    f'kv="{2 * 0.7 * mii * w:.9g}"/>')
        xml = xml.replace("</mujoco>", f"<actuator>{act}</actuator></mujoco>")
        model = sim.compile_model(xml)
        locked = sim.compile_model(mjcf(rig, subject=sub, rotations=rots))
        q_full = np.array(model.qpos0, float)
        q_full[:7] = sim.equilibrium(locked)[:7]
        amp = rng.uniform(0.05, 0.12, (len(jnames), 3))
        freq = rng.uniform(0.2, 0.9, (len(jnames), 3))
        ph = rng.uniform(0, 2 * np.pi, (len(jnames), 3))

        def target(t):
            ramp = min(1.0, t / 1.0) * min(1.0, max(0.0, (motion_s - t) / 1.0))
            return ramp * np.sum(amp * (np.sin(2 * np.pi * freq * t + ph) - np.sin(ph)), axis=1)

        tr = sim.simulate(model, q_full, np.zeros(model.nv), rate_hz=rate_hz,
                          duration_s=motion_s, control=target)
        t, qp = tr.time_s, tr.qpos
        write_vicon_csv(sess / "motion.csv", rate_hz, tr.names,
                        sim.add_noise(tr.markers_lab_m, noise_m, rng))
        adr = [model.joint(ln).qposadr[0] for ln in robot.joints]
        enc = qp[:, adr] + np.array([q_mid[n] for n in jnames])[None]
        enc += rng.normal(0.0, encoder_noise_rad, enc.shape)
        _joint_csv(sess / "motion.joints.csv", t, jnames, enc)
        motion = {"capture": "motion.csv", "joint_angles": "motion.joints.csv",
                  "rest": q_mid, "excursion_rad": float(np.max(np.abs(qp[:, adr])))}
    out_m = [toml_table("[session]", {"name": session or name, "rig": rig_rel,
                                      "total_mass": sub.total_mass_kg}),
             toml_table("[robot]", {"urdf": f"{name}.prior.urdf", "base_link": base.name}),
             toml_table("[robot.markers]", {base.name: {k: v.tolist() for k, v in
                                                        base.markers_m.items()}})]
    for pn in post_rows:
        out_m.append(toml_table("[[postures]]", {"name": pn, "capture": f"{pn}.csv",
                                                 "joint_angles": f"{pn}.joints.csv"}))
    if motion:
        out_m.append(toml_table("[relative_motion]", {"capture": motion["capture"],
                                                      "joint_angles": motion["joint_angles"]}))
    (sess / "session.toml").write_text("\n".join(out_m))
    truth = {"simulator": "benchmarks.testbed (MuJoCo, RK4)", "session": session or name,
             "robot": name,
             "total_mass": sub.total_mass_kg, "postures": posture_truth,
             "links": [{"name": lk.body.name, "mass": lk.body.mass_kg, "com": lk.body.com_m,
                        "inertia_com": lk.body.inertia_com_kg_m2} for lk in sub.links],
             "prior": prior, "motion": motion}
    write_json(sess / "truth.json", truth)
    return {"session": sess / "session.toml", "truth": sess / "truth.json", "robot": robot}


def main(argv: list[str] | None = None) -> int:
    """``python3 -m benchmarks.testbed.robot OUT [--robot xarm7] [--seed 59]``: the demo rig
    (its reference captures) and a robot session on it under OUT; then ``rigtool calibrate
    OUT/calibration/paper-rig.toml`` and ``rigtool run OUT/captures/ROBOT/session.toml``."""
    import argparse

    from benchmarks.testbed.demo import demo_study
    from benchmarks.testbed.study import write_study

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--robot", choices=sorted(ROBOTS), default="xarm7")
    ap.add_argument("--seed", type=int, default=59)
    args = ap.parse_args(argv)
    rig_study = demo_study()
    rig_study.postures, rig_study.relative = [], None
    write_study(rig_study, args.out)
    paths = write_robot_study(args.robot, rig_study.rig,
                              "../../calibration/paper-rig.calibrated.toml", args.out,
                              np.random.default_rng(args.seed))
    print(f"wrote {paths['session']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
