"""The breath as the markers measure it: chest and abdominal wall markers on their link.

A breathing person's abdominal contents move inside the trunk, and the chest and abdominal
walls move with them. The session manifest names those wall markers (``breathing_markers``
of a link); each is expressed in its link's frame (the link's pose from its other, rigid
markers, :func:`rigtool.kinematics.pose.body_trajectory`) and taken relative to its mean
over the capture. The displacements of all of them, ``D(t) [3M]``, have a few principal
directions (one when the walls move in phase; the rib cage and the abdomen, Konno & Mead
1967, may need two), chosen by the data: a direction is kept while its RMS is well above the
noise. The breath coordinates ``u(t) [k]`` (m) are the projections of ``D`` on
the kept directions, each smoothed by a cubic smoothing spline (its smoothing chosen by
generalised cross-validation, rigtool.kinematics.spline_smoothing, on block means of at
most 500 samples; drawn by scipy.interpolate.make_smoothing_spline), which gives ``u``,
``du/dt`` and ``d2u/dt2`` at any time (the integrators' half steps).

The coordinates carry the wall markers' noise and their link's pose noise, which the
smoothing leaves in the breath's band, where the rig's pendulum modes are: a fit that takes
``u`` as exact puts that noise into the body's parameters (on the simulated breathing body
it was the whole of its COM heights' misses). :meth:`BreathMotion.noise_probes` draws that
noise again: white noise of the coordinates' own per-frame scatter (from their fourth
differences), averaged and smoothed as the data were, so a fit can carry its share.

The posture fits model the moving first moment as ``h(t) = h0 + G u(t)`` (rigtool.identify
.posture.breathing); here only the measurement.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.interpolate import make_smoothing_spline

from rigtool.errors import InputError
from rigtool.kinematics.pose import body_trajectory
from rigtool.kinematics.relative_spline import noise_from_differences
from rigtool.kinematics.spline_smoothing import gcv_lambda
from rigtool.mocap import MarkerData

__all__ = ["BreathMotion", "measure_breath", "wall_marker_places", "MAX_COMPONENTS",
           "KEEP_RATIO"]

#: at most this many breath coordinates (rib cage, abdomen, and one more)
MAX_COMPONENTS = 3
#: a principal direction is kept when its RMS is above this many times the noise (the
#: markers' own on their link, or the smallest direction's). Measured on the simulated
#: living whole body (skin markers on the trunk, 0.7 mm scatter): the breath's direction
#: stands 3.1-5.5 times that noise in its 19 postures, the next direction (the wall markers'
#: own wander) 1.1-2.3 times; 4 had left the breath out of 9 of them
KEEP_RATIO = 3.0


@dataclass(frozen=True)
class BreathMotion:
    """The measured breath of one capture.

    Attributes
    ----------
    time_s : ndarray (T,)
        The capture's frame times, s.
    u_m : ndarray (T, k)
        Breath coordinates (projections of the wall displacements on the kept directions;
        NaN where a wall marker or its link is not seen), m.
    valid : ndarray of bool (T,)
    directions : ndarray (3M, k)
        Unit principal directions over the markers' link-frame displacements
        ``[marker 1 xyz, marker 2 xyz, ...]``.
    markers : tuple of (str, str)
        ``(link, marker)`` of each wall marker, in the order of ``directions``' rows.
    rms_m : ndarray (r,)
        RMS of every principal direction (the first ``k`` kept), m.
    noise_m : float
        The wall markers' noise per coordinate on their link (from the link's rigid fit), m.
    splines : tuple
        One smoothing spline per kept coordinate.
    mean_link_m : ndarray (3M,)
        The wall markers' mean places on their link over the frames used (the zero of the
        displacements), ``[marker 1 xyz, ...]``, m.
    lams : tuple of float
        Each spline's smoothing (generalised cross-validation's, on the block means).
    frame_noise_m : ndarray (k,)
        Each coordinate's white noise per frame (its fourth differences), m.
    """

    time_s: np.ndarray
    u_m: np.ndarray
    valid: np.ndarray
    directions: np.ndarray
    markers: tuple[tuple[str, str], ...]
    rms_m: np.ndarray
    noise_m: float
    splines: tuple
    mean_link_m: np.ndarray = field(default_factory=lambda: np.zeros(0))
    lams: tuple = ()
    frame_noise_m: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def n_components(self) -> int:
        """``k``, the number of breath coordinates kept."""
        return int(self.directions.shape[1])

    def at(self, t_s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``u, du/dt, d2u/dt2`` at times ``t_s`` (each ``[..., k]``; m, m/s, m/s^2)."""
        t = np.asarray(t_s, float)
        out = [np.stack([s.derivative(d)(t) if d else s(t) for s in self.splines], axis=-1)
               for d in range(3)]
        return out[0], out[1], out[2]

    def noise_probes(self, n_probes: int, seed: int) -> list[Callable]:
        """``n_probes`` draws of the breath as another capture's noise would have measured
        it: each an ``at(t)`` like :meth:`at`, the measured breath plus white noise of
        :attr:`frame_noise_m` on the seen frames, averaged over the same blocks and smoothed
        with the same :attr:`lams` (the spline is linear in the data at a fixed smoothing, so
        the noise's spline is added to the breath's). Seeded: the same draws every run."""
        rng = np.random.default_rng(seed)
        t = self.time_s[self.valid]
        k = self.n_components
        noise = rng.normal(size=(t.size, n_probes, k)) * self.frame_noise_m
        t_b, noise_b = _block_means(t, noise.reshape(t.size, -1))
        noise_b = noise_b.reshape(-1, n_probes, k)
        drawn = [make_smoothing_spline(t_b, noise_b[:, :, j], lam=self.lams[j])
                 for j in range(k)]
        return [_ProbeBreath(self, drawn, p) for p in range(n_probes)]

    def summary(self) -> dict:
        """What the report says about the measurement."""
        return {"markers": [f"{link}:{name}" for link, name in self.markers],
                "components": self.n_components,
                "component_rms_mm": [1e3 * float(v) for v in self.rms_m],
                "noise_mm": 1e3 * float(self.noise_m),
                "frame_noise_mm": [1e3 * float(v) for v in self.frame_noise_m],
                "mean_link_mm": [1e3 * float(v) for v in self.mean_link_m],
                "directions": self.directions.T.tolist()}


@dataclass(frozen=True)
class _ProbeBreath:
    """One noise probe of a measured breath: ``at(t)`` is the breath's plus the drawn
    noise's spline (column ``column`` of each coordinate's multi-column spline)."""

    motion: BreathMotion
    noise_splines: list
    column: int

    def __call__(self, t_s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = np.asarray(t_s, float)
        base = self.motion.at(t)
        added = [np.stack([(s.derivative(d) if d else s)(t)[..., self.column]
                           for s in self.noise_splines], axis=-1) for d in range(3)]
        return base[0] + added[0], base[1] + added[1], base[2] + added[2]


def _link_frame_displacements(data: MarkerData, rigid: dict[str, np.ndarray],
                              moving: dict[str, np.ndarray]):
    """Each moving marker in the link's frame ``[T, M, 3]``, the frames where all are seen,
    and the noise per coordinate implied by the link's rigid fit."""
    traj = body_trajectory(data, rigid)
    xyz = data.select(list(moving))                              # [T, M, 3]
    rel = xyz - traj.position_m[:, None, :]
    p_link = np.einsum("tji,tmj->tmi", traj.rotation, rel)      # R^T (x - p)
    ok = traj.valid & np.all(np.isfinite(p_link), axis=(1, 2))
    n = len(rigid)
    ms = np.nanmean(traj.residual_rms_m[traj.valid] ** 2) if traj.valid.any() else np.nan
    sigma = float(np.sqrt(ms * n / (3 * n - 6))) if n > 3 else float("nan")
    return p_link, ok, sigma


#: at most this many samples go to the smoothing spline's cross-validation, in blocks of at
#: most BLOCK_S seconds
SPLINE_SAMPLES, BLOCK_S = 500, 0.04


def _block_means(t: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``t`` and ``u [T, k]`` averaged over blocks of consecutive samples: at most
    :data:`SPLINE_SAMPLES` blocks, each at most :data:`BLOCK_S` long. scipy's
    cross-validated smoothing spline runs a Python loop per sample and per trial of its
    smoothing (2.5 s for a 20 s capture at 100 Hz, a third of a breathing posture's fit); a
    breath carries nothing above ~1.5 Hz, where a 0.04 s block's gain is 0.994, and the
    block means keep every sample's share of the noise averaging."""
    rate = (len(t) - 1) / (t[-1] - t[0]) if len(t) > 1 and t[-1] > t[0] else 1.0
    q = min(int(np.ceil(len(t) / SPLINE_SAMPLES)), max(int(BLOCK_S * rate), 1))
    if q <= 1:
        return t, u
    n = len(t) // q * q
    t_b = t[:n].reshape(-1, q).mean(axis=1)
    u_b = u[:n].reshape(-1, q, u.shape[1]).mean(axis=1)
    if n < len(t):                                  # the short last block
        t_b = np.append(t_b, t[n:].mean())
        u_b = np.vstack([u_b, u[n:].mean(axis=0)])
    return t_b, u_b


def _wall_places(data: MarkerData, rigid_markers: dict, breathing_markers: dict,
                 frames: np.ndarray | None):
    """The wall markers' places on their links ``[T, 3M]``, the frames where all are seen,
    those among ``frames`` (default all), each link's noise, and ``(link, marker)`` names.

    Raises
    ------
    InputError
        When the wall markers are seen together in fewer than 20 of ``frames``.
    """
    blocks, oks, sigmas, names = [], [], [], []
    for link, moving in breathing_markers.items():
        p_link, ok, sigma = _link_frame_displacements(data, rigid_markers[link], moving)
        blocks.append(p_link)
        oks.append(ok)
        sigmas.append(sigma)
        names += [(link, n) for n in moving]
    p_all = np.concatenate(blocks, axis=1)                       # [T, M, 3]
    ok = np.logical_and.reduce(oks)
    use = np.zeros(len(ok), bool)
    use[np.arange(len(ok)) if frames is None else frames] = True
    use &= ok
    if use.sum() < 20:
        raise InputError(f"the breathing markers ({', '.join(n for _, n in names)}) are seen "
                         f"with their links in {int(use.sum())} frames; expected the whole "
                         "capture", path=data.source, field="breathing_markers")
    return p_all.reshape(len(ok), -1), ok, use, sigmas, names


def wall_marker_places(data: MarkerData, rigid_markers: dict[str, dict[str, np.ndarray]],
                       breathing_markers: dict[str, dict[str, np.ndarray]], *,
                       frames: np.ndarray | None = None) -> tuple[np.ndarray, list[str]]:
    """The breathing markers' mean places on their links over ``frames`` (``[3M]``, m, as
    :attr:`BreathMotion.mean_link_m`) and their ``link:marker`` names: where the breath
    stood on average, also when it did not move (a breath-hold).

    Raises
    ------
    InputError
        As :func:`measure_breath`.
    """
    flat, _, use, _, names = _wall_places(data, rigid_markers, breathing_markers, frames)
    return flat[use].mean(axis=0), [f"{link}:{name}" for link, name in names]


def measure_breath(data: MarkerData, rigid_markers: dict[str, dict[str, np.ndarray]],
                   breathing_markers: dict[str, dict[str, np.ndarray]], *,
                   frames: np.ndarray | None = None) -> BreathMotion | None:
    """Measure the breath of a capture from its wall markers.

    Parameters
    ----------
    data : MarkerData
    rigid_markers : dict
        Link -> its rigid markers {name: xyz, link frame, m} (the tree's).
    breathing_markers : dict
        Link -> its breathing markers {name: xyz} (the manifest's ``breathing_markers``).
    frames : ndarray of int, optional
        The frames the fit uses (the means and directions are taken over them); default all.

    Returns
    -------
    BreathMotion or None
        None when no direction stands above the noise (no breath to model).

    Raises
    ------
    InputError
        When the wall markers are seen together in fewer than 20 frames.
    """
    flat, ok, use, sigmas, names = _wall_places(data, rigid_markers, breathing_markers, frames)
    mean_link = flat[use].mean(axis=0)
    disp = flat - mean_link
    _, sv, vt = np.linalg.svd(disp[use], full_matrices=False)
    rms = sv / np.sqrt(use.sum())
    noise = float(np.nanmax(sigmas)) if np.any(np.isfinite(sigmas)) else 0.0
    # the noise floor: the markers' own noise, or the smallest direction's RMS when there are
    # more directions than breath coordinates can be (it is noise then)
    floor = max(noise, float(rms[-1]) if len(rms) > MAX_COMPONENTS else 0.0)
    k = int(np.sum(rms[:MAX_COMPONENTS] > KEEP_RATIO * floor))
    if k == 0:
        return None
    directions = vt[:k].T
    # the sign of each direction: its largest entry positive (a reproducible convention)
    directions = directions * np.sign(directions[np.argmax(np.abs(directions), 0),
                                                 np.arange(k)])
    u = np.full((len(ok), k), np.nan)
    u[ok] = disp[ok] @ directions
    t = np.asarray(data.time_s, float)
    t_b, u_b = _block_means(t[ok], u[ok])
    lams = tuple(float(v) for v in gcv_lambda(t_b, u_b))
    splines = tuple(make_smoothing_spline(t_b, u_b[:, j], lam=lams[j]) for j in range(k))
    frame_noise = np.array([noise_from_differences(u[ok][:, j]) for j in range(k)])
    return BreathMotion(t, u, ok, directions, tuple(names), rms, noise, splines, mean_link,
                        lams, frame_noise)
