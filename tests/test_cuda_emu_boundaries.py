"""The find_boundaries kernel (csrc/cpu/find_boundaries.cpp, csrc/cuda/find_boundaries.cu) against
scikit-image and the torch backend.

The CPU kernel and the CUDA launcher, run by the emulator in every order of
``test_cuda_emulation.ORDERS``, must equal ``skimage.segmentation.find_boundaries`` of each slice
(modes thick, inner, outer) on ranks 1 to 5, every label dtype and connectivity, backgrounds the
dtype holds or not, shapes that cross the launcher's blocks and the CPU's row segments (2048
voxels), and the values where SciPy's float64 store of 64-bit labels is not exact: int64 beyond
2**53 and up to 2**63 - 1, uint64's largest value. Where morphaug documents that it differs
(uint64 labels beyond 2**53, which it does not round) the torch backend is the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
import skimage.segmentation
import torch

from morphaug import _ops
from morphaug._ops import kernels as _native
from morphaug.segmentation import _boundaries

# test_cuda_emulation takes this module's cases (emulation_cases): the emulator's helpers come from test_cuda_emu_grey
from test_cuda_emu_grey import EMULATOR, NATIVE, ORDERS, WHY_NO_EMULATOR, WHY_NO_NATIVE, emulated

BUILT = NATIVE is not None and hasattr(torch.ops.morphaug, "find_boundaries")
pytestmark = [pytest.mark.skipif(not BUILT, reason=WHY_NO_NATIVE or "morphaug._C has no find_boundaries kernel"),
              pytest.mark.xdist_group("test_cuda_emulation")]
needs_emulator = pytest.mark.skipif(EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "find_boundaries"),
                                    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no find_boundaries kernel")

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.uint16, torch.int32, torch.uint32,
          torch.int64, torch.uint64]
MODES = ["thick", "inner", "outer"]


def labels(shape, dtype: torch.dtype, seed: int, extremes: bool = False) -> torch.Tensor:
    """Blobs of a few labels (negative ones where signed) over background 0, in runs along the
    last axis so that rows hold both; with ``extremes`` (64-bit) some labels are values SciPy's
    float64 store changes: int64 near 2**53 and 2**63, uint64's largest."""
    rng = np.random.default_rng(seed)
    if dtype == torch.bool:
        return torch.from_numpy(rng.random(shape) < 0.5)
    choices = [0, 0, 3, 6, 9]
    if dtype.is_signed:
        choices += [-3, -6]
    if extremes and dtype == torch.int64:
        choices += [2**53 + 1, 2**53 + 2, 2**62 + 1, 2**63 - 1, 2**63 - 300, 2**63 - 1100, -(2**63)]
    if extremes and dtype == torch.uint64:
        choices += [2**64 - 1, 2**64 - 1]
    picks = rng.integers(0, len(choices), size=shape)
    keep = rng.random(shape) < 0.7  # runs: a voxel often repeats the previous one along the last axis
    flat, keep_flat = picks.reshape(-1, shape[-1]), keep.reshape(-1, shape[-1])
    for i in range(1, shape[-1]):
        flat[:, i] = np.where(keep_flat[:, i], flat[:, i - 1], flat[:, i])
    values = np.array(choices, dtype=object)[picks]
    if dtype == torch.uint64:
        return torch.from_numpy(values.astype(np.uint64))
    return torch.from_numpy(values.astype(np.int64)).to(dtype)


def skimage_reference(x: torch.Tensor, connectivity: int, mode: str, background: int) -> np.ndarray:
    source = x.numpy()
    return np.stack([skimage.segmentation.find_boundaries(source[b, c], connectivity=connectivity, mode=mode,
                                                          background=background)
                     for b, c in np.ndindex(x.shape[:2])]).reshape(x.shape)


def torch_reference(x: torch.Tensor, connectivity: int, mode: str, background: int) -> torch.Tensor:
    return _boundaries._torch(x, connectivity, mode, background)


def kernel(x: torch.Tensor, connectivity: int, mode: str, background: int) -> torch.Tensor:
    return _native.find_boundaries(x, connectivity, mode, background)


# shape, dtype, connectivity, background, extremes (64-bit values SciPy's store changes)
CASES = {
    "1-D, rows across segments": ((2, 1, 4500), torch.int32, 1, 0, False),
    "1-D int64 extremes": ((3, 2, 40), torch.int64, 1, 0, True),
    "2-D cross": ((2, 2, 17, 23), torch.uint8, 1, 0, False),
    "2-D box, background 3": ((2, 1, 9, 300), torch.int16, 2, 3, False),
    "2-D uint64 largest": ((2, 2, 11, 13), torch.uint64, 2, 0, True),
    "2-D int64 extremes, cross": ((2, 2, 12, 10), torch.int64, 1, 0, True),
    "2-D int64 extremes, box": ((2, 2, 12, 10), torch.int64, 2, 0, True),
    "2-D background out of range": ((1, 2, 8, 9), torch.uint8, 2, -1, False),
    "3-D 6-connected": ((2, 1, 7, 9, 11), torch.int32, 1, 0, False),
    "3-D 18-connected, bool": ((1, 2, 6, 7, 8), torch.bool, 2, 0, False),
    "3-D 26-connected, int64 extremes": ((2, 1, 6, 7, 9), torch.int64, 3, 0, True),
    "3-D 18-connected, int64 extremes": ((1, 2, 5, 6, 7), torch.int64, 2, 0, True),
    "3-D box uint32, background 6": ((1, 2, 5, 6, 70), torch.uint32, 3, 6, False),
    "3-D slices across blocks": ((1, 1, 5, 12, 13), torch.int8, 3, -3, False),
    "4-D": ((1, 2, 3, 4, 5, 6), torch.uint16, 3, 0, False),
    "4-D int64 extremes": ((1, 1, 3, 4, 4, 5), torch.int64, 4, 0, True),
    "5-D": ((1, 1, 3, 3, 4, 3, 5), torch.int32, 2, 0, False),
}


def case(name: str, mode: str):
    """``(call(device), reference())`` as tests/test_cuda_emulation.py's CASES take them."""
    shape, dtype, connectivity, background, extremes = CASES[name]
    x = labels(shape, dtype, sum(map(ord, name)), extremes)
    return (lambda device: kernel(x.to(device), connectivity, mode, background),
            lambda: [(torch_reference(x, connectivity, mode, background).numpy(), True)])


def emulation_cases() -> dict:
    return {f"find_boundaries {name}, {mode}": case(name, mode) for name in CASES for mode in MODES} if BUILT else {}


def skimage_holds(x: torch.Tensor) -> bool:
    """Whether morphaug claims skimage's result for x: no uint64 label beyond 2**53 but the largest."""
    if x.dtype != torch.uint64:
        return True
    values = x.numpy()
    return bool(((values <= 2**53) | (values == np.uint64(2**64 - 1))).all())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_cpu_kernel_matches_skimage(name, mode):
    shape, dtype, connectivity, background, extremes = CASES[name]
    x = labels(shape, dtype, sum(map(ord, name)), extremes)
    before = x.clone()
    got = kernel(x, connectivity, mode, background)
    assert torch.equal(x, before)
    assert got.dtype == torch.bool and got.shape == x.shape
    assert torch.equal(got, torch_reference(x, connectivity, mode, background))
    if skimage_holds(x):
        assert np.array_equal(got.numpy(), skimage_reference(x, connectivity, mode, background))


@needs_emulator
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("order, seed", ORDERS)
def test_cuda_launcher_matches_the_cpu_kernel(name, mode, order, seed):
    shape, dtype, connectivity, background, extremes = CASES[name]
    x = labels(shape, dtype, sum(map(ord, name)), extremes)
    before = x.clone()
    with emulated(order, seed):
        got = kernel(x, connectivity, mode, background)
    assert torch.equal(x, before)
    assert torch.equal(got, kernel(x, connectivity, mode, background))


@pytest.mark.parametrize("emulate", [False, True])
def test_random_calls_match_skimage(emulate, monkeypatch):
    """Random ranks 1 to 3, dtypes, modes, connectivities and backgrounds, extremes in 64 bits."""
    if emulate and (EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "find_boundaries")):
        pytest.skip(WHY_NO_EMULATOR or "morphaug._C_emu has no find_boundaries kernel")
    rng = np.random.default_rng(37 + emulate)
    for trial in range(60):
        rank = 1 + trial % 3
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 3)),
                 *rng.integers(1, [60, 20, 9][rank - 1], size=rank).tolist())
        dtype = DTYPES[trial % len(DTYPES)]
        x = labels(shape, dtype, 500 + trial, extremes=trial % 2 == 0)
        connectivity = int(rng.integers(1, rank + 1))
        mode = MODES[trial % 3]
        background = int(rng.choice([0, 3, -3, 300]))
        if emulate:
            EMULATOR.set_order(*ORDERS[trial % len(ORDERS)])
            monkeypatch.setenv("MORPHAUG_EMULATE_CUDA", "1")
        try:
            got = kernel(x, connectivity, mode, background)
        finally:
            monkeypatch.delenv("MORPHAUG_EMULATE_CUDA", raising=False)
            if emulate:
                EMULATOR.set_order("forward", 0)
        where = (shape, dtype, connectivity, mode, background)
        assert torch.equal(got, torch_reference(x, connectivity, mode, background)), where
        if skimage_holds(x) and not (dtype == torch.bool and background not in (0, 1)):
            assert np.array_equal(got.numpy(), skimage_reference(x, connectivity, mode, background)), where


def test_segmentation_find_boundaries_takes_the_kernel(monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    x = labels((2, 1, 6, 7), torch.int64, 3)
    assert _ops.use_native("find_boundaries", x)
    assert _ops.TABLES["segmentation.find_boundaries"].cases[0].kernel == "find_boundaries"
    calls = []
    monkeypatch.setattr(_native, "find_boundaries", lambda *a: calls.append(a) or torch.zeros_like(x, dtype=torch.bool))
    from morphaug.segmentation import find_boundaries
    find_boundaries(x, 2, "outer", 3)
    find_boundaries(x, 1, "subpixel")  # block extremes in torch
    find_boundaries(x.to(torch.uint64), 1, "inner", 2**64 - 1)
    find_boundaries(x.to(torch.uint8), 1, "inner", 256)
    assert [a[1:] for a in calls] == [(2, "outer", 3), (1, "inner", 2**64 - 1), (1, "inner", 256)]
    # what the kernel then reads: uint64's upper half as its int64 bits, a background the dtype cannot hold none
    assert [_native._background_bits(dtype, value) for dtype, value in
            [(torch.int64, 3), (torch.uint64, 2**64 - 1), (torch.uint8, 256), (torch.bool, 1), (torch.bool, 2)]] \
        == [3, -1, None, 1, None]


def test_the_kernel_checks_its_arguments():
    x = torch.zeros(1, 1, 4, 4, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="connectivity"):
        torch.ops.morphaug.find_boundaries(x, 3, 0, 0)
    with pytest.raises(RuntimeError, match="mode"):
        torch.ops.morphaug.find_boundaries(x, 1, 3, 0)
    with pytest.raises(RuntimeError, match="integer"):
        torch.ops.morphaug.find_boundaries(x.float(), 1, 0, 0)
    assert _ops.KERNELS["find_boundaries"].fits((2**16, 2**16)) is not None
    assert _ops.why_not("find_boundaries", "cpu", torch.int64, 9) is not None
