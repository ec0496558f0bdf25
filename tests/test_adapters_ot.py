"""Adapters of the OT augmentations inside their framework containers, replayed against the core.

RandHistogramTransfer and RandWassersteinMix pair the samples of a batch, so
each adapter runs on collated batches: MONAI ``Compose`` with
``batched=True``, torchvision ``v2.Compose`` on a batch, Kornia
``AugmentationSequential``. Each result must equal the core with the same draw.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from morphaug import transforms as core

SHAPE = (16, 20)


# The OT solvers run thousands of tiny ops: one intra-op thread (see conftest).
pytestmark = pytest.mark.usefixtures("one_thread")


def make_batch(batch=4, shape=SHAPE, device="cpu"):
    """Images with different intensity distributions and 3-class index labels, per sample."""
    g = torch.Generator().manual_seed(0)
    image = torch.rand(batch, 2, *shape, generator=g) ** torch.arange(1, batch + 1).view(-1, 1, *[1] * len(shape))
    image = image * torch.arange(1, batch + 1).view(-1, 1, *[1] * len(shape)) * 10
    label = torch.zeros(batch, 1, *shape)
    for b in range(batch):
        label[(b, 0, *(slice(2 + b, 8 + b),) * len(shape))] = 1
        label[(b, 0, *(slice(n // 2, n // 2 + 3 + b % 2) for n in shape))] = 2
    return image.to(device), label.to(device)


def plain(x):
    return x.as_subclass(torch.Tensor)


def expected(image, label, hist_params, mix_params, prob=0.8, num_classes=3):
    """The core: histogram transfer on the images, then the mix of images and labels."""
    image = core.RandHistogramTransfer("image", prob=prob)(image, params=hist_params)
    return core.RandWassersteinMix("image", "label", prob=prob, num_classes=num_classes)(
        {"image": image, "label": label}, params=mix_params)


# --------------------------------------------------------------------------- MONAI
def test_monai_compose_on_collated_batch_matches_core(device):
    pytest.importorskip("monai")
    from monai.data import MetaTensor, list_data_collate
    from monai.transforms import Compose

    from morphaug.adapters.monai import RandHistogramTransferd, RandWassersteinMixd

    image, label = make_batch()
    affine = torch.diag(torch.tensor([1.5, 1.0, 1.0], dtype=torch.float64))
    samples = [{"image": MetaTensor(image[b], affine=affine, meta={"filename_or_obj": f"case{b}"}),
                "label": MetaTensor(label[b], affine=affine, meta={"filename_or_obj": f"case{b}"}),
                "name": f"case{b}"} for b in range(4)]
    batch = list_data_collate(samples)
    batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    hist_t = RandHistogramTransferd("image", prob=0.8)
    mix_t = RandWassersteinMixd("image", "label", prob=0.8, num_classes=3)
    out = Compose([hist_t, mix_t]).set_random_state(0)(batch)
    ref = expected(plain(batch["image"]), plain(batch["label"]), hist_t.last_params, mix_t.last_params)
    assert torch.equal(plain(out["image"]), ref["image"]) and torch.equal(plain(out["label"]), ref["label"])
    assert not torch.equal(plain(out["label"]), plain(batch["label"]))
    for key in ("image", "label"):
        assert type(out[key]) is MetaTensor and out[key].is_batch and out[key].device.type == device.type
        assert out[key].meta["filename_or_obj"] == [f"case{b}" for b in range(4)]
    assert out["name"] == batch["name"]
    assert set(out["label"].unique().tolist()) <= {0.0, 1.0, 2.0}


def test_monai_draw_comes_from_the_documented_generator():
    pytest.importorskip("monai")
    from monai.utils import MAX_SEED

    from morphaug.adapters.monai import RandHistogramTransferd, RandWassersteinMixd

    image, label = make_batch()
    t = RandWassersteinMixd("image", "label", prob=0.8, num_classes=3).set_random_state(5)
    out = t({"image": image, "label": label, "other": 1})
    seed = int(np.random.RandomState(5).randint(MAX_SEED))
    ref_core = core.RandWassersteinMix("image", "label", prob=0.8, num_classes=3)
    params = ref_core.make_params(image, torch.Generator().manual_seed(seed))
    for name, value in params.items():
        assert torch.equal(t.last_params[name], value), name
    ref = ref_core({"image": image, "label": label}, params=params)
    assert torch.equal(out["image"], ref["image"]) and torch.equal(out["label"], ref["label"])
    assert out["other"] == 1
    # labels alone (allow_missing_keys): still mixed along the geodesics, as the core does
    missing = RandWassersteinMixd("image", "label", prob=1.0, num_classes=3, allow_missing_keys=True)
    only_label = missing.set_random_state(0)({"label": label})
    assert set(only_label) == {"label"} and not torch.equal(only_label["label"], label)
    label_core = core.RandWassersteinMix("image", "label", prob=1.0, num_classes=3, allow_missing_keys=True)
    assert torch.equal(only_label["label"], label_core({"label": label}, params=missing.last_params)["label"])
    with pytest.raises(KeyError, match="image"):  # MONAI's own key check
        RandWassersteinMixd("image", "label", num_classes=3)({"label": label})
    with pytest.raises(ValueError, match="batched=True"):
        RandWassersteinMixd("image", "label", num_classes=3, batched=False)
    with pytest.raises(ValueError, match="batched=True"):
        RandHistogramTransferd("image", batched=False)


# --------------------------------------------------------------------------- torchvision
def test_torchvision_compose_on_batch_matches_core(device):
    pytest.importorskip("torchvision")
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    from morphaug.adapters.torchvision import RandHistogramTransfer, RandWassersteinMix

    image, label = make_batch(device=device)
    sample = {"image": tv_tensors.Image(image), "mask": tv_tensors.Mask(label.to(torch.uint8)),
              "boxes": tv_tensors.BoundingBoxes([[1, 2, 5, 6]], format="XYXY", canvas_size=SHAPE), "name": "batch"}
    hist_t = RandHistogramTransfer(p=0.8)
    mix_t = RandWassersteinMix(num_classes=3, p=0.8)
    torch.manual_seed(0)
    out = v2.Compose([hist_t, mix_t])(sample)
    ref = expected(image, label.to(torch.uint8), hist_t.core.last_params, mix_t.core.last_params)
    assert type(out["image"]) is tv_tensors.Image and type(out["mask"]) is tv_tensors.Mask
    assert out["mask"].dtype == torch.uint8 and out["image"].device == image.device
    assert torch.equal(plain(out["image"]), ref["image"]) and torch.equal(plain(out["mask"]), ref["label"])
    assert not torch.equal(plain(out["mask"]), label.to(torch.uint8))
    assert out["boxes"] is sample["boxes"] and out["name"] == "batch"
    assert mix_t.core.changed_keys == ("image", "mask") and hist_t.core.changed_keys == ("image",)
    # a pure tensor batch is an image; one sample is refused (its partner would be itself)
    assert RandHistogramTransfer(p=1.0)(image).shape == image.shape
    with pytest.raises(ValueError, match="pairs the samples of a batch"):
        RandHistogramTransfer(p=1.0)(tv_tensors.Image(image[0]))
    with pytest.raises(ValueError, match="pairs the samples of a batch"):
        mix_t(tv_tensors.Mask(label[0, 0]))
    with pytest.raises(TypeError, match="keys"):
        RandWassersteinMix(keys="image", num_classes=3)


# --------------------------------------------------------------------------- Kornia
def params_of(seq, module):
    names = [name for name, child in seq.named_children() if child is module]
    return next(item.data for item in seq._params if item.name == names[0])


def test_kornia_sequential_2d_matches_core(device):
    K = pytest.importorskip("kornia.augmentation")
    from morphaug.adapters.kornia import RandHistogramTransfer2D, RandWassersteinMix2D

    image, label = make_batch(batch=6, device=device)
    label = label.long()
    hist_t = RandHistogramTransfer2D(p=0.6)
    mix_t = RandWassersteinMix2D(num_classes=3, p=0.6)
    seq = K.AugmentationSequential(hist_t, mix_t, data_keys=["input", "mask"])
    torch.manual_seed(0)
    out_image, out_mask = seq(image, label)
    assert out_mask.dtype == torch.long and out_mask.shape == label.shape and out_image.shape == image.shape
    hist_params = hist_t.core_params(params_of(seq, hist_t))
    mix_params = mix_t.core_params(params_of(seq, mix_t))
    ref = expected(image, label.float(), hist_params, mix_params, prob=1.0)
    torch.testing.assert_close(out_image, ref["image"], rtol=0, atol=0)
    assert torch.equal(out_mask, ref["label"].long())
    gate = mix_params["apply"]
    assert 0 < int(gate.sum()) < 6 and torch.equal(out_mask[~gate], label[~gate])
    again_image, again_mask = seq(image, label, params=seq._params)
    assert torch.equal(again_image, out_image) and torch.equal(again_mask, out_mask)


def test_kornia_3d_and_same_on_batch():
    K = pytest.importorskip("kornia.augmentation")
    from morphaug.adapters.kornia import RandHistogramTransfer3D, RandWassersteinMix3D

    image, label = make_batch(batch=3, shape=(8, 9, 10))
    mix_t = RandWassersteinMix3D(num_classes=3, p=1.0)
    hist_t = RandHistogramTransfer3D(p=1.0, same_on_batch=True)
    seq = K.AugmentationSequential(hist_t, mix_t, data_keys=["input", "mask"])
    out_image, out_mask = seq(image, label)
    hist_params = hist_t.core_params(params_of(seq, hist_t))
    assert hist_params["partner"].tolist() == [0, 0, 0]  # same_on_batch: all toward sample 0
    ref = expected(image, label, hist_params, mix_t.core_params(params_of(seq, mix_t)), prob=1.0)
    assert torch.equal(out_image, ref["image"]) and torch.equal(out_mask, ref["label"])
    assert set(out_mask.unique().tolist()) <= {0.0, 1.0, 2.0}
