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
