"""The report's content in reading order: the summary first (what a reader came for and
whether to trust it), the checks in full, then the detail of every stage (postures, joint
centres, Phi_s, relative motion and Phi_B, segments, the model files), the comparison with a
truth file when there is one, notes and inputs.
"""

from __future__ import annotations

from rigtool.report.blocks import Document
from rigtool.report.content_detail import (closing_sections, joint_centres_section,
                                           models_section, opensim_section, partial_section, postures_section,
                                           relative_section, segments_section, subset_section,
                                           truth_section)
from rigtool.report.content_robot import robot_section
from rigtool.report.content_summary import checks_section, summary_section


def build_document(doc: dict, figures) -> Document:
    """The :class:`Document` of a report.json ``doc`` and its written figures."""
    f = doc["filter"]
    subtitle = (f"rigtool {doc['rigtool_version']}; rig {doc['rig']['name']}; filter "
                f"{f['method']} order {f['order']}, {f['passband_hz']}/{f['stopband_hz']} Hz.")
    sections = [summary_section(doc), *partial_section(doc), checks_section(doc),
                postures_section(doc, figures),
                joint_centres_section(doc), subset_section(doc, figures),
                relative_section(doc, figures), segments_section(doc, figures),
                robot_section(doc), models_section(doc), opensim_section(doc),
                truth_section(doc)] + closing_sections(doc)
    return Document(f"rigtool report: {doc['session']}", subtitle,
                    [s for s in sections if s is not None])


__all__ = ["build_document"]
