"""Text capture formats: round trips, untidy real-world layouts, detection, error messages.

Reference values in the hand-made files are written by hand (not produced by the writers),
so a reader and writer sharing a mistake cannot both pass.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import rigtool.mocap as mocap
from rigtool.errors import FormatError, InputError
from rigtool.mocap import motive, plaincsv, qualisys, vicon
from rigtool.mocap.markerdata import MarkerData

MODULES = {"vicon-csv": vicon, "motive-csv": motive, "qualisys-tsv": qualisys,
           "plain-csv": plaincsv}
# Written precision: 6 decimals in mm (Vicon, Motive, QTM), 9 decimals in m (plain CSV).
TOL_M = 1e-9 * 0.51 + 1e-15


@pytest.fixture(autouse=True)
def _detect_without_missing_c3d(monkeypatch):
    """detect_format also asks the C3D sniffer (another module); skip it if not there yet."""
    try:
        importlib.import_module("rigtool.mocap.c3d")
    except ModuleNotFoundError:
        monkeypatch.setattr(mocap, "_MODULES",
                            {k: v for k, v in mocap._MODULES.items() if k != "c3d"})


def make_data(*, names=("rig:P1", "rig:P2", "P3"), t_n=40, rate=100.0, first_frame=1,
              seed=0) -> MarkerData:
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(-1.5, 1.5, (t_n, len(names), 3))
    xyz[5:9, 1, :] = np.nan      # a gap
    xyz[-1, 0, :] = np.nan       # missing on the last frame
    return MarkerData(time_s=np.arange(t_n) / rate, names=tuple(names), xyz_m=xyz,
                      rate_hz=rate, first_frame=first_frame)


def assert_same(back: MarkerData, data: MarkerData, *, frames: bool = True) -> None:
    assert back.names == data.names
    assert np.array_equal(np.isnan(back.xyz_m), np.isnan(data.xyz_m))
    np.testing.assert_allclose(back.xyz_m, data.xyz_m, atol=TOL_M, rtol=0)
    np.testing.assert_allclose(back.time_s, data.time_s, atol=1e-9, rtol=0)
    assert back.rate_hz == pytest.approx(data.rate_hz, rel=1e-9)
    if frames:
        assert back.first_frame == data.first_frame


def write_text(tmp_path: Path, name: str, text: str, *, crlf: bool = False) -> Path:
    path = tmp_path / name
    data = text.replace("\n", "\r\n") if crlf else text
    path.write_bytes(data.encode("utf-8"))
    return path


# ----------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("fmt", list(MODULES))
@pytest.mark.parametrize("first_frame", [1, 2530])
def test_round_trip(tmp_path, fmt, first_frame):
    data = make_data(first_frame=first_frame, rate=120.0)
    path = tmp_path / "capture.txt"
    mocap.write_capture(data, path, format=fmt)
    assert mocap.detect_format(path) == fmt
    back = mocap.read_capture(path)
    assert back.format == fmt
    assert_same(back, data, frames=fmt != "plain-csv")


@pytest.mark.parametrize("fmt,units", [("vicon-csv", "m"), ("vicon-csv", "cm"),
                                       ("motive-csv", "m"), ("motive-csv", "cm")])
def test_round_trip_other_units(tmp_path, fmt, units):
    data = make_data()
    path = tmp_path / "capture.csv"
    mocap.write_capture(data, path, format=fmt, units=units)
    assert_same(mocap.read_capture(path), data)


def test_round_trip_motive_rigid_bodies(tmp_path):
    data = make_data(first_frame=0, rate=120.0)
    rng = np.random.default_rng(3)
    quat = rng.normal(size=(data.n_frames, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    pos = rng.uniform(-1, 1, (data.n_frames, 3))
    pos[7] = np.nan
    data = MarkerData(time_s=data.time_s, names=data.names, xyz_m=data.xyz_m, rate_hz=120.0,
                      first_frame=0, extras={"rigid_bodies": {"plate": {
                          "quaternion_xyzw": quat, "position_m": pos}}})
    path = tmp_path / "take.csv"
    motive.write(data, path)
    back = motive.read(path)
    assert_same(back, data)
    body = back.extras["rigid_bodies"]["plate"]
    np.testing.assert_allclose(body["quaternion_xyzw"], quat, atol=5.1e-7)
    np.testing.assert_allclose(body["position_m"], pos, atol=TOL_M)


def test_writers_refuse_units_their_format_cannot_hold(tmp_path):
    data = make_data()
    with pytest.raises(InputError, match="always in millimetres"):
        qualisys.write(data, tmp_path / "a.tsv", units="m")
    with pytest.raises(InputError, match="Motive writes Millimeters"):
        motive.write(data, tmp_path / "a.csv", units="in")
    with pytest.raises(InputError, match="unknown length units"):
        vicon.write(data, tmp_path / "a.csv", units="furlong")


def test_plain_csv_units_default_metres_or_as_told(tmp_path):
    data = make_data()
    path = tmp_path / "plain.csv"
    plaincsv.write(data, path, units="mm")  # plain CSV is always metres
    assert path.read_text().splitlines()[0].startswith("time,rig:P1_x,rig:P1_y,rig:P1_z")
    assert plaincsv.read(path).units == "m"
    in_mm = plaincsv.read(path, units="mm")
    np.testing.assert_allclose(in_mm.xyz_m, data.xyz_m * 1e-3, atol=1e-12)
    assert in_mm.units == "mm"


def test_plain_csv_empty_cells_where_missing(tmp_path):
    path = tmp_path / "plain.csv"
    plaincsv.write(make_data(), path)
    row6 = path.read_text().splitlines()[6]  # frame index 5: P2 missing
    assert ",,," in row6
    assert "nan" not in path.read_text()


# ------------------------------------------------------------------------------- Vicon CSV

VICON_FULL = """\
Devices,,,,,,,,,,
1000,,,,,,,,,,
,,Force Plate 1 - Force,,,,,,,,
Frame,Sub Frame,Fx,Fy,Fz,,,,,,
,,N,N,N,,,,,,
500,0,1.0,2.0,3.0,,,,,,
500,1,1.5,2.5,3.5,,,,,,
,,,,,,,,,,
Trajectories,,,,,,,,,,
100,,,,,,,,,,
,,rig:P1,,,rig:P2,,,P3,,,
Frame,Sub Frame,X,Y,Z,X,Y,Z,X,Y,Z
,,mm,mm,mm,mm,mm,mm,mm,mm,mm
500,0,10.5,-20.25,1000,1,2,3,-1,-2,-3
501,0,11.5,-21.25,1001,,,,-1.5,-2.5,-3.5
502,0,12.5,-22.25,1002,4,5,6,-1,-2,-3
,,,,,,,,,,
Model Outputs,,,,,,,,,,
100,,,,,,,,,,
,,rig:Angle,,,,,,,,
Frame,Sub Frame,X,Y,Z,,,,,,
,,deg,deg,deg,,,,,,
500,0,text-not-read,0,0,,,,,,
"""


@pytest.mark.parametrize("crlf", [False, True])
def test_vicon_extra_blocks_padding_trimmed_start(tmp_path, crlf):
    path = write_text(tmp_path, "trial.csv", VICON_FULL, crlf=crlf)
    assert mocap.detect_format(path) == "vicon-csv"
    d = vicon.read(path)
    assert d.names == ("rig:P1", "rig:P2", "P3")
    assert d.first_frame == 500 and d.rate_hz == 100.0 and d.units == "mm"
    np.testing.assert_allclose(d.time_s, [0.0, 0.01, 0.02])
    np.testing.assert_allclose(d.xyz_m[0, 0], [0.0105, -0.02025, 1.0])
    np.testing.assert_allclose(d.xyz_m[2, 2], [-0.001, -0.002, -0.003])
    assert np.isnan(d.xyz_m[1, 1]).all()
    assert d.missing_counts() == {"rig:P1": 0, "rig:P2": 1, "P3": 0}
    assert d.index("P1") == 0


def test_vicon_unpadded_without_sub_frame_and_units_in_metres(tmp_path):
    text = ("Trajectories\n120,\n,A,,,B,,,\nField #,X,Y,Z,X,Y,Z\n,m,m,m,m,m,m\n"
            "1,0.1,0.2,0.3,0.4,0.5,0.6\n2,0.1,0.2,0.3,,,\n")
    d = vicon.read(write_text(tmp_path, "old.csv", text))
    assert d.names == ("A", "B") and d.units == "m" and d.rate_hz == 120.0
    np.testing.assert_allclose(d.xyz_m[0, 1], [0.4, 0.5, 0.6])
    assert np.isnan(d.xyz_m[1, 1]).all()


def test_vicon_writer_looks_like_nexus(tmp_path):
    path = tmp_path / "w.csv"
    vicon.write(make_data(first_frame=2530), path)
    raw = path.read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n")  # CRLF throughout
    lines = raw.decode().split("\r\n")
    assert lines[:2] == ["Trajectories", "100"]
    assert lines[2].split(",")[2] == "rig:P1" and lines[2].split(",")[8] == "P3"
    assert len(lines[2].split(",")) == len(lines[5].split(",")) + 1
    assert lines[4].startswith(",,mm,mm,mm") and lines[5].startswith("2530,0,")
    assert lines[-2:] == ["", ""]  # the block ends with an empty line


def test_vicon_file_without_units_uses_the_users(tmp_path):
    text = "Trajectories\n100\n,,A,,\nFrame,Sub Frame,X,Y,Z\n,,,,\n1,0,1,2,3\n2,0,1,2,3\n"
    path = write_text(tmp_path, "nounits.csv", text)
    # the units row is empty: it counts as the end of the block, so it must be refused ...
    with pytest.raises(FormatError, match="Trajectories block ends early"):
        vicon.read(path)
    text = "Trajectories\n100\n,,A,,\nFrame,Sub Frame,X,Y,Z\n,,?,?,?\n1,0,1,2,3\n"
    with pytest.raises(FormatError, match=r"nounits2.csv, line 5: unknown length units"):
        vicon.read(write_text(tmp_path, "nounits2.csv", text))


# ------------------------------------------------------------------------------ Motive CSV

MOTIVE_123 = """\
Format Version,1.23,Take Name,Take 2024-05-01,Take Notes,,Capture Frame Rate,240.000000,\
Export Frame Rate,120.000000,Capture Start Time,2024-05-01 10.00.00.000 AM,Capture Start \
Frame,0,Total Frames in Take,3,Total Exported Frames,3,Rotation Type,Quaternion,Length \
Units,Millimeters,Coordinate Space,Global

,Type,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,\
Rigid Body Marker,Rigid Body Marker,Rigid Body Marker,Rigid Body Marker,Marker,Marker,Marker,\
Marker,Marker,Marker,Marker,Marker,Marker
,Name,plate,plate,plate,plate,plate,plate,plate,plate,plate:Marker1,plate:Marker1,\
plate:Marker1,plate:Marker1,plate:Marker1,plate:Marker1,plate:Marker1,rig:P1,rig:P1,rig:P1,\
Unlabeled 1000,Unlabeled 1000,Unlabeled 1000
,ID,1,1,1,1,1,1,1,1,1,1,1,1,2,2,2,3,3,3,4,4,4
,,Rotation,Rotation,Rotation,Rotation,Position,Position,Position,Mean Marker Error,Position,\
Position,Position,Marker Quality,Position,Position,Position,Position,Position,Position,\
Position,Position,Position
Frame,Time (Seconds),X,Y,Z,W,X,Y,Z,,X,Y,Z,,X,Y,Z,X,Y,Z,X,Y,Z
12,0.100000,0,0,0,1,100,200,300,0.1,101,201,301,1,101.5,201.5,301.5,1,2,3,,,
13,0.108333,0,0,0.1,0.995,100,200,300,0.1,101,201,301,1,,,,4,5,6,7,8,9
14,0.116667,0,0,0.2,0.98,100,200,300,0.1,101,201,301,1,101.5,201.5,301.5,,,,7,8,9
"""


def test_motive_123_markers_and_rigid_bodies(tmp_path):
    path = write_text(tmp_path, "take.csv", MOTIVE_123, crlf=True)
    assert mocap.detect_format(path) == "motive-csv"
    d = motive.read(path)
    assert d.names == ("plate:Marker1", "rig:P1", "Unlabeled 1000")
    assert d.rate_hz == 120.0 and d.first_frame == 12 and d.units == "Millimeters"
    np.testing.assert_allclose(d.time_s, [0, 1 / 120, 2 / 120])
    np.testing.assert_allclose(d.xyz_m[0, 0], [0.1015, 0.2015, 0.3015])
    np.testing.assert_allclose(d.xyz_m[1, 1], [0.004, 0.005, 0.006])
    assert np.isnan(d.xyz_m[1, 0]).all() and np.isnan(d.xyz_m[0, 2]).all()
    body = d.extras["rigid_bodies"]["plate"]
    np.testing.assert_allclose(body["quaternion_xyzw"][1], [0, 0, 0.1, 0.995])
    np.testing.assert_allclose(body["position_m"][0], [0.1, 0.2, 0.3])
    # the marker constraint repeats a physical marker's name: kept apart, never mixed in
    np.testing.assert_allclose(d.extras["rigid_body_markers"]["plate:Marker1"][1],
                               [0.101, 0.201, 0.301])


MOTIVE_121 = """\
Format Version,1.21,Take Name,Take 2016,Capture Frame Rate,100.000000,Export Frame Rate,\
100.000000,Capture Start Time,2016-01-01 10.00.00.000 AM,Total Frames in Take,2,Total \
Exported Frames,2,Rotation Type,Quaternion,Length Units,Meters,Coordinate Space,Global

,,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Marker,Marker,Marker
,,RB,RB,RB,RB,RB,RB,RB,M1,M1,M1
,,1,1,1,1,1,1,1,7,7,7
,,Rotation,Rotation,Rotation,Rotation,Position,Position,Position,Position,Position,Position
Frame,Time,X,Y,Z,W,X,Y,Z,X,Y,Z
0,0.00000,0,0,0,1,0.5,0.6,0.7,1.25,2.5,-0.75
1,0.01000,0,0,0,1,0.5,0.6,0.7,,,
"""


def test_motive_121_unlabelled_header_rows(tmp_path):
    path = write_text(tmp_path, "old_take.csv", MOTIVE_121)
    assert mocap.detect_format(path) == "motive-csv"
    d = motive.read(path)
    assert d.names == ("M1",) and d.units == "Meters" and d.first_frame == 0
    np.testing.assert_allclose(d.xyz_m[0, 0], [1.25, 2.5, -0.75])
    assert np.isnan(d.xyz_m[1, 0]).all()
    np.testing.assert_allclose(d.extras["rigid_bodies"]["RB"]["position_m"][1], [0.5, 0.6, 0.7])


@pytest.mark.parametrize("units,factor", [("Centimeters", 1e-2), ("Meters", 1.0)])
def test_motive_length_units(tmp_path, units, factor):
    text = MOTIVE_123.replace("Units,Millimeters", f"Units,{units}")
    d = motive.read(write_text(tmp_path, "take.csv", text))
    np.testing.assert_allclose(d.xyz_m[1, 1], np.array([4, 5, 6]) * factor)


def test_motive_without_length_units_uses_the_users_or_refuses(tmp_path):
    text = MOTIVE_121.replace("Length Units,Meters,", "")
    path = write_text(tmp_path, "take.csv", text)
    with pytest.raises(FormatError, match="does not state its length units"):
        motive.read(path)
    assert motive.read(path, units="mm").xyz_m[0, 0, 0] == pytest.approx(1.25e-3)


# ------------------------------------------------------------------------------ Qualisys

QTM_HEAD = """\
NO_OF_FRAMES\t3
NO_OF_CAMERAS\t12
NO_OF_MARKERS\t2
FREQUENCY\t200
NO_OF_ANALOG\t0
ANALOG_FREQUENCY\t0
DESCRIPTION\t--
TIME_STAMP\t2022-06-02, 15:49:44.620\t25975.44751328
DATA_INCLUDED\t3D
MARKER_NAMES\tA\tB
"""


def test_qtm_bare_triples_zero_means_missing(tmp_path):
    text = QTM_HEAD + ("1.000\t2.000\t3.000\t0.000\t0.000\t0.000\n"
                       "1.500\t2.500\t3.500\t4.000\t5.000\t6.000\n"
                       "0.000\t0.000\t0.000\t4.500\t5.500\t6.500\n")
    path = write_text(tmp_path, "m.tsv", text)
    assert mocap.detect_format(path) == "qualisys-tsv"
    d = qualisys.read(path)
    assert d.names == ("A", "B") and d.rate_hz == 200.0 and d.units == "mm"
    np.testing.assert_allclose(d.time_s, [0, 0.005, 0.01])
    np.testing.assert_allclose(d.xyz_m[1, 1], [0.004, 0.005, 0.006])
    assert np.isnan(d.xyz_m[0, 1]).all() and np.isnan(d.xyz_m[2, 0]).all()


def test_qtm_optional_keys_type_columns_time_from_1_over_f(tmp_path):
    text = ("FILE_VERSION\t2\n" + QTM_HEAD
            + "TRAJECTORY_TYPES\tMeasured\tGap-filled\nEVENT\tstart\t1\t0.005\n"
            + "Frame\tTime\tA X\tA Y\tA Z\tA Type\tB X\tB Y\tB Z\tB Type\t\n"
            + "1\t0.00500\t1\t2\t3\tMeasured\t4\t5\t6\tGap-filled\t\n"
            + "2\t0.01000\t1\t2\t3\tMeasured\t0\t0\t0\t-\t\n"
            + "3\t0.01500\t1\t2\t3\tMeasured\t4\t5\t6\tGap-filled\t\n")
    path = write_text(tmp_path, "m.tsv", text, crlf=True)
    assert mocap.detect_format(path) == "qualisys-tsv"
    d = qualisys.read(path)
    assert d.first_frame == 1
    np.testing.assert_allclose(d.time_s, [0, 0.005, 0.01])
    np.testing.assert_allclose(d.xyz_m[2, 1], [0.004, 0.005, 0.006])
    assert np.isnan(d.xyz_m[1, 1]).all()


def test_qtm_frame_time_columns_without_column_header(tmp_path):
    text = QTM_HEAD + ("7\t0.030\t1\t2\t3\t4\t5\t6\n8\t0.035\t1\t2\t3\t4\t5\t6\n"
                       "9\t0.040\t1\t2\t3\t4\t5\t6\n")
    d = qualisys.read(write_text(tmp_path, "m.tsv", text))
    assert d.first_frame == 7
    np.testing.assert_allclose(d.xyz_m[:, 0, 2], 0.003)


# ------------------------------------------------------------------------------ detection

SAMPLES = {"vicon-csv": VICON_FULL, "motive-csv": MOTIVE_123, "motive-csv.121": MOTIVE_121,
           "qualisys-tsv": QTM_HEAD + "1\t2\t3\t4\t5\t6\n",
           "plain-csv": "time,A_x,A_y,A_z\n0,1,2,3\n0.01,1,2,3\n"}


def test_each_sniffer_claims_only_its_own_format():
    for label, text in SAMPLES.items():
        fmt = label.split(".")[0]
        head = text.encode()
        claims = [name for name, mod in MODULES.items() if mod.sniff(head)]
        assert claims == [fmt], label
        assert [name for name, mod in MODULES.items() if mod.sniff(b"\xef\xbb\xbf" + head)] \
            == [fmt]


def test_detection_refuses_other_text(tmp_path):
    for name, text in [("a.csv", "x,y,z\n1,2,3\n"), ("b.csv", "hello world\n"),
                       ("c.csv", "Frame,A_x,A_y,A_z\n1,2,3,4\n")]:
        with pytest.raises(FormatError, match="not a supported motion-capture export"):
            mocap.detect_format(write_text(tmp_path, name, text))


# ------------------------------------------------------------------------------ errors

def _vicon(rows: str) -> str:
    return ("Trajectories\n100\n,,rig:A,,,rig:B,,\nFrame,Sub Frame,X,Y,Z,X,Y,Z\n"
            ",,mm,mm,mm,mm,mm,mm\n" + rows)


ERROR_CASES = [
    (vicon, _vicon("1,0,1,2,3,4,5,6\n2,0,1,abc,3,4,5,6\n"),
     r"bad\.csv, line 7, field 'rig:A Y': expected a number \(found 'abc'\)"),
    (vicon, _vicon("1,0,1,2,3,4,5,6\n2,0,1,2,3,4\n"),
     r"bad\.csv, line 7: ragged row: 6 fields where 8 were expected"),
    (vicon, _vicon("1,0,1,2,3,4,5,6\n2,0,1,2,3,4,5,6,7\n"),
     r"bad\.csv, line 7: ragged row: 9 fields where at most 8"),
    (vicon, _vicon("1,0,1,2,3,4,5,6\n1,0,1,2,3,4,5,6\n"),
     r"bad\.csv, line 7, field 'Frame': frame numbers must increase"),
    (vicon, _vicon("1,0,1,2,3,4,5,6\n,0,1,2,3,4,5,6\n"),
     r"bad\.csv, line 7, field 'Frame': expected a whole frame number"),
    (vicon, _vicon("1,0,1,2,inf,4,5,6\n"), r"bad\.csv, line 6: expected a finite number"),
    (vicon, _vicon(""), r"bad\.csv, line 6: the Trajectories block has no data rows"),
    (vicon, "Trajectories\n100\n,,A,,,A,,\nFrame,Sub Frame,X,Y,Z,X,Y,Z\n,,mm,mm,mm,mm,mm,mm\n1,0,"
            "1,2,3,4,5,6\n", r"bad\.csv, line 3: duplicated marker name 'A'"),
    (vicon, "Trajectories\nfast\n,,A,,\n", r"bad\.csv, line 2: expected the frame rate"),
    (vicon, "Trajectories\n100\n,,A,,\nFrame,Sub Frame,X,Y,Z\n",
     r"bad\.csv, line 5: the file ends inside the Trajectories header"),
    (vicon, "Trajectories\n100\n,,A,,\nFrame,Sub Frame,X,Y\n,,mm,mm\n1,0,1,2\n",
     r"bad\.csv, line 4, field 'column 3': expected X,Y,Z components under marker 'A'"),
    (vicon, "Trajectories\n100\n,,A,,\nFrame,Sub Frame,X,Y,Z\n,,parsec,parsec,parsec\n1,0,1,2,3\n",
     r"bad\.csv, line 5: unknown length units; expected mm, cm, m or in \(found 'parsec'\)"),
    (vicon, "Devices\n1000\n,,F,,\nFrame,Sub Frame,Fx,Fy,Fz\n,,N,N,N\n1,0,1,2,3\n",
     r"bad\.csv: no 'Trajectories' block.*\(it has: Devices\)"),
    (motive, MOTIVE_123.replace("Export Frame Rate,120.000000,", "").replace(
        "Capture Frame Rate,240.000000,", ""), r"bad\.csv, line 1: the header states no "
                                                r"frame rate"),
    (motive, MOTIVE_123.replace("Units,Millimeters", "Units,Furlongs"),
     r"bad\.csv, line 1: unknown length units; expected mm, cm, m or in \(found 'Furlongs'\)"),
    (motive, MOTIVE_123.replace("rig:P1,rig:P1,rig:P1", "Unlabeled 1000,Unlabeled 1000,"
                                                          "Unlabeled 1000"),
     r"bad\.csv, line 4: two 'X' columns for 'Unlabeled 1000'"),
    (motive, MOTIVE_123.replace("13,0.108333,0,0,0.1", "13,0.108333,0,zero,0.1"),
     r"bad\.csv, line 9, field 'plate rotation Y': expected a number \(found 'zero'\)"),
    (motive, MOTIVE_123.split("Frame,Time")[0],
     r"bad\.csv, line 7: the file ends before the 'Frame,Time \(Seconds\),X,Y,Z,...' row"),
    (qualisys, QTM_HEAD.replace("FREQUENCY\t200\n", "") + "1\t2\t3\t4\t5\t6\n",
     r"bad\.tsv, line 10: no FREQUENCY line in the header"),
    (qualisys, QTM_HEAD.replace("FREQUENCY\t200", "FREQUENCY\tfast") + "1\t2\t3\t4\t5\t6\n",
     r"bad\.tsv, line 4, field 'FREQUENCY': expected a positive frame rate"),
    (qualisys, QTM_HEAD + "1\t2\t3\t4\t5\t6\n1\t2\t3\t4\t5\t6\n",
     r"bad\.tsv, line 1, field 'NO_OF_FRAMES': NO_OF_FRAMES says 3 but the file has 2 data "
     r"rows \(truncated"),
    (qualisys, QTM_HEAD + "1\t2\t3\t4\t5\n",
     r"bad\.tsv, line 11: expected 6 coordinates per row"),
    (qualisys, QTM_HEAD + "1\t2\t3\t4\t5\t6\n1\t2\t3\t4\t5\n1\t2\t3\t4\t5\t6\n",
     r"bad\.tsv, line 12: ragged row: 5 fields where 6 were expected"),
    (qualisys, QTM_HEAD.replace("MARKER_NAMES\tA\tB", "MARKER_NAMES\tA\tA"),
     r"bad\.tsv, line 10: duplicated marker name 'A'"),
    (qualisys, QTM_HEAD.replace("NO_OF_MARKERS\t2", "NO_OF_MARKERS\t3") + "1\t2\t3\t4\t5\t6\n",
     r"bad\.tsv, line 3, field 'NO_OF_MARKERS': NO_OF_MARKERS says 3"),
    (qualisys, QTM_HEAD.replace("DATA_INCLUDED\t3D", "DATA_INCLUDED\t6D"),
     r"bad\.tsv, line 9, field 'DATA_INCLUDED': expected 3D marker data"),
    (plaincsv, "time,A_x,A_y,A_z\n0,1,2,3\n0.01,1,2,x\n",
     r"bad\.csv, line 3, field 'A_z': expected a number \(found 'x'\)"),
    (plaincsv, "time,A_x,A_y,A_z\n0,1,2,3\n0,1,2,3\n",
     r"bad\.csv, line 3, field 'time': time must increase"),
    (plaincsv, "time,A_x,A_y,A_z\n0,1,2,3\n", r"bad\.csv, line 3: need at least two rows"),
    (plaincsv, "time,A_x,A_y\n0,1,2\n", r"bad\.csv, line 1: expected a header 'time,"),
    (plaincsv, "time,A_x,A_y,A_z,A_x,A_y,A_z\n0,1,2,3,4,5,6\n",
     r"bad\.csv, line 1: duplicated marker name 'A'"),
]


@pytest.mark.parametrize("mod,text,match", ERROR_CASES,
                         ids=[f"{m.__name__.rsplit('.', 1)[-1]}-{i}"
                              for i, (m, _, _) in enumerate(ERROR_CASES)])
def test_error_messages_name_file_line_and_expectation(tmp_path, mod, text, match):
    suffix = ".tsv" if mod is qualisys else ".csv"
    path = write_text(tmp_path, "bad" + suffix, text)
    with pytest.raises(FormatError, match=match):
        mod.read(path)


@pytest.mark.parametrize("mod", list(MODULES.values()))
def test_empty_and_binary_files(tmp_path, mod):
    empty = write_text(tmp_path, "empty.csv", "\n \n")
    with pytest.raises(FormatError, match=r"empty\.csv: the file is empty"):
        mod.read(empty)
    junk = tmp_path / "junk.csv"
    junk.write_bytes(b"Trajectories\n100\n\x00\x01\x02garbage")
    with pytest.raises(FormatError, match=r"junk\.csv: binary content"):
        mod.read(junk)


def test_errors_found_on_the_fast_path_name_the_line_in_a_long_file(tmp_path):
    data = make_data(t_n=3000)
    path = tmp_path / "long.csv"
    vicon.write(data, path)
    lines = path.read_bytes().split(b"\r\n")
    cells = lines[2505].split(b",")  # file line 2506
    cells[-1] = b"12.5.6"
    lines[2505] = b",".join(cells)
    path.write_bytes(b"\r\n".join(lines))
    with pytest.raises(FormatError, match=r"long\.csv, line 2506, field 'P3 Z': expected a "
                                          r"number \(found '12\.5\.6'\)"):
        vicon.read(path)
    lines[2505] = lines[2505].replace(b",0,", b",zero,", 1)
    path.write_bytes(b"\r\n".join(lines))
    with pytest.raises(FormatError, match=r"long\.csv, line 2506, field 'Sub Frame'"):
        vicon.read(path)


def test_detection_skips_leading_blank_lines_and_reads_mixed_vicon_units(tmp_path):
    text = "\n\n,,,\n" + ("Trajectories\n100\n,,A,,,B,,\nFrame,Sub Frame,X,Y,Z,X,Y,Z\n"
                          ",,mm,mm,mm,m,m,m\n1,0,1,2,3,0.004,0.005,0.006\n")
    path = write_text(tmp_path, "lead.csv", text)
    assert mocap.detect_format(path) == "vicon-csv"
    d = mocap.read_capture(path)
    np.testing.assert_allclose(d.xyz_m[0], [[0.001, 0.002, 0.003], [0.004, 0.005, 0.006]])
    plain = write_text(tmp_path, "p.csv", "\nTime,A_x,A_y,A_z\n0,1,2,3\n0.5,1,2,3\n")
    assert mocap.detect_format(plain) == "plain-csv"
    assert mocap.read_capture(plain).rate_hz == pytest.approx(2.0)


MOTIVE_EULER = """\
Format Version,1.23,Take Name,T,Export Frame Rate,100,Rotation Type,XYZ,Length Units,Meters

,Type,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Marker,Marker,Marker
,Name,RB,RB,RB,RB,RB,RB,M1,M1,M1
,ID,1,1,1,1,1,1,7,7,7
,,Rotation,Rotation,Rotation,Position,Position,Position,Position,Position,Position
Frame,Time (Seconds),X,Y,Z,X,Y,Z,X,Y,Z
0,0.000000,10,20,30,0.5,0.6,0.7,1.25,2.5,-0.75
1,0.010000,10,20,30,0.5,0.6,0.7,,,
"""


def test_motive_euler_rotation_kept_apart_and_not_rewritten(tmp_path):
    d = motive.read(write_text(tmp_path, "euler.csv", MOTIVE_EULER))
    body = d.extras["rigid_bodies"]["RB"]
    assert body["rotation_type"] == "XYZ"
    np.testing.assert_allclose(body["euler_deg"][0], [10, 20, 30])
    np.testing.assert_allclose(body["position_m"][1], [0.5, 0.6, 0.7])
    np.testing.assert_allclose(d.xyz_m[0, 0], [1.25, 2.5, -0.75])
    motive.write(d, tmp_path / "again.csv")  # Euler poses are not written back
    assert "rigid_bodies" not in motive.read(tmp_path / "again.csv").extras
