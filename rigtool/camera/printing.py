"""Printable sheets (PDF, exact physical size) of the tags of ``tags.toml`` and of a ChArUco
board, drawn with matplotlib on A4 pages.

Each tag is drawn at its ``edge_m`` with a white quiet zone of one cell around it (what the
detector needs; cut along its outside, or leave more paper) and a label (id, body, edge); the images come from ``cv2.aruco.generateImageMarker`` /
``CharucoBoard.generateImage`` with one image pixel per cell (drawn without smoothing, so
the cells are sharp at any printer resolution). Print at 100 % ("actual size", no "fit to
page"), then measure the printed edge and put the measured value in ``tags.toml``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rigtool.camera.intrinsics import BoardSpec
from rigtool.camera.tags import TagLayout

A4_M = (0.210, 0.297)
_MARGIN_M = 0.008
_LABEL_M = 0.008


def _new_page(plt):
    fig = plt.figure(figsize=(A4_M[0] / 0.0254, A4_M[1] / 0.0254))
    return fig


def _place(fig, image: np.ndarray, x_m: float, y_m: float, w_m: float, h_m: float) -> None:
    """Draw ``image`` with its top-left corner at ``(x, y)`` from the page's top-left, m."""
    ax = fig.add_axes([x_m / A4_M[0], 1.0 - (y_m + h_m) / A4_M[1], w_m / A4_M[0],
                       h_m / A4_M[1]])
    ax.imshow(image, cmap="gray", vmin=0, vmax=255, interpolation="nearest",
              extent=(0, 1, 0, 1), aspect="auto")
    ax.set_axis_off()


def tags_sheet(layout: TagLayout, path: str | Path) -> int:
    """Write the tags of ``layout`` to a PDF (as many A4 pages as needed); returns the
    number of pages."""
    import cv2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    dictionary = layout.dictionary()
    cells = int(dictionary.markerSize) + 2
    pages = 0
    with PdfPages(str(path)) as pdf:
        fig, x, y, row_h = None, _MARGIN_M, _MARGIN_M, 0.0
        for tag in layout.tags:
            size = tag.edge_m * (cells + 2) / cells
            if size + 2 * _MARGIN_M + _LABEL_M > min(A4_M):
                raise ValueError(f"tag {tag.id} ({tag.edge_m * 1e3:.0f} mm) does not fit on A4")
            if fig is not None and x + size > A4_M[0] - _MARGIN_M:
                x, y, row_h = _MARGIN_M, y + row_h + _LABEL_M, 0.0
            if fig is None or y + size + _LABEL_M > A4_M[1] - _MARGIN_M:
                if fig is not None:
                    pdf.savefig(fig)
                    plt.close(fig)
                fig, x, y, row_h = _new_page(plt), _MARGIN_M, _MARGIN_M, 0.0
                pages += 1
            img = cv2.aruco.generateImageMarker(dictionary, tag.id, cells, borderBits=1)
            framed = np.pad(img, 1, constant_values=255)
            side = size
            _place(fig, framed, x, y, side, side)
            fig.text((x + 0.5 * side) / A4_M[0], 1.0 - (y + side + 0.5 * _LABEL_M) / A4_M[1],
                     f"id {tag.id}  {tag.body}  {tag.edge_m * 1e3:.1f} mm  "
                     f"({layout.dictionary_name})", ha="center", va="center", fontsize=6)
            x += side + _MARGIN_M
            row_h = max(row_h, side)
        if fig is not None:
            pdf.savefig(fig)
            plt.close(fig)
    return pages


def board_sheet(spec: BoardSpec, path: str | Path) -> None:
    """Write the ChArUco board to a one-page A4 PDF at its physical size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    cols, rows = spec.squares
    width, height = cols * spec.square_m, rows * spec.square_m
    if width > A4_M[0] - 2 * _MARGIN_M or height > A4_M[1] - 2 * _MARGIN_M - _LABEL_M:
        raise ValueError(f"a {cols}x{rows} board of {spec.square_m * 1e3:.0f} mm squares "
                         f"({width * 1e3:.0f} x {height * 1e3:.0f} mm) does not fit on A4")
    ratio = spec.marker_m / spec.square_m
    per_square = next((p for p in range(20, 2001) if abs(p * ratio - round(p * ratio)) < 1e-6),
                      400)
    img = spec.board().generateImage((cols * per_square, rows * per_square), marginSize=0,
                                     borderBits=1)
    with PdfPages(str(path)) as pdf:
        fig = _new_page(plt)
        x, y = 0.5 * (A4_M[0] - width), _MARGIN_M
        _place(fig, img, x, y, width, height)
        fig.text(0.5, 1.0 - (y + height + 0.5 * _LABEL_M) / A4_M[1],
                 f"ChArUco {cols}x{rows}, squares {spec.square_m * 1e3:.1f} mm, markers "
                 f"{spec.marker_m * 1e3:.1f} mm, {spec.dictionary_name} (measure after "
                 "printing)", ha="center", va="center", fontsize=7)
        pdf.savefig(fig)
        plt.close(fig)
