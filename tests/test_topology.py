"""``morphaug.measure.euler_number`` and the topology metrics (``cl_dice``, ``betti_numbers``,
``betti_errors``) against references computed with scikit-image slice by slice."""

from __future__ import annotations

import numpy as np
import pytest
import skimage.measure
import skimage.morphology
import torch
from conftest import assert_parity, each_slice, to_numpy
from test_skeleton import KINDS, batch, needs_lee

from morphaug.measure import euler_number
from morphaug.metrics import betti_errors, betti_numbers, cl_dice

CONNECTIVITIES = {2: (1, 2), 3: (1, 3)}
SHAPES = [(20, 17), (1, 6), (2, 2), (9, 8, 7), (1, 5, 6), (2, 2, 2), (12, 10, 11)]


# ------------------------------------------------------------------------------------- euler_number
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(3))
def test_euler_number_matches_skimage(shape, seed):
    x = batch(KINDS, shape, seed)
    for connectivity in (None, *CONNECTIVITIES[len(shape)]):
        out = euler_number(x, connectivity)
        assert out.dtype == torch.int64 and out.shape == x.shape[:2]
        assert_parity(out, each_slice(skimage.measure.euler_number, x, connectivity=connectivity), exact=True)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float32, torch.float64, torch.uint16, torch.uint32,
                                   torch.uint64])
def test_euler_number_reads_values_above_zero(dtype):
    # scikit-image's object is image > 0: negative values and NaN are background (torch does not order
    # uint16 .. uint64: their nonzero values)
    rng = np.random.default_rng(1)
    values = rng.integers(-2, 3, (3, 2, 11, 9)).astype(np.float64)
    if dtype.is_floating_point:
        values[rng.random(values.shape) < 0.1] = np.nan
    x = torch.from_numpy(values).to(dtype if dtype.is_floating_point else torch.int64).to(dtype)
    before = x.clone()
    for connectivity in (1, 2):
        assert_parity(euler_number(x, connectivity),
                      each_slice(skimage.measure.euler_number, x, connectivity=connectivity), exact=True)
    assert x.numpy().tobytes() == before.numpy().tobytes()


def test_euler_number_of_known_shapes():
    cube = torch.zeros(1, 1, 9, 9, 9, dtype=torch.bool)
    cube[..., 1:8, 1:8, 1:8] = True
    hollow = cube.clone()
    hollow[..., 3:6, 3:6, 3:6] = False
    torus = cube.clone()
    torus[..., 3:6, :, 3:6] = False  # a square tunnel through the cube
    assert euler_number(torch.cat([cube, hollow, torus])).flatten().tolist() == [1, 2, 0]


BAD_EULER = [
    (lambda: euler_number(torch.zeros(1, 1, 4, 4), 0), ValueError, "connectivity must be >= 1"),
    (lambda: euler_number(torch.zeros(1, 1, 4, 4), 3), ValueError, r"connectivity must be in \[1, 2\]"),
    (lambda: euler_number(torch.zeros(1, 1, 4, 4, 4), 4), ValueError, r"connectivity must be in \[1, 3\]"),
    (lambda: euler_number(torch.zeros(1, 1, 4, 4, 4), 2), NotImplementedError, "connectivity=2"),
    (lambda: euler_number(torch.zeros(1, 1, 4, 4), 1.0), TypeError, "connectivity must be an int"),
    (lambda: euler_number(torch.zeros(1, 1, 4, 4), True), TypeError, "connectivity must be an int"),
    (lambda: euler_number(torch.zeros(1, 4)), ValueError, "image must have shape"),
    (lambda: euler_number(torch.zeros(1, 1, 4)), ValueError, "image must have shape"),
    (lambda: euler_number([[0, 1]]), TypeError, "image must be a torch.Tensor"),
]


@pytest.mark.parametrize("call, error, message", BAD_EULER)
def test_euler_number_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ------------------------------------------------------------------------------------- Betti numbers
def skimage_betti(mask: np.ndarray, connectivity=None) -> np.ndarray:
    """beta_0, beta_1 (, beta_2) of one slice: scikit-image's labels of the foreground and of the
    padded background, and its Euler number."""
    rank = mask.ndim
    connectivity = connectivity or rank
    components = skimage.measure.label(mask, connectivity=connectivity).max()
    outside = skimage.measure.label(~np.pad(mask, 1), connectivity=rank + 1 - connectivity).max() - 1
    euler = skimage.measure.euler_number(mask, connectivity=connectivity)
    if rank == 2:
        assert components - euler == outside  # the holes, counted two ways
        return np.array([components, outside])
    return np.array([components, components + outside - euler, outside])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(3))
def test_betti_numbers_match_skimage(shape, seed):
    x = batch(KINDS, shape, seed).to(torch.uint8)
    before = x.clone()
    for connectivity in (None, *CONNECTIVITIES[len(shape)]):
        out = betti_numbers(x, connectivity)
        assert out.dtype == torch.int64 and out.shape == x.shape[:2] + (len(shape),)
        assert_parity(out, each_slice(skimage_betti, x.bool(), connectivity=connectivity), exact=True)
    assert torch.equal(x, before)


def test_betti_numbers_of_known_shapes():
    cube = torch.zeros(1, 1, 9, 9, 9, dtype=torch.bool)
    cube[..., 1:8, 1:8, 1:8] = True
    hollow = cube.clone()
    hollow[..., 3:6, 3:6, 3:6] = False
    torus = cube.clone()
    torus[..., 3:6, :, 3:6] = False
    two = torch.zeros_like(cube)
    two[..., 0, 0, 0] = two[..., 8, 8, 8] = True
    expected = [[1, 0, 0], [1, 0, 1], [1, 1, 0], [2, 0, 0]]
    assert betti_numbers(torch.cat([cube, hollow, torus, two])).flatten(0, 1).tolist() == expected


@pytest.mark.parametrize("shape", [(16, 13), (8, 7, 6)])
@pytest.mark.parametrize("seed", range(2))
def test_betti_errors(shape, seed):
    pred, ref = batch(KINDS, shape, seed), batch(KINDS[::-1], shape, seed + 10)
    out = betti_errors(pred, ref)
    assert out.dtype == torch.int64
    p, r = to_numpy(pred), to_numpy(ref)
    assert_parity(out, lambda b, c: np.abs(skimage_betti(p[b, c]) - skimage_betti(r[b, c])), exact=True)


# ------------------------------------------------------------------------------------- clDice
def reference_cl_dice(pred: np.ndarray, ref: np.ndarray, skeletonize=skimage.morphology.skeletonize) -> np.float32:
    """Shit et al.'s clDice of one slice with scikit-image's skeleton (0 / 0 is nan)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        sp, sr = skeletonize(pred), skeletonize(ref)
        precision = np.float64((sp & ref).sum()) / sp.sum()
        sensitivity = np.float64((sr & pred).sum()) / sr.sum()
        if precision == 0 and sensitivity == 0:
            return np.float32(0)
        return np.float32(2 * precision * sensitivity / (precision + sensitivity))


@pytest.mark.parametrize("shape", [(24, 31), (6, 5), (40, 40)])
@pytest.mark.parametrize("seed", range(3))
def test_cl_dice_matches_reference(shape, seed):
    pred, ref = batch(KINDS, shape, seed), batch(KINDS[::-1], shape, seed + 10)
    pred[1] = ref[1]  # a perfect prediction
    pred[2, 1] = ~ref[2, 1]
    out = cl_dice(pred.float(), ref)
    assert out.dtype == torch.float32 and out.shape == pred.shape[:2]
    p, r = to_numpy(pred), to_numpy(ref)
    assert_parity(out, lambda b, c: reference_cl_dice(p[b, c], r[b, c]), exact=False, atol=1e-6)
    assert (out[1] == 1).sum() >= 1 and ((out[1] == 1) | ~ref[1].flatten(1).any(1)).all()


@needs_lee
@pytest.mark.parametrize("seed", range(2))
def test_cl_dice_3d_matches_reference(seed):
    pred, ref = batch(KINDS, (12, 11, 13), seed), batch(KINDS[::-1], (12, 11, 13), seed + 10)
    p, r = to_numpy(pred), to_numpy(ref)
    assert_parity(cl_dice(pred, ref), lambda b, c: reference_cl_dice(p[b, c], r[b, c]), exact=False, atol=1e-6)


def test_cl_dice_parallel_skeletons():
    from morphaug.morphology import skeletonize

    def parallel(x: np.ndarray) -> np.ndarray:
        return skeletonize(torch.from_numpy(x)[None, None], method="parallel")[0, 0].numpy()

    pred, ref = batch(KINDS, (10, 9, 11), 1), batch(KINDS[::-1], (10, 9, 11), 11)
    p, r = to_numpy(pred), to_numpy(ref)
    assert_parity(cl_dice(pred, ref, method="parallel"), lambda b, c: reference_cl_dice(p[b, c], r[b, c], parallel),
                  exact=False, atol=1e-6)


BAD_METRICS = [
    (lambda: cl_dice(torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 4, 5)), ValueError, "same shape"),
    (lambda: cl_dice(torch.zeros(1, 1, 4, 4), torch.full((1, 1, 4, 4), 2.0)), ValueError, "ref must be binary"),
    (lambda: cl_dice(torch.full((1, 1, 4, 4), 0.3), torch.zeros(1, 1, 4, 4)), ValueError, "pred must be binary"),
    (lambda: cl_dice(torch.zeros(1, 1, 4), torch.zeros(1, 1, 4)), ValueError, "pred must have shape"),
    (lambda: cl_dice(torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 4, 4), method="nope"), ValueError, "method"),
    (lambda: betti_numbers(torch.full((1, 1, 4, 4), 5)), ValueError, "mask must be binary"),
    (lambda: betti_numbers(torch.zeros(1, 1, 4, 4), 3), ValueError, "connectivity must be in"),
    (lambda: betti_numbers(torch.zeros(1, 1, 4, 4, 4), 2), NotImplementedError, "connectivity=2"),
    (lambda: betti_numbers(torch.zeros(1, 1, 4, 4), 0), ValueError, "connectivity must be >= 1"),
    (lambda: betti_errors(torch.zeros(1, 1, 4, 4), torch.zeros(2, 1, 4, 4)), ValueError, "same shape"),
    (lambda: betti_errors(torch.zeros(1, 1, 4, 4), "ref"), TypeError, "ref must be a torch.Tensor"),
]


@pytest.mark.parametrize("call, error, message", BAD_METRICS)
def test_metrics_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
