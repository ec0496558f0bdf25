"""Distance transforms: parity with scipy.ndimage on every (b, c) slice."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import ndimage as ndi
from torch.utils._python_dispatch import TorchDispatchMode

from conftest import Dispatched, assert_parity, to_numpy
from morphaug import _ops
from morphaug.ndimage import (
    distance_transform_bf,
    distance_transform_cdt,
    distance_transform_edt,
)
from morphaug.ndimage._torch import bf as torch_bf
from morphaug.ndimage._torch import cdt as torch_cdt
from morphaug.ndimage._torch import edt as torch_edt

# Every test runs on the torch backend and on the automatic (native where built) choice.
pytestmark = pytest.mark.usefixtures("backend")

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

INPUT_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                torch.float16, torch.bfloat16, torch.float32, torch.float64]
# probability of foreground, drawn per (b, c) slice: all background, sparse,
# dense, all foreground (no background: SciPy's special results)
DENSITIES = [0.0, 0.05, 0.3, 0.7, 0.95, 1.0]
SIZES = {1: 40, 2: 40, 3: 10, 4: 6}
BF_SIZES = {1: 40, 2: 20, 3: 7, 4: 5}


# --------------------------------------------------------------------------
# inputs and references


@st.composite
def batches(draw, sizes=SIZES):
    """A random input tensor (B, C, *spatial) and the NumPy RNG that made it."""
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, sizes[rank]), min_size=rank, max_size=rank)))
    b, c = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dtype = draw(st.sampled_from(INPUT_DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = rng.choice(DENSITIES, size=(b, c) + (1,) * rank)
    return make_input(rng.random((b, c) + shape) < density, dtype, rng), rng


def make_input(foreground: np.ndarray, dtype: torch.dtype, rng) -> torch.Tensor:
    """``foreground`` as a tensor of ``dtype`` with assorted nonzero values (NaN included)."""
    if dtype == torch.bool:
        return torch.from_numpy(foreground)
    values = rng.integers(1, 5, size=foreground.shape) * rng.choice([-1, 1], size=foreground.shape)
    values = np.where(foreground, values, 0).astype(np.float64)
    if dtype.is_floating_point:
        values[foreground & (rng.random(foreground.shape) < 0.1)] = np.nan
    return torch.from_numpy(values).to(dtype)


def reference(fn, x: torch.Tensor, **kwargs):
    """SciPy's (distances (B, C, *spatial), indices (S, B, C, *spatial)), slice by slice."""
    source = to_numpy(x)
    batch, channels, *spatial = source.shape
    dists, inds = [], []
    for b in range(batch):
        for c in range(channels):
            d, i = fn(source[b, c], return_indices=True, **kwargs)
            dists.append(d)
            inds.append(i)
    dists = np.stack(dists).reshape(batch, channels, *spatial)
    inds = np.stack(inds, axis=1).reshape(len(spatial), batch, channels, *spatial)
    return dists, inds


def feature_distances(indices: np.ndarray, sampling) -> np.ndarray:
    """Euclidean distance from every voxel to the voxel its indices point at (float64)."""
    spatial = indices.shape[3:]
    grid = np.indices(spatial)[:, None, None]
    scale = np.broadcast_to(np.asarray(sampling, dtype=np.float64), (len(spatial),))
    diff = (indices - grid) * scale.reshape((-1,) + (1,) * (indices.ndim - 1))
    return np.sqrt((diff ** 2).sum(0))


def assert_unchanged(x, before):
    torch.testing.assert_close(x, before, rtol=0, atol=0, equal_nan=True)


def sampling_strategy(rank):
    value = st.floats(0.25, 4.0).map(lambda v: round(v, 2))
    return st.one_of(st.none(), value, st.lists(value, min_size=rank, max_size=rank))


# --------------------------------------------------------------------------
# distance_transform_edt


@SETTINGS
@given(case=batches(), data=st.data())
def test_edt_matches_scipy(device, case, data):
    x, _ = case
    rank = x.ndim - 2
    sampling = data.draw(sampling_strategy(rank), label="sampling")
    out_dtype = data.draw(st.sampled_from([None, torch.float32, torch.float64]), label="distances")
    x = x.to(device)
    before = x.clone()

    distances = None
    if out_dtype is not None:
        distances = torch.full(x.shape, -5.0, dtype=out_dtype, device=device)
    result = distance_transform_edt(x, sampling=sampling, return_indices=True, distances=distances)
    if distances is None:
        dist, inds = result
        assert dist.dtype == torch.float32
    else:
        dist, inds = distances, result
    assert inds.dtype == torch.int32 and inds.device == x.device
    assert_unchanged(x, before)

    expected_d, expected_i = reference(ndi.distance_transform_edt, x, sampling=sampling)
    got_d, got_i = to_numpy(dist), to_numpy(inds)
    rtol = 1e-6 if dist.dtype == torch.float32 else 1e-15  # torch's sqrt: within 1 ulp
    np.testing.assert_allclose(got_d, expected_d, rtol=rtol, atol=0)
    if dist.dtype == torch.float64 and sampling is None:
        assert_parity(np.rint(got_d ** 2), np.rint(expected_d ** 2), exact=True, where="squared distances")
    native_float64 = dist.dtype == torch.float64 and os.environ["MORPHAUG_BACKEND"] != "torch"
    if sampling is None or native_float64:  # SciPy's arithmetic, SciPy's ties
        assert_parity(got_i, expected_i, exact=True, where="indices")
    else:  # ties may be broken otherwise at distances equal up to rounding
        np.testing.assert_allclose(feature_distances(got_i, sampling), expected_d,
                                   rtol=1e-6, atol=0)
        has_background = (to_numpy(x) == 0).reshape(x.shape[0], x.shape[1], -1).any(-1)
        for b, c in zip(*np.nonzero(has_background)):
            assert not to_numpy(x)[b, c][tuple(got_i[:, b, c].reshape(rank, -1))].any()


def test_edt_squared_distances_are_exact_integers():
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.random((2, 2, 37, 29)) < 0.97)
    squared, _ = torch_edt.edt(x, None, False, torch.float32)
    assert not squared.dtype.is_floating_point
    expected, _ = reference(ndi.distance_transform_edt, x)
    assert_parity(squared.numpy(), np.rint(expected ** 2).astype(np.int64), exact=True, where="squared distances")


def test_edt_without_background_measures_to_minus_one_zero():
    x = torch.ones(1, 2, 3, 4)
    x[0, 1, 2, 3] = 0  # the second slice has one background voxel
    dist, inds = distance_transform_edt(x, sampling=(2.0, 3.0), return_indices=True)
    expected_d, expected_i = reference(ndi.distance_transform_edt, x, sampling=(2.0, 3.0))
    assert_parity(to_numpy(inds), expected_i, exact=True, where="indices")
    np.testing.assert_allclose(to_numpy(dist), expected_d, rtol=1e-6)
    assert (inds[0, 0, 0] == -1).all() and (inds[1, 0, 0] == 0).all()


@pytest.mark.parametrize("short_line", [64, 1])
def test_edt_chunking_bounds_memory(monkeypatch, short_line):
    """A 64^3 volume in blocks of at most 2^15 candidates (plus one line), every pair at once
    or by levels: never O(N^2) intermediates."""
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")  # the chunking is the torch backend's
    rng = np.random.default_rng(4)
    x = torch.from_numpy(rng.random((1, 1, 64, 64, 64)) < 0.999)
    expected_d, expected_i = reference(ndi.distance_transform_edt, x)

    budget = 1 << 15
    largest = []
    first_argmin = torch_edt._first_argmin

    def recording(g, cost):
        n = g.shape[1]
        largest.append(g.numel() * (n if n <= short_line else 2))
        return first_argmin(g, cost)

    monkeypatch.setattr(torch_edt, "_ENVELOPE_BLOCK", budget)
    monkeypatch.setattr(torch_edt, "_SHORT_LINE", short_line)
    monkeypatch.setattr(torch_edt, "_first_argmin", recording)
    dist, inds = distance_transform_edt(x, return_indices=True)
    assert max(largest) <= budget and len(largest) > 1
    np.testing.assert_allclose(dist.numpy(), expected_d, rtol=1e-6, atol=0)
    assert_parity(inds.numpy(), expected_i, exact=True, where="indices")


@pytest.mark.parametrize("short_line", [64, 1])
def test_edt_blocks_along_lines(monkeypatch, short_line):
    """Lines longer than the block budget allows are split along the candidates too."""
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.random((2, 3, 9, 70)) < 0.9)
    monkeypatch.setattr(torch_edt, "_ENVELOPE_BLOCK", 100)
    monkeypatch.setattr(torch_edt, "_SHORT_LINE", short_line)
    dist, inds = distance_transform_edt(x, sampling=[1.5, 0.5], return_indices=True)
    expected_d, _ = reference(ndi.distance_transform_edt, x, sampling=[1.5, 0.5])
    np.testing.assert_allclose(dist.numpy(), expected_d, rtol=1e-6, atol=0)
    np.testing.assert_allclose(feature_distances(inds.numpy(), [1.5, 0.5]), expected_d, rtol=1e-6)
    exact_d, exact_i = distance_transform_edt(x, return_indices=True)
    expected_d, expected_i = reference(ndi.distance_transform_edt, x)
    np.testing.assert_allclose(exact_d.numpy(), expected_d, rtol=1e-6, atol=0)
    assert_parity(exact_i.numpy(), expected_i, exact=True, where="indices")


# --------------------------------------------------------------------------
# distance_transform_cdt


@SETTINGS
@given(case=batches(), data=st.data())
def test_cdt_matches_scipy(device, case, data):
    x, rng = case
    rank = x.ndim - 2
    kinds = ["taxicab", "cityblock", "manhattan", "chessboard", "array", "tensor", "list"]
    kind = data.draw(st.sampled_from(kinds), label="metric")
    structure = rng.random((3,) * rank) < 0.5
    metric = {"array": structure, "tensor": torch.from_numpy(structure).to(device),
              "list": structure.astype(int).tolist()}.get(kind, kind)
    scipy_metric = structure if kind in ("array", "tensor", "list") else kind
    preallocate = data.draw(st.booleans(), label="preallocate")
    x = x.to(device)
    before = x.clone()

    if preallocate:
        distances = torch.full(x.shape, 7, dtype=torch.int32, device=device)
        indices = torch.full((rank,) + tuple(x.shape), 7, dtype=torch.int32, device=device)
        assert distance_transform_cdt(x, metric, return_indices=True,
                                      distances=distances, indices=indices) is None
        dist, inds = distances, indices
    else:
        dist, inds = distance_transform_cdt(x, metric, return_indices=True)
    assert dist.dtype == torch.int32 and inds.dtype == torch.int32
    assert_unchanged(x, before)

    expected_d, expected_i = reference(ndi.distance_transform_cdt, x, metric=scipy_metric)
    assert_parity(to_numpy(dist), expected_d, exact=True, where="distances")
    assert_parity(to_numpy(inds), expected_i, exact=True, where="indices")


def test_cdt_without_background_keeps_minus_one_and_own_index():
    x = torch.ones(2, 1, 3, 4, dtype=torch.uint8)
    x[1, 0, 0, 0] = 0
    dist, inds = distance_transform_cdt(x, "taxicab", return_indices=True)
    expected_d, expected_i = reference(ndi.distance_transform_cdt, x, metric="taxicab")
    assert_parity(dist.numpy(), expected_d, exact=True, where="distances")
    assert_parity(inds.numpy(), expected_i, exact=True, where="indices")
    assert (dist[0] == -1).all()
    assert torch.equal(inds[:, 0, 0], torch.from_numpy(np.indices((3, 4)).astype(np.int32)))


def test_cdt_unreachable_voxels_stay_minus_one():
    """A metric without neighbours reaches nothing: SciPy's -1 and own index."""
    structure = np.zeros((3, 3), dtype=bool)
    structure[1, 1] = True
    rng = np.random.default_rng(6)
    x = torch.from_numpy(rng.random((2, 2, 6, 7)) < 0.5)
    dist, inds = distance_transform_cdt(x, structure, return_indices=True)
    expected_d, expected_i = reference(ndi.distance_transform_cdt, x, metric=structure)
    assert_parity(dist.numpy(), expected_d, exact=True, where="distances")
    assert_parity(inds.numpy(), expected_i, exact=True, where="indices")
    assert (dist[x] == -1).all()


def test_cdt_named_metrics_are_exact_l1_and_linf():
    rng = np.random.default_rng(7)
    x = torch.from_numpy(rng.random((2, 1, 6, 5, 7)) < 0.9)
    taxicab = distance_transform_cdt(x, "taxicab")
    chessboard = distance_transform_cdt(x, "chessboard")
    assert torch.equal(taxicab, distance_transform_bf(x, "taxicab"))
    assert torch.equal(chessboard, distance_transform_bf(x, "chessboard"))


@pytest.mark.parametrize("sweeps", [True, False])
@pytest.mark.parametrize("metric", ["chessboard", "taxicab"])
def test_cdt_torch_sweeps_and_wavefronts_match_scipy(sweeps, metric, monkeypatch):
    """The torch backend's two algorithms for the named metrics, each forced, ranks 1 to 4."""
    monkeypatch.setattr(torch_cdt, "_sweeps_are_cheaper", lambda spatial: sweeps)
    if not sweeps:  # taxicab always sweeps, unless it is not recognised
        monkeypatch.setattr(torch_cdt, "taxicab_neighbourhood",
                            lambda rank: np.zeros((3,) * rank, dtype=bool))
    rng = np.random.default_rng(11)
    for rank in range(1, 5):
        for _ in range(4):
            shape = tuple(int(n) for n in rng.integers(1, 7 - rank, size=rank))
            x = torch.from_numpy(rng.random((2, 2, *shape)) < rng.uniform(0.3, 1.0))
            structure = ndi.generate_binary_structure(rank, rank if metric == "chessboard" else 1)
            dist, inds = torch_cdt.cdt(x, structure, True)
            alone, _ = torch_cdt.cdt(x, structure, False)
            expected_d, expected_i = reference(ndi.distance_transform_cdt, x, metric=metric)
            assert_parity(dist.numpy(), expected_d, exact=True, where=f"distances {shape}")
            assert_parity(alone.numpy(), expected_d, exact=True, where=f"distances without indices {shape}")
            assert_parity(inds.numpy(), expected_i, exact=True, where=f"indices {shape}")


def raster_pass(values: np.ndarray) -> np.ndarray:
    """SciPy's chessboard raster pass (``NI_DistanceTransformOnePass``'s values) on every
    ``values[b]``, voxel by voxel: the minimum of its own value and ``neighbour + 1`` over
    the first-half offsets, inside the array."""
    values = values.astype(np.int64)
    spatial = values.shape[1:]
    cube = (3,) * len(spatial)
    offsets = [np.array(np.unravel_index(k, cube)) - 1 for k in range(3 ** len(spatial) // 2)]
    for x in np.ndindex(*spatial):
        for o in offsets:
            y = np.asarray(x) + o
            if ((y >= 0) & (y < spatial)).all():
                values[(slice(None), *x)] = np.minimum(values[(slice(None), *x)], values[(slice(None), *y)] + 1)
    return values


@pytest.mark.parametrize("forced", [None, "matrix", "steps"])
@pytest.mark.parametrize("sequential_axis", [1, 3, 8])
def test_chessboard_pass_by_scans_matches_the_raster_pass(sequential_axis, forced, backend, monkeypatch):
    """The chessboard pass is min-plus linear: on one input per voxel (0 there, unreached
    elsewhere) it gives the path lengths between every pair of voxels, so matching SciPy's
    raster pass on those matches it on any input. Scans on every axis longer than
    ``sequential_axis``: borders, axes of 1 and 2 voxels, later axes of unequal lengths
    (where the scan's ``(C B)^s = C B^s`` fails without its padding); the method the cost
    model picks, or the matrix scan or the steps on every such axis."""
    if backend != "torch":
        pytest.skip("a torch kernel, called directly: the torch backend's run covers it")
    monkeypatch.setattr(torch_cdt, "_SEQUENTIAL_AXIS", sequential_axis)
    if forced:
        chosen = torch_cdt._long_axis_method
        monkeypatch.setattr(torch_cdt, "_long_axis_method",
                            lambda n, later: forced if chosen(n, later) != "steps" else "steps")
    for shape in [(11,), (1, 12), (40, 7), (9, 1), (17, 2), (20, 3, 5), (12, 5, 3), (10, 1, 4),
                  (9, 2, 6), (13, 6, 2), (4, 3, 5), (9, 3, 2, 4), (10, 2, 5, 1), (9, 4, 1, 3)]:
        size = int(np.prod(shape))
        units = np.where(np.eye(size, dtype=bool), 0, torch_cdt._CDT_INF).reshape(size, *shape)
        got = torch_cdt._chessboard_closure(torch.from_numpy(units).to(torch.int32), 1)
        expected = np.minimum(raster_pass(units), torch_cdt._CDT_INF)
        assert_parity(got.numpy(), expected, exact=True, where=f"pass {shape}")


@pytest.mark.parametrize("sequential_axis", [1, 8])
@pytest.mark.parametrize("seed", range(6))
def test_cdt_with_indices_matches_scipy_on_drawn_shapes(seed, sequential_axis, backend, monkeypatch):
    """Chessboard and taxicab, distances and indices asked for in every combination: ranks
    1 to 4, axes of odd, even and 1 voxels, long first axes with 1 to 3 later ones, sparse
    and dense foreground, slices all foreground or all background, batches. The torch
    backend with scans on every axis longer than ``sequential_axis`` too."""
    if sequential_axis != 8 and backend != "torch":
        pytest.skip("only the torch backend scans")
    monkeypatch.setattr(torch_cdt, "_SEQUENTIAL_AXIS", sequential_axis)
    rng = np.random.default_rng([35, seed])
    for _ in range(6):
        rank = int(rng.integers(1, 5))
        shape = [int(rng.integers(1, 8 if rank < 4 else 5)) for _ in range(rank)]
        if rank > 1 and rng.random() < 0.4:
            shape[0] = int(rng.integers(20, 120))
        batch = (int(rng.integers(1, 3)), int(rng.integers(1, 4)))
        x = rng.random((*batch, *shape)) < rng.choice([0.2, 0.7, 0.95, 1.0])
        x[0, 0] = rng.random() < 0.5  # a slice all foreground or all background
        x = torch.from_numpy(x)
        metric = str(rng.choice(["chessboard", "taxicab"]))
        expected_d, expected_i = reference(ndi.distance_transform_cdt, x, metric=metric)
        dist, inds = distance_transform_cdt(x, metric, return_indices=True)
        assert_parity(dist.numpy(), expected_d, exact=True, where=f"distances {metric} {tuple(x.shape)}")
        assert_parity(inds.numpy(), expected_i, exact=True, where=f"indices {metric} {tuple(x.shape)}")
        alone = distance_transform_cdt(x, metric, return_distances=False, return_indices=True)
        assert_parity(alone.numpy(), expected_i, exact=True, where=f"indices alone {metric} {tuple(x.shape)}")
        assert_parity(distance_transform_cdt(x, metric).numpy(), expected_d, exact=True, where=f"distances alone {metric}")


@pytest.mark.parametrize("rank", [5, 6, 7, 8])
@pytest.mark.parametrize("metric", ["chessboard", "taxicab"])
def test_cdt_high_ranks_match_scipy(rank, metric):
    """Beyond the native kernel's 6 axes too (the torch backend)."""
    rng = np.random.default_rng(rank)
    shape = tuple(int(n) for n in rng.integers(1, 4, size=rank))
    x = make_input(rng.random((2, 1, *shape)) < 0.8, torch.float32, rng)
    dist, inds = distance_transform_cdt(x, metric, return_indices=True)
    expected_d, expected_i = reference(ndi.distance_transform_cdt, x, metric=metric)
    assert_parity(dist.numpy(), expected_d, exact=True, where="distances")
    assert_parity(inds.numpy(), expected_i, exact=True, where="indices")


class _KernelCount(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("metric, most", [("chessboard", 20_000), ("taxicab", 2_000)])
def test_cdt_beyond_the_native_axes_takes_few_kernels(metric, most):
    """An 8-D 2^8 CDT with indices takes about 9000 (chessboard) or 600 (taxicab) small
    kernels on the torch backend; the wavefronts of rows took 8 million (13 s)."""
    x = torch.from_numpy(np.random.default_rng(8).random((2, 1) + (2,) * 8) < 0.7)
    with _KernelCount() as counter:
        distance_transform_cdt(x, metric, return_indices=True)
    assert counter.count < most


# --------------------------------------------------------------------------
# distance_transform_bf


@SETTINGS
@given(case=batches(BF_SIZES), data=st.data())
def test_bf_matches_scipy(device, case, data):
    x, _ = case
    rank = x.ndim - 2
    metric = data.draw(st.sampled_from(
        ["euclidean", "taxicab", "cityblock", "Manhattan", "CHESSBOARD"]), label="metric")
    sampling = data.draw(sampling_strategy(rank), label="sampling")
    euclidean = metric == "euclidean"
    out_dtype = data.draw(st.sampled_from([None, torch.float64 if euclidean else torch.int32]),
                          label="distances")
    x = x.to(device)
    before = x.clone()

    distances = None if out_dtype is None else torch.zeros(x.shape, dtype=out_dtype, device=device)
    result = distance_transform_bf(x, metric, sampling, return_indices=True, distances=distances)
    dist, inds = result if distances is None else (distances, result)
    default = torch.float32 if euclidean else torch.int32
    assert dist.dtype == (out_dtype or default)
    assert_unchanged(x, before)

    expected_d, expected_i = reference(ndi.distance_transform_bf, x, metric=metric,
                                       sampling=sampling)
    got_d, got_i = to_numpy(dist), to_numpy(inds)
    if not euclidean:  # SciPy's uint32 4294967295 (no background) is -1 in int32
        assert_parity(got_d, expected_d.astype(np.int32), exact=True, where="distances")
        assert_parity(got_i, expected_i, exact=True, where="indices")
    elif dist.dtype == torch.float64:  # SciPy's float64 arithmetic: identical ties
        np.testing.assert_allclose(got_d, expected_d, rtol=1e-15, atol=0)
        assert_parity(got_i, expected_i, exact=True, where="indices")
    else:
        expected_d = np.where(expected_d > np.finfo(np.float32).max, np.inf, expected_d)
        np.testing.assert_allclose(got_d, expected_d, rtol=1e-6, atol=0)
        if sampling is None:
            assert_parity(got_i, expected_i, exact=True, where="indices")
        else:
            finite = np.isfinite(expected_d)
            np.testing.assert_allclose(feature_distances(got_i, sampling)[finite],
                                       expected_d[finite], rtol=1e-6, atol=0)


def test_bf_without_background():
    x = torch.ones(1, 1, 2, 3)
    for metric, expected in [("euclidean", torch.inf), ("taxicab", -1), ("chessboard", -1)]:
        dist, inds = distance_transform_bf(x, metric, return_indices=True)
        assert (dist == expected).all() and (inds == 0).all()
    distances = torch.empty(x.shape, dtype=torch.float64)
    distance_transform_bf(x, distances=distances)
    assert (distances == np.sqrt(np.finfo(np.float64).max)).all()


def test_bf_blocks(monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")  # the blocks of the torch backend's pairs
    rng = np.random.default_rng(8)
    x = torch.from_numpy(rng.random((2, 2, 7, 9)) < 0.8)
    full = distance_transform_bf(x, "chessboard", return_indices=True)
    monkeypatch.setattr(torch_bf, "_CHUNK_ELEMENTS", 100)
    blocked = distance_transform_bf(x, "chessboard", return_indices=True)
    assert torch.equal(full[0], blocked[0]) and torch.equal(full[1], blocked[1])
    expected_d, expected_i = reference(ndi.distance_transform_bf, x, metric="chessboard")
    assert_parity(blocked[1].numpy(), expected_i, exact=True, where="indices")


# --------------------------------------------------------------------------
# all three: batching, return values, outputs, errors

FUNCTIONS = {
    "edt": (distance_transform_edt, {}),
    "cdt": (distance_transform_cdt, {"metric": "chessboard"}),
    "bf": (distance_transform_bf, {"metric": "euclidean"}),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_batched_equals_per_sample(device, name):
    fn, kwargs = FUNCTIONS[name]
    rng = np.random.default_rng(9)
    fg = rng.random((3, 2, 9, 12)) < rng.choice(DENSITIES, size=(3, 2, 1, 1))
    x = torch.from_numpy(fg).to(device)
    dist, inds = fn(x, return_indices=True, **kwargs)
    for b in range(3):
        for c in range(2):
            d, i = fn(x[b:b + 1, c:c + 1], return_indices=True, **kwargs)
            assert torch.equal(d[0, 0], dist[b, c])
            assert torch.equal(i[:, 0, 0], inds[:, b, c])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_return_values(name):
    fn, kwargs = FUNCTIONS[name]
    x = torch.tensor([[[[1, 1, 0], [1, 1, 1]]]])
    dist, inds = fn(x, return_indices=True, **kwargs)
    assert inds.shape == (2, 1, 1, 2, 3)

    only = fn(x, **kwargs)
    assert isinstance(only, torch.Tensor) and torch.equal(only, dist)
    only = fn(x, return_distances=False, return_indices=True, **kwargs)
    assert isinstance(only, torch.Tensor) and torch.equal(only, inds)

    distances, indices = torch.empty_like(dist), torch.empty_like(inds)
    assert torch.equal(fn(x, return_indices=True, distances=distances, **kwargs), inds)
    assert torch.equal(distances, dist)
    assert torch.equal(fn(x, return_indices=True, indices=indices, **kwargs), dist)
    assert torch.equal(indices, inds)
    distances.zero_()
    indices.zero_()
    assert fn(x, return_indices=True, distances=distances, indices=indices, **kwargs) is None
    assert torch.equal(distances, dist) and torch.equal(indices, inds)
    # a strided view as the output
    distances_t = torch.empty(dist.shape[::-1], dtype=dist.dtype).permute(3, 2, 1, 0)
    fn(x, distances=distances_t, **kwargs)
    assert torch.equal(distances_t, dist)


def test_edt_float64_distances_output():
    x = torch.tensor([[[0, 1, 1], [1, 1, 1]]]).reshape(1, 1, 2, 3)
    distances = torch.empty(1, 1, 2, 3, dtype=torch.float64)
    assert distance_transform_edt(x, sampling=0.1, distances=distances) is None
    expected = ndi.distance_transform_edt(x[0, 0].numpy(), sampling=0.1)
    np.testing.assert_allclose(distances[0, 0].numpy(), expected, rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("sampling", [None, (0.5, 2.0)])
def test_edt_distances_written_by_the_kernel(dtype, sampling):
    """A contiguous ``distances=`` without indices is written by the kernel itself (its
    ``.out`` variant): no new result copied in; with indices, it is copied."""
    x = torch.from_numpy(np.random.default_rng(11).random((2, 3, 9, 14)) < 0.8)
    expected = torch.from_numpy(np.stack([[ndi.distance_transform_edt(s, sampling=sampling) for s in b]
                                          for b in x.numpy()])).to(dtype)
    # float64: exact on the native kernels; within one ulp on torch's vectorised sqrt (which this CPU's
    # instruction set decides)
    native = _ops.use_native("edt", x)
    tolerance = dict(rtol=1e-6, atol=0) if dtype == torch.float32 else dict(rtol=0 if native else 1e-15, atol=0)
    distances = torch.full(x.shape, 7.0, dtype=dtype)
    with Dispatched() as dispatched:
        assert distance_transform_edt(x, sampling=sampling, distances=distances) is None
    torch.testing.assert_close(distances, expected, **tolerance)
    if native:
        assert dispatched.names[-1].endswith("::edt.out"), dispatched.names
        assert "aten::copy_" not in dispatched.names
    else:
        assert dispatched.names[-1] == "aten::copy_"
    distances.fill_(7.0)
    with Dispatched() as dispatched:
        indices = distance_transform_edt(x, sampling=sampling, distances=distances, return_indices=True)
    torch.testing.assert_close(distances, expected, **tolerance)
    assert indices.shape == (2,) + x.shape and "aten::copy_" in dispatched.names


def test_edt_distances_sharing_memory_with_the_input():
    """``distances=`` may be the (float) input itself: the mask is read first."""
    x = (torch.from_numpy(np.random.default_rng(12).random((2, 1, 8, 8)) < 0.7)).float()
    expected = distance_transform_edt(x)
    same = x.clone()
    assert distance_transform_edt(same, distances=same) is None
    torch.testing.assert_close(same, expected, rtol=0, atol=0)


@pytest.mark.parametrize("sampling", [2, 0.5, [1, 2], (3.0, 0.25), np.array([1.5, 2.5]),
                                      torch.tensor([0.5, 1.0])])
def test_sampling_forms(sampling):
    rng = np.random.default_rng(10)
    x = torch.from_numpy(rng.random((2, 1, 8, 9)) < 0.8)
    dist = distance_transform_edt(x, sampling=sampling)
    expected, _ = reference(ndi.distance_transform_edt, x, sampling=np.asarray(sampling))
    np.testing.assert_allclose(dist.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("shape", [(0, 1, 4), (2, 0, 3, 3), (1, 1, 0, 4), (2, 1, 3, 0)])
def test_empty_inputs(name, shape):
    fn, kwargs = FUNCTIONS[name]
    dist, inds = fn(torch.ones(shape), return_indices=True, **kwargs)
    assert dist.shape == shape and inds.shape == (len(shape) - 2,) + shape
    assert dist.dtype == (torch.int32 if name == "cdt" else torch.float32)


def test_version_counter_untouched():
    x = torch.rand(2, 1, 6, 7) > 0.3
    version = x._version
    for fn, kwargs in FUNCTIONS.values():
        fn(x, return_indices=True, **kwargs)
    assert x._version == version

X = torch.ones(1, 1, 4, 5)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("bad, error, match", [
    (np.ones((1, 1, 4)), TypeError, "input must be a torch.Tensor"),
    (torch.ones(1, 1, 4, dtype=torch.complex64), TypeError, "complex"),
    (torch.ones(4, 5), ValueError, "at least one spatial"),
])
def test_bad_input(name, bad, error, match):
    fn, kwargs = FUNCTIONS[name]
    with pytest.raises(error, match=match):
        fn(bad, **kwargs)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("kwargs, match", [
    ({"return_distances": False}, "at least one of return_distances/return_indices"),
    ({"distances": torch.zeros(1, 1, 4, 5), "return_distances": False, "return_indices": True},
     "return_distances must be True if distances is supplied"),
    ({"indices": torch.zeros(2, 1, 1, 4, 5, dtype=torch.int32)},
     "return_indices must be True if indices is supplied"),
])
def test_return_flag_errors_match_scipy(name, kwargs, match):
    fn, base = FUNCTIONS[name]
    for kind in (ValueError, RuntimeError):  # SciPy raises RuntimeError
        with pytest.raises(kind, match=match):
            fn(X, **base, **kwargs)


@pytest.mark.parametrize("fn", [distance_transform_edt, distance_transform_bf])
@pytest.mark.parametrize("sampling, error, match", [
    ([1.0, 2.0, 3.0], ValueError, "sampling must be a scalar or a sequence of length 2"),
    ([1.0], ValueError, "sampling must be a scalar or a sequence of length 2"),
    (0, ValueError, "positive"),
    ([1.0, -2.0], ValueError, "positive"),
    (float("nan"), ValueError, "positive and finite"),
    (float("inf"), ValueError, "positive and finite"),
    ("a", TypeError, "real numbers"),
    ([1.0, None], TypeError, "real numbers"),
    (True, TypeError, "real numbers"),
])
def test_bad_sampling(fn, sampling, error, match):
    with pytest.raises(error, match=match):
        fn(X, sampling=sampling)


def test_bad_sampling_length_is_also_runtime_error():
    with pytest.raises(RuntimeError, match="sampling"):
        distance_transform_edt(X, sampling=[1, 2, 3])


@pytest.mark.parametrize("metric, error, match", [
    ("euclidean", ValueError, "metric must be 'chessboard'"),
    ("Taxicab", ValueError, "metric must be 'chessboard'"),  # case-sensitive, as SciPy
    (np.ones((3, 4), dtype=bool), ValueError, r"metric must have shape \(3, 3\)"),
    (np.ones((3, 3, 3), dtype=bool), ValueError, r"metric must have shape \(3, 3\)"),
    (np.ones(3, dtype=bool), ValueError, r"metric must have shape \(3, 3\)"),
    (np.array([["a"] * 3] * 3), ValueError, "real array"),
    (torch.ones(3, 3, dtype=torch.complex64), ValueError, "real array"),
    (object(), ValueError, "real array"),
])
def test_cdt_bad_metric(metric, error, match):
    with pytest.raises(error, match=match):
        distance_transform_cdt(X, metric=metric)


@pytest.mark.parametrize("metric, error", [
    ("minkowski", ValueError), ("", ValueError), (2, TypeError), (np.ones((3, 3)), TypeError),
])
def test_bf_bad_metric(metric, error):
    with pytest.raises(error, match="metric must"):
        distance_transform_bf(X, metric=metric)
    if error is ValueError:  # SciPy: RuntimeError('distance metric not supported')
        with pytest.raises(RuntimeError):
            distance_transform_bf(X, metric=metric)


@pytest.mark.parametrize("fn, kwargs, good", [
    (distance_transform_edt, {}, torch.float32),
    (distance_transform_cdt, {}, torch.int32),
    (distance_transform_bf, {}, torch.float64),
    (distance_transform_bf, {"metric": "taxicab"}, torch.int32),
])
def test_bad_distances_output(fn, kwargs, good):
    wrong_dtype = torch.int64 if good.is_floating_point else torch.float32
    cases = [
        ([1, 2, 3], TypeError, "distances must be None or a torch.Tensor"),
        (torch.zeros(1, 1, 4, 4, dtype=good), ValueError, "distances has shape"),
        (torch.zeros(1, 1, 4, 5, dtype=wrong_dtype), TypeError, "distances must have dtype"),
        (torch.zeros(1, 1, 4, 5, dtype=good, device="meta"), ValueError, "distances is on meta"),
    ]
    for distances, error, match in cases:
        with pytest.raises(error, match=match):
            fn(X, distances=distances, **kwargs)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_bad_indices_output(name):
    fn, kwargs = FUNCTIONS[name]
    cases = [
        (np.zeros((2, 1, 1, 4, 5), dtype=np.int32), TypeError,
         "indices must be None or a torch.Tensor"),
        (torch.zeros(1, 1, 4, 5, dtype=torch.int32), ValueError, "indices has shape"),
        (torch.zeros(2, 1, 1, 5, 4, dtype=torch.int32), ValueError, "indices has shape"),
        (torch.zeros(2, 1, 1, 4, 5, dtype=torch.int64), TypeError, "indices must have dtype"),
        (torch.zeros(2, 1, 1, 4, 5, dtype=torch.int32, device="meta"), ValueError,
         "indices is on meta"),
    ]
    for indices, error, match in cases:
        with pytest.raises(error, match=match):
            fn(X, return_indices=True, indices=indices, **kwargs)
    with pytest.raises(RuntimeError, match="indices has shape"):  # SciPy: RuntimeError
        fn(X, return_indices=True, indices=cases[1][0], **kwargs)
