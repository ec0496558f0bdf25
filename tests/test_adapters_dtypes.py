"""Target maps through every adapter (MONAI, torchvision v2, Kornia) equal the core's, in the core's dtype.

``DistanceMap`` gives float32 maps and ``LabelBoundary`` 0/1 maps in the mask's dtype, whatever the mask's
dtype: int64, uint8, bool or float, plain, MetaTensor or ``tv_tensors.Mask``.
"""

from __future__ import annotations

import pytest
import torch

from morphaug import transforms as core

monai_adapters = pytest.importorskip("morphaug.adapters.monai", exc_type=ImportError)
tv_adapters = pytest.importorskip("morphaug.adapters.torchvision", exc_type=ImportError)
kornia_adapters = pytest.importorskip("morphaug.adapters.kornia", exc_type=ImportError)
from kornia import augmentation as K  # noqa: E402
from monai.data import MetaTensor  # noqa: E402
from torchvision import tv_tensors  # noqa: E402

MASK_DTYPES = [torch.int64, torch.uint8, torch.bool, torch.float32]
TARGETS = [
    ("DistanceMap", {"signed": True, "classes": [1]}),
    ("DistanceMap", {"normalize": "diagonal", "classes": [0, 1]}),
    ("DistanceMap", {"metric": "taxicab", "clip": 3.0, "classes": [1]}),
    ("LabelBoundary", {"side": "both", "thickness": 2, "classes": [1]}),
]


def make_mask(dtype, spatial, device):
    mask = torch.zeros(2, 1, *spatial, dtype=torch.long, device=device)
    mask[(slice(None), slice(None), *(slice(n // 4, n - n // 4) for n in spatial))] = 1
    mask[1, 0, (spatial[0] // 2,) * len(spatial)] = 0  # samples differ
    return mask.to(dtype)


def plain(x):
    return x.as_subclass(torch.Tensor)


def kornia_maps(name, kwargs, mask, after=()):
    t = getattr(kornia_adapters, f"{name}{mask.ndim - 2}D")(**kwargs)
    image = torch.rand(mask.shape[0], 3, *mask.shape[2:], device=mask.device)
    return K.AugmentationSequential(t, *after, data_keys=["input", "mask"])(image, mask)[1]


@pytest.mark.parametrize("dtype", MASK_DTYPES, ids=str)
@pytest.mark.parametrize("name, kwargs", TARGETS)
def test_target_maps_equal_the_core_in_every_adapter(name, kwargs, dtype, device):
    mask = make_mask(dtype, (20, 17), device)
    expected = getattr(core, name)("label", **kwargs)(mask)
    assert expected.dtype == (torch.float32 if name == "DistanceMap" else dtype)
    monai_t, tv_t = getattr(monai_adapters, f"{name}d"), getattr(tv_adapters, name)
    outputs = {
        "kornia": kornia_maps(name, kwargs, mask),
        "kornia, then a flip": kornia_maps(name, kwargs, mask, after=[K.RandomHorizontalFlip(p=1.0)]).flip(-1),
        "monai batched": monai_t("label", batched=True, **kwargs)({"label": mask})["label"],
        "monai MetaTensor per sample": torch.stack([monai_t("label", **kwargs)({"label": MetaTensor(m)})["label"]
                                                    for m in mask]),
        "torchvision Mask batch": tv_t(**kwargs)(tv_tensors.Mask(mask)),
        "torchvision Mask per sample": torch.stack([tv_t(**kwargs)(tv_tensors.Mask(m)) for m in mask]),
    }
    for where, out in outputs.items():
        assert out.dtype == expected.dtype and out.device == mask.device, where
        assert torch.equal(plain(out), expected), where


@pytest.mark.parametrize("dtype", MASK_DTYPES, ids=str)
def test_kornia_3d_distance_maps_and_the_readme_pattern(dtype):
    mask = make_mask(dtype, (9, 10, 11), "cpu")
    for kwargs in ({"signed": True, "classes": [1]}, {"normalize": "diagonal", "classes": [1]}):
        expected = core.DistanceMap("label", **kwargs)(mask)
        out = kornia_maps("DistanceMap", kwargs, mask)
        assert out.dtype == torch.float32 and torch.equal(out, expected)
    # README: an integer mask through DistanceMap2D gives float32 signed distances, not truncated integers
    m = torch.zeros(2, 1, 32, 32, dtype=torch.long)
    m[:, :, 8:24, 8:20] = 1
    sdf = K.AugmentationSequential(kornia_adapters.DistanceMap2D(signed=True, classes=[1]),
                                   data_keys=["input", "mask"])(torch.rand(2, 3, 32, 32), m.to(dtype))[1]
    assert sdf.dtype == torch.float32 and sdf.max() > 11.3 and sdf.min() < 0
