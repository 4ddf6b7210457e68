"""The calibration's captures prepared in a worker process (``rigtool calibrate`` starts it
before importing its fits): the same captures as prepared in the command's own process,
and a worker that fails for a reason of its own costs only the time."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from rigtool.config import FilterSettings, load_rig
from rigtool.errors import InputError
from rigtool.pipeline.calibration_captures import (prepare_captures, prepared_captures,
                                                   start_preparing)
from rigtool.pipeline.workers import CALIBRATION_PRELOAD
from rigtool.process_pool import LazyPool

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rigfile():
    return load_rig(ROOT / "calibration" / "paper-rig.toml")


def _same(a, b) -> None:
    caps_a, inputs_a, datas_a = a
    caps_b, inputs_b, datas_b = b
    assert inputs_a == inputs_b
    assert [c.name for c in caps_a] == [c.name for c in caps_b]
    for ca, cb in zip(caps_a, caps_b):
        np.testing.assert_array_equal(ca.accel_lab, cb.accel_lab)
        np.testing.assert_array_equal(ca.load.pi, cb.load.pi)
        assert len(ca.noise_probes) == len(cb.noise_probes)
        for pa, pb in zip(ca.noise_probes, cb.noise_probes):
            np.testing.assert_array_equal(pa.omega_dot_body, pb.omega_dot_body)
    for da, db in zip(datas_a, datas_b):
        np.testing.assert_array_equal(da.xyz_m, db.xyz_m)


def test_captures_prepared_in_a_worker_equal_those_prepared_here(rigfile):
    settings = FilterSettings()
    here = prepare_captures(rigfile, settings)
    with LazyPool(2, preload=CALIBRATION_PRELOAD) as pool:
        pool.prestart()
        job = start_preparing(rigfile, settings, compensate=True, pool=pool)
        if not pool.allowed:                        # a one-CPU or daemonic host
            assert job is None
            return
        assert job is not None
        _same(prepared_captures(job, rigfile, settings), here)


def test_a_failed_worker_is_done_again_here_and_an_input_error_is_reported(rigfile):
    settings = FilterSettings()
    lost = Future()
    lost.set_exception(RuntimeError("a worker process died"))
    _same(prepared_captures(lost, rigfile, settings), prepare_captures(rigfile, settings))
    bad = Future()
    bad.set_exception(InputError("expected a capture", field="capture"))
    with pytest.raises(InputError, match="expected a capture"):
        prepared_captures(bad, rigfile, settings)
