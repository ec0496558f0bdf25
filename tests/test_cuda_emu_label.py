"""The CUDA labelling (csrc/cuda/label.cu, label_tiles.cuh) and fill holes / propagation by
labelling (csrc/cuda/propagate.cu), run by the emulator in every thread order it offers, against
SciPy and the CPU kernels: ranks 1 to 3, every connectivity, densities 0 to 1, spirals and
serpentines (long chains through many tiles), sizes across tile and chunk boundaries, batch
shapes, per-sample elements; and the dispatch: what the CUDA contract leaves to torch.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

import morphaug.ndimage as mndi
from morphaug import _ops
from morphaug._ops import kernels as _native

from test_cuda_emulation import EMULATOR, NATIVE, ORDERS, WHY_NO_EMULATOR, emulated

pytestmark = [pytest.mark.skipif(EMULATOR is None or NATIVE is None, reason=WHY_NO_EMULATOR or "no native build"),
              pytest.mark.usefixtures("native_policy")]

DENSITIES = (0.0, 0.05, 0.3, 0.5, 0.7, 1.0)
# spatial shapes per rank: across the 1-D tile (1024), the 32-wide tiles and the 256-voxel chunks;
# axes of one voxel (all faces, both ways)
SHAPES = {1: [(1100,), (3,), (1,)], 2: [(37, 70), (5, 33), (1, 40)], 3: [(9, 10, 37), (3, 4, 5), (1, 6, 1)]}


def launches(kernel: str) -> int:
    return EMULATOR.launch_counts().get(kernel, (0,))[0]


def in_every_order(call):
    """call() under the emulator in every order: the results (numpy), checked equal across orders."""
    results = []
    for order, seed in ORDERS:
        with emulated(order, seed):
            results.append(tuple(t.numpy() for t in call()))
    return results


def spiral(n: int) -> np.ndarray:
    """A one-voxel-wide square spiral path in an n x n image: one component, many turns."""
    x = np.zeros((n, n), bool)
    top, left, bottom, right = 0, 0, n - 1, n - 1
    while top <= bottom and left <= right:
        x[top, left:right + 1] = True
        x[top:bottom + 1, right] = True
        if bottom - top >= 2:
            x[bottom, left:right + 1] = True
        if right - left >= 2:
            x[top + 2:bottom + 1, left] = True
        top, left, bottom, right = top + 2, left + 2, bottom - 2, right - 2
    return x


def serpentine(shape) -> np.ndarray:
    """Rows joined alternately at their ends on even rows: one path through every tile, its first
    voxel last to be reached from most of it."""
    x = np.zeros(shape, bool)
    x[..., ::2, :] = True
    rows = x.shape[-2]
    for r in range(1, rows, 2):
        x[..., r, -1 if r % 4 == 1 else 0] = True
    return x


def check_label(x: np.ndarray, structure: np.ndarray, dtype=torch.int32):
    expected = [ndi.label(x[b, c], structure) for b, c in np.ndindex(x.shape[:2])]
    labels = np.stack([e[0] for e in expected]).reshape(x.shape) if expected else np.zeros(x.shape, int)
    counts = np.array([e[1] for e in expected]).reshape(x.shape[:2])
    mask = torch.from_numpy(x)
    cpu = tuple(t.numpy() for t in _native.label(mask, structure, dtype))
    for got_labels, got_counts in in_every_order(lambda: _native.label(mask, structure, dtype)):
        np.testing.assert_array_equal(got_labels, labels)
        np.testing.assert_array_equal(got_counts, counts)
        np.testing.assert_array_equal(got_labels, cpu[0])
        assert got_labels.dtype == cpu[0].dtype


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_label_every_connectivity_and_density(rank):
    rng = np.random.default_rng(rank)
    before = launches("label.cu:number_kernel")
    for connectivity in range(1, rank + 1):
        structure = ndi.generate_binary_structure(rank, connectivity)
        for spatial in SHAPES[rank]:
            for density in DENSITIES:
                check_label(rng.random((2, 2, *spatial)) < density, structure)
    assert launches("label.cu:number_kernel") > before  # the emulated CUDA kernel ran


@pytest.mark.parametrize("pattern", ["spiral", "serpentine", "serpentine 3-D", "comb"])
def test_label_long_chains_through_many_tiles(pattern):
    if pattern == "spiral":
        x = np.stack([spiral(67), ~spiral(67)])[:, None]
        structures = [ndi.generate_binary_structure(2, 1), np.ones((3, 3))]
    elif pattern == "serpentine":
        x = serpentine((1, 2, 66, 97))
        x[0, 1] = x[0, 1, ::-1, ::-1]  # the path's first voxel at the other end
        structures = [ndi.generate_binary_structure(2, 1)]
    elif pattern == "serpentine 3-D":
        x = serpentine((1, 1, 3, 34, 40))
        x[0, 0, 1] = x[0, 0, 1, ::-1]
        structures = [ndi.generate_binary_structure(3, 1), np.ones((3, 3, 3))]
    else:  # vertical teeth joined by the last row: every tooth's root is found from the bottom
        x = np.zeros((1, 1, 80, 65), bool)
        x[0, 0, :, ::2] = True
        x[0, 0, -1] = True
        structures = [ndi.generate_binary_structure(2, 1)]
    for structure in structures:
        check_label(x, structure)


def test_label_int64_batches_and_empty():
    rng = np.random.default_rng(7)
    structure = np.ones((3, 3), bool)
    check_label(rng.random((3, 1, 17, 300)) < 0.6, structure, torch.int64)
    check_label(np.zeros((0, 2, 5, 5), bool), structure)
    x = rng.random((1, 3, 20, 20)) < 0.5
    x[0, 0], x[0, 1] = False, True
    check_label(x, structure)
    check_label(rng.random((2, 2, 4, 3, 5, 6)) < 0.5, np.ones((3,) * 4, bool))  # rank 4


# --- fill holes and propagation, through the public functions ---------------------------

def emulated_matches(op, reference, *args, **kwargs):
    """op under the emulator in every order equals reference; returns the finish_kernel launches."""
    before = launches("propagate.cu:finish_kernel")
    expected = reference()
    for (got,) in in_every_order(lambda: (op(*args, **kwargs),)):
        np.testing.assert_array_equal(got, expected)
    return launches("propagate.cu:finish_kernel") - before


def per_slice(fn, x, *more):
    return np.stack([fn(x[b, c], *(m[b, c] for m in more)) for b, c in np.ndindex(x.shape[:2])]).reshape(x.shape)


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_fill_holes_by_labelling(rank):
    rng = np.random.default_rng(10 + rank)
    for connectivity in range(1, rank + 1):
        structure = ndi.generate_binary_structure(rank, connectivity)
        for spatial in SHAPES[rank]:
            for density in DENSITIES:
                x = rng.random((2, 2, *spatial)) < density
                ran = emulated_matches(mndi.binary_fill_holes, lambda: per_slice(
                    lambda s: ndi.binary_fill_holes(s, structure), x), torch.from_numpy(x), structure)
                assert ran == len(ORDERS)
    rings = ~np.stack([spiral(45), spiral(45)[::-1]])[:, None]  # a hole in a spiral's walls
    rings[1, 0, 20:25, 20:25] = False
    emulated_matches(mndi.binary_fill_holes, lambda: per_slice(ndi.binary_fill_holes, rings),
                     torch.from_numpy(rings))


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("border", [0, 1])
def test_propagation_by_labelling(rank, border):
    rng = np.random.default_rng(20 + rank + 5 * border)
    for connectivity in range(1, rank + 1):
        structure = ndi.generate_binary_structure(rank, connectivity)
        for spatial in SHAPES[rank]:
            for density in DENSITIES:
                seeds = rng.random((2, 1, *spatial)) < 0.03
                region = rng.random((2, 1, *spatial)) < density
                ran = emulated_matches(
                    mndi.binary_propagation,
                    lambda: per_slice(lambda s, m: ndi.binary_propagation(s, structure, m, border_value=border),
                                      seeds, region),
                    torch.from_numpy(seeds), structure, torch.from_numpy(region), border_value=border)
                assert ran == len(ORDERS)
    snake = serpentine((1, 1, 60, 70))
    seeds = np.zeros_like(snake)
    seeds[0, 0, -1, 0] = True  # at the path's far end
    emulated_matches(mndi.binary_propagation,
                     lambda: per_slice(lambda s, m: ndi.binary_propagation(s, mask=m), seeds, snake),
                     torch.from_numpy(seeds), mask=torch.from_numpy(snake))


def test_propagation_without_mask_and_erosion_to_a_fixpoint():
    rng = np.random.default_rng(30)
    x = rng.random((2, 2, 40, 41)) < 0.001
    ran = emulated_matches(mndi.binary_propagation, lambda: per_slice(ndi.binary_propagation, x),
                           torch.from_numpy(x))
    assert ran == len(ORDERS)
    y = rng.random((1, 2, 30, 50)) < 0.9
    emulated_matches(mndi.binary_erosion, lambda: per_slice(lambda s: ndi.binary_erosion(s, iterations=-1,
                                                                                           border_value=1), y),
                     torch.from_numpy(y), iterations=-1, border_value=1)


def test_per_sample_symmetric_elements_label_with_their_own_links():
    rng = np.random.default_rng(40)
    x = rng.random((3, 2, 33, 36)) < 0.45
    elements = np.stack([ndi.generate_binary_structure(2, 1), np.ones((3, 3), bool),
                         np.array([[0, 0, 0], [1, 1, 1], [0, 0, 0]], bool)])
    expected = np.stack([[ndi.binary_fill_holes(x[b, c], elements[b]) for c in range(2)] for b in range(3)])
    ran = emulated_matches(mndi.binary_fill_holes, lambda: expected, torch.from_numpy(x),
                           torch.from_numpy(elements))
    assert ran == len(ORDERS)


@pytest.mark.parametrize("element", ["asymmetric", "wide", "asymmetric per sample"])
def test_elements_the_cuda_labelling_does_not_take_run_on_torch(element):
    rng = np.random.default_rng(50)
    x = rng.random((2, 1, 30, 31)) < 0.4
    if element == "asymmetric":
        structure = np.array([[0, 1, 0], [1, 1, 0], [0, 0, 0]], bool)
    elif element == "wide":
        structure = np.ones((5, 5), bool)
    else:  # the union of offsets is centrosymmetric, neither sample's element is
        structure = np.stack([np.array([[0, 0, 0], [1, 1, 0], [0, 0, 0]], bool),
                              np.array([[0, 0, 0], [0, 1, 1], [0, 0, 0]], bool)])
    expected = np.stack([ndi.binary_fill_holes(x[b, 0], structure if structure.ndim == 2 else structure[b])
                         for b in range(2)])[:, None]
    assert emulated_matches(mndi.binary_fill_holes, lambda: expected, torch.from_numpy(x),
                            torch.from_numpy(structure)) == 0


def test_the_cuda_contract_names_what_it_leaves():
    fill = _ops.KERNELS["fill_holes"]
    assert fill.fits((8, 8), {"reach": [1, 1], "two_way": True}, "cuda") is None
    assert "within (3,) * S" in fill.fits((8, 8), {"reach": [2, 1], "two_way": True}, "cuda")
    assert "centrosymmetric" in fill.fits((8, 8), {"reach": [1, 1], "two_way": False}, "cuda")
    assert fill.fits((8, 8), {"reach": [2, 1], "two_way": False}, "cpu") is None  # the CPU floods
