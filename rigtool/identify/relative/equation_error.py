"""Relative-motion stage: the remaining ``J_yy`` terms and the full minimal set Phi_B
(paper 002 section 2.2, eq. 13-20).

Physics
-------
While the links move relative to the base and the platform vibrates, the Newton-Euler balance
of everything the springs carry, about the platform origin in platform axes, reads per frame::

    Y_p pi_platform + sum_j X_j Y_j pi_j = w_springs

with ``Y_j`` the rigid-body regressor of link j in its own axes about its origin (filtered
motion of that link) and ``X_j`` the wrench transform from link j (axes, origin) to the
platform. With spherical joints each child's origin is its joint centre, which it shares
with its parent: a point mass at that point contributes the same wrench whichever of the two
carries it. Moving every child's subtree mass onto its joint (the parent) therefore changes
nothing, and leaves exactly the minimal parameters (eq. 1-3)::

    pi_base = [M0, MS_0, J_0],   pi_j = [0, MS_j, J_j]   (every non-base link)

so the equation is linear in ``M0`` (weighed) and ``Phi_B`` (eq. 15-16). With ``Phi_s`` from
the locked postures, ``Phi_B = G Phi_s + H u`` where ``u`` are the ``J_yy`` of the moving
links (the base's follows from ``sum.J_yy``), and ``u`` is a small least-squares problem.

Kinematics: each link's rotation comes from its own markers; its origin (the joint centre)
from its parent's raw pose and the joint centre (a base-link-on-platform pose for the base),
which is more accurate than the link's own small marker cluster. All poses go through the
same zero-phase filter and differentiation (rigtool.kinematics), and the spring wrench
through the platform's filter, so both sides of the equation see the same filter.

Bounds: a physically consistent link needs ``[[Sigma_j, MS_j], [MS_j^T, M_j]] >> 0`` with the
second-moment matrix ``Sigma_j = tr(J_j)/2 1 - J_j`` and the subtree mass ``M_j``; ``M_j``
is ``M0`` for the base and at most ``M0`` for the others, so ``M0`` gives a necessary
condition for every link (stronger than paper 002 eq. 19, which asks for positive diagonal
entries only). Since ``J_j = D_j + J_yy,j 1``, ``Sigma_j = Sigma(D_j) + J_yy,j / 2 1`` and the
LMI is a lower bound on each link's ``J_yy`` (:func:`link_lower_bounds`, an SDP solved in
closed form; the tests check it against cvxpy). With the sum fixed, every unknown's feasible
interval follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.config import FilterSettings
from rigtool.errors import ConfigError, IdentifiabilityError, InputError
from rigtool.lsq import noise_moments, solve_compensated, solve_wls
from rigtool.identify.posture.equation_error import (dual_metric_rows, spatial_inertia_basis,
                                      spring_wrench_body, transform_matrix)
from rigtool.identify.common.platform_motion import (WRENCH_ROWS, CaptureMotion, capture_motion,
                                              equation_rows, relative_pose, row_names)
from rigtool.inertia import InertialParams, regressor_body, skew
from rigtool.kinematics.filtering import fill_gaps
from rigtool.kinematics.motion import motion_from_pose
from rigtool.kinematics.pose import body_trajectory
from rigtool.mocap import MarkerData
from rigtool.rig import Rig
from rigtool.tree import PHI_B_FIELDS, Tree, j_matrix, overall_from_phi_b, phi_b_names

#: Standard-parameter index (``pi``) of each Phi_B field of one link (MS xyz, J xx yy zz yz zx xy).
PI_OF_PHI_B = np.array([1, 2, 3, 4, 7, 9, 8, 6, 5])
WEIGHTINGS = ("noise", "plain", "dual-metric")
METHODS = ("two-step", "joint")


# ----------------------------------------------------------------------------------------
# Phi_B <-> Phi_s + unknown J_yy
# ----------------------------------------------------------------------------------------

def describe_interval(lower: float, upper: float, *, digits: int = 4) -> str:
    """A feasible J_yy interval for people to read: ``[lo, hi]``, or, when the lower bound
    lies above the upper one, that it is empty and why (no set of physically consistent
    links has this Phi_s and mass; the estimate is then not bounded)."""
    if lower > upper:
        return (f"empty (lower bound {lower:.{digits}f} above upper {upper:.{digits}f}: no "
                "physically consistent links have this Phi_s and mass)")
    return f"[{lower:.{digits}f}, {upper:.{digits}f}]"


def phi_b_affine(n_links: int) -> tuple[np.ndarray, np.ndarray]:
    """``(G, H)`` with ``Phi_B = G Phi_s + H u``; ``u`` = ``J_yy`` of links 1..n-1.

    ``G`` is ``[9n, 8n+1]``, ``H`` is ``[9n, n-1]``; the base link's ``J_yy`` is
    ``sum.J_yy - sum(u)``.
    """
    g = np.zeros((9 * n_links, 8 * n_links + 1))
    h = np.zeros((9 * n_links, max(n_links - 1, 0)))
    s_col = 8 * n_links
    for j in range(n_links):
        rb, rs = 9 * j, 8 * j
        for k in range(3):                      # MS
            g[rb + k, rs + k] = 1.0
        g[rb + 3, rs + 3] = 1.0                 # J_xx = (J_xx - J_yy) + J_yy
        g[rb + 5, rs + 4] = 1.0                 # J_zz = (J_zz - J_yy) + J_yy
        for k in range(3):                      # yz, zx, xy
            g[rb + 6 + k, rs + 5 + k] = 1.0
        for row in (3, 4, 5):                   # + J_yy of this link
            if j == 0:
                g[rb + row, s_col] = 1.0
                h[rb + row, :] = -1.0
            else:
                h[rb + row, j - 1] = 1.0
    return g, h


def link_lower_bounds(phi_s: np.ndarray, n_links: int, total_mass_kg: float, *,
                      psd_only: bool = False) -> np.ndarray:
    """Smallest ``J_yy`` of each link for which a physically consistent link exists.

    With ``J = D + v 1`` (``D`` from Phi_s, ``v = J_yy``) and ``Sigma = tr(J)/2 1 - J``:
    ``[[Sigma, MS], [MS^T, M0]] >> 0`` iff ``Sigma(D) + v/2 1 - MS MS^T / M0 >> 0`` (Schur
    complement), i.e. ``v >= -2 lambda_min(Sigma(D) - MS MS^T / M0)``. ``psd_only`` asks
    only ``J >> 0`` (``v >= -lambda_min(D)``). Closed form of a one-variable SDP (the tests
    compare it with cvxpy).
    """
    per = np.asarray(phi_s, float)[:8 * n_links].reshape(n_links, 8)
    out = np.zeros(n_links)
    for j in range(n_links):
        ms, (dxx, dzz, yz, zx, xy) = per[j, :3], per[j, 3:]
        d = j_matrix(np.array([dxx, 0.0, dzz, yz, zx, xy]))
        if psd_only:
            out[j] = -np.linalg.eigvalsh(d)[0]
        else:
            sig = 0.5 * np.trace(d) * np.eye(3) - d - np.outer(ms, ms) / total_mass_kg
            out[j] = -2.0 * np.linalg.eigvalsh(sig)[0]
    return out


def feasible_intervals(lower: np.ndarray, sum_jyy: float) -> np.ndarray:
    """``[n-1, 2]`` interval of each moving link's ``J_yy`` given every link's lower bound
    and the fixed sum (the base takes what is left); rows with lo > hi mean no solution."""
    lo_mov = lower[1:]
    hi = sum_jyy - lower[0] - (lo_mov.sum() - lo_mov)
    return np.stack([lo_mov, hi], axis=1)


# ----------------------------------------------------------------------------------------
# Motion of every link and the eq. 16 rows
# ----------------------------------------------------------------------------------------

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
    x = np.zeros(r.shape[:1] + (6, 6))
    x[:, :3, :3] = r
    x[:, 3:, 3:] = r
    x[:, 3:, :3] = np.einsum("tij,tjk->tik", _skew_t(d), r)
    return x


def _skew_t(v: np.ndarray) -> np.ndarray:
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


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


# ----------------------------------------------------------------------------------------
# The stage
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RelativeResult:
    """Outcome of the relative-motion stage (see :func:`resolve_relative`).

    ``resolved``/``std``/``bounds``: the moving links' ``J_yy`` (names ``link.J_yy``) with
    standard errors and feasible intervals; ``names``/``values``/``std_phi_b``/
    ``covariance``: the full Phi_B. ``figure`` holds eq. 16's two sides over time
    (``time_s``, ``lhs``, ``rhs`` ``[T, R]``, ``rows``) for :func:`plot_relative`.
    """

    resolved: dict[str, float]
    std: dict[str, float]
    bounds: dict[str, tuple[float, float]]
    names: list[str]
    values: np.ndarray
    std_phi_b: np.ndarray
    covariance: np.ndarray
    minimal_parameters: dict[str, dict]
    residual_rms: dict[str, float]
    on_bound: list[str]
    warnings: list[str]
    figure: dict
    unconstrained: dict[str, float] = field(default_factory=dict)
    compensated: bool = False
    weighting: str = "noise"
    method: str = "two-step"

    def to_json(self) -> dict:
        """Plain-JSON summary (no time series)."""
        return {"resolved": self.resolved, "std": self.std,
                "bounds": {k: list(v) for k, v in self.bounds.items()},
                "phi_b": {"names": self.names, "values": self.values.tolist(),
                          "std": self.std_phi_b.tolist()},
                "minimal_parameters": {k: {"MS": v["MS"].tolist(), "J": v["J"].tolist()}
                                       for k, v in self.minimal_parameters.items()},
                "residual_rms": self.residual_rms, "on_bound": self.on_bound,
                "unconstrained": self.unconstrained, "compensated": self.compensated,
                "weighting": self.weighting, "method": self.method,
                "warnings": self.warnings}


def _noise_probe_rows(tree, rig, platform, system: RelativeSystem, markers, total_mass_kg,
                      settings, window, spring_model, sigma_m: float, n_probes: int, seed: int):
    """``(dA [K, M, R, P], db [K, M, R], ok)`` over frames usable in every probe: the same
    pipeline run on markers rebuilt noise-free and with fresh noise of the capture's level."""
    clean = system.clean_markers
    rng = np.random.default_rng(seed)
    pose = (system.base_rotation_platform, system.base_position_platform)
    systems = []
    for k in range(n_probes + 1):
        xyz = clean.xyz_m if k == 0 else clean.xyz_m + rng.normal(0.0, sigma_m,
                                                                  clean.xyz_m.shape)
        d = MarkerData(time_s=clean.time_s, names=clean.names, xyz_m=xyz,
                       rate_hz=clean.rate_hz, source=clean.source)
        systems.append(relative_system(tree, rig, platform, d, markers, total_mass_kg,
                                       settings, window=window, spring_model=spring_model,
                                       base_pose=pose))
    ok = system.ok.copy()
    for s in systems:
        ok &= s.ok
    da = np.stack([s.a_phi_b[ok] - systems[0].a_phi_b[ok] for s in systems[1:]])
    db = np.stack([s.b[ok] - systems[0].b[ok] for s in systems[1:]])
    return da, db


def dual_metric_factor(tree: Tree, platform: InertialParams, phi_s: np.ndarray,
                       system: RelativeSystem, total_mass_kg: float) -> np.ndarray:
    """``L^T`` (6x6) with ``L L^T = Lambda^-1``: the dual metric of paper 004 for eq. 16's rows.

    ``Lambda`` is the spatial inertia of the vibrating assembly (platform plus the object in
    the capture's mean posture) about the platform origin, platform axes, as the rows are
    written. Weighting a residual wrench ``r`` by ``r^T Lambda^-1 r`` measures it by the
    acceleration it would cause: the fit no longer depends on the units of force and torque
    nor on the reference point. The object's inertia in any posture needs only Phi_s (each
    link's ``J_yy 1`` term is rotation-invariant, so only ``sum.J_yy`` enters), so the metric
    is known before the ``J_yy`` are; it is held fixed (an affine LMI is not needed).
    """
    g_mat, _ = phi_b_affine(len(tree.links))
    rotations = dict(system.link_rotations_base or {})
    obj_base = overall_from_phi_b(tree, rotations, g_mat @ phi_s, total_mass_kg)
    t_base = transform_matrix(system.base_rotation_platform, system.base_position_platform)
    pi = np.asarray(platform.pi, float) + t_base @ obj_base.pi
    return dual_metric_rows(np.einsum("k,kij->ij", pi, spatial_inertia_basis()))


def resolve_relative(tree: Tree, rig: Rig, platform: InertialParams, data: MarkerData,
                     link_markers: dict[str, dict[str, np.ndarray]], subset,
                     total_mass_kg: float, settings: FilterSettings,
                     window: tuple[float, float] | None = None, *,
                     weighting: str = "noise", compensate: bool = True, n_probes: int = 2,
                     spring_model: str = "exact", consistent: bool = True,
                     method: str = "two-step", seed: int = 0) -> RelativeResult:
    """Resolve the moving links' ``J_yy`` from a relative-motion capture (two-step method).

    Parameters
    ----------
    tree : Tree
        The object (joint centres needed).
    rig : Rig
        Calibrated rig.
    platform : InertialParams
        Calibrated platform parameters (platform frame, about its origin).
    data : MarkerData
        The relative-motion capture (platform, base and link markers).
    link_markers : dict
        Link name -> marker name -> coordinates in the link frame, m.
    subset : SubsetResult
        Phi_s from the locked postures (``names``, ``values``, ``covariance``).
    total_mass_kg : float
        Weighed mass ``M0``.
    settings : FilterSettings
        The session's filter.
    window : (t0, t1), optional
        Analysis window, s.
    weighting : {"noise", "plain", "dual-metric"}
        Rows weighted by 1/sigma per wrench component from a first pass, as they come, or
        by the dual metric of paper 004 (:func:`dual_metric_factor`; needs every DOF free,
        else noise weighting is used with a warning).
    compensate : bool
        Bias-compensated least squares from noise probes over all markers (errors in
        variables).
    consistent : bool
        Keep the estimate inside the physically consistent interval (constrained LS).
    method : {"two-step", "joint"}
        ``"two-step"`` (paper 002): Phi_s fixed at the postures' estimate, the ``J_yy`` by
        least squares, Phi_s's covariance propagated. ``"joint"``: every entry of Phi_B from
        the postures' Phi_s (with its covariance) and the relative-motion equations together,
        each weighted by its own covariance (:func:`_joint_fit`); the swing then also
        refines Phi_s. Falls back to two-step (with a warning) when Phi_s has no usable
        covariance.

    Returns
    -------
    RelativeResult

    Raises
    ------
    IdentifiabilityError
        If the subset is not fully identified, or the motion does not excite the ``J_yy``.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    n = len(tree.links)
    names_b = phi_b_names(tree)
    phi_s = np.asarray(subset.values, float)
    cov_s = np.asarray(subset.covariance, float)
    if phi_s.shape[0] != 8 * n + 1 or not np.all(np.isfinite(phi_s)):
        raise IdentifiabilityError("the relative-motion stage needs the whole subset Phi_s "
                                   "identified by the locked postures")
    g_mat, h_mat = phi_b_affine(n)
    unknown = [f"{l.name}.J_yy" for l in tree.links[1:]]
    warnings: list[str] = []
    system = relative_system(tree, rig, platform, data, link_markers, total_mass_kg, settings,
                             window=window, spring_model=spring_model)
    warnings += list(system.warnings)
    ok = system.ok
    rows_lt = None                      # dual metric: rows premultiplied by L^T
    if weighting == "dual-metric":
        if rig.locked_dofs:
            warnings.append("dual-metric weighting needs all six DOFs free; used noise "
                            "weighting")
            weighting = "noise"
        else:
            rows_lt = dual_metric_factor(tree, platform, phi_s, system, total_mass_kg)
    a_full = system.a_phi_b[ok]
    b_sys = system.b[ok]
    if rows_lt is not None:
        a_full = np.einsum("ij,tjk->tik", rows_lt, a_full)
        b_sys = b_sys @ rows_lt.T
    a = a_full @ h_mat                                         # [T, R, n-1]
    b = b_sys - a_full @ (g_mat @ phi_s)
    lag = system.correlation_frames
    first = solve_wls(a, b, max_lag=lag)
    weights = None
    if weighting == "noise":
        sig = np.sqrt(np.mean(first.residual ** 2, axis=0))
        weights = 1.0 / np.where(sig > 0, sig, 1.0)
    fit = None
    compensated = False
    probes_full = None
    if compensate:
        sigmas = [v for v in system.marker_sigma_m.values() if np.isfinite(v) and v > 0]
        if sigmas:
            da_full, db_full = _noise_probe_rows(
                tree, rig, platform, system, link_markers, total_mass_kg, settings, window,
                spring_model, float(np.median(sigmas)), n_probes, seed)
            if rows_lt is not None:
                da_full = np.einsum("ij,kmjp->kmip", rows_lt, da_full)
                db_full = db_full @ rows_lt.T
            probes_full = (da_full, db_full)
            da = da_full @ h_mat
            db = db_full - da_full @ (g_mat @ phi_s)
            aa, ab = noise_moments([(da, db, int(ok.sum()))], weights)
            fit = solve_compensated(a, b, aa, ab, row_weights=weights, max_lag=lag)
            compensated = fit.rank == a.shape[2]
            if not compensated:
                fit = None
    if fit is None:
        fit = solve_wls(a, b, row_weights=weights, max_lag=lag)
    if fit.rank < a.shape[2]:
        raise IdentifiabilityError(
            "the relative motion does not excite every moving link's J_yy (rank "
            f"{fit.rank} of {a.shape[2]}); move each link about more than one axis")
    # Phi_s uncertainty: u depends on phi_s through b; du/dphi_s = -(A^T W A)^-1 A^T W A_full G
    wr = np.ones(a.shape[1]) if weights is None else weights
    aw = a * wr[None, :, None]
    afw = a_full * wr[None, :, None]
    normal = np.einsum("trp,trq->pq", aw, aw)
    sens = -np.linalg.solve(normal, np.einsum("trp,trq->pq", aw, afw @ g_mat))
    cov_u = fit.cov + sens @ cov_s @ sens.T
    u_ls = fit.x.copy()
    lower = link_lower_bounds(phi_s, n, total_mass_kg)
    intervals = feasible_intervals(lower, phi_s[-1])
    u = u_ls.copy()
    on_bound: list[str] = []
    if np.any(intervals[:, 0] > intervals[:, 1]):
        warnings.append("Phi_s admits no physically consistent set of links (the J_yy "
                        "intervals are empty); the unconstrained estimate is reported")
    elif consistent and not _inside(u_ls, lower, phi_s[-1]):
        u = _constrained(u_ls, normal, lower, phi_s[-1])
        scale = np.maximum(np.abs(intervals).max(axis=1), 1e-12)
        on_bound = [unknown[k] for k in range(len(u))
                    if min(abs(u[k] - intervals[k, 0]), abs(u[k] - intervals[k, 1]))
                    < 1e-6 * scale[k]]
        if not on_bound:
            on_bound = [f"{tree.links[0].name}.J_yy"]
        warnings.append("the least-squares J_yy lie outside the physically consistent set; "
                        "the estimate was moved onto its boundary ("
                        + ", ".join(on_bound) + ")")
    phi_b = g_mat @ phi_s + h_mat @ u
    jac = np.concatenate([g_mat + h_mat @ sens, h_mat], axis=1)
    # cov of [phi_s, u_noise]: phi_s and the LS noise are independent
    big = np.zeros((jac.shape[1], jac.shape[1]))
    big[:8 * n + 1, :8 * n + 1] = cov_s
    big[8 * n + 1:, 8 * n + 1:] = fit.cov
    cov_b = jac @ big @ jac.T
    std_u = np.sqrt(np.clip(np.diag(cov_u), 0, None))
    if method == "joint":
        joint = _joint_fit(tree, a_full, b_sys, weights, lag, probes_full if compensated
                           else None, phi_s, cov_s, total_mass_kg, consistent, int(ok.sum()))
        if isinstance(joint, str):
            warnings.append(joint)
        else:
            phi_b, cov_b, moved = joint
            if moved:
                warnings.append("the joint estimate was moved onto the physically consistent "
                                "set (pseudo-inertia LMI with mass M0 per link)")
            per_b = phi_b.reshape(n, 9)
            u = per_b[1:, 4].copy()
            jyy = np.array([9 * i + 4 for i in range(1, n)])
            std_u = np.sqrt(np.clip(np.diag(cov_b)[jyy], 0, None))
            on_bound = []
    std_b = np.sqrt(np.clip(np.diag(cov_b), 0, None))
    lhs = np.full(system.b.shape, np.nan)
    rhs = np.full(system.b.shape, np.nan)
    lhs[ok] = system.b[ok]
    rhs[ok] = system.a_phi_b[ok] @ phi_b
    resid = (lhs - rhs)[ok]
    rows = row_names(rig)
    rms = _eq16_rms(resid, rows)
    per = phi_b.reshape(n, 9)
    minimal = {l.name: {"MS": per[i, :3].copy(), "J": j_matrix(per[i, 3:])}
               for i, l in enumerate(tree.links)}
    return RelativeResult(
        resolved={k: float(v) for k, v in zip(unknown, u)},
        std={k: float(v) for k, v in zip(unknown, std_u)},
        bounds={k: (float(iv[0]), float(iv[1])) for k, iv in zip(unknown, intervals)},
        names=names_b, values=phi_b, std_phi_b=std_b, covariance=cov_b,
        minimal_parameters=minimal, residual_rms=rms, on_bound=on_bound, warnings=warnings,
        figure={"time_s": system.time_s, "lhs": lhs, "rhs": rhs, "rows": rows,
                "a_phi_b": system.a_phi_b},
        unconstrained={k: float(v) for k, v in zip(unknown, u_ls)}, compensated=compensated,
        weighting=weighting, method=method)


def _eq16_rms(resid: np.ndarray, rows: list[str]) -> dict[str, float]:
    fr = [k for k, r in enumerate(rows) if r.startswith("f")]
    tr = [k for k, r in enumerate(rows) if r.startswith("n")]
    return {"force": float(np.sqrt(np.mean(resid[:, fr] ** 2))) if fr else float("nan"),
            "torque": float(np.sqrt(np.mean(resid[:, tr] ** 2))) if tr else float("nan")}


def eq16_with(figure: dict, phi_b: np.ndarray) -> tuple[dict, dict[str, float]]:
    """Eq. 16's figure data and residual RMS (force, torque) for another ``phi_b`` (e.g. the
    output-error refinement's) on the same capture's rows."""
    lhs = figure["lhs"]
    ok = np.all(np.isfinite(lhs), axis=1)
    rhs = np.full(lhs.shape, np.nan)
    rhs[ok] = figure["a_phi_b"][ok] @ phi_b
    return {**figure, "rhs": rhs}, _eq16_rms((lhs - rhs)[ok], figure["rows"])


def _phi_s_matrix(n_links: int) -> np.ndarray:
    """``[8n+1, 9n]`` matrix of the linear map :func:`rigtool.tree.phi_s_from_phi_b`."""
    from rigtool.tree import phi_s_from_phi_b
    return np.stack([phi_s_from_phi_b(e) for e in np.eye(9 * n_links)], axis=1)


def _consistency_lmis(phi_b, n_links: int, total_mass_kg: float) -> list:
    """cvxpy constraints ``[[tr(J)/2 1 - J, MS], [MS^T, M0]] >> 0`` for every link."""
    import cvxpy as cp
    cons = []
    for j in range(n_links):
        v = phi_b[9 * j:9 * j + 9]
        ms = v[:3]
        jm = cp.bmat([[v[3], v[8], v[7]], [v[8], v[4], v[6]], [v[7], v[6], v[5]]])
        sig = 0.5 * cp.trace(jm) * np.eye(3) - jm
        block = cp.bmat([[sig, cp.reshape(ms, (3, 1), order="F")],
                         [cp.reshape(ms, (1, 3), order="F"), np.array([[total_mass_kg]])]])
        cons.append(0.5 * (block + block.T) >> 0)
    return cons


def _joint_fit(tree: Tree, a_full: np.ndarray, b: np.ndarray, weights, lag: int, probes,
               phi_s: np.ndarray, cov_s: np.ndarray, total_mass_kg: float, consistent: bool,
               n_fit: int):
    """Phi_B from the postures (Phi_s, covariance ``C_s``) and eq. 16 together.

    Eq. 16 alone gives ``x_r`` with HAC covariance ``C_r`` (possibly singular: directions
    the swing does not excite carry no information); the joint estimate minimises
    ``(S phi - phi_s)^T C_s^-1 (S phi - phi_s) + (phi - x_r)^T C_r^+ (phi - x_r)`` (``S`` the
    Phi_B -> Phi_s map), i.e. generalised least squares of both sets of equations, each with
    its own honest covariance (serial correlation and errors in variables included). With
    ``consistent`` the minimiser is kept inside the per-link pseudo-inertia LMIs (cvxpy).
    Returns ``(phi_b, cov, moved)`` or a warning string when it cannot run.
    """
    n = len(tree.links)
    sd = np.sqrt(np.clip(np.diag(cov_s), 0, None))
    if not np.all(np.isfinite(cov_s)) or np.any(sd <= 0):
        return "joint fit needs Phi_s with a covariance; the two-step estimate is reported"
    if probes is not None:
        aa, ab = noise_moments([(probes[0], probes[1], n_fit)], weights)
        fit_r = solve_compensated(a_full, b, aa, ab, row_weights=weights, max_lag=lag)
    else:
        fit_r = solve_wls(a_full, b, row_weights=weights, max_lag=lag)
    # information of the relative-motion fit: pseudo-inverse of its covariance, in a scaled
    # basis so kg m and kg m^2 entries compare (numpy's pinv: the directions the motion does
    # not excite have zero variance and carry no information)
    smat = _phi_s_matrix(n)
    d_s = 1.0 / sd
    info_s = smat.T @ (np.linalg.inv(d_s[:, None] * cov_s * d_s[None, :]) * np.outer(d_s, d_s)) @ smat
    sc = np.sqrt(np.clip(np.diag(fit_r.cov), 0, None))
    sc = np.where(sc > 0, sc, 1.0)
    info_r = np.linalg.pinv(fit_r.cov / np.outer(sc, sc), rcond=1e-10, hermitian=True)
    info_r /= np.outer(sc, sc)
    info = info_s + info_r
    rhs = smat.T @ np.linalg.solve(cov_s, phi_s) + info_r @ fit_r.x
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        return "joint fit: singular information matrix; the two-step estimate is reported"
    x = cov @ rhs
    moved = False
    if consistent:
        import cvxpy as cp
        from rigtool.identify.common.consistency import solve_problem
        try:
            per = x.reshape(n, 9)
            ok_all = True
            for j in range(n):
                jm = j_matrix(per[j, 3:])
                sig = 0.5 * np.trace(jm) * np.eye(3) - jm - np.outer(per[j, :3], per[j, :3]) \
                    / total_mass_kg
                ok_all &= bool(np.linalg.eigvalsh(sig)[0] >= 0)
            if not ok_all:
                scale = np.where(np.abs(x) > 0, np.abs(x), 1.0)
                y = cp.Variable(x.size)
                xv = cp.multiply(scale, y)
                l_chol = np.linalg.cholesky(0.5 * (info + info.T) * np.outer(scale, scale))
                nrm = np.abs(l_chol).max()
                obj = cp.sum_squares((l_chol.T / nrm) @ (y - x / scale))
                solve_problem(cp.Problem(cp.Minimize(obj),
                                         _consistency_lmis(xv, n, total_mass_kg)),
                              y, "consistent joint fit")
                x = np.asarray(scale * y.value, float)
                moved = True
        except np.linalg.LinAlgError:
            pass
    return x, cov, moved


def _inside(u: np.ndarray, lower: np.ndarray, total: float) -> bool:
    return bool(np.all(u >= lower[1:]) and total - u.sum() >= lower[0])


def _constrained(u_ls: np.ndarray, normal: np.ndarray, lower: np.ndarray,
                 total: float) -> np.ndarray:
    """``argmin (u - u_ls)^T N (u - u_ls)`` over the consistent set (a small QP, cvxpy)."""
    import cvxpy as cp
    from rigtool.identify.common.consistency import solve_problem
    scale = np.maximum(np.abs(u_ls), 1e-6)
    y = cp.Variable(len(u_ls))
    uu = cp.multiply(scale, y)
    nn = normal * np.outer(scale, scale)
    nn = 0.5 * (nn + nn.T)
    chol = np.linalg.cholesky(nn / np.abs(nn).max())
    obj = cp.sum_squares(chol.T @ (y - u_ls / scale))
    solve_problem(cp.Problem(cp.Minimize(obj), [uu >= lower[1:], cp.sum(uu) <= total - lower[0]]),
                  y, "consistent J_yy")
    return np.asarray(scale * y.value, float)


def plot_relative(result: RelativeResult, ax=None):
    """Paper 002 Fig. 6: eq. 16's left side (springs minus the known mass terms, solid)
    and right side (``Y_B1 Phi_B`` with the identified Phi_B, dotted) per wrench component.

    Returns the matplotlib Figure.
    """
    import matplotlib.pyplot as plt
    fig = result.figure
    rows = fig["rows"]
    if ax is None:
        f, ax = plt.subplots(len(rows), 1, sharex=True, figsize=(8, 1.5 * len(rows) + 1))
    else:
        f = np.atleast_1d(ax)[0].figure
    axes = np.atleast_1d(ax)
    for k, a in enumerate(axes):
        a.plot(fig["time_s"], fig["lhs"][:, k], lw=1.0, label="left side (springs)")
        a.plot(fig["time_s"], fig["rhs"][:, k], lw=1.0, ls=":", label="right side (Phi_B)")
        a.set_ylabel(f"{rows[k]} [{'N' if rows[k].startswith('f') else 'N m'}]")
    axes[0].legend(loc="upper right", fontsize=7)
    axes[0].set_title("Relative motion: both sides of eq. 16")
    axes[-1].set_xlabel("time [s]")
    f.tight_layout()
    return f


__all__ = ["RelativeResult", "RelativeSystem", "resolve_relative", "relative_system",
           "link_motions", "phi_b_affine", "link_lower_bounds", "feasible_intervals",
           "plot_relative", "PI_OF_PHI_B", "METHODS"]
