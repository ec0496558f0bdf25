"""MONAI adapters: per-sample Dataset/DataLoader pipelines, batched Compose, replay against the core."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

monai = pytest.importorskip("monai")
from monai.data import DataLoader, Dataset, MetaTensor, list_data_collate  # noqa: E402
from monai.transforms import Compose  # noqa: E402
from monai.utils import MAX_SEED, set_determinism  # noqa: E402

from morphaug import transforms as core  # noqa: E402
from morphaug.adapters.monai import (  # noqa: E402
    DistanceMapd,
    FillHolesd,
    KeepLargestComponentsd,
    LabelBoundaryd,
    RandBoundaryJitterd,
    RandGreyMorphologyd,
    RandLabelMorphologyd,
    RandRemoveComponentd,
    RemoveSmallComponentsd,
)

SHAPE = (12, 12, 12)


def make_sample(i: int) -> dict:
    """One dict sample: MetaTensor label (3 classes, float as MONAI loads it) and image, plus other keys."""
    g = torch.Generator().manual_seed(i)
    label = torch.zeros(1, *SHAPE)
    label[:, 2:9, 2:9, 3:10] = 1
    label[:, 5:7, 5:7, 5:7] = 2
    label[:, 3 + i % 3, 4, 4] = 0  # a hole of class 1, differing per sample
    affine = torch.diag(torch.tensor([1.5, 1.0, 2.0, 1.0], dtype=torch.float64))
    meta = {"filename_or_obj": f"case{i}.nii.gz"}
    return {
        "label": MetaTensor(label, affine=affine, meta=dict(meta)),
        "image": MetaTensor(torch.rand(1, *SHAPE, generator=g), affine=affine, meta=dict(meta)),
        "weight": torch.full((2,), float(i)),
        "name": f"case{i}",
    }


def assert_same_meta(out: MetaTensor, ref: MetaTensor):
    assert isinstance(out, MetaTensor)
    assert out.is_batch == ref.is_batch
    torch.testing.assert_close(out.affine, ref.affine)
    assert out.meta["filename_or_obj"] == ref.meta["filename_or_obj"]


def test_import_is_lazy_and_missing_framework_names_the_package():
    code = (
        "import sys\n"
        "import morphaug.adapters\n"
        "assert not {'monai', 'torchvision', 'kornia'} & set(sys.modules), sorted(sys.modules)\n"
        "for name in ('monai', 'torchvision', 'kornia'):\n"
        "    sys.modules[name] = None\n"
        "    try:\n"
        "        __import__('morphaug.adapters.' + name)\n"
        "    except ImportError as error:\n"
        "        assert f'pip install {name}' in str(error) and '[' not in str(error), error\n"
        "    else:\n"
        "        raise AssertionError(name)\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("seed", [0, 7])
def test_per_sample_matches_core_with_documented_generator(seed):
    """One sample: the core on x[None] with torch.Generator().manual_seed(R.randint(MAX_SEED))."""
    sample = make_sample(1)
    t = RandLabelMorphologyd(["label"], prob=1.0, radius=(1, 2), num_classes=3).set_random_state(seed)
    out = t(sample)
    expected_seed = np.random.RandomState(seed).randint(MAX_SEED)
    ref_core = core.RandLabelMorphology("label", prob=1.0, radius=(1, 2), num_classes=3)
    batch = sample["label"].as_subclass(torch.Tensor)[None]
    params = ref_core.make_params(batch, torch.Generator().manual_seed(int(expected_seed)))
    expected = ref_core(batch, params=params)[0]
    assert torch.equal(out["label"].as_subclass(torch.Tensor), expected)
    assert not torch.equal(expected, sample["label"].as_subclass(torch.Tensor))  # the draw changed something
    for name, value in params.items():  # last_params is that draw
        assert torch.equal(t.last_params[name], value)
    assert_same_meta(out["label"], sample["label"])
    assert out["image"] is sample["image"] and out["name"] == "case1" and out["weight"] is sample["weight"]
    assert out["label"].shape == sample["label"].shape


def dataset_pipeline():
    return Compose([
        FillHolesd("label"),
        RandLabelMorphologyd("label", prob=0.8, radius=(1, 2), num_classes=3),
        RandGreyMorphologyd("image", prob=0.8),
    ])


def batch_pipeline():
    return Compose([
        RandBoundaryJitterd("label", prob=0.7, num_classes=3, magnitude=(0.5, 1.5), batched=True),
        LabelBoundaryd("label", output_keys="edge", thickness=(1, 2), classes=[1, 2], batched=True),
        DistanceMapd("label", output_keys="sdf", signed=True, classes=[1, 2], spacing_from_meta=True,
                     batched=True),
    ])


def run_pipeline(device, num_workers=0):
    loader = DataLoader(Dataset([make_sample(i) for i in range(4)], transform=dataset_pipeline()),
                        batch_size=4, num_workers=num_workers, collate_fn=list_data_collate)
    batch = next(iter(loader))
    batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    post = batch_pipeline()
    return batch, post, post(batch)


def test_dataset_dataloader_then_batched_compose(device):
    set_determinism(seed=0)
    try:
        batch, post, out = run_pipeline(device)
        set_determinism(seed=0)
        _, _, again = run_pipeline(device)
    finally:
        set_determinism(seed=None)
    # reproducible end to end
    for key in ("label", "image", "edge", "sdf"):
        assert torch.equal(out[key], again[key]), key
    # the worker stage changed labels and images per sample; labels stay labels
    originals = list_data_collate([make_sample(i) for i in range(4)])
    assert not torch.equal(batch["label"].cpu(), originals["label"])
    assert set(batch["label"].unique().tolist()) <= {0.0, 1.0, 2.0}
    # types, devices and batched metadata preserved; other keys untouched
    for key in ("label", "edge", "sdf", "image"):
        assert out[key].device.type == device.type
        assert_same_meta(out[key], batch["label"] if key != "image" else batch["image"])
        assert out[key].is_batch and out[key].affine.shape == (4, 4, 4)
    assert out["image"] is batch["image"] and out["name"] == [f"case{i}" for i in range(4)]
    assert out["edge"].shape == (4, 2, *SHAPE) and out["sdf"].shape == (4, 2, *SHAPE)
    # each batched step equals the core on the same input with the same draw
    jitter, boundary, distance = post.transforms
    labels = batch["label"].as_subclass(torch.Tensor)
    jittered = jitter.core(labels, params=jitter.last_params)
    assert torch.equal(out["label"].as_subclass(torch.Tensor), jittered)
    assert torch.equal(out["edge"].as_subclass(torch.Tensor), boundary.core(jittered, params=boundary.last_params))
    sdf = core.DistanceMap("label", signed=True, classes=[1, 2], sampling=(1.5, 1.0, 2.0))(jittered)
    assert torch.equal(out["sdf"].as_subclass(torch.Tensor), sdf)
    assert not torch.equal(sdf, core.DistanceMap("label", signed=True, classes=[1, 2])(jittered))


def test_dataloader_worker_process_and_pickling():
    set_determinism(seed=3)
    try:
        batch, _, _ = run_pipeline(torch.device("cpu"), num_workers=1)
        set_determinism(seed=3)
        again, _, _ = run_pipeline(torch.device("cpu"), num_workers=1)
    finally:
        set_determinism(seed=None)
    assert isinstance(batch["label"], MetaTensor) and batch["label"].shape == (4, 1, *SHAPE)
    assert torch.equal(batch["label"], again["label"]) and torch.equal(batch["image"], again["image"])
    restored = pickle.loads(pickle.dumps(batch_pipeline()))
    assert isinstance(restored.transforms[0], RandBoundaryJitterd)


def test_keys_map_to_roles():
    """One mapping of keys to roles for a whole pipeline: each transform changes its roles, the rest pass through."""
    roles = {"label": "label", "image": "image"}
    sample = make_sample(3)
    out = Compose([
        RemoveSmallComponentsd(roles, min_size=2, num_classes=3),
        RandLabelMorphologyd(roles, prob=1.0, radius=1, num_classes=3),
        RandGreyMorphologyd(roles, prob=1.0),
        DistanceMapd(roles, output_keys=("sdf", "sdf_image"), classes=[2], spacing_from_meta=True),
    ]).set_random_state(0)(sample)
    expected = Compose([
        RemoveSmallComponentsd("label", min_size=2, num_classes=3),
        RandLabelMorphologyd("label", prob=1.0, radius=1, num_classes=3),
        RandGreyMorphologyd("image", prob=1.0),
        DistanceMapd("label", output_keys="sdf", classes=[2], spacing_from_meta=True),
    ]).set_random_state(0)(sample)
    assert set(out) == set(expected)  # an image key's output key is not written
    for key in ("label", "image", "sdf"):
        assert torch.equal(out[key].as_subclass(torch.Tensor), expected[key].as_subclass(torch.Tensor)), key
    grey = RandGreyMorphologyd(roles, prob=1.0).set_random_state(0)
    assert grey.core.roles == roles and grey(sample)["label"] is sample["label"]


def test_set_random_state_reproduces_and_varies():
    sample = make_sample(0)
    t = RandGreyMorphologyd("image", prob=1.0, radius=(1, 3))
    first = t.set_random_state(11)(sample)["image"]
    second = t.set_random_state(11)(sample)["image"]
    assert torch.equal(first, second)
    outputs = {t.set_random_state(s)(sample)["image"].sum().item() for s in range(6)}
    assert len(outputs) > 1


def test_prob_is_per_sample_on_a_batch():
    batch = list_data_collate([make_sample(i) for i in range(8)])
    t = RandGreyMorphologyd("image", prob=0.5, batched=True).set_random_state(5)
    out = t(batch)["image"].as_subclass(torch.Tensor)
    applied = t.last_params["apply"]
    assert 0 < applied.sum() < 8 and t.prob == 0.5
    same = (out == batch["image"].as_subclass(torch.Tensor)).flatten(1).all(1)
    assert torch.equal(same[~applied], torch.ones_like(same[~applied]))
    none = RandGreyMorphologyd("image", prob=0.0, batched=True).set_random_state(5)(batch)["image"]
    assert torch.equal(none, batch["image"])


def test_missing_keys():
    sample = make_sample(0)
    del sample["image"]
    t = RandGreyMorphologyd(["label", "image"], prob=1.0)
    with pytest.raises(KeyError, match="image"):
        t(sample)
    out = RandGreyMorphologyd(["image"], prob=1.0, allow_missing_keys=True)(sample)
    assert out.keys() == sample.keys() and out["label"] is sample["label"]
    both = FillHolesd(["label", "other"], allow_missing_keys=True)(sample)
    assert "other" not in both and sample["label"][0, 3, 4, 4] == 0 and both["label"][0, 3, 4, 4] == 1


def test_distance_map_spacing_from_meta_per_sample_and_errors():
    sample = make_sample(2)
    out = DistanceMapd("label", output_keys="dist", classes=[2], spacing_from_meta=True)(sample)
    expected = core.DistanceMap("label", classes=[2], sampling=(1.5, 1.0, 2.0))(sample["label"][None])[0]
    assert torch.equal(out["dist"].as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))
    assert_same_meta(out["dist"], sample["label"]) and out["label"] is sample["label"]
    with pytest.raises(TypeError, match="MetaTensor"):
        DistanceMapd("label", classes=[2], spacing_from_meta=True)({"label": torch.zeros(1, *SHAPE)})
    with pytest.raises(ValueError, match="euclidean"):
        DistanceMapd("label", metric="taxicab", spacing_from_meta=True)
    mixed = [make_sample(0), make_sample(1)]
    mixed[1]["label"].affine = torch.eye(4, dtype=torch.float64)
    with pytest.raises(ValueError, match="one spacing"):
        DistanceMapd("label", classes=[2], spacing_from_meta=True, batched=True)(list_data_collate(mixed))


def test_bad_arguments():
    with pytest.raises(TypeError, match="'generator'"):  # randomness comes from set_random_state
        RandLabelMorphologyd("label", num_classes=2, generator=torch.Generator())
    with pytest.raises(ValueError):
        RandLabelMorphologyd("label", prob=2.0, num_classes=2)
    with pytest.raises(ValueError, match="shape"):  # batched=True on one sample: too few dims for the core
        RandGreyMorphologyd("image", prob=1.0, batched=True)({"image": torch.rand(1, 8, 8)})


def component_sample(i: int) -> dict:
    """make_sample with stray components: a voxel of class 1, two voxels of class 2."""
    sample = make_sample(i)
    sample["label"][:, 11, 11, 11] = 1
    sample["label"][:, 0, 0, i % 3:i % 3 + 2] = 2
    return sample


def test_component_transforms_per_sample_in_compose():
    """KeepLargestComponentsd is MONAI's KeepLargestConnectedComponentd; RemoveSmallComponentsd measures in the
    MetaTensor's pixdim; RandRemoveComponentd is the core with the documented generator."""
    from monai.transforms import KeepLargestConnectedComponentd

    sample = component_sample(1)
    label = sample["label"].as_subclass(torch.Tensor)
    kept = KeepLargestComponentsd("label")(sample)
    expected = KeepLargestConnectedComponentd("label")({"label": sample["label"].clone()})["label"]
    assert torch.equal(kept["label"].as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))
    assert not torch.equal(expected.as_subclass(torch.Tensor), label)
    assert_same_meta(kept["label"], sample["label"]) and kept["image"] is sample["image"]
    pipeline = Compose([
        RemoveSmallComponentsd("label", min_size=5.0, by_measure=True),  # mm^3: 3 mm^3 per voxel
        RandRemoveComponentd("label", prob=1.0, max_fraction=0.5, num_classes=3),
    ]).set_random_state(4)
    out = pipeline(sample)
    small = core.RemoveSmallComponents("label", min_size=5.0, sampling=(1.5, 1.0, 2.0), by_measure=True)(label[None])
    assert small[0, 0, 11, 11, 11] == 0 and small[0, 0, 0, 0, 1] == 2  # 1 voxel is 3 mm^3, 2 voxels 6 mm^3
    assert not torch.equal(small, core.RemoveSmallComponents("label", min_size=5.0)(label[None]))
    rand = pipeline.transforms[1]
    expected = rand.core(small, params=rand.last_params)[0]
    assert torch.equal(out["label"].as_subclass(torch.Tensor), expected) and not torch.equal(expected, small[0])
    assert_same_meta(out["label"], sample["label"])


def test_component_transforms_batched_in_compose(device):
    batch = list_data_collate([component_sample(i) for i in range(4)])
    batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    pipeline = Compose([
        KeepLargestComponentsd("label", classes=[2], connectivity=1, batched=True),
        RemoveSmallComponentsd("label", min_size=3.0, by_measure=True, batched=True),
        RandRemoveComponentd("label", prob=0.5, max_fraction=0.5, num_classes=3, batched=True),
    ]).set_random_state(0)
    out = pipeline(batch)
    label = batch["label"].as_subclass(torch.Tensor)
    keep, remove, rand = pipeline.transforms
    expected = core.KeepLargestComponents("label", classes=[2], connectivity=1)(label)
    expected = core.RemoveSmallComponents("label", min_size=3.0, sampling=(1.5, 1.0, 2.0), by_measure=True)(expected)
    expected = rand.core(expected, params=rand.last_params)
    assert torch.equal(out["label"].as_subclass(torch.Tensor), expected)
    assert out["label"].is_batch and out["label"].device.type == device.type and out["image"] is batch["image"]
    assert 0 < int(rand.last_params["apply"].sum()) < 4


# --- the drop-in layer: MONAI's post-processing transforms under MONAI's names -------------------------------

import warnings  # noqa: E402

import monai.transforms as monai_transforms  # noqa: E402

import morphaug.adapters.monai as monai_adapters  # noqa: E402

DROP_INS = ["KeepLargestConnectedComponent", "RemoveSmallObjects", "FillHoles", "DistanceTransformEDT",
            "LabelToContour", "LabelFilter"]


def random_labels(seed: int, onehot: bool = False, dtype=torch.int64, channels: int = 3) -> torch.Tensor:
    """A sample ``(C, *spatial)`` of 2 or 3 spatial axes: a few boxes of labels and of background drawn over
    each other (holes, nested labels, labels touching the border, few components: MONAI's unstable
    argsort ranks at most 16 sizes stably); sometimes empty or one label everywhere."""
    g = torch.Generator().manual_seed(seed)
    rank = 2 + seed % 2
    shape = [int(v) for v in torch.randint(4, 11 if rank == 2 else 8, (rank,), generator=g)]
    classes = channels if onehot else int(torch.randint(2, 5, (), generator=g))
    index = torch.zeros(shape, dtype=torch.int64)
    kind = seed % 7
    if kind == 5:
        index.fill_(int(torch.randint(0, classes, (), generator=g)))  # empty or full
    elif kind != 6:
        boxes = int(torch.randint(2, 10, (), generator=g))
        for box in range(boxes):
            last = box == boxes - 1 and min(shape) >= 3  # the last box: 3 or more wide, with a hole
            lo = [int(torch.randint(0, n - 2 if last else n, (), generator=g)) for n in shape]
            hi = [min(n, a + int(torch.randint(3 if last else 1, 7, (), generator=g))) for a, n in zip(lo, shape)]
            value = int(torch.randint(1 if onehot or last else 0, classes, (), generator=g))
            index[tuple(slice(a, b) for a, b in zip(lo, hi))] = value
            if last:  # background, or another label (enclosed labels are MONAI's holes too)
                other = int(torch.randint(0, classes, (), generator=g))
                inner = 0 if onehot or torch.rand((), generator=g) < 0.7 else other
                index[tuple(slice(a + 1, b - 1) for a, b in zip(lo, hi))] = inner
    if onehot:
        out = torch.nn.functional.one_hot(index, classes).movedim(-1, 0)
        if seed % 3 == 0:  # overlapping channels: MONAI treats them independently
            out[1] |= torch.roll(out[2 % classes], 1, 0)
        return out.to(dtype)
    return index[None].to(dtype)


def monai_result(name: str, args: dict, img):
    """MONAI's own class on a copy (its KeepLargestConnectedComponent writes into a tensor input)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(monai_transforms, name)(**args)(img.clone() if isinstance(img, torch.Tensor) else img.copy())


def assert_same(out, ref, meta=True):
    """``out`` is MONAI's ``ref``: container, dtype, shape, device, values and (``meta``) affine."""
    assert type(out) is type(ref), (type(out), type(ref))
    if isinstance(ref, np.ndarray):
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
        return
    assert out.dtype == ref.dtype and out.shape == ref.shape and out.device == ref.device
    torch.testing.assert_close(out.as_subclass(torch.Tensor), ref.as_subclass(torch.Tensor), rtol=1e-6, atol=1e-6)
    if isinstance(ref, MetaTensor) and meta:
        torch.testing.assert_close(out.affine, ref.affine)


def drop_in_cases():
    """(name, arguments, sample) over the arguments each class takes, randomised."""
    cases = []
    for seed in range(40):
        g = np.random.default_rng(seed)
        onehot = bool(seed % 2)
        dtype = [torch.int64, torch.float32, torch.uint8][seed % 3]
        img = random_labels(seed, onehot=onehot, dtype=dtype)
        connectivity = [None, 1, 2][seed % 3]
        applied = None if seed % 4 < 2 else [int(v) for v in g.choice(np.arange(1, 4), 2, replace=False)]
        if onehot and applied is not None:
            applied = [v % img.shape[0] for v in applied]
        cases.append(("KeepLargestConnectedComponent", {
            "applied_labels": applied, "independent": bool(seed % 5 != 1), "connectivity": connectivity,
            "num_components": [1, 2, 0, 1][seed % 4], "is_onehot": None if seed % 6 else onehot}, img))
        cases.append(("FillHoles", {"applied_labels": applied, "connectivity": connectivity}, img))
        small = {"min_size": int(g.integers(1, 8)), "connectivity": 1 + seed % 2,
                 "independent_channels": bool(seed % 3)}
        binary = img if onehot else (img > 0).to(dtype)
        cases.append(("RemoveSmallObjects", small, binary))
        cases.append(("RemoveSmallObjects", small, img))
        if seed % 4 == 0:
            cases.append(("RemoveSmallObjects", {**small, "by_measure": True, "pixdim": 0.5 + seed % 3}, binary))
        cases.append(("DistanceTransformEDT", {"sampling": None if seed % 2 else [1.0 + seed % 3] * (img.ndim - 1)},
                      img))
        cases.append(("LabelToContour", {}, (img > 0).float() if seed % 2 else img.float()))
        cases.append(("LabelFilter", {"applied_labels": applied or 1}, img))
    return cases


CASES = drop_in_cases()


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32])
@pytest.mark.parametrize("name", DROP_INS)
def test_drop_ins_take_wide_unsigned_labels(name, dtype):
    """uint16 / uint32 label tensors (16-bit TIFFs), which torch neither orders nor promotes: each drop-in
    gives, in the input's dtype, MONAI's values for the same labels in int64 (LabelToContour takes floats)."""
    if name == "LabelToContour":
        pytest.skip("LabelToContour takes float images (MONAI's raises for integer ones)")
    args = {"applied_labels": [1, 3, 70000]} if name == "LabelFilter" else (
        {"min_size": 4, "independent_channels": False} if name == "RemoveSmallObjects" else {})
    for seed in range(8):
        img = random_labels(seed, onehot=bool(seed % 2))
        out = torch.as_tensor(getattr(monai_adapters, name)(**args)(img.to(dtype)))
        ref = torch.as_tensor(monai_result(name, args, img))
        assert out.dtype == (dtype if ref.dtype == torch.int64 else ref.dtype)
        torch.testing.assert_close(out.to(ref.dtype).as_subclass(torch.Tensor), ref.as_subclass(torch.Tensor))


@pytest.mark.parametrize("name, args, img", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_drop_ins_match_monai_per_sample_and_batched(name, args, img):
    """Each drop-in gives MONAI's result, in MONAI's container, for NumPy, tensor and MetaTensor inputs,
    leaves its input alone, and gives per sample what it gives a batch of such samples."""
    ours = getattr(monai_adapters, name)(**args)
    affine = torch.diag(torch.tensor([0.5, 2.0, 1.0, 1.0], dtype=torch.float64)[-img.ndim:])
    for sample in (img.numpy(), img, MetaTensor(img, affine=affine, meta={"filename_or_obj": "x"})):
        before = sample.copy() if isinstance(sample, np.ndarray) else sample.clone()
        out = ours(sample)
        # MONAI's DistanceTransformEDT returns a new MetaTensor without the input's metadata; its drop-in keeps it
        assert_same(out, monai_result(name, args, sample), meta=name != "DistanceTransformEDT")
        assert (np.array_equal(sample, before) if isinstance(sample, np.ndarray) else torch.equal(sample, before))
        if isinstance(sample, MetaTensor):
            assert out.meta["filename_or_obj"] == "x"
            torch.testing.assert_close(out.affine, sample.affine)
    batch = torch.stack([img, torch.flip(img, (1,)), torch.zeros_like(img)])
    batched = getattr(monai_adapters, name)(**args, batched=True)(batch)
    expected = torch.stack([torch.as_tensor(ours(sample)) for sample in batch])
    torch.testing.assert_close(torch.as_tensor(batched).as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))


@pytest.mark.parametrize("name", DROP_INS)
def test_drop_in_dictionary_twins(name):
    """``<Name>d`` (and MONAI's ``D``/``Dict`` aliases) apply the array class on each present key."""
    img = random_labels(1)
    array = getattr(monai_adapters, name)(**({"applied_labels": [1]} if name == "LabelFilter" else {}))
    dictionary = getattr(monai_adapters, f"{name}d")(
        ["label", "missing"], allow_missing_keys=True, **({"applied_labels": [1]} if name == "LabelFilter" else {}))
    out = dictionary({"label": img, "name": "x"})
    assert out["name"] == "x" and "missing" not in out
    torch.testing.assert_close(out["label"], array(img))
    assert getattr(monai_adapters, f"{name}D") is getattr(monai_adapters, f"{name}Dict") is type(dictionary)
    with pytest.raises(KeyError):
        getattr(monai_adapters, f"{name}d")("missing", **({"applied_labels": 1} if name == "LabelFilter" else {}))(
            {"label": img})


def test_drop_ins_in_a_monai_dataloader_and_on_a_collated_batch():
    samples = []
    for seed in range(0, 8, 2):  # 2-D samples of up to 9 x 9, padded to 9 x 9
        label = random_labels(seed, dtype=torch.float32)
        label = torch.nn.functional.pad(label, (0, 9 - label.shape[2], 0, 9 - label.shape[1]))
        samples.append({"label": MetaTensor(label)})
    pipeline = [monai_adapters.FillHolesd("label"), monai_adapters.KeepLargestConnectedComponentd("label"),
                monai_adapters.RemoveSmallObjectsd("label", min_size=2)]
    loader = DataLoader(Dataset(samples, Compose(pipeline)), batch_size=4, num_workers=0)
    batch = next(iter(loader))["label"]
    batched = Compose([type(t)("label", batched=True) if not isinstance(t, monai_adapters.RemoveSmallObjectsd)
                       else type(t)("label", min_size=2, batched=True) for t in pipeline])
    again = batched({"label": list_data_collate(samples)["label"]})["label"]
    assert isinstance(again, MetaTensor) and again.is_batch
    torch.testing.assert_close(again.as_subclass(torch.Tensor), batch.as_subclass(torch.Tensor))


def test_drop_in_errors_are_monai_s():
    with pytest.raises(NotImplementedError, match="only kernel_type"):
        monai_adapters.LabelToContour(kernel_type="Sobel")
    with pytest.raises(ValueError, match="can only handle 2D or 3D images"):
        monai_adapters.LabelToContour()(torch.ones(1, 4))
    with pytest.raises(RuntimeError, match="Wrong input dimensionality"):
        monai_adapters.DistanceTransformEDT()(np.ones((4, 4)))
    with pytest.raises(NotImplementedError, match="can not handle data of type"):
        monai_adapters.LabelFilter(1)([1, 2])
    with pytest.raises(ValueError, match="should only be 1 channel, got 2"):
        monai_adapters.KeepLargestConnectedComponent(is_onehot=False)(torch.ones(2, 4, 4))
    with pytest.raises(ValueError, match="Negative value labels are not supported"):
        monai_adapters.RemoveSmallObjects()(torch.tensor([[[-1, 2, 3]]]))
    with pytest.raises(ValueError, match="num_components must be an int >= 0, got -1"):
        monai_adapters.KeepLargestConnectedComponent(num_components=-1)
    with pytest.raises(TypeError, match="batched must be True or False, got 1"):
        monai_adapters.FillHoles(batched=1)
    with pytest.raises(ValueError, match=r"batch \(B, C, \*spatial\)"):
        monai_adapters.FillHoles(batched=True)(torch.ones(4))
    with pytest.warns(UserWarning, match="assuming affine to be identity"):
        monai_adapters.RemoveSmallObjects(by_measure=True)(torch.tensor([[[0, 1, 1]]]))
    with pytest.warns(UserWarning, match="not in use"):
        monai_adapters.RemoveSmallObjects(pixdim=2.0)(torch.tensor([[[0, 1, 1]]]))


@pytest.mark.parametrize("values", [(0, 2, 7), (0, 5, 70000, 2**30)])
def test_remove_small_objects_on_label_values_dense_and_sparse(values):
    """A map of label values (maximum above 1): MONAI removes whole values held by too few voxels, counted
    in slots (dense values) or sorted (sparse ones); per sample as in a batch."""
    g = torch.Generator().manual_seed(len(values))
    img = torch.tensor(values)[torch.randint(0, len(values), (1, 6, 7), generator=g)]
    for min_size in (3, 10, 15):
        ours = monai_adapters.RemoveSmallObjects(min_size=min_size)
        assert_same(ours(img), monai_result("RemoveSmallObjects", {"min_size": min_size}, img))
        batch = torch.stack([img, img.flip(1)])
        batched = monai_adapters.RemoveSmallObjects(min_size=min_size, batched=True)(batch)
        assert torch.equal(batched, torch.stack([ours(sample) for sample in batch]))


@pytest.mark.parametrize("kinds", ["binary", "binary,labels", "labels", "binary,single"])
def test_remove_small_objects_batched_over_each_mix_of_samples(kinds):
    """A batch whose samples are all masks, all label maps, or a mix (with or without a sample of one value)
    gives each sample what it gives alone."""
    g = torch.Generator().manual_seed(len(kinds))
    make = {"binary": lambda: (torch.rand(1, 9, 8, generator=g) < 0.4).float(),
            "labels": lambda: torch.randint(0, 4, (1, 9, 8), generator=g).float(),
            "single": lambda: torch.full((1, 9, 8), 2.0)}
    batch = torch.stack([make[kind]() for kind in kinds.split(",") for _ in range(2)])
    for independent in (True, False):
        ours = monai_adapters.RemoveSmallObjects(min_size=3, independent_channels=independent)
        batched = monai_adapters.RemoveSmallObjects(min_size=3, independent_channels=independent, batched=True)(batch)
        assert torch.equal(batched, torch.stack([ours(sample) for sample in batch]))


@pytest.mark.parametrize("shape", [(1, 1, 1, 5), (2, 1, 1, 4), (1, 3, 1, 1), (3, 2, 5, 1), (2, 1, 4, 1, 3), (1, 1, 3, 4, 5)])
def test_label_to_contour_on_thin_shapes(shape):
    """Axes of one voxel have no neighbours along them: MONAI's values, per sample as in a batch."""
    batch = torch.rand(shape, generator=torch.Generator().manual_seed(len(shape))) * 3 - 1
    ours = monai_adapters.LabelToContour()
    for sample in batch:
        assert_same(ours(sample), monai_result("LabelToContour", {}, sample))
    batched = monai_adapters.LabelToContour(batched=True)(batch)
    assert torch.equal(batched, torch.stack([ours(sample) for sample in batch]))


@pytest.mark.parametrize("chunk_bytes", [1, 9000, 1 << 40])
def test_label_to_contour_in_chunks_of_samples_as_at_once(monkeypatch, chunk_bytes):
    """On the CPU a batch is taken a few samples at a time: one, three, or all of them give the same values."""
    from morphaug.adapters import monai_post
    g = torch.Generator().manual_seed(chunk_bytes % 7)
    batch = torch.randint(0, 3, (7, 2, 9, 8, 5), generator=g).float() * (torch.rand(7, 2, 9, 8, 5, generator=g) > 0.3)
    expected = torch.stack([monai_adapters.LabelToContour()(sample) for sample in batch])
    monkeypatch.setattr(monai_post, "_CPU_CHUNK_BYTES", chunk_bytes)
    assert torch.equal(monai_adapters.LabelToContour(batched=True)(batch), expected)


@pytest.mark.parametrize("name", [f"{name}{suffix}" for name in DROP_INS for suffix in ("", "d")])
def test_drop_in_signatures_are_monai_s_plus_batched(name):
    """MONAI's parameters, in MONAI's order, with MONAI's defaults, then the keyword-only ``batched=False``;
    MONAI's array and dictionary base classes."""
    import inspect

    ours, theirs = getattr(monai_adapters, name), getattr(monai_transforms, name)
    parameters = list(inspect.signature(ours).parameters.values())
    assert parameters[-1].name == "batched" and parameters[-1].kind is inspect.Parameter.KEYWORD_ONLY
    assert parameters[-1].default is False
    expected = [(p.name, p.default) for p in inspect.signature(theirs).parameters.values()]
    assert [(p.name, p.default) for p in parameters[:-1]] == expected
    assert issubclass(ours, monai_transforms.MapTransform if name.endswith("d") else monai_transforms.Transform)
