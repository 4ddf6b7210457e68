"""rigtool's one maximum-likelihood engine: the rig (and its load) simulated with exact
sensitivities, compiled.

- :mod:`rigtool.engine.rigid`: a rigid assembly on axial springs (state, dynamics, RK4, exact
  forward-mode sensitivities, chunked over frames);
- :mod:`rigtool.engine.params`: the fits' parameterisations and their exact Jacobians;
- :mod:`rigtool.engine.markers`: the marker model and its Jacobian rows;
- :mod:`rigtool.engine.capture`: one capture as a fit sees it (residual rows, Jacobian).
- :mod:`rigtool.engine.whiten`: markers' noise covariance (a camera's) and the whitening of
  their rows.

Why JAX: see :mod:`rigtool.engine._jax`.
"""
