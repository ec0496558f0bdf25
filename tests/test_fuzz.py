"""Seeded, randomised differential fuzz of ``morphaug.ndimage`` against SciPy, and
bad-argument probes.

Each case draws its arguments from a NumPy generator seeded with ``(SEED, family,
index)``, so a test id alone reproduces it. A case runs on the automatic backend
choice and on the torch backend (``MORPHAUG_BACKEND``), and every ``(b, c)``
slice of the result is compared with SciPy's result on that slice (SciPy's
``brute_force=True`` semantics for binary ops, see ``morphaug.ndimage._binary``).
Draws stay inside the documented parity domain: no NaN in grey-op inputs, no
integer overflow under a non-flat structure, sorted ``axes``, and elements that
hold their centre when an op repeats to a fixpoint (where SciPy may loop forever).

The probes call each public function with one malformed argument and require a
``ValueError`` or ``TypeError`` whose message names that argument, within a time
limit: never another exception, never a hang, never a silent result.
"""

from __future__ import annotations

import inspect
import math
import signal
import zlib

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity, run_in_threads, slice_element, to_numpy

from morphaug import ndimage

SEED = 20250117
MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-wrap", "grid-constant",
         "grid-mirror"]


@pytest.fixture(params=["auto", "torch"])
def fuzz_backend(request, monkeypatch):
    """The automatic backend choice (native kernels where built), then the torch backend."""
    monkeypatch.setenv("MORPHAUG_BACKEND", request.param)
    return request.param


def _rng(family: str, index: int) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(family.encode()), index])


def _grey(name: str) -> bool:
    """Whether ``name`` is a grey op (not a binary op or a distance transform)."""
    return name.startswith(("grey", "morphological", "white", "black"))


# --------------------------------------------------------------------------
# drawing arguments


def _spatial(rng, rank: int | None = None, max_voxels: int = 240) -> tuple[int, ...]:
    """A spatial shape of rank 1-4 with small sides: 0 (rarely), 1 (often), up to 7."""
    rank = int(rng.integers(1, 5)) if rank is None else rank
    while True:
        shape = tuple(int(n) for n in rng.choice(
            8, size=rank, p=[0.03, 0.17, 0.16, 0.16, 0.16, 0.12, 0.1, 0.1]))
        if math.prod(shape) <= max_voxels:
            return shape


def _batch(rng) -> tuple[int, int]:
    return int(rng.integers(1, 4)), int(rng.integers(1, 3))


def _axes(rng, rank: int):
    """``None`` (every axis) or a sorted, non-empty subset of the spatial axes."""
    if rank == 1 or rng.random() < 0.6:
        return None
    count = int(rng.integers(1, rank + 1))
    return sorted(int(a) for a in rng.choice(rank, size=count, replace=False))


def _foreground(rng, shape, dtype: torch.dtype) -> torch.Tensor:
    """A binary-op input: zeros and nonzeros (NaN included for floats) of ``dtype``."""
    mask = rng.random(shape) < rng.uniform(0.2, 0.9)
    if dtype == torch.bool:
        return torch.from_numpy(mask)
    values = rng.integers(1, 100, size=shape).astype(np.float64)
    if dtype.is_floating_point:
        values[rng.random(shape) < 0.1] = np.nan
        values *= rng.choice([-1.0, 1.0], size=shape)
    return torch.from_numpy(np.where(mask, values, 0.0)).to(dtype)


def _layout(rng, x: torch.Tensor) -> torch.Tensor:
    """``x`` in a random memory layout: as is, a transposed copy, every other element of
    a wider tensor, or its first sample broadcast over the batch (stride 0)."""
    kind = int(rng.integers(4))
    if kind == 1 and x.ndim >= 4:
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if kind == 2:
        wide = torch.zeros(*x.shape[:-1], 2 * x.shape[-1], dtype=x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    if kind == 3:
        return x[:1].expand(x.shape)
    return x


def _element(rng, lead, kshape) -> np.ndarray:
    """A random bool element of shape ``(*lead, *kshape)``."""
    return rng.random((*lead, *kshape)) < rng.uniform(0.3, 0.9)


def _lead(rng, batch: int, channels: int) -> tuple[int, ...]:
    """Leading dimensions of an element: shared, per sample or per sample and channel."""
    return [(), (batch,), (batch, channels)][int(rng.choice(3, p=[0.5, 0.3, 0.2]))]


def _kshape(rng, n_axes: int, longest: int = 4) -> tuple[int, ...]:
    return tuple(int(k) for k in rng.integers(1, longest + 1, size=n_axes))


def _origin(rng, kshape):
    """A valid origin for an element of ``kshape``: an int when one fits every axis."""
    origin = [int(rng.integers(-(k // 2), (k - 1) // 2 + 1)) for k in kshape]
    if len(set(origin)) == 1 and rng.random() < 0.5:
        return origin[0]
    return origin


def _per_axis(origin, n_axes: int) -> list[int]:
    return [origin] * n_axes if isinstance(origin, int) else list(origin)


def _as_argument(rng, array: np.ndarray):
    """An element as a NumPy array, a tensor or nested lists."""
    kind = rng.integers(3)
    return array if kind == 0 else torch.from_numpy(array) if kind == 1 else array.tolist()


def _with_centre(element: np.ndarray, kshape, origin) -> np.ndarray:
    """``element`` with the position that maps a voxel onto itself set, in every sample."""
    element = element.copy()
    centre = tuple(k // 2 + o for k, o in zip(kshape, _per_axis(origin, len(kshape))))
    element[(..., *centre)] = True
    return element


def _output(rng, input: torch.Tensor, dtypes):
    """``output=``: None, a dtype of ``dtypes`` or a tensor of the input's shape."""
    kind = rng.integers(3)
    dtype = dtypes[int(rng.integers(len(dtypes)))]
    if kind == 0:
        return None
    return dtype if kind == 1 else torch.full(input.shape, 7, dtype=dtype)


def _check_output(result, output, dtype):
    """A result honours ``output=`` as SciPy does: written in place, or of the dtype asked for."""
    if isinstance(output, torch.Tensor):
        assert result is output
    else:
        assert result.dtype == (output if isinstance(output, torch.dtype) else dtype)


def _compare(result, input, reference, *, exact=True, atol=0.0, rtol=0.0):
    """Every ``(b, c)`` slice of ``result`` against ``reference(b, c, slice)``."""
    source = to_numpy(input)
    assert_parity(result, lambda b, c: reference(b, c, source[b, c]), exact=exact, atol=atol, rtol=rtol)


def _unchanged(before: torch.Tensor, after: torch.Tensor):
    torch.testing.assert_close(after, before, rtol=0, atol=0, equal_nan=True)


# --------------------------------------------------------------------------
# binary ops

BINARY = ["binary_erosion", "binary_dilation", "binary_opening", "binary_closing"]
#: Input dtypes of the binary ops and distance transforms: nonzero (NaN included) is true.
BINARY_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int64, torch.float16,
                 torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("index", range(100))
def test_binary_ops_match_scipy(index, fuzz_backend):
    rng = _rng("binary", index)
    name = BINARY[index % len(BINARY)]
    batch, channels = _batch(rng)
    shape = _spatial(rng)
    dtype = BINARY_DTYPES[int(rng.integers(len(BINARY_DTYPES)))]
    x = _layout(rng, _foreground(rng, (batch, channels, *shape), dtype))
    axes = _axes(rng, len(shape))
    n_axes = len(shape) if axes is None else len(axes)
    iterations = int(rng.choice([1, 1, 2, 3, 0, -1]))
    kshape = (3,) * n_axes if rng.random() < 0.25 else _kshape(rng, n_axes)
    origin = _origin(rng, kshape)
    structure = None
    if kshape != (3,) * n_axes or rng.random() < 0.5:
        structure = _element(rng, _lead(rng, batch, channels), kshape)
        if iterations < 1:
            structure = _with_centre(structure, kshape, origin)
    mask = None
    if rng.random() < 0.4:  # nonzero is true, whatever the dtype
        mask = rng.random(x.shape if rng.random() < 0.5 else shape) < 0.7
        mask = mask.astype(rng.choice([bool, np.uint8, np.float32]))
    border_value = int(rng.integers(2))
    output = _output(rng, x, [torch.bool, torch.uint8, torch.float32])
    before = x.clone()

    result = getattr(ndimage, name)(
        x, structure=None if structure is None else _as_argument(rng, structure),
        iterations=iterations, mask=mask, output=output, border_value=border_value,
        origin=origin, axes=axes)

    _unchanged(before, x)
    _check_output(result, output, torch.bool)

    def reference(b, c, data):
        element = slice_element(structure, b, c, n_axes)
        if element is None:
            element = ndi.generate_binary_structure(n_axes, 1)
        m = None if mask is None else (mask[b, c] if mask.ndim == x.ndim else mask)
        return getattr(ndi, name)(data, structure=element, iterations=iterations, mask=m,
                                  border_value=border_value, origin=origin, brute_force=True,
                                  axes=axes)

    _compare(result != 0, x, reference)


@pytest.mark.parametrize("index", range(30))
def test_binary_hit_or_miss_matches_scipy(index, fuzz_backend):
    rng = _rng("hit_or_miss", index)
    batch, channels = _batch(rng)
    shape = _spatial(rng)
    x = _layout(rng, _foreground(rng, (batch, channels, *shape), torch.bool))
    axes = _axes(rng, len(shape))
    n_axes = len(shape) if axes is None else len(axes)
    kshape1 = _kshape(rng, n_axes)
    structure1 = _element(rng, _lead(rng, batch, channels), kshape1)
    origin1 = _origin(rng, kshape1)
    structure2 = origin2 = None
    if rng.random() < 0.6:
        kshape2 = kshape1 if rng.random() < 0.5 else _kshape(rng, n_axes)
        structure2 = _element(rng, _lead(rng, batch, channels), kshape2)
        if kshape2 != kshape1 or rng.random() < 0.5:
            origin2 = _origin(rng, kshape2)
    elif rng.random() < 0.5:
        origin2 = _origin(rng, kshape1)

    result = ndimage.binary_hit_or_miss(x, structure1, structure2, origin1=origin1,
                                        origin2=origin2, axes=axes)

    def reference(b, c, data):
        return ndi.binary_hit_or_miss(
            data, slice_element(structure1, b, c, n_axes), slice_element(structure2, b, c, n_axes),
            origin1=origin1, origin2=origin2, axes=axes)

    _compare(result, x, reference)


@pytest.mark.parametrize("index", range(40))
def test_propagation_and_fill_holes_match_scipy(index, fuzz_backend):
    """Both repeat a dilation to its fixpoint: compared with SciPy's definitions of them
    (``brute_force=True``, which SciPy's own functions agree with at ``origin=0``)."""
    rng = _rng("propagation", index)
    batch, channels = _batch(rng)
    shape = _spatial(rng)
    x = _layout(rng, _foreground(rng, (batch, channels, *shape), torch.bool))
    axes = _axes(rng, len(shape))
    n_axes = len(shape) if axes is None else len(axes)
    structure, origin = None, 0
    if rng.random() < 0.6:
        kshape = _kshape(rng, n_axes)
        origin = 0 if rng.random() < 0.5 else _origin(rng, kshape)
        structure = _with_centre(_element(rng, _lead(rng, batch, channels), kshape), kshape, origin)
    argument = None if structure is None else _as_argument(rng, structure)

    def element(b, c):
        found = slice_element(structure, b, c, n_axes)
        return ndi.generate_binary_structure(n_axes, 1) if found is None else found

    if index % 2:
        result = ndimage.binary_fill_holes(x, argument, origin=origin, axes=axes)

        def reference(b, c, data):
            background = ~data.astype(bool)
            reached = ndi.binary_dilation(np.zeros_like(background), element(b, c), -1, background,
                                          border_value=1, origin=origin, brute_force=True,
                                          axes=axes)
            return ~reached
    else:
        mask = rng.random(shape) < 0.7
        border_value = int(rng.integers(2))
        seeds = x & torch.from_numpy(rng.random(x.shape) < 0.2)
        result = ndimage.binary_propagation(seeds, argument, mask, border_value=border_value,
                                            origin=origin, axes=axes)
        x = seeds

        def reference(b, c, data):
            return ndi.binary_dilation(data, element(b, c), -1, mask, border_value=border_value,
                                       origin=origin, brute_force=True, axes=axes)

    _compare(result, x, reference)


# --------------------------------------------------------------------------
# grey ops

GREY = ["grey_erosion", "grey_dilation", "grey_opening", "grey_closing",
        "morphological_gradient", "morphological_laplace", "white_tophat", "black_tophat"]
GREY_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float32,
               torch.float64, torch.bool]


def _grey_input(rng, shape, dtype: torch.dtype) -> torch.Tensor:
    """Values far enough from the dtype's limits that a structure in [-3, 3] cannot overflow."""
    if dtype == torch.bool:
        return torch.from_numpy(rng.random(shape) < 0.5)
    if dtype.is_floating_point:
        return torch.from_numpy(rng.uniform(-4, 4, size=shape)).to(dtype)
    info = torch.iinfo(dtype)
    low, high = max(info.min + 16, -10**6), min(info.max - 16, 10**6)
    return torch.from_numpy(rng.integers(low, high + 1, size=shape)).to(dtype)


def _structure_values(rng, lead, kshape, dtype: torch.dtype) -> np.ndarray:
    """A non-flat structure: small integers (exact in every dtype), floats for float
    input, and, for bool input, bools or any float (SciPy's byte arithmetic)."""
    if dtype.is_floating_point:
        return rng.uniform(-1, 1, size=(*lead, *kshape))
    if dtype == torch.bool and rng.random() < 0.5:
        return rng.choice([rng.uniform(-300, 300), 255.5, -0.5, 3e9], size=(*lead, *kshape))
    values = rng.integers(-3, 4, size=(*lead, *kshape))
    return values.astype(bool) if dtype == torch.bool and rng.random() < 0.5 else values


@pytest.mark.parametrize("index", range(128))
def test_grey_ops_match_scipy(index, fuzz_backend):
    rng = _rng("grey", index)
    name = GREY[index % len(GREY)]
    dtypes = GREY_DTYPES[:-1] if name.startswith("morphological") else GREY_DTYPES
    dtype = dtypes[int(rng.integers(len(dtypes)))]
    batch, channels = _batch(rng)
    shape = _spatial(rng)
    x = _layout(rng, _grey_input(rng, (batch, channels, *shape), dtype))
    axes = _axes(rng, len(shape))
    n_axes = len(shape) if axes is None else len(axes)
    kshape = _kshape(rng, n_axes)
    origin = _origin(rng, kshape)
    kind = int(rng.integers(4))  # size, footprint, structure, both
    size = footprint = structure = None
    mode = str(rng.choice(MODES))
    if kind == 0:
        size = list(kshape) if len(set(kshape)) > 1 or rng.random() < 0.5 else kshape[0]
        if rng.random() < 0.3:
            mode = [str(m) for m in rng.choice(MODES, size=n_axes)]
    lead = _lead(rng, batch, channels)
    if kind in (1, 3):
        footprint = _element(rng, lead, kshape)
        flat = footprint.reshape(-1, math.prod(kshape))
        flat[np.arange(len(flat)), rng.integers(flat.shape[1], size=len(flat))] = True  # never all false
    if kind >= 2:
        structure = _structure_values(rng, lead if kind == 2 else (), kshape, dtype)
    cval = float(rng.integers(0, 2)) if not dtype.is_floating_point else float(rng.uniform(-5, 5))
    output = torch.empty_like(x) if rng.random() < 0.2 else None
    before = x.clone()

    result = getattr(ndimage, name)(
        x, size=size, footprint=None if footprint is None else _as_argument(rng, footprint),
        structure=None if structure is None else _as_argument(rng, structure), output=output,
        mode=mode, cval=cval, origin=origin, axes=axes)

    _unchanged(before, x)
    _check_output(result, output, dtype)

    def reference(b, c, data):
        return getattr(ndi, name)(
            data, size=size, footprint=slice_element(footprint, b, c, n_axes),
            structure=slice_element(structure, b, c, n_axes), mode=mode, cval=cval,
            origin=origin, axes=axes)

    exact = not dtype.is_floating_point
    _compare(result, x, reference, exact=exact, atol=0 if exact else 1e-6)


# --------------------------------------------------------------------------
# distance transforms


def _distance_input(rng):
    batch, channels = _batch(rng)
    shape = _spatial(rng, max_voxels=120)
    dtype = BINARY_DTYPES[int(rng.integers(len(BINARY_DTYPES)))]
    x = _foreground(rng, (batch, channels, *shape), dtype)
    if rng.random() < 0.2 and x.numel():  # one slice without background
        x[0, 0] = 1
    return _layout(rng, x)


def _sampling(rng, rank: int):
    if rng.random() < 0.5:
        return None
    values = rng.uniform(0.3, 3.0, size=rank).round(2)
    return float(values[0]) if rng.random() < 0.3 else values.tolist()


def _indices_buffer(rng, x):
    return torch.full((x.ndim - 2, *x.shape), -7, dtype=torch.int32) if rng.random() < 0.3 else None


def _split(result, return_distances, return_indices, distances, indices):
    """``(distances, indices)`` from what a distance transform returned, or wrote into
    ``distances=`` / ``indices=`` (``None`` for what was not asked for)."""
    returned = list(result) if isinstance(result, tuple) else [] if result is None else [result]
    dist = (distances if distances is not None else returned.pop(0)) if return_distances else None
    feats = (indices if indices is not None else returned.pop(0)) if return_indices else None
    assert not returned
    return dist, feats


@pytest.mark.parametrize("index", range(60))
def test_edt_matches_scipy(index, fuzz_backend):
    rng = _rng("edt", index)
    x = _distance_input(rng)
    sampling = _sampling(rng, x.ndim - 2)
    return_indices = bool(rng.random() < 0.6)
    return_distances = not return_indices or bool(rng.random() < 0.7)
    distances = torch.empty(x.shape, dtype=torch.float64) if return_distances and rng.random() < 0.3 else None
    indices = _indices_buffer(rng, x) if return_indices else None

    result = ndimage.distance_transform_edt(x, sampling, return_distances, return_indices,
                                            distances, indices)
    dist, feats = _split(result, return_distances, return_indices, distances, indices)

    if dist is not None:
        assert dist.dtype == (torch.float32 if distances is None else torch.float64)
        rtol = 1e-6 if dist.dtype == torch.float32 else 1e-12
        _compare(dist, x, lambda b, c, data: ndi.distance_transform_edt(data, sampling),
                 exact=False, rtol=rtol)
    if feats is not None and sampling is None:  # with sampling, ties may round either way
        _compare(feats.movedim(0, -1), x, lambda b, c, data: np.moveaxis(
            ndi.distance_transform_edt(data, return_distances=False, return_indices=True), 0, -1))


@pytest.mark.parametrize("index", range(60))
def test_cdt_matches_scipy(index, fuzz_backend):
    rng = _rng("cdt", index)
    x = _distance_input(rng)
    rank = x.ndim - 2
    metric = str(rng.choice(["chessboard", "taxicab", "cityblock", "manhattan", "array"]))
    if metric == "array":
        metric = _element(rng, (), (3,) * rank)
    return_indices = bool(rng.random() < 0.6)
    return_distances = not return_indices or bool(rng.random() < 0.7)
    distances = torch.empty(x.shape, dtype=torch.int32) if return_distances and rng.random() < 0.3 else None
    indices = _indices_buffer(rng, x) if return_indices else None

    result = ndimage.distance_transform_cdt(x, metric, return_distances, return_indices,
                                            distances, indices)
    dist, feats = _split(result, return_distances, return_indices, distances, indices)

    def scipy_cdt(data):
        return ndi.distance_transform_cdt(data, metric, return_indices=True)

    if dist is not None:
        assert dist.dtype == torch.int32
        _compare(dist, x, lambda b, c, data: scipy_cdt(data)[0])
    if feats is not None:
        _compare(feats.movedim(0, -1), x, lambda b, c, data: np.moveaxis(scipy_cdt(data)[1], 0, -1))


@pytest.mark.parametrize("index", range(30))
def test_long_thin_distances_match_scipy(index, fuzz_backend):
    """Long, thin slices (one axis of 65 to 3000 voxels, the others 1 to 3): the torch
    backend's separable steps by levels (EDT, chessboard CDT) and the native kernels."""
    rng = _rng("long thin", index)
    rank = int(rng.integers(1, 4))
    shape = [int(rng.integers(1, 4)) for _ in range(rank)]
    shape[int(rng.integers(rank))] = int(rng.integers(65, 3000))
    x = torch.from_numpy(rng.random((1, 2, *shape)) < rng.choice([0.9, 0.99, 0.999]))
    if rng.random() < 0.3:
        x[0, 0] = True  # a slice without background
    sampling = _sampling(rng, rank)
    dist, feats = ndimage.distance_transform_edt(x, sampling, return_indices=True)
    _compare(dist, x, lambda b, c, data: ndi.distance_transform_edt(data, sampling), exact=False, rtol=1e-6)
    if sampling is None:
        _compare(feats.movedim(0, -1), x, lambda b, c, data: np.moveaxis(
            ndi.distance_transform_edt(data, return_distances=False, return_indices=True), 0, -1))
    metric = str(rng.choice(["chessboard", "taxicab"]))
    _compare(ndimage.distance_transform_cdt(x, metric), x,
             lambda b, c, data: ndi.distance_transform_cdt(data, metric))


@pytest.mark.parametrize("index", range(20))
def test_long_axis_cdt_with_indices_matches_scipy(index, fuzz_backend):
    """One axis of 65 to 2000 voxels (mostly the first), the others 1 to 4, chessboard or
    taxicab with indices: the torch backend's scans by levels (issue 35) and the native kernels."""
    rng = _rng("long cdt", index)
    rank = int(rng.integers(1, 5))
    shape = [int(rng.integers(1, 5)) for _ in range(rank)]
    shape[0 if rng.random() < 0.7 else int(rng.integers(rank))] = int(rng.integers(65, 2000))
    density = rng.choice([0.5, 0.9, 0.99, 0.999])
    x = torch.from_numpy(rng.random((int(rng.integers(1, 3)), 2, *shape)) < density)
    if rng.random() < 0.3:
        x[0, 0] = True  # a slice without background
    metric = str(rng.choice(["chessboard", "taxicab"]))
    dist, feats = ndimage.distance_transform_cdt(x, metric, return_indices=True)

    def scipy_cdt(data):
        return ndi.distance_transform_cdt(data, metric, return_indices=True)

    _compare(dist, x, lambda b, c, data: scipy_cdt(data)[0])
    _compare(feats.movedim(0, -1), x, lambda b, c, data: np.moveaxis(scipy_cdt(data)[1], 0, -1))


@pytest.mark.parametrize("index", range(4))
def test_grey_ops_from_threads_match_scipy(index, fuzz_backend):
    """8 threads calling grey ops with more distinct boxes than the ops keep, switching every
    microsecond: every result SciPy's, no error."""
    rng = _rng("grey threads", index)
    x = torch.from_numpy(rng.random((1, 1, 7, 6)).astype(np.float32))
    calls = [(str(rng.choice(["grey_erosion", "grey_dilation"])), (int(a), int(b)),
              str(rng.choice(["reflect", "constant", "nearest"])), float(rng.choice([0.0, -0.0, 0.5])))
             for a, b in rng.integers(1, 12, size=(100, 2))]
    errors = []

    def work(seed):
        try:
            for k in np.random.default_rng(seed).permutation(len(calls)):
                name, size, mode, cval = calls[k]
                got = getattr(ndimage, name)(x, size=size, mode=mode, cval=cval)
                want = getattr(ndi, name)(x[0, 0].numpy(), size=size, mode=mode, cval=cval)
                if not (np.array_equal(got[0, 0].numpy(), want)
                        and np.array_equal(np.signbit(got[0, 0].numpy()), np.signbit(want))):
                    errors.append(calls[k])
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(repr(error))

    run_in_threads(work, range(8))
    assert not errors, errors[:3]


@pytest.mark.parametrize("index", range(40))
def test_bf_matches_scipy(index, fuzz_backend):
    rng = _rng("bf", index)
    x = _distance_input(rng)
    metric = str(rng.choice(["euclidean", "taxicab", "cityblock", "manhattan", "chessboard",
                             "EUCLIDEAN"]))
    sampling = _sampling(rng, x.ndim - 2)

    dist, feats = ndimage.distance_transform_bf(x, metric, sampling, return_indices=True)

    def scipy_bf(data):
        return ndi.distance_transform_bf(data, metric.lower(), sampling, return_indices=True)

    def in_float32(data):
        with np.errstate(over="ignore"):  # SciPy's sqrt(DBL_MAX) without background: inf
            return scipy_bf(data)[0].astype(np.float32)

    if metric.lower() == "euclidean":
        assert dist.dtype == torch.float32
        _compare(dist, x, lambda b, c, data: in_float32(data), exact=False, rtol=1e-6)
    else:  # SciPy's uint32, read as int32: 4294967295 is -1
        assert dist.dtype == torch.int32
        _compare(dist, x, lambda b, c, data: scipy_bf(data)[0].view(np.int32))
    if sampling is None or metric.lower() != "euclidean":
        _compare(feats.movedim(0, -1), x, lambda b, c, data: np.moveaxis(scipy_bf(data)[1], 0, -1))


_ELEMENT_OPS = ("binary_", "grey_", "morphological_", "white_", "black_", "distance_")


@pytest.mark.parametrize("name", [n for n in ndimage.__all__ if n.startswith(_ELEMENT_OPS)])
def test_empty_batch(name, fuzz_backend):
    """A batch of no samples, with per-sample elements of no samples, gives empty results."""
    x = torch.zeros(0, 2, 4, 5, dtype=torch.int16 if _grey(name) else torch.bool)
    if name.startswith("distance"):
        arguments = {"return_indices": True}
    else:
        key = "structure1" if name == "binary_hit_or_miss" else "footprint" if _grey(name) else "structure"
        arguments = {key: np.ones((0, 3, 3), dtype=bool)}
    result = getattr(ndimage, name)(x, **arguments)
    for tensor, leading in zip(result if isinstance(result, tuple) else (result,), [(), (2,)]):
        assert tensor.shape == (*leading, *x.shape)


# --------------------------------------------------------------------------
# structuring elements


@pytest.mark.parametrize("index", range(20))
def test_structures_match_scipy(index):
    rng = _rng("structures", index)
    rank, connectivity = int(rng.integers(0, 5)), int(rng.integers(-1, 6))
    assert np.array_equal(ndimage.generate_binary_structure(rank, connectivity).numpy(),
                          ndi.generate_binary_structure(rank, connectivity))
    kshape = _kshape(rng, int(rng.integers(1, 4)), longest=3)
    structure = _element(rng, (), kshape)
    structure.flat[0] = True
    iterations = int(rng.integers(0, 4))
    origin = None if rng.random() < 0.5 else _origin(rng, kshape)
    ours = ndimage.iterate_structure(_as_argument(rng, structure), iterations, origin)
    theirs = ndi.iterate_structure(structure, iterations, origin)
    if isinstance(theirs, tuple):
        assert np.array_equal(ours[0].numpy(), theirs[0]) and list(ours[1]) == list(theirs[1])
    else:
        assert np.array_equal(ours.numpy(), theirs)


# --------------------------------------------------------------------------
# bad-argument probes

_SPARSE = torch.ones(3, 3).to_sparse()


def _probe_values(name: str, rank: int, x: torch.Tensor) -> dict:
    """Malformed values of each argument that ``name`` takes, for an input ``x`` of spatial
    rank ``rank``. Each must be refused with an error naming the argument."""
    wide = (3,) * rank
    expanded = torch.zeros((1,) * x.ndim).expand(x.shape)
    element = [None, 3.5, "abc", object(), np.ones((3,) * (rank + 3)), np.ones((5, *wide)),
               np.zeros((0,) * rank), np.ones(wide, dtype=np.complex64), _SPARSE]
    origin = [1.5, "a", [0] * (rank + 1), 5, -5, [None] * rank]
    values = {
        "input": [None, 3, "abc", [[0, 1]], np.ones((1, 1, 4)), torch.ones(4), torch.ones(1, 4),
                  torch.ones(1, 1, 4, dtype=torch.complex64), x.float().to_sparse(),
                  torch.ones(1, 1, 4, dtype=torch.float8_e4m3fn)],
        "structure": element[1:], "structure1": element[1:], "structure2": element[1:],
        "footprint": element[1:] + [np.zeros(wide, dtype=bool)],
        "origin": origin, "origin1": origin, "origin2": origin,
        "iterations": [1.5, "2", None, [1]],
        "mask": [np.ones((2,) * (x.ndim + 1)), "abc", np.ones(x.shape, dtype=np.complex64),
                 x.to_sparse()],
        "output": [np.zeros(x.shape), "abc", torch.zeros(2, 2), torch.complex64,
                   torch.zeros(x.shape, dtype=torch.complex64), expanded, x.float().to_sparse()],
        "border_value": ["a", 1.5, [1], torch.tensor(1), None],
        "mode": ["bogus", 3, None, ["reflect"] * (rank + 1)],
        "cval": ["a", [1, 2], None, 1j],
        "size": [0, -1, 1.5, "3", [3] * (rank + 1)],
        "axes": [rank, -rank - 1, 1.5, "a", [0, 0], []],
        "sampling": [0, -1.0, math.nan, math.inf, [1.0] * (rank + 1), "a", True, [None] * rank],
        "distances": [np.zeros(x.shape), torch.zeros(2, 2), torch.zeros(x.shape, dtype=torch.int8),
                      expanded, x.float().to_sparse()],
        "indices": [np.zeros((rank, *x.shape), dtype=np.int32), torch.zeros(2, 2, dtype=torch.int32),
                    torch.zeros((rank, *x.shape), dtype=torch.int64),
                    torch.zeros((1,) * (x.ndim + 1), dtype=torch.int32).expand(rank, *x.shape)],
        "rank": [1.5, "2", None, torch.tensor(2)],
        "connectivity": [1.5, "2", None, torch.tensor(2)],
    }
    values.update({  # the measurements' own arguments
        "arr": [None, 3, np.ones((1, 1, 4), np.int64), torch.ones(4, dtype=torch.int64), x.float(), x,
                x.long().to_sparse()],
        "ignore_value": [1.5, "a", torch.tensor(1), [0]],
        "markers": [None, np.zeros(x.shape, np.int64), x.float(), x.to(torch.uint8), torch.zeros(2, 2, dtype=torch.int64),
                    torch.zeros(x.shape, dtype=torch.int64).to_sparse()],
        "min": ["a", None, math.nan, math.inf, True, [0]],
        "max": ["a", None, -math.inf, False, [1], -1.0],
        "bins": [0, -1, 1.5, "3", None],
        "func": [None, "sum", lambda values: values.sum(), np.cumsum],
        "out_dtype": [object, "abc", np.complex64, torch.complex64],
        "default": ["a", [1], 1j],
        "pass_positions": [True, 1, "yes"],
    })
    if name == "distance_transform_cdt":
        values["metric"] = ["bogus", np.ones((2,) * rank), np.ones((3,) * (rank + 1)), object(),
                            np.array(["a"] * 3 ** rank).reshape(wide), _SPARSE]
    if name == "distance_transform_bf":
        values["metric"] = ["bogus", 3, np.ones(3)]
    if name == "iterate_structure":
        values["structure"] = ["abc", np.zeros((0, 3)), np.ones(3, dtype=np.complex64), _SPARSE]
        values["origin"] = ["a", 1.5, [0, 0, 0, 0]]
    return values


def _valid_arguments(name: str, x: torch.Tensor) -> dict:
    """A valid call of ``name`` on ``x``, to break one argument of."""
    if name == "generate_binary_structure":
        return {"rank": 2, "connectivity": 1}
    if name == "iterate_structure":
        return {"structure": np.ones((3, 3), bool), "iterations": 2, "origin": 0}
    if name == "value_indices":
        return {"arr": x.to(torch.int64)}
    arguments = {"input": x}
    if name == "histogram":
        arguments.update(min=0, max=1, bins=3)
    if name == "labeled_comprehension":
        arguments.update(labels=x.long(), index=[0, 1], func=np.sum, out_dtype=float, default=0)
    if name == "watershed_ift":
        arguments.update(input=x.to(torch.uint8), markers=x.to(torch.int16))
    if _grey(name):
        arguments.update(input=x.to(torch.int16), size=3, mode="constant", cval=0)
    if name.startswith("distance"):
        arguments.update(return_indices=True)
    return arguments


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang("no answer within 20 s")


@pytest.mark.parametrize("name", ndimage.__all__)
@pytest.mark.parametrize("index", range(12))
def test_bad_arguments_are_refused(name, index):
    rng = _rng("probe-" + name, index)
    rank = int(rng.integers(1, 4))
    x = torch.from_numpy(rng.random((2, 1, *[4] * rank)) < 0.6)
    arguments = _valid_arguments(name, x)
    candidates = _probe_values(name, rank, x)
    accepted = [p for p in inspect.signature(getattr(ndimage, name)).parameters if p in candidates]
    argument = accepted[int(rng.integers(len(accepted)))]
    bad = candidates[argument][int(rng.integers(len(candidates[argument])))]
    arguments[argument] = bad
    if argument in ("footprint", "structure") and "size" in arguments:
        del arguments["size"]  # SciPy warns that a footprint overrides size
    if argument in ("distances", "indices"):
        arguments.update(return_distances=True, return_indices=True)

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)
    try:
        with pytest.raises((ValueError, TypeError)) as error:
            getattr(ndimage, name)(**arguments)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert argument in str(error.value), f"{argument}={bad!r}: {error.value!r} does not name it"


def test_return_flags_are_checked():
    x = torch.ones(1, 1, 4, dtype=torch.bool)
    for name in ("distance_transform_edt", "distance_transform_cdt", "distance_transform_bf"):
        with pytest.raises(ValueError, match="return_distances/return_indices"):
            getattr(ndimage, name)(x, return_distances=False)
        with pytest.raises(ValueError, match="return_distances must be True if distances"):
            getattr(ndimage, name)(x, return_distances=False, return_indices=True,
                                   distances=torch.empty(x.shape))


# --------------------------------------------------------------------------
# regressions: arguments the checks used to miss


def test_hit_or_miss_default_origin2_is_named_as_such():
    x = torch.ones(1, 1, 4, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"origin2 \(not given, so origin1\) \(1, 1\)"):
        ndimage.binary_hit_or_miss(x, origin1=1, structure2=np.ones((1, 1)))


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")
def test_sparse_and_nested_tensors_are_refused():
    x = torch.ones(2, 1, 4, 4, dtype=torch.bool)
    calls = {
        "input": lambda: ndimage.binary_erosion(x.float().to_sparse()),
        "structure": lambda: ndimage.binary_dilation(x, torch.ones(3, 3).to_sparse_csr()),
        "footprint": lambda: ndimage.grey_erosion(x.float(), footprint=_SPARSE),
        "mask": lambda: ndimage.binary_erosion(x, mask=x.to_sparse()),
        "output": lambda: ndimage.grey_dilation(x.float(), 3, output=x.float().to_sparse()),
        "metric": lambda: ndimage.distance_transform_cdt(x, _SPARSE),
        "distances": lambda: ndimage.distance_transform_edt(x, distances=x.float().to_sparse()),
    }
    for argument, call in calls.items():
        with pytest.raises(TypeError, match=f"^{argument} must be a dense"):
            call()
    nested = torch.nested.nested_tensor([torch.ones(1, 3), torch.ones(1, 4)], layout=torch.jagged)
    with pytest.raises(TypeError, match="input must be a dense .* nested"):
        ndimage.grey_erosion(nested, size=3)


def test_outputs_whose_elements_share_memory_are_refused():
    x = torch.ones(2, 1, 8, 8, dtype=torch.bool)
    shared = torch.zeros(1, 1, 1, 1).expand(2, 1, 8, 8)
    calls = {
        "output": lambda: ndimage.binary_erosion(x, output=shared),
        "distances": lambda: ndimage.distance_transform_cdt(
            x, distances=torch.zeros(1, 1, 1, 1, dtype=torch.int32).expand(2, 1, 8, 8)),
        "indices": lambda: ndimage.distance_transform_edt(
            x, return_indices=True, indices=torch.zeros(1, 1, 1, 1, 1, dtype=torch.int32).expand(
                2, 2, 1, 8, 8)),
    }
    for argument, call in calls.items():
        with pytest.raises(ValueError, match=f"^{argument} has elements that share memory"):
            call()


def test_numpy_views_with_negative_strides_are_taken_as_their_copies():
    """``np.flip`` and ``a[::-1]`` give views that torch cannot share: elements, masks, a CDT
    metric and a measurement index taken from one are read as their copies (they used to
    raise "structure must be array-like, got ndarray")."""
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.random((2, 1, 9, 8)) < 0.5)
    image = torch.from_numpy(rng.random((2, 1, 9, 8)))
    labels, _ = ndimage.label(x)
    calls = {
        "structure": lambda a: ndimage.binary_dilation(x, a),
        "fill_holes structure": lambda a: ndimage.binary_fill_holes(x, a),
        "footprint": lambda a: ndimage.grey_erosion(image, footprint=a),
        "grey structure": lambda a: ndimage.grey_dilation(image, structure=a.astype(float)),
        "mask": lambda a: ndimage.binary_erosion(x, mask=np.pad(a, ((3, 3), (3, 2)))),
        "metric": lambda a: ndimage.distance_transform_cdt(x, a | a[::-1, ::-1]),
        "label structure": lambda a: ndimage.label(x, a | a[::-1, ::-1])[0],
        "index": lambda a: ndimage.sum_labels(image, labels, np.flatnonzero(a.ravel())),
    }
    element = np.array([[0, 1, 1], [0, 1, 0], [1, 1, 0]], bool)
    flipped = element[::-1]
    assert any(stride < 0 for stride in flipped.strides)
    for argument, call in calls.items():
        assert torch.equal(call(flipped), call(flipped.copy())), argument
