"""The CUDA launcher of ``skeletonize(method="parallel")`` (csrc/cuda/thinning3d.cu) in the emulator, in
several thread orders: equal to the native CPU kernel and to the torch code that defines the method, bit
for bit, topology kept, converged slices skipped, the rounds and the slices to thin as the CPU kernel
takes them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_cuda_emulation import EMULATOR, ORDERS, emulated, needs_emulator
from test_skeleton import KINDS, batch
from test_thinning3d_native import CHANGES, inputs, kernel_fixpoint

from morphaug import _ops
from morphaug.metrics import betti_numbers
from morphaug.morphology import _parallel, skeletonize

pytestmark = [needs_emulator, pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(not _ops.built_for("skeletonize_parallel", "cpu", emulate=False),
                                 reason="morphaug._C has no skeletonize_parallel kernel")]

KERNELS = ("pad_kernel", "mark_kernel", "delete_kernel", "unpad_kernel")


def launches() -> dict[str, int]:
    counts = EMULATOR.launch_counts()
    return {name: counts.get(f"thinning3d.cu:{name}", (0,))[0] for name in KERNELS}


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: f"{o[0]}{o[1]}")
@pytest.mark.parametrize("shape", [(11, 12, 13), (1, 9, 12), (5, 1, 7), (2, 2, 2), (1, 1, 1), (3, 2, 131)])
def test_emulated_kernel_equals_cpu_kernel_and_torch_code(order, shape):
    for seed in range(2):
        for x in inputs(shape, seed):
            before = x.clone()
            cpu = kernel_fixpoint(x, 0)
            assert torch.equal(cpu, _parallel._thin_torch(x))
            with emulated(*order):
                for rounds in (1, _parallel.CHUNK):
                    assert torch.equal(kernel_fixpoint(x, rounds), cpu), (order, shape, seed, rounds)
            assert torch.equal(x, before)


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: f"{o[0]}{o[1]}")
def test_rounds_still_and_active_as_the_cpu_kernel(order):
    x = batch(KINDS, (9, 10, 11), 4)
    active = torch.tensor([[True, False], [False, True]] * 3 + [[True, True]])
    for rounds in (1, 2, 3):
        cpu = _ops.kernels.skeletonize_parallel(x, active, CHANGES, rounds)
        with emulated(*order):
            got = _ops.kernels.skeletonize_parallel(x, active, CHANGES, rounds)
        assert torch.equal(got[0], cpu[0]) and torch.equal(got[1], cpu[1]), rounds


def test_public_call_reads_once_per_chunk_and_keeps_topology(monkeypatch, native_policy):
    reads = []
    monkeypatch.setattr(_parallel._sync, "host_read", lambda t, why: reads.append(why) or t.tolist())
    x = batch(KINDS, (14, 15, 13), 8)
    with emulated("forward", 0):
        before = launches()
        out = skeletonize(x, method="parallel")
        after = launches()
    calls = after["pad_kernel"] - before["pad_kernel"]
    assert reads == ["binary fixpoint"] * calls and calls >= 1
    assert torch.equal(out, _parallel._thin_torch(x))
    assert torch.equal(betti_numbers(out), betti_numbers(x))
    rounds = calls * _parallel.CHUNK
    assert after["mark_kernel"] - before["mark_kernel"] == rounds * 6  # one a direction
    assert after["delete_kernel"] - before["delete_kernel"] == rounds * 6 * 8  # one a subfield


def test_a_slice_at_its_fixpoint_stops():
    # a line is its own skeleton: its first round deletes nothing, its blocks return from then on
    x = np.zeros((2, 1, 12, 12, 40), bool)
    x[0, 0, 6, 6, 3:37] = True  # a line: its own skeleton
    x[1, 0, 2:10, 2:10, 2:38] = True
    x = torch.from_numpy(x)
    with emulated("forward", 0):
        out, still = _ops.kernels.skeletonize_parallel(x, torch.ones(2, 1, dtype=torch.bool), CHANGES, 3)
    cpu = _ops.kernels.skeletonize_parallel(x, torch.ones(2, 1, dtype=torch.bool), CHANGES, 3)
    assert torch.equal(out, cpu[0]) and torch.equal(still, cpu[1])
    assert torch.equal(out[0], x[0]) and not still[0, 0]
    assert torch.equal(kernel_fixpoint(out, 0), _parallel._thin_torch(x))


def test_rejects_what_the_cpu_kernel_rejects():
    mask = batch(KINDS[:2], (4, 5, 6), 0)
    active = torch.ones(mask.shape[:2], dtype=torch.bool)
    with emulated("forward", 0):
        with pytest.raises(RuntimeError, match="rounds must be at least 1"):
            _ops.kernels.skeletonize_parallel(mask, active, CHANGES, 0)
        with pytest.raises(RuntimeError, match="128 euler_changes"):
            _ops.kernels.skeletonize_parallel(mask, active, CHANGES[:3], 2)
        with pytest.raises(RuntimeError, match="active"):
            _ops.kernels.skeletonize_parallel(mask, active.int(), CHANGES, 2)
