"""Planning a batch (parent process): which sessions, where their results go, which run.

- :func:`expand_sessions`: the manifests the user named (paths, folders holding a
  ``session.toml``, or glob patterns), each once, as absolute paths.
- :func:`session_keys`: each session's results folder name under RESULTS: the manifest's
  folder (``captures/subject-07/session.toml`` -> ``subject-07``; another manifest name is
  appended, ``subject-07-retest``), with parent folders prefixed where two would clash.
- :func:`plan_batch`: per session, run, skip (its results are up to date) or refuse (its
  results folder holds something this batch must not replace).

A session's results are up to date when ``RESULTS/KEY/batch.json`` says they were written
for this manifest with these options, and ``report.json`` lists the same inputs, each with
the sha256 of the file as it is now (the manifest, the rig file, every capture: see
:func:`rigtool.pipeline.inputs.session_inputs`).

``RESULTS/KEY`` is replaced only when its ``batch.json`` shows the same manifest and the same
``--rig`` (or none): results made against another rig file, of another session, or not by
``rigtool batch`` at all are never overwritten (the session is refused: exit status 2).
"""

from __future__ import annotations

import glob
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rigtool.errors import InputError, RigtoolError
from rigtool.batch.tasks import (BAD_INPUT, BATCH_RECORD, DONE, PARTIAL, SKIPPED, SessionJob,
                                 SessionRecord)
from rigtool.pipeline.run_job import RunOptions, check_results_dir

#: the manifest name that adds nothing to a session's key
DEFAULT_MANIFEST = "session.toml"
#: RESULTS without -o (with --rig NEW.toml: batch-results-NEW)
DEFAULT_RESULTS = "batch-results"


def expand_sessions(patterns: list[str]) -> list[Path]:
    """The session manifests named by ``patterns``, each once, in the order given.

    A pattern is a manifest, a folder holding ``session.toml``, or a glob (``*``, ``?``,
    ``[...]``, ``**``) matching either; one that names nothing is an
    :class:`~rigtool.errors.InputError`.
    """
    out: list[Path] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern, recursive=True))
            if not matches:
                raise InputError("no file matches this pattern; expected session manifests "
                                 "(e.g. captures/*/session.toml)", field="SESSIONS",
                                 found=pattern)
        else:
            matches = [pattern]
        for m in matches:
            path = Path(m)
            if path.is_dir():
                if not (path / DEFAULT_MANIFEST).is_file():
                    if glob.has_magic(pattern):
                        continue                    # a glob may match other folders too
                    raise InputError(f"a folder without {DEFAULT_MANIFEST}; expected a "
                                     "session manifest or its folder", path=path)
                path = path / DEFAULT_MANIFEST
            elif not path.is_file():
                raise InputError("session manifest not found", path=path)
            out.append(path.absolute())
    unique = list(dict.fromkeys(out))
    if not unique:
        raise InputError("no session manifest found", field="SESSIONS", found=patterns)
    return unique


def safe_name(name: str) -> str:
    """A folder name safe on every file system (no leading dot: hidden names are the
    batch's temporary folders)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".") or "session"


def default_results(rig: Path | None) -> Path:
    """RESULTS without ``-o``: ``batch-results``, or ``batch-results-NEW`` with ``--rig
    NEW.toml`` (results against another rig file never mix with the earlier ones)."""
    if rig is None:
        return Path(DEFAULT_RESULTS)
    return Path(f"{DEFAULT_RESULTS}-{safe_name(Path(rig).name.removesuffix('.toml'))}")


def session_keys(manifests: list[Path]) -> list[str]:
    """Each manifest's results folder name (unique within the batch)."""
    parts = []
    for m in manifests:
        tail = [] if m.name == DEFAULT_MANIFEST else [m.stem]
        parts.append([safe_name(p) for p in m.parent.parts[1:]] + tail)
    depth = [1 if m.name == DEFAULT_MANIFEST else 2 for m in manifests]

    def key(i: int) -> str:
        return "-".join(parts[i][-depth[i]:]) or "session"

    while True:       # prefix parent folders where two keys clash
        keys = [key(i) for i in range(len(manifests))]
        clash = [i for i, k in enumerate(keys) if keys.count(k) > 1
                 and depth[i] < len(parts[i])]
        if not clash:
            break
        for i in clash:
            depth[i] += 1
    # names that differ only in characters safe_name replaced: number them
    return [k if keys.count(k) == 1 else f"{k}-{keys[:i].count(k) + 1}"
            for i, k in enumerate(keys)]


@dataclass
class BatchPlan:
    """What a batch will do: jobs to run, sessions skipped (up to date) or refused."""

    jobs: list[SessionJob] = field(default_factory=list)
    skipped: list[SessionRecord] = field(default_factory=list)
    refused: list[SessionRecord] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)       # every session, in the order given


def read_batch_record(out_dir: Path) -> dict | None:
    """``out_dir/batch.json`` (None when absent or unreadable)."""
    try:
        return json.loads((out_dir / BATCH_RECORD).read_text())
    except (OSError, ValueError):
        return None


def _record(job: SessionJob, status: str, message: str = "", **kw) -> SessionRecord:
    return SessionRecord(job.key, str(job.manifest), str(job.out_dir), status, message, **kw)


def up_to_date(job: SessionJob, batch_doc: dict) -> bool:
    """Whether ``job.out_dir`` holds complete results of this session for its current
    inputs (every sha256 as now) and options."""
    if batch_doc.get("status") not in (DONE, PARTIAL) or batch_doc.get("options") != job.options.as_dict():
        return False
    try:
        report = json.loads((job.out_dir / "report.json").read_text())
    except (OSError, ValueError):
        return False
    from rigtool.config import load_session
    from rigtool.pipeline.inputs import session_inputs
    try:
        current = session_inputs(load_session(job.manifest, rig=job.rig))
    except (RigtoolError, OSError):
        return False            # a broken or changed session: run it (preflight says why)
    # a truth.json next to the manifest is an input of the report too (its comparison)
    from rigtool.config import sha256_of
    from rigtool.report.truth import find_truth
    truth = find_truth(job.manifest)
    if truth is not None:
        current = current + [{"path": truth.name, "sha256": sha256_of(truth)}]
    recorded = report.get("inputs")
    if recorded != current and truth is not None:
        # a truth file the report could not compare was not recorded: the rest must match
        recorded = recorded + [current[-1]] if recorded == current[:-1] else recorded
    return recorded == current


def _refusal(job: SessionJob, batch_doc: dict | None) -> str | None:
    """Why ``job.out_dir`` may not be replaced by this job (None: it may)."""
    out = job.out_dir
    if not out.exists():
        return None
    if not out.is_dir():
        return f"{out} exists and is not a folder; rigtool batch never replaces it"
    if batch_doc is None:
        if not any(out.iterdir()):
            return None
        return (f"{out} exists and was not written by rigtool batch (no {BATCH_RECORD}); it "
                "is never replaced: choose another results folder with -o")
    if Path(batch_doc.get("manifest", "")) != job.manifest:
        return (f"{out} holds the results of another session ({batch_doc.get('manifest')}); "
                "choose another results folder with -o")
    old_rig = batch_doc.get("rig_override")
    new_rig = None if job.rig is None else str(job.rig)
    if old_rig != new_rig:
        return (f"{out} holds results made with "
                + (f"--rig {old_rig}" if old_rig else "the manifest's rig file")
                + ", this batch uses " + (f"--rig {new_rig}" if new_rig else
                                          "the manifest's rig file")
                + "; they are never overwritten: give this batch its own results folder "
                  f"with -o (without -o it is {default_results(job.rig)}/)")
    return None


def remove_leftovers(results: Path) -> None:
    """Delete the temporary folders an interrupted batch left in ``results``."""
    if results.is_dir():
        for p in results.glob(".*"):
            if p.is_dir() and (".tmp-" in p.name or ".old-" in p.name):
                shutil.rmtree(p, ignore_errors=True)


def plan_batch(manifests: list[Path], results: Path, *, options: RunOptions,
               rig: Path | None = None, force: bool = False) -> BatchPlan:
    """Decide, per session, run, skip or refuse (see the module docstring).

    Raises
    ------
    InputError
        When ``results`` is one of the sessions' own folders.
    """
    results = results.absolute()
    rig = None if rig is None else rig.absolute()
    for m in manifests:
        check_results_dir(m, results)
    plan = BatchPlan()
    for key, manifest in zip(session_keys(manifests), manifests):
        job = SessionJob(key, manifest, results / key, rig, options)
        plan.keys.append(key)
        try:
            check_results_dir(manifest, job.out_dir)
        except InputError as exc:
            plan.refused.append(_record(job, BAD_INPUT, str(exc)))
            continue
        doc = read_batch_record(job.out_dir)
        why = _refusal(job, doc)
        if why is not None:
            plan.refused.append(_record(job, BAD_INPUT, why))
        elif doc is not None and not force and up_to_date(job, doc):
            plan.skipped.append(_record(
                job, SKIPPED, f"up to date (written {doc.get('finished', '?')}); --force "
                "reruns it", preflight_s=doc.get("preflight_s"), run_s=doc.get("run_s"),
                worker=doc.get("worker", ""), finished=doc.get("finished", "")))
        else:
            plan.jobs.append(job)
    return plan


__all__ = ["expand_sessions", "session_keys", "safe_name", "default_results", "plan_batch",
           "BatchPlan", "up_to_date", "read_batch_record", "remove_leftovers",
           "DEFAULT_RESULTS"]
