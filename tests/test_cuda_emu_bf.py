"""The distance_bf kernel (csrc/cpu/distance_bf.cpp, csrc/cuda/distance_bf.cu) against SciPy.

The CPU kernel and the CUDA launcher, run by the emulator in every order of
``test_cuda_emulation.ORDERS``, must equal ``scipy.ndimage.distance_transform_bf`` of each slice
bit for bit (float64 distances, float32 ones as SciPy's rounded, int32 ones as SciPy's uint32 bits,
indices) on ranks 1 to 6, every metric, with and without sampling (unit grids whose squared
distances take int32 or not, and the double arithmetic), for slices without background
or foreground, ties everywhere (lattices of background voxels), more candidates than a block
stages at once, and slices that cross the launcher's blocks.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug import _ops
from morphaug._ops import kernels as _native

# test_cuda_emulation takes this module's cases (emulation_cases): the emulator's helpers come from test_cuda_emu_grey
from test_cuda_emu_grey import EMULATOR, NATIVE, ORDERS, WHY_NO_EMULATOR, WHY_NO_NATIVE, emulated

BUILT = NATIVE is not None and hasattr(torch.ops.morphaug, "distance_bf")
pytestmark = [pytest.mark.skipif(not BUILT, reason=WHY_NO_NATIVE or "morphaug._C has no distance_bf kernel"),
              pytest.mark.xdist_group("test_cuda_emulation")]
needs_emulator = pytest.mark.skipif(EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "distance_bf"),
                                    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no distance_bf kernel")

METRICS = ["euclidean", "taxicab", "chessboard"]

# shape, background density (or a pattern), sampling (Euclidean only)
CASES = {
    "1-D across blocks": ((2, 1, 700), 0.01, None),
    "1-D no background": ((1, 2, 9), 0.0, None),
    "1-D all background": ((1, 1, 9), 1.0, None),
    "1-D squares beyond int32": ((1, 2, 50000), 0.0004, None),
    "2-D unit sampling": ((1, 2, 9, 10), 0.1, (1.0, 1.0)),
    "2-D sparse": ((2, 2, 13, 17), 0.05, (1.5, 0.5)),
    "2-D lattice ties": ((1, 2, 12, 12), "lattice", None),
    "2-D many candidates": ((1, 1, 40, 37), 0.4, (0.7, 1.3)),
    "2-D one slice empty": ((2, 1, 9, 11), "one empty", None),
    "3-D": ((2, 1, 7, 9, 11), 0.08, (2.0, 1.0, 0.5)),
    "3-D lattice ties": ((1, 1, 9, 9, 9), "lattice", None),
    "3-D slices across blocks": ((1, 2, 5, 12, 13), 0.02, None),
    "4-D": ((1, 2, 4, 5, 4, 6), 0.06, (1.0, 2.0, 1.0, 0.5)),
    "5-D": ((1, 1, 3, 4, 3, 4, 3), 0.05, None),
    "6-D": ((1, 1, 3, 3, 3, 3, 2, 3), 0.04, (1.0, 1.0, 2.0, 1.0, 1.0, 0.5)),
}


def mask_of(name: str) -> torch.Tensor:
    """True = foreground."""
    shape, density, _ = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    if density == "lattice":  # background every 4 voxels along each axis: many equidistant ones
        grids = np.meshgrid(*[np.arange(n) for n in shape[2:]], indexing="ij")
        background = np.logical_and.reduce([g % 4 == 1 for g in grids])
        return torch.from_numpy(np.broadcast_to(~background, shape).copy())
    if density == "one empty":
        x = rng.random(shape) >= 0.1
        x[0] = True
        return torch.from_numpy(x)
    return torch.from_numpy(rng.random(shape) >= density)


def scipy_reference(mask: torch.Tensor, metric: str, sampling, dtype: torch.dtype):
    """SciPy's distances (in the kernel's dtype, its uint32 as int32 bits) and indices (S, B, C, *S)."""
    x = mask.numpy()
    results = [ndi.distance_transform_bf(x[b, c], metric, sampling, return_indices=True)
               for b, c in np.ndindex(x.shape[:2])]
    distances = np.stack([d for d, _ in results]).reshape(x.shape)
    indices = np.stack([i for _, i in results], axis=1).reshape((x.ndim - 2, *x.shape))
    if metric == "euclidean":
        with np.errstate(over="ignore"):  # sqrt(DBL_MAX) is inf in float32
            distances = distances.astype(np.float32 if dtype == torch.float32 else np.float64)
    else:
        distances = distances.view(np.int32)
    return distances, indices


def arguments(name: str, metric: str, dtype: torch.dtype | None = None):
    sampling = CASES[name][2] if metric == "euclidean" else None
    if dtype is None:
        dtype = torch.float64 if metric == "euclidean" else torch.int32
    return mask_of(name), metric, sampling, dtype


def kernel(mask, metric, sampling, dtype, indices=True):
    return _native.distance_bf(mask, metric, sampling, indices, dtype)


def case(name: str, metric: str):
    """``(call(device), reference())`` as tests/test_cuda_emulation.py's CASES take them."""
    mask, metric, sampling, dtype = arguments(name, metric)

    def reference():
        distances, indices = scipy_reference(mask, metric, sampling, dtype)
        return [(distances, True), (indices, True)]

    return lambda device: kernel(mask.to(device), metric, sampling, dtype), reference


def emulation_cases() -> dict:
    return {f"distance_bf {name}, {metric}": case(name, metric) for name in CASES for metric in METRICS} if BUILT \
        else {}


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("name", list(CASES))
def test_cpu_kernel_matches_scipy(name, metric):
    mask, metric, sampling, dtype = arguments(name, metric)
    before = mask.clone()
    distances, indices = kernel(mask, metric, sampling, dtype)
    assert torch.equal(mask, before)
    expected_d, expected_i = scipy_reference(mask, metric, sampling, dtype)
    assert distances.dtype == dtype and np.array_equal(distances.numpy(), expected_d)
    assert indices.dtype == torch.int32 and np.array_equal(indices.numpy(), expected_i)


@pytest.mark.parametrize("name", ["2-D sparse", "3-D", "2-D one slice empty"])
def test_float32_distances_are_scipys_rounded(name):
    mask, metric, sampling, _ = arguments(name, "euclidean")
    distances, indices = kernel(mask, metric, sampling, torch.float32)
    expected_d, expected_i = scipy_reference(mask, metric, sampling, torch.float32)
    assert np.array_equal(distances.numpy(), expected_d) and np.array_equal(indices.numpy(), expected_i)
    alone, none = kernel(mask, metric, sampling, torch.float32, indices=False)
    assert torch.equal(alone, distances) and none is None


@needs_emulator
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("order, seed", ORDERS)
def test_cuda_launcher_matches_the_cpu_kernel(name, metric, order, seed):
    mask, metric, sampling, dtype = arguments(name, metric)
    before = mask.clone()
    with emulated(order, seed):
        got = kernel(mask, metric, sampling, dtype)
    assert torch.equal(mask, before)
    expected = kernel(mask, metric, sampling, dtype)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])


def test_distance_transform_bf_takes_the_kernel(monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    from morphaug.ndimage import distance_transform_bf
    x = torch.ones(2, 1, 5, 6)
    x[:, :, 2, 3] = 0
    assert _ops.use_native("distance_bf", x.bool())
    assert _ops.TABLES["distance_transform_bf"].cases[0].kernel == "distance_bf"
    calls = []
    real = _native.distance_bf
    monkeypatch.setattr(_native, "distance_bf", lambda *a: calls.append(a[1:]) or real(*a))
    distance_transform_bf(x, "Manhattan", (2.0, 3.0))
    distance_transform_bf(x, sampling=(2.0, 3.0), return_indices=True)
    distance_transform_bf(torch.ones(1, 1, *[2] * 7))  # 7 axes: the torch backend
    assert calls == [("taxicab", None, False, torch.int32), ("euclidean", (2.0, 3.0), True, torch.float32)]


def test_the_kernel_checks_its_arguments():
    x = torch.ones(1, 1, 4, 4, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="metric"):
        torch.ops.morphaug.distance_bf(x, 3, None, False, torch.int32)
    with pytest.raises(RuntimeError, match="float32 or float64"):
        torch.ops.morphaug.distance_bf(x, 0, None, False, torch.int32)
    with pytest.raises(RuntimeError, match="sampling"):
        torch.ops.morphaug.distance_bf(x, 1, [1.0, 1.0], False, torch.int32)
    with pytest.raises(RuntimeError, match="sampling"):
        torch.ops.morphaug.distance_bf(x, 0, [1.0], False, torch.float32)
    with pytest.raises(RuntimeError, match="bool mask"):
        torch.ops.morphaug.distance_bf(x.int(), 0, None, False, torch.float32)
    with pytest.raises(RuntimeError, match="at most 6"):
        torch.ops.morphaug.distance_bf(torch.ones(1, 1, *[2] * 7, dtype=torch.bool), 0, None, False, torch.float32)
