"""Functional joint-centre estimation: SCoRE (Ehrig et al. 2006) for a spherical joint.

A spherical joint's centre is one point fixed in both the parent's and the child's frame.
With the two bodies' poses ``(R_p, t_p)`` and ``(R_c, t_c)`` (body -> lab) in every frame,
it satisfies ``R_p c_p + t_p = R_c c_c + t_c``: linear in the six unknowns ``(c_p, c_c)``.
Stacking the frames gives an ordinary least-squares problem (Ehrig R.M., Taylor W.R., Duda
G.N., Heller M.O., "A survey of formal methods for determining the centre of rotation of
ball joints", J. Biomech. 39 (2006) 2798-2809, the "SCoRE" method). Written by hand because
it is six columns of ``numpy.linalg.lstsq``; no library packages it.

Only relative motion informs the estimate: rotations of the child about a single axis leave
the centre's position along that axis undetermined. The singular values of the stacked
matrix (after removing the common translation) tell how well each direction is determined;
an axis whose information is too small raises :class:`IdentifiabilityError`.

Standard errors come from the residual variance with frames grouped into blocks as long as
the slowest relative motion's correlation (a conservative sandwich, :func:`lsq.hac_from_scores`
style), because pose errors of neighbouring frames are independent but the model error of a
slightly non-spherical joint is not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.errors import IdentifiabilityError
from rigtool.kinematics.pose import BodyTrajectory


@dataclass(frozen=True)
class JointCentreEstimate:
    """A spherical joint's centre found from the relative motion of two bodies.

    Attributes
    ----------
    centre_parent_m, centre_child_m : ndarray (3,)
        The centre in the parent's and in the child's frame, m.
    cov_parent, cov_child : ndarray (3, 3)
        Their covariances, m^2.
    residual_rms_m : float
        RMS distance between the centre seen from the parent and from the child.
    frames : int
        Frames used.
    rotation_range_deg : ndarray (3,)
        Spread (2 x RMS) of the child's rotation relative to the parent about the principal
        axes of that motion, degrees: how much the joint moved.
    """

    centre_parent_m: np.ndarray
    centre_child_m: np.ndarray
    cov_parent: np.ndarray
    cov_child: np.ndarray
    residual_rms_m: float
    frames: int
    rotation_range_deg: np.ndarray

    @property
    def std_parent_m(self) -> np.ndarray:
        """Standard errors of the centre in the parent's frame, m."""
        return np.sqrt(np.diag(self.cov_parent))


def score_joint_centre(parent: BodyTrajectory, child: BodyTrajectory, *,
                       frames: np.ndarray | None = None, min_rotation_deg: float = 5.0,
                       block_frames: int = 1) -> JointCentreEstimate:
    """Estimate a spherical joint's centre from two bodies' marker-fitted poses (SCoRE).

    Parameters
    ----------
    parent, child : BodyTrajectory
        Poses of the two bodies over the same capture (raw, unfiltered).
    frames : ndarray of bool (T,), optional
        Frames to use (default: where both poses are defined).
    min_rotation_deg : float
        Minimal spread of the relative rotation (2 x RMS) about the second-largest of its
        principal axes; below it the centre is not determined along the motion's axis.
    block_frames : int
        Frames per block for the covariance (1: independent frames).

    Returns
    -------
    JointCentreEstimate

    Raises
    ------
    IdentifiabilityError
        Too few frames, or the joint moved about fewer than two axes.
    """
    ok = parent.valid & child.valid
    if frames is not None:
        ok &= np.asarray(frames, bool)
    n = int(ok.sum())
    if n < 10:
        raise IdentifiabilityError(f"only {n} frames see both bodies; the joint centre needs "
                                   "a capture where the joint moves")
    rp, tp = parent.rotation[ok], parent.position_m[ok]
    rc, tc = child.rotation[ok], child.position_m[ok]
    # Relative rotation's spread: how much the joint actually moved, about which axes.
    rel = Rotation.from_matrix(np.einsum("tji,tjk->tik", rp, rc))
    rv = (rel * rel.mean().inv()).as_rotvec()
    spread = 2.0 * np.sqrt(np.clip(np.linalg.eigvalsh(np.cov(rv.T)), 0, None))[::-1]
    spread_deg = np.rad2deg(spread)
    # Rows: [R_p, -R_c] [c_p; c_c] = t_c - t_p, three per frame.
    a = np.concatenate([rp, -rc], axis=2).reshape(3 * n, 6)
    b = (tc - tp).reshape(3 * n)
    x, *_ = np.linalg.lstsq(a, b, rcond=None)
    if spread_deg[1] < min_rotation_deg:
        raise IdentifiabilityError(
            f"the joint rotated by only {spread_deg[0]:.1f} and {spread_deg[1]:.1f} deg about "
            f"its two main axes of motion; its centre is not determined along the axis of a "
            f"one-axis swing. Record a capture where the link swings about two axes (at least "
            f"{min_rotation_deg:g} deg each)")
    resid = (b - a @ x).reshape(n, 3)
    dof = max(3 * n - 6, 1)
    # Covariance: sandwich with per-block score sums (blocks of block_frames frames).
    scores = (a.reshape(n, 3, 6) * resid[:, :, None]).sum(axis=1)
    nb = max(1, int(block_frames))
    m = (n // nb) * nb
    blocks = scores[:m].reshape(-1, nb, 6).sum(axis=1)
    if m < n:
        blocks = np.vstack([blocks, scores[m:].sum(axis=0)])
    meat = blocks.T @ blocks * (3 * n / dof)
    bread = np.linalg.inv(a.T @ a)
    cov = bread @ meat @ bread
    cov = 0.5 * (cov + cov.T)
    return JointCentreEstimate(x[:3], x[3:], cov[:3, :3], cov[3:, 3:],
                               float(np.sqrt(np.mean(np.sum(resid ** 2, axis=1)))), n,
                               spread_deg)
