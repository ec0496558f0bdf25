"""The ``region_stats`` and ``region_median`` kernels on the CPU against the torch scatters and sorts
they replace, and SciPy.

Every table a measurement asks for (count, sums, extrema and their first positions, moments,
bounds, centred squares) under every rule of ``_regions._rule`` (whole slice, positive labels,
index span, sorted index table), over label and value dtypes, shared label axes, NaN, empty
slices, huge labels and sizes across the CUDA launcher's chunks. ``cases`` is shared with
tests/test_cuda_emu_measurements.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug import _ops, ndimage
from morphaug.ndimage import _regions

NATIVE, WHY_NO_NATIVE = _ops.load_native()
needs_native = pytest.mark.skipif(NATIVE is None or not hasattr(torch.ops.morphaug, "region_stats"),
                                  reason=WHY_NO_NATIVE or "morphaug._C has no region_stats")

LABEL_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16,
                torch.uint32, torch.uint64]
VALUE_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.bool, torch.uint8,
                torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32, torch.uint64]
SHAPES = [(2, 3, 7, 5), (1, 2, 3000), (3, 1, 5, 6, 7), (2, 2, 0, 4), (1, 1, 1), (2, 1, 45, 50)]
EXACT = ("count", "whole", "low", "high", "low_at", "high_at", "lower", "upper")


def random_tensor(shape, dtype, g: torch.Generator, spread: int = 5) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    if dtype.is_floating_point:
        x = (torch.randn(shape, generator=g, dtype=torch.float64) * spread).to(dtype)
        return x.masked_fill(torch.rand(shape, generator=g) < 0.01, float("nan"))
    info = torch.iinfo(dtype)
    if torch.rand((), generator=g) < 0.3:  # the extremes of the dtype
        return torch.tensor([info.min, info.max], dtype=dtype)[torch.randint(0, 2, shape, generator=g)]
    low = max(info.min, -spread)
    return torch.randint(low, spread + 1, shape, generator=g).to(torch.int64).to(dtype)


def cases(count: int, seed: int):
    """``count`` random ``(input, labels, index)`` calls."""
    g = torch.Generator().manual_seed(seed)
    indices = [None, 1, [1, 2, 3], [-2, 0, 5, 5, 2, 70000], [3, 2**40, -2**40, 3], list(range(-1, 80)), []]
    for k in range(count):
        shape = SHAPES[k % len(SHAPES)]
        dtype = VALUE_DTYPES[k % len(VALUE_DTYPES)]
        label_dtype = LABEL_DTYPES[(k // 2) % len(LABEL_DTYPES)]
        x = random_tensor(shape, dtype, g)
        label_shape = (shape[0], 1 if k % 3 == 0 else shape[1], *shape[2:])
        labels = random_tensor(label_shape, label_dtype, g, spread=4)
        if k % 7 == 6 and label_dtype == torch.int64:
            labels = labels * 2**40  # huge labels: the sorted table
        index = indices[k % len(indices)]
        yield x, (None if k % 11 == 10 else labels), (None if k % 11 == 10 else index)


def tables_of(x, labels, index, backend):
    rule = _regions._rule(x, labels, index)
    names = ["sum", "low_at", "high_at", "moments", "bounds", "squares"]
    if not x.dtype.is_floating_point:
        names.append("whole")
    return (_regions._native if backend == "native" else _regions._torch)(x, rule, frozenset(names))


def assert_tables(got: dict, expected: dict, where: str):
    assert got.keys() >= expected.keys(), where
    for name, want in expected.items():
        have = got[name]
        assert have.shape == want.shape and have.dtype == want.dtype, (where, name, have.dtype, want.dtype)
        a, b = have.double().numpy(), want.double().numpy()
        if name in EXACT:
            if have.dtype in (torch.int64, torch.uint64):
                assert torch.equal(have, want), (where, name)
            else:
                np.testing.assert_array_equal(a, b, err_msg=f"{where} {name}")
        else:
            scale = np.nanmax(np.abs(b)) if b.size and not np.isnan(b).all() else 1.0
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * max(scale, 1.0), equal_nan=True,
                                       err_msg=f"{where} {name}")


@needs_native
@pytest.mark.parametrize("seed", range(6))
def test_native_tables_match_the_torch_scatters(seed):
    for k, (x, labels, index) in enumerate(cases(24, seed)):
        before = (x.clone(), None if labels is None else labels.clone())
        where = f"case {k}: {x.dtype} {tuple(x.shape)} labels {None if labels is None else labels.dtype} {index}"
        assert_tables(tables_of(x, labels, index, "native"), tables_of(x, labels, index, "torch"), where)
        assert torch.equal(x, before[0]) or torch.equal(x.isnan(), before[0].isnan())
        assert labels is None or torch.equal(labels, before[1])


@needs_native
@pytest.mark.parametrize("threads", [1, 3])
def test_native_bounds_alone_by_runs(threads):
    """Counts and bounds alone (find_objects) go a run of one column at a time: the same tables as the
    torch scatters, on random labels (runs of one voxel), blobs (long runs) and slices split among
    threads mid-row."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(threads)
        blobs = (torch.rand(1, 1, 300, 1000, generator=g) * 4).long().repeat_interleave(7, -1)[..., :1000]
        calls = [(x, labels, index) for x, labels, index in cases(24, 7 + threads)] + [
            (torch.zeros(blobs.shape), blobs, None), (torch.zeros(blobs.shape), blobs, [0, 1, 3, 9])]
        for k, (x, labels, index) in enumerate(calls):
            rule = _regions._rule(x, labels, index)
            where = f"case {k}: {tuple(x.shape)} {index}"
            assert_tables(_regions._native(x, rule, frozenset({"bounds"})),
                          _regions._torch(x, rule, frozenset({"bounds"})), where)
    finally:
        torch.set_num_threads(previous)


@needs_native
@pytest.mark.parametrize("seed", range(4))
def test_native_medians_match_the_torch_sorts(seed, monkeypatch):
    """region_median's counts, middles and stand-ins against the sorts of the torch backend, and the
    medians of both (NaN last, absent labels, empty slices, every dtype)."""
    from morphaug.ndimage import _statistics

    def same(a, b, where):
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=where)

    for k, (x, labels, index) in enumerate(cases(24, 40 + seed)):
        where = f"case {k}: {x.dtype} {tuple(x.shape)} labels {None if labels is None else labels.dtype} {index}"
        rule = _regions._rule(x, labels, index)
        if x[0, 0].numel():
            native, sorts = _statistics._middles_native(x, rule), _statistics._middles_torch(x, rule)
            count = _regions._pick(rule, native[0])
            same(count, _regions._pick(rule, sorts[0]), where)
            for ours, theirs in zip(native[1:3], sorts[1:3]):  # the middles of the regions with voxels
                same(_regions._pick(rule, ours)[count > 0], _regions._pick(rule, theirs)[count > 0], where)
            assert (native[3] is None) == (sorts[3] is None), where
            if sorts[3] is not None:
                same(native[3], sorts[3], where)
        monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
        with_kernel = ndimage.median(x, labels, index)
        monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
        same(with_kernel, ndimage.median(x, labels, index), where)


@needs_native
@pytest.mark.parametrize("threads", [1, 3])
def test_native_tables_with_chunked_slices(threads):
    """One slice split among threads: tables merged in raster order (the first extremum wins)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(threads)
        x = torch.randint(0, 3, (1, 1, 600, 1000), generator=g).double()  # many ties of the extrema
        labels = torch.randint(0, 4, (1, 1, 600, 1000), generator=g)
        for index in (None, [0, 1, 2, 3, 9], 2):
            assert_tables(tables_of(x, labels, index, "native"), tables_of(x, labels, index, "torch"), str(index))
    finally:
        torch.set_num_threads(previous)


@needs_native
def test_measurements_on_the_kernel_match_scipy():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 2, 17, 23, generator=g, dtype=torch.float64)
    labels = torch.randint(-1, 5, (2, 1, 17, 23), generator=g)
    index = [4, 1, 1, 9, -1]
    for name in ("sum_labels", "mean", "minimum", "maximum", "variance", "standard_deviation", "center_of_mass",
                 "minimum_position", "maximum_position", "extrema"):
        got = getattr(ndimage, name)(x, labels, index)
        for b in range(2):
            for c in range(2):
                want = getattr(ndi, name)(x[b, c].numpy(), labels[b, 0].numpy(), index)
                got_bc = [t[b, c].numpy() for t in got] if isinstance(got, tuple) else got[b, c].numpy()
                if name == "extrema":
                    want = [np.asarray(w) for w in want]
                    for have, expected in zip(got_bc, want):
                        np.testing.assert_allclose(have, expected, rtol=1e-12, err_msg=name)
                else:
                    np.testing.assert_allclose(got_bc, np.asarray(want, dtype=np.float64), rtol=1e-12, atol=1e-12,
                                               err_msg=name)
    boxes, present = ndimage.find_objects(labels.clamp_min(0), max_label=5)
    for b in range(2):
        expected = ndi.find_objects(labels[b, 0].clamp_min(0).numpy(), 5)
        for found, box, slices in zip(present[b, 0], boxes[b, 0], expected):
            assert bool(found) == (slices is not None)
            if slices is not None:
                assert [tuple(s) for s in box.T.tolist()] == [(s.start, s.stop) for s in slices]


@needs_native
def test_the_kernel_takes_the_measurements():
    """The measurements reach region_stats, or fall through where labels broadcast along space."""
    assert _ops.why_not("region_stats", "cpu", torch.uint64, 3) is None
    rule = _regions._rule(torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 1, 4, dtype=torch.int32), [1])
    assert not _regions._TABLES.cases[0].accepts(torch.zeros(1, 1, 4, 4), rule, frozenset())
    with pytest.raises(RuntimeError, match="region_stats"):
        _ops.kernels.region_stats(torch.zeros(1, 1, 4), torch.zeros(1, 1, 5, dtype=torch.int32), None, (1, 0, 1, 0),
                                  2, ())
