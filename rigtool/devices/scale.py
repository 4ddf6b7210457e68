"""Total mass from a laboratory scale on a serial line, and the ``weigh.json`` it leaves.

Conventions
-----------
* Masses are returned in kg (SI). The value and unit *as the scale printed them* are kept
  beside it, with every raw line received, so a reading can be audited later.
* The line protocols (MT-SICS, continuous print) are parsed by the pure functions of
  :mod:`rigtool.devices.scale_protocols`, re-exported here. :func:`read_weight` works on
  any pyserial-like object (``write``, ``read_until`` or ``readline``, a settable
  ``timeout``), so it runs unchanged on a real port, pyserial's ``loop://`` URL or a
  pseudo-terminal. pyserial itself is imported only by :func:`open_port`.
* Every failure a user or a scale can cause is a :class:`~rigtool.errors.DeviceError`
  (the port, the raw line, what was expected) or, for files, an
  :class:`~rigtool.errors.InputError` / :class:`~rigtool.errors.ConfigError`.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from os import PathLike
from pathlib import Path
from typing import Any, Protocol

from rigtool.devices.scale_protocols import (
    KG_PER_UNIT, MASS_UNITS_TEXT, MT_SICS_ERRORS, NotAMassUnit, ScaleReply, parse_any_line,
    parse_continuous_line, parse_mt_sics_line)
from rigtool.errors import ConfigError, DeviceError, InputError, RigtoolError

__all__ = ["KG_PER_UNIT", "PROTOCOLS", "ScaleReply", "SerialLike", "WeighResult",
           "open_port", "parse_any_line", "parse_continuous_line", "parse_mt_sics_line",
           "read_weigh_json", "read_weight", "resolve_total_mass", "total_mass_std", "weigh",
           "write_weigh_json"]

PROTOCOLS: tuple[str, ...] = ("auto", "mt-sics", "continuous")
#: Longest run of bytes accepted without a line end before the input is called garbage.
_MAX_LINE_BYTES = 256
#: How long to wait for the answer to one ``SI`` before asking again (s).
_REPLY_WAIT_S = 1.0
#: At most this many raw lines are kept in the record (a 10 Hz stream for 30 s is 300).
_MAX_RAW_LINES = 1000


class SerialLike(Protocol):
    """What :func:`read_weight` needs of a port (``serial.Serial`` has all of it)."""

    timeout: float | None

    def write(self, data: bytes, /) -> int | None: ...

    def readline(self) -> bytes: ...


# --------------------------------------------------------------------------------------
# Reading a port


class _Lines:
    """Lines from a pyserial-like port, split at CR or LF, with a deadline per call.

    Hand-written because pyserial's ``readline`` only splits at LF and returns partial
    lines on timeout; scales end lines with CR, LF or CR LF.
    """

    def __init__(self, port: SerialLike, where: str) -> None:
        self.port = port
        self.where = where
        self.buffer = b""
        self.raw: list[str] = []

    def next(self, deadline: float) -> str | None:
        """The next non-empty line, or None when ``deadline`` (monotonic s) passes first."""
        while True:
            parts = re.split(rb"[\r\n]", self.buffer, maxsplit=1)
            if len(parts) == 2:
                line, self.buffer = parts
                if not line.strip():
                    continue
                text = line.decode("ascii", errors="replace")
                if len(self.raw) < _MAX_RAW_LINES:
                    self.raw.append(text)
                return text
            if len(self.buffer) > _MAX_LINE_BYTES:
                raise DeviceError(
                    f"{self.where}: received {len(self.buffer)} bytes without a line end; "
                    "expected text lines ended by CR LF (check the baud rate and framing, "
                    "e.g. --baud 9600 --framing 8N1)",
                    found=self.buffer[:40].decode("ascii", errors="replace"))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            wait = min(remaining, 0.25)
            if self.port.timeout != wait:  # pyserial reconfigures the port on each change
                self.port.timeout = wait
            reader = getattr(self.port, "read_until", None)
            chunk = reader(b"\n") if reader is not None else self.port.readline()
            self.buffer += chunk

    def pending(self) -> str:
        return self.buffer.decode("ascii", errors="replace")


@dataclass
class WeighResult:
    """A stable reading and how it was obtained.

    Attributes
    ----------
    reply : ScaleReply
        The stable line the mass was read from.
    protocol : str
        ``"mt-sics"`` or ``"continuous"`` (as detected, when ``auto`` was asked for).
    port : str
        The port name or URL.
    raw_lines : list of str
        Every line received, in order (the stable one last).
    time_utc : str
        When the stable line arrived, ISO 8601 in UTC.
    """

    reply: ScaleReply
    protocol: str
    port: str
    raw_lines: list[str] = field(default_factory=list)
    time_utc: str = ""

    @property
    def mass_kg(self) -> float:
        """The object's mass in kg."""
        return float(self.reply.mass_kg)

    def to_record(self) -> dict[str, Any]:
        """The ``weigh.json`` content (SPEC: mass_kg, value, unit, stable, time, ...)."""
        from rigtool import __version__

        return {
            "mass_kg": self.mass_kg,
            "value": self.reply.value,
            "unit": self.reply.unit,
            "stable": True,
            "time": self.time_utc,
            "port": self.port,
            "protocol": self.protocol,
            "raw_lines": list(self.raw_lines),
            "rigtool_version": __version__,
        }


def _fatal(reply: ScaleReply, where: str) -> None:
    """Raise for a reply that waiting cannot cure."""
    if reply.status == "overload":
        raise DeviceError(f"{where}: the scale reports overload ({reply.code}); expected a "
                          "weight within its range (is the load above its capacity?)",
                          found=reply.raw)
    if reply.status == "underload":
        raise DeviceError(f"{where}: the scale reports underload ({reply.code}); expected a "
                          "weight within its range (is the weighing pan in place? zero the "
                          "empty scale)", found=reply.raw)
    if reply.status == "count":
        raise DeviceError(f"{where}: the scale is counting pieces ({reply.code}); expected "
                          "weight data (switch it to weighing mode)", found=reply.raw)
    if reply.status == "error" and reply.code != "ET":
        raise DeviceError(f"{where}: {MT_SICS_ERRORS[reply.code]}", found=reply.raw)


_SILENCE_HINT = {
    "mt-sics": "replies to 'SI' (is the scale on, the cable in, the baud rate right? a scale "
               "that only streams needs --protocol continuous)",
    "continuous": "a stream of weight lines (is the scale on, the cable in, the baud rate "
                  "right? is its output mode 'stream'? an MT-SICS scale needs --protocol "
                  "mt-sics)",
    "auto": "a stream of weight lines or replies to 'SI' (is the scale on, the cable in, the "
            "baud rate and framing right?)",
}


def read_weight(port: SerialLike, /, *, protocol: str = "auto", timeout_s: float = 30.0,
                port_name: str = "scale", silence_s: float = 5.0,
                poll_interval_s: float = 0.2, listen_s: float = 1.0,
                on_reply: Callable[[ScaleReply], None] | None = None) -> WeighResult:
    """Wait for a stable, positive weight on an open port.

    Parameters
    ----------
    port : pyserial-like
        An open port: ``serial.Serial``, ``serial.serial_for_url("loop://")`` or any
        object with ``write``, ``read_until`` (or ``readline``) and a settable ``timeout``.
    protocol : {"auto", "mt-sics", "continuous"}
        ``mt-sics`` polls with ``SI`` until a stable reply; ``continuous`` only listens;
        ``auto`` listens for ``listen_s`` and, if the scale is silent, polls with ``SI``
        and accepts a reply in either format.
    timeout_s : float
        Give up when no stable reading arrived within this time (s).
    port_name : str
        Named in error messages and recorded.
    silence_s : float
        Give up when the scale sends nothing for this long (s).
    poll_interval_s : float
        Pause between ``SI`` requests while the reading is not stable (s).
    listen_s : float
        How long ``auto`` listens for a stream before it starts polling (s).
    on_reply : callable, optional
        Called with each parsed reply (progress display).

    Returns
    -------
    WeighResult

    Raises
    ------
    DeviceError
        Silence, garbage (a line in no known format, except a first line that may have been
        cut), overload, underload, a count or non-mass unit, an MT-SICS error reply, a
        stable reading that is not positive, or no stable reading within ``timeout_s``.
    """
    if protocol not in PROTOCOLS:
        raise DeviceError(f"unknown scale protocol; expected one of {', '.join(PROTOCOLS)}",
                          found=protocol)
    where = f"scale on {port_name}"
    lines = _Lines(port, where)
    start = time.monotonic()
    deadline = start + timeout_s
    last_data = start
    last: ScaleReply | None = None
    seen_garbage = False
    mode = protocol
    polling = protocol == "mt-sics"
    if polling and hasattr(port, "reset_input_buffer"):
        port.reset_input_buffer()  # drop stale replies from an earlier session

    while True:
        now = time.monotonic()
        if now >= deadline:
            break
        if mode == "auto" and not polling and now - start >= min(listen_s, timeout_s):
            polling = True  # the scale does not stream: ask it
        if polling:  # ask again after a lost reply, until silence_s without any reply
            port.write(b"SI\r\n")
            wait_until = min(deadline, now + _REPLY_WAIT_S, last_data + silence_s)
        else:
            wait_until = min(deadline, last_data + silence_s)
            if mode == "auto":
                wait_until = min(wait_until, start + listen_s)
        line = lines.next(wait_until)
        if line is None:
            if time.monotonic() - last_data >= silence_s - 1e-6:
                pending = lines.pending()
                tail = f"; received only {pending!r} without a line end" if pending else ""
                raise DeviceError(f"{where}: no data for {silence_s:g} s{tail}; expected "
                                  f"{_SILENCE_HINT[protocol]}")
            continue
        last_data = time.monotonic()
        try:
            if mode == "mt-sics":
                reply = parse_mt_sics_line(line)
            elif mode == "continuous":
                reply = parse_continuous_line(line)
            else:
                mode, reply = parse_any_line(line)
        except DeviceError as exc:
            if isinstance(exc, NotAMassUnit) or seen_garbage or len(lines.raw) > 1:
                raise DeviceError(f"{where}: {exc.message}", found=exc.found) from None
            seen_garbage = True  # the first line may have been cut: we began mid-line
            continue
        if on_reply is not None:
            on_reply(reply)
        _fatal(reply, where)
        last = reply
        if reply.status == "stable":
            if reply.value <= 0:
                raise DeviceError(
                    f"{where}: the stable reading is {reply.value:g} {reply.unit}; expected "
                    "the object's positive mass (zero the empty scale, then load the object)",
                    found=reply.raw)
            stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
            return WeighResult(reply, mode, port_name, list(lines.raw),
                               stamp.replace("+00:00", "Z"))
        if polling:
            time.sleep(min(poll_interval_s, max(0.0, deadline - time.monotonic())))

    if not lines.raw:
        raise DeviceError(f"{where}: no data within {timeout_s:g} s; expected "
                          f"{_SILENCE_HINT[protocol]}")
    shown = f"; last reply {last.raw!r} ({last.status})" if last is not None else ""
    raise DeviceError(f"{where}: no stable reading within {timeout_s:g} s{shown}; expected "
                      "the scale to settle (keep the object still, shield it from draughts, "
                      "or allow longer with --timeout)")


# --------------------------------------------------------------------------------------
# Opening a port, and the weigh.json file


def _framing(text: str) -> tuple[int, str, float]:
    m = re.fullmatch(r"([5-8])([NEOMS])(1|1\.5|2)", text.upper())
    if m is None:
        raise DeviceError("expected serial framing as data bits, parity, stop bits, "
                          "e.g. 8N1 or 7E1", found=text)
    return int(m[1]), m[2], float(m[3]) if m[3] == "1.5" else int(m[3])


def open_port(port_name: str, /, *, baud: int = 9600, framing: str = "8N1"):
    """Open a serial port (a device path, ``COM3``, or a pyserial URL such as ``loop://``).

    Raises
    ------
    DeviceError
        The port cannot be opened or the settings are invalid.
    """
    import serial  # pyserial; imported here so the rest of rigtool does not need it

    bytesize, parity, stopbits = _framing(framing)
    try:
        return serial.serial_for_url(port_name, baudrate=baud, bytesize=bytesize,
                                     parity=parity, stopbits=stopbits, timeout=0.25)
    except (serial.SerialException, OSError, ValueError) as exc:
        raise DeviceError(f"cannot open serial port {port_name}: {exc}; expected a connected "
                          "scale (list ports with: python3 -m serial.tools.list_ports)",
                          found=port_name) from None


def weigh(port_name: str, /, *, protocol: str = "auto", baud: int = 9600,
          framing: str = "8N1", timeout_s: float = 30.0,
          on_reply: Callable[[ScaleReply], None] | None = None) -> WeighResult:
    """Open ``port_name``, wait for a stable weight (:func:`read_weight`), close the port."""
    port = open_port(port_name, baud=baud, framing=framing)
    try:
        return read_weight(port, protocol=protocol, timeout_s=timeout_s, port_name=port_name,
                           silence_s=min(5.0, timeout_s), on_reply=on_reply)
    finally:
        port.close()


def write_weigh_json(result: WeighResult, path: str | PathLike, /, *,
                     force: bool = False) -> Path:
    """Write ``result.to_record()`` as JSON; refuse to overwrite unless ``force``."""
    path = Path(path)
    text = json.dumps(result.to_record(), indent=2) + "\n"
    try:
        with open(path, "w" if force else "x", encoding="utf-8") as fh:
            fh.write(text)
    except FileExistsError:
        raise InputError("the file exists; expected a new output file (use --force to "
                         "overwrite it)", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot write the file: {exc.strerror}", path=path) from None
    return path


def read_weigh_json(path: str | PathLike, /) -> tuple[float, dict]:
    """Read a ``weigh.json`` written by ``rigtool weigh`` (or by hand).

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    mass_kg : float
        The object's mass (kg), positive and finite.
    record : dict
        The whole file.

    Raises
    ------
    ConfigError
        Missing file, not JSON, no positive ``mass_kg``, ``stable`` not true, or
        ``value``/``unit`` that disagree with ``mass_kg``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found; expected a weigh.json written by 'rigtool weigh'",
                          path=path) from None
    except IsADirectoryError:
        raise ConfigError("expected a weigh.json file, found a directory", path=path) from None
    except UnicodeDecodeError:
        raise ConfigError("not a weigh.json: the file is not UTF-8 text", path=path) from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    if not isinstance(record, dict):
        raise ConfigError("expected a JSON object with mass_kg", path=path, found=record)
    if "mass_kg" not in record:
        raise ConfigError("missing required field 'mass_kg' (kg)", path=path, field="mass_kg")
    mass = record["mass_kg"]
    if isinstance(mass, bool) or not isinstance(mass, (int, float)) or not math.isfinite(mass) \
            or mass <= 0:
        raise ConfigError("expected a positive number of kg", path=path, field="mass_kg",
                          found=mass)
    if record.get("stable", True) is not True:
        raise ConfigError("expected a stable reading (stable = true); weigh again",
                          path=path, field="stable", found=record.get("stable"))
    value, unit = record.get("value"), record.get("unit")
    if value is not None or unit is not None:
        if not isinstance(unit, str) or unit.lower() not in KG_PER_UNIT:
            raise ConfigError(f"expected a mass unit ({MASS_UNITS_TEXT})", path=path,
                              field="unit", found=unit)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError("expected a number", path=path, field="value", found=value)
        converted = value * KG_PER_UNIT[unit.lower()]
        if not math.isclose(converted, mass, rel_tol=1e-9, abs_tol=1e-12):
            raise ConfigError(f"value {value:g} {unit} is {converted:g} kg, which disagrees "
                              "with mass_kg; expected the two to match (was the file edited?)",
                              path=path, field="mass_kg", found=mass)
    return float(mass), record


def resolve_total_mass(session, /) -> float:
    """The object's total mass (kg) for a session: ``total_mass``, or its ``weigh.json``.

    Parameters
    ----------
    session : rigtool.config.Session
        Uses ``total_mass_kg`` when set, else reads ``total_mass_from`` (already resolved
        relative to the manifest by :func:`rigtool.config.load_session`).
    """
    if session.total_mass_kg is not None:
        return float(session.total_mass_kg)
    try:
        return read_weigh_json(session.total_mass_from)[0]
    except RigtoolError as exc:
        raise ConfigError(f"{exc.message} (named by session.total_mass_from in "
                          f"{session.path})", path=exc.path, line=exc.line, field=exc.field,
                          found=exc.found) from None


#: The scale's relative standard uncertainty assumed when neither the manifest
#: (``session.total_mass_std``) nor the weigh.json (``mass_std_kg``) gives one: 0.1 % of the
#: reading, the accuracy of a common laboratory floor scale (OIML class III over most of its
#: range). It enters the report's mass check only.
DEFAULT_SCALE_REL_STD = 1e-3


def total_mass_std(session, total_mass_kg: float, /) -> tuple[float, str]:
    """The weighed mass's standard uncertainty (kg) and where it came from.

    ``session.total_mass_std`` (kg) when the manifest gives it, else the weigh.json's
    ``mass_std_kg`` when the mass comes from one and it holds a positive number, else
    :data:`DEFAULT_SCALE_REL_STD` times the mass.
    """
    if getattr(session, "total_mass_std_kg", None) is not None:
        return float(session.total_mass_std_kg), "session.total_mass_std"
    if getattr(session, "total_mass_from", None) is not None:
        _, record = read_weigh_json(session.total_mass_from)
        std = record.get("mass_std_kg")
        if isinstance(std, (int, float)) and not isinstance(std, bool) and math.isfinite(std) \
                and std > 0:
            return float(std), f"mass_std_kg of {Path(session.total_mass_from).name}"
    return (DEFAULT_SCALE_REL_STD * float(total_mass_kg),
            f"assumed {100 * DEFAULT_SCALE_REL_STD:g} % of the reading")
