"""Tests of the connected-component transforms against their references.

* ``KeepLargestComponents``: MONAI's ``KeepLargestConnectedComponent``, run per sample on the CPU.
* ``RemoveSmallComponents``: MONAI's ``RemoveSmallObjects`` (skimage's ``remove_small_objects``), per sample,
  on each class's binary mask where MONAI would hand a multi-class map to skimage as labels.
* ``RandRemoveComponent``: a NumPy re-implementation of batchgeneratorsv2's
  ``RemoveRandomConnectedComponentFromOneHotEncodingTransform``, on the same draw (``last_params``).

One-hot outputs: MONAI zeroes a removed voxel's channel and leaves a voxel of no class; morphaug makes it
background, so the foreground channels are compared and the background channel must complete them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

from morphaug import _ops
from morphaug.ndimage import _components
from morphaug.transforms import KeepLargestComponents, RandRemoveComponent, RemoveSmallComponents



def _reference(name: str):
    """A reference library's module, imported by the test that compares with it: the tests that
    need none still run where MONAI or scikit-image is missing."""
    return pytest.importorskip(name, exc_type=ImportError)


SHAPE2 = (23, 21)
SHAPE3 = (13, 12, 11)
SLOW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# MONAI calls skimage's remove_small_objects with its deprecated min_size
pytestmark = pytest.mark.filterwarnings("ignore:Parameter `min_size` is deprecated:FutureWarning")


# --------------------------------------------------------------------------- data
def blobs(seed: int, batch: int, shape, num_classes: int = 3, count: int = 4) -> torch.Tensor:
    """int64 index labels (B, 1, *shape): ``count`` balls of random radius per class, many touching,
    so that classes have several components of many sizes (and some samples lack a class)."""
    rng = np.random.default_rng(seed)
    grid = np.indices(shape)
    out = np.zeros((batch, 1, *shape), dtype=np.int64)
    for b in range(batch):
        for k in range(1, num_classes):
            for _ in range(rng.integers(0 if b == 1 else 1, count + 1)):
                centre = rng.uniform(0, shape).reshape(-1, *([1] * len(shape)))
                radius = rng.uniform(0.5, min(shape) / 4)
                out[b, 0][((grid - centre) ** 2).sum(0) <= radius ** 2] = k
    return torch.from_numpy(out)


def plain(x) -> torch.Tensor:
    """A MONAI output as a plain tensor."""
    return torch.as_tensor(x).as_subclass(torch.Tensor)


def onehot(index: torch.Tensor, num_classes: int, dtype=torch.float32) -> torch.Tensor:
    return torch.nn.functional.one_hot(index[:, 0].long(), num_classes).movedim(-1, 1).to(dtype)


def structure(ndim: int, connectivity) -> np.ndarray:
    return ndi.generate_binary_structure(ndim, ndim if connectivity is None else connectivity)


def component_sizes(mask: np.ndarray, connectivity) -> np.ndarray:
    labels, count = ndi.label(mask, structure(mask.ndim, connectivity))
    return np.bincount(labels.ravel(), minlength=count + 1)[1:]


def tie_at_cut(mask: np.ndarray, connectivity, keep: int) -> bool:
    """Whether the ``keep``-th and the next largest component of ``mask`` have the same size (MONAI's
    NumPy sort then decides which stays)."""
    sizes = np.sort(component_sizes(mask, connectivity))[::-1]
    return len(sizes) > keep and sizes[keep - 1] == sizes[keep]


def search_masks(index: np.ndarray, classes, independent: bool) -> list[np.ndarray]:
    """The masks whose components a transform ranks, for one sample ``index (*spatial)``."""
    masks = [index == c for c in classes]
    return masks if independent else [np.any(masks, axis=0)]


def assert_onehot_matches_monai(ours: torch.Tensor, monai: torch.Tensor, classes):
    """Ours equals MONAI's on the filtered channels; every voxel of ours has exactly one class."""
    assert_parity(ours[:, list(classes)], monai[:, list(classes)], exact=True, dtype="expected")
    assert torch.equal(ours.sum(1), torch.ones_like(ours[:, 0]))


# --------------------------------------------------------------------------- KeepLargestComponents
def monai_keep_largest(x: torch.Tensor, **kwargs) -> torch.Tensor:
    """MONAI's KeepLargestConnectedComponent on each sample (it may write into its input: a copy)."""
    transform = _reference("monai.transforms").KeepLargestConnectedComponent(**kwargs)
    return torch.stack([plain(transform(sample.clone())) for sample in x])


@pytest.mark.usefixtures("backend")  # torch and native labelling
@SLOW
@given(seed=st.integers(0, 2**16), ndim=st.sampled_from([2, 3]), connectivity=st.sampled_from([None, 1, 2]),
       num_components=st.integers(1, 3), independent=st.booleans(), classes=st.sampled_from([None, (1,), (1, 2)]),
       onehot_labels=st.booleans())
def test_keep_largest_matches_monai(seed, ndim, connectivity, num_components, independent, classes, onehot_labels):
    index = blobs(seed, 3, SHAPE2 if ndim == 2 else SHAPE3)
    applied = classes or (1, 2)
    assume(not any(tie_at_cut(mask, connectivity, num_components) for sample in index[:, 0].numpy()
                   for mask in search_masks(sample, applied, independent)))
    x = onehot(index, 3) if onehot_labels else index.float()  # MONAI loads labels as float
    ours = KeepLargestComponents("label", num_components, classes, connectivity, independent)(x)
    expected = monai_keep_largest(x, applied_labels=classes, is_onehot=onehot_labels, independent=independent,
                                  connectivity=connectivity, num_components=num_components)
    assert ours.dtype == x.dtype
    if onehot_labels:
        assert_onehot_matches_monai(ours, expected, applied)
    else:
        assert_parity(ours, expected, exact=True, dtype="expected")


def test_keep_largest_ties_keep_the_later_component_as_monai():
    """Equal sizes: the component whose first voxel comes later in raster order stays, as MONAI's reversed
    argsort (for these few components NumPy's sort is deterministic and MONAI keeps the later too)."""
    x = torch.zeros(1, 1, 9, 9)
    x[0, 0, 0, 0:2] = 1  # three components of 2 voxels, one of 1
    x[0, 0, 4, 4:6] = 1
    x[0, 0, 8, 7:9] = 1
    x[0, 0, 2, 8] = 1
    for keep, stays in [(1, [(8, 7), (8, 8)]), (2, [(4, 4), (4, 5), (8, 7), (8, 8)])]:
        ours = KeepLargestComponents("label", keep, connectivity=1)(x)
        assert_parity(ours, monai_keep_largest(x, connectivity=1, num_components=keep), exact=True, dtype="expected")
        assert sorted(map(tuple, ours[0, 0].nonzero().tolist())) == stays


def test_keep_largest_ties_follow_a_stable_descending_sort():
    """Many equal components: the rule (size, then label, both descending) on every sample."""
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.random((4, 1, 30, 30)) < 0.2).long()  # many components of 1 to 4 voxels
    for keep in (1, 3, 7):
        ours = KeepLargestComponents("label", keep, connectivity=1)(x)
        for b in range(4):
            labels, count = ndi.label(x[b, 0].numpy(), structure(2, 1))
            sizes = np.bincount(labels.ravel(), minlength=count + 1)
            sizes[0] = 0
            order = np.argsort(sizes, kind="stable")[::-1][:keep]
            expected = np.isin(labels, order[sizes[order] > 0])
            assert_parity(ours[b, 0].numpy(), expected, exact=True, where=f"keep {keep}, sample {b}")


def test_keep_largest_empty_and_full_slices():
    x = torch.zeros(3, 1, 6, 7, dtype=torch.uint8)
    x[1] = 2  # one class everywhere: one component, kept
    x[2, 0, 1, 1] = x[2, 0, 4, 4] = 1
    out = KeepLargestComponents("label", connectivity=1, num_classes=3)(x)
    assert torch.equal(out[:2], x[:2]) and out[2].sum() == 1 and out.dtype == torch.uint8


# --------------------------------------------------------------------------- RemoveSmallComponents
def monai_remove_small(x: torch.Tensor, affine=None, **kwargs) -> torch.Tensor:
    """MONAI's RemoveSmallObjects on each sample, a MetaTensor with ``affine`` when given."""
    transform = _reference("monai.transforms").RemoveSmallObjects(**kwargs)
    wrap = (lambda t: t) if affine is None else (lambda t: _reference("monai.data").MetaTensor(t, affine=affine))
    return torch.stack([plain(transform(wrap(sample.clone()))) for sample in x])


def monai_removes_equal_sizes() -> bool:
    """Whether the installed MONAI removes a component of exactly ``min_size`` voxels. Its documented rule
    says no; it passes ``min_size`` positionally to skimage's ``remove_small_objects``, which skimage 0.26
    forwards to its inclusive ``max_size`` (before 0.26: the exclusive ``min_size``)."""
    x = torch.zeros(1, 1, 4, 4)
    x[0, 0, 0, :3] = 1
    return bool(monai_remove_small(x, min_size=3).sum() == 0)


def monai_min_size(smallest_kept: int) -> int:
    """MONAI's ``min_size`` that removes the components of fewer than ``smallest_kept`` voxels, here."""
    return smallest_kept - 1 if monai_removes_equal_sizes() else smallest_kept


def monai_remove_small_per_class(index: torch.Tensor, classes, **kwargs) -> torch.Tensor:
    """MONAI on each class's binary mask (one sample at a time), the removed voxels made background."""
    out = index.clone()
    for c in classes:
        mask = (index == c).float()
        kept = monai_remove_small(mask, **kwargs)
        out[(mask > 0) & (kept == 0)] = 0
    return out


@pytest.mark.usefixtures("backend")  # torch and native labelling
@SLOW
@given(seed=st.integers(0, 2**16), ndim=st.sampled_from([2, 3]), connectivity=st.integers(1, 3),
       min_size=st.integers(0, 40), independent=st.booleans(), classes=st.sampled_from([None, (2,), (1, 2)]))
def test_remove_small_matches_monai(seed, ndim, connectivity, min_size, independent, classes):
    connectivity = min(connectivity, ndim)
    index = blobs(seed, 3, SHAPE2 if ndim == 2 else SHAPE3).float()
    ours = RemoveSmallComponents("label", min_size, connectivity, classes=classes, independent=independent)(index)
    monai_size = monai_min_size(min_size)
    if independent:
        expected = monai_remove_small_per_class(index, classes or (1, 2), min_size=monai_size,
                                                connectivity=connectivity)
    else:  # MONAI's union of the foreground (index > 0), then img * kept
        expected = monai_remove_small(index, min_size=monai_size, connectivity=connectivity,
                                      independent_channels=False)
        if classes == (2,):  # the union of class 2 alone: class 1 untouched
            expected = torch.where(index == 1, index, monai_remove_small_per_class(
                index, (2,), min_size=monai_size, connectivity=connectivity))
    assert_parity(ours, expected, exact=True, dtype="expected")


@pytest.mark.parametrize("ndim", [2, 3])
def test_remove_small_onehot_matches_monai_on_foreground_channels(ndim):
    index = blobs(5, 4, SHAPE2 if ndim == 2 else SHAPE3)
    x = onehot(index, 3)
    ours = RemoveSmallComponents("label", min_size=9)(x)
    assert_onehot_matches_monai(ours, monai_remove_small(x, min_size=monai_min_size(9), connectivity=1), (1, 2))
    assert not torch.equal(ours, x)


def test_remove_small_is_strictly_smaller_as_documented():
    """A component of exactly min_size voxels stays: MONAI's documented rule, skimage's max_size = min_size - 1
    (0.26), and the deprecated min_size of skimage before 0.26."""
    x = torch.zeros(1, 1, 8, 8, dtype=torch.long)
    x[0, 0, 0, :3] = 1  # 3 voxels
    x[0, 0, 4, :2] = 1  # 2 voxels
    ours = RemoveSmallComponents("label", min_size=3)(x)
    assert ours.sum() == 3 and ours[0, 0, 0, :3].all()
    skimage = _reference("skimage.morphology").remove_small_objects(x[0, 0].numpy().astype(bool), max_size=2)
    assert_parity(ours[0, 0].numpy().astype(bool), skimage, exact=True)
    assert_parity(ours, monai_remove_small(x.float(), min_size=monai_min_size(3)).long(), exact=True, dtype="expected")
    assert torch.equal(RemoveSmallComponents("label", min_size=2.5)(x), ours)  # fewer than 2.5: 2 and less


@pytest.mark.parametrize("spacing", [(2.0, 1.5), (0.5, 0.7)])
def test_remove_small_by_measure_is_monai_s_voxel_threshold(spacing):
    """by_measure: MONAI turns min_size into ceil(min_size / voxel volume) voxels (its pixdim from the
    MetaTensor), then applies its voxel rule; the same threshold here, with MONAI's documented rule."""
    index = blobs(2, 3, SHAPE2).float()
    transform = RemoveSmallComponents("label", min_size=20.0, sampling=spacing, by_measure=True)
    smallest = transform._smallest_kept(SHAPE2)
    assert smallest == math.ceil(20.0 / (spacing[0] * spacing[1]))
    affine = torch.diag(torch.tensor([*spacing, 1.0], dtype=torch.float64))
    for c in (1, 2):
        mask = (index == c).float()
        measured = monai_remove_small(mask, affine, min_size=20.0, by_measure=True)
        assert torch.equal(measured, monai_remove_small(mask, min_size=math.ceil(20.0 / math.prod(spacing))))
    expected = monai_remove_small_per_class(index, (1, 2), min_size=monai_min_size(smallest))
    ours = transform(index)
    assert torch.equal(ours, expected) and not torch.equal(ours, index)


def test_remove_small_labels_each_class_of_a_multiclass_map():
    """MONAI hands a map of more than two classes to skimage as labels (whole classes smaller than
    min_size go); each class's components are labelled here."""
    x = torch.zeros(1, 1, 8, 8, dtype=torch.long)
    x[0, 0, :4, :4] = 1
    x[0, 0, 7, 7] = 1  # a small component of a large class
    x[0, 0, 5, :2] = 2
    ours = RemoveSmallComponents("label", min_size=3)(x)
    assert ours[0, 0, 7, 7] == 0 and ours[0, 0, :4, :4].eq(1).all() and not ours.eq(2).any()
    assert monai_remove_small(x.float(), min_size=3)[0, 0, 7, 7] == 1  # MONAI: class 1 has 17 voxels


# --------------------------------------------------------------------------- RandRemoveComponent
def ref_remove_component(labels: np.ndarray, onehot_labels: bool, params: dict, transform,
                         order=None, sequential: bool = False) -> np.ndarray:
    """batchgeneratorsv2's RemoveRandomConnectedComponentFromOneHotEncodingTransform, per sample (NumPy),
    with the draws of ``params``: ``np.random.choice(valid)`` is ``valid[floor(component * len(valid))]``,
    the other class is ``classes[other]``. ``sequential``: each class is labelled in the output so far
    (batchgeneratorsv2, classes in ``order``); else in the input (morphaug's convention)."""
    out = labels.copy()
    for b in range(labels.shape[0]):
        if not params["apply"][b]:
            continue
        classes = params["classes"][b]
        for j in order if order is not None else range(len(classes)):
            if not params["class_apply"][b, j]:
                continue
            source = out if sequential else labels
            workon = source[b, classes[j]] != 0 if onehot_labels else source[b, 0] == classes[j]
            if not workon.any():
                continue
            num_voxels = np.prod(workon.shape, dtype=np.uint64)
            lab = _reference("skimage.measure").label(workon, connectivity=transform.connectivity)
            sizes = {i + 1: n for i, n in enumerate(np.bincount(lab.ravel())[1:])}
            valid = [i for i, n in sizes.items() if n < num_voxels * transform.max_fraction]
            if not valid:
                continue
            pick = min(int(np.floor(float(params["component"][b, j]) * len(valid))), len(valid) - 1)
            region = lab == valid[pick]
            other = params["other"][b, j]
            target = classes[other] if params["to_other"][b, j] and other != j else transform.fill_value
            if onehot_labels:
                out[b, classes[j]][region] = 0
                out[b, target][region] = 1
            else:
                out[b, 0][region] = target
    return out


def host(params: dict) -> dict:
    return {name: value.cpu().numpy() for name, value in params.items()}


@pytest.mark.usefixtures("backend")  # torch and native labelling
@SLOW
@given(seed=st.integers(0, 2**16), ndim=st.sampled_from([2, 3]), connectivity=st.sampled_from([None, 1]),
       max_fraction=st.sampled_from([0.02, 0.1, 1.0]), prob_other_class=st.sampled_from([0.0, 0.5, 1.0]),
       fill_value=st.sampled_from([0, 3]), onehot_labels=st.booleans())
def test_remove_component_matches_batchgenerators(seed, ndim, connectivity, max_fraction, prob_other_class,
                                                   fill_value, onehot_labels):
    index = blobs(seed, 4, SHAPE2 if ndim == 2 else SHAPE3, num_classes=4)
    x = onehot(index, 4, torch.uint8) if onehot_labels else index.to(torch.int16)
    transform = RandRemoveComponent("label", prob=0.8, max_fraction=max_fraction, prob_per_class=0.8,
                                    prob_other_class=prob_other_class, fill_value=fill_value,
                                    connectivity=connectivity, num_classes=4,
                                    generator=torch.Generator().manual_seed(seed))
    ours = transform(x)
    expected = ref_remove_component(x.numpy(), onehot_labels, host(transform.last_params), transform)
    assert ours.dtype == x.dtype
    assert_parity(ours.numpy(), expected, exact=True)


def test_remove_component_without_moves_is_batchgenerators_in_any_class_order():
    """With prob_other_class=0 classes do not interact: batchgeneratorsv2's sequential loop, in a random
    class order, gives the same labels."""
    index = blobs(8, 6, SHAPE2, num_classes=4)
    x = onehot(index, 4, torch.uint8)
    transform = RandRemoveComponent("label", prob=1.0, max_fraction=0.2, label_format="onehot",
                                    generator=torch.Generator().manual_seed(1))
    ours = transform(x)
    params = host(transform.last_params)
    for order in ([2, 0, 1], [1, 2, 0]):
        expected = ref_remove_component(x.numpy(), True, params, transform, order=order, sequential=True)
        assert_parity(ours.numpy(), expected, exact=True)
    assert not torch.equal(ours, x)


def test_remove_component_draws_one_eligible_component_uniformly():
    """Two squares of 4 voxels and one of 16 (too large with max_fraction 0.1 of 144): over many samples
    both small squares go, about equally often, the large one never."""
    x = torch.zeros(400, 1, 12, 12, dtype=torch.uint8)
    x[:, :, 0:2, 0:2] = x[:, :, 0:2, 9:11] = 1
    x[:, :, 6:10, 4:8] = 1
    out = RandRemoveComponent("label", prob=1.0, max_fraction=0.1, num_classes=2,
                              generator=torch.Generator().manual_seed(0))(x)
    assert out[:, 0, 6:10, 4:8].all()
    first, second = (~out[:, 0, 0, 0].bool()).sum().item(), (~out[:, 0, 0, 9].bool()).sum().item()
    assert first + second == 400 and 150 < first < 250
    assert torch.equal(out.sum((1, 2, 3)), torch.full((400,), 20))


def test_remove_component_leaves_full_and_empty_samples():
    x = torch.zeros(2, 1, 6, 6, dtype=torch.long)
    x[1] = 1  # one component covering the sample: larger than any fraction < 1
    out = RandRemoveComponent("label", prob=1.0, max_fraction=1.0, num_classes=2)(x)
    assert torch.equal(out, x)


def test_remove_component_replay_and_keys_share_the_draw():
    index = blobs(4, 4, SHAPE2, num_classes=3)
    transform = RandRemoveComponent(("a", "b"), prob=1.0, prob_other_class=0.5, num_classes=3,
                                    generator=torch.Generator().manual_seed(2))
    out = transform({"a": index, "b": onehot(index, 3)})
    assert torch.equal(onehot(out["a"], 3), out["b"])
    again = RandRemoveComponent("x", num_classes=3)(index, params=transform.last_params)
    assert torch.equal(again, out["a"])


# --------------------------------------------------------------------------- all three
TRANSFORMS = {
    "KeepLargestComponents": lambda **kw: KeepLargestComponents("label", **kw),
    "RemoveSmallComponents": lambda **kw: RemoveSmallComponents("label", min_size=6, **kw),
    "RandRemoveComponent": lambda **kw: RandRemoveComponent("label", prob=1.0, **kw),
}


class _FilterCalls(TorchDispatchMode):
    """Records the shapes of the native component filters' and draws' calls."""

    def __init__(self, calls):
        super().__init__()
        self.calls = calls

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace.startswith("morphaug") and func._opname in ("filter_components", "pick_component"):
            self.calls.append(tuple(args[0].shape))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_one_label_call_per_batch(name, monkeypatch):
    """Every sample and class is labelled in one call (of label, or of the native filters):
    no loop over samples or classes."""
    calls = []
    real = _components.label
    monkeypatch.setattr(_components, "label", lambda x, **kw: calls.append(tuple(x.shape)) or real(x, **kw))
    with _FilterCalls(calls):
        TRANSFORMS[name](num_classes=4)(blobs(0, 5, SHAPE3, num_classes=4))
    assert calls == [(5, 3, *SHAPE3)]


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_batched_equals_one_sample_at_a_time(name, device):
    index = blobs(6, 5, SHAPE3).to(device)
    transform = TRANSFORMS[name](num_classes=3, generator=torch.Generator().manual_seed(0)) \
        if name.startswith("Rand") else TRANSFORMS[name](num_classes=3)
    out = transform(index)
    params = transform.last_params
    for b in range(index.shape[0]):
        one = transform(index[b:b + 1], params={k: v[b:b + 1] for k, v in params.items()})
        assert torch.equal(one, out[b:b + 1]), b


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_accelerator_tables_give_the_cpu_results(name, monkeypatch):
    """On an accelerator the component tables hold the most components the masks can hold (their number
    is not read back); on the CPU their number: the same results."""
    index = blobs(9, 4, SHAPE3, num_classes=4)
    kwargs = {"generator": torch.Generator().manual_seed(0)} if name.startswith("Rand") else {}
    transform = TRANSFORMS[name](num_classes=4, **kwargs)
    on_cpu = transform(index)
    monkeypatch.setattr(_components, "_slots", lambda counts, voxels: _components._most_slots(counts.numel(), voxels))
    assert torch.equal(transform(index, params=transform.last_params), on_cpu)
    assert not torch.equal(on_cpu, index)


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int32, torch.uint16, torch.bool, torch.float16])
def test_label_dtypes(name, dtype):
    index = blobs(1, 3, SHAPE2, num_classes=2)
    x = index.to(dtype)
    transform = TRANSFORMS[name](num_classes=2, **({"generator": torch.Generator().manual_seed(0)}
                                                    if name.startswith("Rand") else {}))
    out = transform(x)
    expected = transform(index, params=transform.last_params)
    assert out.dtype == dtype and torch.equal(out, expected.to(dtype))


BAD = [
    (lambda: KeepLargestComponents("l", num_components=0), ValueError, "num_components must be an int >= 1"),
    (lambda: KeepLargestComponents("l", num_components=1.5), ValueError, "num_components"),
    (lambda: KeepLargestComponents("l", connectivity=0), ValueError, r"connectivity must be None \(full\)"),
    (lambda: KeepLargestComponents("l", classes=(-1,)), ValueError, "non-negative"),
    (lambda: RemoveSmallComponents("l", min_size=-1), ValueError, "min_size must be a finite number >= 0"),
    (lambda: RemoveSmallComponents("l", min_size=float("nan")), ValueError, "min_size"),
    (lambda: RemoveSmallComponents("l", min_size=True), ValueError, "min_size"),
    (lambda: RemoveSmallComponents("l", connectivity=None), ValueError, "connectivity must be an int >= 1"),
    (lambda: RemoveSmallComponents("l", sampling=(1.0, 2.0)), ValueError, "only used with by_measure=True"),
    (lambda: RemoveSmallComponents("l", sampling=(1.0, 0.0), by_measure=True), ValueError, "sampling must be"),
    (lambda: RandRemoveComponent("l", max_fraction=1.5), ValueError, r"max_fraction must be a number in \[0, 1\]"),
    (lambda: RandRemoveComponent("l", prob_other_class=-0.5), ValueError, "prob_other_class"),
    (lambda: RandRemoveComponent("l", fill_value=-1), ValueError, "fill_value"),
    (lambda: RandRemoveComponent("l", connectivity=2.0), ValueError, "connectivity"),
]


@pytest.mark.parametrize("build, error, match", BAD)
def test_bad_arguments_fail_at_construction(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_bad_data_fails_clearly():
    x = blobs(0, 2, SHAPE2)
    with pytest.raises(ValueError, match="KeepLargestComponents: connectivity=3 exceeds the 2 spatial axes"):
        KeepLargestComponents("l", connectivity=3)(x)
    with pytest.raises(ValueError, match=r"RemoveSmallComponents: sampling \(1.0, 2.0, 3.0\) does not match 2"):
        RemoveSmallComponents("l", sampling=(1.0, 2.0, 3.0), by_measure=True)(x)
    with pytest.raises(ValueError, match="fill_value=3 is not a channel of one-hot labels with 3 channels"):
        RandRemoveComponent("l", fill_value=3)(onehot(x, 3))
    for dtype, fill in ((torch.uint8, 256), (torch.int16, 70000), (torch.bool, 2)):  # not wrapped, not deep in torch
        with pytest.raises(ValueError, match=f"RandRemoveComponent: fill_value={fill} does not fit index labels"):
            RandRemoveComponent("l", fill_value=fill, num_classes=2)((x > 0).to(dtype))
    with pytest.raises(ValueError, match=r"classes \(1, 5\) do not exist"):
        KeepLargestComponents("l", classes=(1, 5))(onehot(x, 3))
    transform = RandRemoveComponent("l", num_classes=3)
    transform(x)
    with pytest.raises(ValueError, match=r"params\['other'\] must hold column indices below 2"):
        transform(x, params={**transform.last_params, "other": torch.full((2, 2), 2)})
    with pytest.raises(ValueError, match=r"params\['component'\] must hold values in 0.0 .. 1.0"):
        transform(x, params={**transform.last_params, "component": torch.full((2, 2), 1.5)})

# --------------------------------------------------------------------------- the component tables
NATIVE, WHY_NOT = _ops.load_native()
needs_native = pytest.mark.skipif(NATIVE is None, reason=WHY_NOT or "")
TABLE_SHAPES = [(2, 3, 40), (1, 1, 300, 500), (3, 2, 9, 8, 7), (1, 2, 1, 1, 1, 1)]


@pytest.fixture
def cpu_kernels(monkeypatch):
    """The CPU kernels, whatever the module's backend fixture left in the environment."""
    monkeypatch.delenv("MORPHAUG_EMULATE_CUDA", raising=False)
    monkeypatch.delenv("MORPHAUG_BACKEND", raising=False)


def _labelled(shape, seed: int, dtype=torch.int32):
    """SciPy's labels of random masks per slice, and the largest count."""
    rng = np.random.default_rng(seed)
    masks = rng.random(shape) < 0.45
    labels = np.zeros(shape, np.int64)
    for index in np.ndindex(*shape[:2]):
        labels[index] = ndi.label(masks[index])[0]
    return torch.from_numpy(labels).to(dtype), int(labels.max())


@needs_native
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("shape", TABLE_SHAPES)
def test_label_sizes_count_every_label(shape, dtype, cpu_kernels):
    labels, top = _labelled(shape, 1, dtype)
    width = top + 3  # columns past the last label stay 0
    expected = np.stack([np.bincount(labels[b, c].reshape(-1).numpy(), minlength=width)
                         for b in range(shape[0]) for c in range(shape[1])]).reshape(*shape[:2], width)
    for threads in (1, 2, 5):  # 5: chunks of a slice with tables of their own (1x1x300x500)
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            native = _ops.kernels.label_sizes(labels, width)
        finally:
            torch.set_num_threads(before)
        assert_parity(native.numpy(), expected, exact=True)
    assert_parity(_components._label_sizes_torch(labels, width).numpy(), expected, exact=True)


def _filter_reference(masks: np.ndarray, structure: np.ndarray, keep: int, min_size: int) -> np.ndarray:
    """NumPy: per slice, SciPy's labels, the rule, the removed voxels of any channel."""
    out = np.zeros((masks.shape[0], 1, *masks.shape[2:]), bool)
    for b in range(masks.shape[0]):
        for c in range(masks.shape[1]):
            labels, count = ndi.label(masks[b, c], structure)
            sizes = np.bincount(labels.ravel(), minlength=count + 1)
            gone = sizes < min_size
            if keep and count > keep:
                order = sorted(range(1, count + 1), key=lambda lab: (-sizes[lab], -lab))
                gone[order[keep:]] = True
            gone[0] = False
            out[b, 0] |= gone[labels]
    return out


@needs_native
@pytest.mark.parametrize("shape", [(3, 2, 60), (2, 3, 40, 35), (1, 2, 300, 400), (3, 1, 9, 8, 7), (1, 1, 1, 1)])
@pytest.mark.parametrize("keep, min_size", [(1, 0), (2, 0), (0, 5), (0, 1), (3, 4), (0, 0)])
def test_filter_components_matches_scipy_labels_and_the_rule(shape, keep, min_size, cpu_kernels):
    rng = np.random.default_rng(keep * 10 + min_size)
    masks = rng.random(shape) < 0.5
    masks[0, 0].flat[:] = masks[0, 0].flat[::-1]  # blocks of equal sizes: ties broken by label
    hops = keep % 2 + 1  # faces, or faces and edges
    structure = ndi.generate_binary_structure(len(shape) - 2, hops)
    expected = _filter_reference(masks, structure, keep, min_size)
    for threads in (1, 2, 5):  # 5 threads: more than samples, each labelling parallel
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            got = _ops.kernels.filter_components(torch.from_numpy(masks), hops, keep, min_size)
        finally:
            torch.set_num_threads(before)
        assert_parity(got.numpy(), expected, exact=True)
    torch_backend = _components._filter_torch(torch.from_numpy(masks), hops, keep, min_size)
    assert_parity(torch_backend.numpy(), expected, exact=True)


@needs_native
def test_component_kernels_refuse_bad_arguments(cpu_kernels):
    labels = torch.tensor([[[0, 1, 4]]], dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"label 4 outside \[0, 4\)"):
        _ops.kernels.label_sizes(labels, 4)
    with pytest.raises(RuntimeError, match="expected int32 or int64 labels"):
        _ops.kernels.label_sizes(labels.float(), 5)
    with pytest.raises(RuntimeError, match="keep and min_size must be >= 0"):
        _ops.kernels.filter_components(labels > 0, 1, -1, 0)


@needs_native
def test_component_kernels_of_no_channel_or_voxel(cpu_kernels):
    assert _ops.kernels.label_sizes(torch.zeros(2, 0, 5, dtype=torch.int32), 3).shape == (2, 0, 3)
    assert _ops.kernels.label_sizes(torch.zeros(2, 1, 0, dtype=torch.int64), 1).eq(0).all()
    out = _ops.kernels.filter_components(torch.ones(2, 0, 5, dtype=torch.bool), 1, 1, 0)
    assert out.shape == (2, 1, 5) and not out.any()
    assert _ops.kernels.filter_components(torch.ones(2, 3, 0, dtype=torch.bool), 1, 1, 0).shape \
        == (2, 1, 0)


@needs_native
def test_filters_agree_on_the_native_tables_and_the_torch_backend(monkeypatch, cpu_kernels):
    label = blobs(11, 3, SHAPE3, num_classes=4)
    filters = [KeepLargestComponents("label", num_components=2, num_classes=4),
               KeepLargestComponents("label", independent=False, num_classes=4),
               RemoveSmallComponents("label", min_size=9, num_classes=4)]
    native = [f(label) for f in filters]
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    for f, expected in zip(filters, native):
        assert torch.equal(f(label), expected)
