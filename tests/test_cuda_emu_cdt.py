"""The CUDA launcher of cdt in the emulator (``morphaug._C_emu``), against SciPy and the CPU kernel.

Taxicab and chessboard distances without indices take the separable passes
(a warp per line on the last axis, a thread per line on the others); indices
and other metrics take SciPy's raster passes. Every case runs in the
emulator's four orders of blocks and threads and checks which kernels ran.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from morphaug import _ops, ndimage
from morphaug._ops import kernels as _native

from test_cuda_emulation import ORDERS, emulated, per_slice
from test_native import chamfer

NATIVE, WHY_NO_NATIVE = _ops.load_native()
EMULATOR, WHY_NO_EMULATOR = _ops.load_emulation()
pytestmark = [pytest.mark.skipif(NATIVE is None, reason=WHY_NO_NATIVE or ""),
              pytest.mark.skipif(EMULATOR is None, reason=WHY_NO_EMULATOR or ""),
              pytest.mark.xdist_group("test_cuda_emulation")]

RASTER = "cdt.cu:cdt_kernel"
LINE = "cdt.cu:cdt_line_kernel"
AXIS = {"taxicab": "cdt.cu:cdt_taxicab_axis_kernel", "chessboard": "cdt.cu:cdt_chessboard_axis_kernel"}
HEXAGONAL = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], bool)

# (B, C, *spatial): ranks 1 to 4, lines of 1, across a warp (31, 32, 33) and longer than a block (300)
SHAPES = [(2, 3, 1), (3, 2, 31), (1, 2, 33), (2, 1, 300), (2, 2, 9, 33), (1, 3, 40, 31), (1, 1, 300, 3),
          (2, 1, 1, 1), (1, 2, 257, 5), (1, 2, 6, 5, 33), (2, 1, 17, 3, 9), (1, 1, 1, 1, 40),
          (1, 1, 4, 3, 5, 34), (2, 1, 3, 1, 4, 5)]


def masks(shape, seed):
    """Random masks of a few densities, the first slice all foreground and the second all background
    (where there are two), and one far background voxel (gpu_check.py's adversarial CDT input)."""
    rng = np.random.default_rng(seed)
    out = []
    for density in (0.6, 0.95):
        x = rng.random(shape) < density
        x.reshape(-1, *shape[2:])[0] = True
        if shape[0] * shape[1] > 1:
            x.reshape(-1, *shape[2:])[1] = False
        out.append(x)
    far = np.ones(shape, bool)
    far[(slice(None), slice(None)) + (0,) * (len(shape) - 2)] = False
    out.append(far)
    return out


def scipy_cdt(x, metric, indices):
    scipy_metric = metric if isinstance(metric, str) else np.asarray(metric)
    distances, where = per_slice(x, lambda s: ndi.distance_transform_cdt(s, scipy_metric, return_indices=True))
    return [distances] + ([np.moveaxis(where, 2, 0)] if indices else [])


def emulated_runs(x, metric, indices):
    """Per order: the outputs of the emulated launcher and the kernels it launched."""
    mask, structure = torch.from_numpy(x), chamfer(metric, x.ndim - 2)
    for order, seed in ORDERS:
        before = EMULATOR.launch_counts()
        with emulated(order, seed):
            distances, where = _native.cdt(mask, structure, indices)
        after = EMULATOR.launch_counts()
        kernels = {k for k, v in after.items() if v[0] > before.get(k, (0,))[0]}
        yield f"{order}/{seed}", [distances.numpy()] + ([where.numpy()] if indices else []), kernels


def check(x, metric, indices, expected_kernels):
    cpu = _native.cdt(torch.from_numpy(x), chamfer(metric, x.ndim - 2), indices)
    cpu = [t.numpy() for t in cpu[:1 + indices]]
    reference = scipy_cdt(x, metric, indices)
    mask_before = x.copy()
    for order, got, kernels in emulated_runs(x, metric, indices):
        assert kernels == expected_kernels, (order, kernels)
        for g, c, r in zip(got, cpu, reference, strict=True):
            assert g.dtype == np.int32 and g.shape == r.shape, order
            np.testing.assert_array_equal(g, r, err_msg=f"SciPy, {order}")
            np.testing.assert_array_equal(g, c, err_msg=f"CPU kernel, {order}")
    np.testing.assert_array_equal(x, mask_before)


@pytest.mark.parametrize("metric", ["taxicab", "chessboard"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_separable_distances_match_scipy_and_the_cpu_kernel(shape, metric):
    kernels = {LINE} | ({AXIS[metric]} if len(shape) > 3 else set())
    for x in masks(shape, sum(shape)):
        check(x, metric, False, kernels)


RASTER_CASES = [(shape, metric) for shape in [(2, 1, 33), (1, 2, 9, 33), (2, 1, 300, 3), (1, 2, 6, 5, 7)]
                for metric in ["taxicab", "chessboard"]] + [((2, 2, 9, 33), HEXAGONAL), ((1, 1, 40, 7), HEXAGONAL)]


@pytest.mark.parametrize("shape, metric", RASTER_CASES, ids=str)
def test_indices_and_other_metrics_take_the_raster_passes(shape, metric):
    indices = not isinstance(metric, np.ndarray)  # the hexagonal metric: distances alone, raster too
    for x in masks(shape, 7 * sum(shape)):
        check(x, metric, indices, {RASTER})


def test_chessboard_stacks_for_part_of_the_batch_at_a_time():
    """Axis 0 of (2, 256, 256) slices has 2^16 lines: stacks for 4 of the 10 slices at a time."""
    x = np.random.default_rng(3).random((5, 2, 2, 256, 256)) < 0.998
    check(x, "chessboard", False, {LINE, AXIS["chessboard"]})


@pytest.mark.usefixtures("native_policy")
@pytest.mark.parametrize("metric", ["taxicab", "chessboard"])
@pytest.mark.parametrize("distances, indices", [(True, False), (False, True), (True, True)])
def test_return_combinations_through_the_public_api(metric, distances, indices):
    x = np.random.default_rng(11).random((2, 2, 13, 35)) < 0.9
    want_d, want_i = per_slice(x, lambda s: ndi.distance_transform_cdt(s, metric, return_indices=True))
    with emulated("shuffle", 5):
        got = ndimage.distance_transform_cdt(torch.from_numpy(x), metric, return_distances=distances,
                                             return_indices=indices)
    got = got if isinstance(got, tuple) else (got,)
    expected = ([want_d] if distances else []) + ([np.moveaxis(want_i, 2, 0)] if indices else [])
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g.numpy(), e)
