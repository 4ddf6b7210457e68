"""The probes' covariance shrunk towards its diagonal (rigtool.identify.common.
probe_covariance) against covariances known by construction."""

import numpy as np

from rigtool.identify.common.probe_covariance import shrunk_covariance


def _draws(rng, cov, n):
    return rng.multivariate_normal(np.zeros(len(cov)), cov, size=n)


def test_variances_are_kept_and_noise_correlations_dropped():
    """Independent unknowns of unequal scale, 12 probes of 80: the variances are the sample
    ones to the bit, the correlations (sampling noise only) are shrunk away almost wholly,
    and the estimate has full rank where the sample covariance has rank 12."""
    rng = np.random.default_rng(1)
    scale = np.linspace(1.0, 1e3, 80)
    d = rng.normal(size=(12, 80)) * scale
    cov, intensity = shrunk_covariance(d)
    np.testing.assert_allclose(np.diag(cov), np.mean(d ** 2, axis=0), rtol=1e-12)
    assert intensity > 0.9, intensity
    assert np.linalg.matrix_rank(cov) == 80


def test_a_real_correlation_is_kept():
    """Unknowns that move together (one common factor, 95 % of their variance) keep most of
    their correlation. The intensity is the correlations' estimated sampling variance over
    their square: the products of two standardised shifts vary by about 1 + r^2 = 2, so
    12 probes give about 2 / 12 / 0.9 = 0.19 (the estimate is conservative for strong
    correlations), and the correlation kept is about 0.8 x 0.95."""
    rng = np.random.default_rng(2)
    factor = rng.normal(size=(12, 1))
    d = factor @ np.ones((1, 40)) + 0.23 * rng.normal(size=(12, 40))
    cov, intensity = shrunk_covariance(d)
    assert intensity < 0.3, intensity
    corr = cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    assert np.median(corr[~np.eye(40, dtype=bool)]) > 0.7


def test_closer_to_the_truth_than_the_sample_covariance_with_few_probes():
    """The reason for it: with 12 probes of 60 unknowns whose true correlation decays along
    them (0.6^|i-j|), the shrunk covariance is nearer the truth (Frobenius norm, over 200
    draws) than the sample covariance, and so is its smallest direction's variance (which
    the sample covariance puts at zero)."""
    rng = np.random.default_rng(3)
    idx = np.arange(60)
    truth = 0.6 ** np.abs(idx[:, None] - idx[None, :])
    loss_sample, loss_shrunk, low = [], [], []
    for _ in range(200):
        d = _draws(rng, truth, 12)
        sample = d.T @ d / 12
        cov, _ = shrunk_covariance(d)
        loss_sample.append(np.linalg.norm(sample - truth))
        loss_shrunk.append(np.linalg.norm(cov - truth))
        w, v = np.linalg.eigh(truth)
        low.append(v[:, 0] @ cov @ v[:, 0] / w[0])
    assert np.mean(loss_shrunk) < 0.7 * np.mean(loss_sample)
    assert np.median(low) > 1.0          # the truth's least-variance direction not understated
