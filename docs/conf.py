"""Sphinx configuration of morphaug's documentation (``make docs``).

Pages are MyST markdown (they read on GitHub too); the API reference is
generated from the numpydoc docstrings (``api.md``: autosummary); the
notebooks of ``notebooks/`` are copied into ``docs/notebooks/`` at each build
and shown without being executed (the test suite executes them).
"""

from __future__ import annotations

import shutil
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


def _copy_notebooks() -> None:
    """notebooks/*.ipynb -> docs/notebooks/ (a build product, ignored by git)."""
    target = DOCS / "notebooks"
    target.mkdir(exist_ok=True)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        destination = target / path.name
        if not destination.exists() or destination.read_bytes() != path.read_bytes():
            shutil.copyfile(path, destination)


_copy_notebooks()


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
    warnings.showwarning = _report_numpydoc
    warnings.simplefilter("always", UserWarning)  # every docstring's problem, not only the first
