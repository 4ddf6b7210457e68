"""A relative-motion fit's Jacobian when it is not held whole: its normal equations
streamed over the frames, the rows of every d-th frame kept for the geodesic acceleration,
and the covariance's cross products from one more streamed tangent run.

The relative fits' Jacobian is every marker row by every unknown: 4.4 GiB for a 600 s
two-link swing, 0.6 GB for a 12 s swing at 15 links. Above :data:`JACOBIAN_BYTES` the
problem accumulates ``J^T J`` and ``J^T r`` chunk by chunk (:class:`RowAccumulator`): the
free swing (rigtool.identify.relative.problem) as the engine integrates
(rigtool.engine.tree.simulate's ``consume``), the active model
(rigtool.identify.relative.active_problem) from its platform's state tangents, 18 per
frame, 128 frames of marker rows at a time. Memory no longer grows with the capture's
length or the tree's size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: bytes of Jacobian a relative fit holds at most. Above it the normal equations are
#: accumulated chunk by chunk over the frames as the engine integrates them, and only every
#: d-th frame's rows are kept, for the geodesic acceleration (:class:`StreamedRows`): memory
#: no longer grows with the capture's length or the tree's size.
JACOBIAN_BYTES = 256 * 2 ** 20


@dataclass(frozen=True)
class StreamedRows:
    """A Jacobian not held whole: its normal equations over every row (``jtj``, ``jtr``)
    and the rows of every d-th frame (``held [H, P]``, their places ``rows [H]`` in the
    residual vector and ``weight [H]``, d for a marker row, 1 for a prior row).

    ``J^T w`` for the geodesic acceleration is taken as ``held^T (weight * w[rows])``: a
    quadrature of a sum over frames of smooth functions of time (the simulated motion and
    its derivatives; the frames sample it at 120 Hz, tens of times its frequencies). It only
    shapes the trial step, which its cost then judges; the normal equations, and so the
    optimum and its covariance, use every row.
    """

    jtj: np.ndarray
    jtr: np.ndarray
    rows: np.ndarray
    weight: np.ndarray
    held: np.ndarray
    frame_scores: np.ndarray | None = None    # [frames, P]: each frame's marker rows' J^T r

    @classmethod
    def zeros(cls, n_columns: int) -> "StreamedRows":
        """No information (the rows of a run that left the model)."""
        return cls(np.zeros((n_columns, n_columns)), np.zeros(n_columns),
                   np.zeros(0, np.int64), np.zeros(0), np.zeros((0, n_columns)))

    def with_prior(self, offset: int, prior_jac: np.ndarray, prior_r: np.ndarray
                   ) -> "StreamedRows":
        """These rows with the prior's rows (``prior_jac``, residual ``prior_r``) appended
        at ``offset`` of the residual vector, all held."""
        return StreamedRows(self.jtj + prior_jac.T @ prior_jac, self.jtr + prior_jac.T @ prior_r,
                            np.concatenate([self.rows, offset + np.arange(prior_r.size)]),
                            np.concatenate([self.weight, np.ones(prior_r.size)]),
                            np.vstack([self.held, prior_jac]), self.frame_scores)


def frame_scores(r: np.ndarray, jac: np.ndarray, frame_of_row: np.ndarray
                 ) -> tuple[int, np.ndarray]:
    """``(first frame, [frames, P])``: each frame's ``J^T r`` over rows sorted by frame
    (``frame_of_row`` non-decreasing), frames without rows zero: the per-frame scores of a
    serial-correlation-robust covariance (rigtool.identify.relative.fit_common)."""
    frame_of_row = np.asarray(frame_of_row)
    if frame_of_row.size == 0:
        return 0, np.zeros((0, jac.shape[1]))
    first = int(frame_of_row[0])
    out = np.zeros((int(frame_of_row[-1]) - first + 1, jac.shape[1]))
    starts = np.flatnonzero(np.r_[True, np.diff(frame_of_row) != 0])
    out[frame_of_row[starts] - first] = np.add.reduceat(jac * r[:, None], starts, axis=0)
    return first, out


class RowAccumulator:
    """Builds :class:`StreamedRows` from chunks of marker rows as a simulation yields them:
    ``J^T J`` and ``J^T r`` summed, each frame's ``J^T r`` (:func:`frame_scores`), the
    residual rows kept (one number per row), the rows of every ``stride``-th frame held (0:
    none), and ``J^T data`` for given columns of data over the same rows (``data [M, q]``,
    the active model's input probes)."""

    def __init__(self, n_columns: int, stride: int, data: np.ndarray | None = None):
        self.stride = int(stride)
        self.data = data
        self.gram = np.zeros((n_columns, n_columns))
        self.jtr = np.zeros(n_columns)
        self.jt_data = None if data is None else np.zeros((n_columns, data.shape[1]))
        self._r, self._held, self._idx, self._scores = [], [], [], []
        self._offset = 0

    def add(self, r: np.ndarray, jac: np.ndarray, frame_of_row: np.ndarray) -> None:
        """The next rows: residual ``r [m]``, Jacobian ``jac [m, P]``, each row's frame."""
        self.gram += jac.T @ jac
        self.jtr += jac.T @ r
        self._scores.append(frame_scores(r, jac, frame_of_row))
        if self.data is not None:
            self.jt_data += jac.T @ self.data[self._offset:self._offset + r.size]
        keep = (np.flatnonzero(frame_of_row % self.stride == 0) if self.stride > 0
                else np.empty(0, np.int64))
        self._held.append(jac[keep])
        self._idx.append(self._offset + keep)
        self._r.append(r)
        self._offset += r.size

    def result(self) -> tuple[np.ndarray, StreamedRows]:
        """The residual rows and their streamed Jacobian."""
        idx = np.concatenate(self._idx) if self._idx else np.zeros(0, np.int64)
        held = (np.concatenate(self._held, 0) if self._held
                else np.zeros((0, self.gram.shape[0])))
        r = np.concatenate(self._r) if self._r else np.zeros(0)
        n_frames = max((f + s.shape[0] for f, s in self._scores), default=0)
        scores = np.zeros((n_frames, self.gram.shape[0]))
        for first, s in self._scores:
            scores[first:first + s.shape[0]] += s
        return r, StreamedRows(self.gram, self.jtr, idx, np.full(idx.size, float(self.stride)),
                               held, scores)


def marker_cross_products(prob, x: np.ndarray, jac: np.ndarray | StreamedRows, n_mark: int,
                          members: list, data: np.ndarray | None = None):
    """``(J_m^T dr/dPhi_s, J_m^T A_cal)`` at ``x`` for the covariance
    (rigtool.identify.relative.fit_common.phi_b_covariance; the first None in ``phi_b``
    mode, the second without calibration ``members``), and with ``data [M, q]`` over the
    marker rows also ``J_m^T data`` as a third item. With the Jacobian held (``jac``, its
    first ``n_mark`` rows the markers') from the problem's ``phi_s_jacobian`` and
    ``calibration_jacobian``; streamed, from one more tangent run with those directions
    beside the unknowns' (the problem's ``cross_gram``)."""
    need_s = prob.free == "jyy"
    if not isinstance(jac, StreamedRows):
        jac_m = jac[:n_mark]
        j_cal = prob.calibration_jacobian(x, members)
        out = (jac_m.T @ prob.phi_s_jacobian(x) if need_s else None,
               None if j_cal is None else jac_m.T @ j_cal)
        if data is None:
            return out
        return out + (np.stack([jac_m.T @ data[:, j] for j in range(data.shape[1])], 1),)
    if data is None:
        gram, n_s = prob.cross_gram(x, need_s, members)
    else:
        gram, n_s, jt_data = prob.cross_gram(x, need_s, members, data)
    p = x.size
    out = (gram[:p, p:p + n_s] if need_s else None, gram[:p, p + n_s:] if members else None)
    return out if data is None else out + (jt_data[:p],)


__all__ = ["JACOBIAN_BYTES", "StreamedRows", "RowAccumulator", "frame_scores",
           "marker_cross_products"]
