"""The report's figures drawn and written as PNG: one place for how (matplotlib's Agg canvas,
Pillow's encoder) and how hard the encoder compresses."""

from __future__ import annotations

from pathlib import Path
from typing import IO

#: zlib level of the report's PNGs. Pillow's default, 6, spends more time encoding a figure
#: than Agg spends drawing it: a six-panel figure at 90 dpi took 0.145 s to save at 6 and
#: 0.096 s at 1, for a file 8 % larger (186 against 201 kB; measured 2026-11-27). A run
#: writes a dozen figures and more, one per posture and kind.
PNG_COMPRESS_LEVEL = 1


def pyplot():
    """``matplotlib.pyplot`` on the Agg canvas (no screen: figures are only written),
    imported when a figure is first drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_png(fig, path: Path | IO[bytes], dpi: int) -> None:
    """Write matplotlib figure ``fig`` to ``path`` (a file name or a binary stream) as PNG at
    ``dpi`` and close it."""
    plt = pyplot()
    fig.savefig(path, dpi=dpi, format="png", pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL})
    plt.close(fig)


__all__ = ["PNG_COMPRESS_LEVEL", "pyplot", "save_png"]
