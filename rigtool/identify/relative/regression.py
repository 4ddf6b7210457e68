"""The relative-motion stage's regression rows (paper 002 eq. 16) from a capture: every
link's motion and the Newton-Euler balance of everything the springs carry.

While the links move relative to the base and the platform vibrates, the balance about the
platform origin in platform axes reads per frame::

    Y_p pi_platform + sum_j X_j Y_j pi_j = w_springs

with ``Y_j`` the rigid-body regressor of link j in its own axes about its origin (filtered
motion of that link) and ``X_j`` the wrench transform from link j (axes, origin) to the
platform. Each link's rotation comes from its own markers; its origin (the joint centre)
from its parent's raw pose and the joint centre (a base-link-on-platform pose for the base),
which is more accurate than the link's own small marker cluster. All poses go through the
same zero-phase filter and differentiation (rigtool.kinematics), and the spring wrench
through the platform's filter, so both sides of the equation see the same filter.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.config import FilterSettings
from rigtool.errors import ConfigError, InputError
from rigtool.identify.posture.equation_error import spring_wrench_body, transform_matrix
from rigtool.identify.common.platform_motion import (CaptureMotion, capture_motion,
                                                     equation_rows, relative_pose)
from rigtool.inertia import InertialParams, regressor_body, wrench_transform
from rigtool.kinematics.filtering import fill_gaps
from rigtool.kinematics.motion import motion_from_pose
from rigtool.kinematics.pose import body_trajectory
from rigtool.mocap import MarkerData
from rigtool.rig import Rig
from rigtool.tree import Tree

#: Standard-parameter index (``pi``) of each Phi_B field of one link (MS xyz, J xx yy zz yz zx xy).
PI_OF_PHI_B = np.array([1, 2, 3, 4, 7, 9, 8, 6, 5])


@dataclass(frozen=True)
class LinkMotion:
    """Filtered motion of one link: origin (joint centre) and axes, lab components."""

    rotation: np.ndarray          # [T, 3, 3] link -> lab
    position_m: np.ndarray        # [T, 3] origin
    accel_lab: np.ndarray         # [T, 3]
    omega_body: np.ndarray        # [T, 3]
    alpha_body: np.ndarray        # [T, 3]
    valid: np.ndarray             # [T]


@dataclass(frozen=True)
class RelativeSystem:
    """Eq. 16 per frame: ``A[t] @ Phi_B = b[t]`` (rows as :func:`equation_rows` keeps them).

    ``a_phi_b`` ``[T, R, 9n]``, ``b`` ``[T, R]``: spring wrench minus the platform's and the
    object's mass terms (``K q - Y_M0 M0 - M_P q''`` of the paper). ``ok``: frames used.
    """

    time_s: np.ndarray
    a_phi_b: np.ndarray
    b: np.ndarray
    ok: np.ndarray
    base_rotation_platform: np.ndarray
    base_position_platform: np.ndarray
    correlation_frames: int
    marker_sigma_m: dict = field(default_factory=dict)
    warnings: tuple = ()
    clean_markers: MarkerData | None = None    # markers rebuilt from the filtered poses
    link_rotations_base: dict | None = None    # link -> mean 0R_j over the frames used


def _raw_rotation(traj, rate_hz: float, max_gap_s: float) -> np.ndarray:
    """Raw rotations with short gaps bridged (rotation vectors about the mean)."""
    from scipy.spatial.transform import Rotation
    ok = traj.valid
    rot = np.full_like(traj.rotation, np.nan)
    if ok.sum() < 3:
        return rot
    r_ref = Rotation.from_matrix(traj.rotation[ok]).mean()
    rv = np.full((traj.rotation.shape[0], 3), np.nan)
    rv[ok] = (r_ref.inv() * Rotation.from_matrix(traj.rotation[ok])).as_rotvec()
    rv, _ = fill_gaps(rv, rate_hz=rate_hz, max_gap_s=max_gap_s)
    good = np.all(np.isfinite(rv), axis=1)
    rot[good] = (r_ref * Rotation.from_rotvec(rv[good])).as_matrix()
    return rot


def link_motions(tree: Tree, data: MarkerData, markers: dict[str, dict[str, np.ndarray]],
                 cap: CaptureMotion, base_rotation_platform: np.ndarray,
                 base_position_platform: np.ndarray, settings: FilterSettings, *,
                 max_gap_s: float = 0.1) -> tuple[list[LinkMotion], dict[str, float]]:
    """Filtered motion of every non-base link (index 0 is None: the base rides the platform).

    A child's origin is its parent's raw origin plus its parent's raw rotation times the
    joint centre (the base link's raw pose is the platform's times the base pose on it);
    its rotation comes from its own markers. Returns the motions and each link's marker
    noise (per coordinate, m) from the rigid-fit residuals.
    """
    from rigtool.identify.common.platform_motion import marker_sigma_from_residual
    n = len(tree.links)
    parents = tree.parent_index()
    raw_rot = [None] * n
    raw_org = [None] * n
    raw_rot[0] = cap.rotation_raw @ base_rotation_platform
    raw_org[0] = cap.position_raw + np.einsum("tij,j->ti", cap.rotation_raw,
                                              base_position_platform)
    out: list = [None]
    sigma = {}
    for i in range(1, n):
        link = tree.links[i]
        if link.name not in markers or len(markers[link.name]) < 3:
            raise ConfigError(f"link '{link.name}' needs at least 3 markers for the "
                              "relative-motion stage", field=f"links[{i}].markers")
        traj = body_trajectory(data, markers[link.name])
        if traj.valid.sum() < 10:
            raise InputError(f"link '{link.name}' is posed from its markers in only "
                             f"{int(traj.valid.sum())} frames of the relative-motion capture",
                             path=data.source)
        sigma[link.name] = marker_sigma_from_residual(traj.residual_rms_m,
                                                      len(markers[link.name]))
        raw_rot[i] = _raw_rotation(traj, data.rate_hz, max_gap_s)
        p = parents[i]
        raw_org[i] = raw_org[p] + np.einsum("tij,j->ti", raw_rot[p], tree.joint_center(i))
        ok = np.all(np.isfinite(raw_org[i]), axis=1) & np.all(np.isfinite(raw_rot[i]),
                                                                axis=(1, 2))
        jt = replace(traj, rotation=np.where(ok[:, None, None], raw_rot[i], np.nan),
                     position_m=np.where(ok[:, None], raw_org[i], np.nan), valid=ok)
        mo = motion_from_pose(jt, settings, rate_hz=data.rate_hz, max_gap_s=max_gap_s)
        out.append(LinkMotion(mo.rotation, mo.position_m, mo.accel_lab, mo.omega_body,
                              mo.alpha_body, mo.valid))
    return out, sigma


def _wrench_transform(rot_p: np.ndarray, pos_p: np.ndarray, lm: LinkMotion) -> np.ndarray:
    """``X [T, 6, 6]``: link wrench (link axes, about its origin) -> platform axes, about the
    platform origin."""
    r = np.einsum("tji,tjk->tik", rot_p, lm.rotation)             # R_p^T R_j
    d = np.einsum("tji,tj->ti", rot_p, lm.position_m - pos_p)     # origin in platform axes
    return wrench_transform(r, d)


def relative_system(tree: Tree, rig: Rig, platform: InertialParams, data: MarkerData,
                    markers: dict[str, dict[str, np.ndarray]], total_mass_kg: float,
                    settings: FilterSettings, *, window: tuple[float, float] | None = None,
                    spring_model: str = "exact", base_pose=None,
                    max_gap_s: float = 0.1) -> RelativeSystem:
    """Build eq. 16 (``A Phi_B = b`` per frame) from a relative-motion capture.

    ``base_pose``: ``(R, p)`` of the base link on the platform; default from the capture
    (mean relative pose of the base's markers to the platform's).
    """
    n = len(tree.links)
    plat_markers = rig.platform.markers_platform
    cap = capture_motion(data, plat_markers, settings, name="relative motion", window=window,
                         max_gap_s=max_gap_s)
    warnings = list(cap.warnings)
    if base_pose is None:
        plat_traj = body_trajectory(data, plat_markers)
        base_traj = body_trajectory(data, markers[tree.links[0].name])
        r_pb, t_pb, wobble = relative_pose(plat_traj, base_traj, cap.valid)
        if np.rad2deg(wobble) > 0.5:
            warnings.append(f"relative motion: the base link moves on the platform by "
                            f"{np.rad2deg(wobble):.2f} deg RMS; it should be fixed to it")
    else:
        r_pb, t_pb = (np.asarray(v, float) for v in base_pose)
    motions, sigma = link_motions(tree, data, markers, cap, r_pb, t_pb, settings,
                                  max_gap_s=max_gap_s)
    sigma["platform"] = cap.marker_sigma_m
    g = rig.gravity_lab
    rot_p, pos_p = cap.rotation, cap.position
    rt = np.swapaxes(rot_p, -1, -2)
    y_p = regressor_body(np.einsum("tij,tj->ti", rt, cap.accel_lab - g), cap.omega_body,
                         cap.omega_dot_body)                               # [T, 6, 10]
    t_base = transform_matrix(r_pb, t_pb)
    y_base = y_p @ t_base
    n_t = y_p.shape[0]
    a = np.zeros((n_t, 6, 9 * n))
    a[:, :, :9] = y_base[:, :, PI_OF_PHI_B]
    ok = cap.valid.copy()
    for i in range(1, n):
        lm = motions[i]
        rj_t = np.swapaxes(lm.rotation, -1, -2)
        y_j = regressor_body(np.einsum("tij,tj->ti", rj_t, lm.accel_lab - g), lm.omega_body,
                             lm.alpha_body)
        x = _wrench_transform(rot_p, pos_p, lm)
        a[:, :, 9 * i:9 * i + 9] = np.einsum("tij,tjk->tik", x, y_j[:, :, PI_OF_PHI_B])
        ok &= lm.valid
    w = spring_wrench_body(rig, cap, model=spring_model)
    b = w - y_p @ platform.pi - y_base[:, :, 0] * total_mass_kg
    a = equation_rows(rig, rot_p, a)
    b = equation_rows(rig, rot_p, b[..., None])[..., 0]
    ok &= np.all(np.isfinite(a), axis=(1, 2)) & np.all(np.isfinite(b), axis=1)
    if ok.sum() < 10 * max(n - 1, 1):
        raise InputError(f"the relative-motion capture gives only {int(ok.sum())} usable "
                         "frames (every body posed, outside gaps, filter transients and the "
                         "window)", path=data.source)
    # Markers rebuilt noise-free from the filtered poses (for noise probes).
    names, xyz = list(plat_markers), [np.einsum("tij,kj->tki", rot_p, np.stack(
        list(plat_markers.values()))) + pos_p[:, None, :]]
    base_rot = rot_p @ r_pb
    base_org = pos_p + np.einsum("tij,j->ti", rot_p, t_pb)
    for i, link in enumerate(tree.links):
        mk = markers[link.name]
        if i == 0:
            r_i, o_i = base_rot, base_org
        else:
            r_i, o_i = motions[i].rotation, motions[i].position_m
        names += list(mk)
        xyz.append(np.einsum("tij,kj->tki", r_i, np.stack(list(mk.values()))) + o_i[:, None, :])
    clean = MarkerData(time_s=data.time_s, names=tuple(names), xyz_m=np.concatenate(xyz, 1),
                       rate_hz=data.rate_hz, source=data.source)
    mean_rot = {}
    for i, link in enumerate(tree.links[1:], start=1):
        rel = np.einsum("tji,tjk->tik", base_rot[ok], motions[i].rotation[ok])
        mean_rot[link.name] = Rotation.from_matrix(rel).mean().as_matrix()
    return RelativeSystem(data.time_s, a, b, ok, r_pb, t_pb, cap.correlation_frames, sigma,
                          tuple(warnings), clean, mean_rot)


__all__ = ["PI_OF_PHI_B", "LinkMotion", "RelativeSystem", "link_motions", "relative_system"]
