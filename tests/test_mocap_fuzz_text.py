"""Fuzz the text capture readers: a mutated export either reads or raises FormatError.

Well-formed files of every format (written by the writers, plus the hand-made Motive 1.21
and bare-triple QTM layouts) are truncated, lose or repeat lines, get bytes replaced or junk
inserted. No other exception type may escape ``read()``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigtool.errors import FormatError
from rigtool.mocap import motive, plaincsv, qualisys, vicon
from rigtool.mocap.markerdata import MarkerData

MOTIVE_121 = (
    "Format Version,1.21,Take Name,T,Capture Frame Rate,100.000000,Export Frame Rate,"
    "100.000000,Rotation Type,Quaternion,Length Units,Meters,Coordinate Space,Global\n\n"
    ",,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Marker,"
    "Marker,Marker\n,,RB,RB,RB,RB,RB,RB,RB,M1,M1,M1\n,,1,1,1,1,1,1,1,7,7,7\n"
    ",,Rotation,Rotation,Rotation,Rotation,Position,Position,Position,Position,Position,"
    "Position\nFrame,Time,X,Y,Z,W,X,Y,Z,X,Y,Z\n"
    "0,0.00000,0,0,0,1,0.5,0.6,0.7,1.25,2.5,-0.75\n1,0.01000,0,0,0,1,0.5,0.6,0.7,,,\n"
    "2,0.02000,0,0,0,1,0.5,0.6,0.7,1.25,2.5,-0.75\n").encode()
QTM_BARE = (
    "NO_OF_FRAMES\t3\nNO_OF_CAMERAS\t12\nNO_OF_MARKERS\t2\nFREQUENCY\t200\nNO_OF_ANALOG\t0\n"
    "ANALOG_FREQUENCY\t0\nDESCRIPTION\t--\nTIME_STAMP\t2022-06-02, 15:49:44.620\t1.0\n"
    "DATA_INCLUDED\t3D\nMARKER_NAMES\tA\tB\n1.000\t2.000\t3.000\t0.000\t0.000\t0.000\n"
    "1.500\t2.500\t3.500\t4.000\t5.000\t6.000\n0.000\t0.000\t0.000\t4.500\t5.500\t6.500\n"
).encode()


def _written(mod, tmp: Path) -> bytes:
    rng = np.random.default_rng(1)
    xyz = rng.uniform(-1, 1, (6, 2, 3))
    xyz[2, 1] = np.nan
    data = MarkerData(time_s=np.arange(6) / 100.0, names=("rig:A", "B"), xyz_m=xyz,
                      rate_hz=100.0, first_frame=500)
    path = tmp / f"seed_{mod.__name__}"
    mod.write(data, path)
    return path.read_bytes()


def _seeds(tmp: Path) -> list[tuple[object, bytes]]:
    seeds = [(m, _written(m, tmp)) for m in (vicon, motive, qualisys, plaincsv)]
    vicon_blocks = (b"Devices,,,,,,,,\r\n1000,,,,,,,,\r\n,,F,,,,,,\r\nFrame,Sub Frame,Fx,Fy,Fz"
                    b",,,,\r\n,,N,N,N,,,,\r\n500,0,1,2,3,,,,\r\n,,,,,,,,\r\n") + seeds[0][1]
    return seeds + [(vicon, vicon_blocks), (motive, MOTIVE_121), (qualisys, QTM_BARE)]


_TMP = Path(__import__("tempfile").mkdtemp(prefix="rigtool_fuzz_"))
SEEDS = _seeds(_TMP)

mutation = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("delete_line"), st.floats(0, 1)),
    st.tuples(st.just("duplicate_line"), st.floats(0, 1)),
    st.tuples(st.just("replace_byte"), st.floats(0, 1), st.binary(min_size=1, max_size=1)),
    st.tuples(st.just("insert"), st.floats(0, 1),
              st.sampled_from([b",", b"\t", b"\n", b"\r", b"\r\n", b"abc", b"-", b".", b"e9",
                               b"inf", b"nan", b"\x00", b"\xff\xfe", b'"', b" ", b"1e999",
                               b"Trajectories\n", b"Frame,", b"0.000\t0.000\t0.000"])),
    st.tuples(st.just("insert_junk"), st.floats(0, 1), st.binary(min_size=1, max_size=12)),
)


def _mutate(data: bytes, ops) -> bytes:
    for op in ops:
        kind, where = op[0], op[1]
        if kind == "truncate":
            data = data[:int(where * len(data))]
            continue
        if kind in ("delete_line", "duplicate_line"):
            lines = data.split(b"\n")
            i = min(int(where * len(lines)), len(lines) - 1)
            if kind == "delete_line":
                del lines[i]
            else:
                lines.insert(i, lines[i])
            data = b"\n".join(lines)
            continue
        i = min(int(where * len(data)), max(len(data) - 1, 0))
        if kind == "replace_byte":
            data = data[:i] + op[2] + data[i + 1:]
        else:
            data = data[:i] + op[2] + data[i:]
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, len(SEEDS) - 1), ops=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_exports_read_or_raise_format_error(seed, ops):
    mod, data = SEEDS[seed]
    path = _TMP / f"fuzz{seed}.txt"
    path.write_bytes(_mutate(data, ops))
    try:
        back = mod.read(path)
    except FormatError as exc:
        assert str(exc).startswith(str(path)), str(exc)
        return
    # Whatever was read is a valid capture: shapes agree, time starts at 0 and increases.
    assert back.xyz_m.shape == (back.n_frames, len(back.names), 3)
    assert back.time_s[0] == 0 and np.all(np.diff(back.time_s) > 0)
    assert np.all(np.isfinite(back.xyz_m) | np.isnan(back.xyz_m))


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, len(SEEDS) - 1), junk=st.binary(max_size=200))
def test_arbitrary_bytes_after_a_valid_prefix(seed, junk):
    mod, data = SEEDS[seed]
    path = _TMP / f"junk{seed}.txt"
    path.write_bytes(data[: len(data) // 3] + junk)
    try:
        mod.read(path)
    except FormatError:
        pass
