"""``morphaug.measure.label`` against ``skimage.measure.label``, slice by slice: identical labels,
numbering and counts, every value of a multi-value map labelled at once.

Runs on the torch backend, on the automatic choice (bool maps take ``ndimage.label``'s native
kernel there, other maps the native ``label_values`` kernel) and with CUDA emulated.
"""

from __future__ import annotations

import numpy as np
import pytest
import skimage.measure
import torch
from conftest import assert_parity, each_slice

from morphaug.measure import label

pytestmark = pytest.mark.usefixtures("backend")

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.uint16, torch.int32, torch.uint32,
          torch.int64, torch.uint64]


def reference(a: np.ndarray, **kwargs):
    labels, num = skimage.measure.label(a, return_num=True, **kwargs)
    return labels, np.int64(num)


def check(x: torch.Tensor, **kwargs):
    before = x.clone()
    labels, num = label(x, return_num=True, **kwargs)
    assert torch.equal(x, before)
    assert num.dtype == torch.int64 and num.shape == x.shape[:2] and labels.device == x.device
    assert_parity((labels, num), each_slice(reference, x, **kwargs), exact=True, dtype="expected")
    return labels, num


def random_map(rng, shape, values: int, dtype: torch.dtype, fill: float) -> torch.Tensor:
    """A map of ``values`` values (with gaps and, for signed dtypes, negatives) over a background of
    about ``1 - fill``."""
    levels = rng.integers(0, values, size=shape) * 3 + 1
    if dtype.is_signed:
        levels -= 2 * values
    x = np.where(rng.random(shape) < fill, levels, 0)
    if dtype == torch.bool:
        return torch.from_numpy(x != 0)
    return torch.from_numpy(x.astype(np.int64)).to(dtype)


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_random_maps_match_skimage(rank):
    rng = np.random.default_rng(rank)
    for trial in range(40):
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 3)), *rng.integers(1, 9 - rank, size=rank).tolist())
        dtype = DTYPES[trial % len(DTYPES)]
        x = random_map(rng, shape, int(rng.integers(1, 6)), dtype, float(rng.choice([0.0, 0.4, 0.8, 1.0])))
        background = [None, 0, 1, -5][trial % 4] if dtype.is_signed or dtype == torch.bool else [None, 1][trial % 2]
        check(x, connectivity=int(rng.integers(1, rank + 1)), background=background)


@pytest.mark.parametrize("shape", [(2, 1, 1, 7, 3), (2, 2, 7, 1, 4), (1, 2, 5, 6, 1), (2, 1, 6, 1), (1, 1, 1, 5)])
def test_size_one_axes_follow_skimage_s_numbering(shape):
    """skimage swaps a size-1 axis after a longer one before numbering."""
    x = random_map(np.random.default_rng(0), shape, 4, torch.int64, 0.7)
    check(x)
    check(x, connectivity=1)


def test_empty_full_and_blobs():
    rng = np.random.default_rng(3)
    x = torch.zeros(3, 1, 24, 24, dtype=torch.int32)
    x[1] = 7  # one value everywhere
    x[2, 0, 3:20, 4:9], x[2, 0, 10:22, 6:18], x[2, 0, 0, :] = 2, 5, 2
    check(x)
    check(x, background=7, connectivity=1)
    spiral = torch.from_numpy(rng.integers(1, 3, size=(1, 1, 40, 40)))
    check(spiral)
    check(torch.zeros(0, 2, 4, 4, dtype=torch.int64))


def test_wide_value_ranges():
    """Values far apart, of every width."""
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.choice([0, -(10**15), 7, 2**62, 3], size=(2, 2, 9, 8)))
    check(x)
    check(x.view(torch.uint64), connectivity=1)


def test_default_returns_labels_only_and_dtypes():
    x = torch.tensor([[[[1, 1, 2], [0, 2, 2], [3, 0, 1]]]], dtype=torch.uint8)
    labels = label(x)
    assert labels.dtype == torch.int64
    assert label(x != 0).dtype == torch.int32  # skimage's bool path: scipy's int32


def test_compiles_without_a_graph_break():
    x = random_map(np.random.default_rng(6), (2, 1, 7, 8), 3, torch.int16, 0.7)
    call = torch.compile(lambda x: label(x, background=1, return_num=True, connectivity=1), fullgraph=True,
                         backend="eager")
    assert_parity(call(x), label(x, background=1, return_num=True, connectivity=1), exact=True, dtype="expected")
    assert torch.equal(torch.compile(label, fullgraph=True, backend="eager")(x != 0), label(x != 0))


def test_bad_arguments():
    x = torch.zeros(1, 1, 4, 4, dtype=torch.int64)
    with pytest.raises(TypeError, match="label_image"):
        label(x.float())
    with pytest.raises(TypeError, match="label_image"):
        label(x.numpy())
    with pytest.raises(ValueError, match="label_image"):
        label(torch.zeros(3, 3, dtype=torch.int64))
    for connectivity in (0, 3):
        with pytest.raises(ValueError, match="connectivity"):
            label(x, connectivity=connectivity)
    with pytest.raises(TypeError, match="connectivity"):
        label(x, connectivity=1.5)
    with pytest.raises(TypeError, match="background"):
        label(x, background=0.5)


def test_large_maps_cross_the_chunks():
    """Slices cut into chunks on the CPU (merged across them), long runs and runs of one voxel."""
    rng = np.random.default_rng(8)
    blobs = torch.from_numpy(np.repeat(rng.integers(0, 4, size=(1, 1, 75, 20)), 20, axis=-1).repeat(4, axis=-2))
    check(blobs.to(torch.int16))
    check(blobs.to(torch.int16), connectivity=1, background=2)
    check(random_map(rng, (1, 1, 300, 250), 3, torch.int32, 0.9), connectivity=1)


def _smooth_map(rng, shape, values: int) -> torch.Tensor:
    """A map of ``values`` values varying every few voxels (runs of 2-3 voxels along rows)."""
    coarse = torch.from_numpy(rng.random((1, 1, *[max(2, n // 4) for n in shape[2:]])))
    smooth = torch.nn.functional.interpolate(coarse, size=shape[2:], mode="trilinear" if len(shape) == 5
                                             else "bilinear")
    return (smooth * values).long().clamp(0, values - 1).expand(shape).contiguous()


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("row", [63, 64, 65, 130])
def test_short_runs_across_words_chunks_and_threads(row, threads):
    """Maps of short runs (the run scan's value rows, found 64 voxels at a time) on rows across the
    64-voxel words, in slices cut into several chunks when threads outnumber the slices."""
    rng = np.random.default_rng(row)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        x = _smooth_map(rng, (1, 1, 24, 70, row), 6)  # over 3 chunks of 2^15 voxels
        x[0, 0, 4:20, 30, 20:40] = 5  # a slab of one value crosses the chunks
        for kwargs in ({}, {"connectivity": 1}, {"connectivity": 2, "background": 3}, {"background": -1}):
            check(x, **kwargs)
        check(_smooth_map(rng, (2, 1, 160, row), 5).to(torch.uint8), background=1)
        check(_smooth_map(rng, (1, 2, 160, row), 4).to(torch.int16).flatten(2), connectivity=1)  # long rows
    finally:
        torch.set_num_threads(before)
