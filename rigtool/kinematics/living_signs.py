"""Signs of a living body in a locked-posture capture, measured from the markers alone.

A person on the platform is not a rigid body: they breathe, their soft tissue wobbles,
their back is a compliant support and their skin markers slide. Each leaves its own mark:

- :func:`marker_rhythm`: a marker that moves on its body with a narrow rhythm at 6-40
  cycles/min (breathing) and its harmonics;
- :func:`base_on_platform`: the base link's markers moving relative to the platform's, in
  step with the platform's specific force (a support of finite stiffness deflects by
  ``-f / omega^2``);
- :func:`apparent_mass_by_band`: the mass the springs see, ``F_springs = m (a_com - g)``,
  band by band: a rigid body has one mass at every frequency, a body with wobbling tissue
  an apparent mass ``m (1 + 2 i zeta r) / (1 - r^2 + 2 i zeta r)`` that grows towards the
  tissue's frequency.

Conventions: time first; positions m (lab), results as documented (mm, Hz, kg).
Derivatives by a Savitzky-Golay filter (``scipy.signal.savgol_filter``).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import trapezoid
from scipy.signal import butter, savgol_filter, sosfiltfilt, sosfreqz

__all__ = ["marker_rhythm", "residual_rhythm", "base_on_platform", "apparent_mass_by_band", "band_fraction",
           "support_axes", "follows_support", "base_pose_noise_m", "SUPPORT_MOTION", "SUPPORT_R2"]

#: where a capture's position noise is measured (Hz; nothing of the rig vibrates there)
NOISE_BAND_HZ = (15.0, 40.0)
#: a band starting below this is measured through a low-pass (Hz)
LOW_PASS_BELOW_HZ = 0.2
#: breathing rates searched, Hz (6-40 breaths/min)
BREATH_BAND_HZ = (0.1, 0.67)


def band_fraction(signal: np.ndarray, rate_hz: float, f0_hz: float, *, harmonics: int = 3,
                  low_hz: float = 0.05) -> float:
    """Share of a signal's variance above ``low_hz`` in narrow bands at ``k f0``.

    Bands are ``+-max(0.15 f0, 2 / T)`` wide; NaNs are filled by the mean.
    """
    x = np.asarray(signal, float)
    x = np.where(np.isfinite(x), x, np.nanmean(x))
    x = x - x.mean()
    if x.size < 16 or not np.any(x):
        return float("nan")
    spec = np.abs(np.fft.rfft(x * np.hanning(x.size))) ** 2
    f = np.fft.rfftfreq(x.size, 1.0 / rate_hz)
    above = f > low_hz
    half = max(0.15 * f0_hz, 2.0 / (x.size / rate_hz))
    inband = np.zeros_like(above)
    for k in range(1, harmonics + 1):
        inband |= np.abs(f - k * f0_hz) <= half
    total = spec[above].sum()
    return float(spec[above & inband].sum() / total) if total > 0 else float("nan")


def _local(rotation, position_m, valid, xyz):
    """Markers in the body frame ``[T, K, 3]`` about their median place (NaN where unseen)."""
    ok = valid[:, None] & np.all(np.isfinite(xyz), axis=2)
    rot = np.where(valid[:, None, None], rotation, 0.0)
    pos = np.where(valid[:, None], position_m, 0.0)
    local = np.einsum("tji,tkj->tki", rot, np.where(ok[..., None], xyz - pos[:, None, :], 0.0))
    local = np.where(ok[..., None], local, np.nan)
    return local - np.nanmedian(local, axis=0)


def marker_rhythm(rotation: np.ndarray, position_m: np.ndarray, valid: np.ndarray,
                  xyz_lab_m: np.ndarray, rate_hz: float) -> list[dict]:
    """Each marker's motion on its body: its main direction's RMS (mm), the dominant
    frequency in the breathing band and the share of its motion at it and its harmonics.

    Parameters
    ----------
    rotation, position_m, valid
        The body's marker-fitted pose (body -> lab) and where it is defined.
    xyz_lab_m : ndarray (T, K, 3)
        The body's markers.
    rate_hz : float

    Returns
    -------
    list of dict
        Per marker: ``rms_mm``, ``frequency_hz``, ``band_fraction`` (NaN when unseen) and
        ``series_mm`` (T,), its motion along its main direction (None when unseen).
    """
    local = _local(rotation, position_m, valid, xyz_lab_m)
    out = []
    f_lo, f_hi = BREATH_BAND_HZ
    for k in range(local.shape[1]):
        d = local[:, k]
        seen = np.all(np.isfinite(d), axis=1)
        if seen.sum() < 64:
            out.append({"rms_mm": float("nan"), "series_mm": None,
                        "frequency_hz": float("nan"), "band_fraction": float("nan")})
            continue
        d = np.where(seen[:, None], d, np.nanmean(d, axis=0))
        _, _, vt = np.linalg.svd(d - d.mean(0), full_matrices=False)
        x = (d - d.mean(0)) @ vt[0]
        spec = np.abs(np.fft.rfft(x * np.hanning(x.size))) ** 2
        f = np.fft.rfftfreq(x.size, 1.0 / rate_hz)
        band = (f >= f_lo) & (f <= f_hi)
        f0 = float(f[band][np.argmax(spec[band])]) if band.any() else float("nan")
        out.append({"rms_mm": 1e3 * float(np.sqrt(np.mean(np.sum((d - d.mean(0)) ** 2, 1)))),
                    "series_mm": 1e3 * x, "frequency_hz": f0,
                    "band_fraction": band_fraction(x, rate_hz, f0) if np.isfinite(f0)
                    else float("nan")})
    return out


def residual_rhythm(residual_mm: np.ndarray, rate_hz: float, modes_hz: np.ndarray) -> dict:
    """The breathing rhythm in a posture fit's residual, where no marker follows the breath.

    A breath moves mass inside the trunk: the platform answers with a forced motion at the
    breathing rate and its harmonics, which a rigid model cannot follow and leaves in its
    residual as narrow lines, away from the rig's own modes (a model error of the rig leaves
    its residual at the modes' frequencies, where the vibration is). Of the platform markers'
    mean residual ``residual_mm [T, K, 3]`` (lab, mm; NaN where unseen), the axis with most
    of its variance at one rhythm of :data:`BREATH_BAND_HZ` and its harmonics
    (:func:`band_fraction`) is reported.

    Returns
    -------
    dict
        ``axis`` (0-2, lab), ``frequency_hz``, ``band_fraction``, ``rms_mm`` (that axis's
        series), ``clear_of_modes`` (the rhythm farther from every mode of ``modes_hz``
        than its band's half-width) and ``n_markers``; empty when too few frames.
    """
    r = np.asarray(residual_mm, float)
    series = np.nanmean(r, axis=1)
    seen = np.all(np.isfinite(series), axis=1)
    if seen.sum() < 128:
        return {}
    series = np.where(seen[:, None], series, np.nanmean(series, axis=0))
    f = np.fft.rfftfreq(len(series), 1.0 / rate_hz)
    band = (f >= BREATH_BAND_HZ[0]) & (f <= BREATH_BAND_HZ[1])
    best = {}
    for axis in range(3):
        x = series[:, axis] - series[:, axis].mean()
        spec = np.abs(np.fft.rfft(x * np.hanning(x.size))) ** 2
        f0 = float(f[band][np.argmax(spec[band])])
        share = band_fraction(x, rate_hz, f0)
        if not best or share > best["band_fraction"]:
            half = max(0.15 * f0, 2.0 / (len(x) / rate_hz))
            best = {"axis": axis, "frequency_hz": f0, "band_fraction": share,
                    "rms_mm": float(np.std(x)),
                    "clear_of_modes": bool(np.all(np.abs(np.asarray(modes_hz) - f0) > half)),
                    "n_markers": int(r.shape[1])}
    return best


def _second_derivative(x: np.ndarray, rate_hz: float, window_s: float = 0.15) -> np.ndarray:
    n = max(7, int(round(window_s * rate_hz)) | 1)
    return savgol_filter(x, n, 3, deriv=2, delta=1.0 / rate_hz, axis=0)


def _fill(x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Linear interpolation over invalid frames (a derivative filter needs every frame)."""
    x = np.array(x, float)
    idx = np.arange(len(x))
    for j in range(x.shape[1]):
        ok = valid & np.isfinite(x[:, j])
        x[:, j] = np.interp(idx, idx[ok], x[ok, j])
    return x


def base_on_platform(plat_rotation: np.ndarray, plat_position_m: np.ndarray,
                     base_rotation: np.ndarray, base_position_m: np.ndarray,
                     valid: np.ndarray, gravity_lab: np.ndarray, rate_hz: float) -> dict:
    """How the base link moves on the platform, and whether it follows the platform's
    specific force as a compliant support does.

    Returns
    -------
    dict
        ``rms_mm`` (3,) RMS of the base origin's displacement in platform axes;
        ``compliance_s2`` (3,) the slope ``c`` of ``e = c f + b`` (m per m/s^2) fitted per
        axis, with ``f = R^T (a - g)`` the specific force of the base origin in platform axes;
        ``r2`` (3,) the share of ``e``'s variance it explains; ``frequency_hz`` (3,)
        ``sqrt(-1/c) / 2 pi`` where ``c < 0`` (NaN elsewhere).
    """
    ok = valid & np.all(np.isfinite(plat_position_m), 1) & np.all(np.isfinite(base_position_m), 1)
    nan3 = np.full(3, np.nan)
    if ok.sum() < 64:
        return {"rms_mm": nan3, "compliance_s2": nan3, "r2": nan3, "frequency_hz": nan3}
    rel = np.einsum("tji,tj->ti", np.where(ok[:, None, None], plat_rotation, 0.0),
                    np.where(ok[:, None], base_position_m - plat_position_m, 0.0))
    mean_rel = np.nanmedian(np.where(ok[:, None], rel, np.nan), axis=0)
    e = np.where(ok[:, None], rel - mean_rel, np.nan)
    # the base origin as the platform carries it (its mean place): no base marker enters f
    carried = plat_position_m + np.einsum("tij,j->ti", np.where(ok[:, None, None],
                                                                 plat_rotation, 0.0), mean_rel)
    acc = _second_derivative(_fill(carried, ok), rate_hz)
    spec_force = np.einsum("tji,tj->ti", plat_rotation, acc - np.asarray(gravity_lab, float))
    cut = max(7, int(round(0.15 * rate_hz)))
    use = ok.copy()
    use[:cut] = use[-cut:] = False
    slope, r2, freq = np.full(3, np.nan), np.full(3, np.nan), np.full(3, np.nan)
    for k in range(3):
        f = spec_force[use, k] - spec_force[use, k].mean()
        y = e[use, k] - e[use, k].mean()
        if not np.any(f):
            continue
        c = float(f @ y / (f @ f))
        slope[k] = c
        r2[k] = 1.0 - float(np.sum((y - c * f) ** 2) / np.sum(y * y)) if np.any(y) else 0.0
        if c < 0:
            freq[k] = float(np.sqrt(-1.0 / c) / (2 * np.pi))
    return {"rms_mm": 1e3 * np.sqrt(np.nanmean(e ** 2, axis=0)), "compliance_s2": slope,
            "r2": r2, "frequency_hz": freq}


#: a compliant support: the base link moves this many times its pose noise on the platform,
#: and the platform's specific force explains this share of that motion
SUPPORT_MOTION, SUPPORT_R2 = 3.0, 0.3


def support_axes(on_platform: dict, pose_noise_m: float) -> list[int]:
    """The platform axes along which the base link rides on a compliant support: its motion
    there (``on_platform``, :func:`base_on_platform`) stands :data:`SUPPORT_MOTION` times
    above the pose noise of the base origin on the platform and follows the platform's
    specific force (share :data:`SUPPORT_R2`) as a spring does (a positive frequency)."""
    out = []
    for k in range(3):
        rms, r2 = float(on_platform["rms_mm"][k]), float(on_platform["r2"][k])
        if (np.isfinite(rms) and rms > SUPPORT_MOTION * 1e3 * pose_noise_m
                and np.isfinite(r2) and r2 >= SUPPORT_R2
                and np.isfinite(on_platform["frequency_hz"][k])):
            out.append(k)
    return out


def base_pose_noise_m(marker_noise_m: float, n_base_markers: int, n_platform_markers: int
                      ) -> float:
    """The noise of the base origin's place on the platform: the marker noise over both
    clusters' sizes."""
    return float(marker_noise_m * np.sqrt(1.0 / max(n_base_markers, 1)
                                          + 1.0 / max(n_platform_markers, 1)))


def follows_support(on_platform: dict, marker_noise_m: float, n_base_markers: int,
                    n_platform_markers: int) -> bool:
    """True when the base link rides on a compliant support along some axis
    (:func:`support_axes`)."""
    if not np.isfinite(marker_noise_m):
        return False
    noise = base_pose_noise_m(marker_noise_m, n_base_markers, n_platform_markers)
    return bool(support_axes(on_platform, noise))


def _noise_gains(sos: np.ndarray, rate_hz: float, *, stencil: bool = True
                 ) -> tuple[float, float]:
    """What white position noise of unit density (per Hz) becomes through the zero-phase
    filter ``sos`` (``sosfiltfilt``: its power response ``|H|^4``) and the five-point second
    difference ``D`` (``stencil``): ``(int |H|^4 D^2 df, int |H|^4 D df)`` over 0 to Nyquist,
    the acceleration's noise power and its cross-power with a position-proportional noise;
    without ``stencil``, ``(int |H|^4 df, 0)``, the filter's noise bandwidth (Hz). By the
    filters' own responses (``scipy.signal.sosfreqz``): the closed form of an ideal band,
    ``(2 pi)^4 (f2^5 - f1^5) / 5``, takes the edges as sharp and overstated the noise of
    the 1.6-8 Hz band by 12 %."""
    freq = np.linspace(0.0, 0.5 * rate_hz, 4097)
    power = np.abs(sosfreqz(sos, worN=freq, fs=rate_hz)[1]) ** 4
    if not stencil:
        return float(trapezoid(power, freq)), 0.0
    x = 2.0 * np.pi * freq / rate_hz
    d = (-2.0 * np.cos(2.0 * x) + 32.0 * np.cos(x) - 30.0) * rate_hz ** 2 / 12.0
    return float(trapezoid(power * d * d, freq)), float(trapezoid(power * d, freq))


def apparent_mass_by_band(spring_force_lab: np.ndarray, com_lab_m: np.ndarray,
                          valid: np.ndarray, gravity_lab: np.ndarray, rate_hz: float,
                          bands_hz: list[tuple[float, float]],
                          tilt_rad: np.ndarray | None = None) -> list[dict]:
    """The mass the springs see in each frequency band: ``F = m (a_com - g)``.

    With ``tilt_rad`` (``[T, 3]``, the carrying body's small rotation about its mean, lab
    rotation vector), ``com_lab_m`` is any point fixed on that body and each band fits
    ``F = m a + alpha x h`` with its own first moment ``h`` about that point: a COM that
    a rigid fit moved to fit all modes at once (or one that moves from mode to mode) does
    not leak into the masses.

    ``m`` in a band is the least-squares ratio of the band-passed spring force to the
    band-passed COM acceleration (the three axes together; a zero-phase Butterworth
    band-pass, ``scipy.signal.sosfiltfilt``); its standard error from the band's residual.
    Gravity enters only the static part (removed by the band-pass).

    Returns
    -------
    list of dict
        Per band: ``band_hz``, ``mass_kg``, ``std_kg``, ``accel_rms`` (m/s^2).
    """
    ok = valid & np.all(np.isfinite(com_lab_m), 1) & np.all(np.isfinite(spring_force_lab), 1)
    out = []
    if ok.sum() < 128:
        return [{"band_hz": list(b), "mass_kg": float("nan"), "std_kg": float("nan"),
                 "accel_rms": float("nan")} for b in bands_hz]
    pos = _fill(com_lab_m, ok)
    force = _fill(spring_force_lab, ok)
    tilt = None if tilt_rad is None else _fill(tilt_rad, ok)
    dt = 1.0 / rate_hz
    cut = max(7, int(round(2.0 * rate_hz)))      # the filters' start and end transients
    # The position's white noise (markers) adds its own power to the band's acceleration and
    # would bias every mass low, the more so the higher the band (errors in variables); the
    # spring force, computed from the same noisy pose, carries the same noise through the
    # suspension's stiffness, and its product with the acceleration's noise biases the mass
    # high. Both are read where nothing vibrates (NOISE_BAND_HZ: the noise's power and its
    # cross-power with the force per Hz) and carried to each band through the band's own
    # filter and second difference (:func:`_noise_gains`), then taken off.
    nyq = 0.5 * rate_hz
    lo_n, hi_n = NOISE_BAND_HZ[0], min(NOISE_BAND_HZ[1], 0.9 * nyq)
    density_xx = density_fx = 0.0
    if hi_n > lo_n * 1.2:
        sos_n = butter(4, [lo_n, hi_n], btype="band", fs=rate_hz, output="sos")
        noise = sosfiltfilt(sos_n, pos, axis=0)[cut:-cut]
        noise_f = sosfiltfilt(sos_n, force, axis=0)[cut:-cut]
        width = _noise_gains(sos_n, rate_hz, stencil=False)[0]     # Hz
        density_xx = float(np.mean(np.sum(noise * noise, 1))) / width    # m^2/Hz, 3 axes
        density_fx = float(np.mean(np.sum(noise_f * noise, 1))) / width  # N m/Hz
    for lo, hi in bands_hz:
        # the same linear, time-invariant band-pass on both sides keeps F = m a; the
        # acceleration is then the five-point second difference (error (w dt)^4 / 90), not
        # a smoothing filter whose gain falls with frequency (that fakes a frequency-
        # dependent mass)
        # (a band starting below the pendulum modes is a low-pass: a band-pass edge that low
        # rings for longer than a capture lasts; the constant part is fitted instead)
        low_pass = lo <= LOW_PASS_BELOW_HZ
        sos = (butter(4, min(hi, 0.45 * rate_hz), btype="low", fs=rate_hz, output="sos")
               if low_pass else butter(4, [lo, min(hi, 0.45 * rate_hz)], btype="band",
                                       fs=rate_hz, output="sos"))
        xp = sosfiltfilt(sos, pos, axis=0)
        fa = (-xp[4:] + 16 * xp[3:-1] - 30 * xp[2:-2] + 16 * xp[1:-3] - xp[:-4]) / (12 * dt * dt)
        ff = sosfiltfilt(sos, force, axis=0)[2:-2]
        fa, ff = fa[cut:-cut], ff[cut:-cut]
        alpha = None
        if tilt is not None:
            tp = sosfiltfilt(sos, tilt, axis=0)
            alpha = ((-tp[4:] + 16 * tp[3:-1] - 30 * tp[2:-2] + 16 * tp[1:-3] - tp[:-4])
                     / (12 * dt * dt))[cut:-cut]
        if low_pass:
            fa, ff = fa - fa.mean(0), ff - ff.mean(0)
            alpha = None if alpha is None else alpha - alpha.mean(0)
        aa = float(np.sum(fa * fa))
        if fa.size == 0 or aa <= 0:
            out.append({"band_hz": [lo, hi], "mass_kg": float("nan"), "std_kg": float("nan"),
                        "accel_rms": 0.0})
            continue
        gain_aa, gain_af = _noise_gains(sos, rate_hz)
        aa_signal = aa - density_xx * gain_aa * len(fa)
        if aa_signal < 0.5 * aa:                           # the band is mostly noise
            aa_signal = 0.5 * aa
        af_signal = float(np.sum(fa * ff)) - density_fx * gain_af * len(fa)
        if alpha is None:
            m = af_signal / aa_signal
            resid = ff - m * fa
        else:
            # columns: a (for m) and alpha x e_k (for h_k); the noise comes off a.a and a.F
            cols = [fa.ravel()] + [np.cross(alpha, np.eye(3)[k]).ravel() for k in range(3)]
            design = np.stack(cols, 1)
            normal = design.T @ design
            normal[0, 0] = aa_signal
            rhs = design.T @ ff.ravel()
            rhs[0] = af_signal
            coef = np.linalg.solve(normal, rhs)
            m = float(coef[0])
            resid = ff - (design @ coef).reshape(ff.shape)
            aa_signal = 1.0 / float(np.linalg.inv(normal)[0, 0])    # m's own information
        # the band's samples are correlated: about 2 B T independent ones per axis
        n_eff = max(3.0, 2 * (hi - lo) * len(fa) / rate_hz * 3)
        std = float(np.sqrt(np.sum(resid * resid) / (aa * n_eff)))
        out.append({"band_hz": [lo, hi], "mass_kg": m, "std_kg": std,
                    "accel_rms": float(np.sqrt(aa / len(fa)))})
    return out
