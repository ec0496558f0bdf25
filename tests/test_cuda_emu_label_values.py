"""The CUDA labelling of value maps (``label_values``: csrc/cuda/label.cu, label_tiles.cuh), run by the
emulator in every thread order it offers, against scikit-image's ``measure.label`` and the CPU kernel:
ranks 1 to 4, every integer dtype (negative values, wide unsigned values), every connectivity,
backgrounds present, absent or out of the dtype's range, empty / full / one-value slices, sizes across
the tiles (1024 voxels in 1-D, 32 wide otherwise) and the 256-voxel chunks, value patterns whose
components run through many tiles.
"""

from __future__ import annotations

import numpy as np
import pytest
import skimage.measure
import torch

from morphaug._ops import kernels as _native
from morphaug.measure import label
from morphaug.ndimage import generate_binary_structure

from test_cuda_emu_label import SHAPES, in_every_order, launches, serpentine
from test_cuda_emulation import EMULATOR, NATIVE, WHY_NO_EMULATOR, emulated

pytestmark = [pytest.mark.skipif(EMULATOR is None or NATIVE is None, reason=WHY_NO_EMULATOR or "no native build"),
              pytest.mark.usefixtures("native_policy")]

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.uint16, torch.int32, torch.uint32, torch.int64, torch.uint64]
# across the 1-D tile, the 32-wide tiles and the chunks, besides the label tests' shapes
WIDE = {1: [(2050,)], 2: [(70, 65)], 3: [(5, 66, 33)]}


def value_map(rng, shape, values: int, dtype: torch.dtype, fill: float) -> torch.Tensor:
    """``values`` values (negative ones for signed dtypes, the top of the range for wide unsigned
    ones) over a background of 0 on about ``1 - fill`` of the voxels."""
    info = torch.iinfo(dtype)
    levels = rng.integers(1, values + 1, size=shape)
    if dtype.is_signed:
        levels = levels - values // 2 - 1
    elif info.bits >= 32:
        levels = levels + (info.max - values if info.bits < 64 else 2**62)
    x = np.where(rng.random(shape) < fill, levels, 0)
    return torch.from_numpy(x.astype(np.int64)).to(dtype)


def skimage_labels(x: torch.Tensor, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    labels = np.zeros(x.shape, np.int64)
    counts = np.zeros(x.shape[:2], np.int64)
    for b, c in np.ndindex(x.shape[:2]):
        labels[b, c], counts[b, c] = skimage.measure.label(x[b, c].numpy(), return_num=True, **kwargs)
    return labels, counts


def check(x: torch.Tensor, **kwargs):
    """measure.label emulated in every order: scikit-image's labels and counts, and the CPU kernel's."""
    before = x.clone()
    expected = skimage_labels(x, **kwargs)
    cpu = tuple(t.numpy() for t in label(x, return_num=True, **kwargs))
    start = launches("label.cu:number_kernel")
    for got in in_every_order(lambda: label(x, return_num=True, **kwargs)):
        for g, e, c in zip(got, expected, cpu):
            np.testing.assert_array_equal(g, e)
            np.testing.assert_array_equal(g, c)
    assert launches("label.cu:number_kernel") > start or x.numel() == 0  # the emulated kernel ran
    assert torch.equal(x, before)


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_every_dtype_connectivity_and_background(rank):
    rng = np.random.default_rng(rank)
    trial = 0
    for connectivity in range(1, rank + 1):
        for spatial in SHAPES[rank] + WIDE[rank]:
            for fill in (0.0, 0.6, 1.0):
                dtype = DTYPES[trial % len(DTYPES)]
                x = value_map(rng, (2, 1, *spatial), int(rng.integers(1, 5)), dtype, fill)
                info = torch.iinfo(dtype)
                # none (0), a value present (x's first), absent, outside the dtype's range
                background = [None, int(x.flatten()[0]), 5 if info.bits > 8 else 100, info.min - 1][trial % 4]
                check(x, connectivity=connectivity, background=background)
                trial += 1


def test_one_value_and_empty_slices():
    x = torch.zeros(3, 2, 33, 40, dtype=torch.int16)
    x[0, 1] = -3  # one value everywhere
    x[1, 0, :, 20:] = 7
    x[2] = torch.arange(40, dtype=torch.int16) % 3  # stripes: every column its own component
    for connectivity in (1, 2):
        check(x, connectivity=connectivity)
        check(x, connectivity=connectivity, background=-3)
    check(torch.zeros(0, 2, 4, 4, dtype=torch.int64))


@pytest.mark.parametrize("pattern", ["serpentine", "checkerboard", "serpentine 3-D"])
def test_components_through_many_tiles(pattern):
    """Paths of one value through many tiles, next to paths of another value they must not join."""
    if pattern == "serpentine":
        path = serpentine((1, 2, 66, 97))
        path[0, 1] = path[0, 1, ::-1, ::-1]
        x = torch.from_numpy(np.where(path, 5, 9).astype(np.int32))  # the gaps: another value, not background
    elif pattern == "checkerboard":  # diagonals join equal values only with the full box
        x = torch.from_numpy((np.indices((70, 65)).sum(0) % 2 + 1).astype(np.uint8))[None, None]
    else:
        path = serpentine((1, 1, 3, 34, 40))
        path[0, 0, 1] = path[0, 0, 1, ::-1]
        x = torch.from_numpy(np.where(path, -1, 2).astype(np.int8))
    for connectivity in range(1, x.ndim - 1):
        check(x, connectivity=connectivity)


def test_rank_four_and_the_kernel_alone(monkeypatch):
    """4-D maps (scikit-image labels up to 3 axes): the emulated kernel equals the CPU kernel and the
    torch backend."""
    rng = np.random.default_rng(9)
    x = value_map(rng, (2, 2, 4, 3, 5, 6), 3, torch.int32, 0.7)
    structure = generate_binary_structure(4, 2).numpy()
    cpu = tuple(t.numpy() for t in _native.label_values(x, structure, 0))
    for got in in_every_order(lambda: _native.label_values(x, structure, 0)):
        for g, c in zip(got, cpu):
            np.testing.assert_array_equal(g, c)
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    for t, c in zip(label(x, return_num=True, connectivity=2), cpu):
        np.testing.assert_array_equal(t.numpy(), c)


def test_one_call_of_four_launches():
    """measure.label of a value map on CUDA: the labelling's four kernels, once each."""
    x = value_map(np.random.default_rng(4), (2, 3, 20, 70), 4, torch.uint8, 0.8)
    before = {name: count[0] for name, count in EMULATOR.launch_counts().items()}
    with emulated("forward", 0):
        label(x)
    ran = {name: count[0] - before.get(name, 0) for name, count in EMULATOR.launch_counts().items()
           if count[0] > before.get(name, 0)}
    assert ran == {f"label.cu:{kernel}": 1 for kernel in ("union_tiles_kernel", "merge_tiles_kernel",
                                                           "flatten_kernel", "number_kernel")}
