"""The EDT's CUDA launchers (csrc/cuda/edt.cu, signed_edt.cu), run by the emulator in every thread order.

Each case runs the launcher in the orders of ``test_cuda_emulation.ORDERS`` and must equal the CPU
kernel bit for bit (distances and indices) and SciPy's ``distance_transform_edt`` (distances within
1e-6 relative in float32, exact in float64; indices exact where ties cannot round differently).
The shapes cross the launcher's blocks (128 threads), warps, tiles of the last pass (64 lines)
and its chunks (32 elements), on ranks 1 to 4, with empty and full slices, the adversarial
volumes of scripts/gpu_check.py, and lines long enough for int64 hulls. signed_edt is checked the
same way, against the CPU kernel and its SciPy convention (``test_native.scipy_signed_edt``).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug import _ops
from morphaug._ops import kernels as _native

from test_native import scipy_signed_edt
from test_cuda_emulation import EMULATOR, NATIVE, ORDERS, WHY_NO_EMULATOR, WHY_NO_NATIVE, differing, emulated

pytestmark = [pytest.mark.skipif(NATIVE is None, reason=WHY_NO_NATIVE or ""),
              pytest.mark.skipif(EMULATOR is None, reason=WHY_NO_EMULATOR or ""),
              pytest.mark.xdist_group("test_cuda_emulation")]


def masks(shape, kind, seed):
    """(B, C, *spatial) bool: random at density 0.8, or every slice of one kind in turn."""
    rng = np.random.default_rng(seed)
    x = rng.random(shape) < 0.8
    if kind == "random":
        return x
    slices = x.reshape(-1, *shape[2:])
    for i, s in enumerate(slices):
        pick = ["empty", "full", "far", "random"][i % 4] if kind == "mixed" else kind
        if pick == "empty":
            s[...] = False
        elif pick == "full":
            s[...] = True
        elif pick == "far":  # one background voxel in a corner
            s[...] = True
            s[(0,) * s.ndim] = False
    return x


# shape, mask kind, sampling, indices, dtype, squared
CASES = {
    "1-D, lines across blocks": ((3, 2, 200), "mixed", None, True, torch.float32, False),
    "1-D sampled float64": ((2, 2, 37), "random", [0.7], True, torch.float64, False),
    "2-D, two tiles, partial chunks": ((1, 2, 33, 70), "random", None, True, torch.float32, False),
    "2-D, lanes across a block": ((1, 1, 5, 130), "random", None, True, torch.float32, True),
    "2-D sampled": ((2, 1, 11, 9), "mixed", [1.5, 0.7], True, torch.float32, False),
    "2-D empty and full slices": ((2, 2, 17, 40), "mixed", None, True, torch.float64, False),
    "2-D int64 hull": ((1, 1, 2, 1100), "random", None, True, torch.float32, True),
    "3-D": ((1, 1, 9, 33, 65), "random", None, True, torch.float32, False),
    "3-D sampled float64": ((2, 1, 6, 5, 7), "mixed", [2.0, 1.0, 0.5], True, torch.float64, False),
    "3-D sampled float32, no indices": ((1, 2, 7, 34, 9), "random", [1.0, 0.5, 2.0], False, torch.float32, False),
    "3-D int64 hull on a strided axis": ((1, 1, 1, 1100, 2), "random", None, True, torch.float64, True),
    "3-D far and full (gpu_check)": ((2, 1, 12, 12, 12), "far", None, True, torch.float32, False),
    "3-D full (gpu_check)": ((1, 1, 12, 12, 12), "full", None, True, torch.float32, False),
    "4-D": ((1, 1, 4, 3, 5, 4), "mixed", None, True, torch.float64, True),
    "4-D sampled": ((1, 2, 3, 4, 3, 5), "random", [0.5, 1.0, 2.0, 1.5], False, torch.float32, False),
}


def reference(x, sampling, indices, dtype, squared):
    """SciPy per slice: [(distances, exact), (indices, exact) or None]."""
    flat = x.reshape(-1, *x.shape[2:])
    results = [ndi.distance_transform_edt(s, sampling, return_indices=True) for s in flat]
    distances = np.stack([d for d, _ in results]).reshape(x.shape)
    where = np.stack([i for _, i in results], axis=1).reshape((x.ndim - 2, *x.shape))
    expected = [(distances ** 2 if squared else distances, dtype == torch.float64 and not squared)]
    if indices:  # ties between equidistant voxels may differ with float32 and sampling
        expected.append((where, True) if dtype == torch.float64 or sampling is None else None)
    return expected


def as_numpy(result):
    return [t.numpy() for t in result if t is not None and t.numel() > 0]


@pytest.mark.parametrize("name", list(CASES))
def test_matches_the_cpu_kernel_and_scipy_in_every_order(name):
    shape, kind, sampling, indices, dtype, squared = CASES[name]
    x = masks(shape, kind, list(CASES).index(name))
    mask = torch.from_numpy(x)
    before = mask.clone()
    call = lambda: _native.edt(mask, sampling, indices, dtype, squared)  # noqa: E731
    cpu = as_numpy(call())
    expected = reference(x, sampling, indices, dtype, squared)
    for order, seed in ORDERS:
        with emulated(order, seed):
            got = as_numpy(call())
        assert len(got) == len(cpu) == 1 + indices
        assert [differing(g, c, True) for g, c in zip(got, cpu)] == [0] * len(got), (order, seed)
        mismatches = [differing(g, e[0], e[1]) for g, e in zip(got, expected) if e is not None]
        assert mismatches == [0] * len(mismatches), (order, seed)
    assert torch.equal(mask, before)


def test_out_variant_writes_every_element():
    x = masks((2, 1, 9, 40), "mixed", 5)
    want = _native.edt(torch.from_numpy(x), [1.0, 0.5], False, torch.float32, False)[0]
    for order, seed in ORDERS:
        out = torch.full(x.shape, 7.0)
        with emulated(order, seed):
            _native.edt(torch.from_numpy(x), [1.0, 0.5], False, torch.float32, False, out=out)
        assert torch.equal(out, want), (order, seed)


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_one_launch_a_pass_across_the_batch(rank):
    """Pass 0, the strided envelope passes and the last pass: rank launches for any B * C."""
    shape = (3, 5) + (4,) * rank
    before = EMULATOR.launch_counts()
    with emulated("forward", 0):
        _native.edt(torch.from_numpy(masks(shape, "random", rank)), None, True, torch.float32, False)
    after = EMULATOR.launch_counts()
    launched = {k: v[0] - before.get(k, (0,))[0] for k, v in after.items() if v[0] > before.get(k, (0,))[0]}
    expected = {"edt.cu:binary_pass_kernel": 1}
    if rank > 2:
        expected["edt.cu:envelope_pass_kernel"] = rank - 2
    if rank > 1:
        expected["edt.cu:last_pass_kernel"] = 1
    assert launched == expected


def test_the_emulated_kernel_is_the_one_dispatched():
    assert _ops.built_for("edt", "cpu", emulate=True)


SIGNED_SHAPES = {
    "1-D, lines across blocks": (3, 2, 300),
    "2-D, rows across a block": (1, 2, 6, 270),
    "3-D, narrow rows": (2, 1, 9, 20, 3),
    "4-D": (1, 2, 4, 5, 3, 6),
    "5-D, an axis of one voxel": (1, 2, 3, 1, 4, 2, 5),
}


@pytest.mark.parametrize("name", list(SIGNED_SHAPES))
def test_signed_edt_matches_the_cpu_kernel_and_scipy_in_every_order(name):
    shape = SIGNED_SHAPES[name]
    x = masks(shape, "mixed", list(SIGNED_SHAPES).index(name))
    mask = torch.from_numpy(x)
    cpu = _native.signed_edt(mask).numpy()
    flat = x.reshape(-1, *shape[2:])
    expected = np.stack([scipy_signed_edt(s) for s in flat]).reshape(shape)
    for order, seed in ORDERS:
        with emulated(order, seed):
            got = _native.signed_edt(mask).numpy()
        assert differing(got, cpu, True) == 0 and differing(got, expected, True) == 0, (order, seed)
