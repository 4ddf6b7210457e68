"""The error structure of tracked tag corners, without rendering video.

``rigtool track`` places every corner of a body from one pose per frame (solvePnP refined by
Levenberg-Marquardt, rigtool.camera.pnp), so a frame's corner errors of one body are the
images of one six-number pose error: correlated, rank 6. This module gives that pose's
Gauss-Newton covariance for a body seen by a camera (``sigma_px^2 (J^T J)^-1``, ``J`` the
reprojection Jacobian of its corners, as the tracker computes it), draws pose errors from
it, and maps them to the corners' lab-frame errors and to the per-corner covariance the
side file ``OUT.residuals.csv`` holds. For benchmarks and tests of the fits that use such
captures (rigtool.identify.posture.cluster_covariance).

Conventions: :mod:`rigtool.camera` (``X_cam = R_cl x_lab + t_cl``; pose errors ``[d rvec
(3), d tvec (3)]`` of the body -> camera pose, OpenCV's order); frames first; m, px.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.camera.model import CameraModel
from rigtool.camera.pnp import corner_covariance_unit, left_jacobian_so3, reprojection


@dataclass(frozen=True)
class BodyPoseNoise:
    """One body's tracked-pose noise over a capture.

    Attributes
    ----------
    rvec : ndarray (T, 3)
        Body -> camera rotation vectors.
    pose_cov : ndarray (T, 6, 6)
        Covariance of ``[d rvec, d tvec]`` (rad, m) per frame.
    corner_jac_lab : ndarray (T, K, 3, 6)
        Lab-frame corner displacement per unit pose error.
    corner_cov_lab_m2 : ndarray (T, K, 3, 3)
        Each corner's marginal covariance (lab, m^2): what the side file holds.
    """

    rvec: np.ndarray
    pose_cov: np.ndarray
    corner_jac_lab: np.ndarray
    corner_cov_lab_m2: np.ndarray


def body_pose_noise(camera: CameraModel, rotation_cam_lab: np.ndarray,
                    translation_cam_lab_m: np.ndarray, rotation_lab: np.ndarray,
                    position_lab_m: np.ndarray, points_body_m: np.ndarray, /, *,
                    sigma_px: float) -> BodyPoseNoise:
    """The tracker's pose covariance of a body along its motion, and its corners'.

    Parameters
    ----------
    camera : CameraModel
        Intrinsics and distortion.
    rotation_cam_lab, translation_cam_lab_m : ndarray
        The camera's pose, ``X_cam = R x_lab + t``.
    rotation_lab, position_lab_m : ndarray (T, 3, 3), (T, 3)
        The body's pose in the lab per frame.
    points_body_m : ndarray (K, 3)
        Its tag corners in the body frame (all seen).
    sigma_px : float
        Image noise per corner coordinate, px.

    Returns
    -------
    BodyPoseNoise
    """
    if not sigma_px > 0:
        raise ValueError(f"sigma_px must be positive, got {sigma_px}")
    pts = np.asarray(points_body_m, float)
    r_cb = np.einsum("ij,tjk->tik", rotation_cam_lab, rotation_lab)
    t_cb = position_lab_m @ np.asarray(rotation_cam_lab).T + translation_cam_lab_m
    rvec = Rotation.from_matrix(r_cb).as_rotvec()
    jtj = np.empty((len(rvec), 6, 6))
    for t in range(len(rvec)):
        img, _ = reprojection(pts, np.zeros((len(pts), 2)), camera, rvec[t], t_cb[t])
        _, jac = reprojection(pts, img, camera, rvec[t], t_cb[t])
        jtj[t] = jac.T @ jac
    pose_cov = sigma_px ** 2 * np.linalg.inv(jtj)
    lever = np.einsum("tij,kj->tki", r_cb, pts)
    skew = np.zeros(lever.shape + (3,))
    skew[..., 0, 1], skew[..., 0, 2], skew[..., 1, 2] = -lever[..., 2], lever[..., 1], -lever[..., 0]
    skew -= np.swapaxes(skew, -1, -2)
    d_rot = -skew @ left_jacobian_so3(rvec)[:, None]
    g_cam = np.concatenate([d_rot, np.broadcast_to(np.eye(3), d_rot.shape)], axis=-1)
    g_lab = np.einsum("ji,tkjp->tkip", rotation_cam_lab, g_cam)
    c_cam = sigma_px ** 2 * corner_covariance_unit(rvec, jtj, pts, r_cb)
    c_lab = np.einsum("ai,tkab,bj->tkij", rotation_cam_lab, c_cam, rotation_cam_lab)
    return BodyPoseNoise(rvec, pose_cov, g_lab, c_lab)


def draw_corner_errors(noise: BodyPoseNoise, rng: np.random.Generator, /, *,
                       corner_sigma_m: float = 0.0, ar1: float = 0.0) -> np.ndarray:
    """Lab-frame corner errors ``[T, K, 3]`` (m): one pose error per frame from
    ``pose_cov`` applied to every corner, plus independent isotropic per-corner noise of
    ``corner_sigma_m``. ``ar1``: the pose errors' correlation from one frame to the next
    (a first-order autoregression with the same marginal covariance; 0: independent)."""
    if not -1.0 < ar1 < 1.0:
        raise ValueError(f"ar1 must lie in (-1, 1), got {ar1}")
    t_n, k_n = noise.corner_jac_lab.shape[:2]
    white = rng.normal(size=(t_n, 6))
    if ar1:
        for t in range(1, t_n):
            white[t] = ar1 * white[t - 1] + np.sqrt(1.0 - ar1 ** 2) * white[t]
    delta = np.einsum("tij,tj->ti", np.linalg.cholesky(noise.pose_cov), white)
    err = np.einsum("tkip,tp->tki", noise.corner_jac_lab, delta)
    if corner_sigma_m:
        err = err + corner_sigma_m * rng.normal(size=(t_n, k_n, 3))
    return err


__all__ = ["BodyPoseNoise", "body_pose_noise", "draw_corner_errors"]
