"""Sub-pixel points of a tag's straight edges from the area under the image, not from an
interpolated profile.

A sensor pixel integrates light over its area, and blur (lens, motion) only moves light
about. So across a straight edge between two flat levels, the sum of the pixel values in a
column of pixels, normalised so that the dark side is 0 and the light side 1, is exactly the
length of the light part of that column: the edge's position in the column, whatever the
blur's shape, as long as the blur is point-symmetric and the column's window holds the
whole transition (Tabatabai and Mitchell's moment-preserving edge, in its simplest form).
The window is centred on the current estimate of the edge, so the little of the blur's
tails it cuts off is the same on both sides and cancels; its two end pixels, in the flat
part, count by the fraction of them inside the window.

Why not interpolate: the previous method sampled profiles across each edge by bicubic
interpolation of the image (``cv2.remap``) and took their half-level crossings. Interpolating
a sampled, blurred edge errs by an amount that is periodic in the edge's sub-pixel phase,
the same all along an edge aligned with the pixel grid, and nearly the same while the tag
moves a few pixels: a constant error of about 0.01-0.02 px per corner
(``benchmarks/corner_bias.py``). The sums here use the pixels as they are. Hand-written
because OpenCV has no sub-pixel edge locator of this kind (``cv2.cornerSubPix`` looks for
the saddle of a chessboard corner and is biased on a tag's L-shaped corner by a fraction of
the blur).

Conventions: see :mod:`rigtool.camera`; pixel ``(u, v)`` covers ``[u - 0.5, u + 0.5] x
[v - 0.5, v + 0.5]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EdgeWindow:
    """Which pixels :func:`edge_points` uses along each side of a tag.

    Attributes
    ----------
    span : tuple of float
        The part of the side used, as fractions from one corner to the other (the ends are
        left out: near a corner the two edges' blur overlaps).
    window_px : float
        Half width of each column's window across the edge, px (perpendicular to the edge);
        it must hold the blur's transition (about 3 standard deviations of the blur).
    level_px : float
        Width of the zones just outside the window, on either side, whose pixels give the
        dark and the light level, px. The window and the light zone must stay on the paper
        around the tag, the dark zone on the tag's black border.
    min_contrast : float
        Light minus dark level below which a side is not used, in grey levels.
    """

    span: tuple[float, float] = (0.2, 0.8)
    window_px: float = 2.0
    level_px: float = 2.0
    min_contrast: float = 10.0


def edge_points(image: np.ndarray, origin: np.ndarray, corners: np.ndarray,
                window: EdgeWindow = EdgeWindow()
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sub-pixel edge points of each side of each tag, one per pixel column along it.

    Side ``k`` runs from corner ``k`` to corner ``k + 1``; the corners go clockwise on the
    image (``v`` down), so the paper (light) is to the left of the direction of travel. A
    side mostly along ``u`` is cut into columns of pixels (constant ``u``), one mostly
    along ``v`` into rows. Each column's window is centred on the straight line between the
    side's corners; the edge point is where its normalised sum puts the edge.

    Parameters
    ----------
    image : ndarray (H, W) float
        A crop of the frame whose top-left pixel is ``origin``.
    origin : ndarray (2,)
        ``(u, v)`` of the crop's top-left pixel in the frame.
    corners : ndarray (n, 4, 2)
        Current corners (frame pixels).
    window : EdgeWindow

    Returns
    -------
    points : ndarray (n, 4, P, 2)
        Edge points, frame pixels.
    valid : ndarray (n, 4, P) of bool
        False where a column left the crop, fell beyond the side's span, or its edge point
        is at the end of its window (the edge lies beyond it); all False on a side without
        contrast.
    n_columns : ndarray (n, 4) of int
        Columns within each side's span (``P`` is the largest of them).
    """
    start = np.asarray(corners, dtype=np.float64)                        # [n, 4, 2]
    along = np.roll(start, -1, axis=1) - start
    length = np.maximum(np.linalg.norm(along, axis=-1), 1e-9)
    normal = np.stack([along[..., 1], -along[..., 0]], axis=-1) / length[..., None]  # out
    major = (np.abs(along[..., 1]) > np.abs(along[..., 0])).astype(np.int64)       # [n, 4]
    minor = 1 - major
    pick = np.take_along_axis
    a0 = pick(start, major[..., None], axis=-1)[..., 0]                 # major coordinate
    b0 = pick(start, minor[..., None], axis=-1)[..., 0]
    da = pick(along, major[..., None], axis=-1)[..., 0]
    db = pick(along, minor[..., None], axis=-1)[..., 0]
    n_minor = pick(normal, minor[..., None], axis=-1)[..., 0]           # |.| >= 1/sqrt 2
    ends = a0[..., None] + da[..., None] * np.asarray(window.span)      # [n, 4, 2]
    lo, hi = np.ceil(ends.min(axis=-1)), np.floor(ends.max(axis=-1))
    n_cols = int(max(1.0, (hi - lo).max() + 1))
    col = lo[..., None] + np.arange(n_cols)                              # [n, 4, P]
    in_span = col <= hi[..., None]
    centre = b0[..., None] + (col - a0[..., None]) * (db / np.where(da == 0, 1, da))[..., None]
    # rows of each column: enough to hold the window and both level zones at 45 deg
    reach = window.window_px + window.level_px
    rows = np.arange(-int(np.ceil(reach * np.sqrt(2.0))) - 1,
                     int(np.ceil(reach * np.sqrt(2.0))) + 2)
    m = np.rint(centre)[..., None] + rows                                # [n, 4, P, R]
    a = np.broadcast_to(col[..., None], m.shape)
    is_u = (major == 0)[..., None, None]
    u = np.where(is_u, a, m) - origin[0]
    v = np.where(is_u, m, a) - origin[1]
    height, width = image.shape
    inside = (u >= 0) & (u < width) & (v >= 0) & (v < height)
    pix = image[np.clip(v, 0, height - 1).astype(np.intp),
                np.clip(u, 0, width - 1).astype(np.intp)].astype(np.float64)
    # signed distance of each pixel centre from the line, px, + towards the paper
    dist = (m - centre[..., None]) * n_minor[..., None, None]
    half = window.window_px / np.abs(n_minor)[..., None, None]          # along the column
    lo_w, hi_w = centre[..., None] - half, centre[..., None] + half
    weight = np.clip(np.minimum(m + 0.5, hi_w) - np.maximum(m - 0.5, lo_w), 0.0, 1.0)
    zone = (np.abs(dist) >= window.window_px) & (np.abs(dist) <= reach)
    usable = in_span[..., None] & inside
    dark_w = (zone & (dist < 0) & usable).astype(np.float64)
    light_w = (zone & (dist > 0) & usable).astype(np.float64)
    dark = (pix * dark_w).sum(axis=(-1, -2)) / np.maximum(dark_w.sum(axis=(-1, -2)), 1.0)
    light = (pix * light_w).sum(axis=(-1, -2)) / np.maximum(light_w.sum(axis=(-1, -2)), 1.0)
    contrast = light - dark                                              # [n, 4]
    side_ok = ((contrast > window.min_contrast) & (dark_w.sum(axis=(-1, -2)) > 0)
               & (light_w.sum(axis=(-1, -2)) > 0))
    q = (pix - dark[..., None, None]) / np.where(side_ok, contrast, 1.0)[..., None, None]
    light_len = (weight * q).sum(axis=-1)                                # [n, 4, P]
    up = (n_minor > 0)[..., None]        # the paper towards increasing minor coordinate
    edge = np.where(up, hi_w[..., 0] - light_len, lo_w[..., 0] + light_len)
    full = ~((weight > 0) & ~inside).any(axis=-1)                       # window in the crop
    valid = (in_span & full & side_ok[..., None]
             & (np.abs(edge - centre) < half[..., 0] - 0.25))
    along_u = (major == 0)[..., None]
    points = np.stack([np.where(along_u, col, edge), np.where(along_u, edge, col)], axis=-1)
    return points, valid, in_span.sum(axis=-1)
