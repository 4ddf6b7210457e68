"""A person from an OpenSim model: the .osim reader against OpenSim itself, the personalised
model written back, the refusals, and a simulated session end to end.

The models are built with the ``opensim`` package (tools/make_opensim_subject.py and small
ones here); OpenSim computes the reference values (marker places and the mass centre in the
default pose) the reader's tree must reproduce.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.cli import main
from rigtool.errors import InputError
from rigtool.inertia import InertialParams
from rigtool.osim.links import osim_tree
from rigtool.osim.model_file import read_osim
from rigtool.osim.personalise import body_values, personalised_text, shared_congruence
from rigtool.tree import Link, Tree, composite_params

ROOT = Path(__file__).resolve().parents[1]
osim = pytest.importorskip("opensim", reason="OpenSim's Python bindings not installed")
osim.Logger.setLevelString("error")


def _tool():
    spec = importlib.util.spec_from_file_location("make_opensim_subject",
                                                  ROOT / "tools" / "make_opensim_subject.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _mat(rot) -> np.ndarray:
    return np.array([[rot.get(i, j) for j in range(3)] for i in range(3)])


def _vec(v) -> np.ndarray:
    return np.array([v.get(i) for i in range(3)])


def _check_against_opensim(path: Path) -> None:
    """Every marker and the mass centre, in the root body's frame at OpenSim's default pose,
    where rigtool's tree of the file puts them (link rotations from OpenSim)."""
    tree = osim_tree(read_osim(path))
    model = osim.Model(str(path))
    state = model.initSystem()
    root = model.getBodySet().get(tree.links[0].name)
    rotations = {}
    for link in tree.links[1:]:
        body = model.getBodySet().get(link.name)
        pose = body.findTransformBetween(state, root)      # kept: R() is a view of it
        rotations[link.name] = _mat(pose.R())
    links = [Link(l.name, l.parent, l.joint_center, l.prior, l.markers) for l in tree.links]
    rtree = Tree(tuple(links))
    org, rot = rtree.origins_and_rotations(rotations)
    for i, link in enumerate(tree.links):
        for name, xyz in link.markers.items():
            ref = _vec(model.getMarkerSet().get(name).findLocationInFrame(state, root))
            assert np.allclose(org[i] + rot[i] @ xyz, ref, rtol=0, atol=1e-12), name
    overall = composite_params(rtree, rotations)
    com_ground = _vec(model.calcMassCenterPosition(state))
    root_pose = root.getTransformInGround(state)
    com_root = _mat(root_pose.R()).T @ (com_ground - _vec(root_pose.p()))
    assert np.isclose(overall.mass, model.getTotalMass(state), rtol=1e-14)
    assert np.allclose(overall.com, com_root, rtol=0, atol=1e-12)


def test_the_subject_model_reads_as_opensim_places_it(tmp_path):
    """The 13-body model of tools/make_opensim_subject.py: welds fused (torso and head into
    the pelvis, each foot into its tibia), a link per Ball/Pin joint, markers and mass
    centre where OpenSim puts them (offset frames turned and shifted on both sides)."""
    path = _tool().build_model(tmp_path / "subject.osim")
    tree = osim_tree(read_osim(path))
    assert [l.name for l in tree.links][:1] == ["pelvis"]
    assert len(tree.links) == 9 and tree.links[0].bodies == ("pelvis", "torso", "head")
    assert {l.name: l.bodies for l in tree.links}["tibia_r"] == ("tibia_r", "foot_r")
    pins = [n for n in tree.notes if "PinJoint" in n]
    assert len(pins) == 4 and all("taken as spherical" in n for n in pins)
    _check_against_opensim(path)


def _small_model(path: Path, kind: str) -> Path:
    """Pelvis on a CustomJoint to ground (six coordinates), a thigh on ``kind``; the
    CustomJoint ``kind`` turns about three axes and is shifted by constant translations,
    ``"CustomJointSliding"`` translates with a coordinate."""
    model = osim.Model()
    model.setName("small")
    pelvis = osim.Body("pelvis", 10.0, osim.Vec3(0, 0.05, 0),
                       osim.Inertia(0.1, 0.08, 0.09, 0.004, -0.002, 0.001))
    thigh = osim.Body("thigh", 7.0, osim.Vec3(0.01, -0.18, 0.0),
                      osim.Inertia(0.12, 0.02, 0.11, 0.002, 0.0, -0.003))
    model.addBody(pelvis)
    model.addBody(thigh)
    model.addJoint(osim.FreeJoint("ground_pelvis", model.getGround(), pelvis))
    place = (pelvis, osim.Vec3(0.02, -0.08, 0.09), osim.Vec3(0.1, -0.2, 0.3), thigh,
             osim.Vec3(0.0, 0.03, 0.01), osim.Vec3(-0.2, 0.1, 0.05))
    if kind.startswith("CustomJoint"):
        st = osim.SpatialTransform()
        for i, ax in enumerate([(0, 0, 1), (1, 0, 0), (0, 1, 0)]):
            ta = st.updTransformAxis(i)
            ta.append_coordinates(f"hip_{i}")
            ta.setAxis(osim.Vec3(*ax))
            ta.set_function(osim.LinearFunction(1.0, 0.0))
        for i, ax in enumerate([(1, 0, 0), (0, 1, 0), (0, 0, 1)]):
            ta = st.updTransformAxis(3 + i)
            ta.setAxis(osim.Vec3(*ax))
            if kind == "CustomJointSliding" and i == 1:
                ta.append_coordinates("hip_ty")
                ta.set_function(osim.LinearFunction(1.0, 0.0))
            else:
                ta.set_function(osim.Constant(0.01 * (i + 1)))
        model.addJoint(osim.CustomJoint("hip", *place, st))
    else:
        model.addJoint(getattr(osim, kind)("hip", *place))
    for name, body, loc in (("P1", pelvis, (0.1, 0, 0.1)), ("P2", pelvis, (0.1, 0, -0.1)),
                            ("P3", pelvis, (-0.1, 0.1, 0)), ("T1", thigh, (0.05, -0.1, 0.03)),
                            ("T2", thigh, (-0.04, -0.25, 0.04)),
                            ("T3", thigh, (0.03, -0.35, -0.05))):
        model.addMarker(osim.Marker(name, body, osim.Vec3(*loc)))
    model.finalizeConnections()
    model.initSystem()
    model.printToXML(str(path))
    return path


@pytest.mark.parametrize("kind", ["CustomJoint", "UniversalJoint", "GimbalJoint", "BallJoint"])
def test_rotation_joints_read_as_opensim_places_them(kind, tmp_path):
    """A CustomJoint that turns about three axes after constant translations, a universal and
    a gimbal joint: the joint centre is the child frame's origin, where OpenSim puts it."""
    path = _small_model(tmp_path / "m.osim", kind)
    tree = osim_tree(read_osim(path))
    assert tree.root_joint == "ground_pelvis" and [l.name for l in tree.links] == ["pelvis",
                                                                                  "thigh"]
    _check_against_opensim(path)
    notes = " ".join(tree.notes)
    assert ("taken as spherical" in notes) == (kind == "UniversalJoint")


def _manifest(tmp_path: Path, model: Path) -> Path:
    (tmp_path / "session.toml").write_text(
        f'[session]\nrig = "rig.toml"\ntotal_mass = 17.0\n\n[opensim]\nmodel = "{model.name}"\n'
        '\n[[postures]]\ncapture = "p1.csv"\n', encoding="utf-8")
    return tmp_path / "session.toml"


@pytest.mark.parametrize("kind, words", [
    ("SliderJoint", "joint 'hip' (SliderJoint) is not accepted"),
    ("CustomJointSliding", "joint 'hip' (CustomJoint) translates along translation2 with "
                           "coordinate hip_ty")])
def test_joints_that_translate_are_refused_naming_file_and_joint(kind, words, tmp_path, capsys):
    """A joint that is not a rotation: one message naming the .osim file, the joint and what
    is accepted; `rigtool run` exits with status 2 and no traceback."""
    model = _small_model(tmp_path / "m.osim", kind)
    with pytest.raises(InputError) as err:
        osim_tree(read_osim(model))
    assert words in err.value.message and "accepts WeldJoint" in err.value.message
    assert err.value.path == model
    assert main(["run", str(_manifest(tmp_path, model))]) == 2
    printed = capsys.readouterr().err
    assert "m.osim" in printed and words in printed and "Traceback" not in printed


def test_a_link_with_too_few_markers_and_an_old_document_are_refused(tmp_path, capsys):
    model = _small_model(tmp_path / "m.osim", "BallJoint")
    text = model.read_text()
    start = text.index('<Marker name="T3">')
    end = text.index("</Marker>", start) + len("</Marker>")
    (tmp_path / "few.osim").write_text(text[:start] + text[end:])
    assert main(["run", str(_manifest(tmp_path, tmp_path / "few.osim"))]) == 2
    assert "link 'thigh' (body thigh) has 2 marker(s)" in capsys.readouterr().err
    (tmp_path / "old.osim").write_text(text.replace('Version="40600"', 'Version="30000"'))
    assert main(["run", str(_manifest(tmp_path, tmp_path / "old.osim"))]) == 2
    assert "rigtool reads OpenSim 4 models" in capsys.readouterr().err


def _segments(tree, scale: dict[str, float]) -> dict:
    """report.json-like segments: each link's prior, scaled (mass and inertia) by
    ``scale`` and its COM moved 5 mm along x."""
    out = {}
    for link in tree.links:
        k = scale.get(link.name, 1.0)
        p = link.prior
        shift = np.array([0.005, 0.0, 0.0]) if k != 1.0 else np.zeros(3)
        out[link.name] = {"mass": k * p.mass, "com": (p.com + shift).tolist(),
                          "inertia_com": (k * p.inertia_com).tolist(),
                          "source": {"mass": "both", "com": ["measured"] * 3,
                                     "inertia_com": [["prior"] * 3] * 3}, "prior": "model"}
    return out


def test_the_personalised_model_round_trips_and_keeps_everything_else(tmp_path):
    """Written back with the model's own values, every body reads back as it was (welded
    bodies included); with new values for two links their bodies carry them (moved to the
    body frame) in OpenSim; every element other than the bodies' mass properties is
    unchanged, and each body has its comment."""
    path = _tool().build_model(tmp_path / "subject.osim")
    tree = osim_tree(read_osim(path))
    same, _ = personalised_text(tree, _segments(tree, {}), ["test"])
    (tmp_path / "same.osim").write_bytes(same)
    again = read_osim(tmp_path / "same.osim")
    # welded bodies pass through square roots of 4x4 pseudo-inertias (condition ~1e3):
    # their round trip holds to 1e-10 kg m^2, the others' to the last digit
    for name, body in tree.model.bodies.items():
        b = again.bodies[name]
        assert np.isclose(b.mass, body.mass, rtol=1e-12)
        assert np.allclose(b.mass_center, body.mass_center, rtol=0, atol=1e-12)
        assert np.allclose(b.inertia, body.inertia, rtol=0, atol=1e-10)

    data, values = personalised_text(tree, _segments(tree, {"tibia_r": 1.1, "femur_l": 0.9}),
                                     ["test"])
    out = tmp_path / "personalised.osim"
    out.write_bytes(data)
    model = osim.Model(str(out))
    state = model.initSystem()
    assert model.getMarkerSet().getSize() == len(tree.model.markers)
    priors = {l.name: l.prior.mass for l in tree.links}
    assert np.isclose(model.getTotalMass(state), sum(b.mass for b in tree.model.bodies.values())
                      + 0.1 * priors["tibia_r"] - 0.1 * priors["femur_l"], rtol=1e-14)
    femur = model.getBodySet().get("femur_l")
    link = next(l for l in tree.links if l.name == "femur_l")
    place = tree.places["femur_l"]
    assert np.isclose(femur.getMass(), 0.9 * link.prior.mass, rtol=1e-14)
    assert np.allclose(_vec(femur.getMassCenter()),
                       place.rotation.T @ (link.prior.com + [0.005, 0, 0] - place.position),
                       rtol=0, atol=1e-14)
    for body in ("tibia_r", "foot_r"):
        v = next(v for v in values if v.body == body)
        assert v.how.startswith("measured: its share of link 'tibia_r'")

    def strip(root: ET.Element) -> list:
        for body in root.iter("Body"):
            for f in ("mass", "mass_center", "inertia"):
                body.find(f).text = ""
        return [(e.tag, e.attrib, (e.text or "").strip()) for e in root.iter()
                if e.tag is not ET.Comment]

    assert strip(ET.parse(out).getroot()) == strip(ET.parse(path).getroot())
    assert data.count(b"<!-- rigtool: body ") == len(tree.model.bodies)


def test_welded_bodies_share_any_measured_link_as_possible_bodies(tmp_path):
    """A measured link unlike the model's (heavier, its COM moved, its inertia turned and
    stretched): the welded bodies' shares are each physically possible and sum to it."""
    path = _tool().build_model(tmp_path / "subject.osim")
    tree = osim_tree(read_osim(path))
    base = tree.links[0]
    turn = Rotation.from_rotvec([0.3, -0.2, 0.4]).as_matrix()
    measured = InertialParams.from_com(1.2 * base.prior.mass, base.prior.com + [0.03, -0.05, 0.02],
                                       turn @ np.diag([3.2, 0.5, 3.0]) @ turn.T)
    share = shared_congruence(base.prior.pseudo_inertia(), measured.pseudo_inertia())
    assert np.allclose(share @ base.prior.pseudo_inertia() @ share, measured.pseudo_inertia(),
                       rtol=0, atol=1e-10)
    segs = _segments(tree, {})
    segs[base.name].update(mass=measured.mass, com=measured.com.tolist(),
                           inertia_com=measured.inertia_com.tolist())
    # the model scaled by k: each welded body the model's scaled by k
    scaled = InertialParams(1.3 * base.prior.pi)
    k_share = shared_congruence(base.prior.pseudo_inertia(), scaled.pseudo_inertia())
    assert np.allclose(k_share, np.sqrt(1.3) * np.eye(4), rtol=0, atol=1e-10)
    values = [v for v in body_values(tree, segs) if v.link == base.name]
    assert [v.body for v in values] == ["pelvis", "torso", "head"]
    total = InertialParams(np.zeros(10))
    for v in values:
        assert v.params.mass > 0 and v.params.is_physically_consistent(tol=1e-12), v.body
        place = tree.places[v.body]
        total = total + v.params.transformed(place.rotation, place.position)
    assert np.allclose(total.pi, measured.pi, rtol=0, atol=1e-10)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_simulated_person_from_an_opensim_model_end_to_end(tmp_path):
    """tools/make_opensim_subject.py's person (13 bodies, 9 links) simulated on the paper
    rig and run: the personalised model loads in OpenSim with the measured values
    (report.json's), the masses and COMs are the truth's within their standard errors, and
    the run names the model among its inputs and its joints in its notes."""
    from rigtool.sim.true_calibration import write_true_calibration

    model, scenario = _tool().write_subject(tmp_path / "gen", postures=10, posture_s=10.0,
                                            swing_s=8.0)
    bundle = tmp_path / "bundle"
    assert main(["simulate", str(scenario), "-o", str(bundle)]) == 0
    rig = bundle / "calibration" / "paper-rig.toml"
    write_true_calibration(str(rig), str(rig.with_suffix(".truth.json")),
                           str(rig.with_suffix(".calibrated.toml")))
    session = bundle / "captures" / "opensim-subject" / "session.toml"
    out = tmp_path / "results"
    assert main(["run", str(session), "-o", str(out)]) in (0, 3)
    rep = json.loads((out / "report.json").read_text())
    truth = {l["name"]: l for l in json.loads((session.parent / "truth.json").read_text())
             ["links"]}
    copied = session.parent / "subject.osim"
    assert {"path": "subject.osim", "sha256": _sha256(copied)} in rep["inputs"]
    assert _sha256(copied) == _sha256(model)
    assert sum("taken as spherical" in n for n in rep["notes"]) == 4

    segs = rep["segments"]["links"]
    assert sorted(segs) == sorted(truth)
    for name, seg in segs.items():
        t = truth[name]
        # the posterior's standard errors: the truth lies within 4 of them
        assert abs(seg["mass"] - t["mass"]) < 4 * seg["mass_std"], name
        com_error = np.abs(np.subtract(seg["com"], t["com"]))
        assert np.all(com_error < 4 * np.array(seg["com_std"])), name

    pm = osim.Model(str(out / "personalised.osim"))
    state = pm.initSystem()
    weighed = sum(t["mass"] for t in truth.values())      # the manifest's total_mass
    assert np.isclose(pm.getTotalMass(state), weighed, rtol=1e-9)
    tree = osim_tree(read_osim(copied))
    block = {b["body"]: b for b in rep["opensim"]["bodies"]}
    for link in tree.links:
        seg = segs[link.name]
        if len(link.bodies) > 1:
            continue
        body = pm.getBodySet().get(link.name)
        place = tree.places[link.name]
        p = InertialParams.from_com(seg["mass"], np.array(seg["com"]),
                                    np.array(seg["inertia_com"]))
        assert body.getMass() == seg["mass"] == block[link.name]["mass"]
        assert np.allclose(_vec(body.getMassCenter()), p.com - place.position, rtol=0,
                           atol=1e-15)
        ic = body.getInertia()
        assert np.allclose([_vec(ic.getMoments()), _vec(ic.getProducts())],
                           [np.diag(p.inertia_com), [p.inertia_com[0, 1], p.inertia_com[0, 2],
                                                     p.inertia_com[1, 2]]], rtol=0, atol=1e-15)
    # the fused links: the bodies' sum in the link frame is the link's estimate
    for link in tree.links:
        if len(link.bodies) == 1:
            continue
        total = InertialParams(np.zeros(10))
        for b in link.bodies:
            body = pm.getBodySet().get(b)
            ic = body.getInertia()
            mom, prod = _vec(ic.getMoments()), _vec(ic.getProducts())
            i3 = np.array([[mom[0], prod[0], prod[1]], [prod[0], mom[1], prod[2]],
                           [prod[1], prod[2], mom[2]]])
            place = tree.places[b]
            total = total + InertialParams.from_com(body.getMass(), _vec(body.getMassCenter()),
                                                    i3).transformed(place.rotation,
                                                                    place.position)
        seg = segs[link.name]
        assert np.isclose(total.mass, seg["mass"], rtol=1e-12)
        assert np.allclose(total.com, seg["com"], rtol=0, atol=1e-12)
        assert np.allclose(total.inertia_com, seg["inertia_com"], rtol=0, atol=1e-10)
        for b in link.bodies:
            assert pm.getBodySet().get(b).getMass() > 0, b
