"""Binary morphology against SciPy, slice by slice, exactly.

References are SciPy's own functions on every ``(b, c)`` slice. For
``iterations != 1`` they use ``brute_force=True`` (SciPy's default fast path
disagrees with its definition for ``origin != 0``, and can crash there); for
``iterations < 1`` the reference repeats SciPy's single step until it stops
changing, so that an element whose repetition cycles (where SciPy would loop
forever) is detected instead of hanging the test.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import Dispatched, assert_parity, each_slice, slice_element, to_numpy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from morphaug import _ops
from morphaug.ndimage import (
    binary_closing,
    binary_dilation,
    binary_erosion,
    binary_fill_holes,
    binary_hit_or_miss,
    binary_opening,
    binary_propagation,
    generate_binary_structure,
)
from morphaug.ndimage._binary_backends import binary_erosion_worker as _binary_erosion
from morphaug.ndimage._elements import Element

# Every test runs on the torch backend and on the automatic (native where built) choice.
pytestmark = pytest.mark.usefixtures("backend")

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
MAX_SIZE = {1: 40, 2: 12, 3: 6, 4: 4}
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]


class Cycle(Exception):
    """The repeated SciPy step returned to an earlier state without settling."""


def repeated(function, array, iterations, **kwargs):
    """SciPy's ``function`` repeated ``iterations`` times, or until it settles if < 1."""
    if iterations >= 1:
        return function(array, iterations=iterations, brute_force=True, **kwargs)
    state, seen = array != 0, set()
    while True:
        following = function(state, **kwargs)
        if np.array_equal(following, state):
            return following
        if following.tobytes() in seen:
            raise Cycle
        seen.add(following.tobytes())
        state = following


def compare(ours, x, reference, extra):
    """``ours()`` against ``reference(x[b, c], **extra(b, c))`` on every slice, exactly, as bool;
    when some slice's reference cycles, ``ours()`` must raise instead."""
    reference = each_slice(reference, x, extra)
    try:
        expected = {(b, c): reference(b, c) for b, c in np.ndindex(x.shape[:2])}
    except Cycle:
        with pytest.raises(RuntimeError, match="cycles"):
            ours()
        return
    result = ours()
    assert result.shape == x.shape
    assert_parity(result, lambda b, c: expected[b, c], exact=True, dtype=torch.bool)


def effective_lengths(k, axes, rank):
    """Element length along the axis each origin entry applies to, as SciPy pairs them.

    The element's dimensions follow the filtered axes in increasing order;
    ``origin[i]`` belongs to ``axes[i]`` when ``axes`` is a strict subset.
    """
    if axes is None or len(axes) == rank:
        return k
    order = sorted(a % rank for a in axes)
    return tuple(k[order.index(a % rank)] for a in axes)


def scipy_dilation_centre(k, axes, rank):
    """The element voxel that a dilation with origin 0 reads at the voxel itself, as SciPy pairs
    them: its even-length shift ``-(k even)`` takes ``k`` by position in ``axes`` (not by axis), so
    with permuted axes of lengths of both parities it is not ``k // 2`` (clipped into the element:
    outside it, ``reflected_origin_fits`` rules the case out)."""
    order = list(range(rank)) if axes is None else sorted(a % rank for a in axes)
    given = order if axes is None else [a % rank for a in axes]
    centre = []
    for j, axis in enumerate(order):
        by_position = k[given.index(axis)]
        centre.append(min(max(k[j] - 1 - k[j] // 2 + (by_position % 2 == 0), 0), k[j] - 1))
    return tuple(centre)


def reflected_origin_fits(case):
    """Whether SciPy's dilation origin ``-o - (k even)`` (``k`` paired by position,
    not by axis) stays inside the element; outside, SciPy's behaviour is
    undefined (it can crash) and morphaug raises."""
    k, origin = case["k"], case["origin"]
    origin = [origin] * len(k) if np.isscalar(origin) else origin
    lengths = effective_lengths(k, case["axes"], case["rank"])
    return all(-(n // 2) <= -o - (1 - m % 2) <= (n - 1) // 2
               for o, m, n in zip(origin, k, lengths))


@st.composite
def cases(draw, centred=False):
    """A random batched problem: input, axes, structure, origin, mask, options."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rank = draw(st.integers(1, 4))
    spatial = tuple(draw(st.integers(1, MAX_SIZE[rank])) for _ in range(rank))
    batch, channels = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    axes = draw(st.one_of(st.none(), st.permutations(range(rank)).flatmap(
        lambda order: st.integers(1, rank).map(lambda n: tuple(order[:n])))))
    if axes is not None and draw(st.booleans()):
        axes = tuple(a - rank for a in axes)  # negative axes
    n_axes = rank if axes is None else len(axes)

    dtype = draw(st.sampled_from(DTYPES))
    shape = (batch, channels) + spatial
    x = torch.from_numpy((rng.random(shape) < rng.random()) * rng.choice([1, 2, -3], shape))
    if dtype.is_floating_point and dtype != torch.float16:
        x = torch.where(torch.from_numpy(rng.random(x.shape) < 0.05), float("nan"), x.double())
    x = x.to(dtype)

    kind = draw(st.sampled_from(["default", "generated", "random", "symmetric"]))
    lead = draw(st.sampled_from([(), (batch,), (batch, channels)]))  # shared or per sample
    max_k = 4 if n_axes <= 2 else 3
    k = tuple(draw(st.integers(1, max_k)) for _ in range(n_axes))
    if kind == "default":
        structure, k = None, (3,) * n_axes
    elif kind == "generated":
        k = (3,) * n_axes
        structure = generate_binary_structure(n_axes, draw(st.integers(1, n_axes)))
    elif kind == "random":
        structure = rng.random(lead + k) < rng.uniform(0.3, 1.0)
    else:  # symmetric about a true centre, per sample: labelled as connected components
        k = tuple(n | 1 for n in k)
        structure = rng.random(lead + k) < rng.uniform(0.2, 0.8)
        structure |= np.flip(structure, tuple(range(len(lead), len(lead) + n_axes)))
        structure[(...,) + tuple(n // 2 for n in k)] = True
    origin = [draw(st.integers(-(n // 2), (n - 1) // 2)) for n in effective_lengths(k, axes, rank)]
    if kind == "symmetric" and draw(st.booleans()):
        origin = [0] * n_axes
    if centred:  # origin 0 and a true centre: repetitions are monotone and settle
        origin = [0] * n_axes
        if structure is not None:
            structure[(...,) + tuple(n // 2 for n in k)] = True
            structure[(...,) + scipy_dilation_centre(k, axes, rank)] = True
    if isinstance(structure, np.ndarray):
        form = draw(st.sampled_from(["numpy", "bool", "uint8", "float"]))
        if form != "numpy":
            dtype = {"bool": torch.bool, "uint8": torch.uint8, "float": torch.float32}[form]
            structure = torch.from_numpy(structure).to(dtype)
    if draw(st.booleans()) and len(set(origin)) == 1:
        origin = origin[0]  # scalar origin

    mask_kind = draw(st.sampled_from([None, "full", "spatial"]))
    mask = None
    if mask_kind is not None:
        mask = torch.from_numpy(rng.random(shape if mask_kind == "full" else spatial) < 0.8)
        mask = mask.to(draw(st.sampled_from([torch.bool, torch.float32])))
    return dict(x=x, axes=axes, n_axes=n_axes, rank=rank, k=k, structure=structure, origin=origin,
                mask=mask,
                iterations=draw(st.sampled_from([1, 1, 2, 3, 6, 0, -1])),
                border_value=draw(st.sampled_from([0, 1])))


def per_slice(case):
    def kwargs(b, c):
        mask = case["mask"]
        if mask is not None:
            mask = to_numpy(mask if mask.ndim == case["x"].ndim - 2 else mask[b, c])
        return {"structure": slice_element(case["structure"], b, c, case["n_axes"]),
                "mask": mask, "origin": case["origin"], "axes": case["axes"],
                "border_value": case["border_value"]}
    return kwargs


def call(function, case, device, **extra):
    mask = None if case["mask"] is None else case["mask"].to(device)
    structure = case["structure"]
    if isinstance(structure, torch.Tensor):
        structure = structure.to(device)
    return lambda: function(case["x"].to(device), structure, iterations=case["iterations"],
                            mask=mask, border_value=case["border_value"], origin=case["origin"],
                            axes=case["axes"], **extra)


# --------------------------------------------------------------------------- parity


@SETTINGS
@given(case=cases(), brute_force=st.booleans())
def test_erosion_matches_scipy(device, case, brute_force):
    compare(call(binary_erosion, case, device, brute_force=brute_force), case["x"],
            lambda a, **kw: repeated(ndi.binary_erosion, a, case["iterations"], **kw),
            per_slice(case))


@SETTINGS
@given(case=cases(), brute_force=st.booleans())
def test_dilation_matches_scipy(device, case, brute_force):
    assume(reflected_origin_fits(case))
    compare(call(binary_dilation, case, device, brute_force=brute_force), case["x"],
            lambda a, **kw: repeated(ndi.binary_dilation, a, case["iterations"], **kw),
            per_slice(case))


@SETTINGS
@given(case=cases())
def test_opening_matches_scipy(device, case):
    assume(reflected_origin_fits(case))

    def reference(a, **kw):
        eroded = repeated(ndi.binary_erosion, a, case["iterations"], **kw)
        return repeated(ndi.binary_dilation, eroded, case["iterations"], **kw)

    compare(call(binary_opening, case, device), case["x"], reference, per_slice(case))


@SETTINGS
@given(case=cases())
def test_closing_matches_scipy(device, case):
    assume(reflected_origin_fits(case))

    def reference(a, **kw):
        dilated = repeated(ndi.binary_dilation, a, case["iterations"], **kw)
        return repeated(ndi.binary_erosion, dilated, case["iterations"], **kw)

    compare(call(binary_closing, case, device), case["x"], reference, per_slice(case))


@SETTINGS
@given(case=cases(), data=st.data())
def test_hit_or_miss_matches_scipy(device, case, data):
    x, n_axes = case["x"], case["n_axes"]
    structure1 = case["structure"]
    k1 = case["k"]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    origin2, structure2 = None, None
    if data.draw(st.booleans()):
        k2 = tuple(data.draw(st.integers(1, 3)) for _ in range(n_axes))
        lead = data.draw(st.sampled_from([(), x.shape[:1], x.shape[:2]]))
        structure2 = rng.random(tuple(lead) + k2) < 0.4
    elif data.draw(st.booleans()):
        k2 = k1
    else:  # origin2 defaults to origin1, which fits structure1's complement
        k2 = None
    if k2 is not None:
        lengths = effective_lengths(k2, case["axes"], case["rank"])
        origin2 = [data.draw(st.integers(-(n // 2), (n - 1) // 2)) for n in lengths]

    def ours():
        return binary_hit_or_miss(x.to(device), structure1, structure2, origin1=case["origin"],
                                  origin2=origin2, axes=case["axes"])

    def per(b, c):
        return {"structure1": slice_element(structure1, b, c, n_axes),
                "structure2": slice_element(structure2, b, c, n_axes)}

    compare(ours, x, lambda a, **kw: ndi.binary_hit_or_miss(
        a, origin1=case["origin"], origin2=origin2, axes=case["axes"], **kw), per)


@SETTINGS
@given(case=cases())
def test_propagation_matches_scipy(device, case):
    assume(reflected_origin_fits(case))
    mask = None if case["mask"] is None else case["mask"].to(device)

    def ours():
        return binary_propagation(case["x"].to(device), case["structure"], mask,
                                  border_value=case["border_value"], origin=case["origin"],
                                  axes=case["axes"])

    compare(ours, case["x"], lambda a, **kw: repeated(ndi.binary_dilation, a, -1, **kw),
            per_slice(case))


@SETTINGS
@given(case=cases())
def test_fill_holes_matches_scipy(device, case):
    assume(reflected_origin_fits(case))

    def ours():
        return binary_fill_holes(case["x"].to(device), case["structure"], origin=case["origin"],
                                 axes=case["axes"])

    def reference(a, structure, origin, axes, **_):
        reached = repeated(ndi.binary_dilation, np.zeros(a.shape, bool), -1, structure=structure,
                           mask=a == 0, border_value=1, origin=origin, axes=axes)
        return ~reached

    compare(ours, case["x"], reference, per_slice(case))


@SETTINGS
@given(case=cases(centred=True))
def test_propagation_and_fill_holes_equal_scipy_functions(case):
    """SciPy's own binary_propagation / binary_fill_holes (origin 0: its fast path is
    exact, as long as the element is not longer than the input, where it corrupts
    memory)."""
    assume(reflected_origin_fits(case))
    rank = case["rank"]
    filtered = range(rank) if case["axes"] is None else sorted(a % rank for a in case["axes"])
    assume(all(k <= case["x"].shape[2 + axis] for k, axis in zip(case["k"], filtered)))
    x, n_axes = case["x"], case["n_axes"]
    mask = case["mask"]
    filled = binary_fill_holes(x, case["structure"], axes=case["axes"])
    propagated = binary_propagation(x, case["structure"], mask, border_value=case["border_value"],
                                    axes=case["axes"])
    source = to_numpy(x)

    def references(b, c):
        structure = slice_element(case["structure"], b, c, n_axes)
        m = None if mask is None else to_numpy(mask if mask.ndim == x.ndim - 2 else mask[b, c])
        return (ndi.binary_fill_holes(source[b, c], structure, axes=case["axes"]),
                ndi.binary_propagation(source[b, c], structure, m, border_value=case["border_value"],
                                       axes=case["axes"]))
    assert_parity((filled, propagated), references, exact=True)


@pytest.mark.parametrize("connectivity", [1, 2])
def test_fill_holes_of_a_maze(connectivity):
    """Long winding background paths: many flood rounds, still SciPy's result."""
    maze = np.ones((41, 41), bool)
    maze[1:-1:2, 1:-1] = False  # corridors, joined alternately at the right and left ends
    for row in range(2, 40, 2):
        maze[row, 39 if row % 4 == 2 else 1] = False
    maze[0, 1] = False  # one opening to the border
    x = torch.from_numpy(np.stack([maze, ~maze]))[:, None]
    structure = generate_binary_structure(2, connectivity)
    result = binary_fill_holes(x, structure)
    assert_parity(result, each_slice(ndi.binary_fill_holes, x, structure=structure.numpy()), exact=True)


# --------------------------------------------------------------------------- batching


@SETTINGS
@given(case=cases(centred=True))
def test_batched_equals_per_sample_loop(case):
    assume(reflected_origin_fits(case))
    x, structure, mask = case["x"], case["structure"], case["mask"]
    batched = call(binary_opening, case, "cpu")()
    extra = 0 if structure is None else np.ndim(structure) - case["n_axes"]
    for b in range(x.shape[0]):
        one = dict(case, x=x[b:b + 1])
        if extra:
            one["structure"] = structure[b:b + 1]
        if mask is not None and mask.ndim == x.ndim:
            one["mask"] = mask[b:b + 1]
        assert torch.equal(call(binary_opening, one, "cpu")(), batched[b:b + 1])


@SETTINGS
@given(case=cases())
def test_accelerator_element_path_equals_host_path(case):
    """An element that cannot be read on the host (all positions, weighted, plain
    steps only) gives the host path's result."""
    x = case["x"] != 0
    rank = x.ndim - 2
    axes = tuple(range(rank)) if case["axes"] is None else tuple(a % rank for a in case["axes"])
    host = Element.from_argument(case["structure"], x, axes, case["origin"])
    blind = Element(host.tensor, None, *host.given)
    mask = None if case["mask"] is None else (case["mask"] != 0) & torch.ones_like(x)
    border = bool(case["border_value"])
    for invert in (False, True):
        try:
            expected = _binary_erosion(x, host, case["iterations"], mask, border, invert)
        except RuntimeError:
            continue
        got = _binary_erosion(x, blind, case["iterations"], mask, border, invert)
        assert torch.equal(got, expected)


# --------------------------------------------------------------------------- semantics


ALL_OPS = [binary_erosion, binary_dilation, binary_opening, binary_closing, binary_hit_or_miss,
           binary_propagation, binary_fill_holes]


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda f: f.__name__)
def test_input_is_never_modified(op, device):
    x = torch.rand(2, 2, 9, 8, generator=torch.Generator().manual_seed(1)).to(device)
    x = (x > 0.5).float()
    before, version = x.clone(), x._version
    op(x)
    assert x._version == version and torch.equal(x, before)


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.uint8])
def test_output_tensor_receives_result(op, dtype, device):
    x = torch.rand(2, 1, 7, 9, generator=torch.Generator().manual_seed(2)).to(device) > 0.4
    output = torch.full(x.shape, 7, device=device).to(dtype)
    returned = op(x, output=output)
    assert returned is output
    assert torch.equal(output, op(x).to(dtype))
    assert op(x, output=torch.float64).dtype == torch.float64


@pytest.mark.parametrize("op", [binary_erosion, binary_dilation, binary_opening, binary_closing],
                         ids=lambda f: f.__name__)
def test_bool_output_is_written_by_the_ball_kernel(op, device):
    """The ball kernel writes a bool ``output`` itself (its ``.out`` variant): no copy."""
    x = torch.rand(2, 3, 9, 8, 7, generator=torch.Generator().manual_seed(4)).to(device) > 0.4
    out = ~x
    with Dispatched() as dispatched:
        assert op(x, iterations=2, output=out) is out
    assert torch.equal(out, op(x, iterations=2))
    if _ops.use_native("ball_morphology", x):
        assert dispatched.names[-1].endswith("::ball_morphology.out"), dispatched.names
        assert "aten::copy_" not in dispatched.names
    else:
        assert dispatched.names[-1] == "aten::copy_"


def test_output_may_alias_the_input():
    x = torch.rand(1, 1, 8, 8, generator=torch.Generator().manual_seed(3)) > 0.3
    expected = binary_dilation(x, iterations=2)
    binary_dilation(x, iterations=2, output=x)
    assert torch.equal(x, expected)
    memory = torch.cat([x.flatten(), x.flatten()[:3]])
    shifted = memory[3:].view(x.shape)  # contiguous, three voxels after the input
    assert binary_erosion(memory[:x.numel()].view(x.shape), output=shifted) is shifted
    assert torch.equal(shifted, binary_erosion(x))


def test_nan_counts_as_true():
    x = torch.tensor([[[float("nan"), 1.0, 0.0, float("nan")]]])
    assert binary_erosion(x, [1], border_value=1).tolist() == [[[True, True, False, True]]]
    expected = ndi.binary_erosion(x[0, 0].numpy(), [1], border_value=1)
    assert expected.tolist() == [True, True, False, True]
    assert binary_fill_holes(x).tolist() == [[ndi.binary_fill_holes(x[0, 0].numpy()).tolist()]]


def test_all_false_structure():
    x = torch.tensor([[[0, 1, 0]]], dtype=torch.bool)
    none = torch.zeros(3, dtype=torch.bool)
    assert binary_erosion(x, none).all() and not binary_dilation(x, none).any()


def test_cycle_raises_where_scipy_would_loop_forever():
    x = torch.tensor([[[1, 0, 1, 0, 1, 0, 1]]], dtype=torch.bool)
    with pytest.raises(RuntimeError, match="cycles"):
        binary_erosion(x, [1, 0, 1], iterations=-1, border_value=1)
    # a fixed count is fine: SciPy (brute force) alternates too
    got = binary_erosion(x, [1, 0, 1], iterations=5, border_value=1)
    expected = ndi.binary_erosion(x[0, 0].numpy(), [1, 0, 1], 5, border_value=1, brute_force=True)
    assert got[0, 0].tolist() == expected.tolist()


def test_many_iterations_stop_at_the_fixpoint():
    x = torch.zeros(2, 1, 30, 30, dtype=torch.bool)
    x[0, 0, 15, 15] = True
    got = binary_dilation(x, iterations=10**6)  # settles after ~30 steps
    assert torch.equal(got, binary_dilation(x, iterations=-1))
    assert got[0].all() and not got[1].any()


def test_axes_order_follows_scipy():
    """Element dimensions follow the filtered axes in increasing order; origin[i]
    belongs to axes[i] for a strict subset of the axes (SciPy's pairing)."""
    x = torch.rand(2, 1, 5, 4, 6, generator=torch.Generator().manual_seed(4)) > 0.5
    structure = np.array([[1, 1, 0], [0, 1, 1]], bool)  # (axis 0, axis 2)
    for axes, origin in [((2, 0), (1, 0)), ((0, 2), (0, 1)), ((2, 1, 0), (0, 0, 1))]:
        element = structure if len(axes) == 2 else structure[:, None]
        got = binary_erosion(x, element, origin=origin, axes=axes)
        assert_parity(got, each_slice(ndi.binary_erosion, x, structure=element, origin=origin, axes=axes), exact=True)


def test_reflected_origin_outside_the_element_raises():
    """SciPy pairs dilation's even-length correction with the element dimension
    of the same position, not of the same axis: with unsorted axes this can put
    the origin outside the element, where SciPy's result is undefined."""
    x = torch.zeros(1, 1, 3, 3, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="origin"):
        binary_dilation(x, np.ones((1, 2)), axes=(1, 0))
    binary_erosion(x, np.ones((1, 2)), axes=(1, 0))  # fine without the reflection


def test_empty_batch():
    x = torch.zeros(0, 2, 5, 5)
    for op in ALL_OPS:
        assert op(x).shape == x.shape


# --------------------------------------------------------------------------- errors


X = torch.zeros(2, 3, 6, 6)


@pytest.mark.parametrize("op", [binary_erosion, binary_dilation, binary_opening, binary_closing],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("kwargs,error,match", [
    ({"structure": np.ones(3)}, ValueError, "structure"),
    ({"structure": np.ones((2, 2, 2, 3, 3))}, ValueError, "structure"),
    ({"structure": np.ones((4, 3, 3))}, ValueError, "batch size"),
    ({"structure": np.ones((2, 2, 3, 3))}, ValueError, "channels"),
    ({"structure": np.ones((0, 3))}, ValueError, "empty"),
    ({"structure": np.ones((3, 3), complex)}, TypeError, "structure"),
    ({"structure": object()}, TypeError, "structure"),
    ({"origin": 2}, ValueError, "origin"),
    ({"origin": -2}, ValueError, "origin"),
    ({"structure": np.ones((2, 2)), "origin": 1}, ValueError, "origin"),
    ({"origin": (0, 0, 0)}, ValueError, "origin"),
    ({"origin": 0.5}, TypeError, "origin"),
    ({"mask": torch.ones(6, 5)}, ValueError, "mask"),
    ({"mask": torch.ones(1, 3, 6, 6)}, ValueError, "mask"),
    ({"iterations": 1.5}, TypeError, "iterations"),
    ({"iterations": None}, TypeError, "iterations"),
    ({"iterations": True}, TypeError, "iterations"),
    ({"border_value": 0.5}, TypeError, "border_value"),
    ({"border_value": "1"}, TypeError, "border_value"),
    ({"output": torch.zeros(2, 3, 6)}, ValueError, "output"),
    ({"output": torch.zeros(2, 3, 6, 6, device="meta")}, ValueError, "output"),
    ({"output": torch.zeros(2, 3, 6, 6, dtype=torch.complex64)}, TypeError, "output"),
    ({"output": np.zeros((2, 3, 6, 6))}, TypeError, "output"),
    ({"axes": 2}, ValueError, "axes"),
    ({"axes": (0, 0)}, ValueError, "axes"),
    ({"axes": "0"}, TypeError, "axes"),
])
def test_bad_arguments_are_named(op, kwargs, error, match):
    with pytest.raises(error, match=match):
        op(X, **kwargs)


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad,error", [
    (np.zeros((2, 1, 4, 4)), TypeError),
    ([[[0, 1]]], TypeError),
    (torch.zeros(4, 4), ValueError),
    (torch.zeros(1, 1, 4, 4, dtype=torch.complex64), TypeError),
])
def test_bad_input_is_named(op, bad, error):
    with pytest.raises(error, match="input"):
        op(bad)


@pytest.mark.parametrize("kwargs,error,match", [
    ({"structure1": np.ones((3, 3, 3))}, ValueError, "structure1"),
    ({"structure2": np.ones(3)}, ValueError, "structure2"),
    ({"structure2": np.ones((3, 3)), "origin2": 2}, ValueError, "origin2"),
    ({"origin1": 2}, ValueError, "origin1"),
    ({"origin1": 1, "structure2": np.ones((1, 1))}, ValueError, "origin2"),
    ({"origin2": (0,)}, ValueError, "origin2"),
    ({"output": torch.zeros(1)}, ValueError, "output"),
])
def test_hit_or_miss_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        binary_hit_or_miss(X, **kwargs)


@pytest.mark.parametrize("op", [binary_propagation, binary_fill_holes], ids=lambda f: f.__name__)
@pytest.mark.parametrize("kwargs,error,match", [
    ({"structure": np.ones(3)}, ValueError, "structure"),
    ({"origin": 5}, ValueError, "origin"),
    ({"output": torch.zeros(2)}, ValueError, "output"),
    ({"axes": 3}, ValueError, "axes"),
])
def test_propagation_and_fill_holes_bad_arguments(op, kwargs, error, match):
    with pytest.raises(error, match=match):
        op(X, **kwargs)


def test_propagation_bad_mask():
    with pytest.raises(ValueError, match="mask"):
        binary_propagation(X, mask=torch.ones(3, 3))


def test_elements_of_earlier_calls_follow_the_callers_changes():
    """Small host elements are kept by content between calls (``_elements._kept_element``): a
    structure changed in place by the caller, then changed back, gives SciPy's result for
    what it holds at each call, and a structure that differs only in its origin, axes or
    rank is another element."""
    x = torch.from_numpy(np.random.default_rng(3).random((1, 1, 9, 9)) > 0.3)
    structure = torch.zeros(3, 3, dtype=torch.bool)
    structure[1] = True
    expected_row = ndi.binary_dilation(x[0, 0].numpy(), structure.numpy())
    for holds_column in (False, True, False):
        structure[:, 1] = holds_column
        structure[1] = True
        got = binary_dilation(x, structure)[0, 0]
        assert_parity(got, ndi.binary_dilation(x[0, 0].numpy(), structure.numpy()), exact=True)
    row = structure.clone()
    structure[:, 1] = True  # the kept row element must not be this tensor
    assert_parity(binary_dilation(x, row)[0, 0], expected_row, exact=True)
    shifted = binary_dilation(x, structure, origin=(0, 1))
    assert_parity(shifted, each_slice(ndi.binary_dilation, x, structure=structure.numpy(), origin=(0, 1)), exact=True)
    line = structure[1]
    along_rows = binary_dilation(x, line, axes=(0,))
    assert_parity(along_rows, each_slice(ndi.binary_dilation, x, structure=line.numpy(), axes=(0,)), exact=True)
    along_columns = binary_dilation(x, line, axes=(1,))
    assert_parity(along_columns, each_slice(ndi.binary_dilation, x, structure=line.numpy(), axes=(1,)), exact=True)


def _ball_by_definition(element: np.ndarray):
    """``Element.ball``'s definition, on a full box of coordinates: ``(metric, r)`` when every
    slice of ``element (B|1, C|1, *k)`` is the same centred radius-``r`` box, cross or ball."""
    shape = element.shape[2:]
    if len(set(shape)) != 1 or shape[0] % 2 == 0 or shape[0] == 1:
        return None
    radius = shape[0] // 2
    if element.all():
        return "chessboard", radius
    offsets = np.abs(np.indices(shape) - radius)
    for metric, inside in (("taxicab", offsets.sum(0) <= radius), ("euclidean", (offsets ** 2).sum(0) <= radius ** 2)):
        if (element == inside).all():
            return metric, radius
    return None


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
@pytest.mark.parametrize("radius", [1, 2, 3])
def test_the_ball_an_element_is_read_without_a_box_of_coordinates(rank, radius):
    """``Element.ball`` (which counts the ball's lattice points instead of building a
    ``(2r + 1)^rank`` box of coordinates) says what the definition says: for the balls of each
    metric, the ball less or plus one voxel, per-sample copies, and per-sample elements that
    differ."""
    rng = np.random.default_rng(rank * 10 + radius)
    x = torch.zeros((2, 1) + (2 * radius + 1,) * rank, dtype=torch.bool)
    offsets = np.abs(np.indices((2 * radius + 1,) * rank) - radius)
    balls = [np.ones(offsets.shape[1:], bool), offsets.sum(0) <= radius, (offsets ** 2).sum(0) <= radius ** 2]
    elements = []
    for ball in balls:
        elements.append(ball)
        for _ in range(3):
            changed = ball.copy()
            changed.flat[rng.integers(changed.size)] ^= True
            elements.append(changed)
        elements.append(np.stack([ball, ball]))  # per sample, equal
        elements.append(np.stack([ball, balls[0]]))  # per sample, different
    elements.append(np.ones((2 * radius + 2,) * rank, bool))  # even: no centred ball
    for element in elements:
        normalised = Element.from_argument(element, x, tuple(range(rank)), 0)
        assert normalised.ball == _ball_by_definition(normalised.host.numpy()), element.astype(int)


def test_the_ball_of_many_axes_is_read_quickly():
    """17 axes: the (3,)*17 cross is recognised from its 35 positions, not from 3^17 coordinates."""
    cross = torch.zeros((3,) * 17, dtype=torch.bool)
    centre = (1,) * 17
    cross[centre] = True
    for axis in range(17):
        for side in (0, 2):
            cross[centre[:axis] + (side,) + centre[axis + 1:]] = True
    x = torch.zeros((1, 1) + (3,) * 17, dtype=torch.bool)
    assert Element.from_argument(cross, x, tuple(range(17)), 0).ball == ("taxicab", 1)
