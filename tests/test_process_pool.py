"""The run's shared worker processes (rigtool.process_pool) and the figures drawn in them
(rigtool.report.figures.draw_all)."""

from __future__ import annotations

from rigtool.process_pool import LazyPool
from rigtool.report.figures import draw_all
from rigtool.report.plots_subset import subset_values_figure

SUBSET = {"names": ["M", "MS_x", "J_xx"], "values": [80.8, 1.25, None],
          "std": [0.01, 0.002, None]}


def test_figures_drawn_by_workers_equal_figures_drawn_here(tmp_path):
    here = tmp_path / "here.png"
    draw_all([(subset_values_figure, SUBSET, here)])           # one figure: this process
    with LazyPool(2) as pool:
        assert not pool.started
        if pool.executor() is None:                           # a one-CPU or daemonic host
            return
        assert pool.started
        there = tmp_path / "there.png"
        draw_all([(subset_values_figure, SUBSET, there)], pool)   # started: the workers
    assert here.read_bytes() == there.read_bytes()


def test_a_pool_of_one_runs_nothing_in_processes():
    pool = LazyPool(1)
    assert not pool.allowed and pool.executor() is None and not pool.started


def test_a_drawing_error_in_a_worker_reaches_the_caller(tmp_path):
    with LazyPool(2) as pool:
        if pool.executor() is None:
            return
        bad = {"names": ["M"], "values": [1.0]}                  # no "std"
        try:
            draw_all([(subset_values_figure, bad, tmp_path / "x.png")], pool)
        except KeyError as err:
            assert "std" in str(err)
        else:
            raise AssertionError("the worker's error was lost")


def test_workers_start_with_the_pools_environment():
    import os
    with LazyPool(2, {"RIGTOOL_ENGINE_THREADS": "2"}) as pool:
        ex = pool.executor()
        if ex is None:
            return
        assert ex.submit(os.getenv, "RIGTOOL_ENGINE_THREADS").result() == "2"


def test_a_prestarted_pool_is_warm_and_runs_jobs(tmp_path):
    """prestart() launches the fork server (its preload imported there, not here); the pool
    is then warm, so a few figures go to workers, drawn as this process draws them."""
    with LazyPool(2, preload=("rigtool.report.plots_subset",)) as pool:
        pool.prestart()
        if not pool.allowed:                                  # a one-CPU or daemonic host
            return
        assert pool.warm and not pool.started
        calls = [(subset_values_figure, SUBSET, tmp_path / f"{i}.png") for i in range(2)]
        draw_all(calls, pool)                                  # warm and several: workers
        assert pool.started
    draw_all([(subset_values_figure, SUBSET, tmp_path / "here.png")])
    assert (tmp_path / "0.png").read_bytes() == (tmp_path / "here.png").read_bytes()


def test_a_pool_of_one_never_prestarts():
    pool = LazyPool(1, preload=("rigtool.report.plots_subset",))
    pool.prestart()
    assert not pool.warm


def test_figures_drawn_early_come_back_as_drawn_here(tmp_path):
    """A run's posture figures are drawn in one worker while its later stages run
    (start_posture_figures); their PNG bytes come back equal to a drawing in this process."""
    from rigtool.report.figures import DrawnEarly, _pngs
    other = dict(SUBSET, values=[80.0, 1.0, None])
    with LazyPool(2, preload=("rigtool.report.plots_subset",)) as pool:
        pool.prestart()
        if not pool.allowed:                                  # a one-CPU or daemonic host
            return
        job = pool.executor().submit(_pngs, [(subset_values_figure, SUBSET),
                                             (subset_values_figure, other)])
        early = DrawnEarly({"a.png": 0, "b.png": 1}, job, [])
        got = early.png("b.png")
    subset_values_figure(other, tmp_path / "b.png")
    assert got == (tmp_path / "b.png").read_bytes()
    assert got != early.png("a.png")


def test_a_background_load_that_fails_is_silent(capfd):
    """A command's warm-up thread (rigtool.background.load_in_background) runs its load;
    when the load raises, nothing reaches the user's terminal (the fit that follows makes
    the same call and reports its own error)."""
    from rigtool.background import load_in_background
    done = []
    load_in_background(done.append, 1, name="ok").join()
    assert done == [1]

    def broken():
        raise RuntimeError("no compiled code here")

    load_in_background(broken, name="broken").join()
    out, err = capfd.readouterr()
    assert "Traceback" not in err and "no compiled code" not in err
