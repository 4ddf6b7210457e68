"""C3D reader/writer: every processor type, both storages, labels, units, model outputs, errors.

Files for DEC and SGI/MIPS processors and integer storage come from :func:`build_c3d`, a small
byte-level C3D writer written here from the C3D manual (neither ezc3d nor the ``c3d`` package
can write them): header and parameter section as the manual lays them out, integers
little-endian (Intel, DEC) or big-endian (MIPS), floats IEEE little/big-endian or DEC F
(IEEE bits of 4*v with the two 16-bit words swapped). Both libraries read its output, which
checks the builder independently of our reader.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigtool.errors import FormatError, InputError
from rigtool.mocap import MarkerData, detect_format, read_capture, write_capture
from rigtool.mocap import c3d as c3dmod

INTEL, DEC, MIPS = 84, 85, 86


def _f32(v: float, proc: int) -> bytes:
    if proc == MIPS:
        return struct.pack(">f", v)
    if proc == DEC:
        le = struct.pack("<f", 4.0 * v)
        return le[2:4] + le[0:2]
    return struct.pack("<f", v)


def _i16(v: int, proc: int) -> bytes:
    return struct.pack(">h" if proc == MIPS else "<h", v)


def _param(gid: int, name: str, value, proc: int) -> tuple[bytes, bytes]:
    if isinstance(value, str):  # one string: a 1-D char parameter
        dims, data, typ = [max(len(value), 1)], value.encode().ljust(max(len(value), 1)), -1
    elif isinstance(value, tuple):  # several strings: [width, count]
        width = max([len(s) for s in value] + [1])
        dims, typ = [width, len(value)], -1
        data = b"".join(s.encode().ljust(width) for s in value)
    else:
        arr = np.atleast_1d(np.asarray(value))
        if arr.dtype.kind == "f":
            typ, data = 4, b"".join(_f32(float(x), proc) for x in arr.ravel(order="F"))
        else:
            typ, data = 2, b"".join(_i16(int(x), proc) for x in arr.ravel(order="F"))
        dims = [] if np.ndim(value) == 0 else list(arr.shape)
    nm = name.encode()
    return struct.pack("bb", len(nm), gid) + nm, struct.pack("bB", typ, len(dims)) + bytes(
        dims) + data + b"\x00"


def build_c3d(xyz, labels, *, rate=100.0, scale=-1.0, proc=INTEL, first_frame=1, units="mm",
              extra=None, used=None, group_desc=None) -> bytes:
    """C3D bytes; ``xyz`` [T, N, 3] in file units with NaN = missing (residual -1)."""
    xyz = np.asarray(xyz, float)
    n_t, n_p, _ = xyz.shape
    used = n_p if used is None else used
    groups: dict[str, dict] = {
        "POINT": {"USED": used, "SCALE": float(scale), "RATE": float(rate), "DATA_START": 0,
                  "FRAMES": n_t, "LABELS": tuple(labels),
                  "DESCRIPTIONS": tuple("" for _ in labels)},
        "ANALOG": {"USED": 0, "RATE": float(rate)}}
    if units is not None:
        groups["POINT"]["UNITS"] = units
    for g, params in (extra or {}).items():
        groups.setdefault(g, {}).update(params)

    def section(data_start: int) -> bytes:
        groups["POINT"]["DATA_START"] = data_start
        recs = []
        for gi, (g, params) in enumerate(groups.items(), start=1):
            desc = (group_desc or {}).get(g, "").encode()
            recs.append((struct.pack("bb", len(g), -gi) + g.encode(), bytes([len(desc)]) + desc))
            recs += [_param(gi, p, v, proc) for p, v in params.items()]
        return b"".join(head + _i16(0 if k == len(recs) - 1 else len(body) + 2, proc) + body
                        for k, (head, body) in enumerate(recs))

    n_blocks = (4 + len(section(0))) // 512 + 1
    data_start = 2 + n_blocks
    psec = (bytes([1, 0x50, n_blocks, proc]) + section(data_start)).ljust(512 * n_blocks, b"\0")
    header = (bytes([2, 0x50]) + _i16(used, proc) + _i16(0, proc) + _i16(first_frame, proc)
              + _i16(first_frame + n_t - 1, proc) + _i16(0, proc) + _f32(scale, proc)
              + _i16(data_start, proc) + _i16(1, proc) + _f32(rate, proc)).ljust(512, b"\0")
    miss = np.isnan(xyz).any(axis=2)
    if scale < 0:
        vals = np.concatenate([np.nan_to_num(xyz), np.where(miss, -1.0, 1.0)[..., None]], 2)
        if proc == DEC:
            words = np.frombuffer((4.0 * vals).astype("<f4").tobytes(), np.uint8).reshape(-1, 4)
            data = words[:, [2, 3, 0, 1]].tobytes()
        else:
            data = vals.astype(">f4" if proc == MIPS else "<f4").tobytes()
    else:
        q = np.rint(np.nan_to_num(xyz) / scale)
        vals = np.concatenate([q, np.where(miss, -1, 1)[..., None]], 2)
        data = vals.astype(">i2" if proc == MIPS else "<i2").tobytes()
    return header + psec + data.ljust(-(-len(data) // 512) * 512, b"\0")


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

@pytest.mark.parametrize("proc,reader", [(INTEL, "ezc3d"), (DEC, "ezc3d"), (MIPS, "c3d")])
@pytest.mark.parametrize("scale", [-1.0, 0.1])
def test_processors_and_storage(tmp_path, xyz_mm, proc, reader, scale):
    p = _write(tmp_path, "x.c3d", build_c3d(xyz_mm, ["sub:A", "B", "C"], rate=120.0,
                                            scale=scale, proc=proc, first_frame=7))
    assert detect_format(p) == "c3d"
    d = read_capture(p)
    assert d.format == "c3d" and d.names == ("sub:A", "B", "C") and d.rate_hz == 120.0
    assert d.first_frame == 7 and d.units == "mm"
    assert d.extras["c3d"]["reader"] == reader
    assert d.extras["c3d"]["storage"] == ("float" if scale < 0 else "integer")
    assert d.missing_counts() == {"sub:A": 1, "B": 4, "C": 0}
    np.testing.assert_array_equal(np.isnan(d.xyz_m), np.isnan(xyz_mm))
    # float32 storage: relative 2^-24; integer storage: half a quantum (scale/2 mm)
    tol_m = 1e-3 * (900 * 2.0 ** -23 if scale < 0 else abs(scale) / 2 * 1.001)
    np.testing.assert_allclose(d.xyz_m, xyz_mm * 1e-3, atol=tol_m, rtol=0)
    np.testing.assert_allclose(d.time_s, np.arange(40) / 120.0)


def test_c3d_package_fallback_matches_ezc3d(tmp_path, xyz_mm, monkeypatch):
    p = _write(tmp_path, "x.c3d", build_c3d(xyz_mm, ["A", "B", "C"], scale=0.1, proc=DEC))
    direct = read_capture(p)

    def broken(path):
        raise RuntimeError("simulated ezc3d failure")

    monkeypatch.setattr(c3dmod, "_read_ezc3d", broken)
    fallback = read_capture(p)
    assert fallback.extras["c3d"]["reader"] == "c3d"
    assert fallback.names == direct.names and fallback.first_frame == direct.first_frame
    np.testing.assert_allclose(fallback.xyz_m, direct.xyz_m, atol=1e-9)


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


def test_description_length_that_hangs_ezc3d_goes_to_c3d_package(tmp_path, xyz_mm):
    # Regression: ezc3d 1.7 reads description lengths as signed bytes and hangs on >= 128;
    # such a (valid) file must be read by the c3d package instead.
    p = _write(tmp_path, "d.c3d", build_c3d(xyz_mm, ["A", "B", "C"],
                                            group_desc={"POINT": "x" * 200}))
    d = read_capture(p)
    assert d.extras["c3d"]["reader"] == "c3d" and d.names == ("A", "B", "C")
    np.testing.assert_allclose(d.xyz_m, xyz_mm * 1e-3, rtol=2.0 ** -23)


_BASES = [build_c3d(np.random.default_rng(k).normal(size=(12, 3, 3)) * 100, ["A", "B", "C"],
                    proc=proc, scale=scale, extra={"POINT": {"ANGLES": ("C",)}})
          for k, (proc, scale) in enumerate([(INTEL, -1.0), (DEC, 0.1), (MIPS, -1.0)])]


@settings(max_examples=500, deadline=None, derandomize=True,
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
