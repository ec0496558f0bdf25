"""``morphaug.transforms.SkeletonTarget`` against the Skeleton Recall recipe written with scikit-image per
sample (nnU-Net's ``SkeletonTransform(do_tube=True)``): 2-D and 3-D label batches with 1-3 classes, empty
classes and samples, shapes touching the border, ignore values."""

from __future__ import annotations

import numpy as np
import pytest
import skimage.morphology
import torch
from test_skeleton import LEE, shape_slice

from morphaug.morphology import skeletonize
from morphaug.transforms import SkeletonTarget

pytestmark = pytest.mark.usefixtures("one_thread")


def recipe(seg: np.ndarray, skeleton=skimage.morphology.skeletonize, dilations: int = 2,
           footprint=None) -> np.ndarray:
    """Skeleton Recall's target of one sample ``seg (*spatial)``, as its ``SkeletonTransform`` computes it
    (``dilations=2``: ``do_tube=True``; scikit-image's default element, the cross)."""
    bin_seg = seg > 0
    out = np.zeros(seg.shape, dtype=np.int16)
    if bin_seg.sum():
        skel = (skeleton(bin_seg) > 0).astype(np.int16)
        for _ in range(dilations):
            skel = skimage.morphology.dilation(skel, footprint)
        skel *= seg.astype(np.int16)
        out = skel
    return out


def labels(shape, seed: int, classes: int, batch: int = 4) -> np.ndarray:
    """An int64 ``(batch, 1, *shape)`` label batch: per sample, each class ``1 .. classes`` a few tubes or blobs
    (later classes over earlier ones, some touching the border); sample 0 is all background, sample 1 lacks
    class 1 (an empty class), sample 2 has an ignore region ``-1`` at the border."""
    rng = np.random.default_rng(seed)
    out = np.zeros((batch, 1, *shape), dtype=np.int64)
    for b in range(1, batch):
        for k in range(1, classes + 1):
            if b == 1 and k == 1 and classes > 1:
                continue
            kind = rng.choice(["tubes", "blobs", "border", "lines"])
            out[b, 0][shape_slice(kind, shape, rng)] = k
        if b == 2:
            out[b, 0][(slice(0, 2),) * len(shape)] = -1
    return out


def expected(seg: np.ndarray, **kwargs) -> np.ndarray:
    return np.stack([recipe(sample[0], **kwargs)[None] for sample in seg])


def methods(rank: int):
    """The methods under test for ``rank``, with the per-sample skeleton each one must equal."""
    exact = [(None, skimage.morphology.skeletonize)] if rank == 2 or LEE else []

    def parallel(mask):  # the same skeleton, one sample at a time
        return skeletonize(torch.from_numpy(mask)[None, None], method="parallel")[0, 0].numpy()

    return exact + [("parallel", parallel)]


SHAPES = [(17, 23), (1, 12), (32, 29), (9, 11, 10), (14, 13, 15), (2, 8, 7)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("classes", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int16, torch.float32])
def test_matches_the_recipe(shape, classes, dtype):
    seg = labels(shape, seed=len(shape) * 10 + classes, classes=classes)
    x = torch.from_numpy(seg).to(dtype)
    before = x.clone()
    for method, skeleton in methods(len(shape)):
        out = SkeletonTarget("label", method=method)(x)
        assert out.dtype == dtype and out.shape == x.shape
        np.testing.assert_array_equal(out.to(torch.int16).numpy(), expected(seg, skeleton=skeleton),
                                      err_msg=f"method={method}")
    assert torch.equal(x, before)


@pytest.mark.parametrize("shape", [(19, 21), (10, 12, 9)])
@pytest.mark.parametrize("radius, footprint, dilations, element", [
    (0, "cross", 0, None), (1, "cross", 1, None), (3, "cross", 3, None), (1, "cube", 1, "cube"),
    (2, "cube", 2, "cube"), (1, "ball", 1, None)])
def test_tube_radius_and_footprint(shape, radius, footprint, dilations, element):
    seg = labels(shape, seed=7, classes=2)
    rank = len(shape)
    cube = np.ones((3,) * rank, dtype=bool) if element == "cube" else None
    method, skeleton = methods(rank)[0]
    out = SkeletonTarget("label", method=method, radius=radius, footprint=footprint)(torch.from_numpy(seg))
    np.testing.assert_array_equal(out.numpy(), expected(seg, skeleton=skeleton, dilations=dilations, footprint=cube))


@pytest.mark.parametrize("shape", [(16, 18), (8, 9, 10)])
def test_onehot_input_and_output(shape):
    seg = labels(shape, seed=3, classes=3)
    seg[seg < 0] = 0  # one-hot labels hold classes only
    method, skeleton = methods(len(shape))[-1]
    target = torch.from_numpy(expected(seg, skeleton=skeleton)).long()
    channels = torch.arange(4).view(1, 4, *([1] * len(shape)))
    index = torch.from_numpy(seg)
    onehot = (index == channels).to(torch.uint8)
    want = (target == channels).to(torch.uint8)
    out = SkeletonTarget("label", method=method, output_format="onehot", num_classes=4)(index.to(torch.uint8))
    assert torch.equal(out, want)
    assert torch.equal(SkeletonTarget("label", method=method)(onehot), want)
    out = SkeletonTarget("label", method=method, output_format="index")(onehot)
    assert out.dtype == torch.uint8 and torch.equal(out, target.to(torch.uint8))
    picked = SkeletonTarget("label", method=method, output_format="onehot", classes=[0, 2])(index)
    assert torch.equal(picked, want[:, [0, 2]].long())


def test_mapping_keys_and_output_keys():
    seg = torch.from_numpy(labels((12, 14), seed=1, classes=2))
    image = torch.rand(seg.shape)
    out = SkeletonTarget("label", output_keys="skel")({"label": seg, "image": image})
    assert sorted(out) == ["image", "label", "skel"]
    assert out["label"] is seg and out["image"] is image
    assert torch.equal(out["skel"], SkeletonTarget("label")(seg))


def test_3d_default_needs_the_native_lee_kernel_or_says_parallel(monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")  # method='lee' off
    seg = torch.from_numpy(labels((6, 7, 8), seed=2, classes=1))
    with pytest.raises(NotImplementedError, match="method='parallel'"):
        SkeletonTarget("label")(seg)
    assert SkeletonTarget("label", method="parallel")(seg).any()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"method": "medial_axis"}, ValueError, "method"),
    ({"radius": -1}, ValueError, "radius"),
    ({"radius": 1.5}, TypeError, "radius"),
    ({"footprint": "disk"}, ValueError, "footprint"),
    ({"output_format": "probs"}, ValueError, "output_format"),
])
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        SkeletonTarget("label", **kwargs)


def test_method_for_the_wrong_rank():
    with pytest.raises(ValueError, match="method='zhang'"):
        SkeletonTarget("label", method="zhang")(torch.zeros(1, 1, 4, 4, 4, dtype=torch.long))
