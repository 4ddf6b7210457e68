"""MkDocs hook: the reference pages generated from the code, added to the site at build time.

Named in mkdocs.yml (``hooks:``). The pages are never written to the repository, so they
cannot be committed stale: each build reads the command-line parser and the declared schemas
of the rigtool next to this file.
"""

from __future__ import annotations

import sys
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:           # this checkout's rigtool, installed or not
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_pages import pages  # noqa: E402


def on_files(files, config):
    """Add every generated page to the site's files (before the navigation is built)."""
    for src_uri, content in pages().items():
        files.append(File.generated(config, src_uri, content=content))
    return files


#: Sphinx cross-reference roles some docstrings use (``:class:`Tree```); mkdocstrings renders
#: the name as code and leaves the role's text in front of it
_SPHINX_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|py:\w+):(?=<code>)")


def on_page_content(html, page, config, files):
    """Drop the Sphinx role prefixes the API pages would show as text."""
    return _SPHINX_ROLE.sub("", html)
