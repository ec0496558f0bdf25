"""MONAI's functions and losses under MONAI's names (``morphaug.adapters.monai``): ``erode`` / ``dilate``,
``compute_hausdorff_distance``, ``compute_average_surface_distance``, ``compute_surface_dice`` and the
distance-transform losses, against the installed MONAI's own, on random inputs."""

from __future__ import annotations

import contextlib
import inspect
import warnings

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

monai = pytest.importorskip("monai")

from monai import losses as monai_losses  # noqa: E402
from monai import metrics as monai_metrics  # noqa: E402
from monai.data import MetaTensor  # noqa: E402
from monai.transforms import utils_morphological_ops as monai_morphology  # noqa: E402

import morphaug.adapters.monai as adapters  # noqa: E402

CONTAINERS = {"numpy": np.asarray, "tensor": torch.as_tensor,
              "metatensor": lambda a: MetaTensor(torch.as_tensor(a), meta={"note": "kept"})}


def _same(ours, theirs):
    assert type(ours) is type(theirs)
    if isinstance(theirs, torch.Tensor):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        torch.testing.assert_close(ours.as_subclass(torch.Tensor), theirs.as_subclass(torch.Tensor), rtol=0, atol=0)
    else:
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("seed", range(6))
def test_erode_dilate_match_monai(container, seed):
    rng = np.random.default_rng(seed)
    rank = 2 + seed % 2
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *rng.integers(1, 9, rank).tolist())
    dtype = [np.float32, np.uint8, np.float64, bool][seed % 4]
    mask = (rng.random(shape) < [0.3, 0.7, 0.9][seed % 3]).astype(dtype)
    size = [3, 5, 1, (3,) * rank][seed % 4]  # MONAI pads unequal sides on the wrong axes
    before = mask.copy()
    for pad in (None, 0.0, 1.0, 0.5):
        kwargs = {} if pad is None else {"pad_value": pad}
        for name in ("erode", "dilate"):
            ours = getattr(adapters, name)(CONTAINERS[container](mask), size, **kwargs)
            theirs = getattr(monai_morphology, name)(CONTAINERS[container](mask), size, **kwargs)
            _same(ours, theirs)
            if container == "metatensor":
                assert ours.meta["note"] == "kept"
    np.testing.assert_array_equal(mask, before)


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_erode_dilate_any_rank_and_unequal_sides(rank):
    """MONAI takes 2 or 3 spatial axes and pads unequal sides on the wrong axes (its result then has
    another shape, or it fails); here any rank and any odd sides, with MONAI's semantics: every channel's
    window spans all channels, the padding counts as one (erosion, pad 1) or nonzero (dilation)."""
    rng = np.random.default_rng(rank)
    mask = rng.random((2, 2) + tuple(rng.integers(4, 8, rank))) < 0.8
    size = tuple(int(s) for s in rng.choice([1, 3, 5], rank))
    box = np.ones(size, bool)
    for name, border, core in (("erode", 1, mask.all(1)), ("dilate", 0, mask.any(1))):
        op = ndi.binary_erosion if name == "erode" else ndi.binary_dilation
        expected = np.stack([op(sample, box, border_value=border) for sample in core])[:, None]
        ours = getattr(adapters, name)(torch.as_tensor(mask), size)
        np.testing.assert_array_equal(ours.numpy(), np.broadcast_to(expected, mask.shape))


def test_erode_dilate_errors():
    with pytest.raises(ValueError, match="odd numbers"):
        adapters.erode(torch.zeros(1, 1, 4, 4), 2)
    with pytest.raises(ValueError, match="odd numbers"):
        adapters.dilate(torch.zeros(1, 1, 4, 4), (3, 0))
    with pytest.raises(ValueError, match=r"\(N, C, \*spatial\)"):
        adapters.erode(torch.zeros(4, 4))
    with pytest.raises(TypeError, match="mask"):
        adapters.dilate([[0, 1]])
    with pytest.raises(TypeError, match="pad_value"):
        adapters.erode(torch.zeros(1, 1, 4, 4), pad_value="1")


def _one_hot_pair(seed, classes=3, shape=(2, 12, 10)):
    rng = np.random.default_rng(seed)
    batch = shape[0]
    labels = rng.integers(0, classes, (2, *shape)).astype(np.int64)
    labels = ndi.median_filter(labels, size=(1, 1, 3, 3))  # blobs, so that surfaces are not every voxel
    hot = np.moveaxis(np.eye(classes, dtype=np.float32)[labels], -1, 2)  # (2, B, C, H, W)
    if seed % 2:  # an empty class in one sample of the prediction
        hot[0, 0, -1] = 0
    return hot[0], hot[1], batch


@pytest.mark.parametrize("seed", range(4))
def test_compute_functions_match_monai(seed):
    y_pred, y, batch = _one_hot_pair(seed)
    spacing = [None, 2.0, (1.0, 0.5), [(1.0, 2.0), (0.5, 0.5)]][seed]
    with pytest.warns(UserWarning) if seed % 2 else contextlib.nullcontext():  # MONAI warns for the empty class
        theirs = monai_metrics.compute_hausdorff_distance(y_pred, y, percentile=95, directed=bool(seed % 2),
                                                          spacing=spacing)
    ours = adapters.compute_hausdorff_distance(y_pred, y, percentile=95, directed=bool(seed % 2), spacing=spacing)
    torch.testing.assert_close(ours, theirs, equal_nan=True)
    with pytest.warns(UserWarning) if seed % 2 else contextlib.nullcontext():
        theirs = monai_metrics.compute_average_surface_distance(y_pred, y, symmetric=True, spacing=spacing)
    torch.testing.assert_close(adapters.compute_average_surface_distance(y_pred, y, symmetric=True, spacing=spacing),
                               theirs, equal_nan=True)
    y_pred, y = torch.as_tensor(y_pred), torch.as_tensor(y)
    with pytest.warns(UserWarning) if seed % 2 else contextlib.nullcontext():
        theirs = monai_metrics.compute_surface_dice(y_pred, y, [1.0, 1.5], spacing=spacing)
    torch.testing.assert_close(adapters.compute_surface_dice(y_pred, y, [1.0, 1.5], spacing=spacing), theirs,
                               equal_nan=True)


@pytest.mark.parametrize("seed", range(8))
def test_compute_surface_dice_subvoxels_match_monai(seed):
    """``use_subvoxels=True``: morphaug's surfel distances against MONAI's own areas and distances."""
    rng = np.random.default_rng(seed)
    rank = 2 + seed % 2
    shape = (2, 3, *rng.integers(1, 14, rank).tolist())
    field = ndi.gaussian_filter(rng.random((2, *shape)), (0, 0, 0, *[1.0] * rank))
    y_pred, y = (torch.as_tensor(f > np.quantile(f, q)).float() for f, q in zip(field, rng.uniform(0.3, 0.9, 2)))
    y[0, 2] = 0  # an empty reference class; both empty below
    y[1, 1], y_pred[1, 1] = 0, 0
    # one number per axis: MONAI 1.6.1's subvoxel tables fail on a single number
    spacing = [None, (2.0,) * rank, (1.0, 0.5, 2.0)[:rank], [(1.0, 0.7, 1.3)[:rank], (0.5,) * rank]][seed % 4]
    thresholds = [1.0, 0.5, 2.5]
    for include_background in (True, False):
        kwargs = {"include_background": include_background, "spacing": spacing, "use_subvoxels": True}
        classes = thresholds[(0 if include_background else 1):]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # MONAI warns for empty classes
            theirs = monai_metrics.compute_surface_dice(y_pred, y, classes, **kwargs)
        ours = adapters.compute_surface_dice(y_pred, y, classes, **kwargs)
        assert ours.dtype == theirs.dtype
        torch.testing.assert_close(ours, theirs, equal_nan=True, rtol=1e-6, atol=1e-6)
    assert torch.isnan(adapters.compute_surface_dice(y_pred, y, thresholds, True, use_subvoxels=True)[1, 1])


@pytest.mark.parametrize("name", ["HausdorffDTLoss", "LogHausdorffDTLoss", "BoundaryLoss"])
def test_losses_match_monai_values_gradients_and_errors(name):
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 10, 9)
    target = torch.nn.functional.one_hot(torch.randint(0, 3, (2, 10, 9)), 3).permute(0, 3, 1, 2).float()
    grads = []
    for module in (adapters, monai_losses):
        x = logits.clone().requires_grad_()
        loss = getattr(module, name)(softmax=True)(x, target)
        loss.backward()
        grads.append((loss.detach(), x.grad))
    torch.testing.assert_close(grads[0], grads[1])
    for module in (adapters, monai_losses):
        with pytest.raises(AssertionError) as error:
            getattr(module, name)(include_background=True)(logits, target[:, :2])
        grads.append(str(error.value))
    assert grads[-2] == grads[-1]


@pytest.mark.parametrize("name, theirs", [
    ("erode", monai_morphology.erode), ("dilate", monai_morphology.dilate),
    ("compute_hausdorff_distance", monai_metrics.compute_hausdorff_distance),
    ("compute_average_surface_distance", monai_metrics.compute_average_surface_distance),
    ("compute_surface_dice", monai_metrics.compute_surface_dice),
    ("HausdorffDTLoss", monai_losses.HausdorffDTLoss), ("LogHausdorffDTLoss", monai_losses.LogHausdorffDTLoss),
    ("BoundaryLoss", monai_losses.BoundaryLoss), ("SoftclDiceLoss", monai_losses.SoftclDiceLoss),
    ("SoftDiceclDiceLoss", monai_losses.SoftDiceclDiceLoss)])
def test_signatures_are_monai_s(name, theirs):
    ours = inspect.signature(getattr(adapters, name)).parameters
    assert [(p.name, p.default) for p in ours.values()] == [
        (p.name, p.default) for p in inspect.signature(theirs).parameters.values()]
