"""The postures of a breathing body brought to one breath level: the session's.

With breathing markers named, each posture's fit gives the body at its own capture's mean
breath: the breath coordinates are the wall markers' displacements from their mean place on
their link over that capture (rigtool.kinematics.breath_motion). A quiet breath's mean level
over 20 s differs from capture to capture by a fraction of a breath (on the simulated body
the breathing mass's mean place moves the COM by up to 0.03 mm), and the subset fit, which
takes one body in every posture, reads that as the postures' error: Φ_s's first moments
stood up to 5 standard errors off with a reduced chi-square of 1.2-5.1. The level is measured
(the wall markers' mean places on their link in each capture), so each posture is carried to
the mean of those places over the session's postures by its own identified breath:
``G u`` on the first moment and ``sum_j u_j D_j`` on the inertia, ``u`` that mean's
coordinates along the posture's breath directions. The postures then describe one body, at
the session's mean breath.

A posture whose breath was not modelled (its wall markers not above the noise) keeps its
numbers; with fewer than two breathing postures nothing changes.

The relative-motion capture is brought to the same level. Its fits model no breath; a
breath held during it (at the end of a quiet exhale) leaves the base link's first moment
and inertia where the held breath puts them, off the postures' by ``G u`` and ``D u``
(0.25 mm of the COM on the simulated body: Φ_B's base entries 7 standard errors off). The
held level is measured the same way (the wall markers' mean place over that capture), Φ_s
is carried to it for the movement's fits, and their Φ_B carried back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rigtool.errors import InputError
from rigtool.identify.common.propagate import jacobian_fd
from rigtool.identify.posture.breathing import breath_offset
from rigtool.identify.posture.equation_error import PostureResult
from rigtool.identify.common.output_error import window_frames
from rigtool.identify.relative.equation_error import RelativeResult
from rigtool.inertia import PI9_TO_SUBSET_ORDER, InertialParams, com_and_inertia
from rigtool.kinematics.breath_motion import wall_marker_places
from rigtool.mocap import MarkerData
from rigtool.pipeline.posture import PostureOutcome, measured_breath
from rigtool.tree import Tree, j_matrix, phi_s_from_phi_b

__all__ = ["to_session_breath_level", "movement_breath_shift", "phi_b_shift",
           "relative_at_shift", "movement_breath", "MovementBreath"]

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
    jac = jacobian_fd(lambda v: com_and_inertia(v, mass), pi[1:])
    props_cov = res.props_cov + jac @ d_cov @ jac.T
    std = np.sqrt(np.clip(np.diag(props_cov), 0, None))
    cov9 = None if res.covariance9 is None else (
        res.covariance9 + d_cov[np.ix_(PI9_TO_SUBSET_ORDER, PI9_TO_SUBSET_ORDER)])
    return replace(res, com=params.com, com_std=std[:3], inertia_com=params.inertia_com,
                   inertia_com_std=std[3:].reshape(3, 3), params=params,
                   params_cov=res.params_cov + d_cov, props_cov=props_cov, covariance9=cov9)


def movement_breath_shift(outcomes: list[PostureOutcome], data: MarkerData,
                          rigid_markers: dict[str, dict[str, np.ndarray]],
                          breathing_markers: dict[str, dict[str, np.ndarray]],
                          frames: np.ndarray | None = None
                          ) -> tuple[np.ndarray, np.ndarray] | None:
    """What the body's parameters about the base-link origin (``pi[1:]``, base frame) gain
    from the session's mean breath to the relative-motion capture's, and its covariance:
    the capture's wall markers' mean place over ``frames`` against the breathing postures',
    carried by each posture's ``G`` and ``D`` and averaged over them (their errors
    independent). None without two breathing postures or when the capture does not see its
    wall markers with their links."""
    fitted = [o for o in outcomes if _breath_of(o) is not None]
    if len(fitted) < 2 or len({tuple(_breath_of(o)["summary"]["markers"])
                               for o in fitted}) != 1:
        return None
    try:
        place, names = wall_marker_places(data, rigid_markers, breathing_markers,
                                          frames=frames)
    except InputError:
        return None
    if names != list(_breath_of(fitted[0])["summary"]["markers"]):
        return None
    session = 1e-3 * np.mean([_breath_of(o)["summary"]["mean_link_mm"] for o in fitted],
                             axis=0)
    shifts, covs = [], []
    for o in fitted:
        b = o.result.breath
        offset_u = np.asarray(b["summary"]["directions"], float) @ (place - session)
        d_pi, d_cov = breath_offset(b["beta"], b["cov"], int(b["k"]), o.base_rotation_platform,
                                    o.base_position_platform, offset_u)
        shifts.append(d_pi)
        covs.append(d_cov)
    return np.mean(shifts, axis=0), np.sum(covs, axis=0) / len(covs) ** 2


def phi_b_shift(tree: Tree, d_pi_base: np.ndarray) -> np.ndarray:
    """Φ_B's change when the base link's own parameters about its origin gain
    ``d_pi_base`` (``pi[1:]``: first moment, inertia ``xx xy xz yy yz zz``): its ``MS`` and
    ``J`` (``xx yy zz yz zx xy``); every other entry unchanged."""
    return _phi_b_map(tree) @ np.asarray(d_pi_base, float)


def _phi_b_map(tree: Tree) -> np.ndarray:
    """The linear map ``[9n, 9]`` of :func:`phi_b_shift`."""
    m = np.zeros((9 * len(tree.links), 9))
    m[np.arange(9), PI9_TO_SUBSET_ORDER] = 1.0        # Phi_B's MS and J take pi[1:] in that order
    return m


def relative_at_shift(relative: RelativeResult, d_phi_b: np.ndarray, tree: Tree,
                      d_cov: np.ndarray | None = None) -> RelativeResult:
    """The relative-motion result with ``d_phi_b`` added to its Φ_B (its minimal parameters
    following) and ``d_cov`` (``[9, 9]`` over the base link's ``pi[1:]``, carried as
    :func:`phi_b_shift`) to its covariance; the moving links' ``J_yy`` unchanged."""
    values = np.asarray(relative.values, float) + d_phi_b
    cov = np.asarray(relative.covariance, float)
    if d_cov is not None:
        m = _phi_b_map(tree)
        cov = cov + m @ d_cov @ m.T
    per = values.reshape(len(tree.links), 9)
    minimal = {l.name: {**relative.minimal_parameters[l.name], "MS": per[i, :3].copy(),
                        "J": j_matrix(per[i, 3:])} for i, l in enumerate(tree.links)}
    return replace(relative, values=values, minimal_parameters=minimal, covariance=cov,
                   std_phi_b=np.sqrt(np.clip(np.diag(cov), 0, None)))


@dataclass(frozen=True)
class MovementBreath:
    """The relative-motion capture's breath for its fits, which model none: the Φ_s they
    take (at the capture's breath level), the Φ_B shift that level adds and the covariance
    of the base link's shift (None when the level cannot be measured,
    :func:`movement_breath_shift`), and the breath as measured there (its summary; None when
    it does not move above the noise, or its wall markers are not seen)."""

    subset: object
    d_phi_b: np.ndarray | None
    d_cov: np.ndarray | None
    measurement: dict | None

    def carried_back(self, relative: RelativeResult, tree: Tree) -> RelativeResult:
        """The fits' result at the postures' breath level (:func:`relative_at_shift`)."""
        if self.d_phi_b is None:
            return relative
        return relative_at_shift(relative, -self.d_phi_b, tree, self.d_cov)

    def report(self) -> dict:
        """What report.json's ``relative_motion.breath`` says."""
        return {"measurement": self.measurement,
                "level": None if self.d_phi_b is None else {
                    "first_moment_kg_m": self.d_phi_b[:3].tolist(),
                    "inertia_kg_m2": self.d_phi_b[3:9].tolist(),
                    "about": "the base link's MS and J (xx yy zz yz zx xy) at the movement "
                             "capture's mean breath less at the postures' (the wall markers' "
                             "mean places): Phi_s was carried by it for the movement's fits "
                             "and their Phi_B carried back"}}


def movement_breath(outcomes: list[PostureOutcome], subset, tree: Tree, data: MarkerData,
                    rigid_markers: dict, breathing_markers: dict, window) -> MovementBreath:
    """The relative-motion capture's breath (:class:`MovementBreath`) from its wall markers
    and the breathing postures."""
    frames = window_frames(data, window, "the relative-motion capture")
    try:
        breath, _ = measured_breath(data, rigid_markers, breathing_markers, window)
    except InputError:
        breath = None             # the movement capture does not see its wall markers
    measurement = None if breath is None else breath.summary
    shift = movement_breath_shift(outcomes, data, rigid_markers, breathing_markers, frames)
    if shift is None:
        return MovementBreath(subset, None, None, measurement)
    d_phi_b = phi_b_shift(tree, shift[0])
    return MovementBreath(replace(subset, values=np.asarray(subset.values, float)
                                  + phi_s_from_phi_b(d_phi_b)), d_phi_b, shift[1], measurement)
