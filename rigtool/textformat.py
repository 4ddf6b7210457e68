"""Numbers for people: a value with its standard error, printed to the digits the error
shows (``1.019995 ± 0.000005``, never ``1.02000 ± 0.00000``), and ``held`` for a value the
fit did not move."""

from __future__ import annotations

import math


def pm(value: float, std: float | None, decimals: int) -> str:
    """``value ± std`` with at least ``decimals`` decimals and enough to show ``std``'s first
    significant digit; ``value (held)`` when ``std`` is zero; ``value`` when it is None or not
    finite.

    Parameters
    ----------
    value : float
        The estimate.
    std : float or None
        Its standard error, in the same unit.
    decimals : int
        The fewest decimals to print.

    Returns
    -------
    str
        E.g. ``pm(1.0300013, 2.1e-6, 5) == "1.030001 ± 0.000002"``.
    """
    if std is None or not math.isfinite(std):
        return f"{value:.{decimals}f}"
    if std == 0.0:
        return f"{value:.{decimals}f} (held)"
    shown = max(decimals, min(12, -math.floor(math.log10(abs(std)))))
    return f"{value:.{shown}f} ± {std:.{shown}f}"


__all__ = ["pm"]
