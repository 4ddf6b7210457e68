"""C3D recordings stopped early: every declared frame count exceeds the data present.

NDI Optotrak writes the planned frame range (header 1..1149, POINT:FRAMES 1149) before it
records; a recording stopped after 29 frames leaves a file whose last byte ends the 29th frame.
The structure built here is that export's: 54 float points, POINT:SCALE -7.866, a 6-block
parameter section and the data at block 8, no TRIAL group, POINT:UNITS an array of 54 ``mm``
strings. The whole frames present are read with a note (declared 1149, present 29); data that
stop inside a frame, or a parameter section that is cut, are a truncated file.

The structure is checked with the ``c3d`` package (header words and parameters as it decodes
them), the frames against ezc3d and the ``c3d`` package: same 29 frames, same float32 values
(both decode the same bytes, so they agree with rigtool to float64 round-off of the mm -> m
scaling). Against the coordinates the file was built from: float32 storage, 2^-24 relative.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from _c3d_builder import DEC, INTEL, MIPS, build_c3d
from _c3d_reference import c3dpkg_points, ezc3d_points

from rigtool.cli import main
from rigtool.errors import FormatError
from rigtool.mocap import read_capture

N_POINTS, N_PRESENT, N_DECLARED = 54, 29, 1149
FRAME_BYTES = 16 * N_POINTS  # 4 float words per point
DATA_BLOCK = 8
SIZE = (DATA_BLOCK - 1) * 512 + N_PRESENT * FRAME_BYTES  # 28640: ends with frame 29
FLOAT_RTOL = 2.0 ** -23
NOTE = ("header says 1149 frames (1..1149), POINT:FRAMES 1149, but the data end after 29 "
        "whole frames (declared 1149, present 29): read the 29 present")
TRUNCATED = (r"truncated C3D file: 1149 frames of 54 points need 996320 bytes, the file has "
             r"{size}; ")


def _truth(n_frames: int = N_PRESENT, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(-900, 900, size=(n_frames, N_POINTS, 3))
    xyz[4:9, 3] = np.nan  # marker 4 hidden for 5 frames
    xyz[-1, 10] = np.nan  # and marker 11 in the last frame present
    return xyz


def _labels() -> list[str]:
    return [f"OPTO_{i + 1:02d}" for i in range(N_POINTS)]


def optotrak_c3d(xyz: np.ndarray, **kwargs) -> bytes:
    """The NDI Optotrak export stopped early (see the module doc); ``kwargs`` override."""
    opts = dict(scale=-7.866, rate=100.0, header_last=N_DECLARED, frames_param=N_DECLARED,
                units=tuple("mm" for _ in range(N_POINTS)), param_blocks=DATA_BLOCK - 2,
                pad_data=False)
    opts.update(kwargs)
    return build_c3d(xyz, _labels(), **opts)


def _write(tmp_path: Path, name: str, raw: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(raw)
    return p


def test_the_built_file_has_the_optotrak_structure(tmp_path):
    import c3d

    p = _write(tmp_path, "opto.c3d", optotrak_c3d(_truth()))
    assert p.stat().st_size == SIZE == 28640
    with open(p, "rb") as fh, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = c3d.Reader(fh)
        assert (r.header.first_frame, r.header.last_frame) == (1, N_DECLARED)
        assert r.header.data_block == DATA_BLOCK and r.point_used == N_POINTS
        assert r.get("POINT:FRAMES").uint16_value == N_DECLARED
        assert r.get("POINT:DATA_START").uint16_value == DATA_BLOCK
        assert r.get("POINT:SCALE").float_value == pytest.approx(-7.866, rel=1e-7)
        assert list(r.get("POINT:UNITS").string_array) == ["mm"] * N_POINTS
        assert r.get("TRIAL") is None


def test_optotrak_recording_stopped_early_reads_the_whole_frames_present(tmp_path):
    xyz = _truth()
    p = _write(tmp_path, "opto.c3d", optotrak_c3d(xyz))
    d = read_capture(p)
    assert d.format == "c3d" and d.names == tuple(_labels()) and d.units == "mm"
    assert d.n_frames == N_PRESENT and d.first_frame == 1 and d.rate_hz == 100.0
    assert d.extras["c3d"]["storage"] == "float"
    assert d.notes == (NOTE,)
    np.testing.assert_array_equal(np.isnan(d.xyz_m), np.isnan(xyz))
    np.testing.assert_allclose(d.xyz_m * 1e3, xyz, rtol=FLOAT_RTOL)
    for ref, first in (ezc3d_points(p), c3dpkg_points(p)):
        assert ref.shape == (N_PRESENT, N_POINTS, 3) and first == 1  # the same 29 frames
        np.testing.assert_array_equal(np.isnan(ref), np.isnan(xyz))
        np.testing.assert_allclose(d.xyz_m * 1e3, ref, rtol=1e-15, atol=0)


@pytest.mark.parametrize("proc", [INTEL, DEC, MIPS])
@pytest.mark.parametrize("scale", [-7.866, 0.1])
def test_the_rule_holds_for_every_processor_and_storage(tmp_path, proc, scale):
    # int16 storage: the frame is half as wide, the data still end with frame 29.
    xyz = _truth()
    p = _write(tmp_path, "opto.c3d", optotrak_c3d(xyz, proc=proc, scale=scale))
    d = read_capture(p)
    assert d.n_frames == N_PRESENT and d.notes == (NOTE,)
    np.testing.assert_array_equal(np.isnan(d.xyz_m), np.isnan(xyz))
    tol = dict(atol=scale / 2 * 1.001, rtol=0) if scale > 0 else dict(rtol=FLOAT_RTOL)
    np.testing.assert_allclose(d.xyz_m * 1e3, xyz, **tol)
    refs = [c3dpkg_points(p)] + ([ezc3d_points(p)] if proc != MIPS else [])
    for ref, _ in refs:
        assert ref.shape[0] == N_PRESENT
        np.testing.assert_allclose(d.xyz_m * 1e3, ref, rtol=1e-6, atol=1e-9)


def test_counts_that_disagree_and_all_exceed_the_data(tmp_path):
    # header 1..1149, POINT:FRAMES 1000: both past the 29 frames present; FRAMES is trusted.
    p = _write(tmp_path, "opto.c3d", optotrak_c3d(_truth(), frames_param=1000))
    d = read_capture(p)
    assert d.n_frames == N_PRESENT
    assert d.notes == ("header says 1149 frames (1..1149), POINT:FRAMES 1000, but the data end "
                       "after 29 whole frames (declared 1000, present 29): read the 29 "
                       "present",)


# --- still refused: data that stop inside a frame, a cut parameter section --------------------

CUTS = {
    # the last frame lost its last 100 bytes
    "inside the last frame": (SIZE - 100, TRUNCATED.format(size=SIZE - 100)
                              + r"the data stop inside a frame: 28 whole frames of 864 bytes, "
                                r"then 764 bytes$"),
    # one byte of the first frame
    "inside the first frame": ((DATA_BLOCK - 1) * 512 + 1, TRUNCATED.format(size=3585)
                               + r"the data stop inside a frame: 0 whole frames of 864 bytes, "
                                 r"then 1 bytes$"),
    # parameters whole, no data at all
    "before the data": ((DATA_BLOCK - 1) * 512, TRUNCATED.format(size=3584)
                        + r"the data section is empty$"),
    # inside the 6-block parameter section, after its records (they end at byte 1233)
    "inside the parameter blocks": (4 * 512, r"truncated C3D file: the parameter section "
                                             r"needs 3584 bytes, the file has 2048$"),
    # inside the records themselves
    "inside the parameter records": (1000, r"truncated C3D file: the parameter section needs "
                                           r"3584 bytes, the file has 1000$"),
}


@pytest.mark.parametrize("cut", list(CUTS))
def test_a_cut_file_is_refused(tmp_path, cut):
    size, message = CUTS[cut]
    p = _write(tmp_path, "cut.c3d", optotrak_c3d(_truth())[:size])
    with pytest.raises(FormatError, match=r"cut\.c3d: " + message):
        read_capture(p)


def test_a_file_cut_between_its_parameters_and_its_data_is_refused(tmp_path):
    # A 2-block parameter section, 4 empty blocks, the data at block 8; cut in the empty ones.
    raw = optotrak_c3d(_truth(), param_blocks=2, gap_blocks=4)
    p = _write(tmp_path, "gap.c3d", raw[:5 * 512])
    with pytest.raises(FormatError, match=r"gap\.c3d: truncated C3D file: the data start at "
                                          r"block 8 \(byte 3584\), the file has 2560 bytes$"):
        read_capture(p)


def test_block_padding_after_the_last_whole_frame_is_refused(tmp_path):
    # Zeros to the 512-byte boundary cannot be told from a frame cut at a block boundary.
    p = _write(tmp_path, "pad.c3d", optotrak_c3d(_truth(), pad_data=True))
    assert p.stat().st_size == 28672
    with pytest.raises(FormatError, match=r"pad\.c3d: " + TRUNCATED.format(size=28672)
                       + r"the data stop inside a frame: 29 whole frames of 864 bytes, "
                         r"then 32 bytes$"):
        read_capture(p)


# --- the command line ------------------------------------------------------------------------

def test_inspect_and_convert_report_the_note(tmp_path, capsys):
    xyz = _truth()
    p = _write(tmp_path, "opto.c3d", optotrak_c3d(xyz))
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr()
    assert f"{p}: c3d, 100 Hz, 29 frames (0.290 s), first frame 1, units mm" in out.out
    assert f"note: {NOTE}" in out.out.splitlines() and out.err == ""
    assert main(["inspect", "--json", str(p)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_frames"] == N_PRESENT and summary["notes"] == [NOTE]
    csv = tmp_path / "opto.csv"
    assert main(["convert", str(p), "-o", str(csv)]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        f"wrote {csv}: plain-csv, 54 markers, 29 frames at 100 Hz (from c3d {p})",
        f"note: {NOTE}"] and out.err == ""
    back = read_capture(csv)
    assert back.n_frames == N_PRESENT and back.names == tuple(_labels())
    np.testing.assert_allclose(back.xyz_m * 1e3, xyz, rtol=FLOAT_RTOL, atol=1e-6)  # 1 nm cells


@pytest.mark.parametrize("command", ["inspect", "convert"])
def test_a_frame_cut_midway_exits_2_with_one_message(tmp_path, capsys, command):
    p = _write(tmp_path, "cut.c3d", optotrak_c3d(_truth())[:SIZE - 100])
    out_csv = tmp_path / "o.csv"
    args = [command, str(p)] + (["-o", str(out_csv)] if command == "convert" else [])
    assert main(args) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1
    assert out.err == (f"rigtool {command}: error: {p}: truncated C3D file: 1149 frames of 54 "
                       f"points need 996320 bytes, the file has 28540; the data stop inside a "
                       f"frame: 28 whole frames of 864 bytes, then 764 bytes\n")
    assert not out_csv.exists()


def test_through_the_process_exit_status(tmp_path):
    import os
    import subprocess
    import sys

    import rigtool

    env = dict(os.environ, PYTHONPATH=str(Path(rigtool.__file__).parents[1]))  # this rigtool
    cmd = [sys.executable, "-m", "rigtool.cli"]
    good = _write(tmp_path, "opto.c3d", optotrak_c3d(_truth()))
    cut = _write(tmp_path, "cut.c3d", optotrak_c3d(_truth())[:SIZE - 100])
    ok = subprocess.run(cmd + ["convert", str(good), "-o", str(tmp_path / "o.csv")],
                        capture_output=True, text=True, timeout=120, env=env)
    assert ok.returncode == 0 and ok.stderr == "" and f"note: {NOTE}\n" in ok.stdout
    bad = subprocess.run(cmd + ["inspect", str(cut)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith(
        f"rigtool inspect: error: {cut}: truncated C3D file: ")
