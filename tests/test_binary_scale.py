"""Binary ops at scale: costs that grow with the element, with the volume or with the
length of the paths, and the limits of the native kernels, against SciPy.

Each test bounds a cost that SciPy's own algorithms keep small (the Python objects
that describe an element, the host reads of a propagation, the peak memory of a
fresh process) on an input where the cost used to be far larger, and checks the
result against SciPy.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity, count_reads

from morphaug import _ops, footprints
from morphaug.ndimage import (
    binary_dilation,
    binary_erosion,
    binary_fill_holes,
    binary_propagation,
    generate_binary_structure,
)
from morphaug.ndimage._elements import Element

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from memory import serpentine  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")
BACKENDS = ["torch", "auto", "native"]


def skip_unless_native(kernel: str) -> None:
    """Skip a test of the native ``kernel`` where it is not built for CPU tensors (an install
    without a compiler, ``morphaug._C`` hidden)."""
    reason = _ops.why_not(kernel, "cpu")
    if reason:
        pytest.skip(reason)


@pytest.fixture(params=BACKENDS)
def policy(request, monkeypatch):
    """The ``MORPHAUG_BACKEND`` policies: torch only, native where built, native required
    wherever a native case accepts the call (where the native kernels are built)."""
    if request.param == "native":
        skip_unless_native("propagate")
    monkeypatch.setenv("MORPHAUG_BACKEND", request.param)
    return request.param


def test_a_large_host_element_costs_no_python_object_per_position(monkeypatch):
    """Dilation and erosion by ``ball(25)`` (65,267 positions) of a 3^3 image run on the
    native ball kernel, and the element's description costs no Python object per
    position (it used to cost several: 12 s for ``ball(60)``, 243 s for ``ball(127)``)."""
    skip_unless_native("ball_morphology")
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    structure = footprints.ball(25)
    x = torch.zeros(1, 1, 3, 3, 3, dtype=torch.bool)
    x[..., 1, 1, 1] = True
    tracemalloc.start()
    try:
        dilated, eroded = binary_dilation(x, structure), binary_erosion(x, structure)
        element = Element.from_argument(structure, x, (0, 1, 2), 0)
        facts = element.used_by_all(element.centre), element.ball
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 ** 20, f"{peak} bytes of Python objects"
    assert facts == (True, ("euclidean", 25))
    array, ball = x[0, 0].numpy(), structure.numpy()
    assert_parity(dilated[0, 0].numpy(), ndi.binary_dilation(array, ball), exact=True)
    assert_parity(eroded[0, 0].numpy(), ndi.binary_erosion(array, ball), exact=True)


def test_links_read_mirrors_through_the_centre():
    """``links`` on shifted and per-sample elements: ``d`` pairs with ``-d`` about the
    (shifted) centre, per slice."""
    x = torch.zeros(2, 1, 5, dtype=torch.bool)
    shifted = Element.from_argument([1, 1, 1, 0], x, (0,), -1)  # centre at index 1: offsets -1, 0, 1
    two_way, one_way = shifted.links()
    assert [offset for offset, _ in two_way] == [(-1,), (1,)] and one_way == []
    per_sample = Element.from_argument([[1, 1, 1], [0, 1, 1]], x, (0,), 0)
    two_way, one_way = per_sample.links()
    assert [(offset, weight.flatten().tolist()) for offset, weight in two_way] == [
        ((-1,), [True, False]), ((1,), [True, False])]
    assert [(offset, weight.flatten().tolist()) for offset, weight in one_way] == [((1,), [False, True])]


ASYMMETRIC = generate_binary_structure(3, 1).numpy()
ASYMMETRIC[0, 0, 0] = True  # the cross and one corner: one offset without its mirror


@pytest.mark.parametrize("op", ["fill_holes", "propagation", "dilation border 1"])
def test_an_asymmetric_element_floods_a_maze_in_a_few_reads(op, policy, monkeypatch):
    """A maze whose corridor winds through the whole 33^3 volume (about 8,000 voxels
    long), flooded with an element that has a one-way offset: the torch backend follows
    the corridor in a few chunks of work, not one step per voxel of it (about 130 reads
    of 64 steps each, and seconds, before); the native flood fill reads nothing back."""
    walls = serpentine(33)
    seed = np.zeros_like(walls)
    seed[0, 1, 1] = True  # the opening
    x, corridor = torch.from_numpy(np.stack([walls, seed]))[:, None], torch.from_numpy(~walls)
    reads = count_reads(monkeypatch)
    if op == "fill_holes":
        result = binary_fill_holes(x, ASYMMETRIC)
        expected = [ndi.binary_fill_holes(a, ASYMMETRIC) for a in x[:, 0].numpy()]
    elif op == "propagation":
        result = binary_propagation(x, ASYMMETRIC, corridor)
        expected = [ndi.binary_propagation(a, ASYMMETRIC, ~walls) for a in x[:, 0].numpy()]
    else:
        result = binary_dilation(x, ASYMMETRIC, -1, corridor, border_value=1)
        expected = [ndi.binary_dilation(a, ASYMMETRIC, -1, ~walls, border_value=1) for a in x[:, 0].numpy()]
    assert len(reads) <= 12, reads
    for got, want in zip(result[:, 0].numpy(), expected):
        assert_parity(got, want, exact=True)


@pytest.mark.parametrize("op", ["binary_fill_holes", "binary_propagation"])
def test_torch_backend_peak_memory_is_a_few_bytes_per_voxel(op):
    """On the torch backend, a 1x1x160^3 maze (a path of a million voxels) peaks at a few
    bytes per voxel in a fresh process (it used to take about 75, and 10.5 GB at 512^3).
    glibc serves every block of 128 kB or more by mmap, so that the
    peak is that of live memory, not of heap reuse (which varies by some MiB)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_="131072")
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "memory.py"), "--size", "160", "--op", op,
         "--library", "morphaug torch"], env=env, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    per_voxel = float(re.search(r"\(([\d.]+) B/voxel\)", completed.stdout).group(1))
    assert per_voxel < 16, completed.stdout


SIXTEEN = 16  # (2,) * 16: 65,536 voxels, but a padded slice of the native propagation holds 4^16


def hypercube_dilation(a: np.ndarray) -> np.ndarray:
    """``binary_dilation`` by the cross of a ``(2,) * n`` volume: the neighbours of a voxel
    differ from it in one bit of its flat index (the outside, 0, adds nothing)."""
    flat, index = a.ravel(), np.arange(a.size)
    return np.logical_or.reduce([flat] + [flat[index ^ (1 << bit)] for bit in range(a.ndim)]).reshape(a.shape)


def hypercube_propagation(seeds: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """SciPy's definition of ``binary_propagation`` by the cross on a ``(2,) * n`` volume,
    which SciPy itself takes minutes over: masked dilations until nothing changes."""
    reached = seeds
    while True:
        grown = np.where(mask, hypercube_dilation(reached), seeds)
        if np.array_equal(grown, reached):
            return grown
        reached = grown


def test_sixteen_axes_fall_back_where_the_native_propagation_does_not_fit(monkeypatch):
    """16-D propagation and fill run on the torch backend, as SciPy defines them, even
    with ``MORPHAUG_BACKEND=native`` (native kernels required wherever a case accepts
    the call; before: ``morphaug::propagate: a padded slice of 4294967296 voxels does
    not fit int32 offsets``, by default too); the native ball kernel, which has no such
    limit, still takes a 16-D dilation."""
    skip_unless_native("propagate")
    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    rng = np.random.default_rng(0)
    x = rng.random((2,) * SIXTEEN) < 0.5
    seeds = rng.random((2,) * SIXTEEN) < 0.05
    cross = np.zeros((3,) * SIXTEEN, bool)  # generate_binary_structure would build 16 int64 copies of it
    cross[(1,) * SIXTEEN] = True
    for axis in range(SIXTEEN):
        for side in (0, 2):
            cross[(1,) * axis + (side,) + (1,) * (SIXTEEN - axis - 1)] = True
    batch, seed = torch.from_numpy(x)[None, None], torch.from_numpy(seeds)[None, None]
    filled = binary_fill_holes(batch, cross)[0, 0].numpy()
    assert_parity(filled, x, exact=True)  # every voxel of (2,) * n lies on the border: no hole
    propagated = binary_propagation(seed, cross, ~batch)[0, 0].numpy()
    assert_parity(propagated, hypercube_propagation(seeds, ~x), exact=True)
    dilated = binary_dilation(seed, cross)[0, 0].numpy()
    assert_parity(dilated, hypercube_dilation(seeds), exact=True)
