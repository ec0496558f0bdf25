"""Regression tests of the traps a newcomer fell into (issue 33).

* a MONAI adapter given a shape that contradicts ``batched`` says "did you mean batched=...?";
* a training step whose transforms hold a ``generator=`` compiles with ``fullgraph=True``;
* torchvision targets that are not label maps (distances, float boundaries) are not Masks, so
  ``v2.ToDtype`` and ``v2.Resize`` do not treat them as masks, and target transforms compose;
* labels that are not integers are refused;
* ImportError and demo hints name installable packages; SurfaceDiceMetric's numpy ``y`` error.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

from morphaug import transforms

_g = torch.Generator().manual_seed(0)
LABELS = (torch.rand(2, 1, 12, 11, generator=_g) * 3).long()
IMAGES = torch.rand(2, 1, 12, 11, generator=_g)


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


# ------------------------------------------------------------------ torch.compile with generator=
RANDOM = {
    "RandLabelMorphology": lambda g: transforms.RandLabelMorphology("label", num_classes=3, prob=1.0, generator=g),
    "RandGreyMorphology": lambda g: transforms.RandGreyMorphology("image", prob=1.0, generator=g),
    "LabelBoundary": lambda g: transforms.LabelBoundary("label", num_classes=3, thickness=(1, 2), generator=g),
    "RandBoundaryJitter": lambda g: transforms.RandBoundaryJitter("label", num_classes=3, prob=1.0, generator=g),
    "RandRemoveComponent": lambda g: transforms.RandRemoveComponent("label", num_classes=3, prob=1.0, generator=g),
    "RandHistogramTransfer": lambda g: transforms.RandHistogramTransfer("image", prob=1.0, generator=g),
}


def _batch():
    return {"label": LABELS, "image": IMAGES}


@pytest.mark.parametrize("name", list(RANDOM))
@pytest.mark.parametrize("seeded", [False, True])
def test_random_transform_compiles_without_a_graph_break(name, seeded, fresh_dynamo):
    transform = RANDOM[name](torch.Generator().manual_seed(3) if seeded else None)
    explained = torch._dynamo.explain(lambda batch: transform(batch))(_batch())
    assert explained.graph_break_count == 0, [str(b.reason)[:300] for b in explained.break_reasons]


@pytest.mark.parametrize("name", list(RANDOM))
def test_compiled_draws_are_eager_draws_from_the_generator(name, fresh_dynamo):
    transform = RANDOM[name](torch.Generator().manual_seed(5))
    compiled = torch.compile(lambda batch: transform(batch), fullgraph=True, backend="eager")
    first, second = compiled(_batch()), compiled(_batch())
    transform.generator.manual_seed(5)
    for out in (first, second):  # the generator advanced between calls, as in eager mode
        expected = transform(_batch())
        for key in ("label", "image"):
            assert torch.equal(out[key], expected[key]), key


def test_training_step_with_generators_compiles_with_fullgraph(fresh_dynamo):
    """The README's pattern: transforms that hold a generator inside a compiled training step."""
    label_aug = transforms.RandLabelMorphology("label", num_classes=3, prob=1.0,
                                               generator=torch.Generator().manual_seed(0))
    image_aug = transforms.RandGreyMorphology("image", prob=1.0, generator=torch.Generator().manual_seed(1))
    sdf = transforms.DistanceMap("label", output_keys="sdf", signed=True, num_classes=3)
    model = torch.nn.Conv2d(1, 3, 3, padding=1)

    def step(batch):
        batch = sdf(image_aug(label_aug(batch)))
        logits = model(batch["image"])
        return torch.nn.functional.cross_entropy(logits, batch["label"][:, 0]) + (logits * batch["sdf"]).mean()

    explained = torch._dynamo.explain(step)(_batch())
    assert explained.graph_break_count == 0, [str(b.reason)[:300] for b in explained.break_reasons]

    def train(function):
        for aug, seed in ((label_aug, 0), (image_aug, 1)):
            aug.generator.manual_seed(seed)
        model.zero_grad()
        losses = []
        for _ in range(2):
            loss = function(_batch())
            loss.backward()
            losses.append(loss.detach())
        return torch.stack(losses), model.weight.grad.clone()

    compiled, eager = train(torch.compile(step, fullgraph=True, backend="aot_eager")), train(step)
    torch.testing.assert_close(compiled, eager)


def test_replayed_draw_compiles_with_fullgraph(fresh_dynamo):
    transform = RANDOM["RandLabelMorphology"](None)
    params = transform.make_params(LABELS, torch.Generator().manual_seed(2))
    compiled = torch.compile(lambda batch, params: transform(batch, params=params), fullgraph=True, backend="eager")
    assert torch.equal(compiled(_batch(), params)["label"], transform(_batch(), params=params)["label"])


def test_copied_and_unpickled_transforms_draw_from_their_own_generator_when_compiled(fresh_dynamo):
    original = RANDOM["RandLabelMorphology"](torch.Generator().manual_seed(4))
    for transform in (copy.deepcopy(original), pickle.loads(pickle.dumps(original))):
        assert transform.generator is not original.generator
        compiled = torch.compile(lambda batch: transform(batch), fullgraph=True, backend="eager")
        out = compiled(_batch())["label"]
        transform.generator.manual_seed(4)
        assert torch.equal(out, transform(_batch())["label"])
        torch._dynamo.reset()


# ------------------------------------------------------------------ labels that are not whole numbers
LABEL_TRANSFORMS = {
    "RandLabelMorphology": lambda: transforms.RandLabelMorphology("label", num_classes=3, prob=1.0),
    "DistanceMap": lambda: transforms.DistanceMap("label", num_classes=3),
    "LabelBoundary": lambda: transforms.LabelBoundary("label", num_classes=3),
    "FillHoles": lambda: transforms.FillHoles("label", num_classes=3),
    "RandBoundaryJitter": lambda: transforms.RandBoundaryJitter("label", num_classes=3, prob=1.0),
    "KeepLargestComponents": lambda: transforms.KeepLargestComponents("label"),
    "RemoveSmallComponents": lambda: transforms.RemoveSmallComponents("label", min_size=2),
    "RandRemoveComponent": lambda: transforms.RandRemoveComponent("label", num_classes=3, prob=1.0),
    "RandWassersteinMix": lambda: transforms.RandWassersteinMix({"image": "image", "label": "label"},
                                                                num_classes=3, prob=1.0),
}


@pytest.mark.parametrize("bad", [0.5, float("nan"), float("inf")])
@pytest.mark.parametrize("name", list(LABEL_TRANSFORMS))
def test_float_labels_that_are_not_whole_numbers_are_refused(name, bad):
    labels = LABELS.float()
    labels[1, 0, 3, 4] = bad
    before = labels.clone()
    with pytest.raises(ValueError, match=rf"{name}: key 'label' is a label map but holds values that are not whole"):
        LABEL_TRANSFORMS[name]()({"label": labels, "image": IMAGES})
    assert torch.equal(labels, before) if bad == bad else torch.equal(labels.isnan(), before.isnan())
    if name != "RandWassersteinMix":  # whose bare tensor is an image
        with pytest.raises(ValueError, match=rf"{name}: input is a label map"):
            LABEL_TRANSFORMS[name]()(labels)


@pytest.mark.parametrize("name", list(LABEL_TRANSFORMS))
def test_float_labels_of_whole_numbers_and_float_one_hot_maps_are_labels(name):
    index = LABELS.float()  # as MONAI loads labels
    onehot = torch.nn.functional.one_hot(LABELS[:, 0], 3).movedim(-1, 1).float()
    transform = LABEL_TRANSFORMS[name]()
    for labels in (index, onehot):
        out = transform({"label": labels, "image": IMAGES})["label"]
        assert out.shape[0] == labels.shape[0]


def test_images_and_integer_labels_are_not_value_checked():
    image = IMAGES.clone()
    image[0, 0, 0, 0] = 0.5
    transforms.RandGreyMorphology("image", prob=1.0)(image)  # an image holds any value
    transforms.RandLabelMorphology({"image": "image", "label": "label"}, num_classes=3)({"image": image,
                                                                                          "label": LABELS})


# ------------------------------------------------------------------ torchvision targets
def _tv():
    pytest.importorskip("torchvision")
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    from morphaug.adapters import torchvision as adapters
    mask = torch.zeros(32, 32, dtype=torch.uint8)
    mask[8:24, 6:20] = 1
    image = torch.rand(3, 32, 32, generator=torch.Generator().manual_seed(0))
    return tv_tensors, v2, adapters, {"image": tv_tensors.Image(image), "mask": tv_tensors.Mask(mask)}


def test_torchvision_targets_compose_and_are_not_masks():
    tv_tensors, v2, adapters, sample = _tv()
    pipeline = v2.Compose([
        adapters.DistanceMap(signed=True, classes=[1], output_key="sdf"),
        adapters.LabelBoundary(classes=[1], output_key="edge"),  # a second target transform on the same sample
        v2.ToDtype({tv_tensors.Image: torch.float32, tv_tensors.Mask: torch.int64, "others": None}),
        v2.Normalize([0.5] * 3, [0.25] * 3),
    ])
    out = pipeline(sample)
    sdf = adapters.DistanceMap(signed=True, classes=[1])(sample["mask"])
    edge = adapters.LabelBoundary(classes=[1])(sample["mask"])
    assert type(out["mask"]) is tv_tensors.Mask and out["mask"].dtype == torch.int64
    for key, expected in (("sdf", sdf), ("edge", edge)):
        assert type(out[key]) is adapters.DenseTarget and type(expected) is adapters.DenseTarget
        assert torch.equal(out[key].as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor)), key
    assert out["sdf"].dtype == torch.float32 and out["sdf"].min() < -1  # not truncated to integers
    assert (out["sdf"] != out["sdf"].round()).any()


def test_torchvision_targets_move_with_the_image():
    tv_tensors, v2, adapters, sample = _tv()
    sample = adapters.DistanceMap(signed=True, classes=[1], output_key="sdf")(sample)
    sdf = sample["sdf"].as_subclass(torch.Tensor)
    flipped = v2.RandomHorizontalFlip(p=1.0)(sample)
    assert type(flipped["sdf"]) is adapters.DenseTarget
    assert torch.equal(flipped["sdf"].as_subclass(torch.Tensor), sdf.flip(-1))
    resized = v2.Resize((48, 48))(sample)  # interpolated as an image (bilinear), not as a mask (nearest)
    assert type(resized["sdf"]) is adapters.DenseTarget and resized["sdf"].shape == (48, 48)
    expected = v2.functional.resize(tv_tensors.Image(sdf[None]), [48, 48])[0].as_subclass(torch.Tensor)
    assert torch.equal(resized["sdf"].as_subclass(torch.Tensor), expected)
    nearest = v2.functional.resize(tv_tensors.Mask(sdf), [48, 48]).as_subclass(torch.Tensor)
    assert not torch.equal(expected, nearest)
    for transform in (v2.RandomResizedCrop(16), v2.RandomRotation(20), v2.RandomAffine(10, (0.1, 0.1)),
                      v2.RandomPerspective(p=1.0), v2.Pad(2), v2.CenterCrop(20), v2.RandomCrop(20)):
        out = transform(sample)
        assert type(out["sdf"]) is adapters.DenseTarget, transform
        assert out["sdf"].shape[-2:] == out["image"].shape[-2:] == out["mask"].shape[-2:], transform
    jittered = v2.ColorJitter(brightness=0.5)(sample)
    assert jittered["sdf"] is sample["sdf"]  # not an image: colour transforms pass it through
    assert v2.ToDtype({adapters.DenseTarget: torch.float16, "others": None})(sample)["sdf"].dtype == torch.float16


def test_torchvision_label_transforms_leave_targets_alone():
    tv_tensors, v2, adapters, sample = _tv()
    sample = adapters.DistanceMap(signed=True, classes=[1], output_key="sdf")(sample)
    out = adapters.RandLabelMorphology(num_classes=2, p=1.0)(sample)
    assert out["sdf"] is sample["sdf"]


# ------------------------------------------------------------------ MONAI metrics given a NumPy y
@pytest.mark.parametrize("name", ["HausdorffDistanceMetric", "SurfaceDistanceMetric", "SurfaceDiceMetric"])
def test_monai_metrics_refuse_a_numpy_y_as_monai_does(name):
    pytest.importorskip("monai")
    from monai import metrics as monai_metrics

    from morphaug.adapters import monai as adapters
    y = torch.zeros(2, 2, 8, 8)
    y[:, 1, 2:6, 2:6] = 1
    y[:, 0] = 1 - y[:, 1]
    kwargs = {"class_thresholds": [1.0, 1.0]} if name == "SurfaceDiceMetric" else {}
    with pytest.raises(ValueError, match=r"^y_pred and y must be PyTorch Tensor\.$"):
        getattr(adapters, name)(**kwargs)(y, y.numpy())
    if name == "SurfaceDiceMetric":  # MONAI's own message (its other two fail with an AttributeError)
        with pytest.raises(ValueError, match=r"^y_pred and y must be PyTorch Tensor\.$"):
            getattr(monai_metrics, name)(**kwargs)(y, y.numpy())


# ------------------------------------------------------------------ install hints that work
def test_demo_names_the_packages_to_install(monkeypatch):
    from morphaug import demo
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    with pytest.raises(SystemExit, match=r"pip install scipy matplotlib$"):
        demo._require_extras()


def test_adapters_name_the_framework_to_install():
    import subprocess
    import sys
    code = ("import sys\n"
            "for name in ('monai', 'torchvision', 'kornia'):\n"
            "    sys.modules[name] = None\n"
            "    try:\n"
            "        __import__('morphaug.adapters.' + name)\n"
            "    except ImportError as error:\n"
            "        assert str(error).endswith(f': pip install {name}'), error\n"
            "    else:\n"
            "        raise AssertionError(name)\n"
            "sys.modules['monai'] = None\n"
            "try:\n"
            "    import morphaug.adapters.monai_metrics\n"
            "except ImportError as error:\n"
            "    assert str(error).endswith(': pip install monai'), error\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


# ------------------------------------------------------------------ MONAI adapters and batched
def _monai():
    pytest.importorskip("monai")
    from monai.data import MetaTensor, list_data_collate

    from morphaug.adapters import monai as adapters
    label = torch.zeros(4, 1, 12, 12, 12)
    label[:, :, 3:9, 3:9, 3:9] = 1
    affine = torch.diag(torch.tensor([1.5, 1.0, 2.0, 1.0], dtype=torch.float64))
    samples = [{"label": MetaTensor(label[i], affine=affine)} for i in range(4)]
    return MetaTensor, list_data_collate, adapters, label, affine, samples


def test_monai_collated_batch_given_per_sample_asks_for_batched_true():
    MetaTensor, list_data_collate, adapters, label, affine, samples = _monai()
    cases = [
        ({"label": label}, {}, r"would have 4 spatial axes as one sample"),  # the (4, 1, 32, 32, 32)
        (list_data_collate(samples), {}, r"is a collated batch \(MetaTensor.is_batch=True\)"),
        ({"label": MetaTensor(label, affine=affine)}, {}, r"MetaTensor of 3 spatial axes .*with a batch axis"),
        ({"label": label[:, :, 0]}, {"num_classes": 2}, r"has 4 label channels as one sample, but num_classes=2"),
        ({"label": label[:, :, 0]}, {"label_format": "index"}, r"but label_format='index' \(one channel\)"),
    ]
    for data, kwargs, why in cases:
        for transform in (adapters.DistanceMapd("label", **kwargs), adapters.LabelBoundaryd("label", **kwargs),
                          adapters.RandLabelMorphologyd("label", **kwargs)):
            name = type(transform).__name__
            with pytest.raises(ValueError, match=rf"^{name}\(batched=False\): key 'label' of shape .*{why}.*; "
                                                 r"did you mean batched=True\?$"):
                transform(data)


def test_monai_one_sample_given_as_a_batch_asks_for_batched_false():
    MetaTensor, list_data_collate, adapters, label, affine, samples = _monai()
    cases = [
        (samples[0], {}, r"MetaTensor of 3 spatial axes \(its metadata\), with no batch axis"),  # the issue's
        ({"label": label[0]}, {"num_classes": 2}, r"has 12 label channels as a batch, but num_classes=2"),
        ({"label": label[0]}, {"label_format": "index"}, r"label_format='index'"),
    ]
    for data, kwargs, why in cases:
        for transform in (adapters.DistanceMapd("label", batched=True, **kwargs),
                          adapters.RandLabelMorphologyd("label", batched=True, **kwargs)):
            name = type(transform).__name__
            with pytest.raises(ValueError, match=rf"^{name}\(batched=True\): key .*{why}.*; "
                                                 r"did you mean batched=False\?$"):
                transform(data)
    image = {"image": MetaTensor(torch.rand(1, 12, 12, 12), affine=affine)}
    with pytest.raises(ValueError, match=r"did you mean batched=False\?"):
        adapters.RandGreyMorphologyd("image", batched=True)(image)
    with pytest.raises(ValueError, match=r"did you mean batched=True\?"):
        adapters.RandGreyMorphologyd("image")(list_data_collate([image, image]))


def test_monai_legitimate_layouts_are_taken():
    """No data is read: what metadata and shapes cannot tell apart is taken as given."""
    np = pytest.importorskip("numpy")
    MetaTensor, list_data_collate, adapters, label, affine, samples = _monai()
    distance = adapters.DistanceMapd("label", classes=[0, 1])
    assert distance(samples[0])["label"].shape == (2, 12, 12, 12)
    assert adapters.DistanceMapd("label", classes=[0, 1], batched=True)(list_data_collate(samples))["label"].shape \
        == (4, 2, 12, 12, 12)
    onehot = torch.cat([1 - label, label], 1)
    assert adapters.DistanceMapd("label", num_classes=2, batched=True)({"label": onehot[:1]})["label"].shape \
        == (1, 2, 12, 12, 12)  # a batch of one one-hot sample
    assert distance({"label": onehot[0]})["label"].shape == (2, 12, 12, 12)  # one one-hot sample
    flat = label[:, :, 6]  # 2-D
    assert adapters.DistanceMapd("label", classes=[0, 1], batched=True)({"label": MetaTensor(flat)})["label"].shape \
        == (4, 2, 12, 12)  # the default affine (4 x 4 identity) says nothing of the rank
    loaded = MetaTensor(flat, affine=affine, meta={"spatial_shape": np.array([12, 12])})  # a 2-D NIfTI's 4 x 4
    assert adapters.DistanceMapd("label", classes=[0, 1], batched=True)({"label": loaded})["label"].shape \
        == (4, 2, 12, 12)
    assert distance({"label": MetaTensor(flat[0], meta={"spatial_shape": np.array([12, 12])})})["label"].shape \
        == (2, 12, 12)


def test_compiled_draws_stay_out_of_cuda_graphs(fresh_dynamo):
    """A CUDA graph would replay one draw forever: the draw op is cudagraph_unsafe, never merged, never recomputed."""
    graphs = []

    def backend(gm, inputs):
        graphs.append(gm)
        return gm

    transform = RANDOM["RandLabelMorphology"](torch.Generator().manual_seed(0))
    torch.compile(lambda batch: transform(batch), backend=backend, fullgraph=True)(_batch())
    draws = [node for node in graphs[0].graph.nodes if node.op == "call_function"
             and str(node.target).startswith("morphaug_random.draw")]
    # apply, class_apply, op, footprint, radius: one op each, in make_params' order
    assert [node.args[0] for node in draws] == ["uniform", "uniform", "randint", "randint", "randint"]
    for tag in (torch.Tag.cudagraph_unsafe, torch.Tag.nondeterministic_seeded):
        assert all(tag in node.target.tags for node in draws)
