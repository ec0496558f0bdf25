"""Contract tests shared by every morphaug.ndimage function: SciPy's names and
signatures, inputs never modified, batched results equal per-sample calls."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import scipy.ndimage as scipy_ndimage
import torch

import morphaug
from morphaug import ndimage

NAMES = [
    "binary_erosion", "binary_dilation", "binary_opening", "binary_closing",
    "binary_hit_or_miss", "binary_propagation", "binary_fill_holes", "grey_erosion",
    "grey_dilation", "grey_opening", "grey_closing", "morphological_gradient",
    "morphological_laplace", "white_tophat", "black_tophat", "distance_transform_edt",
    "distance_transform_cdt", "distance_transform_bf", "generate_binary_structure",
    "iterate_structure", "label", "sum_labels", "mean", "minimum", "maximum", "center_of_mass",
    "sum", "variance", "standard_deviation", "median", "extrema", "minimum_position", "maximum_position",
    "histogram", "labeled_comprehension", "value_indices", "watershed_ift", "find_objects",
]

# Each batched op with keyword arguments that exercise it on a (B, C, *spatial) input.
BATCHED_CALLS = [
    ("binary_erosion", {"iterations": 2}),
    ("binary_dilation", {"iterations": 2, "border_value": 1}),
    ("binary_opening", {}),
    ("binary_closing", {}),
    ("binary_hit_or_miss", {}),
    ("binary_propagation", {}),
    ("binary_fill_holes", {}),
    ("grey_erosion", {"size": 3}),
    ("grey_dilation", {"footprint": np.array([[1, 0, 1], [0, 1, 1]], bool)}),
    ("grey_opening", {"size": (2, 3), "mode": "wrap"}),
    ("grey_closing", {"size": 3, "mode": "mirror"}),
    ("morphological_gradient", {"size": 3}),
    ("morphological_laplace", {"size": 3, "mode": "nearest"}),
    ("white_tophat", {"size": 3}),
    ("black_tophat", {"size": 3, "mode": "constant", "cval": 0.5}),
    ("distance_transform_edt", {"return_indices": True}),
    ("distance_transform_cdt", {"metric": "taxicab", "return_indices": True}),
    ("distance_transform_bf", {}),
    ("label", {"structure": np.ones((3, 3))}),
]


def test_public_names():
    assert sorted(ndimage.__all__) == sorted(NAMES)
    for name in NAMES:
        assert callable(getattr(ndimage, name))


@pytest.mark.parametrize("name", NAMES)
def test_signature_matches_scipy(name):
    """Same parameter names, kinds and defaults as SciPy 1.17."""
    ours = inspect.signature(getattr(ndimage, name)).parameters
    theirs = inspect.signature(getattr(scipy_ndimage, name)).parameters
    assert list(ours) == list(theirs)
    for key, parameter in theirs.items():
        assert ours[key].kind == parameter.kind, key
        assert ours[key].default == parameter.default, key


@pytest.mark.parametrize("name", NAMES)
def test_docstring_references_scipy(name):
    doc = getattr(ndimage, name).__doc__ or ""
    assert f"scipy.ndimage.{name}" in doc
    assert "Example" in doc


def _batch(device, dtype=torch.float32):
    generator = torch.Generator().manual_seed(0)
    values = torch.rand(3, 2, 9, 11, generator=generator)
    if dtype == torch.bool:
        return (values > 0.4).to(device)
    return values.to(device=device, dtype=dtype)


def _as_list(result):
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("name,kwargs", BATCHED_CALLS, ids=[c[0] for c in BATCHED_CALLS])
def test_input_untouched_and_batched_equals_per_sample(name, kwargs, device):
    function = getattr(ndimage, name)
    dtype = torch.bool if name.startswith(("binary", "distance")) else torch.float32
    x = _batch(device, dtype)
    before = x.clone()
    version = x._version
    batched = _as_list(function(x, **kwargs))
    assert x._version == version
    assert torch.equal(x, before)
    for b in range(x.shape[0]):
        single = _as_list(function(x[b : b + 1], **kwargs))
        for whole, part in zip(batched, single):
            if whole.ndim == x.ndim + 1:  # indices: (S, B, C, *spatial)
                whole = whole[:, b : b + 1]
            else:
                whole = whole[b : b + 1]
            torch.testing.assert_close(whole, part, rtol=0, atol=0)


@pytest.mark.parametrize("name,kwargs", BATCHED_CALLS, ids=[c[0] for c in BATCHED_CALLS])
@pytest.mark.parametrize(
    "bad,error,match",
    [
        (np.zeros((2, 1, 4, 4)), TypeError, "input"),
        (torch.zeros(4, 4), ValueError, "input"),
        (torch.zeros(1, 1, 4, 4, dtype=torch.complex64), TypeError, "input"),
    ],
    ids=["numpy", "rank", "complex"],
)
def test_bad_input_is_named(name, kwargs, bad, error, match):
    with pytest.raises(error, match=match):
        getattr(ndimage, name)(bad, **kwargs)


def test_backend_info_reports_every_kernel():
    info = morphaug.backend_info(verbose=False)
    assert info["torch"] == torch.__version__
    assert set(info["kernels"]) >= {"edt", "cdt", "grey_box", "propagate", "ball_morphology"}
    for row in info["kernels"].values():
        assert {"used_by", "cpu", "cuda"} <= set(row)
        assert {row["cpu"], row["cuda"]} <= {"native", "torch", "unavailable (native forced)"}
