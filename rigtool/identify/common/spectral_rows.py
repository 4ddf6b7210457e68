"""Equation-error rows with coloured noise, made independent in the frequency domain.

An equation-error fit of a capture stacks, per frame, ``a(t) @ theta = b(t)`` whose noise
is far from white: it comes from twice-differentiated marker positions (its spectrum rises
as ``f^4`` up to the filter's cutoff) and the zero-phase filter correlates neighbouring
frames. Weighting every frame alike then gives valid estimates but standard errors that
are wrong by large factors, and in both directions: a parameter excited at low frequency
(a robot's joints moved at a fraction of a hertz) sees little of the noise that sets the
rows' RMS, one excited near the cutoff sees more.

The relation holds frame by frame, so it holds after any linear map of the time series:
the discrete Fourier transform of every column and of ``b`` keeps ``A_k theta = B_k`` for
every frequency bin ``k``. For stationary noise the bins are nearly independent, bin
``k`` with variance ``E|N_k|^2``, which the periodogram of a first fit's residual estimates
(smoothed over neighbouring bins). Each bin's real and imaginary parts divided by their
standard deviation are then rows with independent unit-variance noise: the weighted fit is
Whittle's frequency-domain generalised least squares, and ``(A_w^T A_w)^-1`` its
covariance. Bins above the filter's passband carry no signal and are left out.

Frames the capture lost are rows of zeros (``0 = 0`` holds exactly), so the time series
stay uniformly sampled.

Hand-written: scipy and statsmodels have the pieces (rfft, periodogram smoothing) but no
frequency-domain GLS for a stacked multi-output regression.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.signal
from scipy.ndimage import uniform_filter1d


@dataclass(frozen=True)
class SpectralRows:
    """Whitened frequency-domain rows ``a @ theta = b`` (independent, unit variance).

    Attributes
    ----------
    a, b : ndarray
        ``[rows, p]`` and ``[rows]``.
    noise_psd : ndarray
        ``[bins, c]``: the smoothed ``E|N_k|^2`` per kept bin and output component (the
        squared units of ``b`` times frames).
    frequency_hz : ndarray
        The kept bins' frequencies.
    """

    a: np.ndarray
    b: np.ndarray
    noise_psd: np.ndarray
    frequency_hz: np.ndarray


def spectral_rows(a_t: np.ndarray, b_t: np.ndarray, dt_s: float, f_max_hz: float, *,
                  theta0: np.ndarray | None = None, smooth_bins: int = 9,
                  taper: float = 0.0, iterations: int = 3) -> SpectralRows:
    """Independent, unit-variance rows from a frame-wise equation (module docstring).

    Parameters
    ----------
    a_t : ndarray (T, c, p)
        Per frame the ``c`` equations' rows (uniform sampling; lost frames zero).
    b_t : ndarray (T, c)
        Their right-hand sides.
    dt_s : float
        The frame period.
    f_max_hz : float
        Highest frequency kept (the zero-phase filter's passband edge).
    theta0 : ndarray (p,), optional
        A first estimate for the residual whose spectrum weights the rows (default: the
        least-squares fit of these rows, each equation scaled by its RMS).
    smooth_bins : int
        Width of the moving average over bins that smooths the residual's periodogram
        (odd; 9 bins leave each weight's relative error about 1/3).
    taper : float
        Fraction of the span in the cosine tapers at its ends (a Tukey window, applied to
        every column and ``b`` alike): the filtered signals' edges would otherwise leak
        into every bin.
    iterations : int
        Weights, fit, weights again: the first weights come from ``theta0``'s residual.

    Returns
    -------
    SpectralRows
    """
    a_t = np.asarray(a_t, float)
    b_t = np.asarray(b_t, float)
    t, c, p = a_t.shape
    w = scipy.signal.windows.tukey(t, taper)[:, None]
    freq = np.fft.rfftfreq(t, dt_s)
    keep = freq <= f_max_hz
    a_f = np.fft.rfft(a_t * w[..., None], axis=0)[keep]              # [F, c, p]
    b_f = np.fft.rfft(b_t * w, axis=0)[keep]
    # the DC bin (and a Nyquist bin, never kept here) is real: variance E|N|^2; the others'
    # real and imaginary parts each carry half of it
    half = np.where(freq[keep] == 0.0, 1.0, 0.5)[:, None]
    nonzero = freq[keep] > 0.0
    n_f = a_f.shape[0]

    def rows(sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a_re, a_im = a_f.real / sd[..., None], a_f.imag / sd[..., None]
        b_re, b_im = b_f.real / sd, b_f.imag / sd
        return (np.concatenate([a_re.reshape(-1, p), a_im[nonzero].reshape(-1, p)]),
                np.concatenate([b_re.reshape(-1), b_im[nonzero].reshape(-1)]))

    def fit(sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The weighted fit and each bin's share of its noise the fit absorbs (leverage;
        the rows' range from the SVD: the rows may not determine every parameter)."""
        a_rows, b_rows = rows(sd)
        u, sv, vt = np.linalg.svd(a_rows, full_matrices=False)
        r = int(np.sum(sv > 1e-10 * sv[0]))
        u, sv, vt = u[:, :r], sv[:r], vt[:r]
        theta = vt.T @ ((u.T @ b_rows) / sv)
        lev = np.sum(u ** 2, axis=1)
        lev_im = np.zeros((n_f, c))
        lev_im[nonzero] = lev[n_f * c:].reshape(-1, c)
        lev_re = lev[:n_f * c].reshape(n_f, c)
        return theta, np.where(nonzero[:, None], 0.5 * (lev_re + lev_im), lev_re)

    # a fit weighted alike at every frequency (each equation by its RMS), then weights from
    # its residual, a weighted fit, weights from that one's residual ...: the misfit of a
    # fit weighted alike would swamp the noise where the noise is low
    if theta0 is None:
        scale = np.sqrt(np.mean(np.abs(b_f) ** 2, axis=0))
        sd = np.broadcast_to(np.where(scale > 0, scale, 1.0), (n_f, c))
        theta0, leverage = fit(sd)
    else:
        leverage = np.zeros((n_f, c))
    for it in range(iterations):
        r_f = b_f - a_f @ theta0                                      # [F, c]
        # a bin's residual power is (1 - leverage) of its noise's: a parameter seen in few
        # bins (a constant's DC) would otherwise make them look noise-free
        psd = _neighbours_mean(np.abs(r_f) ** 2, smooth_bins) / np.maximum(
            _neighbours_mean(1.0 - leverage, smooth_bins), 0.1)
        psd = np.maximum(psd, 1e-12 * max(float(psd.max()), np.finfo(float).tiny))
        sd = np.sqrt(half * psd)
        theta0, leverage = fit(sd)
    a_rows, b_rows = rows(sd)
    return SpectralRows(a_rows, b_rows, psd, freq[keep])


def _neighbours_mean(x: np.ndarray, width: int) -> np.ndarray:
    """Per bin the mean over the ``width`` bins centred on it but itself (edges mirrored):
    a weight that leaves the bin's own noise out does not favour the bins whose noise
    happened to be small (feasible least squares' optimism)."""
    total = uniform_filter1d(x, size=width, axis=0, mode="mirror") * width
    return (total - x) / (width - 1)


def uniform_frames(valid: np.ndarray) -> np.ndarray:
    """The frames from the first to the last valid one (the span the transform covers);
    the invalid ones among them are to be zero rows."""
    idx = np.flatnonzero(valid)
    if idx.size == 0:
        return idx
    return np.arange(idx[0], idx[-1] + 1)


__all__ = ["SpectralRows", "spectral_rows", "uniform_frames"]
