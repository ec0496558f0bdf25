"""What scikit-image's tests need beyond their own files: morphaug's functions in scikit-image's
modules (``_facade``), on every backend of ``tests/conftest.py``'s ``backend`` fixture (torch, the
automatic choice, the emulated CUDA launchers; the torch leg of ``make test`` runs the first)."""

from __future__ import annotations

import pytest
import skimage.measure._regionprops
import skimage.segmentation.boundaries

from . import _facade


@pytest.fixture(autouse=True)
def morphaug_in_skimage(backend, monkeypatch):
    """scikit-image's own callers of the mirrored functions (``mark_boundaries``, ``regionprops``)
    reach morphaug's."""
    monkeypatch.setattr(skimage.segmentation.boundaries, "find_boundaries", _facade.find_boundaries)
    monkeypatch.setattr(skimage.measure._regionprops, "euler_number", _facade.euler_number)


#: Tests that fail for a documented difference (``measure.label``'s Notes), by ``Class::test``, with the reason.
KNOWN_DIFFERENCES = {
    "TestConnectedComponents3d::test_nd": (
        "a 4-D float image: scikit-image labels at most 3 axes (NotImplementedError); morphaug labels any "
        "number of axes and refuses float labels (a TypeError naming label_image)"),
}
#: Tests of scikit-image's private helpers, which morphaug does not have: not collected.
PRIVATE_HELPERS = {
    "TestSupport::test_reshape": "tests scikit-image's private _ccomp.reshape_array and undo_reshape_array",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "skimage_suite" not in item.path.parts:
            continue
        name = "::".join(part for part in item.nodeid.split("::")[1:]).split("[")[0]
        if name in KNOWN_DIFFERENCES:
            item.add_marker(pytest.mark.xfail(reason=KNOWN_DIFFERENCES[name], strict=True))
        if name in PRIVATE_HELPERS:
            item.add_marker(pytest.mark.skip(reason=PRIVATE_HELPERS[name]))
