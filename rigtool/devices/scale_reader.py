"""Waiting for a stable weight on an open serial port (:func:`read_weight`).

Conventions
-----------
* :func:`read_weight` works on any pyserial-like object (``write``, ``read_until`` or
  ``readline``, a settable ``timeout``), so it runs unchanged on a real port, pyserial's
  ``loop://`` URL or a pseudo-terminal; it never imports pyserial.
* Lines are parsed by :mod:`rigtool.devices.scale_protocols`. The mass is returned in kg
  with the value and unit as the scale printed them and every raw line received
  (:class:`WeighResult`), so a reading can be audited later.
* Every failure a user or a scale can cause is a :class:`~rigtool.errors.DeviceError`
  naming the port, the raw line and what was expected.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from rigtool.devices.scale_protocols import (MT_SICS_ERRORS, NotAMassUnit, ScaleReply,
                                             parse_any_line, parse_continuous_line,
                                             parse_mt_sics_line)
from rigtool.errors import DeviceError

__all__ = ["PROTOCOLS", "SerialLike", "WeighResult", "read_weight"]

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
