"""Sphinx configuration of morphaug's documentation (``make docs``).

Pages are MyST markdown (they read on GitHub too); the API reference is
generated from the numpydoc docstrings (``api.md``: autosummary); the
notebooks of ``notebooks/`` are copied into ``docs/notebooks/`` at each build
and shown without being executed (the test suite executes them).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from sphinx.util import logging as sphinx_logging

import morphaug

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

project = "morphaug"
author = "morphaug contributors"
copyright = "morphaug contributors"
release = version = morphaug.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_nb",  # MyST markdown pages and the notebooks
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}

# API reference: one page per public name, from the docstrings.
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"  # the numpydoc Parameters sections say the types
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

# Markdown and notebooks.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # tests/test_notebooks.py executes them

html_theme = "furo"
html_title = f"morphaug {release}"


# Files of the repository shown as pages: copied into docs/ at each build (build products,
# ignored by git). The pages link to the originals (``../notebooks/x.ipynb``), which works on
# GitHub; the build rewrites those links to the copies.
COPIED = {"notebooks": "*.ipynb", "benchmarks/results": "*.md"}


def _copy(folder: str, pattern: str) -> None:
    target = DOCS / Path(folder).name
    target.mkdir(exist_ok=True)
    for path in sorted((ROOT / folder).glob(pattern)):
        text = path.read_bytes()
        if path.suffix == ".md" and not text.startswith(b"# "):  # a page needs a title
            text = f"# {path.stem}\n\n".encode() + text
        destination = target / path.name
        if not destination.exists() or destination.read_bytes() != text:
            destination.write_bytes(text)


for _folder, _pattern in COPIED.items():
    _copy(_folder, _pattern)

_LINK_TO_ORIGINAL = re.compile(r"\]\(\.\./(" + "|".join(map(re.escape, COPIED)) + r")/")


def _link_to_copies(app, docname, source):
    source[0] = _LINK_TO_ORIGINAL.sub(lambda match: "](" + Path(match.group(1)).name + "/", source[0])


# numpydoc reports docstring problems (an unknown section such as "Example") as Python
# warnings, which ``sphinx-build -W`` does not see: report them as Sphinx warnings, except for
# the docstrings listed here, known to have one until they are fixed (then remove them here).
KNOWN_DOCSTRING_PROBLEMS = {
    # "Example" instead of "Examples" (morphaug/metrics/_surface.py)
    "average_surface_distance", "hausdorff_distance", "normalized_surface_dice", "surface_distance_metrics",
}
_numpydoc_logger = sphinx_logging.getLogger("numpydoc")
_show_warning = warnings.showwarning


def _report_numpydoc(message, category, filename, lineno, file=None, line=None):
    if "numpydoc" not in str(filename):
        _show_warning(message, category, filename, lineno, file, line)
    elif not any(f" of {name} in " in str(message) for name in KNOWN_DOCSTRING_PROBLEMS):
        _numpydoc_logger.warning(f"numpydoc: {message}")


def setup(app):
    app.connect("source-read", _link_to_copies)
    warnings.showwarning = _report_numpydoc
    warnings.simplefilter("always", UserWarning)  # every docstring's problem, not only the first
