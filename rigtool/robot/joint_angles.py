"""Joint-angle files (SPEC "A robot described by its URDF") and a locked posture's angles.

A joint-angle file is a CSV: a header row, an optional ``frame`` column, a time column
(``time_s`` or ``time``, s, on the capture's clock) and one column per moving URDF joint,
named as in the URDF, in rad (m for prismatic joints). Columns of held joints
(``fixed_joints``) may be present and are ignored; any other column is an error. Every
error names the file, and the line and column when it is about one cell.

A locked posture's configuration is the median of each joint over the posture's window;
a joint that moves more than its encoder noise during it is reported (the posture is then
not one rigid object).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rigtool.config.schema import closest_key
from rigtool.errors import InputError

TIME_COLUMNS = ("time_s", "time")
#: Smallest movement reported (rad or m): below an encoder's resolution on any arm.
MOVE_FLOOR = 1e-5


@dataclass(frozen=True)
class JointAngles:
    """A joint-angle file as read.

    Attributes
    ----------
    path : Path
    time_s : ndarray (T,)
    names : list of str
        Joint names, in the order of ``values``' columns.
    values : ndarray (T, k)
        rad or m.
    """

    path: Path
    time_s: np.ndarray
    names: list[str]
    values: np.ndarray

    def column(self, joint: str) -> np.ndarray:
        """One joint's values."""
        return self.values[:, self.names.index(joint)]


def read_joint_angles(path: str | Path, moving: list[str], held: list[str] = ()
                      ) -> JointAngles:
    """Read a joint-angle CSV with one column per joint of ``moving``.

    Parameters
    ----------
    path : str or Path
    moving : list of str
        The moving joints (every one needs a column).
    held : list of str
        Held joints whose columns are allowed (and ignored).

    Raises
    ------
    InputError
        Naming the file, line and column.
    """
    path = Path(path)
    try:
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
    except FileNotFoundError:
        raise InputError("the joint-angle file does not exist", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the joint-angle file: {exc}", path=path) from None
    while rows and not any(c.strip() for c in rows[0]):
        rows.pop(0)
    if not rows:
        raise InputError("the joint-angle file is empty; expected a header row "
                         "(time_s, then one column per moving joint)", path=path)
    header = [c.strip() for c in rows[0]]
    first_line = 1
    time_col = next((header.index(t) for t in TIME_COLUMNS if t in header), None)
    if time_col is None:
        raise InputError("no time column; expected 'time_s' (or 'time') in the header",
                         path=path, line=first_line, found=",".join(header)[:60])
    cols = {}
    for k, name in enumerate(header):
        if k == time_col or name == "frame":
            continue
        if name in cols:
            raise InputError(f"column '{name}' appears twice", path=path, line=first_line,
                             field=name)
        if name in moving:
            cols[name] = k
        elif name not in held:
            near = closest_key(name, moving)
            raise InputError("not a moving joint of the URDF"
                             + (f"; did you mean '{near}'?" if near else ""),
                             path=path, line=first_line, field=name)
    missing = [j for j in moving if j not in cols]
    if missing:
        raise InputError(f"no column for the moving joint '{missing[0]}' (expected one column "
                         f"per moving joint: {', '.join(moving)})", path=path,
                         line=first_line, field=missing[0])
    wanted = [time_col] + [cols[j] for j in moving]
    out = []
    for i, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) < len(header):
            raise InputError(f"expected {len(header)} cells, found {len(row)}", path=path,
                             line=i)
        vals = []
        for k in wanted:
            cell = row[k].strip()
            try:
                v = float(cell) if cell else np.nan
            except ValueError:
                raise InputError("expected a number", path=path, line=i, field=header[k],
                                 found=cell) from None
            if np.isinf(v):
                raise InputError("expected a finite number", path=path, line=i,
                                 field=header[k], found=cell)
            vals.append(v)
        if np.isnan(vals[0]):
            raise InputError("missing time", path=path, line=i, field=header[time_col])
        out.append(vals)
    if not out:
        raise InputError("the joint-angle file has a header but no rows", path=path)
    arr = np.array(out)
    t = arr[:, 0]
    if np.any(np.diff(t) <= 0):
        bad = int(np.argmax(np.diff(t) <= 0)) + 1
        raise InputError("time must increase from row to row", path=path,
                         field=header[time_col], found=float(t[bad]))
    return JointAngles(path, t, list(moving), arr[:, 1:])


@dataclass(frozen=True)
class PostureAngles:
    """A locked posture's joint values and how still they were.

    Attributes
    ----------
    values : dict
        Joint -> median over the window (rad or m).
    spread : dict
        Joint -> standard deviation over the window.
    noise : dict
        Joint -> encoder noise estimated from successive differences.
    warnings : list of str
    """

    values: dict[str, float]
    spread: dict[str, float]
    noise: dict[str, float]
    warnings: list[str] = field(default_factory=list)


def posture_angles(ja: JointAngles, window: tuple[float, float] | None = None, *,
                   name: str = "posture") -> PostureAngles:
    """The posture's configuration: per joint the median over ``window`` (s; all rows when
    None). A joint whose standard deviation exceeds three times its encoder noise (white
    noise estimated from successive differences, robustly: ``MAD(diff) / 0.6745 / sqrt 2``)
    and :data:`MOVE_FLOOR` moved during the posture: said in ``warnings``."""
    keep = np.ones(ja.time_s.size, bool)
    if window is not None:
        keep = (ja.time_s >= window[0]) & (ja.time_s <= window[1])
        if not keep.any():
            raise InputError(f"no joint-angle rows inside the window [{window[0]:g}, "
                             f"{window[1]:g}] s", path=ja.path)
    values, spread, noise, warnings = {}, {}, {}, []
    for k, joint in enumerate(ja.names):
        x = ja.values[keep, k]
        x = x[np.isfinite(x)]
        if x.size == 0:
            raise InputError("no value in the posture's window", path=ja.path, field=joint)
        values[joint] = float(np.median(x))
        spread[joint] = float(np.std(x)) if x.size > 1 else 0.0
        d = np.diff(x)
        noise[joint] = (float(np.median(np.abs(d - np.median(d))) / 0.6745 / np.sqrt(2))
                        if d.size > 2 else 0.0)
        if spread[joint] > max(3.0 * noise[joint], MOVE_FLOOR):
            warnings.append(f"{name}: joint '{joint}' moved during the locked posture "
                            f"(standard deviation {spread[joint]:.2e}, encoder noise "
                            f"{noise[joint]:.2e}); the posture is not one rigid object")
    return PostureAngles(values, spread, noise, warnings)


#: How far past a URDF limit a joint's reading may lie and still be read as rad (m): the
#: encoders' calibration and a limit rounded in the URDF, not a unit.
LIMIT_SLACK = 0.01


def degree_columns(ja: JointAngles, limits: dict[str, tuple[float, float]]
                   ) -> list[tuple[str, str]]:
    """The columns that fit their joint's limits only when read as degrees.

    Parameters
    ----------
    ja : JointAngles
    limits : dict
        Revolute joint -> ``(lower, upper)`` URDF limits, rad (continuous and prismatic
        joints are not judged: a continuous joint may wind past any value, a prismatic one
        reads metres).

    Returns
    -------
    list of (joint, message)
        Per such column: its values lie outside ``[lower, upper]`` (by more than
        :data:`LIMIT_SLACK`) as rad and inside them as degrees.
    """
    out = []
    for joint, (lo, hi) in limits.items():
        if joint not in ja.names:
            continue
        x = ja.column(joint)
        x = x[np.isfinite(x)]
        if x.size == 0:
            continue
        a, b = float(x.min()), float(x.max())
        as_rad = lo - LIMIT_SLACK <= a and b <= hi + LIMIT_SLACK
        r = np.deg2rad([a, b])
        as_deg = lo - LIMIT_SLACK <= r[0] and r[1] <= hi + LIMIT_SLACK
        if not as_rad and as_deg:
            out.append((joint, f"joint '{joint}' reads {a:.4g} to {b:.4g}, outside its URDF "
                               f"limits [{lo:.4g}, {hi:.4g}] rad and inside them as degrees: "
                               "degrees? (joint angles are in rad)"))
    return out


__all__ = ["TIME_COLUMNS", "MOVE_FLOOR", "LIMIT_SLACK", "JointAngles", "read_joint_angles",
           "PostureAngles", "posture_angles", "degree_columns"]
