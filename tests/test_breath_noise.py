"""The measured breath's noise: its probes draw what the measurement leaves in the breath
coordinates, and the output-error posture fit carries that into its standard errors.

The probes are held against the measurement chain itself (many captures of one breath, each
with fresh marker noise on the link's rigid markers and on its wall markers, measured
again), and the posture fit's share of it against fits of the same capture with other
draws of the breath.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rigtool.kinematics.breath_motion import measure_breath
from rigtool.mocap import MarkerData

from _living_posture import simulated_posture

RATE = 100.0


def _rigid_cluster():
    return {"T1": np.array([0.1, -0.1, 0.05]), "T2": np.array([-0.12, -0.35, 0.02]),
            "T3": np.array([0.08, -0.45, -0.2]), "T4": np.array([-0.05, -0.2, -0.25])}


WALLS = {"CH1": np.array([0.05, -0.45, 0.06]), "AB1": np.array([-0.04, -0.15, 0.06])}


def _breathing_capture(seed: int, noise_m: float = 1e-4, held: bool = False) -> MarkerData:
    """A trunk cluster rocking in the lab with two wall markers breathing along its z (14/min,
    3 and 8 mm; ``held``: at the end of an exhale throughout), every marker with white
    noise of ``noise_m``."""
    t = np.arange(2000) / RATE
    breath = np.sin(2 * np.pi * 14 / 60 * t + 0.4 * np.sin(2 * np.pi * 0.05 * t))
    if held:
        breath = np.full_like(t, -1.0)
    rigid_m = _rigid_cluster()
    rot = np.stack([np.array([[np.cos(q), -np.sin(q), 0], [np.sin(q), np.cos(q), 0],
                              [0, 0, 1]]) for q in 0.02 * np.sin(2 * np.pi * 0.42 * t)])
    pos = np.stack([0.01 * np.sin(2 * np.pi * 0.41 * t), np.zeros_like(t),
                    1.0 + 0.003 * np.cos(2 * np.pi * 2.1 * t)], 1)
    body = np.stack(list(rigid_m.values()) + list(WALLS.values()))
    disp = np.zeros((t.size, 6, 3))
    disp[:, 4, 2] = 0.0015 * breath
    disp[:, 5, 2] = 0.004 * breath
    xyz = np.einsum("tij,tkj->tki", rot, body + disp) + pos[:, None, :]
    xyz += np.random.default_rng(seed).normal(0, noise_m, xyz.shape)
    return MarkerData(t, tuple(rigid_m) + tuple(WALLS), xyz, RATE)


@pytest.mark.slow
def test_breath_probes_draw_the_measurement_noise():
    """The smoothed breath of 30 captures with fresh noise scatters about the noise-free
    capture's as the probes of one capture scatter about its breath: their RMS agree within
    sampling (each side ~1,000 independent values: a few per cent; 0.8-1.25 allowed). The
    coordinates' own noise per frame is the wall markers' projected one and their link
    pose's (the fourth differences), not the breath (2.8 mm)."""
    t = np.arange(2000) / RATE
    clean = measure_breath(_breathing_capture(0, noise_m=0.0), {"link0": _rigid_cluster()},
                           {"link0": WALLS})
    truth = clean.at(t)[0][:, 0]
    measured = []
    for seed in range(1, 31):
        m = measure_breath(_breathing_capture(seed), {"link0": _rigid_cluster()},
                           {"link0": WALLS})
        assert m.n_components == 1
        measured.append(m.at(t)[0][:, 0] - truth)
    chain_rms = np.sqrt(np.mean(np.square(measured)))
    one = measure_breath(_breathing_capture(99), {"link0": _rigid_cluster()}, {"link0": WALLS})
    u = one.at(t)[0][:, 0]
    drawn = one.noise_probes(30, seed=5)
    probes = np.array([at(t)[0][:, 0] - u for at in drawn])
    probe_rms = np.sqrt(np.mean(probes ** 2))
    assert 0.8 < probe_rms / chain_rms < 1.25, (probe_rms, chain_rms)
    # the noise per frame: the wall markers' 0.1 mm along the breath's direction plus their
    # link's pose noise there (between 1 and 2 times the markers' own)
    assert 1e-4 < one.frame_noise_m[0] < 2e-4, one.frame_noise_m
    # the probes are the breath's derivatives' too
    d_probe = drawn[0](t)[1][:, 0] - one.at(t)[1][:, 0]
    np.testing.assert_allclose(d_probe, np.gradient(probes[0], t), atol=0.05 * np.ptp(d_probe))
    # seeded: the same draws every time
    np.testing.assert_array_equal(one.noise_probes(2, seed=5)[1](t)[0],
                                  one.noise_probes(2, seed=5)[1](t)[0])


def _breathing_posture(tmp_path, duration_s: float, seed: int):
    """The breathing scenario's first posture, ``duration_s`` long, its wall markers named
    as the trunk's breathing markers, with 0.1 mm marker noise of ``seed``: ``(session,
    rig file, the links' rigid markers, the noisy capture)``."""
    from rigtool.config import load_rig, load_session
    from rigtool.mocap import read_capture
    from rigtool.pipeline.links import link_markers

    simulated_posture(tmp_path, "breathing14.toml", duration_s)
    manifest = next(tmp_path.rglob("session.toml"))
    lines = manifest.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("markers = ")
              and "CH1" in line)
    lines.insert(at + 1, 'breathing_markers = ["CH1", "AB1"]')
    manifest.write_text("\n".join(lines) + "\n")
    session = load_session(manifest)
    ref = session.postures[0]
    data = read_capture(ref.capture, units=ref.units)
    data = replace(data, xyz_m=data.xyz_m + np.random.default_rng(seed).normal(
        0, 1e-4, data.xyz_m.shape))
    return session, load_rig(session.rig_path), link_markers(session, session.tree), data


@pytest.mark.slow
def test_posture_fit_carries_the_breath_measurement_noise(tmp_path, monkeypatch):
    """A 10 s breathing posture (the breathing scenario, its wall markers named, 0.1 mm
    marker noise) fitted by output error. The breath's measurement noise is most of its COM
    height's standard error (the marker noise's alone was a third of the misses' scatter
    over seeds). Fits of the same capture with five other draws of its breath move the COM
    by as much as that share says: their RMS shift over the share's standard error is 1
    in expectation (15 values, correlated by coordinate; 0.4-2.5 allowed, where leaving the
    share out or counting it per probe would be off by 5)."""
    import rigtool.pipeline.posture as posture_stage
    from rigtool.identify.posture.breathing import BreathInput

    session, rigfile, rigid, data = _breathing_posture(tmp_path, 10.0, 4)
    walls = session.breathing_markers
    assert set(walls["link0"]) == {"CH1", "AB1"} and "CH1" not in rigid["link0"]
    ref = session.postures[0]

    def fit():
        return posture_stage.fit_one_posture(
            session, rigfile, session.tree, rigid, ref.capture, name=ref.name,
            window=ref.window, units=ref.units, total_mass_kg=session.total_mass_kg,
            settings=session.filter, method="output-error", data=data)

    nominal = fit()
    oe = nominal.refinement
    share = oe.breath_input["com_std"]
    assert oe.breath_input["probes"] >= 20
    assert share[2] > 0.5 * nominal.result.com_std[2]      # most of the height's SE
    assert np.all(share <= nominal.result.com_std + 1e-12)

    measured, _ = posture_stage.measured_breath(data, rigid, walls, ref.window)
    shifts = []
    for at in measured.noise_probes(5, seed=123):
        drawn = BreathInput(at, measured.n_components, measured.summary)
        monkeypatch.setattr(posture_stage, "measured_breath",
                            lambda *a, drawn=drawn, **k: (drawn, {}))
        shifts.append(fit().result.com - nominal.result.com)
    ratio = np.sqrt(np.mean(np.square(shifts) / share ** 2))
    assert 0.4 < ratio < 2.5, (ratio, np.asarray(shifts), share)



@pytest.mark.slow
def test_postures_brought_to_the_session_breath(tmp_path):
    """A breathing posture fitted, and the same posture as if its capture's mean breath had
    stood 1 mm further out along its breath direction (its wall markers' mean place moved
    by that much). Brought to the session's mean breath, the two meet halfway: each moves
    its first moment by ``G_b u`` (``u`` = -/+ 0.5 mm, ``G_b`` the fitted breath's in the
    base frame), its covariance grows by that of ``G u`` and ``D u``, and Φ_s's covariance
    follows. A posture without a modelled breath is left as it was."""
    from rigtool.pipeline.breath_level import to_session_breath_level
    from rigtool.pipeline.posture import fit_one_posture

    session, rigfile, rigid, data = _breathing_posture(tmp_path, 8.0, 8)
    ref = session.postures[0]
    one = fit_one_posture(session, rigfile, session.tree, rigid, ref.capture, name=ref.name,
                          window=ref.window, units=ref.units,
                          total_mass_kg=session.total_mass_kg, settings=session.filter,
                          method="output-error", data=data)
    breath = one.result.breath
    direction = np.asarray(breath["summary"]["directions"][0])
    moved_summary = {**breath["summary"], "mean_link_mm": list(
        np.asarray(breath["summary"]["mean_link_mm"]) + 1.0 * direction)}
    other = replace(one, result=replace(one.result, breath={**breath,
                                                            "summary": moved_summary}))
    leveled = to_session_breath_level([one, other])
    g_b = np.asarray(one.breathing["G_kg"])[:, 0]
    mass = one.result.mass
    for o, before, u_mm in ((leveled[0], one, 0.5), (leveled[1], other, -0.5)):
        assert abs(o.breathing["level"]["offset_mm"][0] - u_mm) < 1e-9
        shift = o.result.params.pi[1:4] - before.result.params.pi[1:4]
        np.testing.assert_allclose(shift, g_b * u_mm * 1e-3, rtol=1e-3, atol=1e-12)
        np.testing.assert_allclose(o.result.com - before.result.com, shift / mass,
                                   rtol=1e-6, atol=1e-15)
        assert np.all(o.result.com_std >= before.result.com_std)
        assert np.all(np.diag(o.result.covariance9) >= np.diag(before.result.covariance9))
    assert "session's mean breath" in leveled[0].breathing["what"]
    rigid_one = replace(other, result=replace(other.result, breath=None))
    kept = to_session_breath_level([one, rigid_one])
    assert kept[0] is one and kept[1] is rigid_one


def test_base_link_shift_in_phi_b_moves_the_whole_body_by_it():
    """``phi_b_shift``: the base link's parameters about its origin gaining ``d`` (a held
    breath's first moment and inertia) move the body that Φ_B describes, in any posture, by
    exactly ``d`` (paper 002 eq. 5-6 through ``overall_from_phi_b``); ``relative_at_shift``
    adds it to a result's Φ_B and minimal parameters, and its covariance to the base link's
    entries."""
    from dataclasses import make_dataclass

    from rigtool.pipeline.breath_level import phi_b_shift, relative_at_shift
    from rigtool.sim.rigs import demo_tree
    from rigtool.tree import minimal_parameters, overall_from_phi_b, phi_b_vector

    tree = demo_tree()
    phi_b = phi_b_vector(minimal_parameters(tree))
    mass = sum(l.params.mass for l in tree.links)
    d = np.array([0.002, -0.011, -0.015, 0.009, 0.0014, 0.0003, 0.003, -0.0054, 0.0072])
    shift = phi_b_shift(tree, d)
    def about_x(angle):
        return np.array([[1.0, 0.0, 0.0], [0.0, np.cos(angle), -np.sin(angle)],
                         [0.0, np.sin(angle), np.cos(angle)]])

    movers = [l.name for l in tree.links[1:]]
    for rot in ({n: np.eye(3) for n in movers},
                {n: about_x(0.4 + 0.3 * i) for i, n in enumerate(movers)}):
        moved = overall_from_phi_b(tree, rot, phi_b + shift, mass).pi
        np.testing.assert_allclose(moved - overall_from_phi_b(tree, rot, phi_b, mass).pi,
                                   np.concatenate([[0.0], d]), atol=1e-12)
    names = [l.name for l in tree.links]
    cov = np.eye(phi_b.size) * 1e-8
    result = make_dataclass("R", [("values", object), ("minimal_parameters", object),
                                  ("covariance", object), ("std_phi_b", object)])(
        phi_b, {n: {"M": 1.0} for n in names}, cov, np.sqrt(np.diag(cov)))
    d_cov = np.diag(np.arange(1.0, 10.0)) * 1e-8
    moved = relative_at_shift(result, shift, tree, d_cov)
    np.testing.assert_allclose(moved.values, phi_b + shift)
    # the base link's shift covariance lands on its MS and J (xx yy zz yz zx xy) entries
    np.testing.assert_allclose(np.diag(moved.covariance)[:9] - 1e-8,
                               1e-8 * np.array([1, 2, 3, 4, 7, 9, 8, 6, 5]))
    np.testing.assert_allclose(moved.std_phi_b, np.sqrt(np.diag(moved.covariance)))
    assert np.allclose(np.diag(moved.covariance)[9:], 1e-8)
    np.testing.assert_allclose(moved.minimal_parameters[names[0]]["MS"],
                               phi_b[:3] + d[:3])
    assert moved.minimal_parameters[names[0]]["M"] == 1.0



def test_wall_marker_places_also_without_a_breath():
    """Where the wall markers sat on their link: the breath measurement's zero when it
    breathes, and their place when the breath is held (nothing to measure): at the end of an
    exhale here, 1.5 and 4 mm in along z, to the noise of a mean over 2,000 frames."""
    from rigtool.kinematics.breath_motion import wall_marker_places
    rigid_m, walls = {"link0": _rigid_cluster()}, {"link0": WALLS}
    breathing = _breathing_capture(3)
    place, names = wall_marker_places(breathing, rigid_m, walls)
    assert names == ["link0:CH1", "link0:AB1"]
    np.testing.assert_array_equal(place, measure_breath(breathing, rigid_m, walls).mean_link_m)
    held = _breathing_capture(3, held=True)
    assert measure_breath(held, rigid_m, walls) is None
    moved, _ = wall_marker_places(held, rigid_m, walls)
    expected = np.concatenate([WALLS["CH1"] + [0, 0, -0.0015], WALLS["AB1"] + [0, 0, -0.004]])
    np.testing.assert_allclose(moved, expected, atol=2e-5)
