"""A robot read from its URDF: the bodies whose parameters are identified, their joints,
and forward kinematics in the base link's frame.

Conventions
-----------
- A *body* is what moves as one piece: a link whose parent joint moves (revolute,
  continuous or prismatic) together with every link attached to it by fixed joints, and by
  joints the session holds (``fixed_joints``). Body 0 is the base link and everything
  rigidly attached to it. Pinocchio (``buildModelFromUrdf`` then ``buildReducedModel`` for
  the held joints) builds this merged model; its joint ``j`` frame is body ``j``'s frame,
  which coincides with the URDF frame of the body's own (movable) link.
- Standard parameters per body in rigtool's order ``[m, h_x, h_y, h_z, I_xx, I_xy, I_xz,
  I_yy, I_yz, I_zz]`` (:mod:`rigtool.inertia`), about the body frame's origin, body axes.
  Pinocchio's own order (``Inertia.toDynamicParameters``) is ``[m, h_x, h_y, h_z, I_xx,
  I_xy, I_yy, I_xz, I_yz, I_zz]``; the two are converted here only.
- The URDF ``<inertial>`` blocks (the CAD values) are read from the XML text here, and the
  prior of a body is the sum of its links' blocks; pinocchio's merged inertias serve as the
  independent check (``tests/test_robot_urdf.py``).
- A block that is not a physical rigid body (its pseudo-inertia not positive semidefinite:
  principal moments that break the triangle inequality, a negative one) is a prior still:
  it is projected onto the consistent set when the URDF is read (:func:`project_inertial`),
  before any fit, and the model lists what changed (:attr:`RobotModel.projected`).
- Poses ``(R, p)`` map body coordinates to base-link coordinates: ``x_base = R x_body + p``.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams, inertia_vector, transform_params

#: URDF joint types a robot session may contain.
MOVABLE_TYPES = ("revolute", "continuous", "prismatic")
JOINT_TYPES = MOVABLE_TYPES + ("fixed",)
#: A projected prior's smallest second moment about its COM (an eigenvalue of
#: ``Sigma_c = tr(I_c)/2 * 1 - I_c``), relative to its largest: a hundredth keeps the
#: projected body as flat as a plate whose thickness is a tenth of its width, and its
#: pseudo-inertia well conditioned for the log-det divergence the per-link fit measures from it
PRIOR_FLOOR_REL = 1e-2
#: ``Sigma_c``'s smallest eigenvalue below ``-PRIOR_TOL_REL`` times its largest is
#: inconsistent (above it: the rounding of a block written to a few digits)
PRIOR_TOL_REL = 1e-9
#: rigtool's order -> pinocchio's dynamic-parameter order and back
_TO_PIN = np.array([0, 1, 2, 3, 4, 5, 7, 6, 8, 9])


def to_pinocchio_order(pi: np.ndarray) -> np.ndarray:
    """``[..., 10]`` rigtool order -> pinocchio's ``toDynamicParameters`` order."""
    return np.asarray(pi, float)[..., _TO_PIN]


def from_pinocchio_order(dyn: np.ndarray) -> np.ndarray:
    """Pinocchio's dynamic-parameter order -> rigtool's (the permutation is its own inverse)."""
    return np.asarray(dyn, float)[..., _TO_PIN]


@dataclass(frozen=True)
class UrdfJoint:
    """One ``<joint>`` of the URDF as written."""

    name: str
    type: str
    parent: str
    child: str
    origin_xyz: np.ndarray
    origin_rpy: np.ndarray
    axis: np.ndarray
    lower: float | None
    upper: float | None
    mimic: str | None = None


@dataclass(frozen=True)
class ProjectedInertial:
    """A URDF ``<inertial>`` that was not physically consistent, and its projection.

    Attributes
    ----------
    link : str
    mass_kg : float
        Kept.
    moments_before, moments_after : ndarray (3,)
        Principal moments of inertia about the COM, kg m^2 (ascending, the eigenvectors of
        the block's inertia tensor; a mass-less block's about the link origin).
    """

    link: str
    mass_kg: float
    moments_before: np.ndarray
    moments_after: np.ndarray

    def text(self) -> str:
        """``link: I1, I2, I3 -> I1', I2', I3' kg m^2``."""
        def f(v):
            return ", ".join(f"{x:.4g}" for x in v)
        return f"'{self.link}' {f(self.moments_before)} -> {f(self.moments_after)}"

    def to_json(self) -> dict:
        return {"link": self.link, "mass": self.mass_kg,
                "principal_moments_before": self.moments_before.tolist(),
                "principal_moments_after": self.moments_after.tolist()}


def project_inertial(ip: InertialParams, *, floor_rel: float = PRIOR_FLOOR_REL
                     ) -> InertialParams | None:
    """The nearest physically consistent rigid body to a URDF block, or None when it is
    consistent already.

    The mass and the COM are kept (a CAD model's best-known values) and the second moments
    about the COM, ``Sigma_c = tr(I_c)/2 * 1 - I_c``, are moved to the nearest (Frobenius)
    positive semidefinite matrix whose eigenvalues are at least ``floor_rel`` times the
    largest: ``Sigma_c``'s eigenvalues clipped from below, its eigenvectors kept. With the
    mass and first moment fixed, the pseudo-inertia changes only by the change of
    ``Sigma_c``, so this is the nearest pseudo-inertia (Frobenius) with the URDF's mass and
    COM. (The log-det divergence the per-link fit uses is not defined from a prior that is
    not positive definite, hence this projection for the prior itself.) A block without
    mass is consistent when ``Sigma`` about its origin is positive semidefinite; it is
    clipped the same way.
    """
    m = ip.mass
    i_c = ip.inertia_com if m > 0 else ip.inertia_origin
    i_c = 0.5 * (i_c + i_c.T)
    sigma = 0.5 * np.trace(i_c) * np.eye(3) - i_c
    ev, vec = np.linalg.eigh(sigma)
    top = max(float(ev[-1]), 0.0)
    if ev[0] >= -PRIOR_TOL_REL * top and (top > 0 or np.allclose(i_c, 0)):
        return None
    if top <= 0:                          # no positive second moment at all: a small sphere
        top = max(float(np.max(np.abs(ev))), 1e-12)
        ev = np.full(3, top)
    sigma_new = (vec * np.maximum(ev, floor_rel * top)) @ vec.T
    i_new = np.trace(sigma_new) * np.eye(3) - sigma_new
    if m > 0:
        return InertialParams.from_com(m, ip.com, i_new)
    return InertialParams(np.concatenate([[0.0, 0, 0, 0], inertia_vector(i_new)]))


@dataclass(frozen=True)
class Body:
    """One identified body (a movable link and the links rigidly attached to it).

    Attributes
    ----------
    name : str
        Its own URDF link (the child of its moving joint; the base link for body 0).
    joint : str or None
        The moving joint above it (None for the base body).
    joint_type : str or None
        ``"revolute"``, ``"continuous"`` or ``"prismatic"`` (None for the base body).
    axis : ndarray (3,) or None
        Joint axis in the body frame (unit).
    lower, upper : float or None
        Joint limits (rad or m) from the URDF (None for continuous joints).
    parent : int
        Index of the parent body (-1 for the base body).
    links : tuple of str
        Every URDF link merged into the body, its own first.
    prior : InertialParams
        The sum of the links' URDF inertials, about the body origin, body axes.
    attached : InertialParams
        The part of ``prior`` from links other than its own (kept as in the URDF when the
        identified body is written back).
    """

    name: str
    joint: str | None
    joint_type: str | None
    axis: np.ndarray | None
    lower: float | None
    upper: float | None
    parent: int
    links: tuple[str, ...]
    prior: InertialParams
    attached: InertialParams


@dataclass
class RobotModel:
    """A URDF robot prepared for identification (see module docstring).

    Attributes
    ----------
    path : Path
        The URDF.
    base_link : str
    bodies : list of Body
        Body 0 is the base; parents precede children.
    fixed_joints : dict
        Joints held for the whole session -> their value (rad or m).
    moving_joints : list of str
        The joints of bodies 1.., in body order (a joint-angle file has one column each).
    joints : dict
        Every URDF joint by name.
    link_inertials : dict
        URDF link -> its own ``<inertial>`` about the link origin, link axes (links
        without one are absent).
    link_poses : dict
        URDF link -> ``(body index, R, p)``: the link frame in its body's frame.
    pin_model : pinocchio.Model
        The reduced (merged) model; joint ``j`` is body ``j``.
    """

    path: Path
    base_link: str
    bodies: list[Body]
    fixed_joints: dict[str, float]
    moving_joints: list[str]
    joints: dict[str, UrdfJoint]
    link_inertials: dict[str, InertialParams]
    link_poses: dict[str, tuple[int, np.ndarray, np.ndarray]]
    pin_model: object = field(repr=False)
    #: the base link's frame in the URDF root's (pinocchio ``SE3``)
    base_placement: object = field(default=None, repr=False)
    #: the URDF blocks that were not physically consistent, projected
    #: (:func:`project_inertial`); ``link_inertials`` holds the projections
    projected: list[ProjectedInertial] = field(default_factory=list)

    def projection_note(self) -> str | None:
        """What the projection of inconsistent URDF blocks changed, for the report."""
        if not self.projected:
            return None
        n = len(self.projected)
        links = ", ".join(p.link for p in self.projected)
        return (f"the URDF prior of {n} link{'s' if n > 1 else ''} ({links}) is not "
                "physically consistent (principal moments of inertia that break the triangle "
                "inequality or are negative); each was projected onto the consistent set "
                "before any fit, mass and COM kept (principal moments about the COM, kg m^2: "
                + "; ".join(p.text() for p in self.projected) + ")")

    @property
    def names(self) -> list[str]:
        """Body names (their own links) in body order."""
        return [b.name for b in self.bodies]

    @property
    def n_bodies(self) -> int:
        """Number of bodies (the base included)."""
        return len(self.bodies)

    def prior_vector(self) -> np.ndarray:
        """The URDF prior stacked ``[10 n]`` (rigtool order per body)."""
        return np.concatenate([b.prior.pi for b in self.bodies])

    def configuration(self, angles: dict[str, float] | np.ndarray) -> np.ndarray:
        """Pinocchio configuration ``q`` of the reduced model from the moving joints' values
        (a dict by joint name, or an array in :attr:`moving_joints` order)."""
        import pinocchio as pin

        model = self.pin_model
        if not isinstance(angles, dict):
            values = np.asarray(angles, float).ravel()
            if values.size != len(self.moving_joints):
                raise ValueError(f"{values.size} joint values for {len(self.moving_joints)} "
                                 "moving joints")
            angles = dict(zip(self.moving_joints, values))
        q = pin.neutral(model)
        for j, body in enumerate(self.bodies[1:], start=1):
            value = float(angles[body.joint])
            idx, nq = model.idx_qs[j], model.nqs[j]
            if nq == 1:
                q[idx] = value
            else:                                   # continuous: (cos, sin)
                q[idx:idx + 2] = [math.cos(value), math.sin(value)]
        return q

    def body_poses(self, angles: dict[str, float] | np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        """``(R [n, 3, 3], p [n, 3])`` of every body frame in the base link's frame."""
        import pinocchio as pin

        model = self.pin_model
        data = model.createData()
        pin.forwardKinematics(model, data, self.configuration(angles))
        base_inv = self.base_placement.inverse()
        rot = np.zeros((self.n_bodies, 3, 3))
        pos = np.zeros((self.n_bodies, 3))
        for j in range(self.n_bodies):
            m = base_inv * data.oMi[j]
            rot[j], pos[j] = m.rotation, m.translation
        return rot, pos

    def link_pose(self, link: str, angles: dict[str, float] | np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
        """``(R, p)`` of any URDF link's frame in the base link's frame."""
        body, r_bl, p_bl = self.link_poses[link]
        rot, pos = self.body_poses(angles)
        return rot[body] @ r_bl, rot[body] @ p_bl + pos[body]

    def composite(self, pi_stacked: np.ndarray, angles: dict[str, float] | np.ndarray
                  ) -> InertialParams:
        """The whole robot's standard parameters in the base frame for one configuration."""
        rot, pos = self.body_poses(angles)
        per = np.asarray(pi_stacked, float).reshape(-1, 10)
        return InertialParams(sum(transform_params(per[j], rot[j], pos[j])
                                  for j in range(self.n_bodies)))

    def limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper limits of the moving joints (``-pi, pi`` for continuous ones)."""
        lo = np.array([-math.pi if b.lower is None else b.lower for b in self.bodies[1:]])
        hi = np.array([math.pi if b.upper is None else b.upper for b in self.bodies[1:]])
        return lo, hi


# ----------------------------------------------------------------------------- XML


def _floats(text: str | None, n: int, default: float, *, path: Path, what: str) -> np.ndarray:
    if text is None:
        return np.full(n, default)
    try:
        vals = np.array([float(t) for t in text.split()])
    except ValueError:
        raise ConfigError(f"expected {n} numbers in {what}", path=path, found=text) from None
    if vals.size != n or not np.all(np.isfinite(vals)):
        raise ConfigError(f"expected {n} finite numbers in {what}", path=path, found=text)
    return vals


def rpy_matrix(rpy: np.ndarray) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes x, y, z) -> rotation matrix ``Rz Ry Rx``."""
    from scipy.spatial.transform import Rotation
    return Rotation.from_euler("xyz", rpy).as_matrix()


def _read_inertial(el: ET.Element, link: str, path: Path) -> InertialParams | None:
    """A link's ``<inertial>`` about the link origin, link axes (None when absent)."""
    inertial = el.find("inertial")
    if inertial is None:
        return None
    what = f"the <inertial> of link '{link}'"
    mass_el = inertial.find("mass")
    mass = 0.0 if mass_el is None else float(_floats(mass_el.get("value"), 1, 0.0, path=path,
                                                    what=what)[0])
    origin = inertial.find("origin")
    xyz = _floats(None if origin is None else origin.get("xyz"), 3, 0.0, path=path, what=what)
    rpy = _floats(None if origin is None else origin.get("rpy"), 3, 0.0, path=path, what=what)
    ie = inertial.find("inertia")
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    vals = [0.0] * 6 if ie is None else [
        float(_floats(ie.get(k), 1, 0.0, path=path, what=what)[0]) for k in keys]
    if mass < 0:
        raise ConfigError(f"negative mass in {what}", path=path, found=mass)
    i_frame = np.array([[vals[0], vals[1], vals[2]], [vals[1], vals[3], vals[4]],
                        [vals[2], vals[4], vals[5]]])
    r = rpy_matrix(rpy)
    i_com = r @ i_frame @ r.T
    return InertialParams.from_com(mass, xyz if mass > 0 else np.zeros(3), i_com) \
        if mass > 0 else InertialParams(np.concatenate([[0.0, 0, 0, 0], inertia_vector(i_com)]))


def parse_urdf_xml(path: Path) -> tuple[ET.Element, dict[str, ET.Element],
                                        dict[str, UrdfJoint]]:
    """The URDF's root element, its links by name and joints by name (errors name the
    file)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise ConfigError("the URDF file does not exist", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the URDF: {exc}", path=path) from None
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ConfigError(f"not valid XML: {exc}", path=path,
                          line=exc.position[0] if exc.position else None) from None
    if root.tag != "robot":
        raise ConfigError("expected a URDF (<robot> root element)", path=path, found=root.tag)
    links = {}
    for el in root.findall("link"):
        name = el.get("name")
        if not name:
            raise ConfigError("a <link> has no name", path=path)
        links[name] = el
    joints = {}
    for el in root.findall("joint"):
        name, jtype = el.get("name"), el.get("type")
        if not name:
            raise ConfigError("a <joint> has no name", path=path)
        if jtype not in JOINT_TYPES:
            raise ConfigError(f"joint '{name}' has type '{jtype}'; a robot session reads "
                              f"{', '.join(JOINT_TYPES)} joints", path=path)
        parent, child = el.find("parent"), el.find("child")
        if parent is None or child is None:
            raise ConfigError(f"joint '{name}' needs <parent> and <child>", path=path)
        origin = el.find("origin")
        what = f"joint '{name}'"
        xyz = _floats(None if origin is None else origin.get("xyz"), 3, 0.0, path=path,
                      what=what)
        rpy = _floats(None if origin is None else origin.get("rpy"), 3, 0.0, path=path,
                      what=what)
        ax = el.find("axis")
        axis = _floats(None if ax is None else ax.get("xyz"), 3, 0.0, path=path, what=what)
        if ax is None:
            axis = np.array([1.0, 0.0, 0.0])
        if jtype in MOVABLE_TYPES:
            norm = np.linalg.norm(axis)
            if norm == 0:
                raise ConfigError(f"joint '{name}' has a zero axis", path=path)
            axis = axis / norm
        lim = el.find("limit")
        lower = upper = None
        if jtype in ("revolute", "prismatic"):
            if lim is None:
                raise ConfigError(f"{jtype} joint '{name}' needs a <limit>", path=path)
            lower = float(_floats(lim.get("lower"), 1, 0.0, path=path, what=what)[0])
            upper = float(_floats(lim.get("upper"), 1, 0.0, path=path, what=what)[0])
        mimic = el.find("mimic")
        joints[name] = UrdfJoint(name, jtype, parent.get("link"), child.get("link"), xyz, rpy,
                                 axis, lower, upper,
                                 None if mimic is None else mimic.get("joint"))
    return root, links, joints


# ----------------------------------------------------------------------------- model


def _closest(name: str, choices) -> str:
    from rigtool.config.schema import closest_key
    near = closest_key(name, list(choices))
    return f"; did you mean '{near}'?" if near else ""


def load_robot_model(path: str | Path, base_link: str,
                     fixed_joints: dict[str, float] | None = None) -> RobotModel:
    """Read a URDF, hold ``fixed_joints`` at their values and merge rigid links into bodies.

    Parameters
    ----------
    path : str or Path
        The URDF.
    base_link : str
        The URDF link bolted to the platform; it must be the URDF's root or be attached to
        the root by fixed joints.
    fixed_joints : dict, optional
        Joint name -> value (rad, or m for prismatic joints) held for the whole session.

    Returns
    -------
    RobotModel

    Raises
    ------
    ConfigError
        The file is missing or not a URDF, a name is not in it, a held value is outside the
        joint's limits.
    """
    import pinocchio as pin

    path = Path(path)
    fixed_joints = dict(fixed_joints or {})
    _, link_els, joints = parse_urdf_xml(path)
    if base_link not in link_els:
        raise ConfigError(f"base_link '{base_link}' is not a link of the URDF"
                          + _closest(base_link, link_els), path=path)
    for name, value in fixed_joints.items():
        if name not in joints:
            raise ConfigError(f"fixed joint '{name}' is not a joint of the URDF"
                              + _closest(name, joints), path=path)
        j = joints[name]
        if j.lower is not None and not (j.lower - 1e-9 <= value <= j.upper + 1e-9):
            raise ConfigError(f"fixed joint '{name}' held at {value:g}, outside its limits "
                              f"[{j.lower:g}, {j.upper:g}]", path=path)
    try:
        full = pin.buildModelFromUrdf(str(path))
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"pinocchio cannot read the URDF: {exc}", path=path) from None
    # hold the fixed joints (and joints that mimic a held one)
    q_ref = pin.neutral(full)
    lock = []
    for name, value in fixed_joints.items():
        if joints[name].type == "fixed":
            continue
        jid = full.getJointId(name)
        idx, nq = full.idx_qs[jid], full.nqs[jid]
        if nq == 1:
            q_ref[idx] = value
        else:
            q_ref[idx:idx + 2] = [math.cos(value), math.sin(value)]
        lock.append(jid)
    for name, j in joints.items():
        if j.mimic is not None and name not in fixed_joints and j.type != "fixed":
            raise ConfigError(f"joint '{name}' mimics '{j.mimic}'; hold it in fixed_joints "
                              "(mimic joints are not identified)", path=path)
    model = pin.buildReducedModel(full, sorted(lock), q_ref) if lock else full
    # the base link must move with the universe body
    fid = model.getFrameId(base_link)
    if model.frames[fid].parentJoint != 0:
        raise ConfigError(f"base_link '{base_link}' moves relative to the URDF's root; it must "
                          "be the root or attached to it by fixed joints", path=path)
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    base_placement = data.oMf[fid]

    # links -> bodies, with each link's placement in its body frame
    link_poses, members = {}, {j: [] for j in range(model.njoints)}
    for f in model.frames:
        if f.type == pin.FrameType.BODY and f.name in link_els:
            link_poses[f.name] = (f.parentJoint, np.array(f.placement.rotation),
                                  np.array(f.placement.translation))
            members[f.parentJoint].append(f.name)
    if set(link_poses) != set(link_els):
        missing = sorted(set(link_els) - set(link_poses))
        raise ConfigError(f"link '{missing[0]}' is not connected to the URDF's tree", path=path)
    inertials, projected = {}, []
    for name, el in link_els.items():
        ip = _read_inertial(el, name, path)
        if ip is None:
            continue
        fixed = project_inertial(ip)
        if fixed is not None:
            projected.append(ProjectedInertial(name, ip.mass, _principal(ip), _principal(fixed)))
            ip = fixed
        inertials[name] = ip
    bodies = []
    moving = []
    for j in range(model.njoints):
        if j == 0:
            own, jname, jtype, axis, lo, hi = base_link, None, None, None, None, None
        else:
            jname = model.names[j]
            uj = joints[jname]
            own, jtype, axis, lo, hi = uj.child, uj.type, uj.axis, uj.lower, uj.upper
            moving.append(jname)
        own_pose = link_poses[own]
        if j > 0 and not (np.allclose(own_pose[1], np.eye(3)) and np.allclose(own_pose[2], 0)):
            raise ConfigError(f"link '{own}' does not sit at its joint's frame", path=path)
        total = np.zeros(10)
        attached = np.zeros(10)
        for link in members[j]:
            if link not in inertials:
                continue
            _, r_bl, p_bl = link_poses[link]
            part = transform_params(inertials[link].pi, r_bl, p_bl)
            total += part
            if link != own:
                attached += part
        if any(p.link in members[j] for p in projected):
            # the simulator and the regressors read the merged model's inertias
            model.inertias[j] = pin.Inertia.FromDynamicParameters(to_pinocchio_order(total))
        order = [own] + sorted(l for l in members[j] if l != own)
        bodies.append(Body(own, jname, jtype, axis, lo, hi, int(model.parents[j]) if j else -1,
                           tuple(order), InertialParams(total), InertialParams(attached)))
    return RobotModel(path, base_link, bodies, fixed_joints, moving, joints, inertials,
                      link_poses, model, base_placement, projected)


def _principal(ip: InertialParams) -> np.ndarray:
    """Principal moments (ascending) about the COM (a mass-less block's: its origin)."""
    i = ip.inertia_com if ip.mass > 0 else ip.inertia_origin
    return np.linalg.eigvalsh(0.5 * (i + i.T))


def body_inertias_pinocchio(robot: RobotModel) -> np.ndarray:
    """The reduced model's own body inertias ``[n, 10]`` (rigtool order, about the body
    origin): pinocchio's merge of the URDF, the independent check of :attr:`Body.prior`."""
    return np.stack([from_pinocchio_order(np.asarray(robot.pin_model.inertias[j]
                                                     .toDynamicParameters()))
                     for j in range(robot.n_bodies)])


__all__ = ["MOVABLE_TYPES", "JOINT_TYPES", "PRIOR_FLOOR_REL", "UrdfJoint", "Body",
           "RobotModel", "ProjectedInertial", "project_inertial",
           "load_robot_model", "parse_urdf_xml", "rpy_matrix", "to_pinocchio_order",
           "from_pinocchio_order", "body_inertias_pinocchio"]
