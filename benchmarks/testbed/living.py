"""Living effects on the test bed, each alone or together; the body rigtool is to report is
the one with every moving mass at its mean place (``Study.truth_subject``).

- Breathing: the abdominal contents as an internal mass on a slide joint inside the trunk,
  driven along a prescribed breath by a stiff position servo (40 Hz, critically damped), the
  breath's rate wandering from breath to breath and carrying a second harmonic.
- The chest and abdominal wall's markers: each on a light body moving with the breath (a
  gain of it, 1-4 mm peak to peak), named in the manifest as the link's breathing markers.
- Wobbling soft tissue: a share of each link's mass at its COM on three damped slide joints
  (its natural frequency and damping ratio drawn).
- A soft back: the base link on a compliant mount to the deck (shear, compression, rocking
  springs with damping), its springs at rest where the body lies welded.
- Skin drift: the subject's markers wandering on the skin (a stationary Ornstein-Uhlenbeck
  process per marker and axis)."""

from __future__ import annotations

import copy

import numpy as np

from benchmarks.testbed.model import Body
from benchmarks.testbed.study import Study
from benchmarks.testbed.truth import posture_overall


def _split(body: Body, mass: float, point: np.ndarray) -> Body:
    """``body`` less a point mass ``mass`` at ``point`` (its frame): the rigid remainder."""
    s = lambda p: float(p @ p) * np.eye(3) - np.outer(p, p)  # noqa: E731
    m_r = body.mass_kg - mass
    c_r = (body.mass_kg * body.com_m - mass * point) / m_r
    i_o = body.inertia_com_kg_m2 + body.mass_kg * s(body.com_m) - mass * s(point)
    i_c = i_o - m_r * s(c_r)
    return Body(body.name, m_r, c_r, i_c, body.markers_m)


def breath_path(rng, *, rate_per_min: float = 14.0, peak_to_peak_m: float = 0.016,
                variability: float = 0.1, harmonic: float = 0.25, duration_s: float = 200.0):
    """x(t), m: a breath of the given mean rate, its period drawn breath by breath with a
    relative spread ``variability``, depth likewise, a second harmonic of relative size
    ``harmonic``; zero mean over a breath."""
    n = int(duration_s * rate_per_min / 60.0) + 2
    periods = 60.0 / rate_per_min * (1.0 + variability * rng.standard_normal(n)).clip(0.6, 1.6)
    depth = peak_to_peak_m / 2 * (1.0 + variability * rng.standard_normal(n)).clip(0.5, 1.5)
    starts = np.concatenate([[0.0], np.cumsum(periods)])
    ph2 = rng.uniform(0, 2 * np.pi)

    def x(t: float) -> float:
        k = min(int(np.searchsorted(starts, t, side="right")) - 1, n - 1)
        u = 2 * np.pi * (t - starts[k]) / periods[k]
        return float(depth[k] * ((1 - np.cos(u)) - 1.0 + harmonic * (np.sin(2 * u + ph2)
                                                                     - np.sin(ph2) * 0)))
    return x


def with_breathing(study: Study, rng, *, link: str = "link0", mass_kg: float = 5.0,
                   point=(0.0, -0.25, 0.05), axis=(0.0, 0.45, 0.89), **breath) -> Study:
    """``study`` with ``mass_kg`` of ``link`` breathing at ``point`` along ``axis``."""
    out = _truth_kept(study)
    lk = out.subject.link(link)
    point = np.asarray(point, float)
    lk.body = _split(lk.body, mass_kg, point)
    w = 2 * np.pi * 40.0
    ax = np.asarray(axis, float) / np.linalg.norm(axis)
    out.internal.append({"kind": "breath", "link": link, "mass": mass_kg, "point": point,
                         "axis": ax, "kp": mass_kg * w * w, "kv": 2 * mass_kg * w,
                         "path": breath_path(rng, **breath)})
    return out


def _truth_kept(study: Study) -> Study:
    out = copy.deepcopy(study)
    if out.truth_subject is None:
        out.truth_subject = copy.deepcopy(study.subject)
    return out


def with_wall_markers(study: Study, sites: dict[str, tuple[np.ndarray, float]], *,
                      link: str = "link0", wall_mass_kg: float = 1e-3) -> Study:
    """``study`` (already breathing) with wall markers on ``link``: ``sites`` maps a marker
    name to (its mean place in the link frame, its motion's peak to peak over the breath's).
    Each moves along the breath's axis by that gain of the breath's path."""
    out = _truth_kept(study)
    breath = next(im for im in out.internal if im.get("kind", "breath") == "breath"
                  and im["link"] == link)
    lk = out.subject.link(link)
    w = 2 * np.pi * 40.0
    for m, (place, gain) in sites.items():
        place = np.asarray(place, float)
        lk.body = _split(lk.body, wall_mass_kg, place)
        out.internal.append({"kind": "wall", "link": link, "mass": wall_mass_kg,
                             "point": place, "axis": breath["axis"], "sites": {m: place},
                             "gain": float(gain), "kp": wall_mass_kg * w * w,
                             "kv": 2 * wall_mass_kg * w,
                             "path": (lambda t, g=float(gain), x=breath["path"]: g * x(t))})
    return out


def with_tissue(study: Study, *, fraction: float = 0.2, frequency_hz: float = 8.0,
                damping_ratio: float = 0.25, links: list[str] | None = None) -> Study:
    """``study`` with ``fraction`` of each link's mass (of ``links``, every link when
    ``None``) wobbling at its COM: k = m (2 pi f)^2, c = 2 zeta m (2 pi f) per axis."""
    out = _truth_kept(study)
    w = 2 * np.pi * frequency_hz
    for lk in out.subject.links:
        if links is not None and lk.body.name not in links:
            continue
        m = fraction * lk.body.mass_kg
        point = np.array(lk.body.com_m, float)
        lk.body = _split(lk.body, m, point)
        out.internal.append({"kind": "wobble", "link": lk.body.name, "mass": m,
                             "point": point, "frequency_hz": frequency_hz,
                             "damping_ratio": damping_ratio, "stiffness": m * w * w,
                             "damping": 2 * damping_ratio * m * w})
    return out


def with_back(study: Study, *, shear_hz: float = 5.0, compression_hz: float = 9.0,
              rocking_hz: float = 7.0, damping_ratio: float = 0.2) -> Study:
    """``study`` with its base link on a compliant mount: translational springs k = M w^2
    (M the subject's mass; shear along the platform's x and y, compression along z) and
    rocking springs k = I w^2 about the platform's axes through the subject's COM in its
    first posture (I its moment there); damping 2 zeta k / w each."""
    out = _truth_kept(study)
    tsub = out.truth_subject
    ov = posture_overall(tsub, study.postures[0].rotations if study.postures else {})
    r = np.asarray(tsub.base_rotation_platform, float)
    moments = np.diag(r @ np.asarray(ov["inertia_com"], float) @ r.T)
    w = 2 * np.pi * np.array([shear_hz, shear_hz, compression_hz] + [rocking_hz] * 3)
    inertia = np.concatenate([[ov["mass"]] * 3, moments])
    k = inertia * w * w
    out.back = {"pivot": np.asarray(ov["com"], float), "stiffness": k,
                "damping": 2 * damping_ratio * k / w,
                "frequency_hz": (w / (2 * np.pi)).tolist(), "damping_ratio": damping_ratio}
    return out


def with_skin(study: Study, *, sigma_m: float = 0.5e-3, tau_s: float = 2.0) -> Study:
    """``study`` with its markers drifting on the skin (``sigma_m``, ``tau_s``)."""
    out = _truth_kept(study)
    out.skin_sigma_m, out.skin_tau_s = float(sigma_m), float(tau_s)
    return out
