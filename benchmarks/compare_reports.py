"""Every number two report.json files share, compared exactly (timings and dates left out).

    python3 benchmarks/compare_reports.py OLD/report.json NEW/report.json

Old and new code run on the same captures (e.g. the demo calibrated and run by each checkout,
``PYTHONPATH=CHECKOUT python3 -m rigtool.cli ...``): the count of numbers compared, how many
differ, and the first differences with their paths.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter

#: keys whose numbers are timings, dates or counts that vary run to run (whole keys: a
#: substring would also skip ``com_std``, ``phi_s`` or ``coverage``)
SKIPPED = frozenset({"time_s", "elapsed_s", "date", "age_days", "iterations",
                     "rigtool_version"})


def differences(a, b, path: str = "") -> tuple[int, list[tuple[str, float, float]]]:
    """``(numbers compared, [(path, a, b), ...] that differ)`` over the shared structure."""
    if path.rsplit(".", 1)[-1].split("[")[0] in SKIPPED:
        return 0, []
    if isinstance(a, dict) and isinstance(b, dict):
        parts = [differences(a[k], b[k], f"{path}.{k}") for k in a if k in b]
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        parts = [differences(u, v, f"{path}[{i}]") for i, (u, v) in enumerate(zip(a, b))]
    elif (isinstance(a, (int, float)) and isinstance(b, (int, float))
          and not isinstance(a, bool) and not isinstance(b, bool)):
        same = a == b or (math.isnan(a) and math.isnan(b))
        return 1, [] if same else [(path, a, b)]
    else:
        return 0, []
    return sum(n for n, _ in parts), [d for _, ds in parts for d in ds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--show", type=int, default=20, help="differences to print")
    args = parser.parse_args()
    with open(args.old) as fa, open(args.new) as fb:
        n, diffs = differences(json.load(fa), json.load(fb))
    print(f"{n} numbers compared, {len(diffs)} differ; by top-level block: "
          + str(dict(Counter(p.split(".")[1].split("[")[0] for p, _, _ in diffs))))
    for path, x, y in diffs[:args.show]:
        print(f"  {path}: {x!r} -> {y!r}")


if __name__ == "__main__":
    main()
