"""Sphinx configuration of morphaug's documentation (``make docs``).

Pages are MyST markdown (they read on GitHub too); the API reference is
generated from the numpydoc docstrings (``api.md``: autosummary); the
notebooks of ``notebooks/`` are copied into ``docs/notebooks/`` at each build
and shown without being executed (the test suite executes them).
"""

from __future__ import annotations

import inspect
import logging
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
    "sphinx.ext.napoleon",  # the Google-style docstrings (Args:, Example:), as Kornia writes them
    "numpydoc",  # the numpydoc ones (Parameters / Returns / Examples sections), as SciPy writes them
    "myst_nb",  # MyST markdown pages and the notebooks
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
# .rst first: autosummary writes its generated pages with the first suffix
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# API reference: one page per public name, from the docstrings.
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"  # the numpydoc Parameters sections say the types
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
napoleon_numpy_docstring = False  # numpydoc's business
napoleon_custom_sections = ["Convention", "Regularisation"]

# Markdown and notebooks.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # tests/test_notebooks.py executes them

templates_path = ["_templates"]  # autosummary/class.rst: a class and its own members

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


# Docstring problems in files being rewritten elsewhere, known until they are fixed (then remove
# the entry): a warning whose location and message match one of these patterns is not reported.
# Every other warning fails ``sphinx-build -W``.
KNOWN_DOCSTRING_PROBLEMS: list[str] = []
_KNOWN = re.compile("|".join(KNOWN_DOCSTRING_PROBLEMS))


class _SkipKnownProblems(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _KNOWN.search(f"{getattr(record, 'location', None) or ''}: {record.getMessage()}")


# numpydoc reports docstring problems (an unknown section such as "Example") as Python
# warnings, which ``sphinx-build -W`` does not see: report them as Sphinx warnings.
_numpydoc_logger = sphinx_logging.getLogger("numpydoc")
_show_warning = warnings.showwarning


def _report_numpydoc(message, category, filename, lineno, file=None, line=None):
    if "numpydoc" in str(filename):
        _numpydoc_logger.warning(f"numpydoc: {message}")
    else:
        _show_warning(message, category, filename, lineno, file, line)


def _class_signature(app, what, name, obj, options, signature, return_annotation):
    """A class whose ``__init__`` takes ``(*args, **kwargs)`` (MONAI's adapters) shows the signature
    that ``inspect.signature`` gives (its ``__signature__``), without annotations (as elsewhere)."""
    if what != "class" or signature != "(*args, **kwargs)":
        return None
    try:
        real = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    empty = inspect.Parameter.empty
    real = real.replace(parameters=[p.replace(annotation=empty) for p in real.parameters.values()],
                        return_annotation=empty)
    return str(real), return_annotation


def setup(app):
    app.connect("source-read", _link_to_copies)
    app.connect("autodoc-process-signature", _class_signature)
    warnings.showwarning = _report_numpydoc
    warnings.simplefilter("always", UserWarning)  # every docstring's problem, not only the first
    for handler in logging.getLogger("sphinx").handlers:  # before Sphinx counts a warning
        if isinstance(handler, sphinx_logging.WarningStreamHandler):
            handler.filters.insert(0, _SkipKnownProblems())
