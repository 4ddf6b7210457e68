"""Reference model for the tests (was rigtool's posture model before the engine): one rigid assembly on axial springs.

The output-error fit (rigtool.identify.posture.output_error) simulates the platform with its locked
load many times per iteration: once at the estimate and once per finite-difference
perturbation of each unknown. Those simulations share the time grid, so they run together
as one batch ``B``, each RK4 stage a handful of numpy calls on ``[B, ...]`` arrays. The cost
is per call, not per batch member, so a 22-column Jacobian costs about as much as one
simulation. This is why the integrator is hand-written (fixed-step classical RK4) instead of
``scipy.integrate.solve_ivp``, which integrates one state at a time with adaptive steps: a
fixed grid also makes the simulated response a smooth function of the parameters, which
finite differences need (adaptive step selection would add noise to them).

State per batch member, lab components: ``y = [p (3), vec(R) (9), v_origin (3), omega (3)]``.
``R`` is integrated directly (``dR/dt = [omega x] R``); its drift from orthogonality is of
the integrator's truncation order. Equations of motion (same physics as
rigtool.sim.dynamics: spring force ``-(k (L - L0) + c dL/dt) u`` at each attachment, gravity
at the COM), written about the COM so that no linear solve is needed::

    a_com = F_springs / m + g
    alpha = I_c^-1 (N_springs - c x F_springs - omega x I_c omega)
    a_origin = a_com - alpha x c - omega x (omega x c)

with ``c = R c_body`` (COM from the frame origin). With locked DOFs the 6x6 spatial mass
matrix is solved on the free lab-axis rows instead (the simulator's convention).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.inertia import pseudo_inertia
from rigtool.rig import Rig

STATE = 18


def _levi_civita_map() -> np.ndarray:
    """``[9, 3]`` with ``a x b = vec(outer(a, b)) @ map`` (and ``sum_s r_s x f_s`` from
    ``vec(r^T f)``)."""
    levi = np.zeros((3, 3, 3))
    for i, j, k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        levi[i, j, k], levi[i, k, j] = 1.0, -1.0
    return np.ascontiguousarray(levi.transpose(1, 2, 0).reshape(9, 3))


_CROSS = _levi_civita_map()



def _skew_map() -> np.ndarray:
    """``[3, 9]`` with ``vec([w x]) = w @ map`` (``[w x]_ik = eps_ijk w_j``)."""
    levi = np.zeros((3, 3, 3))
    for i, j, k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        levi[i, j, k], levi[i, k, j] = 1.0, -1.0
    return np.ascontiguousarray(levi.transpose(1, 0, 2).reshape(3, 9))


_SKEW = _skew_map()


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` over the last axis (broadcasting); two numpy calls instead of np.cross's many."""
    o = a[..., :, None] * b[..., None, :]
    return np.dot(o.reshape(o.shape[:-2] + (9,)), _CROSS)


def skew_batch(w: np.ndarray) -> np.ndarray:
    """``[..., 3] -> [..., 3, 3]`` cross-product matrices (one matrix product)."""
    return np.dot(w, _SKEW).reshape(w.shape[:-1] + (3, 3))


def spring_arrays(rig: Rig, b: int, *, stiffness: np.ndarray | None = None,
                  free_length: np.ndarray | None = None, damping: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(anchor_lab [S, 3], attachment_platform [S, 3], k, k L0, c)`` (the last three
    ``[B, S]``) of ``rig``'s springs for a batch of ``b``; given values ``[B, S]`` or ``[S]``
    override the rig's (calibration fits them)."""
    k = np.broadcast_to(rig.stiffness if stiffness is None else stiffness,
                        (b, len(rig.springs))).astype(float)
    l0 = np.broadcast_to(rig.free_length if free_length is None else free_length, k.shape)
    c = np.broadcast_to(rig.damping if damping is None else damping, k.shape).astype(float)
    return (np.stack([np.asarray(s.anchor_lab, float) for s in rig.springs]),
            np.stack([np.asarray(s.attachment_platform, float) for s in rig.springs]),
            k, k * l0, c)


@dataclass(frozen=True)
class BatchModel:
    """Bodies and springs of a batch of ``B`` model variants (spring arrays ``[B, S]``).

    Attributes
    ----------
    mass : ndarray [B]
    com_body : ndarray [B, 3]
        COM in the body (platform) frame, m.
    inertia_com_body : ndarray [B, 3, 3]
        Inertia about the COM, body axes.
    anchor_lab, attachment_body : ndarray [S, 3]
    stiffness, stiffness_free_length, damping : ndarray [B, S]
        ``k``, ``k L0`` and ``c`` of each spring.
    gravity_lab : ndarray [3]
    free_rows : ndarray or None
        Free lab-axis rows of ``[v, omega]`` when some DOFs are locked; None when all free.
    """

    mass: np.ndarray
    com_body: np.ndarray
    inertia_com_body: np.ndarray
    anchor_lab: np.ndarray
    attachment_body: np.ndarray
    stiffness: np.ndarray
    stiffness_free_length: np.ndarray
    damping: np.ndarray
    gravity_lab: np.ndarray
    free_rows: np.ndarray | None = None

    @property
    def size(self) -> int:
        """Batch size ``B``."""
        return int(self.mass.shape[0])


def batch_model(rig: Rig, params: np.ndarray, *, stiffness: np.ndarray | None = None,
                free_length: np.ndarray | None = None,
                damping: np.ndarray | None = None) -> BatchModel:
    """Model of ``params [B, 10]`` (lumped, platform frame about its origin) on ``rig``.

    Spring values ``[B, S]`` (or ``[S]``) override the rig's (calibration fits them).
    """
    params = np.atleast_2d(np.asarray(params, float))
    b = params.shape[0]
    mass = params[:, 0]
    com = params[:, 1:4] / mass[:, None]
    six = params[:, 4:]
    i_o = np.stack([six[:, [0, 1, 2]], six[:, [1, 3, 4]], six[:, [2, 4, 5]]], 1)
    i_c = i_o - mass[:, None, None] * (np.sum(com * com, 1)[:, None, None] * np.eye(3)
                                       - com[:, :, None] * com[:, None, :])
    free = rig.free_dof_rows() if rig.locked_dofs else None
    return BatchModel(mass, com, i_c, *spring_arrays(rig, b, stiffness=stiffness,
                                                     free_length=free_length, damping=damping),
                      np.asarray(rig.gravity_lab, float), free)


class BatchRHS:
    """``y [B, 18] -> dy/dt [B, 18]`` for a :class:`BatchModel`."""

    def __init__(self, model: BatchModel) -> None:
        self.m = model
        self.inv_mass = (1.0 / model.mass)[:, None]
        self.com_b = model.com_body[:, :, None]
        self.ic_b = model.inertia_com_body
        self.ic_inv_b = np.linalg.inv(model.inertia_com_body)
        self.att_t = np.ascontiguousarray(model.attachment_body.T)       # [3, S]
        self.anchor = model.anchor_lab
        self.k, self.kl0, self.c = model.stiffness, model.stiffness_free_length, model.damping
        self.has_c = bool(np.any(model.damping != 0))
        self.g = model.gravity_lab
        self.free = model.free_rows
        if self.free is not None:
            self.free_ix = np.ix_(self.free, self.free)

    def springs(self, p, rot, v, w_skew):
        """Spring force and moment about the frame origin, lab ``[B, 3]`` each."""
        r = np.swapaxes(rot @ self.att_t, 1, 2)                          # [B, S, 3]
        d = r + (p[:, None, :] - self.anchor)
        length = np.sqrt((d * d).sum(-1))
        if self.has_c:
            v_att = v[:, None, :] + r @ np.swapaxes(w_skew, 1, 2)          # v + w x r
            rate = (d * v_att).sum(-1) / length
            scale = (self.kl0 - self.c * rate) / length - self.k
        else:
            scale = self.kl0 / length - self.k
        f = d * scale[..., None]
        moment = np.dot((np.swapaxes(r, 1, 2) @ f).reshape(-1, 9), _CROSS)
        return f.sum(1), moment

    def __call__(self, y: np.ndarray) -> np.ndarray:
        b = y.shape[0]
        p, v, w = y[:, 0:3], y[:, 12:15], y[:, 15:18]
        rot = y[:, 3:12].reshape(b, 3, 3)
        w_skew = np.dot(w, _SKEW).reshape(b, 3, 3)
        force, moment = self.springs(p, rot, v, w_skew)
        c = rot @ self.com_b                                             # [B, 3, 1]
        if self.free is None:
            c_skew = np.dot(c[..., 0], _SKEW).reshape(b, 3, 3)
            rot_t = np.swapaxes(rot, 1, 2)
            w_b = rot_t @ w[..., None]
            n_c = moment[..., None] - c_skew @ force[..., None]              # about the COM
            n_b = rot_t @ n_c - cross(w_b[..., 0], (self.ic_b @ w_b)[..., 0])[..., None]
            alpha = rot @ (self.ic_inv_b @ n_b)                              # [B, 3, 1]
            acc = (force * self.inv_mass + self.g
                   + (c_skew @ alpha - w_skew @ (w_skew @ c))[..., 0])
            alpha = alpha[..., 0]
        else:
            acc, alpha = self._locked(rot, c[..., 0], w, force, moment)
        w_dot_r = w_skew @ rot
        return np.concatenate([v, w_dot_r.reshape(b, 9), acc, alpha], axis=1)

    def _locked(self, rot, c, w, force, moment):
        """Spatial mass matrix about the origin, lab axes, solved on the free rows."""
        m = self.m.mass
        h = m[:, None] * c
        i_c = rot @ self.ic_b @ np.swapaxes(rot, 1, 2)
        sc = skew_batch(c)
        i_o = i_c - m[:, None, None] * (sc @ sc)
        sh = m[:, None, None] * sc
        lam = np.concatenate([np.concatenate([m[:, None, None] * np.eye(3), -sh], 2),
                              np.concatenate([sh, i_o], 2)], 1)
        io_w = (i_o @ w[..., None])[..., 0]
        rhs = np.concatenate([force + m[:, None] * self.g - cross(w, cross(w, h)),
                              moment + cross(h, self.g) - cross(w, io_w)], 1)
        out = np.zeros_like(rhs)
        sol = np.linalg.solve(lam[:, self.free_ix[0], self.free_ix[1]],
                              rhs[:, self.free][..., None])[..., 0]
        out[:, self.free] = sol
        return out[:, :3], out[:, 3:]


def integrate(model: BatchModel, y0: np.ndarray, n_samples: int, dt: float,
              substeps: int = 2) -> np.ndarray:
    """States ``[T, B, 18]`` at ``t = k dt`` (k = 0..T-1) by classical RK4, ``substeps``
    steps per sample.

    Raises FloatingPointError when the motion leaves the model (a spring at zero length,
    non-finite state).
    """
    return rk4_samples(BatchRHS(model), y0, n_samples, dt, substeps)


def rk4_samples(rhs, y0: np.ndarray, n_samples: int, dt: float, substeps: int) -> np.ndarray:
    """States ``[T, B, n]`` at ``t = k dt`` (k = 0..T-1) of ``dy/dt = rhs(y)`` from
    ``y0 [B, n]``, classical RK4 with ``substeps`` steps per sample (both batched models).

    Raises FloatingPointError when the motion diverges (checked every 50 samples, so a
    diverged trial of a line search stops early, and at the end).
    """
    y = np.array(y0, float, copy=True)
    out = np.empty((n_samples,) + y.shape)
    out[0] = y
    h = dt / substeps
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(1, n_samples):
            for _ in range(substeps):
                k1 = rhs(y)
                k2 = rhs(y + (0.5 * h) * k1)
                k3 = rhs(y + (0.5 * h) * k2)
                k4 = rhs(y + h * k3)
                y = y + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)
            out[k] = y
            if k % 50 == 0 and not np.all(np.isfinite(y)):
                raise FloatingPointError("the simulated motion diverged")
    if not np.all(np.isfinite(out[-1])):
        raise FloatingPointError("the simulated motion diverged")
    return out


def marker_rows_mm(pred: np.ndarray, measured: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Residual rows ``[B, M]`` (mm) of predicted markers ``[T, B, K, 3]`` against the first
    ``T`` frames of ``measured [T', K, 3]`` (m), where ``mask [T', K]`` (seen and used)."""
    n = pred.shape[0]
    diff = pred - measured[:n, None]
    return 1e3 * np.moveaxis(diff, 1, 0)[:, mask[:n]].reshape(pred.shape[1], -1)


def forward_difference(rows: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(r, J)`` from residual rows ``[1 + P, M]`` of the estimate and its ``P`` perturbations
    by ``steps [P]`` (one member per unknown): ``r = rows[0]``, ``J [M, P]``."""
    return rows[0], ((rows[1:] - rows[0]) / steps[:, None]).T


def residual_and_jacobian(rows_of, x: np.ndarray, steps: np.ndarray, n_rows: int
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Residual ``[M]`` and forward-difference Jacobian ``[M, P]`` at ``x`` from one batched
    simulation: ``rows_of(xs [1 + P, P]) -> [1 + P, M]``. A simulation that diverges (or
    meets a singular mass matrix) gives residuals of 1e6 and a zero Jacobian, which makes
    the trust-region solver reject the step."""
    try:
        return forward_difference(rows_of(np.vstack([x, x + np.diag(steps)])), steps)
    except (FloatingPointError, np.linalg.LinAlgError):
        return np.full(n_rows, 1e6), np.zeros((n_rows, x.size))


def markers_from_states(states: np.ndarray, markers_body: np.ndarray) -> np.ndarray:
    """``[T, B, K, 3]`` lab marker positions ``R m + p`` from states ``[T, B, 18]``."""
    t, b = states.shape[:2]
    rot = states[..., 3:12].reshape(t, b, 3, 3)
    return markers_body @ np.swapaxes(rot, -1, -2) + states[..., None, 0:3]


def initial_states(p0: np.ndarray, rot0: np.ndarray, v0: np.ndarray, w0: np.ndarray
                   ) -> np.ndarray:
    """Pack ``[B, 18]`` states from ``p [B,3]``, ``R [B,3,3]``, ``v``, ``omega`` (lab)."""
    b = p0.shape[0]
    return np.concatenate([p0, rot0.reshape(b, 9), v0, w0], axis=1)


def consistent(params: np.ndarray) -> bool:
    """Pseudo-inertia positive definite (a body the integrator can move)."""
    return bool(np.all(np.linalg.eigvalsh(pseudo_inertia(params))[..., 0] > 0))
