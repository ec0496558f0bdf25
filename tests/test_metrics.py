"""``morphaug.metrics`` against MONAI 1.6's ``compute_hausdorff_distance``,
``compute_average_surface_distance`` and ``compute_surface_dice`` (with
``include_background=True``), slice by slice, on random 2-D and 3-D batches
with empty slices, full slices and anisotropic spacing, and on masks drawn
in random boxes (hypothesis: the crop to the masks); the fused
``surface_distance_metrics`` against the three functions and MONAI; plus the
argument checks, device discipline and the benchmark rows.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity
from hypothesis import given, settings
from hypothesis import strategies as st
from test_benchmarks import run_benchmarks
from test_device_discipline import DeviceRun, On

from morphaug import _ops, metrics, ndimage
from morphaug.metrics import _lists
from morphaug.ndimage import _surface_lists

try:
    import monai.metrics as monai_metrics
    from morphaug.adapters import monai as monai_adapters
except ImportError:  # the tests that compare with MONAI are skipped
    monai_metrics = monai_adapters = None
needs_monai = pytest.mark.skipif(monai_metrics is None, reason="MONAI is not installed")

ROOT = Path(__file__).resolve().parents[1]
SHAPES = [(3, 2, 17, 19), (2, 3, 9, 11, 10)]
#: per spatial rank: unit spacing, power-of-two spacings (exact squared distances), random spacings
SPACINGS = {2: [None, (0.5, 2.0), (0.7, 1.9)], 3: [None, (0.5, 2.0, 1.25), (2.3, 0.6, 1.1)]}


def random_masks(seed: int, shape) -> tuple[torch.Tensor, torch.Tensor]:
    """Blobs at random levels, a prediction near the reference; empty, one-sided and full slices."""
    rng = np.random.default_rng(seed)
    spatial = (0, 0) + (1.5,) * (len(shape) - 2)
    field = ndi.gaussian_filter(rng.standard_normal(shape), spatial)
    levels = rng.uniform(-0.3, 0.5, shape[:2] + (1,) * (len(shape) - 2))
    ref = field > levels
    pred = field + 0.4 * ndi.gaussian_filter(rng.standard_normal(shape), spatial) > levels
    pred[0, 0] = False            # prediction empty
    ref[0, 1] = False             # reference empty
    pred[-1, -1] = ref[-1, -1] = False  # both empty
    pred[1, 0] = True             # full: its surface is the volume's border
    return torch.from_numpy(pred), torch.from_numpy(ref)


def monai_per_slice(compute, pred, ref, **kwargs):
    """MONAI's function on float one-hot inputs, every channel, no warnings about empty slices."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compute(pred.float(), ref.float(), include_background=True, **kwargs)


CASES = [pytest.param(seed, shape, spacing, metric, id=f"{len(shape) - 2}d-{seed}-{metric}-{spacing}")
         for seed, shape in enumerate(SHAPES)
         for metric, spacing in [("euclidean", s) for s in SPACINGS[len(shape) - 2]]
         + [("chessboard", None), ("taxicab", None)]]


@needs_monai
@pytest.mark.parametrize("seed, shape, spacing, metric", CASES)
@pytest.mark.parametrize("percentile, directed", [(None, False), (None, True), (95, False), (37.5, True), (100, False)])
def test_hausdorff_distance_matches_monai(seed, shape, spacing, metric, percentile, directed):
    pred, ref = random_masks(seed, shape)
    ours = metrics.hausdorff_distance(pred, ref, percentile, directed, spacing, metric)
    theirs = monai_per_slice(monai_metrics.compute_hausdorff_distance, pred, ref, distance_metric=metric,
                             percentile=percentile, directed=directed, spacing=spacing)
    assert_parity(ours, theirs.float(), exact=metric != "euclidean", rtol=1e-6, atol=0, dtype=torch.float32)


@needs_monai
@pytest.mark.parametrize("seed, shape, spacing, metric", CASES)
@pytest.mark.parametrize("symmetric", [False, True])
def test_average_surface_distance_matches_monai(seed, shape, spacing, metric, symmetric):
    pred, ref = random_masks(seed, shape)
    ours = metrics.average_surface_distance(pred, ref, symmetric, spacing, metric)
    theirs = monai_per_slice(monai_metrics.compute_average_surface_distance, pred, ref, distance_metric=metric,
                             symmetric=symmetric, spacing=spacing)
    assert_parity(ours, theirs.float(), exact=metric != "euclidean", rtol=1e-6, atol=0, dtype=torch.float32)


@needs_monai
@pytest.mark.parametrize("seed, shape, spacing, metric", CASES)
@pytest.mark.parametrize("tolerance", ["scalar", "per channel"])
def test_normalized_surface_dice_matches_monai(seed, shape, spacing, metric, tolerance):
    pred, ref = random_masks(seed, shape)
    channels = shape[1]
    # distances that occur (1, 2, sqrt(2) in voxels; 2.0 and 2.5 with the power-of-two spacings) and some that do not
    thresholds = [1.0, 2.5, 1.4142135][:channels] if tolerance == "per channel" else [2.0] * channels
    given = thresholds if tolerance == "per channel" else thresholds[0]
    ours = metrics.normalized_surface_dice(pred, ref, given, spacing, metric)
    theirs = monai_per_slice(monai_metrics.compute_surface_dice, pred, ref, class_thresholds=thresholds,
                             distance_metric=metric, spacing=spacing)
    assert_parity(ours, theirs.float(), exact=True, dtype=torch.float32)


def monai_three(pred, ref, tolerance, percentile, spacing, metric):
    """MONAI's HD (symmetric), ASSD and NSD of every slice: what ``surface_distance_metrics`` returns."""
    common = {"distance_metric": metric, "spacing": spacing}
    return (monai_per_slice(monai_metrics.compute_hausdorff_distance, pred, ref, percentile=percentile, **common),
            monai_per_slice(monai_metrics.compute_average_surface_distance, pred, ref, symmetric=True, **common),
            monai_per_slice(monai_metrics.compute_surface_dice, pred, ref, class_thresholds=tolerance, **common))


def assert_three_match(ours, theirs, metric):
    """The fused result against MONAI's three: HD and ASSD to float32 rounding, NSD identical."""
    assert isinstance(ours, metrics.SurfaceDistanceResult)
    for found, expected, exact in zip(ours, theirs, (metric != "euclidean", metric != "euclidean", True)):
        assert_parity(found, expected.float(), exact=exact, rtol=1e-6, atol=0, dtype=torch.float32)


@needs_monai
@pytest.mark.parametrize("seed, shape, spacing, metric", CASES)
@pytest.mark.parametrize("percentile", [None, 95])
def test_surface_distance_metrics_are_the_three_functions_and_monai_s(seed, shape, spacing, metric, percentile):
    pred, ref = random_masks(seed, shape)
    tolerance = [1.0, 2.5, 1.4142135][:shape[1]]
    ours = metrics.surface_distance_metrics(pred, ref, tolerance, percentile, spacing, metric)
    separate = (metrics.hausdorff_distance(pred, ref, percentile, False, spacing, metric),
                metrics.average_surface_distance(pred, ref, True, spacing, metric),
                metrics.normalized_surface_dice(pred, ref, tolerance, spacing, metric))
    for found, expected in zip(ours, separate):
        assert_parity(found, expected.float(), exact=True, dtype=torch.float32)
    assert_three_match(ours, monai_three(pred, ref, tolerance, percentile, spacing, metric), metric)


def boxed_masks(seed: int, shape) -> tuple[torch.Tensor, torch.Tensor]:
    """Per slice, ``pred`` and ``ref`` filled at random in a random box each (some empty, some
    touching the volume's border): every slice has its own bounding box."""
    rng = np.random.default_rng(seed)
    masks = np.zeros((2, *shape), dtype=bool)
    for index in np.ndindex(2, *shape[:2]):
        if rng.random() < 0.15:
            continue  # empty
        corners = np.sort(rng.integers(0, np.array(shape[2:]) + 1, (2, len(shape) - 2)), axis=0)
        box = tuple(slice(lo, max(hi, lo + 1)) for lo, hi in corners.T)
        region = masks[index][box]
        region[...] = rng.random(region.shape) < rng.uniform(0.4, 1.0)
    return torch.from_numpy(masks[0]), torch.from_numpy(masks[1])


@needs_monai
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), rank=st.sampled_from([2, 3]), batch=st.integers(1, 3),
       channels=st.integers(1, 2), side=st.integers(1, 11), anisotropic=st.booleans(),
       metric=st.sampled_from(metrics.DISTANCE_METRICS), percentile=st.sampled_from([None, 95, 50]))
def test_masks_in_random_boxes_match_monai(seed, rank, batch, channels, side, anisotropic, metric, percentile):
    shape = (batch, channels) + tuple(side + k for k in range(rank))
    pred, ref = boxed_masks(seed, shape)
    spacing = None
    if anisotropic and metric == "euclidean":
        spacing = tuple(np.random.default_rng(seed).uniform(0.5, 2.0, rank).tolist())
    tolerance = [1.5, 2.0][:channels]
    ours = metrics.surface_distance_metrics(pred, ref, tolerance, percentile, spacing, metric)
    assert_three_match(ours, monai_three(pred, ref, tolerance, percentile, spacing, metric), metric)


@needs_monai
def test_the_cpu_crops_slices_in_groups_of_similar_boxes(monkeypatch):
    """Without the native search, two boxes of similar volume share a window of the larger's sides,
    moved back into the volume for the box at the far end; an empty slice has its own one-voxel
    window."""
    pred = torch.zeros(3, 1, 20, 16, dtype=torch.bool)
    ref = pred.clone()
    pred[0, 0, 0:9, 2:5] = ref[0, 0, 3:14, 1:4] = True  # the union: rows 0-13, columns 1-4
    pred[1, 0, 7:20, 12:14] = ref[1, 0, 15:20, 14:16] = True  # rows 7-19, columns 12-15
    firsts, sides = _surface_lists._boxes(pred | ref)
    assert firsts.tolist() == [[0, 1], [7, 12], [0, 0]] and sides.tolist() == [[14, 4], [13, 4], [0, 0]]
    window = _surface_lists._window(ref, torch.tensor([0, 1]), [14, 4], torch.tensor([[0, 1], [6, 12]]))
    assert window.shape == (2, 1, 14, 4) and torch.equal(window[1, 0], ref[1, 0, 6:20, 12:16])
    two_channels = torch.stack([pred[:, 0], ref[:, 0]], 1)  # (3, 2, ...): slice 3 is (1, 1)
    assert torch.equal(_surface_lists._window(two_channels, torch.tensor([3]), [14, 4], torch.tensor([[6, 12]]))[0, 0],
                       ref[1, 0, 6:20, 12:16])
    computed = []
    surfaces = _surface_lists.surfaces
    monkeypatch.setattr(_surface_lists, "surfaces", lambda masks: computed.append(masks.shape) or surfaces(masks))
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    ours = metrics.surface_distance_metrics(pred, ref, 1.0, 95, (1.5, 0.5))
    assert sorted(computed) == [(2, 1, 1, 1), (4, 1, 14, 4)]  # the windows of pred, then of ref
    assert_three_match(ours, monai_three(pred, ref, [1.0], 95, (1.5, 0.5), "euclidean"), "euclidean")


@pytest.mark.parametrize("seed, shape, spacing, metric", CASES[::2])
@pytest.mark.parametrize("percentile", [None, 95])
def test_the_accelerator_layout_gives_the_cpu_result(seed, shape, spacing, metric, percentile, monkeypatch):
    """Accelerators take the whole volumes and reduce masked lists (:class:`_lists._Dense`): run here
    on the CPU, fused and directed."""
    pred, ref = random_masks(seed, shape)
    calls = [lambda: metrics.surface_distance_metrics(pred, ref, [1.0, 2.5, 1.4142135][:shape[1]], percentile,
                                                      spacing, metric),
             lambda: metrics.hausdorff_distance(pred, ref, percentile, True, spacing, metric),
             lambda: metrics.average_surface_distance(pred, ref, False, spacing, metric)]
    packed = [call() for call in calls]
    monkeypatch.setattr(_lists, "_reads_are_free", lambda x: False)
    for call, expected in zip(calls, packed):
        for found, wanted in zip(torch.utils._pytree.tree_leaves(call()), torch.utils._pytree.tree_leaves(expected)):
            assert_parity(found, wanted.float(), exact=metric != "euclidean", rtol=1e-6, atol=0, dtype=torch.float32)


def test_empty_masks_give_monai_s_values():
    nothing = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    square = nothing.clone()
    square[..., 2:5, 2:5] = True
    nan, inf = float("nan"), float("inf")
    for pred, ref, hd, hd95, asd, nsd in [(nothing, nothing, nan, nan, nan, nan), (nothing, square, inf, nan, inf, 0.0),
                                          (square, nothing, inf, nan, inf, 0.0)]:
        for directed in (False, True):
            assert_parity(metrics.hausdorff_distance(pred, ref, directed=directed), torch.tensor([[hd]]),
                          exact=True, dtype=torch.float32)
            assert_parity(metrics.hausdorff_distance(pred, ref, 95, directed), torch.tensor([[hd95]]),
                          exact=True, dtype=torch.float32)
            assert_parity(metrics.average_surface_distance(pred, ref, not directed), torch.tensor([[asd]]),
                          exact=True, dtype=torch.float32)
        assert_parity(metrics.normalized_surface_dice(pred, ref, 1.0), torch.tensor([[nsd]]),
                      exact=True, dtype=torch.float32)
        for found, expected in zip(metrics.surface_distance_metrics(pred, ref, 1.0, 95), (hd95, asd, nsd)):
            assert_parity(found, torch.tensor([[expected]]), exact=True, dtype=torch.float32)


@pytest.mark.parametrize("shape", [(0, 2, 5, 6), (2, 0, 5, 6)])
def test_empty_batches_give_results_of_their_shape(shape):
    nothing = torch.zeros(shape, dtype=torch.bool)
    for found in metrics.surface_distance_metrics(nothing, nothing, 1.0, 95):
        assert found.shape == shape[:2] and found.dtype == torch.float32
    assert metrics.hausdorff_distance(nothing, nothing, directed=True).shape == shape[:2]


@needs_monai
def test_percentile_0_is_the_smallest_distance_where_monai_s_is_the_largest():
    ref = torch.zeros(1, 1, 9, 9, dtype=torch.bool)
    ref[..., 2:7, 2:7] = True
    pred = ref.roll(2, -1)  # the rows overlap (distance 0), the far columns are 2 apart
    assert metrics.hausdorff_distance(pred, ref, percentile=0).item() == 0.0
    assert metrics.hausdorff_distance(pred, ref).item() == 2.0
    assert monai_per_slice(monai_metrics.compute_hausdorff_distance, pred, ref, percentile=0).item() == 2.0


@pytest.mark.parametrize("seed", range(4))
def test_both_layouts_give_torch_quantile(seed):
    generator = torch.Generator().manual_seed(seed)
    values = torch.rand(2, 3, 4, 50, generator=generator).mul(10).round(decimals=1)  # ties
    selected = torch.rand(2, 3, 4, 50, generator=generator) < torch.rand(2, 3, 4, 1, generator=generator)
    count = selected.sum(-1, dtype=torch.int32)
    dense = _lists._Dense(count, count, selected, values)
    rows = torch.arange(count.numel()).view(count.shape)[..., None].expand(values.shape)
    packed = _lists._packed(values[selected], rows[selected], count, count)
    for q in (0.0, 0.37, 0.95, 0.99, 1.0):
        expected = torch.stack([torch.quantile(v[s], q) if s.any() else torch.tensor(0.0)
                                for v, s in zip(values.reshape(-1, 50), selected.reshape(-1, 50))])
        for lists in (dense, packed):
            found = lists.quantile(q).reshape(-1)
            assert torch.equal(found[count.reshape(-1) > 0], expected[count.reshape(-1) > 0]), (q, type(lists))
    assert torch.equal(packed.largest()[count > 0], dense.largest()[count > 0])
    torch.testing.assert_close(packed.total(), dense.total(), rtol=1e-6, atol=0)
    assert torch.equal(packed.within(2.5).int(), dense.within(2.5))


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, torch.float16, torch.float32, torch.float64])
def test_every_binary_dtype_gives_the_same_result(dtype):
    pred, ref = random_masks(5, SHAPES[0])
    expected = metrics.hausdorff_distance(pred, ref, percentile=95)
    assert_parity(metrics.hausdorff_distance(pred.to(dtype), ref.to(dtype), percentile=95), expected.float(),
                  exact=True, dtype=torch.float32)


def test_inputs_are_not_modified():
    pred, ref = random_masks(1, SHAPES[1])
    pred, ref = pred.float(), ref.to(torch.uint8)
    before = pred.clone(), ref.clone(), pred._version, ref._version
    metrics.hausdorff_distance(pred, ref, percentile=95)
    metrics.average_surface_distance(pred, ref, symmetric=True, sampling=(1.0, 2.0, 0.5))
    metrics.normalized_surface_dice(pred, ref, [1.0, 2.0, 3.0], distance_metric="taxicab")
    metrics.surface_distance_metrics(pred, ref, 1.0, 95, (1.0, 2.0, 0.5))
    assert torch.equal(pred, before[0]) and torch.equal(ref, before[1])
    assert (pred._version, ref._version) == before[2:]


def test_torch_backend_gives_the_native_result(monkeypatch):
    pred, ref = random_masks(3, SHAPES[1])
    calls = [lambda: metrics.hausdorff_distance(pred, ref, 95, sampling=(0.7, 1.0, 2.1)),
             lambda: metrics.average_surface_distance(pred, ref, True, distance_metric="chessboard"),
             lambda: metrics.normalized_surface_dice(pred, ref, 1.5),
             lambda: metrics.surface_distance_metrics(pred, ref, [1.0, 1.5, 2.0], 95, (0.7, 1.0, 2.1))]
    native = [call() for call in calls]
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    for call, expected in zip(calls, native):
        for found, wanted in zip(torch.utils._pytree.tree_leaves(call()), torch.utils._pytree.tree_leaves(expected)):
            assert_parity(found, wanted.float(), exact=False, rtol=1e-6, atol=0, dtype=torch.float32)


BAD = [
    (lambda p, r: metrics.hausdorff_distance(p.numpy(), r), TypeError, "^pred must be a torch.Tensor"),
    (lambda p, r: metrics.hausdorff_distance(p, r[0, 0]), ValueError, "^ref must have shape"),
    (lambda p, r: metrics.surface_distance_metrics(p[..., :0], r[..., :0], 1.0), ValueError,
     r"^pred must have shape \(B, C, \*spatial\) with at least one spatial axis, none empty"),
    (lambda p, r: metrics.hausdorff_distance(p, r[:, :1]), ValueError, "^pred and ref must have the same shape"),
    (lambda p, r: metrics.hausdorff_distance(p.float() * 0.5, r), ValueError, "^pred must be binary"),
    (lambda p, r: metrics.average_surface_distance(p, r.float() + 1), ValueError, "^ref must be binary"),
    (lambda p, r: metrics.hausdorff_distance(p.to(torch.complex64), r), TypeError, "^pred must be real"),
    (lambda p, r: metrics.hausdorff_distance(p, r, percentile=101), ValueError, r"^percentile must be in \[0, 100\]"),
    (lambda p, r: metrics.hausdorff_distance(p, r, percentile=-1), ValueError, r"^percentile must be in \[0, 100\]"),
    (lambda p, r: metrics.hausdorff_distance(p, r, percentile="95"), TypeError, "^percentile must be None or"),
    (lambda p, r: metrics.hausdorff_distance(p, r, directed=1), TypeError, "^directed must be True or False"),
    (lambda p, r: metrics.average_surface_distance(p, r, symmetric=None), TypeError, "^symmetric must be True"),
    (lambda p, r: metrics.hausdorff_distance(p, r, sampling=(1.0, -2.0)), ValueError, "^sampling must be positive"),
    (lambda p, r: metrics.hausdorff_distance(p, r, sampling=0), ValueError, "^sampling must be positive"),
    (lambda p, r: metrics.hausdorff_distance(p, r, sampling=(1.0, 2.0, 3.0)), ValueError,
     r"^sampling must have one value per spatial axis \(2\)"),
    (lambda p, r: metrics.hausdorff_distance(p, r, sampling="1"), TypeError, "^sampling must be a number"),
    (lambda p, r: metrics.hausdorff_distance(p, r, sampling=True), TypeError, "^sampling must be a number"),
    (lambda p, r: metrics.hausdorff_distance(p, r, sampling=2.0, distance_metric="taxicab"), ValueError,
     "^sampling applies to distance_metric='euclidean' only"),
    (lambda p, r: metrics.hausdorff_distance(p, r, distance_metric="cityblock"), ValueError,
     "^distance_metric must be one of"),
    (lambda p, r: metrics.normalized_surface_dice(p, r, -1.0), ValueError, "^tolerance must be finite and >= 0"),
    (lambda p, r: metrics.normalized_surface_dice(p, r, [1.0, float("nan")]), ValueError, "^tolerance must be finite"),
    (lambda p, r: metrics.normalized_surface_dice(p, r, [1.0, 2.0, 3.0]), ValueError,
     r"^tolerance must be a number or one per channel \(2\)"),
    (lambda p, r: metrics.normalized_surface_dice(p, r, None), TypeError, "^tolerance must be a number"),
    (lambda p, r: metrics.surface_distance_metrics(p.float() * 0.5, r, 1.0), ValueError, "^pred must be binary"),
    (lambda p, r: metrics.surface_distance_metrics(p, r, [1.0, 2.0, 3.0]), ValueError,
     r"^tolerance must be a number or one per channel \(2\)"),
    (lambda p, r: metrics.surface_distance_metrics(p, r, 1.0, 100.5), ValueError, r"^percentile must be in \[0, 100\]"),
    (lambda p, r: metrics.surface_distance_metrics(p, r, 1.0, sampling=(1.0,)), ValueError,
     r"^sampling must have one value per spatial axis \(2\)"),
    (lambda p, r: metrics.surface_distance_metrics(p, r, 1.0, distance_metric="l2"), ValueError,
     "^distance_metric must be one of"),
]


@pytest.mark.parametrize("call, error, message", BAD, ids=[message.strip("^").split(" (")[0][:40] for _, _, message in BAD])
def test_bad_arguments_raise_naming_them(call, error, message):
    pred, ref = random_masks(0, SHAPES[0])
    with pytest.raises(error, match=message):
        call(pred, ref)


# ------------------------------------------------------------------ devices
DEVICE_CALLS = {
    "hausdorff_distance": lambda p, r: metrics.hausdorff_distance(p, r, sampling=(1.0, 2.0)),
    "hausdorff_distance percentile": lambda p, r: metrics.hausdorff_distance(p, r, 95, True, distance_metric="taxicab"),
    "average_surface_distance": lambda p, r: metrics.average_surface_distance(p, r, True),
    "normalized_surface_dice": lambda p, r: metrics.normalized_surface_dice(p, r, [1.0, 2.0], distance_metric="chessboard"),
    "surface_distance_metrics": lambda p, r: metrics.surface_distance_metrics(p, r, [1.0, 2.0], 95, (1.0, 2.0)),
}


@pytest.mark.parametrize("kind", ["meta", "cuda"])
@pytest.mark.parametrize("name", DEVICE_CALLS)
def test_no_host_read_and_results_stay_on_the_device(name, kind, monkeypatch):
    """The rules of ``tests/test_device_discipline.py``, on meta and FakeTensor cuda inputs (one-hot floats,
    checked by a device-side assert)."""
    pred, ref = random_masks(2, (2, 2, 7, 8))
    run = DeviceRun(kind, monkeypatch)
    out = run(DEVICE_CALLS[name], On(pred.float()), On(ref.float()))
    for tensor in out if isinstance(out, tuple) else (out,):
        assert tensor.device == run.device and tensor.shape == (2, 2) and tensor.dtype == torch.float32
    assert run.reads == []


@pytest.mark.cuda
@pytest.mark.parametrize("seed, shape, spacing, metric", CASES[::3])
def test_cuda_gives_the_cpu_result(seed, shape, spacing, metric):
    pred, ref = random_masks(seed, shape)
    for call in (lambda p, r: metrics.hausdorff_distance(p, r, 95, False, spacing, metric),
                 lambda p, r: metrics.average_surface_distance(p, r, True, spacing, metric),
                 lambda p, r: metrics.normalized_surface_dice(p, r, 1.5, spacing, metric),
                 lambda p, r: metrics.surface_distance_metrics(p, r, 1.5, 95, spacing, metric)):
        on_cpu = torch.utils._pytree.tree_leaves(call(pred, ref))  # cropped to the masks: not on the GPU
        for on_gpu, expected in zip(torch.utils._pytree.tree_leaves(call(pred.cuda(), ref.cuda())), on_cpu):
            assert on_gpu.device.type == "cuda"
            assert_parity(on_gpu.cpu(), expected.float(),
                          exact=metric != "euclidean", rtol=1e-6, atol=0, dtype=torch.float32)


@pytest.mark.parametrize("metric", ["euclidean", "taxicab"])
def test_inputs_of_seventeen_spatial_axes(metric):
    """Every spatial rank works: 17 axes used to build a 3^17 cross through 16 GiB of coordinates."""
    mask = torch.ones((1, 1) + (1,) * 17, dtype=torch.bool)
    assert metrics.hausdorff_distance(mask, mask, distance_metric=metric).tolist() == [[0.0]]


def test_the_binary_check_is_exact():
    pred, ref = random_masks(4, SHAPES[0])
    nudged = pred.double()
    nudged[0, 1, 0, 0] = 1 + 1e-9
    with pytest.raises(ValueError, match="^pred must be binary"):
        metrics.hausdorff_distance(nudged, ref)


def paired_masks(seed: int, shape, density: float) -> torch.Tensor:
    """Random voxels (``density``: isolated ones, noise, a few holes) or smooth blobs (``None``) in
    ``(2B, C, *spatial)`` slices, at least the last voxel of each; the pair of slice 0 empty."""
    rng = np.random.default_rng(seed)
    if density is None:
        masks = ndi.gaussian_filter(rng.standard_normal(shape), (0, 0) + (1.5,) * (len(shape) - 2)) > 0
    else:
        masks = rng.random(shape) < density
    masks.reshape(*shape[:2], -1)[..., -1] = True
    masks[shape[0] // 2, 0] = False
    return torch.from_numpy(masks)


def expected_lists(masks, sampling, symmetric: bool, listed=None):
    """SciPy's surfaces (erosion by the cross, border 0) of each slice, their voxels in raster order (of
    every slice, or the first half's) and the float32 EDT of each paired surface's complement at them."""
    surfaces = torch.from_numpy(np.stack([[m & ~ndi.binary_erosion(m) for m in sample] for sample in masks.numpy()]))
    half = masks.shape[0] // 2
    sources = torch.nonzero((surfaces if symmetric else surfaces[:half]).flatten())[:, 0]
    paired = ~surfaces.roll(half, 0)
    distances = ndimage.distance_transform_edt(paired, sampling=sampling).flatten()[sources]
    return sources, distances, torch.count_nonzero(surfaces.flatten(2), -1)


@pytest.mark.skipif(not _ops.built_for("surface_distance_lists", "cpu", emulate=False),
                    reason="morphaug._C not built")
@pytest.mark.usefixtures("native_policy")
@pytest.mark.parametrize("shape", [(4, 1, 23), (4, 3, 17, 70), (2, 2, 9, 13, 130)])  # lines of 1 to 3 words
@pytest.mark.parametrize("spaced", [False, True])
@pytest.mark.parametrize("density", [0.003, 0.5, 0.97, None])
@pytest.mark.parametrize("symmetric", [True, False])
def test_the_native_surface_lists_are_scipys_surfaces_and_float32_distances_bit_for_bit(shape, spaced, density,
                                                                                         symmetric):
    masks = paired_masks(len(shape) + int(1000 * (density or 1)), shape, density)
    sampling = tuple(np.random.default_rng(1).uniform(0.4, 2.5, len(shape) - 2)) if spaced else None
    half = shape[0] // 2
    sources, distances, counts = _ops.kernels.surface_distance_lists(masks[:half], masks[half:], sampling, max(shape),
                                                                     math.inf, symmetric)
    expected_sources, expected, expected_counts = expected_lists(masks, sampling, symmetric)
    assert torch.equal(sources, expected_sources) and torch.equal(counts.flatten(0, 1), expected_counts)
    voxels = math.prod(shape[2:])
    lonely = (expected_counts.roll(shape[0] // 2, 0).flatten() == 0)[sources // voxels]
    assert lonely.any() and torch.all(distances[lonely] == torch.inf)
    assert (~lonely).any() and torch.equal(distances[~lonely], expected[~lonely])


@pytest.mark.skipif(not _ops.built_for("surface_distance_lists", "cpu", emulate=False),
                    reason="morphaug._C not built")
@pytest.mark.usefixtures("native_policy")
def test_voxels_the_search_leaves_read_the_distance_transform(monkeypatch):
    """Surface voxels far from every voxel of the paired surface (beyond the reach) get -1 from the
    kernel, and the distance transform's value from the metrics."""
    masks = torch.zeros(2, 1, 30, 40, 50, dtype=torch.bool)
    masks[0, 0, 2:28:3, 5:35:4, 3:47:5] = True  # isolated voxels: each its own surface
    masks[1, 0, 14:17, 20, 20:30] = True  # near the middle: up to 15 planes from pred's voxels
    sampling = (1.5, 0.8, 0.8)
    sources, found, _ = _ops.kernels.surface_distance_lists(masks[:1], masks[1:], sampling, 4, math.inf, True)
    _, expected, _ = expected_lists(masks, sampling, True)
    left = found == -1
    assert 0 < left.sum() < len(sources) and torch.equal(found[~left], expected[~left])
    monkeypatch.setattr(_surface_lists, "_SEARCH_REACH", 4)
    row, values, _ = _surface_lists._lists_by_search(masks[:1], masks[1:], sampling, "euclidean", True)
    assert torch.equal(row, sources // masks[0].numel()) and torch.equal(values, expected)


@pytest.mark.skipif(not _ops.built_for("surface_distance_lists", "cpu", emulate=False),
                    reason="morphaug._C not built")
def test_a_search_that_finds_nothing_seeds_no_other():
    """The first voxel finds no voxel of the other surface within the reach: the next one must not
    start from a voxel it never found (the origin, 3 away, where the true distance is 4)."""
    pred, ref = torch.zeros(2, 1, 1, 10, 10, 10, dtype=torch.bool)
    pred[0, 0, 0, 5, 0] = pred[0, 0, 1, 1, 1] = True
    ref[0, 0, 5, 1, 1] = True
    _, found, _ = _ops.kernels.surface_distance_lists(pred, ref, None, 1, math.inf, False)
    assert found.tolist() == [-1.0, -1.0]
    _, found, _ = _ops.kernels.surface_distance_lists(pred, ref, None, 9, math.inf, False)
    assert found.tolist() == [float(np.sqrt(np.float32(42))), 4.0]


@pytest.mark.skipif(not _ops.built_for("surface_distance_lists", "cpu", emulate=False),
                    reason="morphaug._C not built")
@pytest.mark.usefixtures("native_policy")
def test_far_surfaces_spend_the_budget_and_read_the_distance_transform(monkeypatch):
    """A prediction far from its reference: the searches of a slice stop once they have visited
    ``budget`` line offsets per voxel of the slice (-1), and the metrics read the distance transform
    there; with no budget every voxel is searched. Both give the float32 EDT's distances."""
    ref = paired_masks(3, (2, 2, 24, 20, 30), None)[:1]
    pred = ref.roll(12, 2)  # 12 planes off: most of each surface far from the other
    sampling = (1.5, 0.8, 0.8)
    masks = torch.cat([pred, ref])
    _, expected, _ = expected_lists(masks.flatten(0, 1)[:, None], sampling, True)
    _, unlimited, _ = _ops.kernels.surface_distance_lists(pred, ref, sampling, 30, math.inf, True)
    _, found, _ = _ops.kernels.surface_distance_lists(pred, ref, sampling, 30, 0.05, True)
    assert torch.equal(unlimited, expected)
    left = found == -1
    assert 0 < left.sum() < len(found) and torch.equal(found[~left], expected[~left])
    monkeypatch.setattr(_surface_lists, "_SEARCH_BUDGET", 0.05)
    assert torch.equal(_surface_lists._lists_by_search(pred, ref, sampling, "euclidean", True)[1], expected)


@pytest.mark.skipif(not _ops.built_for("binary_values", "cpu", emulate=False), reason="morphaug._C not built")
@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.uint16, torch.uint32, torch.uint64, torch.float16, torch.bfloat16,
                                   torch.float32, torch.float64])
@pytest.mark.parametrize("layout", ["contiguous", "channel slice", "channels-last slice"])
def test_the_native_binary_check_counts_every_other_value(dtype, layout):
    generator = torch.Generator().manual_seed(5)
    values = torch.randint(0, 2, (3, 4, 6, 7, 5), generator=generator)
    x = values.to(dtype)
    if dtype != torch.bool:
        strays = torch.rand(values.shape, generator=generator) < 0.05
        stray = 0.5 if dtype.is_floating_point else 2
        x = torch.where(strays, torch.tensor(stray).to(dtype), x)
        if dtype.is_floating_point:
            x.view(-1)[7] = torch.nan
    if layout == "channel slice":
        x = x[:, 1:]
    elif layout == "channels-last slice":
        x = x.movedim(1, -1).contiguous().movedim(-1, 1)[:, 1:]
    mask, others = _ops.kernels.binary_values(x)
    assert mask.dtype == torch.bool and mask.is_contiguous() and torch.equal(mask, x == 1)
    assert others.dtype == torch.int64 and int(others) == int(((x != 0) & (x != 1)).sum())
    assert dtype == torch.bool or int(others) > 0


SURFACES = torch.zeros(2, 1, 4, 5, dtype=torch.bool)


@pytest.mark.skipif(not _ops.built_for("surface_distance_lists", "cpu", emulate=False),
                    reason="morphaug._C not built")
@pytest.mark.parametrize("call, message", [
    (lambda: _ops.kernels.surface_distance_lists(SURFACES, SURFACES[:1], None, 2, 1.0, True), "the same shape"),
    (lambda: _ops.kernels.surface_distance_lists(*[SURFACES.view(2, 1, 2, 2, 5, 1)] * 2, None, 2, 1.0, True),
     "at most 3 spatial axes"),
    (lambda: _ops.kernels.surface_distance_lists(SURFACES, SURFACES.float(), None, 2, 1.0, True),
     "expected a bool mask"),
    (lambda: _ops.kernels.surface_distance_lists(SURFACES, SURFACES, [1.0], 2, 1.0, True),
     "one value per spatial axis"),
    (lambda: _ops.kernels.surface_distance_lists(SURFACES, SURFACES, [1.0, 0.0], 2, 1.0, True),
     "positive and finite"),
    (lambda: _ops.kernels.surface_distance_lists(SURFACES, SURFACES, None, -1, 1.0, True), "reach must be >= 0"),
    (lambda: _ops.kernels.surface_distance_lists(SURFACES, SURFACES, None, 2, -1.0, True), "budget must be >= 0"),
    (lambda: _ops.kernels.binary_values(SURFACES.to(torch.complex64)), "binary_values: expected a real tensor"),
    (lambda: _ops.kernels.binary_values(SURFACES[0, 0]), "binary_values: expected a .B, C, .spatial. tensor"),
])
def test_bad_inputs_raise_from_the_metrics_kernels(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()

def test_benchmark_row_runs_quick(monkeypatch, capsys):
    output = run_benchmarks(monkeypatch, capsys, "--suite", "metrics", "--device", "cpu", "--quick", "--no-write")
    rows = [line for line in output.splitlines() if line.startswith("| HD95")]
    assert len(rows) == 2 and "surface_distance_metrics" in rows[0] and "adapters.monai" in rows[1], output
    assert all("nan" not in row.lower() and "equal to MONAI's" in row for row in rows), output


def test_benchmark_without_monai_times_the_fused_call_against_the_three_functions(monkeypatch):
    """The GPU machine has no MONAI: the row times the fused call against morphaug's three functions."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_metrics

    monkeypatch.setattr(bench_metrics, "adapters", None)
    monkeypatch.setattr(bench_metrics, "_one_hot", lambda batch, size, device: one_hot(3, (2, 9, 10, 8)))
    row, lesions = bench_metrics.run(torch.device("cpu"), quick=True)  # the BraTS row needs no MONAI
    assert lesions.case.startswith("BraTS 2023 lesion-wise")
    assert row.case == bench_metrics.FUSED and row.ours_s > 0 and row.reference_s > 0
    assert row.reference.startswith("morphaug.metrics hausdorff_distance")
    assert row.note.startswith("monai not installed; equal to the three functions'"), row.note


# ------------------------------------------------------------------ MONAI adapters


def one_hot(seed: int, shape, classes: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """Float one-hot prediction and reference ``(B, classes, *spatial)`` from label maps of blobs."""
    rng = np.random.default_rng(seed)
    spatial = (0,) + (2.0,) * (len(shape) - 1)
    field = ndi.gaussian_filter(rng.standard_normal((classes, *shape)), (0,) + spatial)
    ref = torch.from_numpy(field.argmax(0))
    pred = torch.from_numpy((field + 0.5 * rng.standard_normal(field.shape)).argmax(0))
    pred[0][pred[0] == 2] = 1  # class 2 missing from the first prediction
    return tuple(torch.nn.functional.one_hot(labels, classes).movedim(-1, 1).float() for labels in (pred, ref))


METRIC_ARGS = [
    ("HausdorffDistanceMetric", {}),
    ("HausdorffDistanceMetric", {"percentile": 95, "include_background": True, "reduction": "mean_batch"}),
    ("HausdorffDistanceMetric", {"percentile": 0, "directed": True, "get_not_nans": True}),
    ("HausdorffDistanceMetric", {"distance_metric": "chessboard", "ignore_index": 2, "reduction": "none"}),
    ("SurfaceDistanceMetric", {}),
    ("SurfaceDistanceMetric", {"symmetric": True, "include_background": True, "get_not_nans": True}),
    ("SurfaceDistanceMetric", {"distance_metric": "taxicab", "ignore_index": 1, "reduction": "sum_channel"}),
    ("SurfaceDiceMetric", {"class_thresholds": [1.0, 2.0]}),
    ("SurfaceDiceMetric", {"class_thresholds": [1.0, 1.5, 3.0], "include_background": True, "get_not_nans": True}),
    ("SurfaceDiceMetric", {"class_thresholds": [1.0, 2.0], "distance_metric": "taxicab", "ignore_index": 0}),
    ("SurfaceDiceMetric", {"class_thresholds": [1.0, 2.0], "use_subvoxels": True}),
]
SPACINGS_AT_CALL = [None, 1.5, (0.5, 2.0, 1.25), [(0.5, 2.0, 1.25), (1.0, 1.0, 3.0), (0.5, 2.0, 1.25)]]


@needs_monai
@pytest.mark.parametrize("name, kwargs", METRIC_ARGS, ids=[f"{n}-{sorted(k)}" for n, k in METRIC_ARGS])
def test_adapted_classes_accumulate_and_aggregate_as_monai_s(name, kwargs):
    ours, theirs = getattr(monai_adapters, name)(**kwargs), getattr(monai_metrics, name)(**kwargs)
    for seed, spacing in enumerate(SPACINGS_AT_CALL):
        if kwargs.get("use_subvoxels") and isinstance(spacing, float):
            continue  # MONAI's subvoxel surfaces need one spacing per axis
        pred, ref = one_hot(seed, (3, 10, 12, 11))
        with warnings.catch_warnings():  # MONAI's warnings about empty classes
            warnings.simplefilter("ignore")
            expected = theirs(y_pred=pred, y=ref, spacing=spacing)
            found = ours(y_pred=pred, y=ref, spacing=spacing)
        assert_parity(found, expected.float(),
                      exact=kwargs.get("distance_metric", "euclidean") != "euclidean",
                      rtol=1e-6, atol=0, dtype=torch.float32)
    assert_parity(ours.aggregate(), theirs.aggregate(), exact=False, rtol=1e-6, atol=0, dtype="expected")
    ours.reset()
    assert ours.get_buffer() is None


@needs_monai
def test_adapted_classes_take_lists_and_meta_tensors_and_stay_on_the_device():
    from monai.data import MetaTensor

    pred, ref = one_hot(7, (2, 9, 10))
    metric = monai_adapters.HausdorffDistanceMetric(percentile=95)
    expected = metrics.hausdorff_distance(pred[:, 1:], ref[:, 1:], 95)
    assert_parity(metric([MetaTensor(p) for p in pred], [MetaTensor(r) for r in ref]), expected.float(),
                  exact=True, dtype=torch.float32)
    found = metric(MetaTensor(pred), MetaTensor(ref))
    assert type(found) is torch.Tensor and found.device == pred.device
    assert_parity(found, expected.float(), exact=True, dtype=torch.float32)


@needs_monai
def test_adapted_classes_check_their_own_arguments():
    pred, ref = one_hot(8, (2, 9, 10))
    with pytest.raises(ValueError, match="^All class thresholds need to be >= 0"):  # MONAI's message
        monai_adapters.SurfaceDiceMetric([1.0, -1.0])
    with pytest.raises(ValueError, match=r"^number of classes \(2\) does not match number of class thresholds \(1\)"):
        monai_adapters.SurfaceDiceMetric([1.0])(pred, ref)
    with pytest.raises(ValueError, match="^spacing must be positive and finite"):
        monai_adapters.SurfaceDistanceMetric()(pred, ref, spacing=(1.0, -1.0))
    with pytest.raises(ValueError, match="^y_pred should have at least three dimensions"):
        monai_adapters.SurfaceDistanceMetric()._compute_tensor(pred[0, 0], ref[0, 0])
    with pytest.raises(ValueError, match="^pred must be binary"):
        monai_adapters.HausdorffDistanceMetric()(pred * 0.5, ref)


@needs_monai
@pytest.mark.parametrize("kind", ["meta", "cuda"])
@pytest.mark.parametrize("name, kwargs", METRIC_ARGS[:-1], ids=[f"{n}-{sorted(k)}" for n, k in METRIC_ARGS[:-1]])
def test_adapted_classes_read_nothing_back(name, kwargs, kind, monkeypatch):
    """MONAI's per-batch call of the adapted classes (use_subvoxels aside: MONAI's code), under the rules of
    ``tests/test_device_discipline.py``."""
    pred, ref = one_hot(9, (2, 7, 8, 6))
    metric = getattr(monai_adapters, name)(**kwargs)
    run = DeviceRun(kind, monkeypatch)
    out = run(lambda p, r: metric(y_pred=p, y=r, spacing=[(1.0, 2.0, 0.5), (1.0, 1.0, 1.0)]), On(pred), On(ref))
    assert out.device == run.device and run.reads == []


@needs_monai
def test_adapter_docstring_examples():
    import doctest

    from morphaug.adapters import monai_metrics as module

    assert doctest.testmod(module, raise_on_error=False).failed == 0
