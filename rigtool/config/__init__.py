"""Reading the hand-written files: the rig file and the session manifest
(docs/reference/files/).

Both are TOML. Loading validates every field through :mod:`rigtool.validate`, resolves
capture paths relative to the file, and returns plain dataclasses; a bad file raises one
:class:`ConfigError` naming the file and the field (``springs[2].anchor``) or TOML line.
The parts: rigtool.config.toml_fields (reading, hashing, shared field readers),
rigtool.config.rig_file and rigtool.config.session_file.
"""

from rigtool.config.rig_file import (CalibrationCapture, ReferenceBody, RigFile, load_rig,
                                     rig_gravity_and_locks)
from rigtool.config.session_file import (POSTURE_STANDARD_ERRORS, RELATIVE_MOTION_MODELS,
                                         CaptureRef, FilterSettings, LinkFrameSpec,
                                         LinkPriorSpec, RigCheckRef, Session, _link_prior,
                                         load_session)
from rigtool.config.toml_fields import read_toml, sha256_of

__all__ = ["sha256_of", "read_toml", "ReferenceBody", "CalibrationCapture", "RigFile",
           "rig_gravity_and_locks", "load_rig", "FilterSettings", "LinkFrameSpec",
           "CaptureRef", "RELATIVE_MOTION_MODELS", "POSTURE_STANDARD_ERRORS", "LinkPriorSpec",
           "Session", "RigCheckRef", "load_session", "_link_prior"]
