"""A living :class:`~rigtool.sim.system.System` turned into the rigid model plus its parts.

:func:`assemble_living` takes the rigid model :func:`rigtool.sim.assembly._assemble` built
(every link's parameters the *mean* mass distribution: the truth a measurement should
find) and composes the living parts onto it (:mod:`rigtool.sim._parts`): it removes the
internal masses (breathing mass, blood, wobbling tissue) from the bodies that carry them at
their mean or rest positions, and, with a compliant support, lifts the locked object off
body 0 onto a rigid satellite resting on pads. The pads are preloaded with the weight they
carry at the static equilibrium, so the rigid equilibrium stays the living one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams, inertia_vector, transform_params
from rigtool.sim import _model
from rigtool.sim._parts import CarriedMass, LivingTerms, Pad, PointSatellite, RigidSatellite
from rigtool.sim.living import breathing_path, cardiac_path
from rigtool.sim.system import System

__all__ = ["LivingModel", "Internal", "assemble_living"]


@dataclass(frozen=True)
class Internal:
    """An internal point mass as the trajectory reports it: its carrier's physical body
    (``link``) and its mean/rest position there (link frame, m)."""

    name: str
    kind: str                  # "carried" or "wobbling"
    link: str
    mass: float
    rest_link: np.ndarray


@dataclass(frozen=True)
class LivingModel:
    """The reduced rigid model, its parts, and where every physical body now rides."""

    model: _model.Model
    terms: LivingTerms
    outputs: list               # assembly._Output; body >= B means a satellite carrier
    internals: tuple[Internal, ...]
    satellite_of: dict          # internal name -> satellite index (wobbling masses)
    carried_of: dict            # internal name -> carried-mass index


def _subtract_point(pi: np.ndarray, mass: float, s: np.ndarray, *, what: str) -> np.ndarray:
    out = pi - np.concatenate([[mass], mass * s, inertia_vector(
        mass * ((s @ s) * np.eye(3) - np.outer(s, s)))])
    if not (out[0] > 0 and InertialParams(out).is_physically_consistent(tol=1e-12)):
        raise ConfigError(f"{what}: the internal mass leaves the rest of the link physically "
                          "inconsistent (too large a fraction, or placed outside the link's "
                          "mass)", field="living", found=float(mass))
    return out


def assemble_living(system: System, model: _model.Model, outputs: list,
                    rotation_eq: np.ndarray) -> LivingModel:
    """Compose ``system.living`` onto the rigid model.

    Parameters
    ----------
    system : System
        With ``living`` set and ``living_seed`` for the breath and beat paths.
    model, outputs
        What ``assembly._assemble(system)`` returned.
    rotation_eq : ndarray (3, 3)
        The platform's rotation at the static equilibrium (pad preloads).

    Returns
    -------
    LivingModel
    """
    liv = system.living
    tree = system.tree
    if tree is None:
        raise ConfigError("living effects need an object (a link tree)", field="living")
    rng = np.random.default_rng(system.living_seed)
    by_name = {o.name: o for o in outputs}
    nb = model.n_bodies
    g = np.asarray(model.gravity_lab, float)
    params = [np.concatenate([[model.mass[b]], model.first_moment_body[b],
                              inertia_vector(model.inertia_body[b])]) for b in range(nb)]
    satellites: list = []
    outputs = list(outputs)
    if liv.support is not None:
        if system.free_joints:
            raise ConfigError("a compliant support is simulated with the joints locked only "
                              "(postures); leave it out of captures with swinging links",
                              field="living.support")
        sat_pi = np.zeros(10)
        for i, o in enumerate(outputs):
            if o.name in tree.names:
                sat_pi += transform_params(o.params.pi, o.rotation, o.position)
                outputs[i] = replace(o, body=nb)
        params[0] = params[0] - sat_pi
        satellites.append(["support", sat_pi])
    carrier_of = {o.name: o for o in outputs}

    def carrier_frame(link: str):
        o = carrier_of[link]
        return o.body, o.rotation, o.position

    def subtract(carrier: int, mass: float, s: np.ndarray, what: str):
        if carrier < nb:
            params[carrier] = _subtract_point(params[carrier], mass, s, what=what)
        else:
            satellites[carrier - nb][1] = _subtract_point(satellites[carrier - nb][1], mass, s,
                                                          what=what)

    carried: list[CarriedMass] = []
    internals: list[Internal] = []
    carried_of: dict = {}
    base = tree.links[0].name
    for kind, spec, make in (("breathing", liv.breathing, breathing_path),
                             ("cardiac", liv.cardiac, cardiac_path)):
        if spec is None:
            continue
        link = spec.link or base
        if link not in tree.names:
            raise ConfigError(f"'{link}' is not a link of the object", field=f"living.{kind}.link")
        lp = by_name[link].params
        mean_link = lp.com if spec.position_link is None else np.asarray(spec.position_link,
                                                                          float)
        body, rot, pos = carrier_frame(link)
        path_link = make(spec, mean_link, rng)
        path = replace(path_link, mean_position=rot @ mean_link + pos,
                       direction=rot @ path_link.direction)
        subtract(body, spec.mass_kg, rot @ mean_link + pos, f"living.{kind}")
        carried_of[kind] = len(carried)
        carried.append(CarriedMass(kind, body, spec.mass_kg, path))
        internals.append(Internal(kind, "carried", link, spec.mass_kg, mean_link))

    pads: list[Pad] = []
    satellite_of: dict = {}
    wob_sats = []
    for k, w in enumerate(liv.wobbling):
        if w.link not in tree.names:
            raise ConfigError(f"'{w.link}' is not a link of the object",
                              field=f"living.wobbling[{k}].link")
        lp = by_name[w.link].params
        rest_link = lp.com if w.position_link is None else np.asarray(w.position_link, float)
        body, rot, pos = carrier_frame(w.link)
        m_w = w.fraction * lp.mass
        rest = rot @ rest_link + pos
        subtract(body, m_w, rest, f"living.wobbling[{k}]")
        omega_n = 2 * np.pi * w.frequency_hz
        wob_sats.append((f"wobbling:{w.link}", m_w, body, rest, omega_n, w.damping_ratio,
                         rest_link, w.link))
    # satellite indices: support first (already in `satellites`), then the wobbling masses
    n_rigid = len(satellites)
    sat_objs = []
    for name, pi in satellites:
        p = InertialParams(pi)
        sat_objs.append(RigidSatellite(name, p.mass, p.first_moment, p.inertia_origin))
    carrier_rot_eq = rotation_eq          # every carrier is at the platform's attitude at rest
    for j, (name, m_w, body, rest, omega_n, zeta, rest_link, link) in enumerate(wob_sats):
        sat_index = nb + n_rigid + j
        satellite_of[name] = sat_index - nb
        sat_objs.append(PointSatellite(name, m_w))
        r_c = _carrier_rotation_eq(system, body, nb, carrier_rot_eq, outputs)
        pads.append(Pad(body, rest, sat_index, np.zeros(3), np.full(3, m_w * omega_n ** 2),
                        np.full(3, 2 * zeta * m_w * omega_n), -m_w * (r_c.T @ g)))
        internals.append(Internal(name, "wobbling", link, m_w, rest_link))
    if liv.support is not None:
        pads += _support_pads(system, liv.support, sat_objs[0], nb, rotation_eq, g,
                              total_mass=InertialParams(satellites[0][1]).mass + sum(
                                  c.mass for c in carried) + sum(w[1] for w in wob_sats),
                              total_first_moment=_tree_first_moment(outputs, tree))
    reduced = replace(model, mass=np.array([p[0] for p in params]),
                      first_moment_body=np.stack([p[1:4] for p in params]),
                      inertia_body=np.stack([InertialParams(p).inertia_origin for p in params]))
    for b, p in enumerate(params):
        if not (p[0] > 0 and InertialParams(p).is_physically_consistent(tol=1e-12)):
            raise ConfigError("removing the internal masses left a body inconsistent",
                              field="living", found=b)
    terms = LivingTerms(nb, tuple(carried), tuple(sat_objs), tuple(pads), g)
    return LivingModel(reduced, terms, outputs, tuple(internals), satellite_of, carried_of)


def _carrier_rotation_eq(system: System, body: int, nb: int, rotation_eq,
                         outputs) -> np.ndarray:
    """A carrier's axes -> lab at the equilibrium (body 0 and the support satellite share
    the platform's axes; a swinging link's frame is the link's, at its posture)."""
    if body == 0 or body >= nb:
        return rotation_eq
    base_r = np.asarray(system.base_rotation_platform, float)
    for o in outputs:          # a swinging link is its own dynamic body
        if o.body == body:
            posture = np.asarray(system.posture.get(o.name, np.eye(3)), float)
            return rotation_eq @ base_r @ posture
    return rotation_eq


def _tree_first_moment(outputs, tree) -> tuple[float, np.ndarray]:
    mass, h = 0.0, np.zeros(3)
    for o in outputs:
        if o.name in tree.names:
            pi = transform_params(o.params.pi, o.rotation, o.position)
            mass += pi[0]
            h += pi[1:4]
    return mass, h


def _support_pads(system: System, spec, sat: RigidSatellite, nb: int, rotation_eq, g,
                  *, total_mass: float, total_first_moment) -> list[Pad]:
    """Four (or the given) pads between the deck (body 0) and the object (satellite ``nb``).

    Stiffness per pad ``M (2 pi f)^2 / n`` in shear (deck x, y) and compression (deck z);
    preloads: the least-norm pad forces that hold the object's weight and its moment at the
    static equilibrium (deck axes)."""
    mass, h = total_first_moment
    com = h / mass
    if spec.pads_platform is not None:
        pads_xyz = np.asarray(spec.pads_platform, float).reshape(-1, 3)
    else:
        base_z = float(np.asarray(system.base_position_platform_m, float)[2])
        hx, hy = spec.pad_half_spacing_m
        pads_xyz = np.array([[com[0] + sx * hx, com[1] + sy * hy, 0.0]
                             for sx in (-1, 1) for sy in (-1, 1)])
        pads_xyz[:, 2] = min(0.0, base_z)
    n = len(pads_xyz)
    w_s, w_n = 2 * np.pi * spec.shear_hz, 2 * np.pi * spec.compression_hz
    k = total_mass * np.array([w_s ** 2, w_s ** 2, w_n ** 2]) / n
    c = 2 * spec.damping_ratio * total_mass * np.array([w_s, w_s, w_n]) / n
    weight_deck = rotation_eq.T @ (total_mass * g)            # gravity on the object, deck axes
    # sum P_j = -weight;  sum (a_j - com) x P_j = 0  (deck axes)
    a_mat = np.zeros((6, 3 * n))
    for j, p in enumerate(pads_xyz):
        a_mat[:3, 3 * j:3 * j + 3] = np.eye(3)
        r = p - com
        a_mat[3:, 3 * j:3 * j + 3] = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]],
                                               [-r[1], r[0], 0]])
    rhs = np.concatenate([-weight_deck, np.zeros(3)])
    preload = np.linalg.lstsq(a_mat, rhs, rcond=None)[0].reshape(n, 3)
    # the satellite's frame coincides with the platform's at rest: same point both sides
    return [Pad(0, p, nb, p.copy(), k, c, preload[j]) for j, p in enumerate(pads_xyz)]
