"""A rigid body's pose from its tags' corners in one image, and how well it is known.

The pose ``X_cam = R(rvec) x_body + tvec`` is found by ``cv2.solvePnP`` (SQPnP, IPPE when
that fails and the corners lie in one plane; or the iterative solver from the previous
frame's pose) and
refined by ``cv2.solvePnPRefineLM`` (Levenberg-Marquardt on the reprojection error of all
visible corners). Its covariance is the Gauss-Newton one, ``sigma_px^2 (J^T J)^-1``, with
``J = d(u, v) / d(rvec, tvec)`` from ``cv2.projectPoints``; a corner's covariance in the
camera frame follows by the chain rule (:func:`corner_covariance_unit`). A single camera
sees depth far worse than the image plane, and that covariance says by how much.

Conventions: see :mod:`rigtool.camera`. Vectorised functions take frames first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.camera.model import CameraModel


@dataclass(frozen=True)
class PoseFit:
    """One body's pose in one frame.

    Attributes
    ----------
    rvec, tvec : ndarray (3,)
        Rotation vector (rad) and translation (m): body frame -> camera frame.
    jtj : ndarray (6, 6)
        ``J^T J`` of the reprojection residuals with respect to ``(rvec, tvec)``, px^2 per
        unit; the pose covariance is ``sigma_px^2 inv(jtj)``.
    ssr_px2 : float
        Sum of squared reprojection residuals (both image coordinates), px^2.
    n_points : int
        Corners used.
    tag_ids : tuple of int
        The tags used.
    """

    rvec: np.ndarray
    tvec: np.ndarray
    jtj: np.ndarray
    ssr_px2: float
    n_points: int
    tag_ids: tuple[int, ...]

    @property
    def rms_px(self) -> float:
        """RMS reprojection residual per image coordinate, px."""
        return float(np.sqrt(self.ssr_px2 / (2 * self.n_points)))


def _is_planar(points: np.ndarray) -> bool:
    centred = points - points.mean(axis=0)
    sv = np.linalg.svd(centred, compute_uv=False)
    return bool(sv[-1] <= 1e-6 * max(sv[0], 1e-12))


def reprojection(object_pts: np.ndarray, image_pts: np.ndarray, camera: CameraModel,
                 rvec: np.ndarray, tvec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Residuals ``[n, 2]`` (projected - measured, px) and their Jacobian ``[2n, 6]`` with
    respect to ``(rvec, tvec)``."""
    import cv2

    proj, jac = cv2.projectPoints(object_pts, rvec, tvec, camera.matrix, camera.distortion)
    return proj.reshape(-1, 2) - image_pts, jac[:, :6]


def fit_pose(object_pts: np.ndarray, image_pts: np.ndarray, camera: CameraModel, *,
             guess: tuple[np.ndarray, np.ndarray] | None = None
             ) -> tuple[np.ndarray, np.ndarray] | None:
    """Pose ``(rvec, tvec)`` of a body from ``n >= 4`` corners, or None when the solvers fail.

    Parameters
    ----------
    object_pts : ndarray (n, 3)
        Corners in the body frame, m.
    image_pts : ndarray (n, 2)
        Their measured pixels.
    camera : CameraModel
    guess : tuple, optional
        A nearby pose (the previous frame's): the iterative solver starts from it.
    """
    import cv2

    obj = np.ascontiguousarray(object_pts, dtype=np.float64)
    img = np.ascontiguousarray(image_pts, dtype=np.float64)
    if guess is not None:
        ok, rvec, tvec = cv2.solvePnP(obj, img, camera.matrix, camera.distortion,
                                      np.array(guess[0], dtype=np.float64).reshape(3, 1),
                                      np.array(guess[1], dtype=np.float64).reshape(3, 1),
                                      useExtrinsicGuess=True, flags=cv2.SOLVEPNP_ITERATIVE)
    else:
        # The global solvers start from the corners' centroid: OpenCV's IPPE and EPnP
        # returned wrong poses for a board whose plane is far from the body origin.
        centre = obj.mean(axis=0)
        ok, rvec, tvec = False, None, None
        for flag in (cv2.SOLVEPNP_SQPNP, cv2.SOLVEPNP_IPPE):
            if flag == cv2.SOLVEPNP_IPPE and not _is_planar(obj):
                continue
            ok, rvec, tvec = cv2.solvePnP(obj - centre, img, camera.matrix, camera.distortion,
                                          flags=flag)
            if ok:
                rot, _ = cv2.Rodrigues(rvec)
                tvec = tvec - rot @ centre.reshape(3, 1)
                break
    if not ok or not np.all(np.isfinite(rvec)) or not np.all(np.isfinite(tvec)):
        return None
    crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)
    rvec, tvec = cv2.solvePnPRefineLM(obj, img, camera.matrix, camera.distortion, rvec, tvec,
                                      crit)
    if float(tvec[2, 0]) <= 0:
        return None
    return rvec.ravel(), tvec.ravel()


def body_pose(object_pts_by_tag: dict[int, np.ndarray], image_pts_by_tag: dict[int, np.ndarray],
              camera: CameraModel, *, guess: tuple[np.ndarray, np.ndarray] | None = None,
              max_tag_rms_px: float = 1.0) -> PoseFit | None:
    """Fit a body's pose from its visible tags, dropping a tag that does not fit.

    A tag whose corners' RMS residual exceeds ``max_tag_rms_px`` after the fit (a wrong
    detection, a tag peeled off or bent) is dropped and the pose fitted again, one tag at
    a time, while at least one tag remains.

    Parameters
    ----------
    object_pts_by_tag : dict
        Tag id -> its corners ``[4, 3]`` in the body frame, m.
    image_pts_by_tag : dict
        Tag id -> its measured corners ``[4, 2]``, px (only the visible tags).
    camera : CameraModel
    guess : tuple, optional
        The previous frame's ``(rvec, tvec)``.
    max_tag_rms_px : float
        Per-tag RMS residual above which the worst tag is dropped, px.

    Returns
    -------
    PoseFit or None
        None when no tag is visible or the solvers fail.
    """
    ids = [i for i in image_pts_by_tag if i in object_pts_by_tag]
    while ids:
        obj = np.concatenate([object_pts_by_tag[i] for i in ids])
        img = np.concatenate([image_pts_by_tag[i] for i in ids])
        pose = fit_pose(obj, img, camera, guess=guess)
        if pose is None and guess is not None:
            pose = fit_pose(obj, img, camera)
        if pose is None:
            return None
        res, jac = reprojection(obj, img, camera, *pose)
        per_tag = np.sqrt((res.reshape(len(ids), 4, 2) ** 2).mean(axis=(1, 2)))
        worst = int(np.argmax(per_tag))
        if per_tag[worst] > max_tag_rms_px and len(ids) > 1:
            ids.pop(worst)
            continue
        if per_tag[worst] > max_tag_rms_px:
            return None
        return PoseFit(pose[0], pose[1], jac.T @ jac, float((res ** 2).sum()), len(obj),
                       tuple(ids))
    return None


def _skew(v: np.ndarray) -> np.ndarray:
    out = np.zeros(v.shape + (3,))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def left_jacobian_so3(rvec: np.ndarray) -> np.ndarray:
    """``J_l`` ``[..., 3, 3]``: ``exp([rvec + d]x) = exp([J_l d]x) exp([rvec]x)`` to first
    order (so ``d(R x)/d rvec = -[R x]x J_l``)."""
    rvec = np.asarray(rvec, dtype=np.float64)
    theta = np.linalg.norm(rvec, axis=-1)[..., None, None]
    k = _skew(rvec)
    small = theta < 1e-8
    th = np.where(small, 1.0, theta)
    a = np.where(small, 0.5, (1.0 - np.cos(th)) / th ** 2)
    b = np.where(small, 1.0 / 6.0, (th - np.sin(th)) / th ** 3)
    return np.eye(3) + a * k + b * (k @ k)


def corner_covariance_unit(rvec: np.ndarray, jtj: np.ndarray, points_body_m: np.ndarray,
                           rotation_body: np.ndarray | None = None) -> np.ndarray:
    """Covariance ``[F, K, 3, 3]`` (m^2 per px^2 of image noise) of corners in the camera
    frame, from the pose covariance ``inv(jtj)`` of each frame.

    Parameters
    ----------
    rvec : ndarray (F, 3)
        Body -> camera rotation vectors.
    jtj : ndarray (F, 6, 6)
        ``J^T J`` of each frame's fit (:class:`PoseFit`).
    points_body_m : ndarray (K, 3)
        Corners in the body frame.
    rotation_body : ndarray (F, 3, 3), optional
        ``R(rvec)`` when already computed.

    Returns
    -------
    ndarray (F, K, 3, 3)
        Multiply by the image noise variance (px^2) for the covariance in m^2.
    """
    from scipy.spatial.transform import Rotation

    rvec = np.asarray(rvec, dtype=np.float64).reshape(-1, 3)
    rot = Rotation.from_rotvec(rvec).as_matrix() if rotation_body is None else rotation_body
    cov_pose = np.linalg.inv(jtj)                                         # [F, 6, 6]
    lever = np.einsum("fij,kj->fki", rot, points_body_m)                  # R x  [F, K, 3]
    d_rot = -_skew(lever) @ left_jacobian_so3(rvec)[:, None]              # [F, K, 3, 3]
    g = np.concatenate([d_rot, np.broadcast_to(np.eye(3), d_rot.shape)], axis=-1)  # [F,K,3,6]
    return np.einsum("fkia,fab,fkjb->fkij", g, cov_pose, g)
