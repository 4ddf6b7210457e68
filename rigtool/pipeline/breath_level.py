"""The postures of a breathing body brought to one breath level: the session's.

With breathing markers named, each posture's fit gives the body at its own capture's mean
breath: the breath coordinates are the wall markers' displacements from their mean place on
their link over that capture (rigtool.kinematics.breath_motion). A quiet breath's mean level
over 20 s differs from capture to capture by a fraction of a breath (on the simulated body
the breathing mass's mean place moves the COM by up to 0.03 mm), and the subset fit, which
takes one body in every posture, reads that as the postures' error: Φ_s's first moments
stood 4-5 standard errors off with a reduced chi-square of 1.2-2.7. The level is measured
(the wall markers' mean places on their link in each capture), so each posture is carried to
the mean of those places over the session's postures by its own identified breath:
``G u`` on the first moment and ``sum_j u_j D_j`` on the inertia, ``u`` that mean's
coordinates along the posture's breath directions. The postures then describe one body, at
the session's mean breath.

A posture whose breath was not modelled (its wall markers not above the noise) keeps its
numbers; with fewer than two breathing postures nothing changes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rigtool.identify.common.propagate import jacobian_fd
from rigtool.identify.posture.breathing import breath_offset
from rigtool.identify.posture.equation_error import PostureResult
from rigtool.inertia import InertialParams
from rigtool.pipeline.posture import PostureOutcome

__all__ = ["to_session_breath_level"]

_PERM9 = [0, 1, 2, 3, 6, 8, 7, 5, 4]          # pi[1:] -> [h, J0 xx yy zz yz zx xy]


def to_session_breath_level(outcomes: list[PostureOutcome]) -> list[PostureOutcome]:
    """``outcomes`` with every breathing posture carried to the session's mean breath.

    Parameters
    ----------
    outcomes : list of PostureOutcome
        The session's postures as fitted.

    Returns
    -------
    list of PostureOutcome
        The same postures; those with a modelled breath at the session's mean level, their
        ``breathing`` entry saying by how much (``level``).
    """
    fitted = [i for i, o in enumerate(outcomes) if _breath_of(o) is not None]
    if len(fitted) < 2:
        return outcomes
    names = {tuple(_breath_of(outcomes[i])["summary"]["markers"]) for i in fitted}
    if len(names) != 1:                 # not the same wall markers in every posture
        return outcomes
    places = np.array([_breath_of(outcomes[i])["summary"]["mean_link_mm"] for i in fitted])
    session_mm = places.mean(axis=0)
    out = list(outcomes)
    for i, place in zip(fitted, places):
        out[i] = _at_level(outcomes[i], 1e-3 * (session_mm - place))
    return out


def _breath_of(o: PostureOutcome) -> dict | None:
    """The posture's fitted breath (None when it was not modelled or its measurement does
    not say where its wall markers sat)."""
    b = o.result.breath
    if b is None or not b.get("summary", {}).get("mean_link_mm"):
        return None
    return b


def _at_level(o: PostureOutcome, shift_link_m: np.ndarray) -> PostureOutcome:
    """One posture carried by ``shift_link_m`` (the session's mean wall-marker places less
    this capture's, link frame, ``[3M]``)."""
    b = o.result.breath
    directions = np.asarray(b["summary"]["directions"], float)          # [k, 3M]
    offset_u = directions @ shift_link_m
    d_pi, d_cov = breath_offset(b["beta"], b["cov"], int(b["k"]), o.base_rotation_platform,
                                o.base_position_platform, offset_u)
    breathing = {**o.breathing,
                 "what": "the posture's COM and inertia are its mean mass distribution at the "
                         "session's mean breath (its breathing markers' mean place on their "
                         "link over every posture); the breath moves the first moment by "
                         "G u(t) and the inertia about the base-link origin by D u(t) (u: the "
                         "breath coordinates the breathing markers measure, m) and adds the "
                         "internal momentum K u'(t)",
                 "level": {"offset_mm": [1e3 * float(v) for v in offset_u],
                           "about": "the session's mean breath less this capture's, along "
                                    "each breath coordinate: the posture's numbers were "
                                    "carried by G u and D u from its capture's mean"}}
    return replace(o, result=_shifted(o.result, d_pi, d_cov), breathing=breathing)


def _shifted(res: PostureResult, d_pi: np.ndarray, d_cov: np.ndarray) -> PostureResult:
    """``res`` with ``d_pi`` added to its parameters about the base-link origin (``pi[1:]``,
    mass unchanged) and ``d_cov`` to their covariance, its COM, inertia and their
    covariances following."""
    mass = float(res.params.pi[0])
    pi = res.params.pi.astype(float).copy()
    pi[1:] += d_pi
    params = InertialParams(pi)

    def props(v: np.ndarray) -> np.ndarray:
        p = InertialParams(np.concatenate([[mass], v]))
        return np.concatenate([p.com, p.inertia_com.ravel()])

    jac = jacobian_fd(props, pi[1:])
    props_cov = res.props_cov + jac @ d_cov @ jac.T
    std = np.sqrt(np.clip(np.diag(props_cov), 0, None))
    cov9 = None if res.covariance9 is None else (
        res.covariance9 + d_cov[np.ix_(_PERM9, _PERM9)])
    return replace(res, com=params.com, com_std=std[:3], inertia_com=params.inertia_com,
                   inertia_com_std=std[3:].reshape(3, 3), params=params,
                   params_cov=res.params_cov + d_cov, props_cov=props_cov, covariance9=cov9)
