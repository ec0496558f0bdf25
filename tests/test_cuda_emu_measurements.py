"""The CUDA launchers of ``region_stats`` (the measurements), ``region_histogram`` and ``region_median``,
run by the emulator in every thread order, against the torch scatters, the CPU kernels and SciPy: the random calls of
tests/test_measurements_native.py (every label dtype, bool and unsigned included, float and
integer values, index None / int / span / sorted table with absent and repeated values, huge
labels, empty slices, shared label axes), on block-local tables (few slots) and global ones
(many slots, or more than four axes). ``emulation_cases`` feeds tests/test_cuda_emulation.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug import _ops, ndimage
from morphaug.ndimage import _regions, _statistics
from test_cuda_emu_grey import emulated
from test_measurements_native import assert_tables, cases, random_tensor, tables_of

NATIVE, WHY_NO_NATIVE = _ops.load_native()
EMULATOR, WHY_NO_EMULATOR = _ops.load_emulation()
needs_emulator = pytest.mark.skipif(EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "region_stats"),
                                    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no region_stats")
CPU = NATIVE is not None and hasattr(torch.ops.morphaug, "region_stats")
needs_histogram = pytest.mark.skipif(NATIVE is None or not hasattr(torch.ops.morphaug, "region_histogram"),
                                     reason=WHY_NO_NATIVE or "morphaug._C has no region_histogram")
needs_histogram_emulator = pytest.mark.skipif(
    EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "region_histogram"),
    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no region_histogram")
needs_median_emulator = pytest.mark.skipif(
    EMULATOR is None or not hasattr(torch.ops.morphaug_emu, "region_median") or not CPU,
    reason=WHY_NO_EMULATOR or "morphaug._C_emu has no region_median")
ORDERS = [("forward", 0), ("reverse", 0), ("shuffle", 1), ("shuffle", 2)]


def launches() -> int:
    return sum(v[0] for k, v in EMULATOR.launch_counts().items() if k.startswith("region_stats.cu:"))


@needs_emulator
@pytest.mark.parametrize("order", ORDERS, ids=lambda o: f"{o[0]}{o[1]}")
def test_emulated_tables_match_torch_and_the_cpu_kernel(order):
    for k, (x, labels, index) in enumerate(cases(14, 100 + order[1] + 10 * (order[0] == "reverse"))):
        where = f"{order} case {k}: {x.dtype} {tuple(x.shape)} {None if labels is None else labels.dtype} {index}"
        before = launches()
        with emulated(*order):
            got = tables_of(x, labels, index, "native")
        assert 1 <= launches() - before <= 2 or x.numel() == 0, where  # a pass, one more for positions, squares
        assert_tables(got, tables_of(x, labels, index, "torch"), where)
        if CPU:
            assert_tables(got, tables_of(x, labels, index, "native"), where + " (CPU kernel)")


@needs_emulator
@pytest.mark.parametrize("order", ORDERS[1:], ids=lambda o: f"{o[0]}{o[1]}")
def test_emulated_global_tables(order):
    """Many slots (a table per 100 labels) and five axes: the tables in global memory."""
    g = torch.Generator().manual_seed(7)
    for shape, index in (((2, 2, 40, 60), list(range(100))), ((1, 2, 3, 2, 4, 3, 5), [0, 1, 2])):
        x = random_tensor(shape, torch.float32, g)
        labels = torch.randint(0, 100, shape, generator=g)
        with emulated(*order):
            got = tables_of(x, labels, index, "native")
        assert_tables(got, tables_of(x, labels, index, "torch"), f"{order} {shape}")


def histograms_of(x, labels, index, edges, backend):
    """morphaug's histogram of ``x`` by ``labels`` and ``index`` over ``edges``, on the native kernel or the torch
    scatter (histogram's rule)."""
    rule = _regions._rule(x, labels, index, span=x[0, 0].numel() // len(edges))
    return (_statistics._histogram_native if backend == "native" else _statistics._histogram_torch)(x, rule, edges)


#: Edges: NumPy's linspace of uneven steps, a zero-width range (one closed bin), one bin, and many bins
#: (with 60 columns, more counts than a block's shared table holds: global atomics).
EDGES = [np.linspace(-3.0, 4.5, 8).tolist(), [0.0, 0.0], [-1.0, 2.0], np.linspace(-7.0, 7.0, 101).tolist()]


def histogram_cases(count: int, seed: int):
    """``count`` random calls of tests/test_measurements_native.py, each with edges of EDGES in turn."""
    for k, (x, labels, index) in enumerate(cases(count, seed)):
        yield x, labels, index, EDGES[k % len(EDGES)]


@needs_histogram
def test_native_histograms_match_the_torch_scatter():
    for k, (x, labels, index, edges) in enumerate(histogram_cases(28, 5)):
        where = f"case {k}: {x.dtype} {tuple(x.shape)} {None if labels is None else labels.dtype} {index} {edges[:3]}"
        before = x.clone()
        got = histograms_of(x, labels, index, edges, "native")
        assert torch.equal(x.flatten().view(torch.uint8), before.flatten().view(torch.uint8)), where  # NaN too
        assert got.dtype == torch.int64 and torch.equal(got, histograms_of(x, labels, index, edges, "torch")), where


@needs_histogram_emulator
@pytest.mark.parametrize("order", ORDERS, ids=lambda o: f"{o[0]}{o[1]}")
def test_emulated_histograms_match_torch_and_the_cpu_kernel(order):
    for k, (x, labels, index, edges) in enumerate(histogram_cases(14, 200 + order[1] + 10 * (order[0] == "reverse"))):
        where = f"{order} case {k}: {x.dtype} {tuple(x.shape)} {index} {len(edges) - 1} bins"
        with emulated(*order):
            got = histograms_of(x, labels, index, edges, "native")
        assert torch.equal(got, histograms_of(x, labels, index, edges, "torch")), where
        assert torch.equal(got, histograms_of(x, labels, index, edges, "native")), where + " (CPU kernel)"


@needs_histogram
def test_the_histogram_kernel_checks_its_edges():
    x = torch.zeros(1, 1, 4)
    for edges, message in (([0.0], "at least 2"), ([0.0, float("nan")], "finite"), ([1.0, 0.0], "non-decreasing")):
        with pytest.raises(RuntimeError, match=message):
            torch.ops.morphaug.region_histogram(x, None, None, [0, 0, 0, 0], 1, edges)


def median_cases(count: int, seed: int):
    """The random calls of tests/test_measurements_native.py, then int8 values, floats with -0.0, NaN and
    ties, and a whole slice of many equal values (every middle in one digit's count)."""
    yield from cases(count, seed)
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 5, (2, 1, 31, 40), generator=g)
    yield torch.randint(-128, 128, (2, 2, 31, 40), generator=g, dtype=torch.int8), labels, [0, 1, 2, 3, 4, 7]
    signed = torch.tensor([-0.0, 0.0, float("nan"), -1.5, 1.5, float("-inf"), float("inf"), 2.0])
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        x = signed[torch.randint(0, 8, (2, 2, 31, 40), generator=g)].to(dtype)
        yield x, labels, None
        yield x, None, None
    yield torch.full((1, 2, 3000), 7, dtype=torch.int32), torch.randint(0, 3, (1, 1, 3000), generator=g), [2, 0]


@needs_median_emulator
@pytest.mark.parametrize("order", ORDERS, ids=lambda o: f"{o[0]}{o[1]}")
def test_emulated_medians_match_the_cpu_kernel(order):
    """region_median's counts, middles (region_stats' keys) and least values: the radix select on the
    emulator equals the CPU kernel's sort, bit for bit (shared digit counts up to 8 columns, global beyond)."""
    seed = 300 + order[1] + 10 * (order[0] == "reverse")
    for k, (x, labels, index) in enumerate(median_cases(14, seed)):
        where = f"{order} case {k}: {x.dtype} {tuple(x.shape)} {None if labels is None else labels.dtype} {index}"
        args = _regions._rule(x, labels, index).kernel_args
        with emulated(*order):
            got = _ops.kernels.region_median(x, *args)
        for name, have, want in zip(("count", "low", "high", "least"), got, _ops.kernels.region_median(x, *args)):
            assert torch.equal(have, want), (where, name)


def emulation_cases() -> dict:
    """Cases of tests/test_cuda_emulation.py's table: ``(call(device), reference())``, exact results."""
    g = torch.Generator().manual_seed(3)
    x = random_tensor((2, 2, 37, 61), torch.float32, g).nan_to_num(0.5)
    labels = torch.randint(-1, 6, (2, 1, 37, 61), generator=g)
    many = torch.randint(0, 90, (2, 1, 33, 70), generator=g)
    slices = [(b, c) for b in range(2) for c in range(2)]

    def extrema_reference():
        found = [ndi.extrema(x[b, c].numpy(), labels[b, 0].numpy(), [5, 1, 2, 9]) for b, c in slices]
        return [(np.stack([np.asarray(f[i]) for f in found]).reshape(2, 2, *np.asarray(found[0][i]).shape), True)
                for i in range(4)]

    def boxes_reference():
        boxes = np.zeros((2, 1, 89, 2, 2), dtype=np.int64)
        for b in range(2):
            for l, box in enumerate(ndi.find_objects(many[b, 0].numpy(), 89)):
                if box is not None:
                    boxes[b, 0, l] = [[s.start for s in box], [s.stop for s in box]]
        return [(boxes, True), None]

    def histogram_reference(values, edges, label_map, index):
        """SciPy's definition per slice: np.histogram of each label's values (zeros for an absent label,
        where SciPy gives None)."""
        found = [[np.histogram(values[b, c].numpy()[label_map[b, 0].numpy() == i], edges)[0] for i in index]
                 for b, c in slices]
        return [(np.array(found, np.int64).reshape(2, 2, len(index), len(edges) - 1), True)]

    wide = np.linspace(-6.0, 6.0, 81).tolist()
    return {
        "region_histogram 8 bins of 4 labels (block tables)": (
            lambda device: ndimage.histogram(x.to(device), -3.0, 4.0, 8, labels.to(device), [5, 1, 2, 4]),
            lambda: histogram_reference(x, np.linspace(-3.0, 4.0, 9), labels, [5, 1, 2, 4])),
        "region_histogram 80 bins of 60 labels (global counts)": (
            lambda device: ndimage.histogram(x.to(device), -6.0, 6.0, 80, labels.to(device) * 10, list(range(60))),
            lambda: histogram_reference(x, wide, labels * 10, list(range(60)))),
        "region_median of 4 labels by a span (block digit counts)": (
            lambda device: ndimage.median(x.to(device), labels.to(device), [5, 1, 2, 4]),
            lambda: [(np.array([[ndi.median(x[b, c].numpy(), labels[b, 0].numpy(), [5, 1, 2, 4]) for c in range(2)]
                                for b in range(2)]), True)]),
        "region_median of 60 labels (global digit counts)": (
            lambda device: ndimage.median(x.to(device), labels.to(device) * 10, list(range(60))),
            lambda: [(np.array([[ndi.median(x[b, c].numpy(), labels[b, 0].numpy() * 10, list(range(60)))
                                 for c in range(2)] for b in range(2)]), True)]),
        "region_stats extrema by a span (block tables)": (
            lambda device: ndimage.extrema(x.to(device), labels.to(device), [5, 1, 2, 9]), extrema_reference),
        "region_stats find_objects of 89 labels (global tables)": (
            lambda device: ndimage.find_objects(many.to(device), 89), boxes_reference),
    }


def test_the_cuda_median_takes_the_columns_its_digit_counts_hold():
    """On CUDA region_median's digit counts (2 KiB per column of a slice) take at most 4 bytes per voxel
    of a slice, or 256 KiB; more columns go to the torch sort. The CPU kernel takes any."""
    from morphaug._ops._contracts import KERNELS

    kernel = KERNELS["region_median"]
    assert kernel.fits((64, 64), {"slots": 128}, "cuda") is None  # 256 KiB
    assert kernel.fits((512, 512), {"slots": 512}, "cuda") is None  # 1 MiB, 4 bytes per voxel
    assert "at most 128 columns" in kernel.fits((64, 64), {"slots": 129}, "cuda")
    assert kernel.fits((64, 64), {"slots": 10**6}, "cpu") is None
