"""A living body's Φ_B: the movement capture breathing, or its breath held (or another
scenario with a swing: ``--only wobbling``).

Simulates scenarios of scenarios/living/ (default: ``breathing14``, whose subject breathes
in every capture, and ``breathhold_movement``, who holds the breath at the end of a quiet
exhale during the relative-motion capture only) for a few seeds, completes the rig file with
the TRUE rig and runs the default ``rigtool run`` on the whole session with the trunk's wall
markers named as its ``breathing_markers``. Prints per run which relative-motion fit was
reported (an output-error refinement, or the equation-error start when none followed the
capture), Φ_B's errors (the first moments' in g m and their norm over the mass in mm, each
link's J's in % of its norm, and paper 002's Table 5 measures E_MS/M0 and E_J/Im: the
largest first-moment entry's error over the mass and the largest J entry's over the largest
principal moment of the whole object over its postures, the measures the acceptance figures
of 0.5 mm and 0.3 % are stated in) and its entries within 2 standard errors, against the
body the report describes (the breathing mass at the postures' mean breath:
:func:`living_breathing.phi_b_truth`).

    PYTHONPATH=. python3 benchmarks/living_movement.py [--only breathhold_movement]
        [--seeds 3] [--keep DIR] [--reuse]
"""

from __future__ import annotations

import numpy as np

from living import _span                                       # noqa: E402 (beside this)
from living_breathing import (phi_b_truth, posture_truth, run,  # noqa: E402
                              seeded_session, seeded_study, walls_named)

SCENARIOS = ("breathing14", "breathhold_movement")


def _named(session):
    """The full manifest with the trunk's wall markers named as its breathing markers (the
    manifest as simulated when the scenario has none, e.g. ``wobbling``)."""
    if "CH1" not in session.read_text():
        return session
    out = session.with_name("session-breathing.toml")
    out.write_text(walls_named(session.read_text(), session))
    return out


def main() -> None:
    args, names, base = seeded_study(__doc__.splitlines()[0], SCENARIOS, 3,
                                     "rigtool-living-movement-")
    rows = []
    for name in names:
        for s in range(args.seeds):
            session, truth = seeded_session(base, name, s, args.reuse)
            report, sec = run(_named(session), "movement")
            rel = report["relative_motion"]
            used = rel.get("model", {}).get("used", "equation-error")
            phi = rel["phi_b"]
            err = np.subtract(phi["values"], phi_b_truth(report, truth))
            z = err / np.asarray(phi["std"])
            per = err.reshape(-1, 9)
            true_j = phi_b_truth(report, truth).reshape(-1, 9)[:, 3:]
            ms = 1e3 * np.linalg.norm(per[:, :3], axis=1)
            j = 100 * np.linalg.norm(per[:, 3:], axis=1) / np.linalg.norm(true_j, axis=1)
            e_ms = 1e3 * np.linalg.norm(per[:, :3]) / report["total_mass"]
            i_max = max(np.linalg.eigvalsh(np.asarray(i_true))[-1]
                        for _, i_true in posture_truth(report, truth).values())
            e_ms_paper = 1e3 * np.abs(per[:, :3]).max() / report["total_mass"]
            e_j_im = 100 * np.abs(per[:, 3:]).max() / i_max
            row = (f"| {name} | {s} | {used} | {_span(ms, '{:.1f}')} | {e_ms:.3f} | "
                   f"{_span(j, '{:.3f}')} | {e_ms_paper:.3f}, {e_j_im:.3f} | "
                   f"{int(np.sum(np.abs(z) <= 2))}/{z.size} | "
                   f"{sec:.0f} |")
            rows.append(row)
            print(row, flush=True)
    print("\n| scenario | seed | Φ_B from | MS err g m | ‖MS err‖/M0 mm | J err % | "
          "E_MS/M0 mm, E_J/Im % | within 2 SE | run s |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
