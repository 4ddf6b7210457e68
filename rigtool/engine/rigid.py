"""One rigid assembly (platform plus a locked load) on axial springs: dynamics, RK4, exact
sensitivities.

Conventions (as rigtool.sim.dynamics and rigtool.rig): lab frame, SI units. State
``y [18] = [p (3), vec(R) (9, row-major), v (3), omega (3)]``: the platform frame's origin,
its rotation (integrated directly, ``dR/dt = [omega x] R``), the origin's velocity and the
angular velocity, all lab. Parameters ``theta = [pi (10), k (S), k L0 (S), c (S)]``: the
assembly's standard inertial parameters about the platform origin in the platform frame
(rigtool.inertia order ``m, h, Ixx, Ixy, Ixz, Iyy, Iyz, Izz``) and per spring its stiffness,
stiffness times free length and damping. Everything the fits estimate enters through
``theta`` and ``y0``; both enter the equations linearly or smoothly, so the forward-mode
derivative is exact.

Equations of motion about the platform origin (lab axes), the spatial mass matrix solved on
the free rows when DOFs are locked::

    [m 1    -[h x]] [a_o  ]   [F + m g - w x (w x h)    ]
    [[h x]   I_o  ] [alpha] = [N + h x g - w x (I_o w)  ]

with ``h = R h_body``, ``I_o = R I_body R^T`` and each spring's force
``-(k (L - L0) + c dL/dt) u`` at its attachment.

Integration: classical RK4 on a fixed grid, ``substeps`` steps per frame, in chunks of
``CHUNK_FRAMES`` frames per compiled call (one compilation serves every capture length;
memory is bounded by the caller, which consumes the chunks as they come). Sensitivities are
the exact derivatives of the discrete RK4 map: ``jax.linearize`` of one step, mapped over the
tangent directions, carried beside the state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rigtool.engine.columns import BLOCK
from rigtool.engine._jax import jax, jnp
from rigtool.engine.compiled import committed, disk_jit
from rigtool.rig import Rig

STATE = 18
#: frames per compiled call (the last chunk is padded; the padding is discarded)
CHUNK_FRAMES = 256


@dataclass(frozen=True)
class RigidModel:
    """The fixed geometry of one rig: spring anchors (lab) and attachments (platform frame),
    gravity (lab) and the free rows of ``[a_o, alpha]`` (all six when nothing is locked)."""

    anchor_lab: np.ndarray          # [S, 3]
    attachment_platform: np.ndarray  # [S, 3]
    gravity_lab: np.ndarray         # [3]
    free_rows: tuple[int, ...]

    @classmethod
    def of(cls, rig: Rig) -> "RigidModel":
        """The model of ``rig`` (geometry only; stiffness etc. go in ``theta``)."""
        free = tuple(int(i) for i in rig.free_dof_rows()) if rig.locked_dofs else tuple(range(6))
        return cls(np.stack([np.asarray(s.anchor_lab, float) for s in rig.springs]),
                   np.stack([np.asarray(s.attachment_platform, float) for s in rig.springs]),
                   np.asarray(rig.gravity_lab, float), free)

    @property
    def n_springs(self) -> int:
        """Number of springs ``S``."""
        return int(self.anchor_lab.shape[0])

    def consts(self) -> tuple:
        """The arrays the compiled functions take (hashable parts stay static)."""
        return (jnp.asarray(self.anchor_lab), jnp.asarray(self.attachment_platform),
                jnp.asarray(self.gravity_lab))


def theta_of(pi: np.ndarray, stiffness: np.ndarray, free_length: np.ndarray,
             damping: np.ndarray) -> np.ndarray:
    """``theta = [pi, k, k L0, c]`` from the assembly's ``pi [10]`` and the spring values."""
    k = np.asarray(stiffness, float)
    return np.concatenate([np.asarray(pi, float), k, k * np.asarray(free_length, float),
                           np.asarray(damping, float)])


def _skew(w):
    z = jnp.zeros((), w.dtype)
    return jnp.array([[z, -w[2], w[1]], [w[2], z, -w[0]], [-w[1], w[0], z]])


def _mv(a, x):
    """``a @ x`` for a 3x3 and a 3-vector as one elementwise fusion (XLA's CPU backend emits
    a small dot as a library call per tangent; this keeps the step one loop nest)."""
    return jnp.sum(a * x[None, :], axis=1)


def _mm(a, b):
    return jnp.sum(a[:, :, None] * b[None, :, :], axis=1)


def _solve3(a, b):
    """``a^-1 b`` for a symmetric positive definite 3x3 by its adjugate (closed form: no
    LAPACK call, which would split the compiled step and cost a triangular solve per
    tangent)."""
    c00 = a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]
    c01 = a[0, 2] * a[2, 1] - a[0, 1] * a[2, 2]
    c02 = a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]
    c11 = a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0]
    c12 = a[0, 2] * a[1, 0] - a[0, 0] * a[1, 2]
    c22 = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    det = a[0, 0] * c00 + a[0, 1] * (a[1, 2] * a[2, 0] - a[1, 0] * a[2, 2]) + a[0, 2] * (
        a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0])
    adj = jnp.array([[c00, c01, c02], [c01, c11, c12], [c02, c12, c22]])
    return _mv(adj, b) / det


def spring_wrench(y, theta, consts):
    """Total spring force and moment about the platform origin, lab ``(3,), (3,)``."""
    anchor, att, _ = consts
    s_n = anchor.shape[0]
    k, kl0, c = theta[10:10 + s_n], theta[10 + s_n:10 + 2 * s_n], theta[10 + 2 * s_n:]
    p, rot, v, w = y[0:3], y[3:12].reshape(3, 3), y[12:15], y[15:18]
    r = jnp.sum(att[:, None, :] * rot[None, :, :], axis=2)   # attachment from origin, lab
    d = r + p - anchor
    length = jnp.sqrt(jnp.sum(d * d, axis=1))
    rate = jnp.sum(d * (v + jnp.cross(w, r)), axis=1) / length
    f = d * ((kl0 - c * rate) / length - k)[:, None]
    return f.sum(0), jnp.cross(r, f).sum(0)


def rhs(y, theta, consts, free: tuple[int, ...]):
    """``dy/dt`` of the state ``y [18]`` with parameters ``theta``.

    With every DOF free the equations are solved about the COM in closed form (Newton for
    the COM, Euler in body axes, ``I_c`` inverted once per call); with locked DOFs the
    spatial mass matrix is solved on the free rows.
    """
    _, _, g = consts
    pi = theta[:10]
    rot, v, w = y[3:12].reshape(3, 3), y[12:15], y[15:18]
    m = pi[0]
    i_body = jnp.array([[pi[4], pi[5], pi[6]], [pi[5], pi[7], pi[8]], [pi[6], pi[8], pi[9]]])
    force, moment = spring_wrench(y, theta, consts)
    w_dot_r = jnp.cross(w[None, :], rot.T).T.reshape(9)
    if len(free) == 6:
        c_body = pi[1:4] / m
        i_c = i_body - m * (c_body @ c_body * jnp.eye(3) - jnp.outer(c_body, c_body))
        c = _mv(rot, c_body)
        w_b = _mv(rot.T, w)
        n_b = _mv(rot.T, moment - jnp.cross(c, force)) - jnp.cross(w_b, _mv(i_c, w_b))
        alpha = _mv(rot, _solve3(i_c, n_b))
        acc = force / m + g - jnp.cross(alpha, c) - jnp.cross(w, jnp.cross(w, c))
        return jnp.concatenate([v, w_dot_r, acc, alpha])
    h = rot @ pi[1:4]
    i_o = rot @ i_body @ rot.T
    sh = _skew(h)
    lam = jnp.block([[m * jnp.eye(3), -sh], [sh, i_o]])
    b = jnp.concatenate([force + m * g - jnp.cross(w, jnp.cross(w, h)),
                         moment + jnp.cross(h, g) - jnp.cross(w, i_o @ w)])
    idx = jnp.array(free)
    acc = jnp.zeros(6, b.dtype).at[idx].set(jnp.linalg.solve(lam[jnp.ix_(idx, idx)], b[idx]))
    return jnp.concatenate([v, w_dot_r, acc[:3], acc[3:]])


#: the classical RK4 tableau: each stage's offset into the step and its weight
RK4_OFFSETS = np.array([0.0, 0.5, 0.5, 1.0])
RK4_WEIGHTS = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0


def rk4_written(stage_rhs, y, h, stage_inputs=(None,) * 4):
    """One classical RK4 step of size ``h`` with its four stages written out:
    ``stage_rhs(y_stage, x)`` with ``x`` the stage's entry of ``stage_inputs`` (a
    prescribed input sampled at the step's start, middle, middle and end; None without).
    Short right-hand sides compile to the fastest code this way."""
    k1 = stage_rhs(y, stage_inputs[0])
    k2 = stage_rhs(y + 0.5 * h * k1, stage_inputs[1])
    k3 = stage_rhs(y + 0.5 * h * k2, stage_inputs[2])
    k4 = stage_rhs(y + h * k3, stage_inputs[3])
    return y + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)


def rk4_looped(stage_rhs, y, h, stage_inputs=None):
    """:func:`rk4_written` with the four stages a ``lax.scan`` over one traced
    ``stage_rhs(y_stage, x)`` (``x``: the stage's row of ``stage_inputs [4, ...]``, or a
    dummy 0): a long right-hand side (the articulated-body algorithm, many prescribed links)
    is traced and compiled once instead of four times, and its compiled code is as many
    times smaller."""
    def stage(carry, xs):
        # the step's start travels in the carry: a closed-over value would be frozen by
        # scan's trace cache at its first use (wrong from the second step on)
        y_base, k_prev, acc = carry
        cb, x = xs
        k = stage_rhs(y_base + cb[0] * h * k_prev, x)
        return (y_base, k, acc + cb[1] * k), None

    coef = jnp.asarray(np.stack([RK4_OFFSETS, RK4_WEIGHTS], 1))
    xs = (coef, jnp.zeros(4) if stage_inputs is None else stage_inputs)
    zero = jnp.zeros_like(y)
    (_, _, acc), _ = jax.lax.scan(stage, (y, zero, zero), xs)
    return y + h * acc


def rk4_step(y, theta, consts, free, h, substeps: int):
    """One frame: ``substeps`` classical RK4 steps of size ``h``."""
    for _ in range(substeps):
        y = rk4_written(lambda yy, _: rhs(yy, theta, consts, free), y, h)
    return y


# The chunks return their last frame beside the frames: the next chunk starts from it
# without an indexing op outside the compiled code (each such op is compiled anew in every
# process, too small for JAX's persistent cache: ~0.4 s of a run's first posture).
@disk_jit(static_argnames=("free", "substeps", "n"))
def _chunk(y, theta, consts, h, *, free, substeps, n):
    """``n`` frames after ``y`` and the last of them."""
    def body(y, _):
        y = rk4_step(y, theta, consts, free, h, substeps)
        return y, y
    last, ys = jax.lax.scan(body, y, None, length=n)
    return ys, last


@disk_jit(static_argnames=("free", "substeps", "n"))
def _chunk_tangents(y, tan_y, theta, tan_theta, consts, h, *, free, substeps, n):
    """``n`` frames after ``y`` and their tangents, and the last frame's pair."""
    def body(carry, _):
        y, tan_y = carry
        y_next, lin = jax.linearize(
            lambda yy, tt: rk4_step(yy, tt, consts, free, h, substeps), y, theta)
        tan_next = jax.vmap(lin, in_axes=(1, 1), out_axes=1)(tan_y, tan_theta)
        return (y_next, tan_next), (y_next, tan_next)
    (last, tan_last), (ys, tans) = jax.lax.scan(body, (y, tan_y), None, length=n)
    return ys, tans, last, tan_last


#: the rigid engine's tangent columns are padded to a multiple of this, so that a handful of
#: compiled widths serve every problem size (each costs ~3 s to compile, once per machine,
#: and ~0.25 s to load, once per process). 8 rather than the other engines' 16
#: (columns.BLOCK): a posture's 21 columns run at 24 instead of 32 (1500 frames: 0.037-0.048
#: against 0.059-0.070 s) and the calibration's 34 at 40 instead of 48 (0.058-0.063 against
#: 0.064-0.073 s); the padding's zero columns change no tangent (equal to the bit). Measured
#: 2026-11-27 on this 2-core machine.
PAD_COLUMNS = 8


def padded_width(p: int, block: int = PAD_COLUMNS) -> int:
    """The compiled width that carries ``p`` tangent columns: a multiple of ``block``
    (default the rigid engine's, :data:`PAD_COLUMNS`)."""
    return max(block, -(-int(p) // block) * block)


def _pad_columns(a: np.ndarray, block: int) -> np.ndarray:
    """Tangent columns padded with zeros to :func:`padded_width`."""
    p = a.shape[1]
    width = padded_width(p, block)
    return a if width == p else np.concatenate([a, np.zeros((a.shape[0], width - p))], 1)


def tangent_start(n_theta: int, n_state: int, tangent_theta: np.ndarray | None,
                  tangent_y0: np.ndarray | None, *, pad: bool = True, block: int = BLOCK
                  ) -> tuple[int, np.ndarray, np.ndarray]:
    """``(P, d theta/d x, d y0/d x)`` with the missing one zero and, with ``pad`` (JAX's
    compiled widths), both padded to a multiple of ``block`` (default the column groups'
    :data:`rigtool.engine.columns.BLOCK`; the rigid engine's own is :data:`PAD_COLUMNS`);
    ``P`` the caller's number of directions (every engine's simulate starts its tangents
    here)."""
    p = (tangent_theta if tangent_theta is not None else tangent_y0).shape[1]
    t_th = np.asarray(np.zeros((n_theta, p)) if tangent_theta is None else tangent_theta, float)
    t_y = np.asarray(np.zeros((n_state, p)) if tangent_y0 is None else tangent_y0, float)
    return (p, _pad_columns(t_th, block), _pad_columns(t_y, block)) if pad else (p, t_th, t_y)


def load_executables(model: RigidModel, widths: tuple[int, ...], substeps: int = 1) -> None:
    """Load the compiled chunks a fit of ``model`` will call (the primal one and the tangent
    one per compiled column width in ``widths``: :func:`padded_width`; the commands derive
    them from their fits' columns, rigtool.pipeline.rigid_widths) by running each once on a
    rest state. A process's first call of each otherwise pays its load from JAX's persistent
    cache, 0.15-0.3 s apiece on the fit's path; the commands call this on a thread of their
    own while they read and prepare the captures (JAX releases the interpreter lock while it
    loads and runs compiled code). A width no fit then uses costs that thread's time,
    nothing else."""
    consts = model.consts()
    y = np.zeros(STATE)
    y[3:12] = np.eye(3).ravel()
    theta = np.zeros(10 + 3 * model.n_springs)
    theta[0] = 1.0
    h = 1e-3 / substeps
    _chunk(y, theta, consts, h, free=model.free_rows, substeps=substeps, n=CHUNK_FRAMES)
    for width in widths:
        p, t_th, t_y = tangent_start(theta.size, STATE, None, np.zeros((STATE, width)),
                                     block=PAD_COLUMNS)
        np.asarray(_chunk_tangents(y, t_y, theta, t_th, consts, h, free=model.free_rows,
                                   substeps=substeps, n=CHUNK_FRAMES)[0])


def simulate(model: RigidModel, theta: np.ndarray, y0: np.ndarray, n_frames: int,
             dt: float, *, substeps: int = 1, tangent_theta: np.ndarray | None = None,
             tangent_y0: np.ndarray | None = None, consume=None,
             offset: np.ndarray | None = None):
    """States at ``t = k dt`` (k = 0..n_frames-1) and, when tangents are given, their exact
    derivatives along them.

    Parameters
    ----------
    model : RigidModel
    theta : ndarray [10 + 3S]
        ``[pi, k, k L0, c]`` (:func:`theta_of`).
    y0 : ndarray [18]
        Initial state.
    n_frames : int
    dt : float
        Frame interval, s.
    substeps : int
        RK4 steps per frame.
    tangent_theta, tangent_y0 : ndarray [10 + 3S, P], [18, P], optional
        Directions of the derivative (one column per unknown): ``d theta/d x``, ``d y0/d x``.
    consume : callable, optional
        ``consume(k0, states [m, 18], tangents [m, 18, P])`` is called for each run of frames
        ``k0 .. k0+m-1`` as they come, and the tangents are not kept (memory bounded by one
        chunk whatever the capture's length).
    offset : ndarray [>= n_frames, 18], optional
        Added to every returned (and consumed) state, not to the integration: a fixed
        correction of the model's output, such as the integrator's error at a nearby
        estimate (:func:`rigtool.identify.common.output_error.integrator_offset`). The
        tangents are those of the uncorrected model.

    Returns
    -------
    states : ndarray [T, 18]
    tangents : ndarray [T, 18, P] or None
        ``d states / d x`` (None with ``consume``).

    Raises
    ------
    FloatingPointError
        When the motion leaves the model (non-finite state).
    """
    consts = model.consts()
    states = np.empty((n_frames, STATE))
    states[0] = y0
    y = np.asarray(y0, float)
    theta_j = np.asarray(theta, float)
    if tangent_theta is None and tangent_y0 is None:
        k = 1
        fixed = committed((theta_j, consts, dt / substeps))     # once, not per chunk
        while k < n_frames:
            ys, y = _chunk(y, *fixed, free=model.free_rows, substeps=substeps,
                           n=CHUNK_FRAMES)
            m = min(CHUNK_FRAMES, n_frames - k)
            ys_np = np.asarray(ys)
            if not np.all(np.isfinite(ys_np[m - 1])):
                raise FloatingPointError("the simulated motion diverged")
            states[k:k + m] = ys_np[:m]
            k += m
        if offset is not None:
            states += offset[:n_frames]
        return states, None
    p, t_th, t_y = tangent_start(theta.size, STATE, tangent_theta, tangent_y0,
                                 block=PAD_COLUMNS)
    keep = consume is None
    tangents = np.empty((n_frames, STATE, p)) if keep else None
    if offset is not None:
        states[0] += offset[0]
    if keep:
        tangents[0] = t_y[:, :p]
    else:
        consume(0, states[:1], t_y[None, :, :p])
    # One thread: the platform's 18 states make a tangent chunk cheap (0.33 s for 7200
    # frames x 32 columns), so splitting columns over threads (rigtool.engine.columns) cost
    # more than it saved (measured: 0.41 s on two threads). Instead the next chunk is
    # dispatched before this one is consumed: XLA integrates while NumPy accumulates.

    # the inputs every chunk shares, committed to the device once
    fixed = committed((theta_j, t_th, consts, dt / substeps))

    def dispatch(y, tan):
        return _chunk_tangents(y, tan, *fixed, free=model.free_rows, substeps=substeps,
                               n=CHUNK_FRAMES)

    out = dispatch(y, t_y)
    k = 1
    while k < n_frames:
        ys, ts, y_last, t_last = out
        m = min(CHUNK_FRAMES, n_frames - k)
        ys_np = np.asarray(ys)
        if not np.all(np.isfinite(ys_np[m - 1])):
            raise FloatingPointError("the simulated motion diverged")
        states[k:k + m] = ys_np[:m]
        if offset is not None:
            states[k:k + m] += offset[k:k + m]
        ts_np = np.asarray(ts)[:m, :, :p]
        if k + m < n_frames:             # m == CHUNK_FRAMES: the next chunk starts now
            out = dispatch(y_last, t_last)
        if keep:
            tangents[k:k + m] = ts_np
        else:
            consume(k, states[k:k + m], ts_np)
        k += m
    return states, tangents


__all__ = ["RigidModel", "load_executables", "STATE", "CHUNK_FRAMES", "theta_of", "tangent_start", "rhs", "rk4_step",
           "rk4_written", "rk4_looped",
           "simulate",
           "spring_wrench"]
