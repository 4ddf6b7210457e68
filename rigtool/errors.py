"""One error model for everything a user can get wrong.

Every error a user can cause (a bad file, a missing field, captures that cannot determine
a parameter) is a :class:`RigtoolError`. The command line turns it into exit status 2 and
one message; any other exception is an internal error (exit status 1). A command that wrote
everything it measured but could not identify everything the user asked for (postures that
leave Phi_s rank-deficient) exits with :data:`EXIT_PARTIAL`; a calibration whose held-out
reference body its model misjudges exits with :data:`EXIT_MODEL_FAILED`.

A message names *where* (file, and line or field when known), *what was expected* and,
when known, *what was found* and *how to fix it*::

    raise InputError("expected a number", path="posture1.csv", line=12, found="abc")
    # -> posture1.csv, line 12: expected a number (found 'abc')
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

#: exit status: success, everything identified and written
EXIT_OK = 0
#: exit status: an internal error (a bug; the message asks for a report)
EXIT_INTERNAL = 1
#: exit status: bad input (a RigtoolError), nothing fitted or written
EXIT_BAD_INPUT = 2
#: exit status: a partial result; everything measured was written, and the report says
#: what the captures could not identify and what to record next
EXIT_PARTIAL = 3
#: exit status: calibrated, but the rig's model does not hold: ``rigtool calibrate`` wrote the
#: calibrated rig file, and a held-out reference body is off by more than its standard
#: errors allow (rigtool.identify.calibration.verdict); the message names the likely cause
EXIT_MODEL_FAILED = 4


class RigtoolError(Exception):
    """Base class of every error a user can cause.

    Parameters
    ----------
    message : str
        What was expected (and, when known, the fix).
    path : str or PathLike, optional
        The file at fault.
    line : int, optional
        1-based line number in that file.
    field : str, optional
        Field, column, key or parameter name at fault.
    found : object, optional
        The offending value, shown with ``repr`` (cut to 60 characters).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | PathLike | None = None,
        line: int | None = None,
        field: str | None = None,
        found: object = None,
    ) -> None:
        self.message = message
        self.path = Path(path) if path is not None else None
        self.line = line
        self.field = field
        self.found = found
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        text = (", ".join(where) + ": " if where else "") + self.message
        if self.found is not None:
            shown = repr(self.found)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            text += f" (found {shown})"
        return text


class InputError(RigtoolError):
    """A file or argument the user gave is malformed or inconsistent."""


class FormatError(InputError):
    """A capture file is not in any supported format, or is corrupt."""


class ConfigError(InputError):
    """A rig file, session manifest or scenario is invalid."""


class IdentifiabilityError(RigtoolError):
    """The data cannot determine what was asked (rank deficiency, missing excitation)."""


class DeviceError(RigtoolError):
    """A device (serial scale, camera) did not answer as expected."""
