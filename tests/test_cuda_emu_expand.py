"""The expand_labels kernel (csrc/cpu/expand_labels.cpp, csrc/cuda/expand_labels.cu) against scikit-image.

The CPU kernel and the CUDA launcher, run by the emulator in every order of
``test_cuda_emulation.ORDERS``, must equal ``skimage.segmentation.expand_labels`` of each slice
exactly, ties included, on ranks 1 to 4, every label dtype, distances 0, fractional, 3 and inf,
unit, power-of-2 and other anisotropic spacings (the native EDT's features are SciPy's bit for
bit there), empty and full slices, and shapes that cross the launcher's blocks, the last pass's
tiles (64 lines) and chunks (32 elements), and int64 hulls.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import skimage.segmentation
import torch

from morphaug import _ops
from morphaug._ops import kernels as _native

# test_cuda_emulation takes this module's cases (emulation_cases): the emulator's helpers come from test_cuda_emu_grey
from test_cuda_emu_grey import EMULATOR, NATIVE, ORDERS, WHY_NO_EMULATOR, WHY_NO_NATIVE, emulated

BUILT = NATIVE is not None and hasattr(torch.ops.morphaug, "expand_labels")
pytestmark = [pytest.mark.skipif(not BUILT, reason=WHY_NO_NATIVE or "morphaug._C has no expand_labels kernel"),
              pytest.mark.xdist_group("test_cuda_emulation")]
needs_emulator = pytest.mark.skipif(EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "expand_labels"),
                                    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no expand_labels kernel")

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.uint16, torch.int32, torch.uint32,
          torch.int64, torch.uint64]


def labels(shape, density: float, dtype: torch.dtype, seed: int, mixed: bool = True) -> torch.Tensor:
    """Random labels (values up to 2**40 where the dtype holds them, negative ones where signed) at
    ``density``; with ``mixed`` the slices are in turn empty, full, one label in a corner, random."""
    rng = np.random.default_rng(seed)
    top = 1 if dtype == torch.bool else min(int(torch.iinfo(dtype).max), 2**40)
    values = rng.integers(1, top + 1, size=shape, dtype=np.int64)
    if dtype.is_signed:
        values *= rng.choice([-1, 1], size=shape)
    x = np.where(rng.random(shape) < density, values, 0)
    if mixed:
        for i, s in enumerate(x.reshape(-1, *shape[2:])):
            kind = i % 4
            if kind == 0:
                s[...] = 0
            elif kind == 1:
                s[...] = np.where(s == 0, 7, s)
            elif kind == 2:
                s[...] = 0
                s[(-1,) * s.ndim] = 5
    return torch.from_numpy(x).to(dtype) if dtype != torch.bool else torch.from_numpy(x != 0)


def differing(a: np.ndarray, b: np.ndarray) -> int:
    return max(a.size, b.size) if a.shape != b.shape else int((a != b).sum())


def reference(x: torch.Tensor, distance: float, spacing) -> np.ndarray:
    source = (x.to(torch.int64) if x.dtype == torch.uint64 else x).numpy()
    out = np.stack([skimage.segmentation.expand_labels(source[b, c], distance=distance, spacing=spacing)
                    for b, c in np.ndindex(x.shape[:2])]).reshape(x.shape)
    return out


def host(x: torch.Tensor) -> np.ndarray:
    return (x.to(torch.int64) if x.dtype == torch.uint64 else x).numpy()


# shape, density, dtype, distance, spacing
CASES = {
    "1-D, lines across blocks": ((3, 2, 300), 0.02, torch.int32, 3.0, [1.0]),
    "1-D sampled, inf": ((2, 2, 37), 0.05, torch.uint8, math.inf, [0.7]),
    "2-D, two tiles, partial chunks": ((1, 2, 33, 70), 0.01, torch.int64, 3.0, [1.0, 1.0]),
    "2-D, tiles of 64 lines": ((2, 1, 70, 40), 0.02, torch.int16, 2.5, [1.0, 1.0]),
    "2-D sampled": ((2, 2, 11, 9), 0.1, torch.uint16, 1.7, [1.5, 0.7]),
    "2-D distance 0": ((2, 2, 9, 12), 0.2, torch.bool, 0.0, [1.0, 1.0]),
    "2-D int64 hull": ((1, 1, 2, 1100), 0.002, torch.uint32, math.inf, [1.0, 1.0]),
    "3-D, distance 3": ((2, 2, 9, 33, 65), 0.002, torch.int32, 3.0, [1.0, 1.0, 1.0]),
    "3-D, inf": ((1, 4, 7, 10, 12), 0.01, torch.int8, math.inf, [1.0, 1.0, 1.0]),
    "3-D anisotropic": ((2, 2, 6, 5, 7), 0.05, torch.uint64, 2.2, [1.0, 0.7, 1.3]),
    "3-D anisotropic, inf": ((1, 2, 8, 6, 9), 0.02, torch.int64, math.inf, [2.0, 1.0, 0.5]),
    "4-D": ((1, 2, 4, 5, 3, 6), 0.05, torch.int32, 1.5, [1.0, 1.0, 1.0, 1.0]),
}


def case(name: str):
    """``(call(device), reference())`` as tests/test_cuda_emulation.py's CASES take them."""
    shape, density, dtype, distance, spacing = CASES[name]
    x = labels(shape, density, dtype, sum(map(ord, name)))

    def call(device):  # uint64 as int64 (the values fit), for NumPy
        out = _native.expand_labels(x.to(device), spacing, distance)
        return out.to(torch.int64) if out.dtype == torch.uint64 else out

    return call, lambda: [(reference(x, distance, spacing), True)]


def emulation_cases() -> dict:
    return {f"expand_labels {name}": case(name) for name in CASES} if BUILT else {}


@pytest.mark.parametrize("name", list(CASES))
def test_cpu_kernel_matches_skimage(name):
    shape, density, dtype, distance, spacing = CASES[name]
    x = labels(shape, density, dtype, sum(map(ord, name)))
    before = x.clone()
    got = _native.expand_labels(x, spacing, distance)
    assert torch.equal(x, before)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert differing(host(got), reference(x, distance, spacing)) == 0


@needs_emulator
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("order, seed", ORDERS)
def test_cuda_launcher_matches_the_cpu_kernel_and_skimage(name, order, seed):
    shape, density, dtype, distance, spacing = CASES[name]
    x = labels(shape, density, dtype, sum(map(ord, name)))
    before = x.clone()
    with emulated(order, seed):
        got = _native.expand_labels(x, spacing, distance)
    assert torch.equal(x, before)
    assert differing(host(got), host(_native.expand_labels(x, spacing, distance))) == 0
    assert differing(host(got), reference(x, distance, spacing)) == 0


@pytest.mark.parametrize("emulate", [False, True])
def test_random_calls_match_skimage(emulate, monkeypatch):
    """Random ranks 1 to 3, dtypes, densities, distances and spacings (any positive numbers)."""
    if emulate and (EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "expand_labels")):
        pytest.skip(WHY_NO_EMULATOR or "morphaug._C_emu has no expand_labels kernel")
    rng = np.random.default_rng(40 + emulate)
    for trial in range(60):
        rank = 1 + trial % 3
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 3)),
                 *rng.integers(1, [80, 24, 12][rank - 1], size=rank).tolist())
        dtype = DTYPES[trial % len(DTYPES)]
        x = labels(shape, float(rng.choice([0.005, 0.05, 0.3])), dtype, 1000 + trial, mixed=trial % 2 == 0)
        distance = float(rng.choice([0, 0.5, 1, math.sqrt(2), 2.9, 3, 5.5, math.inf]))
        spacing = [[1.0] * rank, rng.choice([0.5, 1.0, 2.0], size=rank).tolist(),
                   rng.uniform(0.3, 2.5, size=rank).tolist()][trial % 3]
        if emulate:
            EMULATOR.set_order(*ORDERS[trial % len(ORDERS)])
            monkeypatch.setenv("MORPHAUG_EMULATE_CUDA", "1")
        try:
            got = _native.expand_labels(x, spacing, distance)
        finally:
            monkeypatch.delenv("MORPHAUG_EMULATE_CUDA", raising=False)
            if emulate:
                EMULATOR.set_order("forward", 0)
        assert differing(host(got), reference(x, distance, spacing)) == 0, (shape, dtype, distance, spacing)


def test_segmentation_expand_labels_takes_the_kernel(monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    x = labels((2, 1, 6, 7), 0.1, torch.int64, 3)
    assert _ops.use_native("expand_labels", x)
    assert _ops.TABLES["segmentation.expand_labels"].cases[0].kernel == "expand_labels"
    calls = []
    monkeypatch.setattr(_native, "expand_labels", lambda *a: calls.append(a) or torch.zeros_like(x))
    from morphaug.segmentation import expand_labels
    expand_labels(x, 2, (1, 2))
    assert len(calls) == 1 and list(calls[0][1]) == [1.0, 2.0] and calls[0][2] == 2.0


def test_slices_too_large_for_int32_features_fall_through():
    assert _ops.KERNELS["expand_labels"].fits((2**16, 2**16)) is not None
    assert _ops.KERNELS["expand_labels"].fits((128, 128, 128)) is None
