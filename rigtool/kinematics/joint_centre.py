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

Standard errors: the HAC sandwich of :func:`rigtool.lsq.solve_wls` with a lag
window of ``block_frames``: pose errors of neighbouring frames are independent, but the
model error of a slightly non-spherical joint (soft tissue, a real ball joint's play) is not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.errors import IdentifiabilityError
from rigtool.lsq import solve_wls
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
        Correlation length in frames for the covariance (1: independent frames).

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
    if spread_deg[1] < min_rotation_deg:
        raise IdentifiabilityError(
            f"the joint rotated by only {spread_deg[0]:.1f} and {spread_deg[1]:.1f} deg about "
            f"its two main axes of motion; its centre is not determined along the axis of a "
            f"one-axis swing. Record a capture where the link swings about two axes (at least "
            f"{min_rotation_deg:g} deg each)")
    # Rows: [R_p, -R_c] [c_p; c_c] = t_c - t_p, three per frame; HAC covariance with a lag
    # window of block_frames (0 lag: independent frames).
    fit = solve_wls(np.concatenate([rp, -rc], axis=2), tc - tp,
                    max_lag=max(0, int(block_frames) - 1), rcond=1e-9)
    if fit.rank < 6:
        raise IdentifiabilityError("the relative motion does not determine the joint centre "
                                   "(rank-deficient); add rotation about a second axis")
    x, cov = fit.x, fit.cov
    return JointCentreEstimate(x[:3], x[3:], cov[:3, :3], cov[3:, 3:],
                               float(np.sqrt(np.mean(np.sum(fit.residual ** 2, axis=1)))), n,
                               spread_deg)
