"""The session job: manifest -> per-posture overall properties -> subset Phi_s.

Stages, each feeding the next (data flows one way):

1. the manifest and its calibrated rig (rigtool.config), the object's weighed mass and the
   scale's uncertainty;
2. link marker coordinates (from the manifest, or built from a static capture;
   rigtool.pipeline.links);
3. per locked posture (rigtool.pipeline.posture): platform motion (filtered both sides, noise
   probes), the base link's pose on the platform, every child's rotation ``0R_j`` (averaged
   over the capture), and the object's COM and inertia (rigtool.identify.posture);
4. the subset Phi_s from all postures (rigtool.identify.subset.fit);
5. the relative-motion capture: the remaining J_yy terms, the full minimal set Phi_B
   (rigtool.identify.relative.equation_error, then by default its output-error refinement,
   rigtool.identify.relative.output_error); joint centres the manifest leaves out come from
   the same capture first (rigtool.kinematics.joint_centre);
6. per-link parameters from Phi_B completed by the manifest's priors
   (rigtool.identify.segments.fit).
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, wait
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from rigtool.config import RigFile, Session, load_rig, load_session
from rigtool.devices.weigh_json import resolve_total_mass, total_mass_std
from rigtool.background import load_in_background
from rigtool.engine.rigid import RigidModel, load_executables, padded_width
from rigtool.engine.tree_compiled import load_kernels
from rigtool.identify.common.capture_window import window_note
from rigtool.identify.common.output_error import final_substeps_of
from rigtool.errors import ConfigError
from rigtool.pipeline.inputs import session_inputs
from rigtool.identify.calibration.verdict import HOLDOUT_Z_LIMIT
from rigtool.identify.posture.force_scale import SHARED_KEY as SCALE_SHARED_KEY
from rigtool.pipeline.rig_check import DayCheck, check_rig_on_the_day, judged_with_scale
from rigtool.identify.posture.force_scale import (carry_scale_uncertainty, posture_scale,
                                                  scale_moved, scaled_rig,
                                                  session_force_scale)
from rigtool.identify.posture.tissue_fit import joint_tissue_evidence
from rigtool.identify.relative.equation_error import RelativeResult, resolve_relative
from rigtool.identify.relative.output_error import RelativeRefinement
from rigtool.pipeline.relative_model import RelativeModelChoice, refine_relative_motion
from rigtool.identify.segments.fit import SegmentsResult, estimate_segments, priors_from_specs
from rigtool.identify.subset.fit import PostureOverall, SubsetResult, fit_subset
from rigtool.kinematics.length_scale import scale_note, to_layout_scale
from rigtool.mocap import read_capture
from rigtool.pipeline.links import estimate_joint_centres, link_markers
from rigtool.pipeline.posture import (MotionTraces, PostureOutcome, _attached_markers,
                                      _calibration_std, _child_rotations, fit_one_posture,
                                      motion_traces, posture_overall, scale_standard_errors)
from rigtool.pipeline.breath_level import movement_breath, to_session_breath_level
from rigtool.pipeline.preflight import check_session
from rigtool.pipeline.robot_stage import (RobotOutcome, fit_robot, link_marker_checks,
                                          prepare_robot)
from rigtool.pipeline.rigid_widths import POSTURE_COLUMNS, posture_covariance_columns
from rigtool.pipeline.workers import posture_processes, run_pool
from rigtool.process_pool import LazyPool
from rigtool.tree import Tree

Progress = Callable[[str], None]


@dataclass
class SessionOutcome:
    """Everything the session job produced (the report is written from this)."""

    session: Session
    rigfile: RigFile
    total_mass_kg: float
    link_markers: dict[str, dict[str, np.ndarray]]
    inputs: list[dict]
    postures: list[PostureOutcome]
    subset: SubsetResult | None
    warnings: list[str]
    tree: Tree | None = None                     # the tree used (joint centres filled in)
    joint_centres: dict = field(default_factory=dict)   # link -> JointCentreEstimate
    relative: RelativeResult | None = None       # the relative-motion stage, full Phi_B
    relative_refinement: RelativeRefinement | None = None   # its output-error refinement
    relative_model: RelativeModelChoice | None = None       # which model, and why
    segments: SegmentsResult | None = None       # per-link parameters (Phi_B + priors)
    notes: list[str] = field(default_factory=list)      # stages skipped and why
    total_mass_std_kg: float = float("nan")      # the scale's standard uncertainty
    total_mass_std_source: str = ""              # where that number came from
    robot: "RobotOutcome | None" = None          # a [robot] session: base parameters, links
    #: what the captures could not identify (a partial result: empty when complete)
    not_identified: list[str] = field(default_factory=list)
    #: with breathing markers, the relative-motion capture's breath: ``measurement`` (its
    #: summary; None without a breath above the noise), which the relative-motion fits do
    #: not model, and ``level`` (the Phi_B shift of its mean breath from the postures', by
    #: which Phi_s was carried for those fits; None when not measured)
    relative_breath: dict | None = None
    #: the springs' force scale on the day the weighed mass measures
    #: (:func:`measured_force_scale`); ``applied``: the rig's stiffnesses were scaled by it
    #: and every posture fitted again (``after``: what the refitted postures measure)
    force_scale: dict | None = None
    #: the reference-body captures of the day ([[rig_checks]]): the rig against its
    #: calibration (rigtool.pipeline.rig_check)
    rig_checks: list[DayCheck] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        """True when something was measured but not everything could be identified."""
        return bool(self.not_identified)


def _noop(message: str) -> None:
    return None


def _rel(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it (as report.json lists inputs)."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _load_run_code(model: RigidModel, relative: bool) -> None:
    """What :func:`run_session` loads in the background while the first posture is fitted:
    the rigid chunks that fit needs after its first stage (the tangent ones as wide as its
    whole fit's and its covariance's columns, then the primal one with two RK4 steps per
    frame, whose states correct the fit's own at its end), then, for a relative-motion
    capture, the tree kernels. The first stage's own chunks load on its path (they are
    needed at once)."""
    load_executables(model, widths=(padded_width(POSTURE_COLUMNS),
                                    padded_width(posture_covariance_columns(model.n_springs))),
                     substeps=1)
    load_executables(model, widths=(), substeps=final_substeps_of(1, None))
    if relative:
        load_kernels()


def _posture_job(args) -> PostureOutcome:
    session, rigfile, tree, markers, ref, kwargs = args
    return fit_one_posture(session, rigfile, tree, markers, ref.capture, name=ref.name,
                           window=ref.window, units=ref.units,
                           marker_covariance=ref.marker_covariance,
                           standard_errors=ref.standard_errors,
                           cluster_frames=ref.cluster_frames, **kwargs)


def _fit_postures(session: Session, rigfile: RigFile, tree: Tree, markers: dict, kwargs: dict,
                  progress: Progress, workers: int | None,
                  pool: LazyPool | None = None) -> list[PostureOutcome]:
    """Fit every posture; independent captures run in parallel processes when it pays
    (the output-error refinement takes seconds per posture; the equation-error fit does not).
    ``pool``: the run's worker processes (started here when used; a private pool of
    ``workers`` processes without it)."""
    refs = list(session.postures)
    jobs = [(session, rigfile, tree, markers, ref, kwargs) for ref in refs]
    workers = posture_processes(len(refs), kwargs["method"], workers)
    if workers <= 1:
        out = []
        for i, job in enumerate(jobs):
            progress(f"posture {i + 1}/{len(refs)}: {refs[i].name}")
            out.append(_posture_job(job))
        return out
    with nullcontext(pool) if pool is not None else run_pool(workers) as pool:
        executor = pool.executor()
        if executor is None:              # inside a daemonic process: no children
            return _fit_postures(session, rigfile, tree, markers, kwargs, progress, 1)
        n_proc = min(workers, pool.max_workers)
        progress(f"postures: {len(refs)} fits in {n_proc} processes")
        # at most n_proc at a time (the run's pool may have more workers, for the figures)
        out: list = [None] * len(jobs)
        pending, running = list(enumerate(jobs)), {}
        while pending or running:
            while pending and len(running) < n_proc:
                i, job = pending.pop(0)
                running[executor.submit(_posture_job, job)] = i
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                i = running.pop(fut)
                out[i] = fut.result()          # a RigtoolError in a worker re-raises here
                progress(f"posture {refs[i].name} done")
        return out


#: why every posture was fitted again with the support measured through (the report's
#: Support check quotes it)
SUPPORT_FROM_TISSUE_LIMIT = ("a tissue element fitted without it held half the body, which no "
                             "tissue at one frequency does (the body rides on its support)")


def support_behind_tissue(session: Session, outcomes: list[PostureOutcome]) -> bool:
    """With ``support = "auto"``: a posture's tissue element is held at the most one element
    may hold (:meth:`rigtool.identify.posture.tissue_fit.TissueFit.at_mass_limit`) while its
    support was not measured through. What the rig's upper modes see is then the body riding
    on its back (firm enough to ride too little for the support's own test), not tissue: the
    back is the body's, so every posture is to be fitted with it measured through."""
    return session.support == "auto" and any(
        o.soft_tissue.get("at_mass_limit") and not o.support for o in outcomes)


def _chance_note(own: dict, together: dict) -> str:
    """What a posture whose tissue element the others did not bear out says."""
    return (f"soft tissue: this posture's element at 6 Hz ({own['mass_kg']:.2f} ± "
            f"{own['mass_std_kg']:.2f} kg) is not borne out by the postures together "
            f"({together['mass_kg']:.2f} ± {together['mass_std_kg']:.2f} kg over "
            f"{together['postures']}): taken for chance, the posture is fitted without it")


def postures_with_chance_tissue(session: Session, outcomes: list[PostureOutcome],
                                total_mass_kg: float) -> tuple[list[int], dict]:
    """With ``soft_tissue = "auto"``: the postures fitted with a tissue element on their own
    evidence when the postures' evidence together does not show it
    (rigtool.identify.posture.tissue_fit.joint_tissue_evidence): a one-sided 3-standard-error
    test passed by chance, which the others contradict; and that evidence together. Empty
    (and no evidence) otherwise."""
    if session.soft_tissue != "auto" or not any(o.soft_tissue for o in outcomes):
        return [], {}
    together = joint_tissue_evidence([o.tissue_evidence for o in outcomes], total_mass_kg)
    if together["seen"]:
        return [], together
    return [i for i, o in enumerate(outcomes) if o.soft_tissue], together


#: ``refit(as_session, indices, extra_kwargs)``: those postures of ``as_session`` fitted
#: again, with ``extra_kwargs`` for fit_one_posture, in the order of ``indices``
Refit = Callable[[Session, list[int], dict], list[PostureOutcome]]


def settle_tissue(session: Session, outcomes: list[PostureOutcome], total_mass_kg: float,
                  refit: Refit, progress: Progress) -> list[str]:
    """The body's soft tissue decided over the postures (``outcomes`` updated in place): a
    posture's element the others do not bear out is chance, and that posture is fitted again
    without it (:func:`postures_with_chance_tissue`); tissue seen in one posture is the
    body's, and the others are fitted with it (:func:`postures_without_tissue`). Returns the
    notes that say which postures were overruled. ``refit`` fits postures again (the run's
    worker processes, or a benchmark's own fits)."""
    chance, together = postures_with_chance_tissue(session, outcomes, total_mass_kg)
    notes = []
    if chance:
        progress(f"soft tissue not borne out by the postures together: {len(chance)} "
                 "posture(s) fitted again without it")
        for i, o in zip(chance, refit(session, chance, {"tissue_seen": False})):
            notes.append(f"posture {o.result.name}: "
                         + _chance_note(outcomes[i].tissue_evidence, together))
            outcomes[i] = o
    others = postures_without_tissue(session, outcomes)
    if others:
        progress(f"soft tissue seen: {len(others)} more posture(s) fitted with it")
        for i, o in zip(others, refit(replace(session, soft_tissue="measured"), others, {})):
            outcomes[i] = o
    return notes


def postures_disagree(tree: Tree, postures: list[PostureOverall], total_mass_kg: float) -> str:
    """Whether postures disagree with one tree of rigid links beyond their standard errors
    (Phi_s's reduced chi-square, ``SubsetResult.se_scale`` above 1), said as a clause; empty
    when they agree."""
    subset = fit_subset(tree, postures, total_mass_kg)
    if not subset.se_scale > 1.0:
        return ""
    return ("the postures fitted rigid disagreed with one tree of rigid links (Phi_s's "
            f"reduced chi-square {subset.reduced_chi2:.1f} over {len(postures)} postures)")


def rigid_postures_disagree(session: Session, rigfile: RigFile, tree: Tree,
                            outcomes: list[PostureOutcome], total_mass_kg: float) -> str:
    """Why a person's postures, each fitted rigid, are to hold the tissue they may carry in
    their standard errors: they disagree with one tree of rigid links
    (:func:`postures_disagree`). Something inside the body moved (wobbling tissue, a breath,
    skin), which each posture's rigid fit took for another mass distribution, and in a
    different way per posture. A scale of the standard errors (the Birge ratio) holds only
    the part that differs between postures: the part they share (tissue shifts every
    posture's inertia the same way) needs the tissue's own model
    (:func:`rigtool.identify.posture.tissue_fit.hold_unseen_tissue`). Empty when not (a
    robot, a single link, ``soft_tissue = "rigid"``, tissue already fitted or held, a rig
    whose calibration failed its held-out test, whose model error the postures' disagreement
    is then first of all (the Calibration check names it), or postures that agree)."""
    if (session.robot is not None or session.soft_tissue == "rigid" or len(tree.links) < 2
            or any(o.soft_tissue or o.unseen_tissue for o in outcomes)
            or calibration_failed(rigfile)):
        return ""
    return postures_disagree(tree, [posture_overall(o) for o in outcomes], total_mass_kg)


def postures_without_tissue(session: Session, outcomes: list[PostureOutcome]) -> list[int]:
    """With ``soft_tissue = "auto"``: the postures fitted rigid while another posture's fit
    found the body's wobbling tissue (rigtool.identify.posture.tissue_fit.tissue_evidence);
    the tissue is the body's, so they are to be fitted with it too. Empty otherwise."""
    if session.soft_tissue != "auto" or not any(o.soft_tissue for o in outcomes):
        return []
    return [i for i, o in enumerate(outcomes) if not o.soft_tissue]


def run_session(session_path: str | Path, *, spring_model: str = "exact",
                weighting: str = "dual-metric", compensate: bool = True,
                method: str = "output-error", workers: int | None = None,
                progress: Progress | None = None, preflight: bool = True,
                rig: str | Path | None = None, pool: LazyPool | None = None,
                postures_fitted: Callable[[list[PostureOutcome]], None] | None = None
                ) -> SessionOutcome:
    """Run every stage of a session (see module docstring).

    ``workers``: processes for the posture fits (default: one per posture up to the CPU
    count with the output-error method, else 1). ``preflight`` (default) checks every file
    the manifest names before any fit (rigtool.pipeline.preflight); off when the caller has
    just done so. ``rig``: a rig file used instead of the manifest's. ``pool``: the run's
    worker processes, kept for the report's figures (default: the posture fits' own).
    ``postures_fitted(outcomes)``, when given, is called as soon as every posture is fitted
    (a run starts drawing their figures then, while the later stages run).
    """
    progress = progress or _noop
    session = (check_session(session_path, rig=rig) if preflight
               else load_session(session_path, rig=rig))
    rigfile = load_rig(session.rig_path)
    rigfile.require_calibrated()
    if method == "output-error":
        # on the spare core while the first posture runs: the chunks it needs after its
        # first stage (its whole fit's, its covariance's, its last step's), which it
        # otherwise loads on its path when it gets there, then the relative-motion fit's
        # kernels. Its first stage's chunks, needed at once, load on its path. (Measured,
        # 4 runs each: the first posture 1.25-1.29 -> 1.17-1.22 s, one run 1.51 s; until
        # the report's workers imported only the drawing code, that core was busy with
        # their imports, and the whole fit's chunk loaded there was no faster.)
        load_in_background(_load_run_code, RigidModel.of(rigfile.rig),
                           session.relative_motion is not None, name="load_run_code")
    total_mass = resolve_total_mass(session)
    tree = session.tree
    markers = link_markers(session, tree)
    inputs = session_inputs(session)
    relative_data, window_notes = None, []
    if session.relative_motion is not None:
        ref = session.relative_motion
        relative_data, length = to_layout_scale(read_capture(ref.capture, units=ref.units),
                                                rigfile.rig.platform.markers_platform,
                                                ref.capture)
        window_notes += [f"relative motion: {scale_note(length)}"] if length else []
        note = window_note(ref.window, relative_data.time_s, relative_data.rate_hz)
        window_notes += [f"relative motion: {n}" for n in relative_data.notes]
        window_notes += [f"relative motion: {note}"] if note else []
    tree, markers, joint_centres = estimate_joint_centres(session, tree, markers, relative_data)
    if joint_centres:
        progress("joint centres estimated from the relative motion: "
                 + ", ".join(joint_centres))
    if not session.postures:
        raise ConfigError("the manifest lists no [[postures]]; add at least one locked-posture "
                          "capture", path=session.path, field="postures")
    robot_inputs = (prepare_robot(session, None if relative_data is None
                                  else relative_data.time_s)
                     if session.robot is not None else None)
    kwargs = dict(total_mass_kg=total_mass, settings=session.filter,
                  spring_model=spring_model, weighting=weighting, compensate=compensate,
                  method=method)

    def fit_all(rigfile: RigFile, *, may_hold: bool
                ) -> tuple[Session, list[PostureOutcome], list[str]]:
        """Every posture fitted, the support and the tissue settled over them; with
        ``may_hold``, postures that disagree with one rigid tree fitted again holding the
        tissue they may carry (after the force scale: a scale makes rigid postures disagree
        too)."""
        outcomes = _fit_postures(session, rigfile, tree, markers, kwargs, progress, workers,
                                 pool)
        fitted_as = session
        if support_behind_tissue(session, outcomes):
            progress("a tissue element held half the body: every posture fitted again with "
                     "its support measured through")
            fitted_as = replace(session, support="measured")
            outcomes = _fit_postures(fitted_as, rigfile, tree, markers, kwargs, progress,
                                     workers, pool)

        notes = settle_tissue(fitted_as, outcomes, total_mass, refitter(rigfile), progress)
        if may_hold:
            outcomes = held_where_disagree(fitted_as, outcomes, rigfile)
        return fitted_as, outcomes, notes

    def refitter(rigfile: RigFile) -> Refit:
        def refit(as_session: Session, indices: list[int], extra: dict
                  ) -> list[PostureOutcome]:
            again = replace(as_session, postures=tuple(as_session.postures[i] for i in indices))
            return _fit_postures(again, rigfile, tree, markers, {**kwargs, **extra}, progress,
                                 workers, pool)
        return refit

    def held_where_disagree(fitted_as: Session, outcomes: list[PostureOutcome],
                            rigfile: RigFile) -> list[PostureOutcome]:
        """The postures fitted again holding the tissue they may carry when they disagree
        with one tree of rigid links (:func:`rigid_postures_disagree`), else as they are."""
        disagreement = rigid_postures_disagree(fitted_as, rigfile, tree, outcomes,
                                               total_mass)
        if not disagreement:
            return outcomes
        progress("the postures disagree with one tree of rigid links: every posture fitted "
                 "again with the tissue it may carry held in its standard errors")
        outcomes = refitter(rigfile)(fitted_as, list(range(len(outcomes))),
                                     {"hold_tissue": True})
        for o in outcomes:
            if o.unseen_tissue:
                o.unseen_tissue["held_because"] = disagreement
        return outcomes

    day_checks = check_rig_on_the_day(session, rigfile, session.filter, progress=progress)
    day_scales = [(c.name, c.scale) for c in day_checks if c.scale is not None]
    fitted_as, outcomes, chance_notes = fit_all(rigfile, may_hold=False)
    force_scale = measured_force_scale(outcomes, total_mass, rigfile, day_scales)
    if force_scale is None or not force_scale["applied"]:
        outcomes = held_where_disagree(fitted_as, outcomes, rigfile)
    if force_scale is not None and force_scale["applied"]:
        progress(f"the springs' force scale on the day is {force_scale['scale']:.5f} "
                 f"(± {force_scale['std']:.5f}): every posture fitted again with it")
        rigfile = replace(rigfile, rig=scaled_rig(rigfile.rig, force_scale["scale"]))
        before = outcomes
        fitted_as, outcomes, chance_notes = fit_all(rigfile, may_hold=True)
        # the checks' bodies against the scaled rig: their scale less the one applied
        shifted = [(n, {**s, "delta": (1.0 + s["delta"]) / force_scale["scale"] - 1.0})
                   for n, s in day_scales]
        force_scale["after"] = measured_force_scale(outcomes, total_mass, rigfile, shifted)
        day_checks = judged_with_scale(day_checks, rigfile, force_scale["scale"])
        for o, b in zip(outcomes, before):
            # what the scale moved this posture by, per unit of it: the fits themselves
            shift = (o.result.params.pi[1:] - b.result.params.pi[1:]) / force_scale["delta"]
            o.result, shared = carry_scale_uncertainty(o.result, shift, force_scale["std"])
            o.shared_errors = {**o.shared_errors, SCALE_SHARED_KEY: shared}
            for q in force_scale["postures"]:
                if q["posture"] == o.result.name:
                    q["moved"] = scale_moved(b.result, o.result)
    if fitted_as.support != session.support:
        for o in outcomes:          # the report says why the support was measured through
            if o.support:
                o.support["measured_because"] = SUPPORT_FROM_TISSUE_LIMIT
    if session.breathing_markers:
        outcomes = to_session_breath_level(outcomes)
    if postures_fitted is not None:
        postures_fitted(outcomes)
    warnings = [w for o in outcomes for w in o.warnings]
    subset, not_identified = None, []
    if len(tree.links) > 1:
        progress("subset of the minimal parameters")
        subset = fit_subset(tree, [posture_overall(o) for o in outcomes], total_mass)
        if subset.se_scale > 1.0:
            # the postures scattered beyond their standard errors: theirs are scaled as
            # Phi_s's are
            for o in outcomes:
                if not o.held_errors:     # a posture's held tissue stands in for the scale
                    scale_standard_errors(o, subset.se_scale)
        if not subset.identified:
            # a partial result: every posture and the identified part of Phi_s are
            # written, with the null directions and the advice for the next posture
            not_identified = subset_shortfall(subset, len(outcomes))
    relative, refinement, relative_model, relative_breath = None, None, None, None
    if session.relative_motion is not None and subset is not None and not subset.identified:
        not_identified.append("the relative-motion stage was not run: it resolves the J_yy "
                              "terms left once Phi_s is identified by the locked postures")
    elif session.relative_motion is not None and subset is not None:
        progress("relative motion: the remaining J_yy terms")
        # the movement's fits model no breath: Phi_s at that capture's breath level for them
        movement = None
        if session.breathing_markers:
            movement = movement_breath(outcomes, subset, tree, relative_data, markers,
                                       session.breathing_markers,
                                       session.relative_motion.window)
            relative_breath = movement.report()
        subset_rel = subset if movement is None else movement.subset
        relative = resolve_relative(tree, rigfile.rig, rigfile.rig.platform.params,
                                    relative_data, markers, subset_rel, total_mass,
                                    session.filter, session.relative_motion.window)
        warnings += [f"relative motion: {w}" for w in relative.warnings]
        if method == "output-error":
            progress("relative motion: output-error refinement")
            refinement, relative_model = refine_relative_motion(
                session.relative_motion.motion, relative,
                fit_args=(tree, rigfile.rig, rigfile.rig.platform.params, relative_data,
                          markers),
                fit_kwargs=dict(phi_s=subset_rel.values, phi_s_cov=subset.covariance,
                                total_mass_kg=total_mass, window=session.relative_motion.window,
                                calibration_std=_calibration_std(rigfile)),
                postures_se_scale=subset.se_scale)
            if refinement is not None:
                relative = refinement.as_relative_result()
                warnings += [f"relative motion (output error): {w}"
                             for w in refinement.warnings]
            else:
                # a refinement that does not fit the data never replaces the estimate
                warnings.append("relative motion: " + relative_model.reason)
        if movement is not None:
            relative = movement.carried_back(relative, tree)
    segments, notes = None, chance_notes + list(window_notes)
    if session.opensim is not None:
        notes += session.opensim.notes
    if relative is not None:
        segments, note = _segments(session, tree, relative, total_mass)
        notes += [note] if note else []
    elif len(tree.links) > 1 and not not_identified:
        notes.append("the full minimal set Phi_B and segment parameters need a "
                     "[relative_motion] capture" if session.relative_motion is None else
                     "relative motion not run")
    mass_std, mass_std_source = total_mass_std(session, total_mass)
    robot = None
    if robot_inputs is not None:
        progress("robot: base parameters and per-link parameters")
        motion = None
        if relative_data is not None:
            progress("robot: the joints' motion")
            motion = dict(rig=rigfile.rig, platform=rigfile.rig.platform.params,
                          data=relative_data, settings=session.filter,
                          r_pb=outcomes[0].base_rotation_platform,
                          t_pb=outcomes[0].base_position_platform,
                          window=session.relative_motion.window)
        robot = fit_robot(robot_inputs, [posture_overall(o) for o in outcomes], total_mass,
                          mass_std, motion=motion,
                          rig=dict(rig=rigfile.rig, platform=rigfile.rig.platform.params,
                                   r_pb=outcomes[0].base_rotation_platform,
                                   t_pb=outcomes[0].base_position_platform,
                                   passband_hz=session.filter.passband_hz))
        robot.marker_checks, marker_warnings = link_marker_checks(session, robot_inputs)
        robot.warnings += marker_warnings
        warnings += [f"robot: {w}" for w in robot.warnings]
        notes += robot.notes
    return SessionOutcome(session, rigfile, total_mass, markers, inputs, outcomes, subset,
                          warnings, tree, joint_centres, relative, segments=segments,
                          notes=notes, relative_refinement=refinement,
                          relative_model=relative_model,
                          total_mass_std_kg=mass_std, total_mass_std_source=mass_std_source,
                          not_identified=not_identified, robot=robot,
                          relative_breath=relative_breath, force_scale=force_scale,
                          rig_checks=day_checks)


def calibration_failed(rigfile: RigFile) -> bool:
    """Whether the rig file's calibration failed its held-out test (a reference body off by
    more than :data:`~rigtool.identify.calibration.verdict.HOLDOUT_Z_LIMIT` standard
    errors): its model does not hold."""
    holdouts = ((getattr(rigfile, "raw", {}) or {}).get("calibration", {}) or {}).get(
        "holdout", []) or []
    return any((h.get("max_error_z") or 0.0) > HOLDOUT_Z_LIMIT for h in holdouts)


def measured_force_scale(outcomes: list[PostureOutcome], total_mass_kg: float,
                         rigfile: RigFile, day_scales: list[tuple[str, dict]] = ()
                         ) -> dict | None:
    """The session's force scale from its postures' masses from vibration
    (rigtool.identify.posture.force_scale): the output-error figure where a posture was
    refined, else the equation-error one (its noise alone), with the rig checks' of the day
    (``day_scales``: name and :func:`posture_scale`, reference bodies of known mass). None
    when no posture gave one or the platform's mass is not calibrated."""
    platform = rigfile.rig.platform.params
    if platform is None:
        return None
    scales = [s for _, s in day_scales]
    names = [f"rig check {n}" for n, _ in day_scales]
    methods = {"output-error"} if day_scales else set()
    for o in outcomes:
        vm = None if o.refinement is None else o.refinement.mass_from_vibration
        if vm is not None:
            scales.append(posture_scale(vm.value_kg, vm.std_noise_kg, vm.std_calibration_kg,
                                        total_mass_kg, platform.mass))
            methods.add("output-error")
        elif o.equation_error is not None and o.equation_error.mass_from_vibration:
            value, std = o.equation_error.mass_from_vibration
            scales.append(posture_scale(value, std, 0.0, total_mass_kg, platform.mass))
            methods.add("equation-error")
        else:
            continue
        names.append(o.result.name)
    if not scales:
        return None
    out = session_force_scale(scales, names)
    out["method"] = "output-error" if methods == {"output-error"} else "equation-error"
    if out["method"] != "output-error" and out["applied"]:
        # the equation-error mass carries its filter's bias (the demo: +0.05 %, 20 of its
        # standard errors, on an ideal rig): the scale is said, not applied
        out["applied"] = False
        out["not_applied_because"] = ("measured by the equation-error fit, whose mass from "
                                      "vibration carries its filter's bias at this level; "
                                      "the output-error fit (the default) applies it")
    if out["applied"] and calibration_failed(rigfile):
        # a rig whose model misjudges a known body is not mended by one scale of its forces
        # (a motion-capture scale between the rig file and the captures: applied, it moved
        # the demo's inertia from 0.6 % to 6.4 % off)
        out["applied"] = False
        out["not_applied_because"] = ("the calibration failed its held-out test, and one "
                                      "scale of its forces does not mend its model")
    return out


def subset_shortfall(subset: SubsetResult, n_postures: int) -> list[str]:
    """What a rank-deficient Phi_s leaves unidentified, said for the report: the rank, each
    null direction, and the advice for the next posture."""
    postures = "1 posture identifies" if n_postures == 1 else f"{n_postures} postures identify"
    n_null = len(subset.names) - subset.rank
    out = [f"Phi_s: {postures} {subset.rank} of its {len(subset.names)} combinations; "
           f"{n_null} null direction{'s' if n_null > 1 else ''} leave "
           f"{int(np.count_nonzero(~np.isfinite(subset.values)))} entries without a value "
           "(report.json: subset.unidentifiable)"]
    best = [a for a in subset.advice if a.startswith("best next posture")]
    out += [f"to identify more, add a posture: {(best or subset.advice)[0]}"] \
        if subset.advice else []
    return out


def _segments(session: Session, tree: Tree, relative: RelativeResult, total_mass: float
              ) -> tuple[SegmentsResult | None, str | None]:
    """Per-link parameters from Phi_B and the manifest's priors (or why they were skipped)."""
    try:
        priors = priors_from_specs(tree, session.priors, body_mass_kg=total_mass,
                                   sex=session.subject_sex)
    except ConfigError as exc:
        if session.priors:
            raise ConfigError(exc.message, path=session.path, field=exc.field,
                              found=exc.found) from None
        return None, ("segment parameters not estimated: no link has a prior (give each link "
                      "segment = \"...\" for a human, or [links.prior] CAD values for a robot)")
    return estimate_segments(tree, relative.values, relative.covariance, total_mass,
                             priors), None


# re-exported: the session's parts live in rigtool.pipeline.links and rigtool.pipeline.posture
__all__ = ["SessionOutcome", "run_session", "PostureOutcome",
           "MotionTraces", "motion_traces", "fit_one_posture", "posture_overall",
           "link_markers", "estimate_joint_centres", "_attached_markers", "_child_rotations",
           "_calibration_std"]
