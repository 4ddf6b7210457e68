"""The calibration's full covariance in physical parameters, as stored in a calibrated rig file.

Why a full covariance and not standard errors alone: a spring's stiffness and free length are
strongly correlated (both set the static preload), and so are the platform's mass and its
COM height with the stiffnesses. A posture fit that perturbs each calibrated number alone by
its standard error overstates the calibration's effect on the object's parameters. With the
covariance, the posture fit perturbs the calibration along its principal axes instead
(:func:`calibration_members`).

Parameter order (``names``): per spring ``springs.NAME.stiffness`` (N/m), then per spring
``springs.NAME.free_length`` (m), then per spring ``springs.NAME.damping`` (N s/m), then
``platform.mass`` (kg), ``platform.com.x|y|z`` (m, platform frame) and
``platform.inertia_com.xx|xy|xz|yy|yz|zz`` (kg m^2, about the COM, platform axes); when the
calibration fitted the measured lab frame (rigtool.engine.lab_frame), then
``lab_frame.rx|ry|rz`` (rad, a rotation vector) and ``lab_frame.tx|ty|tz`` (m): a
perturbation ``x -> exp([r]x) x + t`` of the whole rig in the measured frame.
"""

from __future__ import annotations

import numpy as np

from rigtool.errors import ConfigError
from rigtool.inertia import InertialParams
from rigtool.rig import Rig

_AXES = ("x", "y", "z")
_INERTIA = (("xx", 0, 0), ("xy", 0, 1), ("xz", 0, 2), ("yy", 1, 1), ("yz", 1, 2), ("zz", 2, 2))


#: the lab frame's entries, after the physical ones when the calibration fitted it
FRAME_PARAMETERS = tuple(f"lab_frame.{q}" for q in ("rx", "ry", "rz", "tx", "ty", "tz"))


def parameter_names(spring_names: list[str] | tuple[str, ...], *,
                    frame: bool = False) -> list[str]:
    """Names of the calibration vector's entries, in order (see the module docstring);
    ``frame``: with the lab frame's six."""
    out = [f"springs.{n}.{q}" for q in ("stiffness", "free_length", "damping")
           for n in spring_names]
    out += ["platform.mass"] + [f"platform.com.{a}" for a in _AXES]
    out += [f"platform.inertia_com.{lab}" for lab, _, _ in _INERTIA]
    return out + (list(FRAME_PARAMETERS) if frame else [])


def calibration_vector(rig: Rig, platform: InertialParams) -> np.ndarray:
    """The calibrated numbers in :func:`parameter_names` order."""
    ic = platform.inertia_com
    return np.concatenate([rig.stiffness, rig.free_length, rig.damping, [platform.mass],
                           platform.com, [ic[a, b] for _, a, b in _INERTIA]])


def _split(x: np.ndarray, n_springs: int):
    k, l0, c = x[:n_springs], x[n_springs:2 * n_springs], x[2 * n_springs:3 * n_springs]
    p = x[3 * n_springs:]
    ic = np.zeros((3, 3))
    for j, (_, a, b) in enumerate(_INERTIA):
        ic[a, b] = ic[b, a] = p[4 + j]
    return k, l0, c, InertialParams.from_com(float(p[0]), p[1:4], ic)


def calibration_members(rig: Rig, platform: InertialParams, covariance: np.ndarray
                        ) -> list[tuple[str, float, tuple, np.ndarray | None]]:
    """One perturbed calibration per principal axis of ``covariance``.

    Returns ``(label, step, (platform_pi, stiffness, free_length, damping), frame)`` with
    the calibration moved by ``sqrt(lambda_j) v_j``: the form ``refine_posture(
    calibration_std={"members": ...})`` takes. Summing the squared first-order effects over
    the axes gives ``J C J^T`` exactly, correlations included. ``frame``: the member's move
    of the lab frame (``[rotvec rad, t m]``, see the module docstring) when ``covariance``
    has the lab frame's six entries, else None.
    """
    x0 = calibration_vector(rig, platform)
    n_phys = x0.size
    with_frame = covariance.shape[0] == n_phys + len(FRAME_PARAMETERS)
    x0 = np.concatenate([x0, np.zeros(len(FRAME_PARAMETERS))]) if with_frame else x0
    lam, vec = np.linalg.eigh(0.5 * (covariance + covariance.T))
    n = len(rig.springs)
    members = []
    for lj, vj in zip(lam, vec.T):
        if lj <= 0:
            continue
        x = x0 + np.sqrt(lj) * vj
        k, l0, c, plat = _split(x[:n_phys], n)
        members.append((f"axis {len(members)}", float(np.sqrt(lj)), (plat.pi, k, l0, c),
                        x[n_phys:].copy() if with_frame else None))
    return members


def covariance_table(spring_names: list[str], covariance: np.ndarray, digits: int = 8) -> dict:
    """The ``[calibration.covariance]`` table of a calibrated rig file."""
    names = parameter_names(spring_names)
    if covariance.shape[0] == len(names) + len(FRAME_PARAMETERS):
        names = parameter_names(spring_names, frame=True)
    cov = 0.5 * (covariance + covariance.T)
    return {"units": "SI (N/m, m, N s/m, kg, m, kg m^2; the lab frame's rad and m); see "
                     "'parameters' for the order",
            "parameters": names,
            "matrix": [[float(f"{v:.{digits}g}") for v in row] for row in cov]}


def _calibration_table(raw: dict, path=None) -> dict:
    """The rig file's ``[calibration]`` table (empty when absent); ConfigError if not a table."""
    table = raw.get("calibration", {})
    if not isinstance(table, dict):
        raise ConfigError("expected a table", path=path, field="calibration", found=table)
    return table


def covariance_from_raw(raw: dict, rig: Rig, *, path=None) -> np.ndarray | None:
    """The covariance of ``[calibration.covariance]`` in a rig file's raw TOML, or None.

    Raises ConfigError naming the field when the table is present but malformed (wrong
    parameter list for this rig's springs, wrong shape, not symmetric positive semidefinite).
    """
    table = _calibration_table(raw, path).get("covariance")
    if table is None:
        return None
    field = "calibration.covariance"
    if not isinstance(table, dict):
        raise ConfigError("expected a table with 'parameters' and 'matrix'", path=path,
                          field=field)
    expected = parameter_names([sp.name for sp in rig.springs])
    if list(table.get("parameters", [])) == expected + list(FRAME_PARAMETERS):
        expected = expected + list(FRAME_PARAMETERS)
    if list(table.get("parameters", [])) != expected:
        raise ConfigError(f"expected parameters {expected[0]!r} ... {expected[-1]!r} "
                          f"({len(expected)} names, the order rigtool calibrate writes)",
                          path=path, field=f"{field}.parameters")
    try:
        cov = np.asarray(table.get("matrix"), dtype=float)
    except (TypeError, ValueError):
        cov = np.zeros(0)
    n = len(expected)
    if cov.shape != (n, n) or not np.all(np.isfinite(cov)):
        raise ConfigError(f"expected a {n}x{n} matrix of numbers", path=path,
                          field=f"{field}.matrix", found=f"shape {cov.shape}")
    scale = np.sqrt(np.clip(np.diag(cov), 0, None))
    tol = 1e-4 * np.outer(scale, scale) + 1e-300
    if np.any(np.abs(cov - cov.T) > tol):
        raise ConfigError("expected a symmetric matrix", path=path, field=f"{field}.matrix")
    lam = np.linalg.eigvalsh(0.5 * (cov + cov.T))
    if lam[0] < -1e-6 * max(lam[-1], 0.0):
        raise ConfigError("expected a positive semidefinite matrix (a covariance)", path=path,
                          field=f"{field}.matrix", found=f"smallest eigenvalue {lam[0]:.3g}")
    return 0.5 * (cov + cov.T)


__all__ = ["FRAME_PARAMETERS", "parameter_names", "calibration_vector", "calibration_members", "covariance_table",
           "covariance_from_raw"]


def calibration_std_from_rigfile(raw: dict, rig: Rig, *, path=None
                                 ) -> dict[str, np.ndarray] | None:
    """Uncertainty of the calibrated rig as written by ``rigtool calibrate``, or None.

    Standard errors from ``[calibration.std]`` of the rig file's raw TOML; when the file also
    has ``[calibration.covariance]`` (output-error calibration), ``"members"``: the
    calibration perturbed along the covariance's principal axes, so the posture fit
    propagates its correlations (rigtool.calibration_uncertainty).
    """
    cov = covariance_from_raw(raw, rig, path=path)     # checked even when std is incomplete
    std = _calibration_table(raw, path).get("std")
    if not std:
        return None
    if not isinstance(std, dict):
        raise ConfigError("expected a table of standard errors", path=path,
                          field="calibration.std")
    springs = std.get("springs", {})
    names = [sp.name for sp in rig.springs]
    try:
        out = {"stiffness": np.array([springs[n]["stiffness"] for n in names], float),
               "free_length": np.array([springs[n]["free_length"] for n in names], float),
               "damping": np.array([springs[n]["damping"] for n in names], float),
               "platform_mass": float(std["platform"]["mass"]),
               "platform_com": np.asarray(std["platform"]["com"], float),
               "platform_inertia_com": np.asarray(std["platform"]["inertia_com"], float)}
    except (KeyError, TypeError):
        return None
    if cov is not None:
        out["members"] = calibration_members(rig, rig.platform.params, cov)
    return out


def calibration_members_of(rig: Rig, platform: InertialParams, cal_std: dict):
    """One perturbed calibration per principal axis: ``(label, step, (platform_pi, k, L0,
    c), frame)`` (:func:`rigtool.calibration_uncertainty.calibration_members`).

    With a full covariance the members are given (``cal_std["members"]``). With standard
    errors alone (a rig file without ``[calibration.covariance]``) the covariance is taken
    diagonal: each calibrated number is stepped alone by its standard error (the maps are
    smooth; the sensitivity is the slope over that step), the calibration's own correlations
    being unknown.
    """
    if cal_std.get("members"):
        return list(cal_std["members"])
    sd = np.concatenate([cal_std["stiffness"], cal_std["free_length"], cal_std["damping"],
                         [cal_std["platform_mass"]], cal_std["platform_com"],
                         np.asarray(cal_std["platform_inertia_com"])[np.triu_indices(3)]])
    sd = np.where(np.asarray(sd, float) > 0, sd, 0.0)          # NaN or 0: not stepped
    return calibration_members(rig, platform, np.diag(sd ** 2))
