"""The locked object's motion on the platform, as its markers measure it.

A person lies on the soft tissue of the back (or a mattress): with the joints locked the
body is still one rigid body, but it rides on its own damped springs on the deck and moves
on the platform by a fraction of a millimetre in step with the platform's vibration. The
body's pose on the platform (in the base link's frame; both poses from their own markers by
SVD, per frame) against its mean place ``(R0, t0)`` gives that motion as a small rigid displacement: every
point ``s`` of the body (platform frame) is carried to ``s + d + theta x s``, with
``theta`` the rotation vector of ``R R0^T`` and ``d = t - R R0^T t0`` (platform axes, m and
rad). The posture fits take ``u = [d, theta]`` as a prescribed motion of the body
(rigtool.identify.posture.support); here only the measurement.

With the joints locked every link's markers belong to the one rigid body: the body's pose
is fitted to all of them (:func:`locked_body_trajectory`), which spans the body and halves
the rotation's noise against the base link's cluster alone (the rocking on the support is
most of the motion, and its rotation's noise biases the fit as an error in its variables).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.kinematics.filtering import derivative, fill_gaps
from rigtool.kinematics.pose import BodyTrajectory, body_trajectory
from rigtool.mocap import MarkerData

__all__ = ["SupportMotion", "PoseSeries", "measure_support", "locked_body_trajectory"]


@dataclass(frozen=True)
class SupportMotion:
    """The body's small rigid motion on the platform over one capture.

    Attributes
    ----------
    time_s : ndarray (T,)
    u_frames : ndarray (T, 6)
        ``[d (m), theta (rad)]`` per frame, platform axes (NaN where either body is unseen).
    rms : ndarray (6,)
        RMS of each coordinate over the fitted frames (m, rad).
    """

    time_s: np.ndarray
    u_frames: np.ndarray
    rms: np.ndarray
    #: the same measurement on noise probes of the capture (clean, then noisy copies;
    #: rigtool.identify.posture.support.with_support_probes), for bias compensation
    probes: tuple = ()

    def filtered(self, filt, rate_hz: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``u, u', u''`` at the frames as an equation-error fit takes them: short gaps
        filled, through the capture's zero-phase filter ``filt`` and its 7-point stencils
        (the platform's pose goes the same way, so both sides of the equations see the same
        filter); zero where undefined."""
        filled, _ = fill_gaps(np.asarray(self.u_frames, float), rate_hz=rate_hz)
        u_f = filt(filled)
        return tuple(np.nan_to_num(v) for v in (u_f, derivative(u_f, rate_hz, 1),
                                                derivative(u_f, rate_hz, 2)))

    def summary(self) -> dict:
        """What the report says about the measurement."""
        return {"translation_rms_mm": (1e3 * self.rms[:3]).tolist(),
                "rotation_rms_mrad": (1e3 * self.rms[3:]).tolist()}


@dataclass(frozen=True)
class PoseSeries:
    """A body's pose per frame: ``rotation [T, 3, 3]`` (body -> lab), ``position_m [T, 3]``
    and ``valid [T]`` (a :class:`~rigtool.kinematics.pose.BodyTrajectory` or a noise
    probe's pose)."""

    rotation: np.ndarray
    position_m: np.ndarray
    valid: np.ndarray


def measure_support(platform: BodyTrajectory | PoseSeries, base: BodyTrajectory | PoseSeries,
                    base_rotation_platform: np.ndarray, base_position_platform: np.ndarray,
                    time_s: np.ndarray, *, frames: np.ndarray | None = None) -> SupportMotion:
    """The base link's small rigid motion on the platform about its mean place.

    Parameters
    ----------
    platform, base : BodyTrajectory
        The platform's and the base link's poses from their markers.
    base_rotation_platform, base_position_platform : ndarray
        The base link's mean place on the platform ``(R0, t0)``.
    time_s : ndarray (T,)
        The capture's frame times, s.
    frames : ndarray of int, optional
        The frames the fit uses (the RMS is taken over them); default all.
    """
    ok = (platform.valid & base.valid & np.all(np.isfinite(platform.position_m), 1)
          & np.all(np.isfinite(base.position_m), 1))
    eye = np.eye(3)
    rp = np.where(ok[:, None, None], platform.rotation, eye)
    rb = np.where(ok[:, None, None], base.rotation, eye)
    r_rel = np.einsum("tji,tjk->tik", rp, rb)                          # Rp^T Rb
    p_rel = np.einsum("tji,tj->ti", rp, np.where(ok[:, None], base.position_m
                                                  - platform.position_m, 0.0))
    r_delta = r_rel @ np.asarray(base_rotation_platform, float).T
    theta = Rotation.from_matrix(r_delta).as_rotvec()
    d = p_rel - r_delta @ np.asarray(base_position_platform, float)
    u = np.where(ok[:, None], np.concatenate([d, theta], axis=1), np.nan)
    use = np.zeros(len(ok), bool)
    use[np.arange(len(ok)) if frames is None else frames] = True
    use &= ok
    u = np.where(ok[:, None], u - u[use].mean(axis=0), np.nan)
    rms = np.sqrt(np.mean(u[use] ** 2, axis=0))
    return SupportMotion(np.asarray(time_s, float), u, rms)


def locked_body_trajectory(data: MarkerData, link_trajectories: dict[str, BodyTrajectory],
                           base: str, frames: np.ndarray | None = None
                           ) -> tuple[BodyTrajectory, dict[str, np.ndarray]]:
    """The locked body's pose from every link's markers, in the base link's frame, and the
    markers' places in that frame.

    Each marker's place in the base link's frame is its mean over ``frames`` (default all)
    of ``R_b^T (x - p_b)``, the base link's pose from its own markers; the body's pose per
    frame is then the SVD fit to all of them.
    """
    b = link_trajectories[base]
    names = [n for t in link_trajectories.values() for n in t.marker_names]
    xyz = data.select(names)                                      # [T, M, 3]
    use = np.zeros(data.n_frames, bool)
    use[np.arange(data.n_frames) if frames is None else frames] = True
    use &= b.valid
    rel = xyz[use] - b.position_m[use, None, :]
    in_base = np.einsum("tji,tmj->tmi", b.rotation[use], rel)
    places = np.nanmean(in_base, axis=0)
    keep = np.all(np.isfinite(places), axis=1)
    body = {n: places[i] for i, n in enumerate(names) if keep[i]}
    return body_trajectory(data, body), body
