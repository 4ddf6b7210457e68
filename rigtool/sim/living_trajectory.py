"""Start and sampled motion of a living system (the satellites' states, the internal masses).

:func:`living_initial_state` starts every satellite at rest relative to its carrier (the
support at the platform's pose, each wobbling mass at its rest point moving with it);
:func:`living_trajectory` samples every physical body (those on the support ride its
satellite) and reports the internal masses in ``Trajectory.internal``. Accelerations come
from the integrator's own right-hand side at each sample.
"""

from __future__ import annotations

import numpy as np

from rigtool.sim import _model
from rigtool.sim._parts import PointSatellite
from rigtool.sim.system import Trajectory

__all__ = ["living_initial_state", "living_trajectory"]


def _carrier_poses(living, kin, y_extra: np.ndarray, k: int | None = None):
    """``(R, o, v, w)`` of every carrier at one sample (``k``) of batched kinematics."""
    terms = living.terms
    nb = living.model.n_bodies
    sel = (lambda a: a) if k is None else (lambda a: a[k])
    poses = [(sel(kin.rotation)[b], sel(kin.origin)[b], sel(kin.velocity)[b],
              sel(kin.omega)[b]) for b in range(nb)]
    poses += [terms.satellite_pose(y_extra, j) for j in range(len(terms.satellites))]
    return poses


def living_initial_state(living, y0: np.ndarray) -> np.ndarray:
    """The satellites' initial states ``[n_extra]`` given the bodies' ``y0``."""
    terms = living.terms
    model = living.model
    nb = model.n_bodies
    kin = _model.kinematics(model, y0)
    extra = np.zeros(terms.n_extra)
    _, quat, nu = model.split(y0)
    for j, sat in enumerate(terms.satellites):
        k = terms.offsets[j]
        if not isinstance(sat, PointSatellite):         # the support: the platform's pose
            extra[k:k + 3] = y0[:3]
            extra[k + 3:k + 7] = quat[0]
            extra[k + 7:k + 10] = nu[:3]
            extra[k + 10:k + 13] = nu[3:6]
    poses = _carrier_poses(living, kin, extra)
    for pad in terms.pads:
        sat = terms.satellites[pad.satellite - nb]
        if not isinstance(sat, PointSatellite):
            continue
        r_c, o_c, v_c, w_c = poses[pad.carrier]
        lever = r_c @ pad.a
        k = terms.offsets[pad.satellite - nb]
        extra[k:k + 3] = o_c + lever
        extra[k + 3:k + 6] = v_c + np.cross(w_c, lever)
    return extra


def living_trajectory(living, rhs, t: np.ndarray, y: np.ndarray) -> Trajectory:
    """Every physical body's motion and the internal masses' from states ``y [T, n]``."""
    model, terms = living.model, living.terms
    nb, n_nu = model.n_bodies, model.n_nu
    n_rigid = 3 + 4 * nb + n_nu
    y_rigid, y_extra = y[:, :n_rigid], y[:, n_rigid:]
    kin = _model.kinematics(model, y_rigid)
    ydot = np.stack([rhs(tk, yk) for tk, yk in zip(t, y)])
    nu_dot = ydot[:, 3 + 4 * nb:n_rigid]
    acc = np.einsum("tbin,tn->tbi", kin.jacobian[..., :3, :], nu_dot) + kin.bias_accel
    alpha = nu_dot[:, 3:].reshape(len(t), nb, 3)
    # every carrier's pose, velocity and accelerations, time first
    rot_c, org_c, vel_c, w_c, acc_c, alpha_c = ([kin.rotation[:, b] for b in range(nb)],
                                               [kin.origin[:, b] for b in range(nb)],
                                               [kin.velocity[:, b] for b in range(nb)],
                                               [kin.omega[:, b] for b in range(nb)],
                                               [acc[:, b] for b in range(nb)],
                                               [alpha[:, b] for b in range(nb)])
    for j, sat in enumerate(terms.satellites):
        k = terms.offsets[j]
        if isinstance(sat, PointSatellite):
            rot_c.append(np.broadcast_to(np.eye(3), (len(t), 3, 3)))
            org_c.append(y_extra[:, k:k + 3])
            vel_c.append(y_extra[:, k + 3:k + 6])
            w_c.append(np.zeros((len(t), 3)))
            acc_c.append(ydot[:, n_rigid + k + 3:n_rigid + k + 6])
            alpha_c.append(np.zeros((len(t), 3)))
        else:
            rot_c.append(_model.quat_to_matrix(y_extra[:, k + 3:k + 7]))
            org_c.append(y_extra[:, k:k + 3])
            vel_c.append(y_extra[:, k + 7:k + 10])
            w_c.append(y_extra[:, k + 10:k + 13])
            acc_c.append(ydot[:, n_rigid + k + 7:n_rigid + k + 10])
            alpha_c.append(ydot[:, n_rigid + k + 10:n_rigid + k + 13])
    traj = Trajectory(t, {}, {}, {}, {}, {}, {}, {})
    for out in living.outputs:
        b = out.body
        w, wd = w_c[b], alpha_c[b]
        lever = rot_c[b] @ out.position
        traj.rotation[out.name] = rot_c[b] @ out.rotation
        traj.position_m[out.name] = org_c[b] + lever
        traj.velocity_lab[out.name] = vel_c[b] + np.cross(w, lever)
        traj.omega_lab[out.name] = w.copy()
        traj.accel_lab[out.name] = acc_c[b] + np.cross(wd, lever) + np.cross(
            w, np.cross(w, lever))
        traj.alpha_lab[out.name] = wd.copy()
    for item in living.internals:
        entry = {"mass": item.mass, "link": item.link, "rest_link": item.rest_link,
                 "kind": item.kind}
        if item.kind == "carried":
            cm = terms.carried[living.carried_of[item.name]]
            s, sd, _ = cm.path(t)
            r, o, v, w = (rot_c[cm.carrier], org_c[cm.carrier], vel_c[cm.carrier],
                          w_c[cm.carrier])
            lever = (r @ s[..., None])[..., 0]
            entry["position_m"] = o + lever
            entry["velocity_lab"] = v + np.cross(w, lever) + (r @ sd[..., None])[..., 0]
            # the excursion along the path (m) for the chest and abdominal wall markers
            entry["excursion_m"] = cm.path.scalar(t)[0]
        else:
            j = nb + living.satellite_of[item.name]
            entry["position_m"] = org_c[j].copy()
            entry["velocity_lab"] = vel_c[j].copy()
        traj.internal[item.name] = entry
    pads = [p for p in terms.pads if not isinstance(terms.satellites[p.satellite - nb],
                                                   PointSatellite)]
    if pads:
        strain = np.zeros((len(t), len(pads), 3))
        for i in range(len(t)):
            poses = [(rot_c[c][i], org_c[c][i]) for c in range(len(rot_c))]
            for m, pad in enumerate(pads):
                strain[i, m] = terms.pad_strain(pad, poses[pad.carrier], poses[pad.satellite])
        traj.internal["pads"] = {"deflection_m": strain,
                                 "stiffness": np.stack([p.stiffness for p in pads]),
                                 "damping": np.stack([p.damping for p in pads]),
                                 "preload": np.stack([p.preload for p in pads])}
    return traj
