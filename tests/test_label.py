"""``label`` against ``scipy.ndimage.label``, slice by slice: identical labels and counts.

Every test runs on the torch backend, on the automatic choice (the native CPU
kernel) and with CUDA emulated (the CUDA launcher run by the emulator, its
order of blocks and threads changing from call to call).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity, to_numpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_native import RUN_PATTERNS, centrosymmetric, label_structures, run_pattern, spiral

from morphaug import _ops
from morphaug.ndimage import generate_binary_structure, label

pytestmark = pytest.mark.usefixtures("backend")

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
MAX_SIDE = {1: 40, 2: 12, 3: 7, 4: 4}
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.uint16, torch.uint32, torch.uint64, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
EMULATOR = _ops.load_emulation()[0]
ORDERS = itertools.cycle([("forward", 0), ("reverse", 0)] + [("shuffle", s) for s in range(1, 5)])


@pytest.fixture(autouse=True)
def next_order(backend):
    """With CUDA emulated, each test runs the emulator in the next order."""
    if backend == "emulated":
        EMULATOR.set_order(*next(ORDERS))
    yield
    if backend == "emulated":
        EMULATOR.set_order("forward", 0)


def check(x, structure=None, **kwargs):
    """label(x) against SciPy on every slice (x: a tensor or a bool array); the input is left as
    it was."""
    tensor = torch.from_numpy(x) if isinstance(x, np.ndarray) else x
    before = tensor.clone()
    labels, counts = label(tensor, structure, **kwargs)
    torch.testing.assert_close(tensor, before, rtol=0, atol=0, equal_nan=True)
    assert counts.dtype == torch.int64 and counts.shape == tensor.shape[:2]
    assert labels.shape == tensor.shape
    reference = to_numpy(tensor)
    element = None if structure is None else np.asarray(structure)
    assert_parity((labels, counts), lambda b, c: ndi.label(reference[b, c], element), exact=True)
    return labels, counts


@st.composite
def cases(draw):
    """A random input (B, C, *spatial) of a random dtype (empty axes and slices now and then, full
    slices too) and a structure: every connectivity, random centrosymmetric ones, or None."""
    rank = draw(st.integers(1, 4))
    sides = [draw(st.integers(1, MAX_SIDE[rank])) for _ in range(rank)]
    if draw(st.integers(0, 9)) == 0:  # an empty axis now and then
        sides[draw(st.integers(0, rank - 1))] = 0
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 2)), *sides)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.sampled_from([0.0, 0.2, 0.45, 0.6, 0.9, 1.0]))
    values = rng.random(shape) < density
    if shape[0] > 1 and values.size:
        values[0] = False  # an empty slice next to the others
    kind = draw(st.sampled_from(["connectivity", "random", "default"]))
    if kind == "connectivity":
        structure = ndi.generate_binary_structure(rank, draw(st.integers(1, rank)))
    elif kind == "random":
        structure = centrosymmetric(rng, rank)
    else:
        structure = None
    values = torch.from_numpy(values * rng.integers(1, 100, shape))
    return values.to(draw(st.sampled_from(DTYPES))), structure


@SETTINGS
@given(case=cases())
def test_matches_scipy(case):
    x, structure = case
    labels, _ = check(x, structure)
    assert labels.dtype == torch.int32


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_every_connectivity(rank):
    rng = np.random.default_rng(rank)
    x = rng.random((2, 2) + (MAX_SIDE[rank] + 3,) * rank) < 0.5
    for connectivity in range(1, rank + 1):
        check(x, generate_binary_structure(rank, connectivity))


@pytest.mark.parametrize("shape, density, connectivity", [
    ((2, 1, 70, 45), 0.55, 1),  # many components, several tiles
    ((1, 2, 23, 31, 37), 0.3, 3),  # 26-connected across tiles
    ((2, 2, 3000), 0.6, 1),  # a line of several tiles
    ((1, 1, 128, 128), 0.25, 1),  # thousands of small components
    ((1, 1, 7, 9, 8, 10), 0.5, 2),
])
def test_larger_inputs(shape, density, connectivity):
    x = np.random.default_rng(sum(shape)).random(shape) < density
    check(x, ndi.generate_binary_structure(len(shape) - 2, connectivity))


def blobs(shape, seed):
    """Thresholded smoothed noise: large, winding components."""
    noise = np.random.default_rng(seed).standard_normal(shape)
    smooth = ndi.gaussian_filter(noise, sigma=(0, 0) + (2.0,) * (len(shape) - 2))
    return smooth > 0.02


@pytest.mark.parametrize("shape", [(2, 1, 40, 36, 33), (1, 2, 150, 130)])
def test_blobs(shape):
    x = blobs(shape, 7)
    check(x, ndi.generate_binary_structure(len(shape) - 2, len(shape) - 2))
    check(x)


@pytest.mark.parametrize("pattern", RUN_PATTERNS)
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_run_patterns(rank, pattern):
    """Full rows, runs of one voxel, random runs; every connectivity, with and without the
    link along the rows (the CPU kernel's run and voxel scans), and runs meeting only
    through diagonal steps."""
    x = run_pattern(pattern, (2, 2) + (MAX_SIDE[rank] + 3,) * rank, np.random.default_rng(rank))
    for structure in label_structures(rank):
        check(x, structure)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_structures_without_the_row_link_across_chunks(threads):
    """The CPU's voxel scan (structures with no step along the rows): neighbours visited nearest first,
    those next to a joined one skipped unread, in slices of over 2^15 voxels cut into chunks when the
    threads outnumber the slices (the skipped pairs across chunks are joined by the merge)."""
    rng = np.random.default_rng(threads)
    smooth = torch.nn.functional.interpolate(torch.from_numpy(rng.random((1, 1, 9, 9, 9))), size=(36, 36, 36),
                                             mode="trilinear")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for x in (smooth > 0.5, torch.from_numpy(rng.random((1, 1, 36, 36, 36)) < 0.45)):
            lopsided = centrosymmetric(rng, 3)
            lopsided[1, 1, [0, 2]] = False
            for structure in label_structures(3)[3:6] + [lopsided]:  # no row link
                check(x, structure)
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("shape", [(2, 1, 1), (1, 1, 1, 1), (2, 1, 7, 1), (1, 2, 1, 9), (1, 1, 5, 1, 4),
                                   (2, 1, 3, 4, 1), (1, 1, 1, 1, 1, 1), (1, 1, 2, 1, 1, 3)])
def test_axes_of_one_voxel(shape):
    rng = np.random.default_rng(len(shape))
    for x in (rng.random(shape) < 0.6, np.ones(shape, bool), np.zeros(shape, bool)):
        for structure in label_structures(len(shape) - 2):
            check(x, structure)


def test_spiral_is_one_component():
    corridor = spiral(61)
    x = np.stack([corridor, corridor.T, corridor[::-1], corridor[:, ::-1]])[:, None]
    _, counts = check(x)
    assert (counts == 1).all()


def test_numbering_follows_the_first_voxel():
    """A component whose first voxel comes late but whose bulk comes early is numbered late."""
    x = np.zeros((1, 1, 5, 6), bool)
    x[0, 0, 0, 5] = x[0, 0, 1, 5] = x[0, 0, 2, 0:6] = True  # first voxel (0, 5)
    x[0, 0, 0, 0:4] = True  # first voxel (0, 0), numbered 1
    x[0, 0, 4, 0] = True
    labels, counts = check(x)
    assert labels[0, 0, 2, 0] == 2 and counts.item() == 3


def test_nan_and_negative_values_are_features():
    x = np.array([[[1.0, np.nan, 0.0, -0.0, -2.0, 0.5]]])
    labels, counts = check(x)
    assert labels.tolist() == [[[1, 1, 0, 0, 2, 2]]] and counts.item() == 2


@pytest.mark.parametrize("structure", [np.zeros((3, 3)), np.eye(3)[::-1] + np.eye(3), np.ones((3, 3))])
def test_the_centre_of_the_structure_is_not_read(structure):
    x = np.random.default_rng(5).random((2, 1, 9, 8)) < 0.6
    centred = structure.copy()
    centred[1, 1] = 1 - centred[1, 1]
    labels, counts = check(x, structure)
    other, other_counts = label(torch.from_numpy(x), centred)
    assert torch.equal(labels, other) and torch.equal(counts, other_counts)


@pytest.mark.parametrize("shape", [(2, 3, 0, 4), (0, 1, 5), (1, 0, 3, 3)])
def test_empty_inputs(shape):
    labels, counts = label(torch.ones(shape))
    assert labels.shape == shape and labels.dtype == torch.int32
    assert counts.shape == shape[:2] and counts.dtype == torch.int64 and not counts.any()


def test_structures_as_tensors_and_lists():
    x = np.random.default_rng(2).random((2, 1, 10, 11)) < 0.5
    full = np.ones((3, 3), int)
    expected = check(x, full)
    for structure in (torch.ones(3, 3), full.tolist(), torch.ones(3, 3, dtype=torch.bfloat16)):
        got = label(torch.from_numpy(x), structure)
        assert all(torch.equal(a, b) for a, b in zip(got, expected))


# --- output ---------------------------------------------------------------

X = np.random.default_rng(11).random((2, 2, 12, 13)) < 0.5


@pytest.mark.parametrize("dtype", [torch.int64, torch.int16, torch.uint8, torch.uint64, torch.float32,
                                   torch.float16])
def test_output_dtype(dtype):
    labels, counts = label(torch.from_numpy(X), output=dtype)
    expected, expected_counts = label(torch.from_numpy(X))
    assert labels.dtype == dtype and torch.equal(labels.long(), expected.long())
    assert torch.equal(counts, expected_counts)


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint16, torch.float64])
def test_output_tensor_is_filled_and_counts_returned(dtype):
    x = torch.from_numpy(X)
    output = torch.full(x.shape, 7).to(dtype)
    counts = label(x, output=output)
    expected, expected_counts = label(x)
    assert isinstance(counts, torch.Tensor) and torch.equal(counts, expected_counts)
    assert output.dtype == dtype and torch.equal(output.long(), expected.long())


def test_output_may_be_the_input():
    x = torch.from_numpy(X).to(torch.int32)
    expected, expected_counts = label(x)
    counts = label(x, output=x)
    assert torch.equal(x, expected) and torch.equal(counts, expected_counts)


def test_default_output_is_int32_and_bool_takes_one_feature():
    labels, counts = label(torch.ones(2, 1, 2), output=torch.bool)  # a pair of face neighbours: 1 at most
    assert labels.dtype == torch.bool and labels.all() and counts.tolist() == [[1], [1]]
    assert label(torch.ones(1, 1, 3))[0].dtype == torch.int32


@pytest.mark.parametrize("shape, structure, dtype, fits", [
    ((1, 1, 16, 32), None, torch.uint8, False),  # 16 * 16 = 256 features at most with the cross
    ((1, 1, 16, 31), None, torch.uint8, True),  # 31 * 8 = 248
    ((1, 1, 16, 16), np.ones((3, 3)), torch.uint8, True),  # 16 * 8 = 128
    ((1, 1, 16, 16), np.eye(3) + np.eye(3)[::-1], torch.uint8, False),  # no face neighbour: 256 voxels
    ((1, 1, 3, 3), np.zeros((3, 3)), torch.bool, False),  # 9 separate voxels
    ((1, 1, 5000), None, torch.float16, False),  # 2500 > 2048, float16's consecutive integers
    ((1, 1, 4096), None, torch.float16, True),
])
def test_output_dtype_must_hold_every_label(shape, structure, dtype, fits):
    x = torch.zeros(shape)
    if fits:
        assert label(x, structure, output=dtype)[0].dtype == dtype
        return
    with pytest.raises(ValueError, match=f"output dtype {dtype} cannot hold the labels") as error:
        label(x, structure, output=dtype)
    assert isinstance(error.value, RuntimeError)  # SciPy's exception type too


# --- bad arguments ----------------------------------------------------------

M = torch.zeros(1, 1, 4, 5)


@pytest.mark.parametrize("call, error, message", [
    (lambda: label(M, np.ones((3, 3, 3))), ValueError, r"one dimension per spatial axis of input \(2\)"),
    (lambda: label(M, np.ones(3)), RuntimeError, r"one dimension per spatial axis of input \(2\), got shape \(3,\)"),
    (lambda: label(M, np.ones((3, 2))), ValueError, r"structure dimensions must be equal to 3, got shape \(3, 2\)"),
    (lambda: label(M, [[0, 1, 0], [1, 1, 0], [0, 0, 0]]), ValueError, "structure must be centrosymmetric"),
    (lambda: label(M, np.ones((3, 3), complex)), TypeError, "structure must be a real array"),
    (lambda: label(M, torch.ones(3, 3, dtype=torch.complex64)), TypeError, "structure must be real"),
    (lambda: label(M, "cross"), TypeError, "structure must be a real array"),
    (lambda: label(M, output=torch.zeros(1, 1, 4, 4)), ValueError, r"output has shape \(1, 1, 4, 4\)"),
    (lambda: label(M, output=torch.zeros(1, 1, 4, 5, device="meta")), ValueError, "output is on meta"),
    (lambda: label(M, output=torch.complex64), TypeError, "output dtype torch.complex64 is not supported"),
    (lambda: label(M, output="int32"), TypeError, "output must be None, a torch.dtype or a torch.Tensor"),
    (lambda: label(M.numpy()), TypeError, "input must be a torch.Tensor"),
    (lambda: label(M[0, 0]), ValueError, "at least one spatial axis"),
    (lambda: label(M.to(torch.complex64)), TypeError, "input must be real"),
])
def test_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()
