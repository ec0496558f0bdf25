"""``morphaug.morphology.skeletonize`` and ``thin`` against scikit-image, slice by slice: identical
skeletons on batches of blobs, thin tubes, noise, one-pixel-thick shapes, shapes touching the border,
empty and full slices."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import skimage.morphology
import torch
from conftest import TORCH_LEG, assert_parity, each_slice

from morphaug import _ops
from morphaug.measure import euler_number
from morphaug.metrics import betti_numbers
from morphaug.morphology import _parallel, _thinning, skeletonize, thin

# many small ops: one intra-op thread (a shared CPU)
pytestmark = pytest.mark.usefixtures("one_thread")

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


# ------------------------------------------------------------------------------------- method="lee"
LEE = not TORCH_LEG and _ops.built_for("skeletonize_lee", "cpu", emulate=False)
needs_lee = pytest.mark.skipif(not LEE, reason="method='lee' needs the native CPU kernel (not built, or the torch leg)")


@needs_lee
@pytest.mark.parametrize("shape", [(14, 13, 15), (1, 9, 12), (6, 1, 7), (2, 2, 2), (24, 20, 22)])
@pytest.mark.parametrize("seed", range(3))
def test_skeletonize_lee_matches_skimage_3d(shape, seed):
    x = batch(KINDS, shape, seed).to(torch.uint8)
    before = x.clone()
    for method in (None, "lee"):
        out = skeletonize(x, method=method)
        assert out.dtype == torch.bool
        assert_parity(out, each_slice(skimage.morphology.skeletonize, x, method="lee"), exact=True, where=f"{method}")
    assert torch.equal(x, before)


@needs_lee
@pytest.mark.parametrize("shape", [(4, 5, 63), (3, 4, 64), (3, 5, 65), (2, 4, 66), (3, 3, 127), (2, 3, 130),
                                   (1, 6, 129)])
def test_skeletonize_lee_rows_across_words(shape):
    """Rows of 63 to 130 voxels: the kernel holds a row in 64-bit words (a voxel's bit and its neighbours'
    on both sides of a word's end, rows that fill their last word or leave it nearly empty)."""
    x = batch(KINDS, shape, seed=sum(shape))
    assert_parity(skeletonize(x, method="lee"), each_slice(skimage.morphology.skeletonize, x, method="lee"),
                  exact=True)


@needs_lee
@pytest.mark.parametrize("shape", SHAPES_2D)
@pytest.mark.parametrize("seed", range(3))
def test_skeletonize_lee_matches_skimage_2d(shape, seed):
    x = batch(KINDS, shape, seed)
    assert_parity(skeletonize(x, method="lee"), each_slice(skimage.morphology.skeletonize, x, method="lee"),
                  exact=True)


@needs_lee
def test_skeletonize_lee_on_a_non_contiguous_batch():
    x = batch(KINDS, (9, 10, 11), seed=4).permute(1, 0, 4, 3, 2)
    assert_parity(skeletonize(x, method="lee"), each_slice(skimage.morphology.skeletonize, x, method="lee"),
                  exact=True)


@needs_lee
def test_skeletonize_lee_kernel_opcheck_and_checks():
    mask = batch(KINDS[:3], (5, 6, 7), seed=2)
    changes = _parallel.EULER_CHANGES.tolist()
    torch.library.opcheck(torch.ops.morphaug.skeletonize_lee.default, (mask, changes))
    with pytest.raises(RuntimeError, match="expected a bool mask"):
        _ops.kernels.skeletonize_lee(mask.float(), changes)
    with pytest.raises(RuntimeError, match=r"expected \(B, C, D, H, W\)"):
        _ops.kernels.skeletonize_lee(mask[..., 0], changes)
    with pytest.raises(RuntimeError, match="expected 128 euler_changes"):
        _ops.kernels.skeletonize_lee(mask, changes[:5])


def test_skeletonize_lee_without_its_kernel_says_why(monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")  # the kernel off, built or not
    mask = torch.zeros(1, 1, 4, 4, 4, dtype=torch.bool)
    mask[:, :, 1:3, 1:3, 1:3] = True
    with pytest.raises(NotImplementedError, match="method='parallel'"):
        skeletonize(mask)


# ------------------------------------------------------------------------------------- method="parallel"
def is_simple(cube: np.ndarray) -> bool:
    """Whether the centre of a 3 x 3 x 3 bool neighbourhood is a (26, 6) simple point, by definition: one
    26-component of foreground neighbours, one 6-component of background in the 18-neighbourhood that is
    6-adjacent to the centre."""
    foreground = cube.copy()
    foreground[1, 1, 1] = False
    if ndi.label(foreground, np.ones((3, 3, 3)))[1] != 1:
        return False
    background = ~cube & ndi.generate_binary_structure(3, 2)
    background[1, 1, 1] = False
    labels = ndi.label(background, ndi.generate_binary_structure(3, 1))[0]
    faces = {labels[p] for p in [(0, 1, 1), (2, 1, 1), (1, 0, 1), (1, 2, 1), (1, 1, 0), (1, 1, 2)]}
    return len(faces - {0}) == 1


def assert_thin(skeleton: np.ndarray) -> None:
    """No voxel of a 3-D ``skeleton`` is a simple point with more than one neighbour."""
    padded = np.pad(skeleton, 1)
    for point in np.argwhere(padded):
        cube = padded[tuple(slice(p - 1, p + 2) for p in point)]
        assert cube.sum() == 2 or not is_simple(cube), f"simple point left at {point - 1}"


@pytest.mark.parametrize("shape", [(16, 14, 15), (1, 20, 23), (5, 6, 7), (9, 1, 12), (30, 28)])
@pytest.mark.parametrize("seed", range(2))
def test_parallel_preserves_topology_and_thins(shape, seed):
    x = batch(KINDS, shape, seed)
    before = x.clone()
    out = skeletonize(x, method="parallel")
    assert torch.equal(x, before) and out.dtype == torch.bool and out.shape == x.shape
    assert not (out & ~x).any()
    assert torch.equal(betti_numbers(out), betti_numbers(x))  # components, tunnels / holes, cavities
    assert torch.equal(euler_number(out), euler_number(x))
    for b, c in np.ndindex(*x.shape[:2]):
        assert_thin(out[b, c].numpy() if len(shape) == 3 else out[b, c, None].numpy())
    assert torch.equal(skeletonize(out, method="parallel"), out)  # a skeleton is its own skeleton


def test_parallel_slices_are_independent():
    x = batch(KINDS, (12, 13, 11), seed=3)
    out = skeletonize(x, method="parallel")
    for b in range(x.shape[0]):
        assert torch.equal(skeletonize(x[b:b + 1, 1:], method="parallel"), out[b:b + 1, 1:])


@pytest.mark.parametrize("shape", [(7, 9, 8), (1, 10, 12)])
def test_parallel_masked_passes_equal_listed_passes(monkeypatch, shape):
    # an accelerator's passes (every voxel, masks, convergence read every few passes) against the CPU's
    x = batch(KINDS, shape, seed=5)
    expected = skeletonize(x, method="parallel")
    monkeypatch.setattr(_parallel, "_compact", lambda device: False)
    assert torch.equal(skeletonize(x, method="parallel"), expected)


def test_parallel_full_and_one_voxel_shapes():
    x = torch.zeros(3, 1, 9, 9, 9, dtype=torch.bool)
    x[0] = True  # a full volume shrinks to a short line at its centre
    x[1, 0, 4, 4, :] = True  # a line keeps its end points
    x[2, 0, 2, 2, 2] = x[2, 0, 6, 6, 6] = True  # isolated voxels stay
    out = skeletonize(x, method="parallel")
    assert 1 <= out[0].sum() <= 3 and torch.equal(out[1:], x[1:])


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
    (lambda: skeletonize(torch.zeros(1, 1, 4, 4, dtype=torch.bool), method=["lee"]), ValueError, "method"),
    (lambda: skeletonize(torch.zeros(1, 1, 4, 4, dtype=torch.bool), method="Lee"), ValueError, "method"),
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
