"""URDF <inertial> and OpenSim BodySet fragments, read back with xml.etree and compared
numerically (the complete model files: tests/test_model_exports.py).

The parsers here are written from the formats' documentation (URDF: attributes ixx ixy ixz
iyy iyz izz of the inertia about the COM in the <origin> frame; OpenSim 4 Body: <inertia> as
[Ixx Iyy Izz Ixy Ixz Iyz] about mass_center), not from the writer's code.
"""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from rigtool.identify.segments.fit import Prior, estimate_segments
from rigtool.inertia import InertialParams
from rigtool.report.exports import opensim_bodyset, urdf_fragment
from rigtool.sim.rigs import demo_tree
from rigtool.tree import minimal_parameters, phi_b_vector


def _random_body(rng, mass):
    a = rng.normal(size=(3, 3)) * 0.2
    sigma = a @ a.T + 0.01 * np.eye(3)
    return InertialParams.from_com(mass, rng.normal(size=3) * 0.1,
                                   np.trace(sigma) * np.eye(3) - sigma)


def _parse_urdf(text):
    out = {}
    for link in ET.fromstring(text).iter("link"):
        inertial = link.find("inertial")
        origin = inertial.find("origin")
        assert origin.get("rpy") in (None, "0 0 0")
        xyz = np.array([float(v) for v in origin.get("xyz").split()])
        mass = float(inertial.find("mass").get("value"))
        a = {k: float(v) for k, v in inertial.find("inertia").attrib.items()}
        inertia = np.array([[a["ixx"], a["ixy"], a["ixz"]],
                            [a["ixy"], a["iyy"], a["iyz"]],
                            [a["ixz"], a["iyz"], a["izz"]]])
        out[link.get("name")] = (mass, xyz, inertia)
    return out


def _parse_opensim(text):
    root = ET.fromstring(text)
    assert root.tag == "BodySet"
    out = {}
    for body in root.find("objects").findall("Body"):
        mass = float(body.find("mass").text)
        com = np.array([float(v) for v in body.find("mass_center").text.split()])
        xx, yy, zz, xy, xz, yz = (float(v) for v in body.find("inertia").text.split())
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        out[body.get("name")] = (mass, com, inertia)
    return out


@pytest.fixture
def bodies():
    rng = np.random.default_rng(4)
    return {"base": _random_body(rng, 30.0), "arm": _random_body(rng, 4.0),
            "odd <name> & co": _random_body(rng, 1.5)}


@pytest.mark.parametrize("parse,write", [(_parse_urdf, urdf_fragment),
                                         (_parse_opensim, opensim_bodyset)])
def test_round_trip(bodies, parse, write):
    back = parse(write(bodies))
    assert list(back) == list(bodies)
    for name, p in bodies.items():
        mass, com, inertia = back[name]
        assert mass == p.mass                        # repr round-trips exactly
        assert np.array_equal(com, p.com)
        assert np.allclose(inertia, p.inertia_com, rtol=0, atol=1e-15)
        # and back to the standard parameters about the link origin
        assert np.allclose(InertialParams.from_com(mass, com, inertia).pi, p.pi,
                           rtol=1e-14, atol=1e-14)


def test_product_of_inertia_sign_and_order():
    # Two 1 kg point masses at (a, b, 0) and (-a, -b, 0) plus a small ball for a positive
    # definite tensor: I_xy = -sum m x y = -2ab (tensor form), I_xz = I_yz = 0.
    a, b, ball = 0.3, 0.2, 1e-3
    inertia = np.array([[2 * b * b, -2 * a * b, 0], [-2 * a * b, 2 * a * a, 0],
                        [0, 0, 2 * (a * a + b * b)]]) + ball * np.eye(3)
    p = InertialParams.from_com(2.0, np.zeros(3), inertia)
    inertial = ET.fromstring(urdf_fragment({"pair": p})).find("link/inertial/inertia")
    assert float(inertial.get("ixy")) == pytest.approx(-2 * a * b)
    assert float(inertial.get("ixx")) == pytest.approx(2 * b * b + ball)
    six = [float(v) for v in ET.fromstring(opensim_bodyset({"pair": p})).find(
        "objects/Body/inertia").text.split()]
    # OpenSim order Ixx Iyy Izz Ixy Ixz Iyz
    assert six == pytest.approx([2 * b * b + ball, 2 * a * a + ball,
                                 2 * (a * a + b * b) + ball, -2 * a * b, 0.0, 0.0], abs=1e-15)


def test_fragments_from_segments_result():
    tree = demo_tree()
    phi_b = phi_b_vector(minimal_parameters(tree))
    priors = {l.name: Prior(l.params.mass * 1.1, 0.2 * l.params.mass, l.params.com, 0.03,
                            l.params.inertia_com, 0.3) for l in tree.links}
    res = estimate_segments(tree, phi_b, None, sum(l.params.mass for l in tree.links), priors)
    urdf = ET.fromstring(urdf_fragment(res, robot_name="demo"))
    assert urdf.tag == "robot" and urdf.get("name") == "demo"
    for parse, text in ((_parse_urdf, urdf_fragment(res)), (_parse_opensim,
                                                            opensim_bodyset(res))):
        back = parse(text)
        assert list(back) == tree.names
        for name, (mass, com, inertia) in back.items():
            seg = res.links[name]
            assert mass == pytest.approx(seg.mass_kg, rel=1e-14)
            assert np.allclose(com, seg.com_m, atol=1e-14)
            assert np.allclose(inertia, seg.inertia_com, atol=1e-14)
            assert np.linalg.eigvalsh(inertia)[0] >= -1e-9       # physically consistent
