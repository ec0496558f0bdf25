"""Native kernels (``morphaug._C``) against SciPy, slice by slice.

Skipped when ``morphaug._C`` is not built. Each case runs on three devices:
``cpu`` (the CPU kernels), ``emulated`` (CPU tensors, the calls sent to the
CUDA launchers run by the emulator of ``morphaug._C_emu``, blocks and threads
in forward, reverse and shuffled orders in turn; skipped without that
extension) and ``cuda`` (marked ``cuda``: skipped without a GPU, or when the
build has no CUDA kernels).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morphaug import _ops
from morphaug._ops import kernels as _native

NATIVE, WHY_NOT = _ops.load_native()
pytestmark = pytest.mark.skipif(NATIVE is None, reason=WHY_NOT or "")
EMULATOR, WHY_NO_EMULATOR = _ops.load_emulation()

DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("emulated", id="emulated"),
           pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]
# The emulator's orders, one call after the other: forward, reverse, then shuffles.
EMULATED_ORDERS = itertools.cycle([("forward", 0), ("reverse", 0)] + [("shuffle", s) for s in range(1, 5)])
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]
MAX_SIDE = {1: 40, 2: 12, 3: 7, 4: 4}


@pytest.fixture(autouse=True)
def emulated_cuda(request, monkeypatch):
    """On the ``emulated`` device, native calls on CPU tensors go to the emulated CUDA launchers."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("device") != "emulated":
        return
    if EMULATOR is None:
        pytest.skip(WHY_NO_EMULATOR)
    monkeypatch.setenv("MORPHAUG_EMULATE_CUDA", "1")


def on(device: str, op: str) -> torch.device:
    """The tensors' device, skipping when the build has no kernel of ``op`` for it; on the
    ``emulated`` device, the emulator takes its next order."""
    if device == "cuda" and not torch._C._dispatch_has_kernel_for_dispatch_key(f"morphaug::{op}", "CUDA"):
        pytest.skip("morphaug._C was built without CUDA kernels")
    if device == "emulated":
        EMULATOR.set_order(*next(EMULATED_ORDERS))
        return torch.device("cpu")
    return torch.device(device)


@st.composite
def masks(draw, max_rank=4):
    """A random bool array (B, C, *spatial), with all-foreground slices now and then."""
    rank = draw(st.integers(1, max_rank))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)),
             *(draw(st.integers(1, MAX_SIDE[rank])) for _ in range(rank)))
    density = draw(st.sampled_from([0.2, 0.6, 0.9, 0.98, 1.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.random(shape) < density, rng


def check_indices_reach(indices, distances, sampling, where):
    """indices (S, *spatial) point at voxels at the reported distance."""
    grid = np.indices(distances.shape)
    spacing = np.ones(len(grid)) if sampling is None else np.asarray(sampling)
    reach = np.sqrt(sum(((i - g) * s) ** 2 for i, g, s in zip(indices, grid, spacing)))
    assert_parity(reach, distances, exact=False, rtol=1e-6, atol=0, where=where)


# --- edt ---------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(case=masks(), sampled=st.booleans(), dtype=st.sampled_from([torch.float32, torch.float64]),
       squared=st.booleans(), return_indices=st.booleans())
def test_edt_matches_scipy(device, case, sampled, dtype, squared, return_indices):
    x, rng = case
    rank = x.ndim - 2
    sampling = np.round(rng.uniform(0.3, 3.0, rank), 2).tolist() if sampled else None
    mask = torch.from_numpy(x).to(on(device, "edt"))
    before = mask.clone()
    distances, indices = _native.edt(mask, sampling, return_indices, dtype, squared)
    assert torch.equal(mask, before)
    assert distances.dtype == dtype and distances.shape == mask.shape
    assert (indices is None) == (not return_indices)
    got = distances.cpu().double().numpy()
    for b, c in np.ndindex(x.shape[:2]):
        where = f"slice ({b}, {c})"
        expected, expected_indices = ndi.distance_transform_edt(
            x[b, c], sampling=sampling, return_indices=True)
        # SciPy's squared distance, before its square root, in its order
        spacing = np.ones(rank) if sampling is None else np.asarray(sampling)
        grid = np.indices(x.shape[2:])
        terms = [(((f - g) * s) ** 2) for f, g, s in zip(expected_indices.astype(float), grid, spacing)]
        expected_squared = np.add.reduce(np.stack(terms), axis=0)
        reference = expected_squared if squared else expected
        if dtype == torch.float64:
            assert_parity(got[b, c], reference, exact=True, where=where)
        else:
            assert_parity(got[b, c], reference, exact=False, rtol=1e-6, atol=0, where=where)
        if not return_indices:
            continue
        ours = indices[:, b, c].cpu().numpy()
        if dtype == torch.float64 or sampling is None:
            assert_parity(ours, expected_indices, exact=True, where=where)
        else:  # float32 with sampling: ties between equidistant voxels may differ
            check_indices_reach(ours, expected, sampling, where)


@pytest.mark.parametrize("shape", [(2, 1, 70, 300), (1, 2, 9, 40, 130), (1, 2, 3, 4, 5, 90)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("squared", [False, True])
def test_edt_near_lines_and_far_lines(shape, dtype, squared):
    """Lines whose distances are all short (the CPU's taps, parabola_taps.h) beside
    lines that need the envelope, in one call: along the last axis, a third of
    dense background, a third without any (the taps give up there on lines
    longer than 128, distances growing past 64) and a third of sparse
    background; a second slice with a single background voxel."""
    rng = np.random.default_rng(7)
    n = shape[-1]
    x = np.ones(shape, bool)
    first = x[0, 0]
    first[..., : n // 3][rng.random(first[..., : n // 3].shape) < 0.2] = False
    first[..., 2 * n // 3:][rng.random(first[..., 2 * n // 3:].shape) < 0.01] = False
    x.reshape(-1, *shape[2:])[1][(0,) * (len(shape) - 2)] = False
    distances, _ = _native.edt(torch.from_numpy(x), None, False, dtype, squared)
    for b, c in np.ndindex(shape[:2]):
        expected = ndi.distance_transform_edt(x[b, c])
        expected = np.round(expected ** 2) if squared else expected
        got = distances[b, c].double().numpy()
        reference = expected if dtype == torch.float64 or squared else expected.astype(np.float32)
        assert_parity(got, reference, exact=True, where=f"slice ({b}, {c})")


def test_fresh_outputs_of_32_mib_equal_outputs_written_in_place():
    """From 32 MiB a new CPU output has its huge pages faulted in by the calling thread,
    one byte each, before the kernel writes (csrc/cpu/fresh.h): the results are those the
    kernel writes into an output holding other values."""
    x = torch.rand(32, 1, 512, 512, generator=torch.Generator().manual_seed(4))
    assert x.nbytes >= 32 << 20
    out = torch.full_like(x, 7.0)
    _native.grey_box(x, [3, 5], [0, 1], ["reflect", "wrap"], 0.0, False, out=out)
    torch.testing.assert_close(_native.grey_box(x, [3, 5], [0, 1], ["reflect", "wrap"], 0.0, False), out, rtol=0, atol=0)
    mask = x > 0.02
    out.fill_(7.0)
    _native.edt(mask, None, False, torch.float32, False, out=out)
    torch.testing.assert_close(_native.edt(mask)[0], out, rtol=0, atol=0)


def test_edt_no_background_measures_to_minus_one():
    mask = torch.ones(1, 1, 3, 4, dtype=torch.bool)
    distances, indices = _native.edt(mask, None, True, torch.float64)
    expected, expected_indices = ndi.distance_transform_edt(np.ones((3, 4), bool), return_indices=True)
    assert_parity(distances[0, 0].numpy(), expected, exact=True)
    assert_parity(indices[:, 0, 0].numpy(), expected_indices, exact=True)
    assert (indices[0] == -1).all() and (indices[1] == 0).all()


def test_edt_ties_keep_the_lower_index():
    # voxel (1, 1) is at distance 1 from (0, 1), (1, 0), (1, 2) and (2, 1)
    x = np.ones((3, 3), bool)
    x[0, 1] = x[1, 0] = x[1, 2] = x[2, 1] = False
    _, indices = _native.edt(torch.from_numpy(x)[None, None], None, True)
    _, expected = ndi.distance_transform_edt(x, return_indices=True)
    assert_parity(indices[:, 0, 0].numpy(), expected, exact=True)


def test_edt_accepts_non_contiguous_input():
    x = torch.from_numpy(np.random.default_rng(1).random((2, 3, 6, 5)) < 0.7)
    view = x.transpose(2, 3)
    assert not view.is_contiguous()
    distances, indices = _native.edt(view, [1.0, 2.0], True)
    reference, reference_indices = _native.edt(view.contiguous(), [1.0, 2.0], True)
    assert torch.equal(distances, reference) and torch.equal(indices, reference_indices)


# --- cdt ---------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(case=masks(), metric=st.sampled_from(["taxicab", "chessboard", "random"]),
       return_indices=st.booleans())
def test_cdt_matches_scipy(device, case, metric, return_indices):
    x, rng = case
    rank = x.ndim - 2
    if metric == "random":
        metric = rng.random((3,) * rank) < 0.5
    mask = torch.from_numpy(x).to(on(device, "cdt"))
    before = mask.clone()
    distances, indices = _native.cdt(mask, chamfer(metric, rank), return_indices)
    assert torch.equal(mask, before)
    assert distances.dtype == torch.int32 and (indices is None) == (not return_indices)
    for b, c in np.ndindex(x.shape[:2]):
        expected, expected_indices = ndi.distance_transform_cdt(x[b, c], metric=metric,
                                                                return_indices=True)
        assert_parity(distances[b, c].cpu().numpy(), expected, exact=True, where=f"({b}, {c})")
        if return_indices:
            assert_parity(indices[:, b, c].cpu().numpy(), expected_indices, exact=True, where=f"({b}, {c})")


def chamfer(metric, rank: int) -> np.ndarray:
    """The structure of a CDT metric (name or flags), as distance_transform_cdt parses it."""
    if isinstance(metric, str):
        return ndi.generate_binary_structure(rank, 1 if metric == "taxicab" else rank)
    return np.asarray(metric) != 0


def test_cdt_no_background_stays_minus_one():
    distances, indices = _native.cdt(torch.ones(1, 2, 4, 3, dtype=torch.bool), chamfer("taxicab", 2), True)
    assert (distances == -1).all()
    expected = np.indices((4, 3))
    assert_parity(indices[:, 0, 1].numpy(), expected, exact=True)


# --- propagate / fill_holes --------------------------------------------------

def _element_holding_its_centre(draw, rank):
    """A generate_binary_structure element, or a random (3,) * rank one that holds its
    centre (offsets without their mirror: a flood that runs one way along them)."""
    if draw(st.booleans()):
        return ndi.generate_binary_structure(rank, draw(st.integers(1, rank)))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    element = np.random.default_rng(seed).random((3,) * rank) < 0.4
    element[(1,) * rank] = True
    return element


@st.composite
def elements(draw, shape):
    """An element that holds its centre (:func:`_element_holding_its_centre`), shared (*k),
    per sample (B, *k) or per (B, C, *k)."""
    rank = len(shape) - 2
    kind = draw(st.sampled_from(["shared", "sample", "channel"]))
    lead = {"shared": (), "sample": shape[:1], "channel": shape[:2]}[kind]
    picks = [_element_holding_its_centre(draw, rank) for _ in range(int(np.prod(lead, dtype=int)))]
    return np.stack(picks).reshape(lead + (3,) * rank)


def per_slice(structure, rank, b, c):
    extra = structure.ndim - rank
    return structure[(b, c)[:extra]] if extra else structure


@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(case=masks(), data=st.data(), border=st.sampled_from([0, 1]), masked=st.booleans())
def test_propagation_and_fill_holes_match_scipy(device, monkeypatch, case, data, border, masked):
    from morphaug.ndimage import binary_fill_holes, binary_propagation

    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    x, rng = case
    rank = x.ndim - 2
    dev = on(device, "propagate")
    structure = data.draw(elements(x.shape))
    seeds = rng.random(x.shape) < data.draw(st.sampled_from([0.0, 0.02, 0.2]))
    region = x if masked else None
    before = torch.from_numpy(x).to(dev)
    got = binary_propagation(torch.from_numpy(seeds).to(dev), torch.from_numpy(structure),
                             None if region is None else before, border_value=border)
    filled = binary_fill_holes(before, torch.from_numpy(structure))
    assert torch.equal(before, torch.from_numpy(x).to(dev))
    assert got.dtype == torch.bool and filled.dtype == torch.bool
    for b, c in np.ndindex(x.shape[:2]):
        element = per_slice(structure, rank, b, c)
        expected = ndi.binary_propagation(seeds[b, c], element,
                                          None if region is None else region[b, c],
                                          border_value=border)
        assert_parity(got[b, c].cpu().numpy(), expected, exact=True, where=f"({b}, {c})")
        assert_parity(filled[b, c].cpu().numpy(), ndi.binary_fill_holes(x[b, c], element),
                      exact=True, where=f"({b}, {c})")


@pytest.mark.parametrize("device", DEVICES)
def test_propagation_kernel_against_torch_backend(device, monkeypatch):
    """Larger volumes, non-bool input, axes subsets and erosion (the dual) too."""
    from morphaug.ndimage import binary_dilation, binary_erosion, binary_fill_holes

    rng = np.random.default_rng(7)
    dev = on(device, "propagate")
    x = torch.from_numpy(rng.random((2, 3, 20, 17, 9)) < 0.35).to(dev)
    region = torch.from_numpy(rng.random((2, 3, 20, 17, 9)) < 0.7).to(dev)
    ball = torch.from_numpy(ndi.iterate_structure(ndi.generate_binary_structure(3, 1), 2))
    one_way = np.zeros((3, 5, 3), bool)  # the centre, steps one way along axis 1, a corner
    one_way[1, 2:, 1] = one_way[0, 0, 0] = one_way[2, 1, 1] = True
    cases = [
        lambda: binary_fill_holes(x.to(torch.float32)),
        lambda: binary_fill_holes(x, ndi.generate_binary_structure(2, 2), axes=(0, 2)),
        lambda: binary_fill_holes(x, ball),
        lambda: binary_dilation(x & ~region, ball, -1, region, border_value=1),
        lambda: binary_erosion(x | region, None, 0, region, border_value=0),
        lambda: binary_erosion(x | region, ndi.generate_binary_structure(3, 3), -1, None,
                               border_value=1),
        lambda: binary_fill_holes(x, one_way),
        lambda: binary_dilation(x & ~region, one_way, -1, region, border_value=1),
        lambda: binary_erosion(x | region, one_way[::-1], 0, region, border_value=0),
    ]
    for case in cases:
        monkeypatch.setenv("MORPHAUG_BACKEND", "native")
        native = case()
        monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
        assert torch.equal(native, case())


@pytest.mark.parametrize("device", DEVICES)
def test_fill_holes_native_matches_scipy_on_a_volume(device, monkeypatch):
    from morphaug.ndimage import binary_fill_holes

    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    rng = np.random.default_rng(1)
    grid = np.indices((40, 40, 40))
    x = np.abs(np.sqrt(((grid - 20) ** 2).sum(0)) - 12) < 2
    x = np.stack([x, x | (rng.random(x.shape) < 0.3)])[:, None]
    got = binary_fill_holes(torch.from_numpy(x).to(on(device, "fill_holes"))).cpu()
    for b in range(2):
        assert_parity(got[b, 0].numpy(), ndi.binary_fill_holes(x[b, 0]), exact=True)


def _line_structure(rank: int, axis: int) -> np.ndarray:
    """The centre and its two neighbours along ``axis`` only."""
    structure = np.zeros((3,) * rank, bool)
    index = [1] * rank
    for j in range(3):
        index[axis] = j
        structure[tuple(index)] = True
    return structure


FILL_CASES = [((2, 3, 60), ndi.generate_binary_structure(1, 1)),
              ((3, 1, 30, 1), ndi.generate_binary_structure(2, 1)),
              ((1, 2, 40, 35), ndi.generate_binary_structure(2, 2)),
              ((2, 1, 35, 40), _line_structure(2, 1)),  # no step along axis 0: its faces are no border
              ((2, 1, 35, 40), _line_structure(2, 0)),  # no step along the rows: the flood fill instead
              ((1, 1, 12, 11, 13), ndi.generate_binary_structure(3, 1)),
              ((2, 1, 12, 1, 13), ndi.generate_binary_structure(3, 3)),
              ((1, 2, 6, 5, 7, 6), ndi.generate_binary_structure(4, 2)),
              ((1, 1, 300, 400), ndi.generate_binary_structure(2, 1))]  # several chunks of one slice


@pytest.mark.parametrize("shape, structure", FILL_CASES)
def test_fill_holes_by_labelling_the_background_matches_scipy(shape, structure, monkeypatch):
    """The CPU fill_holes with one (3,) * S structure for every slice labels the background
    (label's run scan): slices in parallel, or each slice in chunks when slices are fewer than threads."""
    from morphaug.ndimage import binary_fill_holes

    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    monkeypatch.delenv("MORPHAUG_EMULATE_CUDA", raising=False)
    rng = np.random.default_rng(len(shape))
    x = rng.random(shape) < 0.55
    expected = np.stack([np.stack([ndi.binary_fill_holes(x[b, c], structure) for c in range(shape[1])])
                         for b in range(shape[0])])
    before = torch.get_num_threads()
    try:
        for threads in (1, 2, 5):
            torch.set_num_threads(threads)
            got = binary_fill_holes(torch.from_numpy(x), structure)
            assert_parity(got.numpy(), expected, exact=True)
    finally:
        torch.set_num_threads(before)


def spiral(side):
    """A corridor of width 1 winding inwards in a square spiral (true on the corridor)."""
    corridor = np.zeros((side, side), bool)
    r, c, dr, dc = 1, 1, 0, 1
    corridor[r, c] = True
    for _ in range(side * side):
        for _ in range(2):  # straight on, else a clockwise turn
            nr, nc = r + 2 * dr, c + 2 * dc
            if 0 < nr < side - 1 and 0 < nc < side - 1 and not corridor[nr, nc]:
                corridor[r + dr, c + dc] = corridor[nr, nc] = True
                r, c = nr, nc
                break
            dr, dc = dc, -dr
        else:
            return corridor
    return corridor


@pytest.mark.parametrize("device", DEVICES)
def test_propagation_along_a_spiral(device, monkeypatch):
    """A long corridor that turns at every wall: many rounds of the CUDA sweeps."""
    from morphaug.ndimage import binary_propagation

    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    corridor = spiral(61)
    seeds = np.zeros_like(corridor)
    seeds[1, 1] = True
    x = np.stack([seeds, seeds.T])[:, None]
    mask = np.stack([corridor, corridor.T])[:, None]
    dev = on(device, "propagate")
    got = binary_propagation(torch.from_numpy(x).to(dev), mask=torch.from_numpy(mask).to(dev)).cpu()
    for b in range(2):
        expected = ndi.binary_propagation(x[b, 0], mask=mask[b, 0])
        assert expected.sum() == corridor.sum()  # the whole corridor, through every turn
        assert_parity(got[b, 0].numpy(), expected, exact=True, where=f"sample {b}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(2, 2, 300), (2, 1, 70, 45), (1, 2, 23, 31, 19), (1, 1, 6, 7, 5, 9)])
def test_cdt_taxicab_distances_on_larger_shapes(device, shape):
    """Taxicab without indices takes the separable path; slices without background stay -1."""
    rng = np.random.default_rng(sum(shape))
    x = rng.random(shape) < 0.995
    x[0, 0] = True  # no background at all
    mask = torch.from_numpy(x).to(on(device, "cdt"))
    distances, _ = _native.cdt(mask.transpose(-1, -2).contiguous().transpose(-1, -2),
                               chamfer("taxicab", len(shape) - 2))
    for b, c in np.ndindex(x.shape[:2]):
        assert_parity(distances[b, c].cpu().numpy(), ndi.distance_transform_cdt(x[b, c], metric="taxicab"),
                      exact=True, where=f"({b}, {c})")
    assert (distances[0, 0] == -1).all()


# --- grey_box ----------------------------------------------------------------

GREY_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int16,
               torch.uint8, torch.int64, torch.bool]
FLAT_GREY_DTYPES = GREY_DTYPES + [torch.uint16, torch.uint32, torch.uint64]


def erosion_form(maximum: bool, shape, origin, *elements):
    """``(origin, *elements)`` as the native grey kernels take them: erosion's unchanged;
    for SciPy's dilation reflected (arrays flipped, each origin ``-o``, minus 1 on an
    even extent), as morphaug.ndimage does once before calling a kernel."""
    if not maximum:
        return (list(origin), *elements)
    return ([-o - (1 - k % 2) for o, k in zip(origin, shape)],
            *(None if e is None else np.flip(e) for e in elements))


def random_values(rng, shape, dtype):
    if dtype == torch.bool:
        return torch.from_numpy(rng.random(shape) < 0.5)
    if dtype.is_floating_point:
        return torch.from_numpy(rng.standard_normal(shape)).to(dtype)
    return torch.from_numpy(rng.integers(0, 100, shape)).to(dtype)


def scipy_view(tensor):
    """NumPy values SciPy can filter: half types through float32 (exact)."""
    if tensor.dtype in (torch.float16, torch.bfloat16):
        tensor = tensor.float()
    return tensor.cpu().numpy()


@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(case=masks(), dtype=st.sampled_from(FLAT_GREY_DTYPES), dilation=st.booleans(), data=st.data())
def test_grey_box_matches_scipy(device, case, dtype, dilation, data):
    x, rng = case
    rank = x.ndim - 2
    size = [data.draw(st.integers(1, 9)) for _ in range(rank)]  # longer than the axis too
    origin = [data.draw(st.integers(-(k // 2), (k - 1) // 2)) for k in size]
    mode = [data.draw(st.sampled_from(MODES)) for _ in range(rank)]
    values = random_values(rng, x.shape, dtype).to(on(device, "grey_box"))
    cval = True if dtype == torch.bool else (7 if not dtype.is_floating_point else -0.25)
    before = values.clone()
    result = _native.grey_box(values, size, erosion_form(dilation, size, origin)[0], mode, cval, dilation)
    assert torch.equal(values, before)
    assert result.dtype == dtype and result.shape == values.shape and result.is_contiguous()
    reference = ndi.grey_dilation if dilation else ndi.grey_erosion
    source, got = scipy_view(values), scipy_view(result)
    for b, c in np.ndindex(x.shape[:2]):
        expected = reference(source[b, c], size=size, origin=origin, mode=mode, cval=cval)
        assert_parity(got[b, c], expected, exact=True, where=f"({b}, {c})")


# The CPU kernel's paths (csrc/cpu/grey.cpp): one fused pass for the last
# axis and up to two before it of extent at most 8 (each row's ends from the
# border; a ladder of windows beyond 8 on the last axis; tiles of rows; a ring
# of planes), a pass of its own for each axis before them (direct up to
# extent 8, else van Herk on packed tiles), several lane tiles per row,
# windows wider than their axis.
BOX_PATHS = [
    ((2, 1, 40, 1500), (17, 3)),          # axis 0: van Herk over 2 packed tiles; fused last axis
    ((1, 2, 9, 40, 30), (5, 5, 3)),       # fused, a ring of 5 planes
    ((1, 1, 6, 7, 1100), (3, 7, 2)),      # fused, tiles of rows
    ((1, 1, 20, 300, 200), (3, 3, 3)),    # fused, tiles of rows and blocks of planes
    ((2, 1, 3, 4, 50), (7, 5, 9)),        # fused: 7 ring slots over 3 planes, a ladder on the last axis
    ((1, 1, 6, 9, 1), (2, 8, 1)),         # fused rows and planes, a last axis left alone
    ((1, 1, 7, 3, 2048), (8, 1, 8)),      # fused planes and last axis, no row filter
    ((2, 1, 50, 3), (20, 1)),             # one van Herk pass, no fused one
    ((1, 1, 12, 5, 6), (9, 1, 1)),        # one van Herk pass on axis 0
    ((1, 2, 3000), (31,)),                # 1-D: the ladder
    ((3, 1, 2, 3), (9, 9)),               # every axis shorter than its window
    ((1, 1, 5, 6, 7, 4), (3, 2, 9, 3)),   # 4-D: axes 0 and 1 direct, 2 van Herk; fused last axis
]


@pytest.mark.parametrize("shape, size", BOX_PATHS)
@pytest.mark.parametrize("dilation", [False, True])
def test_grey_box_cpu_paths_match_scipy(shape, size, dilation):
    rng = np.random.default_rng(sum(shape) + sum(size))
    origin = [int(rng.integers(-(k // 2), (k - 1) // 2 + 1)) for k in size]
    mode = [MODES[i] for i in rng.integers(0, len(MODES), len(size))]
    reference = ndi.grey_dilation if dilation else ndi.grey_erosion
    for dtype in (torch.float32, torch.float64, torch.uint8, torch.uint16, torch.int32, torch.bool):
        values = random_values(rng, shape, dtype)
        cval = True if dtype == torch.bool else (7 if not dtype.is_floating_point else -0.25)
        result = _native.grey_box(values, list(size), erosion_form(dilation, size, origin)[0], mode, cval,
                                  dilation)
        source = values.numpy()
        for b, c in np.ndindex(shape[:2]):
            expected = reference(source[b, c], size=size, origin=origin, mode=mode, cval=cval)
            assert_parity(result[b, c].numpy(), expected, exact=True, where=f"{dtype} ({b}, {c})")


@pytest.mark.parametrize("size", [(3, 3), (17, 3), (3, 3, 3), (5, 5, 3), (9, 9, 9), (7,)])
@pytest.mark.parametrize("cval", [0.0, float("nan")])
def test_grey_box_nan_in_a_window_gives_nan(size, cval):
    """NaN-free rows take plain min / max: rows with a NaN, and NaN borders, still give NaN."""
    rng = np.random.default_rng(len(size))
    shape = (2, 1) + (13,) * (len(size) - 1) + (40,)
    x = rng.standard_normal(shape)
    nans = rng.random(shape) < 0.004
    nans[0, 0].flat[0] = True  # on the border too
    x[nans] = np.nan
    got = _native.grey_box(torch.from_numpy(x), list(size), [0] * len(size), ["constant"] * len(size), cval,
                           False).numpy()
    for b in range(shape[0]):
        window_nan = ndi.binary_dilation(nans[b, 0], np.ones(size, bool), border_value=int(cval != cval))
        assert_parity(np.isnan(got[b, 0]), window_nan, exact=True)
        # elsewhere SciPy's minimum, a NaN never being the least value
        expected = ndi.grey_erosion(np.where(nans[b, 0], np.inf, x[b, 0]), size=size, mode="constant",
                                    cval=np.inf if cval != cval else cval)
        assert_parity(got[b, 0][~window_nan], expected[~window_nan], exact=True)


@pytest.mark.parametrize("threads", [1, 2])
def test_grey_rings_carry_over_between_tasks(threads):
    """A thread keeps its ring from one block of planes to the next, and refills it
    where its range of tasks, or a slice, starts."""
    rng = np.random.default_rng(threads)
    x = torch.from_numpy(rng.standard_normal((4, 1, 600, 300)).astype(np.float32))
    disk = np.add.outer(np.arange(-3, 4) ** 2, np.arange(-3, 4) ** 2) <= 9
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        box = _native.grey_box(x, [5, 3], [1, 0], ["reflect", "wrap"], 0.0, False)
        footprint = _native.grey_footprint(x, disk, [0, -1], ["mirror"] * 2, 0.0, False)
    finally:
        torch.set_num_threads(before)
    for b in range(x.shape[0]):
        source = x[b, 0].numpy()
        assert_parity(box[b, 0].numpy(), ndi.grey_erosion(source, size=(5, 3), origin=(1, 0), mode=["reflect", "wrap"]),
                      exact=True)
        assert_parity(footprint[b, 0].numpy(), ndi.grey_erosion(source, footprint=disk, origin=(0, -1), mode="mirror"),
                      exact=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
def test_flat_grey_kernels_compare_wide_unsigned_values(device, dtype):
    """Values and a cval across the whole range, compared as unsigned values (no signed view),
    against NumPy's exact sliding-window extrema."""
    from numpy.lib.stride_tricks import sliding_window_view

    top = np.iinfo(dtype).max
    a = np.random.default_rng(7).integers(0, top, size=(9, 11), dtype=dtype, endpoint=True)
    a[1, :4] = [0, 1, top, top - 1]
    x = torch.from_numpy(a)[None, None].to(on(device, "grey_box"))
    box = _native.grey_box(x, [3, 3], [0, 0], ["constant"] * 2, int(top), False).cpu()[0, 0].numpy()
    windows = sliding_window_view(np.pad(a, 1, constant_values=top), (3, 3))
    assert_parity(box, windows.min(axis=(-2, -1)), exact=True)
    cross = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)
    got = _native.grey_footprint(x, cross, [0, 0], ["reflect"] * 2, 0, True).cpu()[0, 0].numpy()
    windows = sliding_window_view(np.pad(a, 1, mode="symmetric"), (3, 3))
    assert_parity(got, np.where(cross, windows, 0).max(axis=(-2, -1)), exact=True)


@pytest.mark.parametrize("dilation", [False, True])
@pytest.mark.parametrize("dtype", FLAT_GREY_DTYPES + [torch.int8, torch.int32])
def test_every_flat_grey_dtype_takes_each_cpu_pass(dtype, dilation):
    """Every dtype of the flat grey kernels, whose CPU passes are compiled by dtype group
    (csrc/cpu/grey_passes.h): grey_box's strided pass (direct and van Herk) and fused pass,
    and grey_footprint's filter, against SciPy on values of both signs where the dtype has them."""
    rng = np.random.default_rng(5)
    shape = (2, 1, 12, 7, 9)
    if dtype == torch.bool:
        values = torch.from_numpy(rng.random(shape) < 0.5)
    elif dtype.is_floating_point:
        values = torch.from_numpy(rng.standard_normal(shape) * 50).to(dtype)
    else:
        low = -100 if dtype.is_signed else 0
        values = torch.from_numpy(rng.integers(low, low + 200, shape)).to(dtype)
    reference = ndi.grey_dilation if dilation else ndi.grey_erosion
    source = scipy_view(values)
    footprint = np.zeros((3, 3, 3), bool)
    footprint[1, 1, :] = footprint[1, :, 1] = footprint[:, 1, 1] = footprint[0, 0, 0] = True
    # size 5 along axis 0 alone: a direct strided pass; 10 there: van Herk, the others fused
    for size in ([5, 1, 1], [10, 3, 4], [1, 3, 2]):
        origin, = erosion_form(dilation, size, [0, 0, 0])
        got = scipy_view(_native.grey_box(values, size, origin, ["reflect"] * 3, 0, dilation))
        for b in range(shape[0]):
            assert_parity(got[b, 0], reference(source[b, 0], size=size, mode="reflect"), exact=True,
                          where=f"{size} ({b})")
    origin, element = erosion_form(dilation, footprint.shape, [0, 0, 0], footprint)
    got = scipy_view(_native.grey_footprint(values, element, origin, ["mirror"] * 3, 0, dilation))
    for b in range(shape[0]):
        assert_parity(got[b, 0], reference(source[b, 0], footprint=footprint, mode="mirror"), exact=True,
                      where=f"footprint ({b})")


def test_grey_box_size_one_everywhere_copies():
    x = torch.randn(2, 1, 5, 6)
    out = _native.grey_box(x, [1, 1], [0, 0], ["reflect", "reflect"], 0.0, False)
    assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()


def test_grey_box_accepts_non_contiguous_input():
    x = torch.randn(2, 3, 7, 6)
    view = x.transpose(2, 3)
    out = _native.grey_box(view, [3, 4], [1, -1], ["wrap", "mirror"], 0.0, True)
    reference = _native.grey_box(view.contiguous(), [3, 4], [1, -1], ["wrap", "mirror"], 0.0, True)
    assert torch.equal(out, reference)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(2, 1, 5, 150), (1, 2, 70, 3, 80), (1, 1, 300)])
def test_larger_shapes_match_scipy(device, shape):
    """Many neighbouring lines (CPU bundles and tiles) and long distances."""
    rng = np.random.default_rng(sum(shape))
    x = rng.random(shape) < 0.995
    x.reshape(-1)[0] = False  # a lone background voxel far from most others
    mask = torch.from_numpy(x).to(on(device, "edt"))
    values = torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(mask.device)
    rank = len(shape) - 2
    distances, indices = _native.edt(mask, None, True, torch.float64)
    chessboard, chessboard_indices = _native.cdt(mask, chamfer("chessboard", rank), True)
    taxicab, _ = _native.cdt(mask, chamfer("taxicab", rank))
    eroded = _native.grey_box(values, [7] * rank, [-2] * rank, ["mirror"] * rank, 0.0, False)
    for b, c in np.ndindex(shape[:2]):
        expected, expected_indices = ndi.distance_transform_edt(x[b, c], return_indices=True)
        assert_parity(distances[b, c].cpu().numpy(), expected, exact=True)
        assert_parity(indices[:, b, c].cpu().numpy(), expected_indices, exact=True)
        expected, expected_indices = ndi.distance_transform_cdt(x[b, c], "chessboard", return_indices=True)
        assert_parity(chessboard[b, c].cpu().numpy(), expected, exact=True)
        assert_parity(chessboard_indices[:, b, c].cpu().numpy(), expected_indices, exact=True)
        assert_parity(taxicab[b, c].cpu().numpy(), ndi.distance_transform_cdt(x[b, c], "taxicab"), exact=True)
        assert_parity(eroded[b, c].cpu().numpy(), ndi.grey_erosion(values[b, c].cpu().numpy(), size=7, origin=-2,
                                                       mode="mirror"), exact=True)


@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(case=masks(max_rank=4), metric=st.sampled_from(["chessboard", "taxicab"]))
def test_cdt_distances_without_indices_match_scipy(device, case, metric):
    """The separable no-indices paths (int16 buffers below 2**14 voxels per axis)."""
    x, _ = case
    distances, _ = _native.cdt(torch.from_numpy(x).to(on(device, "cdt")), chamfer(metric, x.ndim - 2))
    for b, c in np.ndindex(x.shape[:2]):
        assert_parity(distances[b, c].cpu().numpy(), ndi.distance_transform_cdt(x[b, c], metric), exact=True)


@pytest.mark.parametrize("length", [2 ** 14 - 1, 2 ** 14, 17000])
def test_cdt_chessboard_long_axes(length):
    """Around the int16 bound of the chessboard buffers."""
    rng = np.random.default_rng(length)
    x = rng.random((2, 1, 2, length)) < 0.9999
    x[1] = True  # no background: -1
    distances, _ = _native.cdt(torch.from_numpy(x), chamfer("chessboard", 2))
    for b in range(2):
        assert_parity(distances[b, 0].numpy(), ndi.distance_transform_cdt(x[b, 0], "chessboard"), exact=True)


# --- ball_morphology -----------------------------------------------------------

def ball_footprint(metric: int, radius: int, rank: int) -> np.ndarray:
    """SciPy's element for a ball kernel code: euclidean ball, taxicab cross, chessboard cube."""
    offsets = np.indices((2 * radius + 1,) * rank) - radius
    if metric == 0:
        return (offsets ** 2).sum(0) <= radius ** 2
    if metric == 1:
        return np.abs(offsets).sum(0) <= radius
    return np.ones((2 * radius + 1,) * rank, dtype=bool)


@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(case=masks(), data=st.data())
def test_ball_morphology_matches_scipy(device, case, data):
    x, rng = case
    dev = on(device, "ball_morphology")
    lead = x.shape[:2]
    big = data.draw(st.booleans())  # radii beyond the volume exercise the border handling
    radius = rng.integers(0, 12 if big else 4, lead)
    metric = rng.integers(0, 3, lead)
    erode = rng.random(lead) < 0.5
    seeds = torch.from_numpy(x).to(dev)
    got = _native.ball_morphology(seeds, torch.from_numpy(radius).to(dev), torch.from_numpy(metric).to(dev),
                                  torch.from_numpy(erode).to(dev))
    assert torch.equal(seeds, torch.from_numpy(x).to(dev)) and got.dtype == torch.bool
    for b, c in np.ndindex(lead):
        op = ndi.binary_erosion if erode[b, c] else ndi.binary_dilation
        expected = op(x[b, c], ball_footprint(metric[b, c], radius[b, c], x.ndim - 2))
        assert_parity(got[b, c].cpu().numpy(), expected,
                      exact=True, where=f"({b}, {c}) r={radius[b, c]} metric={metric[b, c]}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("element", ["cross", "box", "cross2", "box5", "ball2"])
@pytest.mark.parametrize("name", ["binary_erosion", "binary_dilation", "binary_opening", "binary_closing"])
def test_balls_run_on_the_ball_kernel(device, monkeypatch, element, name):
    """Cross / box (iterated: bigger balls of their metric) and Euclidean balls
    (one step), border 0 and no mask, natively; other cases on torch, same results."""
    from morphaug import footprints, ndimage

    rng = np.random.default_rng(11)
    x = rng.random((2, 2, 13, 9, 11)) < 0.6
    dev = on(device, "ball_morphology")
    structure = {"cross": ndi.generate_binary_structure(3, 1), "box": ndi.generate_binary_structure(3, 3),
                 "cross2": footprints.cross(2).numpy(), "box5": footprints.cube(5).numpy(),
                 "ball2": footprints.ball(2).numpy()}[element]
    calls = []
    monkeypatch.setattr(_native, "ball_morphology",
                        lambda *args, real=_native.ball_morphology, **kw: calls.append(1) or real(*args, **kw))
    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    for iterations in (1, 2, 3):
        got = getattr(ndimage, name)(torch.from_numpy(x).to(dev), structure, iterations)
        for b, c in np.ndindex(x.shape[:2]):
            expected = getattr(ndi, name)(x[b, c], structure, iterations)
            assert_parity(got[b, c].cpu().numpy(), expected, exact=True, where=f"{iterations} ({b}, {c})")
    assert calls
    calls.clear()
    ndimage.binary_dilation(torch.from_numpy(x).to(dev), structure, 1, border_value=1)
    ndimage.binary_dilation(torch.from_numpy(x).to(dev), structure, 1, mask=torch.from_numpy(x).to(dev))
    assert not calls  # border_value=1 and masks stay on torch


@pytest.mark.cuda
def test_ball_morphology_cuda_takes_any_radius():
    """int32 values on CUDA: radii past the CPU bound, without a host read."""
    dev = on("cuda", "ball_morphology")
    x = torch.zeros(1, 2, 401, 3, dtype=torch.bool)
    x[0, :, 200, 1] = True
    radius = torch.tensor([[150, 300]])
    got = _native.ball_morphology(x.to(dev), radius.to(dev), torch.tensor([[0, 1]], device=dev),
                                  torch.tensor([[False, False]], device=dev)).cpu()
    for c, r in enumerate((150, 300)):
        expected = ndi.binary_dilation(x[0, c].numpy(), ball_footprint(c, r, 2))
        assert_parity(got[0, c].numpy(), expected, exact=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(2, 1, 300000), (1, 2, 3, 150000), (2, 3, 700, 200), (1, 2, 5, 1, 3, 1),
                                   (2, 2, 1, 1, 1), (1, 1, 4, 5, 6, 7), (3, 1, 9, 2), (2, 2, 300, 30, 40),
                                   (3, 2, 2, 9, 8)])
def test_ball_of_radius_one(device, shape):
    """Radius 1 takes the CPU launcher's shifted byte ranges (Euclidean, taxicab: the cross;
    chessboard: the box of 3, axis by axis): lines split into tasks, axes of one voxel, every
    rank; against SciPy's structures of connectivity 1 and rank."""
    dev = on(device, "ball_morphology")
    rng = np.random.default_rng(sum(shape))
    x = rng.random(shape) < 0.6
    lead = shape[:2]
    metric, erode = rng.integers(0, 3, lead), np.arange(math.prod(lead)).reshape(lead) % 2 == 1
    got = _native.ball_morphology(*(torch.from_numpy(a).to(dev) for a in (x, np.ones(lead, np.int64), metric,
                                                                           erode))).cpu().numpy()
    rank = len(shape) - 2
    for b, c in np.ndindex(lead):
        op = ndi.binary_erosion if erode[b, c] else ndi.binary_dilation
        element = ndi.generate_binary_structure(rank, rank if metric[b, c] == 2 else 1)
        assert_parity(got[b, c], op(x[b, c], element), exact=True, where=f"({b}, {c}) metric {metric[b, c]}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape, radii, density", [
    ((1, 3, 700, 200), (1, 4, 9), 0.005),  # tasks of ~2^17 values: 656 planes, 2 a slice
    ((2, 1, 70, 48, 48), (2, 5), 0.002),  # 57 planes a task
    ((1, 2, 1200, 1000), (127, 60), 1e-5),  # tasks of 4r planes
])
def test_ball_morphology_on_long_slices(device, shape, radii, density):
    """Slices long enough that the CPU launcher splits them into tasks of planes
    (seeds within r planes of a task's ends, the outside only at the slice's),
    against SciPy's distance transforms: the ball of radius r around a seed is
    where its distance is at most r."""
    dev = on(device, "ball_morphology")
    rng = np.random.default_rng(5)
    sparse = rng.random(shape) < density
    lead = shape[:2]
    radius = np.resize(np.array(radii), lead)
    metric = rng.integers(0, 3, lead)
    for erode in (False, True):
        x = ~sparse if erode else sparse  # a few seeds of each: background, foreground
        got = _native.ball_morphology(torch.from_numpy(x).to(dev), torch.from_numpy(radius).to(dev),
                                      torch.from_numpy(metric).to(dev),
                                      torch.full(lead, erode, device=dev)).cpu().numpy()
        for b, c in np.ndindex(lead):
            seeds = np.pad(x[b, c], 1) if erode else ~x[b, c]  # erosion: the outside is background
            distance = (ndi.distance_transform_edt(seeds) if metric[b, c] == 0 else
                        ndi.distance_transform_cdt(seeds, ("taxicab", "chessboard")[metric[b, c] - 1]))
            if erode:
                distance = distance[(slice(1, -1),) * (x.ndim - 2)]
            expected = distance > radius[b, c] if erode else distance <= radius[b, c]
            assert_parity(got[b, c], expected,
                          exact=True, where=f"erode={erode} ({b}, {c}) r={radius[b, c]} metric={metric[b, c]}")


def test_ball_morphology_largest_radius():
    x = torch.zeros(1, 2, 300, 1, dtype=torch.bool)
    x[0, :, 150] = True
    contract = _ops.KERNELS["ball_morphology"]
    assert contract.fits((300, 1), {"radius": 127}) is None and contract.fits((300, 1), {"radius": 128})
    assert contract.fits((300, 1), {"radius": 128}, "cuda") is None  # the CUDA kernel clamps radii
    radius = torch.full((1, 2), 127)
    got = _native.ball_morphology(x, radius, torch.zeros(1, 2, dtype=torch.long), torch.tensor([[False, True]]))
    line = np.zeros(300, dtype=bool)
    line[150 - 127:150 + 128] = True
    assert_parity(got[0, 0, :, 0].numpy(), line, exact=True)
    assert not got[0, 1].any()


# --- signed_edt ----------------------------------------------------------------

def scipy_signed_edt(mask: np.ndarray) -> np.ndarray:
    """The signed distance convention of signed_edt, with scipy.ndimage, one slice."""
    cross = ndi.generate_binary_structure(mask.ndim, 1)
    boundary = mask & ~ndi.binary_erosion(mask, cross, border_value=1)
    if not boundary.any():
        diagonal = np.float32(np.sqrt(sum(float(n) ** 2 for n in mask.shape)))
        return np.full(mask.shape, -diagonal if mask.all() else diagonal, dtype=np.float32)
    distance = ndi.distance_transform_edt(~boundary).astype(np.float32)
    return np.where(mask & ~boundary, -distance, distance)


@st.composite
def blobs(draw):
    """Bool (B, C, *spatial) masks of a few random balls: rows long enough for
    the kernel's vector packs, and now and then empty or full slices."""
    rank = draw(st.integers(1, 3))
    sides = {1: (1, 300), 2: (1, 110), 3: (1, 60)}[rank]
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), *(draw(st.integers(*sides)) for _ in range(rank)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    grid = np.indices(shape[2:])
    x = np.zeros(shape, dtype=bool)
    for index in np.ndindex(shape[:2]):
        kind = rng.integers(0, 6)
        if kind == 0:
            x[index] = rng.random() < 0.5  # empty or full
            continue
        for _ in range(rng.integers(1, 4)):
            centre = rng.uniform(0, shape[2:]).reshape((-1,) + (1,) * rank)
            radius = rng.uniform(0.5, max(1.0, max(shape[2:]) / 3))
            x[index] |= ((grid - centre) ** 2).sum(0) <= radius ** 2
        if kind == 1:
            x[index] = ~x[index]
    return x


@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(x=blobs())
def test_signed_edt_matches_scipy(monkeypatch, device, x):
    from morphaug.transforms._distances import signed_distance

    mask = torch.from_numpy(x).to(on(device, "signed_edt"))
    got = _native.signed_edt(mask)
    assert got.dtype == torch.float32 and torch.equal(mask.cpu(), torch.from_numpy(x))
    got = got.cpu()
    for b, c in np.ndindex(x.shape[:2]):
        expected = scipy_signed_edt(x[b, c])
        assert_parity(got[b, c].numpy(), expected, exact=True, where=f"({b}, {c})")
        assert not (got[b, c] == 0).logical_and(got[b, c].signbit()).any()  # +0 on the boundary
    if device == "emulated":
        return  # the torch backend runs on the CPU there: the cpu case compares it
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")  # its EDT rounds within 1e-6
    torch.testing.assert_close(signed_distance(mask, "euclidean").cpu(), got, rtol=1e-6, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(20, 400), (4, 300, 50), (3, 300, 300)])
def test_signed_edt_far_voxels(device, shape):
    """Axes longer than 128 with voxels far from the boundary: the CPU kernel's
    chunks give up after 64 taps and take the envelope EDT (uint16 and uint32)."""
    x = np.zeros((1, 3) + shape, dtype=bool)
    x[0, 0][(slice(0, 2),) * len(shape)] = True  # a corner object
    x[0, 1][(slice(1, 3),) + tuple(slice(n - 3, n - 1) for n in shape[1:])] = True  # the far corner
    x[0, 2] = ~x[0, 0]
    got = _native.signed_edt(torch.from_numpy(x).to(on(device, "signed_edt"))).cpu()
    for c in range(3):
        assert_parity(got[0, c].numpy(), scipy_signed_edt(x[0, c]), exact=True, where=f"class {c}")


@pytest.mark.parametrize("device", DEVICES)
def test_signed_edt_wide_values(device):
    """Shapes whose squared distances need 32 bits (uint32 lanes on CPU), and the size check."""
    rng = np.random.default_rng(3)
    x = np.zeros((1, 2, 260, 70), dtype=bool)
    x[0, 0, 3:9, 60:64] = True
    x[0, 1] = rng.random((260, 70)) < 0.999
    dev = on(device, "signed_edt")
    got = _native.signed_edt(torch.from_numpy(x).to(dev)).cpu()
    for c in range(2):
        assert_parity(got[0, c].numpy(), scipy_signed_edt(x[0, c]), exact=True)
    fits = _ops.KERNELS["signed_edt"].fits
    assert fits((96, 96, 96)) is None and fits((200, 200, 200)) is None
    assert fits((40000, 40000, 40000)) is not None
    with pytest.raises(RuntimeError, match="too large"):
        _native.signed_edt(torch.zeros(1, 1, 1, 1, 1, dtype=torch.bool, device=dev).expand(1, 1, 40000, 40000, 40000))


@pytest.mark.parametrize("device", DEVICES)
def test_signed_distance_maps_run_on_the_kernel(monkeypatch, device):
    """DistanceMap(signed=True): Euclidean with unit sampling natively, as SciPy; else the EDT path."""
    from morphaug.transforms import DistanceMap

    calls = []
    monkeypatch.setattr(_native, "signed_edt", lambda *args, real=_native.signed_edt: calls.append(1) or real(*args))
    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    labels = torch.from_numpy(np.random.default_rng(4).integers(0, 3, (2, 1, 50, 9, 8))).to(on(device, "signed_edt"))
    out = DistanceMap("label", signed=True, num_classes=3)(labels).cpu()
    assert calls
    for b, c in np.ndindex(2, 3):
        assert_parity(out[b, c].numpy(), scipy_signed_edt(labels[b, 0].cpu().numpy() == c), exact=True)
    calls.clear()
    DistanceMap("label", signed=True, num_classes=3, sampling=(1.0, 2.0, 1.0))(labels)
    DistanceMap("label", signed=True, num_classes=3, metric="taxicab")(labels)
    assert not calls


def test_signed_edt_bad_input():
    with pytest.raises(RuntimeError, match="bool mask"):
        _native.signed_edt(torch.zeros(1, 1, 4, 4))
    with pytest.raises(RuntimeError, match="spatial axis"):
        _native.signed_edt(torch.zeros(1, 1, dtype=torch.bool))


# --- grey_footprint ----------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(case=masks(), dtype=st.sampled_from(FLAT_GREY_DTYPES), dilation=st.booleans(), data=st.data())
def test_grey_footprint_matches_scipy(device, case, dtype, dilation, data):
    x, rng = case
    rank = x.ndim - 2
    shape = [data.draw(st.integers(1, 6)) for _ in range(rank)]  # longer than the axis too
    footprint = rng.random(shape) < data.draw(st.sampled_from([0.3, 0.7]))
    footprint.flat[data.draw(st.integers(0, footprint.size - 1))] = True
    origin = [data.draw(st.integers(-(k // 2), (k - 1) // 2)) for k in shape]
    mode = data.draw(st.sampled_from(MODES))  # SciPy takes one mode for footprints
    values = random_values(rng, x.shape, dtype).to(on(device, "grey_footprint"))
    cval = True if dtype == torch.bool else (7 if not dtype.is_floating_point else -0.25)
    before = values.clone()
    k_origin, k_footprint = erosion_form(dilation, shape, origin, footprint)
    result = _native.grey_footprint(values, k_footprint, k_origin, [mode] * rank, cval, dilation)
    assert torch.equal(values, before)
    assert result.dtype == dtype and result.shape == values.shape and result.is_contiguous()
    reference = ndi.grey_dilation if dilation else ndi.grey_erosion
    source, got = scipy_view(values), scipy_view(result)
    for b, c in np.ndindex(x.shape[:2]):
        expected = reference(source[b, c], footprint=footprint, origin=origin, mode=mode, cval=cval)
        assert_parity(got[b, c], expected, exact=True, where=f"({b}, {c})")


@pytest.mark.parametrize("dilation", [False, True])
def test_grey_footprint_all_true_is_grey_box(dilation):
    """Per-axis modes (which SciPy takes for boxes only) against the box kernel."""
    x = torch.randn(2, 1, 9, 8, 7)
    size, origin, mode = [3, 4, 5], [1, -2, 0], ["wrap", "constant", "mirror"]
    got = _native.grey_footprint(x, np.ones(size, bool), origin, mode, 0.5, dilation)
    assert torch.equal(got, _native.grey_box(x, size, origin, mode, 0.5, dilation))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(1, 2, 40, 150, 30), (2, 1, 70, 300), (1, 1, 5, 6, 7, 8)])
def test_grey_footprint_larger_shapes_match_scipy(device, shape):
    """Several plane blocks and axis-1 tiles per slice, and a 4-D element."""
    rng = np.random.default_rng(sum(shape))
    rank = len(shape) - 2
    footprint = rng.random((5,) * (rank - 1) + (9,)) < 0.5
    footprint[(2,) * rank] = True
    values = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    origin = [1] + [0] * (rank - 1)
    dev = on(device, "grey_footprint")
    for dilation, reference in ((False, ndi.grey_erosion), (True, ndi.grey_dilation)):
        k_origin, k_footprint = erosion_form(dilation, footprint.shape, origin, footprint)
        got = _native.grey_footprint(values.to(dev), k_footprint, k_origin, ["reflect"] * rank, 0.0,
                                     dilation).cpu()
        for b, c in np.ndindex(shape[:2]):
            assert_parity(got[b, c].numpy(), reference(values[b, c].numpy(), footprint=footprint, origin=origin),
                          exact=True)


@pytest.mark.parametrize("device", DEVICES)
def test_grey_footprint_nan_in_a_window_gives_nan(device):
    x = torch.zeros(1, 1, 6, 9, dtype=torch.float64)
    x[0, 0, 2, 4] = float("nan")
    footprint = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)
    got = _native.grey_footprint(x.to(on(device, "grey_footprint")), footprint, [0, 0], ["nearest"] * 2,
                                 0.0, False).cpu()
    expected = torch.from_numpy(ndi.binary_dilation(np.isnan(x[0, 0].numpy()), footprint))
    assert torch.equal(got[0, 0].isnan(), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_grey_erosion_takes_the_footprint_kernel(device, monkeypatch):
    """Shared host footprints run natively; per-sample ones and structures stay on torch."""
    from morphaug.ndimage import grey_dilation, grey_erosion

    calls = []
    kernel = _native.grey_footprint
    monkeypatch.setattr(_native, "grey_footprint", lambda *args, **kw: calls.append(1) or kernel(*args, **kw))
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    x = torch.randn(2, 1, 8, 9).to(on(device, "grey_footprint"))
    footprint = torch.tensor([[0, 1, 1], [1, 1, 0]], dtype=torch.bool)
    native = [grey_erosion(x, footprint=footprint, origin=(0, -1), mode="wrap"),
              grey_dilation(x, footprint=footprint, origin=(-1, 1), mode="constant", cval=0.5)]
    assert len(calls) == 2
    grey_erosion(x, footprint=footprint.expand(2, 2, 3))
    grey_erosion(x, footprint=footprint, structure=torch.ones(2, 3))
    assert len(calls) == 2
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    assert torch.equal(native[0], grey_erosion(x, footprint=footprint, origin=(0, -1), mode="wrap"))
    assert torch.equal(native[1], grey_dilation(x, footprint=footprint, origin=(-1, 1), mode="constant",
                                                cval=0.5))


# --- grey_structure ----------------------------------------------------------

def structure_values(rng, shape):
    """Random non-flat structure values: fractional, negative, zero, in [-5, 5]."""
    values = np.round(rng.uniform(-5, 5, shape), 2)
    values[rng.random(shape) < 0.3] = 0.0
    return values


@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(case=masks(), dtype=st.sampled_from(GREY_DTYPES + [torch.int8, torch.int32]),
       dilation=st.booleans(), with_footprint=st.booleans(), data=st.data())
def test_grey_structure_matches_torch_backend_and_scipy(device, monkeypatch, case, dtype, dilation,
                                                        with_footprint, data):
    from morphaug.ndimage import grey_dilation, grey_erosion

    x, rng = case
    rank = x.ndim - 2
    shape = [data.draw(st.integers(1, 5)) for _ in range(rank)]  # longer than the axis too
    structure = structure_values(rng, shape)
    if dtype == torch.bool:
        structure /= 6  # |s| < 1 keeps every result a bool (else SciPy stores other bytes)
    footprint = None
    if with_footprint:
        footprint = rng.random(shape) < 0.6
        footprint.flat[data.draw(st.integers(0, footprint.size - 1))] = True
    origin = [data.draw(st.integers(-(k // 2), (k - 1) // 2)) for k in shape]
    mode = data.draw(st.sampled_from(MODES))  # SciPy takes one mode for structures
    values = random_values(rng, x.shape, dtype)
    if not dtype.is_floating_point and dtype != torch.bool:
        values += 10  # x -/+ structure stays in every integer range (SciPy would wrap)
    cval = True if dtype == torch.bool else (7 if not dtype.is_floating_point else -0.25)
    on_device = values.to(on(device, "grey_structure"))
    k_origin, k_structure, k_footprint = erosion_form(dilation, shape, origin, structure, footprint)
    result = _native.grey_structure(on_device, k_structure, k_footprint, k_origin, [mode] * rank, cval,
                                    dilation)
    assert torch.equal(on_device.cpu(), values)
    assert result.dtype == dtype and result.shape == values.shape and result.is_contiguous()
    result = result.cpu()
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")  # on the CPU: the reference arithmetic
    public = grey_dilation if dilation else grey_erosion
    expected = public(values, structure=structure, footprint=footprint, origin=origin, mode=mode,
                      cval=cval)
    assert torch.equal(result, expected)
    if dtype in (torch.float16, torch.bfloat16):
        return  # SciPy has no half arithmetic
    reference = ndi.grey_dilation if dilation else ndi.grey_erosion
    source, got = values.numpy(), result.numpy()
    for b, c in np.ndindex(x.shape[:2]):
        expected = reference(source[b, c], structure=structure, footprint=footprint, origin=origin,
                             mode=mode, cval=cval)
        assert_parity(got[b, c], expected, exact=True, where=f"({b}, {c})")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(1, 2, 40, 50, 30), (2, 1, 70, 300), (1, 1, 5, 6, 7, 8)])
def test_grey_structure_larger_shapes_match_scipy(device, shape):
    rng = np.random.default_rng(sum(shape))
    rank = len(shape) - 2
    structure = structure_values(rng, (3,) * (rank - 1) + (7,))
    values = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    origin = [1] + [0] * (rank - 1)
    dev = on(device, "grey_structure")
    for dilation, reference in ((False, ndi.grey_erosion), (True, ndi.grey_dilation)):
        k_origin, k_structure = erosion_form(dilation, structure.shape, origin, structure)
        got = _native.grey_structure(values.to(dev), k_structure, None, k_origin, ["mirror"] * rank, 0.0,
                                     dilation).cpu()
        for b, c in np.ndindex(shape[:2]):
            expected = reference(values[b, c].numpy(), structure=structure, origin=origin, mode="mirror")
            assert_parity(got[b, c], expected, exact=True)


@pytest.mark.parametrize("device", DEVICES)
def test_grey_structure_saturates_integers_and_gives_nan_for_nan(device, monkeypatch):
    from morphaug.ndimage import grey_dilation, grey_erosion

    dev = on(device, "grey_structure")
    x = torch.tensor([[[0, 100, 255]]], dtype=torch.uint8, device=dev)
    structure = np.array([-300.5, 0.0, 300.5])
    assert _native.grey_structure(x, structure, None, [0], ["nearest"], 0, False).tolist() == [[[0, 0, 0]]]
    assert _native.grey_structure(x, structure, None, [0], ["nearest"], 0, True).tolist() == [[[255] * 3]]
    wide = torch.arange(-60, 60, dtype=torch.int8).reshape(1, 1, -1)
    eroded = _native.grey_structure(wide.to(dev), structure / 3, None, [1], ["wrap"], 0, False).cpu()
    dilated = _native.grey_structure(wide.to(dev), structure[::-1] / 3, None, [-1], ["wrap"], 0, True).cpu()
    assert eroded.min() == -128 and dilated.max() == 127
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    assert torch.equal(eroded, grey_erosion(wide, structure=structure / 3, origin=1, mode="wrap"))
    assert torch.equal(dilated, grey_dilation(wide, structure=structure / 3, origin=1, mode="wrap"))
    y = torch.zeros(1, 1, 7, dtype=torch.float64)
    y[0, 0, 3] = float("nan")
    got = _native.grey_structure(y.to(dev), np.array([1.0, -2.0, 0.5]), None, [0], ["reflect"], 0.0, False)
    assert got[0, 0].isnan().tolist() == [False, False, True, True, True, False, False]


@pytest.mark.parametrize("name", ["grey_opening", "morphological_gradient"])
def test_compound_ops_with_structure_run_natively(monkeypatch, name):
    import morphaug.ndimage as mnd

    calls = []
    kernel = _native.grey_structure
    monkeypatch.setattr(_native, "grey_structure", lambda *args, **kw: calls.append(1) or kernel(*args, **kw))
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 1, 9, 8, 7))
    structure = structure_values(rng, (3, 2, 3))
    got = getattr(mnd, name)(torch.from_numpy(x), structure=structure, mode="wrap", origin=(0, -1, 1))
    assert len(calls) == 2
    for b in range(2):
        expected = getattr(ndi, name)(x[b, 0], structure=structure, mode="wrap", origin=(0, -1, 1))
        assert_parity(got[b, 0].numpy(), expected, exact=True)


@pytest.mark.parametrize("device", DEVICES)
def test_grey_erosion_takes_the_structure_kernel(device, monkeypatch):
    """Shared host structures (with a shared host footprint or none) run natively; per-sample
    ones, and on an accelerator ones given there (never read back), stay on torch."""
    from morphaug.ndimage import grey_dilation, grey_erosion

    calls = []
    kernel = _native.grey_structure
    monkeypatch.setattr(_native, "grey_structure", lambda *args, **kw: calls.append(1) or kernel(*args, **kw))
    monkeypatch.setenv("MORPHAUG_BACKEND", "auto")
    dev = on(device, "grey_structure")
    x = torch.randn(2, 1, 8, 9).to(dev)
    footprint = torch.tensor([[0, 1, 1], [1, 1, 0]], dtype=torch.bool)
    structure = torch.tensor([[0.5, -1.0, 2.0], [0.0, 1.5, -0.25]], dtype=torch.float64)
    native = [grey_erosion(x, structure=structure, origin=(0, -1), mode="wrap"),
              grey_dilation(x, footprint=footprint, structure=structure, origin=(-1, 1), mode="constant",
                            cval=0.5)]
    assert len(calls) == 2
    grey_erosion(x, structure=structure.expand(2, 2, 3))
    grey_erosion(x, footprint=footprint.expand(2, 2, 3), structure=structure)
    if dev.type != "cpu":
        grey_erosion(x, structure=structure.to(dev))
    assert len(calls) == 2
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    assert torch.equal(native[0], grey_erosion(x, structure=structure, origin=(0, -1), mode="wrap"))
    assert torch.equal(native[1], grey_dilation(x, footprint=footprint, structure=structure, origin=(-1, 1),
                                                mode="constant", cval=0.5))


# --- label -------------------------------------------------------------------

def centrosymmetric(rng, rank: int) -> np.ndarray:
    """A random centrosymmetric (3,) * rank structure."""
    flags = rng.random((3,) * rank) < 0.5
    return flags | flags[(slice(None, None, -1),) * rank]


def label_structure(rng, rank: int, connectivity: int) -> np.ndarray:
    """generate_binary_structure(rank, connectivity), or a random centrosymmetric structure beyond rank."""
    if connectivity <= rank:
        return ndi.generate_binary_structure(rank, connectivity)
    return centrosymmetric(rng, rank)


def without_row_link(structure) -> np.ndarray:
    """``structure`` less its neighbours along the last axis: the CPU kernel's voxel scan."""
    flags = np.array(structure, bool)
    centre = (1,) * (flags.ndim - 1)
    flags[centre + (0,)] = flags[centre + (2,)] = False
    return flags


def diagonal_rows(rank: int) -> np.ndarray:
    """The full structure less the voxels straight across on the other rows: runs meet
    the earlier rows only through steps of -1 and +1 along them."""
    flags = np.ones((3,) * rank, bool)
    flags[..., 1] = False
    flags[(1,) * rank] = True
    return flags


def label_structures(rank: int) -> list[np.ndarray]:
    """Every connectivity, each also without the link along the rows, and diagonal_rows."""
    structures = [ndi.generate_binary_structure(rank, c) for c in range(1, rank + 1)]
    return structures + [without_row_link(s) for s in structures] + [diagonal_rows(rank)]


RUN_PATTERNS = ["full", "rows", "columns", "checkerboard", "random"]


def run_pattern(name: str, shape, rng) -> np.ndarray:
    """A bool (B, C, *spatial) mask: all foreground, every other row full, runs of one voxel
    (every other column, or a checkerboard, shifted by one from row to row) or random; with
    several slices, the last keeps about 80% of it at random."""
    spatial = shape[2:]
    coords = np.indices(spatial)
    pattern = {
        "full": lambda: np.ones(spatial, bool),
        "rows": lambda: coords[:-1].sum(0) % 2 == 0,
        "columns": lambda: coords[-1] % 2 == 0,
        "checkerboard": lambda: coords.sum(0) % 2 == 0,
        "random": lambda: rng.random(spatial) < 0.6,
    }[name]()
    x = np.broadcast_to(pattern, shape).copy()
    if shape[0] * shape[1] > 1:
        x[-1, -1] &= rng.random(spatial) < 0.8
    return x


@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(case=masks(), connectivity=st.integers(1, 5), dtype=st.sampled_from([torch.int32, torch.int64]))
def test_label_matches_scipy(device, case, connectivity, dtype):
    x, rng = case
    structure = label_structure(rng, x.ndim - 2, connectivity)
    mask = torch.from_numpy(x).to(on(device, "label"))
    before = mask.clone()
    labels, counts = _native.label(mask, structure, dtype)
    assert torch.equal(mask, before)
    assert labels.dtype == dtype and counts.dtype == torch.int64 and counts.shape == x.shape[:2]
    assert_parity((labels, counts), lambda b, c: ndi.label(x[b, c], structure), exact=True)


@pytest.mark.parametrize("pattern", RUN_PATTERNS)
@pytest.mark.parametrize("shape", [(1, 1, 300, 250), (1, 2, 64, 64, 64), (1, 1, 200000), (3, 1, 120, 130, 7),
                                   (1, 1, 33, 41, 50), (1, 1, 3, 300, 220)])
def test_label_chunks_of_a_slice_merge(shape, pattern):
    """More threads than slices: the CPU kernel cuts each slice into chunks (of at least 2**15
    voxels; whole rows, and one chunk per line of one spatial axis, for the run scan) and
    merges them; components run across the chunks, chunks end inside a plane, and with
    3x300x220 a plane spans two chunks (rows link to rows two chunks back)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(8)
    try:
        rng = np.random.default_rng(len(shape))
        for structure in label_structures(len(shape) - 2):
            x = run_pattern(pattern, shape, rng)
            assert_parity(_native.label(torch.from_numpy(x), structure), lambda b, c: ndi.label(x[b, c], structure),
                          exact=True)
    finally:
        torch.set_num_threads(threads)


def test_label_spiral_across_chunks():
    """A corridor of width 1 winding through both chunks of a slice, back and forth."""
    threads = torch.get_num_threads()
    torch.set_num_threads(8)
    try:
        corridor = spiral(301)
        x = np.stack([corridor, corridor.T])[:, None]
        for structure in label_structures(2):
            assert_parity(_native.label(torch.from_numpy(x), structure), lambda b, c: ndi.label(x[b, c], structure),
                          exact=True)
        assert (_native.label(torch.from_numpy(x), ndi.generate_binary_structure(2, 1))[1] == 1).all()
    finally:
        torch.set_num_threads(threads)


# --- torch.library checks ----------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    mask = torch.from_numpy(np.random.default_rng(3).random((2, 1, 5, 4)) < 0.7).to(on(device, "edt"))
    ops = _ops.ops_for(mask)
    key = mask.device.type.upper()

    def has(op):
        return torch._C._dispatch_has_kernel_for_dispatch_key(f"{ops.name}::{op}", key)

    torch.library.opcheck(ops.edt.default, (mask, [1.0, 0.5], True, torch.float32, False))
    torch.library.opcheck(ops.edt.default, (mask, None, False, torch.float64, True))
    torch.library.opcheck(ops.cdt.default, (mask, [1] * 9, True))
    torch.library.opcheck(ops.cdt.default, (mask, [0, 1, 0, 1, 1, 1, 0, 1, 0], False))
    values = torch.randn(2, 1, 5, 4, device=mask.device)
    torch.library.opcheck(ops.grey_box.default, (values, [3, 2], [0, -1], [0, 4], 0.5, False))
    torch.library.opcheck(ops.grey_box.default, (values.to(torch.int32), [3, 2], [1, 0], [1, 3], 2, True))
    if has("grey_footprint"):
        flags = [0, 1, 1, 1, 1, 0]
        torch.library.opcheck(ops.grey_footprint.default, (values, [3, 2], flags, [0, -1], [0, 4], 0.5, False))
        torch.library.opcheck(ops.grey_footprint.default,
                              (values.to(torch.int32), [2, 3], flags, [0, 1], [2, 3], 2, True))
    if has("grey_structure"):
        weights = [0.5, -1.0, 0.0, 2.0, 1.25, -0.5]
        torch.library.opcheck(ops.grey_structure.default,
                              (values, [3, 2], weights, [0, 1, 1, 1, 1, 0], [0, -1], [0, 4], 0.5, False))
        torch.library.opcheck(ops.grey_structure.default,
                              (values.to(torch.int32), [2, 3], weights, [1] * 6, [0, 1], [2, 3], 2, True))
    torch.library.opcheck(ops.edt.out, (mask, [1.0, 0.5], False), {"out": torch.empty_like(values)})
    torch.library.opcheck(ops.edt.out, (mask, None, True), {"out": torch.empty_like(values, dtype=torch.float64)})
    out = {"out": torch.empty_like(values)}
    torch.library.opcheck(ops.grey_box.out, (values, [3, 2], [0, -1], [0, 4], 0.5, False), out)
    if has("grey_footprint.out"):
        torch.library.opcheck(ops.grey_footprint.out, (values, [3, 2], flags, [0, -1], [0, 4], 0.5, True), out)
    if has("grey_structure.out"):
        torch.library.opcheck(ops.grey_structure.out,
                              (values, [3, 2], weights, [1] * 6, [0, -1], [0, 4], 0.5, True), out)
    if has("propagate"):
        weights = torch.ones(2, 1, 5, dtype=torch.bool, device=mask.device)
        offsets = [0, -1, -1, 0, 0, 0, 1, 0, 0, 1]
        torch.library.opcheck(ops.propagate.default, (mask & (values > 1), mask, weights, offsets, True))
        torch.library.opcheck(ops.propagate.default, (mask & (values > 1), None, weights, offsets, False))
        torch.library.opcheck(ops.fill_holes.default, (mask, weights, offsets))
    if has("label"):
        torch.library.opcheck(ops.label.default, (mask, [1] * 9, torch.int32))
        torch.library.opcheck(ops.label.default, (mask, [0, 1, 0, 1, 0, 1, 0, 1, 0], torch.int64))
    if has("ball_morphology"):
        lead = dict(dtype=torch.long, device=mask.device)
        ball = (mask, torch.tensor([[2], [0]], **lead), torch.tensor([[0], [2]], **lead),
                torch.tensor([[True], [False]], device=mask.device))
        torch.library.opcheck(ops.ball_morphology.default, ball)
        torch.library.opcheck(ops.ball_morphology.out, ball, {"out": torch.empty_like(mask)})


# --- bad inputs --------------------------------------------------------------

MASK = torch.zeros(1, 1, 4, 4, dtype=torch.bool)


@pytest.mark.parametrize("call, message", [
    (lambda: _native.edt(MASK.float()), "expected a bool mask"),
    (lambda: _native.edt(MASK[0, 0]), "at least one spatial axis"),
    (lambda: _native.edt(MASK, [1.0]), r"sampling needs one value per spatial axis \(2\), got 1"),
    (lambda: _native.edt(MASK, [1.0, 0.0]), "sampling must be positive and finite, got 0"),
    (lambda: _native.edt(MASK, None, False, torch.int32), "float32 or float64, got Int"),
    (lambda: _native.edt(torch.zeros((1, 1) + (1,) * 17, dtype=torch.bool)), "at most 16 spatial axes"),
    (lambda: _ops.ops_for(MASK).cdt(MASK, [1] * 8, False), "must hold the 9 flags"),
    (lambda: _ops.ops_for(MASK).cdt(MASK, [2] * 9, False), "flags must be 0 or 1, got 2"),
    (lambda: _native.cdt(torch.zeros((1, 1) + (1,) * 7, dtype=torch.bool), chamfer("taxicab", 7)),
     "at most 6 spatial axes"),
    (lambda: _native.cdt(MASK.int(), chamfer("taxicab", 2)), "expected a bool mask"),
    (lambda: _native.grey_box(MASK.float(), [3, 3], [2, 0], MODES[:2], 0.0, False),
     "origin 2 is out of range for size 3"),
    (lambda: _native.grey_box(MASK.float(), [0, 3], [0, 0], MODES[:2], 0.0, False), "size must be >= 1"),
    (lambda: _ops.ops_for(MASK).grey_box(MASK.float(), [3, 3], [0, 0], [0, 9], 0.0, False), "mode code 9"),
    (lambda: _native.grey_box(MASK.float(), [3], [0], MODES[:1], 0.0, False),
     r"one value per spatial axis \(2\)"),
    (lambda: _native.grey_box(MASK.to(torch.complex64), [3, 3], [0, 0], MODES[:2], 0.0, False),
     "expected a real tensor"),
    (lambda: _native.grey_box(MASK.to(torch.uint8), [3, 3], [0, 0], MODES[:2], -1, False),
     "cval -1 is out of range"),
    (lambda: _native.grey_footprint(MASK.float(), np.zeros((3, 3), bool), [0, 0], MODES[:2], 0.0, False),
     "footprint must have at least one true element"),
    (lambda: _ops.ops_for(MASK).grey_footprint(MASK.float(), [2, 2], [1] * 3, [0, 0], [0, 0], 0.0, False),
     "footprint must hold the 4 flags"),
    (lambda: _ops.ops_for(MASK).grey_footprint(MASK.float(), [1, 2], [1, 2], [0, 0], [0, 0], 0.0, False),
     "flags must be 0 or 1, got 2"),
    (lambda: _native.grey_footprint(MASK.float(), np.ones((3, 1), bool), [0, 1], MODES[:2], 0.0, False),
     "origin 1 is out of range for extent 1"),
    (lambda: _native.grey_footprint(MASK.float(), np.ones(3, bool), [0], MODES[:1], 0.0, False),
     r"one value per spatial axis \(2\)"),
    (lambda: _native.grey_footprint(MASK.to(torch.uint8), np.ones((2, 2), bool), [0, 0], MODES[:2], -1, True),
     "grey_footprint: cval -1 is out of range"),
    (lambda: _native.grey_structure(MASK.float(), np.ones((3, 3)), np.zeros((3, 3)), [0, 0], MODES[:2], 0.0,
                                    False), "grey_structure: footprint must have at least one true element"),
    (lambda: _ops.ops_for(MASK).grey_structure(MASK.float(), [2, 2], [0.0] * 3, [1] * 4, [0, 0], [0, 0], 0.0, False),
     "structure must hold the 4 values"),
    (lambda: _ops.ops_for(MASK).grey_structure(MASK.float(), [2, 2], [0.0] * 4, [1] * 3, [0, 0], [0, 0], 0.0, False),
     "footprint must hold the 4 flags"),
    (lambda: _native.grey_structure(MASK.float(), np.ones((3, 1)), None, [0, 1], MODES[:2], 0.0, False),
     "grey_structure: origin 1 is out of range for extent 1"),
    (lambda: _native.grey_structure(MASK.float(), np.ones(3), None, [0], MODES[:1], 0.0, False),
     r"grey_structure: shape, origin and mode need one value per spatial axis \(2\)"),
    (lambda: _native.grey_structure(MASK.to(torch.complex64), np.ones((2, 2)), None, [0, 0], MODES[:2], 0.0,
                                    False), "grey_structure: expected a real tensor"),
    (lambda: _native.grey_structure(MASK.to(torch.uint8), np.ones((2, 2)), None, [0, 0], MODES[:2], -1, True),
     "grey_structure: cval -1 is out of range"),
    (lambda: _native.propagate(MASK, MASK[0], torch.ones(1, 1, 1, dtype=torch.bool), [(0, 0)], 0),
     "mask must be a bool tensor of the input's shape"),
    (lambda: _native.propagate(MASK, None, torch.ones(1, 1, 2, dtype=torch.bool), [(0, 0)], 0),
     r"weights must be a bool \(B, C, offsets\) tensor of shape \(1, 1, 1\)"),
    (lambda: _ops.ops_for(MASK).fill_holes(MASK, torch.ones(1, 1, 1, dtype=torch.bool), [0, 0, 0]),
     "offsets must hold 2 values per element offset"),
    (lambda: _native.fill_holes(MASK.float(), torch.ones(1, 1, 1, dtype=torch.bool), [(0, 0)]),
     "expected a bool mask"),
    (lambda: _ops.ops_for(MASK).label(MASK, [1] * 8, torch.int32), "structure must hold the 9 flags"),
    (lambda: _ops.ops_for(MASK).label(MASK, [2] * 9, torch.int32), "structure flags must be 0 or 1, got 2"),
    (lambda: _ops.ops_for(MASK).label(MASK, [1, 1] + [0] * 7, torch.int32),
     "structure must be centrosymmetric, but positions 0 and 8 differ"),
    (lambda: _native.label(MASK, np.ones((3, 3)), torch.float32), "labels dtype must be int32 or int64"),
    (lambda: _native.label(MASK.float(), np.ones((3, 3))), "expected a bool mask"),
    (lambda: _native.label(torch.zeros((1, 1) + (1,) * 9, dtype=torch.bool), np.ones((3,) * 9)),
     "at most 8 spatial axes"),
    (lambda: _native.ball_morphology(MASK, torch.full((1, 1), 128), torch.zeros(1, 1, dtype=torch.long),
                                     torch.zeros(1, 1, dtype=torch.bool)), r"radius must be in \[0, 127\], got 128"),
    (lambda: _native.ball_morphology(MASK, torch.ones(1, 1, dtype=torch.long), torch.full((1, 1), 3),
                                     torch.zeros(1, 1, dtype=torch.bool)), "metric codes are 0"),
    (lambda: _native.ball_morphology(MASK, torch.ones(1, 2, dtype=torch.long), torch.zeros(1, 2, dtype=torch.long),
                                     torch.zeros(1, 2, dtype=torch.bool)), r"must have shape \(1, 1\)"),
    (lambda: _native.ball_morphology(MASK.float(), torch.ones(1, 1, dtype=torch.long),
                                     torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1, dtype=torch.bool)),
     "expected a bool mask"),
])
@pytest.mark.parametrize("device", ["cpu", "emulated"])
def test_bad_inputs_raise_from_the_kernels(device, call, message):
    if device == "emulated" and "radius must be in" in message:
        pytest.skip("the CUDA launcher takes any radius")
    with pytest.raises(RuntimeError, match=message):
        call()


def test_bad_python_arguments():
    with pytest.raises(ValueError, match="mode must be one of"):
        _native.grey_box(MASK.float(), [3, 3], [0, 0], ["reflect", "grid-wrap"], 0.0, False)


# --- backend selection -------------------------------------------------------

def test_use_native_honours_the_environment(monkeypatch):
    x = torch.zeros(1, 1, 4, 4)
    monkeypatch.delenv("MORPHAUG_BACKEND", raising=False)
    for kernel in ("edt", "cdt", "label", "grey_box", "grey_footprint", "propagate", "fill_holes", "ball_morphology"):
        assert _ops.use_native(kernel, x.bool())
    assert not _ops.use_native("grey_box", x.to(torch.complex64))  # not a dtype it takes
    assert not _ops.use_native("cdt", torch.zeros((1, 1) + (2,) * 7))  # 7 axes: at most 6
    meta = torch.zeros(1, 1, 4, 4, device="meta")
    assert not _ops.use_native("edt", meta)
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    assert not _ops.use_native("edt", x)
    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    assert _ops.use_native("grey_box", x)
    with pytest.raises(RuntimeError, match="distance_transform_edt on a meta .* no 'edt' kernel for meta tensors"):
        _ops.use_native("edt", meta, "distance_transform_edt")
    monkeypatch.setenv("MORPHAUG_BACKEND", "fastest")
    with pytest.raises(ValueError, match="MORPHAUG_BACKEND must be one of"):
        _ops.use_native("edt", x)


def test_use_native_without_the_extension(monkeypatch):
    from morphaug._ops import _library

    monkeypatch.setattr(_library, "load_native", lambda emulate=None: (None, "morphaug._C is not importable (test)"))
    x = torch.zeros(1, 1, 4, 4)
    monkeypatch.delenv("MORPHAUG_BACKEND", raising=False)
    assert not _ops.use_native("edt", x)
    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    with pytest.raises(RuntimeError, match=r"cannot run natively: morphaug._C is not importable \(test\)"):
        _ops.use_native("edt", x)
    info = _ops.backend_info(verbose=False)
    assert info["native_built"] is False and "test" in info["native_error"]
    assert info["kernels"]["grey_box"]["cpu"] == "unavailable (native forced)"


def test_a_library_built_before_a_kernel_existed_loads(monkeypatch):
    """A morphaug._C built from older sources lacks a newer kernel's op: registering the fakes
    skips it (import morphaug used to fail there) and its calls fall through."""
    import dataclasses

    from morphaug._ops import _contracts, _fakes, kernels

    added = dataclasses.replace(_contracts.KERNELS["label"], name="kernel_of_newer_sources")
    monkeypatch.setitem(_contracts.KERNELS, added.name, added)
    monkeypatch.setattr(_fakes, added.name, _fakes.label, raising=False)
    monkeypatch.setattr(kernels, added.name, kernels.label, raising=False)
    _contracts._register_fakes("morphaug")
    assert "no 'kernel_of_newer_sources' kernel for cpu" in _contracts.why_not(added.name, "cpu")


def test_backend_info(capsys, monkeypatch):
    monkeypatch.delenv("MORPHAUG_BACKEND", raising=False)
    info = _ops.backend_info()
    printed = capsys.readouterr().out
    assert "morphaug native kernels (morphaug._C): built for cpu" in printed
    assert info["native_built"] and "cpu" in info["native_devices"] and info["native_error"] is None
    assert info["torch"] == torch.__version__ and info["requested"] == "auto"
    assert info["kernels"]["edt"]["cpu"] == "native"
    assert set(info["kernels"]) == set(_ops.KERNELS)
    assert info["kernels"]["sinkhorn_scaling"]["cuda"] == "torch"  # CPU only: the reason is given
    assert "no 'sinkhorn_scaling' kernel for cuda" in info["kernels"]["sinkhorn_scaling"]["cuda_why"]
