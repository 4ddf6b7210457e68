"""Maps from the fits' unknowns to the engine's inputs, with their exact Jacobians.

- a body's ``z = [c (3), log-Cholesky of Sigma_c (6)]`` (COM and COM-centred second moment,
  every value physically consistent; rigtool.identify.posture.output_error.object_to_z) to its
  standard parameters ``pi [10]`` about the frame origin;
- an initial state ``s = [p (3), rotation vector (3), v (3), omega (3)]`` (the rotation about
  a reference, ``R0 = exp([phi x]) R_ref``) to the engine's ``y0 [18]``.

The Jacobians come from ``jax.jacfwd`` of the same functions, so they are exact.
"""

from __future__ import annotations


import numpy as np

from rigtool.engine._jax import jax, jnp

_TRIL = np.tril_indices(3)
_DIAG = np.flatnonzero(_TRIL[0] == _TRIL[1])


def _params_of_z(z, mass_kg):
    com = z[:3]
    vals = z[3:9].at[_DIAG].set(jnp.exp(z[3:9][_DIAG]))
    low = jnp.zeros((3, 3), z.dtype).at[_TRIL].set(vals)
    sigma = low @ low.T
    i_o = (jnp.trace(sigma) * jnp.eye(3) - sigma
           + mass_kg * (com @ com * jnp.eye(3) - jnp.outer(com, com)))
    return jnp.concatenate([jnp.stack([mass_kg]), mass_kg * com,
                            jnp.stack([i_o[0, 0], i_o[0, 1], i_o[0, 2], i_o[1, 1],
                                       i_o[1, 2], i_o[2, 2]])])


@jax.jit
def _params_and_jac(z, mass_kg):
    return _params_of_z(z, mass_kg), jax.jacfwd(_params_of_z, argnums=(0, 1))(z, mass_kg)


def body_params(z: np.ndarray, mass_kg: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pi [10], d pi / d z [10, 9], d pi / d m [10])`` of a body ``z`` of mass ``mass_kg``."""
    pi, (dz, dm) = _params_and_jac(jnp.asarray(z, float), jnp.asarray(float(mass_kg)))
    return np.asarray(pi), np.asarray(dz), np.asarray(dm)


def _y0_of_state(s, rot_ref):
    skew = jnp.array([[0.0, -s[5], s[4]], [s[5], 0.0, -s[3]], [-s[4], s[3], 0.0]])
    rot = jax.scipy.linalg.expm(skew) @ rot_ref
    return jnp.concatenate([s[0:3], rot.reshape(9), s[6:9], s[9:12]])


@jax.jit
def _y0_and_jac(s, rot_ref):
    return _y0_of_state(s, rot_ref), jax.jacfwd(_y0_of_state)(s, rot_ref)


def initial_state(state12: np.ndarray, rot_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(y0 [18], d y0 / d s [18, 12])`` of ``s = [p, phi, v, omega]`` about ``rot_ref``."""
    y0, jac = _y0_and_jac(jnp.asarray(state12, float), jnp.asarray(rot_ref, float))
    return np.asarray(y0), np.asarray(jac)


__all__ = ["body_params", "initial_state"]
