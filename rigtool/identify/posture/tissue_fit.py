"""A locked posture fitted with one wobbling-tissue element (rigtool.identify.posture.soft_tissue).

For a given tissue frequency the element's mass ``mu`` and first moment ``mu p`` are linear
unknowns of the equation-error fit; its point ``p`` (the linearisation point of its second
moment) is iterated from the body's COM. The frequency is not linear: it is profiled, on
the literature's grid then refined by a bounded scalar search, by the fit's residual wrench
in the rig's band. That band matters: the residual above the rig's highest mode is the
acceleration's noise, which swamps the tissue's signature; within it the tissue's apparent
mass shows (measured on the simulator: the full-band residual picked a wrong frequency in
every posture, the rig's band the right one).

The damping ratio is the literature's (0.3): the rig's few modes below the tissue's
frequency see the damping only through a small phase, so it is held, and the frequency
found is the one that, with it, explains the modes' apparent masses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.optimize import minimize_scalar

from rigtool.identify.posture.soft_tissue import (DAMPING_RATIO, FREQUENCY_GRID_HZ,
                                                  TissueElement, band_limited)

__all__ = ["TissueFit", "TissueNotFound", "OtherTissue", "UnseenTissue", "rig_bands",
           "fit_with_tissue", "hold_unseen_tissue", "tissue_evidence", "joint_tissue_evidence",
           "EVIDENCE_FREQUENCY_HZ",
           "EVIDENCE_SIGMAS", "EVIDENCE_MASS_FRACTION", "OTHER_TISSUE_FRACTION"]


class TissueNotFound(ValueError):
    """No plausible tissue element fits the posture (the rigid fit then stands)."""

#: point iterations per frequency (the point moves by well under a millimetre after two)
POINT_ITERATIONS = 3
#: the step in ln(frequency) of the profile's curvature and the unknowns' derivative
LOG_FREQUENCY_STEP = 0.04
#: the scalar search's tolerance on log(frequency)
LOG_FREQUENCY_TOL = 0.01
#: the one frequency the evidence for tissue is fitted at (the middle of the literature's
#: 4-10 Hz on a log scale): the tissue's apparent mass in the rig's modes is mostly
#: ``mu / wn^2``, which a fit at another frequency takes up in ``mu``
EVIDENCE_FREQUENCY_HZ = 6.0
#: tissue is seen when its element's mass there is this many standard errors above zero ...
EVIDENCE_SIGMAS = 3.0
#: ... and this share of the body's mass at least
EVIDENCE_MASS_FRACTION = 0.02
#: the most of the body's mass one element may hold: the skeleton with the tissue held
#: tightly to it (bone, tendon, skin, the tensed muscle) is more than half of it (Gruber et
#: al. 1998: wobbling masses of 70-88 % of a segment's mass, but their frequencies spread
#: over 4-15 Hz, so no one frequency's share is above half)
MAX_MASS_FRACTION = 0.5
#: the standard deviation of the tissue a link may carry beside the fitted element, as a
#: share of the link's mass: a quarter, as a limb's soft tissue at one frequency (the thigh's
#: and shank's wobbling masses, Gruber et al. 1998; Pain & Challis 2001). The fitted element
#: holds the softest tissue the rig's modes show; a second, stiffer one (at the grid's
#: frequencies above it) shows as an apparent mass in the rig's highest modes alone, which
#: the one element cannot follow and the data do not resolve (fitted free on the simulated
#: two-link body, its mass's standard error is four to five times this standard deviation)
OTHER_TISSUE_FRACTION = 0.25
#: a grid frequency is another tissue's when it is this factor above the element's
STIFFER_BY = 1.05


@dataclass(frozen=True)
class OtherTissue:
    """Tissue a link may carry beside the fitted element, which the fit leaves out and its
    standard errors hold (a "consider" parameter of
    rigtool.identify.posture.equation_error.fit_posture): a point mass of no mean and
    standard deviation ``mass_std_kg`` at ``point_platform_m`` (the link's COM in the
    posture, platform frame, m)."""

    link: str
    point_platform_m: np.ndarray
    mass_std_kg: float
    #: where the link's mass and COM came from: its prior, or (a link without one) the
    #: body's mass shared equally and its markers' centroid
    from_prior: bool = True


def _prior_source(tissue: tuple[OtherTissue, ...]) -> str:
    """The report's words for where the tissue's standard deviations came from."""
    if all(o.from_prior for o in tissue):
        return "a quarter of each link's prior mass"
    return ("a quarter of the body's mass shared equally between the links, at their markers' "
            "centroids (a link has no prior)")


def _held_summary(tissue: tuple[OtherTissue, ...], std: dict) -> dict:
    """The report's account of tissue held in a posture's standard errors (beside an element
    or unseen): each link's standard deviation, where it came from, and what the tissue alone
    gives the COM's and inertia's standard errors (``std``, m and kg m^2)."""
    return {"mass_std_kg": {o.link: float(o.mass_std_kg) for o in tissue},
            "mass_std_from": _prior_source(tissue),
            "com_std_m": [float(v) for v in std["com"]],
            "inertia_com_std": [[float(v) for v in row] for row in std["inertia_com"]]}


@dataclass(frozen=True)
class TissueFit:
    """The posture's tissue element as fitted and how its frequency was found."""

    result: object                        # PostureResult with the element in it
    element: TissueElement
    mass_kg: float
    mass_std_kg: float
    point_platform_m: np.ndarray
    profile: list[tuple[float, float]]    # (frequency Hz, residual in the rig's band / rigid)
    frequency_std_rel: float = float("nan")   # standard error of ln(frequency)
    other_tissue: tuple[OtherTissue, ...] = ()      # held in the standard errors ...
    other_frequencies_hz: tuple[float, ...] = ()    # ... at one of these, equally likely
    #: what the other tissue adds to the COM's and inertia's standard errors (m, kg m^2)
    other_std: dict | None = None
    #: per other tissue ("link@frequency"), its shift of the posture's ``[h, J0]`` (the
    #: subset fit's order) at one standard deviation: the same tissue in every posture
    other_shared: dict[str, np.ndarray] = field(default_factory=dict)

    def at_mass_limit(self, body_mass_kg: float) -> bool:
        """The element holds the most one may (:data:`MAX_MASS_FRACTION` of the body) within
        its standard error: the profile was stopped by that limit, not by the data, and what
        the rig's upper modes see is not tissue the body could hold at one frequency (on the
        simulator: the apparent mass of a body riding on a firm back, too little for the
        support's own test)."""
        return self.mass_kg + self.mass_std_kg >= MAX_MASS_FRACTION * body_mass_kg

    def summary(self) -> dict:
        """The report's account (platform frame, SI)."""
        return {"frequency_hz": float(self.element.frequency_hz),
                "frequency_std_hz": float(self.element.frequency_hz * self.frequency_std_rel),
                "damping_ratio": float(self.element.damping_ratio),
                "mass_kg": float(self.mass_kg), "mass_std_kg": float(self.mass_std_kg),
                "point_platform_m": [float(v) for v in self.point_platform_m],
                "residual_in_rig_band": float(min(s for _, s in self.profile)),
                "frequency_profile": [[float(f), float(s)] for f, s in
                                      sorted(self.profile)],
                **({"other_tissue": {
                    "about": "tissue each link may carry beside the element, at a stiffer "
                             "frequency, which the fit cannot resolve: held in the standard "
                             "errors (no mean), not in the estimate",
                    "frequencies_hz": [float(f) for f in self.other_frequencies_hz],
                    **_held_summary(self.other_tissue, self.other_std)}}
                   if self.other_tissue else {})}


def rig_bands(top_mode_hz: float, rate_hz: float) -> tuple[tuple[float, float],
                                                             tuple[float, float]]:
    """``(columns_band, residual_band)`` (pass, stop edges, Hz) from the rig's highest mode.

    The tissue's columns pass the highest mode whole (up to 1.22x) and stop at 1.86x, above
    which the acceleration's noise is all they would carry. The residual that profiles the
    frequency passes the modes below 0.72x the highest and stops at 1.33x: the highest mode
    enters half-weighted, as the noise grows as the frequency to the fourth there. These
    edges were chosen on the simulated two-link body (modes 0.36-3.77 Hz, 0.1 mm noise):
    passing every mode to the residual let the noise pick the frequency.
    """
    nyq = 0.45 * rate_hz
    cols = (min(1.22 * top_mode_hz, nyq - 2.0), min(1.86 * top_mode_hz, nyq))
    resid = (min(0.72 * top_mode_hz, nyq - 2.0), min(1.33 * top_mode_hz, nyq))
    return cols, resid


def _band_residual_wrench(res, rate_hz: float, band: tuple[float, float]) -> np.ndarray:
    """A fit's residual wrench ``[T, 6]`` in ``band`` (NaN where it was not fitted)."""
    return band_limited(res.measured_wrench - res.fitted_wrench, rate_hz, band)


def _band_power(res, rate_hz: float, band: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Per wrench component the fit's residual mean square in ``band``, and the number of
    independent samples it holds: twice the participation ratio of its periodogram
    (``(sum P)^2 / sum P^2`` over the bins, each bin two), which is ``2 B T`` for a flat
    residual and a few for one whose power sits in the rig's narrow modes."""
    r = _band_residual_wrench(res, rate_hz, band)
    r = r[np.all(np.isfinite(r), axis=1)]
    spectrum = np.abs(np.fft.rfft(r, axis=0)) ** 2
    n_eff = 2.0 * spectrum.sum(axis=0) ** 2 / np.maximum((spectrum ** 2).sum(axis=0), 1e-300)
    return np.mean(r ** 2, axis=0), n_eff


def _band_residual(res, rigid_band_residual: np.ndarray, rate_hz: float,
                   band: tuple[float, float]) -> float:
    """Sum over the six wrench components of the fit's residual RMS in ``band`` over the
    rigid fit's (``rigid_band_residual``, :func:`_band_residual_wrench`) on the same
    frames."""
    r1 = _band_residual_wrench(res, rate_hz, band)
    r0 = rigid_band_residual
    both = np.all(np.isfinite(r0), axis=1) & np.all(np.isfinite(r1), axis=1)
    if both.sum() < 10:
        return float("inf")
    return float(np.sum(np.sqrt(np.mean(r1[both] ** 2, axis=0))
                        / np.sqrt(np.mean(r0[both] ** 2, axis=0))))


def fit_with_tissue(fit: Callable[..., object], rigid, *, start_point_platform_m: np.ndarray,
                    rate_hz: float, top_mode_hz: float,
                    damping_ratio: float = DAMPING_RATIO,
                    grid_hz: tuple[float, ...] = FREQUENCY_GRID_HZ,
                    other_tissue: tuple[OtherTissue, ...] = ()) -> TissueFit:
    """Profile the tissue element's frequency and return the best fit.

    Parameters
    ----------
    fit : callable
        ``fit(tissue=(TissueElement,), **options) -> PostureResult``: the posture's
        equation-error fit with everything else fixed
        (rigtool.identify.posture.equation_error.fit_posture); ``options`` are that
        function's ``consistent`` and ``fit_mass``.
    rigid : PostureResult
        The same fit without the tissue (the residual's reference).
    start_point_platform_m : ndarray (3,)
        Where the element's point starts (the body's COM, platform frame).
    rate_hz, top_mode_hz : float
        The capture's frame rate and the rig's highest mode with the body on it.
    other_tissue : tuple of OtherTissue
        Tissue the links may carry beside the element: at each of the grid's frequencies
        above the one found, equally likely, its share of the unknowns' covariance is added
        to the final fit's (the estimate does not change).
    """
    cols_band, resid_band = rig_bands(top_mode_hz, rate_hz)
    tried: dict[float, tuple[float, object, TissueElement]] = {}
    start = np.asarray(start_point_platform_m, float)
    rigid_residual = _band_residual_wrench(rigid, rate_hz, resid_band)     # once, for all f

    def converge(f_hz: float, point: np.ndarray, steps: int, **options):
        for _ in range(steps):
            element = TissueElement(float(f_hz), damping_ratio, point, cols_band)
            res = fit(tissue=(element,), **options)
            beta = res.tissue["beta"]
            if not beta[0] > 0:         # no tissue mass at this frequency: keep the point
                break
            point = beta[1:] / beta[0]
        return res, element, beta, point

    def evaluate(f_hz: float) -> float:
        key = round(float(f_hz), 6)
        if key in tried:
            return tried[key][0]
        # every frequency from the same start (a point carried over from the last frequency
        # made the choice within the profile's flat bottom depend on the search's path);
        # the mass check is left out, and made at the chosen frequency below
        res, element, beta, point = converge(f_hz, start, POINT_ITERATIONS, fit_mass=False)
        score = _band_residual(res, rigid_residual, rate_hz, resid_band)
        if not 0 < beta[0] <= MAX_MASS_FRACTION * rigid.mass:
            score = float("inf")           # no tissue the body could hold at this frequency
        tried[key] = (score, res, element)
        return score

    scores = [evaluate(f) for f in grid_hz]
    k = int(np.argmin(scores))
    lo = np.log(grid_hz[max(k - 1, 0)])
    hi = np.log(grid_hz[min(k + 1, len(grid_hz) - 1)])
    if hi > lo:
        minimize_scalar(lambda lf: evaluate(float(np.exp(lf))), bounds=(lo, hi),
                        method="bounded", options={"xatol": LOG_FREQUENCY_TOL})
    best = min(tried, key=lambda f: tried[f][0])
    if not np.isfinite(tried[best][0]):
        raise TissueNotFound("no tissue element of positive mass under half the body's fits "
                             f"this posture at {min(grid_hz):g}-{max(grid_hz):g} Hz")
    s_lnf, added = _frequency_uncertainty(lambda lf: converge(
        np.exp(lf), start, POINT_ITERATIONS, fit_mass=False)[0], np.log(best),
        tried[best][1], rate_hz, resid_band)
    # stiffer: above the frequency found by more than its own resolution on the grid
    stiffer = tuple(f for f in grid_hz if f > STIFFER_BY * best) or (max(grid_hz),)
    # each link's other tissue at each stiffer frequency, equally likely
    considered, keys = _considered_elements(
        other_tissue, stiffer, lambda o, f: o.mass_std_kg ** 2 / len(stiffer), damping_ratio,
        cols_band)
    res, element, beta, point = converge(best, tried[best][2].point_platform_m, 1,
                                         added_cov=added, considered_tissue=considered)
    if added is None:
        res.warnings.append(f"soft tissue: the profile over its frequency is not curved up at "
                            f"its best ({best:.2f} Hz), so the frequency is not determined and "
                            "the standard errors leave its uncertainty out")
    cov = res.tissue["cov"]
    point = beta[1:] / beta[0] if beta[0] > 0 else element.point_platform_m
    return TissueFit(res, element, float(beta[0]), float(np.sqrt(max(cov[0, 0], 0.0))),
                     np.asarray(point, float), [(f, v[0]) for f, v in tried.items()], s_lnf,
                     tuple(other_tissue), stiffer if other_tissue else (),
                     *_considered_share(res, keys))


def _considered_elements(tissue: tuple[OtherTissue, ...], frequencies_hz: tuple[float, ...],
                         variance: Callable[[OtherTissue, float], float],
                         damping_ratio: float, cols_band: tuple[float, float]
                         ) -> tuple[tuple[tuple[TissueElement, float], ...], list[str]]:
    """One consider element (``fit_posture``'s ``considered_tissue``) per link's tissue and
    frequency, of variance ``variance(tissue, frequency)`` (kg^2); and their keys
    ("link@frequency"), by which the postures that carry the same tissue share it."""
    pairs = [(o, f) for o in tissue for f in frequencies_hz]
    considered = tuple((TissueElement(float(f), damping_ratio, o.point_platform_m, cols_band),
                        float(variance(o, f))) for o, f in pairs)
    return considered, [f"{o.link}@{f:g}Hz" for o, f in pairs]


def _considered_share(res, keys: list[str]) -> tuple[dict | None, dict[str, np.ndarray]]:
    """A fit's considered tissue: its share of the COM's and inertia's standard errors, and
    per key its shift of the posture's ``[h, J0]`` at one standard deviation."""
    if res.considered is None:
        return None, {}
    return res.considered["other_std"], {k: res.considered["other_shared"][:, i].copy()
                                         for i, k in enumerate(keys)}


def _unknowns(res) -> np.ndarray:
    """A fit's unknowns in its own order: the object's nine, the breath's, the tissue's."""
    parts = [res.params.pi[1:]]
    if res.breath is not None:
        parts.append(res.breath["beta"])
    parts.append(res.tissue["beta"])
    return np.concatenate(parts)


def _frequency_uncertainty(fit_at: Callable[[float], object], ln_f: float, best_fit,
                           rate_hz: float, band: tuple[float, float]
                           ) -> tuple[float, np.ndarray | None]:
    """The standard error of ln(frequency) and what it adds to the fit's covariance.

    The profile's residual in the rig's band, as a chi-square: per wrench component its
    power over the best fit's, times the independent samples it holds (:func:`_band_power`;
    so the best fit's reduced chi-square is one: the residual's model error counts as
    noise, which widens the interval). Its curvature over ``ln f`` gives the standard error; the fits a
    step either side give the unknowns' derivative, whose outer product times the variance
    is added to their covariance (the frequency's share of their uncertainty, which the
    linear fit at a fixed frequency leaves out). ``best_fit`` is the profile's fit at
    ``ln_f``; ``fit_at(ln f)`` fits at another frequency the same way."""
    step = LOG_FREQUENCY_STEP
    fits = [fit_at(ln_f - step), best_fit, fit_at(ln_f + step)]
    powers = [_band_power(r, rate_hz, band) for r in fits]
    p0, n_eff = powers[1]
    delta = [float(np.sum(n_eff * (p - p0) / p0)) for p, _ in (powers[0], powers[2])]
    curvature = (delta[0] + delta[1]) / step ** 2
    if not curvature > 0:
        return float("inf"), None
    s_lnf = float(np.sqrt(2.0 / curvature))
    slope = (_unknowns(fits[2]) - _unknowns(fits[0])) / (2 * step)
    return s_lnf, np.outer(slope, slope) * s_lnf ** 2


def tissue_evidence(fit: Callable[..., object], *, start_point_platform_m: np.ndarray,
                    rate_hz: float, top_mode_hz: float, body_mass_kg: float,
                    damping_ratio: float = DAMPING_RATIO) -> dict:
    """Whether the posture carries wobbling tissue: one element fitted at
    :data:`EVIDENCE_FREQUENCY_HZ` (three fits). Seen when its mass is
    :data:`EVIDENCE_SIGMAS` standard errors above zero and at least
    :data:`EVIDENCE_MASS_FRACTION` of the body's.

    On the simulator a rigid body's element stays within one standard error of zero and a
    fifth of the trunk wobbling at 5 Hz shows at 4-6; the apparent mass by band (the report's
    Soft tissue check) saw the same tissue in 5 postures of 12 and a rigid body at 2.3
    standard errors.

    Parameters are those of :func:`fit_with_tissue` (``fit`` takes ``fit_mass``), and the
    body's mass.
    """
    cols_band, _ = rig_bands(top_mode_hz, rate_hz)
    point = np.asarray(start_point_platform_m, float)
    for _ in range(2):
        element = TissueElement(EVIDENCE_FREQUENCY_HZ, damping_ratio, point, cols_band)
        res = fit(tissue=(element,), fit_mass=False)
        beta, cov = res.tissue["beta"], res.tissue["cov"]
        if not beta[0] > 0:
            break
        point = beta[1:] / beta[0]
    std = float(np.sqrt(max(cov[0, 0], 0.0)))
    return {"seen": _seen(float(beta[0]), std, body_mass_kg),
            "frequency_hz": EVIDENCE_FREQUENCY_HZ, "mass_kg": float(beta[0]),
            "mass_std_kg": std}


def _seen(mass_kg: float, std_kg: float, body_mass_kg: float) -> bool:
    return bool(mass_kg > EVIDENCE_SIGMAS * std_kg
                and mass_kg >= EVIDENCE_MASS_FRACTION * body_mass_kg)


def joint_tissue_evidence(evidences: list[dict], body_mass_kg: float) -> dict:
    """The postures' evidence for tissue taken together: the tissue is the body's, so its
    element's mass at :data:`EVIDENCE_FREQUENCY_HZ` is one number that each posture measures
    (:func:`tissue_evidence`); their inverse-variance mean and its standard error, seen by
    the same rule as one posture's. A rigid body's postures each pass that rule by chance
    about once in a thousand (a one-sided 3-standard-error test; on the simulated four-link
    dummy at 0.1-0.2 mm noise, 2 postures of 200), which the others then contradict; a
    wobbling body's all show it (4-6 standard errors each).

    Parameters
    ----------
    evidences : list of dict
        Each posture's ``mass_kg`` and ``mass_std_kg`` (postures without evidence left out).
    body_mass_kg : float

    Returns
    -------
    dict
        ``seen``, ``mass_kg``, ``mass_std_kg``, ``postures``.
    """
    used = [e for e in evidences if e and np.isfinite(e.get("mass_std_kg", np.nan))
            and e["mass_std_kg"] > 0]
    if not used:
        return {"seen": False, "mass_kg": float("nan"), "mass_std_kg": float("nan"),
                "postures": 0}
    w = np.array([1.0 / e["mass_std_kg"] ** 2 for e in used])
    mass = float(np.sum(w * np.array([e["mass_kg"] for e in used])) / w.sum())
    std = float(1.0 / np.sqrt(w.sum()))
    return {"seen": _seen(mass, std, body_mass_kg), "mass_kg": mass, "mass_std_kg": std,
            "postures": len(used)}


@dataclass(frozen=True)
class UnseenTissue:
    """A posture fitted rigid whose tissue the data could not rule out, held in its standard
    errors (:func:`hold_unseen_tissue`)."""

    result: object                        # PostureResult: the rigid estimate, wider covariance
    tissue: tuple[OtherTissue, ...]       # each link's tissue, its prior standard deviation
    found_kg: dict[float, tuple[float, float]]   # per frequency, one element's mass and its
                                                 # standard error
    std: dict | None                      # its share of the COM's and inertia's standard errors
    shared: dict[str, np.ndarray]         # per "link@frequency", its shift of [h, J0] at 1 SD

    def summary(self) -> dict:
        """The report's account (platform frame, SI)."""
        return {"about": "tissue the body may carry and this posture could not rule out: "
                         "held in the standard errors (no mean), not in the estimate, with "
                         "what one element fitted at each frequency leaves of each link's "
                         "prior",
                "frequencies_hz": [float(f) for f in self.found_kg],
                "element_mass_kg": [float(m) for m, _ in self.found_kg.values()],
                "element_mass_std_kg": [float(s) for _, s in self.found_kg.values()],
                **_held_summary(self.tissue, self.std)}


def hold_unseen_tissue(fit: Callable[..., object], *, tissue: tuple[OtherTissue, ...],
                       start_point_platform_m: np.ndarray, rate_hz: float,
                       top_mode_hz: float, damping_ratio: float = DAMPING_RATIO,
                       grid_hz: tuple[float, ...] = FREQUENCY_GRID_HZ) -> UnseenTissue:
    """The rigid fit of a body whose tissue is not seen but not ruled out, with that tissue
    held in its standard errors.

    Each link's tissue ``m_l`` has no mean and its :class:`OtherTissue`'s standard deviation
    ``s_l`` (``S`` the sum of their variances), at any of the grid's frequencies, equally
    likely. At each frequency one element at the body's COM, fitted free, finds ``M +- r``:
    the links' tissue together as this posture resolves it. Given that, link ``l``'s tissue
    has the mean ``s_l^2 M / (S + r^2)`` and the variance ``s_l^2 - s_l^4 / (S + r^2)``
    (the normal posterior of one of independent terms from their noisy sum); the rigid
    estimate carries all of it, so the consider variance of :func:`rigtool.identify.posture.
    equation_error.fit_posture` is their mean square: the mean squared plus the variance.
    Tissue the rig's modes would have shown and did not (small ``r``, ``M`` near zero)
    adds little beyond the links' split, tissue they cannot tell from the rest of the body
    (``r`` well above the prior) its whole prior. The estimate does not change.

    Parameters are those of :func:`fit_with_tissue` (``fit`` takes ``tissue``,
    ``fit_mass`` and ``considered_tissue``), ``tissue`` the links' tissue priors.
    """
    cols_band, _ = rig_bands(top_mode_hz, rate_hz)
    point = np.asarray(start_point_platform_m, float)
    found = {}
    for f in grid_hz:
        res = fit(tissue=(TissueElement(float(f), damping_ratio, point, cols_band),),
                  fit_mass=False)
        found[float(f)] = (float(res.tissue["beta"][0]),
                           float(np.sqrt(max(res.tissue["cov"][0, 0], 0.0))))
    prior_total = sum(o.mass_std_kg ** 2 for o in tissue)

    def mean_square(o: OtherTissue, f: float) -> float:
        mass, std = found[f]
        prior, seen = o.mass_std_kg ** 2, prior_total + std ** 2
        return ((prior * mass / seen) ** 2 + prior - prior ** 2 / seen) / len(grid_hz)

    considered, keys = _considered_elements(tissue, tuple(found), mean_square,
                                            damping_ratio, cols_band)
    res = fit(considered_tissue=considered)
    std, shared = _considered_share(res, keys)
    return UnseenTissue(res, tuple(tissue), found, std, shared)
