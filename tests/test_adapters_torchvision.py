"""torchvision v2 adapters inside v2.Compose on tuples, dicts and batches, replayed against the core."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torchvision")
import PIL.Image  # noqa: E402
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

from morphaug import transforms as core  # noqa: E402
from morphaug.adapters.torchvision import (  # noqa: E402
    DenseTarget,
    DistanceMap,
    FillHoles,
    KeepLargestComponents,
    LabelBoundary,
    RandBoundaryJitter,
    RandGreyMorphology,
    RandLabelMorphology,
    RandRemoveComponent,
    RemoveSmallComponents,
)

H, W = 24, 20


def make_mask(*lead, device="cpu", dtype=torch.uint8):
    mask = torch.zeros(*lead, H, W, dtype=dtype, device=device)
    mask[..., 4:18, 3:12] = 1
    mask[..., 8:14, 12:17] = 2
    mask[..., 10, 6] = 0  # a hole of class 1
    return tv_tensors.Mask(mask)


def make_image(*lead, device="cpu"):
    return tv_tensors.Image(torch.rand(*lead, 3, H, W, generator=torch.Generator().manual_seed(0)).to(device))


def plain(x):
    return x.as_subclass(torch.Tensor)


def test_compose_on_tuple_matches_flip_then_core(device):
    image, mask = make_image(device=device), make_mask(device=device)
    label_t = RandLabelMorphology(num_classes=3, radius=(1, 2), p=1.0)
    grey_t = RandGreyMorphology(p=1.0)
    out_image, out_mask = v2.Compose([v2.RandomHorizontalFlip(p=1.0), label_t, grey_t])(image, mask)
    assert type(out_image) is tv_tensors.Image and type(out_mask) is tv_tensors.Mask
    assert out_image.device == image.device and out_mask.device == mask.device
    assert out_image.shape == image.shape and out_mask.shape == mask.shape and out_mask.dtype == torch.uint8
    flipped_image, flipped_mask = plain(image).flip(-1), plain(mask).flip(-1)
    label_core = core.RandLabelMorphology("label", num_classes=3, radius=(1, 2), prob=1.0)
    expected_mask = label_core(flipped_mask[None, None], params=label_t.core.last_params)[0, 0]
    grey_core = core.RandGreyMorphology("image", prob=1.0)
    expected_image = grey_core(flipped_image[None], params=grey_t.core.last_params)[0]
    assert torch.equal(plain(out_mask), expected_mask) and torch.equal(plain(out_image), expected_image)
    assert not torch.equal(expected_mask, flipped_mask) and not torch.equal(expected_image, flipped_image)


def test_compose_on_dict_passes_other_types_through():
    boxes = tv_tensors.BoundingBoxes([[1, 2, 5, 6]], format="XYXY", canvas_size=(H, W))
    sample = {"image": make_image(), "mask": make_mask(), "boxes": boxes, "label": 3, "name": "a",
              "extra": torch.ones(2)}
    label_t = RandBoundaryJitter(num_classes=3, magnitude=1.5, smoothness=2.0, p=1.0)
    fill_t = FillHoles(num_classes=3)
    out = v2.Compose([fill_t, label_t, RandGreyMorphology(p=1.0)])(sample)
    assert out.keys() == sample.keys()
    assert out["boxes"] is boxes and out["label"] == 3 and out["name"] == "a" and out["extra"] is sample["extra"]
    assert type(out["boxes"]) is tv_tensors.BoundingBoxes
    filled = core.FillHoles("label", num_classes=3)(plain(sample["mask"])[None, None])
    assert filled[0, 0, 10, 6] == 1
    expected = core.RandBoundaryJitter("label", num_classes=3, magnitude=1.5, smoothness=2.0, prob=1.0)(
        filled, params=label_t.core.last_params)[0, 0]
    assert torch.equal(plain(out["mask"]), expected) and type(out["mask"]) is tv_tensors.Mask
    # the core's keys are one per type, with its role: Masks are labels, images images
    assert label_t.core.roles == {"image": "image", "mask": "label"} and label_t.core.changed_keys == ("mask",)


def test_batch_draws_per_sample(device):
    image, mask = make_image(6, device=device), make_mask(6, 1, device=device)
    grey_t = RandGreyMorphology(p=0.5, generator=torch.Generator(device).manual_seed(1))
    label_t = RandLabelMorphology(num_classes=3, p=0.5, generator=torch.Generator(device).manual_seed(2))
    out = v2.Compose([v2.RandomVerticalFlip(p=1.0), label_t, grey_t])({"image": image, "mask": mask})
    assert out["image"].shape == (6, 3, H, W) and out["mask"].shape == (6, 1, H, W)
    applied = grey_t.core.last_params["apply"]
    assert applied.shape == (6,) and 0 < applied.sum() < 6
    flipped = plain(image).flip(-2)
    expected = core.RandGreyMorphology("image", prob=0.5)(flipped, params=grey_t.core.last_params)
    assert torch.equal(plain(out["image"]), expected)
    assert torch.equal(plain(out["image"])[~applied], flipped[~applied])
    expected_mask = core.RandLabelMorphology("label", num_classes=3, prob=0.5)(
        plain(mask).flip(-2), params=label_t.core.last_params)
    assert torch.equal(plain(out["mask"]), expected_mask)


def test_pure_tensor_rules():
    grey_t = RandGreyMorphology(p=1.0)
    first, second = torch.rand(3, H, W), torch.rand(3, H, W)
    out = grey_t({"a": first, "b": second})
    assert not torch.equal(out["a"], first) and out["b"] is second  # only the first pure tensor is an image
    assert type(out["a"]) is torch.Tensor
    image = make_image()
    out = grey_t({"x": first, "image": image})
    assert out["x"] is first and not torch.equal(plain(out["image"]), plain(image))
    mask = make_mask()
    assert grey_t(mask) is mask  # masks are not images
    assert RandLabelMorphology(num_classes=3, p=1.0)(first) is first  # images are not labels


def test_distance_map_replaces_or_adds_under_output_key():
    mask = make_mask()
    sdf_core = core.DistanceMap("label", signed=True, classes=[1, 2])
    expected = sdf_core(plain(mask)[None, None])[0]
    replaced = v2.Compose([v2.RandomHorizontalFlip(p=0.0), DistanceMap(signed=True, classes=[1, 2])])(
        (make_image(), mask))[1]
    assert type(replaced) is DenseTarget and replaced.shape == (2, H, W) and replaced.dtype == torch.float32
    assert torch.equal(plain(replaced), expected)
    one = DistanceMap(classes=[2])(mask)
    assert one.shape == (H, W) and torch.equal(plain(one), core.DistanceMap("label", classes=[2])(
        plain(mask)[None, None])[0, 0])
    sample = {"image": make_image(), "mask": mask}
    out = DistanceMap(signed=True, classes=[1, 2], output_key="sdf")(sample)
    assert out["mask"] is mask and out["image"] is sample["image"] and torch.equal(plain(out["sdf"]), expected)
    edge_t = LabelBoundary(classes=[1, 2], thickness=(1, 3), output_key="edge")
    edges = edge_t(sample)["edge"]
    assert torch.equal(plain(edges), core.LabelBoundary("label", classes=[1, 2])(
        plain(mask)[None, None], params=edge_t.core.last_params)[0])
    with pytest.raises(ValueError, match="exactly one"):
        DistanceMap(classes=[1], output_key="sdf")({"a": mask, "b": mask})
    with pytest.raises(ValueError, match="exactly one"):
        DistanceMap(classes=[1], output_key="sdf")(mask)


def test_volumes_with_spatial_ndim_3():
    volume = tv_tensors.Mask(torch.zeros(2, 1, 10, 10, 10, dtype=torch.long))
    volume[:, :, 2:8, 2:8, 2:8] = 1
    t = RandLabelMorphology(num_classes=2, radius=2, ops="erosion", p=1.0, spatial_ndim=3)
    out = t(volume)
    assert out.shape == volume.shape and out.sum() < volume.sum()
    assert torch.equal(plain(out), core.RandLabelMorphology("label", num_classes=2, ops="erosion")(
        plain(volume), params=t.core.last_params))
    single = t(tv_tensors.Mask(volume[0, 0]))
    assert single.shape == (10, 10, 10)


def test_reproducibility_and_p():
    image = make_image(4)
    torch.manual_seed(0)
    first = RandGreyMorphology(p=0.5)(image)
    torch.manual_seed(0)
    second = RandGreyMorphology(p=0.5)(image)
    assert torch.equal(first, second)
    assert torch.equal(RandGreyMorphology(p=0.0)(image), image)


def test_errors():
    with pytest.raises(ValueError, match="dims"):
        RandGreyMorphology(p=1.0)(torch.rand(1, 1, 3, H, W))
    with pytest.raises(TypeError, match="ToImage"):
        RandGreyMorphology(p=1.0)(PIL.Image.new("L", (W, H)))
    pil = PIL.Image.new("L", (W, H))
    mask = make_mask()
    out_pil, _ = RandLabelMorphology(num_classes=3, p=1.0)(pil, mask)
    assert out_pil is pil
    for name in ("keys", "output_keys", "allow_missing_keys"):
        with pytest.raises(TypeError, match=name):
            RandGreyMorphology(**{name: "image"})
    with pytest.raises(ValueError, match="spatial_ndim"):
        RandGreyMorphology(spatial_ndim=4)

def test_component_transforms_in_compose(device):
    mask = make_mask(6, 1, device=device)
    plain(mask)[:, :, 0, 0] = 1  # a stray voxel of class 1
    plain(mask)[:, :, 20:22, 0] = 2  # a stray pair of class 2
    image = make_image(6, device=device)
    keep, remove = KeepLargestComponents(classes=[1], connectivity=1), RemoveSmallComponents(min_size=3)
    rand = RandRemoveComponent(num_classes=3, max_fraction=0.5, p=0.5, generator=torch.Generator(device).manual_seed(0))
    out_image, out_mask = v2.Compose([v2.RandomHorizontalFlip(p=1.0), keep, remove, rand])(image, mask)
    assert type(out_image) is tv_tensors.Image and type(out_mask) is tv_tensors.Mask and out_mask.dtype == torch.uint8
    assert torch.equal(plain(out_image), plain(image).flip(-1))  # images are not labels
    flipped = plain(mask).flip(-1)
    expected = core.KeepLargestComponents("label", classes=[1], connectivity=1)(flipped)
    assert expected[:, 0, 0, -1].eq(0).all() and expected[:, 0, 20, -1].eq(2).all()
    expected = core.RemoveSmallComponents("label", min_size=3)(expected)
    assert expected[:, 0, 20, -1].eq(0).all()
    expected = core.RandRemoveComponent("label", num_classes=3, max_fraction=0.5, prob=0.5)(
        expected, params=rand.core.last_params)
    assert torch.equal(plain(out_mask), expected)
    assert 0 < int(rand.core.last_params["apply"].sum()) < 6
    one = v2.Compose([keep, remove])(make_mask())  # one (H, W) mask
    assert one.shape == (H, W) and type(one) is tv_tensors.Mask
