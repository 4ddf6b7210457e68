"""rigtool's one maximum-likelihood engine: the rig (and its load) simulated with exact
sensitivities, compiled.

- :mod:`rigtool.engine.rigid`: a rigid assembly on axial springs (state, dynamics, RK4, exact
  forward-mode sensitivities, chunked over frames);
- :mod:`rigtool.engine.tree`: the platform carrying a tree of links on spherical joints
  (articulated-body algorithm); its simulation with tangents runs the numba kernels of
  :mod:`rigtool.engine.tree_tangents` (driven by :mod:`rigtool.engine.tree_compiled`);
- :mod:`rigtool.engine.prescribed`: the platform with the links' motion prescribed;
- :mod:`rigtool.engine.params`: the fits' parameterisations and their exact Jacobians;
- :mod:`rigtool.engine.markers`: the marker model and its Jacobian rows;
- :mod:`rigtool.engine.capture`: one capture as a fit sees it (residual rows, Jacobian).
- :mod:`rigtool.engine.whiten`: markers' noise covariance (a camera's) and the whitening of
  their rows.

Why JAX, and numba for the tree's tangents: see :mod:`rigtool.engine._jax` and the documentation's "The simulation engine" page.
"""
