"""Wobbling soft tissue as a frequency-dependent apparent mass (a locked posture's model).

A person's soft tissue (viscera, the trunk's and the thighs' and shanks' muscle and fat)
is not fixed to the bones: it rides on them as masses on damped springs at 4-15 Hz with
damping ratios of 0.2-0.5 (Gruber et al. 1998, J Biomech 31:439; Pain & Challis 2001, J Appl
Biomech 17:101). A tissue mass ``mu`` on a damped spring (frequency ``wn``, damping ratio
``zeta``) whose attachment accelerates by ``a`` pushes on it with ``mu H(s) a``,

    H(s) = (wn^2 + 2 zeta wn s) / (s^2 + 2 zeta wn s + wn^2),

so at a rig mode at ``r = w / wn`` it weighs ``mu (1 + 2 i zeta r) / (1 - r^2 + 2 i zeta r)``:
about ``mu (1 + r^2)`` below resonance, more in the rig's higher (vertical and rocking)
modes than in its pendulum modes. A rigid fit, which has one mass distribution for every
mode, then trades COM against inertia (millimetres and several per cent on a person).

To first order in the rig's small motion the tissue's wrench on the body is the rigid
wrench of its mass distribution plus ``Y(D(a - g), 0, D(w')) beta``, where ``D`` is the
linear filter ``H(s) - 1`` applied to the platform's acceleration minus gravity and angular
acceleration (platform axes) and ``beta`` the tissue's inertial parameters. The tissue is
modelled as one element per posture: a point mass ``mu`` at ``p`` (platform frame) with one
frequency and damping ratio; the fit takes ``mu`` and ``mu p`` as four more unknowns (the
point's second moment ``mu (|p|^2 1 - p p^T)`` linearised about the previous estimate of
``p`` and iterated), and the frequency from a grid by the residual. The rigid parameters
the fit reports are then the body's mean mass distribution (tissue at rest included): what
a dummy or a simulation of the person should carry.

Why by hand: the filter is a second-order section (scipy.signal.bilinear and lfilter do
it); no library writes this regressor.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import signal

from rigtool.inertia import regressor_body

__all__ = ["TissueElement", "increment_filter", "deflection_filter", "settle_frames",
           "tissue_columns",
           "N_TISSUE_UNKNOWNS", "FREQUENCY_GRID_HZ", "DAMPING_RATIO"]

#: unknowns of one tissue element: its mass and first moment (platform frame)
N_TISSUE_UNKNOWNS = 4
#: the tissue frequencies tried (Hz): the literature's range for viscera and limb tissue
FREQUENCY_GRID_HZ = (3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 13.0)
#: the tissue's damping ratio (Pain & Challis 2006, J Biomech 39:2128: ~0.2-0.5)
DAMPING_RATIO = 0.3
#: frames the filter needs to forget its unknown starting state, in its time constants
SETTLE_TIME_CONSTANTS = 5.0


@dataclass(frozen=True)
class TissueElement:
    """One wobbling-tissue element: frequency (Hz), damping ratio, the point it acts at
    (platform frame, m; the linearisation point of its second moment) and the band the
    rig's motion fills (pass and stop edges, Hz; None: the capture's own filter only)."""

    frequency_hz: float
    damping_ratio: float
    point_platform_m: np.ndarray
    band_hz: tuple[float, float] | None = None


def increment_filter(frequency_hz: float, damping_ratio: float, rate_hz: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Digital ``(b, a)`` of ``H(s) - 1 = -s^2 / (s^2 + 2 zeta wn s + wn^2)``: what the
    tissue's acceleration adds to its attachment's (Tustin)."""
    return _section([-1.0, 0.0, 0.0], frequency_hz, damping_ratio, rate_hz)


def deflection_filter(frequency_hz: float, damping_ratio: float, rate_hz: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Digital ``(b, a)`` of ``-1 / (s^2 + 2 zeta wn s + wn^2)``: the tissue's deflection on
    its attachment per acceleration of the attachment (m per m/s^2)."""
    return _section([-1.0], frequency_hz, damping_ratio, rate_hz)


def _section(numerator, frequency_hz: float, damping_ratio: float, rate_hz: float):
    # Tustin without prewarping: what the fit needs right is the response at the rig's
    # modes, well below the tissue's frequency, where the map's warp is (w T)^2 / 12
    # (0.1 % at 2 Hz and 100 Hz); prewarping at the tissue's frequency would put its
    # warp (0.8 % at 5 Hz) into the apparent mass there instead
    wn = 2 * np.pi * frequency_hz
    return signal.bilinear(numerator, [1.0, 2 * damping_ratio * wn, wn ** 2], fs=rate_hz)


def _filtered(x: np.ndarray, ba: tuple[np.ndarray, np.ndarray], settle: int) -> np.ndarray:
    """A causal section along the first axis, one pass per run of finite frames, each
    started at rest on its first value; NaN where ``x`` is and over ``settle`` frames after
    each start (the tissue's state there is its unknown motion before)."""
    x = np.asarray(x, float)
    flat = x.reshape(len(x), -1)
    ok = np.all(np.isfinite(flat), axis=1)
    out = np.full_like(flat, np.nan)
    b, a = ba
    zi0 = signal.lfilter_zi(b, a)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], ok.astype(np.int8), [0]])))
    for start, stop in zip(edges[::2], edges[1::2]):
        seg = flat[start:stop]
        y, _ = signal.lfilter(b, a, seg, axis=0, zi=zi0[:, None] * seg[:1])
        y[:settle] = np.nan
        out[start:stop] = y
    return out.reshape(x.shape)


def settle_frames(element: TissueElement, rate_hz: float) -> int:
    """Frames the tissue takes to forget its state (its time constant times
    ``SETTLE_TIME_CONSTANTS``)."""
    return int(np.ceil(SETTLE_TIME_CONSTANTS * rate_hz
                       / (element.damping_ratio * 2 * np.pi * element.frequency_hz)))


def tissue_columns(accel_minus_gravity_body: np.ndarray, omega_body: np.ndarray,
                   omega_dot_body: np.ndarray, rate_hz: float,
                   element: TissueElement) -> np.ndarray:
    """The tissue element's regressor ``[T, 6, 4]`` (platform components, about its origin).

    ``wrench = cols @ [mu, mu p_x, mu p_y, mu p_z]`` is what the element adds to the rigid
    wrench of its mass at rest. The element's attachment at ``p`` accelerates by
    ``A_p = A + J p`` (``A = a - g``, ``J v = w' x v + w x (w x v)``); the tissue by
    ``H A_p``, and it sits ``x = L (A_p - mean A_p)`` off its rest point (``L`` the
    deflection filter), where the pair of forces between tissue and body acts. So the body
    carries ``F = mu H A_p`` at ``p + x``::

        f = mu A_p + mu D A_p                         (D = H - 1)
        n = p x f + mu x x A_p

    The rigid part (``mu A_p`` at ``p``) is the mass at rest's; the rest is linear in ``mu``
    and ``mu p`` but for ``p x mu D J p``, which is homogeneous of degree one in
    ``(mu, mu p)`` and linearised exactly about ``element.point_platform_m`` (Euler:
    ``g(mu, h) = mu dg/dmu + h . dg/dh``); the deflection's products with ``J p`` are of
    second order in the motion and left out.

    Parameters
    ----------
    accel_minus_gravity_body, omega_body, omega_dot_body : ndarray (T, 3)
        The platform's ``a - g``, ``w`` and ``w'``, platform components (filtered).
    rate_hz : float
        Their sample rate.
    element : TissueElement
    """
    a_mg = np.asarray(accel_minus_gravity_body, float)
    w = np.asarray(omega_body, float)
    wd = np.asarray(omega_dot_body, float)
    p0 = np.asarray(element.point_platform_m, float)

    def j_of(v):
        return np.cross(wd, v) + np.cross(w, np.cross(w, v))

    basis = [j_of(e) for e in np.eye(3)]
    j_p0 = j_of(p0)
    stack = np.concatenate([a_mg, j_p0] + basis, axis=1)            # [T, 15]
    settle = settle_frames(element, rate_hz)
    f, z = element.frequency_hz, element.damping_ratio
    inc = _filtered(stack, increment_filter(f, z, rate_hz), settle)
    ok = np.all(np.isfinite(stack), axis=1)
    # the deflection follows A's change from the rest the tissue settled in (its preload
    # carries the mean); J v has no static part
    dynamic = np.where(ok[:, None], stack - stack[ok].mean(axis=0), np.nan)
    dynamic[:, 3:] = stack[:, 3:]
    defl = _filtered(dynamic, deflection_filter(f, z, rate_hz), settle)
    inc_a, inc_jp0, defl_a = inc[:, :3], inc[:, 3:6], defl[:, :3]
    cols = np.empty(a_mg.shape[:1] + (6, N_TISSUE_UNKNOWNS))
    cols[:, :3, 0] = inc_a
    cols[:, 3:, 0] = -np.cross(p0, inc_jp0) + np.cross(defl_a, a_mg)
    for k, e in enumerate(np.eye(3)):
        inc_je, defl_je = inc[:, 6 + 3 * k:9 + 3 * k], defl[:, 6 + 3 * k:9 + 3 * k]
        cols[:, :3, 1 + k] = inc_je
        cols[:, 3:, 1 + k] = (np.cross(e, inc_a) + np.cross(e, inc_jp0) + np.cross(p0, inc_je)
                              + np.cross(defl_je, a_mg) + np.cross(defl_a, basis[k]))
    if element.band_hz is not None:
        cols = band_limited(cols, rate_hz, element.band_hz)
    return cols


def band_limited(x: np.ndarray, rate_hz: float, band_hz: tuple[float, float]) -> np.ndarray:
    """``x [T, ...]`` through a zero-phase FIR passing the rig's band (gain 1 within 0.05 %
    up to ``band_hz[0]``) and stopping above ``band_hz[1]``.

    The tissue's columns are the platform's motion through ``H - 1``, which passes the
    acceleration's noise above the tissue's frequency whole; the rig's free vibration has
    nothing above its highest mode, so cutting there leaves the tissue's wrench and takes
    most of that noise (an acceleration's noise grows as the frequency to the fourth).
    """
    return _band_filter(float(rate_hz), float(band_hz[0]), float(band_hz[1]))(x)


@lru_cache(maxsize=32)
def _band_filter(rate_hz: float, lo: float, hi: float):
    """The zero-phase FIR of :func:`band_limited` (designed once per band and rate: the
    Parks-McClellan design is most of a call's time)."""
    from rigtool.config import FilterSettings
    from rigtool.kinematics.filtering import ZeroPhaseFilter

    order = int(2 * np.ceil(2.0 * rate_hz / (hi - lo)))        # even, ~4 taps per 1/width
    return ZeroPhaseFilter(FilterSettings("fir", order, lo, hi), rate_hz)
