"""The engine's one JAX import: 64-bit floats and the persistent compilation cache.

Why JAX: the output-error fits need the derivative of a simulated trajectory with respect
to every unknown. JAX gives it exactly by forward-mode differentiation through the compiled RK4
loop (``jax.linearize`` of one step, ``vmap`` over the unknowns, ``lax.scan`` over frames), from
the same code that simulates: no hand-derived variational equations to keep in step with the
model, no dependency beyond rigtool's, and the same code on a GPU. It is not the fastest on a
CPU: ``benchmarks/engine_choice.py`` (benchmarks/RESULTS.md, "The engine")
measured, for the platform carrying nb = 2 / 4 / 8 / 16 bodies with 16 nb + 12 sensitivities,
3.7 / 11.5 / 36.5 / 169 ms CPU per frame here, against 2.9 / 3.4 / 4.3 / 7.1 ms for
pinocchio's (``pin``) analytic ABA derivatives as variational equations driven from a Python
loop per RK4 stage (its calls alone 0.1-1.7 ms: the rest is the Python loop), and 1.4-21 ms
for numba's compiled ABA with forward differences (numba has no automatic differentiation).
For the tree of links that measurement won: its tangents now run as numba kernels with each
operation's derivative rule written beside it (rigtool.engine.tree_tangents; exact, equal
to JAX's forward mode to round-off, 1.0 / 2.1 / 6.8 / 18 ms CPU per frame at nb = 2 / 4 / 9
/ 16). The rigid platform's fits (calibration, postures) and the prescribed-motion model
stay in JAX here.

Marker residuals are in mm and the parameters span 1e-4..1e3: single precision would lose
the fit, so 64-bit floats are switched on. JAX keeps that switch process-wide (it is a
library setting, not state of rigtool's); every engine module imports ``jax`` from here so
the setting is in force before any array is made. Compiled functions are cached on disk
(``~/.cache/rigtool/jax``, or ``$RIGTOOL_JAX_CACHE``) so a second run, and every worker
process, loads them instead of compiling again; the integrators' traces are kept there too
(rigtool.engine.compiled).
"""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)
CACHE_DIR = os.environ.get("RIGTOOL_JAX_CACHE",
                           str(Path.home() / ".cache" / "rigtool" / "jax"))
if CACHE_DIR:
    try:
        Path(CACHE_DIR).mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", CACHE_DIR)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    except OSError:          # a read-only home: compile every time, nothing else changes
        CACHE_DIR = ""

__all__ = ["jax", "jnp", "CACHE_DIR"]
