"""The value_indices kernel (csrc/cpu/value_indices.cpp) against the torch path and SciPy.

Its counting sort must give the torch path's stable sort exactly (the same values, counts and
coordinates in SciPy's order) for every dtype it takes, negative values, ranges up to its limit,
batches cut into several chunks, and an ignored value inside or outside the range.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug import _ops, ndimage
from morphaug._ops import kernels as _native
from morphaug.ndimage import _positions

NATIVE, WHY_NO_NATIVE = _ops.load_native()
pytestmark = pytest.mark.skipif(NATIVE is None or not hasattr(torch.ops.morphaug, "value_indices"),
                                reason=WHY_NO_NATIVE or "morphaug._C has no value_indices kernel")

# shape, dtype, lowest value, highest value, ignored value
CASES = {
    "3-D int64 labels, background ignored": ((2, 1, 9, 10, 11), torch.int64, 0, 40, 0),
    "several chunks, int32": ((2, 3, 100, 230), torch.int32, -5, 60, None),
    "int8 full range": ((1, 2, 300), torch.int8, -128, 127, -128),
    "uint8, ignored outside": ((2, 2, 17, 19), torch.uint8, 3, 250, 1000),
    "int16 wide range": ((1, 1, 50, 60), torch.int16, -30000, 30000, 7),
    "one value": ((1, 1, 6, 7), torch.int64, 5, 5, None),
    "one value, ignored": ((1, 1, 6, 7), torch.int64, 5, 5, 5),
    "1-D, 4 axes": ((2, 1, 3, 4, 5, 6), torch.int32, 0, 3, None),
}


def values_of(name: str) -> torch.Tensor:
    shape, dtype, low, high, _ = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    return torch.from_numpy(rng.integers(low, high + 1, shape)).to(dtype)


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matches_the_stable_sort(name):
    values = values_of(name)
    ignore = CASES[name][4]
    before = values.clone()
    bounds = _positions._bounds(values)
    keys, counts, coords = _positions._grouped_native(values, bounds, ignore)
    assert torch.equal(values, before)
    want_keys, want_counts, want_coords = _positions._grouped_torch(values, bounds, ignore)
    keep = want_keys != ignore if ignore is not None else np.ones(len(want_keys), bool)
    assert np.array_equal(keys, want_keys[keep])
    assert counts == [n for n, k in zip(want_counts, keep) if k]
    pieces = [p for p, k in zip(want_coords.split(want_counts, dim=1), keep) if k]
    expected = torch.cat(pieces, 1) if pieces else want_coords[:, :0]
    assert coords.dtype == torch.int64 and torch.equal(coords, expected)


@pytest.mark.parametrize("name", ["3-D int64 labels, background ignored", "several chunks, int32"])
def test_value_indices_matches_scipy(name):
    values = values_of(name)
    ignore = CASES[name][4]
    ours = ndimage.value_indices(values, ignore_value=ignore)
    theirs = ndi.value_indices(values.numpy(), ignore_value=ignore)
    assert list(ours) == [int(k) for k in theirs]
    for key, where in theirs.items():
        assert all(np.array_equal(a.numpy(), b) for a, b in zip(ours[int(key)], where))


def test_value_indices_takes_the_kernel_within_its_range(monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    calls = []
    real = _native.value_indices
    monkeypatch.setattr(_native, "value_indices", lambda *a: calls.append(a[1:]) or real(*a))
    small = torch.tensor([[[3, -2, 3, 9]]])
    assert list(ndimage.value_indices(small, ignore_value=9)) == [-2, 3]
    wide = torch.tensor([[[0, 2**20]]])  # a range of 2^20 + 1 for 2 voxels: the sort
    assert list(ndimage.value_indices(wide)) == [0, 2**20]
    unsigned = torch.tensor([[[2**64 - 1, 5, 2**64 - 1]]], dtype=torch.uint64)  # its keys span 2^64: the sort
    assert list(ndimage.value_indices(unsigned, ignore_value=5)) == [2**64 - 1]
    near = torch.tensor([[[65000, 1, 65000]]], dtype=torch.uint16)  # keys -32768 + v: the kernel
    assert list(ndimage.value_indices(near, ignore_value=2**70)) == [1, 65000]
    assert calls == [(-2, 12, 9), (1 - 2**15, 65000, None)]


def test_the_kernel_checks_its_values():
    values = torch.tensor([[[1, 2, 7]]])
    with pytest.raises(RuntimeError, match="outside"):
        torch.ops.morphaug.value_indices(values, 1, 3, None)
    with pytest.raises(RuntimeError, match="span"):
        torch.ops.morphaug.value_indices(values, 1, 0, None)
    with pytest.raises(RuntimeError, match="int8, uint8"):
        torch.ops.morphaug.value_indices(values.to(torch.uint16), 1, 7, None)
