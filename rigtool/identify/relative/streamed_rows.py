"""A relative-motion fit's Jacobian when it is not held whole: its normal equations
streamed over the frames, the rows of every d-th frame kept for the geodesic acceleration,
and the covariance's cross products from one more streamed tangent run.

The swing's Jacobian is every marker row by every unknown: 4.4 GiB for a 600 s two-link
swing, 0.6 GB for a 12 s swing at 15 links. Above :data:`JACOBIAN_BYTES` the problem
(rigtool.identify.relative.problem) accumulates ``J^T J`` and ``J^T r`` chunk by chunk as
the engine integrates (rigtool.engine.tree.simulate's ``consume``), so memory no longer
grows with the capture's length or the tree's size.
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

    def with_prior(self, offset: int, prior_jac: np.ndarray, prior_r: np.ndarray
                   ) -> "StreamedRows":
        """These rows with the prior's rows (``prior_jac``, residual ``prior_r``) appended
        at ``offset`` of the residual vector, all held."""
        return StreamedRows(self.jtj + prior_jac.T @ prior_jac, self.jtr + prior_jac.T @ prior_r,
                            np.concatenate([self.rows, offset + np.arange(prior_r.size)]),
                            np.concatenate([self.weight, np.ones(prior_r.size)]),
                            np.vstack([self.held, prior_jac]))


def marker_cross_products(prob, x: np.ndarray, jac: np.ndarray | StreamedRows, n_mark: int,
                          members: list) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(J_m^T dr/dPhi_s, J_m^T A_cal)`` at ``x`` for :func:`phi_b_covariance` (the first
    None in ``phi_b`` mode, the second without calibration ``members``). With the Jacobian
    held (``jac``, its first ``n_mark`` rows the markers') from the problem's
    ``phi_s_jacobian`` and ``calibration_jacobian``; streamed, from one more tangent run
    with those directions beside the unknowns' (``prob.marker_gram``)."""
    need_s = prob.free == "jyy"
    if not isinstance(jac, StreamedRows):
        jac_m = jac[:n_mark]
        j_cal = prob.calibration_jacobian(x, members)
        return (jac_m.T @ prob.phi_s_jacobian(x) if need_s else None,
                None if j_cal is None else jac_m.T @ j_cal)
    _, _, d_th_s, d_y_s, d_th_c, d_y_c = prob.directions(prob._full(x))
    extra_th, extra_y = [np.zeros((d_th_s.shape[0], 0))], [np.zeros((d_y_s.shape[0], 0))]
    if need_s:
        extra_th.append(d_th_s)
        extra_y.append(d_y_s)
    if members:
        delta = np.stack([prob.calib_vector(m[2]) - prob.calib_vector() for m in members], 1)
        extra_th.append(d_th_c @ delta)
        extra_y.append(d_y_c @ delta)
    p = x.size
    gram = prob.marker_gram(x, np.hstack(extra_th), np.hstack(extra_y))
    n_s = d_th_s.shape[1] if need_s else 0
    return (gram[:p, p:p + n_s] if need_s else None,
            gram[:p, p + n_s:] if members else None)


__all__ = ["JACOBIAN_BYTES", "StreamedRows", "marker_cross_products"]
