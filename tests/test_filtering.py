"""Zero-phase filter, derivatives, gap filling and filtered motion against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.config import FilterSettings
from rigtool.errors import InputError
from rigtool.kinematics.filtering import (ZeroPhaseFilter, derivative, design_fir, fill_gaps,
                                          segments)
from rigtool.kinematics.motion import Motion, motion_from_pose, right_jacobian
from rigtool.kinematics.pose import fit_pose

FIR = FilterSettings()
BUTTER = FilterSettings("butterworth", 4, 5.0, 10.0)


def sine(f, rate, seconds=10.0, phase=0.3):
    t = np.arange(int(seconds * rate)) / rate
    return t, np.sin(2 * np.pi * f * t + phase)


@pytest.mark.parametrize("rate", [120.0, 100.0])
@pytest.mark.parametrize("f", [1.0, 2.0, 3.0])
def test_fir_passes_1_to_3_hz_without_gain_or_phase_error(rate, f):
    t, x = sine(f, rate)
    filt = ZeroPhaseFilter(FIR, rate)
    y = filt(x)
    k = filt.transient_frames
    # 0.1 % of the amplitude bounds both gain error and a phase shift (d phi ~ error)
    assert np.max(np.abs(y[k:-k] - x[k:-k])) < 1e-3
    # fitted phase shift, directly
    c = np.exp(-2j * np.pi * f * t[k:-k])
    assert abs(np.angle(np.sum(y[k:-k] * c) / np.sum(x[k:-k] * c))) < 1e-4


def test_fir_design_response_and_stopband():
    b = design_fir(120.0)
    assert len(b) == 51 and np.allclose(b, b[::-1])  # linear phase (symmetric taps)
    filt = ZeroPhaseFilter(FIR, 120.0)
    assert np.all(np.abs(filt.response(np.linspace(0, 5, 50)) - 1) < 5e-4)
    assert np.all(filt.response(np.linspace(10, 60, 200)) < 10 ** (-40 / 20))  # gain of the fwd-bwd pair
    t, x = sine(20.0, 120.0)
    y = filt(x)
    assert np.max(np.abs(y[60:-60])) < 1e-2  # -40 dB


def test_butterworth_is_zero_phase_and_passes_low_frequencies():
    t, x = sine(1.0, 120.0)
    filt = ZeroPhaseFilter(BUTTER, 120.0)
    k = filt.transient_frames
    assert 0 < k < 120
    assert np.max(np.abs(filt(x)[k:-k] - x[k:-k])) < 1e-3


def test_filter_settings_errors():
    with pytest.raises(InputError, match="below half the frame rate"):
        ZeroPhaseFilter(FIR, 15.0)
    with pytest.raises(InputError, match="field 'filter.method'"):
        ZeroPhaseFilter(FilterSettings("kalman"), 120.0)
    with pytest.raises(InputError, match="Butterworth order between 1 and 12"):
        ZeroPhaseFilter(FilterSettings("butterworth", 50), 120.0)


@pytest.mark.parametrize("order", [1, 2])
def test_derivative_amplitude_error_at_4_hz_after_filtering(order):
    rate, f = 120.0, 4.0
    t, x = sine(f, rate)
    w = 2 * np.pi * f
    exact = (w * np.cos(w * t + 0.3)) if order == 1 else (-w ** 2 * np.sin(w * t + 0.3))
    filt = ZeroPhaseFilter(FIR, rate)
    k = filt.transient_frames
    d = derivative(filt(x), rate, order)
    # < 0.05 % of the derivative's amplitude, filter passband error included
    assert np.max(np.abs(d[k:-k] - exact[k:-k])) < 5e-4 * w ** order
    # the stencil alone is far better (6th order: (w h)^6 / 140 ~ 6e-7)
    d_raw = derivative(x, rate, order)
    assert np.max(np.abs(d_raw[3:-3] - exact[3:-3])) < 5e-6 * w ** order
    # one-sided end stencils remain accurate
    assert np.max(np.abs(d_raw - exact)) < 1e-3 * w ** order


def test_derivative_is_exact_for_polynomials_up_to_degree_6_everywhere():
    t = np.arange(20) / 100.0
    x = np.stack([1 + t - 3 * t ** 3 + 2 * t ** 6, t ** 2], axis=1)
    d1 = np.stack([1 - 9 * t ** 2 + 12 * t ** 5, 2 * t], axis=1)
    d2 = np.stack([-18 * t + 60 * t ** 4, 2 + 0 * t], axis=1)
    assert np.allclose(derivative(x, 100.0, 1), d1, atol=1e-8)
    assert np.allclose(derivative(x, 100.0, 2), d2, atol=1e-6)
    with pytest.raises(InputError, match="order 1 or 2"):
        derivative(x, 100.0, 3)


def test_fill_gaps_short_interpolated_long_and_edge_left_nan():
    rate = 120.0
    t, x = sine(1.5, rate, seconds=4.0)
    x = np.stack([x, np.cos(t)], axis=1)
    y = x.copy()
    y[100:106] = np.nan         # 6 frames: short (max 0.1 s = 12 frames)
    y[200:230, 0] = np.nan      # 30 frames: long, one component only
    y[:3] = np.nan              # leading edge: nothing to interpolate from
    filled, interp = fill_gaps(y, rate_hz=rate, max_gap_s=0.1)
    assert interp[100:106].all() and interp.sum() == 6
    # cubic-spline error across a gap of length L: ~ L^4 max|x^(4)| / 384 (L = 7 frames)
    bound = (7 / rate) ** 4 * (2 * np.pi * 1.5) ** 4 / 384
    assert np.max(np.abs(filled[100:106] - x[100:106])) < 2 * bound
    assert np.isnan(filled[200:230, 0]).all() and np.isfinite(filled[200:230, 1]).all()
    assert np.isnan(filled[:3]).all()
    assert np.array_equal(filled[np.isfinite(y)], y[np.isfinite(y)])


def test_zero_phase_splits_on_gaps_and_flags_transients():
    rate = 120.0
    t, x = sine(2.0, rate, seconds=6.0)
    x[300:340] = np.nan            # long gap splits the record
    x[700:] = np.nan
    x[690:700] = 1.0               # short island: shorter than a segment may be
    x[680:690] = np.nan
    filt = ZeroPhaseFilter(FIR, rate)
    y = filt(x)
    assert segments(np.isfinite(y)) == [(0, 300), (340, 680)]
    k = filt.transient_frames
    steady = filt.steady(np.isfinite(y))
    assert segments(steady) == [(k, 300 - k), (340 + k, 680 - k)]
    _, clean = sine(2.0, rate, seconds=6.0)
    assert np.max(np.abs(y[steady] - clean[steady])) < 1e-3
    # a bound filter applies the same segments to another signal
    bound = filt.bound(np.isfinite(y))
    z = bound(np.stack([clean, 2 * clean], axis=1))
    assert np.allclose(z[:, 0], y, equal_nan=True) and np.isnan(z[300:340]).all()


# ---------------------------------------------------------------- motion, closed forms

RATE = 120.0


def rz(a):
    c, s = np.cos(a), np.sin(a)
    z, o = np.zeros_like(a), np.ones_like(a)
    return np.stack([np.stack([c, -s, z], -1), np.stack([s, c, z], -1),
                     np.stack([z, z, o], -1)], axis=1)


def ry(b):
    c, s = np.cos(b), np.sin(b)
    z, o = np.zeros_like(b), np.ones_like(b)
    return np.stack([np.stack([c, z, s], -1), np.stack([z, o, z], -1),
                     np.stack([-s, z, c], -1)], axis=1)


def coning(t, a0, fa, b0, fb):
    """R = Rz(alpha) Ry(beta) with sinusoidal alpha, beta; closed-form omega and alpha."""
    wa, wb = 2 * np.pi * fa, 2 * np.pi * fb
    al, ald, aldd = a0 * np.sin(wa * t), a0 * wa * np.cos(wa * t), -a0 * wa ** 2 * np.sin(wa * t)
    be, bed, bedd = (b0 * np.sin(wb * t + 0.5), b0 * wb * np.cos(wb * t + 0.5),
                     -b0 * wb ** 2 * np.sin(wb * t + 0.5))
    rot = rz(al) @ ry(be)
    ez = np.array([0.0, 0.0, 1.0])
    ey_rot = np.stack([-np.sin(al), np.cos(al), np.zeros_like(al)], axis=1)  # Rz(al) e_y
    omega = ald[:, None] * ez + bed[:, None] * ey_rot
    alpha = (aldd[:, None] * ez + bedd[:, None] * ey_rot
             + (bed * ald)[:, None] * np.cross(ez, ey_rot))
    return rot, omega, alpha


def trajectory(rot, pos, markers, sigma=0.0, seed=0):
    rng = np.random.default_rng(seed)
    xyz = np.einsum("tij,kj->tki", rot, markers) + pos[:, None, :]
    return xyz + rng.normal(0, sigma, xyz.shape)


MK = np.array([[0.3, 0.1, 0.0], [-0.2, 0.25, 0.05], [-0.1, -0.3, 0.1], [0.2, -0.1, -0.15]])


def translation(t):
    w = 2 * np.pi * 1.3
    a = np.array([0.02, -0.01, 0.005])
    p = np.array([0.5, 0.2, 1.0]) + a * np.sin(w * t)[:, None]
    return p, a * w * np.cos(w * t)[:, None], -a * w ** 2 * np.sin(w * t)[:, None]


@pytest.mark.parametrize("case", ["fixed_axis_small", "coning_small", "coning_large"])
def test_motion_matches_closed_form(case):
    t = np.arange(int(8 * RATE)) / RATE
    if case == "fixed_axis_small":
        rot, omega, alpha = coning(t, 0.05, 1.7, 0.0, 1.0)
        rot = Rotation.from_euler("xyz", [0.4, -1.0, 2.0]).as_matrix() @ rot
        r0 = Rotation.from_euler("xyz", [0.4, -1.0, 2.0]).as_matrix()
        omega, alpha = omega @ r0.T, alpha @ r0.T
    elif case == "coning_small":
        rot, omega, alpha = coning(t, 0.3, 1.1, 0.2, 1.9)
    else:  # swings of +-170 deg: the rotation vector would wrap (quaternion path)
        rot, omega, alpha = coning(t, 2.97, 0.35, 0.4, 0.6)
    pos, vel, acc = translation(t)
    traj = fit_pose(trajectory(rot, pos, MK), MK, time_s=t)
    m = motion_from_pose(traj, FIR, rate_hz=RATE)
    assert isinstance(m, Motion)
    v = m.valid
    k = m.filter.transient_frames
    assert not v[:k].any() and not v[-k:].any() and v[k:-k].all()
    rt = np.swapaxes(rot, -1, -2)
    omega_b = np.einsum("tij,tj->ti", rt, omega)
    alpha_b = np.einsum("tij,tj->ti", rt, alpha)

    def rel(est, ref):  # worst error relative to the signal's peak magnitude
        return np.max(np.linalg.norm(est[v] - ref[v], axis=1)) / np.max(
            np.linalg.norm(ref[v], axis=1))

    # filter passband error < 0.05 % (|H|^2) plus stencil error ~1e-6 plus the part of the
    # motion's (nonlinear) harmonics beyond the passband: allow 0.3 %
    tol = 3e-3
    assert rel(m.omega_lab, omega) < tol
    assert rel(m.omega_body, omega_b) < tol
    assert rel(m.alpha_lab, alpha) < tol
    assert rel(m.alpha_body, alpha_b) < tol
    assert rel(m.velocity_lab, vel) < tol
    assert rel(m.accel_lab, acc) < tol
    err = Rotation.from_matrix(np.swapaxes(m.rotation[v], -1, -2) @ rot[v]).magnitude()
    assert np.max(err) < 1e-3 * max(0.05, np.max(np.linalg.norm(omega, axis=1)) / 10)
    assert np.allclose(np.linalg.det(m.rotation[v]), 1.0)
    assert np.allclose(m.accel_body(np.array([0, 0, -9.81]))[v],
                       np.einsum("tij,tj->ti", rt, acc - [0, 0, -9.81])[v], atol=tol * 50)


def test_right_jacobian_matches_finite_differences():
    rng = np.random.default_rng(3)
    phi = np.concatenate([rng.normal(0, 1.0, (5, 3)), rng.normal(0, 1e-6, (2, 3))])
    dphi = rng.normal(0, 1, (7, 3))
    h = 1e-6
    r0 = Rotation.from_rotvec(phi)
    r1 = Rotation.from_rotvec(phi + h * dphi)
    omega_fd = (r0.inv() * r1).as_rotvec() / h
    omega = np.einsum("tij,tj->ti", right_jacobian(phi), dphi)
    assert np.allclose(omega, omega_fd, atol=1e-5)


def test_motion_gaps_short_interpolated_long_split_and_noise_attenuated():
    t = np.arange(int(10 * RATE)) / RATE
    rot, omega, alpha = coning(t, 0.02, 1.2, 0.015, 0.8)
    pos, vel, acc = translation(t)
    sigma = 1e-4
    xyz = trajectory(rot, pos, MK, sigma=sigma, seed=4)
    xyz[300:305] = np.nan       # short gap: 5 frames
    xyz[600:660] = np.nan       # long gap: 0.5 s
    traj = fit_pose(xyz, MK, time_s=t)
    m = motion_from_pose(traj, FIR, rate_hz=RATE, max_gap_s=0.1)
    k = m.filter.transient_frames
    assert m.interpolated[300:305].all() and m.interpolated.sum() == 5
    assert m.valid[300:305].all()
    assert not m.valid[600 - k:660 + k].any()
    assert m.valid[k:600 - k].all() and m.valid[660 + k:-k].all()
    assert np.isnan(m.position_m[600:660]).all()
    # the bound filter reproduces the filtered position from the raw one (same segments)
    raw_pos, _ = fill_gaps(traj.position_m, rate_hz=RATE, max_gap_s=0.1)
    assert np.allclose(m.filter(raw_pos), m.position_m, equal_nan=True, atol=1e-12)
    # noise: 0.1 mm marker noise leaves angular acceleration errors far below the raw
    # double-differentiated level; bound from the filter's noise gain (derived numerically)
    v = m.valid
    err = np.linalg.norm(m.alpha_lab[v] - alpha[v], axis=1)
    rate_w = 2 * np.pi * np.fft.rfftfreq(4096, 1 / RATE)
    gain = m.filter.response(rate_w / (2 * np.pi)) * rate_w ** 2  # |H|^2 w^2 for 2nd deriv
    # pose angle noise ~ sigma / (spread sqrt(K)); white, spread over 0..Nyquist
    spread = np.sqrt(np.mean(np.sum((MK - MK.mean(0)) ** 2, axis=1)))
    ang_sd = sigma / (spread * np.sqrt(len(MK)))
    predicted_rms = ang_sd * np.sqrt(np.mean(gain ** 2)) * np.sqrt(3)
    assert np.sqrt(np.mean(err ** 2)) < 4 * predicted_rms


def test_rotation_helpers_match_scipy():
    from rigtool.kinematics.motion import (exp_rotation, log_rotation, mean_rotation,
                                           right_jacobian_apply)
    rng = np.random.default_rng(5)
    phi = np.concatenate([rng.normal(0, 0.8, (50, 3)), rng.normal(0, 1e-7, (5, 3)),
                          np.zeros((1, 3))])
    phi = phi[np.linalg.norm(phi, axis=1) < 0.8 * np.pi]
    assert np.allclose(exp_rotation(phi), Rotation.from_rotvec(phi).as_matrix(), atol=1e-14)
    assert np.allclose(log_rotation(Rotation.from_rotvec(phi).as_matrix()), phi, atol=1e-12)
    v = rng.normal(size=phi.shape)
    assert np.allclose(right_jacobian_apply(phi, v),
                       np.einsum("tij,tj->ti", right_jacobian(phi), v), atol=1e-14)
    rots = Rotation.from_rotvec(rng.normal(0, 0.3, (40, 3))) * Rotation.from_euler("z", 1.0)
    assert np.allclose(mean_rotation(rots.as_matrix()), rots.mean().as_matrix(), atol=1e-10)


def test_filtering_input_errors_name_the_parameter():
    with pytest.raises(InputError, match="field 'filter.order'.*whole filter order"):
        design_fir(120.0, order=1)
    with pytest.raises(InputError, match="0 < passband_hz < stopband_hz"):
        design_fir(120.0, passband_hz=10.0, stopband_hz=5.0)
    with pytest.raises(InputError, match="field 'rate_hz'.*positive frame rate"):
        design_fir(0.0)
    with pytest.raises(InputError, match="field 'max_gap_s'"):
        fill_gaps(np.zeros(10), rate_hz=120.0, max_gap_s=-1.0)
    with pytest.raises(InputError, match="at least 7 frames"):
        derivative(np.zeros(5), 120.0)
    filt = ZeroPhaseFilter(FIR, 120.0)
    with pytest.raises(InputError, match="field 'valid_mask'.*mask of 10 frames"):
        filt.zero_phase(np.zeros(10), np.ones(3, bool))
    with pytest.raises(InputError, match="give valid_mask or n_frames"):
        filt.steady()
    assert filt.steady(n_frames=200).sum() == 200 - 2 * filt.transient_frames
