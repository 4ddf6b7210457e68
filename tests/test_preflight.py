"""Broken sessions, rig files and captures fail before any fit: exit 2, one message naming
the file and the field, no internal error.

Every case copies the bundled demo, breaks one thing, and runs the command in-process with
the fitting pipeline replaced by a function that fails the test if it is ever reached.
"""

from __future__ import annotations

import multiprocessing
import pickle
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from rigtool.sim.true_calibration import write_true_calibration
from rigtool.cli import main
from rigtool.errors import InputError, RigtoolError
from rigtool.mocap import read_capture, write_capture
from rigtool.pipeline.preflight import PreflightError, check_rig, check_session

ROOT = Path(__file__).resolve().parents[1]
TRUTH_RIG = ROOT / "calibration" / "paper-rig.truth.json"


def _calibrated_rig(src: Path, dst: Path) -> None:
    """A rig file with calibrated values (the simulator's truth): what preflight needs."""
    write_true_calibration(src, TRUTH_RIG, dst)


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A copy of the demo with a calibrated rig; fitting is forbidden."""
    shutil.copytree(ROOT / "calibration", tmp_path / "calibration",
                    ignore=shutil.ignore_patterns("*.calibrated.toml"))
    shutil.copytree(ROOT / "captures", tmp_path / "captures",
                    ignore=shutil.ignore_patterns("results"))
    _calibrated_rig(tmp_path / "calibration" / "paper-rig.toml",
                    tmp_path / "calibration" / "paper-rig.calibrated.toml")

    def no_fit(*args, **kwargs):
        raise AssertionError("a fit started although the inputs are broken")

    import rigtool.pipeline.calibration as pc
    import rigtool.pipeline.session as ps
    monkeypatch.setattr(ps, "run_session", no_fit)
    monkeypatch.setattr(pc, "run_calibration", no_fit)
    return tmp_path


def _session(demo: Path) -> Path:
    return demo / "captures" / "two-link" / "session.toml"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _run(args: list[str], capsys) -> str:
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "internal error" not in err and "Traceback" not in err
    assert err.count(": error:") == 1                      # one message
    return err


def test_the_intact_demo_passes(demo):
    session = check_session(_session(demo))
    assert len(session.postures) == 3


def test_missing_capture_names_manifest_field_and_path(demo, capsys):
    _edit(_session(demo), 'capture = "posture2.csv"', 'capture = "nope.csv"')
    err = _run(["run", str(_session(demo))], capsys)
    assert "postures[1].capture" in err and "nope.csv" in err and "not found" in err
    assert "session.toml" in err


def test_wrong_format(demo, capsys):
    (demo / "captures" / "two-link" / "posture1.csv").write_text("hello\nworld\n")
    err = _run(["run", str(_session(demo))], capsys)
    assert "postures[0].capture" in err and "not a supported motion-capture export" in err


def test_empty_capture(demo, capsys):
    (demo / "captures" / "two-link" / "posture3.csv").write_bytes(b"")
    err = _run(["run", str(_session(demo))], capsys)
    assert "postures[2].capture" in err and "empty" in err


def test_unknown_marker(demo, capsys):
    _edit(_session(demo), "A1 = [", "Z9 = [")
    err = _run(["run", str(_session(demo))], capsys)
    assert "link 'link1'" in err and "Z9" in err and "not in the capture" in err


def test_link_with_all_markers_missing(demo, capsys):
    cap = demo / "captures" / "two-link" / "posture1.csv"
    data = read_capture(cap)
    keep = [i for i, n in enumerate(data.names) if not n.split(":")[-1].startswith("A")]
    from dataclasses import replace
    write_capture(replace(data, names=tuple(data.names[i] for i in keep),
                          xyz_m=data.xyz_m[:, keep]), cap, format="vicon-csv")
    err = _run(["run", str(_session(demo))], capsys)
    assert "postures[0].capture" in err and "link 'link1'" in err
    assert "A1, A2, A3, A4" in err and "not in the capture" in err


def test_window_longer_than_the_capture(demo, capsys):
    _edit(_session(demo), "window = [1.0, 11.0]", "window = [1.0, 400.0]")
    err = _run(["run", str(_session(demo))], capsys)
    assert "relative_motion.window" in err and "longer than the capture" in err


def test_window_outside_the_capture(demo, capsys):
    _edit(_session(demo), "window = [1.0, 11.0]", "window = [300.0, 310.0]")
    err = _run(["run", str(_session(demo))], capsys)
    assert "relative_motion.window" in err and "outside the capture" in err


def test_too_long_clusters_name_the_posture_field(demo, capsys):
    """Frame-clustered standard errors need 50 clusters in the window: a cluster_frames that
    leaves fewer is refused before any fit, naming the manifest and the posture's field."""
    _edit(_session(demo), 'capture = "posture1.csv"',
          'capture = "posture1.csv"\nstandard_errors = "frame"\ncluster_frames = 1000')
    err = _run(["run", str(_session(demo))], capsys)
    assert "session.toml" in err and "postures[0].cluster_frames" in err
    assert "fewer than 50" in err


def test_clusters_beside_another_kind_of_standard_errors_are_refused(demo, capsys):
    """cluster_frames sets the "frame" standard errors' clusters: beside "serial" it would be
    ignored, so it is an error naming the posture's field."""
    _edit(_session(demo), 'capture = "posture1.csv"',
          'capture = "posture1.csv"\nstandard_errors = "serial"\ncluster_frames = 10')
    err = _run(["run", str(_session(demo))], capsys)
    assert "postures[0].cluster_frames" in err and '"serial"' in err


def test_every_problem_is_reported_at_once(demo, capsys):
    _edit(_session(demo), 'capture = "posture2.csv"', 'capture = "nope.csv"')
    _edit(_session(demo), "window = [1.0, 11.0]", "window = [300.0, 310.0]")
    (demo / "captures" / "two-link" / "posture3.csv").write_bytes(b"")
    err = _run(["run", str(_session(demo))], capsys)
    assert "3 problems" in err
    for field in ("postures[1].capture", "postures[2].capture", "relative_motion.window"):
        assert field in err


def test_uncalibrated_rig_names_the_calibrate_command(demo, capsys):
    (demo / "calibration" / "paper-rig.calibrated.toml").unlink()
    err = _run(["run", str(_session(demo))], capsys)
    assert "not calibrated yet" in err and "rigtool calibrate" in err
    assert "paper-rig.toml" in err


def test_rig_file_without_calibration(demo, capsys):
    _edit(_session(demo), "paper-rig.calibrated.toml", "paper-rig.toml")
    err = _run(["run", str(_session(demo))], capsys)
    assert "not calibrated" in err and "rigtool calibrate" in err


def test_calibrate_checks_its_captures_first(demo, capsys):
    rig = demo / "calibration" / "paper-rig.toml"
    _edit(rig, 'capture = "paper-rig/empty.csv"', 'capture = "paper-rig/missing.csv"')
    (demo / "calibration" / "paper-rig" / "both.csv").write_text("not a capture\n")
    err = _run(["calibrate", str(rig), "-o", str(demo / "out.toml")], capsys)
    assert "2 problems" in err
    assert "calibration_captures[0].capture" in err and "missing.csv" in err
    assert "calibration_captures[3].capture" in err
    with pytest.raises(PreflightError):
        check_rig(rig)


def _read_missing(path: str):
    return read_capture(path)


def test_errors_cross_a_worker_process_unchanged(tmp_path):
    """Posture fits run in spawned workers: an error raised there is pickled back; the user
    must read the same message as in the main process."""
    missing = str(tmp_path / "absent.csv")
    with pytest.raises(InputError) as here:
        read_capture(missing)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with pytest.raises(InputError) as there:
            pool.submit(_read_missing, missing).result()
    assert str(there.value) == str(here.value)
    pre = PreflightError(["a.csv, field 'postures[0].capture': capture file not found"], "s")
    back = pickle.loads(pickle.dumps(pre))
    assert isinstance(back, RigtoolError) and str(back) == str(pre)
    assert back.problems == pre.problems


def test_markers_seen_in_no_frame_count_as_missing(demo, capsys):
    cap = demo / "captures" / "two-link" / "posture2.csv"
    data = read_capture(cap)
    xyz = data.xyz_m.copy()
    for i, n in enumerate(data.names):
        if n.split(":")[-1] in ("T1", "T2"):
            xyz[:, i] = np.nan
    from dataclasses import replace
    write_capture(replace(data, xyz_m=xyz), cap, format="vicon-csv")
    err = _run(["run", str(_session(demo))], capsys)
    assert "link 'link0'" in err and "found 2" in err and "never seen: T1, T2" in err


def test_window_end_within_one_frame_of_the_capture_end_means_the_end(demo):
    """``window = [1, 12]`` on a capture whose last frame is one period before 12 s: the
    run goes on, and the relative-motion stage's note says what the window was taken as."""
    swing = read_capture(demo / "captures" / "two-link" / "swing.csv")
    end = float(swing.time_s[-1]) + 1.0 / swing.rate_hz
    _edit(_session(demo), "window = [1.0, 11.0]", f"window = [1.0, {end!r}]")
    session = check_session(_session(demo))
    assert session.relative_motion.window[1] == end


def test_window_end_more_than_one_frame_past_the_end_is_refused(demo, capsys):
    swing = read_capture(demo / "captures" / "two-link" / "swing.csv")
    end = float(swing.time_s[-1]) + 1.5 / swing.rate_hz
    _edit(_session(demo), "window = [1.0, 11.0]", f"window = [1.0, {end!r}]")
    err = _run(["run", str(_session(demo))], capsys)
    assert "relative_motion.window" in err and "by more than one frame period" in err
