"""rigtool.engine.compiled: traces kept on disk give the same numbers as tracing anew, are
found again by a fresh function object (as in a new process), and a cache that cannot be
written or read falls back to plain jit."""

import numpy as np

from rigtool.engine import compiled
from rigtool.engine._jax import jax, jnp


def _scan_sum(x, w, *, n):
    """A small compiled loop with a static length (as the engine's chunks)."""
    def body(c, _):
        c = jnp.tanh(c @ w) + c
        return c, c.sum()
    return jax.lax.scan(body, x, None, length=n)[1]


def test_stored_trace_matches_plain_jit_and_is_reused(tmp_path, monkeypatch):
    monkeypatch.setattr(compiled, "CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=3), rng.normal(size=(3, 3)) * 0.3
    plain = jax.jit(_scan_sum, static_argnames=("n",))(x, w, n=7)
    first = compiled.DiskJit(_scan_sum, ("n",))
    np.testing.assert_array_equal(np.asarray(first(x, w, n=7)), np.asarray(plain))
    files = list((tmp_path / "exported").glob("*.jaxexport"))
    assert len(files) == 1
    # a new function object has no trace in memory: it must read the file, not trace
    again = compiled.DiskJit(_scan_sum, ("n",))
    monkeypatch.setattr(jax.export, "export", None)      # tracing anew would fail
    np.testing.assert_array_equal(np.asarray(again(x, w, n=7)), np.asarray(plain))
    # other static arguments or shapes are other traces
    monkeypatch.undo()
    monkeypatch.setattr(compiled, "CACHE_DIR", str(tmp_path))
    again(x, w, n=8)
    again(np.ones(2), np.eye(2), n=7)
    assert len(list((tmp_path / "exported").glob("*.jaxexport"))) == 3


def test_unusable_cache_falls_back_to_tracing(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setattr(compiled, "CACHE_DIR", str(blocker))
    x, w = np.ones(3), np.eye(3) * 0.1
    got = compiled.DiskJit(_scan_sum, ("n",))(x, w, n=4)
    np.testing.assert_allclose(np.asarray(got),
                               np.asarray(jax.jit(_scan_sum, static_argnames=("n",))(x, w, n=4)))
    # a corrupt stored file is traced over, not trusted
    monkeypatch.setattr(compiled, "CACHE_DIR", str(tmp_path))
    f = compiled.DiskJit(_scan_sum, ("n",))
    f(x, w, n=4)
    (path,) = (tmp_path / "exported").glob("*.jaxexport")
    path.write_bytes(b"truncated")
    got = compiled.DiskJit(_scan_sum, ("n",))(x, w, n=4)
    np.testing.assert_allclose(np.asarray(got), np.asarray(f(x, w, n=4)))
