"""The campaigns' account of a number's cause: a number far off counts as named only by a
check of a cause the subject has, and a check naming an effect the subject lacks is a false
cause."""

from __future__ import annotations

from benchmarks.testbed.compare import false_causes, named_by_cause

TISSUE = {"tissue": {"fraction": 0.22, "frequency_hz": 8.1}}
BACK = {"back": {"frequency_hz": [5.6]}}


def test_a_number_is_named_by_a_check_of_the_subjects_own_cause():
    row = {"named_by": ["mass", "soft_tissue", "phi_s"]}
    assert named_by_cause(row, TISSUE) == ["soft_tissue"]
    # the springs' scale names nothing on a body with tissue: not its cause
    assert named_by_cause({"named_by": ["mass", "phi_s"]}, TISSUE) == []
    # a rigid body: any check but one naming a living body's effect
    assert named_by_cause({"named_by": ["mass", "soft_tissue"]}, None) == ["mass"]


def test_a_check_naming_an_effect_the_subject_lacks_is_a_false_cause():
    checks = [{"key": "soft_tissue", "level": "problem"}, {"key": "support", "level": "caution"},
              {"key": "marker_residual", "level": "caution"}]
    assert false_causes(checks, BACK) == ["soft_tissue"]
    assert false_causes(checks, None) == ["soft_tissue", "support"]
    assert false_causes(checks, {**BACK, **TISSUE}) == []
