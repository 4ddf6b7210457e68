"""Markers rigidly attached to the platform at unknown places: a locked object's own markers
in the output-error posture fit.

In a locked posture every marker on the object moves with the platform. Their positions on
the platform are not known in advance (the posture is measured, not set), so each is a
nuisance unknown of the fit: three coordinates per free marker, or, for the base link's
markers, whose positions in the base-link frame are defined, the base link's pose on the
platform (six numbers for the whole cluster). Given the platform's simulated trajectory the
maximum-likelihood values of those unknowns are closed-form (the mean platform-frame position
of a free marker; the rigid fit of the base-link cluster to its markers' means) and are
eliminated: every simulated trajectory places the markers at their best positions for it
(variable projection, :func:`placed_positions`), and the fit of the dynamics alone reaches
the joint maximum-likelihood estimate (rigtool.identify.posture.output_error.refine_posture).

Their uncertainty enters through the Fisher information of the joint problem: the columns of
a marker's position are ``1e3 R_t`` (mm per m) on that marker's rows, so the cross blocks
with the dynamics' Jacobian are sums over frames (:func:`position_products`) and the
position-position blocks are ``1e6 n_k I`` (:func:`joint_information`). The base-link
cluster's positions are ``c_i = R_pb d_i + t_pb`` with ``R_pb = R_hat exp([delta x])``, so its
six columns are those of its markers times ``[I, -R_hat [d_i x]]``.

Noise that is not isotropic (a camera's corners, rigtool.engine.whiten): with whitening
factors ``W_tk`` (1/mm) the rows are ``W_tk r_tk``, a free marker's best place is the
information-weighted mean ``q_k = A_k^-1 sum_t R_t^T W^T W (y_tk - p_t)`` with
``A_k = sum_t R_t^T W_tk^T W_tk R_t``, the base cluster's pose minimises
``sum_k (c_k - q_k)^T A_k (c_k - q_k)`` (Gauss-Newton from the Kabsch fit), its columns
are ``1e3 W_tk R_t`` and the position-position blocks ``1e6 A_k``. Without factors every
function is as before (the isotropic fit, in mm).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.kinematics.pose import kabsch


@dataclass(frozen=True)
class AttachedPositions:
    """Platform-frame positions of the attached markers at the current trajectory.

    ``positions_m [E, 3]`` in the fit's marker order (base-link markers first);
    ``scatter_mm [E]``: RMS distance of each marker from its position over the frames it is
    seen (marker noise when it is rigidly attached); ``base_rotation``/``base_position_m``:
    the base link's pose on the platform (None without base-link markers).
    """

    positions_m: np.ndarray
    scatter_mm: np.ndarray
    base_rotation: np.ndarray | None
    base_position_m: np.ndarray | None


def _mean_positions(rot_lab: np.ndarray, pos_lab_m: np.ndarray, xyz_lab_m: np.ndarray,
                    seen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean [B, E, 3], local [T, B, E, 3])``: platform-frame positions of the markers per
    frame under each of ``B`` trajectories (``R [T, B, 3, 3]``, ``p [T, B, 3]``) and their
    means over the frames each marker is seen."""
    local = np.einsum("tbji,tbkj->tbki", rot_lab,
                      xyz_lab_m[:, None, :, :] - pos_lab_m[:, :, None, :])
    w = seen[:, None, :, None]
    mean = np.where(w, local, 0.0).sum(0) / np.maximum(seen.sum(0), 1)[None, :, None]
    return mean, local


def _place_base_cluster(mean: np.ndarray, seen: np.ndarray,
                        base_markers_link: np.ndarray | None):
    """``(positions [B, E, 3], R [B, 3, 3] | None, t [B, 3] | None)``: the means ``[B, E, 3]``
    with the first ``n_b`` replaced by the base cluster placed by its rigid fit to them
    (weights: frames seen), per member."""
    if base_markers_link is None or len(base_markers_link) == 0:
        return mean, None, None
    nb = len(base_markers_link)
    defs = np.asarray(base_markers_link, float)
    w = np.broadcast_to(seen[:, :nb].sum(0).astype(float), (mean.shape[0], nb))
    rot, pos = kabsch(mean[:, :nb], defs, w)            # batched over the members
    placed = mean.copy()
    placed[:, :nb] = np.einsum("bij,kj->bki", rot, defs) + pos[:, None, :]
    return placed, rot, pos


def _weighted_positions(rot_lab: np.ndarray, pos_lab_m: np.ndarray, xyz_lab_m: np.ndarray,
                        whiten: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(q [B, E, 3], A [B, E, 3, 3])``: information-weighted platform-frame positions of
    the markers under each of ``B`` trajectories and their information ``A_k = sum_t R^T
    W^T W R`` (1/mm^2; ``whiten [T, E, 3, 3]``, zero where unseen)."""
    q_lab = np.einsum("teji,tejk->teik", whiten, whiten)           # W^T W, [T, E, 3, 3]
    info = np.einsum("tbji,tejk,tbkl->beil", rot_lab, q_lab, rot_lab)
    rhs = np.einsum("tbji,tejk,tbek->bei", rot_lab, q_lab,
                    xyz_lab_m[:, None, :, :] - pos_lab_m[:, :, None, :])
    return np.linalg.solve(info, rhs[..., None])[..., 0], info


def _place_base_weighted(q: np.ndarray, info: np.ndarray, seen: np.ndarray,
                         base_markers_link: np.ndarray | None, iterations: int = 6):
    """As :func:`_place_base_cluster` with matrix weights ``info [B, E, 3, 3]``: the base
    cluster's pose minimising ``sum_k (R d_k + t - q_k)^T A_k (R d_k + t - q_k)``
    (Gauss-Newton from the Kabsch fit weighted by ``tr A_k``)."""
    if base_markers_link is None or len(base_markers_link) == 0:
        return q, None, None
    nb = len(base_markers_link)
    defs = np.asarray(base_markers_link, float)
    a_k = info[:, :nb]
    rot, pos = kabsch(q[:, :nb], defs, np.trace(a_k, axis1=-2, axis2=-1))
    for _ in range(iterations):
        cols = np.stack([pose_columns(defs, r) for r in rot])          # [B, nb, 3, 6]
        e = np.einsum("bij,kj->bki", rot, defs) + pos[:, None, :] - q[:, :nb]
        hess = np.einsum("bkip,bkij,bkjq->bpq", cols, a_k, cols)
        grad = np.einsum("bkip,bkij,bkj->bp", cols, a_k, e)
        step = -np.linalg.solve(hess, grad[..., None])[..., 0]
        pos = pos + step[:, :3]
        rot = rot @ _expm_so3(step[:, 3:])
        if np.abs(step).max() < 1e-15:
            break
    placed = q.copy()
    placed[:, :nb] = np.einsum("bij,kj->bki", rot, defs) + pos[:, None, :]
    return placed, rot, pos


def _expm_so3(w: np.ndarray) -> np.ndarray:
    """``exp([w x]) [B, 3, 3]`` of rotation vectors ``w [B, 3]``."""
    from scipy.spatial.transform import Rotation
    return Rotation.from_rotvec(w).as_matrix().reshape(-1, 3, 3)


def placed_positions(rot_lab: np.ndarray, pos_lab_m: np.ndarray, xyz_lab_m: np.ndarray,
                     seen: np.ndarray, base_markers_link: np.ndarray | None,
                     whiten: np.ndarray | None = None) -> np.ndarray:
    """Maximum-likelihood platform-frame positions ``[B, E, 3]`` of the attached markers
    under each of ``B`` simulated trajectories (``R [T, B, 3, 3]``, ``p [T, B, 3]``; markers
    ``xyz_lab_m [T, E, 3]`` seen where ``seen [T, E]``): each free marker at its mean, the
    first ``n_b`` placed as the base cluster's rigid fit to their means (weights: frames
    seen). With whitening factors ``whiten [T, E, 3, 3]`` (zero where unseen) the means and
    the fit are weighted by the markers' information instead."""
    if whiten is not None:
        q, info = _weighted_positions(rot_lab, pos_lab_m, xyz_lab_m, whiten)
        return _place_base_weighted(q, info, seen, base_markers_link)[0]
    mean, _ = _mean_positions(rot_lab, pos_lab_m, xyz_lab_m, seen)
    return _place_base_cluster(mean, seen, base_markers_link)[0]


def platform_frame_positions(rot_lab: np.ndarray, pos_lab_m: np.ndarray, xyz_lab_m: np.ndarray,
                             seen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean platform-frame position ``[E, 3]`` (m) of markers ``xyz_lab_m [T, E, 3]`` seen
    where ``seen [T, E]``, given the platform's pose ``R_t [T, 3, 3]``, ``p_t [T, 3]``, and
    each marker's RMS scatter about it (mm)."""
    mean, local = _mean_positions(rot_lab[:, None], pos_lab_m[:, None], xyz_lab_m, seen)
    dev2 = np.where(seen, ((local[:, 0] - mean[0]) ** 2).sum(-1), 0.0).sum(0)
    return mean[0], 1e3 * np.sqrt(dev2 / np.maximum(seen.sum(0), 1))


def attached_positions(rot_lab: np.ndarray, pos_lab_m: np.ndarray, xyz_lab_m: np.ndarray,
                       seen: np.ndarray, base_markers_link: np.ndarray | None,
                       whiten: np.ndarray | None = None) -> AttachedPositions:
    """Maximum-likelihood positions of the attached markers given the platform trajectory.

    Parameters
    ----------
    rot_lab, pos_lab_m : ndarray
        Platform pose per frame ``[T, 3, 3]``, ``[T, 3]`` (lab, m).
    xyz_lab_m : ndarray, shape (T, E, 3)
        The attached markers, base-link markers first (anything finite where unseen).
    seen : ndarray, shape (T, E)
    base_markers_link : ndarray (n_b, 3) or None
        Base-link-frame coordinates of the first ``n_b`` markers; their positions are then
        the base cluster placed by its rigid fit (weights: frames seen).
    whiten : ndarray (T, E, 3, 3), optional
        The markers' whitening factors (1/mm, zero where unseen): positions and pose
        weighted by their information (``scatter_mm`` stays the plain RMS scatter).
    """
    xyz = np.where(seen[..., None], xyz_lab_m, 0.0)
    mean, scatter = platform_frame_positions(rot_lab, pos_lab_m, xyz, seen)
    if whiten is not None:
        q, info = _weighted_positions(rot_lab[:, None], pos_lab_m[:, None], xyz, whiten)
        placed, rot, pos = _place_base_weighted(q, info, seen, base_markers_link)
    else:
        placed, rot, pos = _place_base_cluster(mean[None], seen, base_markers_link)
    if rot is None:
        return AttachedPositions(placed[0], scatter, None, None)
    return AttachedPositions(placed[0], scatter, rot[0], pos[0])


def position_products(rows: np.ndarray, mask: np.ndarray, rot_lab: np.ndarray,
                      attached: np.ndarray, whiten: np.ndarray | None = None) -> np.ndarray:
    """``[E, 3, n]``: for each attached marker ``k``, ``sum_t (1e3 R_t)^T A[rows(t, k)]``,
    the products of its position's columns (mm per m) with the columns of ``rows [M, n]``,
    whose rows follow ``mask [T, K]`` (frame-major, 3 per seen marker, as
    rigtool.engine.markers.marker_rows orders them). ``attached``: the marker
    indices (in ``K``) of the attached markers. With whitening factors ``whiten [T, K, 3,
    3]`` (``rows`` whitened rows) the columns are the whitened ``1e3 W_tk R_t``."""
    t_n, k_n = mask.shape
    full = np.zeros((t_n, k_n, 3, rows.shape[1]))
    full[mask] = rows.reshape(-1, 3, rows.shape[1])
    part = full[:, attached]
    if whiten is not None:
        part = np.einsum("tkji,tkjn->tkin", whiten[:t_n, attached], part)
    return 1e3 * np.einsum("tji,tkjn->kin", rot_lab[:t_n], part)


def position_information(mask: np.ndarray, rot_lab: np.ndarray, attached: np.ndarray,
                         whiten: np.ndarray) -> np.ndarray:
    """``A_k = sum_t R_t^T W_tk^T W_tk R_t`` ``[E, 3, 3]`` (1/mm^2) of the attached markers
    over the frames of ``mask [T, K]`` they are seen in (``whiten [T, K, 3, 3]``)."""
    t_n = mask.shape[0]
    w = np.where(mask[:, attached, None, None], whiten[:t_n, attached], 0.0)
    wr = np.einsum("tkij,tjl->tkil", w, rot_lab[:t_n])
    return np.einsum("tkij,tkil->kjl", wr, wr)


def pose_columns(base_markers_link: np.ndarray, base_rotation: np.ndarray) -> np.ndarray:
    """``[n_b, 3, 6]``: derivative of each base-link marker's platform position with respect
    to ``[t_pb (3), delta (3)]`` (``R_pb = R exp([delta x])``)."""
    d = np.asarray(base_markers_link, float)
    out = np.zeros((len(d), 3, 6))
    out[:, :, :3] = np.eye(3)
    skew = np.zeros((len(d), 3, 3))
    skew[:, 0, 1], skew[:, 0, 2], skew[:, 1, 2] = -d[:, 2], d[:, 1], -d[:, 0]
    skew -= np.swapaxes(skew, 1, 2)
    out[:, :, 3:] = -np.asarray(base_rotation, float) @ skew
    return out


def joint_information(jtj: np.ndarray, products: np.ndarray, n_seen: np.ndarray,
                      n_base: int, pose_cols: np.ndarray | None) -> np.ndarray:
    """Information matrix of ``[x (n), base pose (6, when n_base > 0), free markers' positions
    (3 each)]`` from the dynamics block ``jtj = J^T J`` (n x n), :func:`position_products` of
    ``J`` (``[E, 3, n]``), the frames each attached marker is seen (``n_seen [E]``; or, for
    whitened rows, each marker's information ``[E, 3, 3]`` from
    :func:`position_information`) and :func:`pose_columns` of the first ``n_base``
    markers."""
    if np.ndim(n_seen) == 3:
        return _joint_information_weighted(jtj, products, n_seen, n_base, pose_cols)
    n, e = jtj.shape[0], len(n_seen)
    n_free = e - n_base
    size = n + (6 if n_base else 0) + 3 * n_free
    info = np.zeros((size, size))
    info[:n, :n] = jtj
    if n_base:
        a = pose_cols                                       # [nb, 3, 6]
        cross = np.einsum("kin,kip->np", products[:n_base], a)
        info[:n, n:n + 6] = cross
        info[n:n + 6, :n] = cross.T
        info[n:n + 6, n:n + 6] = 1e6 * np.einsum("k,kip,kiq->pq", n_seen[:n_base], a, a)
    off = n + (6 if n_base else 0)
    for j in range(n_free):
        k = n_base + j
        sl = slice(off + 3 * j, off + 3 * j + 3)
        info[:n, sl] = products[k].T
        info[sl, :n] = products[k]
        info[sl, sl] = 1e6 * n_seen[k] * np.eye(3)
    return info


def _joint_information_weighted(jtj: np.ndarray, products: np.ndarray, info_k: np.ndarray,
                                n_base: int, pose_cols: np.ndarray | None) -> np.ndarray:
    """:func:`joint_information` with each marker's information ``info_k [E, 3, 3]``."""
    n, e = jtj.shape[0], len(info_k)
    n_free = e - n_base
    size = n + (6 if n_base else 0) + 3 * n_free
    info = np.zeros((size, size))
    info[:n, :n] = jtj
    if n_base:
        a = pose_cols
        cross = np.einsum("kin,kip->np", products[:n_base], a)
        info[:n, n:n + 6] = cross
        info[n:n + 6, :n] = cross.T
        info[n:n + 6, n:n + 6] = 1e6 * np.einsum("kij,kip,kjq->pq", info_k[:n_base], a, a)
    off = n + (6 if n_base else 0)
    for j in range(n_free):
        k = n_base + j
        sl = slice(off + 3 * j, off + 3 * j + 3)
        info[:n, sl] = products[k].T
        info[sl, :n] = products[k]
        info[sl, sl] = 1e6 * info_k[k]
    return info


def nuisance_products(products: np.ndarray, n_base: int, pose_cols: np.ndarray | None
                      ) -> np.ndarray:
    """The nuisance rows ``[(6 if n_base) + 3 n_free, n]`` of ``J_full^T A`` from
    :func:`position_products` of ``A`` (same column order as :func:`joint_information`)."""
    parts = []
    if n_base:
        parts.append(np.einsum("kin,kip->pn", products[:n_base], pose_cols))
    parts.append(products[n_base:].reshape(-1, products.shape[-1]))
    return np.concatenate(parts, axis=0)


__all__ = ["AttachedPositions", "platform_frame_positions", "attached_positions",
           "placed_positions",
           "position_products", "position_information", "pose_columns", "joint_information",
           "nuisance_products"]
