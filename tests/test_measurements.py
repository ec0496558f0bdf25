"""Measurements: parity with scipy.ndimage on every (b, c) slice, SciPy's dtypes and absent labels,
shared labels, the bounding boxes of find_objects, bad arguments."""

from __future__ import annotations


import numpy as np
import pytest
import torch
from conftest import assert_parity
from scipy import ndimage as ndi

from morphaug import _sync, ndimage
from morphaug.ndimage import _regions

# SciPy warns of its 0 / 0 (absent labels)
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

STATISTICS = ["sum_labels", "mean", "minimum", "maximum", "center_of_mass"]
INPUT_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16,
                torch.uint32, torch.uint64, torch.float16, torch.float32, torch.float64]
LABEL_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16,
                torch.uint32, torch.uint64]
SIZES = {1: 30, 2: 10, 3: 6, 4: 4}
#: Relative tolerance of float sums by the dtype SciPy sums in (see the module docstring).
TOLERANCE = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5, np.dtype(np.float16): 1e-2}
CASES = 150


# --------------------------------------------------------------------------- inputs
def make_values(rng, shape, dtype: torch.dtype) -> torch.Tensor:
    """Values of ``dtype``: signed ints around 0, unsigned ones (wide ones near their top too),
    non-negative floats (centers of mass stay well conditioned)."""
    if dtype == torch.bool:
        return torch.from_numpy(rng.random(shape) < 0.5)
    if dtype.is_floating_point:
        return torch.from_numpy(rng.random(shape) * 10).to(dtype)
    if dtype.is_signed:
        return torch.from_numpy(rng.integers(-50, 51, shape)).to(dtype)
    values = rng.integers(0, 101, shape).astype(np.uint64)
    if dtype != torch.uint8 and rng.random() < 0.5:  # the top of the range: order and sums mod 2**N
        values += np.uint64(torch.iinfo(dtype).max - 100)
    return torch.from_numpy(values.astype(torch.empty(0, dtype=dtype).numpy().dtype))


def make_slice_labels(rng, shape, signed: bool) -> np.ndarray:
    """One slice's labels: none, one label everywhere, a few labels drawn anywhere from a random
    subset (negative ones where signed), or SciPy's connected components."""
    kind = rng.integers(4)
    if kind == 0:  # empty
        return np.zeros(shape, np.int64)
    if kind == 1:
        return np.full(shape, rng.integers(-3 if signed else 0, 13), np.int64)
    if kind == 2:
        subset = rng.choice(np.arange(-3 if signed else 0, 13), size=rng.integers(1, 6), replace=False)
        return rng.choice(subset, size=shape)
    return ndi.label(rng.random(shape) < 0.4)[0].astype(np.int64)


def make_labels(rng, b, c, spatial, dtype: torch.dtype) -> torch.Tensor:
    """Labels per slice, shared over channels and/or samples, sometimes broadcast along an axis."""
    lb, lc = [(b, c), (b, 1), (1, 1)][rng.integers(3)]
    spatial = list(spatial)
    if rng.random() < 0.2:
        spatial[rng.integers(len(spatial))] = 1
    signed = dtype.is_signed
    labels = np.stack([make_slice_labels(rng, spatial, signed) for _ in range(lb * lc)]).reshape(lb, lc, *spatial)
    if dtype == torch.uint64 and rng.random() < 0.5:
        labels = labels.astype(np.uint64)
        labels[labels == 1] = np.uint64(2**64 - 1)  # a label beyond int64
    return torch.from_numpy(labels).to(dtype)


def make_index(rng, dtype: torch.dtype):
    """None, an int (0-d tensor), or a sequence with duplicates, absent and out-of-range labels."""
    kind = rng.integers(6)
    low = -4 if dtype.is_signed or dtype == torch.uint64 else 0
    values = rng.integers(low, 15, size=rng.integers(0, 7)).tolist()
    if kind == 0:
        return None
    if kind == 1:
        return int(rng.integers(low, 15))
    if kind == 2:
        return torch.tensor(int(rng.integers(low, 15)))
    if kind == 3:
        return values + ([300, 2**63 - 1] if dtype == torch.int8 or dtype == torch.uint64 else [])
    if kind == 4:
        return np.array(values, np.int64)
    return torch.tensor(values, dtype=torch.int32)


def make_case(seed: int, labels_none: float = 0.1):
    """``input``, ``labels`` (None with probability ``labels_none``) and ``index`` of a random call:
    rank 1-4, 1-3 samples and channels, every input and label dtype."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 5))
    spatial = tuple(int(n) for n in rng.integers(1, SIZES[rank] + 1, rank))
    b, c = (int(n) for n in rng.integers(1, 4, 2))
    x = make_values(rng, (b, c) + spatial, INPUT_DTYPES[rng.integers(len(INPUT_DTYPES))])
    if rng.random() < labels_none:
        return x, None, make_index(rng, torch.int64)
    dtype = LABEL_DTYPES[rng.integers(len(LABEL_DTYPES))]
    return x, make_labels(rng, b, c, spatial, dtype), make_index(rng, dtype)


# --------------------------------------------------------------------------- the reference
def scipy_index(index):
    """The SciPy argument for ``index``: an int for a 0-d tensor, arrays for tensors."""
    if isinstance(index, torch.Tensor):
        return int(index) if index.ndim == 0 else index.numpy()
    return index


def scipy_slice(labels, b, c):
    return None if labels is None else labels.numpy()[min(b, labels.shape[0] - 1), min(c, labels.shape[1] - 1)]


def scipy_statistic(name: str, x: np.ndarray, labels, index) -> np.ndarray:
    """SciPy's result as an array; 0 where SciPy's minimum/maximum reduce an empty region."""
    try:
        result = getattr(ndi, name)(x, labels, index)
    except ValueError as error:
        assert name in ("minimum", "maximum") and "zero-size" in str(error)
        return np.zeros((), x.dtype)
    if name == "center_of_mass":
        return np.asarray(result, np.float64).reshape(np.shape(index) + (x.ndim,))
    return np.asarray(result)


def check_statistic(name, ours: torch.Tensor, x, labels, index):
    """``ours`` equals SciPy's result on every slice: exactly for integers, bools, minima and
    maxima, to the rounding of the dtype SciPy sums in (:data:`TOLERANCE`) for float sums."""
    if labels is None:
        index = None  # SciPy ignores it
    spatial = tuple(x.shape[2:])
    tail = () if index is None else np.shape(scipy_index(index))
    assert ours.shape == tuple(x.shape[:2]) + tail + ((len(spatial),) if name == "center_of_mass" else ())
    assert ours.device == x.device
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            expected = scipy_statistic(name, x[b, c].numpy(), scipy_slice(labels, b, c), scipy_index(index))
            exact = expected.dtype.kind in "biu" or name in ("minimum", "maximum")
            if not exact:  # the rounding of the dtype SciPy sums in
                summed = ndi.sum_labels(x[b, c].numpy(), scipy_slice(labels, b, c), scipy_index(index))
                tolerance = TOLERANCE.get(np.asarray(summed).dtype, 1e-12)
            assert_parity(ours[b, c], expected, exact=exact, rtol=0 if exact else tolerance, atol=0,
                          dtype="expected", where=f"{name}, slice ({b}, {c})")


# --------------------------------------------------------------------------- parity
@pytest.fixture(params=["table", "search"])
def path(request, monkeypatch):
    """Both ways to find the labels of an index: a table over its span (an index on the host) and a
    binary search (an index on an accelerator, spanning more values than a slice has, or traced)."""
    if request.param == "search":
        monkeypatch.setattr(_regions, "_span", lambda *args: None)
    return request.param


def test_an_index_on_the_host_spans_a_table():
    keys, found = torch.tensor([4, 2, 9, 127]), torch.tensor([True, True, True, False])
    assert _regions._span(keys, found, 8) == (2, 9)
    assert _regions._span(keys, found, 7) is None  # a table larger than a slice
    assert _regions._span(keys.to("meta"), found.to("meta"), 8) is None  # on a device
    assert _regions._span(torch.tensor([-2**62]), torch.tensor([True]), 8) is None  # uint64 keys


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("seed", range(CASES))
def test_statistics_match_scipy(seed):
    x, labels, index = make_case(seed)
    for name in STATISTICS:
        check_statistic(name, getattr(ndimage, name)(x, labels, index), x, labels, index)


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("name", STATISTICS)
def test_components_of_scipy_label(name):
    """Labels as SciPy's ``label`` numbers them, ~10 per slice, every label of the batch measured:
    each slice lacks some of them."""
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.random((3, 2, 20, 20)))
    labels = torch.from_numpy(np.stack([ndi.label(rng.random((20, 20)) < 0.3)[0] for _ in range(6)])).view(
        3, 2, 20, 20)
    index = torch.arange(1, int(labels.max()) + 1)
    check_statistic(name, getattr(ndimage, name)(x, labels, index), x, labels, index)


@pytest.mark.parametrize("dtype, values, index", [
    (torch.uint64, [0, 2**64 - 1, 3, 3, 2**63], [-1, 3, 2**63 - 1, 0, -1]),
    (torch.int8, [0, 127, -128, 5, 5, 127], [300, 127, -200, 5, -128]),
    (torch.uint8, [0, 255, 3, 3, 255, 0], [-1, 255, 256, 3]),
    (torch.bool, [True, False, True, True], [2, 1, -1, 0]),
])
@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("name", STATISTICS)
def test_index_values_the_labels_cannot_hold_are_absent(name, dtype, values, index):
    labels = torch.tensor(np.array(values, dtype=torch.empty(0, dtype=dtype).numpy().dtype)).view(1, 1, -1)
    x = torch.arange(1.0, labels.shape[-1] + 1).view(1, 1, -1)
    check_statistic(name, getattr(ndimage, name)(x, labels, index), x, labels, index)


def test_nan_propagates_as_in_scipy_one_region():
    x = torch.tensor([[[1.0, float("nan"), 3.0, 4.0]]])
    labels = torch.tensor([[[1, 1, 2, 2]]])
    for name in ("minimum", "maximum"):
        check_statistic(name, getattr(ndimage, name)(x, labels, 1), x, labels, 1)
        check_statistic(name, getattr(ndimage, name)(x, labels, 2), x, labels, 2)
    assert torch.isnan(ndimage.minimum(x, labels, [1])).all()  # SciPy's sequence path skips it


# --------------------------------------------------------------------------- semantics
def test_sum_dtypes_are_scipys():
    x = torch.ones(1, 1, 3, dtype=torch.uint16)
    labels = torch.tensor([[[1, 1, 2]]])
    assert ndimage.sum_labels(x, labels, 1).dtype == torch.uint64
    assert ndimage.sum_labels(x.to(torch.int8), labels).dtype == torch.int64
    assert ndimage.sum_labels(x.to(torch.bool)).dtype == torch.int64
    assert ndimage.sum_labels(x.to(torch.float32), labels, 2).dtype == torch.float32
    assert ndimage.sum_labels(x.to(torch.float32), labels, [2]).dtype == torch.float64
    assert ndimage.mean(x.to(torch.float16), labels, 2).dtype == torch.float64


def test_integer_sums_wrap_as_numpys():
    x = torch.full((1, 1, 2), 2**63, dtype=torch.uint64)
    assert ndimage.sum_labels(x).view(torch.int64).item() == 0
    assert ndimage.sum_labels(x, torch.ones(1, 1, 2, dtype=torch.int32), [1]).item() == 2.0**64


def test_absent_labels_get_scipys_values():
    x = torch.tensor([[[1.0, 2.0]], [[3.0, 4.0]]])
    labels = torch.tensor([[[1, 1]], [[2, 2]]])
    assert ndimage.sum_labels(x, labels, [1, 2]).tolist() == [[[3.0, 0.0]], [[0.0, 7.0]]]
    assert ndimage.minimum(x, labels, 2).tolist() == [[0.0], [3.0]]  # SciPy raises for slice 0
    assert ndimage.maximum(x, labels, [2]).tolist() == [[[0.0]], [[4.0]]]
    assert ndimage.mean(x, labels, [1]).isnan().tolist() == [[[False]], [[True]]]
    assert ndimage.center_of_mass(x, labels, [2])[0].isnan().all()


def test_index_none_is_the_positive_labels():
    x = torch.arange(6.0).view(1, 1, 6)
    labels = torch.tensor([[[-1, 0, 1, 2, 2, -5]]])
    assert ndimage.sum_labels(x, labels).item() == 2 + 3 + 4
    assert ndimage.minimum(x, labels).item() == 2
    assert ndimage.center_of_mass(x, labels).item() == (2 * 2 + 3 * 3 + 4 * 4) / 9


def test_labels_none_ignores_index_as_scipy():
    x = torch.arange(6.0).view(1, 1, 2, 3)
    for name in STATISTICS:
        assert torch.equal(getattr(ndimage, name)(x, None, [1, 2]), getattr(ndimage, name)(x))


def test_shared_labels_equal_repeated_labels():
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.random((2, 3, 5, 6)))
    labels = torch.from_numpy(rng.integers(0, 4, (2, 1, 5, 6)))
    for name in STATISTICS:
        for index in (None, [1, 3], 2):
            shared = getattr(ndimage, name)(x, labels, index)
            torch.testing.assert_close(shared, getattr(ndimage, name)(x, labels.expand(2, 3, 5, 6), index),
                                       rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("index", [[], np.zeros((0,), np.int64), torch.zeros(0, dtype=torch.int64)])
def test_empty_index(index):
    x = torch.rand(2, 3, 4)
    labels = torch.ones(2, 3, 4, dtype=torch.int64)
    for name in STATISTICS:
        assert getattr(ndimage, name)(x, labels, index).shape == (2, 3, 0) + ((1,) if name == "center_of_mass" else ())


def test_index_keeps_its_shape():
    x = torch.rand(2, 1, 5)
    labels = torch.randint(0, 3, (2, 1, 5))
    index = torch.tensor([[0, 1, 2], [2, 1, 0]])
    flat = ndimage.sum_labels(x, labels, index.flatten())
    assert torch.equal(ndimage.sum_labels(x, labels, index), flat.view(2, 1, 2, 3))


def test_bfloat16_input_follows_float32():
    x = torch.rand(2, 2, 6, 7).bfloat16()
    labels = torch.randint(0, 4, (2, 2, 6, 7))
    for name in ("minimum", "maximum"):
        assert torch.equal(getattr(ndimage, name)(x, labels, [1, 3]),
                           getattr(ndimage, name)(x.float(), labels, [1, 3]).bfloat16())
    assert torch.equal(ndimage.sum_labels(x, labels, [1, 3]), ndimage.sum_labels(x.float(), labels, [1, 3]))
    assert ndimage.sum_labels(x, labels, 1).dtype == torch.bfloat16


@pytest.mark.parametrize("name", STATISTICS + ["find_objects"])
def test_inputs_are_not_modified(name):
    x = torch.randint(0, 4, (2, 2, 5, 6))
    labels = torch.randint(-1, 4, (2, 1, 5, 6))
    index = torch.tensor([0, 2, 3])
    copies, versions = [t.clone() for t in (x, labels, index)], [t._version for t in (x, labels, index)]
    getattr(ndimage, name)(x) if name == "find_objects" else getattr(ndimage, name)(x, labels, index)
    for t, copy, version in zip((x, labels, index), copies, versions):
        assert t._version == version and torch.equal(t, copy)


# --------------------------------------------------------------------------- find_objects
def scipy_objects(labels: np.ndarray, max_label: int):
    """SciPy's ``find_objects(labels, max_label)`` as morphaug returns it: ``boxes (max_label, 2,
    rank)`` of starts and stops, zero where a label is absent, and ``present (max_label,)``."""
    found = ndi.find_objects(labels, max_label)
    boxes = np.zeros((max_label, 2, labels.ndim), np.int64)
    for box, slices in zip(boxes, found):
        if slices is not None:
            box[:] = [[s.start for s in slices], [s.stop for s in slices]]
    return boxes, np.array([slices is not None for slices in found], bool).reshape(max_label)


def assert_objects_match_scipy(labels: torch.Tensor, max_label: int, boxes, present):
    """``(boxes, present)`` of ``labels`` equal SciPy's slices with ``max_label`` on every slice."""
    source = labels.numpy()
    assert_parity((boxes, present), lambda b, c: scipy_objects(source[b, c], max_label), exact=True,
                  dtype="expected")


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("seed", range(CASES))
def test_find_objects_matches_scipy(seed):
    x, labels, _ = make_case(seed, labels_none=0)
    labels = labels.expand(labels.shape[:2] + x.shape[2:]).contiguous()
    max_label = seed % 17 - 1
    if max_label < 1 and labels.dtype == torch.bool:  # SciPy needs max_label for bool labels
        max_label = 1
    if max_label < 1 and labels.dtype == torch.uint64 and labels.numpy().max() > 2**63:  # SciPy overflows
        max_label = 15
    boxes, present = ndimage.find_objects(labels, max_label)
    if max_label < 1:  # the batch's largest label
        max_label = max(0, int(labels.numpy().max()))
    assert_objects_match_scipy(labels, max_label, boxes, present)


def test_find_objects_is_free_on_the_cpu(monkeypatch):
    monkeypatch.setattr(_sync, "host_read", lambda *args: pytest.fail("a host read on the CPU"))
    labels = torch.tensor([[[0, 3, 3, -2]], [[1, 0, 0, 0]]], dtype=torch.int16)
    boxes, present = ndimage.find_objects(labels)
    assert_objects_match_scipy(labels, 3, boxes, present)
    assert present.tolist() == [[[False, False, True]], [[True, False, False]]]


def test_find_objects_without_labels():
    boxes, present = ndimage.find_objects(torch.zeros(2, 1, 3, 4, dtype=torch.int32))
    assert boxes.shape == (2, 1, 0, 2, 2) and present.shape == (2, 1, 0)


# --------------------------------------------------------------------------- bad arguments
X = torch.rand(2, 1, 4, 5)
LABELS = torch.randint(0, 3, (2, 1, 4, 5))


@pytest.mark.parametrize("name", STATISTICS)
@pytest.mark.parametrize("kwargs, error, match", [
    ({"input": np.zeros((2, 1, 4, 5))}, TypeError, "input"),
    ({"input": torch.zeros(4, 5)}, ValueError, "input"),
    ({"input": torch.zeros(2, 1, 4, 5, dtype=torch.complex64)}, TypeError, "input"),
    ({"labels": LABELS.numpy()}, TypeError, "labels must be None or a torch.Tensor"),
    ({"labels": LABELS.float()}, TypeError, "labels must have an integer or bool dtype"),
    ({"labels": LABELS[..., :4]}, ValueError, "labels has shape"),
    ({"labels": LABELS[0]}, ValueError, "labels has shape"),
    ({"input": X[:1], "labels": LABELS}, ValueError, "labels has shape"),  # SciPy would broadcast input
    ({"labels": LABELS.to("meta")}, ValueError, "labels is on meta"),
    ({"index": 1.0}, TypeError, "index must contain ints"),
    ({"index": [1, 2.5]}, TypeError, "index must contain ints"),
    ({"index": True}, TypeError, "index must contain ints"),
    ({"index": torch.tensor([1], dtype=torch.uint64)}, TypeError, "index must contain ints"),
    ({"index": "1"}, TypeError, "index must be None, an int"),
    ({"index": [2**70]}, TypeError, "index must be None, an int"),
    ({"index": [[1, 2], [3]]}, TypeError, "index must be None, an int"),
    ({"index": torch.tensor([1], device="meta")}, ValueError, "index is on meta"),
])
def test_bad_arguments_are_named(name, kwargs, error, match):
    kwargs = {"input": X, "labels": LABELS, "index": [1, 2], **kwargs}
    with pytest.raises(error, match=match):
        getattr(ndimage, name)(**kwargs)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"input": LABELS.numpy()}, TypeError, "input"),
    ({"input": LABELS.float()}, TypeError, "input must be an integer or bool label map"),
    ({"max_label": 2.0}, TypeError, "max_label must be an int"),
    ({"max_label": True}, TypeError, "max_label must be an int"),
])
def test_find_objects_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        ndimage.find_objects(**{"input": LABELS, **kwargs})
