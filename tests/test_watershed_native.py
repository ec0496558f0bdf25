"""The native CPU kernel of ``watershed_ift`` (csrc/cpu/watershed_ift.cpp, csrc/core/watershed_ift.h)
against SciPy and the Python replay of SciPy's flood (``morphaug.ndimage._watershed._flood``), label
for label: ranks 1-4, random structures, uint8 / uint16 values with many ties or none, positive and
negative markers of every signed dtype (wide ones wrapping to a C int), every output dtype, empty
markers, empty tensors and batches; and the public function's choice of the kernel."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity

from morphaug import _ops, ndimage
from morphaug.ndimage import _watershed

pytestmark = pytest.mark.skipif(not _ops.built_for("watershed_ift", "cpu", emulate=False),
                                reason="morphaug._C has no watershed_ift kernel")

SIGNED = [torch.int8, torch.int16, torch.int32, torch.int64]
MAX_SIZE = {1: 70, 2: 14, 3: 7, 4: 4}


def random_case(seed: int, rank: int):
    """``(image, markers, structure, dtype)``: a random batch, structure (None: SciPy's default) and
    output dtype."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, MAX_SIZE[rank] + 1, rank))
    batch = tuple(int(n) for n in rng.integers(1, 4, 2))
    value_dtype = [torch.uint8, torch.uint16][rng.integers(2)]
    top = int(rng.choice([0, 1, 3, 255, 65535 if value_dtype == torch.uint16 else 255]))
    image = torch.from_numpy(rng.integers(0, top + 1, batch + shape)).to(value_dtype)
    marked = rng.random(batch + shape) < rng.choice([0.0, 0.01, 0.05, 0.3])
    values = rng.choice([-3, -1, 1, 2, 7, 100], batch + shape)
    marker_dtype = SIGNED[rng.integers(4)]
    markers = torch.from_numpy(np.where(marked, values, 0)).to(marker_dtype)
    structure = None if rng.random() < 0.25 else rng.random((3,) * rank) < rng.choice([0.3, 0.6, 1.0])
    dtype = marker_dtype if rng.random() < 0.5 else SIGNED[rng.integers(4)]
    return image, markers, structure, dtype


def offsets_of(structure, spatial) -> list[int]:
    rank = len(spatial)
    return _watershed._offsets(_watershed._structure(structure, rank), spatial)


def kernel(image, markers, structure, dtype):
    return _ops.kernels.watershed_ift(image, markers, offsets_of(structure, image.shape[2:]), dtype)


def python_flood(image, markers, structure, dtype):
    return _watershed._host_flood(image, markers, offsets_of(structure, image.shape[2:]), dtype)


def scipy_slices(image, markers, structure, dtype):
    """SciPy's result of slice (b, c), in ``dtype``."""
    def expected(b, c):
        out = np.empty(image.shape[2:], dtype=torch.empty(0, dtype=dtype).numpy().dtype)
        ndi.watershed_ift(image[b, c].numpy(), markers[b, c].numpy(), structure, output=out)
        return out
    return expected


@pytest.mark.parametrize("seed", range(48))
def test_kernel_matches_scipy_and_the_python_flood(seed):
    image, markers, structure, dtype = random_case(seed, seed % 4 + 1)
    where = f"seed {seed}: {tuple(image.shape)} {image.dtype} markers {markers.dtype} -> {dtype}"
    before = (image.clone(), markers.clone())
    got = kernel(image, markers, structure, dtype)
    assert torch.equal(image, before[0]) and torch.equal(markers, before[1]), "inputs modified"
    assert got.dtype == dtype and got.shape == image.shape
    assert_parity(got, python_flood(image, markers, structure, dtype), exact=True, where=where)
    assert_parity(got, scipy_slices(image, markers, structure, dtype), exact=True, dtype="expected", where=where)


@pytest.mark.parametrize("structure", [None, np.ones((3, 3), bool)])
def test_plateaus_and_stale_queue_heads(structure):
    """Few values (every path ties) and many markers: the queue order decides every label."""
    rng = np.random.default_rng(11)
    image = torch.from_numpy(rng.integers(0, 3, (2, 2, 41, 37))).to(torch.uint8)
    markers = torch.from_numpy(rng.choice([0] * 40 + [-1, 1, 2, -5], (2, 2, 41, 37))).to(torch.int16)
    got = kernel(image, markers, structure, torch.int16)
    assert_parity(got, scipy_slices(image, markers, structure, torch.int16), exact=True, dtype="expected")


def test_wide_markers_read_as_c_int_and_labels_in_the_output_dtype():
    """int64 markers beyond int32 seed as their C int (their sign included), while the labels that
    flood are the markers in the output dtype (wrapping there too), as in SciPy."""
    image = torch.tensor([[[0, 5, 0, 0, 3, 1, 0, 2]]], dtype=torch.uint8)
    markers = torch.tensor([[[2**32 + 1, 0, 0, -(2**33) - 1, 0, 0, 2**31 + 300, 0]]])
    for dtype in SIGNED:
        assert_parity(kernel(image, markers, None, dtype), python_flood(image, markers, None, dtype), exact=True)
    assert_parity(kernel(image, markers, None, torch.int64), scipy_slices(image, markers, None, torch.int64),
                  exact=True)


def test_slices_in_parallel_and_empty_ones():
    """Many slices over several threads (each with its own scratch), some without markers, some
    with one value only, and tensors without voxels."""
    rng = np.random.default_rng(5)
    image = torch.from_numpy(rng.integers(0, 65536, (5, 3, 48, 33))).to(torch.uint16)
    image[1, 2] = 7
    markers = torch.from_numpy(rng.choice([0] * 300 + [-2, 1, 3], (5, 3, 48, 33))).to(torch.int32)
    markers[0] = 0
    markers[2, 1] = 4
    threads = torch.get_num_threads()
    torch.set_num_threads(max(threads, 4))
    try:
        got = kernel(image, markers, np.ones((3, 3)), torch.int32)
    finally:
        torch.set_num_threads(threads)
    assert_parity(got, scipy_slices(image, markers, np.ones((3, 3)), torch.int32), exact=True, dtype="expected")
    for shape in ((0, 2, 5, 4), (2, 1, 0, 3)):
        empty = kernel(torch.zeros(shape, dtype=torch.uint8), torch.zeros(shape, dtype=torch.int8), None, torch.int64)
        assert empty.shape == shape and empty.dtype == torch.int64


def test_the_kernel_checks_its_arguments():
    image, markers = torch.zeros(1, 1, 4, 4, dtype=torch.uint8), torch.zeros(1, 1, 4, 4, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="uint8 or uint16"):
        _ops.kernels.watershed_ift(image.float(), markers, [1, -1], torch.int32)
    with pytest.raises(RuntimeError, match="signed integer markers"):
        _ops.kernels.watershed_ift(image, markers.to(torch.uint8), [1, -1], torch.int32)
    with pytest.raises(RuntimeError, match="signed integer dtype"):
        _ops.kernels.watershed_ift(image, markers, [1, -1], torch.uint8)
    with pytest.raises(RuntimeError, match="of the input's shape"):
        _ops.kernels.watershed_ift(image, markers[..., :3], [1, -1], torch.int32)
    with pytest.raises(RuntimeError, match="at most 80 offsets"):
        _ops.kernels.watershed_ift(image, markers, [1] * 81, torch.int32)


def test_the_public_function_takes_the_kernel_and_falls_through_beyond_four_axes(monkeypatch):
    """Under the automatic policy the flood is the kernel's (the Python flood is not called); with
    five spatial axes (beyond the kernel's contract) and under the torch policy, the Python flood."""
    flooded = []
    replay = _watershed._flood
    monkeypatch.setattr(_watershed, "_flood", lambda *args: flooded.append(1) or replay(*args))
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    image, markers, structure, dtype = random_case(3, 2)
    got = ndimage.watershed_ift(image, markers, structure, output=dtype)
    assert not flooded
    assert_parity(got, scipy_slices(image, markers, structure, dtype), exact=True, dtype="expected")
    rng = np.random.default_rng(9)
    image5 = torch.from_numpy(rng.integers(0, 4, (1, 2, 3, 2, 3, 2, 3))).to(torch.uint8)
    markers5 = torch.from_numpy(rng.choice([0] * 10 + [-1, 1, 2], image5.shape)).to(torch.int8)
    got = ndimage.watershed_ift(image5, markers5)
    assert flooded
    assert_parity(got, scipy_slices(image5, markers5, None, torch.int8), exact=True, dtype="expected")
    flooded.clear()
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    assert_parity(ndimage.watershed_ift(image, markers, structure, output=dtype),
                  scipy_slices(image, markers, structure, dtype), exact=True, dtype="expected")
    assert flooded
