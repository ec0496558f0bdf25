"""The binary_erosion kernel (any element as offsets) against SciPy: through the public binary
ops on the torch backend, the CPU kernel and the emulated CUDA launcher in every thread order,
and the kernel itself, CPU against emulated CUDA on adversarial offsets.

Random cases draw the element (1 to 3 filtered axes, 1 to 5 voxels along each, holes, empty),
shared or per sample, its origin, the filtered axes among the input's, a mask, the border value,
1 to 3 iterations and the op (erosion, dilation, opening, closing, hit-or-miss); each (b, c)
slice is compared with SciPy (``brute_force=True``, as morphaug's docstring promises).
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from conftest import TORCH_LEG
from morphaug import _ops, ndimage
from morphaug._ops import kernels as _native

NATIVE, WHY_NO_NATIVE = _ops.load_native()
EMULATOR, WHY_NO_EMULATOR = _ops.load_emulation()
KERNEL = "binary_erosion.cu:erosion_step_kernel"
MODES = ["torch", "cpu", "emulated/forward/0", "emulated/reverse/0", "emulated/shuffle/1", "emulated/shuffle/2"]
OPS = ["erosion", "dilation", "opening", "closing", "hit_or_miss"]


@contextlib.contextmanager
def backend_mode(mode: str):
    """The public ops on the torch backend, the CPU kernels or the emulated CUDA launchers (in an order)."""
    if mode != "torch" and TORCH_LEG:
        pytest.skip("the torch leg (MORPHAUG_BACKEND=torch): the native leg runs this mode")
    if mode != "torch" and NATIVE is None:
        pytest.skip(WHY_NO_NATIVE or "")
    emulated = mode.startswith("emulated")
    if emulated and EMULATOR is None:
        pytest.skip(WHY_NO_EMULATOR or "")
    settings = {"MORPHAUG_BACKEND": "torch" if mode == "torch" else "auto",
                "MORPHAUG_EMULATE_CUDA": "1" if emulated else None}
    previous = {name: os.environ.get(name) for name in settings}
    for name, value in settings.items():
        os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
    if emulated:
        _, order, seed = mode.split("/")
        EMULATOR.set_order(order, int(seed))
    try:
        yield
    finally:
        if emulated:
            EMULATOR.set_order("forward", 0)
        for name, value in previous.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)


def random_element(rng, rank: int, empty: bool = False) -> np.ndarray:
    shape = tuple(int(k) for k in rng.integers(1, 6, size=rank))
    element = rng.random(shape) < rng.uniform(0.3, 0.9)
    if empty:
        return np.zeros(shape, bool)
    if not element.any():
        element[tuple(k // 2 for k in shape)] = True
    return element


def random_origin(rng, shape) -> list[int]:
    return [int(rng.integers(-(k // 2), (k - 1) // 2 + 1)) for k in shape]


def draw_case(seed: int) -> dict:
    """One random call: the op, its input and arguments, and the per-slice elements for SciPy."""
    rng = np.random.default_rng(seed)
    op = OPS[seed % len(OPS)]
    spatial_rank = int(rng.integers(1, 4))
    lead = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    spatial = tuple(int(n) for n in rng.integers(5, 12 if spatial_rank > 1 else 90, size=spatial_rank))
    x = rng.random(lead + spatial) < rng.uniform(0.3, 0.8)
    n_axes = int(rng.integers(1, spatial_rank + 1))
    axes = sorted(rng.choice(spatial_rank, size=n_axes, replace=False).tolist())
    per_sample = bool(rng.random() < 0.3)
    empty = bool(rng.random() < 0.08)
    if per_sample:
        shape = random_element(rng, n_axes).shape
        elements = np.stack([rng.random(shape) < 0.6 for _ in range(lead[0])])
        elements[(slice(None),) + tuple(k // 2 for k in shape)] |= rng.random(lead[0]) < 0.5
        structure = torch.from_numpy(elements)
        per_slice = lambda b, c: elements[b]  # noqa: E731
    else:
        element = random_element(rng, n_axes, empty)
        structure = torch.from_numpy(element)
        per_slice = lambda b, c: element  # noqa: E731
    origin = random_origin(rng, structure.shape[-n_axes:])
    case = dict(op=op, x=torch.from_numpy(x), structure=structure, per_slice=per_slice, axes=axes, origin=origin)
    if op == "hit_or_miss":
        second = random_element(rng, n_axes) if rng.random() < 0.6 else None
        case.update(structure2=None if second is None else torch.from_numpy(second),
                    origin2=None if second is None else random_origin(rng, second.shape))
        return case
    mask = rng.random(lead + spatial) < 0.7 if rng.random() < 0.4 else None
    case.update(mask=None if mask is None else torch.from_numpy(mask), iterations=int(rng.integers(1, 4)),
                border_value=int(rng.integers(0, 2)))
    return case


def run_morphaug(case) -> torch.Tensor:
    if case["op"] == "hit_or_miss":
        return ndimage.binary_hit_or_miss(case["x"], case["structure"], case["structure2"], origin1=case["origin"],
                                          origin2=case["origin2"], axes=case["axes"])
    return getattr(ndimage, f"binary_{case['op']}")(
        case["x"], case["structure"], iterations=case["iterations"], mask=case["mask"],
        border_value=case["border_value"], origin=case["origin"], axes=case["axes"])


def run_scipy(case, b: int, c: int) -> np.ndarray:
    x, element = case["x"][b, c].numpy(), case["per_slice"](b, c)
    if case["op"] == "hit_or_miss":
        second = case["structure2"]
        return ndi.binary_hit_or_miss(x, element, None if second is None else second.numpy(), origin1=case["origin"],
                                      origin2=case["origin2"], axes=case["axes"])
    mask = None if case["mask"] is None else case["mask"][b, c].numpy()
    return getattr(ndi, f"binary_{case['op']}")(x, element, iterations=case["iterations"], mask=mask,
                                                border_value=case["border_value"], origin=case["origin"],
                                                brute_force=True, axes=case["axes"])


@contextlib.contextmanager
def kernel_calls(monkeypatch):
    """Counts the calls that reach the binary_erosion kernel's Python function."""
    calls = []
    original = _native.binary_erosion

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_native, "binary_erosion", counted)
    yield calls


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("block", range(4))
def test_binary_ops_match_scipy_on_random_elements(mode, block, monkeypatch):
    seeds = range(block * 20, block * 20 + 20)
    with backend_mode(mode), kernel_calls(monkeypatch) as calls:
        before = EMULATOR.launch_counts().get(KERNEL, (0,))[0] if mode.startswith("emulated") else 0
        for seed in seeds:
            case = draw_case(seed)
            got = run_morphaug(case)
            x = case["x"]
            for b, c in np.ndindex(*x.shape[:2]):
                expected = run_scipy(case, b, c)
                assert np.array_equal(got[b, c].numpy(), expected), (seed, case["op"], b, c)
        if mode != "torch":
            assert calls, "the binary_erosion kernel was never reached"
        if mode.startswith("emulated"):
            assert EMULATOR.launch_counts()[KERNEL][0] > before


@pytest.mark.parametrize("mode", MODES[1:])
def test_each_step_is_one_kernel_call_and_device_elements_need_no_host_copy(mode, monkeypatch):
    """A per-sample element, an opening's two chains and a hit-or-miss: one kernel call each."""
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.random((3, 2, 40, 33)) < 0.6)
    structure = torch.from_numpy(rng.random((3, 3, 4)) < 0.6)
    with backend_mode(mode), kernel_calls(monkeypatch) as calls:
        got = ndimage.binary_opening(x, structure, iterations=2, border_value=1)
        assert len(calls) == 2
        for b, c in np.ndindex(3, 2):
            assert np.array_equal(got[b, c].numpy(), ndi.binary_opening(
                x[b, c].numpy(), structure[b].numpy(), iterations=2, border_value=1, brute_force=True))
        ndimage.binary_hit_or_miss(x, structure[0])
        assert len(calls) == 3


# --- the kernel itself: CPU against emulated CUDA, adversarial offsets -------------------

def kernel_case(seed: int):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    lead = (int(rng.integers(1, 4)), int(rng.integers(1, 3)))
    spatial = tuple(int(n) for n in rng.integers(1, 8 if rank > 1 else 700, size=rank))
    x = torch.from_numpy(rng.random(lead + spatial) < rng.uniform(0.1, 0.9))
    count = int(rng.integers(0, 30))
    offsets = rng.integers(-9, 10, size=(count, rank)).tolist()  # reads far outside small slices too
    hit = torch.from_numpy(rng.random(lead + (count,)) < 0.5)
    miss = torch.from_numpy(rng.random(lead + (count,)) < 0.3)  # some offsets both: always false
    mask = torch.from_numpy(rng.random(lead + spatial) < 0.7) if rng.random() < 0.5 else None
    return x, mask, hit, miss, offsets, int(rng.integers(1, 4)), bool(rng.random() < 0.5), bool(rng.random() < 0.5)


def reference_step(x, mask, hit, miss, offsets, border, invert) -> np.ndarray:
    """One step of the kernel's definition, in NumPy, on a padded copy."""
    rank = x.ndim - 2
    pad = 10
    padded = np.pad(x, [(0, 0)] * 2 + [(pad, pad)] * rank, constant_values=border)
    r = np.ones(x.shape, bool)
    for e, offset in enumerate(offsets):
        window = tuple(slice(pad + d, pad + d + n) for d, n in zip(offset, x.shape[2:]))
        v = padded[(slice(None), slice(None)) + window]
        h = hit[:, :, e].reshape(x.shape[:2] + (1,) * rank)
        m = miss[:, :, e].reshape(x.shape[:2] + (1,) * rank)
        r &= ~h | v
        r &= ~m | ~v
    r ^= invert
    return r if mask is None else np.where(mask, r, x)


@pytest.mark.skipif(NATIVE is None, reason=WHY_NO_NATIVE or "")
@pytest.mark.parametrize("seed", range(24))
def test_kernel_cpu_and_emulated_cuda_match_the_definition(seed):
    x, mask, hit, miss, offsets, iterations, border, invert = kernel_case(seed)
    expected = x.numpy()
    for _ in range(iterations):
        expected = reference_step(expected, None if mask is None else mask.numpy(), hit.numpy(), miss.numpy(),
                                  offsets, border, invert)
    args = (x, mask, hit, miss, offsets, iterations, border, invert)
    inputs = [t.clone() for t in (x, hit, miss)]
    assert np.array_equal(_native.binary_erosion(*args).numpy(), expected)
    if EMULATOR is None:
        return
    for mode in MODES[2:]:
        with backend_mode(mode):
            assert np.array_equal(_native.binary_erosion(*args).numpy(), expected), mode
    assert all(torch.equal(a, b) for a, b in zip(inputs, (x, hit, miss)))  # inputs never modified


@pytest.mark.skipif(NATIVE is None, reason=WHY_NO_NATIVE or "")
def test_kernel_rejects_bad_arguments():
    x = torch.zeros(1, 1, 5, 5, dtype=torch.bool)
    none = torch.zeros(1, 1, 1, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="out of range"):
        _native.binary_erosion(x, None, none, none, [[200, 0]], 1, False, False)
    with pytest.raises(RuntimeError, match="iterations"):
        _native.binary_erosion(x, None, none, none, [[0, 0]], 0, False, False)
    with pytest.raises(RuntimeError, match="hit and miss"):
        _native.binary_erosion(x, None, none, none, [[0, 0], [0, 1]], 1, False, False)


def test_contract_sends_large_elements_to_the_next_case():
    kernel = _ops.KERNELS["binary_erosion"]
    assert kernel.fits((8, 8), {"count": 256, "reach": [127, 0]}) is None
    assert "256" in kernel.fits((8, 8), {"count": 257, "reach": [1, 1]})
    assert "127" in kernel.fits((8, 8), {"count": 3, "reach": [128, 0]})


def structure_case(shape, seed):
    """A case of tests/test_cuda_emulation.py (its every-kernel check): 2 masked dilation steps with
    border 1 by a random (3,) * S element per slice, as misses (the reflected offsets) with invert."""
    rng = np.random.default_rng(seed)
    rank = len(shape) - 2
    elements = rng.random(shape[:2] + (3,) * rank) < 0.5
    x, mask = rng.random(shape) < 0.3, rng.random(shape) < 0.8
    offsets = [[1 - j for j in position] for position in np.ndindex((3,) * rank)]
    misses = torch.from_numpy(elements.reshape(shape[:2] + (-1,)).copy())

    def call(device):
        to = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
        return _native.binary_erosion(to(x), to(mask), torch.zeros_like(misses).to(device), misses.to(device),
                                      offsets, 2, True, True)

    def reference():
        expected = [ndi.binary_dilation(x[b, c], elements[b, c], iterations=2, mask=mask[b, c], border_value=1)
                    for b, c in np.ndindex(shape[:2])]
        return [(np.stack(expected).reshape(shape), True)]

    return call, reference
