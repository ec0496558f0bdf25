"""``morphaug.segmentation`` against ``skimage.segmentation``, slice by slice: ``expand_labels`` and
``find_boundaries`` identical to scikit-image's (ties, quirks and dtypes included)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import skimage.segmentation
import torch
from conftest import assert_parity, each_slice

from morphaug.segmentation import expand_labels, find_boundaries

pytestmark = pytest.mark.usefixtures("backend")

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.uint16, torch.int32, torch.uint32,
          torch.int64, torch.uint64]
MODES = ["thick", "inner", "outer", "subpixel"]


def random_labels(rng, shape, dtype: torch.dtype, fill: float, values: int = 4) -> torch.Tensor:
    """Labels with gaps (multiples of 3), negative ones for signed dtypes, over a background of about
    ``1 - fill``; the first slice empty and the last one full when the batch has several."""
    levels = rng.integers(1, values + 1, size=shape) * 3
    if dtype.is_signed and dtype != torch.bool:
        levels = levels * rng.choice([-1, 1], size=shape)
    x = np.where(rng.random(shape) < fill, levels, 0)
    if shape[0] > 1:
        x[0] = 0
        x[-1] = levels[-1]
    if dtype == torch.bool:
        return torch.from_numpy(x != 0)
    return torch.from_numpy(x.astype(np.int64)).to(dtype)


def random_shape(rng, rank: int):
    return (int(rng.integers(1, 4)), int(rng.integers(1, 3)), *rng.integers(1, 10 - 2 * rank, size=rank).tolist())


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_expand_labels_matches_skimage(rank):
    rng = np.random.default_rng(rank)
    for trial in range(30):
        dtype = DTYPES[trial % len(DTYPES)]
        x = random_labels(rng, random_shape(rng, rank), dtype, float(rng.choice([0.05, 0.2, 0.5])))
        distance = float(rng.choice([0, 1, math.sqrt(2), 1.5, 2, 3.5, math.inf]))
        # powers of 2: sums of squares exact, so ties are SciPy's on every backend
        spacing = [1, 2, 0.5, tuple(rng.choice([0.5, 1.0, 2.0], size=rank).tolist())][trial % 4]
        before = x.clone()
        out = expand_labels(x, distance, spacing)
        assert torch.equal(x, before)
        assert_parity(out, each_slice(skimage.segmentation.expand_labels, x, distance=distance, spacing=spacing),
                      exact=True, dtype="expected")


def test_expand_labels_ties_follow_scipy_s_feature_transform():
    x = torch.tensor([[[[0, 1, 0, 0], [2, 0, 0, 0], [0, 3, 0, 0]]], [[[0, 1, 0, 2], [0, 0, 0, 0], [3, 0, 0, 4]]]])
    for distance in (1, 1.5, 3):
        assert_parity(expand_labels(x, distance), each_slice(skimage.segmentation.expand_labels, x, distance=distance),
                      exact=True)


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("mode", MODES)
def test_find_boundaries_matches_skimage(rank, mode):
    rng = np.random.default_rng(10 * rank + MODES.index(mode))
    for trial in range(18):
        dtype = DTYPES[trial % len(DTYPES)]
        x = random_labels(rng, random_shape(rng, rank), dtype, float(rng.choice([0.3, 0.7, 1.0])))
        connectivity = int(rng.integers(1, rank + 1))
        background = int(rng.choice([0, 3])) if dtype != torch.bool else int(rng.integers(0, 2))
        before = x.clone()
        out = find_boundaries(x, connectivity, mode, background)
        assert torch.equal(x, before)
        assert_parity(out, each_slice(skimage.segmentation.find_boundaries, x, connectivity=connectivity,
                                      mode=mode, background=background), exact=True, dtype="expected")


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.uint64])
def test_find_boundaries_with_the_dtype_s_largest_value(dtype):
    """skimage marks with the largest value ("subpixel", "outer"); SciPy stores 64-bit ints through float64."""
    x = torch.zeros(2, 1, 6, 7, dtype=dtype)
    x[0, 0, 1:4, 1:3] = torch.iinfo(dtype).max
    x[0, 0, 2:5, 3:6] = 2
    x[1, 0, 0:3, 2:4] = 1
    for mode in MODES:
        for connectivity in (1, 2):
            assert_parity(find_boundaries(x, connectivity, mode),
                          each_slice(skimage.segmentation.find_boundaries, x, connectivity=connectivity, mode=mode),
                          exact=True)


def test_empty_batches():
    x = torch.zeros(0, 1, 5, 5, dtype=torch.int64)
    assert expand_labels(x, 2).shape == x.shape
    assert find_boundaries(x).shape == x.shape and find_boundaries(x).dtype == torch.bool
    assert find_boundaries(x, mode="subpixel").shape == (0, 1, 9, 9)


def test_bad_arguments():
    x = torch.zeros(1, 1, 4, 4, dtype=torch.int64)
    for function in (expand_labels, find_boundaries):
        with pytest.raises(TypeError, match="must hold integer or bool labels"):
            function(x.float())
        with pytest.raises(TypeError, match="torch.Tensor"):
            function(x.numpy())
    for distance in (-1, math.nan, "2", True):
        with pytest.raises(ValueError, match="distance"):
            expand_labels(x, distance)
    for spacing in ((1, 2, 3), 0, -1.0, math.inf):
        with pytest.raises(ValueError, match="spacing"):
            expand_labels(x, 1, spacing)
    with pytest.raises(TypeError, match="spacing"):
        expand_labels(x, 1, "a")
    with pytest.raises(ValueError, match="mode"):
        find_boundaries(x, mode="both")
    for connectivity in (0, 3):
        with pytest.raises(ValueError, match="connectivity"):
            find_boundaries(x, connectivity)
    with pytest.raises(TypeError, match="background"):
        find_boundaries(x, background=0.5)


# --------------------------------------------------------------------------- transforms
def test_expand_labels_transform_matches_skimage_on_every_format():
    from morphaug.transforms import ExpandLabels

    rng = np.random.default_rng(7)
    index = random_labels(rng, (3, 1, 9, 8), torch.int64, 0.1)
    index[index < 0] = 0
    transform = ExpandLabels("label", distance=2, sampling=(1, 2))
    out = transform({"label": index, "image": torch.rand(3, 1, 9, 8)})
    assert_parity(out["label"], each_slice(skimage.segmentation.expand_labels, index, distance=2, spacing=(1, 2)),
                  exact=True, dtype="int64")
    assert torch.equal(transform(index.float()), out["label"].float())  # MONAI's float labels
    onehot = torch.nn.functional.one_hot(index[:, 0] % 4, 4).movedim(-1, 1).to(torch.uint8)
    grown = transform(onehot)
    assert grown.dtype == torch.uint8 and grown.shape == onehot.shape
    assert torch.equal(grown.argmax(1, keepdim=True),
                       expand_labels(onehot.argmax(1, keepdim=True), 2, (1, 2)))


@pytest.mark.parametrize("mode", ["thick", "inner", "outer"])
def test_instance_boundary_transform_matches_skimage(mode):
    from morphaug.transforms import InstanceBoundary

    rng = np.random.default_rng(8)
    index = random_labels(rng, (2, 1, 5, 6, 7), torch.int32, 0.7)
    out = InstanceBoundary("label", output_keys="edge", mode=mode, connectivity=2, background=3)({"label": index})
    assert out["label"] is index and out["edge"].dtype == torch.int32
    assert_parity(out["edge"], each_slice(lambda a: skimage.segmentation.find_boundaries(
        a, connectivity=2, mode=mode, background=3).astype(np.int32), index), exact=True)


def test_transform_arguments():
    from morphaug.transforms import ExpandLabels, InstanceBoundary

    for distance in (-1, math.nan, None):
        with pytest.raises(ValueError, match="distance"):
            ExpandLabels("label", distance=distance)
    with pytest.raises(ValueError, match="sampling"):
        ExpandLabels("label", sampling=0)
    with pytest.raises(ValueError, match="mode"):
        InstanceBoundary("label", mode="subpixel")
    with pytest.raises(ValueError, match="connectivity"):
        InstanceBoundary("label", connectivity=0)
    with pytest.raises(ValueError, match="connectivity=3"):
        InstanceBoundary("label", connectivity=3)(torch.zeros(1, 1, 4, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="whole numbers"):
        ExpandLabels("label")(torch.full((1, 1, 4, 4), 0.5))


# --------------------------------------------------------------------------- adapters
def instance_map(batch: int = 3) -> torch.Tensor:
    rng = np.random.default_rng(9)
    return torch.from_numpy(np.where(rng.random((batch, 1, 12, 11)) < 0.08, rng.integers(1, 9, (batch, 1, 12, 11)), 0))


def test_monai_adapters_in_compose():
    monai = pytest.importorskip("morphaug.adapters.monai", exc_type=ImportError)
    from monai.data import MetaTensor
    from monai.transforms import Compose

    label = instance_map(1)[0].float()
    pipeline = Compose([monai.ExpandLabelsd("label", distance=2),
                        monai.InstanceBoundaryd("label", output_keys="edge", mode="inner")])
    out = pipeline({"label": MetaTensor(label), "name": "a"})
    grown = skimage.segmentation.expand_labels(label[0].long().numpy(), 2)
    assert type(out["label"]) is MetaTensor and np.array_equal(out["label"][0].numpy(), grown)
    assert np.array_equal(out["edge"][0].numpy(), skimage.segmentation.find_boundaries(grown, mode="inner"))
    assert out["name"] == "a"


def test_torchvision_adapters_in_compose():
    tv = pytest.importorskip("morphaug.adapters.torchvision", exc_type=ImportError)
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    mask = tv_tensors.Mask(instance_map(1)[0, 0])
    image = tv_tensors.Image(torch.rand(3, 12, 11))
    out = v2.Compose([tv.ExpandLabels(distance=1.5), tv.InstanceBoundary(output_key="edge")])(
        {"image": image, "mask": mask})
    grown = skimage.segmentation.expand_labels(mask.numpy(), 1.5)
    assert type(out["mask"]) is tv_tensors.Mask and np.array_equal(out["mask"].numpy(), grown)
    assert type(out["edge"]) is tv.DenseTarget
    assert np.array_equal(out["edge"].numpy(), skimage.segmentation.find_boundaries(grown))
    assert out["image"] is image


def test_kornia_adapters_in_augmentation_sequential():
    kornia_adapters = pytest.importorskip("morphaug.adapters.kornia", exc_type=ImportError)
    import kornia.augmentation as K

    mask = instance_map(4).float()
    image = torch.rand(4, 3, 12, 11)
    _, grown = K.AugmentationSequential(kornia_adapters.ExpandLabels2D(distance=2), data_keys=["input", "mask"])(
        image, mask)
    assert grown.dtype == mask.dtype
    assert_parity(grown, each_slice(lambda a: skimage.segmentation.expand_labels(a.astype(np.int64), 2), mask),
                  exact=True)
    _, edges = K.AugmentationSequential(kornia_adapters.InstanceBoundary2D(mode="outer"), data_keys=["input", "mask"])(
        image, mask)
    assert_parity(edges, each_slice(lambda a: skimage.segmentation.find_boundaries(a.astype(np.int64), mode="outer"),
                                    mask), exact=True)


@pytest.mark.parametrize("mode", MODES)
def test_compile_without_a_graph_break(mode):
    x = random_labels(np.random.default_rng(11), (2, 1, 7, 6), torch.int64, 0.4)
    expand = torch.compile(lambda x: expand_labels(x, 1.5, (1, 2)), fullgraph=True, backend="eager")
    assert torch.equal(expand(x), expand_labels(x, 1.5, (1, 2)))
    boundaries = torch.compile(lambda x: find_boundaries(x, 2, mode), fullgraph=True, backend="eager")
    assert torch.equal(boundaries(x), find_boundaries(x, 2, mode))
