"""Tests of morphaug.transforms on the inputs a pipeline hands them: label sets read from the data,
empty batches and degenerate shapes, bool images, and replayed params.

References: a transform that infers its classes must give what it gives with those classes passed
as ``classes=`` (and draw the same numbers); grey morphology of bool images is SciPy's.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from conftest import assert_parity, count_reads

from morphaug import transforms
from morphaug.transforms import (
    DistanceMap,
    ExpandLabels,
    FillHoles,
    InstanceBoundary,
    KeepLargestComponents,
    LabelBoundary,
    RandBoundaryJitter,
    RandGreyMorphology,
    RandHistogramTransfer,
    RandLabelMorphology,
    RandRemoveComponent,
    RandWassersteinMix,
    SkeletonTarget,
    RemoveSmallComponents,
)

SHAPE = (16, 15)

# The OT transforms run thousands of tiny ops: one intra-op thread (see conftest).
pytestmark = pytest.mark.usefixtures("one_thread")


def gapped_labels(batch=3, shape=SHAPE, seed=0) -> torch.Tensor:
    """int64 index labels of values -1 (no class), 0, 2 and 5: classes with gaps; sample 1 lacks class 5."""
    rng = np.random.default_rng(seed)
    grid = np.indices(shape)
    out = np.zeros((batch, 1, *shape), np.int64)
    for b in range(batch):
        for value in (2, 5):
            if b == 1 and value == 5:
                continue
            for _ in range(2):
                centre = rng.uniform(0, shape).reshape(-1, *([1] * len(shape)))
                out[b, 0][((grid - centre) ** 2).sum(0) <= rng.uniform(2, 5) ** 2] = value
        out[b, 0, :2, :3] = -1
        out[b, 0, 7, 7] = 0  # a hole, for FillHoles
    return torch.from_numpy(out)


def image(batch=3, shape=SHAPE, seed=0) -> torch.Tensor:
    return torch.rand((batch, 1, *shape), generator=torch.Generator().manual_seed(seed))


def seeded(seed=0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------- inferred classes
#: name -> (factory(keys, **kwargs), the classes inference must find in gapped_labels, as classes=)
INFERRED = {
    "RandLabelMorphology": (lambda keys, **kw: RandLabelMorphology(keys, radius=(1, 2), prob=1.0, **kw), (2, 5)),
    "RandBoundaryJitter": (lambda keys, **kw: RandBoundaryJitter(keys, magnitude=(1.0, 3.0), smoothness=2.0,
                                                                 prob=1.0, **kw), (2, 5)),
    "FillHoles": (lambda keys, generator=None, **kw: FillHoles(keys, **kw), (2, 5)),
    "DistanceMap": (lambda keys, generator=None, **kw: DistanceMap(keys, signed=True, **kw), (0, 2, 5)),
    "LabelBoundary": (lambda keys, **kw: LabelBoundary(keys, thickness=(1, 2), side="both", prob=0.7, **kw),
                      (0, 2, 5)),
    "KeepLargestComponents": (lambda keys, generator=None, **kw: KeepLargestComponents(keys, connectivity=1, **kw),
                              (2, 5)),
    "RemoveSmallComponents": (lambda keys, generator=None, **kw: RemoveSmallComponents(keys, min_size=20, **kw),
                              (2, 5)),
    "RandRemoveComponent": (lambda keys, **kw: RandRemoveComponent(keys, prob=1.0, prob_other_class=0.5, **kw),
                            (2, 5)),
}


@pytest.mark.parametrize("dtype", [torch.int64, torch.int16, torch.float32])
@pytest.mark.parametrize("name", list(INFERRED))
def test_inferred_classes_match_explicit_classes(name, dtype):
    factory, classes = INFERRED[name]
    labels = gapped_labels().to(dtype)
    inferred = factory("label", generator=seeded())
    out = inferred(labels)
    explicit = factory("label", generator=seeded(), classes=classes)
    expected = explicit(labels)
    assert out.dtype == expected.dtype and torch.equal(out, expected)
    assert inferred.last_params.keys() == explicit.last_params.keys()
    for key, value in inferred.last_params.items():
        assert torch.equal(value, explicit.last_params[key]), key


def test_inferred_classes_of_the_ot_mix_match_num_classes():
    labels = gapped_labels(batch=2)
    data = {"image": image(batch=2), "label": labels}
    out = RandWassersteinMix("image", "label", prob=1.0, weight=0.5, generator=seeded())(data)
    expected = RandWassersteinMix("image", "label", prob=1.0, weight=0.5, num_classes=6, generator=seeded())(data)
    assert torch.equal(out["label"], expected["label"])  # absent classes 1, 3, 4 claim nothing


def test_values_that_are_no_class_are_kept():
    labels = gapped_labels().float()
    no_class = labels < 0
    for transform in (RandLabelMorphology("label", ops="erosion", radius=2, prob=1.0), FillHoles("label"),
                      RandBoundaryJitter("label", magnitude=3.0, prob=1.0, generator=seeded()),
                      KeepLargestComponents("label"), RemoveSmallComponents("label", min_size=30),
                      RandRemoveComponent("label", prob=1.0, prob_other_class=0.5, generator=seeded())):
        out = transform(labels)
        assert torch.equal(out[no_class], labels[no_class]), type(transform).__name__
        assert set(out.unique().tolist()) <= {-1.0, 0.0, 2.0, 5.0}


def test_background_only_labels_have_no_class_to_change():
    labels = torch.zeros(2, 1, 9, 8, dtype=torch.int64)
    labels[0, 0, 0, 0] = -3
    for transform in (RandLabelMorphology("label", prob=1.0), FillHoles("label"),
                      RandBoundaryJitter("label", magnitude=3.0, prob=1.0), KeepLargestComponents("label"),
                      RemoveSmallComponents("label"), RandRemoveComponent("label", prob=1.0)):
        assert torch.equal(transform(labels), labels)
    sdf = DistanceMap("label")(labels)
    assert sdf.shape == (2, 1, 9, 8)  # background only


def test_inference_refuses_values_it_cannot_count():
    labels = gapped_labels()
    labels[0, 0, 0, 0] = 5000
    with pytest.raises(ValueError, match=r"FillHoles: .*>= 4096.*classes="):
        FillHoles("label")(labels)
    FillHoles("label", classes=(2, 5))(labels)  # given classes: nothing is read


@pytest.mark.usefixtures("native_policy")
@pytest.mark.parametrize("name", ["RandLabelMorphology", "RandBoundaryJitter", "RandRemoveComponent"])
def test_one_read_per_call_whatever_the_keys(name, monkeypatch):
    factory, _ = INFERRED[name]
    labels = gapped_labels()
    data = {"a": labels, "b": labels.flip(-1)}
    reads = count_reads(monkeypatch)
    transform = factory(("a", "b"), generator=seeded())
    out = transform(data)
    assert reads == ["label classes"]
    again = transform(data, params=transform.last_params)  # the draw holds its classes
    assert reads == ["label classes"] and torch.equal(again["a"], out["a"]) and torch.equal(again["b"], out["b"])
    factory(("a", "b"), generator=seeded(), num_classes=6)(data)
    assert reads == ["label classes"]


@pytest.mark.parametrize("name", ["FillHoles", "DistanceMap", "LabelBoundary", "KeepLargestComponents",
                                  "RemoveSmallComponents"])
@pytest.mark.usefixtures("native_policy")
def test_given_classes_read_nothing(name, monkeypatch):
    factory, classes = INFERRED[name]
    reads = count_reads(monkeypatch)
    factory("label", generator=seeded())(gapped_labels())
    assert reads == ["label classes"]
    factory("label", generator=seeded(), classes=classes)(gapped_labels())
    factory("label", generator=seeded(), num_classes=6)(gapped_labels())
    assert reads == ["label classes"]


# --------------------------------------------------------------------------- empty inputs
def concrete_transforms() -> list[str]:
    return [name for name in transforms.__all__ if name != "BatchTransform"]


#: name -> a transform that changes every sample it can (prob 1) and the role of its input
EMPTY_CASES = {
    "RandLabelMorphology": (lambda **kw: RandLabelMorphology("x", prob=1.0, **kw), "label"),
    "RandGreyMorphology": (lambda **kw: RandGreyMorphology("x", prob=1.0), "image"),
    "DistanceMap": (lambda **kw: DistanceMap("x", signed=True, **kw), "label"),
    "LabelBoundary": (lambda **kw: LabelBoundary("x", **kw), "label"),
    "FillHoles": (lambda **kw: FillHoles("x", **kw), "label"),
    "RandBoundaryJitter": (lambda **kw: RandBoundaryJitter("x", prob=1.0, **kw), "label"),
    "KeepLargestComponents": (lambda **kw: KeepLargestComponents("x", independent=False, **kw), "label"),
    "RemoveSmallComponents": (lambda **kw: RemoveSmallComponents("x", min_size=3, **kw), "label"),
    "RandRemoveComponent": (lambda **kw: RandRemoveComponent("x", prob=1.0, prob_other_class=1.0, **kw), "label"),
    "RandHistogramTransfer": (lambda **kw: RandHistogramTransfer("x", prob=1.0), "image"),
    "RandWassersteinMix": (lambda **kw: RandWassersteinMix({"x": "label", "i": "image"}, prob=1.0, **kw), "label"),
    "ExpandLabels": (lambda **kw: ExpandLabels("x", distance=2), "label"),
    "InstanceBoundary": (lambda **kw: InstanceBoundary("x"), "label"),
    "SkeletonTarget": (lambda **kw: SkeletonTarget("x", method="parallel", **kw), "label"),
}
EMPTY_SHAPES = [(0, 1, 8, 8), (2, 1, 0, 8), (2, 1, 8, 0), (0, 1, 0, 8), (1, 1, 4, 0, 5), (2, 0, 8, 8),
                (0, 0, 8, 8), (1, 0, 0, 3, 4)]


def test_empty_cases_cover_every_transform():
    assert set(EMPTY_CASES) == set(concrete_transforms())


@pytest.mark.parametrize("num_classes", [None, 3])
@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
@pytest.mark.parametrize("name", list(EMPTY_CASES))
def test_empty_batches_and_degenerate_shapes(name, shape, num_classes):
    factory, role = EMPTY_CASES[name]
    channels = shape[1]
    if role == "image":
        if num_classes is not None:
            pytest.skip("an image transform has no classes")
        x = torch.rand(shape)
    elif channels == 1:
        x = torch.zeros(shape, dtype=torch.int64)
    else:  # no channel: one-hot labels of no class
        if num_classes is not None:
            pytest.skip("one-hot labels have as many classes as channels")
        x = torch.zeros(shape, dtype=torch.uint8)
    kwargs = {} if num_classes is None else {"num_classes": num_classes}
    transform = factory(**kwargs)
    data = {"x": x, "i": torch.rand(shape[0], 1, *shape[2:])}
    out = transform(data)["x"]
    batch, spatial = shape[0], shape[2:]
    if name == "DistanceMap":
        expected = (torch.float32, (batch, classes_of(x, num_classes, background=True), *spatial))
    elif name == "LabelBoundary":
        expected = (x.dtype, (batch, classes_of(x, num_classes, background=True), *spatial))
    elif name == "InstanceBoundary":
        expected = (x.dtype, (batch, 1, *spatial))
    else:
        expected = (x.dtype, tuple(shape))
    assert type(out) is torch.Tensor and (out.dtype, tuple(out.shape)) == expected
    for key, value in transform.last_params.items():
        assert value.shape[0] == batch, key


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32])
@pytest.mark.parametrize("name", list(EMPTY_CASES))
def test_wide_unsigned_inputs_as_their_values_in_int64(name, dtype):
    """uint16 / uint32 labels and images (16-bit TIFFs), which torch neither orders nor subtracts: each
    transform gives what it gives for the same values in int64 (a top-hat or gradient of an image wraps
    as NumPy's, which the same bits of int64 show)."""
    factory, role = EMPTY_CASES[name]
    if role == "image":
        x = torch.randint(0, 1000, (3, 1, *SHAPE), generator=seeded(1))
    else:
        x = gapped_labels().clamp(min=0)
    results = []
    for source in (x.to(dtype), x):
        torch.manual_seed(2)  # the same draws
        results.append(factory()({"x": source, "i": torch.rand(3, 1, *SHAPE, generator=seeded(3))})["x"])
    ours, wide = results
    assert ours.dtype == (dtype if wide.dtype == torch.int64 else wide.dtype)
    if ours.dtype == dtype:  # the same bits, modulo the width
        wide = wide.to(torch.int64) % 2 ** (8 * dtype.itemsize)
        ours = ours.to(torch.int64) % 2 ** (8 * dtype.itemsize)
    assert torch.equal(ours, wide)


def classes_of(x: torch.Tensor, num_classes, background: bool) -> int:
    """How many classes a transform works on, for empty or all-background labels ``x``."""
    if x.shape[1] != 1:
        return x.shape[1] - (0 if background or x.shape[1] == 0 else 1)
    if num_classes is not None:
        return num_classes - (0 if background else 1)
    return 1 if background else 0  # inferred: background only


def test_empty_batch_of_a_subclass_keeps_its_type():
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    out = RandGreyMorphology("x", prob=1.0)(tv_tensors.Image(torch.rand(0, 1, 8, 8)))
    assert type(out) is tv_tensors.Image and out.shape == (0, 1, 8, 8)


# --------------------------------------------------------------------------- bool images
BOOL_OPS = {"erosion": ndi.grey_erosion, "dilation": ndi.grey_dilation, "opening": ndi.grey_opening,
            "closing": ndi.grey_closing, "white_tophat": ndi.white_tophat, "black_tophat": ndi.black_tophat}


def test_bool_images_match_scipy():
    x = torch.rand(8, 2, 13, 12, generator=seeded(1)) > 0.6
    transform = RandGreyMorphology("x", ops=tuple(BOOL_OPS), radius=(1, 2), prob=0.8, generator=seeded(2))
    out = transform(x)
    assert out.dtype == torch.bool
    params = transform.last_params
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            source = x[b, c].numpy()
            if params["apply"][b]:
                op = BOOL_OPS[transform.ops[params["op"][b]]]
                expected = op(source, footprint=params["footprints"][b].numpy(), mode=transform.mode)
            else:
                expected = source
            assert_parity(out[b, c].numpy(), expected, exact=True, where=f"sample {b}, channel {c}")


def test_bool_images_refuse_the_gradient_up_front():
    x = torch.rand(2, 1, 8, 8) > 0.5
    for prob in (0.0, 1.0):  # whatever is drawn
        with pytest.raises(TypeError, match=r"RandGreyMorphology: .*key 'image'.*bool.*gradient"):
            RandGreyMorphology("image", prob=prob)({"image": x})
    with pytest.raises(TypeError, match=r"RandGreyMorphology: .*input.*bool.*gradient"):
        RandGreyMorphology("image", ops=("erosion", "gradient"))(x)


def test_only_the_drawn_ops_are_computed(monkeypatch):
    from morphaug.transforms import _morphology

    calls = []
    for name in ("grey_erosion", "grey_dilation"):
        real = getattr(_morphology.ndimage, name)
        monkeypatch.setattr(_morphology.ndimage, name,
                            lambda *a, _name=name, _real=real, **kw: calls.append(_name) or _real(*a, **kw))
    x = image(batch=4)
    transform = RandGreyMorphology("x", ops=("erosion", "dilation", "gradient"), prob=1.0, generator=seeded())
    transform(x)
    params = dict(transform.last_params, op=torch.zeros(4, dtype=torch.int64))  # every sample: erosion
    calls.clear()
    out = transform(x, params=params)
    assert calls == ["grey_erosion"]
    calls.clear()
    assert torch.equal(transform(x, params=dict(params, apply=torch.zeros(4, dtype=torch.bool))), x)
    assert calls == []  # nothing drawn, nothing computed
    assert torch.equal(out, _morphology.ndimage.grey_erosion(x, footprint=params["footprints"], mode="reflect"))


# --------------------------------------------------------------------------- replayed params
def replay_cases():
    """``(name, transform, data, {param: (spoil(value), error, match)})``: ways to spoil a drawn param."""
    labels = gapped_labels(batch=4)
    images = image(batch=4)
    onehot = torch.nn.functional.one_hot(labels.clamp(min=0)[:, 0], 6).movedim(-1, 1)
    yield "RandLabelMorphology", RandLabelMorphology("x", ops=("dilation", "erosion"), footprint=("ball", "cube"),
                                                     radius=(1, 2), prob=1.0), labels, {
        "op": (lambda p: p.fill_(2), ValueError, r"params\['op'\] .* 0 \.\. 1"),
        "footprint": (lambda p: p.fill_(7), ValueError, r"params\['footprint'\] .* 0 \.\. 1"),
        "radius": (lambda p: p.fill_(-1), ValueError, r"params\['radius'\] .* >= 0, got -1 \.\. -1"),
        "class_apply": (lambda p: p.long(), TypeError, r"params\['class_apply'\] .*bool"),
        "classes": (lambda p: p.flip(1), ValueError, r"params\['classes'\] must hold ascending classes"),
    }
    yield "RandLabelMorphology-onehot", RandLabelMorphology("x", prob=1.0), onehot, {
        "classes": (lambda p: p + 1, ValueError,
                    r"params\['classes'\] must hold the classes \(1, 2, 3, 4, 5\)"),
    }
    yield "RandLabelMorphology-num_classes", RandLabelMorphology("x", prob=1.0, num_classes=6), labels, {
        "classes": (lambda p: p[:, :2], ValueError, r"params\['classes'\] must have shape \(4, 5\)"),
    }
    yield "RandGreyMorphology", RandGreyMorphology("x", ops=("erosion", "dilation"), radius=(1, 2), prob=1.0), \
        images, {
        "op": (lambda p: p.fill_(-1), ValueError, r"params\['op'\] .* 0 \.\. 1"),
        "footprint": (lambda p: p.fill_(3), ValueError, r"params\['footprint'\] .* 0 \.\. 2"),
        "radius": (lambda p: p.float(), TypeError, r"params\['radius'\] .*int"),
        "footprints": (lambda p: p[..., 1:], ValueError,
                       r"params\['footprints'\] must have shape \(4, 5, 5\).*got \(4, 5, 4\)"),
    }
    yield "DistanceMap", DistanceMap("x"), labels, {}
    yield "FillHoles", FillHoles("x"), labels, {}
    yield "LabelBoundary", LabelBoundary("x", thickness=(1, 3)), labels, {
        "thickness": (lambda p: p.fill_(0), ValueError, r"params\['thickness'\] .* >= 1"),
        "apply": (lambda p: p[:, None], ValueError, r"params\['apply'\] .*\(4,\)"),
    }
    yield "RandBoundaryJitter", RandBoundaryJitter("x", magnitude=(0.5, 1.0), prob=1.0), labels, {
        "magnitude": (lambda p: p.fill_(float("nan")), ValueError, r"params\['magnitude'\] .* >= 0\.0"),
        "field": (lambda p: p[:, :1], ValueError, r"params\['field'\]"),
        "classes": (lambda p: p[:, 1:], ValueError, r"params\['(classes|field)'\]"),
    }
    yield "KeepLargestComponents", KeepLargestComponents("x", num_components=2), labels, {}
    yield "RemoveSmallComponents", RemoveSmallComponents("x", min_size=5), labels, {}
    yield "ExpandLabels", ExpandLabels("x", distance=2), labels, {}
    yield "InstanceBoundary", InstanceBoundary("x", mode="inner"), labels, {}
    yield "SkeletonTarget", SkeletonTarget("x"), labels, {}
    yield "RandRemoveComponent", RandRemoveComponent("x", prob=1.0, prob_other_class=0.5), labels, {
        "component": (lambda p: p.fill_(2.0), ValueError, r"params\['component'\] .* 0\.0 \.\. 1\.0"),
        "other": (lambda p: p.fill_(9), ValueError, r"params\['other'\] must hold column indices below 2"),
        "to_other": (lambda p: p.float(), TypeError, r"params\['to_other'\] .*bool"),
        "classes": (lambda p: p.flip(1), ValueError, r"params\['classes'\] must hold ascending classes"),
    }
    yield "RandHistogramTransfer", RandHistogramTransfer("x", strength=(0.2, 0.4), prob=1.0), images, {
        "partner": (lambda p: p.fill_(4), ValueError, r"params\['partner'\] .* 0 \.\. 3"),
        "strength": (lambda p: p.fill_(1.5), ValueError, r"params\['strength'\] .* 0\.0 \.\. 1\.0"),
    }
    yield "RandWassersteinMix", RandWassersteinMix({"x": "label", "i": "image"}, weight=0.5, prob=1.0), \
        {"x": labels, "i": images}, {
        "partner": (lambda p: p.fill_(-1), ValueError, r"params\['partner'\] .* 0 \.\. 3"),
        "weight": (lambda p: p.long(), TypeError, r"params\['weight'\] .*float"),
    }


REPLAY = {name: (transform, data, bad) for name, transform, data, bad in replay_cases()}


def test_replay_cases_cover_every_transform():
    assert {name.split("-")[0] for name in REPLAY} == set(concrete_transforms())


def drawn(name):
    transform, data, bad = REPLAY[name]
    transform(data)
    return transform, data, bad, transform.last_params


@pytest.mark.parametrize("name", list(REPLAY))
def test_replay_needs_every_drawn_key_and_no_other(name):
    transform, data, _, params = drawn(name)
    owner = type(transform).__name__
    for key in params:
        partial = {k: v for k, v in params.items() if k != key}
        with pytest.raises(ValueError, match=rf"{owner}: params lack '{key}'"):
            transform(data, params=partial)
    with pytest.raises(ValueError, match=rf"{owner}: params\['radii'\] is not a parameter"):
        transform(data, params={**params, "radii": torch.zeros(4)})


@pytest.mark.parametrize("name", [name for name in REPLAY if name not in ("DistanceMap", "FillHoles",
                                                                           "KeepLargestComponents",
                                                                           "RemoveSmallComponents", "ExpandLabels",
                                                                           "InstanceBoundary", "SkeletonTarget")])
def test_replay_checks_batch_size_and_device(name):
    transform, data, _, params = drawn(name)
    owner = type(transform).__name__
    for key, value in params.items():
        with pytest.raises(ValueError, match=rf"{owner}: params\['{key}'\] .*batch size 4"):
            transform(data, params={**params, key: value[:2]})
        with pytest.raises(ValueError, match=rf"{owner}: params\['{key}'\] is on meta"):
            transform(data, params={**params, key: value.to("meta")})


@pytest.mark.parametrize("name", [name for name in REPLAY if REPLAY[name][2]])
def test_replay_checks_dtypes_shapes_and_ranges(name):
    transform, data, bad, params = drawn(name)
    owner = type(transform).__name__
    for key, (spoil, error, match) in bad.items():
        with pytest.raises(error, match=rf"{owner}: {match}"):
            transform(data, params={**params, key: spoil(params[key].clone())})
