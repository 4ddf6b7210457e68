"""Correlated marker noise: flicker (1/f) noise common to every marker of a capture (the
camera system's calibration wandering) and per marker (each marker's centroid wandering),
on top of the white noise of ``simulate.add_noise``."""

from __future__ import annotations

import numpy as np


def flicker(n: int, shape: tuple[int, ...], sigma: float, rng: np.random.Generator
            ) -> np.ndarray:
    """``(n, *shape)`` series of zero-mean noise with a power spectral density proportional
    to 1/f from the record's lowest frequency (1/n of the rate) to the Nyquist frequency,
    each series scaled to a root-mean-square of exactly ``sigma``.

    Shaped in the frequency domain: complex Gaussian amplitudes times f^(-1/2), the zero
    frequency dropped.
    """
    m = n // 2 + 1
    f = np.arange(m, dtype=float)
    amp = np.zeros(m)
    amp[1:] = f[1:] ** -0.5
    spec = (rng.standard_normal((m, *shape)) + 1j * rng.standard_normal((m, *shape)))
    x = np.fft.irfft(spec * amp.reshape((m,) + (1,) * len(shape)), n=n, axis=0)
    x -= x.mean(axis=0)
    return sigma * x / np.sqrt(np.mean(x * x, axis=0))


def add_flicker(markers_lab_m: np.ndarray, common_sigma_m: float, marker_sigma_m: float,
                rng: np.random.Generator) -> np.ndarray:
    """``markers_lab_m`` (n, k, 3) plus flicker noise common to every marker
    (``common_sigma_m`` per coordinate) and independent per marker (``marker_sigma_m``)."""
    n, k, _ = markers_lab_m.shape
    out = markers_lab_m + flicker(n, (1, 3), common_sigma_m, rng)
    return out + flicker(n, (k, 3), marker_sigma_m, rng)
