"""Damaged and cut-short videos: every row of the capture at its frame's own time.

A lossless FFV1/Matroska clip is rendered once (rigtool.camera.simvideo); copies of it are
damaged in tmp_path (garbage over a stretch of the middle, the file cut short, most of it
overwritten) and tracked. The decoded pictures are matched pixel for pixel against the
undamaged clip's (picture k was rendered at k / rate), and every tracked row against the
undamaged clip's row of the same frame, so a row written one frame early or late (about
1 mm of motion here) fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from rigtool.camera.demo import demo_camera, platform_scene, write_scene_files
from rigtool.camera.simvideo import VideoSettings, render_video
from rigtool.camera.timeline import MAX_BRIDGED_GAP_S, FrameTimeline
from rigtool.camera.video import VideoFrames
from rigtool.cli import main
from rigtool.errors import InputError
from rigtool.mocap import read_capture
from rigtool.sim import dynamics as dyn
from rigtool.sim.rigs import demo_rig

RATE_HZ = 60.0
N_FRAMES = 48
#: Largest time shift, in frame periods, that a tracked row's corners may show against the
#: truth at the row's own time (a row one frame early, as before, shows 1).
MAX_SHIFT_FRAMES = 0.25
_CLUSTER_ID = b"\x1f\x43\xb6\x75"         # a Matroska Cluster element's ID


def _ffv1_writer_available(folder: Path) -> bool:
    probe = cv2.VideoWriter(str(folder / "probe.mkv"), cv2.VideoWriter_fourcc(*"FFV1"),
                            RATE_HZ, (64, 48), isColor=False)
    ok = probe.isOpened()
    probe.release()
    return ok


@pytest.fixture(scope="module")
def mkv_clip(tmp_path_factory):
    """A 0.8 s FFV1 clip of the demo platform vibrating, its scene files and its pictures."""
    folder = tmp_path_factory.mktemp("mkv")
    if not _ffv1_writer_available(folder):
        pytest.skip("this OpenCV cannot write FFV1 video")
    rig, platform = demo_rig()
    traj = dyn.simulate(dyn.System(rig, platform), (N_FRAMES + 2) / RATE_HZ, RATE_HZ,
                        platform_offset=np.array([0.004, -0.003, 0.006, 0.008, -0.006, 0.005]),
                        platform_velocity=np.array([0.05, 0.05, 0.02, 0.1, 0.0, 0.1]))
    scene = platform_scene(traj, rig.platform.markers_platform, camera=demo_camera(640, 512))
    cam_file, tags_file = write_scene_files(folder, scene)
    video = folder / "clip.mkv"
    render_video(video, scene.camera, scene.camera_pose, scene.layout, scene.motion,
                 rate_hz=RATE_HZ, n_frames=N_FRAMES,
                 settings=VideoSettings(supersample=2, fourcc="FFV1"), seed=3)
    cap = cv2.VideoCapture(str(video))
    pictures = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        pictures.append(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY))
    cap.release()
    assert len(pictures) == N_FRAMES
    return scene, video, cam_file, tags_file, np.array(pictures)


def _damage_middle(src: Path, dst: Path, *, n_frames_bytes: float, kind: str) -> None:
    """Copy ``src`` to ``dst`` with ``n_frames_bytes`` frames' worth of bytes, ending half a
    frame before the Matroska cluster nearest the file's middle, overwritten by garbage."""
    data = bytearray(src.read_bytes())
    frame_bytes = len(data) / N_FRAMES
    clusters = [m.start() for m in re.finditer(re.escape(_CLUSTER_ID), bytes(data))]
    middle = min(clusters, key=lambda c: abs(c - len(data) / 2))
    end = int(middle - 0.5 * frame_bytes)
    length = int(n_frames_bytes * frame_bytes)
    garbage = (bytes(length) if kind == "zeros" else
               np.random.default_rng(11).integers(0, 256, length, dtype=np.uint8).tobytes())
    data[end - length:end] = garbage
    dst.write_bytes(bytes(data))


def _same_picture(a: np.ndarray, b: np.ndarray) -> bool:
    return float(np.abs(a.astype(np.int16) - b).mean()) < 0.5


def _track(video: Path, cam_file: Path, tags_file: Path, out: Path) -> int:
    """``rigtool track`` detecting in every frame: a row is then the corners of its picture
    alone, whatever the frames before it (a tracked tag set would differ after a gap)."""
    return main(["track", str(video), "--camera", str(cam_file), "--tags", str(tags_file),
                 "-o", str(out), "--detect-every", "1"])


@pytest.fixture(scope="module")
def clean_capture(mkv_clip, tmp_path_factory):
    """The undamaged clip tracked: row k holds the corners of picture k, rendered at k/rate."""
    scene, video, cam_file, tags_file, pictures = mkv_clip
    out = tmp_path_factory.mktemp("clean") / "capture.csv"
    assert _track(video, cam_file, tags_file, out) == 0
    data = read_capture(out)
    assert data.n_frames == N_FRAMES and np.isfinite(data.xyz_m).all(axis=(1, 2)).mean() > 0.9
    np.testing.assert_allclose(data.time_s, np.arange(N_FRAMES) / RATE_HZ, atol=1e-9)
    return data


def _check_rows(out: Path, clean) -> tuple[np.ndarray, np.ndarray]:
    """Every row at k / rate holds what the undamaged clip's frame k holds: the time shift
    that best explains its difference from the clean row k (least squares along the
    corners' motion between clean frames) is under MAX_SHIFT_FRAMES, a row one frame off
    would show 1. Returns (frame numbers with data, frame numbers empty)."""
    data = read_capture(out)
    k = np.arange(data.n_frames)
    assert data.rate_hz == pytest.approx(RATE_HZ, rel=1e-9)
    np.testing.assert_allclose(data.time_s, k / RATE_HZ, atol=1e-9)
    assert data.names == clean.names
    seen = np.isfinite(data.xyz_m).all(axis=(1, 2))
    ks = k[seen]
    step = 0.5 * (clean.xyz_m[np.minimum(ks + 1, N_FRAMES - 1)]
                  - clean.xyz_m[np.maximum(ks - 1, 0)])
    err = data.xyz_m[seen] - clean.xyz_m[ks]
    both = np.isfinite(err).all(axis=(1, 2)) & np.isfinite(step).all(axis=(1, 2))
    assert both.mean() > 0.8
    err, step = err[both], step[both]
    shift = np.einsum("fki,fki->f", err, step) / np.einsum("fki,fki->f", step, step)
    assert np.abs(shift).max() < MAX_SHIFT_FRAMES, shift
    # and the test can fail: one frame of motion is far above the rows' differences
    assert np.abs(step).max(axis=(1, 2)).min() > 10 * np.abs(err).max()
    return ks, k[~seen]


@pytest.mark.parametrize("kind", ["zeros", "random"])
def test_damaged_video_frames_carry_their_own_numbers(mkv_clip, tmp_path, kind):
    """Every picture VideoFrames hands out is the undamaged clip's picture of the frame
    number its timestamp gives; past garbage that stops the demuxer, reading resumes."""
    scene, video, cam_file, tags_file, pictures = mkv_clip
    damaged = tmp_path / "damaged.mkv"
    _damage_middle(video, damaged, n_frames_bytes=3, kind=kind)
    frames = VideoFrames(damaged)
    numbers = []
    while (gray := frames.read()) is not None:
        k = int(round(frames.stamp_s * RATE_HZ))
        assert abs(frames.stamp_s * RATE_HZ - k) < 0.1           # on the 60 Hz grid (ms)
        assert _same_picture(gray, pictures[k]), k
        assert not _same_picture(gray, pictures[k - 1 if k else 1])
        numbers.append(k)
    frames.close()
    lost = sorted(set(range(N_FRAMES)) - set(numbers))
    assert numbers == sorted(numbers) and numbers[-1] == N_FRAMES - 1
    assert 3 <= len(lost) <= 5 and lost == list(range(lost[0], lost[-1] + 1))
    # a frame the garbage only began in may decode patched from earlier pictures (FFV1's
    # concealment of a slice that fails its CRC): it is dropped with the lost ones
    assert set(frames.concealed) <= {lost[0]}
    # no frame that can be decoded was skipped: OpenCV seeking to each lost one does not
    # give its picture
    for k in lost:
        cap = cv2.VideoCapture(str(damaged))
        cap.set(cv2.CAP_PROP_POS_FRAMES, k)
        ok, frame = cap.read()
        cap.release()
        assert not ok or not _same_picture(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY),
                                           pictures[k]), k


@pytest.mark.parametrize("kind", ["zeros", "random"])
def test_damaged_video_keeps_every_row_at_its_time(mkv_clip, clean_capture, tmp_path, capsys,
                                                   kind):
    scene, video, cam_file, tags_file, pictures = mkv_clip
    damaged = tmp_path / "damaged.mkv"
    _damage_middle(video, damaged, n_frames_bytes=3, kind=kind)
    before = video.read_bytes()
    out = tmp_path / "capture.csv"
    assert _track(damaged, cam_file, tags_file, out) == 0
    assert video.read_bytes() == before                        # the raw input untouched
    printed = capsys.readouterr().out
    seen, empty = _check_rows(out, clean_capture)
    assert len(seen) + len(empty) == N_FRAMES
    summary = json.loads((tmp_path / "capture.track.json").read_text())
    assert summary["n_frames"] == N_FRAMES
    n_lost = N_FRAMES - summary["n_frames_decoded"]
    assert 3 <= n_lost <= 5 and f"{n_lost} of them lost" in printed
    # the lost frames: the rows empty here that the undamaged clip fills, one stretch
    clean_empty = np.flatnonzero(~np.isfinite(clean_capture.xyz_m).all(axis=(1, 2)))
    lost = sorted(set(empty) - set(clean_empty))
    a, b = int(lost[0]), int(lost[-1])
    assert lost == list(range(a, b + 1)) and b - a + 1 == n_lost
    span = f"frames {a}-{b} ({a / RATE_HZ:.3f}-{b / RATE_HZ:.3f} s, {n_lost} frames)"
    assert span in printed, printed
    assert any(span in note and "interpolates it" in note for note in summary["notes"])


def test_cut_short_video_is_a_shorter_capture_with_a_note(mkv_clip, clean_capture, tmp_path,
                                                         capsys):
    scene, video, cam_file, tags_file, pictures = mkv_clip
    cut = tmp_path / "cut.mkv"
    raw = video.read_bytes()
    cut.write_bytes(raw[:len(raw) // 2])
    out = tmp_path / "capture.csv"
    assert _track(cut, cam_file, tags_file, out) == 0
    printed = capsys.readouterr().out
    seen, empty = _check_rows(out, clean_capture)
    n = len(seen) + len(empty)
    assert N_FRAMES // 2 - 2 <= n <= N_FRAMES // 2
    assert np.array_equal(np.isfinite(clean_capture.xyz_m[:n]).all(axis=(1, 2)),
                          np.isin(np.arange(n), seen))
    assert (f"the video ends after frame {n - 1} ({(n - 1) / RATE_HZ:.3f} s) though its "
            f"container states {N_FRAMES} frames") in printed, printed


def test_destroyed_video_is_refused(mkv_clip, tmp_path, capsys):
    scene, video, cam_file, tags_file, pictures = mkv_clip
    damaged = tmp_path / "destroyed.mkv"
    _damage_middle(video, damaged, n_frames_bytes=N_FRAMES * 0.45, kind="random")
    out = tmp_path / "capture.csv"
    assert _track(damaged, cam_file, tags_file, out) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert re.search(r"destroyed\.mkv: \d+ of the \d+ frames the video spans .* could not be "
                     r"decoded: frames \d+-\d+ \(\d\.\d{3}-\d\.\d{3} s, \d+ frames\).*expected "
                     r"at least 50% of the record", err), err
    assert not out.exists() and not list(tmp_path.glob("*.partial"))


def test_damaged_avi_whose_frames_are_counted_is_refused(mkv_clip, tmp_path, capsys):
    """AVI numbers packets by counting them: after damage the decoder hands later frames
    out under earlier numbers. The container's index disagrees, and the video is refused
    rather than tracked with shifted times."""
    scene, video, cam_file, tags_file, pictures = mkv_clip
    avi = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(avi), cv2.VideoWriter_fourcc(*"Y800"), RATE_HZ,
                             (pictures.shape[2], pictures.shape[1]), isColor=False)
    for p in pictures:
        writer.write(p)
    writer.release()
    data = bytearray(avi.read_bytes())
    frame_bytes = len(data) // N_FRAMES
    start = len(data) // 2
    data[start:start + 3 * frame_bytes] = bytes(3 * frame_bytes)
    avi.write_bytes(bytes(data))
    out = tmp_path / "capture.csv"
    assert _track(avi, cam_file, tags_file, out) == 2
    err = capsys.readouterr().err
    assert "clip.avi: the decoder stopped at frame" in err
    assert "numbers frames by counting" in err and not out.exists()


# --------------------------------------------------------------------------- the timeline

def _timeline(stamps_s, rate_hz=120.0) -> FrameTimeline:
    line = FrameTimeline(Path("v.mkv"), rate_hz, rate_hz, 3600)
    for t in stamps_s:
        line.place(t)
    return line


def test_timeline_numbers_frames_from_their_timestamps():
    rate = 120.0
    k = np.r_[0:40, 50:60, 59, 60:3600]                 # 10 lost, one repeated
    stamps = np.round(k / rate * 1e3) * 1e-3            # Matroska's millisecond stamps
    line = FrameTimeline(Path("v.mkv"), rate, rate, 3600)
    got = [line.place(t) for t in stamps]
    assert got[:50] == list(range(40)) + list(range(50, 60))
    assert got[50] is None and got[51:] == list(range(60, 3600))
    assert line.n_rows == 3600 and line.n_decoded == 3590
    notes = line.notes()
    assert notes[0].startswith("v.mkv: frames 40-49 (0.333-0.408 s, 10 frames) could not be")
    assert "interpolates it" in notes[0]
    assert "repeat the timestamp" in notes[1] and "59" in notes[1]
    assert len(notes) == 2
    line.check_usable()                                  # 10 frames of 3600: usable


def test_timeline_long_gap_is_noted_and_too_many_are_refused():
    rate = 120.0
    n_gap = int(round(3 * MAX_BRIDGED_GAP_S * rate))
    k = np.r_[0:1000, 1000 + n_gap:3600]
    line = _timeline(k / rate, rate)
    (note,) = line.notes()
    assert "longer than the 0.1 s the analysis interpolates" in note
    line.check_usable()                                  # one long gap in 30 s: usable
    # a gap of 0.3 s every 0.8 s: the filter's edges beside them leave nothing
    k = np.concatenate([np.arange(s, s + 60) for s in range(0, 3600, 96)])
    line = _timeline(k / rate, rate)
    with pytest.raises(InputError, match=r"v\.mkv: .* frames the video spans .*expected at "
                                         r"least 50% of the record"):
        line.check_usable()


def test_timeline_without_timestamps_counts_and_says_so():
    line = _timeline([None] * 5)
    assert line.n_rows == 5 and not line.gaps
    assert any("no frame timestamps" in n for n in line.notes())


def test_timeline_off_grid_stamps_and_a_stamp_past_the_end():
    rate = 120.0
    jitter = np.where(np.arange(100) % 2, 0.4, 0.0) / rate      # every other frame 3.3 ms late
    line = _timeline(np.arange(100) / rate + jitter, rate)
    assert line.n_rows == 100 and not line.gaps
    assert any("stray up to 3.3 ms from the 120 Hz grid" in n for n in line.notes())
    line = _timeline(np.arange(10) / rate, rate)
    with pytest.raises(InputError, match=r"v\.mkv: a frame decoded after frame 9 carries the "
                                         r"timestamp 3600\.000 s, far past the 3600 frames"):
        line.place(3600.0)
