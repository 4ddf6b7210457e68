"""A living subject for the simulator: what a person adds to a rigid body lying still.

Each effect is a plain specification; :mod:`rigtool.sim._parts` turns them into the parts
the equations of motion take (a prescribed internal mass, a wobbling point mass on a
damped spring, the object floating on damped pads), and :mod:`rigtool.sim.living_markers`
into what the markers see (chest and abdominal wall, skin sliding on bone). A
:class:`Living` with every effect off leaves the simulation exactly the rigid one.

Magnitudes (defaults) and where they come from
----------------------------------------------
- Breathing. Quiet breathing at 12-20 breaths/min with a tidal volume of ~0.4-0.5 L
  (Tobin et al. 1983, Chest 84:202, "Breathing patterns 1: normal subjects": mean 16.6/min,
  0.38 L); the breath-to-breath coefficient of variation of breath duration and tidal
  volume in healthy adults is ~20-30 % (Tobin et al. 1988, J Appl Physiol 65:309; Bruce
  1996, J Appl Physiol 80:1169 for the long-range correlations). The diaphragm descends
  ~1.5-2 cm in quiet breathing (Boussuges et al. 2009, Chest 135:391: 1.8 +- 0.3 cm) and
  pushes the abdominal contents caudally and ventrally: modelled as an internal mass of a few
  kg moving ~1 cm along a fixed direction of the trunk. The abdominal wall moves ~5-10 mm and
  the chest wall ~2-5 mm antero-posteriorly (Konno & Mead 1967, J Appl Physiol 22:407;
  optoelectronic plethysmography, Aliverti et al. 2000, J Appl Physiol 89:1577).
  Inspiration takes ~40 % of the cycle (Ti/Ttot ~0.4, Tobin 1983).
- Cardiac recoil (ballistocardiogram). Each beat ejects the stroke volume (~70 mL, ~0.075 kg
  of blood) into the aorta; the reaction on the body peaks at ~1-2 N along the head-foot
  axis (Starr et al. 1939, Am J Physiol 127:1; review Inan et al. 2015, IEEE J Biomed
  Health Inform 19:1414). Modelled as a blood mass on a prescribed pulse path, scaled so
  that its peak acceleration times its mass is the given force. Resting heart rate
  60-80/min with a few per cent beat-to-beat variability.
- Wobbling masses. Gruber et al. (1998, J Biomech 31:439) split each segment into a rigid
  bone part and soft-tissue wobbling masses coupled by damped springs; Pain & Challis (2001,
  J Appl Biomech 17:101; 2006, J Biomech 39:2128) measured the damped oscillation of
  thigh/shank soft tissue after impacts at ~4-15 Hz with heavy damping (damping ratios
  ~0.2-0.5). Default: a fifth of the segment's mass at its COM, 6 Hz, damping ratio 0.3.
- Compliant support. A supine trunk rests on the soft tissue of the back (gluteal and
  scapular pads); the body's modes on it are ~4-6 Hz in shear and ~8-10 Hz in compression
  (whole-body supine vertical resonance; Griffin 1990, Handbook of Human Vibration, ch. 5).
  Modelled as four damped pads between the deck and the (locked) object.
- Skin-marker artefact. Markers on skin move relative to bone by millimetres in slow
  motion and follow the soft tissue's vibration (Leardini et al. 2005, Gait Posture 21:212;
  Cappozzo et al. 1996, Clin Biomech 11:90): a slow drift of 0.5-1 mm per marker plus a
  fraction of the segment's wobbling-mass displacement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["BreathingSpec", "CardiacSpec", "WobblingSpec", "SupportSpec", "SkinSpec",
           "WallMarker", "Living", "QuasiPeriodicPath", "breathing_path", "cardiac_path"]


@dataclass(frozen=True)
class WallMarker:
    """A chest or abdominal wall marker on the breathing link.

    ``position_link`` (m, link frame) at the mean of the cycle; it moves by
    ``displacement_link`` (m, link axes) from end-exhale to end-inhale, in phase with the
    breathing mass.
    """

    position_link: np.ndarray
    displacement_link: np.ndarray


@dataclass(frozen=True)
class BreathingSpec:
    """Quiet breathing: an internal mass moving on a quasi-periodic path inside a link.

    Attributes
    ----------
    link : str
        The link the lungs and abdomen are in (the base link by default).
    rate_per_min : float
        Mean breathing rate, breaths/min.
    variability : float
        Coefficient of variation of breath duration and depth (0.2 = 20 %).
    mass_kg : float
        The internal mass displaced (abdominal contents pushed by the diaphragm), kg.
    depth_m : float
        Its excursion from end-exhale to end-inhale, m.
    direction_link : ndarray (3,)
        Unit direction of that excursion, link axes.
    position_link : ndarray (3,) or None
        Mean position of the mass, link frame (None: the link's COM).
    inspiration_fraction : float
        Ti/Ttot.
    hold : bool
        A breath-hold at the end of a quiet exhale: the mass stays at its end-exhale place
        (the link's parameters remain the mean over the breath, so the hold's offset from
        that mean is what a breath-hold capture keeps as a bias).
    wall_markers : dict
        Marker name -> :class:`WallMarker` (extra markers of the link that move with the
        breath).
    hold_movement : bool
        The breath held so (at the end of a quiet exhale) during the relative-motion capture
        only, the postures breathing.
    """

    link: str | None = None
    rate_per_min: float = 14.0
    variability: float = 0.2
    mass_kg: float = 4.0
    depth_m: float = 0.012
    direction_link: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    position_link: np.ndarray | None = None
    inspiration_fraction: float = 0.4
    wall_markers: dict[str, WallMarker] = field(default_factory=dict)
    hold: bool = False
    hold_movement: bool = False


@dataclass(frozen=True)
class CardiacSpec:
    """The heartbeat's recoil: a blood mass pulsed along a direction of a link."""

    link: str | None = None
    rate_per_min: float = 70.0
    variability: float = 0.04
    force_n: float = 1.5
    mass_kg: float = 0.075
    direction_link: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    position_link: np.ndarray | None = None


@dataclass(frozen=True)
class WobblingSpec:
    """Soft tissue of one link as a point mass on a damped isotropic spring."""

    link: str
    fraction: float = 0.2
    frequency_hz: float = 6.0
    damping_ratio: float = 0.3
    position_link: np.ndarray | None = None     # rest position (None: the link's COM)


@dataclass(frozen=True)
class SupportSpec:
    """The object resting on compliant pads (the soft tissue of the back) on the deck.

    ``shear_hz``/``compression_hz`` are the frequencies of the object's translation on the
    pads along the deck and normal to it; ``pads_platform`` the pad centres (platform frame,
    m; None: four pads 0.2 m x 0.12 m around the object's COM, on the deck plane z = the
    base-link origin's height minus ``pad_depth_m``).
    """

    shear_hz: float = 5.0
    compression_hz: float = 9.0
    damping_ratio: float = 0.3
    pads_platform: np.ndarray | None = None
    pad_half_spacing_m: tuple[float, float] = (0.20, 0.12)


@dataclass(frozen=True)
class SkinSpec:
    """Skin markers sliding on bone: slow drift plus a share of the tissue's vibration."""

    drift_m: float = 0.0007           # rms slow drift per coordinate
    drift_period_s: float = 8.0       # correlation time of the drift
    tissue_gain: float = 0.3          # share of the link's wobbling-mass displacement
    links: tuple[str, ...] | None = None    # None: every link


@dataclass(frozen=True)
class Living:
    """The living effects on one object (each None or empty when off)."""

    breathing: BreathingSpec | None = None
    cardiac: CardiacSpec | None = None
    wobbling: tuple[WobblingSpec, ...] = ()
    support: SupportSpec | None = None
    skin: SkinSpec | None = None

    @property
    def any_dynamic(self) -> bool:
        """True when an effect changes the equations of motion."""
        return bool(self.breathing or self.cardiac or self.wobbling or self.support)

    @property
    def any(self) -> bool:
        """True when any effect is on."""
        return self.any_dynamic or self.skin is not None


# --------------------------------------------------------------------------- paths

def _smooth_noise(rng: np.random.Generator, f_max_hz: float, n: int = 6):
    """A zero-mean, unit-rms sum of ``n`` sinusoids below ``f_max_hz``: (amp, freq, phase)."""
    freq = rng.uniform(0.15, 1.0, n) * f_max_hz
    phase = rng.uniform(0, 2 * np.pi, n)
    amp = np.full(n, np.sqrt(2.0 / n))
    return amp, freq, phase


def _sines(coeffs, t: np.ndarray):
    """Value and first two time derivatives of a sum of sinusoids."""
    amp, freq, phase = coeffs
    w = 2 * np.pi * freq
    arg = w * t[..., None] + phase
    return ((amp * np.sin(arg)).sum(-1), (amp * w * np.cos(arg)).sum(-1),
            -(amp * w * w * np.sin(arg)).sum(-1))


@dataclass(frozen=True)
class QuasiPeriodicPath:
    """``s(t) = s0 + u A(t) c(theta(t))``: a periodic shape on a wandering phase and depth.

    ``c`` is a zero-mean Fourier series in the phase ``theta`` (cycles), ``theta' = f(t) =
    f0 (1 + cv n1(t))`` and ``A(t) = A0 (1 + cv n2(t))`` with ``n1, n2`` smooth unit-rms
    noises (sums of sinusoids slower than the mean rate): breath-to-breath variability in
    duration and depth with every derivative analytic, so the integrator sees a smooth
    forcing.
    """

    mean_position: np.ndarray
    direction: np.ndarray
    amplitude: float
    rate_hz: float
    variability: float
    shape_cos: np.ndarray        # [H] Fourier coefficients of c(theta), harmonics 1..H
    shape_sin: np.ndarray
    rate_noise: tuple
    depth_noise: tuple
    phase0: float

    def shape(self, theta: np.ndarray):
        """``c, dc/dtheta, d2c/dtheta2`` (theta in cycles)."""
        h = 2 * np.pi * np.arange(1, len(self.shape_cos) + 1)
        arg = theta[..., None] * h
        cs, sn = np.cos(arg), np.sin(arg)
        c = cs @ self.shape_cos + sn @ self.shape_sin
        dc = (-sn * h) @ self.shape_cos + (cs * h) @ self.shape_sin
        ddc = (-cs * h * h) @ self.shape_cos + (-sn * h * h) @ self.shape_sin
        return c, dc, ddc

    def scalar(self, t_s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The excursion ``a(t) = A c(theta)`` and its two derivatives (m, m/s, m/s^2)."""
        t = np.asarray(t_s, float)
        cv = self.variability
        n1, n1d, n1dd = _sines(self.rate_noise, t)
        n2, n2d, n2dd = _sines(self.depth_noise, t)
        # theta = f0 (t + cv * integral of n1); integral of a sin is -cos / w
        amp, freq, phase = self.rate_noise
        w = 2 * np.pi * freq
        integral = (amp / w * (np.cos(phase) - np.cos(w * t[..., None] + phase))).sum(-1)
        theta = self.phase0 + self.rate_hz * (t + cv * integral)
        theta_d = self.rate_hz * (1 + cv * n1)
        theta_dd = self.rate_hz * cv * n1d
        big_a = self.amplitude * (1 + cv * n2)
        big_ad = self.amplitude * cv * n2d
        big_add = self.amplitude * cv * n2dd
        c, dc, ddc = self.shape(theta)
        a = big_a * c
        ad = big_ad * c + big_a * dc * theta_d
        add = (big_add * c + 2 * big_ad * dc * theta_d + big_a * ddc * theta_d ** 2
               + big_a * dc * theta_dd)
        return a, ad, add

    def __call__(self, t_s):
        """``s, ds/dt, d2s/dt2`` in the carrier's frame, each ``[..., 3]``."""
        a, ad, add = self.scalar(t_s)
        u = self.direction
        return (self.mean_position + a[..., None] * u, ad[..., None] * u,
                add[..., None] * u)


def _fourier(profile: np.ndarray, harmonics: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosine/sine coefficients (harmonics 1..H) of a periodic profile sampled on [0, 1)."""
    spec = np.fft.rfft(profile) / len(profile)
    return 2 * spec.real[1:harmonics + 1], -2 * spec.imag[1:harmonics + 1]


def breathing_path(spec: BreathingSpec, mean_position: np.ndarray,
                   rng: np.random.Generator) -> QuasiPeriodicPath:
    """The breathing mass's path: an asymmetric breath (inspiration ``Ti/Ttot``, passive
    exhalation slowing towards end-exhale) as six harmonics, wandering in rate and depth.

    The excursion from end-exhale to end-inhale is ``depth_m``; the path's mean is the
    mass's mean position (so the time-averaged body is the link's rigid truth).
    """
    x = np.arange(512) / 512
    ti = spec.inspiration_fraction
    prof = np.where(x < ti, 0.5 * (1 - np.cos(np.pi * x / ti)),
                    np.exp(-3.0 * (x - ti) / (1 - ti)) * (0.5 * (1 + np.cos(
                        np.pi * (x - ti) / (1 - ti)))) ** 0.5)
    cos_c, sin_c = _fourier(prof - prof.mean(), 6)
    probe = np.arange(1024) / 1024
    c = np.cos(2 * np.pi * np.outer(probe, np.arange(1, 7))) @ cos_c + \
        np.sin(2 * np.pi * np.outer(probe, np.arange(1, 7))) @ sin_c
    scale = 1.0 / (c.max() - c.min())           # unit peak-to-peak
    f0 = spec.rate_per_min / 60.0
    u = np.asarray(spec.direction_link, float)
    rate_noise, depth_noise, phase0 = (_smooth_noise(rng, 0.5 * f0),
                                       _smooth_noise(rng, 0.5 * f0), float(rng.uniform()))
    if spec.hold:              # frozen at end-exhale: no rate, no variability
        return QuasiPeriodicPath(np.asarray(mean_position, float), u / np.linalg.norm(u),
                                 spec.depth_m, 0.0, 0.0, cos_c * scale, sin_c * scale,
                                 rate_noise, depth_noise, float(probe[np.argmin(c)]))
    return QuasiPeriodicPath(np.asarray(mean_position, float), u / np.linalg.norm(u),
                             spec.depth_m, f0, spec.variability, cos_c * scale, sin_c * scale,
                             rate_noise, depth_noise, phase0)


def cardiac_path(spec: CardiacSpec, mean_position: np.ndarray,
                 rng: np.random.Generator) -> QuasiPeriodicPath:
    """The ejected blood's path: a periodic Gaussian pulse (systole ~1/8 of the beat) as
    eight harmonics, scaled so that ``mass_kg`` times its peak acceleration at the mean
    rate is ``force_n``."""
    x = np.arange(512) / 512
    prof = np.exp(-0.5 * ((x - 0.5) / 0.07) ** 2)
    cos_c, sin_c = _fourier(prof - prof.mean(), 8)
    f0 = spec.rate_per_min / 60.0
    probe = np.arange(2048) / 2048
    h = 2 * np.pi * np.arange(1, 9)
    ddc = (-np.cos(np.outer(probe, h)) * h * h) @ cos_c + (-np.sin(np.outer(probe, h))
                                                            * h * h) @ sin_c
    peak_acc_per_m = np.abs(ddc).max() * f0 ** 2
    amplitude = spec.force_n / (spec.mass_kg * peak_acc_per_m)
    u = np.asarray(spec.direction_link, float)
    return QuasiPeriodicPath(np.asarray(mean_position, float), u / np.linalg.norm(u),
                             amplitude, f0, spec.variability, cos_c, sin_c,
                             _smooth_noise(rng, 0.3 * f0), _smooth_noise(rng, 0.3 * f0),
                             float(rng.uniform()))
