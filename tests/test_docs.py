"""The documentation: docstring examples run, and the docs pages cover the public API.

- Every ``>>>`` example in morphaug's docstrings runs as a doctest (``doctest``'s
  ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``), on the CPU, in both legs of the suite (native
  kernels and ``MORPHAUG_BACKEND=torch``): one test per module. A module whose framework is
  missing (the adapters) is skipped, naming it.
- Every name in a public module's ``__all__`` has an entry in ``docs/api.md`` (autosummary),
  so a new public function cannot miss the API reference.
- The docs pages' ``python`` blocks run as the README's do (``tests/test_readme.py``).

The HTML build itself (``sphinx-build -W``) is the Makefile's ``docs`` target, run by ``make test``.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import pytest
import torch

import morphaug

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# Modules that are not imported for their docstrings: entry points that run on import.
NOT_IMPORTED = {"morphaug.build.__main__"}
# The framework each adapter module needs.
FRAMEWORKS = {"morphaug.adapters.monai": "monai", "morphaug.adapters.monai_metrics": "monai",
              "morphaug.adapters.monai_handlers": "ignite",
              "morphaug.adapters.torchvision": "torchvision", "morphaug.adapters.kornia": "kornia",
              "morphaug.adapters.kornia.morphology": "kornia", "morphaug.adapters.kornia.contrib": "kornia"}


def _module_names() -> list[str]:
    names = ["morphaug"] + [info.name for info in pkgutil.walk_packages(morphaug.__path__, "morphaug.")]
    return sorted(name for name in names if name not in NOT_IMPORTED)


def _has_examples(name: str) -> bool:
    """Whether the module is Python source holding a doctest prompt (read without importing it)."""
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    return bool(origin) and origin.endswith(".py") and ">>> " in Path(origin).read_text(encoding="utf-8")


MODULES = [name for name in _module_names() if _has_examples(name)]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    if name in FRAMEWORKS:
        pytest.importorskip(FRAMEWORKS[name])
    module = importlib.import_module(name)
    tests = [test for test in doctest.DocTestFinder(exclude_empty=True).find(module, name) if test.examples]
    assert tests, f"{name} has '>>> ' in its source but no doctest was found"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    torch.manual_seed(0)
    for test in tests:
        runner.run(test, out=report.append)
    summary = runner.summarize(verbose=False)
    assert summary.failed == 0, "".join(report)


def test_modules_with_examples_are_found():
    # the discovery itself: a change of layout must not leave the test above with nothing to run
    assert {"morphaug.footprints", "morphaug.ndimage._binary", "morphaug.transforms._targets"} <= set(MODULES)


# ---------------------------------------------------------------------------------------------
# the API reference

PUBLIC_MODULES = ["morphaug", "morphaug.ndimage", "morphaug.morphology", "morphaug.measure", "morphaug.segmentation",
                  "morphaug.footprints", "morphaug.transforms", "morphaug.metrics", "morphaug.losses", "morphaug.ot",
                  "morphaug.adapters.monai", "morphaug.adapters.torchvision", "morphaug.adapters.kornia",
                  "morphaug.adapters.kornia.morphology", "morphaug.adapters.kornia.contrib"]


def _documented(api: str) -> dict[str, set[str]]:
    """{module: names} of the autosummary entries of docs/api.md, by the ``currentmodule`` above them."""
    documented: dict[str, set[str]] = {}
    for block in re.split(r"^\.\. currentmodule:: ", api, flags=re.MULTILINE)[1:]:
        module, _, rest = block.partition("\n")
        entries = rest.split(".. autosummary::", 1)[1].split("```", 1)[0] if ".. autosummary::" in rest else ""
        documented[module.strip()] = {line.strip() for line in entries.splitlines()
                                      if line.strip() and not line.strip().startswith(":")}
    return documented


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_api_reference_lists_every_public_name(name):
    if name in FRAMEWORKS:
        pytest.importorskip(FRAMEWORKS[name])
    module = importlib.import_module(name)
    names = {n for n in module.__all__ if not n.startswith("__")
             and not (isinstance(getattr(module, n), type(morphaug)))}  # submodules have their own section
    documented = _documented((DOCS / "api.md").read_text(encoding="utf-8")).get(name, set())
    assert names <= documented, f"docs/api.md lacks {sorted(names - documented)} under {name}"
    assert documented <= names | {n for n in dir(module) if not n.startswith("_")}, (
        f"docs/api.md lists {sorted(documented - names)} that {name} does not export")
