"""C3D files other labs' systems write, and their bad twins.

One test (or parametrised family) per exporter quirk, each built by ``_c3d_builder`` with the
exact structure described, read by rigtool and, where they can, by ezc3d and the ``c3d``
package as independent references:

1. Qualisys QTM: parameter and group names with spaces.
2. DEC (processor 85) int16 files whose parameter block count, header word 9 or
   POINT:DATA_START disagree with where the data really start.
3. Optotrak-style headers: a first/last frame range that disagrees with POINT:FRAMES and the
   file, ranges that wrap past 65535, frame counts past 65535 (TRIAL, LONG_FRAMES).
4. SGI/MIPS (processor 86) big-endian files, also with little-endian record-length words.

Tolerances: float32 storage is exact to 2^-24 relative; int16 storage to half a quantum.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _c3d_builder import DEC, INTEL, MIPS, build_c3d
from _c3d_reference import c3dpkg_points, ezc3d_points

from rigtool.cli import main
from rigtool.errors import FormatError
from rigtool.mocap import read_capture

SCALE = 0.1  # mm per int16 step
INT_TOL_MM = SCALE / 2 * 1.001
FLOAT_RTOL = 2.0 ** -23


def _truth(n_frames: int, n_points: int, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(-900, 900, size=(n_frames, n_points, 3))
    xyz[2:5, 0] = np.nan  # a gap of 3 frames in the first marker
    return xyz


def _write(tmp_path: Path, name: str, raw: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(raw)
    return p


def _labels(n: int) -> list[str]:
    return [f"M{i + 1}" for i in range(n)]


def _check(d, xyz_mm: np.ndarray, *, integer: bool) -> None:
    np.testing.assert_array_equal(np.isnan(d.xyz_m), np.isnan(xyz_mm))
    if integer:
        np.testing.assert_allclose(d.xyz_m * 1e3, xyz_mm, atol=INT_TOL_MM, rtol=0)
    else:
        np.testing.assert_allclose(d.xyz_m * 1e3, xyz_mm, rtol=FLOAT_RTOL)


# --- 1. Qualisys QTM: names with spaces ------------------------------------------------------

def test_qtm_parameter_and_group_names_with_spaces(tmp_path):
    xyz = _truth(30, 4)
    extra = {"POINT": {"Uncropped Measurement Length": 30, "Frame Rate Origin": "camera"},
             "QTM INFO": {"Software Version": "2.17", "Marker Size": 12.5}}
    p = _write(tmp_path, "qtm.c3d", build_c3d(xyz, _labels(4), extra=extra, rate=200.0))
    d = read_capture(p)
    assert d.names == tuple(_labels(4)) and d.n_frames == 30 and d.rate_hz == 200.0
    assert d.missing_counts()["M1"] == 3 and d.notes == ()
    _check(d, xyz, integer=False)
    for ref, _ in (ezc3d_points(p), c3dpkg_points(p)):
        np.testing.assert_allclose(d.xyz_m * 1e3, ref, rtol=FLOAT_RTOL)


def test_name_with_a_control_byte_is_still_refused(tmp_path):
    p = _write(tmp_path, "bad.c3d", build_c3d(_truth(5, 2), _labels(2),
                                              extra={"POINT": {"BAD\x01NAME": 1}}))
    with pytest.raises(FormatError, match=r"bad\.c3d: corrupt C3D file: a parameter or group "
                                          r"name holds non-printable bytes"):
        read_capture(p)


# --- 2. DEC processor, int16 data ------------------------------------------------------------

DEC_LAYOUTS = {
    # the parameter header declares 3 blocks more than its records fill; data right after
    "overstated blocks": (dict(spare_param_blocks=3), "the parameter section declares 4 "
                          "blocks but its records end in block 2; the data start at block 3"),
    # empty blocks between parameters and data; header and POINT:DATA_START agree
    "late data": (dict(gap_blocks=2), None),
    # header word 9 points into the parameters; POINT:DATA_START is right
    "stale header word": (dict(header_data_start=2), "header says the data start at block 2, "
                          "inside the parameters; POINT:DATA_START 3: used 3"),
    # POINT:DATA_START stale, header right (both libraries read from the header too)
    "stale parameter": (dict(data_start_param=7), "header says the data start at block 3, "
                        "POINT:DATA_START 7: used 3"),
}


@pytest.mark.parametrize("layout", list(DEC_LAYOUTS))
def test_dec_int16_files(tmp_path, layout):
    kwargs, note = DEC_LAYOUTS[layout]
    xyz = _truth(200, 3)
    p = _write(tmp_path, "dec.c3d", build_c3d(xyz, ["A", "B", "C"], proc=DEC, scale=SCALE,
                                              rate=120.0, first_frame=11, **kwargs))
    d = read_capture(p)
    assert d.extras["c3d"] == {"processor": "dec", "storage": "integer",
                               "scale": pytest.approx(SCALE, rel=1e-7), "reader": "rigtool"}
    assert d.rate_hz == 120.0 and d.first_frame == 11 and d.n_frames == 200
    assert d.notes == ((note,) if note else ())
    _check(d, xyz, integer=True)
    if layout in ("overstated blocks", "late data", "stale parameter"):
        ref, first = ezc3d_points(p)  # ezc3d reads from the header's data block
        assert first == 11
        np.testing.assert_allclose(d.xyz_m * 1e3, ref, rtol=1e-6)
    if layout in ("late data", "stale parameter"):
        np.testing.assert_allclose(d.xyz_m * 1e3, c3dpkg_points(p)[0][:200], rtol=1e-6)


def test_dec_float_header_numbers(tmp_path):
    # Header scale and rate are DEC floats too: 1/3 Hz steps would show a wrong exponent.
    xyz = _truth(6, 2)
    p = _write(tmp_path, "decf.c3d", build_c3d(xyz, ["A", "B"], proc=DEC, rate=240.0))
    d = read_capture(p)
    assert d.rate_hz == 240.0 and d.extras["c3d"]["storage"] == "float"
    _check(d, xyz, integer=False)


def test_data_start_inside_the_parameters_is_refused(tmp_path):
    raw = build_c3d(_truth(5, 2), ["A", "B"], proc=DEC, scale=SCALE, header_data_start=2,
                    data_start_param=2)
    with pytest.raises(FormatError, match=r"dec\.c3d: corrupt C3D file: the data section "
                                          r"starts inside the header or parameter section "
                                          r"\(found 2\)"):
        read_capture(_write(tmp_path, "dec.c3d", raw))


# --- 3. Header frame ranges: inconsistent, wrapped, past 65535 --------------------------------

def test_optotrak_header_range_disagrees_with_point_frames(tmp_path):
    # NDI Optotrak: 54 points in per-point units; the header says frames 1..1149, the
    # parameters and the file say 29.
    xyz = _truth(29, 54)
    units = tuple("mm" for _ in range(54))
    p = _write(tmp_path, "opto.c3d", build_c3d(xyz, _labels(54), header_last=1149,
                                               units=units, rate=100.0))
    d = read_capture(p)
    assert d.n_frames == 29 and len(d.names) == 54 and d.units == "mm"
    assert d.missing_counts()["M1"] == 3 and d.first_frame == 1
    assert d.notes == ("header says 1149 frames (1..1149), POINT:FRAMES 29, file holds 29: "
                       "used 29",)
    _check(d, xyz, integer=False)
    np.testing.assert_allclose(d.xyz_m * 1e3, ezc3d_points(p)[0], rtol=FLOAT_RTOL)
    # the c3d package reads on into the block padding; its first 29 frames are these
    np.testing.assert_allclose(d.xyz_m * 1e3, c3dpkg_points(p)[0][:29], rtol=FLOAT_RTOL)


@pytest.mark.parametrize("proc", [INTEL, MIPS])
@pytest.mark.parametrize("frames_param", [None, "omit"])
def test_header_range_that_wraps_past_65535(tmp_path, proc, frames_param):
    xyz = _truth(40, 2)
    p = _write(tmp_path, "wrap.c3d", build_c3d(xyz, ["A", "B"], proc=proc, first_frame=65520,
                                               frames_param=frames_param))
    d = read_capture(p)
    assert d.n_frames == 40 and d.first_frame == 65520
    said = "POINT:FRAMES 40, " if frames_param is None else ""
    assert d.notes == (f"header says 40 frames (65520..23, wrapped past 65535), {said}"
                       "file holds 40: used 40",)
    _check(d, xyz, integer=False)
    if proc == INTEL and frames_param is None:
        np.testing.assert_allclose(d.xyz_m * 1e3, ezc3d_points(p)[0], rtol=FLOAT_RTOL)


def test_stale_point_frames_gives_way_to_the_header_the_file_agrees_with(tmp_path):
    xyz = _truth(29, 3)
    p = _write(tmp_path, "stale.c3d", build_c3d(xyz, ["A", "B", "C"], frames_param=1149))
    d = read_capture(p)
    assert d.n_frames == 29
    assert d.notes == ("header says 29 frames (1..29), POINT:FRAMES 1149, file holds 29: "
                       "used 29",)
    _check(d, xyz, integer=False)


@pytest.mark.parametrize("how", ["trial", "long_frames", "float_frames"])
def test_more_than_65535_frames(tmp_path, how):
    n = 70000
    xyz = np.tile(np.array([[[1.0, 2.0, 3.0]]]), (n, 1, 1)) * np.arange(n)[:, None, None]
    extra = {"trial": {"TRIAL": {"ACTUAL_START_FIELD": np.array([5, 0]),
                                 "ACTUAL_END_FIELD": np.array([(n + 4) & 0xFFFF, (n + 4) >> 16])}},
             "long_frames": {"POINT": {"LONG_FRAMES": float(n)}},
             "float_frames": {}}[how]
    frames_param = float(n) if how == "float_frames" else 65535
    p = _write(tmp_path, "long.c3d", build_c3d(xyz, ["A"], first_frame=5, extra=extra,
                                               frames_param=frames_param))
    d = read_capture(p)
    assert d.n_frames == n and d.first_frame == 5
    np.testing.assert_allclose(d.xyz_m[-1, 0], np.array([1.0, 2.0, 3.0]) * (n - 1) * 1e-3,
                               rtol=FLOAT_RTOL)
    if how == "trial":  # the c3d package takes the last frame from ACTUAL_END_FIELD too
        np.testing.assert_allclose(d.xyz_m * 1e3, c3dpkg_points(p)[0][:n], rtol=FLOAT_RTOL)


def test_truncated_file_is_still_refused_when_no_count_fits(tmp_path):
    raw = build_c3d(_truth(29, 54), _labels(54), header_last=1149, frames_param=1149)
    with pytest.raises(FormatError, match=r"t\.c3d: truncated C3D file: 1149 frames of 54 "
                                          r"points need \d+ bytes, the file has \d+"):
        read_capture(_write(tmp_path, "t.c3d", raw))


# --- 4. SGI/MIPS big-endian ------------------------------------------------------------------

@pytest.mark.parametrize("scale", [-1.0, SCALE])
@pytest.mark.parametrize("swapped", [False, True])
def test_big_endian_files(tmp_path, scale, swapped):
    xyz = _truth(33, 6)
    extra = {"POINT": {"LABELS2": ("E", "LAngle"), "ANGLES": ("LAngle",)}}
    p = _write(tmp_path, "sgi.c3d", build_c3d(xyz, ["A", "B", "C", "D"], proc=MIPS,
                                              scale=scale, rate=50.0, extra=extra,
                                              first_frame=7, swapped_lengths=swapped))
    d = read_capture(p)
    assert d.names == ("A", "B", "C", "D", "E") and d.rate_hz == 50.0
    assert d.first_frame == 7 and d.n_frames == 33
    assert d.extras["model_outputs"]["names"] == ["LAngle"]
    assert d.notes == (("parameter record lengths are stored in the other byte order than the "
                        "processor type says; read them that way",) if swapped else ())
    integer = scale > 0
    np.testing.assert_array_equal(np.isnan(d.xyz_m), np.isnan(xyz[:, :5]))
    tol = dict(atol=INT_TOL_MM, rtol=0) if integer else dict(rtol=FLOAT_RTOL)
    np.testing.assert_allclose(d.xyz_m * 1e3, xyz[:, :5], **tol)
    np.testing.assert_allclose(d.extras["model_outputs"]["values"][:, 0], xyz[:, 5], **tol)
    if not swapped:
        np.testing.assert_allclose(d.xyz_m * 1e3, c3dpkg_points(p)[0][:33, :5], rtol=1e-6)


def test_record_length_that_points_nowhere_in_either_byte_order_is_refused(tmp_path):
    raw = bytearray(build_c3d(_truth(5, 2), ["A", "B"], proc=MIPS))
    # POINT group record: 5, -1, "POINT", length word, description length 0; then the next
    # record's name length, group id and name.
    pos = 512 + 4
    raw[pos + 7:pos + 9] = b"\x7f\x7f"  # 32639 in both byte orders: past the section
    raw[pos + 10 + 2] = 0x01  # the next record's name starts with a control byte
    with pytest.raises(FormatError, match=r"m\.c3d: corrupt C3D file: parameter record "
                                          r"'POINT' has an impossible length \(found 32639\)"):
        read_capture(_write(tmp_path, "m.c3d", bytes(raw)))


# --- rigtool inspect reports what it reconciled ----------------------------------------------

def test_inspect_reports_notes_not_errors(tmp_path, capsys):
    p = _write(tmp_path, "opto.c3d", build_c3d(_truth(29, 54), _labels(54), header_last=1149))
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr()
    assert "note: header says 1149 frames (1..1149), POINT:FRAMES 29, file holds 29: used 29" \
        in out.out and out.err == ""
    assert main(["inspect", "--json", str(p)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_frames"] == 29 and summary["notes"] == [
        "header says 1149 frames (1..1149), POINT:FRAMES 29, file holds 29: used 29"]


# --- analog samples between the frames ------------------------------------------------------

@pytest.mark.parametrize("proc", [INTEL, DEC, MIPS])
@pytest.mark.parametrize("scale", [-1.0, SCALE])
def test_analog_samples_after_each_frame_are_skipped(tmp_path, proc, scale):
    xyz = _truth(20, 3)
    analog = np.random.default_rng(2).uniform(-1000, 1000, size=(20, 10, 4))  # 10 per frame
    p = _write(tmp_path, "an.c3d", build_c3d(xyz, ["A", "B", "C"], proc=proc, scale=scale,
                                             analog=analog))
    d = read_capture(p)
    assert d.n_frames == 20 and d.notes == ()
    _check(d, xyz, integer=scale > 0)
    refs = [c3dpkg_points(p)] + ([ezc3d_points(p)] if proc != MIPS else [])
    for ref, _ in refs:
        np.testing.assert_allclose(d.xyz_m * 1e3, ref[:20], rtol=1e-6)


def test_a_negative_point_count_is_refused(tmp_path):
    p = _write(tmp_path, "neg.c3d", build_c3d(_truth(5, 2), ["A", "B"],
                                              extra={"POINT": {"USED": -2.0}}))
    with pytest.raises(FormatError, match=r"neg\.c3d: corrupt C3D file: POINT:USED is not a "
                                          r"count \(found -2\.0\)"):
        read_capture(p)


def test_scale_stored_as_an_integer_parameter(tmp_path):
    # POINT:SCALE written as int16 -1 (float storage): read signed, not as the count 65535.
    xyz = _truth(8, 2)
    p = _write(tmp_path, "s.c3d", build_c3d(xyz, ["A", "B"], extra={"POINT": {"SCALE": -1}}))
    d = read_capture(p)
    assert d.extras["c3d"]["storage"] == "float" and d.notes == ()
    _check(d, xyz, integer=False)
