"""rigtool.engine.params (written out in NumPy) against JAX's forward mode through the same
maps written with ``expm`` and JAX's autodiff (an independent derivation of the same
numbers): values and Jacobians to round-off, across the small-angle switch."""

import numpy as np
import pytest

from rigtool.engine._jax import jax, jnp
from rigtool.engine.params import body_params, initial_state

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


def _y0_of_state(s, rot_ref):
    skew = jnp.array([[0.0, -s[5], s[4]], [s[5], 0.0, -s[3]], [-s[4], s[3], 0.0]])
    rot = jax.scipy.linalg.expm(skew) @ rot_ref
    return jnp.concatenate([s[0:3], rot.reshape(9), s[6:9], s[9:12]])


@pytest.mark.parametrize("angle", [0.0, 3e-7, 2e-5, 0.0099, 0.0101, 0.03, 1.2, 3.0])
def test_initial_state_equals_jax_expm_and_its_forward_mode(angle):
    rng = np.random.default_rng(int(angle * 1e7) % 1000)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    s = np.concatenate([rng.normal(size=3), angle * axis, rng.normal(size=6)])
    ref_rot = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    y0, jac = initial_state(s, ref_rot)
    y_ref = np.asarray(_y0_of_state(jnp.asarray(s), jnp.asarray(ref_rot)))
    j_ref = np.asarray(jax.jacfwd(_y0_of_state)(jnp.asarray(s), jnp.asarray(ref_rot)))
    assert np.abs(y0 - y_ref).max() < 1e-14
    assert np.abs(jac - j_ref).max() < 1e-13


@pytest.mark.slow
def test_body_params_equal_jax_forward_mode():
    rng = np.random.default_rng(5)
    for _ in range(5):
        z = np.concatenate([rng.normal(size=3) * 0.2, rng.normal(size=6) * 0.5])
        m = float(rng.uniform(1.0, 90.0))
        pi, d_z, d_m = body_params(z, m)
        ref = np.asarray(_params_of_z(jnp.asarray(z), jnp.asarray(m)))
        rz, rm = jax.jacfwd(_params_of_z, argnums=(0, 1))(jnp.asarray(z), jnp.asarray(m))
        scale = np.abs(ref).max()
        assert np.abs(pi - ref).max() < 1e-14 * scale
        assert np.abs(d_z - np.asarray(rz)).max() < 1e-13 * scale
        assert np.abs(d_m - np.asarray(rm)).max() < 1e-14 * scale
