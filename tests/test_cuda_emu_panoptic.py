"""The panoptic_confusion kernel (csrc/cpu/panoptic.cpp, csrc/cuda/panoptic.cu) against the torch backend.

The torch backend of ``morphaug.metrics.panoptic_quality`` (sorted pairs, checked against MONAI in
tests/test_panoptic.py) is the reference: tp, fp and fn equal, the matched IoUs' sum equal to float32
rounding. The CPU kernel and the CUDA launcher, run by the emulator in every order of
``test_cuda_emulation.ORDERS``, must agree bit for bit (each sums its IoUs exactly, in units of 2**-24).
Cases: ranks 1 to 3, slices across the launcher's blocks and partial warps, every integer dtype, negative
and 64-bit ids, a distinct id per voxel (the tables' worst load), 8- and 16-bit ids filling the narrower
tables CUDA gives them, empty and identical slices, IoUs on
the threshold in float32.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from morphaug import _ops
from morphaug._ops import kernels as _native
from morphaug.measure import _matching
from morphaug.metrics import panoptic_quality

# test_cuda_emulation takes this module's cases (emulation_cases): the emulator's helpers come from test_cuda_emu_grey
from test_cuda_emu_grey import EMULATOR, NATIVE, ORDERS, WHY_NO_EMULATOR, WHY_NO_NATIVE, emulated

BUILT = NATIVE is not None and hasattr(torch.ops.morphaug, "panoptic_confusion")
pytestmark = [pytest.mark.skipif(not BUILT, reason=WHY_NO_NATIVE or "morphaug._C has no panoptic_confusion kernel"),
              pytest.mark.xdist_group("test_cuda_emulation")]
needs_emulator = pytest.mark.skipif(EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "panoptic_confusion"),
                                    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no panoptic_confusion kernel")


def blocks(shape, ids, seed, low=0, noise=0.2) -> torch.Tensor:
    """Instance maps of blocks of 3 voxels per side, ids in [low, ids), a share ``noise`` of voxels redrawn."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(low, ids, shape[:2] + tuple((s + 2) // 3 for s in shape[2:]))
    for axis, side in enumerate(shape[2:]):
        coarse = coarse.repeat(3, axis=2 + axis).take(np.arange(side), axis=2 + axis)
    redrawn = rng.random(shape) < noise
    return torch.from_numpy(np.where(redrawn, rng.integers(low, ids, shape), coarse))


def tiles(shape, side, seed, low=1, empty=0.2) -> torch.Tensor:
    """Instance maps of tiles ``side`` voxels wide, each its own id (in ``low`` onwards, shuffled), a share
    ``empty`` of them background."""
    rng = np.random.default_rng(seed)
    coarse_shape = shape[:2] + tuple((s + side - 1) // side for s in shape[2:])
    coarse = rng.permutation(int(np.prod(coarse_shape))).reshape(coarse_shape) + low
    coarse = np.where(coarse == 0, low - 1, coarse)  # 0 stays the background alone
    coarse = np.where(rng.random(coarse_shape) < empty, 0, coarse)
    for axis, n in enumerate(shape[2:]):
        coarse = coarse.repeat(side, axis=2 + axis).take(np.arange(n), axis=2 + axis)
    return torch.from_numpy(coarse)


def perturbed(x: torch.Tensor, share: float, seed: int) -> torch.Tensor:
    """x with a share of its voxels taking the id of a random voxel of their slice (0 included): IoUs
    spread around the thresholds."""
    rng = np.random.default_rng(seed)
    flat = x.flatten(2).numpy()
    picks = rng.integers(0, flat.shape[-1], flat.shape)
    other = np.take_along_axis(flat, picks, -1)
    return torch.from_numpy(np.where(rng.random(flat.shape) < share, other, flat).reshape(x.shape))


def shifted(x: torch.Tensor, by: int = 1) -> torch.Tensor:
    """x rolled along its last axis: instances that overlap x's by various IoUs."""
    return x.roll(by, dims=-1)


def distinct(shape, seed) -> torch.Tensor:
    """A different id per voxel (the background nowhere): every table as full as it gets."""
    n = int(np.prod(shape))
    return torch.from_numpy(np.random.default_rng(seed).permutation(n).reshape(shape) + 1)


def on_the_threshold() -> tuple[torch.Tensor, torch.Tensor]:
    """IoUs of exactly 3/5 (not above 0.6 in float32, but above 0.6 in float64) and 1/2."""
    pred = torch.zeros(1, 2, 10, dtype=torch.int64)
    ref = torch.zeros_like(pred)
    pred[0, 0, :5], ref[0, 0, 2:5] = 1, 1       # 3 / 5
    pred[0, 0, 5:9], ref[0, 0, 5:7] = 2, 2      # 2 / 4
    pred[0, 1, :3], ref[0, 1, :3] = 7, -7       # 1
    return pred, ref


# name: (pred, ref, threshold)
def _cases() -> dict:
    a = tiles((2, 3, 40), 3, 1)
    b = tiles((2, 2, 17, 23), 3, 2)
    c = tiles((1, 2, 9, 11, 13), 2, 3, low=-40, empty=0.1)
    long_row = tiles((1, 2, 5000), 7, 4)
    wide = tiles((2, 1, 11, 7), 2, 5).to(torch.int64) * (2**57 - 7)
    noisy = blocks((2, 2, 17, 23), 9, 6)
    u8 = tiles((1, 2, 40, 41), 2, 11, empty=0.0)  # ids 1 .. 420: every uint8 id, the id tables half full
    i16 = tiles((1, 1, 300, 300), 1, 12, low=-45000, empty=0.3)  # 90,000 voxels, more than 2 * 2^16 / 2
    empty = torch.zeros(2, 1, 6, 7, dtype=torch.int32)
    pred_t, ref_t = on_the_threshold()
    return {
        "1-D": (a, perturbed(a, 0.3, 1), 0.5),
        "1-D across blocks and warps": (long_row, perturbed(long_row, 0.25, 2), 0.5),
        "2-D": (b, perturbed(b, 0.3, 3), 0.5),
        "2-D, 0.7": (b, perturbed(b, 0.2, 4), 0.7),
        "2-D shifted": (b, shifted(b), 0.5),
        "2-D scattered ids": (noisy, perturbed(noisy, 0.1, 5), 0.5),
        "2-D int16": (b.to(torch.int16), perturbed(b, 0.3, 6).to(torch.int16), 0.5),
        "2-D uint8": ((b % 200).to(torch.uint8), perturbed(b % 200, 0.3, 7).to(torch.uint8), 0.55),
        "2-D uint8, every id": ((u8 % 256).to(torch.uint8), (perturbed(u8, 0.2, 13) % 256).to(torch.uint8), 0.5),
        "2-D int16, past the id tables": (i16.to(torch.int16), perturbed(i16, 0.2, 14).to(torch.int16), 0.5),
        "2-D bool": (b.bool(), perturbed(b, 0.3, 8).bool(), 0.5),
        "2-D 64-bit ids": (wide, perturbed(wide, 0.3, 9), 0.5),
        "2-D uint32": (b.to(torch.uint32), perturbed(b, 0.3, 10).to(torch.uint32), 0.6),
        "3-D negative ids": (c, perturbed(c, 0.3, 11), 0.5),
        "3-D threshold 1": (c, c.clone(), 1.0),
        "3-D perturbed, 0.9": (c, perturbed(c, 0.05, 12), 0.9),
        "distinct ids": (distinct((2, 2, 30, 31), 7), distinct((2, 2, 30, 31), 8), 0.5),
        "distinct against tiles": (distinct((1, 2, 40, 41), 9), tiles((1, 2, 40, 41), 1, 10, empty=0.5), 0.5),
        "empty slices": (empty, empty.clone(), 0.5),
        "one side empty": (b.to(torch.int32), torch.zeros_like(b, dtype=torch.int32), 0.5),
        "on the threshold 0.6": (pred_t, ref_t, 0.6),
        "on the threshold 0.5": (pred_t, ref_t, 0.5),
        "no voxels": (torch.zeros(2, 3, 0, dtype=torch.int64), torch.zeros(2, 3, 0, dtype=torch.int64), 0.5),
    }


CASES = _cases() if BUILT else {}


def torch_backend(pred, ref, threshold) -> torch.Tensor:
    return _matching._confusion_batch(pred, ref, threshold)


def assert_matches_torch(got: torch.Tensor, pred, ref, threshold):
    want = torch_backend(pred, ref, threshold)
    assert got.shape == want.shape and got.dtype == torch.float32
    assert torch.equal(got[..., :3], want[..., :3])
    torch.testing.assert_close(got[..., 3], want[..., 3], rtol=1e-6, atol=0)


def case(name: str):
    """``(call(device), reference())`` as tests/test_cuda_emulation.py's CASES take them."""
    pred, ref, threshold = CASES[name]
    return (lambda device: _native.panoptic_confusion(pred.to(device), ref.to(device), threshold),
            lambda: [(torch_backend(pred, ref, threshold).numpy(), False)])


def emulation_cases() -> dict:
    return {f"panoptic_confusion {name}": case(name) for name in CASES}


@pytest.mark.parametrize("name", list(CASES))
def test_cpu_kernel_matches_the_torch_backend(name):
    pred, ref, threshold = CASES[name]
    before = pred.clone(), ref.clone()
    assert_matches_torch(_native.panoptic_confusion(pred, ref, threshold), pred, ref, threshold)
    assert torch.equal(pred, before[0]) and torch.equal(ref, before[1])


def test_iou_exactly_on_the_threshold_is_not_a_match():
    pred, ref, _ = CASES["on the threshold 0.6"]
    got = _native.panoptic_confusion(pred, ref, 0.6)
    assert got[0, 0].tolist() == [0.0, 2.0, 2.0, 0.0] and got[0, 1].tolist() == [1.0, 0.0, 0.0, 1.0]
    got = _native.panoptic_confusion(pred, ref, 0.5)  # 3/5 matches, 2/4 does not
    assert got[0, 0].tolist() == [1.0, 1.0, 1.0, 0.6000000238418579]


def test_the_sum_is_exact_then_rounded():
    """Many matched IoUs of 2/3: float32's running sum drifts, the kernel's does not."""
    pred = torch.zeros(1, 1, 3 * 5000, dtype=torch.int64)
    pred[0, 0] = torch.arange(1, 5001).repeat_interleave(3)
    ref = pred.clone()
    ref[0, 0, 2::3] = 0  # every instance overlaps its reference by 2 of 3 voxels
    got = _native.panoptic_confusion(pred, ref, 0.5)[0, 0]
    iou = np.float32(2) / np.float32(3)
    assert got[:3].tolist() == [5000.0, 0.0, 0.0]
    assert got[3].item() == np.float32(5000 * np.float64(iou))


@needs_emulator
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("order, seed", ORDERS)
def test_cuda_launcher_matches_the_cpu_kernel(name, order, seed):
    pred, ref, threshold = CASES[name]
    before = pred.clone(), ref.clone()
    with emulated(order, seed):
        got = _native.panoptic_confusion(pred, ref, threshold)
    assert torch.equal(got, _native.panoptic_confusion(pred, ref, threshold))
    assert torch.equal(pred, before[0]) and torch.equal(ref, before[1])


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.3])
def test_panoptic_quality_takes_the_kernel_from_half_up(threshold, monkeypatch):
    """From 0.5 up panoptic_quality runs the kernel; below, MONAI's assignment on the torch backend."""
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    pred, ref, _ = CASES["2-D"]
    calls = []
    kernel = _native.panoptic_confusion
    monkeypatch.setattr(_native, "panoptic_confusion", lambda *args: calls.append(args) or kernel(*args))
    got = panoptic_quality(pred, ref, match_iou_threshold=threshold, output_confusion_matrix=True)
    assert len(calls) == (threshold >= 0.5)
    assert_matches_torch(got, pred, ref, threshold)


def test_mixed_dtypes_compare_as_int64():
    pred, ref, _ = CASES["2-D"]
    got = panoptic_quality(pred.to(torch.int16), ref.to(torch.uint8), output_confusion_matrix=True)
    assert torch.equal(got, panoptic_quality(pred, ref, output_confusion_matrix=True))


@pytest.mark.parametrize("pred, ref, threshold, match", [
    (torch.zeros(1, 1, 4, dtype=torch.int32), torch.zeros(1, 1, 4, dtype=torch.int64), 0.5, "one shape, dtype"),
    (torch.zeros(1, 1, 4, dtype=torch.int32), torch.zeros(1, 1, 5, dtype=torch.int32), 0.5, "one shape, dtype"),
    (torch.zeros(1, 1, 4), torch.zeros(1, 1, 4), 0.5, "bool or integer instance ids"),
    (torch.zeros(1, 1, 4, dtype=torch.int32), torch.zeros(1, 1, 4, dtype=torch.int32), 0.4, r"in \[0.5, 1\]"),
    (torch.zeros(1, 4, dtype=torch.int32), torch.zeros(1, 4, dtype=torch.int32), 0.5, "at least one spatial axis"),
])
def test_the_launcher_checks_its_arguments(pred, ref, threshold, match):
    with pytest.raises(RuntimeError, match=match):
        torch.ops.morphaug.panoptic_confusion(pred, ref, threshold)


def test_the_contract_row():
    kernel = _ops.KERNELS["panoptic_confusion"]
    assert kernel.fits((2**31 - 1,), None, "cpu") is None
    assert "2147483647" in kernel.fits((2**16, 2**15), None, "cuda")
