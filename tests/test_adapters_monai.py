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
        FillHolesd("label", num_classes=3),
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
        FillHolesd(roles, num_classes=3),
        RandLabelMorphologyd(roles, prob=1.0, radius=1, num_classes=3),
        RandGreyMorphologyd(roles, prob=1.0),
        DistanceMapd(roles, output_keys=("sdf", "sdf_image"), classes=[2], spacing_from_meta=True),
    ]).set_random_state(0)(sample)
    expected = Compose([
        FillHolesd("label", num_classes=3),
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
    both = FillHolesd(["label", "other"], num_classes=3, allow_missing_keys=True)(sample)
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
