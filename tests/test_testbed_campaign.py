"""Three draws of a test-bed campaign (people on the demo rig): no internal error, and every
reported number within 5 of its standard errors or judged by a non-green check."""

from __future__ import annotations

import json

import pytest

from benchmarks import testbed_campaign as campaign


@pytest.mark.slow
def test_people_rigid_three_draws(tmp_path):
    out = tmp_path / "campaign"
    assert campaign.main(["--family", "people-rigid", "--draws", "3", "--seed", "1",
                          "--max-segments", "4", "--out", str(out)]) == 0
    res = json.loads((out / "summary.json").read_text())
    fig = res["figures"]
    assert fig["internal_errors"] == []
    assert fig["bad_input"] == []
    unnamed = [u for g in fig["groups"].values() for u in g["beyond_5se_unnamed"]]
    assert unnamed == []
