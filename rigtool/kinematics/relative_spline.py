"""Each moving link's motion relative to the platform as a smooth function of time: the
prescribed input of the active relative-motion model (rigtool.engine.prescribed).

A link's rotation relative to the platform, ``Q_j(t) = R_p(t)^T R_j(t)`` from the two
marker clusters' Kabsch poses, is written ``Q_j = Q_mean exp([r_j(t) x])`` and each component
of the rotation vector ``r_j`` is a cubic smoothing spline (scipy's
``make_smoothing_spline``, its smoothing chosen by generalised cross-validation, searched
over log(lam) for every link at once by :mod:`rigtool.kinematics.spline_smoothing`; when
that fails, by the residual matching the noise estimated from fourth differences:
:func:`noise_from_differences`). The spline
gives ``r``, ``r'`` and ``r''`` in closed form at any time (the integrator needs the inputs
every half step, between frames), and from them::

    omega_body = J_r(r) r'            alpha_body = d omega_body / dt
    w^P = Q omega_body                alpha^P = Q alpha_body           (platform axes)

``alpha_body`` by a central difference of the exact ``omega_body(t)`` over 1e-4 s (its
truncation error is ~1e-8 of the value; the derivative of ``J_r`` in closed form is long and
adds nothing). A joint centre's position in the platform frame follows the chain:
``d_j = d_parent + Q_parent c_j`` (``c_j`` in the parent's frame; the base link's children
sit at ``R_pb c_j + t_pb``, constant), differentiated along it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.interpolate import BSpline, make_smoothing_spline

from rigtool.kinematics.motion import (_cross, exp_rotation, log_rotation, mean_rotation,
                                       right_jacobian_apply)
from rigtool.kinematics.spline_smoothing import (discrepancy_lambda, gcv_lambda,
                                                smoothing_residuals)

#: step of the central difference that gives the angular acceleration, s
_ALPHA_STEP_S = 1e-4
#: generalised cross-validation is taken as failed when its spline leaves more than this
#: multiple of the noise estimated from fourth differences (seen: GCV choosing lam ~ 1e3, a
#: straight line, on 30-80 deg limb motions with 0.05 deg of noise, leaving 7-23 deg RMS)
GCV_FAILED_FACTOR = 3.0


@dataclass(frozen=True)
class RelativeRotationSpline:
    """A link's rotation relative to the platform, smoothed (see the module docstring).

    Attributes
    ----------
    mean_rotation : ndarray (3, 3)
        ``Q_mean``: link axes -> platform axes, the chordal mean over the frames fitted.
    components : tuple of BSpline
        The three components of ``r(t)``, rad.
    t_range_s : (float, float)
        Time span of the frames fitted, s.
    residual_rad : float
        RMS of the rotation vectors' residual to the spline, rad (the noise it removed).
    lam : (float, float, float)
        The smoothing of each component (for refits of perturbed data with the same
        smoother: the noise probes).
    """

    mean_rotation: np.ndarray
    components: tuple[BSpline, BSpline, BSpline]
    t_range_s: tuple[float, float]
    residual_rad: float
    lam: tuple[float, float, float]

    def rotvec(self, t_s: np.ndarray, nu: int = 0) -> np.ndarray:
        """``r``, ``r'`` or ``r''`` (``nu`` = 0, 1, 2) at times ``t_s [N]``, ``[N, 3]``."""
        return np.stack([c(t_s, nu) for c in self.components], axis=1)

    def omega_body(self, t_s: np.ndarray) -> np.ndarray:
        """Relative angular velocity in link axes ``[N, 3]``, rad/s."""
        return right_jacobian_apply(self.rotvec(t_s), self.rotvec(t_s, 1))

    def evaluate(self, t_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``Q [N, 3, 3]``, ``w^P [N, 3]`` and ``alpha^P [N, 3]`` (platform axes) at ``t_s``."""
        t = np.asarray(t_s, float)
        q = self.mean_rotation @ exp_rotation(self.rotvec(t))
        w_b = self.omega_body(t)
        a_b = (self.omega_body(t + _ALPHA_STEP_S) - self.omega_body(t - _ALPHA_STEP_S)) / (
            2.0 * _ALPHA_STEP_S)
        return q, np.einsum("nij,nj->ni", q, w_b), np.einsum("nij,nj->ni", q, a_b)


def fit_relative_rotation(time_s: np.ndarray, rotation_rel: np.ndarray,
                          lam: tuple[float, float, float] | None = None
                          ) -> RelativeRotationSpline:
    """Smooth a link's measured rotations relative to the platform.

    Parameters
    ----------
    time_s : ndarray [T]
        Frame times, s.
    rotation_rel : ndarray [T, 3, 3]
        ``R_p^T R_j`` per frame (link axes -> platform axes); NaN where either body is not
        posed (those frames are left out, the spline bridges them).
    lam : 3 floats, optional
        The smoothing of each component; default chosen by generalised cross-validation.

    Returns
    -------
    RelativeRotationSpline

    Raises
    ------
    ValueError
        Fewer than 5 posed frames.
    """
    return fit_relative_rotations(time_s, [rotation_rel], None if lam is None else [lam])[0]


def fit_relative_rotations(time_s: np.ndarray, rotations_rel: list[np.ndarray],
                           lams: list[tuple[float, float, float]] | None = None
                           ) -> list[RelativeRotationSpline]:
    """:func:`fit_relative_rotation` of several links at once (links posed in the same
    frames share one vectorised cross-validation: rigtool.kinematics.spline_smoothing).

    Parameters
    ----------
    time_s : ndarray [T]
    rotations_rel : list of ndarray [T, 3, 3]
        Per link, ``R_p^T R_j`` per frame (NaN where not posed).
    lams : list of 3 floats, optional
        Per link, the smoothing of each component; default chosen by cross-validation.

    Returns
    -------
    list of RelativeRotationSpline

    Raises
    ------
    ValueError
        A link posed in fewer than 5 frames.
    """
    time_s = np.asarray(time_s, float)
    prepared = []
    for rot in rotations_rel:
        ok = np.all(np.isfinite(rot), axis=(1, 2))
        if ok.sum() < 5:
            raise ValueError("a link is posed relative to the platform in fewer than 5 frames")
        q_mean = mean_rotation(rot[ok])
        prepared.append((ok, q_mean, log_rotation(q_mean.T @ rot[ok])))
    if lams is None:
        lams = [None] * len(prepared)
        groups: dict[tuple, list[int]] = {}
        for i, (ok, _, _) in enumerate(prepared):
            groups.setdefault(_frames_key(ok), []).append(i)
        for members in groups.values():
            t = time_s[prepared[members[0]][0]]
            rv = np.concatenate([prepared[i][2] for i in members], axis=1)
            for i, lam3 in zip(members, _chosen_smoothing(t, rv).reshape(-1, 3)):
                lams[i] = tuple(float(v) for v in lam3)
    # components with the same frames and smoothing drawn by one call (the spline is linear
    # in the data at a fixed smoothing: one banded solve with several right-hand sides)
    comps: list[list] = [[None] * 3 for _ in prepared]
    same: dict[tuple, list[tuple[int, int]]] = {}
    for i, ((ok, _, _), lam) in enumerate(zip(prepared, lams)):
        for k in range(3):
            same.setdefault((_frames_key(ok), float(lam[k])), []).append((i, k))
    for (_, lam_k), members in same.items():
        ok = prepared[members[0][0]][0]
        y = np.stack([prepared[i][2][:, k] for i, k in members], axis=1)
        spl = make_smoothing_spline(time_s[ok], y, lam=lam_k)
        for col, (i, k) in enumerate(members):
            comps[i][k] = BSpline(spl.t, spl.c[:, col], spl.k, extrapolate=spl.extrapolate)
    out = []
    for (ok, q_mean, rv), lam, cs in zip(prepared, lams, comps):
        t = time_s[ok]
        fitted = np.stack([c(t) for c in cs], 1)
        resid = float(np.sqrt(np.mean((fitted - rv) ** 2)))
        out.append(RelativeRotationSpline(q_mean, tuple(cs), (float(t[0]), float(t[-1])),
                                          resid, tuple(float(v) for v in lam)))
    return out


def _frames_key(ok: np.ndarray) -> tuple:
    """A hashable key of which frames a link is posed in (links posed in the same frames
    share their splines' abscissae)."""
    return np.packbits(ok).tobytes(), ok.size


def _chosen_smoothing(t: np.ndarray, rv: np.ndarray) -> np.ndarray:
    """Per column of ``rv [T, C]``: cross-validation's smoothing, or the discrepancy
    principle's where cross-validation leaves more than ``GCV_FAILED_FACTOR`` times the noise
    estimated from fourth differences (it chose nearly no curve at all)."""
    lam = gcv_lambda(t, rv)
    sigma = np.array([noise_from_differences(rv[:, k]) for k in range(rv.shape[1])])
    resid = np.sqrt(np.mean(smoothing_residuals(t, rv, lam) ** 2, axis=0))
    failed = (resid > GCV_FAILED_FACTOR * sigma) & (sigma > 0)
    if np.any(failed):
        lam[failed] = discrepancy_lambda(t, rv[:, failed], sigma[failed] * np.sqrt(t.size))
    return lam


def noise_from_differences(y: np.ndarray) -> float:
    """The white noise of a smooth, evenly sampled signal: the fourth difference of white
    noise of standard deviation s has variance 70 s^2, while a signal of frequency f
    sampled at f_s gives (2 pi f / f_s)^4 of its amplitude (1e-5 for a 1.6 Hz motion at
    100 Hz), so the fourth differences are the noise's. Median-based (robust to a few
    bad frames)."""
    d4 = np.diff(np.asarray(y, float), 4)
    if d4.size < 5:
        return 0.0
    return float(1.4826 * np.median(np.abs(d4 - np.median(d4))) / np.sqrt(70.0))


def prescribed_inputs(splines: list[RelativeRotationSpline | None], parents: list[int],
                      joint_centres: np.ndarray, t_s: np.ndarray) -> np.ndarray:
    """The engine's inputs ``u [N, L, 24]`` (rigtool.engine.prescribed) at times ``t_s``.

    Parameters
    ----------
    splines : list
        Per link of the tree (index 0, the base, None): its relative rotation spline.
    parents : list of int
        Parent link index per link (-1 for the base).
    joint_centres : ndarray [n, 3]
        Each link's joint centre in its parent's frame, m (row 0 unused).
    t_s : ndarray [N]

    Returns
    -------
    ndarray [N, n - 1, 24]
        ``[Q, w^P, alpha^P, d, d', d'']`` per moving link with ``d`` the joint centre's
        position in the platform frame *relative to where the chain leaves the base link*:
        the base-dependent constant ``R_pb c + t_pb`` of the link's first moving ancestor
        is added by the model (it depends on the fitted base pose).
    """
    n = len(parents)
    t = np.asarray(t_s, float)
    out = np.zeros((t.size, n - 1, 24))
    q, w, a = {}, {}, {}
    d = {0: np.zeros((t.size, 3))}
    d1 = {0: np.zeros((t.size, 3))}
    d2 = {0: np.zeros((t.size, 3))}
    for j in range(1, n):
        q[j], w[j], a[j] = splines[j].evaluate(t)
        p = parents[j]
        if p == 0:                          # the base-dependent constant: added by the model
            d[j], d1[j], d2[j] = (np.zeros((t.size, 3)) for _ in range(3))
        else:
            lever = q[p] @ np.asarray(joint_centres[j], float)        # [N, 3]
            d[j] = d[p] + lever
            wl = _cross(w[p], lever)
            d1[j] = d1[p] + wl
            d2[j] = d2[p] + _cross(a[p], lever) + _cross(w[p], wl)
        out[:, j - 1] = np.concatenate([q[j].reshape(t.size, 9), w[j], a[j], d[j], d1[j],
                                        d2[j]], 1)
    return out


def chain_roots(parents: list[int]) -> list[int]:
    """Per moving link (1..n-1), its ancestor that is a child of the base link."""
    roots = []
    for j in range(1, len(parents)):
        k = j
        while parents[k] != 0:
            k = parents[k]
        roots.append(k)
    return roots


__all__ = ["RelativeRotationSpline", "fit_relative_rotation", "fit_relative_rotations",
           "prescribed_inputs",
           "chain_roots"]
