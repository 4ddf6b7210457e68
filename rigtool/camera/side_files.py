"""Where ``rigtool track`` puts its side files next to a capture ``OUT.csv`` (names only:
no imports beyond pathlib, so the calibration and the run can look for them without
loading the camera code)."""

from __future__ import annotations

from pathlib import Path

#: the per-frame residuals and marker covariances
RESIDUALS_SUFFIX = ".residuals.csv"
#: the track's summary (inputs, image noise, lab frame)
SUMMARY_SUFFIX = ".track.json"
#: the markers in each body's frame
MARKERS_SUFFIX = ".markers.toml"


def residuals_file_of(capture: str | Path) -> Path:
    """``OUT.residuals.csv`` of the capture ``OUT.csv``."""
    capture = Path(capture)
    return capture.with_name(capture.stem + RESIDUALS_SUFFIX)


def summary_file_of(capture: str | Path) -> Path:
    """``OUT.track.json`` of the capture ``OUT.csv``."""
    capture = Path(capture)
    return capture.with_name(capture.stem + SUMMARY_SUFFIX)


def markers_file_of(capture: str | Path) -> Path:
    """``OUT.markers.toml`` of the capture ``OUT.csv``."""
    capture = Path(capture)
    return capture.with_name(capture.stem + MARKERS_SUFFIX)


__all__ = ["RESIDUALS_SUFFIX", "SUMMARY_SUFFIX", "MARKERS_SUFFIX", "residuals_file_of",
           "summary_file_of", "markers_file_of"]
