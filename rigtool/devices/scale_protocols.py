"""Scale line protocols as pure functions: one line of text in, one :class:`ScaleReply` out.

Conventions
-----------
* A line is ASCII text without its terminator (CR, LF or CR LF are stripped if present).
* Two protocols are understood:

  - **MT-SICS** (Mettler Toledo Standard Interface Command Set, level 0). The host sends
    ``SI`` CR LF ("send weight immediately"); the scale answers ``S S  <value> <unit>``
    when stable, ``S D  <value> <unit>`` when dynamic (not yet stable). Other answers:
    ``S I`` (command not executable now, e.g. busy taring), ``S +`` (overload), ``S -``
    (underload), ``ES`` (syntax error: command not understood), ``ET`` (transmission
    error), ``EL`` (logical error).
  - **Continuous print** (A&D standard format, also used by many indicators): the scale
    streams lines ``HH,[CC,]<sign><digits> <unit>`` with header ``ST`` (stable weight),
    ``US`` (unstable), ``QT`` (stable count, not a mass) or ``OL`` (out of range), an
    optional second header (``GS``/``NT`` gross/net, ``LO``/``OK``/``HI``/``--``
    comparison) and a unit of up to three characters (``  g``, `` kg``, `` lb``), e.g.
    ``ST,+0080.817  kg``. The CSV variant ``ST,+0080.817, kg`` is accepted too.

* Values keep the unit the scale printed; :attr:`ScaleReply.mass_kg` converts once, with
  1 lb = 0.45359237 kg and 1 oz = 1/16 lb exactly (international avoirdupois pound,
  1959), g and mg by their SI prefixes.
* A line in no known format raises :class:`~rigtool.errors.DeviceError` naming what was
  expected and the line (without the port, which the caller adds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rigtool.errors import DeviceError

#: kg per unit, for the mass units a scale may print (keys in lower case).
KG_PER_UNIT: dict[str, float] = {
    "kg": 1.0,
    "g": 1e-3,
    "mg": 1e-6,
    "lb": 0.45359237,
    "oz": 0.45359237 / 16.0,
}
#: The mass units, as messages name them.
MASS_UNITS_TEXT = "kg, g, mg, lb or oz"


@dataclass(frozen=True)
class ScaleReply:
    """One line from a scale, parsed.

    Attributes
    ----------
    raw : str
        The line as received, without its terminator.
    status : str
        ``"stable"``, ``"unstable"``, ``"busy"`` (MT-SICS ``S I``), ``"overload"``,
        ``"underload"``, ``"error"`` (MT-SICS ``ES``/``ET``/``EL``) or ``"count"``
        (A&D ``QT``: the scale is counting pieces, not weighing).
    value : float or None
        The number as printed (in ``unit``), for a weight line.
    unit : str or None
        The unit as printed (e.g. ``"kg"``, ``"lb"``), for a weight line.
    code : str
        The protocol's own status code (``"S S"``, ``"S +"``, ``"ES"``, ``"ST"``, ``"OL"``).
    """

    raw: str
    status: str
    value: float | None = None
    unit: str | None = None
    code: str = ""

    @property
    def mass_kg(self) -> float | None:
        """The reading in kg, or None when the line carries no weight."""
        if self.value is None or self.unit is None:
            return None
        return self.value * KG_PER_UNIT[self.unit.lower()]


def _number(text: str, raw: str, expected: str) -> float:
    try:
        return float(text.replace(" ", ""))
    except ValueError:
        raise DeviceError(f"expected {expected}", found=raw) from None


class NotAMassUnit(DeviceError):
    """A well-formed weight line whose unit is not a mass (pcs, %, N, ...)."""


def _mass_unit(unit: str, raw: str) -> str:
    if unit.lower() not in KG_PER_UNIT:
        raise NotAMassUnit(f"the scale reports in unit '{unit}'; expected a mass in "
                           f"{MASS_UNITS_TEXT} (switch the scale's display unit to one of them)",
                           found=raw)
    return unit


_MT_WEIGHT = re.compile(
    r"^(?P<id>S|SI|SU|SIU|SIR|SIRU)\s+(?P<status>[SD])\s+"
    r"(?P<value>[+-]?\s*(?:\d+\.?\d*|\.\d+))\s*(?P<unit>[A-Za-z%]+)\s*$")
_MT_STATE = re.compile(r"^(?P<id>S|SI|SU|SIU|SIR|SIRU)\s+(?P<status>[I+-])\s*$")
#: What each MT-SICS error reply means, and the usual fix.
MT_SICS_ERRORS = {
    "ES": "syntax error: the scale did not understand the command (is it an MT-SICS scale? "
          "try --protocol continuous)",
    "ET": "transmission error: the scale received a garbled command (check baud rate and "
          "framing, e.g. --baud 9600 --framing 8N1)",
    "EL": "logical error: the scale cannot execute the command now",
}
_MT_EXAMPLE = "an MT-SICS reply such as 'S S     80.817 kg', 'S D', 'S I', 'S +', 'S -' or 'ES'"


def parse_mt_sics_line(line: str, /) -> ScaleReply:
    """Parse one MT-SICS reply line (to ``S``, ``SI`` or their variants).

    Parameters
    ----------
    line : str
        One line without (or with) its CR LF terminator.

    Returns
    -------
    ScaleReply
        ``status`` is ``"stable"`` (``S S``), ``"unstable"`` (``S D``), ``"busy"``
        (``S I``), ``"overload"`` (``S +``), ``"underload"`` (``S -``) or ``"error"``
        (``ES``, ``ET``, ``EL``).

    Raises
    ------
    DeviceError
        The line is none of these, or the weight is in a unit that is not a mass.

    Examples
    --------
    >>> r = parse_mt_sics_line("S S     80.817 kg")
    >>> r.status, r.value, r.unit, r.mass_kg
    ('stable', 80.817, 'kg', 80.817)
    >>> parse_mt_sics_line("S +").status
    'overload'
    """
    raw = line.strip("\r\n")
    text = raw.strip()
    if text in MT_SICS_ERRORS:
        return ScaleReply(raw, "error", code=text)
    m = _MT_STATE.match(text)
    if m:
        status = {"I": "busy", "+": "overload", "-": "underload"}[m["status"]]
        return ScaleReply(raw, status, code=f"S {m['status']}")
    m = _MT_WEIGHT.match(text)
    if m is None:
        raise DeviceError(f"expected {_MT_EXAMPLE}", found=raw)
    value = _number(m["value"], raw, _MT_EXAMPLE)
    unit = _mass_unit(m["unit"], raw)
    status = "stable" if m["status"] == "S" else "unstable"
    return ScaleReply(raw, status, value, unit, code=f"S {m['status']}")


_CONT_LINE = re.compile(
    r"^(?P<header>ST|US|QT|OL),(?:(?P<second>GS|NT|LO|OK|HI|--),)?\s*"
    r"(?P<value>[+-]?\s*(?:\d+\.?\d*|\.\d+)(?:E[+-]?\d+)?)\s*,?\s*(?P<unit>[A-Za-z%]*)\s*$")
_CONT_EXAMPLE = ("a continuous-print line such as 'ST,+0080.817  kg' (header ST, US, QT or OL, "
                 "a signed number, a unit)")


def parse_continuous_line(line: str, /) -> ScaleReply:
    """Parse one line of a continuous-print stream (A&D standard format and its kin).

    Parameters
    ----------
    line : str
        One line without (or with) its CR LF terminator.

    Returns
    -------
    ScaleReply
        ``status`` is ``"stable"`` (``ST``), ``"unstable"`` (``US``), ``"count"``
        (``QT``) or ``"overload"`` (``OL``, whatever its number: ``+9999999E+19`` or
        ``+999999.9``). The number and unit of ``QT`` and ``OL`` lines are not kept.

    Raises
    ------
    DeviceError
        The line is not in this format, or a weight is in a unit that is not a mass.

    Examples
    --------
    >>> r = parse_continuous_line("ST,+0080.817  kg")
    >>> r.status, r.value, r.unit
    ('stable', 80.817, 'kg')
    >>> parse_continuous_line("US,-0000.120 lb").mass_kg  # doctest: +ELLIPSIS
    -0.0544310...
    """
    raw = line.strip("\r\n")
    m = _CONT_LINE.match(raw.strip())
    if m is None:
        raise DeviceError(f"expected {_CONT_EXAMPLE}", found=raw)
    header = m["header"]
    if header == "OL":
        return ScaleReply(raw, "overload", code="OL")
    if header == "QT":
        return ScaleReply(raw, "count", code="QT")
    if "E" in m["value"] or not m["unit"]:
        raise DeviceError(f"expected {_CONT_EXAMPLE}", found=raw)
    value = _number(m["value"], raw, _CONT_EXAMPLE)
    unit = _mass_unit(m["unit"], raw)
    return ScaleReply(raw, "stable" if header == "ST" else "unstable", value, unit, code=header)


def parse_any_line(line: str, /) -> tuple[str, ScaleReply]:
    """Parse a line in whichever protocol recognises it; returns ``(protocol, reply)``.

    A&D balances answer ``SI`` in their own format, so ``auto`` accepts either.
    """
    try:
        return "mt-sics", parse_mt_sics_line(line)
    except NotAMassUnit:
        raise
    except DeviceError:
        pass
    try:
        return "continuous", parse_continuous_line(line)
    except NotAMassUnit:  # a well-formed line in a unit that is not a mass
        raise
    except DeviceError:
        pass
    raise DeviceError(f"expected {_MT_EXAMPLE}, or {_CONT_EXAMPLE}", found=line.strip("\r\n"))
