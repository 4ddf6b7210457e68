"""A person's postures that disagree with one tree of rigid links hold the tissue the body
may carry in their own standard errors.

Tissue stiffer than the rig's highest mode adds apparent mass in its upper modes; each
posture's rigid fit takes it for a larger inertia and a moved COM, every posture alike. Their
scatter about one rigid tree shows that something moved inside the body, but a scale of the
standard errors by that scatter (the Birge ratio) holds only the part that differs between
postures. The session then fits every posture again holding the tissue it may carry
(rigtool.identify.posture.tissue_fit.hold_unseen_tissue), keeps that allowance out of what
the subset fit takes (which would otherwise estimate the model's shifts from the postures'
disagreement), and the Soft tissue check says why.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from rigtool.identify.subset.postures_file import load_postures
from rigtool.pipeline.posture import posture_overall
from rigtool.pipeline.session import postures_disagree
from rigtool.report.checks_living import soft_tissue_check

ROOT = Path(__file__).resolve().parents[1]


def test_postures_disagree_only_beyond_their_standard_errors():
    """The demo's three postures as measured agree with one tree; with one posture's COM
    moved 0.3 mm (some 20 of its standard errors) they do not, and the clause says by how
    much."""
    demo = load_postures(ROOT / "captures" / "two-link" / "postures.toml")
    assert postures_disagree(demo.tree, list(demo.postures), demo.total_mass_kg) == ""
    moved = list(demo.postures)
    moved[2] = replace(moved[2], com_base_m=moved[2].com_base_m + np.array([0.0, 0.0, 3e-4]))
    said = postures_disagree(demo.tree, moved, demo.total_mass_kg)
    assert "disagreed with one tree of rigid links" in said and "reduced chi-square" in said


def test_the_subset_fit_takes_a_posture_without_its_held_tissue():
    """What a posture holds in its own standard errors alone is taken off the covariance the
    subset fit weighs it by; errors it shares with the others stay in it."""
    g = np.array([1e-3, -2e-3, 0.0, 4e-3, 0.0, 0.0, 0.0, 1e-3, 0.0])
    own = np.diag(np.full(9, 1e-6))
    result = SimpleNamespace(name="p", com=np.zeros(3), com_std=np.full(3, 1e-3),
                             inertia_com=np.eye(3), inertia_com_std=np.full((3, 3), 1e-3),
                             covariance9=own + np.outer(g, g))
    posture = SimpleNamespace(result=result, rotations={}, rotation_cov={}, shared_errors={},
                              held_errors={"link0@6Hz": g})
    np.testing.assert_allclose(posture_overall(posture).covariance9, own, atol=1e-18)
    shared = replace_ns(posture, held_errors={}, shared_errors={"link0@6Hz": g})
    np.testing.assert_allclose(posture_overall(shared).covariance9, own + np.outer(g, g))


def replace_ns(ns: SimpleNamespace, **changes) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(ns), **changes})


HELD = {"held_because": "the postures fitted rigid disagreed with one tree of rigid links "
                        "(Phi_s's reduced chi-square 70.8 over 3 postures)",
        "frequencies_hz": [3.0, 6.0, 13.0], "com_std_m": [1e-4, 2e-3, 1e-3],
        "inertia_com_std": np.full((3, 3), 0.05)}


def _session_held(**signs) -> SimpleNamespace:
    """One posture whose bands see one mass (0.5 kg apart at 1 kg) and whose tissue was held
    for the postures' disagreement, with ``signs`` added to its living signs."""
    bands = [{"band_hz": [0.15, 1.0], "mass_kg": 105.8, "object_mass_kg": 80.8, "std_kg": 0.1},
             {"band_hz": [1.6, 8.0], "mass_kg": 106.3, "object_mass_kg": 81.3, "std_kg": 1.0}]
    posture = SimpleNamespace(
        result=SimpleNamespace(name="p1"), living_signs={
            "apparent_mass": bands, "rhythm": {}, "rate_hz": 120.0,
            "base_on_platform": {"rms_mm": np.zeros(3), "r2": np.zeros(3),
                                 "frequency_hz": np.full(3, np.nan)}, **signs},
        marker_scatter_mm={}, marker_noise_mm=0.1, unseen_tissue=dict(HELD))
    return SimpleNamespace(postures=[posture], tree=None, total_mass_kg=80.8)


def test_the_soft_tissue_check_says_why_the_tissue_was_held():
    """No band tells tissue apart, the postures disagreed: a caution that names the
    disagreement, what the held tissue adds to the standard errors, and the other causes to
    look at."""
    out = _session_held()
    check = soft_tissue_check(out)
    assert check.level == "caution"
    assert "reduced chi-square 70.8" in check.finding
    assert "2.00-2.00 mm" in check.finding                  # what it adds to the COM's
    assert "breath" in check.meaning
    # without the disagreement the same bands are one mass
    out.postures[0].unseen_tissue = {}
    assert soft_tissue_check(out).level == "ok"


def test_a_breath_named_speaks_for_the_disagreement():
    """The same postures with the platform markers' residual at a breathing rhythm: the
    Breathing check names the breath and says what the held tissue adds; the Soft tissue
    check does not name tissue for it."""
    from rigtool.report.checks_living import breathing_check
    breath = {"frequency_hz": 0.25, "band_fraction": 0.9, "rms_mm": 1.0,
              "clear_of_modes": True, "n_markers": 4, "axis": 1}
    out = _session_held(residual_rhythm=breath)
    breathing = breathing_check(out)
    assert breathing.level == "problem" and "15/min" in breathing.finding
    assert "held in their standard errors" in breathing.meaning
    assert soft_tissue_check(out).level == "ok"
