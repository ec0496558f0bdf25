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
