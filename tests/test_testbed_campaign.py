"""Three draws of test-bed campaigns: no internal error, and every reported number within 5
of its standard errors or judged by a non-green check; for robots also robot.urdf nearer
the truth than the CAD prior and summing to the weighed mass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import testbed_campaign as campaign


def _honest_campaign(out):
    """The campaign's summary and figures, asserted free of internal errors, refused input
    and numbers beyond 5 standard errors that no check names."""
    res = json.loads((out / "summary.json").read_text())
    fig = res["figures"]
    assert fig["internal_errors"] == []
    assert fig["bad_input"] == []
    unnamed = [u for g in fig["groups"].values() for u in g["beyond_5se_unnamed"]]
    assert unnamed == []
    return res, fig


@pytest.mark.slow
@pytest.mark.campaign
def test_people_rigid_three_draws(tmp_path):
    out = tmp_path / "campaign"
    assert campaign.main(["--family", "people-rigid", "--draws", "3", "--seed", "1",
                          "--max-segments", "4", "--out", str(out)]) == 0
    _honest_campaign(out)


@pytest.mark.slow
@pytest.mark.campaign
def test_robots_three_draws(tmp_path):
    """Seed 3: an xArm7 whose prior has an inconsistent link, a Z1, an xArm7 (two sized
    rigs). robot.urdf's links hold the weighed mass to within three of the scale's 0.1 %
    standard errors."""
    out = tmp_path / "campaign"
    assert campaign.main(["--family", "robots", "--draws", "3", "--seed", "3",
                          "--out", str(out)]) == 0
    res, fig = _honest_campaign(out)
    assert fig["farther_than_prior"] == []
    assert [s["robot"] for s in res["sessions"]] == ["xarm7", "z1", "xarm7"]
    assert res["sessions"][0]["prior_inconsistent_links"] == 1
    for s in res["sessions"]:
        m = json.loads(Path(s["truth"]).read_text())["total_mass"]
        assert abs(s["robot_vs_prior"]["robot_urdf_mass_kg"] - m) <= 3e-3 * m


@pytest.mark.slow
@pytest.mark.campaign
def test_rigs_three_draws(tmp_path):
    """Three rigs drawn around the demo's (platform, anchors, stiffness, free lengths,
    damping, marker noise), each calibrated from its reference captures, the demo's body on
    each."""
    out = tmp_path / "campaign"
    assert campaign.main(["--family", "rigs", "--draws", "3", "--seed", "1",
                          "--out", str(out)]) == 0
    res, _ = _honest_campaign(out)
    assert all(s["calibrate_exit"] == 0 for s in res["sessions"])


@pytest.mark.slow
@pytest.mark.campaign
def test_people_living_three_draws(tmp_path):
    """The demo's body with every living effect at once (breathing with its wall markers
    named, wobbling tissue, a soft back, skin drift), then wobbling tissue alone and skin
    drift alone, each drawn over the literature's ranges."""
    out = tmp_path / "campaign"
    assert campaign.main(["--family", "people-living", "--draws", "3", "--seed", "1",
                          "--kinds", "all,tissue,skin", "--out", str(out)]) == 0
    res, _ = _honest_campaign(out)
    assert [s["living"] for s in res["sessions"]] == ["all", "tissue", "skin"]
    assert all(s["status"] == "done" for s in res["sessions"])
