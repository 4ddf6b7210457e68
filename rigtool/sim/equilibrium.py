"""Where the springs hold the load at rest, and the small vibrations about that pose.

The static wrench of the locked system at a platform pose, the static equilibrium solved
from it (:func:`static_equilibrium`), and the linear modes there (:func:`linear_modes`).
Conventions are those of :mod:`rigtool.sim.dynamics`.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import root
from scipy.spatial.transform import Rotation

from rigtool.errors import ConfigError
from rigtool.rig import modes
from rigtool.sim import _model
from rigtool.sim.assembly import _assemble, lumped_params
from rigtool.sim.system import System

__all__ = ["static_wrench", "static_equilibrium", "linear_modes"]


def _pose_from(x6: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return Rotation.from_rotvec(x6[3:]).as_matrix(), x6[:3]


def static_wrench(system: System, rotation: np.ndarray, position_m: np.ndarray) -> np.ndarray:
    """Net spring + gravity wrench ``[6]`` on the locked system at rest (lab, about ``p``).

    Parameters
    ----------
    system : System
    rotation : ndarray, shape (3, 3)
        Platform axes -> lab.
    position_m : ndarray, shape (3,)
        Platform origin in the lab, m.

    Returns
    -------
    ndarray, shape (6,)
        ``[force (N), moment about the platform origin (N m)]``, lab components.
    """
    model, _ = _assemble(system, free_joints=False)
    return _static_wrench(model, rotation, position_m)


def _static_wrench(model: _model.Model, rotation: np.ndarray, position_m: np.ndarray):
    zero = np.zeros(3)
    w = _model.spring_wrench_lab(model, rotation, position_m, zero, zero)
    force = model.mass[0] * model.gravity_lab
    moment = np.cross(rotation @ model.first_moment_body[0], model.gravity_lab)
    return w + np.concatenate([force, moment])


def static_equilibrium(system: System) -> tuple[np.ndarray, np.ndarray]:
    """Platform pose (R, p in the lab) where springs hold the load at rest, joints locked.

    Solves the free rows of ``spring wrench + gravity wrench = 0`` over
    ``[p, rotation vector]`` (locked components held at 0) with ``scipy.optimize.root``
    from the unstretched hanging guess, then polishes with Newton steps (central-difference
    Jacobian) until the residual is below 1e-10 N (N m).

    Parameters
    ----------
    system : System

    Returns
    -------
    rotation : ndarray, shape (3, 3)
        Platform axes -> lab at rest.
    position_m : ndarray, shape (3,)
        Platform origin in the lab at rest, m.

    Raises
    ------
    ConfigError
        When no equilibrium exists (springs too weak or geometry without a rest pose).
    """
    model, _ = _assemble(system, free_joints=False)
    free = system.rig.free_dof_rows()
    if len(free) == 0:
        return np.eye(3), np.zeros(3)
    g = model.gravity_lab
    g_dir = g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, -1.0])
    hanging = np.zeros(6)
    hanging[:3] = (model.anchor_lab.mean(0) + g_dir * model.free_length.mean()
                   - model.attachment_platform.mean(0))
    x_full = np.zeros(6)
    scale = max(1.0, model.mass[0] * np.linalg.norm(g))

    def residual(xf: np.ndarray) -> np.ndarray:
        x_full[free] = xf
        return _static_wrench(model, *_pose_from(x_full))[free]

    best = None
    # The hanging pose (springs at free length below their anchors) suits a suspended rig;
    # the zero pose suits guided rigs whose springs are not vertical.
    for guess in (hanging, np.zeros(6)):
        xf = _solve_static(residual, guess[free])
        if xf is None:
            continue
        err = np.max(np.abs(residual(xf)))
        if best is None or err < best[1]:
            best = (xf, err)
        if err < 1e-10 * scale:
            break
    if best is None or best[1] > 1e-9 * scale:
        found = "no solution" if best is None else f"residual {best[1]:.3g} N"
        raise ConfigError("the springs cannot hold the load at rest (no static equilibrium "
                          f"found: {found}); check stiffness, free length and anchors",
                          field="springs")
    x_full[free] = best[0]
    rot, pos = _pose_from(x_full)
    return rot, pos.copy()


def _solve_static(residual, guess: np.ndarray) -> np.ndarray | None:
    """``scipy.optimize.root`` then Newton polish (central differences); None on failure."""
    with np.errstate(all="ignore"):
        if not np.all(np.isfinite(residual(guess))):
            guess = guess + 1e-3
        sol = root(residual, guess, method="hybr", options={"xtol": 1e-13})
        xf = sol.x
        n = len(xf)
        for _ in range(20):
            res = residual(xf)
            if not np.all(np.isfinite(res)):
                return None
            if np.max(np.abs(res)) < 1e-11:
                break
            jac = np.empty((n, n))
            for j in range(n):
                step = np.zeros(n)
                step[j] = 1e-6
                jac[:, j] = (residual(xf + step) - residual(xf - step)) / 2e-6
            if not np.all(np.isfinite(jac)):
                return None
            xf = xf - np.linalg.lstsq(jac, res, rcond=None)[0]
    return xf if np.all(np.isfinite(residual(xf))) else None


def linear_modes(system: System) -> tuple[np.ndarray, np.ndarray]:
    """Small-vibration modes at the equilibrium (joints locked), via ``rigtool.rig.modes``.

    Parameters
    ----------
    system : System

    Returns
    -------
    frequencies_hz : ndarray
        Ascending, one per free DOF.
    shapes : ndarray
        Columns over the free DOFs of ``[dp (lab, m), rotation vector (lab, rad)]``.
    """
    rot, pos = static_equilibrium(system)
    return modes(system.rig, rot, pos, lumped_params(system))
