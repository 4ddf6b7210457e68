"""A real rig's physics beyond the ideal one, as MJCF pieces and the force laws MuJoCo has no
element for. Each is off by default (``RigPhysics()`` is the ideal rig).

- Springs with mass: each line ``n + 1`` tendon segments (``n = spring_beads``) of stiffness
  ``(n + 1) k``, free length ``L0 / (n + 1)`` and damping ``(n + 1) c`` (the same static
  stiffness) joined by ``n`` point masses on three slide joints each, a segment's mass
  ``m / (n + 1)`` each; the half segments at the ends lumped into the anchor (fixed) and the
  platform (a point mass at the attachment): the line's string (lateral) and surge (axial)
  modes.
- Progressive stiffness: the tension ``k (X + b X^2 / 2)``, ``X`` the stretch from the free
  length, ``b = progressive / stroke_m``: the tangent stiffness ``k (1 + b X)`` rises by
  ``progressive`` over ``stroke_m``. The quadratic term is a tendon actuator whose force is set
  from the tendon length at every evaluation of the dynamics (MuJoCo's control callback, so at
  every Runge-Kutta stage and in the statics).
- Hysteretic damping (loss factor ``loss_factor``, frequency independent over ``band_hz``)
  instead of the viscous damping: a Biot model, Maxwell elements (a spring ``k_i`` in series
  with a damper of relaxation time ``tau_i``) in parallel with each spring, their weights a
  non-negative least-squares fit of a flat loss ``eta k`` over the band. A causal
  frequency-independent loss has a storage stiffness that rises with frequency (Kramers-Kronig:
  ``(2 eta / pi) ln f``): the spring's stiffness at rest is ``k``, its dynamic stiffness in
  the band a little higher (:func:`storage_stiffness`). Each element is a filter actuator on
  the tendon: its activation ``u_i`` follows the tendon length, ``u_i' = (L - u_i) / tau_i``,
  its force ``-k_i (L - u_i)``.
- A compliant frame: the anchors on a ``frame_mass_kg`` body on six joints (three slides, three
  hinges through its centre) whose stiffnesses place its uncoupled modes at ``frame_modes_hz``
  (x, y, z, about x, y, z), damped ``frame_damping_ratio``.
- ``stiffness_factor`` multiplies every spring stiffness (a warmer day).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.optimize import nnls

#: actuator name prefixes of the force laws set from the state (the rest are the subject's)
PROGRESSIVE, HYSTERETIC = "rig-progressive:", "rig-hysteretic:"


@dataclass(frozen=True)
class RigPhysics:
    """Which imperfections a rig has (every default: the ideal rig)."""

    spring_mass_kg: float = 0.0
    spring_beads: int = 4
    progressive: float = 0.0
    stroke_m: float = 0.07
    loss_factor: float = 0.0
    band_hz: tuple[float, float] = (0.3, 5.0)
    frame_mass_kg: float = 0.0
    frame_inertia_kg_m2: tuple[float, float, float] = (1.3, 3.0, 4.2)
    frame_modes_hz: tuple[float, ...] = (15.0, 17.0, 26.0, 20.0, 22.0, 24.0)
    frame_damping_ratio: float = 0.02
    stiffness_factor: float = 1.0

    @property
    def segments(self) -> int:
        """Tendon segments per spring (1 for a massless spring)."""
        return self.spring_beads + 1 if self.spring_mass_kg > 0 else 1


def maxwell_elements(loss_factor: float, band_hz: tuple[float, float]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Relaxation times (s) and stiffnesses relative to ``k`` of the Maxwell elements whose
    loss ``sum_i k_i w tau_i / (1 + w^2 tau_i^2)`` is ``loss_factor`` across ``band_hz``.

    Twelve relaxation frequencies, four per decade from a sixth of the band's low end to four
    times its high end; the fit's loss is flat to < 1e-3 of itself over the band.
    """
    lo, hi = band_hz
    f_el = np.geomspace(lo / 6.0, 4.0 * hi, 12)
    tau = 1.0 / (2 * np.pi * f_el)
    w = 2 * np.pi * np.geomspace(lo, hi, 200)[:, None]
    a = w * tau / (1.0 + (w * tau) ** 2)
    weights, _ = nnls(a, np.full(len(w), loss_factor))
    keep = weights > 0
    return tau[keep], weights[keep]


def storage_stiffness(physics: RigPhysics, f_hz: float) -> tuple[float, float]:
    """The (storage, loss) stiffness relative to ``k`` of a hysteretic spring at ``f_hz``."""
    if physics.loss_factor <= 0:
        return 1.0, 0.0
    tau, kr = maxwell_elements(physics.loss_factor, physics.band_hz)
    wt = 2 * np.pi * f_hz * tau
    return 1.0 + float(kr @ (wt ** 2 / (1 + wt ** 2))), float(kr @ (wt / (1 + wt ** 2)))


def _fmt(v) -> str:
    return " ".join(f"{float(x):.17g}" for x in np.ravel(v))


def frame_body(physics: RigPhysics, anchors: dict[str, np.ndarray]) -> str:
    """The frame body carrying the anchor sites (lab positions at rest, joints at zero)."""
    centre = np.mean(list(anchors.values()), axis=0)
    m = physics.frame_mass_kg
    inertia = np.asarray(physics.frame_inertia_kg_m2, float)
    modal = np.concatenate([np.full(3, m), inertia])
    w = 2 * np.pi * np.asarray(physics.frame_modes_hz, float)
    k = modal * w ** 2
    c = 2 * physics.frame_damping_ratio * modal * w
    parts = [f'<body name="rig-frame" pos="{_fmt(centre)}">'
             f'<inertial pos="0 0 0" mass="{m:.17g}" diaginertia="{_fmt(inertia)}"/>']
    for j, (kind, axis) in enumerate([("slide", "1 0 0"), ("slide", "0 1 0"),
                                      ("slide", "0 0 1"), ("hinge", "1 0 0"),
                                      ("hinge", "0 1 0"), ("hinge", "0 0 1")]):
        parts.append(f'<joint name="rig-frame:{j}" type="{kind}" axis="{axis}" '
                     f'stiffness="{k[j]:.17g}" damping="{c[j]:.17g}"/>')
    for name, p in anchors.items():
        parts.append(f'<site name="anchor:{name}" pos="{_fmt(np.asarray(p) - centre)}"/>')
    parts.append("</body>")
    return "".join(parts)


def bead_bodies(physics: RigPhysics, name: str, anchor: np.ndarray,
                attachment_lab: np.ndarray) -> str:
    """A spring's beads, evenly spaced on the straight line from its anchor to its
    attachment (lab, at the platform's starting pose), each on three slide joints."""
    n = physics.spring_beads
    mb = physics.spring_mass_kg / (n + 1)
    parts = []
    for j in range(n):
        p = anchor + (j + 1) / (n + 1) * (attachment_lab - anchor)
        parts.append(f'<body name="rig-bead:{name}:{j}" pos="{_fmt(p)}">'
                     + "".join(f'<joint name="rig-bead:{name}:{j}:{a}" type="slide" '
                               f'axis="{ax}"/>' for a, ax in
                               (("x", "1 0 0"), ("y", "0 1 0"), ("z", "0 0 1")))
                     + f'<inertial pos="0 0 0" mass="{mb:.17g}" diaginertia="1e-6 1e-6 1e-6"/>'
                     f'<site name="bead:{name}:{j}"/></body>')
    return "".join(parts)


def spring_end(physics: RigPhysics, name: str, attachment_platform: np.ndarray) -> str:
    """The half segment of a spring's mass at its attachment, welded to the platform."""
    m = physics.spring_mass_kg / (2 * physics.segments)
    return (f'<body name="rig-spring-end:{name}" pos="{_fmt(attachment_platform)}">'
            f'<inertial pos="0 0 0" mass="{m:.17g}" diaginertia="1e-9 1e-9 1e-9"/></body>')


def spring_tendons(physics: RigPhysics, name: str, k: float, free_length: float,
                   damping: float) -> tuple[str, str]:
    """The tendon segments of one spring and their actuators (MJCF ``<tendon>`` and
    ``<actuator>`` contents)."""
    n = physics.segments
    sites = ([f"anchor:{name}"] + [f"bead:{name}:{j}" for j in range(n - 1)]
             + [f"attach:{name}"])
    k = k * physics.stiffness_factor
    c = 0.0 if physics.loss_factor > 0 else damping
    tendons, acts = [], []
    for j in range(n):
        seg = f"{name}:{j}" if n > 1 else name
        tendons.append(f'<spatial name="{seg}" stiffness="{n * k:.17g}" '
                       f'springlength="{free_length / n:.17g}" damping="{n * c:.17g}">'
                       f'<site site="{sites[j]}"/><site site="{sites[j + 1]}"/></spatial>')
        if physics.progressive:
            b = physics.progressive / physics.stroke_m
            # user data: b (1/m) and the segments per spring
            acts.append(f'<general name="{PROGRESSIVE}{seg}" tendon="{seg}" gainprm="1" '
                        f'user="{b:.17g} {n}"/>')
        if physics.loss_factor > 0:
            for i, (tau, kr) in enumerate(zip(*maxwell_elements(physics.loss_factor,
                                                                  physics.band_hz))):
                ki = n * k * kr
                acts.append(f'<general name="{HYSTERETIC}{seg}:{i}" tendon="{seg}" '
                            f'dyntype="filter" dynprm="{tau:.17g}" gainprm="{ki:.17g}" '
                            f'biastype="affine" biasprm="0 {-ki:.17g} 0"/>')
    return "".join(tendons), "".join(acts)


class StateForces:
    """MuJoCo's control callback for a model's state-set force laws: the progressive
    springs' quadratic tension, and the hysteretic elements' input (their tendon's length).
    ``relaxed``: every hysteretic element at rest on its tendon (``u_i = L``: the statics)."""

    def __init__(self, model: mujoco.MjModel):
        names = [model.actuator(i).name for i in range(model.nu)]
        self.prog = np.array([i for i, s in enumerate(names) if s.startswith(PROGRESSIVE)], int)
        self.hyst = np.array([i for i, s in enumerate(names) if s.startswith(HYSTERETIC)], int)
        self.subject = np.array([i for i, s in enumerate(names)
                                 if not s.startswith((PROGRESSIVE, HYSTERETIC))], int)
        self.relaxed = False
        if self.prog.size:
            ten = model.actuator_trnid[self.prog, 0]
            user = model.actuator_user[self.prog]
            self._b, self._n = user[:, 0], user[:, 1]
            # the tendon's k per spring: the segment's stiffness over the segments
            self._k = model.tendon_stiffness[ten] / self._n
            self._l0 = model.tendon_lengthspring[ten, 0]
        if self.hyst.size:
            self._hyst_act = model.actuator_actadr[self.hyst]

    @property
    def active(self) -> bool:
        """Whether the model has any state-set force law."""
        return bool(self.prog.size or self.hyst.size)

    def __call__(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        if self.prog.size:
            x = self._n * (data.actuator_length[self.prog] - self._l0)
            data.ctrl[self.prog] = -0.5 * self._k * self._b * x * x
        if self.hyst.size:
            data.ctrl[self.hyst] = data.actuator_length[self.hyst]
            if self.relaxed:
                data.act[self._hyst_act] = data.actuator_length[self.hyst]


@contextlib.contextmanager
def state_forces(model: mujoco.MjModel):
    """MuJoCo's (process-wide) control callback set to ``model``'s :class:`StateForces`
    while the block runs, restored after; yields the callback (``None`` for an ideal model)."""
    forces = StateForces(model)
    if not forces.active:
        yield None
        return
    previous = mujoco.get_mjcb_control()
    mujoco.set_mjcb_control(forces)
    try:
        yield forces
    finally:
        mujoco.set_mjcb_control(previous)


def progressive_potential(model: mujoco.MjModel, data: mujoco.MjData) -> float:
    """The potential (J) of the progressive springs' quadratic tension at ``data``'s
    position (``k b X^3 / 6`` per spring: MuJoCo's energy knows only the linear part)."""
    f = StateForces(model)
    if not f.prog.size:
        return 0.0
    x = f._n * (data.actuator_length[f.prog] - f._l0)
    # per segment: its share 1/n of the spring's k b X^3 / 6
    return float(np.sum(f._k * f._b * x ** 3 / 6.0 / f._n))


def carry_beads(model: mujoco.MjModel, q_eq: np.ndarray, qpos: np.ndarray,
                qvel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(qpos, qvel)`` with each spring's beads moved from ``q_eq`` along with the line: bead
    ``j`` of ``n`` by ``(j + 1) / (n + 1)`` of its attachment's displacement and velocity (the
    line's quasi-static shape; the hand pushes the platform, not the springs' string modes)."""
    qpos, qvel = np.array(qpos, float), np.array(qvel, float)
    beads = [model.joint(i).name for i in range(model.njnt)
             if model.joint(i).name.startswith("rig-bead:")]
    if not beads:
        return qpos, qvel
    data = mujoco.MjData(model)
    data.qpos[:] = q_eq
    mujoco.mj_kinematics(model, data)
    rest = {model.site(i).name: data.site_xpos[i].copy() for i in range(model.nsite)}
    data.qpos[:] = qpos
    data.qvel[:] = qvel
    mujoco.mj_forward(model, data)
    jac = np.zeros((3, model.nv))
    for name in {b.split(":")[1] for b in beads}:
        site = model.site(f"attach:{name}").id
        moved = data.site_xpos[site] - rest[f"attach:{name}"]
        mujoco.mj_jacSite(model, data, jac, None, site)
        speed = jac @ qvel
        js = sorted({int(b.split(":")[2]) for b in beads if b.split(":")[1] == name})
        for j in js:
            frac = (j + 1) / (len(js) + 1)
            for a, axis in enumerate("xyz"):
                jnt = model.joint(f"rig-bead:{name}:{j}:{axis}")
                qpos[jnt.qposadr[0]] = q_eq[jnt.qposadr[0]] + frac * moved[a]
                qvel[jnt.dofadr[0]] = frac * speed[a]
    return qpos, qvel
