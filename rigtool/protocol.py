"""Before a person is recorded: do the rig's modes keep clear of what a living body does?

A living body drives and loads the rig at its own frequencies (:mod:`rigtool.sim.living`):

- breathing (10-20/min, its waveform's harmonics up to the third) moves mass inside the
  trunk: a rig mode near a breathing harmonic is forced at resonance, and the rig's
  pendulum modes (~0.3-0.5 Hz) sit right among the second and third harmonics;
- the heartbeat's recoil (50-90/min and its harmonics) forces the rig more weakly;
- wobbling soft tissue (4-10 Hz, damping ratio ~0.3) and the compliant back (~5 Hz shear,
  ~9 Hz compression) make the body's mass look ``m (1 + 2 i zeta r)/(1 - r^2 + 2 i zeta r)``
  in a mode at ``r`` times their frequency: the higher a rig mode, the more its apparent
  mass differs from the rest, and a rigid fit trades COM against inertia.

:func:`mode_conflicts` judges a list of mode frequencies; :func:`check_rig_modes` computes a
rig's modes with an expected load and judges them. Both return plain findings with the
reason and what to change, and nothing when the rig is clear.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.inertia import InertialParams
from rigtool.rig import Rig

__all__ = ["ModeConflict", "apparent_mass_factor", "mode_conflicts", "clear_breathing_rates",
           "check_rig_modes", "rig_modes_hz"]

#: quiet breathing, breaths/min (a paced or slow breather goes lower)
BREATHING_PER_MIN = (10.0, 20.0)
#: resting heart rate, beats/min
HEART_PER_MIN = (50.0, 90.0)
#: wobbling soft tissue and the compliant back, Hz (lowest of each), and their damping
TISSUE_HZ, SUPPORT_HZ, TISSUE_DAMPING = 4.0, 5.0, 0.3
#: apparent-mass change tolerated in the highest mode (relative): about what a mode at a
#: third of the tissue's frequency gives (+12 % at damping ratio 0.3); lower is not
#: reachable with a rig's vertical and rocking modes above 1 Hz
APPARENT_MASS_TOLERANCE = 0.12


@dataclass(frozen=True)
class ModeConflict:
    """One rig mode against one effect of a living body."""

    mode_hz: float
    effect: str          # "breathing", "heartbeat", "soft tissue", "support"
    detail: str          # what coincides, in numbers
    advice: str


def apparent_mass_factor(r: float, damping_ratio: float = TISSUE_DAMPING) -> complex:
    """``(1 + 2 i zeta r) / (1 - r^2 + 2 i zeta r)``: a damped-spring mass's apparent mass
    over its true mass in a motion at ``r`` times its own frequency."""
    z = 2j * damping_ratio * r
    return (1 + z) / (1 - r * r + z)


def mode_conflicts(modes_hz, *, breathing_per_min=BREATHING_PER_MIN,
                   heart_per_min=HEART_PER_MIN, harmonics: int = 3,
                   tissue_hz: float = TISSUE_HZ, support_hz: float = SUPPORT_HZ,
                   damping_ratio: float = TISSUE_DAMPING,
                   tolerance: float = APPARENT_MASS_TOLERANCE) -> list[ModeConflict]:
    """The rig modes a living body would disturb.

    Parameters
    ----------
    modes_hz : sequence of float
        The rig's mode frequencies with the subject on it, Hz.
    breathing_per_min, heart_per_min : (float, float)
        Expected ranges of the subject's rates.
    harmonics : int
        Harmonics of breathing and heartbeat that count (the breath's waveform carries
        the 2nd and 3rd with a few per cent to tens of per cent of the fundamental).
    tissue_hz, support_hz : float
        Lowest soft-tissue and support frequencies expected.
    damping_ratio : float
        Their damping ratio.
    tolerance : float
        Largest relative change of apparent mass tolerated in a mode.

    Returns
    -------
    list of ModeConflict
        Empty when every mode is clear.
    """
    out = []
    modes = np.sort(np.asarray(modes_hz, float))
    clear = clear_breathing_rates(modes, harmonics=harmonics)
    paced = (", e.g. at " + ", ".join(f"{a:.0f}-{b:.0f}" for a, b in clear) + "/min"
             if clear else "")
    for name, (lo, hi), n_harm, advice in (
            ("breathing", breathing_per_min, harmonics,
             "record each posture as a breath-hold at the end of a quiet exhale, or pace the "
             "breathing at a rate whose harmonics miss the rig's modes" + paced + ", or move "
             "the mode (longer springs lower the pendulum modes)"),
            ("heartbeat", heart_per_min, 1,
             "the recoil is small (1-2 N) but rings this mode, and the output-error fits take "
             "part of that ringing for the rig's own vibration: on the simulator, with the "
             "heart rate on a mode, the postures' standard errors came out 1.7-2.7x too small "
             "(the report then scales them by the postures' scatter and reports the movement "
             "by equation error); move the mode away from the heart rate")):
        for f in modes:
            for k in range(1, n_harm + 1):
                lo_hz, hi_hz = k * lo / 60.0, k * hi / 60.0
                if lo_hz <= f <= hi_hz:
                    rate = 60.0 * f / k
                    out.append(ModeConflict(
                        float(f), name,
                        f"mode {f:.2f} Hz is {'the' if k == 1 else f'{k}x the'} rate of "
                        f"{rate:.0f}/min ({name} {lo:.0f}-{hi:.0f}/min"
                        + (f", harmonic {k}" if k > 1 else "") + ")", advice))
                    break
    if modes.size:
        top = float(modes[-1])
        for name, what, f_eff in (
                ("soft tissue", "the lowest frequency of wobbling soft tissue", tissue_hz),
                ("support", "the lowest frequency of the compliant back the body rests on "
                            "(its shear)", support_hz)):
            r = top / f_eff
            change = abs(apparent_mass_factor(r, damping_ratio)) - 1.0
            if abs(change) > tolerance:
                out.append(ModeConflict(
                    top, name,
                    f"highest mode {top:.2f} Hz is {r:.2f}x {what}, {f_eff:g} Hz: the "
                    f"{name}'s apparent mass there is {100 * change:+.0f} % of its mass "
                    f"(damping ratio {damping_ratio:g}), against ~0 % in the pendulum modes",
                    "lower the highest modes (softer springs, more platform inertia about the "
                    "rocking axes) towards a third of that frequency, and relax and support "
                    "the segments (tense or hanging tissue wobbles more)"))
    return out


def clear_breathing_rates(modes_hz, *, harmonics: int = 3, margin: float = 0.15,
                          per_min=(6.0, 20.0)) -> list[tuple[float, float]]:
    """Breathing rates (breaths/min, ranges) whose first ``harmonics`` harmonics all stay
    ``margin`` (relative) away from every mode below 2 Hz."""
    rates = np.arange(per_min[0], per_min[1] + 1e-9, 0.25)
    modes = np.asarray([f for f in np.asarray(modes_hz, float) if f < 2.0])
    ok = np.ones(rates.size, bool)
    for k in range(1, harmonics + 1):
        f = k * rates / 60.0
        for m in modes:
            ok &= np.abs(f - m) > margin * m
    out, start = [], None
    for r, good in zip(rates, ok):
        if good and start is None:
            start = r
        if not good and start is not None:
            out.append((start, r - 0.25))
            start = None
    if start is not None:
        out.append((start, rates[-1]))
    return [(a, b) for a, b in out if b - a >= 1.0]


def check_rig_modes(rig: Rig, platform_params: InertialParams, load: InertialParams,
                    **kw) -> tuple[np.ndarray, list[ModeConflict]]:
    """A rig's modes with an expected load on it, and the living body's conflicts.

    Parameters
    ----------
    rig : Rig
        Springs (stiffness, free length), gravity, locked DOFs.
    platform_params : InertialParams
        The platform about its origin (a calibrated rig file has them).
    load : InertialParams
        The subject as expected on the platform (mass, COM, inertia), about the platform
        origin in platform axes (e.g. from body height and mass with anthropometric tables).
    **kw
        Passed to :func:`mode_conflicts`.

    Returns
    -------
    modes_hz : ndarray
        The rig's mode frequencies with the load, Hz, ascending.
    conflicts : list of ModeConflict
    """
    modes_hz = rig_modes_hz(rig, platform_params, load)
    return modes_hz, mode_conflicts(modes_hz, **kw)


def rig_modes_hz(rig: Rig, platform_params: InertialParams,
                 load: InertialParams) -> np.ndarray:
    """The rig's mode frequencies (Hz, ascending) with ``load`` locked on it (the arguments
    of :func:`check_rig_modes`): the linearised suspension's eigen-analysis
    (rigtool.sim.dynamics.linear_modes)."""
    from rigtool.sim.dynamics import FixedBody, System, linear_modes

    system = System(rig, platform_params, fixed=(FixedBody("subject", load),))
    return np.asarray(linear_modes(system)[0], float)


#: a spring line's first lateral string mode is to stay this many times above the rig's
#: highest mode (so that the string's resonance stays out of the band the fits use)
STRING_MODE_MARGIN = 1.5


def spring_line_limits(rig: Rig, platform_params: InertialParams, load: InertialParams
                       ) -> tuple[float, list[dict]]:
    """What keeps each spring line's mass out of the fits, with ``load`` on the rig.

    A line of mass ``m_s`` and length ``L`` under tension ``T`` has lateral string modes at
    ``f_n = n / (2 L) sqrt(T L / m_s)``: its first stays :data:`STRING_MODE_MARGIN` times
    above the rig's highest mode ``f_top`` while ``m_s < T / (4 L (margin f_top)^2)``. The
    ideal rig's model has massless springs: the line's own weight and momentum, a third of
    its mass moving with the platform's end, are left out, so its mass is to stay a small
    share of the hanging mass too.

    Returns
    -------
    top_mode_hz : float
        The rig's highest mode with the load.
    lines : list of dict
        Per spring: ``name``, ``tension_n``, ``length_m`` at rest, and ``max_mass_kg``
        (the string-mode limit).
    """
    from rigtool.rig import spring_lengths
    from rigtool.sim.dynamics import FixedBody, System
    from rigtool.sim.equilibrium import static_equilibrium

    system = System(rig, platform_params, fixed=(FixedBody("subject", load),))
    rot, pos = static_equilibrium(system)
    top = float(np.max(rig_modes_hz(rig, platform_params, load)))
    lengths = spring_lengths(rig, rot, pos)
    tension = rig.stiffness * (lengths - rig.free_length)
    f = STRING_MODE_MARGIN * top
    return top, [{"name": s.name, "tension_n": float(t), "length_m": float(length),
                  "max_mass_kg": float(t / (4.0 * length * f * f))}
                 for s, t, length in zip(rig.springs, tension, lengths)]
