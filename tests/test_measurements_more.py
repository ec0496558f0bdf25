"""SciPy's other measurements: sum, variance, standard_deviation, median, the positions of the
extrema, histogram, labeled_comprehension, value_indices and watershed_ift, against scipy.ndimage on
every (b, c) slice; numerics, SciPy's tie rules, bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_parity
from scipy import ndimage as ndi
from test_measurements import CASES, TOLERANCE, make_case, path, scipy_index, scipy_slice  # noqa: F401

from morphaug import ndimage

# SciPy warns of its 0 / 0 and of the mean of an empty region
pytestmark = [pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")]

SPREAD = ["variance", "standard_deviation"]
NEW = ["sum", "variance", "standard_deviation", "median", "minimum_position", "maximum_position", "extrema"]


def index_values(index) -> list[int]:
    """The labels of ``index`` as Python ints, flat."""
    return np.asarray(scipy_index(index), np.int64).reshape(-1).tolist()


def region(x: np.ndarray, labels, label):
    """The values of SciPy's region: the slice, its positive labels, or one label."""
    if labels is None:
        return x.reshape(-1), np.arange(x.size)
    mask = np.broadcast_to(labels, x.shape) > 0 if label is None else np.broadcast_to(labels, x.shape) == label
    return x[mask], np.flatnonzero(mask)


def tolerance(x: np.ndarray) -> float:
    """The relative rounding of SciPy's work on ``x`` (float32 and float16 stay in their dtype)."""
    return TOLERANCE.get(x.dtype, 1e-12) if x.dtype.kind == "f" else 1e-12


# --------------------------------------------------------------------------- statistics
def check_spread(name, ours, x, labels, index):
    """variance / standard_deviation against SciPy, within the rounding of the dtype it works in,
    relative to the mean square of the slice (a variance near 0 is a difference of large terms)."""
    if labels is None:
        index = None
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            xs = x[b, c].numpy()
            expected = np.asarray(getattr(ndi, name)(xs, scipy_slice(labels, b, c), scipy_index(index)))
            scale = float(np.mean(np.square(xs.astype(np.float64)))) if xs.size else 1.0
            scale = np.sqrt(scale) if name == "standard_deviation" else scale
            atol = 4 * tolerance(xs) * scale + (1e-3 * np.sqrt(scale) if name == "standard_deviation"
                                                and xs.dtype == np.float16 else 0)
            assert_parity(ours[b, c], expected, exact=False, atol=atol, rtol=tolerance(xs), dtype="expected",
                          where=f"{name}, slice ({b}, {c})")


def check_median(ours, x, labels, index):
    """median against SciPy: exact, but where SciPy averages float16 middles through float32."""
    if labels is None:
        index = None
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            xs = x[b, c].numpy()
            expected = np.asarray(ndi.median(xs, scipy_slice(labels, b, c), scipy_index(index)))
            half = xs.dtype == np.float16
            assert_parity(ours[b, c], expected, exact=not half, atol=0, rtol=1e-3 if half else 0,
                          dtype="expected", where=f"median, slice ({b}, {c})")


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("seed", range(CASES))
def test_statistics_match_scipy(seed):
    x, labels, index = make_case(seed)
    assert_parity(ndimage.sum(x, labels, index), ndimage.sum_labels(x, labels, index), exact=True)
    for name in SPREAD:
        check_spread(name, getattr(ndimage, name)(x, labels, index), x, labels, index)
    check_median(ndimage.median(x, labels, index), x, labels, index)


def test_variance_is_two_pass():
    """Values of 1e9 + small noise: a one-pass sum of squares loses every digit, SciPy's two passes
    and morphaug's do not."""
    rng = np.random.default_rng(0)
    noise = rng.random((2, 3, 50))
    x = torch.from_numpy(1e9 + noise)
    labels = torch.from_numpy(rng.integers(0, 3, (2, 3, 50)))
    ours = ndimage.variance(x, labels, [0, 1, 2])
    for b in range(2):
        for c in range(3):
            exact = [np.var(noise[b, c][labels[b, c].numpy() == i]) for i in range(3)]
            np.testing.assert_allclose(ours[b, c].numpy(), exact, rtol=1e-6)
            np.testing.assert_allclose(ours[b, c].numpy(), ndi.variance(x[b, c].numpy(), labels[b, c].numpy(),
                                                                       [0, 1, 2]), rtol=1e-9)


def test_median_of_an_absent_label_is_scipys():
    """SciPy's index sequence gives an absent label the least value of the slice's least label."""
    x = torch.tensor([[[5.0, 2.0, 3.0, 1.0]], [[7.0, 8.0, 6.0, 9.0]]])
    labels = torch.tensor([[[1, 1, 2, 3]], [[-2, 4, -2, 4]]])
    assert ndimage.median(x, labels, [1, 5, 2, 0]).tolist() == [[[3.5, 2.0, 3.0, 2.0]], [[6.0, 6.0, 6.0, 6.0]]]
    assert ndimage.median(x, labels, 5).isnan().all()


def test_median_takes_nan_last():
    x = torch.tensor([[[1.0, float("nan"), 3.0, 4.0, 2.0]]])
    labels = torch.tensor([[[1, 1, 1, 2, 2]]])
    assert ndimage.median(x, labels, [1, 2]).tolist() == [[[3.0, 3.0]]]  # 1, 3, nan: the middle is 3


# --------------------------------------------------------------------------- positions
def first_extremum(x: np.ndarray, labels, label, reduce) -> tuple[int, ...]:
    """The first voxel in C order attaining the extremum of a region (SciPy's rule for one region),
    the origin for an empty one."""
    values, flat = region(x, labels, label)
    if values.size == 0:
        return (0,) * x.ndim
    at = flat[np.flatnonzero(values == reduce(values))[0]]
    return tuple(int(v) for v in np.unravel_index(at, x.shape))


def expected_positions(x, labels, index, reduce) -> np.ndarray:
    if labels is None or index is None:
        return np.array(first_extremum(x, labels, None, reduce))
    positions = [first_extremum(x, labels, label, reduce) for label in index_values(index)]
    return np.array(positions, np.int64).reshape(np.shape(scipy_index(index)) + (x.ndim,))


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("seed", range(CASES))
def test_positions_match_scipy(seed):
    x, labels, index = make_case(seed)
    low, high, low_at, high_at = ndimage.extrema(x, labels, index)
    assert_parity(low, ndimage.minimum(x, labels, index), exact=True, dtype=x.dtype)
    assert_parity(high, ndimage.maximum(x, labels, index), exact=True, dtype=x.dtype)
    for name, ours, both, reduce in [("minimum_position", low_at, np.min, np.min),
                                     ("maximum_position", high_at, np.max, np.max)]:
        assert_parity(getattr(ndimage, name)(x, labels, index), ours, exact=True, dtype=torch.int64)
        source, where = x.numpy(), None if labels is None else labels.numpy()
        assert_parity(ours, lambda b, c: expected_positions(
            source[b, c], None if where is None else scipy_slice(labels, b, c), index, reduce),
            exact=True, where=name)


@pytest.mark.parametrize("seed", range(20))
def test_positions_without_ties_are_scipys_own(seed):
    """Distinct values: SciPy's index-sequence path (an unstable sort) has nothing to choose."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 7, rng.integers(1, 4)))
    x = torch.from_numpy(rng.permutation(int(np.prod(shape)) * 2)[:int(np.prod(shape))].reshape((1, 1) + shape))
    labels = torch.from_numpy(rng.integers(0, 5, (1, 1) + shape))
    index = [0, 1, 2, 3, 4, 9]
    expected = ndi.extrema(x[0, 0].numpy(), labels[0, 0].numpy(), index)
    ours = ndimage.extrema(x, labels, index)
    assert ours[0][0, 0].tolist() == expected[0].tolist() and ours[1][0, 0].tolist() == expected[1].tolist()
    assert [tuple(p) for p in ours[2][0, 0].tolist()] == [tuple(map(int, p)) for p in expected[2]]
    assert [tuple(p) for p in ours[3][0, 0].tolist()] == [tuple(map(int, p)) for p in expected[3]]


def test_positions_of_nan_and_empty_regions():
    x = torch.tensor([[[[1.0, float("nan")], [0.0, 5.0]]]])
    assert ndimage.maximum_position(x).tolist() == [[[0, 1]]]
    labels = torch.tensor([[[[1, 1], [2, 2]]]])
    assert ndimage.minimum_position(x, labels, [2, 7]).tolist() == [[[[1, 0], [0, 0]]]]
    empty = ndimage.extrema(torch.zeros(2, 1, 0), None)
    assert [t.shape for t in empty] == [(2, 1), (2, 1), (2, 1, 1), (2, 1, 1)]


# --------------------------------------------------------------------------- histogram
def scipy_histogram(x, low, high, bins, labels, index) -> np.ndarray:
    """SciPy's definition, ``np.histogram`` of each region over ``np.linspace`` edges, zeros where
    SciPy gives None; checked against ``ndi.histogram`` itself where SciPy takes the index."""
    edges = np.linspace(low, high, bins + 1)
    if labels is None or index is None:
        expected = np.histogram(region(x, labels, None)[0], edges)[0]
    else:
        expected = np.array([np.histogram(region(x, labels, i)[0], edges)[0] for i in index_values(index)],
                            np.int64).reshape(np.shape(scipy_index(index)) + (bins,))
    if labels is not None and index is not None:
        least, most = (0, 1) if labels.dtype == bool else (np.iinfo(labels.dtype).min, np.iinfo(labels.dtype).max)
        values = index_values(index)
        if not values or any(not least <= i <= most for i in values):
            # SciPy raises (no label, or one its labels' dtype cannot hold), or wraps -1 into a uint64
            # label: morphaug finds no such label
            return expected
    theirs = ndi.histogram(x, low, high, bins, labels, None if labels is None else scipy_index(index))
    if theirs is None or (isinstance(theirs, np.ndarray) and theirs.dtype == object):
        theirs = [np.zeros(bins, np.int64) if h is None else h for h in np.ravel(np.array([theirs], object))]
    theirs = np.array(theirs, np.int64)
    np.testing.assert_array_equal(theirs.reshape(expected.shape), expected)
    return expected


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("seed", range(CASES))
def test_histogram_matches_scipy(seed):
    x, labels, index = make_case(seed)
    rng = np.random.default_rng(seed)
    low = float(rng.integers(-6, 6)) + (0.5 if rng.random() < 0.3 else 0.0)
    high = low + float(rng.choice([0.0, 1.0, 7.5, 13.0, 110.0]))
    bins = int(rng.integers(1, 13))
    if x.dtype in (torch.uint16, torch.uint32, torch.uint64) and rng.random() < 0.5:
        low, high = float(torch.iinfo(x.dtype).max) - 200.0, float(torch.iinfo(x.dtype).max)
    if labels is None:
        index = None
    ours = ndimage.histogram(x, low, high, bins, labels, index)
    source = x.numpy() if x.dtype != torch.float16 else x.float().numpy().astype(np.float16)
    assert_parity(ours, lambda b, c: scipy_histogram(source[b, c], low, high, bins, scipy_slice(labels, b, c),
                                                     index), exact=True, dtype=torch.int64)


def test_histogram_edges_are_numpys():
    x = torch.tensor([[[0.0, 0.1, 0.2, 0.3, 0.30000000000000004, 0.7, 1.0, 1.1, -0.0, float("nan")]]])
    expected = ndi.histogram(x[0, 0].numpy(), 0, 1, 10)
    assert ndimage.histogram(x, 0, 1, 10)[0, 0].tolist() == expected.tolist()


# --------------------------------------------------------------------------- labeled_comprehension
FUNCS = [np.sum, np.mean, np.var, np.std, np.median, np.min, np.max, np.ptp, len, np.count_nonzero,
         ndi.variance, ndimage.median]


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("seed", range(0, CASES, 3))
@pytest.mark.parametrize("func", FUNCS, ids=lambda f: getattr(f, "__name__", str(f)))
def test_labeled_comprehension_matches_scipy(func, seed):
    x, labels, _ = make_case(seed, labels_none=0)
    if func is np.ptp and x.dtype == torch.bool:
        pytest.skip("NumPy's ptp cannot subtract bools")
    rng = np.random.default_rng(seed)
    low, high = (0, 1) if labels.dtype == torch.bool else (max(-3, torch.iinfo(labels.dtype).min), 14)
    index = rng.integers(low, high + 1, rng.integers(1, 6)).tolist()
    ours = ndimage.labeled_comprehension(x, labels, index, func, np.float64, -1.5)
    one = ndimage.labeled_comprehension(x, labels, index[0], func, np.float64, -1.5)
    assert one.shape == x.shape[:2]
    assert_parity(one, ours[..., 0], exact=True)
    source = x.numpy() if x.dtype != torch.float16 else x.float().numpy().astype(np.float16)

    def expected(b, c):
        # SciPy calls func with its NumPy arrays: the reference's own functions stand in for ours
        reference = ndi.median if func is ndimage.median else func
        return ndi.labeled_comprehension(source[b, c], np.broadcast_to(scipy_slice(labels, b, c), source[b, c].shape),
                                         index, reference, np.float64, -1.5)

    rtol = tolerance(source) * (10 if func in (np.var, np.std, ndi.variance) else 1)
    atol = rtol * float(np.max(np.abs(source.astype(np.float64)), initial=1.0)) ** 2
    assert_parity(ours, expected, exact=False, rtol=rtol, atol=atol, dtype=torch.float64)


def test_labeled_comprehension_without_index_is_the_function():
    x = torch.tensor([[[1, 2, 3, 4]]], dtype=torch.int16)
    labels = torch.tensor([[[1, 0, 2, 2]]])
    assert torch.equal(ndimage.labeled_comprehension(x, labels, None, np.sum, float, 0), ndimage.sum(x, labels))
    assert torch.equal(ndimage.labeled_comprehension(x, None, None, np.max, float, 0), ndimage.maximum(x))
    ints = ndimage.labeled_comprehension(x, labels, [2, 3], len, torch.int32, 7)
    assert ints.dtype == torch.int32 and ints.tolist() == [[[2, 7]]]
    assert ndimage.labeled_comprehension(x, labels, [3], np.mean, float, None).isnan().all()


# --------------------------------------------------------------------------- value_indices
def scipy_value_indices(arr: np.ndarray, ignore):
    """SciPy's value_indices; its definition (``np.nonzero(arr == value)`` for each distinct value)
    where SciPy cannot run: it allocates a table over the values' range (a MemoryError or a crash
    for uint64 labels near 2**64)."""
    if arr.size and int(arr.max()) - int(arr.min()) > 2**20:
        return {v: np.nonzero(arr == v) for v in np.unique(arr).tolist() if v != ignore}
    return ndi.value_indices(arr, ignore_value=ignore)


@pytest.mark.parametrize("seed", range(40))
def test_value_indices_match_scipy(seed):
    x, labels, _ = make_case(seed, labels_none=0)
    arr = labels.to(torch.int64) if labels.dtype == torch.bool else labels
    ignore = [None, 0, int(arr.reshape(-1)[0])][seed % 3]
    if arr.dtype == torch.uint64 and ignore is not None and ignore >= 2**63:
        ignore = None  # SciPy casts ignore_value to arr's dtype; a Python int above int64 is fine too
    ours = ndimage.value_indices(arr, ignore_value=ignore)
    theirs = scipy_value_indices(arr.numpy(), ignore)  # the whole batch as one array
    assert list(ours) == [int(k) for k in theirs]
    for key, where in theirs.items():
        assert_parity(ours[int(key)], where, exact=True, dtype=torch.int64)
    for b in range(arr.shape[0]):  # each slice's entries are SciPy's for that slice
        for c in range(arr.shape[1]):
            alone = scipy_value_indices(arr[b, c].numpy(), ignore)
            for key, where in alone.items():
                ours_here = ours[int(key)]
                keep = (ours_here[0] == b) & (ours_here[1] == c)
                assert_parity(tuple(t[keep] for t in ours_here[2:]), where, exact=True)


# --------------------------------------------------------------------------- watershed_ift
def make_watershed(rng, rank: int):
    shape = tuple(int(n) for n in rng.integers(1, {1: 30, 2: 9, 3: 5}[rank] + 1, rank))
    b, c = (int(n) for n in rng.integers(1, 3, 2))
    dtype = [torch.uint8, torch.uint16][rng.integers(2)]
    top = int(rng.choice([1, 3, 255, 300 if dtype == torch.uint16 else 255]))
    image = torch.from_numpy(rng.integers(0, top + 1, (b, c) + shape).astype(np.int64)).to(dtype)
    marked = rng.random((b, c) + shape) < rng.choice([0.0, 0.05, 0.2])
    values = rng.choice([-2, -1, 1, 2, 3, 5], (b, c) + shape)
    markers = torch.from_numpy(np.where(marked, values, 0)).to([torch.int8, torch.int16, torch.int32,
                                                                 torch.int64][rng.integers(4)])
    structure = None if rng.random() < 0.3 else rng.random((3,) * rank) < 0.6
    return image, markers, structure


@pytest.mark.parametrize("seed", range(60))
def test_watershed_ift_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    image, markers, structure = make_watershed(rng, seed % 3 + 1)
    ours = ndimage.watershed_ift(image, markers, structure)
    assert ours.dtype == markers.dtype
    assert_parity(ours, lambda b, c: ndi.watershed_ift(image[b, c].numpy(), markers[b, c].numpy(), structure),
                  exact=True, dtype="expected")


def test_watershed_ift_ties_and_stale_queue_heads_as_scipy():
    """Plateaus of equal values everywhere (every path ties) and a node moved from a queue where it
    was alone (SciPy leaves it as that queue's head), on the SciPy test's image."""
    rng = np.random.default_rng(7)
    image = torch.from_numpy(rng.integers(0, 3, (1, 1, 40, 40))).to(torch.uint8)
    markers = torch.from_numpy(rng.choice([0] * 40 + [-1, 1, 2], (1, 1, 40, 40))).to(torch.int16)
    for structure in (None, np.ones((3, 3))):
        expected = ndi.watershed_ift(image[0, 0].numpy(), markers[0, 0].numpy(), structure)
        assert np.array_equal(ndimage.watershed_ift(image, markers, structure)[0, 0].numpy(), expected)


def test_watershed_ift_output_and_wide_markers():
    image = torch.tensor([[[0, 5, 0, 0]]], dtype=torch.uint8)
    markers = torch.tensor([[[2**32 + 1, 0, 0, -(2**33) - 1]]])  # a C int: 1 and -1
    expected = ndi.watershed_ift(image[0, 0].numpy(), markers[0, 0].numpy())
    out = torch.empty(1, 1, 4, dtype=torch.int16)
    assert ndimage.watershed_ift(image, markers, output=out) is out
    assert out[0, 0].tolist() == expected.tolist() == [1, 1, -1, -1]
    assert ndimage.watershed_ift(image, markers, output=torch.int8).dtype == torch.int8


# --------------------------------------------------------------------------- inputs, bad arguments
CALLS = {
    "sum": lambda x, labels, index: ndimage.sum(x, labels, index),
    "variance": lambda x, labels, index: ndimage.variance(x, labels, index),
    "standard_deviation": lambda x, labels, index: ndimage.standard_deviation(x, labels, index),
    "median": lambda x, labels, index: ndimage.median(x, labels, index),
    "minimum_position": lambda x, labels, index: ndimage.minimum_position(x, labels, index),
    "maximum_position": lambda x, labels, index: ndimage.maximum_position(x, labels, index),
    "extrema": lambda x, labels, index: ndimage.extrema(x, labels, index),
    "histogram": lambda x, labels, index: ndimage.histogram(x, 0, 3, 4, labels, index),
    "labeled_comprehension": lambda x, labels, index: ndimage.labeled_comprehension(x, labels, index, np.median,
                                                                                    float, 0),
}


@pytest.mark.parametrize("name", CALLS)
def test_inputs_are_not_modified(name):
    x = torch.randint(0, 4, (2, 2, 5, 6)).to(torch.uint8)
    labels = torch.randint(-1, 4, (2, 1, 5, 6))
    index = torch.tensor([0, 2, 3])
    copies, versions = [t.clone() for t in (x, labels, index)], [t._version for t in (x, labels, index)]
    CALLS[name](x, labels, index)
    ndimage.value_indices(labels)
    ndimage.watershed_ift(x, labels.expand(2, 2, 5, 6).contiguous())
    for t, copy, version in zip((x, labels, index), copies, versions):
        assert t._version == version and torch.equal(t, copy)


X = torch.rand(2, 1, 4, 5)
LABELS = torch.randint(0, 3, (2, 1, 4, 5))


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("kwargs, error, match", [
    ({"x": np.zeros((2, 1, 4, 5))}, TypeError, "input"),
    ({"x": torch.zeros(4, 5)}, ValueError, "input"),
    ({"labels": LABELS.float()}, TypeError, "labels must have an integer or bool dtype"),
    ({"labels": LABELS[..., :4]}, ValueError, "labels has shape"),
    ({"index": [1, 2.5]}, TypeError, "index must contain ints"),
])
def test_bad_arguments_are_named(name, kwargs, error, match):
    kwargs = {"x": X, "labels": LABELS, "index": [1, 2], **kwargs}
    with pytest.raises(error, match=match):
        CALLS[name](**kwargs)


@pytest.mark.parametrize("call, error, match", [
    (lambda: ndimage.histogram(X, 0, 1, 0), ValueError, "bins must be >= 1"),
    (lambda: ndimage.histogram(X, 0, 1, 2.0), TypeError, "bins must be an int"),
    (lambda: ndimage.histogram(X, 1, 0, 3), ValueError, "min must be <= max"),
    (lambda: ndimage.histogram(X, float("nan"), 1, 3), TypeError, "min must be a finite real"),
    (lambda: ndimage.histogram(X, 0, "1", 3), TypeError, "max must be a finite real"),
    (lambda: ndimage.histogram(X, 0, 1, 3, None, [1]), ValueError, "index must be None when labels is None"),
    (lambda: ndimage.labeled_comprehension(X, LABELS, [1], lambda v: v.sum(), float, 0), TypeError,
     "func must be one of the reductions"),
    (lambda: ndimage.labeled_comprehension(X, LABELS, [1], np.sum, float, 0, True), ValueError,
     "pass_positions must be False"),
    (lambda: ndimage.labeled_comprehension(X, LABELS, [1], np.sum, object, 0), TypeError, "out_dtype"),
    (lambda: ndimage.labeled_comprehension(X, LABELS, [1], np.sum, int, None), TypeError, "default"),
    (lambda: ndimage.labeled_comprehension(X, LABELS, [1], np.sum, float, "0"), TypeError, "default"),
    (lambda: ndimage.labeled_comprehension(X, None, [1], np.sum, float, 0), ValueError, "index must be None"),
    (lambda: ndimage.value_indices(X), ValueError, "arr must be an integer array"),
    (lambda: ndimage.value_indices(LABELS.bool()), TypeError, "arr must be an integer array"),
    (lambda: ndimage.value_indices(LABELS, ignore_value=1.0), TypeError, "ignore_value must be an int"),
    (lambda: ndimage.value_indices(LABELS.numpy()), TypeError, "arr must be a torch.Tensor"),
    (lambda: ndimage.watershed_ift(X, LABELS), TypeError, "input must be uint8 or uint16"),
    (lambda: ndimage.watershed_ift(LABELS.to(torch.uint8), LABELS.to(torch.uint8)), RuntimeError,
     "markers must have a signed integer dtype"),
    (lambda: ndimage.watershed_ift(LABELS.to(torch.uint8), LABELS.float()), TypeError, "markers must have"),
    (lambda: ndimage.watershed_ift(LABELS.to(torch.uint8), LABELS.numpy()), TypeError, "markers must be"),
    (lambda: ndimage.watershed_ift(LABELS.to(torch.uint8), LABELS[..., :4]), RuntimeError, "markers has shape"),
    (lambda: ndimage.watershed_ift(LABELS.to(torch.uint8), LABELS, np.ones((3, 3, 3))), RuntimeError,
     "structure must have one dimension per spatial axis"),
    (lambda: ndimage.watershed_ift(LABELS.to(torch.uint8), LABELS, np.ones((5, 5))), ValueError,
     "structure dimensions must be equal to 3"),
    (lambda: ndimage.watershed_ift(LABELS.to(torch.uint8), LABELS, output=torch.uint8), RuntimeError,
     "output must have a signed integer dtype"),
    (lambda: ndimage.watershed_ift(LABELS.to(torch.uint8), LABELS, output=torch.zeros(2, 1, 4, 4,
                                                                                      dtype=torch.int64)),
     ValueError, "output has shape"),
])
def test_other_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
