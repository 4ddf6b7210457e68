"""The noise floor of a locked-posture fit: the Cramer-Rao bound.

Argument. The data of a posture capture are marker positions ``y_k = f_k(theta) + e_k`` with
``e_k`` white Gaussian noise of standard deviation ``sigma`` per coordinate. ``theta`` holds
the object's COM and inertia (9 numbers; its mass is weighed) and the nuisance the model
needs: the platform's state at the first frame (12). Given the rig (springs, platform) the
motion is deterministic, so ``f`` is the simulated response of
rigtool.identify.posture.output_error's model and the Fisher information is
``F = J^T J / sigma^2`` with ``J = df/dtheta`` at the TRUE parameters. Any unbiased estimator
from the same markers has covariance at least ``F^-1``; the bound on the reported quantities
``g(theta) = (COM, inertia about the COM)`` is ``G F^-1 G^T``, ``G = dg/dtheta``. No
filtering or differentiation enters the argument: processing the markers (pose, filters,
derivatives, as the equation-error fit does) cannot add information, so the same bound holds
for the equation-error estimator fed by the same markers. It scales as ``sigma^2``.

Three bounds per posture:

- ``std`` (the one the ratios use): the data rigtool's output-error fit uses, every marker of
  the locked posture (platform and object), with what the fit does not know as nuisance
  unknowns: the base link's pose on the platform (6; its markers' base-link coordinates are
  known) and each other object marker's place on the platform (3 each). The COM and inertia
  are reported in the base-link frame, so the base pose's uncertainty is part of the bound.
- ``std_platform``: the platform's markers only, the base pose known (the bound of the
  platform-marker fit of earlier versions; it leaves out the base pose and is not a bound for
  an estimator that must find it).
- ``std_all``: every marker with its place on the platform known: a lower bound for any
  estimator, since it assumes the posture known exactly.

``J`` is computed by central differences in one batched simulation (rigtool.identify.
rigtool.engine, two RK4 steps per frame) and the COM/inertia are reached through the output-error
parameterisation (COM + log-Cholesky of the second moment about the COM; a local bijection,
so the bound does not depend on it).

    python3 benchmarks/crb.py [--scenario scenarios/two_link_paper002.toml] [--sigma 0.1]
"""

from __future__ import annotations

import argparse
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rigtool.identify.posture.attached_markers import (joint_information, pose_columns,
                                               position_products)
from rigtool.identify.common.output_error import central_jacobian as _jac
from rigtool.identify.common.output_error import object_in_base_frame
from rigtool.identify.posture.problem import PostureProblem as _Problem, object_to_z
from rigtool.identify.posture.equation_error import transform_matrix
from rigtool.inertia import InertialParams
from rigtool.tree import composite_params

ROOT = Path(__file__).resolve().parents[1]
TRIU = np.triu_indices(3)


@dataclass(frozen=True)
class PostureCRB:
    """Cramer-Rao bound of one posture at ``sigma_m`` (per marker coordinate).

    ``std``/``cov``: ``[c_x, c_y, c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]`` (m, kg m^2; COM
    and inertia about the COM in the base-link frame) from every marker, the base pose and
    the other object markers' places unknown; ``std_platform``: the platform markers, base
    pose known; ``std_all``: every marker, every place known.
    """

    name: str
    sigma_m: float
    std: np.ndarray
    cov: np.ndarray
    std_platform: np.ndarray
    std_all: np.ndarray
    n_frames: int
    seconds: float


def _props(params: np.ndarray) -> np.ndarray:
    p = InertialParams(params)
    return np.concatenate([p.com, p.inertia_com[TRIU]])


def _jacobian(prob: _Problem, x: np.ndarray) -> np.ndarray:
    """``df/dx`` (mm per unit of x), exact (rigtool.engine's forward-mode sensitivities)."""
    return prob.jacobian(x)


def _bound(info: np.ndarray, g: np.ndarray, pose_idx: np.ndarray | None, sigma_mm: float
           ) -> np.ndarray:
    """Covariance of (COM, inertia) from the information ``info`` (mm^-2 units of J^T J at
    unit noise) and ``g = d props / d [z, pose]``; ``pose_idx``: the base pose's place in
    ``info`` (None: the pose is known)."""
    cov = np.linalg.inv(info) * sigma_mm ** 2
    sel = np.arange(9) if pose_idx is None else np.concatenate([np.arange(9), pose_idx])
    gg = g[:, :9] if pose_idx is None else g
    return gg @ cov[np.ix_(sel, sel)] @ gg.T


def posture_crb(sc, job, traj, *, sigma_m: float = 1e-4, substeps: int = 2) -> PostureCRB:
    """The bound of one simulated posture capture (``rigtool.sim`` scenario, capture job and
    its noise-free trajectory)."""
    import time
    t0 = time.perf_counter()
    obj = sc.obj
    rot = dict(job.plan.rotations)
    truth = composite_params(obj.tree, rot)
    mass = float(truth.mass)
    time_s = traj.time_s
    sel = np.ones(time_s.size, bool)
    if job.settings.window is not None:
        sel = (time_s >= job.settings.window[0]) & (time_s <= job.settings.window[1])
    idx = np.flatnonzero(sel)
    i0, n_frames = idx[0], idx[-1] - idx[0] + 1
    r0 = traj.rotation["platform"][i0]
    state = np.concatenate([traj.position_m["platform"][i0], np.zeros(3),
                            traj.velocity_lab["platform"][i0], traj.omega_lab["platform"][i0]])
    z_obj = object_to_z(truth.com, truth.inertia_com)
    x = np.concatenate([z_obj, state])
    r_pb, t_pb = obj.base_rotation_platform, obj.base_position_platform_m
    mk_plat = np.array([np.asarray(v, float) for v in sc.rig.platform.markers_platform.values()])
    org, rots = obj.tree.origins_and_rotations(rot)
    base_defs = np.array([np.asarray(m, float)
                          for m in obj.tree.links[0].markers_link.values()])
    mk_obj = np.array([r_pb @ (rots[i] @ np.asarray(m, float) + org[i]) + t_pb
                       for i, link in enumerate(obj.tree.links)
                       for m in link.markers_link.values()])
    dt = 1.0 / job.settings.rate_hz
    mk_all = np.vstack([mk_plat, mk_obj])
    tmat = transform_matrix(r_pb, t_pb)
    prob = _Problem(sc.rig, sc.platform_params.pi.astype(float), tmat,
                    mass, mk_all, np.zeros((n_frames, len(mk_all), 3)),
                    np.ones((n_frames, len(mk_all)), bool), dt, r0, substeps, z_obj, "none",
                    n_frames=int(n_frames))
    jac = _jacobian(prob, x)                  # rows: frame-major, every marker
    n_plat, n_all = len(mk_plat), len(mk_all)
    rows = jac.reshape(n_frames, n_all, 3, x.size)
    g = _jac(lambda v: _props(object_in_base_frame(v, r_pb, t_pb, tmat, mass)),
             np.concatenate([z_obj, np.zeros(6)]))
    j_plat = rows[:, :n_plat].reshape(-1, x.size)
    known = _bound(j_plat.T @ j_plat, g, None, sigma_m * 1e3)
    jtj = jac.T @ jac
    known_all = _bound(jtj, g, None, sigma_m * 1e3)
    # every object marker an unknown place on the platform; the base cluster's by its pose
    states = prob.states(x)
    rot_lab = states[:, 3:12].reshape(-1, 3, 3)
    att = np.arange(n_plat, n_all)
    prods = position_products(jac, prob.mask, rot_lab, att)
    info = joint_information(jtj, prods, np.full(att.size, n_frames),
                             len(base_defs), pose_columns(base_defs, r_pb))
    attached = _bound(info, g, np.arange(x.size, x.size + 6), sigma_m * 1e3)
    return PostureCRB(job.name, sigma_m, np.sqrt(np.diag(attached)), attached,
                      np.sqrt(np.diag(known)), np.sqrt(np.diag(known_all)), int(n_frames),
                      time.perf_counter() - t0)


def main() -> None:
    from rigtool.sim.scenario import load_scenario
    from rigtool.sim.session_writer import capture_jobs, simulate_job

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios/two_link_paper002.toml")
    ap.add_argument("--sigma", type=float, default=0.1, help="marker noise, mm")
    args = ap.parse_args()
    sc = load_scenario(args.scenario)
    print(f"| posture | frames | " + " | ".join(["c_x um", "c_y um", "c_z um", "I_xx", "I_xy",
                                                 "I_xz", "I_yy", "I_yz", "I_zz"])
          + " | s |\n|" + "---|" * 12)
    for job in capture_jobs(sc):
        if job.kind != "posture":
            continue
        b = posture_crb(sc, job, simulate_job(sc, job), sigma_m=args.sigma * 1e-3)
        for lab, s in (("all markers, places unknown", b.std),
                       ("platform markers, base pose known", b.std_platform),
                       ("all markers, places known", b.std_all)):
            print(f"| {job.name} ({lab}) | {b.n_frames} | "
                  + " | ".join(f"{v * 1e6:.2f}" for v in s) + f" | {b.seconds:.1f} |")
    print("(COM in micrometres, inertia about the COM in 1e-6 kg m^2; base-link frame)")


if __name__ == "__main__":
    main()
