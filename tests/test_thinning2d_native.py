"""The native ``thinning2d`` kernel on the CPU (skeletonize "zhang", thin) against scikit-image and
the torch backend: whole batches thinned to their fixpoint in one call, a budget of iterations, the
deleted count, checks. (``test_skeleton.py`` runs the public functions, here on the same kernel.)"""

from __future__ import annotations

import numpy as np
import pytest
import skimage.morphology
import torch
from conftest import assert_parity, each_slice
from test_skeleton import KINDS, batch

from morphaug import _ops
from morphaug.morphology import _thinning, skeletonize, thin

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(not _ops.built_for("thinning2d", "cpu", emulate=False),
                                 reason="the native thinning2d kernel is not built")]

REFERENCE = {"zhang": lambda s, **kw: skimage.morphology.skeletonize(s), "guo_hall": skimage.morphology.thin}
# rows and columns across a tile (8 x 32), a warp, one-pixel lines, a large slice
SHAPES = [(1, 1), (1, 40), (40, 1), (3, 3), (8, 32), (9, 33), (17, 65), (31, 7), (70, 130)]


def one_pixel_shapes(shape, seed):
    """Single pixels, 2 x 2 squares, diagonal steps and crosses, some at the border."""
    rng = np.random.default_rng(seed)
    out = np.zeros((3, *shape), bool)
    for _ in range(max(1, shape[0] * shape[1] // 20)):
        y, x = rng.integers(0, shape)
        out[0, y, x] = True
        out[1, y:y + 2, x:x + 2] = True
        out[2, y, max(0, x - 1):x + 2] = out[2, max(0, y - 1):y + 2, x] = True
    return torch.from_numpy(out)[:, None]


def thinning2d(x, algorithm, iterations):
    return _ops.kernels.thinning2d(x, _thinning._FLAGS[algorithm], iterations)


@pytest.mark.parametrize("algorithm", ["zhang", "guo_hall"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(2))
def test_fixpoint_matches_skimage(algorithm, shape, seed):
    kinds = [batch(KINDS, shape, seed)] if shape[1] > 1 else []  # (its border kind takes two columns)
    for x in kinds + [one_pixel_shapes(shape, seed)]:
        before = x.clone()
        out, deleted = thinning2d(x, algorithm, shape[0] * shape[1] + 1)
        assert out.dtype == torch.bool and deleted.dtype == torch.int64 and deleted.shape == ()
        assert_parity(out, each_slice(REFERENCE[algorithm], x), exact=True)
        assert int(deleted) == 0
        assert torch.equal(x, before)


@pytest.mark.parametrize("iterations", [1, 2, 3, 6])
def test_budget_and_deleted_count(iterations):
    # with a budget, each slice stops after it; deleted: the pixels its last iteration took
    x = batch(KINDS, (37, 45), seed=iterations)
    for algorithm in ("zhang", "guo_hall"):
        out, deleted = thinning2d(x, algorithm, iterations)
        expected = _thinning._thin_torch(x, algorithm, iterations)
        before = _thinning._thin_torch(x, algorithm, iterations - 1) if iterations > 1 else x
        assert torch.equal(out, expected)
        assert int(deleted) == int(before.sum() - expected.sum())
    assert_parity(thinning2d(x, "guo_hall", iterations)[0],
                  each_slice(skimage.morphology.thin, x, max_num_iter=iterations), exact=True)


def test_public_functions_take_the_kernel(monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", "native")  # a call the kernel cannot take would raise
    x = batch(KINDS, (33, 29), seed=4, channels=3)[:, :, 2:, ::2]  # not contiguous
    assert_parity(skeletonize(x), each_slice(skimage.morphology.skeletonize, x), exact=True)
    for max_num_iter in (None, 1, 3):
        assert_parity(thin(x, max_num_iter), each_slice(skimage.morphology.thin, x, max_num_iter=max_num_iter),
                      exact=True)


@pytest.mark.parametrize("chunk", [1, 3])
def test_chunked_native_calls(monkeypatch, chunk):
    # CUDA's loop (a call per chunk, the deleted count read after each) on the CPU kernel
    monkeypatch.setattr(_thinning, "CHUNK", chunk)
    monkeypatch.setattr(_ops, "emulating_cuda", lambda: True)
    x = batch(KINDS, (30, 26), seed=5)
    for max_num_iter in (None, 2, 7):
        assert_parity(_thinning._thin_native(x, "guo_hall", max_num_iter),
                      each_slice(skimage.morphology.thin, x, max_num_iter=max_num_iter), exact=True)
    assert_parity(_thinning._thin_native(x, "zhang", None), each_slice(skimage.morphology.skeletonize, x),
                  exact=True)


def test_kernel_opcheck_and_checks():
    x = batch(KINDS[:3], (9, 11), seed=2)
    flags = _thinning._FLAGS["zhang"]
    torch.library.opcheck(torch.ops.morphaug.thinning2d.default, (x, flags, 3))
    with pytest.raises(RuntimeError, match="expected a bool mask"):
        thinning2d(x.float(), "zhang", 1)
    with pytest.raises(RuntimeError, match=r"expected \(B, C, H, W\)"):
        thinning2d(x[..., None], "zhang", 1)
    with pytest.raises(RuntimeError, match="expected 512 table flags"):
        _ops.kernels.thinning2d(x, flags[:5], 1)
    with pytest.raises(RuntimeError, match="expected iterations >= 1"):
        thinning2d(x, "zhang", 0)
    with pytest.raises(RuntimeError, match="foreground"):
        _ops.kernels.thinning2d(x, [1] * 512, 1)


def test_tables_in_code_order_are_the_torch_tables():
    # the Guo-Hall tables reordered to the kernel's bits give skimage's codes back
    first, _ = _thinning._guo_hall_tables()
    mine, _ = _thinning._TABLES["guo_hall"]
    rng = np.random.default_rng(0)
    for _ in range(50):
        patch = rng.random((3, 3)) < 0.5
        code = sum(int(patch[1 + dy, 1 + dx]) << i for i, (dy, dx) in enumerate(_thinning._CODE_OFFSETS))
        theirs = sum(int(patch[1 + dy, 1 + dx]) << i for i, (dy, dx) in enumerate(_thinning._GUO_HALL_OFFSETS))
        assert mine[code] == first[theirs]
