"""Which relative-motion model describes the capture: a test, never a silent failure.

A person lying on the platform moves a limb with their muscles; a dummy's or a robot's link
released from a tilt swings freely. The passive model (links on damped spherical joints)
uses the moving links' markers as measurements of a simulated swing and is the more
accurate when it holds; the active model (the links' measured motion prescribed, only the
platform simulated) holds for any joint torques. The test is the one that matters: whether
a model's simulated markers follow the measured ones to the marker noise (the residual
standard deviation within ``REACHED_NOISE_FACTOR`` times the marker sets' own scatter in their
rigid fits, which no model enters; markers on skin raise it above the platform's noise, and
the reason then gives both). ``auto`` tries the passive model (given up after its first
horizon when it is already far off) and, when it does not reach the noise, the active one; a
model that does not reach it never replaces the equation-error estimate. Nor does one that
reaches it with a Phi_B its equation-error start disagrees with beyond both their covariances
(:meth:`RelativeRefinement.start_agreement`): its residual then holds a disturbance it takes
for marker noise (a force on the platform its model lacks, as a heartbeat's recoil), which no
model here has, so the next is not tried and the equation-error estimate, whose covariance
holds the residual's correlation over frames, is reported. Nor is a refinement tried when the
locked postures, fitted by output error too, scattered beyond their standard errors (Phi_s's
scaled by the Birge ratio, rigtool.identify.subset.fit.SCALE_P): the same disturbance is then
in the movement capture, a refinement would take it for marker noise as the postures did, and
its agreement with its start, whose covariance now holds the postures' scatter, no longer
tests it (on the simulator, a heartbeat whose harmonics fall on the rig's modes: 34 of 72 of
the refinement's Phi_B entries within 2 standard errors, 70 of 72 of the equation-error's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rigtool.identify.relative.active import refine_relative_active
from rigtool.identify.relative.equation_error import RelativeResult
from rigtool.identify.relative.fit_common import DIVERGED_MM
from rigtool.identify.relative.oe_result import floor_words
from rigtool.identify.relative.output_error import (REACHED_NOISE_FACTOR, ModelMismatch,
                                                   RelativeRefinement, refine_relative)

#: in "auto", the passive model is given up after its first horizon (2 s, initial state
#: fitted, parameters at the equation-error start) when it leaves more than this multiple of
#: the marker noise: a free swing started there tracks to about the noise (the start's J_yy is
#: within ~1 %), a limb moved by muscles drifts by millimetres within a second
EARLY_REJECT_FACTOR = 10.0


@dataclass
class RelativeModelChoice:
    """What was tried on the relative-motion capture, and what is reported.

    ``used``: ``"passive"``, ``"active"`` or ``"equation-error"`` (no refinement reached the
    noise); ``tried``: per model tried, its residual and the noise; ``reason``: one sentence
    for people.
    """

    requested: str
    used: str = "equation-error"
    tried: list[dict] = field(default_factory=list)
    reason: str = ""

    def to_json(self) -> dict:
        return {"requested": self.requested, "used": self.used, "tried": self.tried,
                "reason": self.reason, "reached_noise_factor": REACHED_NOISE_FACTOR}


def _tried(model: str, ref: RelativeRefinement) -> dict:
    return {"model": model, "method": ref.method, "residual_mm": ref.marker_sigma_mm,
            "noise_mm": ref.noise_mm, "floor_mm": ref.floor_mm,
            "reached_noise": ref.reached_noise(), "elapsed_s": ref.elapsed_s,
            "start_agreement": ref.start_agreement()}


def refine_relative_motion(requested: str, start: RelativeResult, *, fit_args: tuple,
                           fit_kwargs: dict, postures_se_scale: float = 1.0
                           ) -> tuple[RelativeRefinement | None, RelativeModelChoice]:
    """Refine the equation-error ``start`` with the model(s) ``requested`` allows.

    Parameters
    ----------
    requested : {"auto", "passive", "active"}
    start : RelativeResult
        The equation-error estimate (kept when no refinement reaches the noise).
    fit_args, fit_kwargs
        ``(tree, rig, platform, data, markers)`` and the keywords both refinements take
        (``phi_s``, ``phi_s_cov``, ``total_mass_kg``, ``window``, ``calibration_std``).
    postures_se_scale : float
        The Birge ratio Phi_s's standard errors were scaled by (1: the postures agreed
        within theirs); above 1 no refinement is tried (module notes).

    Returns
    -------
    refinement : RelativeRefinement or None
        The refinement to report (None: keep ``start``).
    choice : RelativeModelChoice
    """
    choice = RelativeModelChoice(requested)
    if postures_se_scale > 1.0:
        choice.reason = (
            "no output-error model was tried, and the equation-error estimate is reported (its "
            "standard errors hold the residual's correlation over frames): the locked "
            "postures, fitted by output error, scattered beyond their standard errors (Phi_s's "
            f"scaled by {postures_se_scale:.2f}), so a disturbance that model lacks is in these "
            "captures (a heartbeat's recoil on the rig's modes, a tremor), which a refinement "
            "would take for marker noise")
        return None, choice
    kinds = {"auto": ("passive", "active"), "passive": ("passive",),
             "active": ("active",)}[requested]
    fits = {"passive": refine_relative, "active": refine_relative_active}
    for kind in kinds:
        kw = dict(fit_kwargs)
        if kind == "passive" and requested == "auto":
            kw["reject_above"] = EARLY_REJECT_FACTOR
        try:
            ref = fits[kind](*fit_args, start=start, **kw)
        except ModelMismatch as mm:
            choice.tried.append({"model": kind, "method": "output-error",
                                 "residual_mm": mm.residual_mm, "noise_mm": mm.noise_mm,
                                 "floor_mm": mm.floor_mm, "reached_noise": False,
                                 "elapsed_s": mm.elapsed_s,
                                 "stopped_after_s": mm.horizon_s})
            continue
        except (FloatingPointError, np.linalg.LinAlgError) as exc:
            # the simulated motion left the model (diverged, singular): that model failed
            choice.tried.append({"model": kind, "method": "output-error",
                                 "residual_mm": float("nan"), "noise_mm": float("nan"),
                                 "floor_mm": float("nan"), "reached_noise": False,
                                 "elapsed_s": float("nan"),
                                 "failed": str(exc) or type(exc).__name__})
            continue
        choice.tried.append(_tried(kind, ref))
        if ref.reached_noise():
            if not choice.tried[-1]["start_agreement"]["agrees"]:
                break                  # a disturbance no model here has: the start stands
            choice.used = kind
            choice.reason = _reason(choice)
            return ref, choice
    choice.reason = _reason(choice)
    return None, choice


def _tried_sentence(t: dict) -> str:
    """One model's outcome, for people."""
    if "failed" in t:
        return f"the {t['model']} model failed ({t['failed']})"
    within = (f" within its first {t['stopped_after_s']:.1f} s" if "stopped_after_s" in t
              else "")
    if t["residual_mm"] >= 0.5 * DIVERGED_MM:
        return (f"the {t['model']} model's simulation diverged{within} (it does not describe "
                "this capture)")
    verdict = (f" (within {REACHED_NOISE_FACTOR:g}x the noise: it describes this capture)"
               if t["reached_noise"] else
               f" (more than {REACHED_NOISE_FACTOR:g}x: it does not describe this capture)")
    agreement = t.get("start_agreement") or {"agrees": True}
    if t["reached_noise"] and not agreement["agrees"]:
        apart = np.sqrt(agreement["chi2"] / agreement["dof"])
        verdict = (f" (within {REACHED_NOISE_FACTOR:g}x the noise), but its Phi_B is "
                   f"{apart:.1f}x the two fits' standard errors "
                   "from the equation-error estimate on average "
                   f"(chi-square {agreement['chi2']:.0f} on {agreement['dof']}): its residual "
                   "holds a disturbance it takes for marker noise, a force on the platform "
                   "its model lacks (a heartbeat's recoil, a tremor)")
    return (f"the {t['model']} model left {t['residual_mm']:.3f} mm RMS marker residuals "
            f"against {floor_words(t.get('floor_mm', t['noise_mm']), t['noise_mm'])}{within}"
            f"{verdict}")


def _reason(choice: RelativeModelChoice) -> str:
    parts = [_tried_sentence(t) for t in choice.tried]
    head = {"passive": "the links swing freely (passive model used)",
            "active": "the links are moved by muscles or motors (active model used: their "
                      "measured motion prescribed, only the platform simulated)",
            "equation-error": "no output-error model fits this capture, so the "
                              "equation-error estimate is reported (its standard errors hold "
                              "the residual's correlation over frames)"}[choice.used]
    return head + ": " + "; ".join(parts)


__all__ = ["RelativeModelChoice", "refine_relative_motion", "EARLY_REJECT_FACTOR"]
