"""``tags.toml``: which printed tags are where on which body.

Layout::

    dictionary = "DICT_4X4_50"      # an OpenCV predefined dictionary (DICT_ prefix optional)
    lab = "floor"                   # optional: a body whose tags are fixed in the lab; its
                                    # frame is the lab frame of the capture. Default "camera":
                                    # the camera's frame (x right, y down, z along the view)

    [[tags]]
    id = 3                          # the tag's id in the dictionary
    body = "platform"               # the rigid body it is glued to (rig or session names)
    edge_m = 0.06                   # edge of the black square as printed, m
    position = [0.50, 0.25, 0.02]   # centre of the black square, body frame, m
    rotation = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]   # tag axes -> body axes (columns: the
                                    # tag's x, y, z in body axes); or euler_deg = [rx, ry, rz]
                                    # (scipy "xyz", extrinsic, degrees); default identity:
                                    # the tag lies in the body's x-y plane, its top towards +y

The capture's markers are the tags' corners, named ``<body>:tag<id>_<corner>`` with the
corner one of ``tl, tr, br, bl`` (top-left, top-right, bottom-right, bottom-left of the
printed tag); their coordinates in the body frame are :meth:`TagLayout.body_markers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.camera.aruco import canonical_name, dictionary_names, get_dictionary
from rigtool.config import read_toml
from rigtool.config.schema import TAGS, check_keys
from rigtool.errors import ConfigError
from rigtool.validate import as_array, as_float, as_str, require

#: Corner names in cv2.aruco's order.
CORNER_NAMES = ("tl", "tr", "br", "bl")


def square_corners(edge_m: float) -> np.ndarray:
    """Corners ``[4, 3]`` of a tag in its own frame, cv2.aruco's order, m."""
    h = 0.5 * edge_m
    return np.array([[-h, h, 0.0], [h, h, 0.0], [h, -h, 0.0], [-h, -h, 0.0]])


@dataclass(frozen=True)
class Tag:
    """One printed tag on a body.

    Attributes
    ----------
    id : int
    body : str
    edge_m : float
        Edge of the black square, m.
    rotation_body : ndarray (3, 3)
        Tag axes -> body axes.
    position_body_m : ndarray (3,)
        Centre of the square in the body frame, m.
    """

    id: int
    body: str
    edge_m: float
    rotation_body: np.ndarray
    position_body_m: np.ndarray

    def corners_body(self) -> np.ndarray:
        """The four corners ``[4, 3]`` in the body frame, m (cv2.aruco's order)."""
        return square_corners(self.edge_m) @ self.rotation_body.T + self.position_body_m

    def marker_names(self) -> list[str]:
        """Marker names of the four corners (without the body prefix)."""
        return [f"tag{self.id}_{c}" for c in CORNER_NAMES]


@dataclass(frozen=True)
class TagLayout:
    """Everything ``tags.toml`` says.

    Attributes
    ----------
    dictionary_name : str
        As OpenCV names it (``DICT_4X4_50``).
    tags : tuple of Tag
        In file order.
    lab_body : str or None
        The body fixed in the lab whose frame is the lab frame; None: the camera's frame.
    source : Path or None
    """

    dictionary_name: str
    tags: tuple[Tag, ...]
    lab_body: str | None = None
    source: Path | None = None

    @property
    def bodies(self) -> list[str]:
        """Body names in the order their first tag appears."""
        return list(dict.fromkeys(t.body for t in self.tags))

    @property
    def moving_bodies(self) -> list[str]:
        """The bodies whose markers the capture holds (all but the lab body)."""
        return [b for b in self.bodies if b != self.lab_body]

    def dictionary(self):
        """The ``cv2.aruco.Dictionary``."""
        return get_dictionary(self.dictionary_name)

    def tags_of(self, body: str) -> list[Tag]:
        """The tags on ``body`` in file order."""
        return [t for t in self.tags if t.body == body]

    def body_markers(self, body: str) -> dict[str, np.ndarray]:
        """Marker name (no prefix) -> position in the body frame (m), every corner of every
        tag on ``body``: what goes into the rig file or the session manifest."""
        out = {}
        for tag in self.tags_of(body):
            for name, xyz in zip(tag.marker_names(), tag.corners_body()):
                out[name] = xyz
        return out


def _rotation(table: dict, *, field: str, path: Path) -> np.ndarray:
    keys = [k for k in ("rotation", "euler_deg") if k in table]
    if len(keys) > 1:
        raise ConfigError("give rotation or euler_deg, not both", path=path, field=field)
    if not keys:
        return np.eye(3)
    if keys[0] == "euler_deg":
        angles = as_array(table["euler_deg"], (3,), field=f"{field}.euler_deg", path=path)
        return Rotation.from_euler("xyz", angles, degrees=True).as_matrix()
    mat = as_array(table["rotation"], (3, 3), field=f"{field}.rotation", path=path)
    if np.linalg.det(mat) <= 0.5 or not np.allclose(mat @ mat.T, np.eye(3), atol=0.02):
        raise ConfigError("expected a rotation matrix (orthonormal within rounding, det +1)",
                          path=path, field=f"{field}.rotation", found=table["rotation"])
    u, _, vt = np.linalg.svd(mat)
    return u @ vt


def load_tags(path: str | Path) -> TagLayout:
    """Read and check ``tags.toml``.

    Raises
    ------
    ConfigError
        Naming the file and field: an unknown dictionary (the message lists OpenCV's), an
        id outside the dictionary, a repeated id, a missing or non-positive edge, a
        malformed pose, a ``lab`` body without tags.
    """
    path = Path(path)
    data = read_toml(path)
    check_keys(data, TAGS, path=path, what="tags file")
    name = as_str(require(data, "dictionary", field="dictionary", path=path),
                  field="dictionary", path=path)
    try:
        dictionary = get_dictionary(name)
    except KeyError:
        raise ConfigError("unknown tag dictionary; expected one of OpenCV's: "
                          + ", ".join(dictionary_names()), path=path, field="dictionary",
                          found=name) from None
    canonical = canonical_name(name)
    n_ids = int(dictionary.bytesList.shape[0])
    raw = require(data, "tags", field="tags", path=path)
    if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
        raise ConfigError("expected one or more [[tags]] tables", path=path, field="tags")
    tags, seen = [], {}
    for i, t in enumerate(raw):
        field = f"tags[{i}]"
        ident = require(t, "id", field=field, path=path)
        if isinstance(ident, bool) or not isinstance(ident, int) or not 0 <= ident < n_ids:
            raise ConfigError(f"expected a tag id from 0 to {n_ids - 1} ({canonical} has "
                              f"{n_ids} tags)", path=path, field=f"{field}.id", found=ident)
        if ident in seen:
            raise ConfigError(f"tag id {ident} is listed twice (also tags[{seen[ident]}]); "
                              "each printed tag must have its own id", path=path,
                              field=f"{field}.id")
        seen[ident] = i
        body = as_str(require(t, "body", field=field, path=path), field=f"{field}.body",
                      path=path)
        if not body or not body.replace("_", "").replace("-", "").isalnum():
            raise ConfigError("expected a body name of letters, digits, '_' or '-'",
                              path=path, field=f"{field}.body", found=body)
        edge = as_float(require(t, "edge_m", field=field, path=path), field=f"{field}.edge_m",
                        path=path, positive=True)
        if edge > 2.0:
            raise ConfigError("expected the tag's edge in metres (a number up to 2)",
                              path=path, field=f"{field}.edge_m", found=edge)
        pos = as_array(require(t, "position", field=field, path=path), (3,),
                       field=f"{field}.position", path=path)
        tags.append(Tag(int(ident), body, edge, _rotation(t, field=field, path=path), pos))
    lab = data.get("lab", "camera")
    lab = as_str(lab, field="lab", path=path)
    layout = TagLayout(canonical, tuple(tags), None if lab == "camera" else lab, path)
    if layout.lab_body is not None and layout.lab_body not in layout.bodies:
        raise ConfigError(f"lab body '{lab}' has no tags; expected \"camera\" or one of the "
                          f"bodies: {', '.join(layout.bodies)}", path=path, field="lab",
                          found=lab)
    if not layout.moving_bodies:
        raise ConfigError("every tag is on the lab body; expected tags on the bodies to "
                          "track (platform, links)", path=path, field="tags")
    return layout
