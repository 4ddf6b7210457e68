"""The common model of benchmarks/engine_choice.py: the paper-002 platform on its four springs
carrying a base (body 0, bolted to it) and ``nb - 1`` links on spherical joints in up to four
limbs (a person lying on the platform: two arms, two legs, each a chain), with generic but
physical masses and inertias, three markers per body, and the P = 16 nb + 12 tangent
directions every engine differentiates along.

Not a benchmark itself (the leading underscore keeps it apart from the runnable scripts).

Conventions are those of rigtool.engine.tree: lab frame, SI units, state
``y = [p, vec(R_0..R_{nb-1}), v_p, omega_0..omega_{nb-1}]`` (lab components), parameters
``theta = [pi (10 nb), jp (3 nb), joint damping (nb), k (4), k L0 (4), c (4), markers (3 K)]``.
The pinocchio variables are ``q = [p_0 (3), quat_0 (4), quat_rel_1 .. (4 each)]`` and
``v = [v_origin (body 0's axes), omega_0 (body 0's axes), omega_rel_b (link b's axes) ..]``,
tangents of ``q`` taken with ``pin.integrate`` (local, right-trivialised).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

#: the paper-002 rig (scenarios/two_link_paper002.toml): anchors (lab), attachments (platform)
ANCHOR = np.array([[0.72, 0.42, 2.3], [-0.70, 0.41, 2.3], [-0.71, -0.43, 2.3], [0.69, -0.40, 2.3]])
ATTACH = np.array([[0.55, 0.25, 0.0], [-0.55, 0.25, 0.0], [-0.55, -0.25, 0.0], [0.55, -0.25, 0.0]])
STIFF = np.array([3050.0, 2950.0, 3120.0, 2890.0])
FREE_LEN = np.array([1.02, 1.03, 1.01, 1.025])
DAMP = np.full(4, 6.0)
GRAVITY = np.array([0.0, 0.0, -9.80665])
#: limb roots on the base (platform frame, m) and each limb's direction (lying person: x is head)
LIMB_ROOT = np.array([[0.25, 0.20, 0.20], [0.25, -0.20, 0.20], [-0.30, 0.10, 0.15],
                      [-0.30, -0.10, 0.15]])
LIMB_DIR = np.array([[1.0, 0.3, 0.0], [1.0, -0.3, 0.0], [-1.0, 0.1, 0.0], [-1.0, -0.1, 0.0]])
SEG_LEN = np.array([0.30, 0.27, 0.20, 0.12])       # by depth in the limb, m
SEG_MASS = np.array([4.0, 2.5, 1.2, 0.6])          # kg
FPS, SUBSTEPS = 120.0, 2


def _pi(mass, com, i_com):
    """rigtool's standard parameters ``[m, h, Ixx, Ixy, Ixz, Iyy, Iyz, Izz]`` about the origin."""
    i_o = i_com + mass * (com @ com * np.eye(3) - np.outer(com, com))
    return np.r_[mass, mass * com, i_o[0, 0], i_o[0, 1], i_o[0, 2], i_o[1, 1], i_o[1, 2],
                 i_o[2, 2]]


@dataclass(frozen=True)
class Bench:
    """One benchmark tree: structure, parameters, initial state and tangent directions."""

    nb: int
    parents: tuple[int, ...]
    pis: np.ndarray          # [nb, 10]
    jp: np.ndarray           # [nb, 3] joint centre in the parent's frame (row 0 unused)
    jd: np.ndarray           # [nb] joint damping, N m s/rad (entry 0 unused)
    body_of_marker: tuple[int, ...]
    markers_body: np.ndarray  # [K, 3]
    theta: np.ndarray
    y0: np.ndarray
    q0: np.ndarray           # pinocchio's configuration and velocity of the same state
    v0: np.ndarray

    @property
    def nv(self) -> int:
        return 3 * self.nb + 3

    @property
    def n_dir(self) -> int:
        """P = 16 nb + 12: pi (10 nb), initial q and v tangents (6 nb + 6), k_1..4, kL0_1..2."""
        return 16 * self.nb + 12

    def offsets(self) -> dict[str, int]:
        nb, k = self.nb, len(self.body_of_marker)
        i_k = 10 * nb + 3 * nb + nb
        return {"pi": 0, "k": i_k, "kl0": i_k + 4, "c": i_k + 8, "markers": i_k + 12,
                "end": i_k + 12 + 3 * k}


def build(nb: int, seed: int = 0) -> Bench:
    """The benchmark tree of ``nb`` bodies (2..17) near its equilibrium, swinging."""
    rng = np.random.default_rng(seed)
    parents, jp, pis = [-1], [np.zeros(3)], []
    # body 0: platform (25 kg, the paper-002 rig's) + base (a torso, 30 kg)
    plat = _pi(25.0, np.array([0.0, 0.0, -0.03]), np.diag([0.76, 3.02, 3.74]))
    torso = _pi(30.0, np.array([0.02, 0.0, 0.15]), np.diag([0.3, 1.6, 1.5]))
    pis.append(plat + torso)
    # links dealt to the limbs in turn, then numbered depth-first (limb by limb): pinocchio's
    # algorithms that use subtrees (M^-1, the ABA derivatives) need each subtree's joints
    # numbered contiguously
    slots = sorted(((i - 1) % 4, (i - 1) // 4) for i in range(1, nb))
    for limb, depth in slots:
        d = LIMB_DIR[limb] / np.linalg.norm(LIMB_DIR[limb])
        if depth == 0:
            parents.append(0)
            jp.append(LIMB_ROOT[limb])
        else:
            parents.append(len(parents) - 1)
            jp.append(SEG_LEN[depth - 1] * d)
        m, length = SEG_MASS[depth], SEG_LEN[depth]
        # a cylinder of radius 4.5 cm (a thin rod's ~0 axial inertia would make joint
        # damping / axial inertia a stiff rate that RK4 at 240 Hz does not follow)
        rad = 0.045
        i_axes = m * np.diag([rad ** 2 / 2, length ** 2 / 12 + rad ** 2 / 4,
                              length ** 2 / 12 + rad ** 2 / 4])
        rot = Rotation.from_rotvec(rng.normal(size=3) * 0.1).as_matrix()
        basis = np.column_stack([d, np.cross([0, 0, 1.0], d), [0, 0, 1.0]])
        basis[:, 1] /= np.linalg.norm(basis[:, 1])
        r = basis @ rot
        pis.append(_pi(m, 0.45 * length * d + rng.normal(size=3) * 0.005, r @ i_axes @ r.T))
    pis, jp = np.array(pis), np.array(jp)
    jd = np.r_[0.0, np.full(nb - 1, 0.05)]
    body_of_marker = tuple(b for b in range(nb) for _ in range(3))
    mk = []
    for b in range(nb):
        centre = pis[b, 1:4] / pis[b, 0]
        mk.extend(centre + rng.normal(size=3) * 0.08 for _ in range(3))
    mk = np.array(mk)
    theta = np.concatenate([pis.ravel(), jp.ravel(), jd, STIFF, STIFF * FREE_LEN, DAMP,
                            mk.ravel()])
    # platform height at static equilibrium (vertical springs' pull = weight), 4 mm off,
    # a little tilt and spin; links at small random angles, swinging ~0.5 rad/s
    z = 2.3 - FREE_LEN.mean() - 0.1
    total = pis[:, 0].sum()
    for _ in range(30):
        d = ANCHOR - (ATTACH + [0, 0, z])
        length = np.linalg.norm(d, axis=1)
        fz = np.sum(STIFF * (length - FREE_LEN) * d[:, 2] / length)
        dz = 1e-6
        d2 = ANCHOR - (ATTACH + [0, 0, z + dz])
        l2 = np.linalg.norm(d2, axis=1)
        fz2 = np.sum(STIFF * (l2 - FREE_LEN) * d2[:, 2] / l2)
        z -= (fz - total * 9.80665) / ((fz2 - fz) / dz)
    rel = [Rotation.from_rotvec(rng.normal(size=3) * 0.02).as_matrix()]
    rel += [Rotation.from_rotvec(rng.normal(size=3) * 0.3).as_matrix() for _ in range(nb - 1)]
    rots = []
    for b in range(nb):
        rots.append(rel[b] if b == 0 else rots[parents[b]] @ rel[b])
    p = np.array([0.004, -0.003, z + 0.004])
    v_p = np.array([0.01, 0.0, -0.02])
    w_rel = [np.array([0.02, -0.03, 0.05])] + [rng.normal(size=3) * 0.5 for _ in range(nb - 1)]
    q0 = np.concatenate([p, Rotation.from_matrix(rots[0]).as_quat()]
                        + [Rotation.from_matrix(r).as_quat() for r in rel[1:]])
    v0 = np.concatenate([rots[0].T @ v_p, w_rel[0]] + list(w_rel[1:]))
    bench = Bench(nb, tuple(parents), pis, jp, jd, body_of_marker, mk, theta,
                  np.zeros(6 + 12 * nb), q0, v0)
    y0 = y_of_qv(bench, q0, v0)
    return Bench(nb, tuple(parents), pis, jp, jd, body_of_marker, mk, theta, y0, q0, v0)


def y_of_qv(bench: Bench, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """rigtool's state of pinocchio's ``(q, v)``."""
    nb = bench.nb
    rots = [Rotation.from_quat(q[3:7]).as_matrix()]
    w = [rots[0] @ v[3:6]]
    for b in range(1, nb):
        a = bench.parents[b]
        rel = Rotation.from_quat(q[7 + 4 * (b - 1):11 + 4 * (b - 1)]).as_matrix()
        rots.append(rots[a] @ rel)
        w.append(w[a] + rots[b] @ v[6 + 3 * (b - 1):9 + 3 * (b - 1)])
    return np.concatenate([q[:3]] + [r.ravel() for r in rots] + [rots[0] @ v[:3]] + w)


def tangents(bench: Bench, integrate) -> tuple[np.ndarray, np.ndarray]:
    """rigtool's ``(d theta/d x [n_theta, P], d y0/d x [n_state, P])`` of the P directions
    ``x = [pi (10 nb), dq (nv), dv (nv), k_1..k_4, kL0_1, kL0_2]`` (``dq`` pinocchio's
    tangent of the initial configuration, by ``integrate(q, dq)``: central differences of the
    state map with step 1e-5, error ~1e-10; ``dv`` exactly, the map being linear in ``v``)."""
    nb, nv, p = bench.nb, bench.nv, bench.n_dir
    off = bench.offsets()
    t_th = np.zeros((bench.theta.size, p))
    t_y = np.zeros((bench.y0.size, p))
    t_th[np.arange(10 * nb), np.arange(10 * nb)] = 1.0
    col = 10 * nb
    for j in range(nv):
        e = np.zeros(nv)
        e[j] = 1e-5
        t_y[:, col + j] = (y_of_qv(bench, integrate(bench.q0, e), bench.v0)
                           - y_of_qv(bench, integrate(bench.q0, -e), bench.v0)) / 2e-5
    col += nv
    n_pos = 3 + 9 * nb
    for j in range(nv):
        e = np.zeros(nv)
        e[j] = 1.0
        t_y[n_pos:, col + j] = y_of_qv(bench, bench.q0, e)[n_pos:]
    col += nv
    for j in range(4):
        t_th[off["k"] + j, col + j] = 1.0
    t_th[off["kl0"], col + 4] = t_th[off["kl0"] + 1, col + 5] = 1.0
    return t_th, t_y
