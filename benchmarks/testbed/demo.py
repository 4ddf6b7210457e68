"""The demo's rig and two-link object, read from the scenario files (a user-facing format:
scenarios/README.md) with tomllib, for a test-bed study of the same physics."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from benchmarks.testbed.model import Body, Link, Rig, Spring, Subject
from benchmarks.testbed.study import (CalibrationCapture, CaptureSpec, Posture,
                                      RelativeMotion, Study)

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _a(v) -> np.ndarray:
    return np.asarray(v, float)


def _rot(load: dict) -> np.ndarray:
    if "rotation" in load:
        return _a(load["rotation"])
    if "rotation_vector" in load:
        return Rotation.from_rotvec(load["rotation_vector"]).as_matrix()
    if "euler_deg" in load:       # the scenario format's convention: extrinsic xyz, degrees
        return Rotation.from_euler("xyz", load["euler_deg"], degrees=True).as_matrix()
    return np.eye(3)


def _orthonormal(m: np.ndarray) -> np.ndarray:
    u, _, vt = np.linalg.svd(m)
    return u @ np.diag([1, 1, np.linalg.det(u @ vt)]) @ vt


def demo_rig(doc: dict | None = None) -> tuple[Rig, list[Body]]:
    """The paper rig (its true springs and platform) and its two reference blocks."""
    doc = doc or tomllib.loads((SCENARIOS / "two_link_paper002.toml").read_text())
    pl = doc["platform"]
    markers = {k: _a(v) for k, v in pl["markers"].items()}
    platform = Body("platform", pl["mass"], _a(pl["com"]), _a(pl["inertia_com"]), markers)
    springs = [Spring(s["name"], _a(s["anchor"]), _a(s["attachment"]), s["stiffness"],
                      s["free_length"], s["damping"]) for s in doc["springs"]]
    rig = Rig(doc["rig"]["name"], platform, springs, _a(doc["rig"]["gravity"]))
    blocks = [Body(b["name"], b["mass"], _a(b["com"]), _a(b["inertia_com"]),
                   {k: _a(v) for k, v in b["markers"].items()})
              for b in doc["reference_bodies"]]
    return rig, blocks


def demo_study(*, seed: int = 2002, rate_hz: float = 120.0, duration_s: float = 25.0,
               noise_sigma_m: float = 1e-4, calibration: str = "demo") -> Study:
    """The demo's study on the test bed: the two-link object of paper 002 in its three
    postures and its swing, the rig calibrated from the demo's five captures
    (``calibration="demo"``) or the seven of the paper scenario (``"paper"``)."""
    doc = tomllib.loads((SCENARIOS / "two_link_paper002.toml").read_text())
    rig, blocks = demo_rig(doc)
    by_name = {b.name: b for b in blocks}
    cal_doc = (tomllib.loads((SCENARIOS / "demo.toml").read_text())["calibration_captures"]
               if calibration == "demo" else doc["calibration_captures"])
    cal = [CalibrationCapture(c["name"], [(by_name[ld["body"]], _a(ld["position"]), _rot(ld))
                                          for ld in c["load"]], c.get("holdout", False))
           for c in cal_doc]
    obj = doc["object"]
    links = []
    for lk in obj["links"]:
        body = Body(lk["name"], lk["mass"], _a(lk["com"]), _a(lk["inertia_com"]),
                    {k: _a(v) for k, v in lk["markers"].items()})
        prior = dict(lk["prior"]) if "prior" in lk else None
        if lk["parent"] == "platform":
            links.append(Link(body, "platform", "fixed", prior=prior))
        else:
            links.append(Link(body, lk["parent"], "spherical", _a(lk["joint_center"]),
                              prior=prior))
    subject = Subject(obj["session"], links, _a(obj["base"]["position"]))
    postures = [Posture(p["name"], {k: _orthonormal(_a(v)) for k, v in p["rotations"].items()})
                for p in doc["postures"]]
    rm = doc["relative_motion"]
    rel = RelativeMotion(rm["name"], rm["posture"], {k: _a(v) for k, v in rm["release"].items()},
                         rm["joint_damping"], rm["duration_s"], tuple(rm["window"]))
    cap = doc["capture"]
    spec = CaptureSpec(rate_hz=rate_hz, duration_s=duration_s, noise_sigma_m=noise_sigma_m,
                       offset=_a(cap["offset"]), velocity=_a(cap["velocity"]))
    return Study(rig, blocks, cal, subject, postures, rel, spec, seed)


def main(argv: list[str] | None = None) -> int:
    """``python3 -m benchmarks.testbed.demo OUT [--breathing] [--rate 120] [--duration 25]``:
    the demo's study on the test bed written under OUT (then ``rigtool calibrate
    OUT/calibration/paper-rig.toml`` and ``rigtool run OUT/captures/two-link/session.toml``)."""
    import argparse

    from benchmarks.testbed.living import with_breathing
    from benchmarks.testbed.study import write_study

    ap = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=2002)
    ap.add_argument("--rate", type=float, default=120.0)
    ap.add_argument("--duration", type=float, default=25.0)
    ap.add_argument("--breathing", action="store_true",
                    help="5 kg of abdominal contents, 16 mm peak to peak at 14/min")
    ap.add_argument("--breath-seed", type=int, default=14)
    args = ap.parse_args(argv)
    study = demo_study(seed=args.seed, rate_hz=args.rate, duration_s=args.duration)
    if args.breathing:
        study = with_breathing(study, np.random.default_rng(args.breath_seed))
    paths = write_study(study, args.out)
    print(f"wrote {paths['rig']} and {paths['session']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
