"""A laboratory scale on a serial line: open the port, wait for a stable weight, close it.

Conventions
-----------
* Masses are returned in kg (SI). The value and unit *as the scale printed them* are kept
  beside it, with every raw line received, so a reading can be audited later.
* The line protocols (MT-SICS, continuous print) are parsed by the pure functions of
  :mod:`rigtool.devices.scale_protocols`, re-exported here. :func:`read_weight`
  (:mod:`rigtool.devices.scale_reader`, re-exported here) works on any pyserial-like object
  (``write``, ``read_until`` or ``readline``, a settable ``timeout``), so it runs unchanged
  on a real port, pyserial's ``loop://`` URL or a pseudo-terminal. pyserial itself is
  imported only by :func:`open_port`.
* The ``weigh.json`` file and the session's total mass taken from it are in
  :mod:`rigtool.devices.weigh_json`, re-exported here.
* Every failure a user or a scale can cause is a :class:`~rigtool.errors.DeviceError`
  (the port, the raw line, what was expected) or, for files, an
  :class:`~rigtool.errors.InputError` / :class:`~rigtool.errors.ConfigError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rigtool.devices.scale_protocols import (KG_PER_UNIT, ScaleReply, parse_any_line,
                                             parse_continuous_line, parse_mt_sics_line)
from rigtool.devices.scale_reader import PROTOCOLS, SerialLike, WeighResult, read_weight
from rigtool.devices.weigh_json import (DEFAULT_SCALE_REL_STD, read_weigh_json,
                                        resolve_total_mass, total_mass_std, write_weigh_json)
from rigtool.errors import DeviceError

__all__ = ["KG_PER_UNIT", "PROTOCOLS", "ScaleReply", "SerialLike", "WeighResult",
           "open_port", "parse_any_line", "parse_continuous_line", "parse_mt_sics_line",
           "read_weigh_json", "read_weight", "resolve_total_mass", "total_mass_std", "weigh",
           "write_weigh_json", "DEFAULT_SCALE_REL_STD"]


def _framing(text: str) -> tuple[int, str, float]:
    m = re.fullmatch(r"([5-8])([NEOMS])(1|1\.5|2)", text.upper())
    if m is None:
        raise DeviceError("expected serial framing as data bits, parity, stop bits, "
                          "e.g. 8N1 or 7E1", found=text)
    return int(m[1]), m[2], float(m[3]) if m[3] == "1.5" else int(m[3])


def open_port(port_name: str, /, *, baud: int = 9600, framing: str = "8N1"):
    """Open a serial port (a device path, ``COM3``, or a pyserial URL such as ``loop://``).

    Parameters
    ----------
    port_name : str
        The device path, port name or pyserial URL.
    baud : int
        Baud rate.
    framing : str
        Data bits, parity and stop bits, e.g. ``"8N1"`` or ``"7E1"``.

    Returns
    -------
    serial.SerialBase
        The open port, with a 0.25 s read timeout.

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
    """Open ``port_name``, wait for a stable weight (:func:`read_weight`), close the port.

    Parameters
    ----------
    port_name : str
        As for :func:`open_port`.
    protocol : {"auto", "mt-sics", "continuous"}
        As for :func:`read_weight`.
    baud : int
        Baud rate.
    framing : str
        Data bits, parity and stop bits, e.g. ``"8N1"``.
    timeout_s : float
        Give up when no stable reading arrived within this time (s); the scale may also
        be silent for at most ``min(5, timeout_s)`` s.
    on_reply : callable, optional
        Called with each parsed reply (progress display).

    Returns
    -------
    WeighResult

    Raises
    ------
    DeviceError
        The port cannot be opened, or any failure of :func:`read_weight`.
    """
    port = open_port(port_name, baud=baud, framing=framing)
    try:
        return read_weight(port, protocol=protocol, timeout_s=timeout_s, port_name=port_name,
                           silence_s=min(5.0, timeout_s), on_reply=on_reply)
    finally:
        port.close()
