"""Read back the marker covariance ``rigtool track`` writes beside a capture.

``OUT.residuals.csv`` (:mod:`rigtool.camera.track`) holds, per frame, the six components of
every tracked marker's lab-frame position covariance (m^2, order xx, yy, zz, yz, zx, xy)
in columns ``<marker>_c<comp>``; its frames are the capture's (``OUT.csv``). The
output-error posture fit whitens its rows with them
(:class:`rigtool.engine.whiten.MarkerCovariance`). These are marginal covariances: the
corners of one body in one frame share its pose estimate, so their errors are correlated
(``correlated_in_frame``), and the fit's standard errors are clustered by frame
(rigtool.identify.posture.cluster_covariance).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.camera.capture_files import COV_NAMES
from rigtool.camera.side_files import RESIDUALS_SUFFIX, residuals_file_of
from rigtool.engine.whiten import MarkerCovariance
from rigtool.errors import InputError

_INDEX = ((0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1))
#: Suffix of the side file next to a capture ``NAME.csv``.
SIDE_SUFFIX = RESIDUALS_SUFFIX


def side_file_of(capture: str | Path) -> Path:
    """The covariance side file that ``rigtool track`` writes next to ``capture``."""
    return residuals_file_of(capture)


def read_marker_covariance(path: str | Path, /, *, n_frames: int | None = None
                           ) -> MarkerCovariance:
    """The per-frame covariance of every marker in a ``rigtool track`` side file.

    Parameters
    ----------
    path : path
        ``OUT.residuals.csv``.
    n_frames : int, optional
        Frames of the capture it goes with; a different count is refused.

    Raises
    ------
    InputError
        An unreadable file, no covariance columns, a component missing, a frame count that
        is not the capture's.
    """
    import pandas as pd

    path = Path(path)
    try:
        table = pd.read_csv(path)
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read the marker covariance file ({err})", path=path) from err
    cols = [c for c in table.columns if c.endswith("_cxx")]
    if not cols:
        raise InputError("no marker covariance columns (<marker>_cxx ...); expected the "
                         "side file `rigtool track` writes", path=path)
    names = [c[:-len("_cxx")] for c in cols]
    missing = [f"{m}_c{c}" for m in names for c in COV_NAMES if f"{m}_c{c}" not in table]
    if missing:
        raise InputError(f"covariance columns missing: {', '.join(missing[:4])}"
                         f"{' ...' if len(missing) > 4 else ''}", path=path)
    if n_frames is not None and len(table) != n_frames:
        raise InputError(f"{len(table)} frames of covariance, expected {n_frames} (the "
                         "capture's): the side file belongs to another capture", path=path)
    c6 = table[[f"{m}_c{c}" for m in names for c in COV_NAMES]].to_numpy(float)
    c6 = c6.reshape(len(table), len(names), 6)
    cov = np.empty(c6.shape[:2] + (3, 3))
    for k, (i, j) in enumerate(_INDEX):
        cov[..., i, j] = c6[..., k]
        cov[..., j, i] = c6[..., k]
    # each body's corners come from one pose fit per frame: correlated within the frame
    return MarkerCovariance(tuple(names), cov, path.name, correlated_in_frame=True)


def check_covers(cov: MarkerCovariance, data, names: list[str], path: Path) -> None:
    """Refuse a covariance file that lacks a marker the fit uses (``names``, as the
    manifest names them, matched in ``data``), or whose covariance of a seen marker is not
    finite and positive definite."""
    resolved = [data.names[data.index(n)] for n in names]
    have = set(cov.names)
    missing = [n for n in resolved if n not in have]
    if missing:
        raise InputError(f"no covariance for markers {', '.join(missing[:4])}"
                         f"{' ...' if len(missing) > 4 else ''} of the capture; expected the "
                         "side file of this capture (or set marker_covariance = \"none\")",
                         path=path)
    where = {n: i for i, n in enumerate(cov.names)}
    cols = [where[n] for n in resolved]
    c = cov.cov_m2[:, cols] if cov.cov_m2.ndim == 4 else cov.cov_m2[None, cols]
    seen = np.isfinite(data.select(names)).all(-1)
    if cov.cov_m2.ndim == 3:
        seen = seen.any(0, keepdims=True)
    c_seen = c[seen]
    ok = np.isfinite(c_seen).all((-1, -2))
    if ok.all():
        ok = np.linalg.eigvalsh(0.5 * (c_seen + np.swapaxes(c_seen, -1, -2)))[:, 0] > 0
    if not ok.all():
        t, k = np.argwhere(seen)[np.argmin(ok)]
        raise InputError(f"the covariance of marker {resolved[k]} at frame {t + 1} is not "
                         "finite and positive definite where the capture has its position",
                         path=path)


__all__ = ["read_marker_covariance", "side_file_of", "check_covers", "SIDE_SUFFIX"]
