"""The motion to drive a robot through while the platform vibrates: joint trajectories within
the limits that excite what the locked postures leave, away from the rig's modes.

The combinations the motion adds (one per revolute joint on an arm) are seen through the
reaction of the joints' accelerations, so the accelerations should be large; but a joint
moved at a rig mode drives the platform at resonance (a 17 kg arm on a 25 kg platform swings
it by decimetres and tens of degrees at its pendulum modes), far from the small motion the
platform's model and the markers' volume are made for. Each joint therefore follows a sum
of sines whose frequencies all keep a relative margin from every mode of the rig with the
robot on it (linear modes about the equilibrium, rigtool.rig.modes), and their second
harmonics (the arm's reaction is not linear in the angles) a smaller one; the highest such
frequencies are taken (the acceleration grows as f^2 for the same excursion),
below half the zero-phase filter's passband (above the modes the equations' noise rises as
f^4, below about 1 Hz the joints' room caps the acceleration). Amplitudes fill the joint's room to its limits
about a centre posture, bounded by the URDF's velocity limit and an acceleration bound, and
the motion fades in from rest. Phases are random (seeded), so the joints' accelerations are
not proportional to one another.

Whether the motion adds the combinations is checked on the structural regressor of the
robot's base wrench along the advised trajectory (rigtool.robot.motion_regressor; the
platform held still: the kinematics decide identifiability), stacked on the locked
postures'.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rigtool.robot.clearance import clear_of_deck
from rigtool.robot.urdf_model import RobotModel

#: Relative distance a motion frequency keeps from every rig mode (its second harmonic, which
#: the arm's nonlinearity makes a percent or two as strong: a third of it); the excursion
#: bound below scales the motion for what resonance is left
MODE_MARGIN = 0.15
#: Joint acceleration bound of the advice, rad/s^2 (m/s^2 for prismatic joints: 2)
MAX_ACCELERATION = (8.0, 2.0)
#: Excursion bound about the centre posture, rad (m for prismatic joints: 0.1)
MAX_EXCURSION = (0.6, 0.1)
#: Fraction of the URDF velocity limit the advice uses
VELOCITY_FRACTION = 0.5
#: Peak excursion of the platform the motion may force (m at its origin, deg): about a free
#: vibration's (the demo rig's posture captures move 20 mm and 3 deg either way), so the
#: markers stay in the volume and the springs in the range the calibration saw
MAX_PLATFORM_EXCURSION = (0.02, 3.0)


@dataclass(frozen=True)
class MotionAdvice:
    """A joint trajectory for the motion capture (module docstring).

    Attributes
    ----------
    joints : list of str
        The moving joints, in order.
    center : ndarray (k,)
        The posture the joints move about (rad or m).
    frequencies_hz : ndarray (K,)
        The sines' frequencies (every joint has each).
    amplitudes : ndarray (k, K)
        Per joint and sine (rad or m).
    phases_rad : ndarray (k, K)
    ramp_s : float
        The fade-in from rest (smoothstep).
    modes_hz : ndarray
        The rig's modes with the robot at ``center``.
    rank_locked, rank_with : int
        Combinations the locked postures identify, and with this motion.
    text : str
    """

    joints: list[str]
    center: np.ndarray
    frequencies_hz: np.ndarray
    amplitudes: np.ndarray
    phases_rad: np.ndarray
    ramp_s: float
    modes_hz: np.ndarray
    rank_locked: int = 0
    rank_with: int = 0
    text: str = ""
    peak_velocity: np.ndarray = field(default_factory=lambda: np.zeros(0))
    peak_acceleration: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: predicted peak excursion of the platform's origin (m) and rotation (rad) the motion
    #: forces (:func:`platform_excursion`)
    platform_m: float = float("nan")
    platform_rad: float = float("nan")

    def evaluate(self, time_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, qd, qdd)``, each ``[T, k]``, at ``time_s`` (s from the motion's start)."""
        t = np.atleast_1d(np.asarray(time_s, float))
        s = np.clip(t / self.ramp_s, 0.0, 1.0)
        inside = t < self.ramp_s
        w = s * s * (3 - 2 * s)
        dw = np.where(inside, 6 * s * (1 - s) / self.ramp_s, 0.0)
        ddw = np.where(inside, (6 - 12 * s) / self.ramp_s ** 2, 0.0)
        omega = 2 * np.pi * self.frequencies_hz                          # [K]
        arg = omega[None, None, :] * t[:, None, None] + self.phases_rad[None]
        amp = self.amplitudes[None]
        y = (amp * np.sin(arg)).sum(-1)
        yd = (amp * omega * np.cos(arg)).sum(-1)
        ydd = (-amp * omega ** 2 * np.sin(arg)).sum(-1)
        w, dw, ddw = w[:, None], dw[:, None], ddw[:, None]
        return (self.center[None] + w * y, dw * y + w * yd, ddw * y + 2 * dw * yd + w * ydd)

    def trajectory(self):
        """``t -> (q, qd, qdd)`` for one time (the simulator's form)."""
        def at(t: float):
            q, qd, qdd = self.evaluate(np.array([t]))
            return q[0], qd[0], qdd[0]
        return at

    def write_csv(self, path: str | Path, duration_s: float, rate_hz: float = 100.0) -> None:
        """The trajectory sampled for a robot controller: ``time_s`` then per joint its
        position, velocity and acceleration columns (``<joint>``, ``<joint>.velocity``,
        ``<joint>.acceleration``)."""
        t = np.arange(int(round(duration_s * rate_hz)) + 1) / rate_hz
        q, qd, qdd = self.evaluate(t)
        head = ["time_s"] + [f"{j}{s}" for j in self.joints
                             for s in ("", ".velocity", ".acceleration")]
        cols = [t] + [c[:, i] for i in range(len(self.joints)) for c in (q, qd, qdd)]
        np.savetxt(path, np.column_stack(cols), delimiter=",", header=",".join(head),
                   comments="", fmt="%.9g")

    def to_json(self) -> dict:
        """report.json's ``robot.motion_advice``."""
        return {"text": self.text, "joints": list(self.joints),
                "center": self.center.tolist(),
                "frequencies_hz": self.frequencies_hz.tolist(),
                "amplitudes": self.amplitudes.tolist(), "phases_rad": self.phases_rad.tolist(),
                "ramp_s": self.ramp_s, "rig_modes_hz": self.modes_hz.tolist(),
                "rank_locked": self.rank_locked, "rank_with": self.rank_with,
                "peak_velocity": self.peak_velocity.tolist(),
                "peak_acceleration": self.peak_acceleration.tolist(),
                "platform_excursion_m": self.platform_m,
                "platform_rotation_rad": self.platform_rad}


def motion_frequencies(modes_hz: np.ndarray, *, n: int = 3, f_min_hz: float = 0.3,
                       f_max_hz: float = 2.5, margin: float = MODE_MARGIN) -> np.ndarray:
    """The ``n`` highest frequencies in ``[f_min_hz, f_max_hz]``, at least 0.1 Hz apart,
    each ``margin`` (relative) from every mode and its second harmonic ``margin / 3``
    from every mode.

    Raises
    ------
    ValueError
        When fewer than ``n`` such frequencies exist.
    """
    grid = np.round(np.arange(f_min_hz, f_max_hz + 1e-9, 0.01), 2)
    modes = np.asarray(modes_hz, float)
    clear = np.all(np.abs(grid[:, None] - modes) > margin * modes, axis=1)
    clear &= np.all(np.abs(2 * grid[:, None] - modes) > margin / 3 * modes, axis=1)
    picked: list[float] = []
    for f in grid[clear][::-1]:
        if all(abs(f - g) >= 0.1 for g in picked):
            picked.append(float(f))
        if len(picked) == n:
            return np.array(sorted(picked))
    raise ValueError(f"fewer than {n} frequencies in {f_min_hz:g}-{f_max_hz:g} Hz keep "
                     f"{100 * margin:.0f} % from the rig's modes "
                     f"({', '.join(f'{m:.2f}' for m in modes)} Hz)")


def motion_center(robot: RobotModel, postures: list[np.ndarray]) -> np.ndarray:
    """The posture to move about: of ``postures`` (moving joints in order) the one whose
    joints keep the most room to their limits (the smallest room, as a fraction of each
    range), clear of the deck."""
    lo, hi = robot.limits()
    span = hi - lo

    def room(q: np.ndarray) -> float:
        return float(np.min(np.minimum(q - lo, hi - q) / span))

    clear = [q for q in postures if clear_of_deck(robot, q)] or list(postures)
    return np.asarray(max(clear, key=room), float)


@dataclass(frozen=True)
class RigWithRobot:
    """The rig linearised about its equilibrium with the robot locked at a posture on it.

    Attributes
    ----------
    modes_hz : ndarray
        Its undamped modes, ascending.
    stiffness, mass : ndarray
        Over the free DOFs ``[dp (lab, m), rotation vector (lab, rad)]`` (rigtool.rig).
    free : ndarray
        The free DOFs' rows of the six.
    rotation : ndarray (3, 3)
        The platform's equilibrium rotation (lab from platform).
    r_pb, t_pb : ndarray
        The base link in the platform frame.
    """

    modes_hz: np.ndarray
    stiffness: np.ndarray
    mass: np.ndarray
    free: np.ndarray
    rotation: np.ndarray
    r_pb: np.ndarray
    t_pb: np.ndarray


def rig_with_robot(rig, platform, robot: RobotModel, q: np.ndarray, r_pb: np.ndarray,
                   t_pb: np.ndarray) -> RigWithRobot:
    """The rig's linearisation (and modes) with the robot locked at ``q`` (its URDF
    inertials) on it, its base link at ``r_pb, t_pb`` in the platform frame."""
    from scipy.linalg import eigh

    from rigtool.inertia import InertialParams, transform_params
    from rigtool.rig import free_stiffness_mass
    from rigtool.sim.assembly import lumped_params
    from rigtool.sim.dynamics import FixedBody, System
    from rigtool.sim.equilibrium import static_equilibrium

    r_pb, t_pb = np.asarray(r_pb, float), np.asarray(t_pb, float)
    load = InertialParams(transform_params(robot.composite(robot.prior_vector(), q).pi,
                                           r_pb, t_pb))
    system = System(rig, platform, fixed=(FixedBody("robot", load),))
    rot, pos = static_equilibrium(system)
    params = lumped_params(system)
    k, m, free = free_stiffness_mass(rig, rot, pos, params)
    free = np.asarray(free)
    w2 = eigh(k, m, eigvals_only=True)
    modes = np.sort(np.sqrt(np.clip(w2, 0.0, None)) / (2 * np.pi))
    return RigWithRobot(modes, k, m, free, rot, r_pb, t_pb)


def platform_excursion(robot: RobotModel, lin: RigWithRobot, center: np.ndarray,
                       frequencies_hz: np.ndarray, amplitudes: np.ndarray,
                       phases_rad: np.ndarray, gravity: float = 9.80665
                       ) -> tuple[float, float]:
    """Predicted peak excursion of the platform (m, its origin; rad) while the joints move
    along sines about ``center``: the robot's wrench on the platform linearised in the
    joints' motion (its weight's change with the angles and the reaction of their
    accelerations, from the URDF's inertials), through the rig's undamped frequency
    response at each sine, the sines' amplitudes added (a bound on the peak)."""
    from rigtool.inertia import wrench_transform
    from rigtool.robot.motion_regressor import base_wrench_regressor, floating_model

    model = floating_model(robot)
    pi = robot.prior_vector()
    k = center.size
    x_pb = wrench_transform(lin.r_pb, lin.t_pb)
    g_base = lin.r_pb.T @ lin.rotation.T @ np.array([0.0, 0.0, -gravity])
    zeros6 = np.zeros((1, 6))

    def wrench(q, qdd, g) -> np.ndarray:
        """The robot's wrench on the platform, platform axes about its origin."""
        y = base_wrench_regressor(robot, model, q[None], np.zeros((1, k)), qdd[None],
                                  zeros6, zeros6, g[None])[0]
        return -x_pb @ (y @ pi)

    step = 1e-6
    eye = np.eye(k)
    d_weight = np.stack([(wrench(center + step * e, 0 * e, g_base)
                          - wrench(center - step * e, 0 * e, g_base)) / (2 * step)
                         for e in eye], axis=1)                          # [6, k] per rad
    d_accel = np.stack([wrench(center, e, 0 * g_base) for e in eye], axis=1)   # per rad/s^2
    to_lab = np.zeros((6, 6))
    to_lab[:3, :3] = to_lab[3:, 3:] = lin.rotation
    trans, rot = 0.0, 0.0
    for f, amp, ph in zip(frequencies_hz, amplitudes.T, phases_rad.T):
        w2 = (2 * np.pi * f) ** 2
        force = to_lab @ ((d_weight - w2 * d_accel) @ (amp * np.exp(1j * ph)))
        resp = np.zeros(6, complex)
        resp[lin.free] = np.linalg.solve(lin.stiffness - w2 * lin.mass, force[lin.free])
        trans += float(np.linalg.norm(np.abs(resp[:3])))
        rot += float(np.linalg.norm(np.abs(resp[3:])))
    return trans, rot


def advise_motion(robot: RobotModel, center: np.ndarray, lin: RigWithRobot, *,
                  passband_hz: float = 5.0, n_sines: int = 3, ramp_s: float = 1.0,
                  seed: int = 0) -> MotionAdvice:
    """A multi-sine joint trajectory about ``center`` (module docstring); its ranks are
    left for :func:`motion_rank` to fill.

    Parameters
    ----------
    robot : RobotModel
    center : ndarray (k,)
        The posture to move about (moving joints in order), inside the limits.
    lin : RigWithRobot
        The rig with the robot on it (:func:`rig_with_robot`): its modes, and its response
        that bounds the amplitudes (:data:`MAX_PLATFORM_EXCURSION`).
    passband_hz : float
        The zero-phase filter's passband: the highest sine stays below half of it.
    n_sines : int
    ramp_s : float
    seed : int
        Of the phases.

    Raises
    ------
    ValueError
        When no frequencies keep clear of the modes, or no motion keeps the arm clear of
        the deck.
    """
    center = np.asarray(center, float)
    modes_hz = lin.modes_hz
    freqs = motion_frequencies(modes_hz, n=n_sines, f_max_hz=min(2.5, 0.5 * passband_hz))
    omega = 2 * np.pi * freqs
    lo, hi = robot.limits()
    prismatic = np.array([b.joint_type == "prismatic" for b in robot.bodies[1:]])
    model = robot.pin_model
    vmax = np.array([float(model.velocityLimit[model.idx_vs[j]])
                     for j in range(1, robot.n_bodies)])
    vmax = np.where(np.isfinite(vmax) & (vmax > 0), vmax, np.inf)
    room = np.minimum(center - lo, hi - center) * 0.9
    amax = np.where(prismatic, MAX_ACCELERATION[1], MAX_ACCELERATION[0])
    xmax = np.where(prismatic, MAX_EXCURSION[1], MAX_EXCURSION[0])
    # per sine: the sum over sines bounds the peak excursion, velocity and acceleration
    per_sine = np.minimum.reduce([np.maximum(room, 0.0) / n_sines, xmax / n_sines,
                                  VELOCITY_FRACTION * vmax / omega.sum(),
                                  amax / (omega ** 2).sum()])
    rng = np.random.default_rng(seed)
    phases = rng.uniform(0, 2 * np.pi, (center.size, n_sines))
    amplitudes = np.repeat(per_sine[:, None], n_sines, axis=1)
    # the platform's forced motion stays within a free vibration's (the response is linear
    # in the amplitudes)
    trans, rot = platform_excursion(robot, lin, center, freqs, amplitudes, phases)
    amplitudes = amplitudes * min(1.0, MAX_PLATFORM_EXCURSION[0] / max(trans, 1e-12),
                                  np.deg2rad(MAX_PLATFORM_EXCURSION[1]) / max(rot, 1e-12))
    t = np.linspace(0.0, 20.0, 2001)
    # every link stays clear of the deck along the way: shrink the motion until it does
    for _ in range(10):
        adv = MotionAdvice(list(robot.moving_joints), center, freqs, amplitudes, phases,
                           ramp_s, np.asarray(modes_hz, float))
        q = adv.evaluate(t[::20])[0]
        if all(clear_of_deck(robot, qk) for qk in q):
            break
        amplitudes = 0.7 * amplitudes
    else:
        raise ValueError("no motion about the posture with the most room keeps every link "
                         "clear of the deck")
    _, qd, qdd = adv.evaluate(t)
    trans, rot = platform_excursion(robot, lin, center, freqs, amplitudes, phases)
    return MotionAdvice(adv.joints, center, freqs, amplitudes, phases, ramp_s, adv.modes_hz,
                        peak_velocity=np.abs(qd).max(0), peak_acceleration=np.abs(qdd).max(0),
                        platform_m=trans, platform_rad=rot)


def motion_rank(robot: RobotModel, advice: MotionAdvice, locked_structural: np.ndarray,
                total_mass_kg: float, radius_m: float, *, duration_s: float = 10.0,
                n_samples: int = 200, gravity: float = 9.80665) -> MotionAdvice:
    """``advice`` with its ranks and text: the structural rank of the locked postures'
    rows (``locked_structural``, rigtool.robot.base_parameters.structural_rows) alone and
    with the base wrench's rows along the trajectory (platform still, base z up)."""
    from rigtool.robot.motion_regressor import base_wrench_regressor, floating_model

    t = np.linspace(advice.ramp_s, max(duration_s, advice.ramp_s + 1.0), n_samples)
    q, qd, qdd = advice.evaluate(t)
    zeros = np.zeros((t.size, 6))
    g = np.tile([0.0, 0.0, -gravity], (t.size, 1))
    y = base_wrench_regressor(robot, floating_model(robot), q, qd, qdd, zeros, zeros, g)
    scale = np.array([1.0] * 3 + [1.0 / radius_m] * 3) / (total_mass_kg * gravity)
    motion = (y * scale[None, :, None]).reshape(-1, y.shape[-1])
    both = np.vstack([locked_structural, motion])
    col = np.linalg.norm(both, axis=0)
    col[col == 0] = 1.0

    def rank(w: np.ndarray) -> int:
        s = np.linalg.svd(w / col, compute_uv=False)
        return int(np.sum(s > 1e-8 * s[0]))

    r_locked, r_with = rank(locked_structural), rank(both)
    revolute = np.array([b.joint_type != "prismatic" for b in robot.bodies[1:]])
    deg = [f"{j} {np.rad2deg(c):.0f} deg" if rev else f"{j} {1e3 * c:.0f} mm"
           for j, c, rev in zip(advice.joints, advice.center, revolute)]
    peaks = (f", peak {np.rad2deg(advice.peak_velocity[revolute].max()):.0f} deg/s and "
             f"{np.rad2deg(advice.peak_acceleration[revolute].max()):.0f} deg/s^2"
             if revolute.any() and advice.peak_velocity.size else "")
    text = (f"drive every joint about ({', '.join(deg)}) along sines at "
            f"{', '.join(f'{f:.2f}' for f in advice.frequencies_hz)} Hz "
            f"(clear of the rig's modes at {', '.join(f'{m:.2f}' for m in advice.modes_hz)} "
            f"Hz){peaks}, forcing the platform by about {1e3 * advice.platform_m:.0f} mm and "
            f"{np.rad2deg(advice.platform_rad):.1f} deg (motion_advice.csv): the motion makes {r_with - r_locked} more combinations "
            f"identifiable (rank {r_locked} -> {r_with})")
    return replace(advice, rank_locked=r_locked, rank_with=r_with, text=text)


__all__ = ["MODE_MARGIN", "MAX_PLATFORM_EXCURSION", "MotionAdvice", "motion_frequencies",
           "motion_center", "RigWithRobot", "rig_with_robot", "platform_excursion",
           "advise_motion", "motion_rank"]
