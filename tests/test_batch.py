"""``rigtool batch`` on a real local Dask cluster (2 worker processes) and simulated sessions.

A short scenario (6 s captures at 100 Hz, the demo's two-link object) is simulated once and
copied into three sessions: ``s1`` as simulated, ``s2`` with a shorter window on one posture
(other numbers), ``s3`` broken (a marker the captures do not have). The rig file holds the
simulator's true calibration (no calibration run needed). The equation-error method keeps
every session to a few seconds; ``benchmarks/batch.py`` runs the default output-error method.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rigtool.cli import main
from rigtool.sim.true_calibration import write_true_calibration

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--method", "equation-error"]
TIMING_KEYS = {"time_s", "elapsed_s"}

SCENARIO = f"""
[scenario]
name = "batch-test"
extends = "{ROOT / 'scenarios' / 'demo.toml'}"

[capture]
rate_hz = 100.0
duration_s = 6.0

[[calibration_captures]]
name = "empty"
load = []

[relative_motion]
name = "swing"
posture = "posture1"
release = {{ link1 = [0.03, 0.26, 0.0] }}
joint_damping = 0.05
duration_s = 6.0
window = [0.5, 5.5]
"""


def make_study(root: Path, n_sessions: int, *, broken: str | None = None) -> list[Path]:
    """Simulate the short scenario once under ``root`` and copy it into sessions s1..sN (s2
    with another window on posture1; ``broken``: that session names a marker the captures
    lack). Returns the manifests."""
    (root / "short.toml").write_text(SCENARIO)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["simulate", str(root / "short.toml"), "-o", str(root)]) == 0
    cal = root / "calibration"
    write_true_calibration(cal / "paper-rig.toml", cal / "paper-rig.truth.json",
                              cal / "paper-rig.calibrated.toml")
    sim = root / "captures" / "two-link"
    manifests = []
    for i in range(1, n_sessions + 1):
        s = root / "captures" / f"s{i}"
        shutil.copytree(sim, s)
        text = (s / "session.toml").read_text().replace('name = "two-link"', f'name = "s{i}"')
        if i == 2:
            text = text.replace('name = "posture1"', 'name = "posture1"\nwindow = [1.0, 5.5]')
        if f"s{i}" == broken:
            text = text.replace("A3 = [0.03", "A9 = [0.03")
        (s / "session.toml").write_text(text)
        manifests.append(s / "session.toml")
    shutil.rmtree(sim)
    return manifests


def run_cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def numbers_equal(a, b, path: str = "") -> list[str]:
    """Where two report.json documents differ (timing fields left out)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in set(a) | set(b) if k not in TIMING_KEYS
                for d in numbers_equal(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in numbers_equal(x, y,
                                                                              f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Three sessions (s3 broken), batched once on a local cluster of 2 workers."""
    root = tmp_path_factory.mktemp("study")
    manifests = make_study(root, 3, broken="s3")
    results = root / "batch-results"
    code, out, err = run_cli(["batch", str(root / "captures" / "s*" / "session.toml"),
                              "-o", str(results), "--workers", "2", *FAST])
    return root, manifests, results, code, out, err


def _summary(results: Path) -> pd.DataFrame:
    return pd.read_csv(results / "summary.csv")


def test_broken_session_is_reported_and_the_rest_written(study):
    root, manifests, results, code, out, err = study
    assert code == 2, err
    assert "rigtool batch: s3: error:" in err and "marker(s) A9" in err
    assert "Traceback" not in err and "internal error" not in err
    table = _summary(results)
    s3 = table[table.session == "s3"]
    assert len(s3) == 1 and s3.status.iloc[0] == "bad input" and s3.exit_status.iloc[0] == 2
    assert "before any fit ran" in s3.message.iloc[0] and "A9" in s3.message.iloc[0]
    assert not (results / "s3").exists()
    for key in ("s1", "s2"):
        rows = table[table.session == key]
        assert set(rows.status) == {"done"} and set(rows.exit_status) == {0}
        assert list(rows[rows.kind == "posture"].item) == ["posture1", "posture2", "posture3"]
        assert (rows.kind == "relative_motion").sum() == 1 and (rows.kind == "segment").sum() == 2
        assert (results / key / "report.html").stat().st_size > 0
    assert not [p for p in results.iterdir() if ".tmp-" in p.name]      # nothing half-written
    # the Parquet table is the CSV table
    parquet = pd.read_parquet(results / "summary.parquet").replace("", float("nan"))
    pd.testing.assert_frame_equal(parquet.reset_index(drop=True), table, check_dtype=False)
    page = (results / "index.html").read_text()
    assert "href='s1/report.html'" in page and "href='s2/report.html'" in page
    assert "href='s3/report.html'" not in page and "A9" in page


@pytest.mark.slow
def test_batch_reports_equal_single_runs(study, tmp_path):
    """Every written report.json holds the numbers a single `rigtool run` of the same
    session writes (the two share run_to_directory)."""
    root, manifests, results, *_ = study
    docs = {}
    for manifest, key in zip(manifests[:2], ("s1", "s2")):
        code, _, err = run_cli(["run", str(manifest), "-o", str(tmp_path / key), *FAST])
        assert code == 0, err
        single = json.loads((tmp_path / key / "report.json").read_text())
        batch = json.loads((results / key / "report.json").read_text())
        assert numbers_equal(batch, single) == []
        docs[key] = batch
    # and the two sessions are different sessions (s2 has another window)
    assert docs["s1"]["postures"][0]["com"] != docs["s2"]["postures"][0]["com"]
    assert docs["s1"]["postures"][1]["com"] == docs["s2"]["postures"][1]["com"]


@pytest.mark.slow
def test_rerun_skips_finished_sessions(study):
    root, manifests, results, *_ = study
    inode = {k: (results / k).stat().st_ino for k in ("s1", "s2")}
    code, out, err = run_cli(["batch", str(root / "captures" / "s*" / "session.toml"),
                              "-o", str(results), "--workers", "2", *FAST])
    assert code == 2                                # s3 is still broken
    assert "3 sessions: 1 to run, 2 up to date (skipped), 0 refused" in out
    table = _summary(results)
    assert set(table[table.session.isin(["s1", "s2"])].status) == {"skipped"}
    assert {k: (results / k).stat().st_ino for k in inode} == inode    # not rewritten


@pytest.mark.slow
def test_force_reruns(study):
    root, manifests, results, *_ = study
    before = json.loads((results / "s1" / "batch.json").read_text())
    inode = (results / "s1").stat().st_ino
    code, out, err = run_cli(["batch", str(manifests[0]), "-o", str(results), "--force",
                              "--workers", "1", *FAST])
    assert code == 0, err
    assert "1 session: 1 to run, 0 up to date" in out
    assert (results / "s1").stat().st_ino != inode                      # replaced whole
    after = json.loads((results / "s1" / "batch.json").read_text())
    assert after["status"] == "done" and after["worker"] != before["worker"]
    # the summary of this batch lists the sessions it was given
    assert list(_summary(results).session.unique()) == ["s1"]


@pytest.mark.slow
def test_changed_input_or_interrupted_session_reruns_alone(study):
    """A session whose capture changed, and one an interrupted batch left half-written
    (its temporary folder, no results folder), rerun; the up-to-date one is skipped."""
    root, manifests, results, *_ = study
    shutil.copytree(results / "s1", results / ".s1.tmp-deadbeef")   # killed while writing
    shutil.rmtree(results / "s1")
    manifests[1].write_text("# edited\n" + manifests[1].read_text())   # a new sha256
    code, out, err = run_cli(["batch", str(manifests[0]), str(manifests[1]),
                              str(manifests[1].parent.parent / "s1"),     # given twice
                              "-o", str(results), "--workers", "2", *FAST])
    assert code == 0, err
    assert "2 sessions: 2 to run, 0 up to date" in out
    assert not (results / ".s1.tmp-deadbeef").exists()
    doc = json.loads((results / "s2" / "report.json").read_text())
    from rigtool.config import sha256_of
    assert doc["inputs"][0] == {"path": "session.toml", "sha256": sha256_of(manifests[1])}
    code, out, _ = run_cli(["batch", str(manifests[0]), str(manifests[1]), "-o", str(results),
                            *FAST])
    assert code == 0 and "2 up to date (skipped)" in out          # no cluster needed


@pytest.mark.slow
def test_rig_override_writes_its_own_folder(study, monkeypatch):
    """--rig NEW.toml reruns against another rig file: results in batch-results-NEW/, the
    manifests and earlier results untouched; into the earlier results folder it refuses."""
    root, manifests, results, *_ = study
    cal = root / "calibration"
    new_rig = cal / "recalibrated.toml"
    write_true_calibration(cal / "paper-rig.toml", cal / "paper-rig.truth.json", new_rig,
                              stiffness_scale=1.01)
    manifest_text = manifests[0].read_text()
    old_report = (results / "s1" / "report.json").read_bytes()
    code, out, err = run_cli(["batch", str(manifests[0]), "-o", str(results), "--rig",
                              str(new_rig), *FAST])
    assert code == 2
    assert "s1: error:" in err and "never overwritten" in err
    assert "without -o it is batch-results-recalibrated/" in err
    monkeypatch.chdir(root)
    code, out, err = run_cli(["batch", str(manifests[0]), "--rig", str(new_rig),
                              "--workers", "1", *FAST])
    assert code == 0, err
    new = json.loads((root / "batch-results-recalibrated" / "s1" / "report.json").read_text())
    old = json.loads(old_report)
    assert os.path.relpath(new_rig, manifests[0].parent) in [i["path"] for i in new["inputs"]]
    assert new["postures"][0]["inertia_com"] != old["postures"][0]["inertia_com"]
    assert (results / "s1" / "report.json").read_bytes() == old_report
    assert manifests[0].read_text() == manifest_text


def test_run_takes_another_rig_file_too(study):
    """`rigtool run --rig` is the same option: checked before any fit."""
    root, manifests, *_ = study
    code, _, err = run_cli(["run", str(manifests[0]), "--rig", str(root / "nope.toml")])
    assert code == 2 and "nope.toml: rig file not found" in err


@pytest.mark.slow
def test_existing_scheduler_is_used(study, tmp_path):
    """--scheduler: the batch is a client of a scheduler it did not start (here a local
    cluster of this test's, as `dask scheduler` + `dask worker` would be)."""
    from distributed import LocalCluster
    root, manifests, *_ = study
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        code, out, err = run_cli(["batch", str(manifests[0]), "-o", str(tmp_path / "r"),
                                  "--scheduler", cluster.scheduler_address, *FAST])
        assert code == 0, err
        assert len(cluster.workers) == 1                 # still running: not the batch's
    # Dask's default worker settings, which rigtool's own local workers leave out
    assert "note: 1 of 1 workers run with MALLOC_TRIM_THRESHOLD_ and the statistical" in err
    assert (tmp_path / "r" / "s1" / "report.json").is_file()


# ---------------------------------------------------------------- errors, without a cluster

def _refused(args: list[str]) -> str:
    code, out, err = run_cli(["batch", *args])
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err
    return err


def test_argument_errors(tmp_path):
    assert "no file matches this pattern" in _refused([str(tmp_path / "nothing*" / "x.toml")])
    assert "session manifest not found" in _refused([str(tmp_path / "missing.toml")])
    assert "a folder without session.toml" in _refused([str(tmp_path)])
    (tmp_path / "session.toml").write_text("")
    assert "--workers sizes the local cluster" in _refused(
        [str(tmp_path), "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"])
    assert "expected a whole number >= 1" in _refused([str(tmp_path), "--workers", "0"])
    assert "rig file not found (given with --rig)" in _refused(
        [str(tmp_path), "--rig", str(tmp_path / "nope.toml")])
    assert "must not be the session's own folder" in _refused([str(tmp_path), "-o",
                                                                str(tmp_path)])


def test_unreachable_scheduler(tmp_path, monkeypatch):
    import rigtool.batch.cluster as cluster
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2)
    with socket.socket() as s:                  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "session.toml").write_text("")
    err = _refused([str(tmp_path / "s"), "-o", str(tmp_path / "r"), "--scheduler",
                    f"tcp://127.0.0.1:{port}"])
    assert "no Dask scheduler answers at this address" in err and "dask scheduler" in err


def test_results_that_are_not_ours_are_never_replaced(study, tmp_path):
    root, manifests, *_ = study
    results = tmp_path / "r"
    (results / "s1").mkdir(parents=True)
    (results / "s1" / "notes.txt").write_text("mine")
    shutil.copytree(root / "batch-results" / "s2", results / "s2")   # s2's, run elsewhere
    doc = json.loads((results / "s2" / "batch.json").read_text())
    doc["manifest"] = str(tmp_path / "elsewhere" / "session.toml")
    (results / "s2" / "batch.json").write_text(json.dumps(doc))
    err = _refused([str(manifests[0]), str(manifests[1]), "-o", str(results), *FAST])
    assert "s1: error:" in err and "was not written by rigtool batch" in err
    assert "s2: error:" in err and "holds the results of another session" in err
    assert (results / "s1" / "notes.txt").read_text() == "mine"


def test_a_running_batch_holds_its_results_folder(study, tmp_path):
    root, manifests, *_ = study
    results = tmp_path / "r"
    results.mkdir()
    (results / ".batch.lock").write_text(f"{socket.gethostname()} {os.getppid()}\n")
    err = _refused([str(manifests[0]), "-o", str(results), *FAST])
    assert "another rigtool batch" in err and "is writing to this results folder" in err
    # a lock whose process is gone (a killed batch) is taken over
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (results / ".batch.lock").write_text(f"{socket.gethostname()} {dead}\n")
    (results / "s1").mkdir()
    (results / "s1" / "x").write_text("")
    err = _refused([str(manifests[0]), "-o", str(results), *FAST])   # refused for s1 only
    assert "was not written by rigtool batch" in err and not (results / ".batch.lock").exists()


def test_session_keys():
    from rigtool.batch.plan import session_keys
    keys = session_keys([Path("/a/s1/session.toml"), Path("/a/s2/session.toml"),
                         Path("/a/s2/retest.toml"), Path("/b/g1/s3/session.toml"),
                         Path("/b/g2/s3/session.toml"), Path("/c/x y/session.toml"),
                         Path("/c/x_y/session.toml")])
    assert keys == ["s1", "s2", "s2-retest", "g1-s3", "g2-s3", "c-x_y-1", "c-x_y-2"]


def test_inputs_list_the_weighing_file(study, tmp_path):
    """report.json's inputs (and so the resume check) include a total_mass_from file."""
    from rigtool.config import load_session
    from rigtool.pipeline.inputs import session_inputs
    root, manifests, *_ = study
    s = tmp_path / "s"
    shutil.copytree(manifests[0].parent, s)
    (s / "weigh.json").write_text(json.dumps({"total_mass_kg": 80.817}))
    text = (s / "session.toml").read_text()
    text = text.replace("rig = \"../../calibration", f"rig = \"{root}/calibration")
    text = "\n".join(l for l in text.splitlines() if not l.startswith("total_mass"))
    (s / "session.toml").write_text(text.replace("[session]", "[session]\ntotal_mass_from = "
                                                 "\"weigh.json\"", 1))
    paths = [i["path"] for i in session_inputs(load_session(s / "session.toml"))]
    assert paths[0] == "session.toml" and paths[1].endswith("paper-rig.calibrated.toml")
    assert paths[2:] == ["swing.csv", "posture1.csv", "posture2.csv", "posture3.csv",
                         "weigh.json"]


def test_the_parent_never_imports_jax():
    """The batch's parent plans, submits and summarises without the fitting code (JAX in a
    parent is what deadlocked forked workers)."""
    code = ("import sys, rigtool.commands.batch, rigtool.batch.plan, rigtool.batch.cluster, "
            "rigtool.batch.summary, rigtool.batch.tasks, rigtool.batch.lock; "
            "assert 'jax' not in sys.modules and 'rigtool.pipeline.session' not in sys.modules")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_an_internal_error_is_the_session_s_record(study, tmp_path, monkeypatch):
    """A bug (not a user's error) inside one session: status 'internal error', exit status
    meaning 1, the traceback kept; nothing half-written is left."""
    import rigtool.pipeline.run_job as run_job
    from rigtool.batch.tasks import INTERNAL, SessionJob, run_task
    from rigtool.pipeline.run_job import RunOptions

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(run_job, "run_to_directory", broken)
    root, manifests, *_ = study
    job = SessionJob("s1", manifests[0], tmp_path / "r" / "s1", None, RunOptions())
    rec = run_task(job, 0.5)
    assert rec.status == INTERNAL and rec.exit_status == 1
    assert rec.message == "ZeroDivisionError: a bug" and "Traceback" in rec.detail
    assert rec.preflight_s == 0.5
    assert list((tmp_path / "r").iterdir()) == []


def test_batch_exit_status():
    from rigtool.batch.tasks import SessionRecord, batch_exit_status
    rec = {s: SessionRecord("k", "m", "o", s) for s in ("done", "skipped", "bad input",
                                                         "internal error", "partial")}
    assert batch_exit_status([rec["done"], rec["skipped"]]) == 0
    assert batch_exit_status([rec["done"], rec["partial"]]) == 3
    assert batch_exit_status([rec["partial"], rec["internal error"]]) == 1
    assert batch_exit_status([rec["done"], rec["internal error"]]) == 1
    assert batch_exit_status([rec["internal error"], rec["bad input"]]) == 2


def test_cpu_shares():
    from rigtool.batch.worker_cpus import cpu_share
    assert cpu_share(0, 2, [0, 1]) == {0} and cpu_share(1, 2, [0, 1]) == {1}
    assert cpu_share(1, 2, [2, 3, 4, 5, 6]) == {4, 5}       # equal contiguous shares
    assert cpu_share(0, 3, [0, 1]) is None                  # more workers than CPUs
    assert cpu_share(2, 2, [0, 1]) is None


def _affinity_of_every_thread():
    return sorted({c for t in os.listdir("/proc/self/task")
                   for c in os.sched_getaffinity(int(t))})


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux and two CPUs")
def test_local_workers_get_disjoint_cpus():
    """Every thread of each local worker on that worker's own CPUs (and a task's thread)."""
    from rigtool.batch.cluster import dask_client
    with dask_client(scheduler=None, workers=2) as client:
        per_worker = list(client.run(_affinity_of_every_thread).values())
        in_task = client.submit(_affinity_of_every_thread, pure=False).result()
    assert len(per_worker) == 2
    a, b = map(set, per_worker)
    assert a and b and not a & b
    assert len(a) == len(b) == len(os.sched_getaffinity(0)) // 2
    assert set(in_task) in (a, b)


def _worker_settings(dask_worker):
    import dask
    return (dask.config.get("distributed.worker.profile.enabled"),
            "profile" in dask_worker.periodic_callbacks,
            os.environ.get("MALLOC_TRIM_THRESHOLD_"))


def test_local_workers_run_without_the_profiler_and_the_malloc_trim(monkeypatch):
    """The local cluster's workers have neither Dask's statistical profiler (it samples the
    running session's stack every 10 ms) nor the nanny's MALLOC_TRIM_THRESHOLD_ (it turns off
    glibc's adaptive mmap threshold): together they slowed a session by ~20 % (rigtool.batch.cluster),
    while Dask's defaults in this process keep both."""
    import dask
    # a nanny started earlier in this process (another test) sets it here, as Dask documents
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    from rigtool.batch.cluster import dask_client
    with dask_client(scheduler=None, workers=1) as client:
        settings = list(client.run(_worker_settings).values())
    assert settings == [(False, False, None)]
    assert dask.config.get("distributed.worker.profile.enabled") is True
    assert dask.config.get("distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_")
