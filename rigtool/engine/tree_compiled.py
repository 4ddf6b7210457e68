"""The tree engine's simulation with exact tangents, run by the numba kernels of
rigtool.engine.tree_tangents: the arguments unpacked from ``theta``, the tangent columns
split over threads (each group integrates the state too; the kernels release the
interpreter lock), the outputs of rigtool.engine.tree.simulate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rigtool.engine.columns import ColumnRunner, column_groups, engine_threads
from rigtool.engine.rigid import tangent_start
from rigtool.engine.tree_tangents import simulate_tangents

if TYPE_CHECKING:
    from rigtool.engine.tree_model import TreeModel

#: fewest tangent columns per thread: below it a second thread costs more than it saves
MIN_COLUMNS_PER_THREAD = 8


def _split(theta: np.ndarray, model: "TreeModel", p_n: int) -> list[np.ndarray]:
    """``theta [n_theta]`` (or its tangents ``[n_theta, P]``) as the kernels' arrays:
    pi ``[nb, 10]``, joint centres ``[nb, 3]``, joint damping ``[nb]``, k, k L0, c
    ``[S]`` and the markers' body coordinates ``[K, 3]`` (each with ``P`` trailing)."""
    lay = model.layout()
    nb, k_n, s_n = model.n_bodies, len(model.body_of_marker), model.n_springs
    tail = (p_n,) if theta.ndim == 2 else ()
    shapes = {"pi": (nb, 10), "jp": (nb, 3), "joint_damping": (nb,), "k": (s_n,),
              "kl0": (s_n,), "c": (s_n,), "markers": (k_n, 3)}
    return [_writable(theta[lay[name]].reshape(shape + tail)) for name, shape in shapes.items()]


def _writable(a) -> np.ndarray:
    """A C-ordered, writable float64 array (an array viewed from JAX is read-only, which
    numba types apart: one more compilation of the kernels, about a minute)."""
    return np.require(a, np.float64, ["C", "W"])


def _column_groups(p_n: int) -> list[slice]:
    """One contiguous range of the ``p_n`` columns per thread, at least
    :data:`MIN_COLUMNS_PER_THREAD` each (the kernels take any width: no blocks)."""
    threads = max(1, min(engine_threads(), p_n // MIN_COLUMNS_PER_THREAD))
    return column_groups(p_n, threads, block=1)


def load_kernels() -> None:
    """Load the kernels' compiled code now: a process's first tree simulation otherwise pays
    it (0.4-0.5 s from numba's on-disk cache, numba's compiler set-up included). A run calls
    this on a thread of its own while the postures are fitted (they run in XLA, without the
    interpreter lock), so its relative-motion fit starts with the kernels in memory. One
    frame of a one-body tree with one tangent column: the argument types of every call
    (C-ordered float64 arrays, int64 indices), so the same compiled code."""
    def zeros(*shape: int, dtype=np.float64) -> np.ndarray:
        return np.zeros(shape, dtype)

    n_s = 6 + 12 * 1          # one body's state (TreeModel.n_state): p, R, v, omega
    simulate_tangents(zeros(n_s), zeros(n_s, 1), zeros(1, 10), zeros(1, 10, 1), zeros(1, 3),
                      zeros(1, 3, 1), zeros(1), zeros(1, 1), zeros(1), zeros(1, 1), zeros(1),
                      zeros(1, 1), zeros(1), zeros(1, 1), zeros(1, 3), zeros(1, 3, 1),
                      zeros(1, dtype=np.int64), zeros(6, dtype=np.int64), zeros(1, 3),
                      zeros(1, 3), zeros(3), zeros(1, dtype=np.int64), 1, 0.01, 1,
                      zeros(1, n_s), zeros(1, 1, 3), zeros(1, 1, 3, 1))


#: bytes of marker tangents a chunk of frames holds when the caller consumes them chunk by
#: chunk (``consume``): big enough that the kernels' per-call set-up is negligible
CHUNK_BYTES = 32 * 2 ** 20


def chunk_frames(n_markers: int, n_columns: int) -> int:
    """Frames per chunk so that one chunk's marker tangents stay near :data:`CHUNK_BYTES`."""
    return max(16, CHUNK_BYTES // max(1, 24 * n_markers * max(n_columns, 1)))


def simulate_compiled(model: "TreeModel", theta: np.ndarray, y0: np.ndarray, n_frames: int,
                      dt: float, substeps: int, tangent_theta: np.ndarray | None,
                      tangent_y0: np.ndarray | None, consume=None):
    """States ``[T, n_state]``, markers ``[T, K, 3]`` and, with tangents, their derivatives
    ``[T, K, 3, P]`` (None without): rigtool.engine.tree.simulate's contract.

    With ``consume``, the frames are integrated in chunks of :func:`chunk_frames` and
    ``consume(k0, states [m, n_state], markers [m, K, 3], d_markers [m, K, 3, P])`` is
    called for frames ``k0 .. k0+m-1`` as they come; nothing of the capture's length is
    kept (returns None).

    Raises FloatingPointError when the motion leaves the model.
    """
    theta = _writable(theta)
    y0 = _writable(y0)
    n_s, k_n = model.n_state, len(model.body_of_marker)
    with_tan = tangent_theta is not None or tangent_y0 is not None
    if with_tan:                           # the kernels take any width: no padding
        p_n, t_th, t_y = tangent_start(theta.size, n_s, tangent_theta, tangent_y0, pad=False)
    else:                                  # no columns: the kernels' primal alone
        p_n, t_th, t_y = 0, np.zeros((theta.size, 0)), np.zeros((n_s, 0))
    parents = np.asarray(model.parents, np.int64)
    free_rows = np.asarray(model.free_rows, np.int64)
    body_of_marker = np.asarray(model.body_of_marker, np.int64)
    anchor, attachment, gravity = (_writable(model.anchor_lab),
                                   _writable(model.attachment_platform),
                                   _writable(model.gravity_lab))
    pis, jp, jd, k, kl0, c, mk = _split(theta, model, 0)
    h = dt / substeps
    groups = _column_groups(p_n) if p_n else [slice(0, 0)]
    d_params = [_split(t_th[:, g], model, g.stop - g.start) for g in groups]
    d_start = [_writable(t_y[:, g]) for g in groups]       # each group's tangents, carried

    def run_chunk(y_start: np.ndarray, n_run: int, outs: list) -> None:
        """Integrate ``n_run`` frames (the first is ``y_start``) in every column group; each
        group's final tangents replace its ``d_start``."""
        def run(i: int) -> int:
            dpis, djp, djd, dk, dkl0, dc, dmk = d_params[i]
            states, mks, d_mks = outs[i]
            d_last, done = simulate_tangents(
                y_start, d_start[i], pis, dpis, jp, djp, jd, djd, k, dk, kl0,
                dkl0, c, dc, mk, dmk, parents, free_rows, anchor, attachment, gravity,
                body_of_marker, n_run, h, substeps, states, mks, d_mks)
            d_start[i] = d_last
            return int(done)

        try:
            done = runner.map(run)
        except np.linalg.LinAlgError as exc:     # a non-finite state reached a solve
            raise FloatingPointError("the simulated motion diverged") from exc
        if min(done) < n_run:
            raise FloatingPointError("the simulated motion diverged")

    def buffers(n_run: int) -> list:
        return [(np.empty((n_run, n_s)), np.empty((n_run, k_n, 3)),
                 np.empty((n_run, k_n, 3, g.stop - g.start))) for g in groups]

    def joined(outs: list) -> np.ndarray:
        return outs[0][2] if len(outs) == 1 else np.concatenate([o[2] for o in outs], axis=3)

    with ColumnRunner(groups) as runner:
        if consume is None:
            outs = buffers(n_frames)
            run_chunk(y0, n_frames, outs)
            states, mks = outs[0][0], outs[0][1]
            return states, mks, joined(outs) if with_tan else None
        # chunk by chunk: each run starts at the last frame of the one before (integrated
        # again as its first frame, which is dropped), with every group's tangents carried
        per = chunk_frames(k_n, p_n)
        y_start, k0 = y0, 0
        while k0 < n_frames:
            m = min(per, n_frames - k0)
            first = 0 if k0 == 0 else 1
            outs = buffers(m + first)
            run_chunk(y_start, m + first, outs)
            states, mks = outs[0][0][first:], outs[0][1][first:]
            consume(k0, states, mks, joined(outs)[first:])
            y_start = _writable(states[-1])
            k0 += m
    return None


__all__ = ["load_kernels", "simulate_compiled", "chunk_frames", "CHUNK_BYTES", "MIN_COLUMNS_PER_THREAD"]
