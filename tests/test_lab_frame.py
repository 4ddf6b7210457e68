"""The measured lab frame fitted with the rig's calibration.

Checked independently of the fit: the frame's Jacobian columns against central differences
of the rows themselves; the moved rig against the simulator (a rig moved by a rigid motion
moves its trajectory by the same motion, since no dynamics change); and the calibration on
noise-free captures seen in a frame turned by 0.008 deg and shifted by 0.05 mm, which it
recovers while the springs and platform stay at their true values.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.engine.lab_frame import framed_rows, rig_in_frame, rotation_of
from rigtool.inertia import InertialParams
from rigtool.sim.dynamics import FixedBody, System, simulate
from rigtool.sim.markers import MarkerSet, synthesize_markers
from rigtool.sim.rigs import box_inertia, demo_rig

RATE = 100.0
FRAME = np.r_[np.radians([0.008, -0.005, 0.003]), 5e-5, -3e-5, 4e-5]


def test_frame_columns_match_central_differences():
    """At a frame far from identity (0.3 rad) so that the left Jacobian matters."""
    rng = np.random.default_rng(0)
    meas = rng.normal(0, 0.5, 30)
    r0 = rng.normal(0, 1.0, 30)                      # mm, in the rig's frame
    jac0 = rng.normal(0, 1.0, (30, 2))
    frame = np.r_[0.2, -0.1, 0.15, 0.01, 0.02, -0.03]
    r, jac = framed_rows(r0, jac0, meas, frame)
    assert jac.shape == (30, 8)
    # the physical columns: the rows' own change along them, turned into the measured frame
    for p in range(2):
        h = 1e-4
        rp = framed_rows(r0 + h * jac0[:, p], None, meas, frame)[0]
        rm = framed_rows(r0 - h * jac0[:, p], None, meas, frame)[0]
        np.testing.assert_allclose(jac[:, p], (rp - rm) / (2 * h), rtol=1e-7, atol=1e-8)
    for q in range(6):
        h = 1e-6
        step = np.zeros(6)
        step[q] = h
        rp = framed_rows(r0, None, meas, frame + step)[0]
        rm = framed_rows(r0, None, meas, frame - step)[0]
        np.testing.assert_allclose(jac[:, 2 + q], (rp - rm) / (2 * h), rtol=1e-6, atol=1e-6)
    # and the rows: R (measured + r0/1e3) + t - measured
    pred = (meas + 1e-3 * r0).reshape(-1, 3) @ rotation_of(frame).T + frame[3:]
    np.testing.assert_allclose(r, 1e3 * (pred.ravel() - meas), atol=1e-12)


def test_moved_rig_moves_the_trajectory_rigidly():
    """The simulator (which shares no code with the identification) in the moved rig gives
    the true trajectory moved by the frame: markers within 1e-9 m over 2 s."""
    rig, plat = demo_rig(spring_damping_n_s_m=3.0)
    frame = np.r_[np.radians([2.0, -1.0, 3.0]), 0.01, -0.02, 0.03]   # large, to be seen
    rot = rotation_of(frame)
    off = np.r_[0.005, -0.004, 0.003, 0.01, -0.02, 0.015]
    a = simulate(System(rig=rig, platform_params=plat), 2.0, RATE, platform_offset=off)
    moved = rig_in_frame(rig, frame)
    np.testing.assert_allclose(moved.gravity_lab, rot @ rig.gravity_lab)
    # the same initial excitation, expressed in the moved frame
    off_m = np.r_[rot @ off[:3], rot @ off[3:]]
    b = simulate(System(rig=moved, platform_params=plat), 2.0, RATE, platform_offset=off_m)
    markers = [MarkerSet("platform", rig.platform.markers_platform)]
    xa = synthesize_markers(a, markers, noise_sigma_m=0.0, rate_hz=RATE).xyz_m
    xb = synthesize_markers(b, markers, noise_sigma_m=0.0, rate_hz=RATE).xyz_m
    np.testing.assert_allclose(xb, xa @ rot.T + frame[3:], atol=1e-9)


@pytest.fixture(scope="module")
def turned_captures():
    """Noise-free calibration captures of the demo rig (empty, a block in two places), seen
    in a lab frame off by ``FRAME``."""
    rig, plat = demo_rig(spring_damping_n_s_m=4.0)
    from _calibration_sim import block_captures
    rot = rotation_of(FRAME)
    out = [(replace(data, xyz_m=data.xyz_m @ rot.T + FRAME[3:]), load) for data, load in
           block_captures(rig, plat, seconds=4.0, seed=5, rate_hz=RATE)]
    return rig, plat, out


@pytest.mark.slow
def test_calibration_recovers_the_lab_frame(turned_captures):
    """From a start 0.3 % / 0.5 mm / 1 % off: the frame to 1e-7 rad and 0.1 um, the springs
    and platform as without a frame (test_output_error's tolerances), residuals at the
    integrator's level; the fitted rig is the true one moved into the measured frame. Without
    the frame the same captures leave residuals of the frame's size (the reason for it)."""
    from rigtool.identify.calibration.output_error import OECapture, refine_calibration
    rig, plat, captures = turned_captures
    caps = [OECapture(f"c{i}", d, load) for i, (d, load) in enumerate(captures)]
    start_rig = replace(rig, springs=tuple(
        replace(s, stiffness=s.stiffness * 1.003, free_length=s.free_length + 5e-4)
        for s in rig.springs))
    start_plat = InertialParams.from_com(plat.mass * 1.005, plat.com + 1e-3,
                                         plat.inertia_com * 1.01)
    res = refine_calibration(start_rig, start_plat, caps, fit_frame=True)
    np.testing.assert_allclose(res.frame[:3], FRAME[:3], atol=5e-7)
    np.testing.assert_allclose(res.frame[3:], FRAME[3:], atol=5e-7)
    assert res.frame_covariance.shape == (6, 6)
    i_max = np.linalg.eigvalsh(plat.inertia_com)[-1]
    assert np.abs(res.rig.stiffness / rig.stiffness - 1).max() < 5e-5
    assert abs(res.platform.mass / plat.mass - 1) < 2e-5
    assert np.abs(res.platform.inertia_com - plat.inertia_com).max() / i_max < 2e-4
    assert np.abs(res.rig.free_length - rig.free_length).max() < 2e-6
    assert max(res.residual_rms_mm.values()) < 2e-3
    moved = rig_in_frame(rig, FRAME)
    for s, t in zip(res.rig.springs, moved.springs):
        np.testing.assert_allclose(s.anchor_lab, t.anchor_lab, atol=1e-6)
    np.testing.assert_allclose(res.rig.gravity_lab, moved.gravity_lab, atol=9.81 * 5e-7)
    plain = refine_calibration(start_rig, start_plat, caps)
    assert plain.frame is None
    assert max(plain.residual_rms_mm.values()) > 5 * max(res.residual_rms_mm.values())


@pytest.mark.parametrize("move", [np.r_[0, np.radians(0.002), 0, 0, 0, 0],
                                  np.r_[0, 0, 0, 2e-5, 0, 0]])
def test_lab_frame_error_is_propagated(move):
    """Noise-free posture data fitted on a rig whose lab frame is off by ``move`` (a turn of
    0.002 deg about y, a shift of 0.02 mm along x): the COM error that causes is what the
    posture fit's calibration term predicts for a member moving the frame by ``move``
    (closed-form frame columns, folded into the member's column), to first order."""
    from rigtool.identify.posture.equation_error import PostureResult
    from rigtool.identify.posture.output_error import refine_posture
    rig, plat = demo_rig(spring_damping_n_s_m=6.0)
    obj = InertialParams.from_com(45.0, np.array([0.03, -0.02, 0.30]),
                                  box_inertia(45.0, (0.5, 0.35, 0.6)))
    r_base, p_base = np.eye(3), np.array([0.05, -0.02, 0.04])
    system = System(rig=rig, platform_params=plat, fixed=(FixedBody("obj", obj, r_base,
                                                                     p_base),))
    traj = simulate(system, 5.0, RATE, platform_offset=np.r_[0.012, -0.01, 0.008, 0.03,
                                                              -0.025, 0.03])
    data = synthesize_markers(traj, [MarkerSet("platform", rig.platform.markers_platform)],
                              noise_sigma_m=0.0, rate_hz=RATE)
    z3, z9 = np.zeros(3), np.zeros((3, 3))
    com0 = obj.com + 1e-3
    start = PostureResult("p", obj.mass, com0, z3, obj.inertia_com, z9, obj, np.eye(9),
                          np.eye(12), obj, {}, np.zeros((1, 6)), np.zeros((1, 6)), np.zeros(1),
                          "exact", "noise", [])
    n = len(rig.springs)
    members = [("frame", 1.0, (plat.pi, rig.stiffness, rig.free_length, rig.damping), move)]
    cal_std = {"stiffness": np.zeros(n), "free_length": np.zeros(n), "damping": np.zeros(n),
               "platform_mass": 0.0, "platform_com": np.zeros(3),
               "platform_inertia_com": np.zeros((3, 3)), "members": members}
    res = refine_posture(rig_in_frame(rig, move), plat, data, base_rotation_platform=r_base,
                         base_position_platform=p_base, total_mass_kg=obj.mass, start=start,
                         substeps=2, calibration_std=cal_std)
    e_c = res.com - obj.com
    assert np.abs(e_c).max() > 1e-5                                # the error is visible
    cal_part = np.sqrt(res.com_std ** 2 - res.com_std_noise ** 2)
    np.testing.assert_allclose(cal_part, np.abs(e_c), rtol=0.05, atol=3e-7)


@pytest.mark.slow
def test_calibrate_command_fits_the_lab_frame(demo_run, tmp_path, capsys):
    """`rigtool calibrate --lab-frame fit` on the bundled (optical mocap) demo: the frame is
    the rig file's within 3 standard errors, written with its standard errors; the anchors
    and gravity are the moved ones; the covariance carries the frame's six entries last, and
    reading the rig back gives members that move the frame. With the equation-error method
    the option is refused (exit 2)."""
    import tomllib
    from rigtool.calibration_uncertainty import FRAME_PARAMETERS, calibration_std_from_rigfile
    from rigtool.cli import main
    from rigtool.config import load_rig
    tmp, _ = demo_run
    rig_in = tmp / "calibration" / "paper-rig.toml"
    out = tmp_path / "framed.toml"
    assert main(["calibrate", str(rig_in), "-o", str(out), "--lab-frame", "fit"]) == 0
    assert "lab frame fitted" in capsys.readouterr().out
    doc = tomllib.loads(out.read_text())
    lab = doc["calibration"]["lab_frame"]
    rot, rot_sd = np.array(lab["rotation_vector_deg"]), np.array(lab["rotation_std_deg"])
    tr, tr_sd = np.array(lab["translation_mm"]), np.array(lab["translation_std_mm"])
    assert np.all(np.abs(rot) < 3 * rot_sd) and np.all(np.abs(tr) < 3 * tr_sd)
    assert doc["calibration"]["covariance"]["parameters"][-6:] == list(FRAME_PARAMETERS)
    source = load_rig(rig_in)
    cal = load_rig(out)
    frame = np.r_[np.radians(rot), 1e-3 * tr]
    moved = rig_in_frame(source.rig, frame)
    for s, t in zip(cal.rig.springs, moved.springs):
        np.testing.assert_allclose(s.anchor_lab, t.anchor_lab, atol=1e-8)
    np.testing.assert_allclose(cal.rig.gravity_lab, moved.gravity_lab, atol=1e-6)
    members = calibration_std_from_rigfile(cal.raw, cal.rig, path=out)["members"]
    assert all(m[3] is not None and m[3].shape == (6,) for m in members)
    assert max(np.abs(m[3][:3]).max() for m in members) > 0
    assert main(["calibrate", str(rig_in), "-o", str(tmp_path / "ee.toml"), "--lab-frame",
                 "fit", "--method", "equation-error"]) == 2
    assert "--lab-frame" in capsys.readouterr().err


def test_a_posture_tracked_in_another_lab_frame_is_flagged(tmp_path):
    """The run's check: a posture whose track side file has another lab frame than the one
    the rig's calibration captures were tracked in gets a warning naming the difference."""
    import json
    from rigtool.pipeline.lab_frames import posture_lab_frame_warning
    cal_frame = {"frame": "body", "rotation_cam_lab": np.eye(3).tolist(),
                 "translation_cam_lab_m": [0.0, 0.0, 1.5], "from": "empty.track.json"}
    raw = {"calibration": {"lab_frame": {"fitted": True, "camera_lab_frame": cal_frame}}}
    capture = tmp_path / "posture1.csv"
    assert posture_lab_frame_warning(raw, capture) is None            # not a camera capture
    side = tmp_path / "posture1.track.json"
    side.write_text(json.dumps({"lab_frame": cal_frame}))
    assert posture_lab_frame_warning(raw, capture) is None            # the same frame
    turned = Rotation.from_rotvec(np.radians([0.002, 0, 0])).as_matrix()
    side.write_text(json.dumps({"lab_frame": {**cal_frame, "rotation_cam_lab": turned.tolist()}}))
    note = posture_lab_frame_warning(raw, capture)
    assert "0.00200 deg" in note and "--lab-frame empty.track.json" in note


@pytest.mark.slow
def test_frame_clustered_calibration_covariance(turned_captures):
    """Each frame's markers moved together (one rigid error per frame, as a camera's pose
    places a body's corners): the Gauss-Newton covariance, which counts every coordinate as
    independent, is too small (by up to sqrt(4) with the rig's four markers); the
    frame-clustered one is the size of the estimates' spread over noise draws (Monte Carlo
    of 12 draws, whose standard deviation is itself uncertain by about 20 %)."""
    from rigtool.identify.calibration.output_error import OECapture, refine_calibration
    rig, plat, captures = turned_captures
    rng = np.random.default_rng(11)
    est, sd_gn, sd_fc = [], [], []
    mk = np.array(list(rig.platform.markers_platform.values()))
    centre = mk.mean(0)
    for _ in range(12):
        caps = []
        for i, (d, load) in enumerate(captures):
            t_n = d.n_frames
            # per frame one small rigid move of all markers (3e-5 m, 3e-5 rad)
            shift = rng.normal(0, 3e-5, (t_n, 1, 3))
            turn = rng.normal(0, 3e-5, (t_n, 1, 3))
            xyz = d.xyz_m + shift + np.cross(turn, d.xyz_m - centre)
            caps.append(OECapture(f"c{i}", replace(d, xyz_m=xyz), load))
        gn = refine_calibration(rig, plat, caps, fit_frame=True)
        fc = refine_calibration(rig, plat, caps, fit_frame=True, standard_errors="frame")
        np.testing.assert_allclose(fc.frame, gn.frame)               # the estimate is the same
        est.append(gn.frame)
        sd_gn.append(np.sqrt(np.diag(gn.frame_covariance)))
        sd_fc.append(np.sqrt(np.diag(fc.frame_covariance)))
    spread = np.std(est, axis=0, ddof=1)
    ratio_gn = spread / np.mean(sd_gn, axis=0)
    ratio_fc = spread / np.mean(sd_fc, axis=0)
    # four markers moving together: Gauss-Newton is too small by up to sqrt(4) = 2
    assert ratio_gn.mean() > 1.4, ratio_gn
    assert 0.7 < ratio_fc.mean() < 1.4 and np.all((ratio_fc > 0.5) & (ratio_fc < 2.0)), \
        ratio_fc


def test_calibration_start_is_raised_off_a_singular_second_moment():
    """A thin platform's equation-error start can land next to a singular COM-centred
    second moment (rendered camera captures: Sigma_zz 5e-6 instead of 3e-3 kg m^2, the
    other moments within 0.2 %), where the log-Cholesky parameters have no gradient along
    it; the refinement then stopped at 0.029 mm instead of the 0.009 mm it reaches from a
    raised start. The raise (object_to_z's floor at the
    calibration's START_SIGMA_FLOOR): eigenvalues of Sigma below 1e-3 of the largest lifted
    to it, mass and COM kept, a good start left alone."""
    from rigtool.identify.calibration.oe_result import _platform_pi, _platform_z
    from rigtool.identify.calibration.output_error import START_SIGMA_FLOOR
    _, plat = demo_rig()
    turn = Rotation.from_rotvec([0.1, -0.2, 0.3]).as_matrix()
    sigma = turn @ np.diag([3.0, 0.75, 5e-6]) @ turn.T           # a flat plate, turned
    flat = InertialParams.from_com(plat.mass, plat.com, np.trace(sigma) * np.eye(3) - sigma)
    raised = InertialParams(_platform_pi(_platform_z(flat, floor=START_SIGMA_FLOOR)))
    s_r = 0.5 * np.trace(raised.inertia_com) * np.eye(3) - raised.inertia_com
    lam, vec = np.linalg.eigh(s_r)
    np.testing.assert_allclose(lam, [3e-3, 0.75, 3.0], rtol=1e-9)
    assert abs(abs(vec[:, 0] @ turn[:, 2]) - 1) < 1e-9           # along the plate's normal
    assert raised.mass == pytest.approx(flat.mass, rel=1e-12)
    assert np.allclose(raised.com, flat.com, rtol=0, atol=1e-12)
    assert raised.is_physically_consistent()
    kept = InertialParams(_platform_pi(_platform_z(plat, floor=START_SIGMA_FLOOR)))
    np.testing.assert_allclose(kept.pi, plat.pi, rtol=1e-12, atol=1e-14)   # 4 cm: 1.1e-3
