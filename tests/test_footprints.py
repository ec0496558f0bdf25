"""morphaug.footprints against scikit-image-style NumPy reference constructions."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity
from hypothesis import given, settings
from hypothesis import strategies as st

from morphaug import footprints as fp

# --- reference constructions, written as scikit-image writes them -------------------


def ref_ball(radius: int, ndim: int) -> np.ndarray:
    grids = np.mgrid[(slice(-radius, radius + 1),) * ndim]
    return (grids ** 2).sum(axis=0) <= radius * radius


def ref_disk(radius: int) -> np.ndarray:
    line = np.arange(-radius, radius + 1)
    x, y = np.meshgrid(line, line)
    return x ** 2 + y ** 2 <= radius ** 2


def ref_diamond(radius: int) -> np.ndarray:
    line = np.arange(0, radius * 2 + 1)
    i, j = np.meshgrid(line, line)
    return np.abs(i - radius) + np.abs(j - radius) <= radius


def ref_octahedron(radius: int) -> np.ndarray:
    n = 2 * radius + 1
    z, y, x = np.mgrid[-radius:radius:n * 1j, -radius:radius:n * 1j, -radius:radius:n * 1j]
    return np.abs(x) + np.abs(y) + np.abs(z) <= radius


def ref_cross(radius: int, ndim: int) -> np.ndarray:
    grids = np.mgrid[(slice(-radius, radius + 1),) * ndim]
    return np.abs(grids).sum(axis=0) <= radius


def ref_cube(width: int, ndim: int) -> np.ndarray:
    return np.ones((width,) * ndim, dtype=bool)


def ref_ellipsoid(radii) -> np.ndarray:
    """Exact rational arithmetic: sum (x_i / r_i)^2 <= 1, box 2 * floor(r_i) + 1."""
    half = [int(np.floor(r)) for r in radii]
    out = np.zeros([2 * h + 1 for h in half], dtype=bool)
    for index in np.ndindex(*out.shape):
        total = Fraction(0)
        for i, h, r in zip(index, half, radii):
            x = i - h
            if r > 0:
                total += Fraction(x * x) / Fraction(r) ** 2
        out[index] = total <= 1
    return out


def embed(element: np.ndarray, max_radius: int) -> np.ndarray:
    """``element`` centred in a box of width ``2 * max_radius + 1``."""
    k = 2 * max_radius + 1
    out = np.zeros((k,) * element.ndim, dtype=bool)
    start = [(k - s) // 2 for s in element.shape]
    out[tuple(slice(a, a + s) for a, s in zip(start, element.shape))] = element
    return out


REFERENCE = {
    "ball": lambda r, n: ref_ball(r, n),
    "cube": lambda r, n: ref_cube(2 * r + 1, n),
    "cross": lambda r, n: ref_cross(r, n),
}


def as_numpy(t: torch.Tensor) -> np.ndarray:
    return t.cpu().numpy()


# --- fixed factories ------------------------------------------------------------------


@pytest.mark.parametrize("radius", range(0, 7))
def test_disk_and_diamond_match_skimage_2d(radius):
    assert_parity(as_numpy(fp.disk(radius)), ref_disk(radius), exact=True)
    assert_parity(as_numpy(fp.cross(radius, 2)), ref_diamond(radius), exact=True)


@pytest.mark.parametrize("radius", range(0, 5))
def test_ball_and_octahedron_match_skimage_3d(radius):
    assert_parity(as_numpy(fp.ball(radius)), ref_ball(radius, 3), exact=True)
    assert_parity(as_numpy(fp.cross(radius)), ref_octahedron(radius), exact=True)


@settings(max_examples=60, deadline=None)
@given(radius=st.integers(0, 5), ndim=st.integers(1, 4))
def test_factories_match_reference_any_ndim(radius, ndim):
    if ndim == 4 and radius > 3:
        radius = 3
    for name in ("ball", "cross"):
        got = getattr(fp, name)(radius, ndim)
        assert got.dtype == torch.bool
        assert got.shape == (2 * radius + 1,) * ndim
        assert_parity(as_numpy(got), REFERENCE[name](radius, ndim), exact=True)
    width = radius + 1
    assert_parity(as_numpy(fp.cube(width, ndim)), ref_cube(width, ndim), exact=True)


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_cross_one_is_scipy_connectivity_one(ndim):
    assert_parity(as_numpy(fp.cross(1, ndim)), ndi.generate_binary_structure(ndim, 1), exact=True)


def test_square_is_2d_cube():
    assert_parity(as_numpy(fp.square(4)), np.ones((4, 4), bool), exact=True)
    assert fp.cube(2).shape == (2, 2, 2)


@settings(max_examples=50, deadline=None)
@given(radii=st.lists(st.integers(0, 16).map(lambda q: q / 4), min_size=1, max_size=3))
def test_ellipsoid_matches_exact_reference(radii):
    got = fp.ellipsoid(radii)
    assert got.dtype == torch.bool
    assert_parity(as_numpy(got), ref_ellipsoid(radii), exact=True)


@pytest.mark.parametrize("radius", [1, 2, 5, 7])
@pytest.mark.parametrize("ndim", [2, 3])
def test_ellipsoid_with_equal_radii_is_ball(radius, ndim):
    assert torch.equal(fp.ellipsoid([radius] * ndim), fp.ball(radius, ndim))
    assert torch.equal(fp.ellipsoid(tuple(float(radius) for _ in range(ndim))), fp.ball(radius, ndim))


def test_ellipsoid_zero_radius_axis_is_a_plane():
    got = fp.ellipsoid((0, 2, 2))
    assert got.shape == (1, 5, 5)
    assert torch.equal(got[0], fp.disk(2))


def test_factories_on_device(device):
    for element in (fp.ball(2, device=device), fp.disk(1, device=device),
                    fp.cube(3, device=device), fp.square(2, device=device),
                    fp.cross(2, 2, device=device), fp.ellipsoid((1, 2.5), device=device)):
        assert element.device.type == device.type
        assert element.dtype == torch.bool
    assert torch.equal(fp.ball(3, device=device).cpu(), fp.ball(3))


@pytest.mark.parametrize("call, error, match", [
    (lambda: fp.ball(-1), ValueError, "radius"),
    (lambda: fp.ball(1.5), TypeError, "radius"),
    (lambda: fp.ball(2.0), TypeError, "radius"),
    (lambda: fp.ball(True), TypeError, "radius"),
    (lambda: fp.ball("2"), TypeError, "radius"),
    (lambda: fp.ball(1, 0), ValueError, "ndim"),
    (lambda: fp.ball(1, 2.0), TypeError, "ndim"),
    (lambda: fp.disk(-2), ValueError, "radius"),
    (lambda: fp.cross(-1, 2), ValueError, "radius"),
    (lambda: fp.cross(1, -1), ValueError, "ndim"),
    (lambda: fp.cross(0.5, 2), TypeError, "radius"),
    (lambda: fp.cube(0), ValueError, "width"),
    (lambda: fp.cube(2.5), TypeError, "width"),
    (lambda: fp.cube(3, 0), ValueError, "ndim"),
    (lambda: fp.square(-1), ValueError, "width"),
    (lambda: fp.ellipsoid(3), TypeError, "radii"),
    (lambda: fp.ellipsoid("ab"), TypeError, "radii"),
    (lambda: fp.ellipsoid(()), ValueError, "radii"),
    (lambda: fp.ellipsoid((1, -1)), ValueError, "radii"),
    (lambda: fp.ellipsoid((1, float("inf"))), ValueError, "radii"),
    (lambda: fp.ellipsoid((1, float("nan"))), ValueError, "radii"),
    (lambda: fp.ellipsoid((1, "2")), TypeError, "radii"),
    (lambda: fp.ellipsoid((1, True)), TypeError, "radii"),
])
def test_factory_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- random footprints ------------------------------------------------------------------


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_random_footprints_match_reference(device, ndim):
    g = torch.Generator(device=device).manual_seed(7)
    draw = fp.random_footprints(40, radius=(0, 3), ndim=ndim, generator=g)
    assert isinstance(draw, fp.RandomFootprints)
    assert draw.footprints.shape == (40,) + (7,) * ndim
    assert draw.footprints.dtype == torch.bool
    assert draw.shape_index.dtype == torch.int64 and draw.radius.dtype == torch.int64
    assert draw.shape_index.shape == (40,) and draw.radius.shape == (40,)
    for t in draw:
        assert t.device.type == device.type
    stack = as_numpy(draw.footprints)
    for b, (s, r) in enumerate(zip(draw.shape_index.tolist(), draw.radius.tolist())):
        name = fp.SHAPES[s]
        assert_parity(stack[b], embed(REFERENCE[name](r, ndim), 3), exact=True, where=f"{b} {name} r={r}")


def test_random_footprints_cover_every_shape_and_radius(device):
    g = torch.Generator(device=device).manual_seed(0)
    draw = fp.random_footprints(300, radius=(1, 4), ndim=2, generator=g)
    assert set(draw.shape_index.tolist()) == {0, 1, 2}
    assert set(draw.radius.tolist()) == {1, 2, 3, 4}


def test_random_footprints_samples_and_calls_differ():
    g = torch.Generator().manual_seed(3)
    first = fp.random_footprints(32, generator=g)
    second = fp.random_footprints(32, generator=g)
    assert len(set(first.shape_index.tolist())) > 1
    assert len(set(first.radius.tolist())) > 1
    assert len({tuple(e.flatten().tolist()) for e in first.footprints}) > 1
    assert not (torch.equal(first.shape_index, second.shape_index)
                and torch.equal(first.radius, second.radius))


def test_random_footprints_reproducible_with_generator(device):
    a = fp.random_footprints(16, generator=torch.Generator(device=device).manual_seed(11))
    b = fp.random_footprints(16, generator=torch.Generator(device=device).manual_seed(11))
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def test_random_footprints_reproducible_with_manual_seed(device):
    torch.manual_seed(5)
    a = fp.random_footprints(16, device=device)
    torch.manual_seed(5)
    b = fp.random_footprints(16, device=device)
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    assert a.footprints.device.type == device.type


def test_random_footprints_fixed_radius_and_single_shape():
    draw = fp.random_footprints(5, shapes=("cross",), radius=2, ndim=2,
                                generator=torch.Generator().manual_seed(0))
    assert draw.shape_index.tolist() == [0] * 5
    assert draw.radius.tolist() == [2] * 5
    assert torch.equal(draw.footprints, fp.cross(2, 2).expand(5, 5, 5))
    single = fp.random_footprints(3, shapes="ball", radius=(1, 1), ndim=3)
    assert torch.equal(single.footprints, fp.ball(1).expand(3, 3, 3, 3))


def test_random_footprints_weights_repeated_shapes():
    draw = fp.random_footprints(400, shapes=("ball", "ball", "ball", "cube"), radius=1,
                                generator=torch.Generator().manual_seed(1))
    ball_share = (draw.shape_index < 3).float().mean()
    assert 0.6 < ball_share < 0.9


def test_random_footprints_empty_batch():
    draw = fp.random_footprints(0, ndim=2)
    assert draw.footprints.shape == (0, 7, 7)
    assert draw.shape_index.shape == (0,)


def test_footprints_from_params_replays_a_draw(device):
    g = torch.Generator(device=device).manual_seed(2)
    shapes = ("cube", "cross", "ball")
    draw = fp.random_footprints(24, shapes=shapes, radius=(0, 2), ndim=3, generator=g)
    index, radius = draw.shape_index.clone(), draw.radius.clone()
    again = fp.footprints_from_params(draw.shape_index, draw.radius, shapes, 2, 3)
    assert torch.equal(again, draw.footprints)
    assert torch.equal(draw.shape_index, index) and torch.equal(draw.radius, radius)


def test_footprints_from_params_int32_and_larger_box():
    index = torch.tensor([0, 1, 2], dtype=torch.int32)
    radius = torch.tensor([2, 1, 0], dtype=torch.int32)
    stack = fp.footprints_from_params(index, radius, fp.SHAPES, 4, 2)
    assert stack.shape == (3, 9, 9)
    expected = [embed(ref_disk(2), 4), embed(ref_cube(3, 2), 4), embed(ref_diamond(0), 4)]
    for got, want in zip(stack, expected):
        assert_parity(got.numpy(), want, exact=True)


def test_random_footprints_large_batch_element_sizes():
    """Every element of a large batch has its shape's and radius's voxel count."""
    draw = fp.random_footprints(4096, radius=(0, 3), ndim=3,
                                generator=torch.Generator().manual_seed(0))
    counts = draw.footprints.flatten(1).sum(1)
    expected = {name: [int(REFERENCE[name](r, 3).sum()) for r in range(4)] for name in fp.SHAPES}
    table = torch.tensor([expected[name] for name in fp.SHAPES])
    assert torch.equal(counts, table[draw.shape_index, draw.radius])


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(batch_size=-1), ValueError, "batch_size"),
    (dict(batch_size=2.0), TypeError, "batch_size"),
    (dict(batch_size=2, shapes=()), ValueError, "shapes"),
    (dict(batch_size=2, shapes=("ball", "sphere")), ValueError, "sphere"),
    (dict(batch_size=2, shapes=[["ball"]]), ValueError, "shapes"),
    (dict(batch_size=2, shapes=None), ValueError, "shapes"),
    (dict(batch_size=2, radius=(3, 1)), ValueError, "low <= high"),
    (dict(batch_size=2, radius=(-1, 1)), ValueError, "radius"),
    (dict(batch_size=2, radius=(1, 2, 3)), ValueError, "radius"),
    (dict(batch_size=2, radius=(1, 2.5)), TypeError, "radius"),
    (dict(batch_size=2, radius=-2), ValueError, "radius"),
    (dict(batch_size=2, radius=1.5), TypeError, "radius"),
    (dict(batch_size=2, ndim=0), ValueError, "ndim"),
    (dict(batch_size=2, ndim="3"), TypeError, "ndim"),
    (dict(batch_size=2, generator=0), TypeError, "generator"),
])
def test_random_footprints_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        fp.random_footprints(**kwargs)


@pytest.mark.cuda
def test_random_footprints_generator_device_mismatch():
    with pytest.raises(ValueError, match="generator"):
        fp.random_footprints(2, generator=torch.Generator(), device="cuda")


def test_random_footprints_generator_device_mismatch_meta():
    with pytest.raises(ValueError, match="generator"):
        fp.random_footprints(2, generator=torch.Generator(), device="meta")


@pytest.mark.parametrize("args, error, match", [
    ((torch.tensor([0]), torch.tensor([1]), fp.SHAPES, 1, 0), ValueError, "ndim"),
    ((torch.tensor([0]), torch.tensor([1]), fp.SHAPES, -1, 2), ValueError, "max_radius"),
    ((torch.tensor([0]), torch.tensor([1]), ("disk",), 1, 2), ValueError, "shapes"),
    (([0], torch.tensor([1]), fp.SHAPES, 1, 2), TypeError, "shape_index"),
    ((torch.tensor([0]), [1], fp.SHAPES, 1, 2), TypeError, "radius"),
    ((torch.tensor([0.0]), torch.tensor([1]), fp.SHAPES, 1, 2), TypeError, "shape_index"),
    ((torch.tensor([0]), torch.tensor([True]), fp.SHAPES, 1, 2), TypeError, "radius"),
    ((torch.tensor([[0]]), torch.tensor([[1]]), fp.SHAPES, 1, 2), ValueError, "1-D"),
    ((torch.tensor([0, 1]), torch.tensor([1]), fp.SHAPES, 1, 2), ValueError, "same shape"),
    ((torch.tensor([3]), torch.tensor([1]), fp.SHAPES, 1, 2), ValueError, "shape_index"),
    ((torch.tensor([-1]), torch.tensor([1]), fp.SHAPES, 1, 2), ValueError, "shape_index"),
    ((torch.tensor([0]), torch.tensor([2]), fp.SHAPES, 1, 2), ValueError, "radius"),
    ((torch.tensor([0]), torch.tensor([-1]), fp.SHAPES, 1, 2), ValueError, "radius"),
])
def test_footprints_from_params_errors(args, error, match):
    with pytest.raises(error, match=match):
        fp.footprints_from_params(*args)


def test_all_shapes_are_known_to_the_factory():
    for name, radius in itertools.product(fp.SHAPES, range(3)):
        stack = fp.footprints_from_params(torch.tensor([fp.SHAPES.index(name)]),
                                          torch.tensor([radius]), fp.SHAPES, radius, 3)
        assert_parity(stack[0].numpy(), REFERENCE[name](radius, 3), exact=True)
