"""Rig file and session manifest: the SPEC examples load; bad fields name themselves."""

import textwrap

import numpy as np
import pytest

from rigtool.config import load_rig, load_session
from rigtool.errors import ConfigError

RIG = """
[rig]
name = "demo-rig"
gravity = [0.0, 0.0, -9.80665]
locked_dofs = []

[platform]
markers = { P1 = [0.45, 0.25, 0.02], P2 = [-0.45, 0.25, 0.02], P3 = [-0.45, -0.25, 0.02], P4 = [0.45, -0.25, 0.02] }

[[springs]]
name = "S1"
anchor = [0.60, 0.40, 1.20]
attachment = [0.45, 0.25, 0.05]

[[reference_bodies]]
name = "block-a"
mass = 10.0
com = [0.0, 0.0, 0.05]
inertia_com = [[0.05, 0, 0], [0, 0.08, 0], [0, 0, 0.10]]
markers = { RA1 = [0.1, 0.1, 0.1], RA2 = [-0.1, 0.1, 0.1], RA3 = [0.0, -0.1, 0.1] }

[[calibration_captures]]
capture = "demo-rig/empty.csv"
load = []
[[calibration_captures]]
capture = "demo-rig/block-a.csv"
load = ["block-a"]
"""

SESSION = """
[session]
name = "two-link-demo"
rig = "../../calibration/demo-rig.calibrated.toml"
total_mass = 80.817

[[links]]
name = "trunk"
parent = "platform"
markers = { T1 = [0.10, 0.02, 0.30], T2 = [-0.12, 0.05, 0.28], T3 = [0.0, -0.15, 0.31] }

[[links]]
name = "arm"
parent = "trunk"
joint = "spherical"
joint_center = [0.0, -0.30, 0.10]
markers = { A1 = [0.03, 0.05, -0.10], A2 = [-0.03, 0.04, -0.25], A3 = [0.02, -0.04, -0.30] }

[[postures]]
name = "posture1"
capture = "posture1.csv"
window = [0.5, 25.0]

[relative_motion]
capture = "swing.csv"
window = [3.0, 10.0]
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_spec_rig_example_loads(tmp_path):
    rf = load_rig(_write(tmp_path, "rig.toml", RIG))
    assert rf.rig.name == "demo-rig" and len(rf.rig.springs) == 1
    assert not rf.calibrated
    assert np.isclose(rf.reference_bodies["block-a"].params.mass, 10.0)
    assert rf.captures[1].load == ("block-a",)
    assert rf.captures[0].capture == tmp_path / "demo-rig/empty.csv"
    with pytest.raises(ConfigError, match="not calibrated"):
        rf.require_calibrated()


def test_spec_session_example_loads(tmp_path):
    s = load_session(_write(tmp_path, "session.toml", SESSION))
    assert s.tree.names == ["trunk", "arm"]
    assert s.filter.order == 50 and s.filter.passband_hz == 5.0
    assert s.postures[0].window == (0.5, 25.0)
    assert s.relative_motion.capture == tmp_path / "swing.csv"


@pytest.mark.parametrize("old,new,match", [
    ("anchor = [0.60, 0.40, 1.20]", "anchor = [0.60, 0.40]",
     r"field 'springs\[0\].anchor': expected an array of shape \(3,\)"),
    ('locked_dofs = []', 'locked_dofs = ["q"]', r"rig.locked_dofs.*expected one of"),
    ('load = ["block-a"]', 'load = ["block-b"]', r"unknown reference body 'block-b'"),
    ("[0, 0.08, 0]", "[0, 0.28, 0]", r"physically possible inertia"),
    ("mass = 10.0", "mass = -1.0", r"reference_bodies\[0\].mass.*positive"),
])
def test_rig_errors_name_the_field(tmp_path, old, new, match):
    with pytest.raises(ConfigError, match=match):
        load_rig(_write(tmp_path, "rig.toml", RIG.replace(old, new)))


def test_toml_syntax_error_names_file_and_line(tmp_path):
    p = _write(tmp_path, "rig.toml", RIG.replace("[platform]", "[platform"))
    with pytest.raises(ConfigError, match=r"rig.toml: not valid TOML.*line"):
        load_rig(p)


@pytest.mark.parametrize("old,new,match", [
    ("total_mass = 80.817", "", r"exactly one of total_mass"),
    ('parent = "trunk"', 'parent = "leg"', r"parent 'leg' must be a link listed before"),
    ("window = [0.5, 25.0]", "window = [25.0, 0.5]", r"postures\[0\].window"),
    ('joint = "spherical"', 'joint = "revolute"', r"links\[1\].joint.*expected one of spherical"),
])
def test_session_errors_name_the_field(tmp_path, old, new, match):
    with pytest.raises(ConfigError, match=match):
        load_session(_write(tmp_path, "session.toml", SESSION.replace(old, new)))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_rig(tmp_path / "nope.toml")


def test_link_priors_from_the_manifest(tmp_path):
    text = SESSION.replace('total_mass = 80.817', 'total_mass = 80.817\nsubject = { sex = "female" }')
    text = text.replace('name = "trunk"\nparent = "platform"',
                        'name = "trunk"\nparent = "platform"\nsegment = "trunk"\n'
                        'segment_start = [0.0, 0.0, 0.5]\nsegment_end = [0.0, 0.0, -0.1]')
    text = text.replace('\n[[postures]]',
                        '[links.prior]\nmass = 3.2\ncom = [0.0, 0.0, -0.12]\n'
                        'inertia_com = [[0.02, 0, 0], [0, 0.02, 0], [0, 0, 0.004]]\n'
                        'mass_std = 0.1\n\n[[postures]]')
    s = load_session(_write(tmp_path, "session.toml", text))
    assert s.subject_sex == "female"
    assert s.priors["trunk"].segment == "trunk"
    np.testing.assert_allclose(s.priors["trunk"].segment_end_m, [0.0, 0.0, -0.1])
    arm = s.priors["arm"]
    assert arm.segment is None and arm.mass_kg == 3.2 and arm.mass_std == 0.1
    assert arm.com_std is None
    np.testing.assert_allclose(arm.inertia_com[2, 2], 0.004)


@pytest.mark.parametrize("extra,match", [
    ('[links.prior]\nmass = 3.2\ncom = [0.0, 0.0, -0.1]\n', r"links\[1\].prior.*inertia_com"),
    ('[links.prior]\nmass = 3.2\ncom = [0, 0, 0]\ninertia_com = [[1, 0, 0], [0, 1, 0], '
     '[0, 0, 1]]\ndensity = 3\n', r"links\[1\].prior.density.*unknown key"),
    ('segment_end = [0, 0]\n', r"links\[1\].segment_end"),
])
def test_link_prior_errors_name_the_field(tmp_path, extra, match):
    text = SESSION.replace('\n[[postures]]', extra + '\n[[postures]]')
    with pytest.raises(ConfigError, match=match):
        load_session(_write(tmp_path, "session.toml", text))
