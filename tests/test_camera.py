"""The camera path: camera.toml and tags.toml, the pose covariance, ChArUco calibration on
rendered views, tracking a rendered clip against its truth, and the errors a user can make.

Rendered images come from rigtool.camera.render, a ray caster that shares no code with the
detection and fitting it checks (its geometry is cv2.projectPoints of the true poses)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rigtool.camera.demo import demo_camera, platform_scene, write_scene_files
from rigtool.camera.intrinsics import BoardSpec
from rigtool.camera.model import camera_toml, load_camera
from rigtool.camera.pnp import corner_covariance_unit, left_jacobian_so3
from rigtool.camera.simvideo import (VideoSettings, board_poses, render_board_views,
                                     render_video, true_markers)
from rigtool.camera.tags import load_tags
from rigtool.cli import main
from rigtool.errors import ConfigError
from rigtool.mocap import read_capture
from rigtool.sim import dynamics as dyn
from rigtool.sim.rigs import demo_rig

RATE_HZ = 120.0
N_FRAMES = 16


# --------------------------------------------------------------------------- files

def test_camera_toml_round_trip(tmp_path):
    cam = demo_camera(640, 512)
    path = tmp_path / "camera.toml"
    path.write_text(camera_toml(cam))
    back = load_camera(path)
    np.testing.assert_array_equal(back.matrix, cam.matrix)
    np.testing.assert_array_equal(back.distortion, cam.distortion)
    assert back.image_size == (640, 512)


def test_camera_toml_rejects_bad_distortion(tmp_path):
    cam = demo_camera(640, 512)
    path = tmp_path / "camera.toml"
    path.write_text(camera_toml(cam).replace("distortion = [", "distortion = [0.1, "))
    with pytest.raises(ConfigError, match=r"camera\.distortion.*4, 5, 8, 12 or 14"):
        load_camera(path)


def _write_tags(path: Path, dictionary: str = "DICT_4X4_50", extra: str = "") -> Path:
    path.write_text(f'dictionary = "{dictionary}"\n{extra}\n'
                    '[[tags]]\nid = 3\nbody = "platform"\nedge_m = 0.06\n'
                    'position = [0.1, 0.2, 0.0]\neuler_deg = [0.0, 0.0, 90.0]\n')
    return path


def test_tags_toml_corners_in_body_frame(tmp_path):
    layout = load_tags(_write_tags(tmp_path / "tags.toml", "4x4_50"))
    assert layout.dictionary_name == "DICT_4X4_50" and layout.lab_body is None
    corners = layout.body_markers("platform")
    assert list(corners) == ["tag3_tl", "tag3_tr", "tag3_br", "tag3_bl"]
    # rotated 90 deg about z: the tag's top-left (-L/2, +L/2) goes to (-L/2, -L/2)
    np.testing.assert_allclose(corners["tag3_tl"], [0.1 - 0.03, 0.2 - 0.03, 0.0], atol=1e-12)


@pytest.mark.parametrize("text, match", [
    ('dictionary = "DICT_9X9_7"\n[[tags]]\nid = 1\nbody = "p"\nedge_m = 0.06\n'
     'position = [0, 0, 0]\n', r"field 'dictionary'.*unknown tag dictionary.*DICT_4X4_50"),
    ('dictionary = "DICT_4X4_50"\n[[tags]]\nid = 50\nbody = "p"\nedge_m = 0.06\n'
     'position = [0, 0, 0]\n', r"tags\[0\]\.id.*from 0 to 49"),
    ('dictionary = "DICT_4X4_50"\n[[tags]]\nid = 1\nbody = "p"\nedge_m = 0.06\n'
     'position = [0, 0, 0]\n[[tags]]\nid = 1\nbody = "q"\nedge_m = 0.06\n'
     'position = [0, 0, 0]\n', r"tags\[1\]\.id.*listed twice"),
    ('dictionary = "DICT_4X4_50"\n[[tags]]\nid = 1\nbody = "p"\nedge_m = 60\n'
     'position = [0, 0, 0]\n', r"edge_m.*in metres"),
    ('dictionary = "DICT_4X4_50"\nlab = "floor"\n[[tags]]\nid = 1\nbody = "p"\nedge_m = 0.06\n'
     'position = [0, 0, 0]\n', r"field 'lab'.*has no tags"),
])
def test_tags_toml_errors(tmp_path, text, match):
    path = tmp_path / "tags.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_tags(path)


# --------------------------------------------------------------------------- pose maths

def test_left_jacobian_and_corner_covariance_against_finite_differences():
    rng = np.random.default_rng(3)
    rvec = rng.normal(size=3) * 0.8
    x = np.array([0.3, -0.2, 0.05])
    # d(R x)/d rvec by central differences vs -[R x]x J_l
    h = 1e-6
    num = np.stack([(Rotation.from_rotvec(rvec + h * e).apply(x)
                     - Rotation.from_rotvec(rvec - h * e).apply(x)) / (2 * h)
                    for e in np.eye(3)], axis=1)
    rx = Rotation.from_rotvec(rvec).apply(x)
    skew = np.array([[0, -rx[2], rx[1]], [rx[2], 0, -rx[0]], [-rx[1], rx[0], 0]])
    np.testing.assert_allclose(-skew @ left_jacobian_so3(rvec), num, atol=1e-8)
    # the corner covariance is G inv(jtj) G^T with G = [d/d rvec, I]
    a = rng.normal(size=(6, 6))
    jtj = a @ a.T + 6 * np.eye(6)
    g = np.concatenate([num, np.eye(3)], axis=1)
    cov = corner_covariance_unit(rvec[None], jtj[None], x[None])[0, 0]
    np.testing.assert_allclose(cov, g @ np.linalg.inv(jtj) @ g.T, rtol=1e-6)


# --------------------------------------------------------------------------- calibration

@pytest.mark.slow
def test_charuco_calibration_recovers_focal_length(tmp_path, capsys):
    """Rendered ChArUco views through a 640x512 camera with distortion: the focal length
    comes back within 4 of its own standard deviations (about 0.15 % with these 12 small
    views; the 0.1 % goal at 1280x1024 is measured by benchmarks/camera.py), and the
    standard deviation itself is a sane fraction of a percent."""
    cam = demo_camera(640, 512)
    spec = BoardSpec((7, 5), 0.04, 0.03, "DICT_4X4_50")
    poses = board_poses(cam, spec, 12, seed=4, distance_m=(0.45, 0.7))
    images = render_board_views(cam, spec, poses, settings=VideoSettings(supersample=4),
                                seed=5)
    folder = tmp_path / "views"
    folder.mkdir()
    for i, img in enumerate(images):
        cv2.imwrite(str(folder / f"view{i:02d}.png"), img)
    out = tmp_path / "camera.toml"
    assert main(["camera", "calibrate", str(folder), "-o", str(out), "--board", "7x5",
                 "--square-m", "0.04", "--marker-m", "0.03"]) == 0
    assert "RMS reprojection" in capsys.readouterr().out
    got = load_camera(out)
    std = got.calibration["std"]
    for axis, (i, name) in enumerate(((0, "fx"), (1, "fy"))):
        err = got.matrix[i, i] - cam.matrix[i, i]
        assert abs(err) < 4 * std[name]
        assert std[name] / cam.matrix[i, i] < 5e-3
    assert got.image_size == (640, 512)
    assert len(got.calibration["per_view_rms_px"]) >= 10
    assert len(got.calibration["inputs"]) == 12 and all(
        len(i["sha256"]) == 64 for i in got.calibration["inputs"])
    # the same views as a video, each held for three frames: the repeats are dropped, and
    # the fit (and its standard deviations) is the one from the images
    video = tmp_path / "views.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"Y800"), 10.0, (640, 512),
                             False)
    for img in images:
        for _ in range(3):
            writer.write(img)
    writer.release()
    out2 = tmp_path / "camera_from_video.toml"
    assert main(["camera", "calibrate", str(video), "-o", str(out2), "--board", "7x5",
                 "--square-m", "0.04", "--marker-m", "0.03"]) == 0
    assert "24 repeating another view" in capsys.readouterr().out
    again = load_camera(out2)
    np.testing.assert_allclose(again.matrix, got.matrix, rtol=1e-6)   # OpenCV threads: ~1e-9
    assert again.calibration["std"]["fx"] == pytest.approx(std["fx"], rel=1e-4)


def test_calibration_without_the_board_exits_2(tmp_path, capsys):
    folder = tmp_path / "blank"
    folder.mkdir()
    for i in range(3):
        cv2.imwrite(str(folder / f"b{i}.png"), np.full((120, 160), 128, np.uint8))
    out = tmp_path / "camera.toml"
    assert main(["camera", "calibrate", str(folder), "-o", str(out), "--board", "7x5",
                 "--square-m", "0.04", "--marker-m", "0.03"]) == 2
    assert "found in only 0 of 3 images" in capsys.readouterr().err
    assert not out.exists()


# --------------------------------------------------------------------------- tracking

@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """A short rendered clip of the demo platform vibrating, its scene files and its truth."""
    folder = tmp_path_factory.mktemp("clip")
    rig, platform = demo_rig()
    traj = dyn.simulate(dyn.System(rig, platform), (N_FRAMES + 2) / RATE_HZ, RATE_HZ,
                        platform_offset=np.array([0.004, -0.003, 0.006, 0.008, -0.006, 0.005]),
                        platform_velocity=np.array([0.05, 0.05, 0.02, 0.1, 0.0, 0.1]))
    scene = platform_scene(traj, rig.platform.markers_platform)
    cam_file, tags_file = write_scene_files(folder, scene)
    video = folder / "clip.avi"
    render_video(video, scene.camera, scene.camera_pose, scene.layout, scene.motion,
                 rate_hz=RATE_HZ, n_frames=N_FRAMES, settings=VideoSettings(supersample=8),
                 seed=7)
    return folder, scene, video, cam_file, tags_file


def test_track_recovers_the_known_pose(clip, tmp_path, capsys):
    """Every corner's error, in the camera's axes and with the floor board's (constant) lab
    frame error taken out, stays within 3x the standard deviation the side file predicts
    from the measured image noise, along the view and across it."""
    folder, scene, video, cam_file, tags_file = clip
    out = tmp_path / "capture.csv"
    assert main(["track", str(video), "--camera", str(cam_file), "--tags", str(tags_file),
                 "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "platform: seen in 100.0% of the frames" in printed
    data = read_capture(out)                                  # rigtool's reader, unchanged
    assert data.format == "plain-csv" and data.n_frames == N_FRAMES
    assert data.rate_hz == pytest.approx(RATE_HZ, rel=1e-6)
    names = [f"platform:{m}" for m in scene.layout.body_markers("platform")]
    assert list(data.names) == names
    truth = true_markers(scene.layout, scene.motion, data.time_s, RATE_HZ).select(names)
    summary = json.loads((tmp_path / "capture.track.json").read_text())
    lab = summary["lab_frame"]
    assert lab["frame"] == "body" and lab["body"] == "floor"
    r_est, t_est = np.array(lab["rotation_cam_lab"]), np.array(lab["translation_cam_lab_m"])
    r_true = scene.camera_pose.rotation_cam_lab
    t_true = scene.camera_pose.translation_cam_lab_m
    # the lab frame itself: within 0.05 deg and 0.5 mm of the truth
    assert np.degrees(np.linalg.norm(Rotation.from_matrix(r_est @ r_true.T).as_rotvec())) < 0.05
    assert np.linalg.norm(t_est - t_true) < 5e-4
    err_cam = (data.select(names) @ r_est.T + t_est) - (truth @ r_true.T + t_true)
    # predicted covariance, lab axes -> camera axes
    side = np.genfromtxt(tmp_path / "capture.residuals.csv", delimiter=",", names=True,
                         deletechars="")
    cov = np.zeros((N_FRAMES, len(names), 3, 3))
    for k, m in enumerate(names):
        for c, (i, j) in zip(("xx", "yy", "zz", "yz", "zx", "xy"),
                             ((0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1))):
            cov[:, k, i, j] = cov[:, k, j, i] = side[f"{m}_c{c}"]
    cov_cam = np.einsum("ai,tkij,bj->tkab", r_est, cov, r_est)
    predicted = np.sqrt(np.diagonal(cov_cam, axis1=2, axis2=3).mean(axis=(0, 1)))
    actual = np.sqrt((err_cam ** 2).mean(axis=(0, 1)))
    assert (actual < 3 * predicted).all(), (actual, predicted)
    # a single camera sees depth worse than the image plane, and the covariance says so
    assert predicted[2] > 1.5 * predicted[:2].max()
    assert summary["bodies"]["platform"]["corner_std_depth_m"] > \
        summary["bodies"]["platform"]["corner_std_lateral_m"]
    # image noise: the pooled residual is a few hundredths of a pixel on this clip
    assert 0.005 < summary["image_noise_px"] < 0.1
    assert np.all(side["platform_corners"] >= 28)            # at least 7 of the 8 tags
    markers = tomllib.loads((tmp_path / "capture.markers.toml").read_text())
    assert set(markers["platform"]["markers"]) == {n.split(":")[1] for n in names}
    assert main(["inspect", "--json", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["markers"] == names


def test_track_refuses_to_overwrite(clip, tmp_path, capsys):
    folder, scene, video, cam_file, tags_file = clip
    out = tmp_path / "c.csv"
    (tmp_path / "c.track.json").write_text("{}")
    assert main(["track", str(video), "--camera", str(cam_file), "--tags", str(tags_file),
                 "-o", str(out)]) == 2
    assert "c.track.json exists; pass --force" in capsys.readouterr().err


@pytest.mark.parametrize("case, match", [
    ("missing video", r"nothing\.avi: video file not found"),
    ("not a video", r"notes\.avi: cannot read a frame: not a video OpenCV can decode"),
    ("unknown dictionary", r"field 'dictionary': unknown tag dictionary"),
    ("other resolution", r"calibrated for 640x512 images but .*clip\.avi has 1280x1024 "
                         r"frames"),
    ("tags not found", r"none of the tracked tags \(DICT_6X6_50, ids 0, 1, .*\) is found in "
                       r"the first 16 frames"),
    ("lab body not seen", r"the lab body 'floor' \(tags 30, 31\) is not seen in the first"),
])
def test_track_bad_inputs_exit_2(clip, tmp_path, capsys, case, match):
    folder, scene, video, cam_file, tags_file = clip
    tags_text = tags_file.read_text()
    if case == "missing video":
        video = tmp_path / "nothing.avi"
    elif case == "not a video":
        video = tmp_path / "notes.avi"
        video.write_text("this is not a video\n")
    elif case == "unknown dictionary":
        tags_file = tmp_path / "tags.toml"
        tags_file.write_text(tags_text.replace('"DICT_4X4_50"', '"DICT_4X4_51"'))
    elif case == "other resolution":
        cam_file = tmp_path / "camera.toml"
        cam_file.write_text(camera_toml(demo_camera(640, 512)))
    elif case == "tags not found":
        tags_file = tmp_path / "tags.toml"
        tags_file.write_text(tags_text.replace('"DICT_4X4_50"', '"DICT_6X6_50"'))
    elif case == "lab body not seen":
        tags_file = tmp_path / "tags.toml"
        text = tags_text
        for old, new in ((40, 30), (41, 31)):
            text = text.replace(f"id = {old}\n", f"id = {new}\n")
        for old in (42, 43):                        # keep two floor tags, neither printed
            text = text.replace(f'id = {old}\nbody = "floor"', f'id = {old}\nbody = "spare"')
        tags_file.write_text(text)
    out = tmp_path / "capture.csv"
    assert main(["track", str(video), "--camera", str(cam_file), "--tags", str(tags_file),
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("rigtool track: error: ")
    import re
    assert re.search(match, err), err
    assert not out.exists() and not list(tmp_path.glob("*.partial"))


def test_simulated_video_geometry_matches_opencv_projection(tmp_path):
    """The renderer puts a tag's corners where cv2.projectPoints puts them: a noiseless,
    blur-free frame, corners found by cv2.aruco + refinement, within 0.05 px."""
    from rigtool.camera import aruco
    from rigtool.camera.render import PixelRays, finish_frame, render_frame
    from rigtool.camera.simvideo import tag_plane
    from rigtool.camera.tags import Tag

    cam = demo_camera(640, 512)
    dictionary = aruco.get_dictionary("DICT_4X4_50")
    settings = VideoSettings(supersample=8)
    rot = Rotation.from_euler("xyz", [160.0, 15.0, 30.0], degrees=True).as_matrix()
    pos = np.array([0.05, -0.03, 0.6])
    tag = Tag(7, "b", 0.06, np.eye(3), np.zeros(3))
    image = render_frame(PixelRays(cam), [(tag_plane(dictionary, tag, settings), rot[None],
                                           pos[None])], supersample=8)
    gray = finish_frame(image, np.random.default_rng(0), blur_px=0.8, read_noise=0.0,
                        shot_noise=0.0)
    ids, raw = aruco.detect(aruco.make_detector(dictionary), gray)
    assert ids.tolist() == [7]
    refined, ok = aruco.refine_corners(gray, raw, cam)
    expected = cam.project(tag.corners_body() @ rot.T + pos)
    assert ok.all()
    np.testing.assert_allclose(refined[0], expected, atol=0.05)


_TINY_SCENARIO = """
[scenario]
name = "tiny-video"
seed = 2
[capture]
duration_s = 0.1
rate_hz = 60.0
format = "plain-csv"
noise_sigma_mm = 0.0
offset = [0.003, -0.002, 0.004, 0.01, 0.0, 0.0]
[rig]
name = "tiny-rig"
[platform]
mass = 20.0
com = [0.0, 0.0, -0.02]
inertia_com = [[0.6, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.5]]
markers = { P1 = [0.5, 0.25, 0.0], P2 = [-0.5, 0.25, 0.0], P3 = [-0.5, -0.25, 0.0], P4 = [0.5, -0.25, 0.0] }
[[springs]]
name = "S1"
anchor = [0.6, 0.4, 2.3]
attachment = [0.5, 0.25, 0.0]
stiffness = 3000.0
free_length = 1.0
[[springs]]
name = "S2"
anchor = [-0.6, 0.4, 2.3]
attachment = [-0.5, 0.25, 0.0]
stiffness = 3000.0
free_length = 1.0
[[springs]]
name = "S3"
anchor = [0.0, -0.45, 2.3]
attachment = [0.0, -0.25, 0.0]
stiffness = 3000.0
free_length = 1.0
[[reference_bodies]]
name = "blk"
mass = 5.0
com = [0.0, 0.0, 0.05]
inertia_com = [[0.02, 0.0, 0.0], [0.0, 0.03, 0.0], [0.0, 0.0, 0.04]]
markers = { R1 = [0.1, 0.1, 0.1], R2 = [-0.1, 0.1, 0.1], R3 = [0.0, -0.1, 0.1] }
[[calibration_captures]]
name = "empty"
[object]
session = "s"
base = { position = [0.0, 0.0, 0.1] }
[[object.links]]
name = "base"
parent = "platform"
mass = 30.0
com = [0.01, -0.05, 0.1]
inertia_com = [[1.2, 0.05, -0.02], [0.05, 0.9, -0.1], [-0.02, -0.1, 0.8]]
markers = { B1 = [0.1, 0.0, 0.0], B2 = [0.0, 0.2, 0.0], B3 = [0.0, 0.0, 0.3] }
[[postures]]
name = "p1"
"""


def test_simulate_writes_a_video_that_tracks_back_to_its_truth(tmp_path, capsys):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(_TINY_SCENARIO)
    out = tmp_path / "bundle"
    assert main(["simulate", str(scenario), "-o", str(out), "--video"]) == 0
    session = out / "captures" / "s"
    assert "p1.avi" in capsys.readouterr().out
    video, truth = session / "p1.avi", session / "p1.video_truth.csv"
    cam, tags = session / "camera" / "camera.toml", session / "camera" / "tags.toml"
    assert all(p.exists() for p in (video, truth, cam, tags))
    assert main(["track", str(video), "--camera", str(cam), "--tags", str(tags),
                 "-o", str(tmp_path / "p1_video.csv")]) == 0
    got, want = read_capture(tmp_path / "p1_video.csv"), read_capture(truth)
    assert got.names == want.names and got.n_frames == want.n_frames == 6
    # every corner within 0.2 mm (about 20 times the corners' std across the view and 6 times
    # along it at this camera's noise: a gross error in the set-up, not noise, would fail)
    assert np.nanmax(np.abs(got.xyz_m - want.xyz_m)) < 2e-4
    assert main(["simulate", str(scenario), "-o", str(out), "--video"]) == 2  # no overwrite


def test_print_sheets_are_a4_pdfs(tmp_path, capsys):
    tags = _write_tags(tmp_path / "tags.toml")
    pdf = tmp_path / "tags.pdf"
    assert main(["camera", "print-tags", str(tags), "-o", str(pdf)]) == 0
    assert pdf.read_bytes().startswith(b"%PDF")
    assert b"MediaBox [ 0 0 595.2755905512 841.8897637795 ]" in pdf.read_bytes()
    board = tmp_path / "board.pdf"
    assert main(["camera", "print-board", "--board", "5x7", "--square-m", "0.03",
                 "--marker-m", "0.022", "-o", str(board)]) == 0
    assert main(["camera", "print-board", "--board", "5x7", "--square-m", "0.3",
                 "--marker-m", "0.22", "-o", str(tmp_path / "big.pdf")]) == 2
    assert "does not fit on A4" in capsys.readouterr().err


def test_track_reuses_another_tracks_lab_frame(clip, tmp_path, capsys):
    """``--lab-frame OTHER.track.json``: the capture is placed in that track's lab frame
    exactly (a lab frame moved by 1 mm and 0.01 deg moves every marker by that rigid map),
    and the side file says where it came from; a side file without a board's lab frame, or
    of another camera file, is refused with exit status 2."""
    folder, scene, video, cam_file, tags_file = clip
    first = tmp_path / "first.csv"
    assert main(["track", str(video), "--camera", str(cam_file), "--tags", str(tags_file),
                 "-o", str(first)]) == 0
    doc = json.loads((tmp_path / "first.track.json").read_text())
    lab = doc["lab_frame"]
    turn = Rotation.from_rotvec(np.radians([0.01, 0.0, 0.0])).as_matrix()
    lab["rotation_cam_lab"] = (np.array(lab["rotation_cam_lab"]) @ turn).tolist()
    lab["translation_cam_lab_m"] = (np.array(lab["translation_cam_lab_m"]) + 1e-3).tolist()
    moved = tmp_path / "moved.track.json"
    moved.write_text(json.dumps(doc))
    second = tmp_path / "second.csv"
    capsys.readouterr()
    assert main(["track", str(video), "--camera", str(cam_file), "--tags", str(tags_file),
                 "-o", str(second), "--lab-frame", str(moved)]) == 0
    assert f"from {moved}" in capsys.readouterr().out
    used = json.loads((tmp_path / "second.track.json").read_text())["lab_frame"]
    assert used["from"] == str(moved) and used["rotation_cam_lab"] == lab["rotation_cam_lab"]
    # x_cam = R1 a + t1 = R2 b + t2, so b = R2^T (R1 a + t1 - t2)
    first_lab = json.loads((tmp_path / "first.track.json").read_text())["lab_frame"]
    r1, t1 = np.array(first_lab["rotation_cam_lab"]), np.array(first_lab["translation_cam_lab_m"])
    r2, t2 = np.array(lab["rotation_cam_lab"]), np.array(lab["translation_cam_lab_m"])
    a, b = read_capture(first).xyz_m, read_capture(second).xyz_m
    np.testing.assert_allclose(b, (a @ r1.T + t1 - t2) @ r2, atol=1e-9)
    camera_frame = tmp_path / "camera.track.json"
    camera_frame.write_text(json.dumps({**doc, "lab_frame": {"frame": "camera"}}))
    for bad, expected in ((camera_frame, "lab board"), (tmp_path / "nothing.json", "cannot read")):
        assert main(["track", str(video), "--camera", str(cam_file), "--tags", str(tags_file),
                     "-o", str(tmp_path / "third.csv"), "--lab-frame", str(bad)]) == 2
        assert expected in capsys.readouterr().err
    other_cam = tmp_path / "other_camera.toml"
    other_cam.write_text(cam_file.read_text() + "\n# another calibration\n")
    assert main(["track", str(video), "--camera", str(other_cam), "--tags", str(tags_file),
                 "-o", str(tmp_path / "fourth.csv"), "--lab-frame", str(moved)]) == 2
    assert "another camera file" in capsys.readouterr().err


def test_read_lab_frame_with_a_damaged_inputs_list(tmp_path):
    """A side file whose ``inputs`` is not rigtool track's list of tables: the camera file
    cannot be checked against it, so the frame is read (no traceback); one that names
    another camera file's sha256 is refused."""
    from rigtool.camera.capture_files import read_lab_frame
    from rigtool.errors import InputError
    lab = {"frame": "body", "rotation_cam_lab": np.eye(3).tolist(),
           "translation_cam_lab_m": [0.0, 0.0, 1.5]}
    cam = tmp_path / "camera.toml"
    cam.write_text("fx = 1\n")
    side = tmp_path / "first.track.json"
    for inputs in (["junk", 3], "not a list", None):
        side.write_text(json.dumps({"lab_frame": lab, "inputs": inputs}))
        assert read_lab_frame(side, camera_file=cam)["from"] == str(side)
    side.write_text(json.dumps({"lab_frame": lab,
                                "inputs": [{"path": "other.toml", "sha256": "00"}]}))
    with pytest.raises(InputError, match="another camera file"):
        read_lab_frame(side, camera_file=cam)
