"""C3D reader/writer: every processor type, both storages, labels, units, model outputs, errors.

Files for DEC and SGI/MIPS processors and integer storage come from :func:`build_c3d`
(``tests/_c3d_builder.py``), a byte-level C3D writer written from the C3D manual (neither
ezc3d nor the ``c3d`` package can write them). ezc3d and the ``c3d`` package read the same
files as independent references (``tests/_c3d_reference.py``), which checks the builder and
the reader at once. The variants real exporters write (QTM names with spaces, DEC int16,
Optotrak headers, wrapped frame ranges, big-endian files) are in test_mocap_c3d_variants.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _c3d_builder import DEC, INTEL, MIPS, build_c3d
from _c3d_reference import c3dpkg_points, ezc3d_points
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigtool.errors import FormatError, InputError
from rigtool.mocap import MarkerData, detect_format, read_capture, write_capture
from rigtool.mocap import c3d as c3dmod


@pytest.fixture
def xyz_mm():
    rng = np.random.default_rng(3)
    xyz = rng.uniform(-900, 900, size=(40, 3, 3))
    xyz[5:9, 1] = np.nan
    xyz[20, 0] = np.nan
    return xyz


def _write(tmp_path: Path, name: str, raw: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(raw)
    return p


# --- every processor type and storage --------------------------------------------------------

@pytest.mark.parametrize("proc", [INTEL, DEC, MIPS])
@pytest.mark.parametrize("scale", [-1.0, 0.1])
def test_processors_and_storage(tmp_path, xyz_mm, proc, scale):
    p = _write(tmp_path, "x.c3d", build_c3d(xyz_mm, ["sub:A", "B", "C"], rate=120.0,
                                            scale=scale, proc=proc, first_frame=7))
    assert detect_format(p) == "c3d"
    d = read_capture(p)
    assert d.format == "c3d" and d.names == ("sub:A", "B", "C") and d.rate_hz == 120.0
    assert d.first_frame == 7 and d.units == "mm" and d.notes == ()
    assert d.extras["c3d"]["processor"] == {INTEL: "intel", DEC: "dec", MIPS: "sgi-mips"}[proc]
    assert d.extras["c3d"]["storage"] == ("float" if scale < 0 else "integer")
    assert d.missing_counts() == {"sub:A": 1, "B": 4, "C": 0}
    np.testing.assert_array_equal(np.isnan(d.xyz_m), np.isnan(xyz_mm))
    # float32 storage: relative 2^-24; integer storage: half a quantum (scale/2 mm)
    tol_m = 1e-3 * (900 * 2.0 ** -23 if scale < 0 else abs(scale) / 2 * 1.001)
    np.testing.assert_allclose(d.xyz_m, xyz_mm * 1e-3, atol=tol_m, rtol=0)
    np.testing.assert_allclose(d.time_s, np.arange(40) / 120.0)


@pytest.mark.parametrize("proc", [INTEL, DEC, MIPS])
@pytest.mark.parametrize("scale", [-1.0, 0.1])
def test_same_points_as_ezc3d_and_the_c3d_package(tmp_path, xyz_mm, proc, scale):
    p = _write(tmp_path, "x.c3d", build_c3d(xyz_mm, ["A", "B", "C"], scale=scale, proc=proc,
                                            first_frame=7))
    ours = read_capture(p).xyz_m * 1e3  # back to the file's mm
    refs = [c3dpkg_points(p)] + ([ezc3d_points(p)] if proc != MIPS else [])  # no MIPS in ezc3d
    for xyz, first in refs:
        assert first == 7
        # The same float32 / int16 words decoded: equal to float32 rounding of mm values.
        np.testing.assert_allclose(ours, xyz[:40], rtol=2.0 ** -22, atol=1e-9)


# --- labels, model outputs, frames, units ----------------------------------------------------

def test_labels2_used_and_model_outputs(tmp_path):
    xyz = np.arange(4 * 5 * 3, dtype=float).reshape(4, 5, 3)
    extra = {"POINT": {"LABELS2": ("LAngles", "C", "LForce", "spare"),
                       "ANGLES": ("LAngles",),
                       "TYPE_GROUPS": ("Marker", "MARKERS", "Angle", "ANGLES", "Force", "MYFORCES"),
                       "MYFORCES": ("LForce",),
                       "UNITS": ("mm", "mm", "deg", "mm", "N", "mm")}}
    # labels A, B + LABELS2 = 6 names for 5 used points: 'spare' is not a point
    p = _write(tmp_path, "x.c3d", build_c3d(xyz, ["A", "B"], extra=extra, used=5))
    d = read_capture(p)
    assert d.names == ("A", "B", "C")
    assert d.extras["model_outputs"]["names"] == ["LAngles", "LForce"]
    np.testing.assert_allclose(d.extras["model_outputs"]["values"][:, 0], xyz[:, 2])
    np.testing.assert_allclose(d.marker("C"), xyz[:, 3] * 1e-3)


def test_unnamed_points_get_star_names(tmp_path):
    p = _write(tmp_path, "x.c3d", build_c3d(np.ones((3, 3, 3)), ["A", ""], used=3))
    assert read_capture(p).names == ("A", "*2", "*3")


def test_actual_start_field_and_units_in_metres(tmp_path):
    extra = {"TRIAL": {"ACTUAL_START_FIELD": np.array([7, 1])}}  # 7 + 65536
    p = _write(tmp_path, "x.c3d", build_c3d(np.ones((3, 1, 3)), ["A"], units="m", extra=extra))
    d = read_capture(p)
    assert d.first_frame == 65543 and d.units == "m"
    np.testing.assert_allclose(d.xyz_m, 1.0)


def test_units_from_user_when_file_has_none(tmp_path):
    p = _write(tmp_path, "x.c3d", build_c3d(np.ones((3, 1, 3)), ["A"], units=None))
    with pytest.raises(FormatError, match=r"x\.c3d: the file does not state its length units"):
        read_capture(p)
    d = read_capture(p, units="cm")
    assert d.units == "cm"
    np.testing.assert_allclose(d.xyz_m, 0.01)


def test_unknown_units_refused(tmp_path):
    p = _write(tmp_path, "x.c3d", build_c3d(np.ones((3, 1, 3)), ["A"], units="furlong"))
    with pytest.raises(FormatError, match=r"unknown length units; expected mm, cm, m or in "
                                          r"\(found 'furlong'\)"):
        read_capture(p)


def test_markers_in_different_units_refused(tmp_path):
    p = _write(tmp_path, "x.c3d", build_c3d(np.ones((3, 2, 3)), ["A", "B"],
                                            units=("mm", "m")))
    with pytest.raises(FormatError, match="markers stored in different length units"):
        read_capture(p)


# --- writer ----------------------------------------------------------------------------------

@pytest.mark.parametrize("units", ["mm", "m"])
def test_write_read_round_trip(tmp_path, xyz_mm, units):
    data = MarkerData(time_s=np.arange(40) / 250.0, names=("rig:P1", "P2", "P3"),
                      xyz_m=xyz_mm * 1e-3, rate_hz=250.0, first_frame=12)
    out = tmp_path / "sub" / "out.bin"  # any extension: ezc3d alone would append .c3d
    write_capture(data, out, format="c3d", units=units)
    assert out.exists() and not (tmp_path / "sub" / "out.bin.c3d").exists()
    back = read_capture(out)
    assert back.names == data.names and back.rate_hz == 250.0 and back.first_frame == 12
    assert back.units == units and back.missing_counts() == data.missing_counts()
    np.testing.assert_allclose(back.xyz_m, data.xyz_m, rtol=2.0 ** -23, atol=1e-12)


def test_write_first_frame_past_16_bits(tmp_path):
    # The header holds 16 bits; larger numbers go to TRIAL:ACTUAL_START_FIELD (low word first).
    data = MarkerData(time_s=np.arange(3) / 10.0, names=("A",), xyz_m=np.ones((3, 1, 3)),
                      rate_hz=10.0, first_frame=70000)
    write_capture(data, tmp_path / "f.c3d", format="c3d")
    assert read_capture(tmp_path / "f.c3d").first_frame == 70000


def test_write_refuses_unknown_units(tmp_path):
    data = MarkerData(time_s=np.zeros(1), names=("A",), xyz_m=np.zeros((1, 1, 3)), rate_hz=1.0)
    with pytest.raises(InputError, match=r"out\.c3d, field 'units': unknown length units"):
        write_capture(data, tmp_path / "out.c3d", format="c3d", units="parsec")


# --- bad input -------------------------------------------------------------------------------

def test_empty_file(tmp_path):
    p = _write(tmp_path, "e.c3d", b"")
    with pytest.raises(FormatError, match=r"e\.c3d: the file is empty; expected a C3D file"):
        c3dmod.read(p)


def test_truncated_header(tmp_path):
    p = _write(tmp_path, "t.c3d", bytes([2, 0x50]) + b"\0" * 100)
    with pytest.raises(FormatError, match=r"t\.c3d: truncated C3D file: 102 bytes, expected "
                                          r"at least a 512-byte header"):
        read_capture(p)


def test_truncated_data(tmp_path, xyz_mm):
    raw = build_c3d(xyz_mm, ["A", "B", "C"])
    p = _write(tmp_path, "t.c3d", raw[: 512 * 3 + 100])
    with pytest.raises(FormatError, match=r"truncated C3D file: 40 frames of 3 points need "
                                          r"\d+ bytes, the file has 1636"):
        read_capture(p)


def test_junk_with_c3d_header(tmp_path):
    rng = np.random.default_rng(0)
    raw = bytes([2, 0x50]) + rng.integers(0, 256, 4000, dtype=np.uint8).tobytes()
    p = _write(tmp_path, "j.c3d", raw)
    with pytest.raises(FormatError, match=r"j\.c3d: corrupt C3D file"):
        read_capture(p)


def test_no_points(tmp_path):
    p = _write(tmp_path, "n.c3d", build_c3d(np.zeros((3, 0, 3)), []))
    with pytest.raises(FormatError, match=r"n\.c3d, field 'POINT:USED': the C3D file holds "
                                          r"no points"):
        read_capture(p)


def test_only_model_outputs(tmp_path):
    extra = {"POINT": {"ANGLES": ("K",)}}
    p = _write(tmp_path, "m.c3d", build_c3d(np.ones((2, 1, 3)), ["K"], extra=extra))
    with pytest.raises(FormatError, match="holds only model outputs"):
        read_capture(p)


def test_description_length_that_hangs_ezc3d_is_read(tmp_path, xyz_mm):
    # Regression: ezc3d 1.7 reads description lengths as signed bytes and hangs on >= 128;
    # such a (valid) file is read, and the c3d package agrees.
    p = _write(tmp_path, "d.c3d", build_c3d(xyz_mm, ["A", "B", "C"],
                                            group_desc={"POINT": "x" * 200}))
    d = read_capture(p)
    assert d.names == ("A", "B", "C")
    np.testing.assert_allclose(d.xyz_m, xyz_mm * 1e-3, rtol=2.0 ** -23)
    np.testing.assert_allclose(d.xyz_m * 1e3, c3dpkg_points(p)[0], rtol=2.0 ** -22)


# The three processors, and the variants of test_mocap_c3d_variants.py (names with spaces,
# an overstated parameter block count, little-endian record lengths in a big-endian file, a
# wrapped header frame range, analog samples between frames).
_VARIANTS = [dict(proc=INTEL), dict(proc=DEC, scale=0.1), dict(proc=MIPS),
             dict(extra={"QTM INFO": {"Uncropped Measurement Length": 12}}),
             dict(proc=DEC, scale=0.1, spare_param_blocks=2),
             dict(proc=MIPS, scale=0.1, swapped_lengths=True),
             dict(first_frame=65530, frames_param="omit"),
             dict(analog=np.ones((12, 2, 2)))]
_BASES = [build_c3d(np.random.default_rng(k).normal(size=(12, 3, 3)) * 100, ["A", "B", "C"],
                    **{"extra": {"POINT": {"ANGLES": ("C",)}}, **kw})
          for k, kw in enumerate(_VARIANTS)]


@pytest.mark.slow
@settings(max_examples=800, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(range(len(_BASES))),
       flips=st.lists(st.tuples(st.integers(0, 1100), st.integers(0, 255)), min_size=1,
                      max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 2000)))
def test_fuzz_mutated_files_raise_format_error_or_read(tmp_path, base, flips, cut):
    raw = bytearray(_BASES[base])
    for pos, val in flips:
        if pos < len(raw):
            raw[pos] = val
    if cut is not None:
        raw = raw[:cut]
    p = tmp_path / "f.c3d"
    p.write_bytes(bytes(raw))
    try:
        d = c3dmod.read(p)
    except FormatError as exc:
        assert "f.c3d" in str(exc)
    else:
        assert d.xyz_m.ndim == 3 and d.n_frames > 0 and len(d.names) > 0


def test_write_more_than_65535_frames_reads_back_all(tmp_path):
    # Regression: ezc3d writes POINT:FRAMES 65535 and a header last frame of 65535; the
    # writer adds TRIAL:ACTUAL_START/END_FIELD so that every frame reads back.
    n = 70000
    xyz = np.zeros((n, 1, 3))
    xyz[:, 0, 0] = np.arange(n) * 1e-3
    data = MarkerData(time_s=np.arange(n) / 100.0, names=("A",), xyz_m=xyz, rate_hz=100.0,
                      first_frame=3)
    write_capture(data, tmp_path / "long.c3d", format="c3d")
    back = read_capture(tmp_path / "long.c3d")
    assert back.n_frames == n and back.first_frame == 3 and back.notes == ()
    np.testing.assert_allclose(back.xyz_m, xyz, rtol=2.0 ** -23)


def test_frames_65535_without_a_longer_count_reads_65535_and_says_so(tmp_path):
    n = 65535 + 100
    raw = build_c3d(np.ones((n, 1, 3)), ["A"], frames_param=65535, header_last=65535)
    d = read_capture(_write(tmp_path, "cap.c3d", raw))
    assert d.n_frames == 65535
    # room: 65635 frames of 16 bytes padded to whole 512-byte blocks hold 65664
    assert d.notes == ("POINT:FRAMES says 65535, the mark of a count past 16 bits, but neither "
                       "TRIAL:ACTUAL_END_FIELD nor POINT:LONG_FRAMES says how many; the file "
                       "has room for 65664: used 65535",)
