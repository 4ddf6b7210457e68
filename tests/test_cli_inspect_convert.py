"""``rigtool inspect`` and ``rigtool convert`` through the command line (exit codes, output)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rigtool.cli import main
from rigtool.mocap import FORMATS, MarkerData, read_capture, write_capture


@pytest.fixture
def data() -> MarkerData:
    rng = np.random.default_rng(11)
    xyz = rng.uniform(-1.5, 1.5, size=(200, 3, 3))
    xyz[10:20, 1] = np.nan  # one gap of 10 frames
    xyz[50:53, 1] = np.nan  # and one of 3
    xyz[0:2, 2] = np.nan
    return MarkerData(time_s=np.arange(200) / 100.0, names=("rig:P1", "P2", "P3"),
                      xyz_m=xyz, rate_hz=100.0, first_frame=5)


@pytest.fixture
def c3d_file(tmp_path, data) -> Path:
    p = tmp_path / "capture.c3d"
    write_capture(data, p, format="c3d", units="mm")
    return p


def test_inspect_json(c3d_file, capsys):
    assert main(["inspect", "--json", str(c3d_file)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {k: out[k] for k in ("format", "rate_hz", "n_frames", "first_frame", "units",
                                "markers", "missing")} == {
        "format": "c3d", "rate_hz": 100.0, "n_frames": 200, "first_frame": 5, "units": "mm",
        "markers": ["rig:P1", "P2", "P3"], "missing": {"rig:P1": 0, "P2": 13, "P3": 2}}
    assert out["duration_s"] == pytest.approx(2.0) and len(out["sha256"]) == 64


def test_inspect_table(c3d_file, capsys):
    assert main(["inspect", str(c3d_file)]) == 0
    text = capsys.readouterr().out
    assert "c3d, 100 Hz, 200 frames (2.000 s), first frame 5, units mm" in text
    assert "3 markers, 2 with missing frames" in text
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines()[3:]}
    assert rows["rig:P1"] == ["0", "0", "-"]
    assert rows["P2"] == ["13", "2", "10", "fr"]
    assert rows["P3"] == ["2", "1", "2", "fr"]


def test_inspect_missing_file(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "nope.c3d")]) == 2
    err = capsys.readouterr().err
    assert "nope.c3d: capture file not found" in err and "Traceback" not in err


def test_inspect_units_for_file_without_units(tmp_path, capsys):
    p = tmp_path / "plain.csv"
    p.write_text("time,A_x,A_y,A_z\n0,1,2,3\n0.01,1,2,3\n")
    # a plain CSV from rigtool is in metres; check --units is accepted and reported
    code = main(["inspect", "--json", "--units", "m", str(p)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["markers"] == ["A"]


def test_convert_c3d_to_plain_csv(c3d_file, tmp_path, data, capsys):
    out = tmp_path / "out.csv"
    assert main(["convert", str(c3d_file), "-o", str(out)]) == 0
    assert f"wrote {out}: plain-csv, 3 markers, 200 frames" in capsys.readouterr().out
    lines = out.read_text().splitlines()
    assert lines[0] == "time," + ",".join(f"{m}_{a}" for m in data.names for a in "xyz")
    assert lines[1].split(",")[0] == "0.000000000" and lines[1].endswith(",,,")  # P3 missing
    back = read_capture(out)
    assert back.format == "plain-csv" and back.names == data.names
    np.testing.assert_allclose(back.time_s, data.time_s, atol=1e-9)
    # C3D stores float32 mm: relative 2^-24 of 1500 mm, plus the CSV's 1 nm rounding
    np.testing.assert_allclose(back.xyz_m, data.xyz_m, atol=1.5 * 2.0 ** -23 + 1e-9)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "c3d"])
def test_convert_every_text_format(tmp_path, data, fmt, capsys):
    src = tmp_path / f"src.{fmt}"
    write_capture(data, src, format=fmt, units="mm")
    out = tmp_path / "out.csv"
    assert main(["convert", str(src), "-o", str(out)]) == 0, capsys.readouterr().err
    before, after = read_capture(src), read_capture(out)
    assert before.format == fmt and after.names == before.names
    np.testing.assert_allclose(after.xyz_m, before.xyz_m, atol=1e-9)


def test_convert_to_c3d_format(c3d_file, tmp_path, data):
    out = tmp_path / "again.c3d"
    assert main(["convert", str(c3d_file), "-o", str(out), "--format", "c3d",
                 "--out-units", "m"]) == 0
    back = read_capture(out)
    assert back.units == "m" and back.first_frame == 5
    np.testing.assert_allclose(back.xyz_m, data.xyz_m, rtol=2.0 ** -22)


def test_convert_refuses_to_overwrite_input(c3d_file, capsys):
    other_spelling = c3d_file.parent / "." / c3d_file.name
    before = c3d_file.read_bytes()
    assert main(["convert", str(c3d_file), "-o", str(other_spelling), "--force"]) == 2
    assert "refusing to write over the input capture" in capsys.readouterr().err
    assert c3d_file.read_bytes() == before


def test_convert_refuses_existing_output_without_force(c3d_file, tmp_path, capsys):
    out = tmp_path / "out.csv"
    out.write_text("keep me")
    assert main(["convert", str(c3d_file), "-o", str(out)]) == 2
    assert "the output file exists; pass --force to replace it" in capsys.readouterr().err
    assert out.read_text() == "keep me"
    assert main(["convert", str(c3d_file), "-o", str(out), "--force"]) == 0
    assert out.read_text().startswith("time,")


def test_convert_bad_input_exit_2(tmp_path, capsys):
    junk = tmp_path / "junk.c3d"
    junk.write_bytes(bytes([2, 0x50]) + b"\x07" * 3000)
    assert main(["convert", str(junk), "-o", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rigtool convert: error: ") and "junk.c3d" in err
    assert "corrupt C3D file" in err and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()


def test_console_script(c3d_file):
    exe = shutil.which("rigtool")
    cmd = [exe] if exe else [sys.executable, "-m", "rigtool.cli"]
    proc = subprocess.run(cmd + ["inspect", "--json", str(c3d_file)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["markers"] == ["rig:P1", "P2", "P3"]


def test_console_script_ends_with_the_status_and_every_line(c3d_file, tmp_path):
    """The console script ends the process without the interpreter's finalisation
    (rigtool.cli.end_process): its status and everything it printed to a pipe still
    arrive, on success and on an error."""
    cmd = [sys.executable, "-m", "rigtool.cli"]
    here = subprocess.run(cmd + ["inspect", "--json", str(c3d_file)], capture_output=True,
                          text=True, timeout=60)
    assert here.returncode == 0 and json.loads(here.stdout)["markers"] == ["rig:P1", "P2", "P3"]
    missing = subprocess.run(cmd + ["inspect", str(tmp_path / "none.c3d")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2
    assert "none.c3d" in missing.stderr and "Traceback" not in missing.stderr


def test_console_script_runs_blas_on_one_thread_unless_told():
    """The console script sets BLAS's threads (rigtool.cli.BLAS_THREADS) before NumPy is
    imported, for its process and the workers it starts; a value the user set stands."""
    code = ("import os, rigtool.cli as c; c.main = lambda: print(os.environ['OPENBLAS_NUM_"
            "THREADS'], os.environ['MKL_NUM_THREADS'], 'numpy' in __import__('sys').modules) "
            "or 0; c.console()")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=60, env=env)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.split() == ["1", "1", "False"]
    told = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**env, "OPENBLAS_NUM_THREADS": "2"})
    assert told.stdout.split() == ["2", "1", "False"]
