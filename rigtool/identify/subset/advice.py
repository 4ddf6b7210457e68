"""Which locked posture to measure next, so that the multi-posture fit identifies Phi_s.

A candidate posture is a set of link rotations ``0R_j``. The default grid turns one link
(and everything it carries) about one axis of its parent's frame by one angle, starting from
a reference posture (the first measured one). Each candidate is scored by the whitened,
column-equilibrated Phi_s regressor it would give together with the postures already
measured: first by the numerical rank, then, at full rank, by the smallest singular value
relative to the largest (``1 / condition number``); below full rank by the sum of the logs
of the singular values (a log-determinant, so the weakest directions count most).

The regressor depends only on rotations and joint centres, not on the measured values, so
the advice needs no measurement of the candidate; its rows are whitened like the reference
posture's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.identify.subset.fit import (DEFAULT_RTOL, PostureOverall, reference_radius,
                                     regressor_phi_s, structural_whitener)
from rigtool.tree import Tree, phi_s_names

_AXES = {"x": np.array([1.0, 0, 0]), "y": np.array([0, 1.0, 0]), "z": np.array([0, 0, 1.0])}


@dataclass(frozen=True)
class Candidate:
    """One posture that could be measured next."""

    description: str
    rotations: dict[str, np.ndarray]
    link: str | None = None
    axis: str | None = None
    angle_deg: float | None = None


@dataclass(frozen=True)
class Advice:
    """The best candidate and what it would do to the design."""

    best: Candidate
    rank_before: int
    rank_after: int
    n_parameters: int
    smin_before: float             # relative smallest singular value (1/condition number)
    smin_after: float
    per_direction: list[Candidate]  # best candidate for each null direction (may be empty)

    def lines(self, combos=None) -> list[str]:
        """Readable advice; ``combos`` are the null combinations from ``null_combinations``."""
        out = []
        for (names, _), cand in zip(combos or [], self.per_direction):
            what = " and ".join(names[:2]) + (" (and others)" if len(names) > 2 else "")
            verb = "is not determined" if len(names) == 1 else "are not separated"
            how = (f"add a posture rotating {cand.link} about {cand.axis}"
                   if cand.link else f"add a posture like {cand.description}")
            out.append(f"{what} {verb}: {how}")
        out.append(f"best next posture: {self.best.description} (rank {self.rank_before} -> "
                   f"{self.rank_after} of {self.n_parameters}; smallest relative singular "
                   f"value {self.smin_before:.3g} -> {self.smin_after:.3g})")
        return out


def subtree(tree: Tree, index: int) -> list[int]:
    """Indices of link ``index`` and all its descendants."""
    parents = tree.parent_index()
    inside = {index}
    for k in range(index + 1, len(tree.links)):
        if parents[k] in inside:
            inside.add(k)
    return sorted(inside)


def turn_link(tree: Tree, rotations: dict[str, np.ndarray], link: str,
              rotvec_parent: np.ndarray) -> dict[str, np.ndarray]:
    """Rotations after turning ``link`` (and what it carries) by ``rotvec_parent`` (rad,
    in the parent's axes) about its joint."""
    i = tree.index(link)
    parent = tree.links[i].parent
    r_p = np.eye(3) if tree.index(parent) == 0 else np.asarray(rotations[parent], float)
    g = r_p @ Rotation.from_rotvec(rotvec_parent).as_matrix() @ r_p.T
    out = {k: np.asarray(v, float) for k, v in rotations.items()}
    for k in subtree(tree, i):
        name = tree.links[k].name
        out[name] = g @ out[name]
    return out


def candidate_grid(tree: Tree, reference: dict[str, np.ndarray], *,
                   angles_deg=(45.0, 90.0, -45.0, -90.0), axes=("x", "y", "z"),
                   links: list[str] | None = None, reference_name: str = "reference"
                   ) -> list[Candidate]:
    """One-link turns of ``reference`` about each parent axis by each angle."""
    out = []
    for link in links or tree.names[1:]:
        parent = tree.links[tree.index(link)].parent
        for ax in axes:
            for ang in angles_deg:
                rot = turn_link(tree, reference, link, np.radians(ang) * _AXES[ax])
                out.append(Candidate(f"{link} turned {ang:+g} deg about {parent}'s {ax} axis "
                                     f"from posture '{reference_name}'", rot, link, ax, ang))
    return out


def _scaled_spectra(gram: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """Relative singular values of the equilibrated design for each candidate block.

    ``gram`` is ``A^T A`` [P, P]; ``extra`` is ``[C, 9, P]`` candidate rows."""
    g = gram[None] + np.einsum("cri,crj->cij", extra, extra)
    d = np.sqrt(np.einsum("cii->ci", g))
    d[d == 0] = 1.0
    g = g / d[:, :, None] / d[:, None, :]
    ev = np.linalg.eigvalsh(g)[:, ::-1]
    s = np.sqrt(np.clip(ev, 0, None))
    return s / s[:, :1]


def _score(s_rel: np.ndarray, rtol: float):
    rank = int(np.sum(s_rel > rtol))
    if rank == s_rel.size:
        return (rank, float(s_rel[-1]))
    return (rank, float(np.sum(np.log(np.clip(s_rel, 1e-15, None)))) - 1e6)


def design_rows(tree: Tree, rotation_sets: list[dict[str, np.ndarray]],
                whiteners: list[np.ndarray]) -> np.ndarray:
    """Whitened Phi_s regressor rows ``[K, 9, P]`` of several postures."""
    return np.stack([w @ regressor_phi_s(tree, r) for r, w in zip(rotation_sets, whiteners)])


def best_candidate(tree: Tree, rows: np.ndarray, candidates: list[Candidate],
                   cand_whitener: np.ndarray, *, rtol: float = DEFAULT_RTOL,
                   extra: np.ndarray | None = None):
    """``(index, s_rel_after, s_rel_before)`` of the best candidate given existing ``rows``
    ``[K, 9, P]`` (``extra``: the candidates' whitened rows, if already computed)."""
    a = rows.reshape(-1, rows.shape[-1])
    gram = a.T @ a
    before = _scaled_spectra(gram, np.zeros((1, 1, a.shape[1])))[0]
    if extra is None:
        extra = design_rows(tree, [c.rotations for c in candidates],
                            [cand_whitener] * len(candidates))
    spectra = _scaled_spectra(gram, extra)
    scores = [_score(s, rtol) for s in spectra]
    k = max(range(len(candidates)), key=lambda i: scores[i])
    return k, spectra[k], before


def advise_next_posture(tree: Tree, postures: list[PostureOverall], total_mass_kg: float, *,
                        candidates: list[Candidate] | None = None,
                        angles_deg=(45.0, 90.0, -45.0, -90.0),
                        rtol: float = DEFAULT_RTOL) -> Advice:
    """The candidate posture that best completes the measured ``postures``.

    Parameters
    ----------
    candidates : list of Candidate, optional
        Postures the user could measure; default: :func:`candidate_grid` around the first
        posture with ``angles_deg``.
    """
    radius = reference_radius(postures, total_mass_kg)
    ws = [structural_whitener(total_mass_kg, radius)] * len(postures)   # as fit_subset decides
    rows = design_rows(tree, [p.rotations for p in postures], ws)
    if candidates is None:
        candidates = candidate_grid(tree, postures[0].rotations, angles_deg=angles_deg,
                                    reference_name=postures[0].name)
    k, after, before = best_candidate(tree, rows, candidates, ws[0], rtol=rtol)
    # per null direction: the candidate whose rows see that direction most
    a = rows.reshape(-1, rows.shape[-1])
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    _, s, vt = np.linalg.svd(a / scale, full_matrices=True)
    s_full = np.zeros(a.shape[1])
    s_full[:s.size] = s
    rank = int(np.sum(s_full / s_full[0] > rtol))
    from rigtool.identify.subset.fit import null_combinations
    combos = null_combinations(vt[rank:].T, scale, phi_s_names(tree))
    extra = design_rows(tree, [c.rotations for c in candidates], [ws[0]] * len(candidates))
    per_dir = []
    names = phi_s_names(tree)
    for cnames, coef in combos:
        d = np.zeros(a.shape[1])
        d[[names.index(n) for n in cnames]] = coef
        seen = np.linalg.norm(extra @ (d / scale), axis=1)
        per_dir.append(candidates[int(np.argmax(seen))])
    return Advice(candidates[k], int(np.sum(before > rtol)), int(np.sum(after > rtol)),
                  a.shape[1], float(before[-1]), float(after[-1]), per_dir)


def plan_postures(tree: Tree, start: list[dict[str, np.ndarray]], cand_whitener: np.ndarray, *,
                  angles_deg=(45.0, 90.0, -45.0, -90.0), rtol: float = DEFAULT_RTOL,
                  max_condition: float = 100.0, min_postures: int = 0,
                  max_postures: int = 100, candidates: list[Candidate] | None = None
                  ) -> tuple[list[Candidate], list[tuple[int, float]]]:
    """Greedy design: add the best candidate until the Phi_s regressor has full rank and
    condition number at most ``max_condition`` and there are at least ``min_postures``
    postures (more postures average the measurement noise down).

    ``candidates`` default to :func:`candidate_grid` around ``start[0]`` with ``angles_deg``;
    a protocol passes the postures its subject can hold instead (e.g.
    :func:`rigtool.identify.subset.supine.supine_candidates`). A candidate may be chosen
    again (a repeated posture averages its noise down).

    Returns the added candidates and ``(rank, condition)`` after each addition.
    """
    rotation_sets = list(start)
    rows = design_rows(tree, rotation_sets, [cand_whitener] * len(rotation_sets))
    cands = (list(candidates) if candidates is not None
             else candidate_grid(tree, start[0], angles_deg=angles_deg))
    extra = design_rows(tree, [c.rotations for c in cands], [cand_whitener] * len(cands))
    added, history = [], []
    p = rows.shape[-1]
    while len(rotation_sets) < max_postures:
        k, after, _ = best_candidate(tree, rows, cands, cand_whitener, rtol=rtol, extra=extra)
        added.append(cands[k])
        rotation_sets.append(cands[k].rotations)
        rows = np.concatenate([rows, extra[k:k + 1]])
        rank = int(np.sum(after > rtol))
        cond = float(1.0 / after[-1]) if after[-1] > 0 else float("inf")
        history.append((rank, cond))
        if rank == p and cond <= max_condition and len(rotation_sets) >= min_postures:
            break
    return added, history
