"""Which relative-motion fit is reported: the refinement's agreement with its equation-error
start (a Hausman test) and what the choice does when a refinement reaches the noise but
disagrees."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import rigtool.pipeline.relative_model as relative_model
from rigtool.identify.relative.oe_result import AGREEMENT_P, RelativeRefinement


def _covariance(rng: np.random.Generator, n: int, rank: int) -> np.ndarray:
    a = rng.normal(size=(n, rank)) * np.logspace(-4, -1, rank)
    return a @ a.T


def _refinement(phi_b, cov, start_values, start_cov, *, reached=True):
    """What start_agreement and the model choice read of a refinement."""
    start = SimpleNamespace(values=np.asarray(start_values), covariance=start_cov)
    ref = SimpleNamespace(phi_b=np.asarray(phi_b), phi_b_cov=cov, start=start,
                          marker_sigma_mm=0.1, noise_mm=0.1, floor_mm=0.1, elapsed_s=1.0,
                          method="output-error")
    ref.start_agreement = lambda: RelativeRefinement.start_agreement(ref)
    ref.reached_noise = lambda: reached
    return ref


def test_agreement_is_a_chi_square_on_the_sum_of_both_covariances():
    """Differences drawn from the two fits' summed covariance (one of them rank-deficient, as
    a Phi_B with a J_yy held by its bounds) give a statistic whose mean is the sum's rank
    (within 4 standard errors of that mean over the draws: sqrt(2 dof / n)), and they agree
    but for a share of about AGREEMENT_P at most; a difference of 10 standard errors along one
    direction does not agree."""
    rng = np.random.default_rng(7)
    n, draws = 18, 4000
    c_oe, c_ee = _covariance(rng, n, 17), _covariance(rng, n, 18)
    total = c_oe + c_ee
    lower = np.linalg.cholesky(total + 1e-18 * np.eye(n))
    stats, agree = [], []
    for d in rng.normal(size=(draws, n)) @ lower.T:
        out = _refinement(d, c_oe, np.zeros(n), c_ee).start_agreement()
        stats.append(out["chi2"])
        agree.append(out["agrees"])
        assert out["dof"] == n
    assert abs(np.mean(stats) - n) < 4 * np.sqrt(2 * n / draws), np.mean(stats)
    # with the margin, a right pair of covariances is almost never rejected
    assert np.mean(agree) > 1 - AGREEMENT_P
    w, v = np.linalg.eigh(total)
    off = 10 * np.sqrt(w[-1]) * v[:, -1]
    assert not _refinement(off, c_oe, np.zeros(n), c_ee).start_agreement()["agrees"]


def test_a_refinement_that_disagrees_with_its_start_is_not_reported(monkeypatch):
    """The passive model reaches the noise but its Phi_B stands far off the equation-error
    start: the start is reported, the active model is not tried (no model here has the
    disturbance), and the reason says why; one that agrees is reported."""
    rng = np.random.default_rng(3)
    n = 18
    cov = _covariance(rng, n, n)
    start = SimpleNamespace(values=np.zeros(n), covariance=cov)
    tried = []

    def fit(offset):
        def refine(*args, start, **kwargs):
            tried.append(kwargs.get("reject_above"))
            w, v = np.linalg.eigh(2 * cov)
            return _refinement(offset * np.sqrt(w[-1]) * v[:, -1], cov, start.values,
                               start.covariance)
        return refine

    monkeypatch.setattr(relative_model, "refine_relative", fit(30.0))
    monkeypatch.setattr(relative_model, "refine_relative_active", fit(0.0))
    ref, choice = relative_model.refine_relative_motion("auto", start, fit_args=(),
                                                        fit_kwargs={})
    assert ref is None and choice.used == "equation-error"
    assert [t["model"] for t in choice.tried] == ["passive"]
    assert not choice.tried[0]["start_agreement"]["agrees"]
    assert "disturbance" in choice.reason and "chi-square" in choice.reason
    monkeypatch.setattr(relative_model, "refine_relative", fit(0.5))
    ref, choice = relative_model.refine_relative_motion("auto", start, fit_args=(),
                                                        fit_kwargs={})
    assert ref is not None and choice.used == "passive"


def test_no_refinement_is_tried_when_the_postures_scattered_beyond_their_errors(monkeypatch):
    """Phi_s's standard errors scaled by the Birge ratio (the postures, fitted by output
    error, took a disturbance for noise): no output-error model is tried on the movement,
    the equation-error start stands, and the reason gives the ratio; at a ratio of 1 the
    same refinement is tried and reported."""
    rng = np.random.default_rng(5)
    n = 18
    cov = _covariance(rng, n, n)
    start = SimpleNamespace(values=np.zeros(n), covariance=cov)
    tried = []

    def refine(*args, start, **kwargs):
        tried.append("passive")
        return _refinement(np.zeros(n), cov, start.values, start.covariance)

    monkeypatch.setattr(relative_model, "refine_relative", refine)
    ref, choice = relative_model.refine_relative_motion("auto", start, fit_args=(),
                                                        fit_kwargs={}, postures_se_scale=1.8)
    assert ref is None and choice.used == "equation-error" and not choice.tried
    assert tried == [] and "1.80" in choice.reason and "scattered" in choice.reason
    ref, choice = relative_model.refine_relative_motion("auto", start, fit_args=(),
                                                        fit_kwargs={}, postures_se_scale=1.0)
    assert ref is not None and choice.used == "passive" and tried == ["passive"]
