"""A locked body riding on a compliant support: its measured motion on the platform in the
posture fits.

The body stays rigid; it moves on the platform by the small displacement ``u = [d, theta]``
its markers measure (rigtool.kinematics.support_motion). To first order every
point ``s`` (platform frame) moves by ``d + theta x s``, so with ``m``, ``h`` and ``I`` the
body's mass, first moment and inertia about the platform origin (platform axes) at its
mean place, the internal-motion model of rigtool.identify.posture.breathing holds with
terms fixed by the body's own parameters instead of free ones::

    G u  = m d + theta x h                      (the first moment's change)
    K u' = h x d' + I theta'                    (the angular momentum of the motion)
    D u  = 2 (h.d) 1 - h d^T - d h^T + [theta x] I - I [theta x]   (the inertia's change)

Each of ``G``, ``K``, ``D`` is linear in ``pi = [m, h, I]``, so the wrench of the moving body
stays linear in the body's ten parameters: ``Y pi + C(u) B pi`` with ``C`` the internal
columns and ``B`` the map of this module. The fit gains no unknown: the support is measured
through, with no stiffness or damping to identify, and the body's parameters are its own at
its mean place (the mean mass distribution). Left out: second-order terms in ``u`` (a
millimetre's motion moves the wrench by ~1e-3 of itself).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rigtool.config import FilterSettings
from rigtool.identify.common.platform_motion import CaptureMotion
from rigtool.identify.posture.breathing import internal_columns
from rigtool.inertia import skew
from rigtool.kinematics.motion import motion_from_pose
from rigtool.kinematics.pose import BodyTrajectory, body_trajectory
from rigtool.kinematics.support_motion import PoseSeries, SupportMotion, measure_support
from rigtool.mocap import MarkerData

__all__ = ["rigid_motion_map", "support_columns", "with_support_probes", "N_SUPPORT"]

#: the support's coordinates: ``d`` (3, m) and ``theta`` (3, rad)
N_SUPPORT = 6


def _six(m: np.ndarray) -> np.ndarray:
    """``[xx, xy, xz, yy, yz, zz]`` of a symmetric 3x3 (rigtool.inertia's order)."""
    return m[np.triu_indices(3)]


def _beta_of(pi: np.ndarray) -> np.ndarray:
    """The internal-motion unknowns ``[G columns, K columns, D_j]`` of a rigid body ``pi``
    (platform frame, about its origin) moved by ``u = [d, theta]``."""
    m, h = pi[0], pi[1:4]
    i6 = pi[4:10]
    inertia = np.array([[i6[0], i6[1], i6[2]], [i6[1], i6[3], i6[4]], [i6[2], i6[4], i6[5]]])
    eye = np.eye(3)
    g = np.concatenate([m * eye, -skew(h)], axis=1)                 # [3, 6]
    k = np.concatenate([skew(h), inertia], axis=1)                  # [3, 6]
    d = [_six(2 * h[j] * eye - np.outer(h, e) - np.outer(e, h)) for j, e in enumerate(eye)]
    d += [_six(skew(e) @ inertia - inertia @ skew(e)) for e in eye]
    return np.concatenate([g.T.ravel(), k.T.ravel(), np.concatenate(d)])


def rigid_motion_map() -> np.ndarray:
    """``B [12 N_SUPPORT, 10]``: the internal-motion unknowns of a rigid body moved by
    ``u = [d, theta]``, linear in its parameters ``pi`` (platform frame, about its origin)."""
    return np.stack([_beta_of(e) for e in np.eye(10)], axis=1)


def support_columns(u: np.ndarray, u_d: np.ndarray, u_dd: np.ndarray,
                    accel_minus_gravity_body: np.ndarray, omega_body: np.ndarray,
                    omega_dot_body: np.ndarray) -> np.ndarray:
    """The moving body's extra wrench per unit of its parameters, ``[T, 6, 10]``.

    ``wrench += support_columns(...) @ pi`` (platform components, about its origin; ``pi``
    the body's parameters in the platform frame about its origin), with ``u = [d, theta]``
    and its derivatives ``[T, 6]`` and the platform's ``a - g``, ``w``, ``w'`` in platform
    components.
    """
    cols = internal_columns(u, u_d, u_dd, accel_minus_gravity_body, omega_body,
                            omega_dot_body)
    return cols @ rigid_motion_map()


def with_support_probes(support: SupportMotion, cap: CaptureMotion, body: BodyTrajectory,
                        body_markers: dict[str, np.ndarray], settings: FilterSettings, *,
                        base_rotation_platform: np.ndarray,
                        base_position_platform: np.ndarray, frames: np.ndarray | None,
                        seed: int = 1) -> SupportMotion:
    """``support`` with one measurement per noise probe of ``cap``
    (rigtool.identify.common.platform_motion.with_noise_probes).

    The support's coordinates are as noisy as the regressor's other columns and enter it
    the same way, so the bias compensation must see their noise too: the body's markers are
    rebuilt noise-free from its filtered pose, given fresh white noise of the capture's
    marker noise level (none on the clean probe), posed again and measured against the
    probe's platform pose, which carries that probe's own noise.
    """
    if not cap.noise_probes:
        return support
    rate = 1.0 / float(np.median(np.diff(cap.time_s)))
    motion = motion_from_pose(body, settings, rate_hz=rate)
    names = list(body_markers)
    local = np.stack([body_markers[n] for n in names])
    clean = np.einsum("tij,kj->tki", motion.rotation, local) + motion.position_m[:, None, :]
    rng = np.random.default_rng(seed)
    probes = []
    for k, probe in enumerate(cap.noise_probes):
        xyz = clean if k == 0 else clean + rng.normal(0.0, cap.marker_sigma_m, clean.shape)
        data = MarkerData(time_s=cap.time_s, names=tuple(names), xyz_m=xyz, rate_hz=rate,
                          source=cap.path)
        body_k = body_trajectory(data, body_markers)
        plat_k = PoseSeries(probe.rotation_raw, probe.position_raw, probe.valid)
        probes.append(measure_support(plat_k, body_k, base_rotation_platform,
                                      base_position_platform, cap.time_s, frames=frames))
    return replace(support, probes=tuple(probes))
