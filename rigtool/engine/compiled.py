"""Compiled engine functions whose tracing is kept on disk, not only their compilation.

``jax.jit`` traces a function in Python at its first call in every process, and only then
can its persistent cache find the compiled code. The engine's integrators (an RK4 loop over
the articulated-body algorithm, linearised and mapped over every unknown) take 4-6 s to
trace, several times what loading their compiled code costs, and every ``rigtool run`` and
every batch worker paid that again. ``disk_jit`` keeps the traced and lowered function as a
``jax.export`` artefact (StableHLO, serialised by JAX itself) under the JAX cache folder,
keyed by everything that determines it: JAX's version, the engine's source, the function,
its static arguments and the shapes and dtypes of its array arguments. A later process
deserialises it (milliseconds) and JAX's persistent cache supplies the compiled code.

Why by hand: JAX has no cache of traces across processes; ``jax.export`` is its supported
way to store one, and this module only chooses the key and the file. When the artefact
cannot be written or read (a read-only home, serialisation support missing, a file from a
crash), the function is traced as plain ``jax.jit`` would: the results are the same either
way, only the time differs.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Callable

from rigtool.engine._jax import CACHE_DIR, jax

_ENGINE_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def _device():
    """The device every engine argument is committed to (JAX's default one)."""
    return jax.devices()[0]


@lru_cache(maxsize=1)
def _source_digest() -> str:
    """sha256 of the engine's source files and of JAX's version (a change to either makes
    every stored trace stale)."""
    h = hashlib.sha256(f"jax {jax.__version__}".encode())
    for path in sorted(_ENGINE_DIR.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _spec(a) -> tuple:
    return tuple(a.shape), str(a.dtype), bool(getattr(a, "weak_type", False))


def _committed(a):
    """``a`` as an array committed to the engine's device (unchanged when it is one: a
    ``device_put`` costs ~60 us, and the integrators are called per chunk)."""
    if isinstance(a, jax.Array) and a.committed:
        return a
    return jax.device_put(a, _device())


def committed(tree):
    """``tree`` (an array, a number or a tuple of them) with every leaf committed to the
    engine's device as a :class:`DiskJit` call commits it, so that a caller passing the same
    inputs to many calls (a simulation's chunks) commits them once: a ``device_put`` of a
    NumPy array costs ~0.1 ms, six per chunk without this."""
    return jax.tree_util.tree_map(_committed, tree)


class DiskJit:
    """A function compiled like ``jax.jit(fun, static_argnames=...)`` whose traces are
    stored on disk (see the module docstring).

    Parameters
    ----------
    fun : callable
        Array arguments (or tuples of arrays) positional, static ones by keyword.
    static_argnames : tuple of str
        The keyword arguments that are part of the trace (hashable, with a stable ``repr``).
    """

    def __init__(self, fun: Callable, static_argnames: tuple[str, ...]):
        self._fun = fun
        self._static = tuple(static_argnames)
        self._jit = jax.jit(fun, static_argnames=self._static)
        self._loaded: dict[tuple, Callable] = {}     # this process's deserialised traces
        self._lock = threading.Lock()   # column groups' threads ask for a trace at once
        self.__doc__ = fun.__doc__
        self.__name__ = fun.__name__

    def _key(self, args: tuple, static: dict) -> str:
        text = repr((self._fun.__module__, self._fun.__qualname__, _source_digest(),
                     sorted(static.items()), str(jax.tree_util.tree_structure(args)),
                     [_spec(a) for a in jax.tree_util.tree_leaves(args)]))
        return hashlib.sha256(text.encode()).hexdigest()

    def _load_or_export(self, key: str, args: tuple, static: dict) -> Callable:
        folder = Path(CACHE_DIR) / "exported" if CACHE_DIR else None
        path = folder / f"{self._fun.__name__}-{key[:32]}.jaxexport" if folder else None
        if path is not None and path.is_file():
            try:
                return jax.jit(jax.export.deserialize(path.read_bytes()).call)
            except Exception:            # a stale or truncated file: trace anew below
                pass
        try:
            exported = jax.export.export(jax.jit(partial(self._fun, **static)))(*args)
            blob = exported.serialize()
        except Exception:                # no serialisation support: plain jit
            return partial(self._jit, **static)
        if path is not None:
            try:
                folder.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
                with os.fdopen(fd, "wb") as fh:
                    fh.write(blob)
                os.replace(tmp, path)    # whole or not at all, also with other processes
            except OSError:
                pass
        return jax.jit(exported.call)

    def __call__(self, *args, **static: Any):
        # every argument committed to the one device: an array returned by an earlier call
        # is committed and a fresh one is not, and jit compiles once for each kind (twice
        # the compile time, ~7 s per integrator of the tree model, on a cold cache)
        args = jax.tree_util.tree_map(_committed, args)
        leaves, tree = jax.tree_util.tree_flatten(args)
        memo = (tuple(sorted(static.items())), tree,
                tuple((a.shape, a.dtype, a.weak_type) for a in leaves))
        with self._lock:
            fun = self._loaded.get(memo)
            if fun is None:
                fun = self._loaded[memo] = self._load_or_export(self._key(args, static),
                                                                 args, static)
        return fun(*args)


def disk_jit(*, static_argnames: tuple[str, ...] = ()) -> Callable[[Callable], DiskJit]:
    """Decorator form of :class:`DiskJit`."""
    return lambda fun: DiskJit(fun, static_argnames)


__all__ = ["DiskJit", "disk_jit", "committed"]
