"""The model files of a results directory, loaded in their consumers and checked.

    python3 benchmarks/model_files.py RESULTS [RESULTS ...]

For each results directory of ``rigtool run``: loads ``model_mujoco.xml`` (MuJoCo),
``model.osim`` (OpenSim) and ``model.urdf`` (pinocchio, and MuJoCo's URDF import), compares
every body's mass, COM and inertia about the COM with report.json's ``segments`` (largest
relative error printed), the tree (parents, joint centres) with report.json's
``summary.links``, and integrates the free MJCF model with RK4 for 3 s without gravity from
random joint rates, printing the relative energy drift at h = 2 ms and 1 ms (RK4: a 16-fold
drop). Prints one block per directory; exits 1 when a comparison exceeds 1e-9.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def _rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def _mujoco_inertials(path):
    import mujoco
    m = mujoco.MjModel.from_xml_path(str(path))
    out = {}
    for b in range(1, m.nbody):
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, m.body_iquat[b])
        rot = rot.reshape(3, 3)
        out[mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)] = (
            m.body_mass[b], m.body_ipos[b].copy(), rot @ np.diag(m.body_inertia[b]) @ rot.T)
    return m, out


def _opensim_inertials(path):
    import opensim
    opensim.Logger.removeFileSink()
    model = opensim.Model(str(path))
    model.initSystem()
    out = {}
    for k in range(model.getBodySet().getSize()):
        body = model.getBodySet().get(k)
        i = body.getInertia()
        mo, pr = i.getMoments(), i.getProducts()
        tensor = np.array([[mo[0], pr[0], pr[1]], [pr[0], mo[1], pr[2]], [pr[1], pr[2], mo[2]]])
        c = body.getMassCenter()
        out[body.getName()] = (body.getMass(), np.array([c[0], c[1], c[2]]), tensor)
    return model, out


def _pinocchio_inertials(path, names):
    """Per link the inertia of the joint its BODY frame sits on (at that joint's origin:
    every link of a spherical-joint tree is alone on its last joint)."""
    import pinocchio as pin
    pm = pin.buildModelFromUrdf(str(path))
    out = {}
    for name in names:
        frame = pm.frames[pm.getFrameId(name, pin.FrameType.BODY)]
        assert np.allclose(frame.placement.homogeneous, np.eye(4)), name
        inertia = pm.inertias[frame.parentJoint]
        out[name] = (inertia.mass, inertia.lever.copy(), inertia.inertia.copy())
    return pm, out


def _energy_drift(m) -> dict:
    import mujoco
    m.opt.gravity[:] = 0.0
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    qvel0 = np.random.default_rng(3).normal(size=m.nv)
    out = {}
    for h in (2e-3, 1e-3):
        m.opt.timestep = h
        d = mujoco.MjData(m)
        d.qvel[:] = qvel0

        def energy():
            mujoco.mj_forward(m, d)
            mujoco.mj_energyVel(m, d)
            return d.energy[1]
        e0 = energy()
        for _ in range(int(round(3.0 / h))):
            mujoco.mj_step(m, d)
        out[h] = abs(energy() - e0) / e0
    return out


def check(results: Path) -> bool:
    doc = json.loads((results / "report.json").read_text(encoding="utf-8"))
    segs = doc["segments"]["links"]
    names = {l["label"]: l["name"] for l in doc["model_files"]["links"]}
    ok = True
    print(f"{results}: {len(segs)} links, base {doc['model_files']['base']}")
    m, mj = _mujoco_inertials(results / "model_mujoco.xml")
    _, os_ = _opensim_inertials(results / "model.osim")
    _, pn = _pinocchio_inertials(results / "model.urdf", list(names.values()))
    _, mj_urdf = _mujoco_inertials(results / "model.urdf")
    for label, table in (("MuJoCo MJCF", mj), ("OpenSim", os_), ("pinocchio URDF", pn),
                         ("MuJoCo URDF", mj_urdf)):
        worst = 0.0
        for link, seg in segs.items():
            mass, com, inertia = table[names[link]]
            worst = max(worst, _rel(mass, seg["mass"]), _rel(com, seg["com"]),
                        _rel(inertia, seg["inertia_com"]))
        print(f"  {label:15s} largest relative error of mass, COM, inertia: {worst:.2e}")
        ok &= worst <= 1e-9
    import mujoco
    worst = 0.0
    for link in doc["summary"]["links"]:
        b = m.body(names[link["name"]])
        if link["parent"] == "platform":
            continue
        assert m.body_parentid[b.id] == m.body(names[link["parent"]]).id
        worst = max(worst, float(np.abs(b.pos - link["joint_center"]).max()))
    print(f"  tree: parents as report.json; joint centres within {worst:.1e} m")
    ok &= worst <= 1e-12
    drift = _energy_drift(m)
    print("  RK4 energy drift over 3 s (no gravity): " + ", ".join(
        f"h = {1e3 * h:g} ms: {v:.2e}" for h, v in drift.items())
        + f" (ratio {drift[2e-3] / max(drift[1e-3], 1e-300):.1f})")
    return bool(ok)


if __name__ == "__main__":
    dirs = [Path(a) for a in sys.argv[1:]]
    if not dirs:
        raise SystemExit(__doc__)
    sys.exit(0 if all([check(d) for d in dirs]) else 1)
