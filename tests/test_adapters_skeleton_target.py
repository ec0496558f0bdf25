"""The MONAI, torchvision v2 and Kornia adapters of ``SkeletonTarget``: the Skeleton Recall recipe per sample
(scikit-image, as in tests/test_skeleton_target.py) through each framework's containers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_skeleton_target import expected, labels, methods

monai_adapters = pytest.importorskip("morphaug.adapters.monai", exc_type=ImportError)
tv_adapters = pytest.importorskip("morphaug.adapters.torchvision", exc_type=ImportError)
kornia_adapters = pytest.importorskip("morphaug.adapters.kornia", exc_type=ImportError)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("shape", [(15, 17), (9, 10, 11)])
def test_monai_per_sample_and_batched(shape):
    from monai.data import MetaTensor
    from monai.transforms import Compose

    seg = labels(shape, seed=5, classes=3)
    method, skeleton = methods(len(shape))[-1]
    want = expected(seg, skeleton=skeleton)
    affine = torch.diag(torch.tensor([2.0] * len(shape) + [1.0]))
    pipeline = Compose([monai_adapters.SkeletonTargetd("label", output_keys="skel", method=method)])
    for b in range(seg.shape[0]):
        label = MetaTensor(torch.from_numpy(seg[b]).float(), affine=affine)
        out = pipeline({"label": label, "name": "a"})
        assert type(out["skel"]) is MetaTensor and out["skel"].dtype == torch.float32
        assert torch.equal(out["skel"].affine, label.affine) and out["label"] is label and out["name"] == "a"
        np.testing.assert_array_equal(out["skel"].numpy(), want[b])
    batched = monai_adapters.SkeletonTargetd("label", method=method, batched=True)
    np.testing.assert_array_equal(batched({"label": torch.from_numpy(seg)})["label"].numpy(), want)


def test_torchvision_target_transform():
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    seg = labels((16, 19), seed=6, classes=2)
    want = expected(seg)
    image = tv_tensors.Image(torch.rand(3, 16, 19))
    for b in range(seg.shape[0]):
        mask = tv_tensors.Mask(torch.from_numpy(seg[b, 0]))
        out = v2.Compose([v2.RandomHorizontalFlip(p=0.0), tv_adapters.SkeletonTarget(output_key="skel")])(
            {"image": image, "mask": mask})
        assert type(out["skel"]) is tv_adapters.DenseTarget and out["skel"].dtype == torch.int64
        assert out["image"] is image and type(out["mask"]) is tv_tensors.Mask
        np.testing.assert_array_equal(out["skel"].numpy(), want[b, 0])
    batch = tv_adapters.SkeletonTarget(radius=0)(tv_tensors.Mask(torch.from_numpy(seg)))
    assert type(batch) is tv_adapters.DenseTarget
    np.testing.assert_array_equal(batch.numpy(), expected(seg, dilations=0))


@pytest.mark.parametrize("shape", [(14, 15), (8, 9, 10)])
def test_kornia_in_augmentation_sequential(shape):
    import kornia.augmentation as K

    seg = labels(shape, seed=8, classes=3)
    seg[seg < 0] = 0
    method, skeleton = methods(len(shape))[-1]
    adapter = kornia_adapters.SkeletonTarget2D if len(shape) == 2 else kornia_adapters.SkeletonTarget3D
    mask = torch.from_numpy(seg).float()
    image = torch.rand(seg.shape[0], 2, *shape)
    out_image, out_mask = K.AugmentationSequential(adapter(method=method), data_keys=["input", "mask"])(image, mask)
    assert torch.equal(out_image, image) and out_mask.dtype == mask.dtype
    np.testing.assert_array_equal(out_mask.numpy(), expected(seg, skeleton=skeleton))
    onehot = adapter(method=method, output_format="onehot", num_classes=4)
    _, out_onehot = K.AugmentationSequential(onehot, data_keys=["input", "mask"])(image, mask)
    channels = torch.arange(4).view(1, 4, *([1] * len(shape)))
    assert torch.equal(out_onehot, (out_mask == channels).float())
