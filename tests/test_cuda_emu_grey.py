"""Grey morphology by elements per sample: the ``grey_element`` kernel (CPU, and its CUDA launcher
run by the emulator in every thread order) and the public grey ops that reach it.

Every slice takes its own footprint and structure: each is checked against SciPy run on that
slice with that slice's element, and against the torch backend (which also gives the result of a
slice whose footprint is all false: the identity of the min / max).
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

import morphaug.transforms as T
from morphaug import _ops, ndimage
from morphaug._ops import _contracts
from morphaug._ops import kernels as _native

NATIVE, WHY_NO_NATIVE = _ops.load_native()
EMULATOR, WHY_NO_EMULATOR = _ops.load_emulation()
needs_native = pytest.mark.skipif(NATIVE is None or not hasattr(torch.ops.morphaug, "grey_element"),
                                  reason=WHY_NO_NATIVE or "morphaug._C has no grey_element")
needs_emulator = pytest.mark.skipif(EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "grey_element"),
                                    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no grey_element")

ORDERS = [("forward", 0), ("reverse", 0), ("shuffle", 1), ("shuffle", 2)]
MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]
INTEGERS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


@contextlib.contextmanager
def environment(**values):
    """The environment variables ``values`` set (None: unset) while the block runs."""
    previous = {name: os.environ.get(name) for name in values}
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def emulated(order: str = "forward", seed: int = 0):
    """Native calls on CPU tensors go to the emulated CUDA launchers, in this order."""
    EMULATOR.set_order(order, seed)
    try:
        with environment(MORPHAUG_EMULATE_CUDA="1"):
            yield
    finally:
        EMULATOR.set_order("forward", 0)


def element_launches() -> int:
    return EMULATOR.launch_counts().get("grey_element.cu:element_kernel", (0,))[0]


def values_of(rng, shape, dtype) -> torch.Tensor:
    """Random values of ``dtype``: integers in [10, 100) (SciPy's integer sums do not wrap there)."""
    if dtype == torch.bool:
        return torch.from_numpy(rng.random(shape) < 0.5)
    if dtype.is_floating_point:
        return torch.from_numpy(rng.standard_normal(shape)).to(dtype)
    return torch.from_numpy(rng.integers(10, 100, shape)).to(dtype)


def random_elements(rng, rows, k, structured: bool, holes: float = 0.4, empty_row: bool = False):
    """``(footprint, structure)`` NumPy arrays ``(*rows, *k)``: footprints with holes (at least one
    true value per row, but row 0 all false with ``empty_row``), weights in halves up to 3."""
    footprint = rng.random((*rows, *k)) >= holes
    flat = footprint.reshape(-1, int(np.prod(k)))
    flat[np.arange(len(flat)), rng.integers(0, flat.shape[1], len(flat))] = True
    if empty_row:
        flat[0] = False
    structure = rng.integers(0, 7, (*rows, *k)) / 2.0 if structured else None
    return footprint, structure


def per_slice_scipy(x: np.ndarray, footprint, structure, dilation: bool, mode: str, cval, origin):
    """SciPy's grey_erosion (grey_dilation) of every ``(b, c)`` slice by its own element; NaN (float)
    or None where a slice's footprint is all false (SciPy raises there)."""
    fn = ndi.grey_dilation if dilation else ndi.grey_erosion
    out = np.zeros(x.shape, np.float64 if x.dtype == np.float16 else x.dtype)
    empty = np.zeros(x.shape[:2], bool)
    for b, c in np.ndindex(*x.shape[:2]):
        f = None if footprint is None else footprint[b % footprint.shape[0], c % footprint.shape[1]]
        s = None if structure is None else structure[b % structure.shape[0], c % structure.shape[1]]
        if f is not None and not f.any():
            empty[b, c] = True
            continue
        source = x[b, c].astype(np.float32) if x.dtype == np.float16 else x[b, c]
        out[b, c] = fn(source, footprint=f, structure=s, mode=mode, cval=cval, origin=origin)
    return out, empty


def kernel_arguments(footprint, structure, dilation: bool, origin):
    """The kernel's (erosion-form) element tensors and origin: a dilation's reflected, origin -o
    (minus 1 on an even extent), as morphaug.ndimage passes them."""
    shape = (footprint if footprint is not None else structure).shape[2:]
    spatial = tuple(range(2, 2 + len(shape)))
    elements = [None if e is None else torch.from_numpy(np.ascontiguousarray(np.flip(e, spatial) if dilation else e))
                for e in (footprint, structure)]
    k_origin = [-o - (1 - k % 2) for o, k in zip(origin, shape)] if dilation else list(origin)
    return elements[0], elements[1], k_origin


def torch_reference(x: torch.Tensor, footprint, structure, dilation: bool, mode: str, cval, origin):
    """The torch backend on the same call (exact, the empty slices included)."""
    def per_slice(e):  # (B, C, *k): every slice's own
        return None if e is None else torch.from_numpy(np.broadcast_to(e, (*x.shape[:2], *e.shape[2:])).copy())

    kwargs = dict(footprint=per_slice(footprint), structure=per_slice(structure), mode=mode, cval=cval,
                  origin=origin)
    with environment(MORPHAUG_BACKEND="torch"):
        return (ndimage.grey_dilation if dilation else ndimage.grey_erosion)(x, **kwargs)


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and bool(
        ((a == b) | (a.isnan() & b.isnan()) if a.is_floating_point() else (a == b)).all())


# --- the kernel against SciPy and the torch backend ------------------------------------------

KERNEL_CASES = [
    # (batch, channels, spatial, k, element rows, dtype, structured, mode, dilation)
    (3, 1, (37,), (5,), "B1", torch.float32, False, "reflect", False),
    (2, 2, (11, 9), (3, 4), "BC", torch.int16, True, "constant", True),
    (4, 1, (6, 7, 5), (3, 3, 3), "B1", torch.uint8, False, "mirror", False),
    (2, 3, (9, 40), (5, 5), "1C", torch.float64, True, "wrap", False),
    (3, 2, (5, 6, 7), (2, 3, 3), "BC", torch.int64, True, "nearest", True),
    (2, 1, (33, 35), (5, 5), "B1", torch.float16, False, "constant", True),
    (2, 2, (8, 9), (3, 3), "BC", torch.bool, False, "reflect", True),
    (3, 1, (70,), (7,), "B1", torch.int32, True, "mirror", True),
    (2, 1, (7, 6, 9), (3, 1, 5), "11", torch.int8, False, "wrap", True),
    (2, 1, (10, 12), (3, 3), "B1", torch.uint16, False, "nearest", False),
    (2, 1, (10, 12), (3, 5), "B1", torch.uint64, False, "constant", True),
    (3, 1, (6, 5, 8), (3, 3, 3), "B1", torch.float32, True, "reflect", True),
]


def kernel_case(index: int, empty_row: bool = False, footprint_free: bool = False):
    """A call of the kernel and its expected results (SciPy's per slice, and the torch backend's)."""
    batch, channels, spatial, k, rows, dtype, structured, mode, dilation = KERNEL_CASES[index]
    rng = np.random.default_rng(100 + index)
    x = values_of(rng, (batch, channels, *spatial), dtype)
    shape = (batch if rows[0] == "B" else 1, channels if rows[1] == "C" else 1)
    footprint, structure = random_elements(rng, shape, k, structured, empty_row=empty_row)
    if footprint_free:
        footprint, structure = None, rng.integers(0, 7, (*shape, *k)) / 2.0
    origin = [int(rng.integers(-(n // 2), (n - 1) // 2 + 1)) for n in k]
    cval = True if dtype == torch.bool else (7 if not dtype.is_floating_point else -0.25)
    f, s, k_origin = kernel_arguments(footprint, structure, dilation, origin)

    def call(out=None, device="cpu"):
        f_, s_ = (None if e is None else e.to(device) for e in (f, s))
        return _native.grey_element(x.to(device), f_, s_, k_origin, [mode] * len(k), cval, dilation, out=out)

    scipy_x = x.float().numpy() if dtype == torch.float16 else x.numpy()
    expected, empty = per_slice_scipy(scipy_x, footprint, structure, dilation, mode, cval, origin)
    # the public API refuses an all-false footprint read on the host: no torch run then
    reference = None if empty_row else torch_reference(x, footprint, structure, dilation, mode, cval, origin)
    return x, call, expected, empty, (reference, dilation)


def emulation_case(index: int):
    """Kernel case ``index`` as tests/test_cuda_emulation.py's CASES take it: ``(call(device),
    reference())`` (a case without empty footprints: SciPy gives every slice)."""
    def call(device):
        return kernel_case(index)[1](device=device)

    def reference():
        return [(kernel_case(index)[2], True)]

    return call, reference


def identity(dtype: torch.dtype, maximum: bool):
    """What a slice without a true footprint position gets: the value that never wins."""
    if dtype == torch.bool:
        return not maximum
    if dtype.is_floating_point:
        return -float("inf") if maximum else float("inf")
    info = torch.iinfo(dtype)
    return info.min if maximum else info.max


def check(got: torch.Tensor, x, expected, empty, reference):
    reference, dilation = reference
    assert got.dtype == x.dtype and got.shape == x.shape
    if reference is not None:
        assert same(got, reference)
    assert bool((got[torch.from_numpy(empty)] == identity(x.dtype, dilation)).all())
    values = got.float().numpy() if got.dtype == torch.float16 else got.numpy()
    if got.dtype == torch.float16:
        expected = expected.astype(np.float16).astype(np.float32)
    assert np.array_equal(values[~empty], expected[~empty], equal_nan=True)


@needs_native
@pytest.mark.parametrize("index", range(len(KERNEL_CASES)))
def test_cpu_kernel_matches_scipy_per_slice(index):
    x, call, expected, empty, reference = kernel_case(index)
    before = x.clone()
    check(call(), x, expected, empty, reference)
    out = torch.full_like(x, 3)
    assert call(out) is out
    check(out, x, expected, empty, reference)
    assert same(x, before)  # input never modified


@needs_native
@pytest.mark.parametrize("index", [0, 1, 4, 6])
def test_cpu_kernel_empty_footprints_give_the_identity(index):
    x, call, expected, empty, reference = kernel_case(index, empty_row=True)
    assert empty.any()
    check(call(), x, expected, empty, reference)


@needs_native
@pytest.mark.parametrize("index", [1, 3, 4])
def test_cpu_kernel_structure_alone(index):
    x, call, expected, empty, reference = kernel_case(index, footprint_free=True)
    check(call(), x, expected, empty, reference)


@needs_emulator
@pytest.mark.parametrize("index", range(len(KERNEL_CASES)))
def test_emulated_cuda_kernel_in_every_order(index):
    x, call, expected, empty, reference = kernel_case(index, empty_row=index % 3 == 0)
    cpu = call() if NATIVE is not None and hasattr(torch.ops.morphaug, "grey_element") else reference[0]
    for order, seed in ORDERS:
        before = element_launches()
        with emulated(order, seed):
            got = call()
        assert element_launches() == before + 1
        check(got, x, expected, empty, reference)
        assert cpu is None or same(got, cpu)


def test_kernel_rejects_bad_elements():
    if NATIVE is None or not hasattr(torch.ops.morphaug, "grey_element"):
        pytest.skip(WHY_NO_NATIVE or "no grey_element")
    x = torch.zeros(2, 1, 5, 5)
    with pytest.raises(RuntimeError, match="needs a footprint, a structure or both"):
        _native.grey_element(x, None, None, [0, 0], ["reflect"] * 2, 0, False)
    with pytest.raises(RuntimeError, match="footprint must be Bool"):
        _native.grey_element(x, torch.ones(3, 1, 3, 3, dtype=torch.bool), None, [0, 0], ["reflect"] * 2, 0, False)
    with pytest.raises(RuntimeError, match="one shape"):
        _native.grey_element(x, torch.ones(1, 1, 3, 3, dtype=torch.bool), torch.zeros(1, 1, 3, 2, dtype=torch.float64),
                             [0, 0], ["reflect"] * 2, 0, False)


# --- the public API: which kernel runs, and SciPy per sample -----------------------------------

PUBLIC_OPS = {
    "grey_erosion": ndi.grey_erosion, "grey_dilation": ndi.grey_dilation, "grey_opening": ndi.grey_opening,
    "grey_closing": ndi.grey_closing, "white_tophat": ndi.white_tophat,
}


def public_case(op: str, dtype, rank: int, structured: bool, seed: int):
    rng = np.random.default_rng(seed)
    spatial = [(19,), (9, 11), (6, 7, 5)][rank - 1]
    x = values_of(rng, (3, 2, *spatial), dtype)
    k = [(5,), (3, 4), (3, 3, 2)][rank - 1]
    footprint, structure = random_elements(rng, (3,), k, structured)
    kwargs = dict(footprint=torch.from_numpy(footprint), mode=MODES[seed % 5], cval=7,
                  origin=[int(rng.integers(-(n // 2), (n - 1) // 2 + 1)) for n in k])
    if structured:
        kwargs["structure"] = torch.from_numpy(structure)
    expected = np.stack([np.stack([PUBLIC_OPS[op](x[b, c].numpy(), footprint=footprint[b],
                                                  structure=None if structure is None else structure[b],
                                                  mode=kwargs["mode"], cval=7, origin=kwargs["origin"])
                                   for c in range(x.shape[1])]) for b in range(x.shape[0])])
    return x, kwargs, expected


PUBLIC_CASES = [(op, dtype, rank, structured)
                for op in PUBLIC_OPS
                for dtype, rank, structured in [(torch.float32, 2, False), (torch.int16, 3, True),
                                                (torch.float64, 1, True), (torch.uint8, 3, False)]]


@pytest.mark.parametrize("op, dtype, rank, structured", PUBLIC_CASES)
def test_public_ops_per_sample_match_scipy(op, dtype, rank, structured, monkeypatch):
    """On every backend of the session (torch, or native: then the CPU kernel runs, once per step)."""
    x, kwargs, expected = public_case(op, dtype, rank, structured, seed=len(op) + rank)
    calls = []
    kernel = _native.grey_element
    monkeypatch.setattr(_native, "grey_element", lambda *a, **k: calls.append(1) or kernel(*a, **k))
    got = getattr(ndimage, op)(x, **kwargs)
    assert got.dtype == x.dtype and np.array_equal(got.numpy(), expected)
    native = _contracts.policy() != "torch" and _contracts.why_not("grey_element", "cpu", dtype, rank) is None
    steps = 1 if op in ("grey_erosion", "grey_dilation") else 2
    assert len(calls) == (steps if native else 0)


@needs_emulator
@pytest.mark.parametrize("op, dtype, rank, structured", PUBLIC_CASES[::3])
def test_public_ops_per_sample_emulated(op, dtype, rank, structured):
    x, kwargs, expected = public_case(op, dtype, rank, structured, seed=2 * len(op) + rank)
    before = element_launches()
    with environment(MORPHAUG_BACKEND=None), emulated("shuffle", 3):
        got = getattr(ndimage, op)(x, **kwargs)
    assert np.array_equal(got.numpy(), expected)
    assert element_launches() - before == (1 if op in ("grey_erosion", "grey_dilation") else 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int16, torch.bool])
def test_rand_grey_morphology_reproducible_and_per_sample(dtype):
    rng = np.random.default_rng(7)
    image = values_of(rng, (4, 1, 9, 10, 8), dtype)
    ops = ("erosion", "dilation", "opening", "closing", "white_tophat")

    def run():
        t = T.RandGreyMorphology("image", ops=ops, radius=(1, 2), prob=0.75,
                                 generator=torch.Generator().manual_seed(3))
        return t({"image": image})["image"], t.last_params

    first, params = run()
    second, _ = run()
    assert same(first, second)
    scipy_ops = {"erosion": ndi.grey_erosion, "dilation": ndi.grey_dilation, "opening": ndi.grey_opening,
                 "closing": ndi.grey_closing,
                 "white_tophat": lambda a, **k: (a ^ ndi.grey_opening(a, **k)) if a.dtype == bool
                 else ndi.white_tophat(a, **k)}
    for b in range(image.shape[0]):
        if not params["apply"][b]:
            assert same(first[b], image[b])
            continue
        fp = params["footprints"][b].numpy()
        want = scipy_ops[ops[int(params["op"][b])]](image[b, 0].numpy(), footprint=fp, mode="reflect")
        assert np.array_equal(first[b, 0].numpy(), want)
