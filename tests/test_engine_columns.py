"""Sensitivity columns split over threads (rigtool.engine.columns): the split covers every
column once, and the engines give the same tangents however many threads share them."""

import numpy as np
import pytest

from rigtool.engine import tree as et
from rigtool.engine.columns import BLOCK, column_groups
from test_engine import _tree_setup


@pytest.mark.parametrize("width, threads", [(16, 2), (32, 2), (48, 2), (48, 3), (80, 4),
                                            (32, 1), (16, 8)])
def test_groups_cover_each_column_once_in_whole_blocks(width, threads):
    groups = column_groups(width, threads)
    assert len(groups) == min(threads, width // BLOCK)
    cols = np.concatenate([np.arange(g.start, g.stop) for g in groups])
    np.testing.assert_array_equal(cols, np.arange(width))
    assert all((g.stop - g.start) % BLOCK == 0 for g in groups)
    sizes = [g.stop - g.start for g in groups]
    assert max(sizes) - min(sizes) <= BLOCK          # as even as whole blocks allow


def test_tree_tangents_do_not_depend_on_the_split(monkeypatch):
    """The demo's relative-motion model, 40 directions split over one, two and three threads
    (rigtool.engine.tree_compiled: 20 + 20, 13 + 14 + 13 columns): the same states and
    markers, and the same marker derivatives up to round-off (the same arithmetic in
    differently sized compiled loops)."""
    p = _tree_setup("demo.toml", 2.0)
    rng = np.random.default_rng(3)
    d_th = rng.normal(size=(p["theta"].size, 40)) * 1e-3
    d_y = rng.normal(size=(p["model"].n_state, 40)) * 1e-3
    out = {}
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("RIGTOOL_ENGINE_THREADS", threads)
        out[threads] = et.simulate(p["model"], p["theta"], p["y0"], 300, p["dt"], substeps=2,
                                   tangent_theta=d_th, tangent_y0=d_y)
    scale = np.abs(out["1"][2]).max()
    for threads in ("2", "3"):
        np.testing.assert_array_equal(out[threads][0], out["1"][0])
        np.testing.assert_array_equal(out[threads][1], out["1"][1])
        np.testing.assert_allclose(out[threads][2], out["1"][2], rtol=0, atol=1e-11 * scale)


@pytest.mark.parametrize("width, threads", [(40, 2), (40, 3), (10, 2), (7, 2), (133, 2)])
def test_compiled_tree_groups_cover_each_column_once(monkeypatch, width, threads):
    from rigtool.engine.tree_compiled import MIN_COLUMNS_PER_THREAD, _column_groups
    monkeypatch.setenv("RIGTOOL_ENGINE_THREADS", str(threads))
    groups = _column_groups(width)
    cols = np.concatenate([np.arange(g.start, g.stop) for g in groups])
    np.testing.assert_array_equal(cols, np.arange(width))
    assert len(groups) == max(1, min(threads, width // MIN_COLUMNS_PER_THREAD))


def test_compiled_tree_reports_a_diverged_motion():
    """A state that stops being finite ends the run with FloatingPointError (what the fits
    catch to back off), with and without tangents."""
    p = _tree_setup("demo.toml", 0.5)
    y0 = p["y0"].copy()
    y0[-1] = np.inf
    with pytest.raises(FloatingPointError):
        et.simulate(p["model"], p["theta"], y0, 20, p["dt"])
    with pytest.raises(FloatingPointError):
        et.simulate(p["model"], p["theta"], y0, 20, p["dt"],
                    tangent_y0=np.eye(y0.size)[:, :4])


def test_loaded_kernels_are_the_ones_a_simulation_calls():
    """load_kernels (a run calls it on a thread during the postures) loads the compiled code
    of the argument types every tree simulation passes: after it, simulations with and
    without tangents, on one and two threads, add no other compiled signature (each one
    more would be a minute of compilation in a user's first run)."""
    from rigtool.engine.tree_compiled import load_kernels, simulate_tangents
    load_kernels()
    loaded = set(simulate_tangents.signatures)
    assert len(loaded) == 1
    p = _tree_setup("demo.toml", 0.2)
    et.simulate(p["model"], p["theta"], p["y0"], 10, p["dt"])
    et.simulate(p["model"], p["theta"], p["y0"], 10, p["dt"],
                tangent_y0=np.eye(p["y0"].size)[:, :20])
    assert set(simulate_tangents.signatures) == loaded
