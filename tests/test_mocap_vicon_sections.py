"""Vicon Nexus CSV with its five sections, in any order: only Trajectories holds markers.

The file is built here section by section as Nexus lays them out (title, rate, names,
components, units, data, an empty line): Devices at 1000 Hz with sub-frames (force plate
channels and EMG), Joints and Segments (RX, RY, RZ, TX, TY, TZ), Model Outputs with
``Magnitude( X )`` columns, and Trajectories, whose markers may carry derived columns after
their X, Y, Z (velocities X', Y', Z' and a ``Magnitude( X' )``) and which may end with the
``Trajectory Count`` column (component ``Count``, an empty units cell, an integer per frame).
Positions are written with 6 decimals in mm, so they read back to 5e-7 mm.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rigtool.errors import FormatError
from rigtool.mocap import detect_format, read_capture

SECTIONS = ("Devices", "Joints", "Model Outputs", "Segments", "Trajectories")
N_FRAMES, FIRST, RATE = 12, 301, 100.0
MARKERS = ("Sub:LASI", "Sub:RASI", "Sub:LPSI")


def _truth() -> np.ndarray:
    xyz = np.random.default_rng(4).uniform(-1500, 1500, size=(N_FRAMES, len(MARKERS), 3))
    xyz[3:6, 1] = np.nan
    return xyz


def _section(title: str, rate: float, names: list[tuple[str, list[str], list[str]]],
             rows: list[list[str]]) -> list[list[str]]:
    """Title, rate, names over their first column, components, units, data rows."""
    name_row, comp_row, unit_row = ["", ""], ["Frame", "Sub Frame"], ["", ""]
    for name, comps, units in names:
        name_row += [name] + [""] * (len(comps) - 1)
        comp_row += comps
        unit_row += units
    return [[title], [f"{rate:g}"], name_row, comp_row, unit_row] + rows


def _trajectories(xyz: np.ndarray, derived: bool,
                  count: list[str] | None = None) -> list[list[str]]:
    comps = ["X", "Y", "Z"] + (["X'", "Y'", "Z'", "Magnitude( X' )"] if derived else [])
    units = ["mm"] * 3 + (["mm/s"] * 4 if derived else [])
    names = [(m, comps, units) for m in MARKERS]
    if derived:  # a name over a magnitude alone: not a marker
        names.append(("Sub:CentreOfMass", ["Magnitude( X )"], ["mm"]))
    if count is not None:  # the last column: trajectories seen per frame, no units
        names.append(("Trajectory Count", ["Count"], [""]))
    vel = np.gradient(np.nan_to_num(xyz), axis=0) * RATE
    rows = []
    for t in range(N_FRAMES):
        row = [str(FIRST + t), "0"]
        for j in range(len(MARKERS)):
            if np.isnan(xyz[t, j]).any():
                row += [""] * len(comps)
                continue
            row += [f"{v:.6f}" for v in xyz[t, j]]
            if derived:
                row += [f"{v:.6f}" for v in vel[t, j]] + [f"{np.linalg.norm(vel[t, j]):.6f}"]
        if derived:
            row += ["1000.5"]
        if count is not None:
            row += [count[t]]
        rows.append(row)
    return _section("Trajectories", RATE, names, rows)


def _other(title: str) -> list[list[str]]:
    rng = np.random.default_rng(len(title))
    if title == "Devices":
        names = [("Force Plate 1 - Force", ["Fx", "Fy", "Fz"], ["N"] * 3),
                 ("Force Plate 1 - Moment", ["Mx", "My", "Mz"], ["N.mm"] * 3),
                 ("Force Plate 1 - CoP", ["Cx", "Cy", "Cz"], ["mm"] * 3),
                 ("Delsys - EMG", ["LTA", "LGM"], ["V"] * 2)]
        rows = [[str(FIRST + t), str(s)] + [f"{v:.4f}" for v in rng.normal(size=11)]
                for t in range(N_FRAMES) for s in range(10)]
        return _section(title, 1000.0, names, rows)
    if title in ("Joints", "Segments"):
        comps = ["RX", "RY", "RZ", "TX", "TY", "TZ"]
        units = ["deg"] * 3 + ["mm"] * 3
        names = [(f"Sub:{n}", comps, units) for n in (("LHip", "RHip") if title == "Joints"
                                                      else ("Pelvis", "LFemur"))]
        rows = [[str(FIRST + t), "0"] + [f"{v:.4f}" for v in rng.normal(size=12)]
                for t in range(N_FRAMES)]
        return _section(title, RATE, names, rows)
    names = [("Sub:LAnkleAngles", ["X", "Y", "Z"], ["deg"] * 3),
             ("Sub:LGroundReactionForce", ["X", "Y", "Z", "Magnitude( X )"], ["N"] * 4),
             ("Sub:LHipPower", ["Magnitude( X )"], ["W"]),
             ("Sub:LKneeMoment", ["X", "Y", "Z"], ["N.mm"] * 3)]
    rows = [[str(FIRST + t), "0"] + [f"{v:.4f}" for v in rng.normal(size=11)]
            for t in range(N_FRAMES)]
    return _section(title, RATE, names, rows)


def nexus_csv(order, *, derived: bool = False, pad: bool = True,
              blank_inside: str | None = None, count: list[str] | None = None) -> str:
    """The export, sections in ``order``; ``pad`` pads every line to the widest (as Nexus).

    ``blank_inside`` names a section that gets an empty line after its third data row;
    ``count`` the cells of a ``Trajectory Count`` column ending Trajectories, one per frame.
    """
    xyz = _truth()
    lines: list[list[str]] = []
    for title in order:
        block = (_trajectories(xyz, derived, count) if title == "Trajectories"
                 else _other(title))
        if title == blank_inside:
            block = block[:8] + [[]] + block[8:]
        lines += block + [[]]
    width = max(len(row) for row in lines)
    if pad:
        lines = [row + [""] * (width - len(row)) for row in lines]
    return "\r\n".join(",".join(row) for row in lines) + "\r\n"


def _check(d, order) -> None:
    xyz = _truth()
    assert d.format == "vicon-csv" and d.names == MARKERS and d.rate_hz == RATE
    assert d.n_frames == N_FRAMES and d.first_frame == FIRST and d.units == "mm"
    assert d.missing_counts() == {"Sub:LASI": 0, "Sub:RASI": 3, "Sub:LPSI": 0}
    np.testing.assert_array_equal(np.isnan(d.xyz_m), np.isnan(xyz))
    np.testing.assert_allclose(d.xyz_m, xyz * 1e-3, atol=5.1e-10, rtol=0)
    before = order[:order.index("Trajectories")]
    skipped = (f"read the Trajectories section; skipped {', '.join(before)}",) if before else ()
    assert d.notes[:len(skipped)] == skipped


@settings(max_examples=25, deadline=None, derandomize=True)
@given(order=st.permutations(SECTIONS), pad=st.booleans())
def test_five_sections_in_any_order(tmp_path_factory, order, pad):
    path = tmp_path_factory.mktemp("nexus") / "trial.csv"
    path.write_text(nexus_csv(order, pad=pad), newline="")
    assert detect_format(path) == "vicon-csv"
    d = read_capture(path)
    _check(d, list(order))
    assert len(d.notes) == (1 if order.index("Trajectories") else 0)


@pytest.mark.parametrize("order", [SECTIONS, SECTIONS[::-1]])
def test_trajectories_with_velocity_and_magnitude_columns(tmp_path, order):
    path = tmp_path / "trial.csv"
    path.write_text(nexus_csv(order, derived=True), newline="")
    d = read_capture(path)
    _check(d, list(order))
    assert d.notes[-1] == ("Trajectories: skipped 13 columns that are not marker positions "
                           "(X', Y', Z', Magnitude( X' ), Sub:CentreOfMass (Magnitude( X )))")


@pytest.mark.parametrize("section", ["Devices", "Model Outputs"])
def test_a_skipped_section_may_hold_an_empty_line(tmp_path, section):
    path = tmp_path / "trial.csv"
    path.write_text(nexus_csv(SECTIONS, blank_inside=section), newline="")
    _check(read_capture(path), list(SECTIONS))


def test_trajectories_with_a_broken_marker_is_still_refused(tmp_path):
    text = nexus_csv(SECTIONS, pad=False).replace(
        "Frame,Sub Frame,X,Y,Z,X,Y,Z,X,Y,Z", "Frame,Sub Frame,X,Y,Z,X,Y,Q,X,Y,Z")
    path = tmp_path / "bad.csv"
    path.write_text(text, newline="")
    with pytest.raises(FormatError, match=r"bad\.csv, line \d+, field 'column 6': expected "
                                          r"X,Y,Z components under marker 'Sub:RASI' "
                                          r"\(found 'X,Y,Q'\)"):
        read_capture(path)


def test_no_trajectories_section_names_the_sections_found(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(nexus_csv(("Devices", "Model Outputs", "Segments")), newline="")
    with pytest.raises(FormatError, match=r"bad\.csv: no 'Trajectories' block; .* \(it has: "
                                          r"Devices, Model Outputs, Segments\)"):
        read_capture(path)


# --- the Trajectory Count column ------------------------------------------------------------

#: Markers with a position in each frame of ``_truth()`` (Sub:RASI is missing in 3..5).
PRESENT = np.isfinite(_truth()).all(axis=2).sum(axis=1)
COUNT_HEAD = "Trajectories: skipped the 'Trajectory Count' column (trajectories seen per frame)"


def _cells(counts) -> list[str]:
    return [str(c) for c in counts]


def test_truth_has_frames_with_two_and_three_markers():
    assert PRESENT.tolist() == [3, 3, 3, 2, 2, 2, 3, 3, 3, 3, 3, 3]


@pytest.mark.parametrize("derived", [False, True])
@pytest.mark.parametrize("order", [SECTIONS, SECTIONS[::-1]])
def test_trajectory_count_column_is_skipped_with_a_note(tmp_path, order, derived):
    path = tmp_path / "trial.csv"
    path.write_text(nexus_csv(order, derived=derived, count=_cells(PRESENT)), newline="")
    d = read_capture(path)
    _check(d, list(order))
    assert d.notes[-1] == f"{COUNT_HEAD}; it matches the markers present in all 12 frames"
    before = 1 if order.index("Trajectories") else 0
    assert len(d.notes) == before + (2 if derived else 1)
    if derived:  # the derived columns' note is unchanged by the count column
        assert d.notes[-2].startswith("Trajectories: skipped 13 columns that are not marker "
                                      "positions (X', Y', Z', Magnitude( X' ), ")


def test_unpadded_lines_end_with_the_count(tmp_path):
    # Without padding the component row ends with "Count": the layout that was refused.
    text = nexus_csv(("Trajectories",), pad=False, count=_cells(PRESENT))
    assert "\r\nFrame,Sub Frame,X,Y,Z,X,Y,Z,X,Y,Z,Count\r\n" in text
    assert ",,mm,mm,mm,mm,mm,mm,mm,mm,mm,\r\n" in text
    path = tmp_path / "trial.csv"
    path.write_text(text, newline="")
    d = read_capture(path)
    _check(d, ["Trajectories"])
    assert d.notes == (f"{COUNT_HEAD}; it matches the markers present in all 12 frames",)


def test_a_count_that_disagrees_is_noted(tmp_path):
    counts = PRESENT.copy()
    counts[[1, 2]] += 1  # an unlabelled trajectory the export has no column for
    counts[7] -= 1
    path = tmp_path / "trial.csv"
    path.write_text(nexus_csv(SECTIONS, count=_cells(counts)), newline="")
    d = read_capture(path)
    _check(d, list(SECTIONS))
    assert d.notes[-1] == (f"{COUNT_HEAD}; it disagrees with the markers present in 3 of 12 "
                           "frames (count above in 2, below in 1), first at frame 302: count "
                           "4, markers present 3")


def test_empty_count_cells_are_not_compared(tmp_path):
    cells = _cells(PRESENT)
    cells[0] = cells[11] = ""
    path = tmp_path / "trial.csv"
    path.write_text(nexus_csv(SECTIONS, count=cells), newline="")
    d = read_capture(path)
    _check(d, list(SECTIONS))
    assert d.notes[-1] == (f"{COUNT_HEAD}; it matches the markers present in all 10 frames; "
                           "2 frames have no count")


def _data_line(text: str, frame: int) -> int:
    """1-based line of the Trajectories row of ``frame``."""
    lines = text.split("\r\n")
    title = next(i for i, ln in enumerate(lines) if ln.split(",")[0] == "Trajectories")
    return title + 1 + 5 + (frame - FIRST)  # title, rate, names, components, units


@pytest.mark.parametrize("cell, message", [
    ("3x", r"field 'Trajectory Count': expected a number \(found '3x'\)"),
    ("2.5", r"field 'Trajectory Count': expected a whole number of trajectories \(>= 0\) "
            r"\(found 2\.5\)"),
    ("-1", r"field 'Trajectory Count': expected a whole number of trajectories \(>= 0\) "
           r"\(found -1\.0\)"),
])
def test_a_bad_count_is_refused_naming_the_line(tmp_path, cell, message):
    cells = _cells(PRESENT)
    cells[4] = cell
    text = nexus_csv(SECTIONS, count=cells)
    path = tmp_path / "bad.csv"
    path.write_text(text, newline="")
    line = _data_line(text, FIRST + 4)
    assert text.split("\r\n")[line - 1].startswith(f"{FIRST + 4},0,")
    with pytest.raises(FormatError, match=rf"bad\.csv, line {line}, {message}"):
        read_capture(path)


def test_a_row_cut_before_its_count_is_refused(tmp_path):
    text = nexus_csv(("Trajectories",), pad=False, count=_cells(PRESENT))
    line = _data_line(text, FIRST + 2)
    rows = text.split("\r\n")
    rows[line - 1] = rows[line - 1].rsplit(",", 1)[0]  # the count cell and its comma gone
    path = tmp_path / "bad.csv"
    path.write_text("\r\n".join(rows), newline="")
    with pytest.raises(FormatError, match=rf"bad\.csv, line {line}: ragged row: 11 fields "
                                          r"where 12 were expected \(truncated line\?\)"):
        read_capture(path)


def test_count_under_another_component_is_still_refused(tmp_path):
    text = nexus_csv(("Trajectories",), pad=False, count=_cells(PRESENT)).replace(
        "X,Y,Z,Count", "X,Y,Z,Total")
    path = tmp_path / "bad.csv"
    path.write_text(text, newline="")
    with pytest.raises(FormatError, match=r"bad\.csv, line 4, field 'column 12': expected "
                                          r"X,Y,Z components under marker 'Trajectory Count' "
                                          r"\(found 'Total'\)"):
        read_capture(path)


def test_inspect_and_convert_report_the_count_note(tmp_path, capsys):
    from rigtool.cli import main

    counts = PRESENT.copy()
    counts[0] += 1
    path = tmp_path / "trial.csv"
    path.write_text(nexus_csv(SECTIONS, count=_cells(counts)), newline="")
    note = (f"{COUNT_HEAD}; it disagrees with the markers present in 1 of 12 frames (count "
            "above in 1, below in 0), first at frame 301: count 4, markers present 3")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr()
    assert out.err == "" and out.out.splitlines()[-2:] == [
        "note: read the Trajectories section; skipped Devices, Joints, Model Outputs, Segments",
        f"note: {note}"]
    out_csv = tmp_path / "out.csv"
    assert main(["convert", str(path), "-o", str(out_csv)]) == 0
    out = capsys.readouterr()
    assert out.err == "" and out.out.splitlines() == [
        f"wrote {out_csv}: plain-csv, 3 markers, 12 frames at 100 Hz (from vicon-csv {path})",
        "note: read the Trajectories section; skipped Devices, Joints, Model Outputs, Segments",
        f"note: {note}"]
    back = read_capture(out_csv)
    np.testing.assert_allclose(back.xyz_m, _truth() * 1e-3, atol=1e-9)


@pytest.mark.parametrize("command", ["inspect", "convert"])
def test_a_bad_count_exits_2_with_one_message(tmp_path, capsys, command):
    from rigtool.cli import main

    cells = _cells(PRESENT)
    cells[4] = "2.5"
    text = nexus_csv(SECTIONS, count=cells)
    path = tmp_path / "bad.csv"
    path.write_text(text, newline="")
    out_csv = tmp_path / "o.csv"
    args = [command, str(path)] + (["-o", str(out_csv)] if command == "convert" else [])
    assert main(args) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err == (
        f"rigtool {command}: error: {path}, line {_data_line(text, FIRST + 4)}, field "
        "'Trajectory Count': expected a whole number of trajectories (>= 0) (found 2.5)\n")
    assert not out_csv.exists()
