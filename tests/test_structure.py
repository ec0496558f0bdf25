"""generate_binary_structure and iterate_structure against SciPy."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity
from hypothesis import given, settings
from hypothesis import strategies as st

from morphaug.ndimage import generate_binary_structure, iterate_structure


@pytest.mark.parametrize("rank", range(-1, 6))
@pytest.mark.parametrize("connectivity", range(-1, 7))
def test_generate_binary_structure_matches_scipy(rank, connectivity):
    got = generate_binary_structure(rank, connectivity)
    expected = ndi.generate_binary_structure(rank, connectivity)
    assert got.dtype == torch.bool and got.device.type == "cpu"
    assert got.shape == expected.shape
    assert_parity(got.numpy(), expected, exact=True)


def test_generate_binary_structure_of_many_axes_holds_one_byte_per_position():
    """Rank 17: 3^17 positions (129 MiB of bools); np.indices would hold 17 int64 coordinates each
    (16 GiB), which the surface metrics of 17-axis inputs used to be killed for."""
    tracemalloc.start()
    try:
        got = generate_binary_structure(17, 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got.shape == (3,) * 17 and int(got.sum()) == 1 + 2 * 17 and got[(1,) * 17]
    assert peak < 3 * 3 ** 17


def test_generate_binary_structure_accepts_numpy_ints():
    got = generate_binary_structure(np.int64(2), np.int32(2))
    assert torch.equal(got, torch.ones(3, 3, dtype=torch.bool))


@pytest.mark.parametrize("rank,connectivity,name", [
    (2.0, 1, "rank"), ("2", 1, "rank"), (None, 1, "rank"), (torch.tensor(2), 1, "rank"),
    (2, 1.5, "connectivity"), (2, None, "connectivity"), (2, True, "connectivity"),
])
def test_generate_binary_structure_bad_arguments(rank, connectivity, name):
    with pytest.raises(TypeError, match=name):
        generate_binary_structure(rank, connectivity)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rank=st.integers(1, 3), iterations=st.integers(-1, 4),
       origin_kind=st.sampled_from([None, "scalar", "sequence"]),
       form=st.sampled_from(["numpy", "list", "bool", "int64", "float32"]))
def test_iterate_structure_matches_scipy(seed, rank, iterations, origin_kind, form):
    rng = np.random.default_rng(seed)
    shape = tuple(rng.integers(1, 5, rank))
    structure = rng.random(shape) < 0.6
    if rng.random() < 0.7:
        structure[tuple(k // 2 for k in shape)] = True
    origin = {None: None, "scalar": int(rng.integers(-2, 3)),
              "sequence": [int(v) for v in rng.integers(-2, 3, rank)]}[origin_kind]
    argument = {"numpy": structure, "list": structure.tolist()}.get(form)
    if argument is None:
        argument = torch.from_numpy(structure).to(getattr(torch, form))
    before = argument.clone() if isinstance(argument, torch.Tensor) else None

    got = iterate_structure(argument, iterations, origin)
    expected = ndi.iterate_structure(structure, iterations, origin)
    if isinstance(expected, tuple):  # SciPy returns the origin only for iterations >= 2
        got, got_origin = got
        expected, expected_origin = expected
        assert got_origin == expected_origin
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bool
    assert_parity(got.numpy(), expected, exact=True)
    if before is not None:
        assert torch.equal(argument, before)


def test_iterate_structure_of_generated_structures():
    for rank in (1, 2, 3):
        for connectivity in range(1, rank + 1):
            structure = generate_binary_structure(rank, connectivity)
            got, origin = iterate_structure(structure, 3, origin=(1,) * rank)
            expected, expected_origin = ndi.iterate_structure(structure.numpy(), 3,
                                                              origin=(1,) * rank)
            assert np.array_equal(got.numpy(), expected) and origin == expected_origin


def test_iterate_structure_zero_dimensional():
    assert iterate_structure(np.array(1), 3).item() is True
    assert iterate_structure(torch.tensor(0.0), 3).item() is False
    got, origin = iterate_structure(np.array(1), 2, origin=0)
    assert got.item() is True and origin == []


def test_iterate_structure_returns_a_copy():
    structure = torch.ones(3, dtype=torch.bool)
    result = iterate_structure(structure, 1)
    result[0] = False
    assert structure.all()


@pytest.mark.parametrize("structure,iterations,origin,error,match", [
    (np.ones(3, complex), 2, None, TypeError, "structure"),
    (object(), 2, None, TypeError, "structure"),
    (np.ones((0, 3)), 2, None, ValueError, "empty"),
    (np.ones(3), 2.0, None, TypeError, "iterations"),
    (np.ones(3), None, None, TypeError, "iterations"),
    (np.ones(3), 2, (1, 1), ValueError, "origin"),
    (np.ones(3), 2, 0.5, TypeError, "origin"),
])
def test_iterate_structure_bad_arguments(structure, iterations, origin, error, match):
    with pytest.raises(error, match=match):
        iterate_structure(structure, iterations, origin)
