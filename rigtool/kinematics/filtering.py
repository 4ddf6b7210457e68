"""Zero-phase low-pass filtering, gap filling and numerical derivatives of sampled signals.

Conventions
-----------
- Time is the first axis: every function takes ``x`` of shape ``[T, ...]`` and works along
  axis 0, for any trailing shape (``[T, 3]`` positions, ``[T, 6, S]`` wrench columns).
- Missing samples are NaN. A *segment* is a maximal run of frames where every component is
  finite; filters and derivatives never reach across a gap.
- The filter is zero-phase (forward-backward), so its effective response is ``|H(f)|^2``
  (no delay at all). One :class:`ZeroPhaseFilter` object can be applied to any signal, so
  both sides of an equation (kinematics and spring forces) are filtered identically.
"""

from __future__ import annotations

import numpy as np
from scipy import interpolate, signal

from rigtool.config import FilterSettings
from rigtool.errors import InputError

#: Largest error of the forward-backward passband gain ``|H|^2`` that :func:`design_fir`
#: aims for (0.05 %).
PASSBAND_TOL = 5e-4

_PASSBAND_WEIGHTS = (1.0, 3.0, 10.0, 30.0, 100.0, 200.0, 300.0, 500.0, 1000.0)


def _check_band(rate_hz: float, passband_hz: float, stopband_hz: float) -> None:
    if not rate_hz > 0:
        raise InputError("expected a positive frame rate", field="rate_hz", found=rate_hz)
    if not 0 < passband_hz < stopband_hz:
        raise InputError("expected 0 < passband_hz < stopband_hz", field="filter",
                         found=(passband_hz, stopband_hz))
    if stopband_hz >= rate_hz / 2:
        raise InputError(f"the filter stopband ({stopband_hz:g} Hz) must lie below half the "
                         f"frame rate ({rate_hz / 2:g} Hz); lower filter.stopband_hz",
                         field="filter.stopband_hz", found=stopband_hz)


def design_fir(rate_hz: float, order: int = 50, passband_hz: float = 5.0,
               stopband_hz: float = 10.0) -> np.ndarray:
    """Linear-phase low-pass FIR taps (``order + 1`` of them) by the Parks-McClellan method.

    Parameters
    ----------
    rate_hz : float
        Sampling rate, Hz.
    order : int
        Filter order (number of taps minus one); paper 002 uses 50.
    passband_hz, stopband_hz : float
        Edges of the pass band and the stop band, Hz; between them lies the transition band.

    Returns
    -------
    ndarray, shape (order + 1,)
        Taps ``b`` (numerator; the denominator is 1).

    Notes
    -----
    ``scipy.signal.remez`` with the pass band weighted over the stop band: the smallest
    weight from a fixed ladder for which the forward-backward gain ``|H(f)|^2`` stays
    within :data:`PASSBAND_TOL` of 1 on ``[0, passband_hz]`` (the largest weight if none
    does). Applied forward and backward (:class:`ZeroPhaseFilter`), the effective response
    is ``|H(f)|^2``: zero phase, passband error squared-ripple, stopband attenuation
    doubled in dB. At 120 Hz with the defaults (order 50, 5/10 Hz) this gives a passband
    error below 0.05 % and about -44 dB (forward-backward) in the stop band.
    """
    _check_band(rate_hz, passband_hz, stopband_hz)
    if isinstance(order, bool) or int(order) != order or order < 2:
        raise InputError("expected a whole filter order >= 2", field="filter.order",
                         found=order)
    numtaps = int(order) + 1
    f_pass = np.linspace(0.0, passband_hz, 64)
    taps = None
    for wp in _PASSBAND_WEIGHTS:
        try:
            b = signal.remez(numtaps, [0.0, passband_hz, stopband_hz, rate_hz / 2], [1.0, 0.0],
                             weight=[wp, 1.0], fs=rate_hz, maxiter=100)
        except ValueError:  # remez failed to converge for this weight
            continue
        taps = b
        _, h = signal.freqz(b, worN=f_pass, fs=rate_hz)
        if np.max(np.abs(np.abs(h) ** 2 - 1.0)) <= PASSBAND_TOL:
            break
    if taps is None:
        raise InputError("could not design the FIR filter; widen the transition band "
                         "(stopband_hz - passband_hz) or raise the order", field="filter",
                         found=(order, passband_hz, stopband_hz))
    return taps


def segments(mask: np.ndarray) -> list[tuple[int, int]]:
    """Runs of True in a ``[T]`` mask, as ``(start, stop)`` slices."""
    m = np.concatenate([[False], np.asarray(mask, dtype=bool), [False]])
    d = np.diff(m.astype(np.int8))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


def _finite_rows(x: np.ndarray) -> np.ndarray:
    return np.all(np.isfinite(x.reshape(x.shape[0], -1)), axis=1)


class ZeroPhaseFilter:
    """Forward-backward low-pass filter applied along axis 0, segment by segment.

    Parameters
    ----------
    settings : FilterSettings
        ``method`` "fir" (Parks-McClellan FIR of :func:`design_fir`, run by
        ``scipy.signal.filtfilt``) or "butterworth" (``order``-th order Butterworth with its
        -3 dB point at the geometric mean of the pass and stop band edges, as second-order
        sections run by ``scipy.signal.sosfiltfilt``).
    rate_hz : float
        Sampling rate, Hz.
    mask : ndarray of bool, shape (T,), optional
        Fixes the segments: frames outside the mask are output as NaN and never mix with
        their neighbours. Use :meth:`bound` to get such a filter.

    Attributes
    ----------
    transient_frames : int
        Frames at each end of a segment whose output depends on the edge padding
        (the half-length of the forward-backward impulse response).
    impulse_frames : int
        Longest lag (frames) over which filtered white noise stays correlated.
    min_segment_frames : int
        Shortest segment that is filtered (``2 * transient_frames + 1``); shorter ones
        give NaN, since none of their frames would be free of the edge transient.
    """

    def __init__(self, settings: FilterSettings, rate_hz: float, *,
                 mask: np.ndarray | None = None) -> None:
        self.settings = settings
        self.rate_hz = float(rate_hz)
        self.mask = None if mask is None else np.asarray(mask, dtype=bool)
        _check_band(rate_hz, settings.passband_hz, settings.stopband_hz)
        if settings.method == "fir":
            self.taps = design_fir(rate_hz, settings.order, settings.passband_hz,
                                   settings.stopband_hz)
            self.sos = None
            self.transient_frames = len(self.taps) - 1
        elif settings.method == "butterworth":
            if isinstance(settings.order, bool) or settings.order < 1 or settings.order > 12:
                raise InputError("expected a Butterworth order between 1 and 12",
                                 field="filter.order", found=settings.order)
            cutoff = float(np.sqrt(settings.passband_hz * settings.stopband_hz))
            self.taps = None
            self.sos = signal.butter(int(settings.order), cutoff, fs=rate_hz, output="sos")
            # Length over which the (one-pass) impulse response decays to 0.1 % of its
            # total absolute area: beyond it the edge padding no longer matters.
            imp = signal.sosfilt(self.sos, np.r_[1.0, np.zeros(int(20 * rate_hz))])
            tail = np.cumsum(np.abs(imp)[::-1])[::-1]
            self.transient_frames = int(np.argmax(tail < 1e-3 * tail[0]))
        else:
            raise InputError("expected filter method 'fir' or 'butterworth'",
                             field="filter.method", found=settings.method)
        self.impulse_frames = 2 * self.transient_frames
        self.min_segment_frames = 2 * self.transient_frames + 1

    def bound(self, mask: np.ndarray) -> "ZeroPhaseFilter":
        """The same filter with its segments fixed by ``mask`` (see class doc)."""
        f = object.__new__(ZeroPhaseFilter)
        f.__dict__.update(self.__dict__)
        f.mask = np.asarray(mask, dtype=bool)
        return f

    def __call__(self, x: np.ndarray, /) -> np.ndarray:
        """Filter ``x [T, ...]`` along axis 0 (segments: finite rows, within ``mask``)."""
        return self.zero_phase(x, self.mask)

    def zero_phase(self, x: np.ndarray, valid_mask: np.ndarray | None = None, /
                   ) -> np.ndarray:
        """Filter ``x [T, ...]`` along axis 0, each segment on its own.

        Segments are the runs of frames that are in ``valid_mask`` (all frames if None) and
        finite in every component. Frames outside segments, and segments shorter than
        :attr:`min_segment_frames`, come out NaN.
        """
        x = np.asarray(x, dtype=float)
        ok = _finite_rows(x)
        if valid_mask is not None:
            if np.shape(valid_mask) != (x.shape[0],):
                raise InputError(f"expected a mask of {x.shape[0]} frames",
                                 field="valid_mask", found=np.shape(valid_mask))
            ok &= np.asarray(valid_mask, dtype=bool)
        out = np.full_like(x, np.nan)
        for a, b in segments(ok):
            if b - a >= self.min_segment_frames:
                out[a:b] = self._run(x[a:b])
        return out

    def _run(self, seg: np.ndarray) -> np.ndarray:
        n = seg.shape[0]
        if self.sos is not None:
            return signal.sosfiltfilt(self.sos, seg, axis=0, padtype="odd",
                                      padlen=min(3 * self.transient_frames, n - 1))
        # Odd (point-symmetric) extension keeps value and slope continuous at the edges.
        return signal.filtfilt(self.taps, [1.0], seg, axis=0, padtype="odd",
                               padlen=min(3 * len(self.taps), n - 1))

    def steady(self, valid_mask: np.ndarray | None = None, n_frames: int | None = None
               ) -> np.ndarray:
        """Frames ``[T]`` of the segments that lie outside the edge transients.

        Segments come from ``valid_mask``, else from the bound mask, else ``n_frames``
        frames form one segment.
        """
        mask = self.mask if valid_mask is None else np.asarray(valid_mask, dtype=bool)
        if mask is None:
            if n_frames is None:
                raise InputError("give valid_mask or n_frames (this filter has no segments "
                                 "bound)", field="valid_mask")
            mask = np.ones(int(n_frames), dtype=bool)
        out = np.zeros(mask.shape[0], dtype=bool)
        k = self.transient_frames
        for a, b in segments(mask):
            if b - a >= self.min_segment_frames:
                out[a + k:b - k] = True
        return out

    def response(self, freq_hz: np.ndarray) -> np.ndarray:
        """Effective (forward-backward) gain ``|H(f)|^2`` at ``freq_hz``."""
        f = np.asarray(freq_hz, dtype=float)
        if self.sos is not None:
            _, h = signal.sosfreqz(self.sos, worN=f, fs=self.rate_hz)
        else:
            _, h = signal.freqz(self.taps, worN=f, fs=self.rate_hz)
        return np.abs(h) ** 2

    def __repr__(self) -> str:
        s = self.settings
        return (f"ZeroPhaseFilter({s.method}, order={s.order}, {s.passband_hz:g}/"
                f"{s.stopband_hz:g} Hz at {self.rate_hz:g} Hz)")


def _fd_weights(offsets: np.ndarray, deriv: int) -> np.ndarray:
    """Finite-difference weights for the ``deriv``-th derivative at 0 from samples at
    integer ``offsets`` (unit spacing): solve the moment (Vandermonde) system. Hand-written
    because numpy/scipy offer no arbitrary-stencil weights; the stencils are 7 points, so
    the system is tiny and well conditioned enough in float64."""
    n = len(offsets)
    a = np.vander(np.asarray(offsets, dtype=float), n, increasing=True).T
    rhs = np.zeros(n)
    rhs[deriv] = float(np.prod(np.arange(1, deriv + 1)))
    return np.linalg.solve(a, rhs)


_STENCIL = 7
_HALF = _STENCIL // 2


def derivative(x: np.ndarray, rate_hz: float, order: int = 1) -> np.ndarray:
    """First or second time derivative along axis 0 by 7-point finite differences.

    Central 7-point stencils inside (6th-order accurate: amplitude error about
    ``(w h)^6 / 140`` for the first derivative, ``(w h)^6 / 560`` for the second, i.e.
    < 1e-4 % at 4 Hz sampled at 120 Hz); one-sided 7-point stencils at the three first and
    last frames. Differentiate *filtered* data: the stencils amplify noise near Nyquist.

    Parameters
    ----------
    x : ndarray, shape (T, ...)
        Samples at a constant rate, with T >= 7; NaN propagates to the neighbours.
    rate_hz : float
        Sampling rate, Hz.
    order : {1, 2}
        Derivative order.

    Returns
    -------
    ndarray, shape like ``x``
    """
    if order not in (1, 2):
        raise InputError("expected derivative order 1 or 2", field="order", found=order)
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    if n < _STENCIL:
        raise InputError(f"expected at least {_STENCIL} frames to differentiate",
                         field="x", found=n)
    h = 1.0 / rate_hz
    scale = h ** order
    out = np.empty_like(x)
    w = _fd_weights(np.arange(-_HALF, _HALF + 1), order)
    acc = np.zeros_like(x[_HALF:n - _HALF])
    for j, c in enumerate(w):  # loop over the 7 stencil taps, vectorised over frames
        acc += c * x[j:n - _STENCIL + 1 + j]
    out[_HALF:n - _HALF] = acc / scale
    for i in range(_HALF):  # one-sided stencils at the 3 first and 3 last frames
        wl = _fd_weights(np.arange(_STENCIL) - i, order)
        out[i] = np.tensordot(wl, x[:_STENCIL], axes=(0, 0)) / scale
        wr = _fd_weights(np.arange(_STENCIL) - (_STENCIL - 1 - i), order)
        out[n - 1 - i] = np.tensordot(wr, x[n - _STENCIL:], axes=(0, 0)) / scale
    return out


def short_gaps(missing: np.ndarray, max_gap_frames: int) -> np.ndarray:
    """Frames ``[T]`` of interior runs of ``missing`` no longer than ``max_gap_frames``
    (runs touching the first or last frame are never short gaps: nothing to interpolate
    from on one side)."""
    missing = np.asarray(missing, dtype=bool)
    out = np.zeros_like(missing)
    n = missing.shape[0]
    for a, b in segments(missing):
        if a > 0 and b < n and b - a <= max_gap_frames:
            out[a:b] = True
    return out


def fill_gaps(x: np.ndarray, /, *, rate_hz: float, max_gap_s: float = 0.1
              ) -> tuple[np.ndarray, np.ndarray]:
    """Interpolate short interior gaps (NaN runs) along axis 0 by a cubic spline.

    Parameters
    ----------
    x : ndarray, shape (T, ...)
        Samples, NaN where missing.
    rate_hz : float
        Sampling rate, Hz.
    max_gap_s : float
        Longest gap filled, s (``floor(max_gap_s * rate_hz)`` frames); longer gaps and gaps
        at either end stay NaN and split the record into segments.

    Returns
    -------
    filled : ndarray, shape like ``x``
    interpolated : ndarray of bool, shape (T,)
        Frames where at least one component was interpolated.

    Notes
    -----
    ``scipy.interpolate.CubicSpline`` through all finite samples of a column (columns with
    the same missing pattern are fitted together). A C2 spline rather than PCHIP: PCHIP is
    only C1, and its jumps in curvature would show as spikes in the accelerations.
    """
    x = np.asarray(x, dtype=float)
    if max_gap_s < 0:
        raise InputError("expected max_gap_s >= 0", field="max_gap_s", found=max_gap_s)
    n = x.shape[0]
    flat = x.reshape(n, -1).copy()
    miss = ~np.isfinite(flat)
    interp_rows = np.zeros(n, dtype=bool)
    max_frames = int(np.floor(max_gap_s * rate_hz + 1e-9))
    if max_frames == 0 or not miss.any():
        return x.copy(), interp_rows
    patterns, inverse = np.unique(miss.T, axis=0, return_inverse=True)
    for g, pattern in enumerate(patterns):
        fill = short_gaps(pattern, max_frames)
        if not fill.any() or (~pattern).sum() < 4:
            continue
        cols = np.flatnonzero(inverse.ravel() == g)
        t = np.arange(n, dtype=float)
        spline = interpolate.CubicSpline(t[~pattern], flat[~pattern][:, cols], axis=0)
        flat[np.ix_(fill, cols)] = spline(t[fill])
        interp_rows |= fill
    return flat.reshape(x.shape), interp_rows


def __getattr__(name: str):
    # Motion lives in motion.py (it builds on this module); re-exported here lazily.
    if name in ("Motion", "motion_from_pose"):
        from rigtool.kinematics import motion
        return getattr(motion, name)
    raise AttributeError(name)


__all__ = ["PASSBAND_TOL", "design_fir", "ZeroPhaseFilter", "derivative", "fill_gaps",
           "segments", "short_gaps", "Motion", "motion_from_pose"]
