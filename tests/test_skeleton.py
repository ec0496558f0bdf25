"""``morphaug.morphology.skeletonize`` and ``thin`` against scikit-image, slice by slice: identical
skeletons on batches of blobs, thin tubes, noise, one-pixel-thick shapes, shapes touching the border,
empty and full slices."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import skimage.morphology
import torch
from conftest import assert_parity, each_slice

from morphaug.morphology import _thinning, skeletonize, thin

KINDS = ("blobs", "tubes", "noise", "lines", "border", "empty", "full")
DTYPES = [torch.bool, torch.uint8, torch.int64, torch.float32]


def shape_slice(kind: str, shape, rng: np.random.Generator) -> np.ndarray:
    """One bool slice of ``shape`` (2-D or 3-D) of the given kind."""
    rank = len(shape)
    if kind == "empty":
        return np.zeros(shape, bool)
    if kind == "full":
        return np.ones(shape, bool)
    if kind == "noise":
        return rng.random(shape) < rng.uniform(0.3, 0.7)
    if kind == "blobs":  # smooth random blobs, some touching the border
        field = ndi.gaussian_filter(rng.standard_normal(shape), sigma=max(1.0, min(shape) / 8))
        return field > np.quantile(field, rng.uniform(0.4, 0.8))
    out = np.zeros(shape, bool)
    for _ in range(rng.integers(1, 5)):  # random straight segments
        start, end = rng.integers(0, shape, size=(2, rank))
        steps = int(np.abs(end - start).max()) + 1
        points = np.rint(np.linspace(start, end, steps)).astype(int)
        out[tuple(points.T)] = True
    if kind == "tubes":  # segments a few voxels thick
        out = ndi.binary_dilation(out, ndi.generate_binary_structure(rank, 1), iterations=int(rng.integers(1, 3)))
    if kind == "border":  # a thick shape cut by the border, plus a line along it
        out = ndi.binary_dilation(out, iterations=2)
        out[(0,) * (rank - 1)] = True
        out[..., -2:] |= rng.random(shape[:-1] + (2,)) < 0.7
    return out


def batch(kinds, shape, seed: int, channels: int = 2) -> torch.Tensor:
    """A bool ``(len(kinds), channels, *shape)`` batch, slice (b, c) of kind ``kinds[b]`` (the empty and full
    kinds in channel 0 only, a random kind in the others)."""
    rng = np.random.default_rng(seed)
    slices = [[shape_slice(kind if c == 0 else rng.choice(KINDS[:5]), shape, rng) for c in range(channels)]
              for kind in kinds]
    return torch.from_numpy(np.array(slices))


SHAPES_2D = [(24, 31), (7, 5), (1, 9), (2, 2), (48, 40)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES_2D)
@pytest.mark.parametrize("seed", range(3))
def test_skeletonize_zhang_matches_skimage(shape, seed, dtype):
    x = batch(KINDS, shape, seed).to(dtype)
    before = x.clone()
    for method in (None, "zhang"):
        out = skeletonize(x, method=method)
        assert out.dtype == torch.bool
        assert_parity(out, each_slice(skimage.morphology.skeletonize, x), exact=True, where=f"{method}")
    assert torch.equal(x, before)


@pytest.mark.parametrize("max_num_iter", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("shape", SHAPES_2D)
@pytest.mark.parametrize("seed", range(3))
def test_thin_matches_skimage(shape, seed, max_num_iter):
    x = batch(KINDS, shape, seed)
    before = x.clone()
    out = thin(x, max_num_iter)
    assert out.dtype == torch.bool
    assert_parity(out, each_slice(skimage.morphology.thin, x, max_num_iter=max_num_iter), exact=True)
    assert torch.equal(x, before)


def test_thin_tables_are_skimage_tables():
    first, second = _thinning._guo_hall_tables()
    assert np.array_equal(first, skimage.morphology._skeletonize.G123_LUT)
    assert np.array_equal(second, skimage.morphology._skeletonize.G123P_LUT)


@pytest.mark.parametrize("max_num_iter", [None, 2, 4, 7])
def test_chunked_convergence_reads(monkeypatch, max_num_iter):
    # an accelerator reads convergence every few iterations: more iterations than a slice needs
    # change nothing, and max_num_iter still stops in the middle of a chunk
    x = batch(KINDS, (40, 33), seed=7)
    monkeypatch.setattr(_thinning, "_chunk", lambda device: 3)
    assert_parity(thin(x, max_num_iter), each_slice(skimage.morphology.thin, x, max_num_iter=max_num_iter),
                  exact=True)
    assert_parity(skeletonize(x), each_slice(skimage.morphology.skeletonize, x), exact=True)


def test_long_snake_converges():
    # a thick spiral needs many iterations of every slice
    x = np.zeros((61, 61), bool)
    for r in range(2, 30, 6):
        x[30 - r:31 + r, 30 - r:30 - r + 3] = x[30 - r:30 - r + 3, 30 - r:31 + r] = True
        x[30 - r:31 + r, 28 + r:31 + r] = True
    t = torch.from_numpy(np.stack([x, ~x, x.T]))[:, None]
    assert_parity(skeletonize(t), each_slice(skimage.morphology.skeletonize, t), exact=True)
    assert_parity(thin(t), each_slice(skimage.morphology.thin, t), exact=True)


# ------------------------------------------------------------------------------------- bad input
BAD = [
    (lambda: skeletonize(np.zeros((1, 1, 4, 4), bool)), TypeError, "image must be a torch.Tensor"),
    (lambda: skeletonize(torch.zeros(1, 4, 4)), ValueError, "image must have shape"),
    (lambda: skeletonize(torch.zeros(1, 1, 2, 2, 2, 2)), ValueError, "image must have shape"),
    (lambda: skeletonize(torch.full((1, 1, 4, 4), 2)), ValueError, "image must be binary"),
    (lambda: skeletonize(torch.full((1, 1, 4, 4), 0.5)), ValueError, "image must be binary"),
    (lambda: skeletonize(torch.full((1, 1, 4, 4), float("nan"))), ValueError, "image must be binary"),
    (lambda: skeletonize(torch.zeros(1, 1, 4, 4, dtype=torch.complex64)), TypeError, "image must be real"),
    (lambda: skeletonize(torch.zeros(1, 1, 4, 4, 4, dtype=torch.bool), method="zhang"), ValueError, "method"),
    (lambda: skeletonize(torch.zeros(1, 1, 4, 4, dtype=torch.bool), method="medial"), ValueError, "method"),
    (lambda: skeletonize(torch.zeros(1, 1, 4, 4, dtype=torch.bool), method=3), ValueError, "method"),
    (lambda: thin(torch.zeros(1, 1, 4, 4, 4, dtype=torch.bool)), ValueError, "image must have shape"),
    (lambda: thin(torch.full((1, 1, 4, 4), 3)), ValueError, "image must be binary"),
    (lambda: thin(torch.zeros(1, 1, 4, 4, dtype=torch.bool), -1), ValueError, "max_num_iter must be >= 0"),
    (lambda: thin(torch.zeros(1, 1, 4, 4, dtype=torch.bool), 1.5), TypeError, "max_num_iter must be an int"),
    (lambda: thin(torch.zeros(1, 1, 4, 4, dtype=torch.bool), True), TypeError, "max_num_iter must be an int"),
    (lambda: thin(torch.zeros(1, 1, 4, 4, dtype=torch.bool), torch.tensor(2)), TypeError, "max_num_iter"),
]


@pytest.mark.parametrize("call, error, message", BAD)
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
