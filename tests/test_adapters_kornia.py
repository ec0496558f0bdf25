"""Kornia adapters inside AugmentationSequential (data_keys input + mask), 2-D and 3-D, replayed on the core."""

from __future__ import annotations

import pytest
import torch

K = pytest.importorskip("kornia.augmentation")

from morphaug.adapters.kornia import (  # noqa: E402
    DistanceMap2D,
    DistanceMap3D,
    FillHoles2D,
    FillHoles3D,
    KeepLargestComponents2D,
    KeepLargestComponents3D,
    LabelBoundary2D,
    RandBoundaryJitter2D,
    RandBoundaryJitter3D,
    RandGreyMorphology2D,
    RandGreyMorphology3D,
    RandLabelMorphology2D,
    RandLabelMorphology3D,
    RandRemoveComponent2D,
    RandRemoveComponent3D,
    RemoveSmallComponents2D,
)


def make_data(batch, spatial, device, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    image = torch.rand(batch, 2, *spatial, generator=g).to(device)
    mask = torch.zeros(batch, 1, *spatial, dtype=dtype, device=device)
    inner = tuple(slice(n // 5, n - n // 5) for n in spatial)
    mask[(slice(None), slice(None), *inner)] = 1
    mask[(slice(None), slice(None), *(slice(n // 2 - 2, n // 2 + 1) for n in spatial))] = 2
    mask[(slice(None), 0, *(n // 3 for n in spatial))] = 0  # a hole of class 1
    return image, mask


def params_of(seq, module):
    """The ParamItem data that ``seq`` drew for ``module`` on its last call."""
    names = [name for name, child in seq.named_children() if child is module]
    return next(item.data for item in seq._params if item.name == names[0])


def test_sequential_2d_matches_affine_then_core(device):
    torch.manual_seed(0)  # p=0.6 on 6 samples: some, not all, are transformed
    image, mask = make_data(6, (24, 20), device, dtype=torch.long)
    affine = K.RandomAffine(degrees=20.0, translate=(0.1, 0.1), p=1.0)
    label_t = RandLabelMorphology2D(num_classes=3, radius=(1, 2), p=0.6)
    grey_t = RandGreyMorphology2D(p=0.6)
    seq = K.AugmentationSequential(affine, label_t, grey_t, data_keys=["input", "mask"])
    out_image, out_mask = seq(image, mask)
    assert out_mask.dtype == torch.long and out_mask.shape == mask.shape and out_image.shape == image.shape
    assert out_image.device == image.device and out_mask.device == mask.device
    # replay the affine step alone, then the core with the drawn parameters
    only_affine = K.AugmentationSequential(affine, data_keys=["input", "mask"])
    aff_image, aff_mask = only_affine(image, mask, params=[seq._params[0]])
    label_params = label_t.core_params(params_of(seq, label_t))
    grey_params = grey_t.core_params(params_of(seq, grey_t))
    expected_mask = label_t.core(aff_mask.float(), params=label_params).long()
    expected_image = grey_t.core(aff_image, params=grey_params)
    assert torch.equal(out_mask, expected_mask) and not torch.equal(expected_mask, aff_mask)
    torch.testing.assert_close(out_image, expected_image, rtol=0, atol=0)
    gate = params_of(seq, grey_t)["batch_prob"] > 0.5
    assert torch.equal(grey_params["apply"].cpu(), gate) and 0 < int(gate.sum()) < 6
    assert torch.equal(out_image[~gate.to(device)], aff_image[~gate.to(device)])
    assert set(out_mask.unique().tolist()) <= {0, 1, 2}
    # the whole sequence replays
    again_image, again_mask = seq(image, mask, params=seq._params)
    assert torch.equal(again_mask, out_mask) and torch.equal(again_image, out_image)


def test_torch_manual_seed_reproduces_and_same_on_batch():
    image, mask = make_data(4, (16, 16), "cpu")
    t = RandLabelMorphology2D(num_classes=3, radius=(1, 3), p=1.0)
    seq = K.AugmentationSequential(t, data_keys=["input", "mask"])
    torch.manual_seed(0)
    first = seq(image, mask)[1]
    torch.manual_seed(0)
    assert torch.equal(seq(image, mask)[1], first)
    same = RandLabelMorphology2D(num_classes=3, radius=(1, 3), p=1.0, same_on_batch=True)
    out = K.AugmentationSequential(same, data_keys=["input", "mask"])(image, mask)[1]
    for name in ("op", "footprint", "radius", "class_apply"):
        value = same._params[name]
        assert value.shape[0] == 4 and torch.equal(value, value[:1].expand_as(value)), name
    assert all(torch.equal(out[0], out[i]) for i in range(4))


def test_p_zero_and_fill_holes_blend():
    image, mask = make_data(4, (16, 16), "cpu")
    out_image, out_mask = K.AugmentationSequential(
        RandLabelMorphology2D(num_classes=3, p=0.0), RandGreyMorphology2D(p=0.0), data_keys=["input", "mask"]
    )(image, mask)
    assert torch.equal(out_mask, mask) and torch.equal(out_image, image)
    filled = K.AugmentationSequential(FillHoles2D(num_classes=3), data_keys=["input", "mask"])(image, mask)[1]
    assert (mask[:, 0, 5, 5] == 0).all() and (filled[:, 0, 5, 5] == 1).all()
    torch.manual_seed(1)
    fill_t = FillHoles2D(num_classes=3, p=0.5)
    half = K.AugmentationSequential(fill_t, data_keys=["input", "mask"])(image, mask)[1]
    gate = fill_t._params["batch_prob"] > 0.5
    assert torch.equal(half[gate], filled[gate]) and torch.equal(half[~gate], mask[~gate])


def test_targets_change_the_mask_channels():
    image, mask = make_data(3, (16, 16), "cpu")
    sdf_t = DistanceMap2D(signed=True, classes=[1, 2])
    _, sdf = K.AugmentationSequential(K.RandomHorizontalFlip(p=1.0), sdf_t, data_keys=["input", "mask"])(image, mask)
    assert sdf.shape == (3, 2, 16, 16) and sdf.dtype == torch.float32
    assert torch.equal(sdf, sdf_t.core(mask.flip(-1)))
    torch.manual_seed(3)
    edge_t = LabelBoundary2D(classes=[1, 2], thickness=(1, 2), p=0.5)
    _, edges = K.AugmentationSequential(edge_t, data_keys=["input", "mask"])(image, mask)
    params = edge_t.core_params(edge_t._params)
    assert edges.shape == (3, 2, 16, 16) and torch.equal(edges, edge_t.core(mask, params=params))
    with pytest.raises(TypeError, match="'p'"):  # a deterministic map: no probability
        DistanceMap2D(p=0.5)


def test_one_hot_masks_and_errors():
    image, mask = make_data(2, (16, 16), "cpu")
    onehot = torch.nn.functional.one_hot(mask[:, 0].long(), 3).movedim(-1, 1).float()
    t = RandBoundaryJitter2D(num_classes=3, label_format="onehot", magnitude=2.0, smoothness=2.0, p=1.0)
    out = K.AugmentationSequential(t, data_keys=["input", "mask"])(image, onehot)[1]
    assert out.shape == onehot.shape and torch.equal(out.sum(1), torch.ones_like(out[:, 0]))
    assert torch.equal(out, t.core(onehot, params=t.core_params(t._params)))
    with pytest.raises(ValueError, match="num_classes"):
        K.AugmentationSequential(RandLabelMorphology2D(label_format="onehot", p=1.0),
                                 data_keys=["input", "mask"])(image, onehot)
    # Kornia draws before it hands the mask over: a per-class draw cannot infer the classes of index masks
    for t in (RandLabelMorphology2D(p=1.0), RandBoundaryJitter2D(p=1.0)):
        with pytest.raises(ValueError, match="num_classes"):
            K.AugmentationSequential(t, data_keys=["input", "mask"])(image, mask)
    # the others infer them from the mask
    inferred = K.AugmentationSequential(FillHoles2D(), data_keys=["input", "mask"])(image, mask)[1]
    assert torch.equal(inferred, K.AugmentationSequential(FillHoles2D(num_classes=3), data_keys=["input", "mask"])(
        image, mask)[1])
    for name in ("prob", "generator", "keys", "allow_missing_keys"):
        with pytest.raises(TypeError, match=name):
            RandGreyMorphology2D(**{name: None})
    # the core's keys are Kornia's data keys, with their roles
    assert t.core.roles == {"input": "image", "mask": "label"} and t.core.changed_keys == ("mask",)


def test_sequential_3d(device):
    image, mask = make_data(2, (12, 12, 12), device)
    affine = K.RandomAffine3D(degrees=10.0, p=1.0)
    grey_t = RandGreyMorphology3D(p=1.0, radius=1)
    seq = K.AugmentationSequential(affine, grey_t, data_keys=["input"])
    out = seq(image)
    expected = grey_t.core(affine(image, params=seq._params[0].data), params=grey_t.core_params(seq._params[1].data))
    assert out.device == image.device and torch.equal(out, expected)
    # masks through the 3-D morphaug classes (Kornia 0.9 has no 3-D geometric mask support)
    label_t = RandLabelMorphology3D(num_classes=3, radius=1, p=1.0)
    jitter_t = RandBoundaryJitter3D(num_classes=3, magnitude=1.0, smoothness=1.5, p=1.0)
    fill_t, sdf_t = FillHoles3D(num_classes=3), DistanceMap3D(classes=[1, 2])
    seq = K.AugmentationSequential(fill_t, label_t, jitter_t, grey_t, sdf_t, data_keys=["input", "mask"])
    out_image, out_sdf = seq(image, mask)
    filled = fill_t.core(mask)
    morphed = label_t.core(filled, params=label_t.core_params(params_of(seq, label_t)))
    jittered = jitter_t.core(morphed, params=jitter_t.core_params(params_of(seq, jitter_t)))
    assert not torch.equal(morphed, filled) and not torch.equal(jittered, morphed)
    assert torch.equal(out_sdf, sdf_t.core(jittered)) and out_sdf.shape == (2, 2, 12, 12, 12)
    assert torch.equal(out_image, grey_t.core(image, params=grey_t.core_params(params_of(seq, grey_t))))
    with pytest.raises(NotImplementedError):  # documented Kornia limitation; fails loudly if Kornia adds it
        K.AugmentationSequential(affine, label_t, data_keys=["input", "mask"])(image, mask)

def test_component_transforms_in_sequential(device):
    image, mask = make_data(6, (16, 18), device, dtype=torch.long)
    mask[:, 0, 0, 0] = 2  # a stray voxel of class 2
    mask[:, 0, 15, 10:12] = 1  # a stray pair of class 1
    keep, remove = KeepLargestComponents2D(classes=[2], connectivity=1), RemoveSmallComponents2D(min_size=3)
    rand = RandRemoveComponent2D(num_classes=3, max_fraction=0.5, p=0.5)
    seq = K.AugmentationSequential(keep, remove, rand, data_keys=["input", "mask"])
    torch.manual_seed(0)
    out_image, out_mask = seq(image, mask)
    assert out_mask.dtype == torch.long and torch.equal(out_image, image)
    expected = remove.core(keep.core(mask.float()))
    assert expected[:, 0, 0, 0].eq(0).all() and expected[:, 0, 15, 10].eq(0).all()
    expected = rand.core(expected, params=rand.core_params(params_of(seq, rand))).long()
    assert torch.equal(out_mask, expected)
    assert 0 < int(rand.core_params(params_of(seq, rand))["apply"].sum()) < 6
    assert torch.equal(seq(image, mask, params=seq._params)[1], out_mask)
    # 3-D
    volume, labels = make_data(2, (10, 11, 12), device)
    labels[:, 0, 0, 0, 0] = 1
    seq3d = K.AugmentationSequential(KeepLargestComponents3D(), RandRemoveComponent3D(num_classes=3, p=1.0),
                                     data_keys=["input", "mask"])
    out = seq3d(volume, labels)[1]
    assert out.shape == labels.shape and set(out.unique().tolist()) <= {0.0, 1.0, 2.0}
    assert (out[:, 0, 0, 0, 0] == 0).all()  # the stray voxel
