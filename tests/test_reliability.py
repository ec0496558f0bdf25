"""Reliability (issue 35): the torch backend within bounded memory and time, threads sharing
the caches, axes longer than the native kernels' indices, and replayed parameters.

The memory bounds are measured in a fresh process (``ru_maxrss`` after the call minus before
it, the input already built), where no earlier test's peak hides the call's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from conftest import assert_parity, run_in_threads

from morphaug import _ops, ndimage
from morphaug.ndimage import _grey_filter
from morphaug.ndimage._torch import edt as torch_edt
from morphaug.transforms import KeepLargestComponents, RandGreyMorphology, RemoveSmallComponents

ROOT = Path(__file__).resolve().parents[1]

MEASURE = """
import json, resource, sys, time
import torch
from morphaug import ndimage
x = eval(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
result = eval(sys.argv[2])
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"seconds": seconds, "peak_mib": peak / 1024}))
"""


def measure(make_input: str, call: str, backend: str = "torch") -> dict:
    """Seconds and peak memory growth (MiB) of ``call`` on ``x = make_input`` in a fresh process."""
    env = dict(os.environ, MORPHAUG_BACKEND=backend, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", MEASURE, make_input, call], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


# --------------------------------------------------------------------------
# the torch backend: bounded memory and time


def test_torch_edt_of_a_long_later_axis_takes_linear_memory():
    """(1, 1, 2, 12000) with indices: +1.6 GB and 9 s before (an n x n weight matrix per axis),
    now a few MiB; (1, 1, 2, 200000) would have needed 320 GB."""
    short = measure("torch.rand(1, 1, 2, 12000) < 0.999",
                    "ndimage.distance_transform_edt(x, return_indices=True)")
    assert short["peak_mib"] < 100 and short["seconds"] < 20, short
    long = measure("torch.rand(1, 1, 2, 200000) < 0.999",
                   "ndimage.distance_transform_edt(x, return_indices=True)")
    assert long["peak_mib"] < 300 and long["seconds"] < 40, long


def test_torch_chessboard_cdt_of_a_long_first_axis_is_vectorised():
    """(100000, 1): 10-15 s before (one Python step per voxel of the first axis), now well under
    a second; (10^6, 1, 1): 218 s before."""
    for shape in ["1, 1, 100000, 1", "1, 1, 1000000, 1, 1"]:
        got = measure(f"torch.rand({shape}) < 0.999", "ndimage.distance_transform_cdt(x)")
        assert got["seconds"] < 10 and got["peak_mib"] < 400, (shape, got)


@pytest.mark.parametrize("metric", ["chessboard", "taxicab"])
def test_torch_cdt_with_indices_of_a_long_first_axis_is_vectorised(metric):
    """With indices, chessboard: (100000, 1) took 110 s, (20000, 3, 3) 52 s and (20000, 3, 5)
    16 s before (one Python step per slice of the first axis), now 0.15 s, 0.9 s and 0.5 s
    with 20 MiB (one thread, on a loaded 2-core machine); taxicab 0.06 s and 0.3 s. The bound
    leaves 20 times that."""
    for shape in ["1, 1, 100000, 1", "1, 1, 20000, 3, 3", "1, 1, 20000, 3, 5"]:
        got = measure(f"torch.rand({shape}) < 0.999",
                      f"ndimage.distance_transform_cdt(x, {metric!r}, return_indices=True)")
        assert got["seconds"] < 20 and got["peak_mib"] < 200, (shape, got)


@pytest.mark.parametrize("short_line", [64, 1])
def test_torch_separable_steps_match_scipy(short_line, monkeypatch):
    """The EDT (values, indices, sampling) and the chessboard CDT without indices, with lines
    compared pair by pair or by levels, in blocks of a few candidates."""
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    monkeypatch.setattr(torch_edt, "_SHORT_LINE", short_line)
    monkeypatch.setattr(torch_edt, "_ENVELOPE_BLOCK", 50)
    rng = np.random.default_rng(35)
    for shape in [(2, 1, 3, 40), (1, 2, 5, 6, 7), (1, 1, 1, 90), (2, 1, 70)]:
        x = rng.random(shape) < rng.uniform(0.5, 1.0)
        x[0, 0] = True  # a slice without background
        t = torch.from_numpy(x)
        dist, inds = ndimage.distance_transform_edt(t, return_indices=True)
        chess = ndimage.distance_transform_cdt(t)
        sampling = tuple(rng.uniform(0.5, 2.0, size=len(shape) - 2))
        scaled = ndimage.distance_transform_edt(t, sampling=sampling)
        for b in range(shape[0]):
            for c in range(shape[1]):
                d, i = ndi.distance_transform_edt(x[b, c], return_indices=True)
                assert_parity(dist[b, c], d, exact=False, rtol=1e-6, atol=0)
                assert_parity(inds[:, b, c], i, exact=True)
                assert_parity(chess[b, c], ndi.distance_transform_cdt(x[b, c]), exact=True)
                assert_parity(scaled[b, c], ndi.distance_transform_edt(x[b, c], sampling), exact=False, rtol=1e-6,
                              atol=0)


@pytest.mark.parametrize("transform", [KeepLargestComponents, RemoveSmallComponents])
@pytest.mark.parametrize("backend", ["torch", "auto"])
def test_component_filters_take_empty_batches(transform, backend, monkeypatch):
    """The torch path reshaped ``(0, -1)``: a RuntimeError on every empty batch."""
    monkeypatch.setenv("MORPHAUG_BACKEND", backend)
    kwargs = {"min_size": 2} if transform is RemoveSmallComponents else {}
    x = torch.zeros(0, 1, 4, 5, dtype=torch.int64)
    for classes in [{"num_classes": 3}, {"classes": [1]}]:
        out = transform("label", **classes, **kwargs)(x)
        assert out.shape == x.shape and out.dtype == x.dtype


# --------------------------------------------------------------------------
# threads


def test_grey_box_cache_under_eight_threads():
    """8 threads over 3x more boxes than the cache holds, switching every microsecond: the
    eviction raised ``dictionary changed size during iteration``; results stay SciPy's."""
    sizes = [(a, b) for a in range(1, 15) for b in range(1, 15)]
    assert len(sizes) > 3 * _grey_filter._box_filter.cache_info().maxsize
    x = torch.rand(1, 1, 6, 7)
    expected = {s: ndi.grey_erosion(x[0, 0].numpy(), size=s) for s in sizes}
    errors = []

    def work(seed):
        order = np.random.default_rng(seed).permutation(len(sizes))
        try:
            for k in np.tile(order, 3):
                size = sizes[k]
                got = ndimage.grey_erosion(x, size=size)[0, 0].numpy()
                if not np.array_equal(got, expected[size]):
                    errors.append(f"size {size}: wrong result")
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(repr(error))

    run_in_threads(work, range(8))
    assert not errors, errors[:3]
    info = _grey_filter._box_filter.cache_info()
    assert 0 < info.currsize <= info.maxsize


def test_grey_box_cache_tells_negative_zero_from_zero():
    """The border of ``cval=-0.0`` keeps its sign whatever was called before with ``0.0``."""
    x = torch.ones(1, 1, 4)
    for first, second in [(0.0, -0.0), (-0.0, 0.0)]:
        ndimage.grey_erosion(x, size=3, mode="constant", cval=first)
        got = ndimage.grey_erosion(x, size=3, mode="constant", cval=second)
        expected = ndi.grey_erosion(x[0, 0].numpy(), size=3, mode="constant", cval=second)
        assert np.array_equal(np.signbit(got[0, 0].numpy()), np.signbit(expected)), (first, second)


# --------------------------------------------------------------------------
# long axes


def test_every_kernel_contract_refuses_an_axis_past_its_indices():
    """Each kernel says what it fits; a table falls through a kernel that does not fit, to the
    torch backend, whatever the policy (a stride-0 input: no memory)."""
    long = (2**31 + 1,)
    for name, kernel in _ops.KERNELS.items():
        assert kernel.fits(long) is not None, name
        assert kernel.fits((5, 7)) is None, name
    assert _ops.KERNELS["edt"].fits((2**24,)) is not None
    assert _ops.KERNELS["edt"].fits((2**24 - 1,)) is None
    if _ops.why_not("edt", "cpu") is None:  # built: the misfit is the reason
        assert "does not fit" in _ops.why_not("edt", "cpu", spatial=(2**24,))

    calls = []
    table = _ops.Table("test: a kernel that does not fit", [
        _ops.Case("every call", "label", lambda x: True, lambda x: calls.append("native")),
    ], lambda x: calls.append("torch"))
    try:
        x = torch.zeros(1, 1, 1, dtype=torch.bool).expand(1, 1, 2**31 + 1)
        for policy in ["auto", "native", "torch"]:
            os.environ["MORPHAUG_BACKEND"] = policy
            table(x, x)
    finally:
        os.environ.pop("MORPHAUG_BACKEND", None)
        del _ops.TABLES["test: a kernel that does not fit"]
    assert calls == ["torch"] * 3


@pytest.mark.parametrize("backend", ["auto", "native"])
def test_edt_of_an_axis_past_the_native_limit(backend, monkeypatch):
    """2^24 + 1 voxels along an axis: ``morphaug::edt: spatial size ... exceeds the native limit
    2^24 - 1`` before, SciPy's result now (the torch EDT)."""
    if backend == "native" and _ops.why_not("edt", "cpu"):
        pytest.skip(_ops.why_not("edt", "cpu"))
    monkeypatch.setenv("MORPHAUG_BACKEND", backend)
    n = 2**24 + 1
    x = torch.ones(1, 1, n, dtype=torch.bool)
    x[0, 0, [0, n // 3, n - 1]] = False
    dist = ndimage.distance_transform_edt(x)
    expected = ndi.distance_transform_edt(x[0, 0].numpy())
    assert_parity(dist[0, 0], expected, exact=False, rtol=1e-6, atol=0)
    chess = ndimage.distance_transform_cdt(x[..., :n // 2])
    assert_parity(chess[0, 0], ndi.distance_transform_cdt(x[0, 0, :n // 2].numpy()), exact=True)


# --------------------------------------------------------------------------
# replayed parameters


def test_grey_morphology_refuses_an_empty_replayed_footprint():
    """An all-false ``footprints[b]`` failed inside grey_erosion without naming the parameter,
    also for a sample whose ``apply`` is False."""
    t = RandGreyMorphology("image", prob=1.0, generator=torch.Generator().manual_seed(0))
    x = torch.rand(2, 1, 8, 8)
    t(x)
    params = dict(t.last_params)
    params["footprints"] = params["footprints"].clone()
    params["footprints"][1] = False
    params["apply"] = torch.tensor([True, False])
    with pytest.raises(ValueError, match=r"params\['footprints'\].*samples \[1\]"):
        t(x, params=params)
