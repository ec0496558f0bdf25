"""Grey morphology (``morphaug.ndimage.grey_*``) against ``scipy.ndimage``.

Randomised parity on every (b, c) slice over spatial ranks 1-4, batch and
channel sizes 1-3, ``size`` / footprint / all-true footprint / ``structure``
(shared, per sample, per sample and channel), every border mode, origins,
axes subsets and every supported dtype; then the contracts: input untouched,
batched == per-sample, ``output=``, errors, NaN policy, memory, no host sync.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
import weakref

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import Dispatched, assert_parity, each_slice, slice_element, to_numpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from morphaug import _ops, ndimage
from morphaug.ndimage import _grey_filter

# Every test runs on the torch backend and on the automatic (native where built) choice.
pytestmark = pytest.mark.usefixtures("backend")

OPS = [
    "grey_erosion", "grey_dilation", "grey_opening", "grey_closing",
    "morphological_gradient", "morphological_laplace", "white_tophat", "black_tophat",
]
SUBTRACTING = {"morphological_gradient", "morphological_laplace"}  # no bool input (as SciPy)
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant",
         "grid-wrap"]
KINDS = ["size", "footprint", "all-true", "structure", "structure+footprint"]
LAYOUTS = ["shared", "sample", "sample+channel"]
# Per rank: largest spatial side, largest element side (larger than small inputs,
# so borders fold more than once).
LIMITS = {1: (40, 7), 2: (12, 5), 3: (6, 3), 4: (4, 3)}

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _integer_range(dtype, with_structure):
    """Input value range: the whole dtype, or a margin that ``structure`` cannot overflow."""
    if dtype == torch.uint8:
        return (20, 235) if with_structure else (0, 255)
    if dtype == torch.int8:
        return (-100, 100) if with_structure else (-128, 127)
    return {torch.int16: (-30000, 30000), torch.int32: (-2**30, 2**30),
            torch.int64: (-2**50, 2**50)}[dtype]


def _values(rng, shape, dtype, with_structure=False):
    """Random input values; half types on a grid where all the ops' arithmetic is exact."""
    if dtype == torch.bool:
        return torch.from_numpy(rng.random(shape) < 0.5)
    if dtype == torch.float16:
        return torch.from_numpy(rng.integers(-128, 129, shape) / 8).to(dtype)
    if dtype == torch.bfloat16:
        return torch.from_numpy(rng.integers(-32, 33, shape) / 2).to(dtype)
    if dtype.is_floating_point:
        return torch.from_numpy(rng.standard_normal(shape)).to(dtype)
    low, high = _integer_range(dtype, with_structure)
    return torch.from_numpy(rng.integers(low, high, shape, endpoint=True)).to(dtype)


def _structure_values(rng, shape, dtype):
    """Non-flat elements that keep every result representable (and exact for halves)."""
    if dtype == torch.bool:
        steps = rng.integers(-3, 4, shape) / 4
    elif dtype == torch.float16:
        steps = rng.integers(-16, 17, shape) / 8
    elif dtype == torch.bfloat16:
        steps = rng.integers(-4, 5, shape) / 2
    elif dtype.is_floating_point:
        steps = rng.standard_normal(shape)
    else:
        steps = rng.integers(-40, 41, shape) / 4
    return torch.from_numpy(steps)


@dataclasses.dataclass
class Case:
    input: torch.Tensor
    kwargs: dict            # morphaug and SciPy arguments shared by both
    elements: dict          # footprint / structure: batched morphaug arguments
    n_axes: int

    def per_slice(self, b, c):
        return {name: slice_element(value, b, c, self.n_axes)
                for name, value in self.elements.items()}


def _ensure_true(rng, footprint, n_axes):
    """Give every element slice of ``footprint`` at least one true position."""
    k = footprint.shape[footprint.ndim - n_axes:]
    flat = footprint.reshape(-1, int(np.prod(k)))
    flat[np.arange(flat.shape[0]), rng.integers(0, flat.shape[1], flat.shape[0])] = True
    return flat.reshape(footprint.shape)


@st.composite
def cases(draw, op=None):
    rank = draw(st.integers(1, 4))
    max_side, max_k = LIMITS[rank]
    spatial = tuple(draw(st.integers(1, max_side)) for _ in range(rank))
    batch, channels = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    axes = draw(st.none() | st.permutations(range(rank)).flatmap(
        lambda order: st.integers(1, rank).map(lambda m: tuple(order[:m]))))
    n_axes = rank if axes is None else len(axes)
    dtypes = [d for d in DTYPES if not (op in SUBTRACTING and d == torch.bool)]
    dtype = draw(st.sampled_from(dtypes))
    kind = draw(st.sampled_from(KINDS))
    if kind != "size" and axes is not None:  # element dims follow increasing axes
        axes = tuple(sorted(axes))
    k = tuple(draw(st.integers(1, max_k)) for _ in range(n_axes))
    origin = [draw(st.integers(-(w // 2), (w - 1) // 2)) for w in k]
    separable = kind in ("size", "all-true")
    if separable and draw(st.booleans()):
        mode = [draw(st.sampled_from(MODES)) for _ in range(n_axes)]
    else:
        mode = draw(st.sampled_from(MODES))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    with_structure = kind.startswith("structure")
    x = _values(rng, (batch, channels, *spatial), dtype, with_structure)
    if dtype == torch.bool:
        cval = draw(st.sampled_from([0, 1, 0.5, 1.5, -0.5, True, False]))
    elif dtype == torch.float16:
        cval = draw(st.integers(-128, 128)) / 8
    elif dtype == torch.bfloat16:
        cval = draw(st.integers(-32, 32)) / 2
    elif dtype.is_floating_point:
        cval = draw(st.floats(-3, 3))
    else:
        low, high = _integer_range(dtype, with_structure)
        cval = draw(st.integers(low + 1, high - 1)) + draw(st.sampled_from([0.0, 0.5, -0.5]))

    lead = {"shared": (), "sample": (batch,), "sample+channel": (batch, channels)}
    kwargs = dict(mode=mode, cval=cval, axes=axes,
                  origin=origin[0] if len(set(origin)) == 1 and draw(st.booleans()) else origin)
    elements = {}
    if kind == "size":
        kwargs["size"] = k[0] if len(set(k)) == 1 and draw(st.booleans()) else k
    elif kind == "all-true":
        elements["footprint"] = np.ones(lead[draw(st.sampled_from(LAYOUTS))] + k, bool)
    if kind in ("footprint", "structure+footprint"):
        footprint = rng.random(lead[draw(st.sampled_from(LAYOUTS))] + k) < 0.6
        elements["footprint"] = _ensure_true(rng, footprint, n_axes)
    if with_structure:
        structure = _structure_values(rng, lead[draw(st.sampled_from(LAYOUTS))] + k, dtype)
        elements["structure"] = structure if draw(st.booleans()) else structure.numpy()
    if "footprint" in elements and draw(st.booleans()):
        elements["footprint"] = torch.from_numpy(elements["footprint"])
    return Case(x, kwargs, elements, n_axes)


def _scipy(name):
    """The SciPy op; bool results normalised (SciPy can store bytes other than 0/1)."""
    function = getattr(ndi, name)

    def run(array, **kwargs):
        result = function(array, **kwargs)
        return result.view(np.uint8) != 0 if result.dtype == bool else result
    return run


def _check_parity(name, case, device):
    x = case.input.to(device)
    result = getattr(ndimage, name)(x, **case.kwargs, **case.elements)
    assert result.device == x.device
    exact = not x.dtype.is_floating_point or x.dtype in (torch.float16, torch.bfloat16)
    assert_parity(result, each_slice(_scipy(name), x, case.per_slice, **case.kwargs), exact=exact, atol=1e-6,
                  dtype=x.dtype)


@pytest.mark.parametrize("name", OPS)
@SETTINGS
@given(data=st.data())
def test_matches_scipy(name, data, device):
    _check_parity(name, data.draw(cases(op=name)), device)


@pytest.mark.parametrize("name", ["grey_erosion", "grey_dilation", "white_tophat"])
@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_accelerator_footprint_path_matches_scipy(name, data, device, monkeypatch):
    """Footprints not readable on the host: every box position, masked on the device."""
    monkeypatch.setattr(_grey_filter, "on_host", lambda element, normalized: None)
    _check_parity(name, data.draw(cases(op=name)), device)


# ---------------------------------------------------------------- contracts

def _batch(device, dtype=torch.float32, shape=(3, 2, 9, 11), seed=0):
    return _values(np.random.default_rng(seed), shape, dtype).to(device)


_RNG = np.random.default_rng(1)
ELEMENTS = {
    "size": dict(size=(2, 3)),
    "footprint per sample": dict(footprint=_ensure_true(_RNG, _RNG.random((3, 3, 4)) < 0.5, 2)),
    "structure per sample+channel": dict(
        structure=_RNG.standard_normal((3, 2, 3, 3)),
        footprint=_ensure_true(_RNG, _RNG.random((3, 3)) < 0.7, 2)),
}


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("element", list(ELEMENTS), ids=list(ELEMENTS))
def test_input_untouched_and_batched_equals_per_sample(name, element, device):
    kwargs = ELEMENTS[element]
    x = _batch(device)
    before, version = x.clone(), x._version
    batched = getattr(ndimage, name)(x, mode="constant", cval=0.25, **kwargs)
    assert x._version == version
    assert torch.equal(x, before)
    for b in range(x.shape[0]):
        single = {k: (v[b : b + 1] if np.ndim(v) > 2 else v) for k, v in kwargs.items()}
        part = getattr(ndimage, name)(x[b : b + 1], mode="constant", cval=0.25, **single)
        torch.testing.assert_close(batched[b : b + 1], part, rtol=0, atol=0)


@pytest.mark.parametrize("name", OPS)
def test_non_contiguous_input(name, device):
    x = _batch(device, shape=(3, 2, 11, 9)).transpose(2, 3)
    kwargs = dict(footprint=np.array([[1, 0, 1], [1, 1, 0]], bool), mode="mirror")
    torch.testing.assert_close(getattr(ndimage, name)(x, **kwargs),
                               getattr(ndimage, name)(x.contiguous(), **kwargs), rtol=0, atol=0)


@pytest.mark.parametrize("name", OPS)
def test_output_tensor_receives_result(name, device):
    x = _batch(device, torch.int16)
    footprint = np.array([[1, 0, 1], [1, 1, 0]], bool)
    out = torch.full_like(x, -7)
    returned = getattr(ndimage, name)(x, footprint=footprint, output=out)
    assert returned is out
    torch.testing.assert_close(out, getattr(ndimage, name)(x, footprint=footprint), rtol=0, atol=0)


IN_PLACE = {"size": (dict(size=(3, 2)), "grey_box"),
            "footprint": (dict(footprint=np.array([[1, 0, 1], [1, 1, 0]], bool)), "grey_footprint"),
            "structure": (dict(structure=np.arange(6.0).reshape(2, 3) / 4), "grey_structure")}


@pytest.mark.parametrize("element", IN_PLACE)
@pytest.mark.parametrize("name", ["grey_erosion", "grey_dilation", "grey_opening", "grey_closing"])
def test_output_of_the_input_dtype_is_written_by_the_kernel(name, element, device):
    """A native kernel writes ``output`` itself (its ``.out`` variant): no new result copied in."""
    x = _batch(device)
    kwargs, kernel = IN_PLACE[element]
    out = torch.full_like(x, 7.0)
    with Dispatched() as dispatched:
        assert getattr(ndimage, name)(x, output=out, **kwargs) is out
    torch.testing.assert_close(out, getattr(ndimage, name)(x, **kwargs), rtol=0, atol=0)
    if _ops.use_native(kernel, x):
        assert dispatched.names[-1].endswith(f"::{kernel}.out"), dispatched.names
        assert "aten::copy_" not in dispatched.names
    else:
        assert dispatched.names[-1] == "aten::copy_"


@pytest.mark.parametrize("name", ["grey_erosion", "grey_opening", "black_tophat"])
def test_bool_input_with_a_structure_takes_the_torch_row_whatever_the_policy(name, monkeypatch):
    """SciPy's byte arithmetic passes bytes between the steps of a chain: the table's torch row
    runs it, so no native kernel does, not even under ``MORPHAUG_BACKEND=native``."""
    monkeypatch.setenv("MORPHAUG_BACKEND", "native" if _ops.load_native()[0] is not None else "torch")
    x = torch.rand(2, 1, 7, 8, generator=torch.Generator().manual_seed(5)) > 0.5
    structure = np.array([[0.5, 300.0, -1.0], [2.0, 0.0, 1.5]])
    with Dispatched() as dispatched:
        result = getattr(ndimage, name)(x, structure=structure, mode="nearest")
    assert not [n for n in dispatched.names if n.startswith("morphaug")], dispatched.names
    assert_parity(result, each_slice(_scipy(name), x, structure=structure, mode="nearest"), exact=True)


@pytest.mark.parametrize("name", OPS)
def test_output_sharing_memory_with_the_input(name, device):
    """``output`` may be the input, or overlap it: the result is the same (computed, then copied)."""
    dtype = torch.float32 if name != "grey_erosion" else torch.int16
    x = _batch(device, dtype)
    expected = getattr(ndimage, name)(x, size=3)
    same = x.clone()
    assert getattr(ndimage, name)(same, size=3, output=same) is same
    torch.testing.assert_close(same, expected, rtol=0, atol=0)
    memory = torch.cat([x.flatten(), x.flatten()[:5]])
    shifted = memory[5:].view(x.shape)  # contiguous, five elements after the input
    torch.testing.assert_close(memory[:x.numel()].view(x.shape), x, rtol=0, atol=0)
    assert getattr(ndimage, name)(memory[:x.numel()].view(x.shape), size=3, output=shifted) is shifted
    torch.testing.assert_close(shifted, expected, rtol=0, atol=0)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("out_dtype", [torch.int32, torch.float64])
def test_output_of_another_dtype_matches_scipy(name, out_dtype, device):
    """An ``output`` array of another dtype: SciPy's promotion and casts, step by step."""
    x = _batch(device, torch.uint8)
    out = torch.empty(x.shape, dtype=out_dtype, device=device)
    result = getattr(ndimage, name)(x, size=3, output=out)
    assert result is out

    def reference(array):
        expected = np.empty(array.shape, to_numpy(out).dtype)
        getattr(ndi, name)(array, size=3, output=expected)
        return expected
    assert_parity(out, each_slice(reference, x), exact=True, dtype=out_dtype)


def test_output_dtype_is_honoured(device):
    x = _batch(device, torch.uint8)
    result = ndimage.morphological_laplace(x, size=3, output=torch.int16)
    assert result.dtype == torch.int16
    expected = torch.empty(x.shape, dtype=torch.int16, device=device)
    ndimage.morphological_laplace(x, size=3, output=expected)
    torch.testing.assert_close(result, expected, rtol=0, atol=0)
    assert ndimage.grey_erosion(x, size=3, output=torch.float32).dtype == torch.float32


def test_bool_tophat_is_exclusive_or(device):
    x = _batch(device, torch.bool)
    assert_parity(ndimage.white_tophat(x, size=3), each_slice(_scipy("white_tophat"), x, size=3), exact=True)
    assert_parity(ndimage.black_tophat(x, size=(1, 3)), each_slice(_scipy("black_tophat"), x, size=(1, 3)),
                  exact=True)


def test_boxes_of_earlier_calls_keep_every_check():
    """Box filters are kept by their arguments between calls (``_grey_filter._box_filter``):
    arguments equal in value but not in type (``3.0``, ``True``) are still refused after
    ``3`` was taken, a list changed by the caller after a call gives SciPy's result for what
    it holds at each call, and another input size or dtype is another filter."""
    x = torch.rand(2, 1, 9, 10, generator=torch.Generator().manual_seed(0))
    for size in (3, 3.0, True, (3, 3.0)):
        if type(size) is int:
            ndimage.grey_erosion(x, size=size)
            continue
        with pytest.raises(TypeError, match="size must be an int"):
            ndimage.grey_erosion(x, size=size)
    size = [3, 2]
    for shape in ([3, 2], [1, 4], [3, 2]):
        size[:] = shape
        for mode in ("wrap", ["wrap", "constant"]):
            got = ndimage.grey_erosion(x, size=size, mode=mode, cval=0.5)
            assert_parity(got, each_slice(ndi.grey_erosion, x, size=shape, mode=mode, cval=0.5), exact=True)
    wide = torch.rand(1, 1, 9, 40, generator=torch.Generator().manual_seed(1))
    for input in (x, wide, (x * 100).to(torch.int16)):
        got = ndimage.grey_dilation(input, size=25, mode="mirror", cval=7, origin=(0, 1))
        assert_parity(got, each_slice(ndi.grey_dilation, input, size=25, mode="mirror", cval=7, origin=(0, 1)),
                      exact=True)


def test_size_and_footprint_warn_once_and_footprint_wins(device):
    x = _batch(device)
    footprint = np.array([[0, 1, 1]], bool)
    with pytest.warns(UserWarning, match="ignoring size because footprint is set") as record:
        result = ndimage.grey_opening(x, size=5, footprint=footprint)
    assert len(record) == 1 and record[0].filename == __file__
    torch.testing.assert_close(result, ndimage.grey_opening(x, footprint=footprint))


def test_origin_of_a_unit_axis_is_ignored_like_scipy(device):
    """SciPy skips size-1 axes of a separable filter, origins included."""
    x = _batch(device)
    kwargs = dict(size=(1, 3), origin=(2, 1))
    assert_parity(ndimage.grey_erosion(x, **kwargs), each_slice(ndi.grey_erosion, x, **kwargs), exact=True)
    with pytest.raises(ValueError, match="origin"):
        ndimage.grey_erosion(x, footprint=[[1, 0, 1]], origin=(2, 1))


def test_unsorted_axes_match_scipy(device):
    """Element dims follow increasing axes; size/origin/mode sequences follow ``axes``."""
    x = _batch(device, shape=(2, 2, 6, 5, 7))
    footprint = np.random.default_rng(4).random((3, 5)) < 0.6
    footprint[1, 2] = True
    for name in ("grey_erosion", "grey_dilation", "grey_opening"):
        kwargs = dict(footprint=footprint, axes=(2, 0), mode="nearest")
        assert_parity(getattr(ndimage, name)(x, **kwargs), each_slice(getattr(ndi, name), x, **kwargs), exact=True)
        kwargs = dict(size=(4, 2), axes=(2, 0), origin=(1, -1), mode=["wrap", "constant"])
        assert_parity(getattr(ndimage, name)(x, **kwargs), each_slice(getattr(ndi, name), x, **kwargs), exact=True)


def test_all_true_footprint_is_a_size_along_increasing_axes(device):
    x = _batch(device, shape=(2, 1, 7, 8))
    for name in ("grey_erosion", "grey_dilation"):
        function = getattr(ndimage, name)
        expected = function(x, size=(2, 3))
        for kwargs in (dict(footprint=np.ones((2, 3))),
                       dict(footprint=np.ones((2, 3)), axes=(1, 0)),
                       dict(size=(3, 2), axes=(1, 0))):
            torch.testing.assert_close(function(x, **kwargs), expected, rtol=0, atol=0)


def test_accelerator_footprint_all_false_sample_gives_the_identity(device, monkeypatch):
    """Not readable without a host sync, so not refused: min/max over nothing."""
    monkeypatch.setattr(_grey_filter, "on_host", lambda element, normalized: None)
    x = _batch(device, torch.int16)
    footprint = np.zeros((3, 3, 3), bool)
    footprint[0] = True
    eroded = ndimage.grey_erosion(x, footprint=footprint)
    dilated = ndimage.grey_dilation(x.float(), footprint=footprint)
    torch.testing.assert_close(eroded[0], ndimage.grey_erosion(x[:1], size=3)[0])
    assert (eroded[1:] == torch.iinfo(torch.int16).max).all()
    assert (dilated[1:] == -math.inf).all()


def test_empty_input(device):
    for shape in [(0, 1, 5), (2, 1, 0, 3)]:
        x = torch.zeros(shape, device=device)
        assert ndimage.grey_dilation(x, size=3).shape == shape
        footprint = np.ones((3,) * (len(shape) - 2))
        assert ndimage.morphological_laplace(x, footprint=footprint).shape == shape


def test_int64_beyond_float64_precision_is_exact(device):
    """SciPy rounds int64 through float64 past 2**53; morphaug keeps every bit."""
    values = np.array([2**60 + 1, 2**60 + 3, 2**60 + 2, -2**61 + 5, 7], np.int64)
    x = torch.from_numpy(values).reshape(1, 1, -1).to(device)
    padded = np.pad(values, 1, mode="symmetric")  # SciPy's "reflect"
    windows = np.lib.stride_tricks.sliding_window_view(padded, 3)
    for kwargs in (dict(size=3), dict(footprint=[1, 0, 1])):
        used = windows if "size" in kwargs else windows[:, [0, 2]]
        assert_parity(ndimage.grey_dilation(x, **kwargs)[0, 0], used.max(axis=1), exact=True, dtype="expected")
        assert_parity(ndimage.grey_erosion(x, **kwargs)[0, 0], used.min(axis=1), exact=True, dtype="expected")


def test_structure_results_saturate_and_truncate(device):
    """Out-of-range integer results saturate (SciPy wraps); bool keeps non-zero integer parts."""
    x = torch.tensor([[[250, 20, 30, 40, 255]]], dtype=torch.uint8, device=device)
    result = ndimage.grey_dilation(x, structure=[10.0, 0.0, 10.0])
    assert result.tolist() == [[[255, 255, 50, 255, 255]]]
    result = ndimage.grey_erosion(x, structure=[30.0, 0.0, 0.5])
    assert result.tolist() == [[[20, 20, 0, 0, 10]]]  # 20 - 30 saturates to 0
    flags = _batch(device, torch.bool, shape=(2, 2, 7, 6))
    for name, structure in (("grey_erosion", [[0.5, 0.75, -0.25], [0.0, -0.5, 0.75]]),
                            ("grey_dilation", [[0.5, 1.5, -0.25], [0.0, 1.0, 0.75]])):
        kwargs = dict(structure=np.array(structure), mode="constant")
        assert_parity(getattr(ndimage, name)(flags, **kwargs), each_slice(_scipy(name), flags, **kwargs), exact=True)


def test_half_precision_cval_rounds_to_infinity(device):
    x = torch.zeros(1, 1, 4, dtype=torch.float16, device=device)
    result = ndimage.grey_dilation(x, size=3, mode="constant", cval=1e6)
    assert result[0, 0, 0].item() == math.inf and result[0, 0, 1].item() == 0


# ---------------------------------------------------------------- NaN policy

@pytest.mark.parametrize("kwargs", [
    dict(size=3), dict(footprint=[1, 0, 1]), dict(structure=[0.5, 0.0, -0.5]),
    dict(footprint=np.array([[1, 1, 1], [1, 0, 1]], bool)),
], ids=["size", "footprint", "structure", "per-sample footprint"])
@pytest.mark.parametrize("name", ["grey_erosion", "grey_dilation"])
def test_nan_in_the_window_propagates(name, kwargs, device):
    x = torch.zeros(2, 1, 3, 7, dtype=torch.float64, device=device)
    x[:, :, 1, 3] = math.nan
    result = getattr(ndimage, name)(x, axes=1, **kwargs)
    used = np.broadcast_to(np.asarray(kwargs.get("footprint", [1, 1, 1]), bool), (2, 3))
    sign = 1 if name == "grey_erosion" else -1  # dilation reflects the element
    for b in range(2):
        expected = np.zeros((3, 7), bool)
        for j in np.flatnonzero(used[b]):  # out[c] takes x[c + sign * (j - 1)]
            expected[1, 3 - sign * (j - 1)] = True
        assert_parity(result[b, 0].isnan(), expected, exact=True, dtype=torch.bool)


def test_nan_cval_propagates_from_the_border(device):
    x = torch.ones(1, 1, 5, device=device)
    result = ndimage.grey_erosion(x, size=3, mode="constant", cval=math.nan)
    assert result.isnan().tolist() == [[[True, False, False, False, True]]]


# ---------------------------------------------------------------- errors

def _errors():
    x = torch.zeros(2, 3, 6, 7)
    fp = np.ones((3, 3), bool)
    V, T = ValueError, TypeError
    return [
        ("not a tensor", (np.zeros((2, 3, 6, 7)),), dict(size=3), T, "input"),
        ("complex", (torch.zeros(1, 1, 4, dtype=torch.complex64),), dict(size=3), T, "input"),
        ("rank", (torch.zeros(6, 7),), dict(size=3), V, "input"),
        ("no element", (x,), {}, V, "size, footprint, or structure"),
        ("size 0", (x,), dict(size=0), V, "size"),
        ("size negative", (x,), dict(size=(3, -1)), V, "size"),
        ("size length", (x,), dict(size=(3, 3, 3)), V, "size"),
        ("size float", (x,), dict(size=2.5), T, "size"),
        ("footprint rank", (x,), dict(footprint=np.ones((3, 3, 3, 3, 3), bool)), V, "footprint"),
        ("footprint batch", (x,), dict(footprint=np.ones((5, 3, 3), bool)), V, "footprint"),
        ("footprint channels", (x,), dict(footprint=np.ones((2, 5, 3, 3), bool)), V, "footprint"),
        ("footprint empty", (x,), dict(footprint=np.ones((0, 3), bool)), V, "footprint"),
        ("footprint all false", (x,), dict(footprint=np.zeros((3, 3), bool)), V, "footprint"),
        ("footprint one sample all false", (x,),
         dict(footprint=np.stack([fp, ~fp])), V, r"footprint.*\(1, 0\)"),
        ("footprint type", (x,), dict(footprint=object()), T, "footprint"),
        ("footprint complex", (x,), dict(footprint=torch.ones(3, 3, dtype=torch.complex64)),
         T, "footprint"),
        ("structure rank", (x,), dict(structure=np.ones(3)), V, "structure"),
        ("structure nan", (x,), dict(structure=np.full((3, 3), np.nan)), V, "structure"),
        ("footprint vs structure", (x,), dict(footprint=fp, structure=np.ones((3, 5))),
         V, "footprint and structure"),
        ("footprint all false with structure", (x,),
         dict(footprint=~fp, structure=np.ones((3, 3))), V, "footprint"),
        ("origin range", (x,), dict(size=3, origin=2), V, "origin"),
        ("origin range footprint", (x,), dict(footprint=[[1, 0]], origin=(0, 1)), V, "origin"),
        ("origin length", (x,), dict(size=3, origin=(0, 0, 0)), V, "origin"),
        ("origin float", (x,), dict(size=3, origin=0.5), T, "origin"),
        ("mode unknown", (x,), dict(size=3, mode="edge"), V, "mode"),
        ("mode length", (x,), dict(size=3, mode=["wrap"]), V, "mode"),
        ("mode sequence footprint", (x,), dict(footprint=[[1, 0, 1]], mode=["wrap", "nearest"]),
         V, "mode"),
        ("mode sequence structure", (x,), dict(structure=np.ones((3, 3)), mode=["wrap", "wrap"]),
         V, "mode"),
        ("cval range", (x.to(torch.uint8),), dict(size=3, mode="constant", cval=-1), V, "cval"),
        ("cval nan int", (x.to(torch.int16),), dict(size=3, mode="constant", cval=math.nan),
         V, "cval"),
        ("cval nan bool", (x.bool(),), dict(size=3, mode="constant", cval=math.nan), V, "cval"),
        ("cval type", (x,), dict(size=3, cval="zero"), T, "cval"),
        ("axes range", (x,), dict(size=3, axes=(0, 2)), V, "axes"),
        ("axes repeated", (x,), dict(size=3, axes=(1, -1)), V, "axes"),
        ("output shape", (x,), dict(size=3, output=torch.zeros(2, 3, 6)), V, "output"),
        ("output device", (x,), dict(size=3, output=torch.zeros(x.shape, device="meta")),
         V, "output"),
        ("output type", (x,), dict(size=3, output=np.zeros(x.shape)), T, "output"),
        ("output complex", (x,), dict(size=3, output=torch.complex64), T, "output"),
    ]


ERRORS = _errors()


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("args,kwargs,error,match", [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])
def test_bad_arguments_are_named(name, args, kwargs, error, match):
    if name in SUBTRACTING and getattr(args[0], "dtype", None) == torch.bool:
        error, match = TypeError, "boolean"  # refused before anything else, as in SciPy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=match):
            getattr(ndimage, name)(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(SUBTRACTING))
def test_boolean_subtraction_is_refused_like_scipy(name):
    x = torch.zeros(1, 1, 5, dtype=torch.bool)
    with pytest.raises(TypeError):
        getattr(ndi, name)(np.zeros(5, bool), size=3)
    with pytest.raises(TypeError, match="boolean"):
        getattr(ndimage, name)(x, size=3)
    assert getattr(ndimage, name)(x, size=3, output=torch.int8).dtype == torch.int8


@pytest.mark.parametrize("name", ["white_tophat", "black_tophat", "morphological_gradient"])
def test_unsafe_output_cast_is_refused_like_numpy(name):
    x = torch.rand(1, 1, 5)
    with pytest.raises(Exception):
        getattr(ndi, name)(x[0, 0].numpy(), size=3, output=np.zeros(5, np.int32))
    with pytest.raises(TypeError, match="output"):
        getattr(ndimage, name)(x, size=3, output=torch.zeros(x.shape, dtype=torch.int32))


# ---------------------------------------------------------------- memory / host sync

class _AllocationTracker(TorchDispatchMode):
    """Bytes of the storages that dispatched ops return: the largest one, and the
    peak of those alive at once (a storage counts while a returned tensor holds it)."""

    def __init__(self):
        super().__init__()
        self.largest = self.current = self.peak = 0
        self.holders = {}  # storage data_ptr -> [returned tensors alive, nbytes]

    def _release(self, pointer):
        entry = self.holders[pointer]
        entry[0] -= 1
        if entry[0] == 0:
            self.current -= entry[1]
            del self.holders[pointer]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for value in tree_flatten(result)[0]:
            if not isinstance(value, torch.Tensor) or value.device.type == "meta":
                continue
            storage = value.untyped_storage()
            pointer, nbytes = storage.data_ptr(), storage.nbytes()
            if pointer not in self.holders:
                self.holders[pointer] = [0, nbytes]
                self.current += nbytes
                self.peak = max(self.peak, self.current)
            self.holders[pointer][0] += 1
            self.largest = max(self.largest, nbytes)
            weakref.finalize(value, self._release, pointer)
        return result


def _ball(radius, rank=3):
    grid = np.indices((2 * radius + 1,) * rank) - radius
    return (grid ** 2).sum(axis=0) <= radius ** 2


@pytest.mark.parametrize("kwargs", [
    dict(footprint=_ball(5)),
    dict(footprint=np.stack([_ball(5), np.ones((11,) * 3, bool)])),
    dict(structure=_ball(5) * 0.5, footprint=_ball(5)),
    dict(size=11),
], ids=["ball", "per-sample", "structure", "size"])
@pytest.mark.parametrize("name", ["grey_erosion", "grey_opening"])
def test_large_footprint_memory_is_O_input(name, kwargs, device):
    """An 11x11x11 element never allocates O(input x element) (``unfold`` would: x1331)."""
    x = _batch(device, shape=(2, 1, 20, 20, 20))
    padded_float64 = 2 * 30 ** 3 * 8  # largest legitimate buffer: padded, in float64
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
        baseline = torch.cuda.memory_allocated(device)
        getattr(ndimage, name)(x, **kwargs)
        torch.cuda.synchronize()
        assert torch.cuda.max_memory_allocated(device) - baseline <= 8 * padded_float64
    with _AllocationTracker() as tracker:
        getattr(ndimage, name)(x, **kwargs)
    assert 0 < tracker.largest <= 2 * padded_float64
    assert 0 < tracker.peak <= 6 * padded_float64  # unfold: ~100x that


@pytest.mark.parametrize("name", OPS)
def test_accelerator_elements_are_never_read_back(name):
    """On ``meta`` any host read (``.item()``, ``.nonzero()``, ``bool()``) raises."""
    x = torch.empty(2, 3, 8, 9, device="meta")
    footprint = torch.empty(2, 3, 3, 4, dtype=torch.bool, device="meta")
    result = getattr(ndimage, name)(x, footprint=footprint, mode="constant", cval=0.5)
    assert result.shape == x.shape and result.device.type == "meta"
    result = getattr(ndimage, name)(x, size=(3, 2), mode=["wrap", "constant"], origin=(1, -1))
    assert result.shape == x.shape


@pytest.mark.cuda
def test_cuda_footprint_matches_host_footprint():
    rng = np.random.default_rng(5)
    x = _batch("cuda", shape=(3, 2, 10, 12))
    footprint = _ensure_true(rng, rng.random((3, 2, 3, 4)) < 0.5, 2)
    for name in OPS:
        on_device = getattr(ndimage, name)(x, footprint=torch.from_numpy(footprint).cuda())
        on_host = getattr(ndimage, name)(x, footprint=footprint)
        torch.testing.assert_close(on_device, on_host, rtol=0, atol=0)


# ---------------------------------------------------------------- windows wider than the image
@pytest.mark.parametrize("mode", ["reflect", "mirror", "wrap", "nearest", "constant"])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_windows_wider_than_the_axis_match_scipy(n, mode):
    """Every width up to 4 n + 5 and every origin: the window is clamped to one that reads the
    same values (``_grey_filter._clamped_window``), exactly."""
    a = np.random.default_rng(n).random((3, n))
    x = torch.from_numpy(a)[None, None]
    for width in range(1, 4 * n + 6):
        for origin in range(-(width // 2), (width - 1) // 2 + 1):
            kw = dict(size=(1, width), origin=(0, origin), mode=mode, cval=-1.0)
            assert_parity(ndimage.grey_erosion(x, **kw)[0, 0], ndi.grey_erosion(a, **kw), exact=True)
            assert_parity(ndimage.grey_dilation(x, **kw)[0, 0], ndi.grey_dilation(a, **kw), exact=True)


def test_an_absurd_size_costs_nothing():
    """size=2**40 reads every voxel of the (reflected) image: the global minimum, at once,
    where a window of that width would never end."""
    x = torch.rand(2, 1, 16, 17, 18, generator=torch.Generator().manual_seed(0))
    out = ndimage.grey_erosion(x, size=2**40)
    torch.testing.assert_close(out, x.amin((2, 3, 4), keepdim=True).expand_as(x), rtol=0, atol=0)
    out = ndimage.grey_opening(x, size=(2**62, 3, 2**70), mode="nearest")
    torch.testing.assert_close(out, ndimage.grey_opening(x, size=(33, 3, 37), mode="nearest"), rtol=0, atol=0)
