"""Vicon Nexus CSV with its five sections, in any order: only Trajectories holds markers.

The file is built here section by section as Nexus lays them out (title, rate, names,
components, units, data, an empty line): Devices at 1000 Hz with sub-frames (force plate
channels and EMG), Joints and Segments (RX, RY, RZ, TX, TY, TZ), Model Outputs with
``Magnitude( X )`` columns, and Trajectories, whose markers may carry derived columns after
their X, Y, Z (velocities X', Y', Z' and a ``Magnitude( X' )``). Positions are written with
6 decimals in mm, so they read back to 5e-7 mm.
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


def _trajectories(xyz: np.ndarray, derived: bool) -> list[list[str]]:
    comps = ["X", "Y", "Z"] + (["X'", "Y'", "Z'", "Magnitude( X' )"] if derived else [])
    units = ["mm"] * 3 + (["mm/s"] * 4 if derived else [])
    names = [(m, comps, units) for m in MARKERS]
    if derived:  # a name over a magnitude alone: not a marker
        names.append(("Sub:CentreOfMass", ["Magnitude( X )"], ["mm"]))
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
              blank_inside: str | None = None) -> str:
    """The export, sections in ``order``; ``pad`` pads every line to the widest (as Nexus).

    ``blank_inside`` names a section that gets an empty line after its third data row.
    """
    xyz = _truth()
    lines: list[list[str]] = []
    for title in order:
        block = _trajectories(xyz, derived) if title == "Trajectories" else _other(title)
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
