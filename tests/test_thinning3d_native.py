"""The native CPU kernel of ``skeletonize(method="parallel")`` (``skeletonize_parallel``, csrc/cpu/thinning3d.cpp)
against the torch code that defines the method (``morphaug.morphology._parallel``), bit for bit: random
batches of blobs, tubes, noise, lines, border-touching shapes, empty and full slices, one-voxel shapes,
slices one plane deep and 2-D images."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_parity
from test_skeleton import KINDS, batch

from morphaug import _ops
from morphaug.metrics import betti_numbers
from morphaug.morphology import _parallel, skeletonize

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(not _ops.built_for("skeletonize_parallel", "cpu", emulate=False),
                                 reason="morphaug._C has no skeletonize_parallel kernel")]

CHANGES = _parallel.EULER_CHANGES.tolist()


def kernel_fixpoint(mask: torch.Tensor, rounds: int) -> torch.Tensor:
    """The kernel's calls of ``rounds`` rounds each until no slice changes."""
    still = torch.ones(mask.shape[:2], dtype=torch.bool, device=mask.device)
    while True:
        mask, still = _ops.kernels.skeletonize_parallel(mask, still, CHANGES, rounds)
        if not still.any():
            return mask


def one_voxel_shapes(shape, seed: int) -> torch.Tensor:
    """Single voxels, pairs, 2 x 2 x 2 cubes and one-voxel-thick plates and lines."""
    rng = np.random.default_rng(seed)
    slices = []
    for _ in range(4):
        x = np.zeros(shape, bool)
        for _ in range(rng.integers(1, 4)):
            at = tuple(int(rng.integers(0, n)) for n in shape)
            extent = tuple(int(rng.integers(1, 3)) if rng.random() < 0.5 else n for n in shape)
            x[tuple(slice(a, a + e) for a, e in zip(at, extent))] = True
        slices.append(x)
    return torch.from_numpy(np.array(slices).reshape(2, 2, *shape))


def inputs(shape, seed: int) -> list[torch.Tensor]:
    """A batch of every kind (slices at least two voxels wide) and one of one-voxel shapes."""
    return ([batch(KINDS, shape, seed)] if shape[-1] > 1 else []) + [one_voxel_shapes(shape, seed)]


def thinning3d_case(shape, seed, rounds=_parallel.CHUNK):
    """A case of test_cuda_emulation's CASES: the kernel's calls to the fixpoint against the torch code."""
    x = batch(KINDS, shape, seed)
    return (lambda device: kernel_fixpoint(x.to(device), rounds),
            lambda: [(_parallel._thin_torch(x).numpy(), True)])


SHAPES = [(14, 13, 15), (1, 9, 12), (6, 1, 7), (2, 2, 2), (24, 20, 22), (1, 1, 1), (3, 1, 1), (9, 31, 4)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(3))
def test_kernel_equals_the_torch_code(shape, seed):
    for x in inputs(shape, seed):
        before = x.clone()
        expected = _parallel._thin_torch(x)
        assert_parity(_ops.kernels.skeletonize_parallel(x, torch.ones(x.shape[:2], dtype=torch.bool), CHANGES, 0)[0],
                      expected, exact=True)
        assert_parity(kernel_fixpoint(x, 1), expected, exact=True, where="a round per call")
        assert torch.equal(x, before)


@pytest.mark.parametrize("shape", [(24, 31), (7, 5), (1, 9), (2, 2), (48, 40)])
@pytest.mark.parametrize("seed", range(3))
def test_2d_images_are_one_plane(shape, seed, native_policy):
    x = batch(KINDS, shape, seed)
    assert_parity(skeletonize(x, method="parallel"), _parallel._thin_torch(x[:, :, None])[:, :, 0], exact=True)


def test_public_call_runs_the_kernel(native_policy, monkeypatch):
    calls = []
    kernel = _ops.kernels.skeletonize_parallel
    monkeypatch.setattr(_ops.kernels, "skeletonize_parallel", lambda *args: calls.append(args[3]) or kernel(*args))
    x = batch(KINDS, (12, 11, 10), 5)
    assert_parity(skeletonize(x, method="parallel"), _parallel._thin_torch(x), exact=True)
    assert calls == [0]  # every slice to its fixpoint in one call


def test_topology_is_kept():
    x = batch(KINDS, (16, 18, 17), 11)
    skeleton = kernel_fixpoint(x, 0)
    assert torch.equal(betti_numbers(skeleton), betti_numbers(x))
    assert not (skeleton & ~x).any()


def test_rounds_and_active_slices():
    x = batch(KINDS, (13, 12, 14), 9)
    active = torch.tensor([[True, False]] * len(KINDS))
    torch_rounds = _parallel._thin_torch(x)
    out, still = _ops.kernels.skeletonize_parallel(x, active, CHANGES, 0)
    assert torch.equal(out[:, 1], x[:, 1]) and torch.equal(out[:, 0], torch_rounds[:, 0])
    assert not still.any()
    out, still = _ops.kernels.skeletonize_parallel(x, torch.ones_like(active), CHANGES, 1)
    changed = (out != x).flatten(2).any(-1)
    assert torch.equal(still, changed)  # one round: still where it deleted something
    again, _ = _ops.kernels.skeletonize_parallel(out, still, CHANGES, 0)
    assert torch.equal(again, torch_rounds)


def test_non_contiguous_batch_and_empty_shapes():
    x = batch(KINDS, (10, 9, 8), 3).transpose(0, 1)
    assert_parity(kernel_fixpoint(x, 0), _parallel._thin_torch(x.contiguous()), exact=True)
    for shape in [(0, 2, 4, 4, 4), (2, 1, 0, 3, 3)]:
        empty = torch.zeros(shape, dtype=torch.bool)
        out, still = _ops.kernels.skeletonize_parallel(empty, torch.ones(shape[:2], dtype=torch.bool), CHANGES, 0)
        assert out.shape == shape and still.shape == shape[:2] and not still.any()


def test_kernel_opcheck_and_checks():
    mask = batch(KINDS[:2], (5, 6, 7), 0)
    active = torch.ones(mask.shape[:2], dtype=torch.bool)
    torch.library.opcheck(torch.ops.morphaug.skeletonize_parallel.default, (mask, active, CHANGES, 0))
    with pytest.raises(RuntimeError, match="skeletonize_parallel"):
        _ops.kernels.skeletonize_parallel(mask.float(), active, CHANGES, 0)
    with pytest.raises(RuntimeError, match="expected \\(B, C, D, H, W\\)"):
        _ops.kernels.skeletonize_parallel(mask[..., 0], active, CHANGES, 0)
    with pytest.raises(RuntimeError, match="active"):
        _ops.kernels.skeletonize_parallel(mask, active[:1], CHANGES, 0)
    with pytest.raises(RuntimeError, match="128 euler_changes"):
        _ops.kernels.skeletonize_parallel(mask, active, CHANGES[:5], 0)
