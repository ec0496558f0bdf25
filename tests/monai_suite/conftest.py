"""Runs MONAI's own tests of the post-processing transforms (and of the Hausdorff, surface-distance and
panoptic-quality metric classes) against ``morphaug.adapters.monai``.

The ``test_*.py`` files here are MONAI's (Project-MONAI/MONAI d388d1c, the snapshot at hand; the installed
1.6.1's code of these transforms differs from it only in LabelToContour's rank check), copied with one
change: the classes they test are imported from ``morphaug.adapters.monai`` instead of ``monai``
(``from monai.transforms import FillHoles`` -> ``from morphaug.adapters.monai import FillHoles``), and
MONAI's test helpers from :mod:`monai_suite.monai_test_utils` instead of ``tests.test_utils``.
The ``test_handler_*.py`` files (MONAI's tests of its ignite handlers ``HausdorffDistance``,
``SurfaceDistance`` and ``PanopticQuality``, from ``tests/handlers``) need pytorch-ignite and are not collected
without it. ``test_cldice_loss.py`` is MONAI 3ef4dbc's, which tests 1.6.1's ``SoftclDiceLoss`` (d388d1c's calls the
losses by the ``y_pred`` / ``y_true`` names that 1.6.1 no longer takes).
Everything else (``MetaTensor``, ``convert_to_dst_type``, ...) is MONAI's own. The tests run on the
backend ``MORPHAUG_BACKEND`` selects (CI runs the whole suite once with the automatic choice and once with
the torch backend); the known differences are marked here.

MONAI's tests are parametrised by the ``parameterized`` package; where it is not installed, a minimal
form of its ``parameterized.expand`` (the one use these tests make of it) stands in for it.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import re
import sys
import types
from pathlib import Path

import pytest

_HERE = Path(__file__).parent

try:
    import monai  # noqa: F401
except ImportError:  # the suite is MONAI's: nothing to run without it
    collect_ignore_glob = ["test_*.py"]
else:
    collect_ignore_glob = [] if importlib.util.find_spec("ignite") else ["test_handler_*.py"]  # MONAI's handlers

#: Tests that fail for a documented difference, by test id prefix, with the reason.
KNOWN_DIFFERENCES: dict[str, str] = {}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.parent != _HERE:
            continue
        reason = next((why for name, why in KNOWN_DIFFERENCES.items() if item.name.startswith(name)), None)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def _expand(cases, doc_func=None):
    """``parameterized.expand(cases)``: one test method per case in the calling class body, named as
    ``parameterized`` names them (``test_x_<index>`` and, when the case starts with a string, ``_<it>``);
    ``doc_func`` (the test's description) is accepted and not used."""

    def decorate(func):
        namespace = inspect.currentframe().f_back.f_locals
        for index, case in enumerate(cases):
            args = tuple(case) if isinstance(case, (list, tuple)) else (case,)
            suffix = f"_{re.sub('[^a-zA-Z0-9_]+', '_', args[0])}" if args and isinstance(args[0], str) else ""

            @functools.wraps(func)
            def method(self, _args=args):
                return func(self, *_args)

            method.__name__ = f"{func.__name__}_{index}{suffix}"
            namespace[method.__name__] = method
        func.__test__ = False
        return func

    return decorate


if importlib.util.find_spec("parameterized") is None:
    _shim = types.ModuleType("parameterized")
    _shim.parameterized = types.SimpleNamespace(expand=_expand)
    sys.modules["parameterized"] = _shim
