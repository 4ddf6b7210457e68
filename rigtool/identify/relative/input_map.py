"""The relative-motion fits' maps from their unknowns to the engines' inputs, with the maps'
exact Jacobians.

Passive model (:func:`evaluate`, rigtool.identify.relative.problem): ``(x, Phi_s,
calibration) -> (theta_e, y0)``, every body's parameters, joint centres, joint damping,
springs ``[k, k L0, c]``, marker coordinates, and the initial state with each body's
rotation ``exp([phi x]) R_ref``. Active model (:func:`evaluate_active`,
rigtool.identify.relative.active_problem): the bodies' parameters, the moving chains'
offsets and the springs, the platform's initial state, and the markers' platform-frame
coordinates. In both, the minimal set enters as bodies: body 0 the platform plus the base
link carried into the platform frame by the base pose, each moving link ``[0, MS, J]``
about its joint, its mass lumped on its parent.

Written in NumPy over a leading batch axis, and differentiated by the complex step
(Squire and Trapp 1998; Martins et al. 2003): ``df/dz_j = Im f(z + i h e_j) / h`` with
``h = 1e-30``, every column at once as one batch. For a map built of analytic operations
(sums, products, sin, cos, sqrt, no absolute values or comparisons on the perturbed part),
its error is ``O(h^2)``, far below round-off, with no difference of nearby values: exact
to machine precision like forward-mode differentiation. Why by hand, not JAX's ``jacfwd``:
the map is a few hundred numbers once per fit evaluation, and tracing and compiling it with
JAX took 0.5-0.7 s in every process that fitted a swing (the demo's relative-motion stage
is ~3 s); this costs under a millisecond. tests/_ref_relative_map.py keeps the JAX maps as
the independent reference the tests hold these to.
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


def _base_pose(fit_base: bool, r_pb: np.ndarray, t_pb: np.ndarray, base: np.ndarray,
               b_n: int) -> tuple[np.ndarray, np.ndarray]:
    """The base link's pose on the platform ``(R [B, 3, 3], t [B, 3])``: the marker-fitted
    one moved by the unknowns ``base [B, 6]`` (dt, rotation vector) when they are fitted."""
    if fit_base:
        return rotation(base[:, 3:6]) @ r_pb, t_pb + base[:, :3]
    return np.broadcast_to(r_pb, (b_n, 3, 3)), np.broadcast_to(t_pb, (b_n, 3))


def _object_bodies(free: str, n: int, mass_kg: float, theta: np.ndarray, phi_s: np.ndarray,
                   calib: np.ndarray, rot_b: np.ndarray, t_b: np.ndarray) -> np.ndarray:
    """``[B, n, 10]``: the minimal set as bodies, body 0 the
    platform (``calib[:10]``) plus the base link carried by its pose with the whole mass,
    each moving link ``[0, MS, J]`` about its joint; Phi_B from the object unknowns
    ``theta`` (all of it, or the moving links' J_yy with Phi_s)."""
    b_n = theta.shape[0]
    if free == "phi_b":
        phi_b = theta
    else:
        g_mat, h_mat = phi_b_affine(n)
        phi_b = phi_s @ g_mat.T + theta @ h_mat.T
    per = phi_b.reshape(b_n, n, 9)
    links = np.concatenate([np.zeros((b_n, n, 1), per.dtype), per[..., :3],
                            per[..., [3, 8, 7, 4, 6, 5]]], -1)
    link0 = links[:, 0].copy()
    link0[:, 0] = mass_kg
    body0 = calib[:, :10] + transform(link0, rot_b, t_b)
    return np.concatenate([body0[:, None], links[:, 1:]], 1)


def _springs(calib: np.ndarray, s_n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(k, k L0, c)`` of the calibration vectors ``[B, 10 + 3S]``."""
    k = calib[:, 10:10 + s_n]
    return k, k * calib[:, 10 + s_n:10 + 2 * s_n], calib[:, 10 + 2 * s_n:]


def _placed_markers(markers_body: np.ndarray, on_base: np.ndarray, rot_b: np.ndarray,
                    t_b: np.ndarray) -> np.ndarray:
    """``[B, K, 3]``: the base link's markers carried into the platform frame by its pose,
    the others as given."""
    placed = np.einsum("kj,bij->bki", markers_body, rot_b) + t_b[:, None, :]
    return np.where(on_base[None, :, None], placed, markers_body[None])


def evaluate(c: MapConstants, x: np.ndarray, phi_s: np.ndarray, calib: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """``(theta_e [B, n_theta_e], y0 [B, n_state])`` of a batch of unknowns ``x [B, .]``,
    ``phi_s [B, 8n+1]`` and calibration vectors ``calib [B, 10 + 3S]`` (real or complex)."""
    n, n_th, n_d, s_n = c.n, c.n_theta, c.n_damp, c.n_springs
    b_n = x.shape[0]
    theta, damp = x[:, :n_th], x[:, n_th:n_th + n_d]
    i = n_th + n_d
    rot_b, t_b = _base_pose(c.fit_base, c.r_pb, c.t_pb, x[:, i:i + 6], b_n)
    i += 6 if c.fit_base else 0
    st = x[:, i:]
    pis = _object_bodies(c.free, n, c.mass_kg, theta, phi_s, calib, rot_b, t_b)
    jp = np.zeros((b_n, n, 3), np.result_type(rot_b, t_b, float))
    for j in range(1, n):
        jp[:, j] = (np.einsum("bij,j->bi", rot_b, c.joint_centres[j]) + t_b
                    if c.parents[j] == 0 else c.joint_centres[j])
    jd = np.concatenate([np.zeros((b_n, 1), damp.dtype),
                         np.broadcast_to(damp, (b_n, n - 1)) if n_d == 1 else damp], 1)
    k, kl0, cd = _springs(calib, s_n)
    mk = _placed_markers(c.markers_body, c.on_base, rot_b, t_b)
    theta_e = np.concatenate([pis.reshape(b_n, -1), jp.reshape(b_n, -1), jd, k, kl0, cd,
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


def complex_step_jacobian(function, parts: list[np.ndarray], wrt: list[int] | None = None
                          ) -> list[list[np.ndarray]]:
    """``out[k][j] = d output_k / d parts[j]`` (``[output size, part size]``) of
    ``function(*batched parts) -> outputs [B, .]`` at one point, by the complex step: one
    batch with one column perturbed per row. ``wrt``: the parts differentiated (default all;
    the others' blocks are None)."""
    parts = [np.asarray(v, float) for v in parts]
    wrt = list(range(len(parts))) if wrt is None else list(wrt)
    cols = [(j, c) for j in wrt for c in range(parts[j].size)]
    batch = [np.tile(v.astype(complex), (len(cols), 1)) for v in parts]
    for row, (j, c) in enumerate(cols):
        batch[j][row, c] += 1j * STEP
    outs = function(*batch)
    result = []
    for o in outs:
        d = o.reshape(len(cols), -1).imag.T / STEP                  # [output, columns]
        blocks, start = [None] * len(parts), 0
        for j in wrt:
            blocks[j] = d[:, start:start + parts[j].size]
            start += parts[j].size
        result.append(blocks)
    return result


def input_map_jacobian(c: MapConstants, x: np.ndarray, phi_s: np.ndarray,
                       calib: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(dtheta_e/dx, dy0/dx, dtheta_e/dPhi_s, dy0/dPhi_s, dtheta_e/dcal, dy0/dcal)`` at one
    point, every column by one complex step (one batch of ``x.size + Phi_s.size +
    calib.size`` evaluations)."""
    (t_x, t_s, t_c), (y_x, y_s, y_c) = complex_step_jacobian(
        lambda *b: evaluate(c, *b), [x, phi_s, calib])
    return t_x, y_x, t_s, y_s, t_c, y_c


@dataclass(frozen=True)
class ActiveMapConstants:
    """What the active model's map holds fixed (rigtool.identify.relative.active_problem):
    ``n`` bodies, the object unknowns' size and mode, the base pose fitted or not and its
    marker-fitted value, the joint centres ``[n, 3]``, the moving chains' roots (their
    offsets from the platform origin are inputs), the markers' coordinates ``[K, 3]`` with
    ``on_base``, the platform's reference rotation ``[3, 3]``, the object's mass and the
    number of springs."""

    n: int
    n_theta: int
    fit_base: bool
    free: str
    r_pb: np.ndarray
    t_pb: np.ndarray
    joint_centres: np.ndarray
    roots: tuple[int, ...]
    markers_body: np.ndarray
    on_base: np.ndarray
    rot_ref: np.ndarray
    mass_kg: float
    n_springs: int


def evaluate_active(c: ActiveMapConstants, x: np.ndarray, phi_s: np.ndarray,
                    calib: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(theta_e [B, .], y0 [B, 18], markers [B, K, 3])`` of the active model (the bodies'
    parameters, the chains' offsets and the springs; the platform's initial state; the
    markers' platform-frame coordinates) for a batch of unknowns ``[theta, base, state
    (12)]``, Phi_s and calibration vectors."""
    b_n, n_th = x.shape[0], c.n_theta
    theta = x[:, :n_th]
    rot_b, t_b = _base_pose(c.fit_base, c.r_pb, c.t_pb, x[:, n_th:n_th + 6], b_n)
    st = x[:, n_th + (6 if c.fit_base else 0):]
    pis = _object_bodies(c.free, c.n, c.mass_kg, theta, phi_s, calib, rot_b, t_b)
    offsets = np.stack([np.einsum("bij,j->bi", rot_b, c.joint_centres[r]) + t_b
                        for r in c.roots], 1)
    k, kl0, cd = _springs(calib, c.n_springs)
    theta_e = np.concatenate([pis.reshape(b_n, -1), offsets.reshape(b_n, -1), k, kl0, cd], 1)
    rot0 = rotation(st[:, 3:6]) @ c.rot_ref
    y0 = np.concatenate([st[:, :3], rot0.reshape(b_n, 9), st[:, 6:12]], 1)
    return theta_e, y0, _placed_markers(c.markers_body, c.on_base, rot_b, t_b)


def active_map(c: ActiveMapConstants, x: np.ndarray, phi_s: np.ndarray, calib: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(theta_e, y0, markers [K, 3])`` of the active model at one point (real)."""
    theta_e, y0, mk = evaluate_active(c, np.asarray(x, float)[None],
                                      np.asarray(phi_s, float)[None],
                                      np.asarray(calib, float)[None])
    return theta_e[0], y0[0], mk[0]


def active_map_jacobian(c: ActiveMapConstants, x: np.ndarray, phi_s: np.ndarray,
                        calib: np.ndarray, wrt: int) -> tuple[np.ndarray, ...]:
    """``(dtheta_e, dy0, dmarkers [K, 3, P])`` along the unknowns (``wrt`` 0), Phi_s (1) or
    the calibration (2), by the complex step."""
    d_th, d_y, d_mk = (blocks[wrt] for blocks in complex_step_jacobian(
        lambda *b: evaluate_active(c, *b), [x, phi_s, calib], [wrt]))
    return d_th, d_y, d_mk.reshape(-1, 3, d_mk.shape[1])


__all__ = ["MapConstants", "rotation", "transform", "evaluate", "input_map",
           "input_map_jacobian", "complex_step_jacobian", "ActiveMapConstants",
           "evaluate_active", "active_map", "active_map_jacobian", "STEP"]
