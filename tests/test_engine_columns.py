"""Sensitivity columns split over threads (rigtool.engine.columns): the split covers every
column once, and the engines give the same tangents however many threads share them."""

import numpy as np
import pytest

from rigtool.engine import rigid
from rigtool.engine.columns import BLOCK, column_groups
from test_engine import _rigid_case


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


def test_rigid_tangents_do_not_depend_on_the_split(monkeypatch):
    rig, pi, y0 = _rigid_case()
    model = rigid.RigidModel.of(rig)
    theta = rigid.theta_of(pi, rig.stiffness, rig.free_length, rig.damping)
    rng = np.random.default_rng(3)
    d_th = rng.normal(size=(theta.size, 40)) * 1e-3
    d_y = rng.normal(size=(rigid.STATE, 40)) * 1e-3
    out = {}
    for threads in ("1", "3"):
        monkeypatch.setenv("RIGTOOL_ENGINE_THREADS", threads)
        out[threads] = rigid.simulate(model, theta, y0, 300, 1 / 120, substeps=2,
                                      tangent_theta=d_th, tangent_y0=d_y)
    np.testing.assert_array_equal(out["1"][0], out["3"][0])
    # the same arithmetic in differently sized compiled loops: equal to round-off
    scale = np.abs(out["1"][1]).max()
    np.testing.assert_allclose(out["3"][1], out["1"][1], rtol=0, atol=1e-12 * scale)
