"""The relative-motion fit's map from its unknowns to the tree engine's inputs, with the
map's exact Jacobian.

``(x, Phi_s, calibration) -> (theta_e, y0)``: every body's parameters (the minimal set as
bodies, rigtool.identify.relative.fit_common.object_bodies, body 0 carried to the platform
frame by the base pose), joint centres, joint damping, springs ``[k, k L0, c]``, marker
coordinates, and the initial state with each body's rotation ``exp([phi x]) R_ref``.

Written in NumPy over a leading batch axis, and differentiated by the complex step
(Squire and Trapp 1998; Martins et al. 2003): ``df/dz_j = Im f(z + i h e_j) / h`` with
``h = 1e-30``, every column at once as one batch. For a map built of analytic operations
(sums, products, sin, cos, sqrt, no absolute values or comparisons on the perturbed part),
its error is ``O(h^2)``, far below round-off, with no difference of nearby values: exact
to machine precision like forward-mode differentiation. Why by hand, not JAX's ``jacfwd``:
the map is a few hundred numbers once per fit evaluation, and tracing and compiling it with
JAX took 0.5-0.7 s in every process that fitted a swing (the demo's relative-motion stage
is ~3 s); this costs under a millisecond. tests/_ref_relative_map.py keeps the JAX map as
the independent reference the tests hold this one to.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.identify.relative.bounds import phi_b_affine

#: the complex step: below round-off of any input's real part, far above complex underflow
STEP = 1e-30
# Below this squared rotation angle (rad^2, on the real part) Rodrigues' coefficients come
# from their Taylor series (to theta^6; truncation under 1e-17), where the closed forms lose
# digits to cancellation; both branches are analytic, so the complex step holds in each.
_SMALL_ANGLE_2 = 1e-4


@dataclass(frozen=True)
class MapConstants:
    """What the map holds fixed: the tree (``n`` bodies, ``parents``), the sizes of the
    unknowns (``n_theta``, ``n_damp``, base pose fitted or not, ``free`` ``"jyy"`` or
    ``"phi_b"``), the marker-fitted base pose ``r_pb``/``t_pb``, the joint centres
    ``[n, 3]``, the markers' body coordinates ``[K, 3]`` (base markers in the base-link
    frame) with ``on_base [K]``, the bodies' reference rotations ``rot_ref [n, 3, 3]``, the
    object's mass and the number of springs."""

    parents: tuple[int, ...]
    n_theta: int
    n_damp: int
    fit_base: bool
    free: str
    r_pb: np.ndarray
    t_pb: np.ndarray
    joint_centres: np.ndarray
    markers_body: np.ndarray
    on_base: np.ndarray
    rot_ref: np.ndarray
    mass_kg: float
    n_springs: int

    @property
    def n(self) -> int:
        return len(self.parents)


def _skew(v: np.ndarray) -> np.ndarray:
    """``[..., 3] -> [..., 3, 3]`` cross-product matrices."""
    z = np.zeros_like(v[..., 0])
    return np.stack([np.stack([z, -v[..., 2], v[..., 1]], -1),
                     np.stack([v[..., 2], z, -v[..., 0]], -1),
                     np.stack([-v[..., 1], v[..., 0], z], -1)], -2)


def rotation(phi: np.ndarray) -> np.ndarray:
    """``exp([phi x])`` of rotation vectors ``[..., 3]`` (complex allowed), Rodrigues'
    formula ``1 + s K + a K^2`` with ``s = sin t / t``, ``a = (1 - cos t) / t^2``."""
    t2 = np.sum(phi * phi, axis=-1)
    small = t2.real < _SMALL_ANGLE_2
    t2_big = np.where(small, 1.0, t2)                    # no 0/0 in the branch not taken
    t = np.sqrt(t2_big)
    s = np.where(small, 1.0 - t2 / 6.0 * (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0)),
                 np.sin(t) / t)
    a = np.where(small, 0.5 - t2 / 24.0 * (1.0 - t2 / 30.0 * (1.0 - t2 / 56.0)),
                 2.0 * np.sin(0.5 * t) ** 2 / t2_big)
    k = _skew(phi)
    return np.eye(3) + s[..., None, None] * k + a[..., None, None] * (k @ k)


def transform(pi: np.ndarray, rot: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Inertial parameters ``[..., 10]`` (body frame about its origin) in a frame where
    ``x = R x_b + t``: the pseudo-inertia congruence (as rigtool.inertia.transform_params)."""
    m, h = pi[..., 0], pi[..., 1:4]
    i_b = np.stack([np.stack([pi[..., 4], pi[..., 5], pi[..., 6]], -1),
                    np.stack([pi[..., 5], pi[..., 7], pi[..., 8]], -1),
                    np.stack([pi[..., 6], pi[..., 8], pi[..., 9]], -1)], -2)
    tr = np.trace(i_b, axis1=-2, axis2=-1)
    sigma = 0.5 * tr[..., None, None] * np.eye(3) - i_b
    # T P T^T with T = [[R, t], [0, 1]] and P = [[Sigma, h], [h^T, m]], written blockwise
    rh = np.einsum("...ij,...j->...i", rot, h)
    s2 = (np.einsum("...ij,...jk,...lk->...il", rot, sigma, rot)
          + rh[..., :, None] * t[..., None, :] + t[..., :, None] * rh[..., None, :]
          + m[..., None, None] * t[..., :, None] * t[..., None, :])
    first = rh + m[..., None] * t
    i_f = np.trace(s2, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - s2
    return np.concatenate([m[..., None], first,
                           np.stack([i_f[..., 0, 0], i_f[..., 0, 1], i_f[..., 0, 2],
                                     i_f[..., 1, 1], i_f[..., 1, 2], i_f[..., 2, 2]], -1)],
                          -1)


def evaluate(c: MapConstants, x: np.ndarray, phi_s: np.ndarray, calib: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """``(theta_e [B, n_theta_e], y0 [B, n_state])`` of a batch of unknowns ``x [B, .]``,
    ``phi_s [B, 8n+1]`` and calibration vectors ``calib [B, 10 + 3S]`` (real or complex)."""
    n, n_th, n_d, s_n = c.n, c.n_theta, c.n_damp, c.n_springs
    b_n = x.shape[0]
    theta, damp = x[:, :n_th], x[:, n_th:n_th + n_d]
    i = n_th + n_d
    if c.fit_base:
        base, i = x[:, i:i + 6], i + 6
        rot_b = rotation(base[:, 3:6]) @ c.r_pb
        t_b = c.t_pb + base[:, :3]
    else:
        rot_b = np.broadcast_to(c.r_pb, (b_n, 3, 3))
        t_b = np.broadcast_to(c.t_pb, (b_n, 3))
    st = x[:, i:]
    if c.free == "phi_b":
        phi_b = theta
    else:
        g_mat, h_mat = phi_b_affine(n)
        phi_b = phi_s @ g_mat.T + theta @ h_mat.T
    # the minimal parameters as bodies (fit_common.object_bodies): each link [0, MS, J]
    per = phi_b.reshape(b_n, n, 9)
    links = np.concatenate([np.zeros((b_n, n, 1), per.dtype), per[..., :3],
                            per[..., [3, 8, 7, 4, 6, 5]]], -1)
    link0 = links[:, 0].copy()
    link0[:, 0] = c.mass_kg
    body0 = calib[:, :10] + transform(link0, rot_b, t_b)
    pis = np.concatenate([body0[:, None], links[:, 1:]], 1)
    jp = np.zeros((b_n, n, 3), np.result_type(rot_b, t_b, float))
    for j in range(1, n):
        jp[:, j] = (np.einsum("bij,j->bi", rot_b, c.joint_centres[j]) + t_b
                    if c.parents[j] == 0 else c.joint_centres[j])
    jd = np.concatenate([np.zeros((b_n, 1), damp.dtype),
                         np.broadcast_to(damp, (b_n, n - 1)) if n_d == 1 else damp], 1)
    k, l0, cd = (calib[:, 10:10 + s_n], calib[:, 10 + s_n:10 + 2 * s_n],
                 calib[:, 10 + 2 * s_n:])
    placed = np.einsum("kj,bij->bki", c.markers_body, rot_b) + t_b[:, None, :]
    mk = np.where(c.on_base[None, :, None], placed, c.markers_body[None])
    theta_e = np.concatenate([pis.reshape(b_n, -1), jp.reshape(b_n, -1), jd, k, k * l0, cd,
                              mk.reshape(b_n, -1)], 1)
    rots = rotation(st[:, 3:3 + 3 * n].reshape(b_n, n, 3)) @ c.rot_ref
    y0 = np.concatenate([st[:, :3], rots.reshape(b_n, -1), st[:, 3 + 3 * n:]], 1)
    return theta_e, y0


def input_map(c: MapConstants, x: np.ndarray, phi_s: np.ndarray, calib: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """``(theta_e, y0)`` at one point (real)."""
    theta_e, y0 = evaluate(c, np.asarray(x, float)[None], np.asarray(phi_s, float)[None],
                           np.asarray(calib, float)[None])
    return theta_e[0], y0[0]


def input_map_jacobian(c: MapConstants, x: np.ndarray, phi_s: np.ndarray,
                       calib: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(dtheta_e/dx, dy0/dx, dtheta_e/dPhi_s, dy0/dPhi_s, dtheta_e/dcal, dy0/dcal)`` at one
    point, every column by one complex step (one batch of ``x.size + Phi_s.size +
    calib.size`` evaluations)."""
    parts = [np.asarray(v, float) for v in (x, phi_s, calib)]
    sizes = [p.size for p in parts]
    z = np.concatenate(parts)
    batch = np.tile(z.astype(complex), (z.size, 1))
    batch[np.arange(z.size), np.arange(z.size)] += 1j * STEP
    cuts = np.cumsum(sizes)[:-1]
    xs, ss, cs = np.split(batch, cuts, axis=1)
    theta_e, y0 = evaluate(c, xs, ss, cs)
    d_theta, d_y = theta_e.imag.T / STEP, y0.imag.T / STEP        # [out, all columns]
    out = []
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, z.size]):
        out += [d_theta[:, lo:hi], d_y[:, lo:hi]]
    return tuple(out)


__all__ = ["MapConstants", "rotation", "transform", "evaluate", "input_map",
           "input_map_jacobian", "STEP"]
