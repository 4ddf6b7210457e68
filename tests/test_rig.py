"""Spring model against closed forms."""

import numpy as np

from rigtool.rig import Platform, Rig, Spring, spring_wrench, spring_wrench_regressor


def _one_spring_rig(k=1000.0, l0=0.5, c=3.0):
    spring = Spring("S", anchor_lab=np.array([0.0, 0.0, 1.0]),
                    attachment_platform=np.array([0.1, 0.0, 0.0]),
                    stiffness=k, free_length=l0, damping=c)
    return Rig("one", Platform({}), (spring,))


def test_vertical_spring_force_and_moment():
    rig = _one_spring_rig()
    rot = np.eye(3)
    p = np.array([-0.1, 0.0, 0.2])   # attachment at (0, 0, 0.2): spring length 0.8, stretched 0.3
    w = spring_wrench(rig, rot, p)
    assert np.allclose(w[:3], [0.0, 0.0, 1000.0 * 0.3])          # pulls up
    assert np.allclose(w[3:], np.cross([0.1, 0.0, 0.0], w[:3]))  # lever from p to attachment


def test_damping_opposes_stretch_rate():
    rig = _one_spring_rig(k=0.0, c=3.0)
    p = np.array([-0.1, 0.0, 0.2])
    w = spring_wrench(rig, np.eye(3), p, velocity_m_s=np.array([0, 0, -0.5]),
                      omega_lab=np.zeros(3))
    # moving down stretches the spring at 0.5 m/s: damping force 1.5 N upwards
    assert np.allclose(w[:3], [0, 0, 1.5])


def test_regressor_is_linear_in_parameters():
    rig = _one_spring_rig()
    rng = np.random.default_rng(0)
    p = rng.normal(size=(5, 3)) * 0.05
    rot = np.broadcast_to(np.eye(3), (5, 3, 3))
    v, w = rng.normal(size=(2, 5, 3))
    y = spring_wrench_regressor(rig, rot, p, v, w)
    assert y.shape == (5, 6, 3)
    assert np.allclose(y @ np.array([1000.0, 500.0, 3.0]), spring_wrench(rig, rot, p, v, w))


def _four_spring_rig():
    from rigtool.inertia import InertialParams
    springs = []
    for i, (x, y) in enumerate([(0.5, 0.25), (-0.5, 0.25), (-0.5, -0.25), (0.5, -0.25)]):
        springs.append(Spring(f"S{i}", anchor_lab=np.array([1.2 * x, 1.3 * y, 1.1]),
                              attachment_platform=np.array([x, y, 0.05]),
                              stiffness=3000.0 + 200 * i, free_length=0.6, damping=0.0))
    rig = Rig("four", Platform({}), tuple(springs))
    load = InertialParams.from_com(60.0, np.array([0.02, -0.03, 0.1]),
                                   np.array([[3.0, 0.1, 0.0], [0.1, 6.0, 0.2], [0.0, 0.2, 8.0]]))
    return rig, load


def _total_wrench(rig, load, rot, p):
    from rigtool.rig import gravity_wrench
    return spring_wrench(rig, rot, p) + gravity_wrench(rig, rot, load)


def test_linearised_stiffness_matches_finite_differences():
    """Hand-derived K against central differences of the exact wrench (independent)."""
    from scipy.spatial.transform import Rotation
    from rigtool.rig import linearised_stiffness
    rig, load = _four_spring_rig()
    rot0 = Rotation.from_rotvec([0.02, -0.01, 0.03]).as_matrix()
    p0 = np.array([0.01, -0.02, 0.3])
    k = linearised_stiffness(rig, rot0, p0, load).total
    h = 1e-6
    k_fd = np.zeros((6, 6))
    for j in range(6):
        dq = np.zeros(6)
        dq[j] = h
        w = []
        for sgn in (1, -1):
            rot = Rotation.from_rotvec(sgn * dq[3:]).as_matrix() @ rot0
            w.append(_total_wrench(rig, load, rot, p0 + sgn * dq[:3]))
        k_fd[:, j] = -(w[0] - w[1]) / (2 * h)
    assert np.allclose(k, k_fd, rtol=1e-6, atol=1e-6 * np.abs(k).max())


def test_stiffness_symmetric_at_equilibrium_and_modes_positive():
    from scipy.optimize import least_squares
    from scipy.spatial.transform import Rotation
    from rigtool.rig import linearised_stiffness, modes
    rig, load = _four_spring_rig()

    def residual(q):
        rot = Rotation.from_rotvec(q[3:]).as_matrix()
        return _total_wrench(rig, load, rot, q[:3])

    sol = least_squares(residual, np.array([0, 0, 0.3, 0, 0, 0]), xtol=1e-15, ftol=1e-15)
    rot = Rotation.from_rotvec(sol.x[3:]).as_matrix()
    assert np.abs(residual(sol.x)).max() < 1e-8
    k = linearised_stiffness(rig, rot, sol.x[:3], load).total
    assert np.allclose(k, k.T, atol=1e-6 * np.abs(k).max())
    freq, _ = modes(rig, rot, sol.x[:3], load)
    assert np.all(freq > 0.05) and np.all(freq < 10)
    # vertical mode close to sqrt(sum k_z / m) with the springs nearly vertical
    k_sum = sum(s.stiffness for s in rig.springs)
    f_vert = np.sqrt(k_sum / load.mass) / (2 * np.pi)
    assert np.min(np.abs(freq - f_vert)) / f_vert < 0.1
