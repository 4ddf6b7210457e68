"""Calibration images from the command line: image files, a folder of them, or a video.

Every image comes out as ``(name, uint8 [H, W] gray)``. A video is sampled evenly so that
at most ``max_frames`` frames are looked at (consecutive frames of a video show nearly the
same view and add nothing to a calibration).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from rigtool.errors import InputError

#: File suffixes read as still images (OpenCV's imread formats).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".pgm", ".ppm", ".webp")


def _read_image(path: Path) -> np.ndarray:
    import cv2

    img = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
    if img is None:
        raise InputError("cannot read the image (expected PNG, JPEG, TIFF, BMP or PGM)",
                         path=path)
    return img


def expand_inputs(paths: list[Path]) -> tuple[list[Path], Path | None]:
    """Image files (a folder expands to its images, sorted) or one video.

    Returns
    -------
    images : list of Path
    video : Path or None
        Set when the only input is a file that is not an image.

    Raises
    ------
    InputError
        A missing path, an empty folder, or a video mixed with other inputs.
    """
    images: list[Path] = []
    video = None
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise InputError("file or folder not found", path=p)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.suffix.lower() in IMAGE_SUFFIXES)
            if not found:
                raise InputError("the folder holds no images (expected "
                                 + ", ".join(IMAGE_SUFFIXES) + " files)", path=p)
            images += found
        elif p.suffix.lower() in IMAGE_SUFFIXES:
            images.append(p)
        else:
            video = p
    if video is not None and (images or len(paths) > 1):
        raise InputError("expected either images (files or folders) or one video, not both",
                         path=video)
    return images, video


def iter_images(images: list[Path], video: Path | None, *, max_frames: int = 200
                ) -> Iterator[tuple[str, np.ndarray]]:
    """``(name, gray)`` of every image, or of up to ``max_frames`` evenly spaced frames of
    the video (name ``frame<k>``).

    Raises
    ------
    InputError
        An unreadable image or video, or images of different sizes.
    """
    if video is None:
        size = None
        for p in images:
            img = _read_image(p)
            if size is not None and img.shape != size:
                raise InputError(f"all images must have one size; this one is "
                                 f"{img.shape[1]}x{img.shape[0]}, the first "
                                 f"{size[1]}x{size[0]}", path=p)
            size = img.shape
            yield p.name, img
        return
    from rigtool.camera.video import VideoFrames

    frames = VideoFrames(video)
    try:
        total = frames.n_frames_hint
        step = max(1, total // max_frames) if total > 0 else 1
        k, taken = 0, 0
        while taken < max_frames:
            gray = frames.read()
            if gray is None:
                break
            if k % step == 0:
                taken += 1
                yield f"frame{k}", gray
            k += 1
    finally:
        frames.close()
