"""The CUDA launcher of thinning2d in the emulator (``morphaug._C_emu``), against scikit-image and the
CPU kernel: a launch per sub-iteration over the batch, tiles of 32 x 8, in every order of blocks and
threads the emulator offers; the public functions' chunked loop (a call per CHUNK iterations, the
deleted count read after each) as a CUDA tensor gets it."""

from __future__ import annotations

import numpy as np
import pytest
import skimage.morphology
import torch
from test_skeleton import KINDS, batch

from morphaug import _ops
from morphaug.morphology import _thinning, skeletonize, thin

NATIVE, WHY_NO_NATIVE = _ops.load_native()
EMULATOR, WHY_NO_EMULATOR = _ops.load_emulation()
pytestmark = [pytest.mark.skipif(NATIVE is None, reason=WHY_NO_NATIVE or ""),
              pytest.mark.skipif(EMULATOR is None, reason=WHY_NO_EMULATOR or ""),
              pytest.mark.xdist_group("test_cuda_emulation")]

KERNEL = "thinning2d.cu:thinning2d_kernel"
ORDERS = range(4)  # test_cuda_emulation.ORDERS
# rows and columns on both sides of a tile (8 x 32), one-pixel lines
SHAPES = [(1, 1), (1, 33), (9, 1), (8, 32), (9, 33), (7, 31), (17, 65)]


def skimage_thin(x: np.ndarray, algorithm: str, iterations: int | None) -> np.ndarray:
    if algorithm == "zhang":
        assert iterations is None
        return skimage.morphology.skeletonize(x)
    return skimage.morphology.thin(x, max_num_iter=iterations)


def masks(shape, seed) -> torch.Tensor:
    """The test_skeleton kinds (blobs, tubes, noise, lines, border, empty, full), and a slice of single
    pixels and 2 x 2 squares."""
    x = batch(KINDS, shape, seed).numpy() if shape[1] > 1 else np.zeros((0, 2, *shape), bool)  # (border: 2 columns)
    rng = np.random.default_rng(seed)
    dots = np.zeros((1, 2, *shape), bool)
    for _ in range(max(1, shape[0] * shape[1] // 16)):
        y, c = rng.integers(0, shape)
        dots[0, 0, y, c] = True
        dots[0, 1, y:y + 2, c:c + 2] = True
    return torch.from_numpy(np.concatenate([x, dots]))


def emulated(order: int):
    """test_cuda_emulation's emulation in its order ``order`` (imported here, as it imports this module)."""
    import test_cuda_emulation

    return test_cuda_emulation.emulated(*test_cuda_emulation.ORDERS[order])


def thinning_case(shape, algorithm, iterations, seed):
    """A direct call of the launcher, ``iterations`` iterations: (call, reference) for
    test_cuda_emulation's CASES. The deleted count's reference: the pixels of thin(k - 1) and
    thin(k) differ by the k-th iteration's deletions (0 in a slice already at its fixpoint)."""
    x = masks(shape, seed)
    flags = _thinning._FLAGS[algorithm]

    def count(k):
        return int(_thinning._thin_torch(x, algorithm, k).sum()) if k else int(x.sum())

    def reference():
        thinned = _thinning._thin_torch(x, algorithm, iterations).numpy()
        if algorithm == "guo_hall":
            expected = np.stack([[skimage_thin(s, algorithm, iterations) for s in b] for b in x.numpy()])
            assert np.array_equal(thinned, expected)
        return [(thinned, True), (np.array(count(iterations - 1) - count(iterations)), True)]

    return lambda device: _ops.kernels.thinning2d(x.to(device), flags, iterations), reference


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("algorithm", ["zhang", "guo_hall"])
@pytest.mark.parametrize("shape", SHAPES)
def test_launcher_matches_cpu_and_skimage(order, algorithm, shape):
    x = masks(shape, seed=shape[0] * 100 + shape[1])
    iterations = 3
    cpu = _ops.kernels.thinning2d(x, _thinning._FLAGS[algorithm], iterations)
    before = EMULATOR.launch_counts().get(KERNEL, (0, 0, 0))
    with emulated(order):
        got = _ops.kernels.thinning2d(x, _thinning._FLAGS[algorithm], iterations)
    launches, blocks, _ = EMULATOR.launch_counts()[KERNEL]
    assert launches - before[0] == 2 * iterations  # one launch per sub-iteration, the whole batch
    tiles = -(-shape[0] // 8) * -(-shape[1] // 32)
    assert blocks - before[1] == 2 * iterations * tiles * x.shape[0] * x.shape[1]
    assert torch.equal(got[0], cpu[0]) and int(got[1]) == int(cpu[1])
    if algorithm == "guo_hall":
        expected = np.stack([[skimage_thin(s, algorithm, iterations) for s in b] for b in x.numpy()])
        assert np.array_equal(got[0].numpy(), expected)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("shape", [(9, 33), (24, 40)])
def test_public_functions_converge_in_chunks(order, shape, native_policy):
    # the loop a CUDA tensor runs: CHUNK iterations a call, until the deleted count is 0
    x = masks(shape, seed=3)
    before = EMULATOR.launch_counts().get(KERNEL, (0, 0, 0))[0]
    with emulated(order):
        zhang = skeletonize(x)
        thinned = [thin(x, max_num_iter) for max_num_iter in (None, 5)]
    assert EMULATOR.launch_counts()[KERNEL][0] > before
    assert np.array_equal(zhang.numpy(), np.stack([[skimage_thin(s, "zhang", None) for s in b] for b in x.numpy()]))
    for got, max_num_iter in zip(thinned, (None, 5)):
        expected = np.stack([[skimage_thin(s, "guo_hall", max_num_iter) for s in b] for b in x.numpy()])
        assert np.array_equal(got.numpy(), expected)


def test_slices_at_their_fixpoint_keep_their_pixels():
    # a full slice, an empty one and a short bar that converge in a few iterations beside a large
    # square that takes many: the early slices are skipped later, their result kept
    x = torch.zeros(1, 4, 40, 40, dtype=torch.bool)
    x[0, 0] = True
    x[0, 2, 5:7, 3:30] = True
    x[0, 3, 2:38, 2:38] = True
    for algorithm in ("zhang", "guo_hall"):
        cpu = _ops.kernels.thinning2d(x, _thinning._FLAGS[algorithm], 30)
        for order in ORDERS:
            with emulated(order):
                got = _ops.kernels.thinning2d(x, _thinning._FLAGS[algorithm], 30)
            assert torch.equal(got[0], cpu[0]) and int(got[1]) == int(cpu[1]) == 0
