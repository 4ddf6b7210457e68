"""Wobbling soft tissue: the apparent-mass filter against its closed form, and the
simulator's tissue (its own point mass on a damped spring, integrated with the rig)
against the posture fit's tissue model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import signal

from rigtool.identify.posture.soft_tissue import deflection_filter, increment_filter
from rigtool.protocol import apparent_mass_factor

from _living_posture import simulated_posture


def test_increment_filter_is_the_apparent_mass_less_one():
    """``H - 1`` at a rig mode ``r`` times the tissue's frequency is the closed-form apparent
    mass over the mass, less one; the deflection per acceleration is ``-1/wn^2`` at rest.
    Tustin's warp, ``(w T)^2 / 12`` in the frequency, is under 0.5 % of the factor up to
    r = 0.4 (the rig's modes at 100 Hz) and under 2 % at r = 0.75, where the factor's
    slope multiplies it."""
    rate, f_n, zeta = 100.0, 5.0, 0.3
    r = np.array([0.1, 0.4, 0.75])
    _, h = signal.freqz(*increment_filter(f_n, zeta, rate), worN=r * f_n, fs=rate)
    expected = np.array([apparent_mass_factor(x, zeta) for x in r]) - 1
    np.testing.assert_allclose(h[:2], expected[:2], rtol=0.005)
    np.testing.assert_allclose(h[2], expected[2], rtol=0.02)
    _, d = signal.freqz(*deflection_filter(f_n, zeta, rate), worN=[1e-6], fs=rate)
    np.testing.assert_allclose(d.real, -1 / (2 * np.pi * f_n) ** 2, rtol=1e-6)


@pytest.mark.slow
def test_simulated_tissue_is_measured_through(tmp_path):
    """A short noise-free posture of the two-link body with a fifth of its trunk wobbling at
    5 Hz (damping ratio 0.3). Fitted rigid, the tissue's apparent mass in the rig's upper
    modes costs millimetres; with one tissue element at its frequency the fit finds the
    tissue's mass (13.2 kg) within 5 % and its place at the trunk's COM within 15 mm, and
    the body's COM and inertia come back to within 0.3 mm and 0.4 % (the equation-error
    fit's own floor on such a capture: 0.03-0.05 mm, 0.05-0.17 %; the model is first order
    in the motion and leaves out the deflection's products with the rotation)."""
    from rigtool.identify.posture.equation_error import fit_posture
    from rigtool.identify.posture.soft_tissue import TissueElement
    import rigtool.pipeline.posture as posture_stage
    from rigtool.sim.living import Living, WobblingSpec

    trunk = WobblingSpec("link0", fraction=0.2, frequency_hz=5.0, damping_ratio=0.3)
    session, rigfile, markers, truth_doc = simulated_posture(
        tmp_path, "wobbling.toml", 8.0, living=Living(wobbling=(trunk,)))
    truth = truth_doc["postures"][0]
    link0 = truth_doc["links"][0]
    ref = session.postures[0]
    seen = {}

    def with_element(rig, platform, cap, **kw):
        rigid = fit_posture(rig, platform, cap, **kw)
        r_pb, t_pb = kw["base_rotation_platform"], kw["base_position_platform"]
        point = r_pb @ rigid.com + t_pb
        for _ in range(3):
            res = fit_posture(rig, platform, cap, tissue=(TissueElement(5.0, 0.3, point),),
                              **kw)
            beta = res.tissue["beta"]
            point = beta[1:] / beta[0]
        seen.update(rigid=rigid, mass=beta[0], point_base=r_pb.T @ (point - t_pb))
        return res

    original = posture_stage.fit_posture
    posture_stage.fit_posture = with_element
    try:
        # the tissue given here, not searched for: the pipeline's own tissue fits are off
        out = posture_stage.fit_one_posture(
            replace(session, soft_tissue="rigid"), rigfile, session.tree, markers, ref.capture, name=ref.name,
            window=ref.window, units=ref.units, total_mass_kg=session.total_mass_kg,
            settings=session.filter, method="equation-error")
    finally:
        posture_stage.fit_posture = original
    i_t = np.asarray(truth["inertia_com"])

    def errors(r):
        return (1e3 * np.linalg.norm(r.com - truth["com"]),
                100 * np.linalg.norm(r.inertia_com - i_t) / np.linalg.norm(i_t))

    rigid_com, _ = errors(seen["rigid"])
    com_mm, inertia_pct = errors(out.result)
    assert rigid_com > 2.0, errors(seen["rigid"])
    assert abs(seen["mass"] - 0.2 * link0["mass"]) < 0.05 * 0.2 * link0["mass"], seen["mass"]
    assert np.linalg.norm(seen["point_base"] - link0["com"]) < 0.015, seen["point_base"]
    assert com_mm < 0.3 and inertia_pct < 0.4, (com_mm, inertia_pct)


@pytest.mark.slow
def test_auto_fits_the_tissue_only_where_it_is(tmp_path):
    """``soft_tissue = "auto"`` (default): the evidence fit sees the simulated trunk's tissue
    and the posture is fitted with it (its element's mass within a fifth of the tissue's,
    noise-free); on the same body rigid it sees none and the posture is the rigid fit's."""
    from rigtool.pipeline.posture import fit_one_posture
    from rigtool.sim.living import Living, WobblingSpec

    trunk = WobblingSpec("link0", fraction=0.2, frequency_hz=5.0, damping_ratio=0.3)
    found = {}
    for name, living in (("tissue", Living(wobbling=(trunk,))), ("rigid", None)):
        session, rigfile, markers, truth = simulated_posture(
            tmp_path / name, "wobbling.toml", 8.0, living=living)
        ref = session.postures[0]
        out = fit_one_posture(session, rigfile, session.tree, markers, ref.capture,
                              name=ref.name, window=ref.window, units=ref.units,
                              total_mass_kg=session.total_mass_kg, settings=session.filter,
                              method="equation-error")
        found[name] = (out.soft_tissue, 0.2 * truth["links"][0]["mass"])
    element, tissue_kg = found["tissue"]
    assert element and abs(element["mass_kg"] - tissue_kg) < 0.2 * tissue_kg, element
    assert not found["rigid"][0]


@pytest.mark.slow
def test_other_tissue_is_held_in_the_standard_errors(tmp_path):
    """The two-link body with a fifth of its trunk at 5 Hz and a quarter of its leg at 8 Hz,
    noise-free: auto fits one element (the trunk's), and the leg's tissue, which it cannot
    follow, biases the body (its largest inertia entry by many times the fit's standard errors
    without it). Held as other tissue (a quarter of each link's prior mass at the stiffer
    grid frequencies) the standard errors cover that bias, within 3, and the estimate is the
    same."""
    import rigtool.pipeline.posture as posture_stage

    session, rigfile, markers, truth = simulated_posture(tmp_path, "wobbling.toml", 8.0)
    ref = session.postures[0]
    true = truth["postures"][0]
    iu = np.triu_indices(3)

    def fitted():
        out = posture_stage.fit_one_posture(
            session, rigfile, session.tree, markers, ref.capture, name=ref.name,
            window=ref.window, units=ref.units, total_mass_kg=session.total_mass_kg,
            settings=session.filter, method="equation-error")
        r = out.result
        z = np.concatenate([(r.com - true["com"]) / r.com_std,
                            ((r.inertia_com - true["inertia_com"]) / r.inertia_com_std)[iu]])
        return r, z, out.soft_tissue

    held, z_held, tissue = fitted()
    original = posture_stage.other_tissue_of_links
    posture_stage.other_tissue_of_links = lambda *args, **kwargs: ()
    try:
        alone, z_alone, _ = fitted()
    finally:
        posture_stage.other_tissue_of_links = original
    priors = {l["name"]: l["prior"]["mass"] for l in session.raw["links"]}
    assert tissue["other_tissue"]["mass_std_kg"] == pytest.approx(
        {name: 0.25 * m for name, m in priors.items()})
    assert tissue["other_tissue"]["mass_std_from"] == "a quarter of each link's prior mass"
    np.testing.assert_allclose(held.params.pi, alone.params.pi, rtol=1e-12, atol=1e-15)
    assert np.max(np.abs(z_alone)) > 5, z_alone
    assert np.max(np.abs(z_held)) < 3, z_held


@pytest.mark.slow
def test_unseen_tissue_of_a_body_on_its_soft_back_is_held(tmp_path):
    """The two-link body with a fifth of its trunk wobbling at 5 Hz, lying on the soft
    tissue of its back (5 Hz shear, 9 Hz compression), noise-free. The back's motion is
    measured through; where the tissue is then not seen, the rigid estimate carries it (its
    COM and inertia many times the fit's own standard errors off), and the tissue held in
    the standard errors covers that, within 3, with the estimate the same. On the same body
    without the tissue nothing is held unless the back rides."""
    import rigtool.pipeline.posture as posture_stage
    from rigtool.sim.living import Living, SupportSpec, WobblingSpec

    trunk = WobblingSpec("link0", fraction=0.2, frequency_hz=5.0, damping_ratio=0.3)
    session, rigfile, markers, truth = simulated_posture(
        tmp_path, "support.toml", 8.0, living=Living(wobbling=(trunk,), support=SupportSpec()))
    ref = session.postures[0]
    true = truth["postures"][0]
    iu = np.triu_indices(3)

    def fitted(soft_tissue):
        out = posture_stage.fit_one_posture(
            replace(session, soft_tissue=soft_tissue), rigfile, session.tree, markers,
            ref.capture, name=ref.name, window=ref.window, units=ref.units,
            total_mass_kg=session.total_mass_kg, settings=session.filter,
            method="equation-error")
        r = out.result
        z = np.concatenate([(r.com - true["com"]) / r.com_std,
                            ((r.inertia_com - true["inertia_com"]) / r.inertia_com_std)[iu]])
        return out, z

    original = posture_stage.tissue_evidence
    # the tissue as the living body's other effects hide it (noise-free it would be seen)
    posture_stage.tissue_evidence = lambda *a, **k: {**original(*a, **k), "seen": False}
    try:
        held, z_held = fitted("auto")
    finally:
        posture_stage.tissue_evidence = original
    rigid, z_rigid = fitted("rigid")
    assert held.support and not held.soft_tissue and held.unseen_tissue
    assert set(held.shared_errors) == {f"{link}@{f:g}Hz" for link in ("link0", "link1")
                                       for f in held.unseen_tissue["frequencies_hz"]}
    np.testing.assert_allclose(held.result.params.pi, rigid.result.params.pi, rtol=1e-12,
                               atol=1e-15)
    assert np.max(np.abs(z_rigid)) > 5, z_rigid
    assert np.max(np.abs(z_held)) < 3, z_held


def test_an_element_held_at_half_the_body_is_at_its_limit():
    """at_mass_limit: the element's mass within one standard error of the most one element
    may hold (half the body)."""
    from rigtool.identify.posture.tissue_fit import MAX_MASS_FRACTION, TissueFit

    def element(mass, std):
        return TissueFit(None, None, mass, std, np.zeros(3), [])

    body = 80.0
    assert element(39.0, 9.8).at_mass_limit(body)
    assert not element(13.2, 2.5).at_mass_limit(body)
    assert element(MAX_MASS_FRACTION * body, 0.0).at_mass_limit(body)


def test_other_tissue_without_priors_says_where_it_came_from():
    """A link without a prior: each link's tissue is a quarter of the body's mass shared
    equally, at its markers' centroid, and the tissue says it did not come from priors."""
    from dataclasses import replace
    from rigtool.config import load_session
    from rigtool.identify.posture.tissue_fit import _prior_source
    from rigtool.pipeline.links import link_markers
    from rigtool.pipeline.posture import other_tissue_of_links

    session = load_session(Path(__file__).resolve().parents[1] / "captures" / "two-link"
                           / "session.toml")
    markers = link_markers(session, session.tree)
    poses = {l.name: (np.eye(3), np.zeros(3)) for l in session.tree.links}
    with_priors = other_tissue_of_links(session.tree, session, 80.0, markers, poses)
    without = other_tissue_of_links(session.tree, replace(session, priors={}), 80.0, markers,
                                    poses)
    assert all(o.from_prior for o in with_priors) and not any(o.from_prior for o in without)
    assert [o.mass_std_kg for o in without] == pytest.approx([0.25 * 40.0] * 2)
    np.testing.assert_allclose(without[1].point_platform_m,
                               np.mean(list(markers["link1"].values()), axis=0))
    assert "shared equally" in _prior_source(without)


def test_the_postures_evidence_for_tissue_is_taken_together():
    """The tissue is the body's: its element's mass at 6 Hz is one number every posture
    measures. One posture at 3.5 standard errors among four at noise is chance (together
    about 1.6); five at 4-6 standard errors, as the simulated wobbling body's, are tissue
    (together about 11); the inverse-variance mean and its standard error are exact."""
    from rigtool.identify.posture.tissue_fit import joint_tissue_evidence
    body = 80.0
    chance = [{"mass_kg": 3.5, "mass_std_kg": 1.0}] + [
        {"mass_kg": m, "mass_std_kg": 1.0} for m in (0.3, -0.4, 0.2, -0.1)]
    together = joint_tissue_evidence(chance, body)
    assert not together["seen"] and together["postures"] == 5
    assert together["mass_kg"] == pytest.approx(3.5 / 5)
    assert together["mass_std_kg"] == pytest.approx(1 / np.sqrt(5))
    tissue = [{"mass_kg": m, "mass_std_kg": s} for m, s in
              ((13.0, 2.6), (12.0, 2.4), (14.0, 3.0), (11.0, 2.2), (15.0, 2.5))]
    w = np.array([1 / e["mass_std_kg"] ** 2 for e in tissue])
    together = joint_tissue_evidence(tissue, body)
    assert together["seen"]
    assert together["mass_kg"] == pytest.approx(
        np.sum(w * [e["mass_kg"] for e in tissue]) / w.sum())
    # significant but under 2 % of the body: not tissue worth an element
    small = [{"mass_kg": 1.0, "mass_std_kg": 0.1}] * 3
    assert not joint_tissue_evidence(small, body)["seen"]
    assert not joint_tissue_evidence([{}, {"mass_kg": 1.0, "mass_std_kg": 0.0}], body)["seen"]


def test_a_session_settles_the_tissue_over_its_postures():
    """One posture's element that the others contradict is refitted without it (and the note
    names it); an element every posture shows sends the postures fitted rigid to be fitted
    with it. The refits are asked for exactly those postures, and nothing is refitted when
    no posture saw tissue."""
    from dataclasses import dataclass
    from types import SimpleNamespace

    from rigtool.pipeline.session import settle_tissue

    @dataclass(frozen=True)
    class _Session:
        soft_tissue: str = "auto"

    def outcome(name, mass, std, element):
        return SimpleNamespace(result=SimpleNamespace(name=name), soft_tissue=element,
                               tissue_evidence={"mass_kg": mass, "mass_std_kg": std})

    calls = []

    def refit(as_session, indices, extra):
        calls.append((as_session.soft_tissue, list(indices), dict(extra)))
        return [outcome(f"again{i}", 0.0, 1.0, {"mass_kg": 1.0} if not extra else {})
                for i in indices]

    chance = [outcome("p0", 3.5, 1.0, {"mass_kg": 3.5}), outcome("p1", 0.2, 1.0, {}),
              outcome("p2", -0.3, 1.0, {})]
    notes = settle_tissue(_Session(), chance, 80.0, refit, lambda _: None)
    assert calls == [("auto", [0], {"tissue_seen": False})]
    assert chance[0].result.name == "again0" and not chance[0].soft_tissue
    assert len(notes) == 1 and "not borne out" in notes[0]
    calls.clear()
    seen = [outcome("p0", 13.0, 2.5, {"mass_kg": 13.0}), outcome("p1", 11.0, 2.5, {}),
            outcome("p2", 14.0, 2.5, {"mass_kg": 14.0})]
    assert settle_tissue(_Session(), seen, 80.0, refit, lambda _: None) == []
    assert calls == [("measured", [1], {})]
    calls.clear()
    rigid = [outcome("p0", 0.1, 1.0, {}), outcome("p1", -0.2, 1.0, {})]
    assert settle_tissue(_Session(), rigid, 80.0, refit, lambda _: None) == [] and not calls
    assert settle_tissue(_Session("rigid"), seen, 80.0, refit, lambda _: None) == []
    assert not calls
