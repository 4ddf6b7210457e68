"""A robot from its URDF simulated on the rig in locked postures, written as a study.

A locked posture is one rigid object: the robot's composite standard parameters in the
base link's frame (each body moved there by forward kinematics, :mod:`rigtool.robot`) are
those of a single link bolted to the platform, which the rig's simulator
(:mod:`rigtool.sim.dynamics`) integrates exactly as any other locked object. The markers
are the platform's and the base link's; the encoders' joint angles are written beside each
capture with white noise.

The URDF given to rigtool is the CAD prior: the true URDF with every link's own inertial
perturbed (mass, COM, principal moments), as a CAD model is off a built robot. Layout::

    DIR/calibration/RIG.toml, RIG.truth.json, RIG.calibrated.toml   (the true calibration)
    DIR/captures/SESSION/session.toml        [robot] manifest
    DIR/captures/SESSION/robot.prior.urdf    the CAD prior (the perturbed URDF)
    DIR/captures/SESSION/postureNN.csv       captures; postureNN.joints.csv encoders
    DIR/captures/SESSION/truth.json          true bodies, the prior's, per posture q and the
                                             composite COM and inertia
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rigtool.inertia import InertialParams
from rigtool.mocap import write_capture
from rigtool.robot.outputs import write_robot_urdf
from rigtool.robot.urdf_model import RobotModel, load_robot_model
from rigtool.sim.markers import synthesize_markers
from rigtool.sim.scenario import load_scenario
from rigtool.sim.scenario_types import EXTENSIONS, ObjectSpec, PosturePlan
from rigtool.sim.session_writer import _rig_truth, capture_jobs, rig_file_dict, simulate_job
from rigtool.sim.true_calibration import write_true_calibration
from rigtool.tomlwrite import Inline, dumps
from rigtool.tree import Link, Tree

#: Base-link markers (base-link frame, m): SPEC's example plus a fourth.
BASE_MARKERS = {"B1": [-0.021, -0.058, 0.144], "B2": [-0.114, 0.054, 0.063],
                "B3": [0.013, 0.081, 0.080], "B4": [0.090, -0.060, 0.030]}


@dataclass(frozen=True)
class PriorPerturbation:
    """How far the CAD prior is off the truth (uniform draws): mass (relative), COM (m per
    axis), principal moments of inertia (relative)."""

    mass_rel: float = 0.15
    com_m: float = 0.01
    inertia_rel: float = 0.25


def perturb_link(ip: InertialParams, rng: np.random.Generator,
                 p: PriorPerturbation) -> InertialParams:
    """One link's inertial perturbed (principal axes kept; a draw breaking the triangle
    inequality of the principal moments is drawn again)."""
    if ip.mass <= 0:
        return ip
    lam, vec = np.linalg.eigh(ip.inertia_com)
    for _ in range(100):
        new = lam * (1 + rng.uniform(-p.inertia_rel, p.inertia_rel, 3))
        s = np.sort(new)
        if s[0] > 0 and s[0] + s[1] >= s[2]:
            break
    else:                                       # pragma: no cover - practically never
        new = lam
    return InertialParams.from_com(ip.mass * (1 + rng.uniform(-p.mass_rel, p.mass_rel)),
                                   ip.com + rng.uniform(-p.com_m, p.com_m, 3),
                                   (vec * new) @ vec.T)


def perturbed_own_parts(robot: RobotModel, rng: np.random.Generator,
                        p: PriorPerturbation) -> list[InertialParams]:
    """Every body's own link perturbed (body frame), for :func:`write_robot_urdf`."""
    out = []
    for b in robot.bodies:
        own = InertialParams(b.prior.pi - b.attached.pi)
        out.append(perturb_link(own, rng, p) if own.mass > 0 else own)
    return out


def random_postures(robot: RobotModel, n: int, rng: np.random.Generator, *,
                    margin: float = 0.05, min_height_m: float = 0.05) -> list[np.ndarray]:
    """``n`` configurations inside the joint limits (``margin`` of each range from its
    ends) with every link at least ``min_height_m`` above the deck
    (rigtool.robot.clearance: the arm clear of the platform it is bolted to)."""
    from rigtool.robot.clearance import clear_of_deck

    lo, hi = robot.limits()
    span = hi - lo
    out = []
    while len(out) < n:
        q = rng.uniform(lo + margin * span, hi - margin * span)
        if clear_of_deck(robot, q, min_height_m):
            out.append(q)
    return out


def _l(a) -> list:
    return np.asarray(a, float).tolist()


def write_robot_study(rig_scenario: str | Path, out_dir: str | Path, urdf: str | Path,
                      base_link: str, fixed_joints: dict[str, float] | None = None, *,
                      session: str = "robot", n_postures: int = 9, seed: int = 0,
                      duration_s: float | None = None, rate_hz: float | None = None,
                      encoder_noise_rad: float = 2e-5,
                      perturbation: PriorPerturbation = PriorPerturbation(),
                      postures: list[np.ndarray] | None = None,
                      base_position_platform_m=(0.0, 0.0, 0.0),
                      link_markers: dict[str, dict[str, list]] | None = None,
                      motion_s: float | None = None, motion=None) -> Path:
    """Simulate a robot study (see module docstring) and return its manifest's path.

    Parameters
    ----------
    rig_scenario : path
        A scenario file whose rig, platform and capture settings are used
        (``scenarios/demo.toml``).
    out_dir : path
    urdf, base_link, fixed_joints
        The true robot.
    session : str
        The session folder's name.
    n_postures : int
        Random in-limit postures (ignored when ``postures`` is given).
    seed : int
        Every random draw (prior, postures, noise).
    duration_s : float, optional
        Per capture (default: the scenario's).
    rate_hz : float, optional
        Frame rate of the captures and the encoders (default: the scenario's).
    encoder_noise_rad : float
        White noise of the joint angles (rad; m for prismatic joints).
    perturbation : PriorPerturbation
        How far the written CAD prior is off the truth.
    postures : list of ndarray, optional
        The configurations (moving joints in order).
    base_position_platform_m : sequence of 3 floats
        The base link's origin in the platform frame.
    link_markers : dict, optional
        Markers on other links (link -> {marker: link-frame coordinates, m}): captured with
        the rest (placed by forward kinematics) and named in the manifest as checks.
    motion_s : float, optional
        Also a ``[relative_motion]`` capture this long: the motors move every joint along
        ``motion`` (default: the trajectory rigtool advises, rigtool.robot.motion_advice),
        simulated by rigtool.sim.robot_motion, its encoders beside it.
    motion : MotionAdvice, optional
        The joints' trajectory of that capture.
    """
    out_dir = Path(out_dir)
    sc = load_scenario(rig_scenario)
    rng = np.random.default_rng(seed)
    fixed_joints = dict(fixed_joints or {})
    robot = load_robot_model(urdf, base_link, fixed_joints)
    truth_pi = robot.prior_vector()
    # the rig and its true calibration
    cal = out_dir / "calibration"
    cal.mkdir(parents=True, exist_ok=True)
    rig_toml = cal / f"{sc.rig.name}.toml"
    rig_toml.write_text(dumps(rig_file_dict(sc)))
    truth_json = cal / f"{sc.rig.name}.truth.json"
    truth_json.write_text(json.dumps(_rig_truth(sc), indent=1))
    write_true_calibration(rig_toml, truth_json, cal / f"{sc.rig.name}.calibrated.toml")
    folder = out_dir / "captures" / session
    folder.mkdir(parents=True, exist_ok=True)
    # the CAD prior
    prior_own = perturbed_own_parts(robot, rng, perturbation)
    write_robot_urdf(robot, prior_own, folder / "robot.prior.urdf")
    prior = load_robot_model(folder / "robot.prior.urdf", base_link, fixed_joints)
    qs = postures if postures is not None else random_postures(robot, n_postures, rng)
    settings = sc.postures[0].settings
    if duration_s is not None:
        settings = replace(settings, duration_s=duration_s,
                           window=None if settings.window is None else
                           (settings.window[0], min(settings.window[1], duration_s - 0.5)))
    if rate_hz is not None:
        settings = replace(settings, rate_hz=float(rate_hz))
    markers = {k: np.array(v) for k, v in BASE_MARKERS.items()}
    entries, truth_postures = [], []
    for i, q in enumerate(qs):
        name = f"posture{i + 1:02d}"
        overall = robot.composite(truth_pi, q)
        on_body = dict(markers)
        for link, table in (link_markers or {}).items():
            r_l, p_l = robot.link_pose(link, q)     # the locked robot is rigid: base frame
            on_body.update({k: r_l @ np.asarray(v, float) + p_l for k, v in table.items()})
        tree = Tree((Link(base_link, "platform", None, overall, on_body),))
        obj = ObjectSpec(session, "robot", tree, np.eye(3),
                         np.asarray(base_position_platform_m, float))
        sc_q = replace(sc, obj=obj, postures=(PosturePlan(name, {}, settings),),
                       relative=None, calibration=())
        job = [j for j in capture_jobs(sc_q) if j.kind == "posture"][0]
        traj = simulate_job(sc_q, job)
        data = synthesize_markers(traj, job.marker_sets, noise_sigma_m=settings.noise_sigma_m,
                                  artefacts=settings.artefacts,
                                  rng=np.random.default_rng([seed, zlib.crc32(name.encode())]),
                                  rate_hz=settings.rate_hz)
        capture = name + EXTENSIONS[settings.format]
        write_capture(data, folder / capture, format=settings.format, units="mm")
        # the encoders, on the capture's clock
        t = np.asarray(traj.time_s, float)
        enc = q[None, :] + encoder_noise_rad * rng.standard_normal((t.size, q.size))
        lines = ["frame,time_s," + ",".join(robot.moving_joints)]
        lines += [f"{k},{tk:.6f}," + ",".join(f"{v:.9f}" for v in row)
                  for k, (tk, row) in enumerate(zip(t, enc))]
        (folder / f"{name}.joints.csv").write_text("\n".join(lines) + "\n")
        entry = {"name": name, "capture": capture, "joint_angles": f"{name}.joints.csv"}
        if settings.window is not None:
            entry["window"] = list(settings.window)
        entries.append(entry)
        truth_postures.append({"name": name, "joint_angles": dict(zip(robot.moving_joints,
                                                                      _l(q))),
                               "mass": overall.mass, "com": _l(overall.com),
                               "inertia_com": _l(overall.inertia_com)})
    motion_entry = None
    if motion_s is not None:
        from rigtool.sim.markers import MarkerSet
        from rigtool.config import FilterSettings
        from rigtool.robot.motion_advice import (advise_motion, motion_center,
                                                 rig_with_robot)
        from rigtool.sim.robot_motion import simulate_robot_motion
        # the motion rigtool advises (from the true rig with the true robot)
        t_base = np.asarray(base_position_platform_m, float)
        center = motion_center(robot, qs)
        lin = rig_with_robot(sc.rig, sc.platform_params, robot, center, np.eye(3), t_base)
        motion = (motion if motion is not None else
                  advise_motion(robot, center, lin,
                                passband_hz=FilterSettings().passband_hz, seed=seed))
        joints = motion.trajectory()
        traj = simulate_robot_motion(
            sc.rig, sc.platform_params, robot, np.eye(3),
            np.asarray(base_position_platform_m, float), joints, motion_s, settings.rate_hz,
            platform_offset=settings.offset, platform_velocity=settings.velocity,
            robot_params=truth_pi)
        sets = [MarkerSet("platform", sc.rig.platform.markers_platform, sc.platform_subject),
                MarkerSet(base_link, markers, "robot")]
        data = synthesize_markers(traj, sets, noise_sigma_m=settings.noise_sigma_m,
                                  rng=np.random.default_rng([seed, zlib.crc32(b"motion")]),
                                  rate_hz=settings.rate_hz)
        write_capture(data, folder / ("motion" + EXTENSIONS[settings.format]),
                      format=settings.format, units="mm")
        t = traj.time_s
        enc = traj.q + encoder_noise_rad * rng.standard_normal(traj.q.shape)
        lines = ["frame,time_s," + ",".join(robot.moving_joints)]
        lines += [f"{k},{tk:.6f}," + ",".join(f"{v:.9f}" for v in row)
                  for k, (tk, row) in enumerate(zip(t, enc))]
        (folder / "motion.joints.csv").write_text("\n".join(lines) + "\n")
        motion_entry = {"capture": "motion" + EXTENSIONS[settings.format],
                        "joint_angles": "motion.joints.csv"}
    manifest = {"session": {"name": session,
                            "rig": f"../../calibration/{sc.rig.name}.calibrated.toml",
                            "total_mass": float(truth_pi[0::10].sum())},
                "robot": {"urdf": "robot.prior.urdf", "base_link": base_link,
                          "fixed_joints": Inline(fixed_joints),
                          "markers": {base_link: Inline({k: _l(v)
                                                         for k, v in markers.items()}),
                                      **{link: Inline({k: _l(v) for k, v in table.items()})
                                         for link, table in (link_markers or {}).items()}}},
                "postures": entries}
    if motion_entry is not None:
        manifest["relative_motion"] = motion_entry
    path = folder / "session.toml"
    path.write_text(dumps(manifest, header=f"a simulated robot study ({Path(urdf).name}, "
                                           f"seed {seed})"))
    truth = {"urdf": str(urdf), "base_link": base_link, "fixed_joints": fixed_joints,
             "bodies": robot.names, "params": _l(truth_pi),
             "prior_params": _l(prior.prior_vector()), "total_mass": float(truth_pi[0::10].sum()),
             "postures": truth_postures, "encoder_noise_rad": encoder_noise_rad,
             "marker_noise_m": settings.noise_sigma_m}
    if motion_entry is not None:
        truth["motion"] = motion.to_json()
    (folder / "truth.json").write_text(json.dumps(truth, indent=1))
    return path


__all__ = ["BASE_MARKERS", "PriorPerturbation", "perturb_link", "perturbed_own_parts",
           "random_postures", "write_robot_study"]
