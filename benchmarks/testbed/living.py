"""Living effects on the test bed. Breathing: the abdominal contents as an internal mass on a
slide joint inside the trunk, driven along a prescribed breath by a stiff position servo
(40 Hz, critically damped), the breath's rate wandering from breath to breath and carrying a
second harmonic. The body rigtool is to report is the one with the contents at their mean
place (``Study.truth_subject``)."""

from __future__ import annotations

import copy

import numpy as np

from benchmarks.testbed.model import Body
from benchmarks.testbed.study import Study


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
    out = copy.deepcopy(study)
    out.truth_subject = copy.deepcopy(study.subject)
    lk = out.subject.link(link)
    point = np.asarray(point, float)
    lk.body = _split(lk.body, mass_kg, point)
    w = 2 * np.pi * 40.0
    ax = np.asarray(axis, float) / np.linalg.norm(axis)
    out.internal = [{"link": link, "mass": mass_kg, "point": point, "axis": ax,
                     "kp": mass_kg * w * w, "kv": 2 * mass_kg * w,
                     "path": breath_path(rng, **breath)}]
    return out
