"""The euler_number kernel (csrc/cpu/euler.cpp, csrc/cuda/euler.cu) against scikit-image.

The CPU kernel and the CUDA launcher, run by the emulator in every order of
``test_cuda_emulation.ORDERS``, must equal ``skimage.measure.euler_number`` of each slice in 2-D
and 3-D, every connectivity scikit-image takes, on empty, full and random slices (sparse, half
and dense), rows of 1 to 97 voxels (one warp's 32 windows and more, a partial last chunk) and
batches whose slices share no window.
"""

from __future__ import annotations

import numpy as np
import pytest
import skimage.measure
import torch

from morphaug import _ops
from morphaug._ops import kernels as _native
from morphaug.measure import _euler

# test_cuda_emulation takes this module's cases (emulation_cases): the emulator's helpers come from test_cuda_emu_grey
from test_cuda_emu_grey import EMULATOR, NATIVE, ORDERS, WHY_NO_EMULATOR, WHY_NO_NATIVE, emulated

BUILT = NATIVE is not None and hasattr(torch.ops.morphaug, "euler_number")
pytestmark = [pytest.mark.skipif(not BUILT, reason=WHY_NO_NATIVE or "morphaug._C has no euler_number kernel"),
              pytest.mark.xdist_group("test_cuda_emulation")]
needs_emulator = pytest.mark.skipif(EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "euler_number"),
                                    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no euler_number kernel")


def masks(shape, seed: int) -> torch.Tensor:
    """Slices in turn empty, full, sparse (10 %), half and dense (90 %) foreground."""
    rng = np.random.default_rng(seed)
    slices = np.empty((shape[0] * shape[1], *shape[2:]), bool)
    for i in range(len(slices)):
        slices[i] = rng.random(shape[2:]) < [0.0, 1.0, 0.1, 0.5, 0.9][i % 5]
    return torch.from_numpy(slices.reshape(shape))


def reference(x: torch.Tensor, connectivity: int) -> np.ndarray:
    out = [skimage.measure.euler_number(x[b, c].numpy(), connectivity=connectivity) for b, c in np.ndindex(x.shape[:2])]
    return np.array(out, np.int64).reshape(x.shape[:2])


def kernel(x: torch.Tensor, connectivity: int) -> torch.Tensor:
    """The public function's result from the kernel's sums."""
    sums = _native.euler_number(x, _euler._CODES[x.ndim - 2, connectivity])
    return sums if x.ndim == 4 else torch.div(sums, 8, rounding_mode="trunc")


# shape, connectivity
CASES = {
    "2-D 8-connected": ((2, 3, 17, 23), 2),
    "2-D 4-connected, rows across warps": ((1, 5, 9, 97), 1),
    "2-D one column": ((1, 5, 40, 1), 2),
    "2-D one row of 32": ((1, 5, 1, 32), 1),
    "3-D 26-connected": ((2, 3, 7, 9, 33), 3),
    "3-D 6-connected": ((1, 5, 6, 8, 31), 1),
    "3-D one plane": ((1, 5, 1, 12, 65), 3),
    "3-D thin": ((2, 5, 9, 1, 3), 1),
}


def case(name: str):
    """``(call(device), reference())`` as tests/test_cuda_emulation.py's CASES take them."""
    shape, connectivity = CASES[name]
    x = masks(shape, sum(map(ord, name)))
    return lambda device: kernel(x.to(device), connectivity), lambda: [(reference(x, connectivity), True)]


def emulation_cases() -> dict:
    return {f"euler_number {name}": case(name) for name in CASES} if BUILT else {}


@pytest.mark.parametrize("name", list(CASES))
def test_cpu_kernel_matches_skimage(name):
    shape, connectivity = CASES[name]
    x = masks(shape, sum(map(ord, name)))
    got = kernel(x, connectivity)
    assert got.dtype == torch.int64 and got.shape == x.shape[:2]
    assert np.array_equal(got.numpy(), reference(x, connectivity))


@needs_emulator
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("order, seed", ORDERS)
def test_cuda_launcher_matches_the_cpu_kernel_and_skimage(name, order, seed):
    shape, connectivity = CASES[name]
    x = masks(shape, sum(map(ord, name)))
    with emulated(order, seed):
        got = kernel(x, connectivity)
    assert torch.equal(got, kernel(x, connectivity))
    assert np.array_equal(got.numpy(), reference(x, connectivity))


@pytest.mark.parametrize("shape", [(0, 1, 4, 5), (2, 0, 3, 4, 5), (1, 2, 0, 4, 5), (1, 1, 3, 0, 5), (2, 1, 4, 0)])
def test_empty_slices_count_zero(shape):
    x = torch.ones(shape, dtype=torch.bool)
    connectivity = len(shape) - 2
    assert torch.equal(kernel(x, connectivity), torch.zeros(shape[:2], dtype=torch.int64))
    if EMULATOR is not None and hasattr(torch.ops.morphaug_emu, "euler_number"):
        with emulated():
            assert torch.equal(kernel(x, connectivity), torch.zeros(shape[:2], dtype=torch.int64))


def test_measure_euler_number_takes_the_kernel(monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    x = torch.rand(2, 1, 5, 6, 7) > 0.5
    assert _ops.use_native("euler_number", x)
    calls = []
    monkeypatch.setattr(_native, "euler_number", lambda *a: calls.append(a) or torch.full((2, 1), 17))
    from morphaug.measure import euler_number
    assert euler_number(x.double(), 1).flatten().tolist() == [2, 2]  # the kernel's sums, divided by 8
    assert len(calls) == 1 and calls[0][0].dtype == torch.bool and len(calls[0][1]) == 256


def test_the_kernel_checks_its_arguments():
    x = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="table of 16"):
        torch.ops.morphaug.euler_number(x, [0] * 256)
    with pytest.raises(RuntimeError, match="2 or 3 spatial axes"):
        torch.ops.morphaug.euler_number(x[..., 0], [0] * 16)
    with pytest.raises(RuntimeError, match="bool"):
        torch.ops.morphaug.euler_number(x.int(), [0] * 16)
    with pytest.raises(RuntimeError, match="int8"):
        torch.ops.morphaug.euler_number(x, [300] * 16)
