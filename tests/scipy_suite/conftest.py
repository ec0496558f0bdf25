"""Runs SciPy's own ``scipy/ndimage/tests/test_morphology.py`` and ``test_measurements.py`` against morphaug.

``test_scipy_morphology.py`` and ``test_scipy_measurements.py`` load the installed SciPy test
modules with ``ndimage`` replaced by a facade over ``morphaug.ndimage``; this file gives
those tests what SciPy's own conftest gives them (the ``xp`` fixture, on
NumPy, and its markers), runs them on both backends and marks the known
differences.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy._lib._array_api import array_namespace

_HERE = Path(__file__).parent

#: Tests that fail for a documented difference, by test name, with the reason.
KNOWN_DIFFERENCES = {
    "test_distance_transform_cdt05": (
        "SciPy reads a metric array as bytes of booleans, so its result for a float64 "
        "metric (xp.ones((3, 3))) is meaningless; morphaug reads metric != 0 "
        "(distance_transform_cdt's Notes)"
    ),
}
_ZERO_D = (
    "0-d input: morphaug takes (B, C, *spatial) with at least one spatial axis (a "
    "ValueError naming input), SciPy a 0-d array as one voxel"
)
KNOWN_DIFFERENCES.update(dict.fromkeys([
    "test_binary_erosion01", "test_binary_erosion02", "test_binary_dilation01",
    "test_binary_dilation02", "test_binary_dilation36", "test_binary_propagation03",
    "test_distance_transform_edt5",
], _ZERO_D))


# test_measurements.py (test_scipy_measurements.py): its test names are not test_morphology.py's
KNOWN_DIFFERENCES.update(dict.fromkeys([
    "test_label01", "test_label02", "test_find_objects01", "test_find_objects02", "test_sum03",
], _ZERO_D))
KNOWN_DIFFERENCES.update(dict.fromkeys([
    "test_median_gh12836_bool", "test_median_no_int_overflow", "test_maximum_position07",
], "float labels: morphaug takes integer or bool labels (a TypeError naming labels, the Measurements "
   "convention of morphaug.ndimage); SciPy documents integer labels and also compares floats"))
KNOWN_DIFFERENCES.update(dict.fromkeys([
    "test_a", "test_b", "test_a_centered", "test_b_centered", "test_nonint_labels", "test_basic",
], "tests SciPy's private helpers ndimage._measurements._stats and _select, which morphaug does not "
   "have (the facade exposes public names only)"))


def pytest_configure(config):
    for name in ("skip_xp_backends", "xfail_xp_backends"):
        config.addinivalue_line("markers", f"{name}: SciPy's array API backend selection")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.parent != _HERE:
            continue
        # pytest re-parses SciPy's 3000-line module for each frame of a failure's
        # traceback (about 0.5 s per failure): Python's own format is instant.
        item.repr_failure = lambda excinfo: excinfo.getrepr(style="native")
        name = getattr(item, "originalname", item.name)
        if name in KNOWN_DIFFERENCES:
            item.add_marker(pytest.mark.xfail(reason=KNOWN_DIFFERENCES[name], strict=True))


@pytest.fixture(autouse=True, params=["auto", "torch"])
def morphaug_backend(request, monkeypatch):
    """Every SciPy test on the automatic backend choice, then on the torch backend."""
    monkeypatch.setenv("MORPHAUG_BACKEND", request.param)
    return request.param


@pytest.fixture
def xp():
    """SciPy's ``xp`` fixture on NumPy, the one backend the facade takes."""
    return array_namespace(np.empty(0))
